// The records of a run's requests, in arrival order, as the scheduler writes them (scheduler.h).
//
// A record is final once its request completed or was rejected: the scheduler writes it no more. With a
// reader, the final records at the front are handed to it in arrival order and dropped, so that a run
// holds only the records from the oldest request still in flight onwards, however many requests it
// serves; close() hands over the rest. Without one, every record stays (a test reads them as it likes).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>

#include "sim/serving/request_record.h"

namespace kvtier {

class RequestLog {
 public:
  using Reader = std::function<void(const RequestRecord&)>;

  explicit RequestLog(Reader reader = nullptr) : reader_(std::move(reader)) {}

  // Appends a record; returns its index, by which the scheduler reaches it.
  size_t add(RequestRecord record);
  // REQUIRES: the record at `index` is still held.
  RequestRecord& operator[](size_t index) { return held_[index - first_]; }
  const RequestRecord& operator[](size_t index) const { return held_[index - first_]; }

  // Hands the final records at the front to the reader (none without a reader).
  void settle();
  // Hands every record still held to the reader, final or not (the run is over).
  void close();

  size_t size() const { return first_ + held_.size(); }  // records added
  size_t held() const { return held_.size(); }
  auto begin() const { return held_.begin(); }
  auto end() const { return held_.end(); }

 private:
  Reader reader_;
  std::deque<RequestRecord> held_;
  size_t first_ = 0;  // the index of held_.front()
};

}  // namespace kvtier
