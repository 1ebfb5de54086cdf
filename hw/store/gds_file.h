// GPUDirect Storage: a file that HBM reads and writes directly through cuFile, skipping the DRAM bounce.
//
// Where the platform supports it (an NVMe drive, the nvidia-fs driver, a GDS-capable file system),
// cuFile moves data between the drive and device memory by DMA. Where it does not, cuFile may run in
// its compatibility mode (POSIX I/O through a bounce buffer inside the library) or refuse; and builds
// without cuFile (ROCm, or CUDA without the GDS package) have no GDS at all. open() throws
// GdsUnavailable with the reason in each of those cases, so callers print it and fall back to the
// store's DRAM bounce path (pinned host pages + O_DIRECT). GDS transfers are not checksummed: the bytes
// never pass through the CPU; the NVMe store's checksummed path remains the default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace kvtier::hw {

class GdsUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GdsFile {
 public:
  // Creates `path` (it must not exist), preallocates `bytes`, opens it with O_DIRECT and registers it
  // with cuFile. Throws GdsUnavailable when GDS cannot be used, StoreError for file errors.
  static std::unique_ptr<GdsFile> open(const std::string& path, uint64_t bytes);
  virtual ~GdsFile() = default;

  // Synchronous transfers between device memory and the file. Throw StoreError(kIo) with cuFile's reason.
  virtual void write(uint64_t offset, const std::byte* device, uint64_t bytes) = 0;
  virtual void read(uint64_t offset, std::byte* device, uint64_t bytes) = 0;
};

}  // namespace kvtier::hw
