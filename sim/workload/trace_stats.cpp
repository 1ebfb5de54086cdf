#include "sim/workload/trace_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "sim/core/huge_pages.h"
#include "sim/workload/prefix_forest.h"

namespace kvtier {
namespace {

// Last-use times of the sampled block ids: an id is followed when its hash, taken as a fraction of the
// hash space, falls below 1 / sampling (the same ids on every run and every trace).
class ReuseSampler {
 public:
  explicit ReuseSampler(int64_t sampling) : rejected_bits_(rejected_bits(sampling)) {}

  // Finds the request's sampled blocks and starts loading their index slots. Scanning every block id
  // was the largest part of the statistics' own time: the loop keeps nothing but the scan, and it
  // skips the leading `known` ids when `previous` holds the sampled positions of a request that began
  // with the same `known` ids (an agent turn repeats most of its session's previous turn). `previous`
  // is then replaced by this request's positions.
  void prepare(const std::vector<uint64_t>& ids, size_t known, std::vector<size_t>* previous) {
    positions_.clear();
    const uint64_t* id = ids.data();
    const size_t count = ids.size();
    // With every id sampled (sampling 1) there is no scan to skip.
    const bool reuse_previous = previous != nullptr && rejected_bits_ != 0;
    size_t first = 0;
    if (reuse_previous) {
      first = std::min(known, count);
      for (size_t i : *previous) {
        if (i >= first) break;
        positions_.push_back(i);
      }
    }
    const uint64_t rejected = rejected_bits_;
    for (size_t i = first; i < count; ++i) {
      if ((hash(id[i]) & rejected) == 0) positions_.push_back(i);
    }
    if (reuse_previous) *previous = positions_;
    for (size_t i : positions_) index_.prefetch(id[i]);
  }

  // Calls count(gap) for sampled hit blocks and stamps every sampled block with `now`.
  // REQUIRES: prepare(ids) was the last call to prepare.
  template <typename Count>
  void visit(const std::vector<uint64_t>& ids, size_t hit_blocks, double now, Count count) {
    for (size_t i : positions_) {
      uint32_t slot = index_.insert(ids[i], static_cast<uint32_t>(last_use_.size()));
      if (slot == last_use_.size()) {
        last_use_.push_back(now);
        continue;
      }
      if (i < hit_blocks) count(now - last_use_[slot]);
      last_use_[slot] = now;
    }
  }

 private:
  // Fibonacci hashing of the salted id: one multiply per block, and consecutive ids (Mooncake's small
  // integers) spread evenly over the top bits; the salt keeps id 0, a popular first block, from always
  // being sampled. An id is sampled when the top log2(sampling) bits of its hash are zero.
  static uint64_t hash(uint64_t id) { return (id ^ kSamplingSalt) * 0x9e3779b97f4a7c15ULL; }
  static uint64_t rejected_bits(int64_t sampling) {
    int bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(sampling))) - 1;
    return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
  }

  static constexpr uint64_t kSamplingSalt = 0x5348415244530000ULL;  // "SHARDS"

  uint64_t rejected_bits_;  // a sampled id's hash has none of these
  IdIndex index_;
  std::vector<double> last_use_;
  std::vector<size_t> positions_;  // of the sampled ids in the request being visited
};

std::vector<ReuseBucket> reuse_buckets() {
  double inf = std::numeric_limits<double>::infinity();
  return {{"< 1 s", 1, 0},      {"1-10 s", 10, 0},      {"10-60 s", 60, 0},
          {"1-10 min", 600, 0}, {"10-60 min", 3600, 0}, {">= 1 h", inf, 0}};
}

class StatsBuilder {
 public:
  StatsBuilder(int64_t block_tokens, int64_t reuse_sampling) : reuse_(reuse_sampling) {
    stats_.block_tokens = block_tokens;
    stats_.reuse = reuse_buckets();
    stats_.reuse_sampling = reuse_sampling;
  }

  // Starts loading what add(r) will look up. Requests go through prepare, then the reading of the next
  // request, then add: the parsing hides the cache misses of the forest's and the sampler's indexes.
  void prepare(const Request& r) {
    session_ = nullptr;
    size_t known = 0;
    if (r.session_id >= 0) {
      auto [it, first_seen] = sessions_.try_emplace(r.session_id);
      session_ = &it->second;
      // The session's previous request is the one whose sampled positions the entry holds.
      if (!first_seen) known = std::min(r.same_as_previous_turn, session_->blocks);
      session_->blocks = r.block_ids.size();
    }
    reuse_.prepare(r.block_ids, known, session_ == nullptr ? nullptr : &session_->sampled);
    forest_.prefetch(r.block_ids, known);
  }

  // REQUIRES: prepare(r) was the last call to prepare.
  void add(const Request& r) {
    ++stats_.requests;
    first_arrival_ = std::min(first_arrival_, r.arrival_s);
    last_arrival_ = std::max(last_arrival_, r.arrival_s);
    inputs_.push_back(r.input_tokens);
    outputs_.push_back(r.output_tokens);
    add_blocks(r);
    if (r.session_id >= 0) add_turn(r);
  }

