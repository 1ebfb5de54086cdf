// The NVMe tier: KV blocks stored by key in preallocated files, with a checksum per block.
//
// The store's slots (the largest block, rounded up to 4 KiB) are spread round-robin over one or more
// files, one per drive (slot s lives in file s mod N), after each file's 4 KiB header (store_format.h:
// format 2, the checksum used, the file's place in the stripe). put() writes a batch
// of blocks into free slots and only then points their keys at them, so a write that fails (disk
// error, injected fault) leaves every key as it was: the old copy of an overwritten key stays
// readable. A full store refuses a batch before writing any of it. get() verifies each block's CRC-32C
// against the one recorded at put(); a mismatch is an error naming the key, the file and the offset, the
// block is dropped from the index, and its bytes are never handed out as valid. The checksum can be
// turned off (`checksum = ChecksumKind::kNone`) for paths whose data is verified elsewhere (GPUDirect).
//
// Throughput: a batch's blocks go into the lowest free slots, so blocks from one batch usually sit
// side by side in each file; adjacent full slots of a file are merged into one vectored I/O of up to
// `max_io_bytes`, I/Os alternate between files, and up to `queue_depth` run at once (IoQueue: io_uring
// where the kernel allows it, else worker threads). Checksums run on the I/O threads, each block's as its
// write is issued or its read completes, overlapped with the other I/Os in flight.
//
// Buffers passed in must be 4 KiB-aligned and hold round_up_to_io(size) bytes (O_DIRECT transfers
// whole 4 KiB units); the pinned host pool's pages are. Not thread-safe: one batch at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw/store/block_file.h"
#include "hw/store/io_queue.h"
#include "hw/store/slot_allocator.h"
#include "hw/store/store_format.h"

namespace kvtier::hw {

using BlockKey = uint64_t;

struct BlockWrite {
  BlockKey key = 0;
  std::span<const std::byte> bytes;  // 4 KiB-aligned; round_up_to_io(size) bytes readable
};

struct BlockRead {
  BlockKey key = 0;
  std::span<std::byte> buffer;  // 4 KiB-aligned; at least round_up_to_io(stored size) bytes
};

struct NvmeStoreOptions {
  uint64_t block_bytes = 0;            // largest block the store accepts
  uint64_t capacity_blocks = 0;        // slots in the file
  int queue_depth = 8;                 // I/Os in flight at once
  uint64_t max_io_bytes = 8ull << 20;  // adjacent blocks merged into one I/O up to this size
  IoPath io_path = IoPath::kAuto;      // io_uring where the kernel allows it, else worker threads
  int io_threads = 0;                  // io_uring threads, each with its own ring; 0: ring_threads()
  ChecksumKind checksum = ChecksumKind::kCrc32c;  // kNone: no checksum at put or get
};

class NvmeStore {
 public:
  // io_uring threads a store with these options runs: `io_threads`, or by default one per file and at
  // least two (one thread checksums while the other reaps and submits), at most `queue_depth`.
  static int ring_threads(const NvmeStoreOptions& options, size_t files = 1);
  // Bytes of each file a store with these options needs when striped over `files` files.
  static uint64_t file_bytes(const NvmeStoreOptions& options, size_t files = 1);
  // Creates and preallocates the file at `path` (it must not exist: an existing file is refused with a
  // message saying what it holds); removed when the store is destroyed.
  static std::unique_ptr<NvmeStore> create(const std::string& path, const NvmeStoreOptions& options,
                                           IoMode mode = IoMode::kDirect);
  // The same over one file per path (one per drive), blocks striped round-robin across them.
  static std::unique_ptr<NvmeStore> create_striped(const std::vector<std::string>& paths,
                                                   const NvmeStoreOptions& options, IoMode mode = IoMode::kDirect);
  // Writes each file's header. Throws StoreError(kBadRequest) naming a file whose header block is not
  // all zeros (not a fresh file) or that is smaller than file_bytes(options, files.size()).
  NvmeStore(std::unique_ptr<BlockFile> file, const NvmeStoreOptions& options);
  NvmeStore(std::vector<std::unique_ptr<BlockFile>> files, const NvmeStoreOptions& options);

  // Stores every block or none: throws StoreError (kFull before any I/O, kIo on a failed write,
  // kBadRequest for an oversized block or a key twice in the batch) and then no key has changed.
  void put(std::span<const BlockWrite> blocks);
  // Reads every block into its buffer and verifies it. Throws kNotFound before any I/O for a key not
  // stored, kCorrupt after the reads when a checksum differs (those keys are erased), kIo on failure.
  void get(std::span<const BlockRead> blocks);

  bool contains(BlockKey key) const { return index_.contains(key); }
  uint64_t stored_bytes(BlockKey key) const;  // throws kNotFound
  void erase(BlockKey key);                   // no-op when absent
  uint64_t free_blocks() const { return slots_.free_count(); }
  uint64_t stored_blocks() const { return index_.size(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  size_t file_count() const { return files_.size(); }
  // "io_uring" or "threads": how put() and get() move bytes for files with a descriptor.
  const char* io_path() const { return io_.path_name(); }

 private:
  struct Entry {
    uint64_t slot = 0;
    uint64_t bytes = 0;
    uint32_t checksum = 0;
  };
  // One vectored I/O: consecutive slots of one file starting at `first_slot` (global numbering), one
  // buffer per block.
  struct IoGroup {
    uint64_t first_slot = 0;
    std::vector<size_t> blocks;  // indices into the batch
    std::vector<iovec> buffers;
    uint64_t bytes = 0;
  };
  struct SlotBuffer {
    uint64_t slot;
    size_t block;
    iovec buffer;
  };

  std::vector<IoGroup> group_ios(std::vector<SlotBuffer> items) const;
  std::vector<IoRequest> requests_for(const std::vector<IoGroup>& groups) const;
  void require_fresh_files() const;
  void write_headers();
  BlockFile& file_of(uint64_t slot) const { return *files_[slot % files_.size()]; }
  uint64_t offset_of(uint64_t slot) const { return kStoreHeaderBytes + slot / files_.size() * slot_bytes_; }

  std::vector<std::unique_ptr<BlockFile>> files_;
  NvmeStoreOptions options_;
  uint64_t slot_bytes_;
  SlotAllocator slots_;
  std::unordered_map<BlockKey, Entry> index_;
  IoQueue io_;
};

}  // namespace kvtier::hw
