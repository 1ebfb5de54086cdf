// Test support: a BlockFile that counts the I/Os reaching the file it wraps and fails every write after
// the first `writes_allowed`, the way a disk that fills up or breaks mid-run does. Setting
// writes_allowed to 0 while a test runs breaks the disk from then on.
#pragma once

#include <cerrno>
#include <memory>
#include <span>
#include <string>

#include "hw/store/block_file.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {

struct IoLog {
  int writes = 0;
  int reads = 0;
  int writes_allowed = 1 << 30;
};

class FaultInjectingFile : public BlockFile {
 public:
  FaultInjectingFile(std::unique_ptr<BlockFile> inner, std::shared_ptr<IoLog> log)
      : inner_(std::move(inner)), log_(std::move(log)) {}
  uint64_t size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void write_at(uint64_t offset, std::span<const iovec> buffers) override {
    if (log_->writes >= log_->writes_allowed) throw_io_error("injected write failure", ENOSPC);
    ++log_->writes;
    inner_->write_at(offset, buffers);
  }
  void read_at(uint64_t offset, std::span<const iovec> buffers) override {
    ++log_->reads;
    inner_->read_at(offset, buffers);
  }

 private:
  std::unique_ptr<BlockFile> inner_;
  std::shared_ptr<IoLog> log_;
};

}  // namespace kvtier::hw
