// Output files whose every failure is an error that names the file. std::ofstream sets a bit nobody
// checks: a full disk (ENOSPC) or an I/O error (EIO) left a 0-byte summary.json behind and surfaced later
// as a JSON parse error. CheckedFile writes through the file descriptor itself, keeps the first errno a
// write reported, and close() throws "cannot write PATH: No space left on device".
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string_view>

namespace kvtier {

// An std::ostream onto a new (or truncated) file. Call close() when done: it flushes, closes and throws
// std::runtime_error naming the path and strerror(errno) if any write failed. The destructor closes
// without throwing (a file abandoned by an exception is not checked).
class CheckedFile : public std::ostream {
 public:
  explicit CheckedFile(const std::filesystem::path& path);  // throws std::runtime_error when it cannot open
  ~CheckedFile() override;
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  void close();

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

// Writes `text` to `path` through a CheckedFile.
void write_checked_file(const std::filesystem::path& path, std::string_view text);

// write_checked_file() into a hidden temporary beside `path` (.<name>.tmp), renamed over it: a reader sees
// the old file or the new one, never part of one. The temporary is removed when the write fails; one that a
// SIGKILL left behind keeps that name, so its folder's owner can recognise and remove it.
void replace_checked_file(const std::filesystem::path& path, std::string_view text);

// Creates `path` and any missing parents; throws std::runtime_error "cannot create PATH: <reason>".
void create_checked_folder(const std::filesystem::path& path);

}  // namespace kvtier
