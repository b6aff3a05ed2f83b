#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/layout.hpp"
#include "planner/model/pipeline_schedule.hpp"

/// The NCCL/CUDA launch skeleton of a plan: a real training-step program
/// with the plan's numbers baked in (DSL.md section 5). Its fixed part is
/// codegen/templates/train_step.cu; everything plan-specific is read from
/// planner::shape_of, the plan's time breakdown and planner::one_f_one_b.
namespace dtplan::codegen {

/// Whether the plan hides part of the entry behind compute: such calls run
/// on the communication stream, the others on the compute stream.
bool overlapped(planner::comm_entry const& e);

/// The groups a generated program forms, in the order of its communicators:
/// tp, cp, the gradient group (every dp and cp rank of the same weights,
/// the cost model's `dp`), pp, the ZeRO shard and replicate groups, the
/// tied-embedding pair, the expert group.
enum class skeleton_group { tp, cp, grad, pp, shard, replicate, embedding, ep, expert_grad, expert_shard };
skeleton_group group_of(planner::comm_group g);
char const* name(skeleton_group g);

/// The `--dry-run` lines the generated program prints: one per rank,
/// `rank R node N local L tp A cp B dp C pp D | tp: ... | cp: ... | dp: ...
/// | pp: ... | grad: ...`, then ` | shard: ... | replicate: ...` when ZeRO
/// splits the gradient group (`sharding` not whole), ` | ep: ...` with
/// expert parallelism and ` | embedding: F L` for a tied embedding split over
/// the pipeline; computed here with planner::rank_layout (the reference the
/// test compares the program's own arithmetic with). Each line ends with a
/// newline.
std::string layout_text(planner::strategy const& s, std::int64_t gpus_per_node, planner::shard_layout const& sharding,
                        bool embedding_pair);

/// The `--dry-run --schedule` lines the generated program prints for its
/// baked schedule: a `schedule` summary, then per stage a `stage` line, its
/// `op` lines in order and its `issue` lines (the order of ops and transfer
/// groups). Each line ends with a newline.
std::string schedule_text(planner::pipeline_schedule const& s);

/// `skeleton/train_step.cu` for the plan.
std::string train_step_cu(planner::program const& p, planner::plan const& pl);

/// `skeleton/CMakeLists.txt`: CUDA, cuBLAS, cuBLASLt, NCCL (>= 2.18) and
/// (optional) MPI.
std::string skeleton_cmake(planner::program const& p, planner::plan const& pl);

}  // namespace dtplan::codegen
