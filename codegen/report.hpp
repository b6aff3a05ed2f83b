#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/ir.hpp"
#include "planner/plan.hpp"
#include "planner/search.hpp"

namespace dtplan::codegen {

/// The JSON document of DSL.md section 4 for a run.
std::string to_json(planner::program const& p, std::vector<planner::plan> const& plans,
                    std::optional<planner::search_stats> const& stats);

/// The readable report of the same run (memory and time breakdowns, each
/// collective, throughput, bottleneck, advice).
std::string to_text(planner::program const& p, std::vector<planner::plan> const& plans,
                    std::optional<planner::search_stats> const& stats, bool explain);

}  // namespace dtplan::codegen
