#include <catch2/catch.hpp>

#include <cmath>

#include "planner/model/check.hpp"
#include "planner/model/comm.hpp"
#include "planner/model/compute.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/model/kernels.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/params.hpp"
#include "dsl/diagnostics.hpp"
#include "planner/lower/lower.hpp"
#include "memory_fixtures.hpp"

using namespace dtplan::planner;
using namespace dtplan::planner::literals;

namespace {

model llama7b() {
  model m;
  m.name = "llama2_7b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn = 11008;
  m.mlp = mlp_kind::swiglu;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.prec = precision::bf16;
  m.optimizer = optimizer_kind::adam;
  return m;
}

program two_nodes(std::int64_t nodes = 2, std::int64_t per_node = 8) {
  program p;
  p.model = llama7b();
  p.cluster.name = "two_nodes";
  p.cluster.nodes = nodes;
  p.cluster.gpus_per_node = per_node;
  p.cluster.device = *catalog_gpu("H100_SXM");
  use_gpu_defaults(p.cluster);
  p.cluster.inter_node = 100_Gbitps;
  p.training.global_batch = 256;
  return p;
}

// One node of eight, a model of the standard (unfused) attention path at
// the given width, heads and sequence.
program one_node_standard_attention(std::int64_t hidden, std::int64_t heads, std::int64_t ffn, std::int64_t seq) {
  program p = two_nodes(1, 8);
  dtplan::test::standard_attention(p.model, hidden, heads, ffn, seq);
  return p;
}

strategy data_parallel(std::int64_t dp, int zero) {
  strategy s;
  s.dp = dp;
  s.zero = zero;
  s.checkpoint = checkpoint_mode::selective;
  s.micro_batch = 1;
  return s;
}

seconds dp_time(time_breakdown const& t) {
  seconds sum;
  for (auto const& e : t.comm)
    if (e.group == comm_group::dp) sum += e.time;
  return sum;
}

}  // namespace

TEST_CASE("seed fact: 14 GB all-reduced over 8 GPUs on 100 Gbit/s links takes 1.96 s") {
  auto const t = collective_time(collective::all_reduce, 14_GB, 8, 100_Gbitps, seconds(0));
  CHECK(t.value() == Approx(1.96).epsilon(1e-12));
  CHECK(to_string(t) == "1.96 s");

  // The same through the link the layout picks: 8 nodes x 1 GPU, each with its own NIC.
  cluster c;
  c.nodes = 8;
  c.gpus_per_node = 1;
  c.intra_node = 450_GBps;
  c.inter_node = 100_Gbitps;
  c.comm_efficiency = 1.0;
  c.network_efficiency = 1.0;
  strategy s = data_parallel(8, 0);
  rank_layout layout(s, 1);
  auto const link = link_for(c, layout.placement(axis::dp));
  CHECK(link.kind == link_kind::inter);
  CHECK(link.bw.value() == 12.5e9);
  CHECK(to_string(collective_time(collective::all_reduce, 14_GB, 8, link)) == "1.96 s");
}

TEST_CASE("ring volumes: all-reduce 2(N-1)/N, reduce-scatter and all-gather (N-1)/N") {
  CHECK(bytes_moved(collective::all_reduce, 14_GB, 8).value() == Approx(24.5e9));
  CHECK(bytes_moved(collective::reduce_scatter, 14_GB, 8).value() == Approx(12.25e9));
  CHECK(bytes_moved(collective::all_gather, 14_GB, 8).value() == Approx(12.25e9));
  CHECK(bytes_moved(collective::all_to_all, 16_GB, 4).value() == Approx(12e9));
  CHECK(bytes_moved(collective::send_recv, 16_GB, 2).value() == Approx(16e9));
  CHECK(bytes_moved(collective::all_reduce, 14_GB, 1).value() == 0);
  CHECK(latency_steps(collective::all_reduce, 8) == 14);
  CHECK(latency_steps(collective::all_gather, 8) == 7);
}

TEST_CASE("a group spanning nodes shares the node's NICs with the node's other groups") {
  cluster c = two_nodes().cluster;
  c.comm_efficiency = 1.0;
  c.network_efficiency = 1.0;
  // dp = 16 over 2 nodes: one group, 8 members per node, the whole 100 Gbit/s.
  rank_layout dp16(data_parallel(16, 0), 8);
  CHECK(link_for(c, dp16.placement(axis::dp)).bw.value() == 12.5e9);
  // tp = 8 inside each node, dp = 2 across: 8 concurrent dp groups, 1/8 each.
  strategy s = data_parallel(2, 0);
  s.tp = 8;
  rank_layout tp8(s, 8);
  CHECK(link_for(c, tp8.placement(axis::tp)).kind == link_kind::intra);
  CHECK(link_for(c, tp8.placement(axis::tp)).bw.value() == 450e9);
  CHECK(link_for(c, tp8.placement(axis::dp)).bw.value() == 12.5e9 / 8);
}

TEST_CASE("ZeRO-3 moves 1.5x the traffic of DDP's all-reduce") {
  program p = two_nodes();
  p.cluster.comm_efficiency = 1.0;
  p.cluster.network_efficiency = 1.0;
  // Latencies written (as a cluster block writes them) replace NCCL's.
  p.cluster.inter_latency = seconds(0);
  p.cluster.intra_latency = seconds(0);
  p.cluster.keys["inter_latency"] = p.cluster.keys["intra_latency"] = span{};
  p.training.global_batch = 16;  // one micro-batch per GPU: gathers happen once
  analytic_cost_model const model;
  auto const ddp = model.step_time(p, data_parallel(16, 0));
  auto const z3 = model.step_time(p, data_parallel(16, 3));
  CHECK(dp_time(z3).value() == Approx(1.5 * dp_time(ddp).value()).epsilon(1e-9));
}

TEST_CASE("op-level checkpointing recomputes the k, o and up projections and the memory-bound operators") {
  program p = two_nodes();
  analytic_cost_model const model;
  auto s = data_parallel(16, 1);
  s.checkpoint = checkpoint_mode::ops;
  auto const ops = model.step_time(p, s);
  double const tokens = 256.0 * 4096;
  // Per layer and token: k (h x kv), o (h x h), SwiGLU up (h x ffn), 2 FLOPs each.
  CHECK(ops.hardware_flops.value() - ops.model_flops.value() ==
        Approx(2.0 * 32 * (4096.0 * 4096 + 4096.0 * 4096 + 4096.0 * 11008) * tokens).epsilon(1e-12));
  s.checkpoint = checkpoint_mode::selective;
  auto const selective = model.step_time(p, s);
  s.checkpoint = checkpoint_mode::full;
  auto const full = model.step_time(p, s);
  CHECK(selective.recompute < ops.recompute);
  CHECK(ops.recompute < full.recompute);
  // Sequence parallelism: the two all-gathers of the norm outputs run again,
  // the reduce-scatters' outputs are kept.
  s = data_parallel(8, 1);
  s.tp = 2;
  s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::ops;
  auto const tp = model.step_time(p, s);
  std::int64_t const micro = 256 / 8;
  std::int64_t gathers = 0, scatters = 0;
  for (auto const& e : tp.comm) {
    if (e.group != comm_group::tp) continue;
    if (e.op == collective::all_gather) gathers += e.count;
    if (e.op == collective::reduce_scatter) scatters += e.count;
  }
  CHECK(gathers == 6 * 32 * micro);
  CHECK(scatters == 4 * 32 * micro);
}

TEST_CASE("full checkpointing adds a forward pass: a third more compute") {
  program p = two_nodes();
  analytic_cost_model const model;
  auto s = data_parallel(16, 1);
  s.checkpoint = checkpoint_mode::full;
  auto const full = model.step_time(p, s);
  double const tokens = 256.0 * 4096;
  double const logits = 6.0 * 32000 * 4096 * tokens;
  CHECK(full.hardware_flops.value() - full.model_flops.value() ==
        Approx((full.model_flops.value() - logits) / 3).epsilon(1e-12));
  double const ratio = full.recompute / full.compute;
  CHECK(ratio > 0.28);
  CHECK(ratio < 0.34);
  s.checkpoint = checkpoint_mode::none;
  CHECK(model.step_time(p, s).recompute.value() == 0);
}

TEST_CASE("model FLOPs follow the spec's convention") {
  program p = two_nodes();
  double const tokens = 256.0 * 4096;
  double const matmul = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) + 32000.0 * 4096;
  CHECK(model_flops_per_step(p).value() == Approx(tokens * (6 * matmul + 12.0 * 32 * 4096 * 4096)).epsilon(1e-12));
}

TEST_CASE("heads narrower than hidden / heads: the projections, the attention core and the FLOPs follow q's width") {
  program p = two_nodes();
  strategy s = data_parallel(8, 1);
  s.tp = 2;
  auto const wide = shape_of(p, s);
  auto const wide_core = compute_per_micro_batch(p, s).layer_attention_core;
  p.model.head_dim = 64;  // 32 heads of 64: q, k and v 2048 wide, hidden 4096
  auto const sh = shape_of(p, s);
  CHECK(sh.head_dim == 64);
  CHECK(sh.q_width == 2048);
  CHECK(sh.kv_width == 2048);
  CHECK(std::string(sh.gemms[0].name) == "qkv");
  CHECK(sh.gemms[0].forward.n == 3 * 2048 / 2);
  CHECK(sh.gemms[0].forward.k == 4096);
  CHECK(std::string(sh.gemms[1].name) == "o-proj");
  CHECK(sh.gemms[1].forward.n == 4096);
  CHECK(sh.gemms[1].forward.k == 2048 / 2);
  CHECK(wide.gemms[1].forward.k == 4096 / 2);
  // The same heads on half the width: the core's work halves (its
  // efficiency is the kernel's figure whatever the width).
  auto const core = compute_per_micro_batch(p, s).layer_attention_core;
  CHECK(core.value() < wide_core.value());
  CHECK(core.value() > 0.45 * wide_core.value());
  // Megatron-LM's count: 12 L s x (heads x head_dim) for the core.
  double const tokens = 256.0 * 4096;
  double const matmul = 32.0 * (2 * 4096.0 * 2048 + 2 * 4096.0 * 2048 + 3 * 4096.0 * 11008) + 32000.0 * 4096;
  CHECK(model_flops_per_step(p).value() == Approx(tokens * (6 * matmul + 12.0 * 32 * 4096 * 2048)).epsilon(1e-12));
}

// DeepGEMM's fp8 GEMMs on H800 (Hopper's SMs, docs/research/hardware.md
// s.1): M = 4096, N = 7168 reaches 1,404 TFLOP/s at K = 16,384 and 1,031 at
// K = 2,048; N = 32,768 at K = 512, 591. The catalog's fp8 tile overhead
// (800 reduction elements) puts the ratios within 3 % of those.
TEST_CASE("short fp8 reductions on Hopper pay a tile's fixed cost as measured") {
  gpu const g = *catalog_gpu("H100_SXM");
  CHECK(g.matmul_tile_overhead == 128);
  CHECK(g.matmul_tile_overhead_fp8 == 800);
  double const long_k = shape_efficiency(g, {4096, 7168, 16384, 1}, precision::fp8);
  CHECK(shape_efficiency(g, {4096, 7168, 2048, 1}, precision::fp8) / long_k == Approx(1031.0 / 1404.0).epsilon(0.03));
  CHECK(shape_efficiency(g, {4096, 32768, 512, 1}, precision::fp8) / long_k == Approx(591.0 / 1404.0).epsilon(0.03));
  // 16-bit GEMMs keep Hopper's 128: the same K = 2,048 loses 6 %, not 28 %.
  CHECK(shape_efficiency(g, {4096, 7168, 2048, 1}) / shape_efficiency(g, {4096, 7168, 16384, 1}) ==
        Approx((2048.0 / (2048 + 128)) / (16384.0 / (16384 + 128))).epsilon(1e-9));
  // Blackwell's figures are Hopper's scaled by its tensor rate per SM.
  gpu const b = *catalog_gpu("B200");
  CHECK(b.matmul_tile_overhead == 256);
  CHECK(b.matmul_tile_overhead_fp8 == 1600);
}

// NVFP4 on B200 (docs/research/hardware.md s.1): cuBLAS 13.3's fp4 GEMM at
// 8192^3 measured 5,239 TFLOP/s (DeepGEMM pull request 348), vLLM's NVFP4
// GEMM at M = 16,384, N = 6,144, K = 4,096 3,904. The catalog's share (0.82
// of 9 PFLOP/s) is the first over the model's tile share at that shape; the
// tile overhead is fp8's doubled (the same fixed time over a main loop twice
// as fast), which puts the second within 5 %.
TEST_CASE("fp4 GEMMs on B200 run at the measured NVFP4 rates") {
  gpu const b = *catalog_gpu("B200");
  CHECK(b.peak_flops_fp4.value() == 9000e12);
  CHECK(b.matmul_efficiency_fp4 == 0.82);
  CHECK(b.matmul_tile_overhead_fp4 == 3200);
  CHECK(peak_at(b, precision::fp4).value() == 9000e12);
  auto rate = [&](gemm_shape s) {
    return gemm_flops(s).value() / (gemm_time(b, s, precision::fp4) - b.kernel_latency).value() / 1e12;
  };
  CHECK(rate({8192, 8192, 8192, 1}) == Approx(5239).epsilon(0.01));
  CHECK(rate({16384, 6144, 4096, 1}) == Approx(3904).epsilon(0.05));
  // Twice the fp8 overhead when the GPU names none of its own: the same K
  // loses more in fp4.
  gpu g = b;
  g.matmul_tile_overhead_fp4 = 0;
  CHECK(shape_efficiency(g, {8192, 8192, 8192, 1}, precision::fp4) ==
        Approx(shape_efficiency(b, {8192, 8192, 8192, 1}, precision::fp4)).epsilon(1e-12));
  CHECK(shape_efficiency(b, {8192, 8192, 4096, 1}, precision::fp4) <
        shape_efficiency(b, {8192, 8192, 4096, 1}, precision::fp8));
  // Its operands move half a byte and a scale per 16 elements: where memory
  // bounds a GEMM, it takes 0.5625 of fp8's time.
  gpu slow = b;
  slow.hbm_bandwidth = bandwidth(1e9);
  gemm_shape const thin{4096, 4096, 4096, 1};
  CHECK((gemm_time(slow, thin, precision::fp4) - slow.kernel_latency).value() ==
        Approx(0.5625 * (gemm_time(slow, thin, precision::fp8) - slow.kernel_latency).value()).epsilon(1e-12));
}

// A layer's NVFP4 casts: each linear's input and weight read 16-bit and
// written twice (row- and column-wise, the latter through the random
// Hadamard transform), 2 + 2 x 0.5625 bytes an element, against fp8's 4.
TEST_CASE("fp4 training casts each linear's operands as Transformer Engine's NVFP4 recipe does") {
  program p = two_nodes();
  p.cluster.device = *catalog_gpu("B200");
  auto const s = data_parallel(16, 1);
  p.model.prec = precision::fp8;
  auto const fp8 = compute_per_micro_batch(p, s);
  p.model.prec = precision::fp4;
  auto const fp4 = compute_per_micro_batch(p, s);
  p.model.prec = precision::bf16;
  auto const bf16 = compute_per_micro_batch(p, s);
  // Same kernels (two casts a linear forward, one backward, beyond bf16's),
  // fewer GEMM seconds and a cheaper cast.
  CHECK(fp4.layer_kernels == fp8.layer_kernels);
  CHECK(fp4.layer_kernels_backward == fp8.layer_kernels_backward);
  CHECK(fp8.layer_kernels == bf16.layer_kernels + 2 * 4);  // qkv, out, gate-up, down
  CHECK(fp4.layer_forward < fp8.layer_forward);
  CHECK(fp4.layer_backward < fp8.layer_backward);
  // The cast's bytes: the forward's memory-bound time beyond bf16's, less
  // the casts' kernel latencies, is 4 : 3.125 in fp8 and fp4.
  gpu const& g = p.cluster.device;
  auto const memory_bound = [](stage_compute const& c) {
    seconds gemms;
    for (auto const& t : c.gemm_forward) gemms += t;
    return c.layer_forward - gemms - c.layer_attention_core;
  };
  auto const cast = [&](stage_compute const& c) {
    return (memory_bound(c) - memory_bound(bf16) - g.kernel_latency * 8.0).value();
  };
  CHECK(cast(fp8) / cast(fp4) == Approx(4.0 / (2 + 2 * 0.5625)).epsilon(1e-9));
  // Attention stays 16-bit in both recipes.
  CHECK(fp4.layer_attention_core == fp8.layer_attention_core);
  CHECK(fp4.layer_attention_core == bf16.layer_attention_core);
}

TEST_CASE("small per-GPU shapes are slower per FLOP than large ones") {
  gpu const g = *catalog_gpu("H100_SXM");
  CHECK(shape_efficiency(g, {8192, 8192, 8192, 1}) > 0.9);
  CHECK(shape_efficiency(g, {8192, 8192, 8192, 1}) > shape_efficiency(g, {512, 512, 4096, 1}));
  CHECK(shape_efficiency(g, {4096, 4096, 4096, 1}) > shape_efficiency(g, {4096, 4096, 128, 1}));
  auto per_flop = [&](gemm_shape s) { return gemm_time(g, s, precision::bf16).value() / gemm_flops(s).value(); };
  CHECK(per_flop({128, 4096, 512, 1}) > 1.5 * per_flop({8192, 4096, 4096, 1}));
  // The same layer split 8 ways takes more than an eighth of the time.
  program p = two_nodes();
  auto s1 = data_parallel(16, 0);
  auto s8 = s1;
  s8.tp = 8;
  auto const one = compute_per_micro_batch(p, s1);
  auto const eight = compute_per_micro_batch(p, s8);
  CHECK(eight.layer_forward.value() > one.layer_forward.value() / 8);
}

TEST_CASE("a sustained clock slows compute-bound work, not memory-bound work") {
  // The A100's catalog entry: the memory-bound share measured (1,818 of
  // 2,039 GB/s), the clock its runs hold fitted (0.94 of boost).
  gpu g = *catalog_gpu("A100_SXM_80GB");
  CHECK(g.hbm_efficiency == Approx(0.89));
  CHECK(g.sustained_clock == Approx(0.94));
  gemm_shape const big{8192, 8192, 8192, 1};  // compute-bound
  g.sustained_clock = 1.0;
  double const at_boost = (gemm_time(g, big, precision::bf16) - g.kernel_latency).value();
  double const stream_at_boost = memory_time(g, bytes(1e9)).value();
  g.sustained_clock = 0.5;
  // Half the clock: twice the compute time, the same memory time.
  CHECK((gemm_time(g, big, precision::bf16) - g.kernel_latency).value() == Approx(2 * at_boost).epsilon(1e-12));
  CHECK(memory_time(g, bytes(1e9)).value() == stream_at_boost);
  CHECK(stream_at_boost == Approx(1e9 / (2039e9 * 0.89) + g.kernel_latency.value()).epsilon(1e-12));
  // The flash attention kernel is compute-bound too: half the clock, twice
  // its time beside its launch.
  program p = two_nodes();
  p.model.attention = attention_kind::flash;
  auto const s = data_parallel(16, 0);
  auto const core_at = [&](double clock) {
    p.cluster.device.sustained_clock = clock;
    return (compute_per_micro_batch(p, s).layer_attention_core - p.cluster.device.kernel_latency).value();
  };
  CHECK(core_at(0.5) == Approx(2 * core_at(1.0)).epsilon(1e-12));
  // The fit moves the clock of a generation whose catalog GPUs write it
  // (bench/fit.cpp): the A100s, whose memory share is measured; not Hopper.
  CHECK(catalog_gpu("A100_SXM_80GB")->keys.count("sustained_clock") == 1);
  CHECK(catalog_gpu("A100_SXM_40GB")->keys.count("sustained_clock") == 1);
  CHECK(catalog_gpu("H100_SXM")->keys.count("sustained_clock") == 0);
}

