#include <algorithm>

#include "planner/model/compute.hpp"
#include "planner/model/cost_model.hpp"

namespace dtplan::planner {

// Mirrors the compute side of analytic_cost_model::step_time: step =
// compute (per micro-batch forward + backward x micro-batches, plus the
// slow-down of overlapped communication, >= 0) + recompute + exposed
// communication (>= 0) + bubble + optimizer (>= 0) + overhead, raised to
// the model-FLOPs floor. Dropping the terms that are >= 0 leaves a bound
// the step never beats; search_test checks it against step_time on every
// valid candidate of its random problems, so a change to step_time that
// breaks it cannot go unnoticed.
seconds analytic_cost_model::step_lower_bound(program const& p, strategy const& s) const {
  auto const micro = std::max<std::int64_t>(1, p.training.global_batch / std::max<std::int64_t>(1, s.dp * s.micro_batch));
  stage_compute const sc = compute_per_micro_batch(p, s);
  seconds const per_micro = sc.forward_backward() + sc.recompute();
  seconds bound = per_micro * static_cast<double>(micro) + p.cluster.device.step_overhead;
  if (s.pp > 1)
    bound += per_micro * (static_cast<double>(s.pp - 1) / static_cast<double>(std::max<std::int64_t>(1, s.virtual_stages)));
  // The step sums its terms in another order: leave room for rounding.
  return max(bound, lower_bound(p)) * (1 - 1e-9);
}

}  // namespace dtplan::planner
