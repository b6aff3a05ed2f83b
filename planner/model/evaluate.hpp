#pragma once
#include <string>
#include <vector>

#include "planner/model/cost_model.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

namespace dtplan::planner {

/// Checks and, when valid, costs one strategy: memory, time, throughput,
/// the bottleneck in one line and advice. `name` labels the plan.
plan evaluate(program const& p, strategy_spec const& spec, strategy const& s,
              cost_model const& model, std::string name);

/// Throughput figures from a step's time breakdown.
throughput rate_of(program const& p, time_breakdown const& t);

/// For `--explain`: how the plan's strategy scales from the fewest GPUs it
/// fits on (1 when it does) to the whole cluster, keeping its model-parallel
/// sizes and the global batch and growing dp, one line per GPU count, and
/// where the lost scaling goes (exposed communication, bubble,
/// recomputation, memory-forced choices). Every number carries its unit.
/// Each line an explanation: "scaling" (the range), "scaling_point" (one GPU
/// count: gpus, step_s, tokens_per_s_per_gpu, rate_of_smallest,
/// exposed_comm_s, bubble_s, recompute_s), "scaling_loss" (the share lost).
std::vector<explanation> explain_scaling(program const& p, plan const& pl, cost_model const& model);

}  // namespace dtplan::planner
