// The shape of a dense GQA transformer (Llama-style) and the arithmetic that follows from it.
//
// The hardware mode runs a model's exact shapes with random bf16 weights, because the time of a forward
// pass depends on the shapes alone, not on the values. TransformerShape is a plain struct that a model
// card fills (card_shape.h); head_dim is its own field because some models (Qwen3, Gemma) do not
// have head_dim = hidden / heads. The FLOP counts here are the ones the benchmark divides by time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvtier::hw {

struct TransformerShape {
  int layers = 0;
  int hidden = 0;        // residual stream width
  int heads = 0;         // query heads
  int kv_heads = 0;      // key/value heads; heads must be a multiple of it (GQA ratio heads / kv_heads)
  int head_dim = 0;      // 64 or 128 (the attention kernel's instantiations)
  int intermediate = 0;  // MLP width (gate and up each project hidden -> intermediate)
  int vocab = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 500000.0f;

  int q_width() const { return heads * head_dim; }
  int kv_width() const { return kv_heads * head_dim; }
  int qkv_width() const { return q_width() + 2 * kv_width(); }
  int gqa_ratio() const { return heads / kv_heads; }

  // Weights of one layer's linear maps (QKV, output, gate+up, down), in elements.
  int64_t linear_params_per_layer() const {
    return int64_t{hidden} * qkv_width() + int64_t{q_width()} * hidden + int64_t{hidden} * 2 * intermediate +
           int64_t{intermediate} * hidden;
  }
  // Throws std::invalid_argument naming the first field that is out of range.
  void validate() const {
    auto require = [](bool ok, const std::string& what) {
      if (!ok) throw std::invalid_argument("transformer shape: " + what);
    };
    require(layers > 0 && hidden > 0 && intermediate > 0 && vocab > 0,
            "layers, hidden, intermediate and vocab must be positive");
    require(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, "heads must be a positive multiple of kv_heads");
    require(head_dim == 64 || head_dim == 128, "head_dim must be 64 or 128, got " + std::to_string(head_dim));
    require(hidden % 8 == 0 && intermediate % 8 == 0, "hidden and intermediate must be multiples of 8");
    require(rms_eps > 0 && rope_theta > 1, "rms_eps must be positive and rope_theta above 1");
  }
};

// Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json). Rotary scaling of Llama 3.1 (rope_scaling) changes
// the frequencies, not the work, and is left out.
inline TransformerShape llama_3_1_8b_shape() {
  return {.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128, .intermediate = 14336,
          .vocab = 128256, .rms_eps = 1e-5f, .rope_theta = 500000.0f};
}

// Multiply-adds x2 of the linear layers for `tokens` tokens, plus the LM head for `sequences` last tokens.
inline double linear_flops(const TransformerShape& s, int64_t tokens, int64_t sequences) {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(s.linear_params_per_layer()) * s.layers +
         2.0 * static_cast<double>(sequences) * s.hidden * s.vocab;
}

// Attention FLOPs of one layer for one sequence: `new_tokens` queries over a cached prefix of `context`
// tokens and, causally, over themselves. Each (query, key) pair costs 4 * head_dim per head (QK^T and PV).
// For a whole prompt of S tokens this is 2 * S^2 * heads * head_dim, up to the diagonal's S terms.
inline double attention_flops(const TransformerShape& s, int64_t new_tokens, int64_t context) {
  const double pairs = static_cast<double>(new_tokens) * static_cast<double>(context) +
                       static_cast<double>(new_tokens) * static_cast<double>(new_tokens + 1) / 2.0;
  return 4.0 * pairs * s.heads * s.head_dim;
}

}  // namespace kvtier::hw
