#include "sim/serving/request_log.h"

namespace kvtier {

size_t RequestLog::add(RequestRecord record) {
  held_.push_back(std::move(record));
  return size() - 1;
}

void RequestLog::settle() {
  if (!reader_) return;
  while (!held_.empty() && (held_.front().completed() || held_.front().rejected)) {
    reader_(held_.front());
    held_.pop_front();
    ++first_;
  }
}

void RequestLog::close() {
  if (!reader_) return;
  for (const RequestRecord& r : held_) reader_(r);
  first_ += held_.size();
  held_.clear();
}

}  // namespace kvtier