TEST_CASE("no step beats its FLOPs at peak; MFU stays at most 100 %") {
  analytic_cost_model const model;
  for (std::int64_t seq : {128, 2048, 32768, 131072}) {
    for (std::int64_t mb : {1, 4, 16}) {
      for (auto prec : {precision::bf16, precision::fp8}) {
        program p = two_nodes();
        p.model.seq_len = seq;
        p.model.prec = prec;
        p.training.global_batch = 16 * mb;
        auto s = data_parallel(16, 3);
        s.micro_batch = mb;
        auto const t = model.step_time(p, s);
        CHECK(t.step >= model.lower_bound(p));
        auto const r = rate_of(p, t);
        CHECK(r.mfu <= 1.0);
        CHECK(r.mfu > 0.0);
        CHECK(t.step.value() == Approx((t.compute + t.recompute + t.exposed_comm + t.bubble + t.optimizer +
                                        t.overhead).value()));
      }
    }
  }
}

TEST_CASE("pipeline bubble is pp - 1 slots of a stage's layers, divided by the virtual stages") {
  program p = two_nodes();
  analytic_cost_model const model;
  strategy s = data_parallel(4, 1);
  s.pp = 4;
  auto const t = model.step_time(p, s);
  auto const sc = compute_per_micro_batch(p, s);
  REQUIRE(sc.head().value() > 0);
  // 1F1B: the last stage runs its m micro-batches with the logits and the
  // loss; the three stages ahead of it fill and drain it with their layers
  // alone (forward, backward, recomputation), the head in none of the slots.
  seconds const layers = sc.forward_backward() + sc.recompute() - sc.head();
  CHECK(t.bubble.value() == Approx(3 * layers.value()).epsilon(1e-9));
  // Against the m = 256 / 4 micro-batches' compute: under (pp-1)/m of it.
  auto const m = 256 / 4;
  CHECK(t.bubble.value() < (t.compute + t.recompute).value() * 3.0 / m);
  s.virtual_stages = 2;
  auto const ti = model.step_time(p, s);
  CHECK(ti.bubble.value() == Approx(t.bubble.value() / 2).epsilon(1e-9));

  // A host slower than the GPU: each slot takes the host's time to issue
  // the layers' operators, the head's not among them.
  s.virtual_stages = 1;
  p.training.cuda_graphs = false;
  p.cluster.device.dispatch_latency = seconds(1e-3);
  p.cluster.device.keys["dispatch_latency"] = {};
  auto const host = model.step_time(p, s);
  REQUIRE(1e-3 * static_cast<double>(sc.kernels()) > (sc.forward_backward() + sc.recompute()).value());
  CHECK(host.bubble.value() == Approx(3 * 1e-3 * static_cast<double>(sc.kernels() - sc.head_kernels())).epsilon(1e-9));
}

TEST_CASE("a host-bound stage hides its head's forward unless the passes are timed") {
  // One GPU, no communication: a host slower than the GPU on every layer,
  // while the head's forward (the logits over 32 K words) outlasts its own
  // four operators' issue.
  program p = two_nodes(1, 1);
  analytic_cost_model const model;
  strategy const s = data_parallel(1, 0);
  auto const sc = compute_per_micro_batch(p, s);
  double const kf = static_cast<double>(sc.layer_kernels);
  double const kb = static_cast<double>(sc.layer_kernels_backward + sc.layer_kernels_recompute);
  double const dl = 1.5 * std::max(sc.layer_forward.value() / kf, (sc.layer_backward + sc.layer_recompute).value() / kb);
  p.cluster.device.dispatch_latency = seconds(dl);
  p.cluster.device.keys["dispatch_latency"] = {};
  double const layers = static_cast<double>(sc.layers);
  double const head_fwd_host = dl * static_cast<double>(sc.head_kernels_forward);
  double const head_bwd_host = dl * static_cast<double>(sc.head_kernels_backward);
  double const host = dl * static_cast<double>(sc.kernels());
  double const head_excess = sc.head_forward.value() - head_fwd_host;
  REQUIRE(head_excess > 0);
  // The backward leaves the GPU idle for longer than the head's forward
  // keeps it busy past the host.
  double const backward_slack =
      kb * layers * dl + head_bwd_host - ((sc.layer_backward + sc.layer_recompute) * layers + sc.head_backward).value();
  REQUIRE(backward_slack > head_excess);
  double const micro = 256;
  auto const untimed = model.step_time(p, s);
  CHECK(untimed.exposed_comm.value() == 0);
  CHECK((untimed.compute + untimed.recompute).value() == Approx(micro * host).epsilon(1e-9));
  // Megatron's timers wait for the GPU as the forward ends: the head's
  // forward runs past the host with nothing left to issue behind it.
  p.training.timing_log_level = 2;
  auto const timed = model.step_time(p, s);
  CHECK((timed.compute + timed.recompute).value() == Approx(micro * (host + head_excess)).epsilon(1e-9));
  // A GPU faster than any host: the timers change nothing.
  p.cluster.device.dispatch_latency = seconds(0);
  auto const fast = model.step_time(p, s);
  p.training.timing_log_level = 0;
  CHECK(model.step_time(p, s).compute.value() == Approx(fast.compute.value()).epsilon(1e-12));
}

TEST_CASE("with every launch blocking, the host's time adds to the GPU's and nothing overlaps") {
  // One GPU, no communication: the host issues each operator only when the
  // one before has finished (CUDA_LAUNCH_BLOCKING=1), so a micro-batch takes
  // the host's time for its operators plus the GPU's for them, whichever is
  // the longer otherwise.
  program p = two_nodes(1, 1);
  analytic_cost_model const model;
  strategy const s = data_parallel(1, 0);
  auto const sc = compute_per_micro_batch(p, s);
  double const dl = 40e-6;
  p.cluster.device.dispatch_latency = seconds(dl);
  p.cluster.device.keys["dispatch_latency"] = {};
  double const micro = 256;
  double const gpu = (sc.forward_backward() + sc.recompute()).value();
  double const host = dl * static_cast<double>(sc.kernels());
  REQUIRE(host < gpu);  // GPU-bound: the host hides under the GPU
  auto const async = model.step_time(p, s);
  CHECK((async.compute + async.recompute).value() == Approx(micro * gpu).epsilon(1e-9));
  p.training.cuda_launch_blocking = true;
  auto const blocking = model.step_time(p, s);
  CHECK((blocking.compute + blocking.recompute).value() == Approx(micro * (gpu + host)).epsilon(1e-9));

  // Two nodes with the gradient sync overlapped under the backward: blocking
  // launches expose all of it, and the compute under it no longer slows.
  program q = two_nodes();
  strategy const d = data_parallel(16, 1);
  auto const overlapped = model.step_time(q, d);
  seconds all_comm;
  for (auto const& e : overlapped.comm) all_comm += e.time;
  REQUIRE(overlapped.exposed_comm.value() < all_comm.value());
  q.training.cuda_launch_blocking = true;
  auto const serial = model.step_time(q, d);
  CHECK(serial.exposed_comm.value() == Approx(all_comm.value()).epsilon(1e-12));
  for (auto const& e : serial.comm) CHECK(e.exposed.value() == e.time.value());
}

TEST_CASE("tensor-parallel collectives sit on the critical path") {
  program p = two_nodes();
  analytic_cost_model const model;
  strategy s = data_parallel(2, 1);
  s.tp = 8;
  s.sequence_parallel = true;
  auto const t = model.step_time(p, s);
  int tp_entries = 0;
  for (auto const& e : t.comm) {
    if (e.group != comm_group::tp) continue;
    ++tp_entries;
    CHECK(e.link == link_kind::intra);
    CHECK(e.exposed == e.time);
    CHECK(e.size.value() == 4096.0 * 4096 * 2);
  }
  CHECK(tp_entries == 2);
}

TEST_CASE("context parallelism's exchange follows cp_comm_type") {
  // Llama 2 7B-shaped with 8 key/value heads of 128, 4,096 tokens over cp 4
  // at tp 2: 1,024 tokens a rank. Its own keys and values are 2 x 1,024 x
  // 1,024 / 2 x 2 B = 2 MiB; expanded to the 32 query heads, 8 MiB. Full
  // recomputation runs the forward's exchange twice; 32 layers x 128
  // micro-batches (256 sequences over dp 2).
  program p = two_nodes();
  p.model.kv_heads = 8;
  analytic_cost_model const model;
  strategy s = data_parallel(2, 1);
  s.tp = 2;
  s.cp = 4;
  s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::full;
  double const mib = 1048576.0, passes = 32.0 * 128;
  auto cp_entries = [&](cp_comm_kind kind) {
    p.training.cp_comm_type = kind;
    std::vector<comm_entry> out;
    for (auto const& e : model.step_time(p, s).comm)
      if (e.group == comm_group::cp) out.push_back(e);
    return out;
  };
  // Transformer Engine's ring: 3 sends a pass, the forward's twice and the
  // backward's keys, values and their 16-bit gradients.
  auto const p2p = cp_entries(cp_comm_kind::p2p);
  REQUIRE(p2p.size() == 1);
  CHECK(p2p[0].op == collective::send_recv);
  CHECK(p2p[0].size.value() == 2 * mib);
  CHECK(p2p[0].count == 3 * 4 * passes);
  // PyTorch's: the expanded keys and values gathered once a pass (the
  // forward's twice and the backward's), or sent 3 times a pass; and the
  // fp32 gradients sent at each of the backward's 4 steps.
  auto const gathered = cp_entries(cp_comm_kind::allgather);
  REQUIRE(gathered.size() == 2);
  CHECK(gathered[0].op == collective::all_gather);
  CHECK(gathered[0].size.value() == 4 * 8 * mib);
  CHECK(gathered[0].count == 3 * passes);
  CHECK(gathered[1].op == collective::send_recv);
  CHECK(gathered[1].size.value() == 16 * mib);
  CHECK(gathered[1].count == 4 * passes);
  auto const ring = cp_entries(cp_comm_kind::alltoall);
  REQUIRE(ring.size() == 2);
  CHECK(ring[0].op == collective::send_recv);
  CHECK(ring[0].size.value() == 8 * mib);
  CHECK(ring[0].count == 3 * 3 * passes);
  CHECK(ring[1].size.value() == 16 * mib);
  CHECK(ring[1].count == 4 * passes);
  for (auto const& e : ring) CHECK(e.exposed <= e.time);
}

TEST_CASE("PyTorch's ring attention merges its blocks in eager fp32 operators") {
  // 4,096 tokens over cp 4 at tp 2: 1,024 tokens and 16 heads of 128 a
  // rank, q = 4 MiB. Forward: 20 q for each of the 3 later steps and 6 q of
  // casts, 9 kernels a step; backward: 28 q for each of the 4 steps and
  // 15 q, 3 + 4 x 6 kernels. Transformer Engine's ring merges inside its
  // kernels.
  program p = two_nodes();
  p.model.kv_heads = 8;
  strategy s = data_parallel(2, 1);
  s.tp = 2;
  s.cp = 4;
  s.sequence_parallel = true;
  auto const te = compute_per_micro_batch(p, s);
  p.training.cp_comm_type = cp_comm_kind::allgather;
  auto const torch_ring = compute_per_micro_batch(p, s);
  auto const& g = p.cluster.device;
  double const q = 2.0 * 1024 * 128 * 16, bw = g.hbm_bandwidth.value() * g.hbm_efficiency;
  CHECK((torch_ring.layer_attention_core - te.layer_attention_core).value() ==
        Approx((3 * 20 + 6) * q / bw + 27 * g.kernel_latency.value()).epsilon(1e-12));
  CHECK((torch_ring.layer_attention_core_backward - te.layer_attention_core_backward).value() ==
        Approx((4 * 28 + 15) * q / bw + 27 * g.kernel_latency.value()).epsilon(1e-12));
  CHECK(torch_ring.layer_kernels - te.layer_kernels == 27);
  CHECK(torch_ring.layer_kernels_backward - te.layer_kernels_backward == 27);
  // Without context parallelism the two are the same kernel.
  s.cp = 1;
  s.dp = 8;
  auto const alone = compute_per_micro_batch(p, s);
  p.training.cp_comm_type = cp_comm_kind::p2p;
  CHECK(alone.layer_attention_core == compute_per_micro_batch(p, s).layer_attention_core);
  CHECK(alone.layer_kernels == compute_per_micro_batch(p, s).layer_kernels);
}

TEST_CASE("degenerate strategies never reach the cost model: the check refuses them") {
  // The time model trusts its input (shape.hpp): lowering fills every model
  // default and rejects empty shapes; the check rejects what lowering cannot
  // (a micro-batch of 0 written through the C++ API, ZeRO stages past 3).
  analytic_cost_model const model;
  program p = two_nodes();
  strategy s = data_parallel(0, 3);
  s.micro_batch = 0;
  auto const pl = evaluate(p, strategy_spec{}, s, model, "degenerate");
  CHECK_FALSE(pl.valid);
  CHECK_FALSE(pl.time.has_value());
  REQUIRE_FALSE(pl.errors.empty());
  CHECK(pl.errors.front().message == "expected micro_batch of at least 1, got micro_batch = 0");
  CHECK(std::isfinite(model.lower_bound(p).value()));
}

TEST_CASE("Megatron's softmax falls back to PyTorch's in fp32 where its fused kernel does not fit") {
  // vTrain's one-node GPT (hidden 1,024, 16 heads, 1,024 tokens) under
  // Megatron-DeepSpeed: the kernel takes micro_batch x heads / tp rows in
  // blocks of 4, so tp 8 at one sequence (2 rows) falls back, two do not.
  program p = one_node_standard_attention(1024, 16, 4096, 1024);
  p.model.mlp = mlp_kind::gelu;
  p.model.prec = precision::fp16;
  p.training.transformer_impl = transformer_impl_kind::local;
  // Megatron's own kernel: rows of 4 (8 up to 128 keys), 16 < keys <= 4,096.
  // Transformer Engine's: the same rows of four, up to 16,383 keys, and as
  // many queries as keys (no context parallelism).
  struct shape_case {
    transformer_impl_kind impl;
    std::int64_t keys, tp, micro_batch, cp;
    bool falls_back;
  };
  using ti = transformer_impl_kind;
  for (auto const& c : {shape_case{ti::local, 1024, 8, 1, 1, true}, shape_case{ti::local, 1024, 8, 2, 1, false},
                        shape_case{ti::local, 1024, 4, 1, 1, false}, shape_case{ti::local, 8192, 4, 1, 1, true},
                        shape_case{ti::local, 128, 4, 1, 1, true}, shape_case{ti::local, 128, 4, 2, 1, false},
                        shape_case{ti::transformer_engine, 8192, 4, 1, 1, false},
                        shape_case{ti::transformer_engine, 8192, 8, 1, 1, true},
                        shape_case{ti::transformer_engine, 8192, 4, 1, 2, true}}) {
    program q = p;
    q.training.transformer_impl = c.impl;
    q.model.seq_len = c.keys;
    strategy t;
    t.tp = c.tp;
    t.micro_batch = c.micro_batch;
    t.cp = c.cp;
    INFO(name(c.impl) << ", " << c.keys << " keys, tp " << c.tp << ", micro_batch " << c.micro_batch << ", cp " << c.cp);
    CHECK(softmax_falls_back(q, t) == c.falls_back);
  }
  strategy s;
  s.tp = 8;
  s.dp = 1;
  s.micro_batch = 1;
  s.checkpoint = checkpoint_mode::none;
  // Frameworks of eager kernels, flash kernels and fp32 training never ask.
  REQUIRE(softmax_falls_back(p, s));
  program q = p;
  q.training.fused_elementwise = false;
  CHECK_FALSE(softmax_falls_back(q, s));
  q = p;
  q.model.attention = attention_kind::flash;
  CHECK_FALSE(softmax_falls_back(q, s));
  q.training.attention_kernel = attention_backend::unfused;
  CHECK(softmax_falls_back(q, s));
  q = p;
  q.model.prec = precision::fp32;
  CHECK_FALSE(softmax_falls_back(q, s));

  // The fallback's cost: 33 bytes a score more forward and 35 backward
  // (float, scale, masked_fill_, softmax, the cast back; their backward) and
  // four more kernels each way. The core does not read fused_elementwise
  // otherwise.
  q = p;
  q.training.fused_elementwise = false;
  auto const fallback = compute_per_micro_batch(p, s);
  auto const eager = compute_per_micro_batch(q, s);
  gpu const& g = p.cluster.device;
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  double const scores = 1.0 * 2 * 1024 * 1024;  // micro_batch x heads / tp x queries x keys
  CHECK((fallback.layer_attention_core - eager.layer_attention_core).value() ==
        Approx(33 * scores / hbm + 4 * g.kernel_latency.value()).epsilon(1e-9));
  CHECK((fallback.layer_attention_core_backward - eager.layer_attention_core_backward).value() ==
        Approx(35 * scores / hbm + 4 * g.kernel_latency.value()).epsilon(1e-9));
  strategy fits = s;
  fits.micro_batch = 2;
  auto const fused = compute_per_micro_batch(p, fits);
  CHECK(fallback.layer_kernels == fused.layer_kernels + 4);
  CHECK(fallback.layer_kernels_backward == fused.layer_kernels_backward + 4);

  // Kept for the backward: softmax's fp32 output, 4 bytes a score for the
  // fused kernel's 2, in each of the layers.
  auto const terms = activation_terms(p.model, s, true);
  REQUIRE(terms.size() == activation_terms(p.model, s).size());
  bool found = false;
  for (auto const& t : terms)
    if (t.name == "softmax output in fp32 (a.s^2: PyTorch's softmax, where Megatron's fused kernel does not fit)") {
      found = true;
      CHECK(t.size.value() == 4 * scores);
    }
  CHECK(found);
  CHECK((estimate_memory(p, s).activations - estimate_memory(q, s).activations).value() ==
        Approx(2 * scores * static_cast<double>(p.model.layers)).epsilon(1e-12));
}

