#include "bench/study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "planner/ir/keys.hpp"
#include "planner/model/expected_error.hpp"
#include "planner/lower/complete.hpp"
#include "planner/lower/lower.hpp"
#include "planner/lower/lower_values.hpp"
#include "planner/model/check.hpp"
#include "planner/search/search.hpp"

namespace dtplan::bench {

using namespace planner;

namespace {

// A runtime setting's text as the key table's value: true/false, a
// choice's name, a quantity as "N UNIT" (the language's units).
std::optional<key_value> value_of(key_info const& row, std::string const& text) {
  switch (row.dom) {
    case domain::boolean:
      if (text == "true" || text == "false") return key_value{text == "true"};
      return std::nullopt;
    case domain::choice: {
      auto at = std::find(row.choices.begin(), row.choices.end(), text);
      if (at == row.choices.end()) return std::nullopt;
      return key_value{static_cast<std::int64_t>(at - row.choices.begin())};
    }
    case domain::quantity: {
      // "N UNIT" in one of the language's units of the key's dimension.
      double v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end == text.data() + text.size() || *end != ' ') return std::nullopt;
      std::string_view const unit(end + 1, static_cast<std::size_t>(text.data() + text.size() - end - 1));
      auto const& table = lowering::units();
      auto u = std::find_if(table.begin(), table.end(),
                            [&](lowering::unit_info const& x) { return x.name == unit && x.dim == row.dim; });
      if (u == table.end()) return std::nullopt;
      return key_value{v * std::pow(10.0, u->decimal_exponent) * std::pow(1024.0, u->binary_power) /
                       (u->bits ? 8.0 : 1.0)};
    }
    default: return std::nullopt;
  }
}

}  // namespace

void apply_runtime(calibration_run& run) {
  auto& t = run.prog.training;
  auto skip = [&](std::string why) { run.skip_reason += (run.skip_reason.empty() ? "" : "; ") + why; };
  for (auto const& [key, text] : run.runtime) {
    if (key == "framework") {
      auto fw = catalog_framework(text);
      if (!fw) {
        skip(fmt::format("framework '{}' not in the catalog", text));
        continue;
      }
      run.prog.framework = *fw;
      use_framework(t, *fw);
      continue;
    }
    auto const* row = find_key(block_kind::training, key);
    auto const v = row ? value_of(*row, text) : std::nullopt;
    if (!v) {
      skip(fmt::format("runtime setting {} = {} not understood", key, text));
      continue;
    }
    store(*row, t, *v);
    t.keys[key] = span{};
  }
  if (!run.prog.cluster.device.name.empty()) resolve_auto(t, run.prog.cluster.device);
}

std::vector<calibration_run> load_calibration_runs_applied() {
  auto runs = load_calibration_runs();
  for (auto& r : runs) apply_runtime(r);
  return runs;
}

std::vector<calibration_run> load_everything() {
  auto all = load_calibration_runs();
  for (char const* file : {"ground_truth_single.csv", "ground_truth_multi.csv"}) {
    auto v = load_vtrain(std::string(DTPLAN_BENCH_DATA_DIR) + "/vtrain/" + file);
    all.insert(all.end(), v.begin(), v.end());
  }
  auto m = load_mlperf();
  all.insert(all.end(), m.begin(), m.end());
  for (auto& r : all) apply_runtime(r);
  return all;
}

std::vector<calibration_run> costed(std::vector<calibration_run> const& runs) {
  std::vector<calibration_run> out;
  for (auto const& r : runs) {
    if (!r.representable() || !r.step_time) continue;
    auto const c = check(r.prog, strategy_spec{}, r.s);
    if (!c.legal) continue;
    auto copy = r;
    copy.s = c.s;
    out.push_back(std::move(copy));
  }
  return out;
}

bool check_catalog_fit(std::vector<calibration_run> const& runs, cost_model const& model) {
  auto work = runs;
  auto const weights = family_weights(work);
  auto const catalog = knobs_for(work, true);
  // The fit starts where the cross-validation's folds start (neutral
  // figures), so the catalog holds exactly what `bench_accuracy` reports.
  auto const fitted = fit(work, weights, knobs_for(work, false), model);
  bool same = true, off_bounds = true;
  for (auto const& k : fitted.figures.knobs) {
    double const was = catalog.value(k.label());
    bool const differs = std::fabs(was - k.value) > k.step / 2;
    same = same && !differs;
    off_bounds = off_bounds && !k.on_bound();
    fmt::print("  {:<34} {:>8.3f}{}{}\n", k.label(), k.value, differs ? fmt::format("  (catalog {:.3f})", was) : "",
               k.on_bound() ? "  ON A BOUND" : "");
  }
  if (!same)
    fmt::print("the catalog's figures are not the fit: write the fitted ones in planner/catalog/gpus.dtp (per "
               "generation) and frameworks.dtp (the host's, in every preset)\n");
  // Issue 13: no catalog figure may end on a bound of its range; one that
  // does has absorbed what the model does not describe.
  if (!off_bounds) fmt::print("a fitted figure is on a bound of its range: describe what it absorbs instead\n");
  return same && off_bounds;
}

