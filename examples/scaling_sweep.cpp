// How Llama 3 8B scales from one 8-GPU H100 node to sixteen, with the C++
// API: for each node count, the fastest strategy --optimize finds (the whole
// space, the global batch held at 512 sequences), its step, tokens/s per
// GPU and scaling efficiency against one node (per-GPU throughput over the
// one-node figure). Exits 0 only when every count has a valid plan and every
// figure is finite, with efficiency in (0, 1.05].
#include <fmt/format.h>

#include <cmath>

#include "dsl/diagnostics.hpp"
#include "planner/lower/embedded.hpp"
#include "planner/session.hpp"

int main() {
  using namespace dtplan::planner::edsl;
  namespace planner = dtplan::planner;

  fmt::print("Llama 3 8B, global batch 512 x 8192 tokens, H100 nodes of 8 GPUs joined by 8 x 400 Gbit/s\n");
  fmt::print("{:>5} {:>5}  {:>9}  {:>17}  {:>10}  {}\n", "nodes", "GPUs", "step", "tokens/s per GPU", "efficiency",
             "best strategy");
  double one_node = 0;
  for (std::int64_t nodes : {1, 2, 4, 8, 16}) {
    auto c = cluster("h100").nodes(nodes).gpus_per_node(8).gpu(catalog_gpu("H100_SXM")).inter_node(8, 400_Gbitps);
    auto p = plan(preset_model("llama3_8b"), c, training().global_batch(512));
    planner::session_options so;
    so.optimize = true;
    so.search.top = 1;
    so.search.threads = 2;
    dtplan::dsl::diagnostics diags;
    auto run = planner::run_plan(p, so, diags);
    if (!run || !run->chosen) {
      fmt::print(stderr, "no valid plan on {} nodes\n", nodes);
      return 1;
    }
    auto const& best = run->plans[*run->chosen];
    auto const gpus = static_cast<double>(p.cluster.gpus());
    double const per_gpu = best.rate.tokens_per_s / gpus;
    if (nodes == 1) one_node = per_gpu;
    double const efficiency = per_gpu / one_node;
    if (!std::isfinite(best.time->step.value()) || !std::isfinite(per_gpu) || efficiency <= 0 || efficiency > 1.05) {
      fmt::print(stderr, "implausible figures on {} nodes\n", nodes);
      return 1;
    }
    fmt::print("{:>5} {:>5}  {:>9}  {:>17.0f}  {:>9.1f} %  {}\n", nodes, p.cluster.gpus(),
               planner::to_string(best.time->step), per_gpu, 100 * efficiency, planner::describe(best.s));
  }
  return 0;
}