TEST_CASE("a layer too small to keep the GPU busy runs at the host's dispatch rate") {
  // 256 tokens: Megatron's fused softmax takes 1 x 4 heads (softmax_falls_back).
  program p = one_node_standard_attention(256, 4, 1024, 256);
  p.model.layers = 4;
  p.model.position = position_kind::rotary;  // Llama's: a rotary kernel in each layer
  p.training.global_batch = 8;
  p.framework.dispatch_latency = seconds(100e-6);
  p.cluster.device.overlap_slowdown = 0;
  strategy s = data_parallel(8, 0);
  s.checkpoint = checkpoint_mode::full;
  auto const sc = compute_per_micro_batch(p, s);
  // swiglu: 4 weight GEMMs; flash attention off: scores, softmax, dropout, weighted sum.
  CHECK(sc.layer_kernels == 4 + 4 + 6);
  CHECK(sc.layer_kernels_backward == 8 + 8 + 12);
  CHECK(sc.layer_kernels_recompute == sc.layer_kernels);
  CHECK(sc.head_kernels() == 9);
  CHECK(sc.kernels() == (14 + 28 + 14) * 4 + 9);
  analytic_cost_model const model;
  auto const t = model.step_time(p, s);
  // One micro-batch: forward, backward and recomputation take the host's
  // 233 operators x 100 us, whatever the GPU would need.
  CHECK((t.compute + t.recompute).value() == Approx(233 * 100e-6).epsilon(1e-9));
  // The GPU's wait is the host's time beyond the GPU's own, part of compute.
  CHECK(t.host_wait.value() == Approx(233 * 100e-6 - (sc.forward_backward() + sc.recompute()).value()).epsilon(1e-9));
  CHECK(t.slowdown.value() == 0);
  p.framework.dispatch_latency = seconds(0);
  auto const unbound = model.step_time(p, s);
  CHECK(unbound.compute.value() < t.compute.value() / 5);
  CHECK(unbound.host_wait.value() == 0);
}

namespace {

comm_entry const* find_comm(time_breakdown const& t, comm_group g) {
  for (auto const& e : t.comm)
    if (e.group == g) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("gradients travel in the precision the program keeps them in") {
  program p = two_nodes();
  p.cluster.comm_efficiency = 1.0;
  p.cluster.inter_latency = seconds(0);
  p.training.global_batch = 16;
  analytic_cost_model const model;
  auto const bf16 = model.step_time(p, data_parallel(16, 0));
  p.training.grad_precision = precision::fp32;
  auto const fp32 = model.step_time(p, data_parallel(16, 0));
  // Twice the bytes; the time doubles but for NCCL's fixed latencies.
  REQUIRE(find_comm(fp32, comm_group::dp));
  auto const total = [](comm_entry const& e) { return e.size.value() * static_cast<double>(e.count); };
  CHECK(total(*find_comm(fp32, comm_group::dp)) == Approx(2 * total(*find_comm(bf16, comm_group::dp))).epsilon(1e-12));
  CHECK(dp_time(fp32).value() == Approx(2 * dp_time(bf16).value()).epsilon(1e-3));
  // ZeRO-1: the reduce-scatter doubles, the weights' all-gather stays 16-bit.
  p.training.grad_precision.reset();
  auto const z1 = model.step_time(p, data_parallel(16, 1));
  p.training.grad_precision = precision::fp32;
  auto const z1_fp32 = model.step_time(p, data_parallel(16, 1));
  REQUIRE(z1.comm.size() == 2);
  REQUIRE(z1_fp32.comm.size() == 2);
  CHECK(z1_fp32.comm[0].op == collective::reduce_scatter);
  CHECK(total(z1_fp32.comm[0]) == Approx(2 * total(z1.comm[0])).epsilon(1e-12));
  CHECK(z1_fp32.comm[0].time.value() == Approx(2 * z1.comm[0].time.value()).epsilon(1e-3));
  CHECK(z1_fp32.comm[1].op == collective::all_gather);
  CHECK(total(z1_fp32.comm[1]) == Approx(total(z1.comm[1])).epsilon(1e-12));
}

TEST_CASE("a gradient sync after the backward is exposed whole; under it, only its tail") {
  program p = two_nodes();
  p.training.global_batch = 16;
  analytic_cost_model const model;
  for (int zero : {0, 1, 2, 3}) {
    INFO("zero " << zero);
    p.training.overlap_grad_sync = true;
    auto const under = model.step_time(p, data_parallel(16, zero));
    p.training.overlap_grad_sync = false;
    auto const after = model.step_time(p, data_parallel(16, zero));
    CHECK(after.exposed_comm > under.exposed_comm);
    CHECK(after.step > under.step);
    if (zero <= 2) {
      auto const* sync = &after.comm.front();
      CHECK(sync->exposed.value() == sync->time.value());
    }
  }
}

TEST_CASE("the compute's slow-down under the communication it hides is overlap_slowdown x the hidden time") {
  // Two nodes on 100 Gbit/s, dp 16: the gradients' reduce-scatter and the
  // parameters' all-gather run under the backward and the forward.
  program p = two_nodes();
  analytic_cost_model const model;
  auto const s = data_parallel(16, 1);
  auto const t = model.step_time(p, s);
  seconds hidden;
  for (auto const& e : t.comm) hidden += e.time - e.exposed;
  REQUIRE(hidden.value() > 0.1);
  CHECK(p.cluster.device.overlap_slowdown == 0.12);
  CHECK(t.slowdown.value() == Approx(0.12 * hidden.value()).epsilon(1e-12));
  CHECK(t.host_wait.value() == 0);  // 4,096 tokens a micro-batch keep the GPU ahead of the host
  // Without the slow-down the compute is shorter by exactly that part.
  p.cluster.device.overlap_slowdown = 0;
  auto const free = model.step_time(p, s);
  CHECK(free.slowdown.value() == 0);
  CHECK((t.compute - free.compute).value() == Approx(t.slowdown.value()).epsilon(1e-9));
}

TEST_CASE("grad_reduce = all_reduce makes ZeRO-1 reduce every gradient everywhere: twice the traffic") {
  program p = two_nodes();
  p.cluster.comm_efficiency = 1.0;
  p.cluster.inter_latency = seconds(0);
  p.training.global_batch = 16;
  analytic_cost_model const model;
  auto const rs = model.step_time(p, data_parallel(16, 1));
  p.training.grad_reduce_scatter = false;
  auto const ar = model.step_time(p, data_parallel(16, 1));
  CHECK(ar.comm.front().op == collective::all_reduce);
  CHECK(ar.comm.front().size == rs.comm.front().size);
  CHECK(bytes_moved(collective::all_reduce, ar.comm.front().size, 16) ==
        2 * bytes_moved(collective::reduce_scatter, rs.comm.front().size, 16));
  CHECK(ar.comm.front().time.value() == Approx(2 * rs.comm.front().time.value()).epsilon(0.02));
  CHECK(ar.comm.back().op == collective::all_gather);
}

TEST_CASE("gradients kept in fp32 and reduced as bf16 move half the bytes of an fp32 reduce") {
  // DeepSpeed's BF16_Optimizer: fp32 gradients cast to communication_data_type
  // (bf16) for the all-reduce; the memory keeps them in fp32.
  program p = two_nodes();
  p.training.global_batch = 16;
  p.training.grad_precision = precision::fp32;
  analytic_cost_model const model;
  auto const fp32 = model.step_time(p, data_parallel(16, 0));
  p.training.grad_comm_precision = precision::bf16;
  auto const bf16 = model.step_time(p, data_parallel(16, 0));
  REQUIRE(fp32.comm.front().group == comm_group::dp);
  auto const moved = [](time_breakdown const& t) {
    return t.comm.front().size.value() * static_cast<double>(t.comm.front().count);
  };
  // Buckets of at most 25 MiB, half as many.
  CHECK(moved(bf16) * 2 == Approx(moved(fp32)).epsilon(1e-12));
  CHECK(bf16.comm.front().count * 2 == fp32.comm.front().count + 1);
  CHECK(grad_element_bytes(p.model, p.training) == 4);
  CHECK(grad_comm_bytes(p.model, p.training) == 2);
  p.training.grad_comm_precision.reset();
  CHECK(grad_comm_bytes(p.model, p.training) == 4);  // unset: the kept precision's
}

TEST_CASE("a tied embedding split over the pipeline sums its two gradient copies across the ends") {
  program p = two_nodes();
  p.cluster.comm_efficiency = 1.0;
  p.cluster.network_efficiency = 1.0;
  // Latencies written (as a cluster block writes them) replace NCCL's.
  p.cluster.inter_latency = seconds(0);
  p.cluster.intra_latency = seconds(0);
  p.cluster.keys["inter_latency"] = p.cluster.keys["intra_latency"] = span{};
  p.training.global_batch = 16;
  analytic_cost_model const model;
  strategy s = data_parallel(2, 1);
  s.tp = 4;
  s.pp = 2;
  // Untied: nothing to sum.
  CHECK(find_comm(model.step_time(p, s), comm_group::embedding) == nullptr);
  p.model.tied_embeddings = true;
  auto const t = model.step_time(p, s);
  auto const* e = find_comm(t, comm_group::embedding);
  REQUIRE(e != nullptr);
  // 32,000 rows padded to 32,256 (128 x tp), hidden 4096, over tp 4, bf16.
  CHECK(e->size.value() == 32256.0 * 4096 / 4 * 2);
  CHECK(e->ranks == 2);
  CHECK(e->count == 1);
  CHECK(e->exposed.value() == e->time.value());
  // pp is outermost: the two stages sit on different nodes, one GPU each of
  // eight sharing the node's 100 Gbit/s; an all-reduce of 2 moves the size once.
  CHECK(e->link == link_kind::inter);
  CHECK(e->time.value() == Approx(32256.0 * 4096 / 4 * 2 / (12.5e9 / 8)).epsilon(1e-9));
  // DeepSpeed's BF16_Optimizer sums them in its fp32 gradients (tied_hp_grad):
  // twice the bytes with bf16, and the 16-bit gradients still with fp16.
  p.training.tied_hp_grad = true;
  auto const hp = model.step_time(p, s);
  CHECK(find_comm(hp, comm_group::embedding)->size.value() == 32256.0 * 4096 / 4 * 4);
  CHECK(hp.step.value() == Approx(t.step.value() + e->time.value()).epsilon(1e-9));
  p.model.prec = precision::fp16;
  CHECK(find_comm(model.step_time(p, s), comm_group::embedding)->size.value() == 32256.0 * 4096 / 4 * 2);
  p.model.prec = precision::bf16;
  p.training.tied_hp_grad = false;
  // One stage: the table is one tensor, nothing to sum.
  s.pp = 1;
  s.dp = 4;
  CHECK(find_comm(model.step_time(p, s), comm_group::embedding) == nullptr);
}

TEST_CASE("ZeRO-2 reduce-scatters every micro-batch's gradients: 16 micro-batches, 16 times each layer") {
  // A stage that keeps only a shard of the gradients cannot accumulate them
  // across micro-batches (DeepSpeed stage 2, FSDP SHARD_GRAD_OP); ZeRO-1
  // (Megatron's distributed optimizer) reduces once a step.
  program p = two_nodes();
  p.training.global_batch = 256;  // dp 16 x micro_batch 1 x 16 micro-batches
  analytic_cost_model const model;
  auto reduce_scatters = [&](int zero) {
    auto const t = model.step_time(p, data_parallel(16, zero));
    std::int64_t n = 0;
    for (auto const& c : t.comm)
      if (c.op == collective::reduce_scatter) n += c.count;
    return n;
  };
  auto const layers = p.model.layers;
  CHECK(reduce_scatters(2) == 16 * (layers + 1));
  CHECK(reduce_scatters(1) < 16 * (layers + 1));
  p.training.global_batch = 16;  // one micro-batch
  CHECK(reduce_scatters(2) == layers + 1);
}

TEST_CASE("a tensor-parallel all-gather overlapped by userbuffers exposes about one chunk") {
  // Llama 7B, tp = 4 in one 4-GPU node with sequence parallelism: the qkv
  // and MLP up GEMMs outlast the all-gathers before them, so each
  // overlapped all-gather exposes its first of tp chunks; the o projection
  // is shorter than its reduce-scatter, which stays partly exposed.
  program p = two_nodes(1, 4);
  p.training.global_batch = 8;
  strategy s;
  s.tp = 4, s.dp = 1, s.sequence_parallel = true, s.micro_batch = 8;
  analytic_cost_model const model;
  auto const open = model.step_time(p, s);
  p.training.tp_comm_overlap = true;
  auto const hidden = model.step_time(p, s);
  auto entry = [](time_breakdown const& t, collective op) {
    for (auto const& c : t.comm)
      if (c.group == comm_group::tp && c.op == op) return c;
    return comm_entry{};
  };
  auto const ag_open = entry(open, collective::all_gather);
  auto const ag_hidden = entry(hidden, collective::all_gather);
  CHECK(ag_open.exposed.value() == Approx(ag_open.time.value()));
  CHECK(ag_hidden.time.value() == Approx(ag_open.time.value()));
  CHECK(ag_hidden.exposed.value() == Approx(ag_hidden.time.value() / 4));
  auto const rs_hidden = entry(hidden, collective::reduce_scatter);
  CHECK(rs_hidden.exposed.value() > rs_hidden.time.value() / 4);
  CHECK(rs_hidden.exposed.value() < rs_hidden.time.value());
  CHECK(hidden.step < open.step);
  // Without sequence parallelism there is nothing to overlap (TE needs it).
  s.sequence_parallel = false;
  p.training.tp_comm_overlap = false;
  auto const ar_open = model.step_time(p, s).step;
  p.training.tp_comm_overlap = true;
  CHECK(model.step_time(p, s).step.value() == Approx(ar_open.value()));
}

TEST_CASE("Megatron-Core's gradient buckets: max(40M, 1M x dp) parameters, 157 at dp 64 and 10 at dp 1,024") {
  // A 10.0 B-parameter model at tp = pp = 1: distributed_data_parallel.py
  // sizes a bucket at max(40,000,000, 1,000,000 x dp x cp) parameters
  // (FRAMEWORKS.md M1), so the reduce-scatter is issued in
  // ceil(10.0e9 / 64e6) = 157 calls at dp 64 and ceil(10.0e9 / 1.024e9) =
  // 10 at dp 1,024; a fixed 25 MiB bucket of fp32 gradients would be 382.
  program p = two_nodes(8, 8);
  p.model.layers = 41;
  p.model.hidden = 4096;
  p.model.heads = 32;
  p.model.kv_heads = 8;
  p.model.ffn = 14336;
  p.model.vocab = 128256;
  p.training.grad_bucket = bucket_rule::scaled;
  p.training.grad_precision = precision::fp32;
  auto const params = static_cast<double>(count_params(p.model).total);
  REQUIRE(params == Approx(10.0e9).epsilon(0.01));
  CHECK(std::ceil(params / 64e6) == 157);
  CHECK(std::ceil(params / 1.024e9) == 10);
  analytic_cost_model const model;
  auto buckets = [&](std::int64_t nodes) {
    p.cluster.nodes = nodes;
    p.training.global_batch = nodes * 8;
    auto const t = model.step_time(p, data_parallel(nodes * 8, 1));
    auto const* rs = find_comm(t, comm_group::dp);
    REQUIRE(rs);
    CHECK(rs->op == collective::reduce_scatter);
    return rs->count;
  };
  CHECK(buckets(8) == 157);
  CHECK(buckets(128) == 10);
  p.training.grad_bucket = bucket_rule::fixed;
  p.training.ddp_bucket_size = bytes(25.0 * 1024 * 1024);
  CHECK(buckets(8) == static_cast<std::int64_t>(std::ceil(params * 4 / (25.0 * 1024 * 1024))));
}

TEST_CASE("an interleaved pipeline syncs each chunk's gradients under the cooldown") {
  // Megatron-Core launches chunk j's gradient reduce-scatter when its last
  // backward is done (schedules.py grad_sync_func): with v chunks the
  // earlier chunks' syncs hide under (v - 1) / v x pp micro-batch
  // backwards; without interleaving only the last micro-batch's backward
  // covers the sync.
  program p = two_nodes(8, 8);
  p.training.global_batch = 64;
  p.training.grad_bucket = bucket_rule::scaled;
  strategy s = data_parallel(16, 1);
  s.pp = 4;
  s.micro_batch = 1;
  analytic_cost_model const model;
  auto exposed = [&](std::int64_t v) {
    s.virtual_stages = v;
    auto const t = model.step_time(p, s);  // find_comm points into it
    auto const* rs = find_comm(t, comm_group::dp);
    REQUIRE(rs);
    return rs->exposed;
  };
  auto const plain = exposed(1);
  auto const interleaved = exposed(4);
  CHECK(plain.value() > 0);
  CHECK(interleaved < plain);
}

namespace {

// One node of eight under a Llama layer (RMSNorm, rotary embeddings), each
// GPU its own data-parallel replica.
program llama_node() {
  program p = two_nodes(1, 8);
  p.model.norm = norm_kind::rmsnorm;
  p.model.position = position_kind::rotary;
  return p;
}

// `more` runs `kernels` more element-wise kernels than `less` moving
// `extra_bytes` more in a layer's forward; its backward moves twice the
// bytes and issues twice the kernels.
void check_extra_elementwise(program const& p, stage_compute const& more, stage_compute const& less,
                             double extra_bytes, int kernels) {
  auto const& g = p.cluster.device;
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;  // memory-bound operators' rate
  double const latency = g.kernel_latency.value();
  CHECK(more.layer_kernels - less.layer_kernels == kernels);
  CHECK((more.layer_forward - less.layer_forward).value() ==
        Approx(extra_bytes / hbm + kernels * latency).epsilon(1e-9));
  CHECK((more.layer_backward - less.layer_backward).value() ==
        Approx(2 * extra_bytes / hbm + 2 * kernels * latency).epsilon(1e-9));
}

}  // namespace

TEST_CASE("PyTorch eager costs each element-wise operator as it runs: Llama's RMSNorm, rotary and SwiGLU split, "
          "LayerNorm and GELU not") {
  program p = llama_node();
  strategy const s = data_parallel(8, 0);
  p.training.fused_elementwise = true;
  auto const fused = compute_per_micro_batch(p, s);
  p.training.fused_elementwise = false;
  auto const eager = compute_per_micro_batch(p, s);
  // One micro-batch of 4,096 tokens through a Llama 7B layer (h 4,096, ffn
  // 11,008, q + kv 8,192 wide), 2-byte elements. Eager over fused: two
  // RMSNorms move 9x (36 bytes an element against 4), SwiGLU 10/6 x, q's
  // and k's rotation 5x; 26 kernels against 6.
  double const t = 4096, h = 4096, ffn = 11008;
  double const extra_bytes = 2 * (2 * 2 * t * h * (9 - 1) + t * 3 * ffn * (10.0 / 6 - 1) + 2 * t * 8192 * (5 - 1));
  check_extra_elementwise(p, eager, fused, extra_bytes, 20);

  // GPT's or MPT's layer: F.layer_norm and F.gelu are one kernel each, eager
  // or fused, and ALiBi adds nothing outside the attention kernel.
  p.model.mlp = mlp_kind::gelu;
  p.model.norm = norm_kind::layernorm;
  p.model.position = position_kind::alibi;
  p.model.ffn = 4 * 4096;
  p.training.fused_elementwise = true;
  auto const gpt_fused = compute_per_micro_batch(p, s);
  p.training.fused_elementwise = false;
  auto const gpt_eager = compute_per_micro_batch(p, s);
  CHECK(gpt_eager.layer_forward == gpt_fused.layer_forward);
  CHECK(gpt_eager.layer_kernels == gpt_fused.layer_kernels);
  CHECK(gpt_fused.layer_kernels == fused.layer_kernels - 1);  // no rotary kernel
}

TEST_CASE("torchtitan's complex-number rotary stays eager when the rest is compiled") {
  program p = llama_node();
  strategy const s = data_parallel(8, 0);
  p.training.fused_elementwise = true;
  auto const fused = compute_per_micro_batch(p, s);
  p.training.fused_rotary = false;
  auto const complex_rotary = compute_per_micro_batch(p, s);
  // q's and k's rotation (8,192 wide at 4,096 tokens, 2-byte elements) as
  // the cast to fp32, the complex multiply and the cast back: 20 bytes an
  // element against a fused kernel's 4, six kernels against one.
  check_extra_elementwise(p, complex_rotary, fused, 2 * 2 * 4096.0 * 8192 * (5 - 1), 5);
  // Eager code runs the same three kernels whatever fused_rotary says.
  p.training.fused_elementwise = false;
  auto const eager = compute_per_micro_batch(p, s);
  p.training.fused_rotary = true;
  CHECK(compute_per_micro_batch(p, s).layer_forward == eager.layer_forward);
  // And a model without rotary embeddings does not notice it.
  p.model.position = position_kind::alibi;
  p.training.fused_elementwise = true;
  auto const alibi = compute_per_micro_batch(p, s);
  p.training.fused_rotary = false;
  CHECK(compute_per_micro_batch(p, s).layer_forward == alibi.layer_forward);
}

TEST_CASE("FSDP that keeps a pipeline stage gathered gathers each layer once a step and reduces once") {
  program p = two_nodes(2, 8);
  p.model.norm = norm_kind::rmsnorm;
  p.model.position = position_kind::rotary;
  p.training.global_batch = 32;
  strategy s = data_parallel(8, 3);
  s.pp = 2;
  s.micro_batch = 1;  // 32 / 8 = 4 micro-batches a step
  analytic_cost_model const model;
  auto calls = [&](collective op) {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(p, s).comm)
      if (e.op == op && e.group != comm_group::tp) n += e.count;
    return n;
  };
  auto time = [&](collective op) {
    seconds t;
    for (auto const& e : model.step_time(p, s).comm)
      if (e.op == op && e.group != comm_group::tp) t += e.time;
    return t.value();
  };
  // Regathered every micro-batch: 16 layers a stage, forward and backward,
  // and the stage's other unit once each way, 4 times.
  p.training.fsdp_reshard_with_pp = true;
  CHECK(calls(collective::all_gather) == (2 * 16 + 2) * 4);
  CHECK(calls(collective::reduce_scatter) == (16 + 1) * 4);
  double const gathers = time(collective::all_gather);
  double const scatters = time(collective::reduce_scatter);
  // torchtitan with PyTorch's pipelining: once, the same calls 8 and 4
  // times fewer.
  p.training.fsdp_reshard_with_pp = false;
  CHECK(calls(collective::all_gather) == 16 + 1);
  CHECK(calls(collective::reduce_scatter) == 16 + 1);
  CHECK(time(collective::all_gather) == Approx(gathers / 8));
  CHECK(time(collective::reduce_scatter) == Approx(scatters / 4));
}

TEST_CASE("hybrid sharding with a stage kept gathered all-reduces across replicas once a step") {
  program p = two_nodes(2, 8);
  p.training.global_batch = 32;
  p.training.grad_sync = grad_sync_mode::per_micro_batch;  // torchtitan's
  strategy s = data_parallel(8, 3);
  s.pp = 2;
  s.micro_batch = 1;  // 4 micro-batches a step
  s.shard = shard_group{shard_group::kind::size, 4};  // 2 replicas of 4 shards
  analytic_cost_model const model;
  auto replica_calls = [&] {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(p, s).comm)
      if (e.group == comm_group::replicate && e.op == collective::all_reduce) n += e.count;
    return n;
  };
  // Regathered every micro-batch: the replicas reduce after each backward.
  p.training.fsdp_reshard_with_pp = true;
  std::int64_t const every = replica_calls();
  REQUIRE(every > 0);
  CHECK(every % 4 == 0);
  // Kept gathered (PyTorch's pipelining defers the sync to the last
  // backward): once a step, a quarter of the calls.
  p.training.fsdp_reshard_with_pp = false;
  CHECK(replica_calls() == every / 4);
}

