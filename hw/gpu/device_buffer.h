// Owning handles for device and pinned host memory, streams and events (RAII over the vendor API).
// They are move-only; a failed allocation throws GpuError. Used by the kernel tests and benchmarks, and
// by anything that wants a scratch buffer without writing gpuFree in every error path.
#pragma once

#include <cstddef>
#include <utility>

#include "hw/gpu/check.h"

namespace kvtier::gpu {

// REQUIRES: T is trivially copyable (the bytes are copied with gpuMemcpy).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count > 0) KVTIER_GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) (void)gpuFree(data_);
  }

  T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host, size_t count) {
    KVTIER_GPU_CHECK(gpuMemcpy(data_, host, count * sizeof(T), gpuMemcpyHostToDevice));
  }
  void download(T* host, size_t count) const {
    KVTIER_GPU_CHECK(gpuMemcpy(host, data_, count * sizeof(T), gpuMemcpyDeviceToHost));
  }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() { KVTIER_GPU_CHECK(gpuStreamCreateWithFlags(&stream_, gpuStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { (void)gpuStreamDestroy(stream_); }

  gpuStream_t get() const { return stream_; }
  void synchronize() const { KVTIER_GPU_CHECK(gpuStreamSynchronize(stream_)); }

 private:
  gpuStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() { KVTIER_GPU_CHECK(gpuEventCreate(&event_)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { (void)gpuEventDestroy(event_); }

  gpuEvent_t get() const { return event_; }
  void record(gpuStream_t stream) { KVTIER_GPU_CHECK(gpuEventRecord(event_, stream)); }
  void synchronize() const { KVTIER_GPU_CHECK(gpuEventSynchronize(event_)); }
  // Milliseconds from `start` to this event; both must have completed.
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    KVTIER_GPU_CHECK(gpuEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  gpuEvent_t event_ = nullptr;
};

}  // namespace kvtier::gpu
