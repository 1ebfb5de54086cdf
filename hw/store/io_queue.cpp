#include "hw/store/io_queue.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "hw/store/parallel_for.h"
#include "hw/store/store_error.h"

#if defined(KVTIER_HAVE_LIBURING)
#include <liburing.h>
#endif

namespace kvtier::hw {
namespace {

void transfer(IoDirection direction, BlockFile& file, uint64_t offset, std::span<const iovec> buffers) {
  if (direction == IoDirection::kRead) {
    file.read_at(offset, buffers);
  } else {
    file.write_at(offset, buffers);
  }
}

// The first exception any I/O thread raised; later ones are dropped.
class FirstError {
 public:
  template <typename Fn>
  void capture(Fn fn) {
    try {
      fn();
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
    }
  }
  bool failed() const { return failed_; }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace

#if defined(KVTIER_HAVE_LIBURING)

namespace {

uint64_t total_length(std::span<const iovec> buffers) {
  uint64_t total = 0;
  for (const iovec& buffer : buffers) total += buffer.iov_len;
  return total;
}

// The rest of a request after the kernel moved only `done` bytes of it, synchronously.
void transfer_rest(IoDirection direction, const IoRequest& request, uint64_t done) {
  std::vector<iovec> rest;
  for (const iovec& buffer : request.buffers) {
    if (done >= buffer.iov_len) {
      done -= buffer.iov_len;
      continue;
    }
    rest.push_back({static_cast<char*>(buffer.iov_base) + done, buffer.iov_len - done});
    done = 0;
  }
  transfer(direction, *request.file, request.offset + total_length(request.buffers) - total_length(rest), rest);
}

// One completion: an error names the file and offset; a short transfer is finished synchronously.
void complete(IoDirection direction, const IoRequest& request, int result) {
  if (result < 0) {
    throw_io_error(std::string(direction == IoDirection::kRead ? "read from " : "write to ") +
                       request.file->name() + " at offset " + std::to_string(request.offset),
                   -result);
  }
  if (static_cast<uint64_t>(result) < total_length(request.buffers)) {
    transfer_rest(direction, request, static_cast<uint64_t>(result));
  }
}

class Ring {
 public:
  explicit Ring(unsigned entries) : entries_(entries) {
    if (const int rc = io_uring_queue_init(entries, &ring_, 0); rc < 0) {
      throw StoreError(StoreErrc::kIo, std::string("io_uring_queue_init: ") + std::strerror(-rc));
    }
  }
  ~Ring() {
    if (usable_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Keeps up to `entries_` requests of the batch in flight, taking the next index from `next`, until
  // the batch is done or an error is recorded; always returns with nothing in flight. The disk never
  // waits on the CPU work around it: each request is submitted as soon as its before() ran (a store's
  // checksums for a write), not once the ring is full, and the after() of completed requests (a read's
  // checksum check) runs once the ring is full again, while its requests are in flight.
  void drive(IoDirection direction, std::span<const IoRequest> requests, std::atomic<size_t>& next,
             FirstError& errors, const std::function<void(size_t)>& before,
             const std::function<void(size_t)>& after) {
    if (!usable_) {
      errors.capture([] { throw StoreError(StoreErrc::kIo, "this store's io_uring ring could not be rebuilt"); });
      return;
    }
    unsigned in_flight = 0;
    std::vector<size_t> completed;  // in full, waiting for after()
    auto run_after = [&] {
      for (size_t i : completed) errors.capture([&] { after(i); });
      completed.clear();
    };
    for (;;) {
      while (in_flight < entries_ && !errors.failed()) {
        const size_t i = next++;
        if (i >= requests.size()) break;
        bool ready = false;
        errors.capture([&] {
          before(i);
          ready = true;
        });
        if (!ready) break;
        queue(direction, requests[i], i);
        ++in_flight;
        if (!submit(0, in_flight, direction, requests, errors, completed)) return run_after();
      }
      run_after();
      if (in_flight == 0) return;
      if (!submit(1, in_flight, direction, requests, errors, completed)) return run_after();
      in_flight -= reap(direction, requests, errors, completed);
    }
  }

 private:
  // Submits what is queued and waits for `wait_for` completions. After a failed submission, reaps what
  // the kernel took and returns false with nothing in flight.
  bool submit(unsigned wait_for, unsigned& in_flight, IoDirection direction,
              std::span<const IoRequest> requests, FirstError& errors, std::vector<size_t>& completed) {
    const int submitted = io_uring_submit_and_wait(&ring_, wait_for);
    if (submitted >= 0 || submitted == -EINTR || submitted == -EAGAIN)
      return true;  // the rest goes next time
    errors.capture([&] { throw_io_error("io_uring_submit", -submitted); });
    abandon_unsubmitted(in_flight, direction, requests, errors, completed);
    in_flight = 0;
    return false;
  }

  // After a failed submission: waits for what the kernel did take, then starts a fresh ring so that the
  // entries it never took cannot be submitted by a later batch.
  void abandon_unsubmitted(unsigned in_flight, IoDirection direction, std::span<const IoRequest> requests,
                           FirstError& errors, std::vector<size_t>& completed) {
    in_flight -= io_uring_sq_ready(&ring_);
    while (in_flight > 0) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_wait_cqe(&ring_, &cqe) == 0) in_flight -= reap(direction, requests, errors, completed);
    }
    io_uring_queue_exit(&ring_);
    if (const int rc = io_uring_queue_init(entries_, &ring_, 0); rc < 0) {
      usable_ = false;
      errors.capture([&] { throw_io_error("io_uring_queue_init after a failed submission", -rc); });
    }
  }

