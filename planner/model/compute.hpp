#pragma once
#include <array>
#include <cstdint>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"
#include "planner/model/shape.hpp"

/// The compute side of the time model (COSTMODEL.md section 3): each
/// operator of a transformer layer as a roofline on one GPU, with its
/// tensor/context-parallel shape.
namespace dtplan::planner {

/// The share of the matmul rate a GEMM of this shape reaches relative to a
/// large one, in (0, 1]: M, N, K rounded up to whole tiles and the tiles run
/// in waves over the GPU's SMs (the last wave partly idle). The best of a
/// few tile sizes is taken, the smaller tiles paying for their lower data
/// reuse, as a GEMM library's heuristic would.
double shape_efficiency(gpu const& g, gemm_shape const& s, precision p = precision::bf16);

/// Dense matmul peak at a precision: fp8 at peak_flops_fp8, fp32 at
/// peak_flops_fp32, 16-bit at peak_flops.
flop_rate peak_at(gpu const& g, precision p);
/// Bytes per element of activations/weights at a precision (fp8 keeps
/// 16-bit activations between operators, as Transformer Engine does).
double element_bytes(precision p);

/// Roofline time of one GEMM (all its `batch` instances): the slower of its
/// FLOPs at peak x matmul_efficiency x shape_efficiency and its operands at
/// HBM bandwidth x hbm_efficiency, plus one kernel latency.
seconds gemm_time(gpu const& g, gemm_shape const& s, precision p);
/// A memory-bound kernel that moves `moved` bytes, plus one kernel latency.
seconds memory_time(gpu const& g, bytes moved);

/// FLOPs of a GEMM shape (2 M N K per batch).
flops gemm_flops(gemm_shape const& s);

/// Per-GPU compute of one micro-batch on one pipeline stage.
struct stage_compute {
  seconds layer_forward;    ///< one transformer layer, forward
  seconds layer_backward;   ///< one transformer layer, backward (dgrad + wgrad, flash backward)
  seconds layer_attention_core;  ///< attention core forward (scores, softmax, weighted sum)
  seconds layer_attention_core_backward;  ///< attention core backward
  seconds layer_recompute;  ///< extra per layer under the strategy's checkpointing
  seconds head_forward;     ///< embedding + logits + loss, forward (first/last stage)
  seconds head_backward;
  /// Each weight GEMM of a layer (strategy_shape::gemms, same order), forward.
  std::array<seconds, max_layer_gemms> gemm_forward{};
  std::int64_t layers = 0;  ///< layers on the stage
  std::int64_t layer_kernels = 0;           ///< operators one layer's forward issues
  std::int64_t layer_kernels_backward = 0;  ///< operators one layer's backward issues
  std::int64_t layer_kernels_recompute = 0; ///< operators the recomputation issues per layer
  std::int64_t head_kernels_forward = 0;    ///< operators of the head's forward
  std::int64_t head_kernels_backward = 0;   ///< operators of the head's backward
  /// Multi-token prediction modules (model::mtp_layers) on the costed
  /// stage, part of the head: head_forward, head_backward and the head's
  /// kernels hold them, each a layer of the last layer's kind (mtp_moe:
  /// a mixture's) and its own work, one module's in `mtp_forward` and
  /// `mtp_backward` with its layer.
  std::int64_t mtp_layers = 0;
  bool mtp_moe = false;
  seconds mtp_forward;
  seconds mtp_backward;
  std::int64_t mtp_kernels_forward = 0;   ///< operators of one module's forward, its layer's included
  std::int64_t mtp_kernels_backward = 0;
  /// Of `layers`, a mixture's dense layers (model::dense_layers,
  /// moe_layer_freq): the per-layer times above are then the stage's mean
  /// layer, the kernel counts a mixture layer's, and these a dense one's.
  std::int64_t dense_layers = 0;
  std::int64_t dense_layer_kernels = 0;
  std::int64_t dense_layer_kernels_backward = 0;
  std::int64_t dense_layer_kernels_recompute = 0;
  /// Operators the stage's layers issue for one micro-batch, forward; and
  /// backward with the recomputation.
  [[nodiscard]] std::int64_t layers_kernels_forward() const {
    return layer_kernels * (layers - dense_layers) + dense_layer_kernels * dense_layers;
  }
  [[nodiscard]] std::int64_t layers_kernels_backward() const {
    return (layer_kernels_backward + layer_kernels_recompute) * (layers - dense_layers) +
           (dense_layer_kernels_backward + dense_layer_kernels_recompute) * dense_layers;
  }
  /// Operators the stage issues for one micro-batch (forward, backward, recomputation).
  [[nodiscard]] std::int64_t kernels() const {
    return layers_kernels_forward() + layers_kernels_backward() + head_kernels();
  }
  [[nodiscard]] std::int64_t head_kernels() const { return head_kernels_forward + head_kernels_backward; }
  /// forward + backward of the stage for one micro-batch, without recomputation
  [[nodiscard]] seconds forward_backward() const {
    return (layer_forward + layer_backward) * static_cast<double>(layers) + head();
  }
  [[nodiscard]] seconds recompute() const { return layer_recompute * static_cast<double>(layers); }
  /// forward + backward of the head (embedding, logits, loss) for one micro-batch
  [[nodiscard]] seconds head() const { return head_forward + head_backward; }
};

/// What a mixture's layer moves on one GPU besides its GEMMs and
/// element-wise operators: the all-to-all dispatcher's permutations
/// (core_v0.13.0 moe/token_dispatcher.py:570-720, moe/moe_utils.py:238-420).
/// Forward, the GPU's own tokens T (tokens / tp under sequence parallelism)
/// are copied top-k times into expert order (k.T rows read and written)
/// and, after the experts, summed back (k.T rows read, T written into a
/// zeroed buffer: (3k + 2) T rows of hidden); with more than one local
/// expert the R = mlp_tokens x local experts rows that arrived are sorted by
/// expert and back (4 R). A capacity scales k by routed_share. The backward
/// moves the same. Experts one after another also concatenate their outputs
/// (2 R forward; its backward splits views). Kernels: Transformer Engine's
/// fused permutation (permute_fusion: a row map and the copy, one kernel to
/// sum back, one a sort) or PyTorch's operators (transpose, masked_select
/// twice, index_select; zeros and scatter_add; a cat a sort), their
/// backward the mirror (scatter_add for the permutation, index_select for
/// the sum). Nothing for a dense model.
struct expert_moves {
  bytes forward, backward;
  std::int64_t forward_kernels = 0, backward_kernels = 0;
};
expert_moves expert_movement(strategy_shape const& sh);

/// The compute of one micro-batch on the most loaded stage: a fullest
/// stage's layers plus the head (the logits and loss the last stage holds;
/// with one stage the embedding too), whichever stage that is in the split
/// (strategy_shape::split). Where the split leaves the last stage fewer
/// layers, 1F1B's slot is the longer of a fullest stage without the head
/// and the last stage with it; costed so, BLOOM's runs fall 11 % short and
/// pull the fitted figures other families hold (docs/research/residuals.md
/// section 9): held back until what those pipelines pay beside their
/// layers is described.
stage_compute compute_per_micro_batch(strategy_shape const& sh);
/// compute_per_micro_batch(shape_of(p, s)).
stage_compute compute_per_micro_batch(program const& p, strategy const& s);

/// Model FLOPs per step over all GPUs: 6 x matmul parameters x tokens
/// + 12 x layers x seq_len x hidden per token (attention, not halved for
/// causal masking).
flops model_flops_per_step(program const& p);
/// The same from the model's counts (count_params(p.model)).
flops model_flops_per_step(program const& p, param_counts const& counts);
/// Hardware FLOPs per step: model FLOPs plus what recomputation adds.
flops hardware_flops_per_step(program const& p, strategy const& s);
/// The same for a shape (its program's facts already derived).
flops hardware_flops_per_step(strategy_shape const& sh);

}  // namespace dtplan::planner
