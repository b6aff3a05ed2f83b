#pragma once
#include <string>

#include "planner/cost_model.hpp"
#include "planner/ir.hpp"
#include "planner/plan.hpp"

namespace dtplan::planner {

/// Checks and, when valid, costs one strategy: memory, time, throughput,
/// the bottleneck in one line and advice. `name` labels the plan.
plan evaluate(program const& p, strategy_spec const& spec, strategy const& s,
              cost_model const& model, std::string name);

/// Throughput figures from a step's time breakdown.
throughput rate_of(program const& p, time_breakdown const& t);

}  // namespace dtplan::planner