// pytorch/benchmark ff65cb6 measured a Triton flash kernel at 512 to 16 K
// keys on H100: its rate is the asymptote x keys / (keys + 240). With the
// tokens fixed, the causal kernel's time grows as its mean key length plus
// 240: 320 keys at 512 (4 blocks of 128: 5/8 of the sequence), 2,112 at
// 4,096 (33/64 of it).
TEST_CASE("llm-foundry's Triton attention pays a query block's fixed cost of 240 keys, as measured") {
  auto core_at = [](attention_backend kernel, std::int64_t seq, std::int64_t micro_batch) {
    program p = two_nodes();
    p.model.attention = attention_kind::flash;
    p.model.seq_len = seq;
    p.training.attention_kernel = kernel;
    strategy s = data_parallel(16, 0);
    s.micro_batch = micro_batch;
    auto const sc = compute_per_micro_batch(p, s);
    seconds const latency = p.cluster.device.kernel_latency;
    return std::pair{(sc.layer_attention_core - latency).value(), (sc.layer_attention_core_backward - latency).value()};
  };
  CHECK(query_block_keys(attention_backend::triton) == 240.0);
  CHECK_FALSE(query_block_keys(attention_backend::fused));
  auto const [short_fwd, short_bwd] = core_at(attention_backend::triton, 512, 8);
  auto const [long_fwd, long_bwd] = core_at(attention_backend::triton, 4096, 1);
  CHECK(long_fwd / short_fwd == Approx((2112.0 + 240) / (320 + 240)).epsilon(1e-9));
  CHECK(long_bwd / short_bwd == Approx((2112.0 + 240) / (320 + 240)).epsilon(1e-9));
  // cuDNN's share was read at one length: the GEMM tile's overhead (H100's
  // 128 of K) on the whole sequence stands for its fixed cost.
  double const fused_short = core_at(attention_backend::fused, 512, 8).first;
  double const fused_long = core_at(attention_backend::fused, 4096, 1).first;
  CHECK(fused_long / fused_short == Approx((2112.0 * 4224 / 4096) / (320.0 * 640 / 512)).epsilon(1e-9));
}

TEST_CASE("Blackwell Ultra's doubled exponential rate speeds the tuned attention kernels 1.10x, as measured") {
  // cuDNN on GB300 against GB200 the same day, forward and backward at 8 K
  // tokens: 1.08-1.11x (docs/research/hardware.md s.6).
  auto const gb200 = *catalog_gpu("GB200");
  auto const gb300 = *catalog_gpu("GB300");
  auto const b300 = *catalog_gpu("B300");
  CHECK(gb200.exp_per_clock == 16);
  CHECK(gb300.exp_per_clock == 32);
  CHECK(b300.exp_per_clock == 32);
  CHECK(attention_efficiency(gb200, attention_backend::fused) == 0.52);
  CHECK(attention_efficiency(gb300, attention_backend::fused) == Approx(0.572));
  CHECK(attention_efficiency(b300, attention_backend::flash3) == Approx(0.572));
  // FlashAttention-2 and llm-foundry's Triton kernel are not tuned for it.
  CHECK(attention_efficiency(gb300, attention_backend::flash) == attention_efficiency(gb200, attention_backend::flash));
  CHECK(attention_efficiency(gb300, attention_backend::triton) ==
        attention_efficiency(gb200, attention_backend::triton));
  // A GPU block's own figure is the figure.
  auto own = gb300;
  own.attention_efficiency = 0.4;
  CHECK(attention_efficiency(own, attention_backend::fused) == 0.4);
}

TEST_CASE("FlexAttention runs at 0.86 of FlashAttention-2's share: 90 % of its forward, 85 % of its backward") {
  // PyTorch's blog (Aug. 2024), A100, causal: the step's time weighs the
  // backward three quarters, 1 / (0.25 / 0.90 + 0.75 / 0.85) = 0.86.
  CHECK(attention_efficiency(*catalog_gpu("A100_SXM_80GB"), attention_backend::flex) == Approx(0.473));
  CHECK(attention_efficiency(*catalog_gpu("H100_SXM"), attention_backend::flex) == Approx(0.2838));
  // Not one of the kernels tuned for Blackwell Ultra's exponentials.
  CHECK(attention_efficiency(*catalog_gpu("GB300"), attention_backend::flex) == Approx(0.258));
}

namespace {

// Mixtral-like: Llama 3 8B's shapes, 8 experts, top 2, on 4 x 8 H100, 512 sequences a step.
// The activation term of the tokens routed to a GPU's experts, in bytes
// (-1 where the strategy keeps none).
double experts_input(program const& q, strategy const& t) {
  for (auto const& term : activation_terms(q.model, t))
    if (term.name == "experts' input (top-k copies of the tokens routed to this GPU)") return term.size.value();
  return -1.0;
}

// Whether every all-to-all of the plan's step is exposed.
bool a2a_all_exposed(program const& p, strategy const& s) {
  auto const step = analytic_cost_model{}.step_time(p, s);  // find_comm points into it
  auto const a2a = find_comm(step, comm_group::ep);
  return a2a && a2a->exposed == a2a->time;
}

// Mixtral-like's data-parallel 32 with its experts over 8, ZeRO-1, no
// recomputation.
strategy dp32_ep8() {
  strategy s;
  s.dp = 32, s.ep = 8, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  return s;
}

program mixtral_like_on_4x8() {
  auto m = dtplan::test::llama3_8b();
  m.experts = 8;
  m.experts_per_token = 2;
  return dtplan::test::program_of(m, dtplan::test::nodes_of("c", 4, dtplan::test::h100_sxm()), 512);
}

}  // namespace

TEST_CASE("a mixture's expert gradients sum over the ranks that hold the same experts", "[comm][golden]") {
  // Mixtral-like (Llama 3 8B's shapes, 8 experts, top 2) on 4 x 8 H100,
  // dp 32. With ep 8 each expert is on 32 / 8 = 4 ranks, one per block of
  // 8: Megatron-Core reduces the experts' gradients over that expert
  // data-parallel group, from buffers of their own, and the dense weights'
  // over all 32 (distributed_data_parallel.py:209-212, 378-384).
  auto p = mixtral_like_on_4x8();
  strategy s;
  s.dp = 32, s.ep = 8, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  auto const sh = shape_of(p, s);
  CHECK(sh.expert_sync.size == 4);
  CHECK(sh.experts_sync_apart());
  // Rank 0's block of ep is ranks 0-7; the ranks that hold its experts are
  // 0, 8, 16 and 24, one on each node.
  CHECK(sh.expert_sync.placement.nodes == 4);
  CHECK(sh.expert_sync.placement.max_per_node == 1);
  double const grad_e = grad_comm_bytes(p.model, p.training);
  auto const st = sh.stage(0);
  auto const on = [](time_breakdown const& t, comm_group g, collective op) {
    double bytes = 0;
    std::int64_t calls = 0;
    for (auto const& e : t.comm)
      if (e.group == g && e.op == op) bytes += e.size.value() * static_cast<double>(e.count), calls += e.count;
    return std::pair{bytes, calls};
  };
  analytic_cost_model const model;
  auto const t = model.step_time(p, s);
  auto const dense = on(t, comm_group::dp, collective::reduce_scatter);
  auto const experts = on(t, comm_group::expert_dp, collective::reduce_scatter);
  CHECK(dense.first == Approx((st.params - st.expert_params) * grad_e).epsilon(1e-12));
  CHECK(experts.first == Approx(st.expert_params * grad_e).epsilon(1e-12));
  // Their updated weights are gathered over the same groups.
  CHECK(on(t, comm_group::expert_dp, collective::all_gather).first == Approx(st.expert_params * 2).epsilon(1e-12));
  auto const entry = find_comm(t, comm_group::expert_dp);
  REQUIRE(entry);
  CHECK(entry->ranks == 4);

  // ep = dp: each expert on one rank, nothing to sum its gradients with.
  s.ep = 32;
  auto const alone = model.step_time(p, s);
  CHECK(shape_of(p, s).expert_sync.size == 1);
  CHECK_FALSE(find_comm(alone, comm_group::expert_dp));
  auto const st32 = shape_of(p, s).stage(0);
  CHECK(on(alone, comm_group::dp, collective::reduce_scatter).first ==
        Approx((st32.params - st32.expert_params) * grad_e).epsilon(1e-12));

  // ZeRO-3: every layer's experts gathered twice and reduce-scattered once a
  // micro-batch over their group; the embedding and logits only with the
  // dense weights (32 layers + 1 unit).
  s.ep = 8, s.zero = 3;
  auto const z3 = model.step_time(p, s);
  auto const micro = shape_of(p, s).grad_accum;
  CHECK(on(z3, comm_group::expert_dp, collective::reduce_scatter).second == 32 * micro);
  CHECK(on(z3, comm_group::dp, collective::reduce_scatter).second == 33 * micro);
  CHECK(on(z3, comm_group::expert_dp, collective::all_gather).second == 2 * 32 * micro);

  // Hybrid sharding over nodes (ZeRO-1 within each node of 8, 4 replicas):
  // a node holds one block of ep 8, one rank of each expert, so the
  // experts' state is not sharded and nothing reduce-scatters their
  // gradients; the replicas all-reduce each GPU's whole expert gradients
  // beside its 1/8 of the dense ones (Megatron-Core's optimizer instances,
  // core_v0.13.0 parallel_state.py:1259-1320).
  s.zero = 1, s.ep = 8;
  s.shard = shard_group{shard_group::kind::node, 0};
  {
    auto const hsh = shape_of(p, s);
    CHECK(hsh.experts_sync_apart());
    CHECK(hsh.hybrid());
    CHECK(hsh.expert_shard.size == 1);
    CHECK(hsh.expert_shard_ranks() == 1);
    auto const hybrid = model.step_time(p, s);
    CHECK_FALSE(find_comm(hybrid, comm_group::expert_dp));
    CHECK_FALSE(find_comm(hybrid, comm_group::expert_shard));
    auto const hst = hsh.stage(0);
    CHECK(on(hybrid, comm_group::shard, collective::reduce_scatter).first ==
          Approx((hst.params - hst.expert_params) * grad_e).epsilon(1e-12));
    CHECK(on(hybrid, comm_group::replicate, collective::all_reduce).first ==
          Approx(((hst.params - hst.expert_params) / 8 + hst.expert_params) * grad_e).epsilon(1e-12));
    // Shards of 16 (two nodes): each expert on 2 ranks of a shard group,
    // 8 apart, its state split over them and its gradients reduce-scattered
    // there, half of them all-reduced across the 2 replicas.
    s.shard = shard_group{shard_group::kind::size, 16};
    auto const two = shape_of(p, s);
    CHECK(two.expert_shard.size == 2);
    CHECK(two.expert_shard_ranks() == 2);
    CHECK(two.expert_shard.placement.nodes == 2);
    auto const split = model.step_time(p, s);
    auto const entry = find_comm(split, comm_group::expert_shard);
    REQUIRE(entry);
    CHECK(entry->ranks == 2);
    CHECK(on(split, comm_group::expert_shard, collective::reduce_scatter).first ==
          Approx(hst.expert_params * grad_e).epsilon(1e-12));
    CHECK(on(split, comm_group::replicate, collective::all_reduce).first ==
          Approx(((hst.params - hst.expert_params) / 16 + hst.expert_params / 2) * grad_e).epsilon(1e-12));
    // Shards of 4: half an ep block, which Megatron-Core refuses.
    s.shard = shard_group{shard_group::kind::size, 4};
    CHECK_FALSE(is_legal(p, s));
    s.shard = shard_group{};
  }
  // A dense model has none.
  s = strategy{};
  s.dp = 32, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  p.model = dtplan::test::llama3_8b();
  CHECK_FALSE(find_comm(model.step_time(p, s), comm_group::expert_dp));
}

TEST_CASE("a mixture's MLP under tensor parallelism: the dispatcher's collectives, none with etp = 1", "[comm][golden]") {
  // Megatron-Core's all-to-all dispatcher (core_v0.13.0 moe/
  // token_dispatcher.py) under sequence parallelism: each rank sends top-k
  // copies of its s / tp tokens over ep; with etp = tp it then gathers what
  // arrived over the tp ranks (k x the layer's s.b.h) and reduce-scatters
  // the experts' output back, outside userbuffers; with etp = 1 the MLP has
  // no tensor-parallel collective. Attention keeps its all-gather and
  // reduce-scatter per pass. 4 x 8 H100, tp 2, dp 16, ep 8, no recompute.
  auto p = mixtral_like_on_4x8();
  auto const& m = p.model;
  strategy s;
  s.dp = 16, s.tp = 2, s.ep = 8, s.zero = 1, s.sequence_parallel = true, s.checkpoint = checkpoint_mode::none;
  analytic_cost_model const model;
  auto const sh = shape_of(p, s);
  double const layer = static_cast<double>(sh.tokens * m.hidden) * 2;  // s.b.h in bf16
  auto const micro = sh.grad_accum;
  auto const calls = [](time_breakdown const& t, comm_group g, collective op, double size) {
    std::int64_t n = 0;
    for (auto const& e : t.comm)
      if (e.group == g && e.op == op && e.size.value() == size) n += e.count;
    return n;
  };
  auto const split = model.step_time(p, s);
  // Attention: one all-gather and one reduce-scatter a layer and pass.
  CHECK(calls(split, comm_group::tp, collective::all_gather, layer) == 2 * 32 * micro);
  CHECK(calls(split, comm_group::tp, collective::reduce_scatter, layer) == 2 * 32 * micro);
  // The dispatcher's, two copies of each token.
  CHECK(calls(split, comm_group::tp, collective::all_gather, 2 * layer) == 2 * 32 * micro);
  CHECK(calls(split, comm_group::tp, collective::reduce_scatter, 2 * layer) == 2 * 32 * micro);
  // Four all-to-alls a layer (dispatch and combine, forward and backward)
  // of this rank's half of the tokens, twice over.
  CHECK(calls(split, comm_group::ep, collective::all_to_all, 2 * layer / 2) == 4 * 32 * micro);

  s.etp = 1;
  auto const whole = model.step_time(p, s);
  CHECK(calls(whole, comm_group::tp, collective::all_gather, layer) == 2 * 32 * micro);
  CHECK(calls(whole, comm_group::tp, collective::all_gather, 2 * layer) == 0);
  CHECK(calls(whole, comm_group::tp, collective::reduce_scatter, 2 * layer) == 0);
  CHECK(calls(whole, comm_group::ep, collective::all_to_all, 2 * layer / 2) == 4 * 32 * micro);
  // ep 8 of tp x dp = 32 ranks: blocks of 8 consecutive ranks, one node;
  // each expert's copies on 32 / 8 = 4 ranks, one a node.
  auto const a2a = find_comm(whole, comm_group::ep);
  REQUIRE(a2a);
  CHECK(a2a->link == link_kind::intra);
  auto const experts = find_comm(whole, comm_group::expert_dp);
  REQUIRE(experts);
  CHECK(experts->ranks == 4);
  CHECK(experts->link == link_kind::inter);
  // A shared expert is a dense MLP beside them: its own all-gather and
  // reduce-scatter a layer and pass, and its weights on every rank / tp.
  {
    auto q = p;
    q.model.shared_expert_ffn = 4096;
    auto const with_shared = model.step_time(q, s);
    CHECK(calls(with_shared, comm_group::tp, collective::all_gather, layer) == 2 * 2 * 32 * micro);
    CHECK(calls(with_shared, comm_group::tp, collective::reduce_scatter, layer) == 2 * 2 * 32 * micro);
    auto const shq = shape_of(q, s);
    auto const without = shape_of(p, s);
    CHECK(shq.layer_params - without.layer_params == Approx(3.0 * 4096 * 4096 / 2));
    CHECK(std::string(shq.gemms[3].name) == "shared-up");
    CHECK(shq.gemms[3].forward.n == 2 * 4096 / 2);
    CHECK(std::string(shq.gemms[static_cast<std::size_t>(shq.gemm_count - 2)].name) == "mlp-up");
    CHECK(estimate_memory(shq, false).activations > estimate_memory(without, false).activations);
  }
  // Full recomputation dispatches and combines again: six a layer.
  s.checkpoint = checkpoint_mode::full;
  CHECK(calls(model.step_time(p, s), comm_group::ep, collective::all_to_all, 2 * layer / 2) == 6 * 32 * micro);
  s.checkpoint = checkpoint_mode::none;
  // Without sequence parallelism (etp = tp): whole tokens to the
  // experts, their output all-reduced over tp at k x s.b.h.
  s.etp = 0, s.sequence_parallel = false;
  auto const open = model.step_time(p, s);
  CHECK(calls(open, comm_group::tp, collective::all_reduce, layer) == 2 * 32 * micro);
  CHECK(calls(open, comm_group::tp, collective::all_reduce, 2 * layer) == 2 * 32 * micro);
  CHECK(calls(open, comm_group::ep, collective::all_to_all, 2 * layer) == 4 * 32 * micro);
}

