#include "hw/store/nvme_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "hw/store/block_checksum.h"
#include "hw/store/memory_region.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

bool is_io_aligned(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kIoAlignment == 0;
}

// Refuses to create a store over an existing file, saying what that file holds.
void require_absent(const std::string& path) {
  if (!std::filesystem::exists(path)) return;
  std::vector<std::byte> first_block(kStoreHeaderBytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const ssize_t got = fd < 0 ? -1 : ::pread(fd, first_block.data(), first_block.size(), 0);
  if (fd >= 0) ::close(fd);
  const std::string holds = got < 0 ? "data that cannot be read" : describe_store_file(first_block);
  throw StoreError(StoreErrc::kIo, "cannot create " + path + ": it already exists and holds " + holds +
                                       "; an NVMe store's index lives in memory, so no earlier store's blocks "
                                       "can be read back: remove the file or choose another path");
}

std::vector<std::unique_ptr<BlockFile>> one_file(std::unique_ptr<BlockFile> file) {
  std::vector<std::unique_ptr<BlockFile>> files;
  files.push_back(std::move(file));
  return files;
}

}  // namespace

int NvmeStore::ring_threads(const NvmeStoreOptions& options, size_t files) {
  const int wanted = options.io_threads > 0 ? options.io_threads : std::max(2, static_cast<int>(files));
  return std::clamp(wanted, 1, std::max(options.queue_depth, 1));
}

uint64_t NvmeStore::file_bytes(const NvmeStoreOptions& options, size_t files) {
  const uint64_t slots_per_file = (options.capacity_blocks + files - 1) / std::max<size_t>(files, 1);
  return kStoreHeaderBytes + round_up_to_io(options.block_bytes) * slots_per_file;
}

std::unique_ptr<NvmeStore> NvmeStore::create(const std::string& path, const NvmeStoreOptions& options,
                                             IoMode mode) {
  return create_striped({path}, options, mode);
}

std::unique_ptr<NvmeStore> NvmeStore::create_striped(const std::vector<std::string>& paths,
                                                     const NvmeStoreOptions& options, IoMode mode) {
  for (const std::string& path : paths) require_absent(path);
  std::vector<std::unique_ptr<BlockFile>> files;
  for (const std::string& path : paths) {
    files.push_back(std::make_unique<DirectFile>(path, file_bytes(options, paths.size()), mode));
  }
  return std::make_unique<NvmeStore>(std::move(files), options);
}

NvmeStore::NvmeStore(std::unique_ptr<BlockFile> file, const NvmeStoreOptions& options)
    : NvmeStore(one_file(std::move(file)), options) {}

NvmeStore::NvmeStore(std::vector<std::unique_ptr<BlockFile>> files, const NvmeStoreOptions& options)
    : files_(std::move(files)),
      options_(options),
      slot_bytes_(round_up_to_io(options.block_bytes)),
      slots_(options.capacity_blocks),
      io_(options.io_path, options.queue_depth, ring_threads(options, files_.size())) {
  if (options.block_bytes == 0 || options.capacity_blocks == 0 || options.queue_depth < 1 || files_.empty()) {
    throw StoreError(StoreErrc::kBadRequest,
                     "an NVMe store needs block_bytes, capacity_blocks, queue_depth and files > 0");
  }
  require_fresh_files();
  const uint64_t needed = file_bytes(options, files_.size());
  for (const auto& file : files_) {
    if (file->size() < needed) {
      throw StoreError(StoreErrc::kBadRequest, file->name() + " holds " + std::to_string(file->size()) +
                                                   " bytes, fewer than the " + std::to_string(needed) +
                                                   " its header and slots need");
    }
  }
  write_headers();
}

void NvmeStore::require_fresh_files() const {
  MemoryRegion block = allocate_host_region(kStoreHeaderBytes);
  const iovec buffer{block.data(), kStoreHeaderBytes};
  for (const auto& file : files_) {
    const uint64_t readable = std::min(file->size(), kStoreHeaderBytes);
    std::fill_n(block.data(), kStoreHeaderBytes, std::byte{0});
    if (readable == kStoreHeaderBytes) file->read_at(0, {&buffer, 1});
    require_fresh_file(file->name(), {block.data(), kStoreHeaderBytes});
  }
}

