// Disaggregated serving's KV on the move: each request's KV, from the GPUs of the instance that prefilled
// it to those of the instance that decodes it, over the cluster's fabric (fabric.h).
//
// Whole: all of the prompt's KV leaves once the prefill is done. Layer-wise: each prefill step's new KV
// leaves as the step computes it, all but its last layer when the step starts (a layer is ready before the
// step ends; one flow stands for layers produced faster than they can be sent) and the last layer when it
// ends. Either way a request's KV leaves once: a prefill run again after a preemption sends only what it
// had not sent. The decode instance waits for every flow of the request (received()).
#pragma once

#include <cstdint>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <vector>

#include "sim/engine/simgrid/fabric.h"
#include "sim/serving/step_plan.h"

namespace kvtier {

class KvHandoffs {
 public:
  // Where an instance's GPUs are: its node and the first of its `gpus` GPUs there.
  struct Place {
    int node = 0;
    int first_gpu = 0;
  };
  // `places` of every instance of the cluster, each of `gpus` GPUs; the KV of a token is
  // `kv_bytes_per_token` over `layers` layers.
  KvHandoffs(Fabric& fabric, std::vector<Place> places, int gpus, double kv_bytes_per_token, int layers,
             bool layerwise);

  // Request `id` will be prefilled on instance `prefill` and decoded on `decode`.
  void expect(uint64_t id, int prefill, int decode);
  // A step of a prefill instance starts, or has run: layer-wise, its chunks' KV leaves.
  void on_prefill_step(const StepPlan& step, bool ran);
  // The prefill of request `id`, of `input_tokens` tokens, is done: what it has not sent leaves.
  void prefilled(uint64_t id, int64_t input_tokens);
  // The flows that bring request `id`'s KV to its decode instance; the request is forgotten here.
  std::vector<simgrid::s4u::CommPtr> received(uint64_t id);
  // Request `id` will not be handed off (its prefill rejected it).
  void forget(uint64_t id) { handoffs_.erase(id); }

  bool layerwise() const { return layerwise_; }
  int64_t requests() const { return requests_; }  // handed off so far
  double bytes() const { return bytes_; }         // sent so far

 private:
  struct Handoff {
    int prefill = 0, decode = 0;
    int64_t sent_tokens = 0;        // tokens whose KV has left, all layers or all but the last
    int64_t last_layer_tokens = 0;  // of those, tokens whose last layer waits for the step's end
    std::vector<simgrid::s4u::CommPtr> flows;
  };
  void send(Handoff& h, double bytes);

  Fabric& fabric_;
  std::vector<Place> places_;
  int gpus_;
  double kv_bytes_per_token_;
  int layers_;
  bool layerwise_;
  std::unordered_map<uint64_t, Handoff> handoffs_;
  int64_t requests_ = 0;
  double bytes_ = 0;
};

}  // namespace kvtier
