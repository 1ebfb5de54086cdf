#include "hw/tools/store_replay.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include "sim/workload/agent_workload.h"
#include "hw/store/block_pattern.h"
#include "sim/core/config_files.h"
#include "sim/core/kv_layout.h"
#include "sim/core/model_card.h"
#include "hw/kernels/page_copy.h"
#include "hw/store/tiered_store.h"
#include "sim/workload/trace_reader.h"

namespace kvtier::hw {
namespace {

struct LoadedRequests {
  std::string name;
  int64_t block_tokens = 0;
  std::vector<Request> requests;
};

// The trace file, or the synthetic agent workload `kvtier trace generate` writes, read the same way.
LoadedRequests load_requests(const ReplayOptions& o) {
  TraceReadOptions read{.block_tokens = o.block_tokens};
  std::unique_ptr<RequestStream> stream;
  LoadedRequests loaded;
  if (o.trace.empty()) {
    AgentWorkload workload = default_agent_workload();
    workload.seed = o.seed;
    auto text = std::make_unique<std::stringstream>();
    write_agent_trace(workload, o.requests > 0 ? o.requests : 1000, *text);
    read.format = TraceFormat::kNative;
    loaded.name = "synthetic (agent-default, seed " + std::to_string(o.seed) + ")";
    stream = open_trace_stream(std::move(text), loaded.name, read);
  } else {
    read.format =
        o.trace_format == "auto" ? detect_trace_format(o.trace) : parse_trace_format(o.trace_format);
    loaded.name = o.trace;
    stream = open_trace(o.trace, read);
  }
  loaded.block_tokens = stream->block_tokens();
  Request request;
  while ((o.requests == 0 || static_cast<int64_t>(loaded.requests.size()) < o.requests) &&
         stream->next(request)) {
    loaded.requests.push_back(request);
  }
  return loaded;
}

// The NVMe store of the tiers' nvme tier, or none; its blocks are that tier's layout (packed int4 pages
// where the tiers below HBM are int4).
std::unique_ptr<NvmeStore> open_nvme_tier(const ReplayOptions& o, const std::vector<TierSpec>& tiers) {
  auto nvme = std::find_if(tiers.begin(), tiers.end(), [](const TierSpec& t) { return t.medium == Medium::kNvme; });
  if (nvme == tiers.end()) return nullptr;
  const std::string path =
      (std::filesystem::path(o.directory) / ("kvtier-replay-" + std::to_string(::getpid()) + ".store"))
          .string();
  return NvmeStore::create(
      path, {.block_bytes = static_cast<uint64_t>(nvme->bytes_per_block()),
             .capacity_blocks = static_cast<uint64_t>(nvme->capacity_blocks() + o.spare_blocks)});
}

// --verify: placed blocks get their pattern (as prefill would write their KV), then every block of the
// request must read back from its HBM page. Under int4 lower tiers the pattern is one int4 holds exactly
// (block_pattern.h), so a block promoted from them must come back bit for bit too.
void verify_request(DevicePatterns& patterns, const StoreAdmission& admission,
                    std::span<const uint64_t> chain, ReplayReport& report) {
  report.mismatched_blocks += static_cast<int64_t>(fill_placed_and_check(patterns, admission, chain).size());
  report.verified_blocks += static_cast<int64_t>(chain.size());
}

void replay_through_store(const ReplayOptions& o, const std::vector<Request>& requests, TieredStore& store,
                          DevicePages& device, ReplayReport& report) {
  std::optional<DevicePatterns> patterns;
  if (o.verify) patterns.emplace(device, 16, store.packing() ? PatternKind::kInt4Exact : PatternKind::kBytes);
  report.store_hits.assign(report.tiers.size(), {});
  std::vector<int64_t> tokens;
  for (const Request& request : requests) {
    tokens_per_block(request, report.block_tokens, tokens);
    const size_t fits =
        std::min<size_t>(request.block_ids.size(), static_cast<size_t>(report.tiers[0].capacity_blocks()));
    const std::span<const uint64_t> chain = std::span<const uint64_t>(request.block_ids).first(fits);
    StoreAdmission admission = store.admit(chain);
    if (!admission.admitted) throw std::logic_error("a request no longer than HBM was not admitted");
    for (int64_t i = 0; i < admission.hit_blocks; ++i) {
      HitCount& hit = report.store_hits[static_cast<size_t>(admission.source_tier[i])];
      hit.blocks += 1;
      hit.tokens += tokens[static_cast<size_t>(i)];
    }
    if (patterns) verify_request(*patterns, admission, chain, report);
    store.release(admission);
    report.admit_seconds.push_back(admission.transfer_seconds);
    ++report.requests;
  }
}

}  // namespace

bool ReplayReport::hits_agree() const {
  for (size_t t = 0; t < store_hits.size(); ++t) {
    if (store_hits[t].blocks != model.hits_by_tier[t].blocks ||
        store_hits[t].tokens != model.hits_by_tier[t].tokens) {
      return false;
    }
  }
  return model.requests == requests;
}

ReplayReport run_replay(const ReplayOptions& options, const DevicePagesMaker& make_device) {
  // An LMCache tier file's chunk_size is the block size unless --block-tokens says otherwise.
  ReplayOptions o = options;
  if (o.block_tokens == 0) o.block_tokens = load_tier_file(o.tiers).block_tokens.value_or(0);
  const ModelCard model = parse_model_card(load_config(o.model, "models"));
  const LoadedRequests loaded = load_requests(o);
  ReplayReport report;
  report.trace = loaded.name;
  report.block_tokens = loaded.block_tokens;
  report.tiers = load_store_tiers(o.tiers, model, loaded.block_tokens);

  const TierSpec& hbm = report.tiers[0];
  const std::unique_ptr<DevicePages> device =
      make_device(layout_page_bytes(hbm.layout, loaded.block_tokens), hbm.capacity_blocks() + o.spare_blocks);
  report.page_bytes = device->page_bytes();
  TieredStore store(report.tiers, *device, open_nvme_tier(o, report.tiers),
                    {.staging_pages = std::max<int64_t>(o.spare_blocks, 1),
                     .spare_dram_pages = o.spare_blocks,
                     .int4_row_elements = model.head_dim});
  replay_through_store(o, loaded.requests, store, *device, report);
  report.events = store.cache().traffic();
  report.transfers = store.transfers();
  report.batches = store.batches();

  CacheReplay analytic(report.tiers);
  for (const Request& request : loaded.requests) analytic.add(request);
  report.model = analytic.result();
  return report;
}

}  // namespace kvtier::hw
