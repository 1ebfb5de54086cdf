// Conversion between trace formats: `kvtier trace convert`.
//
// To Mooncake: streams, re-blocking every request into Mooncake's 512-token blocks (timestamps in ms).
// To native (block-ids form): groups the trace into sessions first, in memory, so that each turn can
// carry the think time before its session's next turn and its session's last turn can be marked; turns
// are then written in arrival order. Bailian's parent links become sessions this way.
#pragma once

#include <ostream>
#include <string>

#include "sim/workload/trace_reader.h"

namespace kvtier {

// Returns the number of requests written. Throws ConfigError from the reader.
int64_t convert_to_mooncake(const std::string& path, TraceReadOptions options, std::ostream& out);
// Writes ids in options.block_tokens (0: the trace's own). Returns the number of turns written.
int64_t convert_to_native(const std::string& path, TraceReadOptions options, std::ostream& out);

}  // namespace kvtier
