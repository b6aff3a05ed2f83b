#include "planner/session.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/ir/units.hpp"
#include "planner/model/evaluate.hpp"

namespace dtplan::planner {

namespace {

// Runs one search. When its threads cannot be created (a process or memory
// limit), it warns and runs it again with one thread, for this space and the
// ones after it: the result does not depend on the thread count.
std::optional<search_result> search_space(program const& p, strategy_spec const& space, cost_model const& model,
                                          search_function run_search, search_options& so,
                                          dsl::diagnostics& diags) {
  while (true) {
    try {
      return run_search(p, space, model, so);
    } catch (std::system_error const& e) {
      if (so.threads == 1) {
        diags.error({}, fmt::format("cannot start a thread for the search: {}", e.code().message()));
        return std::nullopt;
      }
      diags.warning({}, fmt::format("cannot start the search's threads ({}); searching with one thread",
                                    e.code().message()));
      so.threads = 1;
    }
  }
}

dsl::diagnostic nothing_found(program const& p, strategy_spec const& space, bool everything,
                              search_stats const& stats, bool explain) {
  auto const candidates = counted(stats.candidates, "candidate");
  dsl::diagnostic d{dsl::severity::error, space.where,
                    everything ? fmt::format("no valid plan for model '{}' on cluster '{}' in the whole strategy "
                                             "space ({})",
                                             p.model.name, p.cluster.name, candidates)
                               : fmt::format("no valid plan in the space of strategy '{}' ({})", space.name,
                                             candidates),
                    {}};
  if (!explain) d.notes.push_back({{}, "--explain says which regions were rejected and why"});
  return d;
}

bool usable(plan const& pl) { return pl.valid && pl.time.has_value(); }

// As lowering's: a session shows at most 20 errors, 20 warnings and 20
// notes, and a count of the rest, so a file of thousands of invalid or free
// strategies prints a page, not thousands. A diagnostic several plans share
// (an override's error, a search result's warnings) is passed on once, as
// the driver would print it once.
constexpr std::int64_t max_shown = 20;

void add_capped(std::vector<dsl::diagnostic> list, dsl::diagnostics& diags) {
  std::array<std::int64_t, 3> shown{}, more{};  // by severity: error, warning, note
  using identity = std::tuple<dsl::severity, std::uint32_t, std::uint32_t, std::uint32_t, std::string, std::string>;
  std::set<identity> seen;
  std::vector<dsl::diagnostic> kept;
  for (auto& d : list) {
    std::string notes;
    for (auto const& n : d.notes) notes += fmt::format("{}:{}:{}:{}\n", n.where.file, n.where.begin, n.where.end, n.message);
    if (!seen.emplace(d.level, d.where.file, d.where.begin, d.where.end, d.message, std::move(notes)).second) continue;
    auto const level = static_cast<std::size_t>(d.level);
    if (shown[level] >= max_shown) {
      ++more[level];
      continue;
    }
    ++shown[level];
    kept.push_back(std::move(d));
  }
  std::vector<std::string> parts;
  constexpr std::array<char const*, 3> nouns{"error", "warning", "note"};
  for (std::size_t i = 0; i < more.size(); ++i)
    if (more[i] > 0) parts.push_back(fmt::format("{} more {}{}", grouped(more[i]), nouns[i], more[i] == 1 ? "" : "s"));
  if (!parts.empty() && !kept.empty()) {
    auto const last = parts.back();
    parts.pop_back();
    kept.back().notes.push_back(
        {{}, fmt::format("{}{}{} not shown", fmt::join(parts, ", "), parts.empty() ? "" : " and ", last)});
  }
  for (auto& d : kept) diags.add(std::move(d));
}

// The plan a bundle is written for. A named fixed strategy wins even when
// it is invalid (then there is nothing to emit): the user asked for it.
std::optional<std::size_t> choose(std::vector<plan> const& plans, session_options const& options,
                                  selection const& chosen) {
  bool const named_fixed = options.strategy && !chosen.fixed.empty();
  std::optional<std::size_t> first_fixed, first_found;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!usable(plans[i])) continue;
    auto& slot = plans[i].from_search ? first_found : first_fixed;
    if (!slot) slot = i;
  }
  if (named_fixed) return first_fixed;
  if (options.optimize && first_found) return first_found;
  return first_fixed ? first_fixed : first_found;
}

}  // namespace

bool session_outcome::any_valid() const { return std::any_of(plans.begin(), plans.end(), usable); }

