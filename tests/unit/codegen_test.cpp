#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../codegen/fixtures.hpp"
#include "dsl/source.hpp"
#include "codegen/emit.hpp"
#include "codegen/escape.hpp"
#include "codegen/graphviz.hpp"
#include "codegen/launch.hpp"
#include "codegen/skeleton.hpp"
#include "planner/model/layout.hpp"

using namespace dtplan;
namespace fx = dtplan::codegen::fixtures;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines(std::string const& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool contains(std::string const& text, std::string const& part) { return text.find(part) != std::string::npos; }

std::string read(fs::path const& p) { return dsl::read_file(p.string()).value_or(std::string()); }

}  // namespace

TEST_CASE("layout text: one line per rank with coordinates and groups") {
  auto f = fx::tp4_pp2();
  auto text = codegen::layout_text(f.plan.s, 8, {}, false);
  auto ls = lines(text);
  REQUIRE(ls.size() == 16);
  CHECK(ls[0] == "rank 0 node 0 local 0 tp 0 cp 0 dp 0 pp 0 | tp: 0 1 2 3 | cp: 0 | dp: 0 4 | pp: 0 8 | grad: 0 4");
  CHECK(ls[5] == "rank 5 node 0 local 5 tp 1 cp 0 dp 1 pp 0 | tp: 4 5 6 7 | cp: 5 | dp: 1 5 | pp: 5 13 | grad: 1 5");
  CHECK(ls[15] == "rank 15 node 1 local 7 tp 3 cp 0 dp 1 pp 1 | tp: 12 13 14 15 | cp: 15 | dp: 11 15 | pp: 7 15 | grad: 11 15");
}

TEST_CASE("layout text follows the order, innermost first; gradients sync over dp x cp") {
  auto f = fx::all_axes();  // order tp-dp-cp-pp, tied embedding over pp 2
  auto ls = lines(codegen::layout_text(f.plan.s, 8, {}, true));
  REQUIRE(ls.size() == 16);
  CHECK(ls[6] == "rank 6 node 0 local 6 tp 0 cp 1 dp 1 pp 0 | tp: 6 7 | cp: 2 6 | dp: 4 6 | pp: 6 14 | grad: 0 2 4 6"
                 " | embedding: 6 14");
  // Every line agrees with planner::rank_layout, rank by rank.
  planner::rank_layout l(f.plan.s, 8);
  for (std::int64_t r = 0; r < 16; ++r) {
    auto c = l.of(r);
    CHECK(ls[static_cast<std::size_t>(r)].rfind(
              fmt::format("rank {} node {} local {} tp {} cp {} dp {} pp {} |", r, r / 8, r % 8, c[0], c[1], c[2], c[3]), 0) == 0);
  }
}

TEST_CASE("layout text adds shard and replicate groups when ZeRO splits the gradient group") {
  auto f = fx::hsdp();
  auto ls = lines(codegen::layout_text(f.plan.s, 8, {planner::shard_layout::kind::node, 0}, false));
  REQUIRE(ls.size() == 32);
  CHECK(contains(ls[9], "| shard: 8 9 10 11 12 13 14 15 | replicate: 1 9 17 25"));
  auto blocks = lines(codegen::layout_text(f.plan.s, 8, {planner::shard_layout::kind::dp_block, 4}, false));
  CHECK(contains(blocks[9], "| shard: 8 9 10 11 | replicate: 1 5 9 13 17 21 25 29"));
  // Without ZeRO, or with the whole gradient group as the shard, there is no split to print.
  auto plain = fx::dp16_zero1();
  CHECK_FALSE(contains(codegen::layout_text(plain.plan.s, 8, {}, false), "shard"));
  plain.plan.s.zero = 0;
  CHECK_FALSE(contains(codegen::layout_text(plain.plan.s, 8, {planner::shard_layout::kind::node, 0}, false), "shard"));
}

