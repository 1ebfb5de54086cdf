// A folder of its own under the system's temporary folder (mkdtemp), removed with everything in it when
// the object goes: scratch space that kvtier created and so may delete.
#pragma once

#include <errno.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace kvtier {

class TemporaryFolder {
 public:
  // `prefix` names the folder: <temp>/<prefix>-XXXXXX. Throws std::runtime_error when it cannot be made.
  explicit TemporaryFolder(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary folder " + pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kvtier