namespace {

// The same strategy of the same job on the same machine, submitted twice
// (MLPerf's replicate groups: one configuration from several vendors): a
// measure of the runs' spread, not a choice the model could order.
bool replicates(calibration_run const& a, calibration_run const& b) {
  auto const& ca = a.prog.cluster;
  auto const& cb = b.prog.cluster;
  return ca.device.name == cb.device.name && ca.gpus() == cb.gpus() && ca.gpus_per_node == cb.gpus_per_node &&
         a.prog.training.global_batch == b.prog.training.global_batch &&
         what_differs(a, b) == "nothing the model reads";
}

// Every pair of runs of one job (same_job_group) the held-out predictions
// cost, measured more than 1 % apart (closer runs are a tie no model can
// order) and not replicates: f(a, b, measured more than 10 % apart, the
// model agrees, the predicted gap as a fraction of the faster prediction).
template <class F>
void for_each_pair(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs, F f) {
  std::map<std::string, double> predicted;
  for (auto const& h : cv)
    for (auto const& p : h.rows) predicted[p.id] = p.predicted.value();
  std::map<std::string, std::vector<calibration_run const*>> groups;
  for (auto const& r : runs)
    if (!r.same_job.empty() && predicted.count(r.id)) groups[r.same_job].push_back(&r);
  for (auto const& [group, members] : groups)
    for (std::size_t i = 0; i < members.size(); ++i)
      for (std::size_t j = i + 1; j < members.size(); ++j) {
        auto const& a = *members[i];
        auto const& b = *members[j];
        double const measured = a.step_time->value() - b.step_time->value();
        double const faster = std::min(a.step_time->value(), b.step_time->value());
        if (std::fabs(measured) < 0.01 * faster || replicates(a, b)) continue;
        double const pa = predicted[a.id], pb = predicted[b.id];
        f(a, b, std::fabs(measured) > 0.10 * faster, (pa - pb) * measured > 0,
          planner::predicted_gap(planner::seconds(pa), planner::seconds(pb)));
      }
}

void count(ranking& r, bool agrees) {
  ++r.pairs;
  r.agree += agrees;
}

}  // namespace

std::vector<ranking> rank_agreement(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::map<std::string, ranking> by_family;
  // The pairs a planner's choice hinges on: measured more than 10 % apart.
  ranking apart{"every pair 10 % apart", 0, 0};
  for_each_pair(cv, runs, [&](calibration_run const& a, calibration_run const&, bool far, bool agrees, double) {
    auto& r = by_family[a.family];
    r.family = a.family;
    count(r, agrees);
    if (far) count(apart, agrees);
  });
  std::vector<ranking> out;
  ranking all{"every pair", 0, 0}, production{"all but vTrain", 0, 0};
  for (auto const& [family, r] : by_family) {
    out.push_back(r);
    all.pairs += r.pairs;
    all.agree += r.agree;
    if (family.rfind("vTrain", 0) != 0) {
      production.pairs += r.pairs;
      production.agree += r.agree;
    }
  }
  out.push_back(production);
  out.push_back(all);
  out.push_back(apart);
  return out;
}

std::string what_differs(calibration_run const& a, calibration_run const& b) {
  std::vector<std::string> keys;
  // Every strategy key of the key table, in its order.
  for (auto const& k : keys_of(block_kind::strategy))
    if (auto const* access = std::get_if<strategy_access>(&k.field); access && access->get)
      if (access->get(a.s) != access->get(b.s)) keys.emplace_back(k.name);
  if (a.prog.model.prec != b.prog.model.prec) keys.emplace_back("precision");
  // The framework's behaviours the sources set beyond the strategy
  // (torch.compile, async TP, overlaps): each key either run sets apart.
  std::set<std::pair<std::string, std::string>> const ra(a.runtime.begin(), a.runtime.end()),
      rb(b.runtime.begin(), b.runtime.end());
  std::vector<std::pair<std::string, std::string>> apart;
  std::set_symmetric_difference(ra.begin(), ra.end(), rb.begin(), rb.end(), std::back_inserter(apart));
  std::set<std::string> behaviours;
  for (auto const& [key, value] : apart) behaviours.insert(key);
  keys.insert(keys.end(), behaviours.begin(), behaviours.end());
  if (keys.empty()) return "nothing the model reads";
  return fmt::format("{}", fmt::join(keys, " + "));
}

std::vector<ranking> rank_by_difference(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::map<std::string, ranking> by;
  for_each_pair(cv, runs, [&](calibration_run const& a, calibration_run const& b, bool, bool agrees, double) {
    auto const what = what_differs(a, b);
    auto& r = by[what];
    r.family = what;
    count(r, agrees);
  });
  std::vector<ranking> out;
  for (auto const& [what, r] : by) out.push_back(r);
  // Most pairs first; the name orders equal counts, so the table is the
  // same from run to run.
  std::stable_sort(out.begin(), out.end(), [](ranking const& l, ranking const& r) { return l.pairs > r.pairs; });
  return out;
}

