#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/calibration.hpp"
#include "bench/fit.hpp"
#include "bench/study.hpp"
#include "planner/model/check.hpp"
#include "planner/search/search.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The search is exhaustive over a space that holds each published strategy
// (when its micro-batch, interleaving and order are inside the domains), so
// on every published run of up to 16 GPUs its best plan must be predicted at
// least as fast as the published one (bench_optimize_calibration runs all).
TEST_CASE("the search beats or matches every published strategy on runs of up to 16 GPUs") {
  analytic_cost_model model;
  search_options o;
  o.threads = 2;
  o.top = 1;
  auto const& orders = search_orders();
  int compared = 0;
  for (auto const& run : bench::load_calibration_runs()) {
    if (!run.representable() || run.prog.cluster.gpus() > 16) continue;
    auto const spec = search_everything();
    auto const published = check(run.prog, spec, run.s);
    if (!published.valid() || published.s.micro_batch > o.max_micro_batch ||
        published.s.virtual_stages > o.max_virtual_stages ||
        std::find(orders.begin(), orders.end(), published.s.order) == orders.end())
      continue;
    INFO(run.id);
    auto const base = model.step_time(run.prog, published.s).step;
    auto r = search(run.prog, spec, model, o);
    REQUIRE_FALSE(r.ranked.empty());
    CHECK(r.ranked.front().step <= base);
    ++compared;
  }
  CHECK(compared >= 50);
}

// Issue 13's plausible picks: on the runs whose strategies experts tuned
// (MLPerf's submissions, Narayanan et al.'s Table 1, Korthikanti et al.'s
// selective-recomputation runs, torchtitan's tables), --optimize with the
// same model, cluster, batch and framework should claim little over the
// published strategy; the bound is a median of 1.10x. The bounds are
// bench_accuracy's figures with a little room (median 1.04x; the largest,
// torchtitan's long-context 405B at its fixed TP 8 x PP 8 with one
// micro-batch a stage, 1.86x; Table 1's, which recomputes every layer at
// every size, 1.27-1.58x).
TEST_CASE("plausible picks: --optimize claims a median of at most 1.05x over expert-tuned strategies") {
  auto const picks = bench::plausible_picks(bench::costed(bench::load_everything()), analytic_cost_model{});
  CHECK(picks.size() == 87);
  std::vector<double> claims;
  for (auto const& p : picks) {
    INFO(p.id << ": published " << p.published.value() << " s, best " << p.best.value() << " s (" << p.strategy << ")");
    CHECK(std::isfinite(p.claimed));
    claims.push_back(p.claimed);
  }
  REQUIRE_FALSE(claims.empty());
  CHECK(bench::median_of(claims) <= 1.05);
  CHECK(*std::max_element(claims.begin(), claims.end()) <= 2.0);
}