TEST_CASE("a mixture's experts one after another: a call per local expert", "[compute][golden]") {
  // Mixtral-like on 4 x 8 H100, dp 32, ep 2: 8 / 2 = 4 experts on each GPU.
  // Grouped (TEGroupedMLP, torch._grouped_mm) each expert matrix is one
  // call over the 4; one after another (Megatron-Core's SequentialMLP,
  // torchtitan's for-loop) it is 4 calls, each on one expert's rows, with
  // an activation of its own and a concatenation of their outputs.
  auto p = mixtral_like_on_4x8();
  strategy s;
  s.dp = 32, s.ep = 2, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  auto const grouped = shape_of(p, s);
  REQUIRE(grouped.local_experts == 4);
  CHECK(grouped.expert_gemm_calls() == 1);
  auto const up_at = static_cast<std::size_t>(grouped.gemm_count - 2);
  auto const up = grouped.gemms[up_at];
  CHECK(up.role == gemm_role::experts);
  CHECK(grouped.gemms[0].role == gemm_role::attention);
  CHECK(up.forward.batch == 4);
  auto const one = compute_per_micro_batch(grouped);

  p.training.grouped_gemm = false;
  auto const sequential = shape_of(p, s);
  CHECK(sequential.expert_gemm_calls() == 4);
  auto const four = compute_per_micro_batch(sequential);
  auto const& g = p.cluster.device;
  gemm_shape const call{up.forward.m, up.forward.n, up.forward.k, 1};
  CHECK(one.gemm_forward[up_at].value() == Approx(gemm_time(g, up.forward, precision::bf16).value()).epsilon(1e-12));
  CHECK(four.gemm_forward[up_at].value() == Approx(4 * gemm_time(g, call, precision::bf16).value()).epsilon(1e-12));
  CHECK(four.gemm_forward[up_at] > one.gemm_forward[up_at]);
  // Forward: 3 more calls of each of the two expert GEMMs, 3 more
  // activations, the concatenation; backward: two GEMMs a call, each
  // activation's backward twice.
  CHECK(four.layer_kernels - one.layer_kernels == 2 * 3 + 3 + 1);
  CHECK(four.layer_kernels_backward - one.layer_kernels_backward == 2 * 2 * 3 + 2 * 3);
  CHECK(four.layer_forward > one.layer_forward);
  CHECK(four.layer_backward > one.layer_backward);

  // One expert on each GPU (ep 8): the same either way.
  s.ep = 8;
  auto const alone = compute_per_micro_batch(shape_of(p, s));
  p.training.grouped_gemm = true;
  auto const alone_grouped = compute_per_micro_batch(shape_of(p, s));
  CHECK(alone.layer_forward == alone_grouped.layer_forward);
  CHECK(alone.layer_kernels == alone_grouped.layer_kernels);
}

TEST_CASE("a mixture's tokens put into expert order and summed back", "[compute][golden]") {
  // Mixtral-like on 4 x 8 H100, one 8192-token sequence a micro-batch, dp
  // 32, ep 8: one expert a GPU. The dispatcher copies each token's two
  // routes into expert order (2 x 2 x 8192 rows of 4096 read and written)
  // and sums them back (2 x 8192 read, 8192 written into 8192 zeroed):
  // (8 + 4) x 8192 x 4096 x 2 B each way.
  auto p = mixtral_like_on_4x8();
  strategy s;
  s.dp = 32, s.ep = 8, s.zero = 1, s.checkpoint = checkpoint_mode::none;
  auto const fused = compute_per_micro_batch(shape_of(p, s));
  auto const moved = expert_movement(shape_of(p, s));
  CHECK(moved.forward.value() == 536870912.0);  // (2 x 2 + 2 + 2) x 8192 x 4096 x 2 B
  CHECK(moved.backward == moved.forward);
  CHECK(moved.forward_kernels == 3);
  CHECK(moved.backward_kernels == 2);
  auto dense = p;
  dense.model.experts = 1;
  // Against the same layer's memory-bound work with every token to one
  // expert: only the activation differs beside the dispatch, so compare
  // kernel counts, which do not depend on sizes.
  auto const plain = compute_per_micro_batch(shape_of(dense, s));
  // Fused (Transformer Engine): a row map and the copy, one sum back;
  // backward one each. Plus the router's GEMM (one forward, two backward).
  CHECK(fused.layer_kernels - plain.layer_kernels == 3 + 1);
  CHECK(fused.layer_kernels_backward - plain.layer_kernels_backward == 2 + 2);
  // PyTorch's operators: 8 to permute and 2 to sum back; backward 3.
  p.training.permute_fusion = false;
  auto const unfused = compute_per_micro_batch(shape_of(p, s));
  CHECK(unfused.layer_kernels - fused.layer_kernels == 7);
  CHECK(unfused.layer_kernels_backward - fused.layer_kernels_backward == 1);
  auto const& g = p.cluster.device;
  double const latency = g.kernel_latency.value();
  CHECK(unfused.layer_forward.value() - fused.layer_forward.value() == Approx(7 * latency).epsilon(1e-9));
  // Two experts a GPU (ep 4): the rows that arrived are sorted by expert
  // and back, two more copies of 2 x 8192 rows, a kernel each, each way.
  p.training.permute_fusion = true;
  s.ep = 4;
  auto const two = compute_per_micro_batch(shape_of(p, s));
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  double const sort_bytes = 2 * 2 * (2 * 8192.0) * 4096 * 2;
  CHECK(expert_movement(shape_of(p, s)).forward.value() == 536870912.0 + sort_bytes);
  CHECK(expert_movement(shape_of(p, s)).forward_kernels == 5);
  // One after another, the experts' outputs are copied together once more
  // (2 x 16384 rows of 4096), forward only.
  p.training.grouped_gemm = false;
  CHECK(expert_movement(shape_of(p, s)).forward.value() == 536870912.0 + sort_bytes + 2.0 * 2 * 16384 * 4096);
  CHECK(expert_movement(shape_of(p, s)).backward.value() == 536870912.0 + sort_bytes);
  p.training.grouped_gemm = true;
  // Padded to a capacity of 1.25: each token's copies take 2.5 rows.
  p.model.capacity_factor = 1.25;
  p.model.pad_to_capacity = true;
  s.ep = 8;
  CHECK(expert_movement(shape_of(p, s)).forward.value() == (2 * 2.5 + 2.5 + 2) * 8192 * 4096 * 2);
  // A dense model moves nothing of the kind.
  p.model = dtplan::test::llama3_8b();
  s.ep = 1;
  CHECK(expert_movement(shape_of(p, s)).forward.value() == 0.0);
  s.ep = 4;
  p = mixtral_like_on_4x8();
  CHECK(two.layer_kernels - fused.layer_kernels == 2);
  CHECK(two.layer_kernels_backward - fused.layer_kernels_backward == 2);
  // The expert GEMMs differ too (two experts of half the rows each): take
  // the memory-bound part alone, the layer less its GEMMs and attention.
  auto const memory_part = [](stage_compute const& c) {
    double gemms = 0;
    for (auto const& t : c.gemm_forward) gemms += t.value();
    return c.layer_forward.value() - gemms - c.layer_attention_core.value();
  };
  CHECK(memory_part(two) - memory_part(fused) == Approx(sort_bytes / hbm + 2 * latency).epsilon(1e-9));
}

TEST_CASE("a shared expert on its own stream hides the all-to-alls under its GEMMs", "[comm][golden]") {
  // Mixtral-like with a shared expert, dp 32, ep 8 on 4 x 8 H100. In line,
  // every all-to-all is exposed; with Megatron-Core's
  // --moe-shared-expert-overlap a pass's dispatch and combine hide under
  // the shared expert's GEMMs, forward once, backward twice them. 1536 wide
  // the shared expert leaves part of the forward's two all-to-alls exposed
  // and hides the backward's; 4096 wide it hides both.
  auto p = mixtral_like_on_4x8();
  auto s = dp32_ep8();
  analytic_cost_model const model;
  auto const layers_micro = [&] { return 32.0 * static_cast<double>(shape_of(p, s).grad_accum); };
  for (std::int64_t width : {1536, 4096}) {
    INFO("shared_expert_ffn " << width);
    p.model.shared_expert_ffn = width;
    p.training.shared_expert_overlap = false;
    auto const in_line = model.step_time(p, s);
    auto const inline_ = find_comm(in_line, comm_group::ep);
    REQUIRE(inline_);
    CHECK(inline_->exposed == inline_->time);
    p.training.shared_expert_overlap = true;
    auto const t = model.step_time(p, s);
    auto const a2a = find_comm(t, comm_group::ep);
    REQUIRE(a2a);
    CHECK(a2a->time == inline_->time);
    auto const sh = shape_of(p, s);
    auto const sc = compute_per_micro_batch(sh);
    REQUIRE(sh.gemms[3].role == gemm_role::shared_expert);
    REQUIRE(sh.gemms[4].role == gemm_role::shared_expert);
    double const shared = sc.gemm_forward[3].value() + sc.gemm_forward[4].value();
    double const one = a2a->time.value() / static_cast<double>(a2a->count);
    // The backward's twice-as-long GEMMs hide its two all-to-alls either way.
    CHECK(2 * one < 2 * shared);
    if (width == 1536) {
      CHECK(2 * one > shared);
      CHECK(a2a->exposed.value() == Approx((2 * one - shared) * layers_micro()).epsilon(1e-9));
    } else {
      CHECK(2 * one <= shared);
      CHECK(a2a->exposed.value() == 0.0);
    }
  }
  // Without a shared expert there is nothing to hide under.
  p.model.shared_expert_ffn = 0;
  CHECK(a2a_all_exposed(p, s));
}

TEST_CASE("torchtitan's shared expert before the combine's use hides the forward's combine only", "[comm][golden]") {
  // As above, with torchtitan's order (shared_expert_combine_overlap): of
  // a layer's four all-to-alls a micro-batch the dispatch and the
  // backward's two stay exposed, the forward's combine hides under the
  // shared expert's GEMMs as far as they last.
  auto p = mixtral_like_on_4x8();
  auto s = dp32_ep8();
  analytic_cost_model const model;
  double const layers_micro = 32.0 * static_cast<double>(shape_of(p, s).grad_accum);
  for (std::int64_t width : {256, 1536}) {
    INFO("shared_expert_ffn " << width);
    p.model.shared_expert_ffn = width;
    p.training.shared_expert_overlap = false;
    p.training.shared_expert_combine_overlap = true;
    auto const t = model.step_time(p, s);
    auto const a2a = find_comm(t, comm_group::ep);
    REQUIRE(a2a);
    auto const sc = compute_per_micro_batch(shape_of(p, s));
    double const shared = sc.gemm_forward[3].value() + sc.gemm_forward[4].value();
    double const one = a2a->time.value() / static_cast<double>(a2a->count);
    CHECK(a2a->count == 4 * static_cast<std::int64_t>(layers_micro));
    CHECK(a2a->exposed.value() == Approx((one + std::max(0.0, one - shared) + 2 * one) * layers_micro).epsilon(1e-9));
    if (width == 256)
      CHECK(one > shared);  // partly exposed
    else
      CHECK(one <= shared);  // the combine hidden whole: three of four exposed
    // Megatron-Core's stream of its own hides more where both are set.
    p.training.shared_expert_overlap = true;
    auto const both_step = model.step_time(p, s);  // find_comm points into it
    auto const both = find_comm(both_step, comm_group::ep);
    REQUIRE(both);
    CHECK(both->exposed < a2a->exposed);
  }
  // Without a shared expert nothing runs under the combine.
  p.model.shared_expert_ffn = 0;
  p.training.shared_expert_overlap = false;
  CHECK(a2a_all_exposed(p, s));
}

TEST_CASE("an expert capacity: padded experts compute and receive it, dropping ones at most their share", "[comm][golden]") {
  // Mixtral-like, one 8192-token sequence a micro-batch, dp 32, ep 8: each
  // rank routes 2 x 8192 copies, 2048 an expert evenly. capacity_factor
  // 1.25 gives a capacity of ceil(2048 x 1.25) = 2560 (Megatron-Core's
  // get_capacity): padded, every expert computes and receives 2560 from
  // each of the 8 ranks of its group; dropping, an even routing drops
  // nothing and it stays 2048. At 0.5 both keep 1024.
  auto p = mixtral_like_on_4x8();
  auto s = dp32_ep8();
  analytic_cost_model const model;
  auto const dropless = shape_of(p, s);
  CHECK(dropless.routed_share == 1.0);
  CHECK(dropless.mlp_tokens == 2048 * 8);
  auto const a2a_of = [&](program const& q) {
    auto const t = model.step_time(q, s);
    auto const e = find_comm(t, comm_group::ep);
    REQUIRE(e);
    return e->size.value();
  };
  double const layer = 8192.0 * 4096 * 2;  // s.b.h in bf16
  CHECK(a2a_of(p) == 2 * layer);
  p.model.capacity_factor = 1.25;
  p.model.pad_to_capacity = true;
  auto const padded = shape_of(p, s);
  CHECK(padded.routed_share == 1.25);
  CHECK(padded.mlp_tokens == 2560 * 8);
  CHECK(a2a_of(p) == 2 * layer * 1.25);
  CHECK(experts_input(p, s) == 2 * 1.25 * 8192 * 4096 * 2);
  {
    // Split over tp 2 with sequence parallelism (etp = tp), the dispatcher
    // gathers the padded copies over tp and reduce-scatters them back.
    strategy t = s;
    t.dp = 16, t.tp = 2, t.sequence_parallel = true;
    auto const step = model.step_time(p, t);
    auto const sized = [&](collective op) {
      std::int64_t n = 0;
      for (auto const& e : step.comm)
        if (e.group == comm_group::tp && e.op == op && e.size.value() == 2 * layer * 1.25) n += e.count;
      return n;
    };
    CHECK(sized(collective::all_gather) > 0);
    CHECK(sized(collective::reduce_scatter) > 0);
  }
  p.model.pad_to_capacity = false;
  CHECK(shape_of(p, s).routed_share == 1.0);
  CHECK(a2a_of(p) == 2 * layer);
  p.model.capacity_factor = 0.5;
  CHECK(shape_of(p, s).routed_share == 0.5);
  CHECK(shape_of(p, s).mlp_tokens == 1024 * 8);
  // A capacity that does not fall on a whole token rounds up: 2049 of 2048.
  p.model.capacity_factor = 1.0001;
  p.model.pad_to_capacity = true;
  CHECK(shape_of(p, s).routed_share == 2049.0 / 2048.0);
  CHECK(shape_of(p, s).mlp_tokens == 2049 * 8);
}

TEST_CASE("a routing skew: the busiest GPU receives its load, every rank of its group waits for it", "[comm][golden]") {
  // Mixtral-like as above (8 experts, 2 a token, 8192 tokens a rank, 2048
  // an expert from each rank evenly). routing_imbalance 1.5: the most
  // loaded expert takes 1.5 times the mean. With ep 8 it is alone on its
  // GPU: 1.5 x 2048 from each of the 8 ranks. With ep 4 its GPU's other
  // expert shares the rest, (8 - 1.5) / 7 of the mean: (1.5 + 6.5 / 7) / 2
  // of the even share. With ep 1 every expert is on every GPU: even.
  auto p = mixtral_like_on_4x8();
  auto s = dp32_ep8();
  analytic_cost_model const model;
  auto const even = shape_of(p, s);
  CHECK(even.received_share == 1.0);
  auto const even_step = model.step_time(p, s);
  p.model.routing_imbalance = 1.5;
  auto const skewed = shape_of(p, s);
  CHECK(skewed.received_share == 1.5);
  CHECK(skewed.routed_share == 1.0);  // what each rank sends of its own tokens
  CHECK(skewed.mlp_tokens == 2048 * 8 * 3 / 2);
  double const layer = 8192.0 * 4096 * 2;  // s.b.h in bf16
  auto const step = model.step_time(p, s);
  auto const a2a = find_comm(step, comm_group::ep);
  REQUIRE(a2a);
  CHECK(a2a->size.value() == 2 * layer * 1.5);
  CHECK(step.step > even_step.step);
  // The dispatcher's copies of the rank's own tokens are the same; with
  // one expert a GPU nothing arrives to sort.
  CHECK(expert_movement(skewed).forward == expert_movement(even).forward);
  CHECK(experts_input(p, s) == 2 * 1.5 * 8192 * 4096 * 2);
  {
    strategy t = s;
    t.ep = 4;
    double const share = (1.5 + 1.0 * (6.5 / 7.0)) / 2.0;
    CHECK(routing_load(p.model, 4, 8192) == share);
    CHECK(shape_of(p, t).received_share == share);
    CHECK(shape_of(p, t).mlp_tokens == 9947);  // floor(8192 x 1.2142857)
    // Two experts a GPU: what arrives is sorted by expert and back, 4 R
    // rows, R the busiest GPU's; the rank's own copies are the same.
    auto q = p;
    q.model.routing_imbalance = 1.0;
    double const rows_even = 8192.0 * 2, rows_skewed = 9947.0 * 2;  // mlp_tokens x local experts
    CHECK(expert_movement(shape_of(p, t)).forward.value() - expert_movement(shape_of(q, t)).forward.value() ==
          Approx(2 * 4096 * 2 * 2 * (rows_skewed - rows_even)).epsilon(1e-12));
  }
  {
    strategy t = s;
    t.ep = 1;
    CHECK(shape_of(p, t).received_share == 1.0);
  }
  // A capacity caps the busiest GPU; padded, it receives the capacity.
  p.model.capacity_factor = 1.25;
  CHECK(shape_of(p, s).received_share == 1.25);
  p.model.capacity_factor = 2.0;
  CHECK(shape_of(p, s).received_share == 1.5);
  p.model.pad_to_capacity = true;
  CHECK(shape_of(p, s).received_share == 2.0);
}