std::optional<selection> select_strategies(program const& p, session_options const& options,
                                           dsl::diagnostics& diags) {
  selection s;
  for (auto const& spec : p.strategies) {
    if (options.strategy && spec.name != *options.strategy) continue;
    (spec.is_free() ? s.free : s.fixed).push_back(&spec);
  }
  if (options.strategy && s.fixed.empty() && s.free.empty()) {
    std::vector<std::string> names;
    for (auto const& spec : p.strategies) names.push_back(spec.name);
    auto near = dsl::closest(*options.strategy, names);
    // Without a close name, the ones it has (the first ten; the message is
    // escaped where it is printed, as every diagnostic is).
    std::string known;
    for (std::size_t i = 0; i < names.size() && i < 10; ++i) known += fmt::format("{}'{}'", i == 0 ? "" : ", ", names[i]);
    if (names.size() > 10) known += fmt::format(" and {} more", grouped(static_cast<std::int64_t>(names.size() - 10)));
    std::string const hint = !near.empty()   ? fmt::format("; did you mean '{}'?", near)
                             : names.empty() ? std::string("; it has no strategy block")
                                             : fmt::format("; its strategies: {}", known);
    diags.error({}, fmt::format("no strategy '{}' in '{}'{}", *options.strategy, p.file, hint));
    return std::nullopt;
  }
  if (!options.optimize && s.fixed.empty()) {
    diags.error({}, options.strategy
                        ? fmt::format("strategy '{}' has free keys: --optimize searches it", *options.strategy)
                        : fmt::format("'{}' has no fixed strategy to check; --optimize searches its free "
                                      "strategies",
                                      p.file));
    return std::nullopt;
  }
  return s;
}

std::optional<session_outcome> run(program const& p, selection const& chosen, session_options const& options,
                                   dsl::diagnostics& diags) {
  // Collected here and passed on capped (add_capped).
  dsl::diagnostics found;
  auto pass_on = [&](std::vector<plan> const& plans) {
    auto list = found.list();
    for (auto const& pl : plans) list.insert(list.end(), pl.errors.begin(), pl.errors.end());
    add_capped(std::move(list), diags);
  };
  analytic_cost_model const analytic;
  cost_model const& model = options.model ? *options.model : analytic;
  session_outcome out;
  for (auto const* spec : chosen.fixed) out.plans.push_back(evaluate(p, *spec, spec->fixed(), model, spec->name));
  if (!options.optimize)
    for (auto const* spec : chosen.free)
      found.add({dsl::severity::note, spec->where,
                 fmt::format("strategy '{}' has free keys: --optimize searches it", spec->name), {}});

  if (options.optimize) {
    std::vector<strategy_spec> spaces;
    for (auto const* spec : chosen.free) spaces.push_back(*spec);
    bool const everything = spaces.empty();
    if (everything) spaces.push_back(whole_space(p));
    search_stats total;
    auto so = options.search;
    for (auto const& space : spaces) {
      auto result = search_space(p, space, model, options.run_search, so, found);
      if (!result) {
        pass_on({});
        return std::nullopt;
      }
      if (!result->refused.empty()) {
        found.error(space.where, result->refused);
        continue;
      }
      if (result->stopped)
        found.warning(space.where,
                      fmt::format("the search stopped at its time limit ({}) having looked at {} of {} candidates: "
                                  "the plans shown are the best of those",
                                  to_string(so.time_limit), grouped(result->stats.looked_at),
                                  grouped(result->stats.candidates)));
      total.candidates += result->stats.candidates;
      total.valid += result->stats.valid;
      total.elapsed += result->stats.elapsed;
      for (auto& pl : result->best) {
        pl.from_search = true;
        out.plans.push_back(std::move(pl));
      }
      for (auto& e : result->explanations) out.explanations.push_back(std::move(e));
      if (result->best.empty())
        found.add(nothing_found(p, space, everything, result->stats, options.search.explain));
    }
    out.stats = total;
  }
  pass_on(out.plans);

  out.chosen = choose(out.plans, options, chosen);
  if (options.search.explain && out.chosen)
    for (auto& line : explain_scaling(p, out.plans[*out.chosen], model)) out.explanations.push_back(std::move(line));
  return out;
}

std::optional<session_outcome> run_plan(program const& p, session_options const& options, dsl::diagnostics& diags) {
  auto chosen = select_strategies(p, options, diags);
  if (!chosen) return std::nullopt;
  return run(p, *chosen, options, diags);
}

}  // namespace dtplan::planner