TEST_CASE("the skeleton's compute comes from the shape: every GEMM, the LM head, attention, recomputation") {
  auto f = fx::dp16_zero1();  // Llama 2 7B, SwiGLU, 32 kv heads, tp 1, 4096 tokens
  f.plan.s.checkpoint = planner::checkpoint_mode::ops;
  auto cu = codegen::train_step_cu(f.program, f.plan);
  // k (4096 of qkv's 12288 columns), o, and SwiGLU's up half of mlp-up.
  CHECK(contains(cu, "    {\"qkv\", 4096, 12288, 4096, 1, 1, 4096, "));
  CHECK(contains(cu, "    {\"o-proj\", 4096, 4096, 4096, 1, 1, 4096, "));
  CHECK(contains(cu, "    {\"mlp-up\", 4096, 22016, 4096, 1, 1, 11008, "));
  CHECK(contains(cu, "    {\"mlp-down\", 4096, 4096, 11008, 1, 1, 0, "));
  CHECK(contains(cu, "constexpr gemm_spec k_logits = {\"logits\", 4096, 32000, 4096, 1, 1, 0, "));
  // Flash attention: 32 heads of 4096 queries against the 2112 keys a causal
  // kernel visits on average ((32 + 1) / (2 x 32) of 32 blocks of 128), head_dim 128.
  CHECK(contains(cu, "constexpr attention_spec k_attention = {32, 4096, 2112, 128, 1, "));
  CHECK(std::count(cu.begin(), cu.end(), '@') == 0);
  CHECK(contains(cu, "constexpr bool k_recompute_attention = false, k_recompute_memory = true;\n"));
  CHECK(contains(cu, "constexpr int k_precision = 0;  // bf16\n"));
  f.program.model.prec = planner::precision::fp8;
  CHECK(contains(codegen::train_step_cu(f.program, f.plan), "constexpr int k_precision = 3;  // fp8\n"));
}

TEST_CASE("each collective keeps the plan's phase, overlap, precision and ranks") {
  auto f = fx::all_axes();
  auto cu = codegen::train_step_cu(f.program, f.plan);
  // op, group, name, ranks, bytes, count, time, exposed, phase, overlapped, type, link
  CHECK(contains(cu, "    {4, 1, \"cp\", 2, 67000000, 1536, 3, 0.5, 0, 1, 0, \"intra\"},  // send/recv"));
  CHECK(contains(cu, "    {4, 3, \"pp\", 2, 268000000, 128, 4.3, 2.1, 2, 1, 0, \"inter\"},"));
  CHECK(contains(cu, "    {0, 6, \"embedding\", 2, 131000000, 1, 0.1, 0.1, 3, 0, 0, \"inter\"},"));
  // The gradient reduce-scatter is the cost model's `dp` entry over dp x cp = 4 ranks, group 2 (grad).
  CHECK(contains(cu, "    {1, 2, \"dp\", 4, 3500000000, 1, 0.4, 0.1, 3, 1, 0, \"intra\"},"));
  CHECK(contains(cu, "    {2, 2, \"dp\", 4, 3500000000, 1, 0.4, 0.4, 4, 0, 0, \"intra\"},"));
  // fp32 gradients travel as fp32 (type 2); weights and activations stay 16-bit.
  f.program.training.grad_precision = planner::precision::fp32;
  auto fp32 = codegen::train_step_cu(f.program, f.plan);
  CHECK(contains(fp32, "    {1, 2, \"dp\", 4, 3500000000, 1, 0.4, 0.1, 3, 1, 2, \"intra\"},"));
  CHECK(contains(fp32, "    {0, 6, \"embedding\", 2, 131000000, 1, 0.1, 0.1, 3, 0, 2, \"inter\"},"));
  CHECK(contains(fp32, "    {2, 2, \"dp\", 4, 3500000000, 1, 0.4, 0.4, 4, 0, 0, \"intra\"},"));
  CHECK(codegen::overlapped(f.plan.time->comm[2]));
  CHECK_FALSE(codegen::overlapped(f.plan.time->comm[0]));
}

