#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"
#include "planner/search/space.hpp"

/// Why a search rejected whole regions of its space (`--explain`). Internal
/// to planner/search.
namespace dtplan::planner::detail {

/// What a search found besides its best plans, summed over its threads.
struct search_tally {
  std::int64_t valid = 0;
  std::int64_t illegal = 0;
  std::int64_t memory_cut = 0;     ///< candidates that do not fit (checked or cut off)
  std::int64_t structure_cut = 0;  ///< candidates of structures that fit nowhere
  /// Candidates whose shard key forms another key's groups (the same plan,
  /// counted once under the first: search.cpp's duplicate_shard).
  std::int64_t same_plan = 0;
  std::int64_t pruned = 0;         ///< valid candidates never costed: their bound passed the k-th best step
  seconds least_pruned;            ///< the smallest bound among them
  /// With explain: structures none of whose candidates is legal, and the
  /// structures cut by memory with the least memory they need.
  std::vector<work_item> illegal_structures;
  std::vector<std::pair<work_item, bytes>> memory_structures;

  void merge(search_tally const& other);
};

/// The explanations of a search: `structural` lines first (degrees that
/// divide nothing), then illegal regions grouped by reason, memory cuts,
/// and the candidates the time bound pruned (`best`: the fastest step).
void explain(program const& p, strategy_spec const& spec, std::map<std::int64_t, std::int64_t> const& structures_of_tp,
             std::vector<std::string> const& structural, search_tally const& all, seconds best,
             std::vector<explanation>& out);

}  // namespace dtplan::planner::detail
