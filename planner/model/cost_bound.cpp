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
seconds analytic_cost_model::step_lower_bound(strategy_shape const& sh) const {
  auto const& s = sh.s;
  stage_compute const sc = compute_per_micro_batch(sh);
  seconds const per_micro = sc.forward_backward() + sc.recompute();
  seconds bound = per_micro * static_cast<double>(sh.grad_accum) + step_overhead(*sh.prog);
  // The bubble's slots hold a stage's layers, not the head.
  if (s.pp > 1)
    bound += (per_micro - sc.head()) *
             (static_cast<double>(s.pp - 1) / static_cast<double>(s.virtual_stages));
  // The step sums its terms in another order: leave room for rounding.
  // lower_bound(*sh.prog), from the model FLOPs the shape already holds.
  return max(bound, at_peak(*sh.prog, sh.facts.model_flops)) * (1 - 1e-9);
}

time_breakdown cost_model::step_time(program const& p, strategy const& s) const { return step_time(shape_of(p, s)); }

}  // namespace dtplan::planner