TEST_CASE("the skeleton bakes in the plan's numbers and schedule") {
  auto f = fx::tp4_pp2();
  auto cu = codegen::train_step_cu(f.program, f.plan);
  CHECK(contains(cu, "constexpr long long k_world = 16;\n"));
  CHECK(contains(cu, "constexpr long long k_tp = 4, k_cp = 1, k_dp = 2, k_pp = 2, k_ep = 1, k_etp = 4;\n"));
  CHECK(contains(cu, "constexpr int k_order[4] = {0, 1, 2, 3};\n"));
  CHECK(contains(cu, "constexpr long long k_micro_batches = 128;"));
  CHECK(contains(cu, "constexpr long long k_chunk_layers[2] = {20, 20};  // model chunk c runs on stage c % pp\n"));
  CHECK(contains(cu, "constexpr long long k_weights_bytes = 3300000000;\n"));
  CHECK(contains(cu, "constexpr long long k_activations_bytes = 21000000000;\n"));
  CHECK(contains(cu, "    {\"qkv\", 4096, 3840, 5120, 1, 1, 0, "));
  CHECK(contains(cu, "    {2, 0, \"tp\", 4, 41900000, 10240, 2.9, 2.9, 0, 0, 0, \"intra\"},  // all-gather 40.0 MiB over 4 ranks\n"));
  CHECK(contains(cu, "constexpr double k_predicted_step_s = 41.2;\n"));
  // 1F1B over 2 stages: 256 ops a stage, 1 x (1 + 2) units idle, 128 sends each way.
  CHECK(contains(cu, "constexpr long long k_pipe_slots = 256, k_pipe_makespan = 387, k_pipe_idle = 3, k_pipe_bubble_pairs = 1;\n"));
  CHECK(contains(cu, "constexpr long long k_pipe_sends = 256;\n"));
  CHECK(contains(cu, "constexpr long long k_pipe_warmup[2] = {2, 1};\n"));
  CHECK(contains(cu, "constexpr long long k_pipe_forward_sends[2] = {128, 0};\n"));
  CHECK(contains(cu, "constexpr long long k_pipe_backward_sends[2] = {0, 128};\n"));
  // Every CUDA, NCCL, cuBLAS and MPI call goes through a checking macro.
  for (auto const* api : {"cudaMalloc(", "ncclAllReduce(", "cublasGemmStridedBatchedEx(", "cublasLtMatmul(", "MPI_Init("})
    CHECK(cu.find(api) != std::string::npos);
  CHECK_FALSE(contains(cu, "TODO"));
  auto other = fx::all_axes();
  CHECK(contains(codegen::train_step_cu(other.program, other.plan), "constexpr int k_order[4] = {0, 2, 1, 3};\n"));
}

TEST_CASE("the schedule listing the skeleton prints") {
  auto text = codegen::schedule_text(planner::one_f_one_b(2, 1, 2));
  CHECK(text ==
        "schedule pp 2 virtual 1 micro_batches 2 slots 4 makespan 9 idle 3 bubble_pairs 1 sends 4\n"
        "stage 0 warmup 2 cooldown 2 forward_sends 2 backward_sends 0\n"
        "op 0 0 forward mb 0 chunk 0 recv - send 1 start 0 end 1\n"
        "op 0 1 forward mb 1 chunk 0 recv - send 1 start 1 end 2\n"
        "op 0 2 backward mb 0 chunk 0 recv 1 send - start 4 end 6\n"
        "op 0 3 backward mb 1 chunk 0 recv 1 send - start 7 end 9\n"
        "issue 0 op 0\n"
        "issue 0 group 0 send 0 peer 1 time 1\n"
        "issue 0 op 1\n"
        "issue 0 group 1 send 1 peer 1 time 2\n"
        "issue 0 group 2 recv 2 peer 1 time 4\n"
        "issue 0 op 2\n"
        "issue 0 group 3 recv 3 peer 1 time 7\n"
        "issue 0 op 3\n"
        "stage 1 warmup 1 cooldown 1 forward_sends 0 backward_sends 2\n"
        "op 1 0 forward mb 0 chunk 0 recv 0 send - start 1 end 2\n"
        "op 1 1 backward mb 0 chunk 0 recv - send 0 start 2 end 4\n"
        "op 1 2 forward mb 1 chunk 0 recv 0 send - start 4 end 5\n"
        "op 1 3 backward mb 1 chunk 0 recv - send 0 start 5 end 7\n"
        "issue 1 group 0 recv 0 peer 0 time 1\n"
        "issue 1 op 0\n"
        "issue 1 group 1 recv 2 peer 0 time 2\n"
        "issue 1 op 1\n"
        "issue 1 group 2 send 1 peer 0 time 4\n"
        "issue 1 op 2\n"
        "issue 1 op 3\n"
        "issue 1 group 3 send 3 peer 0 time 7\n");
}

