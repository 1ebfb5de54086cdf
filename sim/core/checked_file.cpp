#include "sim/core/checked_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <streambuf>
#include <vector>

namespace kvtier {

// A write buffer in front of a file descriptor that remembers the first error a system call reported.
class CheckedFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(const std::filesystem::path& path) : path_(path), bytes_(1 << 16) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) throw std::runtime_error("cannot write " + path_.string() + ": " + std::strerror(errno));
    setp(bytes_.data(), bytes_.data() + bytes_.size());
  }
  ~Buffer() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Flushes and closes; the first error of the file's whole life, if any, as a message.
  void close() {
    drain();
    if (fd_ >= 0 && ::close(fd_) != 0) remember(errno);
    fd_ = -1;
    if (error_ != 0) throw std::runtime_error("cannot write " + path_.string() + ": " + std::strerror(error_));
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  // Writes what the buffer holds; false once any write has failed.
  bool drain() {
    const char* next = pbase();
    while (error_ == 0 && next < pptr()) {
      ssize_t n = ::write(fd_, next, static_cast<size_t>(pptr() - next));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) remember(n < 0 ? errno : EIO);
      else next += n;
    }
    setp(bytes_.data(), bytes_.data() + bytes_.size());
    return error_ == 0;
  }
  void remember(int error) {
    if (error_ == 0) error_ = error;
  }

  std::filesystem::path path_;
  std::vector<char> bytes_;
  int fd_ = -1;
  int error_ = 0;
};

CheckedFile::CheckedFile(const std::filesystem::path& path)
    : std::ostream(nullptr), buffer_(std::make_unique<Buffer>(path)) {
  rdbuf(buffer_.get());
}

CheckedFile::~CheckedFile() = default;

void CheckedFile::close() { buffer_->close(); }

void write_checked_file(const std::filesystem::path& path, std::string_view text) {
  CheckedFile file(path);
  file << text;
  file.close();
}

void replace_checked_file(const std::filesystem::path& path, std::string_view text) {
  std::string name = path.filename().string();
  name.insert(name.begin(), '.');  // not "." + name: GCC 12 warns falsely (-Wrestrict) on that inlined
  name.append(".tmp");
  const std::filesystem::path temporary = path.parent_path() / name;
  try {
    write_checked_file(temporary, text);
    std::filesystem::rename(temporary, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

void create_checked_folder(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw std::runtime_error("cannot create " + path.string() + ": " + error.message());
}

}  // namespace kvtier
