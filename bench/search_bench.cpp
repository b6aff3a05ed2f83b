// Times --optimize on problems of growing size, for 1 and 2 threads: the
// 7b_2node plan (its `search` strategy and everything free), Llama 3 70B on
// 64 nodes, a 405B model on 16,384 H100s, and Korthikanti's 530B GPT on 280
// nodes (2,240 GPUs = 2^6 x 5 x 7: group sizes that do not tile the nodes),
// everything free. `bench_search_bench 405b` runs the problems whose label
// contains "405b" only.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "planner/model/cost_model.hpp"
#include "planner/lower/embedded.hpp"
#include "planner/lower/lower.hpp"
#include "planner/search/search.hpp"

using namespace dtplan::planner;
using namespace dtplan::planner::literals;

namespace {

model decoder(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
              std::int64_t ffn, std::int64_t vocab, std::int64_t seq_len) {
  model m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.mlp = mlp_kind::swiglu;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

// The built-in catalog's H100_SXM, so the bench costs what dtplan costs.
gpu h100() {
  auto g = catalog_gpu("H100_SXM");
  if (!g) {
    std::fprintf(stderr, "bench_search_bench: H100_SXM is not in the catalog\n");
    std::exit(1);
  }
  return *g;
}

program problem(model m, std::int64_t nodes, bandwidth inter, std::int64_t global_batch) {
  program p;
  p.file = m.name + ".dtp";
  p.model = std::move(m);
  p.cluster.name = "bench";
  p.cluster.nodes = nodes;
  p.cluster.gpus_per_node = 8;
  p.cluster.device = h100();
  use_gpu_defaults(p.cluster);
  p.cluster.inter_node = inter;
  p.training.global_batch = global_batch;
  return p;
}

// The DSL.md example: tp {1, 2, 4, 8}, pp 1..4, zero, checkpoint and
// micro_batch auto.
strategy_spec dsl_search() {
  strategy_spec s;
  s.name = "search";
  s.tp.f = key_choice<std::int64_t>::form::set;
  s.tp.values = {1, 2, 4, 8};
  s.pp.f = key_choice<std::int64_t>::form::range;
  s.pp.low = 1;
  s.pp.high = 4;
  s.zero.f = key_choice<std::int64_t>::form::any;
  s.checkpoint.f = key_choice<checkpoint_mode>::form::any;
  s.micro_batch.f = key_choice<std::int64_t>::form::any;
  return s;
}

// Problems whose label contains the first argument, if one is given (to
// profile one of them).
char const* only = nullptr;

bool wanted(std::string const& label) { return !only || label.find(only) != std::string::npos; }

void run(std::string const& label, program const& p, strategy_spec const& spec, cost_model const& model) {
  if (!wanted(label)) return;
  for (unsigned threads : {1u, 2u}) {
    search_options o;
    o.threads = threads;
    o.top = 5;
    auto const cpu_start = std::clock();
    auto r = search(p, spec, model, o);
    double const cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    double const secs = r.stats.elapsed.value();
    std::string best = r.best.empty() || !r.best.front().time
                           ? "none"
                           : fmt::format("{} (dp {} tp {} pp {} cp {} zero {} mb {})", r.best.front().time->step,
                                         r.best.front().s.dp, r.best.front().s.tp, r.best.front().s.pp,
                                         r.best.front().s.cp, r.best.front().s.zero, r.best.front().s.micro_batch);
    // Wall time, and CPU time over all threads (the wall time of a shared
    // machine says little).
    fmt::print("{:<30} threads {}  candidates {:>9}  valid {:>7}  {:>10.0f} candidates/s  {:>7.3f} s  cpu {:>7.3f} s  best {}\n",
               label, threads, r.stats.candidates, r.stats.valid, double(r.stats.candidates) / secs, secs, cpu, best);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) only = argv[1];
  analytic_cost_model model;
  auto llama2_7b = decoder("llama2_7b", 32, 4096, 32, 32, 11008, 32000, 4096);
  auto llama3_70b = decoder("llama3_70b", 80, 8192, 64, 8, 28672, 128256, 8192);
  auto llama3_405b = decoder("llama3_405b", 126, 16384, 128, 8, 53248, 128256, 8192);

  auto seven = problem(llama2_7b, 2, 100_Gbitps, 256);
  run("7b_2node, DSL.md search", seven, dsl_search(), model);
  run("7b_2node, everything free", seven, search_everything(), model);
  run("llama3_70b 64 x 8 H100, free", problem(llama3_70b, 64, 3200_Gbitps, 1024), search_everything(), model);
  run("405b 2048 x 8 H100, free", problem(llama3_405b, 2048, 3200_Gbitps, 2048), search_everything(), model);
  auto gpt_530b = decoder("gpt_530b", 105, 20480, 128, 128, 81920, 51200, 2048);
  gpt_530b.mlp = mlp_kind::gelu;
  gpt_530b.tied_embeddings = true;
  run("530b 280 x 8 H100, free", problem(gpt_530b, 280, 1600_Gbitps, 2240), search_everything(), model);
  // A mixture under Megatron-Core with DeepEP (plans/deepseek_v3_megatron.dtp,
  // its search set free): the expert grid's checks on every candidate.
  // (Built only when run: lowering it would count in another problem's
  // profile.)
  if (std::string const label = "deepseek_v3 128 x 8 H100, free"; wanted(label)) {
    namespace e = dtplan::planner::edsl;
    auto const v3 = e::model("v3", e::preset_model("deepseek_v3")).with("mtp_layers", 1);
    auto const dgx = e::cluster("dgx_h100_x128").nodes(128).gpus_per_node(8).gpu(e::catalog_gpu("H100_SXM"))
                         .with("inter_node", 3200_Gbitps);
    auto const t = e::training()
                       .framework("megatron")
                       .global_batch(4096)
                       .with("grad_precision", "bf16")
                       .with("num_layers_in_first_pipeline_stage", 3)
                       .with("num_layers_in_last_pipeline_stage", 2)
                       .with("moe_token_dispatcher", "flex")
                       .with("shared_expert_overlap", false);
    run(label, e::plan(v3, dgx, t), search_everything(), model);
  }
  return 0;
}
