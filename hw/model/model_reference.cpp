#include "hw/model/model_reference.h"

#include <cmath>
#include <stdexcept>

#include "hw/kernels/quant_math.h"

namespace kvtier::hw {
namespace {

double value(uint16_t bf16) { return bf16_to_float(bf16); }

int64_t page_element(std::span<const int> pages, int64_t page_stride, const KvPageGeometry& g, int layer,
                     int k_or_v, int head, int position, int dim) {
  const int page = pages[static_cast<size_t>(position / g.block_tokens)];
  return page * page_stride + g.offset(layer, k_or_v, head, position % g.block_tokens, dim);
}

}  // namespace

std::vector<double> rmsnorm_reference(std::span<const uint16_t> x, std::span<const uint16_t> weight, int width,
                                      float eps) {
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size() / static_cast<size_t>(width); ++row) {
    double squares = 0;
    for (int i = 0; i < width; ++i) squares += value(x[row * width + i]) * value(x[row * width + i]);
    const double scale = 1.0 / std::sqrt(squares / width + eps);
    for (int i = 0; i < width; ++i) out[row * width + i] = value(x[row * width + i]) * scale * value(weight[i]);
  }
  return out;
}

std::vector<double> silu_mul_reference(std::span<const uint16_t> gate_up, int width) {
  const size_t rows = gate_up.size() / (2 * static_cast<size_t>(width));
  std::vector<double> out(rows * width);
  for (size_t row = 0; row < rows; ++row) {
    for (int i = 0; i < width; ++i) {
      const double gate = value(gate_up[row * 2 * width + i]), up = value(gate_up[row * 2 * width + width + i]);
      out[row * width + i] = gate / (1.0 + std::exp(-gate)) * up;
    }
  }
  return out;
}

void rope_reference(std::span<double> head, int64_t position, double theta) {
  const size_t half = head.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle =
        static_cast<double>(position) * std::pow(theta, -2.0 * static_cast<double>(i) / head.size());
    const double x1 = head[i], x2 = head[i + half];
    head[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
    head[i + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
  }
}

void rope_and_cache_reference(std::span<const uint16_t> qkv, std::span<const HostSequence> sequences,
                              const TransformerShape& shape, std::span<uint16_t> q, std::span<uint16_t> pool,
                              int64_t page_stride, const KvPageGeometry& geometry, int layer) {
  const int d = shape.head_dim, width = shape.qkv_width();
  int64_t row = 0;
  for (const HostSequence& seq : sequences) {
    for (int i = 0; i < seq.new_tokens; ++i, ++row) {
      const int position = seq.context_tokens + i;
      for (int head = 0; head < shape.heads + 2 * shape.kv_heads; ++head) {
        std::vector<double> v(static_cast<size_t>(d));
        for (int e = 0; e < d; ++e) v[e] = value(qkv[row * width + head * d + e]);
        const bool is_v = head >= shape.heads + shape.kv_heads;
        if (!is_v) rope_reference(v, position, shape.rope_theta);
        for (int e = 0; e < d; ++e) {
          const uint16_t bits = float_to_bf16(static_cast<float>(v[e]));
          if (head < shape.heads) {
            q[(row * shape.heads + head) * d + e] = bits;
          } else {
            const int kv_head = (head - shape.heads) % shape.kv_heads;
            pool[page_element(seq.pages, page_stride, geometry, layer, is_v ? 1 : 0, kv_head, position, e)] = bits;
          }
        }
      }
    }
  }
}

std::vector<double> attention_reference(std::span<const uint16_t> q, std::span<const HostSequence> sequences,
                                        int heads, std::span<const uint16_t> pool, int64_t page_stride,
                                        const KvPageGeometry& geometry, int layer, double scale) {
  const int d = geometry.head_dim, ratio = heads / geometry.kv_heads;
  std::vector<double> out(q.size());
  int64_t row = 0;
  for (const HostSequence& seq : sequences) {
    if (static_cast<int64_t>(seq.pages.size()) * geometry.block_tokens < seq.context_tokens + seq.new_tokens) {
      throw std::invalid_argument("attention_reference: a sequence has too few pages for its tokens");
    }
    for (int i = 0; i < seq.new_tokens; ++i, ++row) {
      const int keys = seq.context_tokens + i + 1;
      for (int head = 0; head < heads; ++head) {
        const int kv_head = head / ratio;
        const uint16_t* query = &q[(row * heads + head) * d];
        std::vector<double> scores(static_cast<size_t>(keys));
        double max_score = -INFINITY;
        for (int key = 0; key < keys; ++key) {
          double dot = 0;
          for (int e = 0; e < d; ++e) {
            dot += value(query[e]) * value(pool[page_element(seq.pages, page_stride, geometry, layer, 0, kv_head, key, e)]);
          }
          scores[key] = dot * scale;
          max_score = std::max(max_score, scores[key]);
        }
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - max_score));
        double* result = &out[(row * heads + head) * d];
        for (int key = 0; key < keys; ++key) {
          for (int e = 0; e < d; ++e) {
            result[e] += scores[key] / sum *
                         value(pool[page_element(seq.pages, page_stride, geometry, layer, 1, kv_head, key, e)]);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace kvtier::hw