TEST_CASE("a mixture's dense layers: their stage's weights, its mean layer, all-to-alls in the mixtures only",
          "[comm][golden]") {
  // Mixtral-like with its first two layers dense (DeepSeek's
  // first_k_dense_replace): 30 mixtures of 32 layers.
  auto p = mixtral_like_on_4x8();
  p.model.dense_layers = 2;
  REQUIRE(p.model.mixed_layers());
  analytic_cost_model const model;
  auto all_moe = p;
  all_moe.model.dense_layers = 0;
  auto dense = p;
  dense.model = dense_layer_model(p.model);
  {
    // Two stages of 16: stage 0 holds the dense two and 14 mixtures, stage
    // 1 16 mixtures and the output: the step is costed by stage 1, whose
    // layers are all mixtures, and its weights sync last.
    strategy s;
    s.dp = 16, s.pp = 2, s.ep = 8, s.zero = 1, s.checkpoint = checkpoint_mode::none;
    auto const sh = shape_of(p, s);
    CHECK(sh.stage_moe_layers(0) == 14);
    CHECK(sh.stage_moe_layers(1) == 16);
    CHECK(sh.costed_moe_layers == 16);
    CHECK(sh.heaviest_stage == 1);
    auto const st = sh.stage(0);
    CHECK(st.moe_layers == 14);
    CHECK(st.params == 14 * sh.layer_params + 2 * sh.dense_layer_params + sh.vocab_params);
    CHECK(st.expert_params == 14 * sh.layer_expert_params);
    // A dense layer on a GPU: attention and an MLP 14336 wide, the norms.
    CHECK(sh.dense_layer_params == 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2 * 4096);
    auto const sc = compute_per_micro_batch(sh);
    CHECK(sc.dense_layers == 0);
    CHECK(sc.layer_forward == compute_per_micro_batch(shape_of(all_moe, s)).layer_forward);
    // Its memory: stage 0, the most loaded (two micro-batches in flight),
    // holds the 16-bit weights of the dense two and 14 mixtures.
    auto const mem = estimate_memory(sh);
    CHECK(mem.stage == 0);
    CHECK(mem.weights.value() == st.params * 2);
  }
  {
    // One stage: its mean layer is 30 mixtures' and 2 dense layers'; the
    // all-to-alls run in the 30 only, the tensor-parallel collectives two a
    // pass in a dense layer, one in a mixture (no shared expert).
    strategy s;
    s.dp = 16, s.tp = 2, s.ep = 8, s.zero = 1, s.sequence_parallel = true, s.checkpoint = checkpoint_mode::none;
    auto const sh = shape_of(p, s);
    CHECK(sh.costed_moe_layers == 30);
    auto const sc = compute_per_micro_batch(sh);
    auto const m = compute_per_micro_batch(shape_of(all_moe, s));
    auto const d = compute_per_micro_batch(shape_of(dense, s));
    CHECK(sc.dense_layers == 2);
    CHECK(sc.layer_forward.value() == Approx((30 * m.layer_forward.value() + 2 * d.layer_forward.value()) / 32));
    CHECK(sc.layer_backward.value() == Approx((30 * m.layer_backward.value() + 2 * d.layer_backward.value()) / 32));
    CHECK(sc.layers_kernels_forward() == 30 * m.layer_kernels + 2 * d.layer_kernels);
    CHECK(sc.kernels() == 30 * (m.layer_kernels + m.layer_kernels_backward) +
                              2 * (d.layer_kernels + d.layer_kernels_backward) + m.head_kernels());
    auto const step = model.step_time(p, s);
    auto const micro = sh.grad_accum;
    auto const a2a = find_comm(step, comm_group::ep);
    REQUIRE(a2a);
    CHECK(a2a->count == 2 * 2 * 30 * micro);
    std::int64_t reduce_scatters = 0;
    for (auto const& e : step.comm)
      if (e.group == comm_group::tp && e.op == collective::reduce_scatter && e.size.value() == 8192.0 * 4096 * 2)
        reduce_scatters += e.count;
    CHECK(reduce_scatters == 2 * (30 * 1 + 2 * 2) * micro);
    // Faster than every layer a mixture.
    CHECK(step.step < model.step_time(all_moe, s).step);
    // Its activations: two dense layers' in place of two mixtures'.
    double const a_moe = activations_per_layer(all_moe.model, s, sh.softmax_fp32).value();
    double const a_dense = activations_per_layer(dense.model, s, sh.softmax_fp32).value();
    CHECK(a_dense != a_moe);
    CHECK(estimate_memory(sh).activations.value() - estimate_memory(shape_of(all_moe, s)).activations.value() ==
          Approx(2 * (a_dense - a_moe)).epsilon(1e-9));
  }
}

TEST_CASE("q/k norms: two more norm kernels each way over q and k, as the layer's own norms") {
  program p = two_nodes();
  strategy s = data_parallel(8, 1);
  s.tp = 2;
  p.model.head_dim = 64;  // q, k and v 2048 wide
  auto const plain = compute_per_micro_batch(p, s);
  p.model.qk_norm = true;
  auto const normed = compute_per_micro_batch(p, s);
  CHECK(normed.layer_kernels == plain.layer_kernels + 2);
  CHECK(normed.layer_kernels_backward == plain.layer_kernels_backward + 4);
  // Each reads and writes its tensor: 2 x 2 bytes x 4096 tokens x (2048 +
  // 2048) / tp forward, twice that backward, at the GPU's streaming rate.
  gpu const& g = p.cluster.device;
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  double const bytes = 2.0 * 2 * 4096 * (2048 + 2048) / 2;
  CHECK(normed.layer_forward.value() - plain.layer_forward.value() ==
        Approx(bytes / hbm + 2 * g.kernel_latency.value()).epsilon(1e-9));
  CHECK(normed.layer_backward.value() - plain.layer_backward.value() ==
        Approx(2 * bytes / hbm + 4 * g.kernel_latency.value()).epsilon(1e-9));
  // PyTorch's eager RMSNorm runs each as eight kernels (float(), pow, mean,
  // rsqrt, multiply, type_as, the weight's multiply: compute.cpp's count).
  p.training.fused_elementwise = false;
  p.model.norm = norm_kind::rmsnorm;
  auto const eager_plain = [&] {
    program q = p;
    q.model.qk_norm = false;
    return compute_per_micro_batch(q, s);
  }();
  CHECK(compute_per_micro_batch(p, s).layer_kernels - eager_plain.layer_kernels == 2 * 8);
}

namespace {
// Llama 2 7B's shape with DeepSeek-V3's multi-latent attention.
program latent_two_nodes() {
  program p = two_nodes();
  p.model.head_dim = 128;
  p.model.q_lora_rank = 1536;
  p.model.kv_lora_rank = 512;
  p.model.qk_rope_head_dim = 64;
  p.model.v_head_dim = 128;
  return p;
}
}  // namespace

TEST_CASE("multi-latent attention: five projections, a core over 192-wide queries and 128-wide values") {
  program p = latent_two_nodes();
  strategy s = data_parallel(16, 1);
  auto const sh = shape_of(p, s);
  REQUIRE(sh.gemm_count == 7);
  auto gemm = [&](int i) { return sh.gemms[static_cast<std::size_t>(i)]; };
  CHECK(std::string(gemm(0).name) == "q-down");
  CHECK((gemm(0).forward.n == 1536 && gemm(0).forward.k == 4096));
  CHECK(std::string(gemm(1).name) == "q-up");
  CHECK((gemm(1).forward.n == 32 * 192 && gemm(1).forward.k == 1536));
  CHECK(std::string(gemm(2).name) == "kv-down");
  CHECK((gemm(2).forward.n == 512 + 64 && gemm(2).forward.k == 4096));
  CHECK(std::string(gemm(3).name) == "kv-up");
  CHECK((gemm(3).forward.n == 32 * (128 + 128) && gemm(3).forward.k == 512));
  CHECK(std::string(gemm(4).name) == "o-proj");
  CHECK((gemm(4).forward.n == 4096 && gemm(4).forward.k == 32 * 128));
  CHECK(sh.qk_head_dim == 192);
  CHECK(sh.v_head_dim == 128);
  // Megatron-LM's count: 6 L s x heads x (192 + 128) for the core.
  double const tokens = 256.0 * 4096;
  double const attention = 4096.0 * 1536 + 1536.0 * 32 * 192 + 4096.0 * 576 + 512.0 * 32 * 256 + 32.0 * 128 * 4096;
  double const matmul = 32.0 * (attention + 3 * 4096.0 * 11008) + 32000.0 * 4096;
  CHECK(model_flops_per_step(p).value() ==
        Approx(tokens * (6 * matmul + 6.0 * 32 * 4096 * 32 * (192 + 128))).epsilon(1e-12));
  // The core does (192 + 128) / (2 x 128) = 1.25 times the work of
  // 128-wide heads, its flash kernel's tiles as for the weighted sum's
  // (queries x 128-wide values): 1.25 times the time less one launch.
  auto plain = two_nodes();
  auto const latency = p.cluster.device.kernel_latency.value();
  auto const core = compute_per_micro_batch(p, s).layer_attention_core.value() - latency;
  auto const core128 = compute_per_micro_batch(plain, s).layer_attention_core.value() - latency;
  CHECK(core / core128 == Approx(1.25).epsilon(1e-12));
  // Three GEMMs more, two norms more, and Megatron's two fused rotary
  // kernels for the plain attention's one: six kernels more a layer.
  p.model.position = plain.model.position = position_kind::rotary;
  CHECK(compute_per_micro_batch(p, s).layer_kernels - compute_per_micro_batch(plain, s).layer_kernels == 3 + 2 + 1);
}

namespace {
// The strategy `spec` fixes on `p`, checked: its first error, "" where it
// has none.
std::string first_error(program const& p, strategy_spec const& spec) {
  analytic_cost_model const model;
  auto const pl = evaluate(p, spec, spec.fixed(), model, "s");
  return pl.errors.empty() ? std::string() : pl.errors.front().message;
}
}  // namespace

TEST_CASE("multi-latent attention under tensor parallelism: its own gathers of the input and the compressed tensors") {
  // Megatron-Core core_v0.13.0 transformer/multi_latent_attention.py:
  // 400-460: tp 2 with sequence parallelism, q rank 1536, kv rank 512 with
  // a 64-wide rotary key, 4096 tokens of 16 bits a micro-batch, 32 layers.
  program const dense_attention = two_nodes();
  program const p = latent_two_nodes();
  strategy s = data_parallel(8, 1);
  s.tp = 2;
  s.sequence_parallel = true;
  analytic_cost_model const model;
  auto const calls = [&](program const& q, collective op, double size) {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(shape_of(q, s)).comm)
      if (e.group == comm_group::tp && e.op == op && e.size.value() == size) n += e.count;
    return n;
  };
  double const rows = 4096.0 * 2;
  std::int64_t const layers = 32 * shape_of(p, s).grad_accum;  // a layer's each micro-batch
  // The second down projection's own gather of the input, and its gradient.
  CHECK(calls(p, collective::all_gather, rows * 4096) - calls(dense_attention, collective::all_gather, rows * 4096) ==
        layers);
  CHECK(calls(p, collective::reduce_scatter, rows * 4096) -
            calls(dense_attention, collective::reduce_scatter, rows * 4096) ==
        layers);
  // The compressed q gathered along its width and as the up projection's
  // input, and again for its split's backward; its gradient scattered.
  CHECK(calls(p, collective::all_gather, rows * 1536) == 3 * layers);
  CHECK(calls(p, collective::reduce_scatter, rows * 1536) == layers);
  // The keys' and values' down projection's output with the rotary key.
  CHECK(calls(p, collective::all_gather, rows * (512 + 64)) == layers);
  CHECK(calls(p, collective::all_gather, rows * 512) == 2 * layers);
  CHECK(calls(p, collective::reduce_scatter, rows * 512) == layers);
  // Full recomputation gathers again in its forward.
  s.checkpoint = checkpoint_mode::full;
  CHECK(calls(p, collective::all_gather, rows * (512 + 64)) == 2 * layers);
  CHECK(calls(p, collective::reduce_scatter, rows * 512) == layers);
  // Without sequence parallelism: the width gathers, and all-reduces of the
  // input's and the compressed tensors' gradients.
  s.checkpoint = checkpoint_mode::selective;
  s.sequence_parallel = false;
  CHECK(calls(p, collective::all_gather, rows * 1536) == layers);
  CHECK(calls(p, collective::all_reduce, rows * 1536) == layers);
  CHECK(calls(p, collective::all_reduce, rows * 512) == layers);
}

TEST_CASE("multi-latent attention: tp splits its down projections") {
  program p = latent_two_nodes();
  strategy_spec spec;
  spec.name = "s";
  spec.tp = key_choice<std::int64_t>::one(2);
  CHECK(first_error(p, spec) == "");
  spec.tp = key_choice<std::int64_t>::one(8);
  p.model.q_lora_rank = 1532;
  CHECK(first_error(p, spec) == "tp = 8 does not divide q_lora_rank = 1532");
  p.model.q_lora_rank = 1536;
  p.model.qk_rope_head_dim = 60;
  CHECK(first_error(p, spec) == "tp = 8 does not divide kv_lora_rank + qk_rope_head_dim = 512 + 60");
  p.model.qk_rope_head_dim = 64;
  spec.tp = key_choice<std::int64_t>::one(1);
  // torchtitan's op-level policy is costed on it (op_checkpoint_of): the
  // strategy is refused for its memory only.
  spec.checkpoint = key_choice<checkpoint_mode>::one(checkpoint_mode::ops);
  CHECK(first_error(p, spec) == "strategy 's' needs 94.0 GiB per GPU; H100_SXM has 79.6 GiB (75.6 usable)");
}

TEST_CASE("multi-token prediction runs without context parallelism, as Megatron-LM asserts") {
  program p = two_nodes();
  p.model.mtp_layers = 1;
  strategy_spec spec;
  spec.name = "s";
  spec.cp = key_choice<std::int64_t>::one(2);
  CHECK(first_error(p, spec) ==
        "cp = 2: Megatron-LM runs multi-token prediction (mtp_layers = 1) without context parallelism only");
  spec.cp = key_choice<std::int64_t>::one(1);
  CHECK(first_error(p, spec).find("multi-token") == std::string::npos);
}

TEST_CASE("selective recomputation's modules: each one's forward again") {
  program p = two_nodes();
  p.model.norm = norm_kind::rmsnorm;
  strategy s = data_parallel(16, 1);
  s.checkpoint = checkpoint_mode::selective;
  auto const core = compute_per_micro_batch(p, s);
  gpu const& g = p.cluster.device;
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  double const lat = g.kernel_latency.value();
  // The default: the attention core's forward.
  CHECK(core.layer_recompute.value() == core.layer_attention_core.value());
  // The layer norms: two norms reading and writing 4096 tokens x 4096 in bf16.
  p.training.recompute_modules = {recompute_module::layernorm};
  auto const norms = compute_per_micro_batch(p, s);
  CHECK(norms.layer_recompute.value() == Approx(2.0 * 2 * 2 * 4096 * 4096 / hbm + 2 * lat).epsilon(1e-12));
  CHECK(norms.layer_kernels_recompute == 2);
  // The dense MLP: its two GEMMs' forward and the activation.
  p.training.recompute_modules = {recompute_module::mlp};
  auto const mlp = compute_per_micro_batch(p, s);
  double const gemms = core.gemm_forward[2].value() + core.gemm_forward[3].value();
  double const act = 2.0 * 4096 * (3.0 * 11008) / hbm + lat;
  CHECK(mlp.layer_recompute.value() == Approx(gemms + act).epsilon(1e-12));
  CHECK(mlp.layer_kernels_recompute == 3);
  // Together: the sum; memory, the tensors each rebuilds.
  p.training.recompute_modules = {recompute_module::core_attn, recompute_module::layernorm, recompute_module::mlp};
  auto const all = compute_per_micro_batch(p, s);
  CHECK(all.layer_recompute.value() ==
        Approx(core.layer_recompute.value() + norms.layer_recompute.value() + mlp.layer_recompute.value())
            .epsilon(1e-12));
  analytic_cost_model const model;
  CHECK(estimate_memory(p, s).activations < estimate_memory(two_nodes(), s).activations);
  auto const step = model.step_time(p, s);
  CHECK(step.recompute.value() > model.step_time(two_nodes(), s).recompute.value());
}

TEST_CASE("a layer of ten weight GEMMs: DeepSeek-V3's, every one costed and the stage's layers intact") {
  // Multi-latent attention's five, the router, the shared expert's two and
  // the experts' two: the most a layer runs (max_layer_gemms). An array
  // one short once overwrote the stage's layer count.
  program p = two_nodes(128, 8);
  p.model = *catalog_model("deepseek_v3");
  strategy s = data_parallel(128, 1);
  s.pp = 8;
  s.ep = 32;
  auto const sh = shape_of(p, s);
  REQUIRE(sh.gemm_count == static_cast<int>(max_layer_gemms));
  auto const sc = compute_per_micro_batch(p, s);
  CHECK(sc.layers == 8);  // 61 layers over 8 stages: 8 on the first five
  for (std::size_t i = 0; i < max_layer_gemms; ++i) {
    INFO(sh.gemms[i].name);
    CHECK(sc.gemm_forward[i].value() > 0);
  }
  CHECK(sc.layer_forward.value() < 0.1);
}

namespace {
// DeepSeek-V3 on 128 DGX H100 under Megatron-Core, global batch 4,096 of
// 4,096 tokens, the training block's `extra` keys added (README's figures).
program deepseek_v3_128_nodes(std::string const& extra, std::string const& model_keys = "") {
  dtplan::dsl::source_manager sources;
  auto const id = sources.add("v3.dtp", "model m : deepseek_v3 {" + model_keys + "}\n"
                                        "cluster c { nodes = 128; gpus_per_node = 8; gpu = H100_SXM; "
                                        "inter_node = 8 x 400 Gbit/s }\n"
                                        "training { framework = megatron; global_batch = 4096; " +
                                            extra + " }\n");
  dtplan::dsl::diagnostics diags;
  auto p = load(sources, id, {}, diags);
  INFO(dtplan::dsl::format(diags, sources));
  REQUIRE(p);
  return *p;
}
}  // namespace

