#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "bench/calibration.hpp"
#include "bench/study.hpp"
#include "planner/model/comm.hpp"
#include "planner/model/nccl.hpp"

using namespace dtplan::bench;
using namespace dtplan::planner;

TEST_CASE("csv fields may quote commas, newlines and doubled quotes") {
  auto rows = parse_csv("a,\"b,c\",\"say \"\"hi\"\"\"\n1,,\"x\ny\"\n");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<std::string>{"a", "b,c", "say \"hi\""});
  CHECK(rows[1] == std::vector<std::string>{"1", "", "x\ny"});
}

TEST_CASE("link bandwidths come from the free text") {
  CHECK(parse_link("8x200 Gb/s HDR InfiniBand per node (Selene)", 8, true)->value() == 200e9);
  CHECK(parse_link("1600 Gb/s node-node RoCE (section title)", 8, true)->value() == 200e9);
  CHECK(parse_link("RDMA backend 400 Gb/s per GPU", 8, true)->value() == 400e9);
  CHECK(parse_link("NVLink3/NVSwitch 600 GB/s bidir per GPU (DGX A100)", 8, false)->value() == 300e9);
  CHECK(parse_link("Omni-Path (OPA), 4 links per node, dedicated NCCL subnet", 8, true)->value() == 50e9);
  CHECK(parse_link("4x ConnectX-6 HCAs per node (HDR IB, GPUDirect RDMA)", 8, true)->value() == 100e9);
  CHECK_FALSE(parse_link("not stated", 8, true));
}

TEST_CASE("gpu names map to catalog gpus") {
  CHECK(catalog_gpu_for("A100-SXM4-80GB (Selene)", 80)->name == "A100_SXM_80GB");
  CHECK(catalog_gpu_for("A100 (DGX A100, 2020 => 40GB)", 40)->name == "A100_SXM_40GB");
  CHECK(catalog_gpu_for("H100-SXM5-80GB", 80)->name == "H100_SXM");
  CHECK_FALSE(catalog_gpu_for("MI250X", 128));
}

TEST_CASE("MLPerf's NVL72 racks load as nodes of the GPUs a job takes of each rack") {
  std::map<std::string, calibration_run> by_id;
  for (auto& r : load_mlperf()) by_id.emplace(r.id, r);
  // 2,496 GB200s: 624 trays of 4 in racks of 18; the job takes 16 trays
  // (64 GPUs) of 39 racks, each GPU with its 400 Gbit/s NIC.
  auto const& big = by_id.at("MLPv50-IBMCWNV-l405b-GB200-2496g");
  CHECK(big.representable());
  CHECK(big.prog.cluster.device.name == "GB200");
  CHECK(big.prog.cluster.gpus_per_node == 64);
  CHECK(big.prog.cluster.nodes == 39);
  CHECK(big.prog.cluster.inter_node.value() == 64 * 50e9);
  // NeMo's TP_PP_DP_MAPPING: data parallelism outermost.
  CHECK(big.s.order == rank_order{axis::tp, axis::cp, axis::pp, axis::dp});
  CHECK(by_id.at("MLPv50-NV-l405b-GB200-256g").s.order == default_order);
  // One whole rack; GB300's trays carry ConnectX-8 at 800 Gbit/s.
  auto const& rack = by_id.at("MLPv51-NV-l8b-GB300-72g");
  CHECK(rack.prog.cluster.device.name == "GB300");
  CHECK(rack.prog.cluster.gpus_per_node == 72);
  CHECK(rack.prog.cluster.nodes == 1);
  CHECK(rack.prog.cluster.inter_node.value() == 72 * 100e9);
  // 512 GPUs are 8 racks of 64, not 7 of 72 and a part.
  CHECK(by_id.at("MLPv51-NV-l8b-GB200-512g").prog.cluster.gpus_per_node == 64);
  CHECK(by_id.at("MLPv51-NV-l8b-GB200-512g").prog.cluster.nodes == 8);
  CHECK(by_id.at("MLPv51-DELL-l8b-B300-8g").prog.cluster.device.name == "B300");
  // The v5.1 rows with Transformer Engine's NVFP4 recipe cost their GEMMs in fp4.
  CHECK(by_id.at("MLPv51-NV-l8b-GB200-8g").skip_reason.empty());
  CHECK(by_id.at("MLPv51-NV-l8b-GB200-8g").prog.model.prec == precision::fp4);
  CHECK(by_id.at("MLPv51-NV-l405b-GB300-512g").prog.model.prec == precision::fp4);
  CHECK(by_id.at("MLPv51-UF-l8b-B200-8g").prog.model.prec == precision::fp8);
  // Every NVL72 row is costed, six of them in fp4.
  std::size_t costed = 0, fp4 = 0;
  for (auto const& [id, r] : by_id)
    if (r.family == "MLPerf-NVL72") {
      INFO(id);
      if (!r.representable()) FAIL(r.skip_reason);
      ++costed;
      fp4 += r.prog.model.prec == precision::fp4;
    }
  CHECK(costed == 18);
  CHECK(fp4 == 6);
}

