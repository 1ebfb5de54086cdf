// Errors of the tiered store, as values a caller can branch on.
//
// Every failure of the store (a tier out of space, an I/O error from the operating system, a block
// whose checksum no longer matches, a key that is not stored) is thrown as a StoreError carrying a
// StoreErrc. The message names the file, the key or the sizes involved, so a user can act on it.
// The store never exits and never returns data it could not verify.
#pragma once

#include <stdexcept>
#include <string>

namespace kvtier::hw {

enum class StoreErrc {
  kFull,       // the tier has no free block for the request; nothing was written
  kIo,         // the operating system refused a read, write, open or preallocation
  kCorrupt,    // a block read back does not match the checksum recorded when it was written
  kNotFound,   // the key is not stored in this tier
  kBadRequest  // the request breaks a documented precondition (size, alignment)
};

const char* to_string(StoreErrc code);

class StoreError : public std::runtime_error {
 public:
  StoreError(StoreErrc code, const std::string& what)
      : std::runtime_error(std::string(to_string(code)) + ": " + what), code_(code) {}
  StoreErrc code() const { return code_; }

 private:
  StoreErrc code_;
};

// Throws StoreError(kIo) with `what` followed by strerror(errnum).
[[noreturn]] void throw_io_error(const std::string& what, int errnum);

}  // namespace kvtier::hw