TEST_CASE("DeepSeek-V3 at tp 1, pp 16, ep 64: recomputed modules bring its first stage from 121.6 to 85.8 GiB") {
  // NeMo v2.4.0 recipes/deepseek_v3.py:124-126's modules, MLA's up
  // projections and the norms, at tp 1 and without the multi-token
  // prediction module (NeMo's recipe itself runs tp 2 with one:
  // plans/deepseek_v3_megatron.dtp). Still over an H100's 75.6 GiB usable,
  // as the README says.
  auto const split = [](std::int64_t dp, std::int64_t pp, std::int64_t ep, checkpoint_mode c) {
    strategy x;
    x.dp = dp, x.pp = pp, x.ep = ep, x.zero = 1, x.checkpoint = c;
    return x;
  };
  strategy const s = split(64, 16, 64, checkpoint_mode::selective);
  auto const gib = [](bytes b) { return b.value() / (1024.0 * 1024 * 1024); };
  auto const core = estimate_memory(deepseek_v3_128_nodes(""), s);
  CHECK(gib(core.total) == Approx(121.6).margin(0.05));
  auto const modules = estimate_memory(deepseek_v3_128_nodes("recompute_modules = {mla_up_proj, layernorm}"), s);
  CHECK(gib(modules.total) == Approx(85.8).margin(0.05));
  CHECK_FALSE(modules.fits());
  // Recomputing the mixtures' whole MLP too ('moe') fits it (README).
  auto const whole = deepseek_v3_128_nodes("recompute_modules = {mla_up_proj, layernorm, moe}");
  CHECK(gib(estimate_memory(whole, s).total) == Approx(58.7).margin(0.05));
  CHECK(estimate_memory(whole, s).fits());
  analytic_cost_model const recipe_model;
  CHECK(recipe_model.step_time(whole, s).step.value() == Approx(28.8).margin(0.05));
  // The README's search result: tp 1, pp 16, ep 8 (the experts' all-to-alls
  // inside a node's NVLink), full recomputation, 18.4 s.
  analytic_cost_model const model;
  strategy const pick = split(64, 16, 8, checkpoint_mode::full);
  CHECK(model.step_time(deepseek_v3_128_nodes(""), pick).step.value() == Approx(18.4).margin(0.05));
  CHECK(gib(estimate_memory(deepseek_v3_128_nodes(""), pick).total) == Approx(49.8).margin(0.05));
  // Its pick before each GPU's all-to-all ran at its own NIC: tp 1, pp 8,
  // ep 32 over 4 nodes, 16.9 s then, 26.4 s now.
  strategy const best = split(128, 8, 32, checkpoint_mode::full);
  CHECK(model.step_time(deepseek_v3_128_nodes(""), best).step.value() == Approx(26.4).margin(0.05));
  CHECK(gib(estimate_memory(deepseek_v3_128_nodes(""), best).total) == Approx(41.9).margin(0.05));
  // As DeepSeek trained it, with one multi-token prediction module (README):
  // its last stage becomes the most loaded.
  auto const mtp = deepseek_v3_128_nodes("", "mtp_layers = 1");
  CHECK(model.step_time(mtp, best).step.value() == Approx(29.7).margin(0.05));
  auto const held = estimate_memory(mtp, best);
  CHECK(gib(held.total) == Approx(52.9).margin(0.05));
  CHECK(held.stage == 7);
}

TEST_CASE("group-limited routing: the nodes and GPUs one token's experts reach") {
  // DeepSeek-V3: 8 of 256 experts, from 4 of 8 groups (n_group, topk_group).
  auto m = deepseek_v3_128_nodes("").model;
  REQUIRE(m.router_groups == 8);
  REQUIRE(m.router_group_topk == 4);
  // Over 8 nodes a group a node: 4 of them, exactly.
  CHECK(routing_reach(m, 8) == Approx(4.0).epsilon(1e-12));
  // Over 64 GPUs of 4 experts: 64 (1 - C(7,4)/C(8,4) - C(7,3)/C(8,4) x
  // C(28,2)/C(32,2)) = 7.6129 (a simulation of Megatron-Core's
  // group_limited_topk on random scores: 7.49); over 16 blocks of 16, 6.0645.
  CHECK(routing_reach(m, 64) == Approx(7.612903).epsilon(1e-6));
  CHECK(routing_reach(m, 16) == Approx(6.064516).epsilon(1e-6));
  // From all 256: 8 (1 - C(224,8)/C(256,8)) = 5.2947 nodes, 7.6758 GPUs.
  m.router_groups = m.router_group_topk = 0;
  CHECK(routing_reach(m, 8) == Approx(5.294652).epsilon(1e-6));
  CHECK(routing_reach(m, 64) == Approx(7.675750).epsilon(1e-6));
  CHECK(routing_reach(m, 1) == 1.0);
  // Any size stays a count of blocks: 2^40 experts, 2^30 a token, over 2^20
  // GPUs reach every one; 2 of them a token over 1,024 GPUs reach 2 less
  // the chance both are on one GPU, (2^30 - 1) / (2^40 - 1).
  auto huge = m;
  huge.experts = std::int64_t{1} << 40;
  huge.experts_per_token = std::int64_t{1} << 30;
  CHECK(routing_reach(huge, std::int64_t{1} << 20) == Approx(1048576.0));
  huge.experts_per_token = 2;
  CHECK(routing_reach(huge, 1024) == Approx(2.0 - 1.0 / 1024).epsilon(1e-9));
  m.experts = 1;
  CHECK(routing_reach(m, 8) == 1.0);
}

TEST_CASE("DeepEP (flex): a token once to each node and GPU its experts are on, the legs at once") {
  // NeMo's DeepSeek-V3 recipe's split (plans/deepseek_v3_megatron.dtp): tp
  // 2 with sequence parallelism, pp 16, ep 64 over 8 DGX H100 (8 a node).
  strategy s;
  s.dp = 32, s.tp = 2, s.pp = 16, s.ep = 64, s.etp = 1, s.zero = 1, s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::none;
  auto const alltoall = deepseek_v3_128_nodes("");
  auto const flex = deepseek_v3_128_nodes("moe_token_dispatcher = flex");
  // The shared expert's overlap is off with it (the preset's true does not
  // apply: Megatron-Core's flex dispatcher has no side stream).
  CHECK(alltoall.training.shared_expert_overlap);
  CHECK_FALSE(flex.training.shared_expert_overlap);
  analytic_cost_model const model;
  auto const a = model.step_time(alltoall, s);
  auto const f = model.step_time(flex, s);
  auto const* ea = find_comm(a, comm_group::ep);
  auto const* ef = find_comm(f, comm_group::ep);
  REQUIRE(ea);
  REQUIRE(ef);
  CHECK(ef->count == ea->count);
  CHECK(ef->link == link_kind::inter);
  // A rank's 2,048 tokens (4,096 over tp 2) of 7,168 in bf16 are 28 MiB:
  // the all-to-all sends 8 copies (224 MiB), DeepEP one to each of the
  // 7.6129 GPUs reached (213.2 MiB).
  double const token = 2048.0 * 7168 * 2;
  CHECK(ea->size.value() == Approx(8 * token).epsilon(1e-12));
  CHECK(ef->size.value() == Approx(7.612903 * token).epsilon(1e-6));
  // One call: 4 nodes reached, 7/8 of them others, at the GPU's own NIC
  // (400 GB/s x network_efficiency / 8); the NVLink leg (7.61 x 7/8 copies
  // at 370.8 GB/s, 0.51 ms) runs beside it and is shorter
  // (nccl::all_to_all_transfer, nccl_test).
  auto const& c = flex.cluster;
  double const nic = c.inter_node.value() * c.network_efficiency / 8;
  double const network = token * 4.0 * 7 / 8 / nic;
  double const one = ef->time.value() / static_cast<double>(ef->count);
  CHECK(network == Approx(2.1634e-3).epsilon(1e-4));
  // With the fixed part NCCL's all-to-all of the group pays (a Simple
  // ring's 8.4 + 56 x 3.4 + 7 x 14 = 296.8 us): 2.460 ms.
  CHECK(one == Approx(network + 296.8e-6).epsilon(1e-9));
  CHECK(ef->exposed.value() == ef->time.value());
  // The all-to-all's 7 of 8 copies leave the node, 1.75 times DeepEP's.
  CHECK(ea->time.value() / ea->count > 1.6 * one);
  CHECK(f.step.value() < a.step.value());

  // Inside one node (ep 8): no network leg, and the node's 4.0 GPUs reached
  // of its 8 (a group each) instead of 8 copies.
  s.ep = 8;
  auto const inside = model.step_time(flex, s);
  auto const* in = find_comm(inside, comm_group::ep);
  REQUIRE(in);
  CHECK(in->link == link_kind::intra);
  CHECK(in->size.value() == Approx(4.0 * token).epsilon(1e-12));
  double const in_one = in->time.value() / static_cast<double>(in->count);
  double const in_nvlink = token * 4.0 * 7 / 8 / (c.intra_node.value() * c.comm_efficiency);
  // 8.4 + 7 x 3.4 = 32.2 us fixed, then 98 MiB at NVLink's measured bus.
  CHECK(in_nvlink == Approx(278.48e-6).epsilon(1e-4));
  CHECK(in_one == Approx(in_nvlink + 32.2e-6).epsilon(1e-9));
}

TEST_CASE("multi-token prediction: each module's own work and a layer of the last layer's kind, in the head") {
  // Megatron-Core core_v0.13.0 transformer/multi_token_prediction.py:
  // 385-490, 640-690. Llama 2 7B's shape over pp 2, full recomputation,
  // which leaves the modules' layers whole.
  program p = two_nodes();
  strategy s = data_parallel(8, 1);
  s.pp = 2;
  s.checkpoint = checkpoint_mode::full;
  auto const plain = compute_per_micro_batch(p, s);
  p.model.mtp_layers = 2;
  auto const with = compute_per_micro_batch(p, s);
  CHECK(with.layers == plain.layers);
  CHECK(with.layer_forward.value() == plain.layer_forward.value());
  CHECK(with.recompute().value() == plain.recompute().value());
  CHECK(with.mtp_layers == 2);
  CHECK(with.head_forward.value() - plain.head_forward.value() == Approx(2 * with.mtp_forward.value()).epsilon(1e-12));
  CHECK(with.head_backward.value() - plain.head_backward.value() ==
        Approx(2 * with.mtp_backward.value()).epsilon(1e-12));
  // A module's own work beyond the head's (final norm, logits, loss, on
  // the last of two stages): twelve roll kernels, the embedding and two
  // more norms (each 2 x 2 bytes x 4096 x 4096 through HBM), the
  // concatenation (twice that), the projection [4096, 8192] x [8192, 4096];
  // backward the embedding, four more norm passes and the projection's two
  // gradients. Its layer is the stage's, not recomputed.
  gpu const& g = p.cluster.device;
  double const t = 4096, h = 4096;
  double const pass = memory_time(g, bytes(2 * 2 * t * h)).value();
  double const concat = memory_time(g, bytes(4 * 2 * t * h)).value();
  double const projection = gemm_time(g, {4096, 4096, 8192, 1}, precision::bf16).value();
  double const projection_back = gemm_time(g, {4096, 8192, 4096, 1}, precision::bf16).value() +
                                 gemm_time(g, {8192, 4096, 4096, 1}, precision::bf16).value();
  double const kl = g.kernel_latency.value();
  CHECK(with.mtp_forward.value() - plain.layer_forward.value() - plain.head_forward.value() ==
        Approx(12 * kl + 3 * pass + concat + projection).epsilon(1e-9));
  CHECK(with.mtp_backward.value() - plain.layer_backward.value() - plain.head_backward.value() ==
        Approx(5 * pass + projection_back).epsilon(1e-9));
  // Operators: rolls 12, embedding, three norms, concatenation,
  // projection, logits, loss and the layer's; backward the embedding, three
  // norms, the projection's and logits' two each, the loss and the layer's.
  CHECK(with.head_kernels_forward - plain.head_kernels_forward == 2 * (20 + plain.layer_kernels));
  CHECK(with.head_kernels_backward - plain.head_kernels_backward == 2 * (9 + plain.layer_kernels_backward));
  // Selective recomputation runs inside the modules' layers too.
  s.checkpoint = checkpoint_mode::selective;
  auto const selective = compute_per_micro_batch(p, s);
  CHECK(selective.layer_recompute.value() > 0);
  CHECK(selective.mtp_backward.value() - selective.layer_backward.value() - selective.layer_recompute.value() ==
        Approx(with.mtp_backward.value() - with.layer_backward.value()).epsilon(1e-9));
}

TEST_CASE("multi-token prediction: the last stage holds the modules and an embedding to read, summed with stage 0's") {
  program const none = two_nodes();
  program p = two_nodes();
  strategy s = data_parallel(8, 1);
  s.pp = 2;
  auto const plain = shape_of(none, s);
  CHECK_FALSE(plain.embedding.active());  // untied: no pair without the modules
  p.model.mtp_layers = 1;
  auto const with = shape_of(p, s);
  // A dense layer, the projection 2 x 4096 x 4096 and three RMSNorms.
  CHECK(with.mtp_params == plain.layer_params + 2.0 * 4096 * 4096 + 3 * 4096);
  CHECK(with.stage(0).params == plain.stage(0).params);
  CHECK(with.stage(1).params == plain.stage(1).params + with.mtp_params + 32000.0 * 4096);
  CHECK(with.stage(1).mtp_layers == 1);
  CHECK(with.embedding.size == 2);
  // Megatron sums the two copies' gradients after the backward
  // (core_v0.13.0 distributed/finalize_model_grads.py:119-153), once a
  // step, in the gradients' precision (bf16 in this program).
  analytic_cost_model const model;
  auto const step = model.step_time(with);
  bool summed = false;
  for (auto const& e : step.comm)
    if (e.group == comm_group::embedding) summed = e.size.value() == 32000.0 * 4096 * 2 && e.count == 1;
  CHECK(summed);
  // One stage holds both ends: no copy, no sum.
  s.pp = 1;
  CHECK(shape_of(p, s).stage(0).params == shape_of(none, s).stage(0).params + with.mtp_params);
  CHECK_FALSE(shape_of(p, s).embedding.active());
}

TEST_CASE("multi-token prediction's memory: its layer whole, its inputs, its loss's softmax at the loss") {
  program p = two_nodes();
  strategy s = data_parallel(8, 1);
  s.checkpoint = checkpoint_mode::none;
  auto const plain = estimate_memory(p, s);
  p.model.mtp_layers = 1;
  auto const with = estimate_memory(p, s);
  REQUIRE(std::string(with.peak_moment) == "the loss (end of the forward, start of the backward)");
  double const t = 4096, h = 4096;
  double const layer = activations_per_layer(p.model, s, false, recompute_mask(p.training)).value();
  CHECK(with.activations.value() - plain.activations.value() ==
        Approx(layer + 6 * 2 * t * h + 4 * 32000 * t + 8 * t).epsilon(1e-12));
  // Under full recomputation the module's layer is still kept whole.
  s.checkpoint = checkpoint_mode::full;
  auto const terms = estimate_memory(shape_of(p, s), true).detail;
  bool whole = false;
  for (auto const& term : terms)
    if (term.name.starts_with("multi-token prediction (1 module")) whole = term.size.value() == layer;
  CHECK(whole);
  // Under ZeRO-3 a module is a unit of its own, not held with the
  // embedding and output through the step.
  s.zero = 3;
  auto const root = [&](program const& q) {
    for (auto const& term : estimate_memory(shape_of(q, s), true).detail)
      if (term.name.starts_with("ZeRO-3 gathered embedding/output unit")) return term.size.value();
    return 0.0;
  };
  CHECK(root(p) > 0);
  CHECK(root(p) == root(two_nodes()));
}

TEST_CASE("multi-token prediction's FLOPs: a layer, the projection and the logits again, as Megatron-LM counts them") {
  // core_v0.13.0 megatron/training/training.py:265-269, 385-401.
  program p = two_nodes();
  auto const plain = model_flops_per_step(p).value();
  p.model.mtp_layers = 1;
  double const tokens = 256.0 * 4096;
  double const layer = 4 * 4096.0 * 4096 + 3 * 4096.0 * 11008;
  double const module = layer + 2 * 4096.0 * 4096 + 32000.0 * 4096;
  double const core = 6.0 * 4096 * 32 * (128 + 128);
  CHECK(model_flops_per_step(p).value() - plain == Approx(tokens * (6 * module + core)).epsilon(1e-12));
  // Full recomputation leaves the module out; selective recomputes its core.
  strategy s = data_parallel(8, 1);
  s.checkpoint = checkpoint_mode::full;
  double const full_extra = hardware_flops_per_step(p, s).value() - model_flops_per_step(p).value();
  program q = two_nodes();
  CHECK(full_extra == Approx(hardware_flops_per_step(q, s).value() - model_flops_per_step(q).value()).epsilon(1e-12));
  s.checkpoint = checkpoint_mode::selective;
  double const selective_extra = hardware_flops_per_step(p, s).value() - model_flops_per_step(p).value();
  CHECK(selective_extra == Approx(tokens * 2.0 * 4096 * 32 * 256 * 33).epsilon(1e-12));
}

TEST_CASE("selective recomputation of a mixture's whole MLP ('moe'): its GEMMs, permutations and all-to-alls again") {
  // Megatron-Core core_v0.13.0 moe/moe_layer.py:115-117, 247-263: router,
  // dispatch, experts and combine under one checkpoint.
  program p = two_nodes();
  p.model.experts = 8;
  p.model.experts_per_token = 2;
  p.training.fused_elementwise = true;
  strategy s = data_parallel(16, 1);
  s.ep = 8;
  auto const core = compute_per_micro_batch(p, s);
  auto const sh = shape_of(p, s);
  analytic_cost_model const model;
  auto const all_to_alls = [&](program const& q) {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(shape_of(q, s)).comm)
      if (e.group == comm_group::ep) n += e.count;
    return n;
  };
  auto const core_calls = all_to_alls(p);
  program whole = p;
  whole.training.recompute_modules = {recompute_module::core_attn, recompute_module::moe};
  auto const rebuilt = compute_per_micro_batch(whole, s);
  // The router's and the experts' GEMMs forward, the activation over the
  // top-k copies (3 x ffn x 2 bytes a row in, 2 x 4096 rows of 11008 each
  // way: SwiGLU's read of gate and up, its write), the dispatcher's
  // permutations.
  seconds gemms;
  std::int64_t calls = 0;
  for (int i = 0; i < sh.gemm_count; ++i)
    if (sh.gemms[static_cast<std::size_t>(i)].role != gemm_role::attention) {
      gemms += core.gemm_forward[static_cast<std::size_t>(i)];
      calls += sh.calls_of(sh.gemms[static_cast<std::size_t>(i)]);
    }
  gpu const& g = p.cluster.device;
  double const hbm = g.hbm_bandwidth.value() * g.hbm_efficiency;
  auto const moved = expert_movement(sh);
  double const act = 2.0 * 4096 * 3 * 11008 * 2;
  double const act_calls = static_cast<double>(sh.expert_gemm_calls());
  CHECK(rebuilt.layer_recompute.value() - core.layer_recompute.value() ==
        Approx(gemms.value() + (act + moved.forward.value()) / hbm +
               g.kernel_latency.value() * (act_calls + static_cast<double>(moved.forward_kernels)))
            .epsilon(1e-9));
  CHECK(rebuilt.layer_kernels_recompute - core.layer_kernels_recompute ==
        calls + static_cast<std::int64_t>(act_calls) + moved.forward_kernels);
  // A third pass of dispatch and combine.
  CHECK(all_to_alls(whole) * 2 == core_calls * 3);
  // Its FLOPs: the router and two experts' SwiGLU matrices again, forward.
  double const tokens = 256.0 * 4096;
  double const per = 3 * 4096.0 * 2 * 11008 + 4096.0 * 8;
  s.checkpoint = checkpoint_mode::selective;
  CHECK(hardware_flops_per_step(whole, s).value() - hardware_flops_per_step(p, s).value() ==
        Approx(2 * per * 32 * tokens).epsilon(1e-12));
}

TEST_CASE("'moe' recomputation repeats the mixture's tensor-parallel gathers and scatters") {
  // Under tp 2 with sequence parallelism and each expert split over tp
  // (etp = tp): the shared expert's all-gather and reduce-scatter and the
  // dispatcher's of the routed tokens, once more a layer a micro-batch.
  program p = two_nodes();
  p.model.experts = 8;
  p.model.experts_per_token = 2;
  p.model.shared_expert_ffn = 11008;
  strategy s = data_parallel(8, 1);
  s.tp = 2;
  s.sequence_parallel = true;
  s.ep = 4;
  program whole = p;
  whole.training.recompute_modules = {recompute_module::core_attn, recompute_module::moe};
  analytic_cost_model const model;
  auto const calls = [&](program const& q, collective op) {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(shape_of(q, s)).comm)
      if (e.group == comm_group::tp && e.op == op) n += e.count;
    return n;
  };
  std::int64_t const more = 2 * 32 * shape_of(p, s).grad_accum;  // shared + routed, 32 layers, each micro-batch
  CHECK(calls(whole, collective::all_gather) - calls(p, collective::all_gather) == more);
  CHECK(calls(whole, collective::reduce_scatter) - calls(p, collective::reduce_scatter) == more);
}

