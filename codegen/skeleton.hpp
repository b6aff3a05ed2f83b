#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/model/cost_model.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// The NCCL/CUDA launch skeleton of a plan: a real training-step program
/// with the plan's numbers baked in (DSL.md section 5).
namespace dtplan::codegen {

/// One matrix product of a transformer layer on one GPU, row-major
/// C[m, n] = A[m, k] x B[k, n], for one micro-batch in the forward pass.
struct gemm_shape {
  std::string name;  ///< "qkv", "o-proj", "mlp-up", "mlp-down"
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

/// The per-GPU shapes of one layer's matrix products under tensor and
/// context parallelism (tokens = micro_batch x seq_len / cp; the MLP rows
/// scale with experts_per_token).
std::vector<gemm_shape> layer_gemms(planner::model const& m, planner::strategy const& s);

/// Per GEMM of layer_gemms, the output columns the
/// backward recomputes before its own GEMMs: all under full checkpointing;
/// under `ops` the k projection's slice of qkv, the o projection and the
/// MLP's second matmul (SwiGLU's up half of mlp-up, or GELU's mlp-down);
/// none otherwise (selective recomputes only the attention core).
std::vector<std::int64_t> recompute_columns(planner::model const& m, planner::strategy const& s);

/// A run of consecutive transformer layers, [first, last).
struct layer_range {
  std::int64_t first = 0;
  std::int64_t last = 0;
  friend bool operator==(layer_range const&, layer_range const&) = default;
};

/// The layers pipeline stage `stage` holds, one range per chunk it runs
/// (virtual_stages of them), split as planner::layers_per_chunk does so the
/// skeleton, the diagram and the memory model agree.
std::vector<layer_range> stage_layers(std::int64_t layers, std::int64_t pp, std::int64_t virtual_stages,
                                      std::int64_t stage);

/// Ranks in a ZeRO shard group for the plan: the data-parallel degree when
/// nothing is sharded or the group cannot be formed.
std::int64_t shard_ranks(planner::strategy const& s, std::int64_t gpus_per_node);

/// Where in a step the generated program issues a collective's calls.
enum class comm_placement {
  layer,        ///< every layer's forward and backward of every micro-batch (tp, cp, ep, ZeRO-3 gathers)
  layer_bwd,    ///< every layer's backward of every micro-batch (ZeRO-3 gradient reduce-scatter)
  micro_batch,  ///< once per micro-batch forward and backward (pipeline send/recv)
  grad_sync,    ///< gradient sync: the last micro-batch's backward when overlapped, else before the optimizer
  step_end,     ///< after the optimizer (ZeRO-1/2 all-gather of updated weights)
};
char const* name(comm_placement);

/// Where the skeleton issues a comm entry of a plan with ZeRO stage `zero`.
comm_placement placement_of(planner::comm_entry const& e, int zero);

/// Whether the plan hides part of the entry behind compute: such calls run
/// on the communication stream, the others on the compute stream.
bool overlapped(planner::comm_entry const& e);

/// The `--dry-run` lines the generated program prints: one per rank,
/// `rank R node N local L tp A cp B dp C pp D | tp: ... | cp: ... | dp: ...
/// | pp: ...`, plus ` | shard: ... | replicate: ...` under hybrid sharding,
/// computed here with planner::rank_layout (the reference the test compares
/// the program's own arithmetic with). Each line ends with a newline.
std::string layout_text(planner::strategy const& s, std::int64_t gpus_per_node, std::int64_t shard_size);

/// `skeleton/train_step.cu` for the plan.
std::string train_step_cu(planner::program const& p, planner::plan const& pl);

/// `skeleton/CMakeLists.txt`: CUDA, cuBLAS, NCCL and (optional) MPI.
std::string skeleton_cmake(planner::program const& p, planner::plan const& pl);

}  // namespace dtplan::codegen
