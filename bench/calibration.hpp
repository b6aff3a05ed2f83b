#pragma once
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"

/// Published training runs as planner inputs: the loader of
/// bench/data/calibration_runs.csv (and vtrain's ground truth), used to
/// calibrate the catalog's efficiency figures and to measure the time
/// model's accuracy. It knows the CSV's columns and free-text conventions;
/// it knows nothing of the time model.
namespace dtplan::bench {

/// One published run: the model and cluster as a program, the published
/// strategy and what was measured. `skip_reason` is empty when the planner
/// can represent the run.
struct calibration_run {
  std::string id;
  std::string family;          ///< the source family it is held out with (bench/data/families.csv)
  std::string same_job;        ///< runs of one job under different strategies share it (families.csv), or ""
  char tier = 'C';             ///< 'A' (read from the source), 'B', 'C' (second-hand)
  std::string source;
  planner::program prog;       ///< model, cluster (GPU from the built-in catalog), training
  planner::strategy s;         ///< dp set, sequence_parallel as published
  std::optional<planner::seconds> step_time;   ///< measured, or derived from tokens/s
  std::optional<double> tokens_per_s_per_gpu;  ///< measured, or derived from the step time
  std::optional<planner::bytes> peak_memory;   ///< peak memory per GPU where published
  std::int64_t grad_accum = 1;
  std::string skip_reason;
  std::vector<std::string> assumptions;  ///< figures the loader had to assume (e.g. a default link)
  /// Runtime settings the source states beyond what the program holds, as
  /// training-block key = value text (the framework and its behaviours).
  std::vector<std::pair<std::string, std::string>> runtime;

  [[nodiscard]] bool representable() const { return skip_reason.empty(); }
};

/// Splits CSV text into rows of fields: quoted fields may hold commas,
/// newlines and doubled quotes (""). A trailing newline ends no extra row.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

/// Every row of calibration_runs.csv, in file order. Throws
/// std::runtime_error when the file cannot be read or lacks a column.
std::vector<calibration_run> load_calibration_runs(std::string const& path);
/// bench/data/calibration_runs.csv of this source tree.
std::vector<calibration_run> load_calibration_runs();

/// The catalog GPU a free-text GPU name maps to ("A100-SXM4-80GB (Selene)"
/// -> A100 80 GB), using the memory column when the name is ambiguous;
/// nullopt for GPUs the catalog lacks.
std::optional<planner::gpu> catalog_gpu_for(std::string_view text, std::optional<double> memory_gb);
/// A built-in catalog GPU by name ("A100_SXM_80GB", "H100_SXM", ...), cached.
std::optional<planner::gpu> catalog_gpu(std::string_view name);

/// A link bandwidth from the CSV's free text: "8x200 Gb/s HDR InfiniBand
/// per node" -> 200 GB/s, "600 GB/s bidir per GPU" -> 300 GB/s,
/// "400 Gb/s per GPU" -> 50 GB/s x gpus_per_node for a node total. `per_node`
/// says whether the result is wanted per node (inter-node) or per GPU.
std::optional<planner::bandwidth> parse_link(std::string_view text, std::int64_t gpus_per_node, bool per_node);

/// MLPerf Training runs of Megatron-Core/NeMo with Transformer Engine
/// (bench/data/mlperf/mlperf_runs.csv): GPT-3 175B, Llama 3.1 405B and 8B on
/// H100 to GB300. Runs on GPUs the catalog lacks, with NVLink domains wider
/// than a node (NVL72) or fp4 GEMMs are kept with their skip reason.
std::vector<calibration_run> load_mlperf(std::string const& path);
/// bench/data/mlperf/mlperf_runs.csv of this source tree.
std::vector<calibration_run> load_mlperf();

/// The family and same-job group of every run id in bench/data/families.csv.
struct family_row {
  std::string family;
  std::string same_job;
};
std::map<std::string, family_row, std::less<>> const& families();

/// vtrain's ground_truth_single.csv / ground_truth_multi.csv as runs: A100
/// 80 GB, 8 GPUs per node, full checkpointing, 1F1B, inter-node 800 Gbit/s
/// per node, vocabulary 51200, 16-bit (the published validation setup);
/// inside a node the A100's NVLink at what vTrain's all-reduce tables
/// measured on that machine (vtrain_comm_efficiency, vtrain_intra_latency).
/// Ids are "vtrain-single-N" / "vtrain-multi-N".
std::vector<calibration_run> load_vtrain(std::string const& path);

/// vTrain's machine inside a node, fitted to its own nccl-tests all-reduce
/// tables (VIA-Research/vTrain f8dda84 trace/a100/AR_GPU{2,4,8}_*_LUT) as a
/// ring: the bus bandwidth's share of the A100's 300 GB/s link and the
/// latency of one ring step.
inline constexpr double vtrain_comm_efficiency = 0.63;
inline constexpr planner::seconds vtrain_intra_latency{6.5e-6};

}  // namespace dtplan::bench

namespace dtplan::planner {
class cost_model;
}

namespace dtplan::bench {

/// One representable run costed by a model.
struct run_prediction {
  std::string id;
  char tier = 'C';
  planner::seconds measured;
  planner::seconds predicted;
  double error = 0;  ///< (predicted - measured) / measured
  double measured_tokens_per_gpu = 0;
  double predicted_tokens_per_gpu = 0;
};

/// Median and worst absolute relative error of step time.
struct accuracy_summary {
  std::vector<run_prediction> rows;
  double median = 0, worst = 0;      ///< all representable runs
  double median_a = 0, worst_a = 0;  ///< tier A only
  std::string worst_id;
  std::size_t within_target = 0;  ///< runs within COSTMODEL.md's 25 %
  std::size_t tier_a = 0;         ///< tier A runs costed
};

/// Costs every representable run with `model` and summarises the errors.
accuracy_summary measure_accuracy(std::vector<calibration_run> const& runs, planner::cost_model const& model);

}  // namespace dtplan::bench
