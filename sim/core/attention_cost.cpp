// The launch is priced by replaying the GPU's block scheduler: blocks in launch order, each on the slot
// that frees first. A step has thousands of blocks, but most come in runs of equal time (the KV heads of
// one query tile, the splits of one sequence, decodes of equal context), and a run of equal blocks lands
// greedily on whole groups of slots that free at the same time. So the slots are kept as a min-heap of
// such groups, and a run costs one heap operation per group it touches rather than one per block. Every
// slot's free time is the same sum of the same doubles as in a block-by-block replay, so the result is
// exactly that replay's.
#include "sim/core/attention_cost.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace kvtier {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t tokens_per_tile(int query_rows, int gqa_ratio) {
  return std::max(1, query_rows / gqa_ratio);
}

// The slots of one kernel, as groups of slots free at the same time.
class SlotGroups {
 public:
  explicit SlotGroups(int slots) : heap_{{0.0, slots}} {}

  // `blocks` blocks of `seconds` each, every one started on the earliest-free slot.
  void place(int64_t blocks, double seconds) {
    while (blocks > 0) {
      Group& first = heap_.front();
      const int64_t taken = std::min(blocks, first.slots);
      const Group done{first.free_at + seconds, taken};
      blocks -= taken;
      if (taken < first.slots) {
        first.slots -= taken;  // still the earliest: its time did not change
        heap_.push_back(done);
        std::push_heap(heap_.begin(), heap_.end(), Later{});
      } else {
        replace_first(done);
      }
    }
  }

  double makespan() const {
    double last = 0;
    for (const Group& g : heap_) last = std::max(last, g.free_at);
    return last;
  }

 private:
  struct Group {
    double free_at;
    int64_t slots;
  };
  struct Later {
    bool operator()(const Group& a, const Group& b) const { return a.free_at > b.free_at; }
  };

  // The earliest group becomes `g`, sifted down to its place: one pass instead of a pop and a push.
  void replace_first(Group g) {
    const size_t n = heap_.size();
    size_t at = 0;
    for (size_t child = 1; child < n; child = 2 * at + 1) {
      if (child + 1 < n && heap_[child + 1].free_at < heap_[child].free_at) ++child;
      if (!(heap_[child].free_at < g.free_at)) break;
      heap_[at] = heap_[child];
      at = child;
    }
    heap_[at] = g;
  }

  std::vector<Group> heap_;
};

// Collects consecutive blocks of equal key tiles and row groups into one run before placing them.
class RunPlacer {
 public:
  explicit RunPlacer(const AttentionKernelCost& kernel) : kernel_(kernel), slots_(kernel.slots) {}

  void add(int64_t blocks, int64_t key_tiles, int64_t row_groups) {
    if (key_tiles != key_tiles_ || row_groups != row_groups_) {
      flush();
      key_tiles_ = key_tiles;
      row_groups_ = row_groups;
    }
    blocks_ += blocks;
  }

  // Blocks past their sequence's query tiles (row groups -1 marks them: they exit at once).
  void add_empty(int64_t blocks) {
    if (blocks > 0 && kernel_.empty_block_s > 0) add(blocks, 0, kEmpty);
  }

  double makespan() {
    flush();
    return slots_.makespan();
  }

 private:
  static constexpr int64_t kEmpty = -1;

  void flush() {
    if (blocks_ > 0 && row_groups_ == kEmpty) {
      slots_.place(blocks_, kernel_.empty_block_s);
    } else if (blocks_ > 0) {
      const double tile_s = kernel_.key_tile_s + kernel_.row_group_tile_s * static_cast<double>(row_groups_);
      slots_.place(blocks_, kernel_.block_s + tile_s * static_cast<double>(key_tiles_));
    }
    blocks_ = 0;
  }

  const AttentionKernelCost& kernel_;
  SlotGroups slots_;
  int64_t key_tiles_ = -1;
  int64_t row_groups_ = -1;
  int64_t blocks_ = 0;
};

void require_tiling(const AttentionCosts& c, int kv_heads, int gqa_ratio) {
  if (kv_heads < 1 || gqa_ratio < 1 || c.query_rows < 1 || c.multiprocessors < 1 || c.max_splits < 1 ||
      c.min_split_keys < 1 || c.unsplit.key_tile < 1 || c.unsplit.slots < 1 || c.split.key_tile < 1 ||
      c.split.slots < 1) {
    throw std::invalid_argument(
        "attention costs: KV heads, GQA ratio, tiles, slots and split bounds must be 1 or more");
  }
}

}  // namespace