TEST_CASE("the diagram draws every GPU of a small cluster, with a legend") {
  auto f = fx::tp4_pp2();
  auto dot = codegen::sharding_dot(f.program, f.plan);
  CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
  CHECK(dot.rfind("digraph sharding {\n", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  for (int r = 0; r < 16; ++r) CHECK(contains(dot, fmt::format("    r{} [label=\"rank {}\\n", r, r)));
  CHECK(contains(dot, "subgraph cluster_node0 {"));
  CHECK(contains(dot, "subgraph cluster_node1 {"));
  CHECK(contains(dot, "subgraph cluster_legend {"));
  CHECK(contains(dot, "r5 [label=\"rank 5\\ntp 1 cp 0 dp 1 pp 0\\nlayers 0-19 of 40\\nembedding\\n1/4 of each weight matrix\\n"
                      "1/2 of optimizer state\\n36.9 GiB of 74.0 GiB usable\""));
  CHECK(contains(dot, "  r4 -> r5 [color=\"#1f5fbf\""));   // tp
  CHECK(contains(dot, "  r1 -> r5 [color=\"#2e8b57\""));   // dp
  CHECK(contains(dot, "  r5 -> r13 [color=\"#c0392b\""));  // pp
  CHECK(contains(dot, "tensor parallel (tp)"));
  CHECK(contains(dot, "pipeline (pp), stage to next stage"));
  CHECK(dot == codegen::sharding_dot(f.program, f.plan));
}

TEST_CASE("the diagram of a hybrid-sharded plan shows shard groups") {
  auto f = fx::hsdp();
  auto dot = codegen::sharding_dot(f.program, f.plan);
  CHECK(contains(dot, "1/8 of weights, gradients, optimizer state (shard group of 8)"));
  CHECK(contains(dot, "  r8 -> r9 [color=\"#e07b00\""));
  CHECK(contains(dot, "  r1 -> r9 [color=\"#2e8b57\""));
  CHECK(contains(dot, "ZeRO shard group (hybrid)"));
}

TEST_CASE("the diagram of a mixture shows each GPU's experts and the expert groups") {
  // 8 experts over ep 4 of the 16 data-parallel ranks: blocks of four
  // consecutive ranks, two experts each; ZeRO-1 splits the dense state over
  // 16 ranks and each expert's over the 16 / 4 that hold it.
  auto f = fx::dp16_zero1();
  f.program.model.experts = 8;
  f.program.model.experts_per_token = 2;
  f.plan.s.ep = 4;
  auto dot = codegen::sharding_dot(f.program, f.plan);
  CHECK(contains(dot, "r1 [label=\"rank 1\\ntp 0 cp 0 dp 1 pp 0\\nlayers 0-31 of 32\\nembedding\\noutput layer, loss\\n"
                      "experts 2-3 of 8 in each layer\\n1/16 of optimizer state; its experts' 1/4\\n"));
  CHECK(contains(dot, "r6 [label=\"rank 6\\ntp 0 cp 0 dp 6 pp 0\\nlayers 0-31 of 32\\nembedding\\noutput layer, loss\\n"
                      "experts 4-5 of 8 in each layer\\n"));
  CHECK(contains(dot, "  r2 -> r3 [color=\"#8c6d1f\""));
  CHECK_FALSE(contains(dot, "  r3 -> r4 [color=\"#8c6d1f\""));  // the next block
  CHECK(contains(dot, "8 experts a layer over ep 4 of the dp x cp ranks, 2 on each"));
  CHECK(contains(dot, "expert parallel (ep): tokens to their experts, all-to-all"));
  // A dense plan draws none of it.
  CHECK_FALSE(contains(codegen::sharding_dot(fx::dp16_zero1().program, fx::dp16_zero1().plan), "expert"));
}

TEST_CASE("the diagram of a large cluster is condensed") {
  auto f = fx::large();
  auto dot = codegen::sharding_dot(f.program, f.plan);
  CHECK(dot.size() < 20000);
  CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
  CHECK(contains(dot, "    r7 [label=\"rank 7\\n"));
  CHECK_FALSE(contains(dot, "    r8 [label"));
  CHECK(contains(dot, "    n1 [label=\"nodes 1-15\\nranks 8-127 (120 GPUs)\\npp stages 0\\ndp coordinates 1-15\\nlayers 0-9 of 80\\n"));
  CHECK(contains(dot, "    n112 [label=\"nodes 112-127\\nranks 896-1023 (128 GPUs)\\npp stages 7\\n"));
  CHECK(contains(dot, "  r0 -> n16 [color=\"#c0392b\""));
  CHECK(contains(dot, "  n16 -> n32 [color=\"#c0392b\""));
  CHECK(contains(dot, "condensed: more than 64 GPUs"));
}

TEST_CASE("launch scripts carry the plan's node and task counts") {
  auto f = fx::dp16_zero1();
  auto slurm = codegen::slurm_script(f.program, f.plan);
  CHECK(slurm.rfind("#!/bin/bash\n#SBATCH --job-name=dtplan-current\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
                    "#SBATCH --gpus-per-node=8\n", 0) == 0);
  CHECK(contains(slurm, "srun --mpi=\"$mpi\" --ntasks=16 --ntasks-per-node=8 --cpus-per-task=\"${SLURM_CPUS_PER_TASK:-8}\" \\\n"));
  CHECK(contains(slurm, "export NCCL_SOCKET_IFNAME=\"${NCCL_SOCKET_IFNAME:-^lo,docker}\"\n"));
  CHECK(contains(slurm, "# Groups that cross nodes in this plan: dp.\n"));
  auto mpi = codegen::mpirun_script(f.program, f.plan);
  CHECK(contains(mpi, "hosts=2\n"));
  CHECK(contains(mpi, "\"${DTPLAN_MPIRUN:-mpirun}\" -np 16 ${hostfile[@]+\"${hostfile[@]}\"} --map-by ppr:8:node --bind-to none \\\n"));
  auto one = fx::dp16_zero1();
  one.program.cluster.nodes = 1;
  one.plan.s.dp = 8;
  CHECK(contains(codegen::slurm_script(one.program, one.plan), "#SBATCH --nodes=1\n"));
  CHECK(contains(codegen::mpirun_script(one.program, one.plan), "-np 8 "));
  CHECK_FALSE(contains(codegen::mpirun_script(one.program, one.plan), "NCCL_SOCKET_IFNAME"));
}

TEST_CASE("launch scripts block every kernel launch when the plan was costed so") {
  auto f = fx::dp16_zero1();
  std::string const line = "export CUDA_LAUNCH_BLOCKING=1\n";
  CHECK_FALSE(contains(codegen::slurm_script(f.program, f.plan), line));
  CHECK_FALSE(contains(codegen::mpirun_script(f.program, f.plan), line));
  f.program.training.cuda_launch_blocking = true;
  CHECK(contains(codegen::slurm_script(f.program, f.plan),
                 "# The plan was costed with every kernel launch blocking (training.cuda_launch_blocking).\n" + line));
  CHECK(contains(codegen::mpirun_script(f.program, f.plan), line));
}

TEST_CASE("an NVLink domain larger than a server is launched as trays of 4 GPUs") {
  auto f = fx::dp16_zero1();
  f.program.cluster.nodes = 2;
  f.program.cluster.gpus_per_node = 72;  // two NVL72 racks
  f.plan.s.dp = 144;
  CHECK(codegen::gpus_per_host(f.program.cluster) == 4);
  auto slurm = codegen::slurm_script(f.program, f.plan);
  CHECK(contains(slurm, "#SBATCH --nodes=36\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"));
  CHECK(contains(slurm, "--ntasks=144 --ntasks-per-node=4 "));
  CHECK(contains(slurm, "# Each node of the plan is an NVLink domain of 72 GPUs, launched as 18 trays of 4\n"));
  CHECK(contains(codegen::mpirun_script(f.program, f.plan), "--map-by ppr:4:node"));
  f.program.cluster.gpus_per_node = 8;
  CHECK(codegen::gpus_per_host(f.program.cluster) == 8);
}

TEST_CASE("emit writes every file of the bundle") {
  auto f = fx::all_axes();
  auto dir = fs::path(DTPLAN_BINARY_DIR) / "codegen_test_bundle";
  fs::remove_all(dir);
  dsl::diagnostics diags;
  auto r = codegen::emit_bundle(f.program, f.plan, "{}\n", dir, diags);
  REQUIRE(r);
  for (auto const* file : {"plan.json", "sharding.dot", "skeleton/CMakeLists.txt", "skeleton/train_step.cu",
                           "launch/slurm.sbatch", "launch/mpirun.sh"})
    CHECK(fs::file_size(dir / file) > 0);
  CHECK(read(dir / "plan.json") == "{}\n");
  CHECK(read(dir / "sharding.dot") == codegen::sharding_dot(f.program, f.plan));
  auto exec = fs::status(dir / "launch" / "mpirun.sh").permissions() & fs::perms::owner_exec;
  CHECK(exec == fs::perms::owner_exec);
  if (r->svg) CHECK(read(dir / "sharding.svg").find("<svg") != std::string::npos);
  else CHECK(diags.list().back().message.rfind("'dot' (Graphviz) is not installed", 0) == 0);
  CHECK(contains(read(dir / "skeleton" / "CMakeLists.txt"), "project(dtplan_train_step LANGUAGES CXX CUDA)\n"));
}

TEST_CASE("emit reports a directory it cannot create") {
  auto f = fx::dp16_zero1();
  auto file = fs::path(DTPLAN_BINARY_DIR) / "codegen_test_not_a_dir";
  std::ofstream(file) << "x";
  dsl::diagnostics diags;
  CHECK_FALSE(codegen::emit_bundle(f.program, f.plan, "{}", file / "bundle", diags));
  REQUIRE(diags.list().size() == 1);
  CHECK(diags.list()[0].message == fmt::format("cannot create directory '{}': Not a directory", (file / "bundle").string()));
  dsl::diagnostics d2;
  CHECK_FALSE(codegen::write_dot(f.program, f.plan, file / "x.dot", d2));
  CHECK(d2.has_errors());
}

TEST_CASE("input text is escaped for the file it lands in") {
  using codegen::c_string;
  using codegen::comment_text;
  using codegen::printable;
  CHECK(printable("plain name_1 (x) 'q' \"d\" $HOME `x`") == "plain name_1 (x) 'q' \"d\" $HOME `x`");
  CHECK(printable("a\nb\rc\x1b[31m\\") == "a\\x0ab\\x0dc\\x1b[31m\\x5c");
  CHECK(printable("\xc3\xa9") == "\\xc3\\xa9");
  // No comment can be ended, spliced or trigraphed.
  auto const c = comment_text("p\nq\\\n?\?/ */");
  CHECK(c == "p\\x0aq\\x5c\\x0a?\\x3f/ */");
  CHECK(c.find('\n') == std::string::npos);
  CHECK(c.back() != '\\');
  // A literal's value is the text byte for byte; octal escapes never take a following digit.
  CHECK(c_string("a\"b\\c?d") == "\"a\\\"b\\\\c\\?d\"");
  CHECK(c_string("\n1\r") == "\"\\0121\\015\"");
  CHECK(c_string("\xc3\xa9") == "\"\\303\\251\"");
  // Through the generators: the hostile fixture's names leave one line each.
  auto f = fx::hostile();
  for (auto const& text : {codegen::train_step_cu(f.program, f.plan), codegen::skeleton_cmake(f.program, f.plan),
                           codegen::slurm_script(f.program, f.plan), codegen::mpirun_script(f.program, f.plan)}) {
    CHECK_FALSE(contains(text, "\ntouch pwn_nl"));
    CHECK_FALSE(contains(text, "\r"));
    CHECK_FALSE(contains(text, "\nfile(WRITE"));
    CHECK_FALSE(contains(text, "\nstatic int pwn"));
    CHECK_FALSE(contains(text, "\x1b"));
  }
  CHECK(contains(codegen::slurm_script(f.program, f.plan), "#SBATCH --job-name=dtplan-evil_"));
}
