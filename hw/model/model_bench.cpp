// kvtier-model-bench: how fast the forward pass of a model's shapes runs on this GPU.
//
//   prefill    tok/s of whole prompts (batch 1) at each length, in one step or in chunks of --chunk tokens
//   attention  the paged attention kernel alone: TFLOP/s of one layer's causal prefill at each length (the
//              kernel paged_attention picks, and with --attention-kernels auto,mma the mma.sync kernel too),
//              and the HBM rate of decode (one token over the whole context)
//   gemm       TFLOP/s of the four linear layers at 4K and 32K tokens, cuBLAS and cuBLASLt
//   gemm by tokens (--gemm-tokens FROM:TO) one layer's four linear layers at every token count in the range,
//              on the forward pass's back end, visited in a shuffled order so that the GPU's clock drifting
//              over the sweep does not read as a trend in the token count
//
// Times are CUDA-event medians after a warm-up. Prints a table and writes everything as JSON (--json).
// The model is Llama-3.1-8B's shape with random bf16 weights (transformer_shape.h).
//
// Where a sequence's pages lie (--page-order): contiguous from page 0, or scattered at random over a pool
// of --pool-gib, as a serving run's pages end up once its cache has filled HBM and evicted at random
// places. Each order is measured, so that the two tables show what placement alone costs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hw/gpu/check.h"
#include "hw/gpu/device_buffer.h"
#include "hw/model/attention.h"
#include "hw/model/attention_plan.h"
#include "hw/model/elementwise.h"
#include "hw/model/forward.h"
#include "hw/model/prompt_tokens.h"

