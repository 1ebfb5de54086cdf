#include "sim/workload/trace_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <streambuf>
#include <vector>

#include "sim/core/config.h"
#include "sim/core/units.h"

namespace kvtier {
namespace {

constexpr size_t kPipeChunkBytes = size_t{1} << 20;

struct Pipe {
  int fd = -1;
  std::string peeked;  // what look-aheads read, not yet handed to the reader
  bool handed_out = false;
  std::shared_ptr<const std::string> held;  // the whole pipe, once hold_trace_input read it
};

std::map<std::string, Pipe>& pipes() {
  static std::map<std::string, Pipe> open_pipes;
  return open_pipes;
}

Pipe& pipe_of(const std::string& path) {
  Pipe& pipe = pipes()[path];
  if (pipe.fd < 0 && !pipe.held) {
    pipe.fd = path == kStandardInputPath ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (pipe.fd < 0) throw ConfigError(path + ": cannot open trace");
  }
  return pipe;
}

void require_unread(const std::string& path, const Pipe& pipe) {
  if (pipe.handed_out) {
    throw ConfigError(
        trace_input_name(path) +
        ": a pipe can be read only once, and this one was read already; save the trace to a file");
  }
}

// Up to `size` bytes from the pipe; 0 at its end.
size_t read_pipe(const std::string& path, const Pipe& pipe, char* data, size_t size) {
  while (true) {
    ssize_t got = ::read(pipe.fd, data, size);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) throw ConfigError(trace_input_name(path) + ": cannot read: " + std::strerror(errno));
  }
}

// Serves a block of memory it shares with the pipe's record.
class HeldBuffer : public std::streambuf {
 public:
  explicit HeldBuffer(std::shared_ptr<const std::string> text) : text_(std::move(text)) {
    char* begin = const_cast<char*>(text_->data());  // read-only: a get area never writes
    setg(begin, begin, begin + text_->size());
  }

 private:
  std::shared_ptr<const std::string> text_;
};

// Serves a pipe from its start: first what look-aheads kept, then the pipe itself. A look-ahead adds
// what it reads to the kept bytes; the reader takes the kept bytes over.
class PipeBuffer : public std::streambuf {
 public:
  PipeBuffer(std::string path, Pipe& pipe, bool look_ahead)
      : path_(std::move(path)), pipe_(pipe), look_ahead_(look_ahead), chunk_(kPipeChunkBytes) {
    if (!look_ahead_) kept_ = std::move(pipe_.peeked);
  }

 protected:
  int_type underflow() override {
    const std::string& kept = look_ahead_ ? pipe_.peeked : kept_;
    size_t size = 0;
    if (kept_offset_ < kept.size()) {
      size = std::min(chunk_.size(), kept.size() - kept_offset_);
      std::memcpy(chunk_.data(), kept.data() + kept_offset_, size);
      kept_offset_ += size;
    } else {
      size = read_pipe(path_, pipe_, chunk_.data(), chunk_.size());
      if (look_ahead_) {
        pipe_.peeked.append(chunk_.data(), size);
        kept_offset_ += size;
      }
    }
    if (size == 0) return traits_type::eof();
    setg(chunk_.data(), chunk_.data(), chunk_.data() + size);
    return traits_type::to_int_type(chunk_[0]);
  }

 private:
  std::string path_;
  Pipe& pipe_;
  bool look_ahead_;
  std::string kept_;  // the reader's: what look-aheads read before it
  size_t kept_offset_ = 0;
  std::vector<char> chunk_;
};

template <typename Buffer>
class BufferStream : public std::istream {
 public:
  template <typename... Args>
  explicit BufferStream(Args&&... args) : std::istream(nullptr), buffer_(std::forward<Args>(args)...) {
    rdbuf(&buffer_);
  }

 private:
  Buffer buffer_;
};

std::unique_ptr<std::istream> open_file(const std::string& path) {
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*in) throw ConfigError(path + ": cannot open trace");
  return in;
}

std::unique_ptr<std::istream> open_pipe(const std::string& path, bool look_ahead) {
  Pipe& pipe = pipe_of(path);
  if (pipe.held) return std::make_unique<BufferStream<HeldBuffer>>(pipe.held);
  require_unread(path, pipe);
  if (!look_ahead) pipe.handed_out = true;
  return std::make_unique<BufferStream<PipeBuffer>>(path, pipe, look_ahead);
}

}  // namespace

std::string trace_input_name(const std::string& path) {
  return path == kStandardInputPath ? "stdin" : path;
}

bool is_pipe_input(const std::string& path) {
  if (path == kStandardInputPath) return true;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  return !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

std::unique_ptr<std::istream> open_trace_input(const std::string& path) {
  return is_pipe_input(path) ? open_pipe(path, false) : open_file(path);
}

std::unique_ptr<std::istream> peek_trace_input(const std::string& path) {
  return is_pipe_input(path) ? open_pipe(path, true) : open_file(path);
}

void hold_trace_input(const std::string& path) {
  if (!is_pipe_input(path)) return;
  Pipe& pipe = pipe_of(path);
  if (pipe.held) return;
  require_unread(path, pipe);
  std::string text = std::move(pipe.peeked);
  std::vector<char> chunk(kPipeChunkBytes);
  while (size_t got = read_pipe(path, pipe, chunk.data(), chunk.size())) {
    text.append(chunk.data(), got);
    if (text.size() > kMaxHeldPipeBytes) {
      throw ConfigError(trace_input_name(path) + ": a trace read from a pipe is held in memory, up to " +
                        format_bytes(static_cast<double>(kMaxHeldPipeBytes)) +
                        "; this one is larger: save it to a file");
    }
  }
  pipe.held = std::make_shared<const std::string>(std::move(text));
}

bool trace_input_smaller_than(const std::string& path, uint64_t bytes) {
  if (!is_pipe_input(path)) {
    std::error_code error;
    uintmax_t size = std::filesystem::file_size(path, error);
    if (error) throw ConfigError(path + ": cannot open trace");
    return size < bytes;
  }
  std::unique_ptr<std::istream> in = peek_trace_input(path);
  in->ignore(static_cast<std::streamsize>(bytes));
  return static_cast<uint64_t>(in->gcount()) < bytes;
}

}  // namespace kvtier
