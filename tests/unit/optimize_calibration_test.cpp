#include <catch2/catch.hpp>

#include <algorithm>

#include "bench/calibration.hpp"
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
