#pragma once
#include <cstdint>
#include <string>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// The Graphviz sharding diagram of a plan (`sharding.dot`, `--dot FILE`):
/// nodes as clusters, GPUs with their rank, coordinates, what they hold and
/// their predicted memory, the tp/cp/dp/pp (and shard/replicate) groups as
/// distinct edge styles, and a legend. Deterministic.
namespace dtplan::codegen {

/// Clusters with more GPUs than this are drawn condensed: node 0 in full,
/// the other nodes summarised per run of nodes that hold the same stages.
inline constexpr std::int64_t dot_full_limit = 64;

std::string sharding_dot(planner::program const& p, planner::plan const& pl);

/// The same diagram under the name the CLI's `--dot FILE` calls.
inline std::string to_dot(planner::program const& p, planner::plan const& pl) { return sharding_dot(p, pl); }

}  // namespace dtplan::codegen
