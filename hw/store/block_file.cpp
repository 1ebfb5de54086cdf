#include "hw/store/block_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

uint64_t total_length(std::span<const iovec> buffers) {
  uint64_t total = 0;
  for (const iovec& buffer : buffers) total += buffer.iov_len;
  return total;
}

// Drops the first `done` bytes from `buffers` after a short transfer.
void advance(std::vector<iovec>& buffers, uint64_t done) {
  size_t first = 0;
  while (first < buffers.size() && done >= buffers[first].iov_len) done -= buffers[first++].iov_len;
  buffers.erase(buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(first));
  if (!buffers.empty()) {
    buffers.front().iov_base = static_cast<char*>(buffers.front().iov_base) + done;
    buffers.front().iov_len -= done;
  }
}

// pwritev / preadv until everything moved: the kernel may transfer less than asked.
template <typename Transfer>
void transfer_all(Transfer transfer, int fd, uint64_t offset, std::span<const iovec> buffers,
                  const std::string& what) {
  std::vector<iovec> pending(buffers.begin(), buffers.end());
  while (!pending.empty()) {
    const int count = static_cast<int>(std::min<size_t>(pending.size(), IOV_MAX));
    const ssize_t moved = transfer(fd, pending.data(), count, static_cast<off_t>(offset));
    if (moved < 0 && errno == EINTR) continue;
    if (moved < 0) throw_io_error(what + " at offset " + std::to_string(offset), errno);
    if (moved == 0)
      throw StoreError(StoreErrc::kIo, what + " at offset " + std::to_string(offset) + ": end of file");
    offset += static_cast<uint64_t>(moved);
    advance(pending, static_cast<uint64_t>(moved));
  }
}

}  // namespace

DirectFile::DirectFile(std::string path, uint64_t bytes, IoMode mode)
    : path_(std::move(path)), bytes_(bytes) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | (mode == IoMode::kDirect ? O_DIRECT : 0);
  fd_ = ::open(path_.c_str(), flags, 0600);
  if (fd_ < 0 && errno == EINVAL && mode == IoMode::kDirect) {
    throw StoreError(StoreErrc::kIo, "cannot open " + path_ +
                                         " with O_DIRECT: this file system does not support direct I/O; "
                                         "put the store on a disk-backed file system or use buffered I/O");
  }
  if (fd_ < 0) throw_io_error("cannot create " + path_, errno);
  if (const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes_)); err != 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw_io_error("cannot preallocate " + std::to_string(bytes_) + " bytes for " + path_, err);
  }
}

DirectFile::~DirectFile() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

void DirectFile::write_at(uint64_t offset, std::span<const iovec> buffers) {
  if (offset + total_length(buffers) > bytes_) {
    throw StoreError(StoreErrc::kBadRequest, "write past the preallocated end of " + path_);
  }
  transfer_all(::pwritev, fd_, offset, buffers, "write to " + path_);
}

void DirectFile::read_at(uint64_t offset, std::span<const iovec> buffers) {
  if (offset + total_length(buffers) > bytes_) {
    throw StoreError(StoreErrc::kBadRequest, "read past the end of " + path_);
  }
  transfer_all(::preadv, fd_, offset, buffers, "read from " + path_);
}

}  // namespace kvtier::hw
