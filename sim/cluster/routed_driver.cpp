#include "sim/cluster/routed_driver.h"

namespace kvtier {

void RoutedDriver::deliver(Request request, double now) {
  request.arrival_s = now;
  if (!tokens_.contains(request.id)) count(request);
  inbox_.push_back(std::move(request));
}

void RoutedDriver::expect(const Request& request) {
  count(request);
}

void RoutedDriver::withdraw(uint64_t request_id) {
  uncount(request_id);
}

void RoutedDriver::count(const Request& request) {
  const int64_t tokens = request.input_tokens + request.output_tokens;
  tokens_.emplace(request.id, tokens);
  ++load_.requests;
  load_.active_tokens += tokens;
}

void RoutedDriver::uncount(uint64_t request_id) {
  auto it = tokens_.find(request_id);
  --load_.requests;
  load_.active_tokens -= it->second;
  tokens_.erase(it);
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

void RoutedDriver::leave(uint64_t request_id, double now, bool rejected) {
  ++counts_.completed;
  uncount(request_id);
  on_complete_(request_id, now, rejected);
}

}  // namespace kvtier