TEST_CASE("Megatron-Core's allgather token dispatcher: every token of the tp x ep ranks gathered and scattered back") {
  // core_v0.13.0 moe/token_dispatcher.py:196-330, 8 experts, 2 a token,
  // 4096 tokens of 4096 at 16 bits a micro-batch, 32 layers.
  program alltoall = two_nodes();
  alltoall.model.experts = 8;
  alltoall.model.experts_per_token = 2;
  program allgather = alltoall;
  allgather.training.moe_token_dispatcher = dispatcher_kind::allgather;
  analytic_cost_model const model;
  auto const calls = [&](program const& q, strategy const& s, comm_group g, collective op, double size) {
    std::int64_t n = 0;
    for (auto const& e : model.step_time(shape_of(q, s)).comm)
      if (e.group == g && e.op == op && e.size.value() == size) n += e.count;
    return n;
  };
  // Over the ep ranks: the eight ranks' tokens (256 MiB) gathered and the
  // output scattered back each way, the map and probabilities gathered.
  strategy s = data_parallel(16, 1);
  s.ep = 8;
  std::int64_t const layers = 32 * shape_of(allgather, s).grad_accum;
  double const hidden = 8 * 4096.0 * 4096 * 2;
  CHECK(calls(allgather, s, comm_group::ep, collective::all_gather, hidden) == 2 * layers);
  CHECK(calls(allgather, s, comm_group::ep, collective::reduce_scatter, hidden) == 2 * layers);
  CHECK(calls(allgather, s, comm_group::ep, collective::all_gather, 8 * 4096.0 * 8 * 2) == layers);  // probabilities
  CHECK(calls(allgather, s, comm_group::ep, collective::all_gather, 8 * 4096.0 * 8) == layers);      // routing map
  CHECK(calls(allgather, s, comm_group::ep, collective::all_to_all, 4096.0 * 4096 * 2 * 2) == 0);
  CHECK(calls(alltoall, s, comm_group::ep, collective::all_to_all, 4096.0 * 4096 * 2 * 2) == 4 * layers);
  // The buffer it gathers into, kept for the run.
  auto const kept = [&](program const& q) {
    for (auto const& term : estimate_memory(shape_of(q, s), true).detail)
      if (term.name.starts_with("allgather token dispatcher's buffer")) return term.size.value();
    return 0.0;
  };
  CHECK(kept(allgather) == hidden);
  CHECK(kept(alltoall) == 0);
  // Over the tp ranks (ep 1, each expert split over tp): the layer's tokens
  // once, not their two copies.
  s = data_parallel(8, 1);
  s.tp = 2;
  s.sequence_parallel = true;
  std::int64_t const tp_layers = 32 * shape_of(allgather, s).grad_accum;
  double const tokens = 4096.0 * 4096 * 2, copies = 2 * tokens;
  CHECK(calls(allgather, s, comm_group::tp, collective::all_gather, copies) == 0);
  CHECK(calls(alltoall, s, comm_group::tp, collective::all_gather, copies) == 2 * tp_layers);
  CHECK(calls(allgather, s, comm_group::tp, collective::all_gather, tokens) -
            calls(alltoall, s, comm_group::tp, collective::all_gather, tokens) ==
        2 * tp_layers);
  CHECK(kept(allgather) == tokens);  // two ranks' halves
  // Each expert whole on its rank without ep (etp 1): Megatron's tp x ep
  // group is the rank alone, nothing gathered, no buffer.
  s.etp = 1;
  CHECK(calls(allgather, s, comm_group::tp, collective::all_gather, tokens) ==
        calls(alltoall, s, comm_group::tp, collective::all_gather, tokens));
  CHECK(kept(allgather) == 0);
}

namespace {
// Eight experts, two a token, on two_nodes() under the dispatcher `d`; and
// a strategy of tp 2 with sequence parallelism over `ep` expert ranks.
program two_nodes_moe(dispatcher_kind d) {
  program p = two_nodes();
  p.model.experts = 8;
  p.model.experts_per_token = 2;
  p.training.moe_token_dispatcher = d;
  return p;
}
strategy_spec tp2_moe_spec(std::int64_t ep) {
  strategy_spec spec;
  spec.name = "s";
  spec.tp = key_choice<std::int64_t>::one(2);
  spec.ep = key_choice<std::int64_t>::one(ep);
  spec.sequence_parallel = key_choice<bool>::one(true);
  return spec;
}
}  // namespace

TEST_CASE("the allgather token dispatcher is costed over the ep or the tp ranks, with sequence parallelism") {
  program const p = two_nodes_moe(dispatcher_kind::allgather);
  strategy_spec spec = tp2_moe_spec(4);
  CHECK(first_error(p, spec) ==
        "moe_token_dispatcher = allgather over tp x ep = 2 x 4 ranks, each expert split over tp, is not costed: "
        "alltoall, or etp = 1");
  spec.ep = key_choice<std::int64_t>::one(1);
  spec.sequence_parallel = key_choice<bool>::one(false);
  CHECK(first_error(p, spec) == "moe_token_dispatcher = allgather under tp = 2 is costed with sequence parallelism only");
  spec.sequence_parallel = key_choice<bool>::one(true);
  CHECK(first_error(p, spec).find("moe_token_dispatcher") == std::string::npos);
}

TEST_CASE("DeepEP (flex) is refused where Megatron-Core refuses it, and with experts split over etp") {
  // core_v0.13.0 moe/token_dispatcher.py:1159-1177, transformer_config.py:
  // 719-727.
  program p = two_nodes_moe(dispatcher_kind::flex);
  strategy_spec spec = tp2_moe_spec(1);
  spec.etp = key_choice<std::int64_t>::one(1);
  CHECK(first_error(p, spec) == "moe_token_dispatcher = flex needs etp x ep > 1: Megatron-Core's DeepEP dispatcher "
                                "runs over the expert-parallel ranks");
  spec.ep = key_choice<std::int64_t>::one(4);
  spec.etp = key_choice<std::int64_t>::one(2);
  CHECK(first_error(p, spec) == "moe_token_dispatcher = flex with each expert split over etp = 2 ranks is not costed: "
                                "etp = 1, or alltoall");
  spec.etp = key_choice<std::int64_t>::one(1);
  CHECK(first_error(p, spec).find("flex") == std::string::npos);
  p.model.capacity_factor = 1.0;
  p.model.pad_to_capacity = true;
  CHECK(first_error(p, spec) == "moe_token_dispatcher = flex does not pad the experts' input to capacity "
                                "(pad_to_capacity): Megatron-Core refuses the two together");
  p.model.pad_to_capacity = false;
  p.model.shared_expert_ffn = 1024;
  p.training.shared_expert_overlap = true;
  CHECK(first_error(p, spec) == "moe_token_dispatcher = flex runs the shared expert in line: Megatron-Core's DeepEP "
                                "dispatcher has no shared_expert_overlap");
  p.training.shared_expert_overlap = false;
  CHECK(first_error(p, spec).find("flex") == std::string::npos);
  // DeepEP v1.2.1's rank counts (deep_ep/buffer.py:233-242), and more than
  // 8 ranks as nodes of 8 (NUM_MAX_NVL_PEERS).
  program q = p;
  q.model.experts = 48;
  q.cluster.nodes = 6;
  spec.ep = key_choice<std::int64_t>::one(48);
  CHECK(first_error(q, spec) == "moe_token_dispatcher = flex over ep = 48 ranks: DeepEP (v1.2.1) runs 2, 4, 8, 16, "
                                "24, 32, 64, 128, 144 or 160");
  q = p;
  q.cluster.nodes = 4;
  q.cluster.gpus_per_node = 4;
  spec.ep = key_choice<std::int64_t>::one(8);
  CHECK(first_error(q, spec) == "moe_token_dispatcher = flex over ep = 8 ranks, 4 a node: DeepEP runs 8 ranks or "
                                "fewer inside a node and more as nodes of 8");
  q.model.experts = 16;
  spec.ep = key_choice<std::int64_t>::one(16);
  CHECK(first_error(q, spec) == "moe_token_dispatcher = flex over ep = 16 ranks, 4 a node: DeepEP runs 8 ranks or "
                                "fewer inside a node and more as nodes of 8");
  q.model.experts = 16;
  q.cluster.nodes = 2;
  q.cluster.gpus_per_node = 8;
  CHECK(first_error(q, spec).find("flex") == std::string::npos);
}

TEST_CASE("DeepEP's buffer: its NVLink and RDMA queues at the group's rank count") {
  // DeepEP v1.2.1 csrc/config.hpp:44-96 with deep_ep/buffer.py's
  // configurations, 20 SMs (10 channels), tokens of 7,168 in bf16 (14,336
  // B) and 2,056 B of metadata each. 64 ranks, 8 nodes: NVLink 10 x 8 x 19
  // x 4 + 10 x 8 x 288 x 16,392 = 377,677,760 B, 377,677,824 B in 128 B
  // blocks; RDMA (128 aligned to 28 and 20: 140 tokens) 10 x 8 x 18 x 2 x 4
  // + 10 x 8 x 140 x 16,408 x 2 + 1 MiB = 368,599,296 B.
  auto const b = deepep_buffer(64, 7168);
  CHECK(b.nvlink.value() == 377677824.0);
  CHECK(b.rdma.value() == 368599296.0);
  // 8 ranks: one node, no RDMA part.
  auto const node = deepep_buffer(8, 7168);
  CHECK(node.nvlink.value() == 335709824.0);
  CHECK(node.rdma.value() == 0.0);
  CHECK(deepep_buffer(48, 7168).nvlink.value() == 0.0);
  // In the recipe's memory: 711.7 MiB of buffers more than the all-to-all's.
  strategy s;
  s.dp = 32, s.tp = 2, s.pp = 16, s.ep = 64, s.etp = 1, s.zero = 1, s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::none;
  auto const flex = estimate_memory(deepseek_v3_128_nodes("moe_token_dispatcher = flex"), s);
  auto const alltoall = estimate_memory(deepseek_v3_128_nodes(""), s);
  CHECK(flex.buffers.value() - alltoall.buffers.value() == 377677824.0 + 368599296.0);
}

namespace {
// What torchtitan's op-level policy keeps of each product of `plan`, by
// its output's name (an expert loop's share).
std::vector<std::pair<std::string, double>> kept_of(op_checkpoint const& plan) {
  std::vector<std::pair<std::string, double>> out;
  for (auto const& x : plan) out.emplace_back(x.output, x.kept);
  return out;
}
using kept_list = std::vector<std::pair<std::string, double>>;
}  // namespace

TEST_CASE("torchtitan's op-level policy: every other matmul kept, counted in each checkpointed module") {
  // Llama 3 8B, one checkpoint over the block (v0.2.0
  // distributed/activation_checkpoint.py:47-120): q 1st, k, v 3rd, o, gate
  // 5th, up, down 7th.
  auto const llama = kept_of(op_checkpoint_of(dtplan::test::llama3_8b(), 1, {}));
  CHECK(llama == kept_list{{"q projection output", 1},
                           {"k projection output", 0},
                           {"v projection output", 1},
                           {"o projection output (partial sums under tp)", 0},
                           {"swiglu gate projection output", 1},
                           {"swiglu up projection output", 0},
                           {"mlp down projection output (partial sums under tp)", 1}});
  // DeepSeek-V3's mixture layer under FlexAttention, uncompiled (its
  // 671B TOML compiles the loss only): the attention fully recomputed, the
  // mixture op-SAC'd from one. The router's gate is forced to recompute and
  // not counted (per_op_sac_force_recompute_mm_shapes_by_fqns =
  // ["moe.router.gate"]); torch._grouped_mm is not aten.mm: the routed
  // experts run again, the shared expert's w1 and w2 are kept.
  model const v3 = *catalog_model("deepseek_v3");
  auto const flex = op_checkpoint_of(v3, 4, {.flex = true, .compiled = false});
  CHECK_FALSE(flex.whole_layer);
  CHECK(flex.attention_full);
  CHECK_FALSE(flex.kernel_kept);
  CHECK(kept_of(flex) == kept_list{{"compressed q (q down projection output)", 0},
                                   {"q up projection output", 0},
                                   {"compressed keys and values (kv down projection output)", 0},
                                   {"kv up projection output", 0},
                                   {"o projection output (partial sums under tp)", 0},
                                   {"router logits", 0},
                                   {"experts' gate projection outputs", 0},
                                   {"experts' up projection outputs", 0},
                                   {"experts' down projection outputs (partial sums under tp)", 0},
                                   {"shared expert gate projection output", 1},
                                   {"shared expert up projection output", 0},
                                   {"shared expert down projection output (partial sums under tp)", 1}});
  // Compiled, the attention is op-SAC'd on a count of its own, and the
  // FlexAttention kernel's output kept.
  auto const compiled = op_checkpoint_of(v3, 4, {.flex = true, .compiled = true});
  CHECK_FALSE(compiled.whole_layer);
  CHECK_FALSE(compiled.attention_full);
  CHECK(compiled.kernel_kept);
  auto const kept = kept_of(compiled);
  CHECK(kept[0].second == 1);  // q down
  CHECK(kept[1].second == 0);
  CHECK(kept[2].second == 1);  // kv down
  CHECK(kept[3].second == 0);
  CHECK(kept[4].second == 1);  // o
  CHECK(kept[9].second == 1);  // the mixture counts from one again
  // Three experts one after another (grouped_gemm = false): the 1st to
  // 9th matmuls; gate 1, 7 (two of three experts), up 5 (one), down 3, 9;
  // then the shared expert's 10th to 12th: its up kept.
  auto const loop = kept_of(op_checkpoint_of(v3, 3, {.flex = true, .compiled = false, .grouped = false}));
  CHECK(loop[6].second == Approx(2.0 / 3).epsilon(1e-15));
  CHECK(loop[7].second == Approx(1.0 / 3).epsilon(1e-15));
  CHECK(loop[8].second == Approx(2.0 / 3).epsilon(1e-15));
  CHECK(loop[9].second == 0);
  CHECK(loop[10].second == 1);
  CHECK(loop[11].second == 0);
  // A dense block under FlexAttention: compiled it is wrapped whole;
  // uncompiled its MLP counts from one.
  model const dense = dense_layer_model(v3);
  CHECK(op_checkpoint_of(dense, 1, {.flex = true, .compiled = true}).whole_layer);
  auto const mlp = kept_of(op_checkpoint_of(dense, 1, {.flex = true, .compiled = false}));
  CHECK(mlp[5] == std::pair<std::string, double>{"swiglu gate projection output", 1});
  CHECK(mlp[6].second == 0);
  CHECK(mlp[7].second == 1);
  // Read from the mixture itself, as the hardware FLOPs read it, the dense
  // layer is the same.
  CHECK(kept_of(op_checkpoint_of(v3, 4, {.flex = true, .compiled = false}, true)) == mlp);
  CHECK(op_checkpoint_of(v3, 4, {.flex = true, .compiled = false}, true).matmuls[5].columns == 18432);
}

TEST_CASE("torchtitan's op-level policy on DeepSeek-V3: what each layer keeps, runs again and costs") {
  model v3 = *catalog_model("deepseek_v3");
  v3.routing_imbalance = 1;
  strategy s;
  s.checkpoint = checkpoint_mode::ops;
  double const tokens = 4096;
  unsigned const core = recompute_bit(recompute_module::core_attn);
  // Uncompiled: the two norms' inputs and the two modules' (4 x 7,168),
  // the shared expert's gate (2,048) and down projection (7,168): 37,888
  // values a token; the dense layers' MLP its gate (18,432) and down.
  op_wrap const eager{.flex = true, .compiled = false};
  CHECK(activations_per_layer(v3, s, false, core, eager).value() == tokens * 2 * 37888);
  CHECK(activations_per_layer(dense_layer_model(v3), s, false, core, eager).value() == tokens * 2 * 54272);
  // Compiled: the attention's q down (1,536), kv down (576), o (7,168), the
  // kernel's output (128 heads x 128) and log-sum-exp (fp32 a head): 63,552
  // values and 512 bytes a token; a dense block wrapped whole 51,264.
  op_wrap const compiled{.flex = true, .compiled = true};
  CHECK(activations_per_layer(v3, s, false, core, compiled).value() == tokens * (2 * 63552 + 512));
  CHECK(activations_per_layer(dense_layer_model(v3), s, false, core, compiled).value() == tokens * (2 * 51264 + 512));
  // With ep the all-to-alls' outputs are kept: the 8 copies of each token
  // this GPU's experts receive (an even routing) and its own 8 back.
  s.ep = 8;
  CHECK(activations_per_layer(v3, s, false, core, eager).value() == tokens * 2 * (37888 + 16 * 7168));

  // The shape's recomputed columns: all of the attention, the router and
  // the routed experts, the shared expert's up half.
  program p = two_nodes(128, 8);
  p.model = v3;
  p.training.attention_kernel = attention_backend::flex;
  p.training.fused_elementwise = false;
  strategy t = data_parallel(128, 1);
  t.pp = 8;
  t.ep = 32;
  t.checkpoint = checkpoint_mode::ops;
  auto const sh = shape_of(p, t);
  for (int i = 0; i < sh.gemm_count; ++i) {
    auto const& g = sh.gemms[static_cast<std::size_t>(i)];
    INFO(g.name);
    std::string_view const name = g.name;
    CHECK(g.recompute_batch == (name == "shared-down" ? 0 : g.forward.batch));
    CHECK(g.recompute_n == (name == "shared-up" ? g.forward.n / 2 : name == "shared-down" ? 0 : g.forward.n));
  }
  // Under tp the router's logits are whole on each rank: all of them run
  // again (not a tp share of them).
  t.tp = 2;
  t.dp = 64;
  t.sequence_parallel = true;
  auto const split = shape_of(p, t);
  for (int i = 0; i < split.gemm_count; ++i) {
    auto const& g = split.gemms[static_cast<std::size_t>(i)];
    INFO(g.name);
    if (std::string_view(g.name) == "router") CHECK(g.recompute_n == 256);
    if (std::string_view(g.name) == "shared-up") CHECK(g.recompute_n == 2048 / 2);
  }
  t.tp = 1;
  t.dp = 128;
  t.sequence_parallel = false;
  // The hardware's FLOPs: the recomputed products, 2 x columns x inputs a
  // token (the routed experts' over 8 copies), and every layer's attention
  // core, forward.
  double const h = 7168;
  double const attention = 2 * (h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h);
  double const mixture = attention + 2 * h * 256 + 2 * 8 * 3 * 2048 * h + 2 * 2048 * h;
  double const dense_layer = attention + 2 * 18432 * h;
  double const step_tokens = static_cast<double>(p.training.global_batch) * 4096;
  double const core_flops = 2.0 * 4096 * 128 * (192 + 128) * step_tokens;
  CHECK(hardware_flops_per_step(p, t).value() - model_flops_per_step(p).value() ==
        Approx(step_tokens * (58 * mixture + 3 * dense_layer) + 61 * core_flops).epsilon(1e-12));
}
