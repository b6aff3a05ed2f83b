#pragma once
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

// In-memory programs and plans for the code generators' tests, with
// plausible hand-filled memory, time and communication figures (the
// generators print them; they do not judge them).
namespace dtplan::codegen::fixtures {

struct fixture {
  std::string name;
  planner::program program;
  planner::plan plan;
};

inline planner::model llama(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                            std::int64_t kv_heads, std::int64_t ffn) {
  planner::model m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.mlp = planner::mlp_kind::swiglu;
  m.vocab = 32000;
  m.seq_len = 4096;
  return m;
}

inline planner::cluster h100(std::string name, std::int64_t nodes) {
  using namespace planner::literals;
  planner::cluster c;
  c.name = std::move(name);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.device.name = "H100_SXM";
  c.device.memory = 80_GiB;
  c.device.peak_flops = 989_TFLOPps;
  c.device.peak_flops_fp8 = 1979_TFLOPps;
  c.device.peak_flops_fp32 = 495_TFLOPps;
  c.device.hbm_bandwidth = 3350_GBps;
  c.device.sm_count = 132;
  c.intra_node = 450_GBps;
  c.inter_node = 100_Gbitps;
  return c;
}

inline planner::comm_entry comm(planner::collective op, planner::comm_group g, std::int64_t ranks, double bytes,
                                std::int64_t count, double time, double exposed, planner::link_kind link,
                                planner::comm_phase phase) {
  planner::comm_entry e;
  e.phase = phase;
  e.op = op;
  e.group = g;
  e.ranks = ranks;
  e.size = planner::bytes(bytes);
  e.count = count;
  e.time = planner::seconds(time);
  e.exposed = planner::seconds(exposed);
  e.link = link;
  return e;
}

inline void memory(planner::plan& pl, double weights, double grads, double opt, double act, double buf) {
  using namespace planner::literals;
  auto& m = pl.memory;
  m.capacity = 80_GiB;
  m.usable = 74_GiB;
  m.weights = planner::bytes(weights);
  m.gradients = planner::bytes(grads);
  m.optimizer = planner::bytes(opt);
  m.activations = planner::bytes(act);
  m.buffers = planner::bytes(buf);
  m.total = m.weights + m.gradients + m.optimizer + m.activations + m.buffers;
}

inline planner::time_breakdown times(double step, double compute) {
  planner::time_breakdown t;
  t.step = planner::seconds(step);
  t.compute = planner::seconds(compute);
  return t;
}

using planner::collective;
using planner::comm_group;
using planner::link_kind;
constexpr auto layer = planner::comm_phase::layer;
constexpr auto layer_backward = planner::comm_phase::layer_backward;
constexpr auto micro_batch = planner::comm_phase::micro_batch;
constexpr auto grad_sync = planner::comm_phase::grad_sync;
constexpr auto after_step = planner::comm_phase::after_step;

/// DSL.md's example: 7B on two 8-GPU nodes, dp 16, ZeRO-1.
inline fixture dp16_zero1() {
  fixture f{"7b_2node", {}, {}};
  f.program.file = "plans/7b_2node.dtp";
  f.program.model = llama("llama2_7b", 32, 4096, 32, 32, 11008);
  f.program.cluster = h100("two_nodes", 2);
  f.plan.name = "current";
  f.plan.s.dp = 16;
  f.plan.s.zero = 1;
  f.plan.s.checkpoint = planner::checkpoint_mode::selective;
  f.plan.grad_accum = 16;
  f.program.training.global_batch = 256;
  f.plan.valid = true;
  memory(f.plan, 13.48e9, 13.48e9, 5.06e9, 9.1e9, 1.2e9);
  auto t = times(14.9, 12.1);
  t.comm = {comm(collective::reduce_scatter, comm_group::dp, 16, 13.48e9, 1, 1.18, 0.21, link_kind::inter, grad_sync),
            comm(collective::all_gather, comm_group::dp, 16, 13.48e9, 1, 1.18, 1.18, link_kind::inter, after_step)};
  f.plan.time = t;
  return f;
}

/// Tensor, sequence and pipeline parallel: tp 4 x pp 2 x dp 2 on 16 GPUs.
inline fixture tp4_pp2() {
  fixture f{"tp4_pp2", {}, {}};
  f.program.file = "plans/13b_tp_pp.dtp";
  f.program.model = llama("llama2_13b", 40, 5120, 40, 40, 13824);
  f.program.cluster = h100("two_nodes", 2);
  f.plan.name = "megatron";
  f.plan.s.dp = 2;
  f.plan.s.tp = 4;
  f.plan.s.pp = 2;
  f.plan.s.zero = 1;
  f.plan.s.sequence_parallel = true;
  f.plan.s.micro_batch = 1;
  f.plan.grad_accum = 128;
  f.program.training.global_batch = 256;
  f.plan.valid = true;
  memory(f.plan, 3.3e9, 3.3e9, 9.9e9, 21.0e9, 2.1e9);
  auto t = times(41.2, 35.8);
  t.comm = {comm(collective::all_gather, comm_group::tp, 4, 41.9e6, 2 * 2 * 20 * 128, 2.9, 2.9, link_kind::intra, layer),
            comm(collective::reduce_scatter, comm_group::tp, 4, 41.9e6, 2 * 2 * 20 * 128, 2.9, 2.9, link_kind::intra, layer),
            comm(collective::send_recv, comm_group::pp, 2, 41.9e6, 2 * 128, 1.0, 0.9, link_kind::inter, micro_batch),
            comm(collective::reduce_scatter, comm_group::dp, 2, 3.3e9, 1, 0.55, 0.1, link_kind::intra, grad_sync),
            comm(collective::all_gather, comm_group::dp, 2, 3.3e9, 1, 0.55, 0.55, link_kind::intra, after_step)};
  f.plan.time = t;
  return f;
}

/// Hybrid sharding: ZeRO-3 within each of 4 nodes, replicated across them.
inline fixture hsdp() {
  fixture f{"hsdp", {}, {}};
  f.program.file = "plans/7b_hsdp.dtp";
  f.program.model = llama("llama2_7b", 32, 4096, 32, 32, 11008);
  f.program.cluster = h100("four_nodes", 4);
  f.plan.name = "hsdp";
  f.plan.s.dp = 32;
  f.plan.s.zero = 3;
  f.plan.s.shard.k = planner::shard_group::kind::node;
  f.plan.s.checkpoint = planner::checkpoint_mode::full;
  f.plan.s.micro_batch = 2;
  f.plan.grad_accum = 4;
  f.program.training.global_batch = 256;
  f.plan.valid = true;
  memory(f.plan, 1.69e9, 1.69e9, 10.1e9, 4.3e9, 2.4e9);
  auto t = times(7.4, 6.6);
  t.comm = {comm(collective::all_gather, comm_group::shard, 8, 0.405e9, 2 * 32 * 4, 1.9, 0.2, link_kind::intra, layer),
            comm(collective::reduce_scatter, comm_group::shard, 8, 0.405e9, 32 * 4, 0.95, 0.1, link_kind::intra, layer_backward),
            comm(collective::all_reduce, comm_group::replicate, 4, 1.69e9, 1, 0.61, 0.3, link_kind::inter, grad_sync)};
  f.plan.time = t;
  return f;
}

/// Every axis at once, with a non-default order: dp inside cp.
inline fixture all_axes() {
  fixture f{"all_axes", {}, {}};
  f.program.file = "plans/7b_cp.dtp";
  f.program.model = llama("llama2_7b", 32, 4096, 32, 8, 14336);
  f.program.model.seq_len = 32768;
  f.program.model.tied_embeddings = true;  // the pipeline's ends sum its gradients: group `embedding`
  f.program.cluster = h100("two_nodes", 2);
  f.plan.name = "long_context";
  f.plan.s.dp = 2;
  f.plan.s.tp = 2;
  f.plan.s.cp = 2;
  f.plan.s.pp = 2;
  f.plan.s.zero = 2;
  f.plan.s.sequence_parallel = true;
  f.plan.s.virtual_stages = 2;
  f.plan.s.order = {planner::axis::tp, planner::axis::dp, planner::axis::cp, planner::axis::pp};
  f.plan.grad_accum = 32;
  f.program.training.global_batch = 64;
  f.plan.valid = true;
  memory(f.plan, 3.5e9, 1.75e9, 10.5e9, 38.0e9, 3.0e9);
  auto t = times(96.0, 80.0);
  t.comm = {comm(collective::all_gather, comm_group::tp, 2, 268e6, 2 * 2 * 16 * 32, 9.0, 9.0, link_kind::intra, layer),
            comm(collective::reduce_scatter, comm_group::tp, 2, 268e6, 2 * 2 * 16 * 32, 9.0, 9.0, link_kind::intra, layer),
            comm(collective::send_recv, comm_group::cp, 2, 67e6, 3 * 16 * 32, 3.0, 0.5, link_kind::intra, layer),
            comm(collective::send_recv, comm_group::pp, 2, 268e6, 2 * 2 * 32, 4.3, 2.1, link_kind::inter, micro_batch),
            comm(collective::all_reduce, comm_group::embedding, 2, 131e6, 1, 0.1, 0.1, link_kind::inter, grad_sync),
            comm(collective::reduce_scatter, comm_group::dp, 4, 3.5e9, 1, 0.4, 0.1, link_kind::intra, grad_sync),
            comm(collective::all_gather, comm_group::dp, 4, 3.5e9, 1, 0.4, 0.4, link_kind::intra, after_step)};
  f.plan.time = t;
  return f;
}

/// Too many GPUs to draw each: 70B on 128 nodes (1024 GPUs).
inline fixture large() {
  fixture f{"70b_1024", {}, {}};
  f.program.file = "plans/70b_1024.dtp";
  f.program.model = llama("llama2_70b", 80, 8192, 64, 8, 28672);
  f.program.cluster = h100("big", 128);
  f.plan.name = "current";
  f.plan.s.dp = 16;
  f.plan.s.tp = 8;
  f.plan.s.pp = 8;
  f.plan.s.zero = 1;
  f.plan.s.sequence_parallel = true;
  f.plan.grad_accum = 64;
  f.program.training.global_batch = 1024;
  f.plan.valid = true;
  memory(f.plan, 2.2e9, 2.2e9, 0.8e9, 40.0e9, 3.0e9);
  auto t = times(30.0, 24.0);
  t.comm = {comm(collective::all_gather, comm_group::tp, 8, 67e6, 2 * 2 * 10 * 64, 3.0, 3.0, link_kind::intra, layer),
            comm(collective::reduce_scatter, comm_group::tp, 8, 67e6, 2 * 2 * 10 * 64, 3.0, 3.0, link_kind::intra, layer),
            comm(collective::send_recv, comm_group::pp, 8, 67e6, 2 * 64, 1.2, 0.6, link_kind::inter, micro_batch),
            comm(collective::reduce_scatter, comm_group::dp, 16, 2.2e9, 1, 0.9, 0.2, link_kind::inter, grad_sync),
            comm(collective::all_gather, comm_group::dp, 16, 2.2e9, 1, 0.9, 0.9, link_kind::inter, after_step)};
  f.plan.time = t;
  return f;
}

/// Two NVL72 racks: each node of the plan is a 72-GPU NVLink domain, which
/// the launch scripts start as 18 trays of 4 GPUs.
inline fixture nvl72() {
  using namespace planner::literals;
  fixture f{"nvl72", {}, {}};
  f.program.file = "plans/nvl72.dtp";
  f.program.model = llama("llama3_70b", 80, 8192, 64, 8, 28672);
  f.program.cluster = h100("two_racks", 2);
  f.program.cluster.gpus_per_node = 72;
  f.program.cluster.device.name = "B200";
  f.program.training.global_batch = 288;
  f.plan.name = "racks";
  f.plan.s.dp = 36;
  f.plan.s.tp = 4;
  f.plan.s.zero = 1;
  f.plan.grad_accum = 8;
  f.plan.valid = true;
  memory(f.plan, 35e9, 35e9, 8e9, 60e9, 3e9);
  auto t = times(20.0, 15.0);
  t.comm = {comm(collective::all_reduce, comm_group::tp, 4, 67e6, 4 * 80 * 8, 2.0, 2.0, link_kind::intra, layer),
            comm(collective::reduce_scatter, comm_group::dp, 36, 35e9, 1, 1.5, 0.3, link_kind::inter, grad_sync),
            comm(collective::all_gather, comm_group::dp, 36, 35e9, 1, 1.5, 1.5, link_kind::inter, after_step)};
  f.plan.time = t;
  return f;
}

/// Text that would run as code if a generator copied it unescaped: a
/// newline and a CR (ending a comment or a literal), quotes, command
/// substitution, backticks, a C comment's end, a backslash (a line splice
/// at the end of a // comment), a trigraph, a terminal escape and
/// non-ASCII. Each payload would create a file named pwn_* in the working
/// directory.
inline std::string hostile_text() {
  return "evil\"'`touch pwn_tick`$(touch pwn_subst)\n touch pwn_nl\r\nfile(WRITE pwn_cmake x)\n"
         "static int pwn = std::system(\"touch pwn_cc\"); */ /* \x1b[31m \xc3\xa9 ?\?/ \\";
}

/// DSL.md's example with every name from the input hostile.
inline fixture hostile() {
  auto f = dp16_zero1();
  f.name = "hostile";
  f.program.file = "plans/" + hostile_text() + ".dtp";
  f.program.model.name = hostile_text();
  f.program.cluster.name = hostile_text();
  f.program.cluster.device.name = hostile_text();
  f.plan.name = hostile_text();
  return f;
}

inline std::vector<fixture> all() { return {dp16_zero1(), tp4_pp2(), hostile(), hsdp(), all_axes(), large(), nvl72()}; }

}  // namespace dtplan::codegen::fixtures
