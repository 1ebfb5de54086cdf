// Helpers shared by the cache tests and benchmark: small hand-sized tiers and seeded random request chains.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/workload/request.h"
#include "sim/cache/tier_spec.h"

namespace kvtier::testing {

inline constexpr int64_t kBlockTokens = 4;

// A one-group layout of `bytes_per_token`, so a block costs 4 × bytes_per_token bytes.
inline KvLayout flat_layout(int64_t bytes_per_token) {
  LayerGroup group;
  group.layer_count = 1;
  group.bytes_per_token_per_layer = bytes_per_token;
  return KvLayout{"flat" + std::to_string(bytes_per_token), {group}};
}

inline TierSpec make_tier(std::string name, int64_t capacity_blocks, PolicyKind policy = PolicyKind::kLru,
                          int64_t bytes_per_token = 8) {
  TierSpec tier = single_tier(flat_layout(bytes_per_token), kBlockTokens, 0, policy);
  tier.name = std::move(name);
  tier.capacity_bytes = capacity_blocks * tier.bytes_per_block();
  return tier;
}

inline Request make_request(std::vector<uint64_t> blocks) {
  Request request;
  request.input_tokens = static_cast<int64_t>(blocks.size()) * kBlockTokens;
  request.block_ids = std::move(blocks);
  return request;
}

// Agent-like chains: every request starts with the shared block 1 (a system prompt), then continues one of
// `sessions` conversations (ids session × 1000 + k) to a random length, the last block partial.
inline std::vector<Request> random_requests(int count, int sessions, int max_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> session(1, sessions);
  std::uniform_int_distribution<int> length(1, max_blocks);
  std::vector<Request> requests;
  for (int i = 0; i < count; ++i) {
    int s = session(rng);
    int blocks_in_request = length(rng);
    std::vector<uint64_t> blocks = {1};
    for (int k = 1; k < blocks_in_request; ++k) blocks.push_back(static_cast<uint64_t>(s) * 1000 + k);
    Request request = make_request(blocks);
    request.input_tokens -= static_cast<int64_t>(rng() % kBlockTokens);
    request.id = static_cast<uint64_t>(i);
    requests.push_back(request);
  }
  return requests;
}

}  // namespace kvtier::testing
