// A file of fixed capacity that the NVMe store reads and writes at 4 KiB-aligned offsets.
//
// BlockFile is the seam between the store and the operating system: the store only asks for
// positioned, vectored reads and writes, so tests can put a decorator in between that fails a chosen
// write the way a full or broken disk does. DirectFile is the real one: it creates the file,
// preallocates every byte up front (posix_fallocate), so that a disk too small for the store fails at
// open and not halfway through a write, and opens it with O_DIRECT so transfers go straight between
// the caller's (pinned) buffers and the device, bypassing the page cache, as `dd oflag=direct` does.
// A file also hands out its descriptor, so that the store's io_uring path can queue transfers on it
// directly; decorators return none and keep every transfer going through them.
#pragma once

#include <limits.h>  // IOV_MAX
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kvtier::hw {

// O_DIRECT needs offsets, lengths and buffer addresses aligned to the logical block size; 4 KiB
// covers every current NVMe drive and file system.
inline constexpr uint64_t kIoAlignment = 4096;
inline constexpr uint64_t round_up_to_io(uint64_t bytes) {
  return (bytes + kIoAlignment - 1) / kIoAlignment * kIoAlignment;
}

enum class IoMode {
  kDirect,   // O_DIRECT: no page cache; what the store and `dd oflag=direct` measure
  kBuffered  // through the page cache, for file systems that refuse O_DIRECT (tmpfs)
};

class BlockFile {
 public:
  virtual ~BlockFile() = default;
  virtual uint64_t size() const = 0;
  // Writes / reads the buffers back to back starting at `offset`. Throws StoreError(kIo) on failure,
  // after which the bytes of that range are unspecified.
  // REQUIRES: offset and every iov_base / iov_len are multiples of kIoAlignment (kDirect).
  virtual void write_at(uint64_t offset, std::span<const iovec> buffers) = 0;
  virtual void read_at(uint64_t offset, std::span<const iovec> buffers) = 0;
  // What error messages call the file: its path where it has one.
  virtual std::string name() const { return "the store's file"; }
  // The file descriptor that asynchronous I/O (io_uring) may use in place of read_at / write_at, or -1
  // when every transfer must go through them (a decorator that injects faults).
  virtual int native_handle() const { return -1; }
};

class DirectFile : public BlockFile {
 public:
  // Creates `path`, which must not exist, and preallocates `bytes`. Throws StoreError(kIo) naming the
  // path and the size when the file system cannot hold it, and removes the file it created. The file
  // holds a cache, not data of record: the destructor removes it.
  DirectFile(std::string path, uint64_t bytes, IoMode mode);
  ~DirectFile() override;
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;

  uint64_t size() const override { return bytes_; }
  const std::string& path() const { return path_; }
  std::string name() const override { return path_; }
  int native_handle() const override { return fd_; }
  void write_at(uint64_t offset, std::span<const iovec> buffers) override;
  void read_at(uint64_t offset, std::span<const iovec> buffers) override;

 private:
  std::string path_;
  uint64_t bytes_;
  int fd_ = -1;
};

}  // namespace kvtier::hw
