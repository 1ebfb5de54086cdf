// Where a trace's bytes come from: a regular file, standard input ("-"), or another pipe (a FIFO, a
// process substitution such as <(zcat t.jsonl.gz), a character device).
//
// A pipe cannot seek or be opened twice, yet a command first guesses the format from the first line and
// then reads the trace. So what format detection reads of a pipe is kept in memory (peek_trace_input),
// and the one reader opened afterwards (open_trace_input) gets those bytes first and then the rest of the
// pipe. A second reader of the same pipe is a ConfigError, unless the pipe was held whole beforehand
// (hold_trace_input): `simulate` does this in the parent before forking, so each child reads its own
// copy from the memory it inherits. The state of each pipe is process-wide, as the pipe itself is.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

namespace kvtier {

// The path that names standard input.
inline constexpr const char* kStandardInputPath = "-";
// A pipe held whole in memory may be at most this large (hold_trace_input); save a larger trace to a file.
inline constexpr uint64_t kMaxHeldPipeBytes = uint64_t{4} << 30;

// How errors name the trace: "stdin" for "-", else the path.
std::string trace_input_name(const std::string& path);
// True for "-" and for paths that name something other than a regular file or directory.
bool is_pipe_input(const std::string& path);

// The trace's bytes from the start, for the one reader of the trace. Throws ConfigError when the file
// cannot be opened or a pipe that is not held was already handed to a reader.
std::unique_ptr<std::istream> open_trace_input(const std::string& path);
// The trace's bytes from the start, for a look ahead (format detection, size checks): what it reads of a
// pipe is kept for the reader that comes after.
std::unique_ptr<std::istream> peek_trace_input(const std::string& path);
// Reads a pipe to its end and keeps it, so that it can be opened any number of times; a no-op for a
// regular file. Throws ConfigError when the pipe holds more than kMaxHeldPipeBytes or was already read.
void hold_trace_input(const std::string& path);
// Whether the trace holds fewer than `bytes` bytes: the file's size, or what a look ahead into a pipe
// finds (at most `bytes` are kept).
bool trace_input_smaller_than(const std::string& path, uint64_t bytes);

}  // namespace kvtier
