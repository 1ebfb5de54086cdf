// What a trace holds, in one streaming pass: `kvtier trace stats`.
//
// Besides counts and length percentiles, it measures what any cache could at best get out of the trace:
// with an infinite cache, a request hits the leading run of its blocks that earlier requests already
// brought in (the first miss ends the prefix, as a prefix cache matches). Reuse distance is the time since a
// hit block was last used, which says how long a cache must keep blocks to get those hits. For session
// traces, context growth shows how the input grows from turn to turn.
//
// Because block ids name whole prefixes, the seen blocks form a forest (prefix_forest.h) in which a
// request's hit costs a few lookups, not one per block. Reuse times are measured on a spatial sample of
// the block ids (every id whose hash falls in 1/reuse_sampling of the hash space, as SHARDS does:
// Waldspurger et al., FAST'15), which keeps them exact for the sampled blocks and cheap for the trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/trace_reader.h"

namespace kvtier {

struct LengthSummary {
  double mean = 0;
  int64_t p50 = 0, p90 = 0, p99 = 0, max = 0;  // nearest-rank percentiles
};

struct ReuseBucket {
  std::string label;  // "1-10 s"
  double upper_s;     // exclusive upper bound; infinity for the last bucket
  int64_t blocks = 0;
};

struct TurnGrowthRow {
  int32_t first_turn, last_turn;  // a range of 0-based turn numbers
  int64_t requests = 0;
  double mean_input_tokens = 0;
};

struct TraceStats {
  int64_t requests = 0;
  int64_t sessions = 0;  // distinct session ids; 0 when the trace has none
  int64_t block_tokens = 0;
  double duration_s = 0;  // last arrival - first arrival
  LengthSummary input_tokens, output_tokens;

  int64_t total_blocks = 0, unique_blocks = 0, hit_blocks = 0;
  int64_t total_tokens = 0, hit_tokens = 0;  // input tokens, and those inside hit blocks
  double block_hit_rate() const { return total_blocks ? double(hit_blocks) / double(total_blocks) : 0; }
  double token_hit_rate() const { return total_tokens ? double(hit_tokens) / double(total_tokens) : 0; }

  std::vector<ReuseBucket> reuse;  // sampled hit blocks by time since their previous use
  int64_t reuse_sampling = 1;      // one block id in this many is followed
  std::vector<TurnGrowthRow> growth;
  int64_t growth_samples = 0;     // consecutive turns of one session
  double mean_growth_tokens = 0;  // mean input(turn t) - input(turn t - 1)
  int64_t prefix_violations = 0;  // requests whose ids reappeared after a different predecessor
  int64_t skipped_lines = 0;
};

struct TraceStatsOptions {
  int64_t reuse_sampling = 1;  // 1 follows every block (exact; slower on large traces); a power of two
};

// Reads the stream to its end. Throws ConfigError from the stream for a bad line, and for a sampling
// rate that is not a power of two.
TraceStats compute_trace_stats(RequestStream& stream, const TraceStatsOptions& options = {});

}  // namespace kvtier
