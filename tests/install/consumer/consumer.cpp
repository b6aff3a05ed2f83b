// Plans Llama 2 7B on two 8-GPU H100 nodes through the installed library
// and prints the step: proof that headers, libraries and the package work
// from outside the tree.
#include <fmt/format.h>

#include <dsl/diagnostics.hpp>
#include <planner/lower/embedded.hpp>
#include <planner/model/evaluate.hpp>

int main() {
  using namespace dtplan::planner::edsl;
  namespace planner = dtplan::planner;
  auto p = plan(preset_model("llama2_7b"),
                cluster("two_nodes").nodes(2).gpus_per_node(8).gpu(catalog_gpu("H100_SXM")).inter_node(100_Gbitps),
                training().global_batch(256), {strategy("current").dp(16).zero(1).checkpoint(selective)});
  planner::analytic_cost_model const model;
  auto const& spec = p.strategies.front();
  auto pl = planner::evaluate(p, spec, spec.fixed(), model, spec.name);
  if (!pl.valid || !pl.time) return 1;
  fmt::print("consumer: '{}' valid, step {}\n", pl.name, planner::to_string(pl.time->step));
  return 0;
}