void NvmeStore::write_headers() {
  MemoryRegion block = allocate_host_region(kStoreHeaderBytes);
  const iovec buffer{block.data(), kStoreHeaderBytes};
  for (size_t i = 0; i < files_.size(); ++i) {
    const StoreFileHeader header{.checksum = options_.checksum,
                                 .slot_bytes = slot_bytes_,
                                 .slots = (options_.capacity_blocks + files_.size() - 1 - i) / files_.size(),
                                 .stripe_index = static_cast<uint32_t>(i),
                                 .stripe_count = static_cast<uint32_t>(files_.size())};
    const std::vector<std::byte> encoded = encode_header(header);
    std::copy(encoded.begin(), encoded.end(), block.data());
    files_[i]->write_at(0, {&buffer, 1});
  }
}

std::vector<NvmeStore::IoGroup> NvmeStore::group_ios(std::vector<SlotBuffer> items) const {
  const size_t files = files_.size();
  // By file, then by slot within the file: slots s and s + files sit side by side on disk.
  std::sort(items.begin(), items.end(), [files](const SlotBuffer& a, const SlotBuffer& b) {
    return std::pair(a.slot % files, a.slot) < std::pair(b.slot % files, b.slot);
  });
  std::vector<IoGroup> groups;
  std::vector<size_t> rank;  // the group's position among its file's groups
  for (const SlotBuffer& item : items) {
    IoGroup* last = groups.empty() ? nullptr : &groups.back();
    // A block extends the previous I/O only if the file range stays contiguous: same file, the previous
    // block filled its whole slot and this slot follows it.
    const bool extends = last != nullptr && last->first_slot % files == item.slot % files &&
                         last->first_slot + last->blocks.size() * files == item.slot &&
                         last->buffers.back().iov_len == slot_bytes_ &&
                         last->bytes + item.buffer.iov_len <= options_.max_io_bytes &&
                         last->buffers.size() < static_cast<size_t>(IOV_MAX);
    if (!extends) {
      const bool same_file = last != nullptr && last->first_slot % files == item.slot % files;
      rank.push_back(same_file ? rank.back() + 1 : 0);
      groups.push_back({item.slot, {}, {}, 0});
      last = &groups.back();
    }
    last->blocks.push_back(item.block);
    last->buffers.push_back(item.buffer);
    last->bytes += item.buffer.iov_len;
  }
  // Issue order alternates between files, so every drive has I/Os in flight from the start.
  std::vector<size_t> order(groups.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank[a] < rank[b]; });
  std::vector<IoGroup> interleaved;
  for (size_t g : order) interleaved.push_back(std::move(groups[g]));
  return interleaved;
}

std::vector<IoRequest> NvmeStore::requests_for(const std::vector<IoGroup>& groups) const {
  std::vector<IoRequest> requests;
  for (const IoGroup& group : groups) {
    requests.push_back({&file_of(group.first_slot), offset_of(group.first_slot), group.buffers});
  }
  return requests;
}

