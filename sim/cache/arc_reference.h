// ARC written out from its paper, for tests only: Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
// Replacement Cache", FAST'03, Fig. 4, one request at a time.
//
// Deliberately slow and literal (std::list, linear search, the paper's case analysis in its own order) so
// that it shares no code or shortcuts with policies/arc.cpp. Lists run from MRU (front) to LRU (back).
// p is a real number: a ghost hit moves it by δ = 1 or by the ratio of the ghost lists' sizes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>

namespace kvtier::testing {

class ArcReference {
 public:
  explicit ArcReference(int64_t capacity) : c_(capacity) {}

  // Returns true on a hit.
  bool access(uint64_t x) {
    // Case I: x in T1 or T2, a hit: move x to the MRU position of T2.
    if (remove(t1_, x) || remove(t2_, x)) {
      t2_.push_front(x);
      return true;
    }
    // Case II: x in B1. Adapt, then replace with the adapted p.
    if (contains(b1_, x)) {
      double delta = b1_.size() >= b2_.size() ? 1.0 : size(b2_) / size(b1_);
      p_ = std::min(p_ + delta, static_cast<double>(c_));
      replace(x);
      remove(b1_, x);
      t2_.push_front(x);
      return false;
    }
    // Case III: x in B2.
    if (contains(b2_, x)) {
      double delta = b2_.size() >= b1_.size() ? 1.0 : size(b1_) / size(b2_);
      p_ = std::max(p_ - delta, 0.0);
      replace(x);
      remove(b2_, x);
      t2_.push_front(x);
      return false;
    }
    // Case IV: x in no list.
    int64_t l1 = static_cast<int64_t>(t1_.size() + b1_.size());
    int64_t total = l1 + static_cast<int64_t>(t2_.size() + b2_.size());
    if (l1 == c_) {  // Case A
      if (static_cast<int64_t>(t1_.size()) < c_) {
        b1_.pop_back();
        replace(x);
      } else {
        t1_.pop_back();
      }
    } else if (total >= c_) {  // Case B (l1 < c)
      if (total == 2 * c_) b2_.pop_back();
      replace(x);
    }
    t1_.push_front(x);
    return false;
  }

  double p() const { return p_; }

 private:
  // REPLACE(x, p): evict T1's LRU page into B1 if T1 is non-empty and exceeds p (or equals p when x is in
  // B2), else T2's LRU page into B2.
  void replace(uint64_t x) {
    double t1 = size(t1_);
    if (!t1_.empty() && (t1 > p_ || (contains(b2_, x) && t1 == p_))) {
      b1_.push_front(t1_.back());
      t1_.pop_back();
    } else {
      b2_.push_front(t2_.back());
      t2_.pop_back();
    }
  }
  static double size(const std::list<uint64_t>& list) { return static_cast<double>(list.size()); }
  static bool contains(const std::list<uint64_t>& list, uint64_t x) {
    return std::find(list.begin(), list.end(), x) != list.end();
  }
  static bool remove(std::list<uint64_t>& list, uint64_t x) {
    auto it = std::find(list.begin(), list.end(), x);
    if (it == list.end()) return false;
    list.erase(it);
    return true;
  }

  int64_t c_;
  double p_ = 0.0;
  std::list<uint64_t> t1_, t2_, b1_, b2_;
};

}  // namespace kvtier::testing
