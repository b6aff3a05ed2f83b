#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dsl/source.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"
#include "planner/search/search.hpp"

namespace dtplan::codegen {

/// What a run of dtplan reports: the program, the plans (strategies from
/// the file first, then search results best first) and the search figures.
struct report {
  planner::program const* program = nullptr;
  std::vector<planner::plan> const* plans = nullptr;
  std::optional<planner::search_stats> stats;        ///< only with --optimize
  std::vector<planner::explanation> explanations;    ///< --explain: search regions, scaling
  dsl::source_manager const* sources = nullptr;      ///< to turn spans into line:col
};

/// dtplan's version ("0.1.0"): what `--version` prints and every JSON
/// document and exported job names.
char const* tool_version();

/// The version of the JSON document's shape (docs/spec/dtplan.schema.json,
/// whose `schema_version` is this constant): raised whenever a key is
/// added; none is ever removed or renamed.
inline constexpr std::int64_t json_schema_version = 17;

/// The JSON document of DSL.md section 4.
std::string to_json(report const& r);

/// The readable report: per plan the strategy, the memory and time
/// breakdowns, each collective, throughput, bottleneck and advice; with
/// search results, the speed-up over each strategy of the file.
std::string to_text(report const& r, bool explain);

/// One line per plan (`--quiet`): name, validity, step time, memory.
std::string to_summary(report const& r);

}  // namespace dtplan::codegen
