#include "sim/cluster/handoff_ledger.h"

namespace kvtier {

RequestRecord merge_handoff(const RequestRecord& prefill, const RequestRecord& decode) {
  RequestRecord r = prefill;
  r.output_tokens = decode.output_tokens;
  r.prefill_end_s = prefill.first_token_s;
  r.first_token_s = decode.first_token_s;
  r.completion_s = decode.completion_s;
  r.recomputed_tokens += decode.recomputed_tokens;
  r.preemptions += decode.preemptions;
  r.rejected = decode.rejected;
  return r;
}

void HandoffLedger::route(uint64_t id, int prefill, int decode) {
  Pending& p = pending_[id];
  p.prefill = prefill;
  p.decode = decode;
}

void HandoffLedger::prefill_settled(const RequestRecord& r) {
  if (!r.rejected) {
    settle(r.id, r, true);
    return;
  }
  auto it = pending_.find(r.id);
  const Pending p = it->second;
  pending_.erase(it);
  final_(r, p.decode, p.prefill);
}

void HandoffLedger::decode_settled(const RequestRecord& r) {
  settle(r.id, r, false);
}

void HandoffLedger::settle(uint64_t id, const RequestRecord& r, bool from_prefill) {
  auto it = pending_.find(id);
  Pending& p = it->second;
  if (!p.has_half) {
    p.half = r;
    p.has_half = true;
    return;
  }
  const RequestRecord merged = from_prefill ? merge_handoff(r, p.half) : merge_handoff(p.half, r);
  const int prefill = p.prefill, decode = p.decode;
  pending_.erase(it);
  if (merged.first_token_s >= 0) {
    const double handoff = merged.first_token_s - merged.prefill_end_s;
    handoff_s_.add(handoff);
    handoff_sum_ += handoff;
    ttft_sum_ += merged.ttft();
  }
  final_(merged, decode, prefill);
}

}  // namespace kvtier
