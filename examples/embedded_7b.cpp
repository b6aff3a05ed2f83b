// The 7b_2node plan written with the embedded C++ DSL instead of a .dtp
// file: builds it, checks that it is the very program lowering makes of the
// text, then checks the fixed strategy (memory per GPU), costs it with the
// analytic model and prints the figures.
// Exits 0 only when both programs agree and the strategy is valid.
#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "planner/model/check.hpp"
#include "planner/lower/embedded.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/lower/lower.hpp"

namespace {

constexpr char const* plan_text = R"(model llama2_7b {
  layers = 32; hidden = 4096; heads = 32; ffn = 11008; mlp = swiglu
  vocab = 32000; seq_len = 4096; precision = bf16; optimizer = adam
}
cluster two_nodes {
  nodes = 2; gpus_per_node = 8; gpu = H100_SXM
  intra_node = 450 GB/s; inter_node = 100 Gbit/s
}
training { global_batch = 256 }
strategy current { dp = 16; zero = 1; checkpoint = selective; micro_batch = 1 }
strategy search { tp = {1, 2, 4, 8}; pp = 1..4; zero = auto; checkpoint = auto; micro_batch = auto }
)";

}  // namespace

int main() {
  using namespace dtplan::planner::edsl;
  namespace planner = dtplan::planner;
  namespace dsl = dtplan::dsl;

  auto m = model("llama2_7b").layers(32).hidden(4096).heads(32).ffn(11008).mlp(swiglu)
               .vocab(32000).seq_len(4096).precision(bf16).optimizer(adam);
  auto c = cluster("two_nodes").nodes(2).gpus_per_node(8).gpu(catalog_gpu("H100_SXM"))
               .intra_node(450_GBps).inter_node(100_Gbitps);
  auto current = strategy("current").dp(16).zero(1).checkpoint(selective).micro_batch(1);
  auto search = strategy("search").tp({1, 2, 4, 8}).pp(range(1, 4)).zero(any).checkpoint(any)
                    .micro_batch(any);
  planner::program p = plan(m, c, training().global_batch(256), {current, search});

  dsl::source_manager sources;
  dsl::diagnostics diags;
  auto lowered = planner::load(sources, sources.add("7b_2node.dtp", plan_text), {}, diags);
  if (!lowered) {
    fmt::print(stderr, "{}", dsl::format(diags, sources));
    return 1;
  }
  if (planner::dump(p) != planner::dump(*lowered)) {
    fmt::print(stderr, "the embedded plan differs from the lowered text:\n{}\n--- lowered:\n{}",
               planner::dump(p), planner::dump(*lowered));
    return 1;
  }
  fmt::print("{}", planner::dump(p));

  auto const& spec = p.strategies.front();
  auto result = planner::check(p, spec, spec.fixed());
  for (auto const& d : result.diags) fmt::print("{}\n", d.message);
  auto const& mem = result.memory;
  fmt::print(
      "strategy '{}': dp {}, grad_accum {}, {} per GPU of {} usable (weights {}, gradients {}, "
      "optimizer {}, activations {}, buffers {})\n",
      spec.name, result.s.dp, result.grad_accum, mem.total, mem.usable, mem.weights, mem.gradients,
      mem.optimizer, mem.activations, mem.buffers);
  if (!result.valid()) {
    fmt::print(stderr, "strategy '{}' is not valid\n", spec.name);
    return 1;
  }
  if (result.s.dp != 16 || result.grad_accum != 16) return 1;

  auto evaluated = planner::evaluate(p, spec, spec.fixed(), planner::analytic_cost_model{}, spec.name);
  if (!evaluated.valid || !evaluated.time) return 1;
  fmt::print("strategy '{}': step {}, {:.0f} tokens/s, MFU {:.1f}%, bottleneck: {}\n", spec.name,
             evaluated.time->step, evaluated.rate.tokens_per_s, 100 * evaluated.rate.mfu,
             evaluated.bottleneck);
  return 0;
}
