// Disaggregated serving's records. A request is served twice: by a prefill instance, as a request of one
// output token, and by a decode instance, as a request prefilled elsewhere (its KV handed off). Each
// instance settles its own record; the ledger pairs the two, in whichever order they become final, into
// the request's record as its user sees it, and keeps the handoff's figures.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "sim/core/quantiles.h"
#include "sim/serving/request_record.h"

namespace kvtier {

// The request as its user sees it: arrival, queueing, hits, load and prefill from the prefill instance;
// the first token when its KV landed on the decode instance (it travels with the KV), completion and
// output from there. prefill_end_s is the prefill instance's first token; preemptions and recomputed
// tokens add up. A request the decode instance rejected stays rejected.
RequestRecord merge_handoff(const RequestRecord& prefill, const RequestRecord& decode);

class HandoffLedger {
 public:
  // `final` is given each request's record once final, with the instances the router chose for it.
  using Final = std::function<void(const RequestRecord&, int decode_instance, int prefill_instance)>;
  explicit HandoffLedger(Final final) : final_(std::move(final)) {}

  // The router sent request `id` to prefill on `prefill` and to decode on `decode`.
  void route(uint64_t id, int prefill, int decode);
  // The prefill instance's record, final. A rejected one is the request's final record: it never reaches
  // the decode instance.
  void prefill_settled(const RequestRecord& r);
  void decode_settled(const RequestRecord& r);

  // Over the requests handed off whose KV landed: from the prefill's first token to the decode
  // instance's, and that time's share of their TTFT.
  LatencyQuantiles& handoff_s() { return handoff_s_; }
  double ttft_share() const { return ttft_sum_ > 0 ? handoff_sum_ / ttft_sum_ : 0; }

 private:
  struct Pending {
    int prefill = -1, decode = -1;
    RequestRecord half;  // whichever settled first
    bool has_half = false;
  };
  void settle(uint64_t id, const RequestRecord& r, bool from_prefill);

  Final final_;
  std::unordered_map<uint64_t, Pending> pending_;
  LatencyQuantiles handoff_s_;
  double handoff_sum_ = 0, ttft_sum_ = 0;
};

}  // namespace kvtier
