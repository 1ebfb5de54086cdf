// The NVMe store's I/O engine: a batch of positioned, vectored reads or writes with up to `queue_depth`
// in flight, and per-request work (the checksum) run on the I/O threads as each request is issued or
// completes, so that it overlaps with the transfers still in flight.
//
// Two paths, same results:
//   io_uring (liburing): a few threads, each owning a ring of queue_depth / threads entries, keep the
//     rings full and checksum what completes; a handful of cores then drive several fast drives;
//   worker threads: queue_depth threads, each with one blocking preadv / pwritev in flight; what runs
//     where io_uring does not (a kernel or container that refuses io_uring_queue_init, a build without
//     liburing, a file without a descriptor such as a fault-injecting decorator).
// With IoPath::kAuto the queue tries io_uring once when it is made and, if the kernel refuses, says why
// on stderr (once per process) and uses worker threads from then on.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "hw/store/block_file.h"

namespace kvtier::hw {

enum class IoPath {
  kAuto,    // io_uring where the kernel allows it, else worker threads
  kThreads  // worker threads with blocking I/O, always
};

enum class IoDirection { kRead, kWrite };

struct IoRequest {
  BlockFile* file = nullptr;
  uint64_t offset = 0;
  std::span<const iovec> buffers;  // back to back from `offset`; at most IOV_MAX
};

// Why io_uring cannot be used in this process (built without liburing, or the kernel's answer to
// io_uring_queue_init), or nullopt when it can.
std::optional<std::string> io_uring_unavailable_reason();

class IoQueue {
 public:
  // `io_threads`: io_uring threads (each with its own ring); ignored by the worker-thread path.
  IoQueue(IoPath path, int queue_depth, int io_threads);
  ~IoQueue();
  IoQueue(const IoQueue&) = delete;
  IoQueue& operator=(const IoQueue&) = delete;

  // "io_uring" or "threads": the path run() takes for files with a descriptor.
  const char* path_name() const;
  int queue_depth() const { return queue_depth_; }

  // Runs every request. before(i) runs on an I/O thread just before request i is issued, after(i) once it
  // completed in full: on the io_uring path, after its thread has refilled its ring, so that the work
  // overlaps with the transfers in flight. The first exception (from an I/O, before or after) stops further
  // requests from being issued; run() waits for those in flight and rethrows it. Throws StoreError(kIo)
  // naming the file and offset of a failed transfer.
  void run(IoDirection direction, std::span<const IoRequest> requests, const std::function<void(size_t)>& before,
           const std::function<void(size_t)>& after);

 private:
  struct Rings;
  void run_on_rings(IoDirection direction, std::span<const IoRequest> requests,
                    const std::function<void(size_t)>& before, const std::function<void(size_t)>& after);
  void run_on_threads(IoDirection direction, std::span<const IoRequest> requests,
                      const std::function<void(size_t)>& before, const std::function<void(size_t)>& after) const;

  int queue_depth_;
  std::unique_ptr<Rings> rings_;  // null: the worker-thread path
};

}  // namespace kvtier::hw
