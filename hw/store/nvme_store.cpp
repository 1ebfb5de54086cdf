#include "hw/store/nvme_store.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "hw/store/block_checksum.h"
#include "hw/store/parallel_for.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

bool is_io_aligned(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kIoAlignment == 0;
}

}  // namespace

uint64_t NvmeStore::file_bytes(const NvmeStoreOptions& options) {
  return round_up_to_io(options.block_bytes) * options.capacity_blocks;
}

std::unique_ptr<NvmeStore> NvmeStore::create(const std::string& path, const NvmeStoreOptions& options,
                                             IoMode mode) {
  return std::make_unique<NvmeStore>(std::make_unique<DirectFile>(path, file_bytes(options), mode), options);
}

NvmeStore::NvmeStore(std::unique_ptr<BlockFile> file, const NvmeStoreOptions& options)
    : file_(std::move(file)),
      options_(options),
      slot_bytes_(round_up_to_io(options.block_bytes)),
      slots_(options.capacity_blocks) {
  if (options.block_bytes == 0 || options.capacity_blocks == 0 || options.queue_depth < 1) {
    throw StoreError(StoreErrc::kBadRequest,
                     "an NVMe store needs block_bytes, capacity_blocks and queue_depth > 0");
  }
  if (file_->size() < file_bytes(options)) {
    throw StoreError(StoreErrc::kBadRequest, "the store's file holds " + std::to_string(file_->size()) +
                                                 " bytes, fewer than the " +
                                                 std::to_string(file_bytes(options)) + " its slots need");
  }
}

std::vector<NvmeStore::IoGroup> NvmeStore::group_ios(std::vector<SlotBuffer> items) const {
  std::sort(items.begin(), items.end(),
            [](const SlotBuffer& a, const SlotBuffer& b) { return a.slot < b.slot; });
  std::vector<IoGroup> groups;
  for (const SlotBuffer& item : items) {
    IoGroup* last = groups.empty() ? nullptr : &groups.back();
    // A block extends the previous I/O only if the file range stays contiguous: the previous
    // block filled its whole slot and this slot follows it.
    const bool extends = last != nullptr && last->first_slot + last->blocks.size() == item.slot &&
                         last->buffers.back().iov_len == slot_bytes_ &&
                         last->bytes + item.buffer.iov_len <= options_.max_io_bytes &&
                         last->buffers.size() < static_cast<size_t>(IOV_MAX);
    if (!extends) {
      groups.push_back({item.slot, {}, {}, 0});
      last = &groups.back();
    }
    last->blocks.push_back(item.block);
    last->buffers.push_back(item.buffer);
    last->bytes += item.buffer.iov_len;
  }
  return groups;
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
  try {
    parallel_for(groups.size(), options_.queue_depth, [&](size_t g) {
      for (size_t block : groups[g].blocks) checksums[block] = block_checksum(blocks[block].bytes);
      file_->write_at(groups[g].first_slot * slot_bytes_, groups[g].buffers);
    });
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
  }
  const std::vector<IoGroup> groups = group_ios(std::move(items));
  std::vector<char> corrupt(blocks.size(), 0);
  parallel_for(groups.size(), options_.queue_depth, [&](size_t g) {
    file_->read_at(groups[g].first_slot * slot_bytes_, groups[g].buffers);
    for (size_t block : groups[g].blocks) {
      const Entry& entry = index_.at(blocks[block].key);
      corrupt[block] = block_checksum(blocks[block].buffer.first(entry.bytes)) != entry.checksum;
    }
  });
  std::string corrupt_keys;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!corrupt[i]) continue;
    corrupt_keys += (corrupt_keys.empty() ? "" : ", ") + std::to_string(blocks[i].key);
    erase(blocks[i].key);
  }
  if (!corrupt_keys.empty()) {
    throw StoreError(StoreErrc::kCorrupt, "checksum mismatch reading key(s) " + corrupt_keys +
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
