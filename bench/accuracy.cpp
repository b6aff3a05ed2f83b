// How well the time model predicts published training runs, out of sample
// first. Every run of bench/data (calibration_runs.csv: MosaicML, Megatron's
// papers, BigScience, torchtitan; vTrain's Megatron-DeepSpeed runs; 71 MLPerf
// Training runs of Megatron-Core/NeMo) is costed with what its framework
// does (training.framework and the behaviours its source states), the GPU's
// measured figures and the few fitted ones (bench/fit.hpp).
//
//   bench_accuracy            leave-one-family-out cross-validation (the
//                             headline), in-sample errors, fitted figures,
//                             ranking agreement, the search's claimed
//                             speed-up on expert-tuned runs, skipped runs
//   bench_accuracy --fit      fit on every run; exit 1 when the catalog's
//                             figures are not the fit (ctest catalog_is_the_fit)
//   bench_accuracy --errors   the expected-error table the report quotes
//                             (planner/model/expected_error.cpp)
//   bench_accuracy --dump     one CSV line per run: measured, predicted, terms
//                             (--dump-fitted: with the figures fitted on every
//                             run; --dump-fold F: family F with figures fitted
//                             without it)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/calibration.hpp"
#include "bench/fit.hpp"
#include "bench/study.hpp"
#include "planner/model/cost_model.hpp"

using namespace dtplan;
using namespace dtplan::planner;
using namespace dtplan::bench;

