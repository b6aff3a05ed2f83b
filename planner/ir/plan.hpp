#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/ir/ir.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/shape.hpp"

namespace dtplan::planner {

struct throughput {
  double tokens_per_s = 0;
  double samples_per_s = 0;
  flops model_flops_per_step;
  flops hardware_flops_per_step;
  flop_rate model_flops_per_gpu;     ///< achieved model FLOP/s per GPU
  flop_rate hardware_flops_per_gpu;  ///< achieved hardware FLOP/s per GPU
  double mfu = 0;  ///< model FLOP/s over all GPUs' peak, in [0, 1]
  double hfu = 0;
};

/// One finding of `--explain` as data: its kind, what it is about, its
/// figures (each named with its unit as the JSON's keys are: `candidates`,
/// `step_s`, `bytes_per_gpu`) and the sentence the text report prints.
struct explanation {
  /// "left_out", "no_structure", "illegal", "memory", "memory_micro_batch",
  /// "other_illegal", "pruned" (a search's rejected regions); "scaling",
  /// "scaling_point", "scaling_loss" (how the chosen plan scales).
  std::string kind;
  std::string subject;  ///< "tp = 8, pp = 2", "64 GPUs", "the space"
  std::vector<std::pair<std::string, double>> figures;
  std::string text;
  friend bool operator==(explanation const&, explanation const&) = default;
};

/// A strategy checked and costed: what the report and the JSON print.
struct plan {
  std::string name;   ///< "current", "search#1", ...
  bool from_search = false;  ///< found by --optimize (else a strategy written in the file)
  span where;         ///< the strategy block, when it came from the file
  strategy s;         ///< dp derived
  std::int64_t grad_accum = 0;  ///< micro-batches a step; 0 where the global batch does not split into them
  bool valid = false;
  std::vector<dsl::diagnostic> errors;    ///< why it is not valid (errors) and warnings
  memory_breakdown memory;
  /// What the strategy is on the cluster (shape.hpp): only for legal plans;
  /// it points at the program it was derived from.
  std::optional<strategy_shape> shape;
  std::optional<time_breakdown> time;     ///< only for valid plans
  throughput rate;
  std::string bottleneck;
  std::vector<std::string> advice;
};

}  // namespace dtplan::planner
