#pragma once
#include <array>
#include <cstdint>

#include "planner/ir/ir.hpp"

/// torchtitan's op-level selective checkpointing (`checkpoint = ops`) of one
/// layer, as v0.2.0 wraps and runs it: which matrix products keep their
/// output and which run again in the backward. The shape (each GEMM's
/// recomputed columns), the compute (the recomputation's time), the memory
/// (what a layer keeps) and the hardware FLOPs all read it from here.
///
/// The policy (torchtitan/distributed/activation_checkpoint.py:47-120):
/// inside a checkpointed module, an op in the model's save list keeps its
/// output (aten.mm, the flash and efficient attention kernels,
/// FlexAttention, reduce_scatter, all_to_all_single, max:
/// models/llama3/infra/parallelize.py:32-42, models/deepseek_v3/infra/
/// parallelize.py:33-44), except every second aten.mm, counted from one in
/// each checkpointed module; everything else runs again. A matmul whose
/// weight's shape is in per_op_sac_force_recompute_mm_shapes_by_fqns runs
/// again and is not counted: by default the router's gate
/// (config/job_config.py:597-599). The routed experts' torch._grouped_mm
/// is not aten.mm: neither kept nor counted (models/moe/moe.py:107-124); run
/// one expert after another (grouped_gemm = false) each expert's three
/// matmuls are counted (moe.py:72-100).
///
/// The wrapping (activation_checkpoint.py:148-268): one checkpoint over the
/// whole block, its two norms and residual adds inside; with FlexAttention
/// module by module, the norms and adds outside any checkpoint: the mixture
/// (or a dense block's MLP, uncompiled) under the op policy, the attention
/// under full checkpointing unless the model is compiled (then under the op
/// policy, counted apart); a compiled dense block is wrapped whole.
namespace dtplan::planner {

/// One matrix product of a layer's forward as the policy sees it.
struct op_matmul {
  char const* gemm = "";    ///< the shape's GEMM it is (part of): layer_gemm::name
  char const* output = "";  ///< its output, as the memory breakdown names it
  std::int64_t columns = 0;  ///< its output's columns over the whole model (before tp's split)
  std::int64_t inputs = 0;   ///< its contraction width (the GEMM's k)
  /// Its output is whole on each tensor-parallel rank: a row-parallel
  /// product's partial sum, or the router's; otherwise tp splits its
  /// columns.
  bool full_width = false;
  bool routed = false;  ///< its rows are the routed copies of the tokens (an expert's)
  /// Share of its output kept: 1 or 0; with experts one after another,
  /// the share of the GPU's experts whose product is an odd one.
  double kept = 0;
};

/// How torchtitan wraps a layer, from the training.
struct op_wrap {
  bool flex = false;      ///< FlexAttention: wrapped module by module (attention_backend = flex)
  bool compiled = true;   ///< the model compiled (fused_elementwise)
  bool grouped = true;    ///< the routed experts as grouped GEMMs (grouped_gemm)
  bool unfused = false;   ///< PyTorch's math attention (attention_backend = unfused): batched matmuls, none kept
};
op_wrap op_wrap_of(training const& t);

/// How the checkpoints wrap the layer (what strategy_shape keeps of it).
struct op_wrapping {
  /// One checkpoint over the whole block: its input is all the block
  /// keeps beside the ops' outputs, and its norms and residual adds run
  /// again. Otherwise the norms' inputs are kept and they do not run again.
  bool whole_layer = true;
  /// The attention module under full checkpointing: its input kept, all of
  /// it (its GEMMs, kernel, rotary and norms) run again.
  bool attention_full = false;
  /// The attention kernel's output and log-sum-exp kept (a fused kernel
  /// under the op policy); otherwise the attention core runs again.
  bool kernel_kept = false;
};

struct op_checkpoint : op_wrapping {
  std::array<op_matmul, 12> matmuls;
  int count = 0;
  [[nodiscard]] op_matmul const* begin() const { return matmuls.data(); }
  [[nodiscard]] op_matmul const* end() const { return matmuls.data() + count; }
};

/// One layer of `m` (a mixture's layer when m.experts > 1, else a dense
/// one), `local_experts` routed experts on the GPU, wrapped as `w`.
/// `dense_layer`: a mixture's dense layer (dense_layer_model's), read from
/// `m` itself (the hardware FLOPs of each costed candidate copy no model).
op_checkpoint op_checkpoint_of(model const& m, std::int64_t local_experts, op_wrap w, bool dense_layer = false);

}  // namespace dtplan::planner
