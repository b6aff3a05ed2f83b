#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "planner/ir/ir.hpp"

namespace dtplan::planner {

/// Parameter counts of a decoder-only transformer, from its shape.
struct param_counts {
  std::int64_t embedding = 0;   ///< vocab x hidden (input embedding)
  std::int64_t output = 0;      ///< vocab x hidden unless tied, else 0
  std::int64_t attention = 0;   ///< per layer: q, k, v (GQA-aware), o projections + biases + q/k norms
  std::int64_t mlp = 0;         ///< per layer: all experts' matrices (2 for gelu, 3 for swiglu)
  std::int64_t mlp_active = 0;  ///< per layer: the experts_per_token that one token uses
  std::int64_t norms = 0;       ///< per layer: the two norms
  std::int64_t final_norm = 0;
  std::int64_t router = 0;      ///< per layer: MoE router, 0 without experts
  std::int64_t shared = 0;      ///< per layer: a mixture's shared expert MLP, 0 without one
  std::int64_t per_layer = 0;   ///< attention + mlp + norms + router + shared
  /// A mixture's dense layer (model::dense_layers, moe_layer_freq): its MLP,
  /// ffn wide, and the whole layer (attention + dense_mlp + norms); a dense
  /// model's: mlp and per_layer.
  std::int64_t dense_mlp = 0;
  std::int64_t dense_per_layer = 0;
  std::int64_t dense_mlp_matrices = 0;  ///< dense_mlp's matrices, without GPT's biases
  /// Multi-latent attention's up projections (model::mla): q's (or its
  /// whole projection without q_lora_rank) and the keys' and values', per
  /// layer; 0 for other attention.
  std::int64_t attention_up = 0;
  /// A mixture layer's MLP matrices one token goes through: the router,
  /// its active experts' and the shared expert's (0 for a dense model).
  std::int64_t mixture_mlp_matmul = 0;
  /// One multi-token prediction module (model::mtp_layers): a layer of the
  /// last layer's kind, the 2 hidden -> hidden projection and three norms
  /// (the embedding and output layer are the model's); and its matrices
  /// one token goes through (the logits' aside).
  std::int64_t mtp = 0;
  std::int64_t mtp_matmul = 0;
  std::int64_t total = 0;       ///< every parameter, the multi-token prediction modules' too
  std::int64_t matmul = 0;      ///< parameters in matrix products one token goes through
                                ///< (layers' matrices with active experts + output/logits, and
                                ///< each multi-token prediction module's with its logits)
  bool saturated = false;       ///< some count exceeds 64 bits and was held at its maximum
};

/// Counts the parameters of `m`. The IR has no bias key, so the convention
/// follows the MLP kind: gelu models follow GPT (LayerNorm with weight and
/// bias, biases on every linear layer), swiglu models follow LLaMA (RMSNorm
/// weight only, no biases). Positional embeddings are not counted (rotary
/// embeddings have none; GPT-3's learned positions are seq_len x hidden,
/// 0.01 % of 175B). The vocabulary is counted unpadded.
param_counts count_params(model const& m);

/// A mixture's dense layer as a model of its own: `m` with one expert, its
/// MLP `ffn` wide, no shared expert, capacity or skew
/// (model::dense_layers, moe_layer_freq).
model dense_layer_model(model const& m);

/// `p` with its model's dense layer as the model (dense_layer_model) and no
/// strategies: what a mixture's dense layers are costed as.
program dense_layer_program(program const& p);

/// A model whose parameter count exceeds 64 bits (count_params saturates);
/// `called` is how the message names the block ("model 'm'").
std::optional<size_limit> beyond_limits(model const& m, std::string const& called);

}  // namespace dtplan::planner
