// A GPU the catalog lacks, defined and derived in C++ as plans/8b_gh200_own_gpu.dtp
// does in text, with a catalog model preset; checks the tensor-parallel
// strategy and prints where its memory goes. Exits 0 only when it fits and
// the site variant kept every figure of its base but the one it overrides.
#include <fmt/format.h>

#include "planner/model/check.hpp"
#include "planner/lower/embedded.hpp"

int main() {
  using namespace dtplan::planner::edsl;
  namespace planner = dtplan::planner;

  planner::gpu gh200 = gpu("GH200_96GB")
                           .memory(96_GB)
                           .peak_flops(989_TFLOPps)
                           .peak_flops_fp8(1979_TFLOPps)
                           .peak_flops_fp32(494.5_TFLOPps)
                           .hbm_bandwidth(4_TBps)
                           .intra_node(150_GBps)
                           .matmul_efficiency(0.75)
                           .reserved(4_GiB);
  planner::gpu site = gpu("GH200_site", gh200).reserved(6_GiB);
  if (site.memory != gh200.memory || site.peak_flops != gh200.peak_flops || site.reserved != 6_GiB)
    return 1;

  auto p = plan(model("llama3_8b_8k", preset_model("llama3_8b")),
                cluster("quad_gh200").nodes(8).gpus_per_node(4).gpu(site).inter_node(4, 200_Gbitps)
                    .inter_latency(3_us),
                training().global_batch(256),
                {strategy("tp4").tp(4).dp(8).zero(1).checkpoint(selective).micro_batch(1)});

  auto const& spec = p.strategies.front();
  auto result = planner::check(p, spec, spec.fixed());
  for (auto const& d : result.diags) fmt::print("{}\n", d.message);
  fmt::print("{} on {} x {} {}: strategy '{}' needs {} of {} usable per GPU\n", p.model.name, p.cluster.nodes,
             p.cluster.gpus_per_node, p.cluster.device.name, spec.name, result.memory.total, result.memory.usable);
  for (auto const& term : result.memory.detail) fmt::print("  {:<40} {}\n", term.name, term.size);
  return result.valid() ? 0 : 1;
}
