#include "sim/cache/eviction_policy.h"

#include <array>
#include <utility>

namespace kvtier {

std::unique_ptr<EvictionPolicy> make_lru_policy();
std::unique_ptr<EvictionPolicy> make_lfu_policy();
std::unique_ptr<EvictionPolicy> make_arc_policy();
std::unique_ptr<EvictionPolicy> make_s3fifo_policy(int move_to_main_threshold);

namespace {

constexpr std::array<std::pair<PolicyKind, const char*>, 4> kPolicyNames = {{
    {PolicyKind::kLru, "lru"},
    {PolicyKind::kLfu, "lfu"},
    {PolicyKind::kArc, "arc"},
    {PolicyKind::kS3Fifo, "s3fifo"},
}};

}  // namespace

std::string policy_name(PolicyKind kind) {
  for (const auto& [k, name] : kPolicyNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& entry : kPolicyNames) names.emplace_back(entry.second);
  return names;
}

bool parse_policy_name(const std::string& name, PolicyKind& out) {
  for (const auto& [kind, known] : kPolicyNames) {
    if (name == known) {
      out = kind;
      return true;
    }
  }
  return false;
}

std::unique_ptr<EvictionPolicy> make_policy(PolicyKind kind, const PolicyOptions& options) {
  switch (kind) {
    case PolicyKind::kLru:
      return make_lru_policy();
    case PolicyKind::kLfu:
      return make_lfu_policy();
    case PolicyKind::kArc:
      return make_arc_policy();
    case PolicyKind::kS3Fifo:
      return make_s3fifo_policy(options.move_to_main_threshold);
  }
  return make_lru_policy();
}

}  // namespace kvtier
