// Times GPU work with device events: the median of several runs after a warm-up.
//
// `enqueue` puts the work on `stream` (and may fork other streams off it, as long as it joins them back
// into `stream` before returning); the timing spans from an event recorded before it to one after it.
// With `idle_s`, the GPU idles that long before each run, so that every run starts at the clock an idle
// GPU comes back with rather than the one the previous run's power draw left it at.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "hw/gpu/device_buffer.h"

namespace kvtier::hw {

// The same, with `before_each()` run (on the host) before each timed run: a gap of the caller's making.
template <typename Enqueue, typename Before>
double median_seconds_after(gpuStream_t stream, Enqueue enqueue, int runs, Before before_each) {
  enqueue();  // warm-up: first-touch of pages, lazy module loading, DMA engine start
  KVTIER_GPU_CHECK(gpuStreamSynchronize(stream));
  gpu::Event start;
  gpu::Event stop;
  std::vector<double> seconds;
  for (int run = 0; run < runs; ++run) {
    before_each();
    start.record(stream);
    enqueue();
    stop.record(stream);
    stop.synchronize();
    seconds.push_back(stop.elapsed_ms_since(start) * 1e-3);
  }
  std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
  return seconds[runs / 2];
}

template <typename Enqueue>
double median_seconds(gpuStream_t stream, Enqueue enqueue, int runs = 5, double idle_s = 0) {
  return median_seconds_after(stream, enqueue, runs, [idle_s] {
    if (idle_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  });
}

}  // namespace kvtier::hw
