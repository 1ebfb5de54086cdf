#include "hw/store/gds_file.h"

#include "hw/store/block_file.h"
#include "hw/store/store_error.h"

#if defined(KVTIER_HAVE_CUFILE)
#include <cufile.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#endif

namespace kvtier::hw {

#if defined(KVTIER_HAVE_CUFILE)
namespace {

std::string cufile_reason(CUfileError_t status) {
  return std::string(CUFILE_ERRSTR(status.err)) + " (cuFile error " + std::to_string(status.err) + ")";
}

// Owns the preallocated file, the O_DIRECT descriptor cuFile needs, and the cuFile registration.
class CuFile : public GdsFile {
 public:
  CuFile(const std::string& path, uint64_t bytes) : file_(path, bytes, IoMode::kDirect), path_(path) {
    if (const CUfileError_t status = cuFileDriverOpen(); status.err != CU_FILE_SUCCESS) {
      throw GdsUnavailable("cuFile driver did not open: " + cufile_reason(status));
    }
    fd_ = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd_ < 0) throw_io_error("cannot reopen " + path + " for GPUDirect Storage", errno);
    CUfileDescr_t description{};
    description.handle.fd = fd_;
    description.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    if (const CUfileError_t status = cuFileHandleRegister(&handle_, &description);
        status.err != CU_FILE_SUCCESS) {
      ::close(fd_);
      cuFileDriverClose();
      throw GdsUnavailable("cuFile cannot register " + path + ": " + cufile_reason(status));
    }
  }
  ~CuFile() override {
    cuFileHandleDeregister(handle_);
    ::close(fd_);
    cuFileDriverClose();
  }

  void write(uint64_t offset, const std::byte* device, uint64_t bytes) override {
    check(cuFileWrite(handle_, device, bytes, static_cast<off_t>(offset), 0), bytes, "write to");
  }
  void read(uint64_t offset, std::byte* device, uint64_t bytes) override {
    check(cuFileRead(handle_, device, bytes, static_cast<off_t>(offset), 0), bytes, "read from");
  }

 private:
  void check(ssize_t moved, uint64_t bytes, const char* what) const {
    if (moved == static_cast<ssize_t>(bytes)) return;
    const std::string reason = moved < 0 ? (moved == -1 ? std::string("system error ") + std::to_string(errno)
                                                        : std::string(CUFILE_ERRSTR(-moved)))
                                         : "short transfer of " + std::to_string(moved) + " bytes";
    throw StoreError(StoreErrc::kIo, std::string("GPUDirect Storage ") + what + " " + path_ + ": " + reason);
  }

  DirectFile file_;
  std::string path_;
  int fd_ = -1;
  CUfileHandle_t handle_{};
};

}  // namespace

std::unique_ptr<GdsFile> GdsFile::open(const std::string& path, uint64_t bytes) {
  return std::make_unique<CuFile>(path, bytes);
}

#else

std::unique_ptr<GdsFile> GdsFile::open(const std::string&, uint64_t) {
  throw GdsUnavailable("this build has no cuFile (GPUDirect Storage needs CUDA with the GDS package)");
}

#endif

}  // namespace kvtier::hw