  void queue(IoDirection direction, const IoRequest& request, size_t index) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: at most entries_ in flight
    const int fd = request.file->native_handle();
    const auto count = static_cast<unsigned>(request.buffers.size());
    if (direction == IoDirection::kRead) {
      io_uring_prep_readv(sqe, fd, request.buffers.data(), count, request.offset);
    } else {
      io_uring_prep_writev(sqe, fd, request.buffers.data(), count, request.offset);
    }
    io_uring_sqe_set_data64(sqe, index);
  }

  // Takes every completion there is: finishes short transfers and records the requests done in full in
  // `completed`; returns how many completed.
  unsigned reap(IoDirection direction, std::span<const IoRequest> requests, FirstError& errors,
                std::vector<size_t>& completed) {
    unsigned seen = 0;
    unsigned head = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      const size_t i = io_uring_cqe_get_data64(cqe);
      const int result = cqe->res;
      ++seen;
      errors.capture([&] {
        complete(direction, requests[i], result);
        completed.push_back(i);
      });
    }
    io_uring_cq_advance(&ring_, seen);
    return seen;
  }

  unsigned entries_;
  bool usable_ = true;
  io_uring ring_{};
};

}  // namespace

struct IoQueue::Rings {
  std::vector<std::unique_ptr<Ring>> rings;
};

std::optional<std::string> io_uring_unavailable_reason() {
  static const std::optional<std::string> reason = []() -> std::optional<std::string> {
    try {
      Ring probe(2);
    } catch (const StoreError& error) {
      return error.what();
    }
    return std::nullopt;
  }();
  return reason;
}

void IoQueue::run_on_rings(IoDirection direction, std::span<const IoRequest> requests,
                           const std::function<void(size_t)>& before, const std::function<void(size_t)>& after) {
  std::atomic<size_t> next{0};
  FirstError errors;
  const size_t threads = std::min(rings_->rings.size(), requests.size());
  if (threads <= 1) {
    rings_->rings.front()->drive(direction, requests, next, errors, before, after);
  } else {
    std::vector<std::jthread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { rings_->rings[t]->drive(direction, requests, next, errors, before, after); });
    }
  }
  errors.rethrow();
}

#else  // no liburing

struct IoQueue::Rings {};

std::optional<std::string> io_uring_unavailable_reason() {
  return "kvtier was built without liburing (install liburing-dev and reconfigure)";
}

#endif

namespace {

void say_once_why_not_io_uring(const std::string& reason) {
  static std::once_flag said;
  std::call_once(said, [&] {
    std::fprintf(stderr, "kvtier: NVMe store uses worker threads, not io_uring: %s\n", reason.c_str());
  });
}

}  // namespace

IoQueue::IoQueue(IoPath path, int queue_depth, int io_threads) : queue_depth_(std::max(queue_depth, 1)) {
  if (path == IoPath::kThreads) return;
  if (const auto reason = io_uring_unavailable_reason()) {
    say_once_why_not_io_uring(*reason);
    return;
  }
#if defined(KVTIER_HAVE_LIBURING)
  const int threads = std::clamp(io_threads, 1, queue_depth_);
  const auto entries = static_cast<unsigned>((queue_depth_ + threads - 1) / threads);
  try {
    rings_ = std::make_unique<Rings>();
    for (int t = 0; t < threads; ++t) rings_->rings.push_back(std::make_unique<Ring>(entries));
  } catch (const StoreError& error) {  // the kernel's limits on rings: this store goes without
    rings_.reset();
    say_once_why_not_io_uring(error.what());
  }
#else
  (void)io_threads;
#endif
}

IoQueue::~IoQueue() = default;

const char* IoQueue::path_name() const {
  return rings_ ? "io_uring" : "threads";
}

void IoQueue::run(IoDirection direction, std::span<const IoRequest> requests,
                  const std::function<void(size_t)>& before, const std::function<void(size_t)>& after) {
#if defined(KVTIER_HAVE_LIBURING)
  const bool every_file_has_a_handle = std::all_of(
      requests.begin(), requests.end(), [](const IoRequest& r) { return r.file->native_handle() >= 0; });
  if (rings_ && every_file_has_a_handle) {
    run_on_rings(direction, requests, before, after);
    return;
  }
#endif
  run_on_threads(direction, requests, before, after);
}

void IoQueue::run_on_threads(IoDirection direction, std::span<const IoRequest> requests,
                             const std::function<void(size_t)>& before,
                             const std::function<void(size_t)>& after) const {
  parallel_for(requests.size(), queue_depth_, [&](size_t i) {
    before(i);
    transfer(direction, *requests[i].file, requests[i].offset, requests[i].buffers);
    after(i);
  });
}

}  // namespace kvtier::hw
