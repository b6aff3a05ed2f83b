#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdlib>

#include "bench/calibration.hpp"
#include "planner/cost_model.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The time model against the published runs of bench/data/calibration_runs.csv,
// with the catalog's calibrated figures: a regression of the model or of the
// figures fails here. The bounds are the accuracy reached (see bench_accuracy).
TEST_CASE("step time within the accuracy targets over the published runs") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  auto const acc = bench::measure_accuracy(runs, model);
  CHECK(acc.rows.size() == 227);
  CHECK(acc.median <= 0.05);
  CHECK(acc.median_a <= 0.05);
  std::size_t within = 0;
  for (auto const& r : acc.rows) within += std::abs(r.error) <= 0.25;
  CHECK(within >= 226);
  CHECK(acc.worst <= 0.35);
}

TEST_CASE("breakdown of one run", "[.debug]") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  char const* id = std::getenv("RUN");
  for (auto const& r : runs) {
    if (!id || r.id != id) continue;
    auto const t = model.step_time(r.prog, r.s);
    fmt::print("{}: measured {} predicted {}: compute {} recompute {} exposed {} bubble {} optimizer {} overhead {}\n",
               r.id, *r.step_time, t.step, t.compute, t.recompute, t.exposed_comm, t.bubble, t.optimizer, t.overhead);
    for (auto const& e : t.comm)
      fmt::print("  {} {} x{} size {} count {} time {} exposed {} {}\n", name(e.op), name(e.group), e.ranks, e.size,
                 e.count, e.time, e.exposed, name(e.link));
  }
}

TEST_CASE("vtrain rows", "[.debug]") {
  analytic_cost_model const model;
  for (char const* file : {"ground_truth_single.csv", "ground_truth_multi.csv"}) {
    auto const runs = bench::load_vtrain(std::string(DTPLAN_BENCH_DATA_DIR) + "/vtrain/" + file);
    auto const acc = bench::measure_accuracy(runs, model);
    for (std::size_t i = 0; i < acc.rows.size(); i += std::getenv("ALL") ? 1 : 37) {
      auto const& r = acc.rows[i];
      auto const& run = *std::find_if(runs.begin(), runs.end(), [&](auto const& x) { return x.id == r.id; });
      fmt::print("{} h{} L{} s{} mb{} gb{} tp{} dp{} pp{}: {} vs {} ({:+.1f} %)\n", r.id, run.prog.m.hidden,
                 run.prog.m.layers, run.prog.m.seq_len, run.s.micro_batch, run.prog.t.global_batch, run.s.tp, run.s.dp,
                 run.s.pp, r.measured, r.predicted, 100 * r.error);
    }
  }
}