namespace {

// rank_by_predicted_gap's bins, each with the pairs per GPU and framework.
struct gap_bin {
  ranking r;
  std::map<std::string, std::size_t> owners;  // "framework on GPU" -> pairs
};

std::vector<gap_bin> gap_bins(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::vector<gap_bin> out;
  for (std::size_t i = 0; i < predicted_gap_bounds.size(); ++i)
    out.push_back({{planner::gap_range(predicted_gap_bounds[i], i + 1 < predicted_gap_bounds.size()
                                                                    ? std::optional<double>(predicted_gap_bounds[i + 1])
                                                                    : std::nullopt),
                    0, 0},
                   {}});
  for_each_pair(cv, runs, [&](calibration_run const& a, calibration_run const&, bool, bool agrees, double gap) {
    std::size_t bin = 0;
    while (bin + 1 < predicted_gap_bounds.size() && gap >= predicted_gap_bounds[bin + 1]) ++bin;
    count(out[bin].r, agrees);
    ++out[bin].owners[fmt::format("{} on {}", a.prog.training.framework, a.prog.cluster.device.name)];
  });
  return out;
}

}  // namespace

std::vector<ranking> rank_by_predicted_gap(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::vector<ranking> out;
  for (auto const& b : gap_bins(cv, runs)) out.push_back(b.r);
  return out;
}

std::vector<pick> plausible_picks(std::vector<calibration_run> const& runs, cost_model const& model) {
  // A run whose job was also measured faster under another strategy is an
  // ablation's baseline (Korthikanti et al.'s full recomputation), not
  // the experts' pick.
  std::map<std::string, double> fastest;
  for (auto const& r : runs)
    if (!r.same_job.empty() && r.step_time) {
      auto [at, fresh] = fastest.try_emplace(r.same_job, r.step_time->value());
      if (!fresh) at->second = std::min(at->second, r.step_time->value());
    }
  std::vector<pick> out;
  for (auto const& r : runs) {
    bool const expert = r.family.rfind("MLPerf", 0) == 0 || r.family == "Korthikanti2022" ||
                        r.family == "Narayanan2021" || r.family == "torchtitan";
    if (!expert) continue;
    if (!r.same_job.empty() && r.step_time && r.step_time->value() > fastest[r.same_job]) continue;
    auto const published = model.step_time(r.prog, r.s).step;
    search_options o;
    o.top = 1;
    o.threads = 1;
    o.max_candidates = 200'000'000;
    auto const found = search(r.prog, whole_space(r.prog), model, o);
    if (found.best.empty() || !found.best.front().time) continue;
    auto const& best = found.best.front();
    pick p;
    p.id = r.id;
    p.published = published;
    p.best = best.time->step;
    p.claimed = published / p.best;
    p.strategy = describe(best.s);
    out.push_back(std::move(p));
  }
  return out;
}

std::string expected_error_source(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::map<std::string, std::pair<std::string, std::string>> owner;  // id -> gpu, framework
  std::map<std::string, std::string> family_of;
  std::map<std::string, std::string> generation_of;  // gpu -> its generation
  for (auto const& r : runs) {
    owner[r.id] = {r.prog.cluster.device.name, r.prog.training.framework};
    family_of[r.id] = r.family;
    generation_of[r.prog.cluster.device.name] = planner::name(r.prog.cluster.device.generation);
  }
  struct cell {
    std::vector<double> errors;
    std::set<std::string> families;
  };
  std::map<std::pair<std::string, std::string>, cell> cells;
  for (auto const& h : cv)
    for (auto const& p : h.rows) {
      auto& c = cells[owner[p.id]];
      c.errors.push_back(std::fabs(p.error));
      c.families.insert(family_of[p.id]);
    }
  std::string out =
      "// Generated by bench_accuracy --errors from the leave-one-family-out cross-validation of the\n"
      "// published runs in bench/data: do not edit (accuracy_test checks it).\n"
      "#include \"planner/model/expected_error.hpp\"\n\nnamespace dtplan::planner {\n\n"
      "std::vector<expected_error> const& expected_errors() {\n  static std::vector<expected_error> const table{\n";
  for (auto const& [key, c] : cells)
    out += fmt::format("      {{\"{}\", gpu_generation::{}, \"{}\", {}, {}, {:.4f}, {:.4f}}},\n", key.first,
                       generation_of[key.first], key.second, c.errors.size(), c.families.size(), median_of(c.errors),
                       quantile_of(c.errors, 0.9));
  out += "  };\n  return table;\n}\n\n";
  // How often pairs predicted that far apart were ordered as measured.
  out += "std::vector<order_agreement> const& order_agreements() {\n  static std::vector<order_agreement> const table{\n";
  auto const bins = gap_bins(cv, runs);
  for (std::size_t i = 0; i < bins.size(); ++i) {
    auto const& b = bins[i];
    std::string mostly;
    for (auto const& [owner, n] : b.owners)
      if (2 * n > b.r.pairs) mostly = owner;
    out += fmt::format("      {{{:g}, {}, {}, \"{}\"}},\n", predicted_gap_bounds[i], b.r.pairs, b.r.agree, mostly);
  }
  out += "  };\n  return table;\n}\n\n}  // namespace dtplan::planner\n";
  return out;
}

}  // namespace dtplan::bench
