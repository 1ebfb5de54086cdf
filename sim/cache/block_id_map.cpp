#include "sim/cache/block_id_map.h"

#include <bit>

namespace kvtier {

void BlockIdMap::grow() {
  constexpr size_t kFirstSize = 1024;
  std::vector<Entry> old = std::move(entries_);
  const size_t size = old.empty() ? kFirstSize : 2 * old.size();
  entries_.assign(size, Entry{});
  shift_ = 64 - std::countr_zero(size);
  for (const Entry& entry : old) {
    if (entry.used != 0) entries_[probe(entry.id)] = entry;
  }
}

}  // namespace kvtier