TEST_CASE("the calibration file loads every row with its strategy or a skip reason") {
  auto runs = load_calibration_runs();
  REQUIRE(runs.size() == 268);
  auto find = [&](std::string_view id) {
    auto it = std::find_if(runs.begin(), runs.end(), [&](auto const& r) { return r.id == id; });
    REQUIRE(it != runs.end());
    return *it;
  };
  auto bloom = find("BLOOM-176B-gbs2048");
  CHECK(bloom.representable());
  CHECK(bloom.s.dp == 8);
  CHECK(bloom.s.tp == 4);
  CHECK(bloom.s.pp == 12);
  CHECK(bloom.s.zero == 1);
  CHECK(bloom.s.checkpoint == checkpoint_mode::full);
  CHECK(bloom.grad_accum == 128);
  CHECK(bloom.prog.cluster.inter_node.value() == 50e9);
  CHECK(bloom.step_time->value() == 104.7);
  // As BLOOM ran: DeepSpeed's BF16_Optimizer (fp32 gradients all-reduced as
  // bf16), every launch blocking (tr11's CUDA_LAUNCH_BLOCKING=1), and NCCL
  // on Omni-Path through verbs (46.2 % of the line rate).
  CHECK(bloom.runtime == std::vector<std::pair<std::string, std::string>>{{"framework", "deepspeed"},
                                                                          {"grad_precision", "fp32"},
                                                                          {"grad_reduce", "all_reduce"},
                                                                          {"grad_comm_precision", "bf16"},
                                                                          {"contiguous_gradients", "false"},
                                                                          {"cuda_launch_blocking", "true"}});
  CHECK(bloom.prog.cluster.network_efficiency == 0.462);
  CHECK(bloom.assumptions.back() == "Omni-Path: NCCL over verbs at 46.2 % of the line rate (openucx/ucx#3196)");

  auto mpt = find("MPT-h100_80gb-amp_bf16-7b-s2048-g8-mb6");
  CHECK(mpt.representable());
  CHECK(mpt.prog.cluster.network_efficiency == mpt.prog.cluster.device.network_efficiency);  // not Omni-Path
  CHECK(mpt.s.zero == 3);
  CHECK(mpt.s.dp == 8);
  CHECK(mpt.prog.model.prec == precision::bf16);
  CHECK(mpt.prog.model.attention == attention_kind::flash);

  CHECK(find("MPT-h100_80gb-amp_bf16-3b-s2048-g512-mb8").s.zero == 2);
  CHECK(find("TT-8B-8gpu-FSDP").s.zero == 3);
  CHECK(find("TT-8B-8gpu-FSDP").prog.model.kv_heads == 8);
  // torchtitan's measurements: Grand Teton's power-capped H100, Float8
  // linears as fp8 GEMMs, torch.compile as fused element-wise kernels, async
  // TP as overlapped tensor-parallel collectives.
  auto const tt = find("TT-8B-8gpu-FSDP");
  CHECK(tt.representable());
  CHECK(tt.prog.cluster.device.name == "H100_SXM_96GB_500W");
  CHECK(tt.prog.cluster.device.memory.value() == 94.0 * 1073741824.0);
  CHECK(tt.prog.model.prec == precision::bf16);
  CHECK(tt.runtime == std::vector<std::pair<std::string, std::string>>{{"framework", "torchtitan"},
                                                                       {"attention_backend", "flash"}});
  auto const fp8 = find("TT-8B-8gpu-FSDP+compile+Float8");
  CHECK(fp8.representable());
  CHECK(fp8.prog.model.prec == precision::fp8);
  CHECK(fp8.runtime.back() == std::pair<std::string, std::string>{"fused_elementwise", "true"});
  CHECK(find("TT-70B-256gpu-2D+AsyncTP").runtime.back() ==
        std::pair<std::string, std::string>{"tp_comm_overlap", "true"});
  // The table's batch is the local batch: torchtitan splits it into one
  // micro-batch per pipeline stage, two stages a rank when interleaved.
  auto const one_f_one_b = find("TT-405B-512gpu-1F1B");
  CHECK(one_f_one_b.s.micro_batch == 4);
  CHECK(one_f_one_b.s.virtual_stages == 1);
  CHECK(one_f_one_b.grad_accum == 8);
  auto const interleaved = find("TT-405B-512gpu-Interleaved1F1B");
  CHECK(interleaved.s.micro_batch == 2);
  CHECK(interleaved.s.virtual_stages == 2);
  CHECK(interleaved.grad_accum == 16);
  // A table without micro-batches, and no scripts to read them from.
  CHECK(find("MLM20-A100-1B").skip_reason == "activation recomputation not published; no micro_batch published");
  // Narayanan et al.'s Table 1 with the micro-batch and interleaving its
  // SC21 scripts set (bench/data/supplements.csv).
  CHECK(find("MLM21-76B").skip_reason.empty());
  CHECK(find("MLM21-76B").s.micro_batch == 2);
  CHECK(find("MLM21-76B").s.virtual_stages == 3);
  CHECK(find("MLM21-76B").runtime.back() == std::pair<std::string, std::string>{"grad_precision", "fp16"});
  // Megatron-LM's GPT keeps its dropout (0.1) unless told otherwise; MPT's
  // benchmarks and torchtitan's Llama train without.
  CHECK(find("MLM21-76B").prog.model.dropout);
  CHECK(find("KOR-175B-full").prog.model.dropout);
  CHECK_FALSE(find("TT-405B-512gpu-1F1B").prog.model.dropout);
  CHECK(find("KOR-175B-seqsel").s.sequence_parallel);
  CHECK(find("KOR-175B-seqsel").s.virtual_stages == 3);
}

