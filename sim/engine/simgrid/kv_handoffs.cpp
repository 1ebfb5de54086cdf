#include "sim/engine/simgrid/kv_handoffs.h"

#include <algorithm>

namespace kvtier {

KvHandoffs::KvHandoffs(Fabric& fabric, std::vector<Place> places, int gpus, double kv_bytes_per_token,
                       int layers, bool layerwise)
    : fabric_(fabric),
      places_(std::move(places)),
      gpus_(gpus),
      kv_bytes_per_token_(kv_bytes_per_token),
      layers_(std::max(1, layers)),
      layerwise_(layerwise) {}

void KvHandoffs::expect(uint64_t id, int prefill, int decode) {
  Handoff& h = handoffs_[id];
  h.prefill = prefill;
  h.decode = decode;
}

void KvHandoffs::on_prefill_step(const StepPlan& step, bool ran) {
  if (!layerwise_) return;
  const double layer_share = 1.0 / layers_;
  for (const PrefillChunk& chunk : step.prefills) {
    Handoff& h = handoffs_.at(chunk.request_id);
    if (ran) {
      send(h, static_cast<double>(h.last_layer_tokens) * kv_bytes_per_token_ * layer_share);
      h.last_layer_tokens = 0;
      continue;
    }
    // The chunk's KV and, on its first step, that of the prefix it found cached.
    const int64_t fresh = std::max<int64_t>(0, chunk.start_token + chunk.tokens - h.sent_tokens);
    send(h, static_cast<double>(fresh) * kv_bytes_per_token_ * (1 - layer_share));
    h.sent_tokens += fresh;
    h.last_layer_tokens += fresh;
  }
}

void KvHandoffs::prefilled(uint64_t id, int64_t input_tokens) {
  Handoff& h = handoffs_.at(id);
  const int64_t rest = std::max<int64_t>(0, input_tokens - h.sent_tokens);
  send(h, static_cast<double>(rest) * kv_bytes_per_token_);
  h.sent_tokens += rest;
  ++requests_;
}

std::vector<simgrid::s4u::CommPtr> KvHandoffs::received(uint64_t id) {
  auto it = handoffs_.find(id);
  std::vector<simgrid::s4u::CommPtr> flows = std::move(it->second.flows);
  handoffs_.erase(it);
  return flows;
}

void KvHandoffs::send(Handoff& h, double bytes) {
  if (bytes <= 0) return;
  const Place& from = places_[h.prefill];
  const Place& to = places_[h.decode];
  for (simgrid::s4u::CommPtr& c :
       fabric_.handoff(from.node, from.first_gpu, to.node, to.first_gpu, gpus_, bytes))
    h.flows.push_back(std::move(c));
  bytes_ += bytes;
}

}  // namespace kvtier