namespace {

std::string pct(double x) { return fmt::format("{:.1f} %", 100 * x); }

void print_cross_validation(std::vector<held_out> const& cv, std::vector<calibration_run> const& runs) {
  std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> seen;  // family -> gpus, frameworks
  for (auto const& r : runs) {
    seen[r.family].first.insert(r.prog.cluster.device.name);
    seen[r.family].second.insert(r.prog.training.framework);
  }
  fmt::print("Out of sample: each family predicted by figures fitted without it\n");
  fmt::print("{:<22} {:>5}  {:<28} {:<14} {:>8} {:>8} {:>8}\n", "family", "runs", "GPU", "framework", "median",
             "p90", "worst");
  std::vector<double> all, all_but_vtrain;
  for (auto const& h : cv) {
    auto const& [gpus, fws] = seen[h.family];
    fmt::print("{:<22} {:>5}  {:<28} {:<14} {:>8} {:>8} {:>8}\n", h.family, h.rows.size(),
               fmt::format("{}", fmt::join(gpus, ", ")), fmt::format("{}", fmt::join(fws, ", ")), pct(h.median),
               pct(h.p90), pct(h.worst));
    for (auto const& p : h.rows) {
      all.push_back(std::fabs(p.error));
      if (h.family.rfind("vTrain", 0) != 0) all_but_vtrain.push_back(std::fabs(p.error));
    }
  }
  auto within = [](std::vector<double> const& v, double bound) {
    return std::count_if(v.begin(), v.end(), [&](double e) { return e <= bound; });
  };
  auto family_medians = [&] {
    std::vector<double> m;
    for (auto const& h : cv) m.push_back(h.median);
    return m;
  }();
  fmt::print("\nevery held-out run ({}): median {}, p90 {}, {} of them ({}) within 20 %\n", all.size(),
             pct(median_of(all)), pct(quantile_of(all, 0.9)), within(all, 0.20),
             pct(static_cast<double>(within(all, 0.20)) / static_cast<double>(std::max<std::size_t>(1, all.size()))));
  fmt::print("held-out runs but vTrain's ({}): median {}, p90 {}\n", all_but_vtrain.size(),
             pct(median_of(all_but_vtrain)), pct(quantile_of(all_but_vtrain, 0.9)));
  fmt::print("median of the family medians {}, worst family median {}\n", pct(median_of(family_medians)),
             pct(*std::max_element(family_medians.begin(), family_medians.end())));
}

void print_figures(figure_set const& f) {
  fmt::print("\nfitted figures (on every run):\n");
  for (auto const& k : f.knobs)
    fmt::print("  {:<34} {:>8.3f}{}\n", k.label(), k.value,
               k.on_bound()  ? "   ON A BOUND of its range"
               : k.unbound   ? "   (no run binds it: kept at its neutral start)"
                             : "");
}

// Each knob's value in every fold: a figure that swings with the family
// left out, or sits on a bound, describes something the model lacks.
void print_fold_figures(std::vector<held_out> const& cv) {
  if (cv.empty()) return;
  fmt::print("\nfitted figures by family left out:\n  {:<34}", "");
  for (auto const& h : cv) fmt::print(" {:>9.9}", h.family);
  fmt::print("\n");
  std::set<std::string> labels;
  for (auto const& h : cv)
    for (auto const& k : h.fitted.knobs) labels.insert(k.label());
  for (auto const& label : labels) {
    fmt::print("  {:<34}", label);
    for (auto const& h : cv) {
      auto const at = std::find_if(h.fitted.knobs.begin(), h.fitted.knobs.end(),
                                   [&](knob const& k) { return k.label() == label; });
      if (at == h.fitted.knobs.end()) fmt::print(" {:>9}", "-");
      else fmt::print(" {:>8.3f}{}", at->value, at->on_bound() ? "*" : " ");
    }
    fmt::print("\n");
  }
  fmt::print("  (* on a bound of its range; - no run left binds it)\n");
}

void print_in_sample(std::vector<calibration_run> const& runs, cost_model const& model) {
  std::map<std::string, std::vector<double>> by_family;
  for (auto const& p : measure_accuracy(runs, model).rows) {
    for (auto const& r : runs)
      if (r.id == p.id) by_family[r.family].push_back(std::fabs(p.error));
  }
  fmt::print("\nIn sample (fitted on every run, these included):\n");
  std::vector<double> all;
  for (auto const& [family, errors] : by_family) {
    fmt::print("  {:<22} {:>5} runs  median {:>7}  worst {:>7}\n", family, errors.size(), pct(median_of(errors)),
               pct(*std::max_element(errors.begin(), errors.end())));
    all.insert(all.end(), errors.begin(), errors.end());
  }
  fmt::print("  every run ({}): median {}, worst {}\n", all.size(), pct(median_of(all)),
             pct(all.empty() ? 0 : *std::max_element(all.begin(), all.end())));
}

void print_ranking(std::vector<ranking> const& rk, std::vector<ranking> const& by_difference,
                   std::vector<ranking> const& by_gap) {
  fmt::print("\nRanking: pairs of runs of the same job under different strategies, ordered as measured\n");
  for (auto const& r : rk)
    fmt::print("  {:<22} {:>6} pairs  {:>7} agree\n", r.family, r.pairs, pct(r.agreement()));
  fmt::print("  by what the two runs differ in:\n");
  for (auto const& r : by_difference)
    fmt::print("    {:<40} {:>6} pairs  {:>7} agree\n", r.family, r.pairs, pct(r.agreement()));
  fmt::print("  by how far apart the model predicted them:\n");
  for (auto const& r : by_gap)
    fmt::print("    {:<40} {:>6} pairs  {:>7} agree\n", r.family, r.pairs, pct(r.agreement()));
}

void print_picks(std::vector<pick> const& picks) {
  if (picks.empty()) return;
  fmt::print("\nPlausible picks: --optimize on expert-tuned runs (same model, cluster, batch, framework)\n");
  std::vector<double> claims;
  for (auto const& p : picks) {
    fmt::print("  {:<40} published {:>9}  best {:>9}  claimed {:.2f}x  ({})\n", p.id, to_string(p.published),
               to_string(p.best), p.claimed, p.strategy);
    claims.push_back(p.claimed);
  }
  fmt::print("  median claimed speed-up {:.2f}x, largest {:.2f}x over {} runs\n", median_of(claims),
             *std::max_element(claims.begin(), claims.end()), claims.size());
}

void print_skipped(std::vector<calibration_run> const& runs) {
  std::size_t n = 0;
  for (auto const& r : runs) n += !r.representable();
  fmt::print("\nskipped {} runs:\n", n);
  for (auto const& r : runs)
    if (!r.representable()) fmt::print("  {:<48} {}\n", r.id, r.skip_reason);
}

void dump(std::vector<calibration_run> const& runs, cost_model const& model) {
  // The strategy beside the terms: a residual is read against what the run
  // chose (tp, pp, micro-batch, ...), not joined back to its source table.
  fmt::print("id,family,gpu,framework,gpus,tp,pp,vpp,dp,cp,micro_batch,grad_accum,checkpoint,measured_s,predicted_s,"
             "compute_s,recompute_s,exposed_comm_s,bubble_s,optimizer_s,overhead_s,slowdown_s,host_wait_s,error\n");
  for (auto const& r : runs) {
    auto const t = model.step_time(r.prog, r.s);
    auto const& s = r.s;
    fmt::print("{},{},{},{},{},{},{},{},{},{},{},{},{},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},{:.5f},"
               "{:.4f}\n",
               r.id, r.family, r.prog.cluster.device.name, r.prog.training.framework, r.prog.cluster.gpus(), s.tp, s.pp,
               s.virtual_stages, s.dp, s.cp, s.micro_batch, r.grad_accum, name(s.checkpoint), r.step_time->value(),
               t.step.value(), t.compute.value(), t.recompute.value(), t.exposed_comm.value(), t.bubble.value(),
               t.optimizer.value(), t.overhead.value(), t.slowdown.value(), t.host_wait.value(),
               (t.step - *r.step_time) / *r.step_time);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool do_fit = false, do_errors = false, do_dump = false, quick = false, fitted_dump = false;
  std::string fold;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fit") == 0) do_fit = true;
    else if (std::strcmp(argv[i], "--errors") == 0) do_errors = true;
    else if (std::strcmp(argv[i], "--dump") == 0) do_dump = true;
    else if (std::strcmp(argv[i], "--dump-fitted") == 0) do_dump = fitted_dump = true;
    else if (std::strcmp(argv[i], "--dump-fold") == 0 && i + 1 < argc) do_dump = true, fold = argv[++i];
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      fmt::print(stderr, "usage: bench_accuracy [--fit | --errors | --dump | --dump-fitted | --dump-fold FAMILY] [--quick]\n");
      return 2;
    }
  }
  analytic_cost_model const model;
  auto const all = load_everything();
  auto runs = costed(all);
  if (do_dump) {
    if (fitted_dump) {
      auto const f = fit(runs, family_weights(runs), knobs_for(runs, false), model);
      for (auto& r : runs) f.figures.apply(r);
    }
    if (!fold.empty()) {  // the family `fold` costed with figures fitted without it
      // FAMILY may be a comma-separated list: all of them are held out.
      auto const out = [&](std::string const& family) { return ("," + fold + ",").find("," + family + ",") != std::string::npos; };
      std::vector<calibration_run> rest, held;
      for (auto const& r : runs) (out(r.family) ? held : rest).push_back(r);
      auto const f = fit(rest, family_weights(rest), knobs_for(runs, false), model);
      for (auto const& k : f.figures.knobs) fmt::print(stderr, "{:<34} {:8.3f}\n", k.label(), k.value);
      for (auto& r : held) f.figures.apply(r);
      runs = held;
    }
    dump(runs, model);
    return 0;
  }
  if (do_fit) return check_catalog_fit(runs, model) ? 0 : 1;
  auto const cv = cross_validate(runs, model);
  if (do_errors) {
    fmt::print("{}", expected_error_source(cv, runs));
    return 0;
  }
  print_cross_validation(cv, runs);
  print_fold_figures(cv);
  auto in_sample = runs;
  auto const fitted = fit(in_sample, family_weights(in_sample), knobs_for(in_sample, false), model);
  print_in_sample(in_sample, model);
  print_figures(fitted.figures);
  print_ranking(rank_agreement(cv, runs), rank_by_difference(cv, runs), rank_by_predicted_gap(cv, runs));
  if (!quick) print_picks(plausible_picks(in_sample, model));
  print_skipped(all);
  return 0;
}