int attention_splits(int64_t sequences, int64_t max_new_tokens, int64_t max_total_tokens, int kv_heads,
                     int gqa_ratio, int query_rows, int multiprocessors, int max_splits, int min_split_keys) {
  const int64_t blocks =
      ceil_div(max_new_tokens, tokens_per_tile(query_rows, gqa_ratio)) * int64_t{kv_heads} * sequences;
  const int64_t enough = 2 * int64_t{multiprocessors};
  if (blocks <= 0 || blocks >= enough) return 1;
  const int64_t wanted = ceil_div(enough, blocks);
  const int64_t longest = std::max<int64_t>(1, max_total_tokens / min_split_keys);
  return static_cast<int>(std::clamp<int64_t>(std::min(wanted, longest), 1, max_splits));
}

namespace {

// The launch's longest new tokens and longest keys, which set its grid.
struct LaunchExtent {
  int64_t max_new = 0;
  int64_t max_total = 0;
};

LaunchExtent extent_of(std::span<const AttentionSequence> step) {
  LaunchExtent e;
  for (const AttentionSequence& s : step) {
    e.max_new = std::max(e.max_new, s.new_tokens);
    e.max_total = std::max(e.max_total, s.context_tokens + s.new_tokens);
  }
  return e;
}

int splits_of(const AttentionCosts& costs, int kv_heads, int gqa_ratio, int64_t sequences, LaunchExtent e) {
  return attention_splits(sequences, e.max_new, e.max_total, kv_heads, gqa_ratio, costs.query_rows,
                          costs.multiprocessors, costs.max_splits, costs.min_split_keys);
}

}  // namespace

int attention_launch_splits(const AttentionCosts& costs, int kv_heads, int gqa_ratio,
                            std::span<const AttentionSequence> step) {
  return splits_of(costs, kv_heads, gqa_ratio, static_cast<int64_t>(step.size()), extent_of(step));
}

double attention_launch_seconds(const AttentionCosts& costs, int kv_heads, int gqa_ratio,
                                std::span<const AttentionSequence> step) {
  require_tiling(costs, kv_heads, gqa_ratio);
  const LaunchExtent extent = extent_of(step);
  if (extent.max_new <= 0) return 0;
  const int splits = splits_of(costs, kv_heads, gqa_ratio, static_cast<int64_t>(step.size()), extent);
  const AttentionKernelCost& kernel = splits == 1 ? costs.unsplit : costs.split;
  const int64_t per_tile = tokens_per_tile(costs.query_rows, gqa_ratio);
  const int64_t query_tiles = ceil_div(extent.max_new, per_tile);  // every sequence's in the grid
  RunPlacer placer(kernel);
  for (const AttentionSequence& s : step) {
    // Split ranges are whole tiles of the split kernel's keys, the same for every query tile.
    const int64_t range =
        splits == 1 ? 0
                    : ceil_div(ceil_div(s.context_tokens + s.new_tokens, costs.split.key_tile), splits) *
                          costs.split.key_tile;
    const int64_t own_tiles = ceil_div(s.new_tokens, per_tile);
    for (int split = 0; split < splits; ++split) {
      placer.add_empty(kv_heads * (query_tiles - own_tiles));  // the grid's tiles past its own come first
      for (int64_t tile = own_tiles - 1; tile >= 0; --tile) {  // then its own, the last first
        const int64_t tile_tokens = std::min(s.new_tokens, (tile + 1) * per_tile) - tile * per_tile;
        const int64_t causal_stop = s.context_tokens + tile * per_tile + tile_tokens;
        const int64_t begin = range * split;
        const int64_t stop = splits == 1 ? causal_stop : std::min(causal_stop, range * (split + 1));
        const int64_t rows = std::min<int64_t>(costs.query_rows, tile_tokens * gqa_ratio);
        placer.add(kv_heads, ceil_div(std::max<int64_t>(0, stop - begin), kernel.key_tile),
                   ceil_div(rows, kAttentionRowGroup));
      }
    }
  }
  return kernel.launch_s + placer.makespan();
}

}  // namespace kvtier
