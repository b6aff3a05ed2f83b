#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "bench/calibration.hpp"
#include "planner/cost_model.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The time model against the published runs of bench/data/calibration_runs.csv,
// with the catalog's calibrated figures: a regression of the model or of the
// figures fails here. The bounds are the accuracy reached (bench_accuracy:
// 227 runs, median 2.9 %, worst 26.0 % for MPT-30B at 8k sequence on
// A100 80GB, the one run beyond 25 %), with a little room.
TEST_CASE("step time within the accuracy targets over the published runs") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  auto const acc = bench::measure_accuracy(runs, model);
  CHECK(acc.rows.size() == 227);
  CHECK(acc.median <= 0.035);
  CHECK(acc.median_a <= 0.035);
  CHECK(acc.within_target >= 226);
  CHECK(acc.worst <= 0.28);
}

// BLOOM-176B at its batch-size ramp-up (one micro-batch per pipeline, 12
// stages) is dominated by what follows the backward: DeepSpeed's
// BF16_Optimizer all-reduces fp32 gradients after the last micro-batch
// (training.grad_precision = fp32, grad_reduce = all_reduce,
// overlap_grad_sync = false) and the tied embedding's two copies are summed
// between the first and last stage. Without those it was predicted 37.8 %
// too fast; with them 17.9 %.
TEST_CASE("BLOOM-176B's gradient synchronisation after the backward") {
  auto const runs = bench::load_calibration_runs();
  analytic_cost_model const model;
  auto const acc = bench::measure_accuracy(runs, model);
  bool seen = false;
  for (auto const& r : acc.rows) {
    if (r.id != "BLOOM-176B-gbs16" && r.id != "BLOOM-176B-gbs2048") continue;
    seen = true;
    INFO(r.id << " error " << r.error);
    CHECK(std::abs(r.error) <= 0.20);
  }
  CHECK(seen);
}

// vTrain's measured Megatron runs (A100, 8 GPUs per node, full
// checkpointing, no gradient bucketing: the all-reduce follows the
// backward): bench_accuracy --vtrain reaches a median of 8.4 % (worst 35.5 %)
// over the 1,440 single-node runs and 9.3 % (worst 39.6 %) over the 109
// multi-node ones.
TEST_CASE("step time within the accuracy targets over vTrain's runs") {
  analytic_cost_model const model;
  auto const single = bench::measure_accuracy(
      bench::load_vtrain(std::string(DTPLAN_SOURCE_DIR) + "/bench/data/vtrain/ground_truth_single.csv"), model);
  CHECK(single.rows.size() == 1440);
  CHECK(single.median <= 0.087);
  CHECK(single.worst <= 0.37);
  auto const multi = bench::measure_accuracy(
      bench::load_vtrain(std::string(DTPLAN_SOURCE_DIR) + "/bench/data/vtrain/ground_truth_multi.csv"), model);
  CHECK(multi.rows.size() == 109);
  CHECK(multi.median <= 0.095);
  CHECK(multi.worst <= 0.41);
}
