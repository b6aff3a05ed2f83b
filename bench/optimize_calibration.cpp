// For every representable published run: the predicted step time of the
// published strategy against the best plan --optimize finds on the same
// model, cluster and global batch, and the predicted speed-up. The search is
// exhaustive over a space that holds the published strategy, so the best
// must be at least as fast; the program exits 1 when it is not.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "bench/calibration.hpp"
#include "planner/model/check.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/search/search.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

// Whether the published strategy lies in search_everything()'s space (see
// search.hpp for its domains).
bool in_space(strategy const& s, search_options const& o) {
  auto const& orders = search_orders();
  return s.micro_batch <= o.max_micro_batch && s.virtual_stages <= o.max_virtual_stages &&
         std::find(orders.begin(), orders.end(), s.order) != orders.end();
}

}  // namespace

int main() {
  analytic_cost_model model;
  search_options o;
  o.threads = 2;
  o.top = 1;
  int failures = 0;
  int compared = 0;
  double seconds_total = 0;
  fmt::print("{:<44} {:>7} {:>11} {:>11} {:>8} {:>8}  best found\n", "run", "GPUs", "published", "best", "speed-up",
             "search");
  for (auto const& run : bench::load_calibration_runs()) {
    if (!run.representable()) continue;
    auto const spec = search_everything();
    auto const published = check(run.prog, spec, run.s);
    auto r = search(run.prog, spec, model, o);
    seconds_total += r.stats.elapsed.value();
    if (!published.valid()) {
      fmt::print("{:<44} {:>7} {:>11} {:>11} {:>8} {:>7.2f}s  (published strategy not valid in the model)\n", run.id,
                 run.prog.cluster.gpus(), "-", r.ranked.empty() ? std::string("-") : to_string(r.ranked.front().step), "-",
                 r.stats.elapsed.value());
      continue;
    }
    auto const base = model.step_time(run.prog, published.s).step;
    if (r.ranked.empty()) {
      fmt::print("{:<44} {:>7} {:>11} {:>11}  search found nothing\n", run.id, run.prog.cluster.gpus(), to_string(base), "-");
      ++failures;
      continue;
    }
    auto const& best = r.ranked.front();
    bool const comparable = in_space(published.s, o);
    if (comparable) {
      ++compared;
      if (best.step > base) ++failures;
    }
    fmt::print("{:<44} {:>7} {:>11} {:>11} {:>7.2f}x {:>7.2f}s  dp {} tp {} pp {} cp {} zero {} mb {} vs {}{}{}\n",
               run.id, run.prog.cluster.gpus(), to_string(base), to_string(best.step), base / best.step,
               r.stats.elapsed.value(), best.s.dp, best.s.tp, best.s.pp, best.s.cp, best.s.zero, best.s.micro_batch,
               best.s.virtual_stages, comparable ? "" : "  (published strategy outside the space)",
               comparable && best.step > base ? "  SLOWER THAN PUBLISHED" : "");
  }
  fmt::print("{} runs compared, {} where the search lost to the published strategy; {:.2f} s searching\n", compared,
             failures, seconds_total);
  return failures == 0 ? 0 : 1;
}
