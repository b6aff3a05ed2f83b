#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench/calibration.hpp"
#include "planner/model/cost_model.hpp"

/// Fitting the few figures the time model does not measure, and measuring
/// how well it predicts runs it was not fitted to. The GPU's physics
/// (GEMM, NVLink and network figures, attention kernels, NCCL's constants)
/// is measured and stays fixed; what is fitted is a GPU generation's
/// memory-bound efficiency, kernel latency and overlap slow-down (one figure
/// for H100 and H200 alike), and a framework's host time per operator and
/// fixed cost per step. Never a per-run factor.
namespace dtplan::bench {

/// One figure the fit moves: of a GPU kind or of a framework.
struct knob {
  enum class scope { gpu, framework };
  scope where = scope::gpu;
  std::string owner;  ///< the GPU generation's name ("hopper"), or the framework's
  std::string name;   ///< "hbm_efficiency", "overlap_slowdown", "kernel_latency", "dispatch_latency", "step_overhead"
  double low = 0, high = 1, step = 0.01;
  double value = 0;  ///< in the unit the name says (efficiencies as fractions, latencies in us, overhead in s)
  [[nodiscard]] std::string label() const { return owner + "." + name; }
  /// No value of its range changes the fit's objective by the minimum gain:
  /// the runs do not bind it and it keeps its start.
  bool unbound = false;
  [[nodiscard]] bool on_bound() const;
};

/// The figures a fit moves, with their values.
struct figure_set {
  std::vector<knob> knobs;
  /// Sets the figures of `r`'s GPU kind and framework.
  void apply(calibration_run& r) const;
  [[nodiscard]] double value(std::string const& label) const;
};

/// The knobs of every GPU kind and framework `runs` use, at neutral values
/// (a fit without prior: hbm 0.8, overlap slow-down 0.1, kernel latency
/// 5 us, no host time, 20 ms a step), or at the figures the runs already
/// carry (the catalog's) with `from_runs`.
figure_set knobs_for(std::vector<calibration_run> const& runs, bool from_runs);

/// Every family weighs the same; within one, tier A twice the rest.
std::vector<double> family_weights(std::vector<calibration_run> const& runs);

/// A family that only tests the model: no fit sees it (its weight is 0), so
/// its in-sample figure is its out-of-sample one. MLPerf-NVL72 (GB200 and
/// GB300 NVL72 racks, the one family that measures an NVLink domain wider
/// than a node): fitted with the rest, it pulls Blackwell's memory-bound
/// share onto its floor (0.40) to stand in for a fixed part per step its
/// 405B runs measure and the model lacks (docs/research/residuals.md s.15).
/// Narayanan2021 (Megatron-LM's Table 1 of April 2021): fitted with the
/// rest, it moves Ampere's kernel latency onto its 20 us bound in six folds
/// to stand in for the 9-10 % its software ran slower than Korthikanti et
/// al.'s of 2022 on the same work a pipeline (s.26).
bool validation_only(std::string_view family);

struct fit_result {
  figure_set figures;
  double objective = 0;  ///< weighted mean |log(predicted / measured)|
};

/// Coordinate descent over each knob's grid until no knob moves.
fit_result fit(std::vector<calibration_run>& runs, std::vector<double> const& weights, figure_set start,
               planner::cost_model const& model);

/// The error of every run of one family when the figures were fitted
/// without that family.
struct held_out {
  std::string family;
  std::vector<run_prediction> rows;
  double median = 0, p90 = 0, worst = 0;
  figure_set fitted;  ///< what the other families gave
};

/// Leave one family out, in turn, for every family of `runs`.
std::vector<held_out> cross_validate(std::vector<calibration_run> const& runs, planner::cost_model const& model);

/// |error| statistics.
double median_of(std::vector<double> v);
double quantile_of(std::vector<double> v, double q);

}  // namespace dtplan::bench
