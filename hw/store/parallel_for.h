// Runs fn(0..count-1) on up to `workers` threads and rethrows the first exception any call threw.
//
// The NVMe store's queue depth: each worker keeps one blocking I/O in flight, so `workers` I/Os are
// outstanding at once. Threads are started per call; their cost (tens of microseconds) is small
// against the millisecond I/Os they issue.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kvtier::hw {

template <typename Fn>
void parallel_for(size_t count, int workers, Fn fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (size_t i = next++; i < count && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  const size_t threads = std::min<size_t>(count, static_cast<size_t>(std::max(workers, 1)));
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace kvtier::hw