void NvmeStore::put(std::span<const BlockWrite> blocks) {
  std::unordered_set<BlockKey> keys;
  for (const BlockWrite& block : blocks) {
    if (block.bytes.size() > options_.block_bytes || !is_io_aligned(block.bytes.data())) {
      throw StoreError(StoreErrc::kBadRequest,
                       "block " + std::to_string(block.key) + " of " + std::to_string(block.bytes.size()) +
                           " bytes: blocks must be at most " + std::to_string(options_.block_bytes) +
                           " bytes and 4 KiB-aligned");
    }
    if (!keys.insert(block.key).second) {
      throw StoreError(StoreErrc::kBadRequest,
                       "key " + std::to_string(block.key) + " appears twice in one batch");
    }
  }
  auto slots = slots_.allocate(blocks.size());
  if (!slots) {
    throw StoreError(StoreErrc::kFull, "a batch of " + std::to_string(blocks.size()) +
                                           " blocks does not fit in " + std::to_string(slots_.free_count()) +
                                           " free NVMe slots");
  }
  std::vector<SlotBuffer> items;
  for (size_t i = 0; i < blocks.size(); ++i) {
    void* base = const_cast<std::byte*>(blocks[i].bytes.data());  // iovec is not const-correct
    items.push_back({(*slots)[i], i, iovec{base, round_up_to_io(blocks[i].bytes.size())}});
  }
  const std::vector<IoGroup> groups = group_ios(std::move(items));
  std::vector<uint32_t> checksums(blocks.size());
  const bool checksummed = options_.checksum == ChecksumKind::kCrc32c;
  try {
    io_.run(
        IoDirection::kWrite, requests_for(groups),
        [&](size_t g) {
          if (!checksummed) return;
          for (size_t block : groups[g].blocks) checksums[block] = block_checksum(blocks[block].bytes);
        },
        [](size_t) {});
  } catch (...) {
    slots_.release(*slots);  // the keys still point at their previous slots, untouched
    throw;
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    erase(blocks[i].key);
    index_[blocks[i].key] = Entry{(*slots)[i], blocks[i].bytes.size(), checksums[i]};
  }
}

void NvmeStore::get(std::span<const BlockRead> blocks) {
  std::vector<SlotBuffer> items;
  std::vector<const Entry*> entries;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto found = index_.find(blocks[i].key);
    if (found == index_.end()) {
      throw StoreError(StoreErrc::kNotFound,
                       "key " + std::to_string(blocks[i].key) + " is not in the NVMe store");
    }
    const uint64_t io_bytes = round_up_to_io(found->second.bytes);
    if (blocks[i].buffer.size() < io_bytes || !is_io_aligned(blocks[i].buffer.data())) {
      throw StoreError(StoreErrc::kBadRequest, "the buffer for key " + std::to_string(blocks[i].key) +
                                                   " must be 4 KiB-aligned and hold " +
                                                   std::to_string(io_bytes) + " bytes");
    }
    items.push_back({found->second.slot, i, iovec{blocks[i].buffer.data(), io_bytes}});
    entries.push_back(&found->second);
  }
  const std::vector<IoGroup> groups = group_ios(std::move(items));
  std::vector<char> corrupt(blocks.size(), 0);
  const bool checksummed = options_.checksum == ChecksumKind::kCrc32c;
  io_.run(
      IoDirection::kRead, requests_for(groups), [](size_t) {},
      [&](size_t g) {
        if (!checksummed) return;
        for (size_t block : groups[g].blocks) {
          corrupt[block] = block_checksum(blocks[block].buffer.first(entries[block]->bytes)) != entries[block]->checksum;
        }
      });
  std::string corrupt_blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!corrupt[i]) continue;
    const uint64_t slot = entries[i]->slot;
    corrupt_blocks += (corrupt_blocks.empty() ? "" : ", ") + std::to_string(blocks[i].key) + " (" +
                      file_of(slot).name() + " at offset " + std::to_string(offset_of(slot)) + ")";
    erase(blocks[i].key);
  }
  if (!corrupt_blocks.empty()) {
    throw StoreError(StoreErrc::kCorrupt, "CRC-32C mismatch reading key(s) " + corrupt_blocks +
                                              "; they were dropped from the NVMe store");
  }
}

uint64_t NvmeStore::stored_bytes(BlockKey key) const {
  const auto found = index_.find(key);
  if (found == index_.end()) {
    throw StoreError(StoreErrc::kNotFound, "key " + std::to_string(key) + " is not in the NVMe store");
  }
  return found->second.bytes;
}

void NvmeStore::erase(BlockKey key) {
  const auto found = index_.find(key);
  if (found == index_.end()) return;
  slots_.release(found->second.slot);
  index_.erase(found);
}

}  // namespace kvtier::hw
