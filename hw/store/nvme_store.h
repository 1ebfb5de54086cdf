// The NVMe tier: KV blocks stored by key in one preallocated file, with a checksum per block.
//
// The file is an array of equal slots (the largest block, rounded up to 4 KiB). put() writes a batch
// of blocks into free slots and only then points their keys at them, so a write that fails (disk
// error, injected fault) leaves every key as it was: the old copy of an overwritten key stays
// readable. A full store refuses a batch before writing any of it. get() verifies each block's CRC-32
// against the one recorded at put(); a mismatch is an error naming the key, the block is dropped from
// the index, and its bytes are never handed out as valid.
//
// Throughput: a batch's blocks go into the lowest free slots, so blocks from one batch usually sit
// side by side; adjacent full slots are merged into one vectored I/O of up to `max_io_bytes`, and up
// to `queue_depth` I/Os run at once on worker threads (the GPU machine has no io_uring), which is how
// small pages reach the bandwidth of large sequential transfers.
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
#include "hw/store/slot_allocator.h"

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
};

class NvmeStore {
 public:
  // Bytes of file a store with these options needs.
  static uint64_t file_bytes(const NvmeStoreOptions& options);
  // Creates and preallocates the file at `path` (it must not exist); removed when the store is destroyed.
  static std::unique_ptr<NvmeStore> create(const std::string& path, const NvmeStoreOptions& options,
                                           IoMode mode = IoMode::kDirect);
  // REQUIRES: file->size() >= file_bytes(options).
  NvmeStore(std::unique_ptr<BlockFile> file, const NvmeStoreOptions& options);

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

 private:
  struct Entry {
    uint64_t slot = 0;
    uint64_t bytes = 0;
    uint32_t checksum = 0;
  };
  // One vectored I/O: consecutive slots starting at `first_slot`, one buffer per block.
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

  std::unique_ptr<BlockFile> file_;
  NvmeStoreOptions options_;
  uint64_t slot_bytes_;
  SlotAllocator slots_;
  std::unordered_map<BlockKey, Entry> index_;
};

}  // namespace kvtier::hw
