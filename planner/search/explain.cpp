#include "planner/search/explain.hpp"

#include <cmath>
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "planner/model/check.hpp"

namespace dtplan::planner::detail {

namespace {
// "1 candidate", "12,288 candidates".
std::string candidates(std::int64_t n) { return fmt::format("{} candidate{}", grouped(n), n == 1 ? "" : "s"); }
}  // namespace

void search_tally::merge(search_tally const& other) {
  valid += other.valid;
  illegal += other.illegal;
  memory_cut += other.memory_cut;
  structure_cut += other.structure_cut;
  same_plan += other.same_plan;
  illegal_structures.insert(illegal_structures.end(), other.illegal_structures.begin(), other.illegal_structures.end());
  memory_structures.insert(memory_structures.end(), other.memory_structures.begin(), other.memory_structures.end());
}

void explain(program const& p, strategy_spec const& spec, std::map<std::int64_t, std::int64_t> const& structures_of_tp,
             std::vector<std::string> const& structural, search_tally const& all, seconds best,
             std::vector<explanation>& out) {
  for (auto const& line : structural) out.push_back({"left_out", "the space", {}, line});
  auto usable = p.cluster.device.memory - p.cluster.device.reserved;

  // Structures every candidate of which is illegal, grouped by the first
  // error the checker gives for one of them.
  std::map<std::string, std::pair<std::int64_t, std::vector<std::string>>> reasons;
  for (auto const& w : all.illegal_structures) {
    strategy s = w.structure();
    s.order = w.orders.front();
    s.sequence_parallel = w.tp > 1 && p.framework.limits.sequence_parallel;
    auto r = check(p, spec, s);
    std::string why = "not legal";
    for (auto const& d : r.diags)
      if (d.level == dsl::severity::error) {
        why = d.message;
        break;
      }
    auto& entry = reasons[why];
    entry.first += w.candidates;
    auto text = structure_text(w);
    if (std::find(entry.second.begin(), entry.second.end(), text) == entry.second.end())
      entry.second.push_back(text);
  }
  // The reasons that rule out the most candidates first (then by text),
  // the first `cap` of them and the rest summed on one line (or shown,
  // where only one is left).
  std::vector<decltype(reasons)::const_pointer> ranked;
  for (auto const& r : reasons) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](auto const* a, auto const* b) { return a->second.first > b->second.first; });
  constexpr std::size_t cap = 12;
  std::size_t const shown_reasons = ranked.size() <= cap + 1 ? ranked.size() : cap;
  std::int64_t more_candidates = 0;
  std::size_t more_structures = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    auto const& [why, entry] = *ranked[i];
    auto const& where = entry.second;
    if (i >= shown_reasons) {
      more_candidates += entry.first;
      more_structures += where.size();
      continue;
    }
    std::string at = where.front();
    if (where.size() > 1) at += fmt::format(" and {} more", where.size() - 1);
    out.push_back({"illegal", at, {{"candidates", static_cast<double>(entry.first)}},
                   fmt::format("{}: {} ({})", at, why, candidates(entry.first))});
  }
  if (ranked.size() > shown_reasons) {
    auto const more = ranked.size() - shown_reasons;
    out.push_back({"illegal", fmt::format("{} more reasons", more),
                   {{"candidates", static_cast<double>(more_candidates)}},
                   fmt::format("{} more reasons rule out {} more structures ({})", more, grouped(more_structures),
                               candidates(more_candidates))});
  }

  // Structures that fit nowhere: by tp when every structure of that tp is
  // cut, one line per structure otherwise (the first few).
  std::map<std::int64_t, std::pair<std::int64_t, bytes>> cut_by_tp;  // tp -> (structures, least memory)
  std::map<std::int64_t, std::int64_t> candidates_by_tp;
  for (auto const& [w, needs] : all.memory_structures) {
    auto& e = cut_by_tp[w.tp];
    e.second = e.first == 0 ? needs : min(e.second, needs);
    ++e.first;
    candidates_by_tp[w.tp] += w.candidates;
  }
  std::vector<std::pair<work_item, bytes>> rest;
  for (auto const& [w, needs] : all.memory_structures) {
    // A tp every one of whose structures was cut is reported once.
    if (cut_by_tp[w.tp].first == structures_of_tp.at(w.tp)) continue;
    rest.emplace_back(w, needs);
  }
  for (auto const& [tp, e] : cut_by_tp) {
    if (e.first != structures_of_tp.at(tp)) continue;
    out.push_back({"memory", fmt::format("tp = {}", tp),
                   {{"bytes_per_gpu", std::round(e.second.value())}, {"usable_bytes", std::round(usable.value())},
                    {"candidates", static_cast<double>(candidates_by_tp[tp])}},
                   fmt::format("tp = {}: {} per GPU > {} usable, at any pp, cp, dp, zero, checkpoint ({})",
                               tp, e.second, usable, candidates(candidates_by_tp[tp]))});
  }
  std::sort(rest.begin(), rest.end(), [](auto const& a, auto const& b) {
    return std::tuple{a.first.tp, a.first.pp, a.first.cp, a.first.dp, a.first.ep, -a.first.etp} <
           std::tuple{b.first.tp, b.first.pp, b.first.cp, b.first.dp, b.first.ep, -b.first.etp};
  });
  constexpr std::size_t shown = 8;
  std::vector<explanation> lines;
  std::int64_t hidden_candidates = 0;
  std::size_t hidden = 0;
  for (auto const& [w, needs] : rest) {
    auto text = fmt::format("{}: {} per GPU > {} usable, at any zero, checkpoint ({})",
                            structure_text(w), needs, usable, candidates(w.candidates));
    if (std::any_of(lines.begin(), lines.end(), [&](explanation const& e) { return e.text == text; })) continue;
    if (lines.size() < shown) {
      lines.push_back({"memory", structure_text(w),
                       {{"bytes_per_gpu", std::round(needs.value())}, {"usable_bytes", std::round(usable.value())},
                        {"candidates", static_cast<double>(w.candidates)}},
                       std::move(text)});
    } else {
      ++hidden;
      hidden_candidates += w.candidates;
    }
  }
  out.insert(out.end(), lines.begin(), lines.end());
  if (hidden > 0)
    out.push_back({"memory", fmt::format("{} more structures", hidden),
                   {{"usable_bytes", std::round(usable.value())}, {"candidates", static_cast<double>(hidden_candidates)}},
                   fmt::format("{} more structures do not fit in {} per GPU ({})", hidden, usable,
                               candidates(hidden_candidates))});
  if (all.memory_cut > 0)
    out.push_back({"memory_micro_batch", "the space",
                   {{"usable_bytes", std::round(usable.value())}, {"candidates", static_cast<double>(all.memory_cut)}},
                   fmt::format("{} candidates need more than {} per GPU (micro-batch too large for the rest)",
                               grouped(all.memory_cut), usable)});
  std::int64_t other = all.illegal;
  for (auto const& w : all.illegal_structures) other -= w.candidates;
  if (other > 0)
    out.push_back({"other_illegal", "the space", {{"candidates", static_cast<double>(other)}},
                   fmt::format("{} other candidates are not legal", grouped(other))});

  if (all.same_plan > 0)
    out.push_back({"same_plan", "the space", {{"candidates", static_cast<double>(all.same_plan)}},
                   fmt::format("{} are another shard key's plan (their shard and replicate groups are the same), "
                               "counted once",
                               candidates(all.same_plan))});
  if (all.pruned > 0)
    out.push_back({"pruned", "the space",
                   {{"candidates", static_cast<double>(all.pruned)}, {"bound_s", all.least_pruned.value()}, {"best_s", best.value()}},
                   fmt::format("{} candidates pruned by the time bound (>= {}, best {})", grouped(all.pruned),
                               all.least_pruned, best)});
}

}  // namespace dtplan::planner::detail