  TraceStats finish(int64_t skipped_lines) {
    stats_.duration_s = stats_.requests ? last_arrival_ - first_arrival_ : 0;
    stats_.input_tokens = summarize(inputs_);
    stats_.output_tokens = summarize(outputs_);
    stats_.unique_blocks = forest_.unique_blocks();
    stats_.sessions = static_cast<int64_t>(sessions_.size());
    if (stats_.growth_samples > 0) stats_.mean_growth_tokens = growth_sum_ / double(stats_.growth_samples);
    for (size_t b = 0; b < turn_sums_.size(); ++b) {
      if (turn_counts_[b] == 0) continue;
      int32_t first = b == 0 ? 0 : int32_t{1} << (b - 1);
      int32_t last = b == 0 ? 0 : (int32_t{1} << b) - 1;
      stats_.growth.push_back({first, last, turn_counts_[b], turn_sums_[b] / double(turn_counts_[b])});
    }
    stats_.skipped_lines = skipped_lines;
    return stats_;
  }

 private:
  // One entry per request, for exact percentiles: 8 MB each per million requests.
  using Lengths = std::vector<int64_t, HugePageAllocator<int64_t>>;

  void add_blocks(const Request& r) {
    PrefixForest::Placement placement = forest_.add(r.block_ids);
    if (!placement.consistent) ++stats_.prefix_violations;
    int64_t hit = static_cast<int64_t>(placement.hit_blocks);
    stats_.total_blocks += static_cast<int64_t>(r.block_ids.size());
    stats_.hit_blocks += hit;
    stats_.total_tokens += r.input_tokens;
    stats_.hit_tokens += std::min(r.input_tokens, hit * stats_.block_tokens);
    reuse_.visit(r.block_ids, placement.hit_blocks, r.arrival_s, [this](double gap) { count_reuse(gap); });
  }

  void count_reuse(double gap_s) {
    size_t b = 0;
    while (gap_s >= stats_.reuse[b].upper_s) ++b;
    ++stats_.reuse[b].blocks;
  }

  // REQUIRES: prepare(r) was the last call to prepare, so session_ is r's.
  void add_turn(const Request& r) {
    if (session_->turns > 0) {
      growth_sum_ += double(r.input_tokens - session_->last_input);
      ++stats_.growth_samples;
    }
    session_->last_input = r.input_tokens;
    ++session_->turns;
    size_t bucket = r.turn <= 0 ? 0 : static_cast<size_t>(std::bit_width(static_cast<uint32_t>(r.turn)));
    if (turn_sums_.size() <= bucket) {
      turn_sums_.resize(bucket + 1, 0);
      turn_counts_.resize(bucket + 1, 0);
    }
    turn_sums_[bucket] += double(r.input_tokens);
    ++turn_counts_[bucket];
  }

  static LengthSummary summarize(Lengths& values) {
    LengthSummary s;
    if (values.empty()) return s;
    double sum = 0;
    for (int64_t v : values) sum += double(v);
    s.mean = sum / double(values.size());
    auto rank = [&](double q) {
      size_t k = static_cast<size_t>(std::ceil(q * double(values.size()))) - 1;
      std::nth_element(values.begin(), values.begin() + long(k), values.end());
      return values[k];
    };
    s.p50 = rank(0.50);
    s.p90 = rank(0.90);
    s.p99 = rank(0.99);
    s.max = *std::max_element(values.begin(), values.end());
    return s;
  }

  TraceStats stats_;
  PrefixForest forest_;
  ReuseSampler reuse_;
  double first_arrival_ = std::numeric_limits<double>::infinity();
  double last_arrival_ = -std::numeric_limits<double>::infinity();
  Lengths inputs_, outputs_;
  struct Session {
    int64_t turns = 0;            // added so far
    int64_t last_input = 0;       // input tokens of its latest turn
    size_t blocks = 0;            // block ids of its latest request
    std::vector<size_t> sampled;  // positions of the sampled ids in its latest request
  };
  std::unordered_map<int64_t, Session> sessions_;  // by session id; elements never move
  Session* session_ = nullptr;                     // of the request prepared last
  double growth_sum_ = 0;
  std::vector<double> turn_sums_;
  std::vector<int64_t> turn_counts_;
};

}  // namespace

TraceStats compute_trace_stats(RequestStream& stream, const TraceStatsOptions& options) {
  if (options.reuse_sampling < 1 || !std::has_single_bit(static_cast<uint64_t>(options.reuse_sampling))) {
    throw ConfigError("reuse sampling must be a power of two (1 follows every block), got " +
                      std::to_string(options.reuse_sampling));
  }
  // The builder's tables go back to the kernel as the function ends, also when the stream throws.
  struct Release {
    ~Release() { release_kept_huge_pages(); }
  } release;
  StatsBuilder builder(stream.block_tokens(), options.reuse_sampling);
  Request current, next;
  bool more = stream.next(current);
  if (more) builder.prepare(current);
  while (more) {
    more = stream.next(next);
    builder.add(current);
    if (more) builder.prepare(next);
    std::swap(current, next);
  }
  return builder.finish(stream.skipped_lines());
}

}  // namespace kvtier
