#include "sim/cluster/routed_driver.h"

namespace kvtier {

void RoutedDriver::deliver(Request request, double now) {
  request.arrival_s = now;
  const int64_t tokens = request.input_tokens + request.output_tokens;
  tokens_.emplace(request.id, tokens);
  ++load_.requests;
  load_.active_tokens += tokens;
  inbox_.push_back(std::move(request));
}

std::optional<double> RoutedDriver::next_ready_time() const {
  if (inbox_.empty()) return std::nullopt;
  return inbox_.front().arrival_s;
}

Request RoutedDriver::pop_ready() {
  Request r = std::move(inbox_.front());
  inbox_.pop_front();
  ++counts_.issued;
  return r;
}

void RoutedDriver::on_complete(uint64_t request_id, double now) {
  ++counts_.completed;
  auto it = tokens_.find(request_id);
  --load_.requests;
  load_.active_tokens -= it->second;
  tokens_.erase(it);
  on_complete_(request_id, now);
}

}  // namespace kvtier
