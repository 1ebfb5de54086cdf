// kvtier-quant-error: reconstruction error of the 4-bit KV encodings on synthetic keys with outlier
// channels, through the CPU references (bit-identical to the GPU kernels).
//
// Keys: N(0, 1) per channel, except `--outliers` channels scaled by 8 and shifted by 4 (the large
// fixed channels real keys show). Values: N(0, 1). Queries: N(0, 1). For each encoding it prints the
// relative MSE and mean cosine of K and V, and the attention-score error: the RMS error of q.k / sqrt(d)
// relative to the RMS score, and the mean total-variation distance between the softmax distributions.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hw/kernels/int4_group.h"
#include "sim/core/kv_layout.h"
#include "hw/kernels/quant_math.h"
#include "hw/kernels/turboquant.h"

namespace {

using kvtier::hw::bf16_to_float;
using kvtier::hw::float_to_bf16;
using Bf16 = std::vector<uint16_t>;

struct VectorError {
  double relative_mse = 0, mean_cosine = 0;
};

VectorError vector_error(const Bf16& exact, const Bf16& decoded, int d) {
  double error = 0, energy = 0, cosine = 0;
  const size_t vectors = exact.size() / d;
  for (size_t n = 0; n < vectors; ++n) {
    double dot = 0, a2 = 0, b2 = 0;
    for (int i = 0; i < d; ++i) {
      double a = bf16_to_float(exact[n * d + i]), b = bf16_to_float(decoded[n * d + i]);
      error += (a - b) * (a - b);
      energy += a * a;
      dot += a * b;
      a2 += a * a;
      b2 += b * b;
    }
    cosine += a2 > 0 && b2 > 0 ? dot / std::sqrt(a2 * b2) : (a2 == b2 ? 1.0 : 0.0);
  }
  return {error / energy, cosine / static_cast<double>(vectors)};
}

struct ScoreError {
  double relative_rms = 0, softmax_total_variation = 0;
};

ScoreError score_error(const std::vector<float>& queries, const Bf16& keys, const Bf16& decoded, int d) {
  const size_t tokens = keys.size() / d, count = queries.size() / d;
  double squared_error = 0, squared_score = 0, total_variation = 0;
  std::vector<double> exact(tokens), approx(tokens);
  for (size_t q = 0; q < count; ++q) {
    for (size_t t = 0; t < tokens; ++t) {
      double s = 0, s_hat = 0;
      for (int i = 0; i < d; ++i) {
        s += queries[q * d + i] * bf16_to_float(keys[t * d + i]);
        s_hat += queries[q * d + i] * bf16_to_float(decoded[t * d + i]);
      }
      exact[t] = s / std::sqrt(d);
      approx[t] = s_hat / std::sqrt(d);
      squared_error += (exact[t] - approx[t]) * (exact[t] - approx[t]);
      squared_score += exact[t] * exact[t];
    }
    auto softmax = [](std::vector<double>& s) {
      double top = *std::max_element(s.begin(), s.end()), sum = 0;
      for (double& x : s) sum += (x = std::exp(x - top));
      for (double& x : s) x /= sum;
    };
    softmax(exact);
    softmax(approx);
    for (size_t t = 0; t < tokens; ++t) total_variation += 0.5 * std::fabs(exact[t] - approx[t]);
  }
  return {std::sqrt(squared_error / squared_score), total_variation / static_cast<double>(count)};
}

struct Codec {
  std::string name;
  std::function<void(const Bf16& k, const Bf16& v, Bf16& k_out, Bf16& v_out)> round_trip;
  double bits_per_element;
};

std::vector<Codec> codecs(int d) {
  std::vector<Codec> out;
  kvtier::hw::TurboQuantParams tq = kvtier::hw::turboquant_params(d);
  out.push_back({"turboquant4",
                 [tq](const Bf16& k, const Bf16& v, Bf16& k_out, Bf16& v_out) {
                   std::vector<uint8_t> slots(k.size() / tq.head_dim * tq.slot_bytes);
                   kvtier::hw::turboquant_quantize_reference(tq, k, v, slots);
                   kvtier::hw::turboquant_dequantize_reference(tq, slots, k_out, v_out);
                 },
                 8.0 * tq.slot_bytes / (2 * d)});
  for (int group : {32, 128}) {
    kvtier::Encoding encoding;
    encoding.kind = kvtier::EncodingKind::kInt4Group;
    encoding.group_size = group;
    kvtier::hw::Int4GroupParams p = kvtier::hw::int4_group_params(d, encoding);
    out.push_back({encoding.name(),
                   [p](const Bf16& k, const Bf16& v, Bf16& k_out, Bf16& v_out) {
                     std::vector<uint8_t> records(k.size() / p.row_elements * p.record_bytes());
                     kvtier::hw::int4_group_quantize_reference(p, k, records);
                     kvtier::hw::int4_group_dequantize_reference(p, records, k_out);
                     kvtier::hw::int4_group_quantize_reference(p, v, records);
                     kvtier::hw::int4_group_dequantize_reference(p, records, v_out);
                   },
                   8.0 * p.record_bytes() / d});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reconstruction error of the 4-bit KV encodings on synthetic keys with outlier channels"};
  int tokens = 4096, head_dim = 128, queries = 64, outliers = 4;
  uint32_t seed = 1;
  std::string format = "table";
  app.add_option("--tokens", tokens, "keys and values (one KV head)")->check(CLI::Range(1, 1 << 20));
  app.add_option("--head-dim", head_dim, "elements per vector (power of two, 32-512)");
  app.add_option("--queries", queries, "random queries for the attention-score error")
      ->check(CLI::Range(1, 4096));
  app.add_option("--outliers", outliers, "outlier key channels (x8, +4)")->check(CLI::Range(0, 512));
  app.add_option("--seed", seed, "random seed");
  app.add_option("--format", format, "table or json")->check(CLI::IsMember({"table", "json"}));
  CLI11_PARSE(app, argc, argv);

  try {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<int> channels(head_dim);
    std::iota(channels.begin(), channels.end(), 0);
    std::shuffle(channels.begin(), channels.end(), rng);
    std::vector<bool> is_outlier(head_dim, false);
    for (int i = 0; i < std::min(outliers, head_dim); ++i) is_outlier[channels[i]] = true;
    Bf16 k(static_cast<size_t>(tokens) * head_dim), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      float x = normal(rng);
      k[i] = float_to_bf16(is_outlier[i % head_dim] ? 8.0f * x + 4.0f : x);
      v[i] = float_to_bf16(normal(rng));
    }
    std::vector<float> q(static_cast<size_t>(queries) * head_dim);
    for (float& x : q) x = normal(rng);

    nlohmann::json rows = nlohmann::json::array();
    for (const Codec& codec : codecs(head_dim)) {
      Bf16 k_out(k.size()), v_out(v.size());
      codec.round_trip(k, v, k_out, v_out);
      VectorError ke = vector_error(k, k_out, head_dim), ve = vector_error(v, v_out, head_dim);
      ScoreError se = score_error(q, k, k_out, head_dim);
      rows.push_back({{"encoding", codec.name},
                      {"bits_per_element", codec.bits_per_element},
                      {"k_relative_mse", ke.relative_mse},
                      {"k_cosine", ke.mean_cosine},
                      {"v_relative_mse", ve.relative_mse},
                      {"v_cosine", ve.mean_cosine},
                      {"score_relative_rms_error", se.relative_rms},
                      {"softmax_total_variation", se.softmax_total_variation}});
    }
    if (format == "json") {
      nlohmann::json out = {{"tokens", tokens},   {"head_dim", head_dim},
                            {"queries", queries}, {"outlier_channels", outliers},
                            {"seed", seed},       {"encodings", rows}};
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::printf("%d tokens, head_dim %d, %d outlier key channels (x8, +4), %d queries, seed %u\n", tokens,
                head_dim, outliers, queries, seed);
    std::printf("%-12s %6s %10s %9s %10s %9s %11s %10s\n", "encoding", "bits", "K rel MSE", "K cosine",
                "V rel MSE", "V cosine", "score rRMS", "softmax TV");
    for (const nlohmann::json& r : rows) {
      std::printf("%-12s %6.2f %10.5f %9.5f %10.5f %9.5f %11.5f %10.5f\n",
                  r["encoding"].get<std::string>().c_str(), r["bits_per_element"].get<double>(),
                  r["k_relative_mse"].get<double>(), r["k_cosine"].get<double>(),
                  r["v_relative_mse"].get<double>(), r["v_cosine"].get<double>(),
                  r["score_relative_rms_error"].get<double>(), r["softmax_total_variation"].get<double>());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvtier-quant-error: %s\n", e.what());
    return 2;
  }
  return 0;
}