TEST_CASE("vtrain ground truth loads as A100 runs with full checkpointing") {
  auto runs = load_vtrain(std::string(DTPLAN_BENCH_DATA_DIR) + "/vtrain/ground_truth_multi.csv");
  REQUIRE(runs.size() == 109);
  CHECK(runs[0].s.dp == 64);
  CHECK(runs[0].s.micro_batch == 8);
  CHECK(runs[0].prog.cluster.nodes == 8);
  CHECK(runs[0].step_time->value() == Approx(3.5665));
  CHECK(runs[0].s.checkpoint == checkpoint_mode::full);
  CHECK(runs[0].prog.model.dropout);
}

TEST_CASE("vtrain's machine inside a node is its own measured all-reduce table") {
  // nccl-tests all_reduce_perf on 2, 4 and 8 of vTrain's A100s, microseconds
  // (VIA-Research/vTrain f8dda84 trace/a100/AR_GPU{2,4,8}_1M_1024M_LUT, the
  // first time column) at 1 MiB to 256 MiB.
  struct point {
    std::int64_t ranks, mib;
    double us;
  };
  static constexpr point table[] = {
      {2, 1, 44.21},   {2, 2, 53.43},   {2, 4, 61.18},   {2, 8, 86.9},     {2, 16, 131.9},   {2, 32, 230.0},
      {2, 64, 404.7},  {2, 128, 763.6}, {2, 256, 1455.8}, {4, 1, 51.4},    {4, 2, 55.74},    {4, 4, 77.32},
      {4, 8, 116.8},   {4, 16, 179.6},  {4, 32, 284.2},  {4, 64, 543.8},   {4, 128, 998.6},  {4, 256, 1929.0},
      {8, 1, 92.79},   {8, 2, 93.25},   {8, 4, 95.8},    {8, 8, 134.3},    {8, 16, 232.4},   {8, 32, 358.1},
      {8, 64, 579.9},  {8, 128, 1162.0}, {8, 256, 2162.3}};
  auto runs = load_vtrain(std::string(DTPLAN_BENCH_DATA_DIR) + "/vtrain/ground_truth_single.csv");
  REQUIRE(!runs.empty());
  auto const& c = runs[0].prog.cluster;
  CHECK(c.intra_node.value() == Approx(300e9));  // the A100's NVLink, not the simulator's 150 GB/s
  double sum = 0, worst = 0;
  for (auto const& p : table) {
    group_placement const g{.size = p.ranks, .nodes = 1, .max_per_node = p.ranks};
    auto const link = link_for(c, g);
    auto const n = nccl_group(c, runs[0].prog.training, g, link);
    REQUIRE(n.hop_latency);
    auto const t = nccl::best(collective::all_reduce, bytes(static_cast<double>(p.mib) * 1048576.0), n).time;
    double const e = std::fabs(std::log(t.value() * 1e6 / p.us));
    sum += e;
    worst = std::max(worst, e);
  }
  // A ring of 6.5 us a step at 188 GB/s: 20 % on average, at worst the
  // 2-GPU 1 MiB call (44 us measured, 19 us costed).
  CHECK(sum / std::size(table) == Approx(0.198).margin(0.005));
  CHECK(worst == Approx(std::log(44.21 / 18.6)).margin(0.02));
}

TEST_CASE("a pair of runs is named by what its strategies and behaviours differ in") {
  calibration_run a, b;
  a.s.tp = 2;
  a.s.micro_batch = 4;
  a.runtime = {{"framework", "torchtitan"}, {"attention_backend", "flash"}};
  b = a;
  CHECK(what_differs(a, b) == "nothing the model reads");
  b.s.tp = 1;
  b.s.pp = 2;
  CHECK(what_differs(a, b) == "tp + pp");
  b.s.checkpoint = checkpoint_mode::full;
  b.prog.model.prec = precision::fp8;
  b.runtime.emplace_back("fused_elementwise", "true");
  b.runtime.emplace_back("tp_comm_overlap", "true");
  CHECK(what_differs(a, b) == "tp + pp + checkpoint + precision + fused_elementwise + tp_comm_overlap");
  // A behaviour either run sets apart, whichever holds it.
  CHECK(what_differs(b, a) == "tp + pp + checkpoint + precision + fused_elementwise + tp_comm_overlap");
  // Every strategy key of the key table counts, the shard group too.
  b = a;
  b.s.shard = shard_group{shard_group::kind::node};
  CHECK(what_differs(a, b) == "shard");
  // A behaviour both set, to different values.
  b = a;
  b.runtime[1].second = "sdpa";
  CHECK(what_differs(a, b) == "attention_backend");
}
