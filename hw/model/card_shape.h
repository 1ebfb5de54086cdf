// A model card's shape for the hardware mode's forward pass.
//
// Kept apart from transformer_shape.h, which the GPU kernels include: a model card brings yaml-cpp's
// headers with it, and Debian's hipcc crashes compiling them, so only host code includes this file.
#pragma once

#include <stdexcept>
#include <string>

#include "hw/model/transformer_shape.h"
#include "sim/core/model_card.h"

namespace kvtier::hw {

// The shape of a dense GQA model card. rms_eps and rope_theta keep their defaults (Llama 3's): cards do
// not carry them, and they change the values, not the work. Throws std::invalid_argument naming what the
// forward pass cannot run (MLA, MoE, a card without intermediate_size or vocab_size, a head_dim the
// attention kernel lacks).
inline TransformerShape transformer_shape(const ModelCard& card) {
  auto refuse = [&](const std::string& what) { throw std::invalid_argument(card.name + ": " + what); };
  if (card.attention == AttentionKind::kMla) {
    refuse("multi-head latent attention (MLA): the hardware mode's MLA forward pass is not built yet");
  }
  if (card.moe) refuse("mixture of experts: the hardware mode's MoE forward pass is not built yet");
  if (card.intermediate_size == 0) refuse("the model card gives no intermediate_size");
  if (card.vocab_size == 0) refuse("the model card gives no vocab_size");
  TransformerShape shape{.layers = card.layers, .hidden = card.hidden_size, .heads = card.query_heads,
                         .kv_heads = card.kv_heads, .head_dim = card.head_dim,
                         .intermediate = card.intermediate_size, .vocab = card.vocab_size};
  shape.validate();
  return shape;
}

}  // namespace kvtier::hw