namespace kvtier::hw {
namespace {

using nlohmann::json;

// Median milliseconds of `repeats` runs of `work` on the default stream (after one warm-up run when asked).
template <typename Work>
double median_ms(int repeats, bool warm_up, Work&& work) {
  if (warm_up) work();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    gpu::Event start, stop;
    start.record(nullptr);
    work();
    stop.record(nullptr);
    stop.synchronize();
    times.push_back(stop.elapsed_ms_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

enum class PageOrder { kContiguous, kScattered };

const char* page_order_name(PageOrder order) {
  return order == PageOrder::kContiguous ? "contiguous" : "scattered";
}

// `count` pages of a pool of `pool_pages`: from page 0 up, or distinct pages drawn at random (seeded, so
// that every run reads the same places).
std::vector<int> sequence_pages(int count, int64_t pool_pages, PageOrder order) {
  std::vector<int> pages(static_cast<size_t>(pool_pages));
  std::iota(pages.begin(), pages.end(), 0);
  if (order == PageOrder::kScattered) std::shuffle(pages.begin(), pages.end(), std::mt19937_64(7));
  pages.resize(static_cast<size_t>(count));
  return pages;
}

json bench_prefill(TransformerForward& forward, const std::vector<int>& lengths, int chunk, int repeats,
                   PageOrder order) {
  json rows = json::array();
  const TransformerShape& shape = forward.config().shape;
  const int block = forward.config().block_tokens;
  for (int length : lengths) {
    const int step_tokens = chunk > 0 ? std::min(chunk, length) : length;
    const std::vector<int> pages =
        sequence_pages((length + block - 1) / block, forward.config().kv_pages, order);
    std::vector<int> tokens;
    append_prompt_tokens(tokens, 0, 0, step_tokens, shape.vocab);
    auto prefill = [&] {
      for (int done = 0; done < length; done += step_tokens) {
        const int fresh = std::min(step_tokens, length - done);
        forward.step(std::vector<HostSequence>{{fresh, done, pages}}, std::span(tokens).first(static_cast<size_t>(fresh)));
      }
    };
    const double ms = median_ms(repeats, length <= 16384, prefill);
    const double flops = linear_flops(shape, length, 1) + shape.layers * attention_flops(shape, length, 0);
    const bool wgmma = attention_uses_wgmma(shape.head_dim, shape.heads, shape.kv_heads, block, 1, forward.config().attention_rows);
    rows.push_back({{"attention_rows", forward.config().attention_rows},
                    {"attention_kernel", wgmma ? "wgmma" : "mma.sync"},
                    {"tokens", length},
                    {"chunk", step_tokens},
                    {"ms", ms},
                    {"tokens_per_s", length / (ms / 1e3)},
                    {"model_tflops", flops / (ms / 1e3) / 1e12},
                    {"page_order", page_order_name(order)}});
    std::printf("prefill (%3d rows, %-10s) %7d tokens (chunk %6d): %9.1f ms  %8.0f tok/s  %5.0f TFLOP/s\n",
                forward.config().attention_rows, page_order_name(order), length, step_tokens, ms,
                length / (ms / 1e3), flops / (ms / 1e3) / 1e12);
    std::fflush(stdout);
  }
  return rows;
}

// Attention of one layer over the forward pass's pool: prefill (new = length, no context) and decode.
json bench_attention(TransformerForward& forward, const std::vector<int>& lengths,
                     const std::vector<std::string>& kernels, int repeats, int multiprocessors,
                     PageOrder order) {
  const int rows = forward.config().attention_rows;
  json results = json::array();
  const TransformerShape& shape = forward.config().shape;
  const int block = forward.config().block_tokens;
  const int longest = *std::max_element(lengths.begin(), lengths.end());
  gpu::DeviceBuffer<uint16_t> q(static_cast<size_t>(longest) * shape.q_width()), out(q.size());
  fill_random(q.data(), static_cast<int64_t>(q.size()), 99, 2.0f, 0.0f, nullptr);
  gpu::DeviceBuffer<float> workspace(static_cast<size_t>(attention_workspace_floats(1, shape.heads, shape.head_dim,
                                                                                     kAttentionMaxSplits)));
  const PagedKvLayer kv = paged_kv_layer(forward.kv_pool(), forward.kv_page_stride(), forward.kv_geometry(), 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  for (int length : lengths) {
    const int pages = (length + block - 1) / block;
    std::vector<int> host = {0, length, 0};
    const std::vector<int> table = sequence_pages(pages, forward.config().kv_pages, order);
    host.insert(host.end(), table.begin(), table.end());
    gpu::DeviceBuffer<int> ints(host.size());
    ints.upload(host.data(), host.size());
    StepBatch batch{1, ints.data(), ints.data() + 2, ints.data() + 3, pages, length, length, length};
    json prefill = json::array();
    for (const std::string& choice : kernels) {
      const AttentionKernel kernel = choice == "mma" ? AttentionKernel::kMmaSync : AttentionKernel::kAuto;
      const bool wgmma = kernel == AttentionKernel::kAuto &&
                         attention_uses_wgmma(shape.head_dim, shape.heads, shape.kv_heads, block, 1, rows);
      const double ms = median_ms(repeats, true, [&] {
        paged_attention(batch, kv, q.data(), out.data(), shape.heads, scale, 1, nullptr, nullptr, rows, kernel);
      });
      const double tflops = attention_flops(shape, length, 0) / (ms / 1e3) / 1e12;
      prefill.push_back({{"kernel", wgmma ? "wgmma" : "mma.sync"}, {"ms", ms}, {"tflops", tflops}});
      std::printf("attention (%3d rows, %-10s) %7d tokens: prefill %-8s %8.2f ms %6.1f TFLOP/s\n", rows,
                  page_order_name(order), length, wgmma ? "wgmma" : "mma.sync", ms, tflops);
      std::fflush(stdout);
    }
    // Decode: one new token after length - 1 cached ones.
    host[1] = 1;
    host[2] = length - 1;
    ints.upload(host.data(), host.size());
    StepBatch decode{1, ints.data(), ints.data() + 2, ints.data() + 3, pages, 1, 1, length};
    const int splits = attention_splits(1, 1, length, shape.kv_heads, shape.gqa_ratio(), multiprocessors, rows);
    const double decode_ms = median_ms(repeats * 5, true, [&] {
      paged_attention(decode, kv, q.data(), out.data(), shape.heads, scale, splits, workspace.data(), nullptr, rows);
    });
    const double kv_bytes = 2.0 * length * shape.kv_width() * 2;
    results.push_back({{"attention_rows", rows},
                       {"page_order", page_order_name(order)},
                       {"tokens", length},
                       {"prefill_ms", prefill[0]["ms"]},
                       {"prefill_tflops", prefill[0]["tflops"]},
                       {"prefill_kernel", prefill[0]["kernel"]},
                       {"prefill_by_kernel", prefill},
                       {"decode_ms", decode_ms},
                       {"decode_splits", splits},
                       {"decode_kv_gb_per_s", kv_bytes / (decode_ms / 1e3) / 1e9}});
    std::printf("attention (%3d rows, %-10s) %7d tokens: decode %7.3f ms %6.0f GB/s (%d splits)\n", rows,
                page_order_name(order), length, decode_ms, kv_bytes / (decode_ms / 1e3) / 1e9, splits);
    std::fflush(stdout);
  }
  return results;
}

struct Linear {
  const char* name;
  int in, out;
};

// One layer's four linear layers, in the forward pass's order.
std::array<Linear, 4> layer_linears(const TransformerShape& shape) {
  return {{{"qkv", shape.hidden, shape.qkv_width()},
           {"out", shape.q_width(), shape.hidden},
           {"gate_up", shape.hidden, 2 * shape.intermediate},
           {"down", shape.intermediate, shape.hidden}}};
}

json bench_gemm(const TransformerShape& shape, int repeats) {
  json rows = json::array();
  for (int tokens : {4096, 32768}) {
    for (const Linear& l : layer_linears(shape)) {
      gpu::DeviceBuffer<uint16_t> x(static_cast<size_t>(tokens) * l.in), w(static_cast<size_t>(l.in) * l.out),
          y(static_cast<size_t>(tokens) * l.out);
      fill_random(x.data(), static_cast<int64_t>(x.size()), 1, 1.0f, 0.0f, nullptr);
      fill_random(w.data(), static_cast<int64_t>(w.size()), 2, 0.02f, 0.0f, nullptr);
      for (GemmBackend backend : {GemmBackend::kBlas, GemmBackend::kBlasLt}) {
        Gemm gemm(nullptr, backend);
        const double ms = median_ms(repeats * 3, true, [&] { gemm.linear(x.data(), w.data(), y.data(), tokens, l.in, l.out, false); });
        const double tflops = 2.0 * tokens * l.in * l.out / (ms / 1e3) / 1e12;
        rows.push_back({{"tokens", tokens}, {"layer", l.name}, {"in", l.in}, {"out", l.out},
                        {"backend", gemm_backend_name(backend)}, {"ms", ms}, {"tflops", tflops}});
        std::printf("gemm %-7s %6d x %5d -> %5d %-6s %8.3f ms %6.1f TFLOP/s\n", l.name, tokens, l.in, l.out,
                    gemm_backend_name(backend), ms, tflops);
      }
    }
  }
  return rows;
}

// One layer's four linear layers at every token count of [from, to], each the median of `repeats` after a
// warm-up (which also makes the back end's plan for that shape).
json bench_gemm_by_tokens(const TransformerShape& shape, GemmBackend backend, int from, int to, int repeats) {
  const std::array<Linear, 4> linears = layer_linears(shape);
  int widest = 0, deepest = 0;
  std::vector<gpu::DeviceBuffer<uint16_t>> w;
  for (const Linear& l : linears) {
    widest = std::max(widest, l.out);
    deepest = std::max(deepest, l.in);
    w.emplace_back(static_cast<size_t>(l.in) * l.out);
    fill_random(w.back().data(), static_cast<int64_t>(w.back().size()), 1 + w.size(), 0.02f, 0.0f, nullptr);
  }
  gpu::DeviceBuffer<uint16_t> x(static_cast<size_t>(to) * deepest), y(static_cast<size_t>(to) * widest);
  fill_random(x.data(), static_cast<int64_t>(x.size()), 1, 1.0f, 0.0f, nullptr);
  Gemm gemm(nullptr, backend);
  std::vector<int> order(static_cast<size_t>(to - from + 1));
  std::iota(order.begin(), order.end(), from);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::map<int, std::vector<double>> ms;
  for (int tokens : order) {
    for (size_t i = 0; i < linears.size(); ++i) {
      const Linear& l = linears[i];
      ms[tokens].push_back(median_ms(
          repeats, true, [&] { gemm.linear(x.data(), w[i].data(), y.data(), tokens, l.in, l.out, false); }));
    }
  }
  json rows = json::array();
  for (const auto& [tokens, layers] : ms)
    rows.push_back({{"tokens", tokens}, {"qkv_out_gate_up_down_ms", layers}});
  std::printf("gemm by tokens: %d token counts from %d to %d, %s\n", to - from + 1, from, to,
              gemm_backend_name(backend));
  return rows;
}

int run(int argc, char** argv) {
  CLI::App app{"kvtier-model-bench: prefill tok/s, attention and GEMM rates of a model's shapes on one GPU"};
  std::vector<int> lengths = {1024, 4096, 16384, 32768, 65536, 131072};
  int chunk = 0, repeats = 3, block_tokens = 16;
  double pool_gib = 0;
  std::vector<PageOrder> page_orders = {PageOrder::kContiguous};
  std::string json_path, gemm_name = "blaslt";
  bool skip_prefill = false, skip_gemm = false;
  std::pair<int, int> gemm_tokens{0, 0};
  std::vector<int> attention_rows = {kAttentionRows};
  std::vector<std::string> attention_kernels = {"auto"};
  app.add_option("--lengths", lengths, "prompt lengths in tokens")->delimiter(',');
  app.add_option("--chunk", chunk, "prefill chunk in tokens (0: the whole prompt in one step)");
  app.add_option("--repeats", repeats, "timed runs per measurement (median)");
  app.add_option("--block-tokens", block_tokens, "tokens per KV page");
  app.add_option("--gemm", gemm_name, "GEMM back end of the forward pass")->check(CLI::IsMember({"blas", "blaslt"}));
  app.add_option("--attention-rows", attention_rows, "query rows of an attention block (64, 128); each is measured")
      ->delimiter(',')
      ->check(CLI::IsMember({64, 128}));
  app.add_option("--attention-kernels", attention_kernels,
                 "attention kernels measured alone: auto (what paged_attention picks), mma (mma.sync); the first "
                 "is the one reported as prefill_tflops")
      ->delimiter(',')
      ->check(CLI::IsMember({"auto", "mma"}));
  app.add_option("--pool-gib", pool_gib,
                 "KV pool in GiB (0: the longest prompt's pages); scattered pages spread over all of it")
      ->check(CLI::NonNegativeNumber);
  app.add_option(
         "--page-order", page_orders,
         "where each sequence's pages lie: contiguous (from page 0), scattered (at random over the pool); "
         "each is measured")
      ->delimiter(',')
      ->transform(CLI::CheckedTransformer(std::map<std::string, PageOrder>{
          {"contiguous", PageOrder::kContiguous}, {"scattered", PageOrder::kScattered}}));
  app.add_option("--json", json_path, "write the results here");
  app.add_flag("--skip-prefill", skip_prefill, "only the kernel measurements");
  app.add_flag("--skip-gemm", skip_gemm, "leave out the GEMM table");
  app.add_option(
         "--gemm-tokens", gemm_tokens,
         "FROM TO: also time one layer's linear layers at every token count in [FROM, TO] (JSON only)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const TransformerShape shape = llama_3_1_8b_shape();
  const int longest = *std::max_element(lengths.begin(), lengths.end());
  ForwardConfig config;
  config.shape = shape;
  config.block_tokens = block_tokens;
  config.max_pages_per_sequence = (longest + block_tokens - 1) / block_tokens;
  const KvPageGeometry geometry = forward_kv_geometry(shape, block_tokens);
  config.kv_pages = std::max<int64_t>(config.max_pages_per_sequence,
                                      static_cast<int64_t>(pool_gib * (1ull << 30) / geometry.page_bytes()));
  config.max_step_tokens = chunk > 0 ? std::min(chunk, longest) : longest;
  config.gemm = gemm_name == "blas" ? GemmBackend::kBlas : GemmBackend::kBlasLt;
  int multiprocessors = 0;
  KVTIER_GPU_CHECK(gpuDeviceGetAttribute(&multiprocessors, gpuDevAttrMultiProcessorCount, 0));
  json result = {{"device", gpu::current_device_description()},
                 {"model", "Llama-3.1-8B shape, random bf16 weights"},
                 {"block_tokens", block_tokens},
                 {"gemm_backend", gemm_name},
                 {"kv_pool_pages", config.kv_pages},
                 {"kv_page_bytes", geometry.page_bytes()}};
  result["attention"] = json::array();
  result["prefill"] = json::array();
  for (int rows : attention_rows) {
    config.attention_rows = rows;
    TransformerForward forward(config, nullptr);
    for (PageOrder order : page_orders) {
      for (json& row : bench_attention(forward, lengths, attention_kernels, repeats, multiprocessors, order))
        result["attention"].push_back(row);
      if (skip_prefill) continue;
      for (json& row : bench_prefill(forward, lengths, chunk, std::max(1, repeats - 1), order))
        result["prefill"].push_back(row);
    }
  }
  if (!skip_gemm) result["gemm"] = bench_gemm(shape, repeats);
  if (gemm_tokens.first > 0)
    result["gemm_by_tokens"] = bench_gemm_by_tokens(shape, config.gemm, gemm_tokens.first,
                                                    std::max(gemm_tokens.first, gemm_tokens.second), repeats);
  if (!json_path.empty()) std::ofstream(json_path) << result.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace kvtier::hw

int main(int argc, char** argv) {
  try {
    return kvtier::hw::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kvtier-model-bench: " << e.what() << "\n";
    return 1;
  }
}
