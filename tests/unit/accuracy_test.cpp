#include <catch2/catch.hpp>

#include <cstdlib>

#include "bench/calibration.hpp"
#include "planner/cost_model.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The time model against the published runs of bench/data/calibration_runs.csv,
// with the catalog's calibrated figures: a regression of the model or of the
// figures fails here. The bounds are the accuracy reached (bench_accuracy:
// 227 runs, median 3.1 %, worst 28.8 % for BLOOM-176B-gbs16, the only one
// beyond 25 %), with a little room.
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
