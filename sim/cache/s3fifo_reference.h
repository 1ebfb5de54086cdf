// S3-FIFO written out from its paper, for tests only: Yang et al., "FIFO queues are all you need for cache
// eviction", SOSP'23, Algorithm 1, one request at a time.
//
// Deliberately slow and literal (std::deque, linear search, the pseudocode's loops as written) so that it
// shares no code with policies/s3fifo.cpp. Queues run from head (front, newest) to tail (back, oldest).
//   READ(x):   a hit caps x.freq + 1 at 3; a miss INSERTs x with freq 0.
//   INSERT(x): while the cache is full, EVICT(); then x goes to M's head if it is in G, else to S's head.
//   EVICT():   EVICTS() if |S| >= 0.1 · capacity, else EVICTM().
//   EVICTS():  until one object is evicted: S's tail t moves to M's head if t.freq exceeds the paper's 1
//              (here: reaches `move_to_main_threshold`, 2 by default), with its frequency cleared, and if
//              that leaves M full (more than its 90 % share), EVICTM() runs; otherwise t leaves for G.
//   EVICTM():  until one object is evicted: M's tail is reinserted at M's head with freq - 1 if its freq
//              is non-zero, else evicted.
// G is a FIFO of as many entries as M's share (0.9 · capacity, rounded down).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace kvtier::testing {

class S3FifoReference {
 public:
  S3FifoReference(int64_t capacity, int move_to_main_threshold)
      : capacity_(capacity), threshold_(move_to_main_threshold) {}

  // Returns true on a hit.
  bool access(uint64_t x) {
    if (contains(small_, x) || contains(main_, x)) {
      freq_[x] = std::min(freq_[x] + 1, 3);
      return true;
    }
    while (size(small_) + size(main_) >= capacity_) evict();
    if (remove(ghost_, x)) {
      main_.push_front(x);
    } else {
      small_.push_front(x);
    }
    freq_[x] = 0;
    return false;
  }

 private:
  void evict() {
    if (10 * size(small_) >= capacity_) {
      evict_small();
    } else {
      evict_main();
    }
  }
  void evict_small() {
    bool evicted = false;
    while (!evicted && !small_.empty()) {
      uint64_t t = small_.back();
      small_.pop_back();
      if (freq_[t] >= threshold_) {
        main_.push_front(t);
        freq_[t] = 0;
        if (10 * size(main_) > 9 * capacity_) evict_main();
      } else {
        ghost_.push_front(t);
        if (10 * size(ghost_) > 9 * capacity_) ghost_.pop_back();
        evicted = true;
      }
    }
  }
  void evict_main() {
    bool evicted = false;
    while (!evicted && !main_.empty()) {
      uint64_t t = main_.back();
      main_.pop_back();
      if (freq_[t] > 0) {
        main_.push_front(t);
        freq_[t] -= 1;
      } else {
        evicted = true;
      }
    }
  }
  static int64_t size(const std::deque<uint64_t>& queue) { return static_cast<int64_t>(queue.size()); }
  static bool contains(const std::deque<uint64_t>& queue, uint64_t x) {
    return std::find(queue.begin(), queue.end(), x) != queue.end();
  }
  static bool remove(std::deque<uint64_t>& queue, uint64_t x) {
    auto it = std::find(queue.begin(), queue.end(), x);
    if (it == queue.end()) return false;
    queue.erase(it);
    return true;
  }

  int64_t capacity_;
  int threshold_;
  std::deque<uint64_t> small_, main_, ghost_;
  std::unordered_map<uint64_t, int> freq_;
};

}  // namespace kvtier::testing
