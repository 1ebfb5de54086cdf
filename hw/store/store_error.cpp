#include "hw/store/store_error.h"

#include <cstring>

namespace kvtier::hw {

const char* to_string(StoreErrc code) {
  switch (code) {
    case StoreErrc::kFull:
      return "store full";
    case StoreErrc::kIo:
      return "I/O error";
    case StoreErrc::kCorrupt:
      return "corrupt block";
    case StoreErrc::kNotFound:
      return "not found";
    case StoreErrc::kBadRequest:
      return "bad request";
  }
  return "unknown store error";
}

void throw_io_error(const std::string& what, int errnum) {
  throw StoreError(StoreErrc::kIo, what + ": " + std::strerror(errnum));
}

}  // namespace kvtier::hw
