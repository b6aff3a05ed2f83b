#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "planner/model/cost_model.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/lower/lower.hpp"
#include "memory_fixtures.hpp"

using namespace dtplan::planner;
using namespace dtplan::planner::literals;

namespace {

// plans/7b_2node.dtp of DSL.md, built in memory.
program seven_b_two_nodes() {
  program p;
  p.model = *catalog_model("llama2_7b");
  p.cluster.name = "two_nodes";
  p.cluster.nodes = 2;
  p.cluster.gpus_per_node = 8;
  p.cluster.device = *catalog_gpu("H100_SXM");
  use_gpu_defaults(p.cluster);
  p.cluster.inter_node = 100_Gbitps;
  p.training.global_batch = 256;
  return p;
}

strategy current() {
  strategy s;
  s.dp = 16;
  s.zero = 1;
  s.checkpoint = checkpoint_mode::selective;
  s.micro_batch = 1;
  return s;
}

bool any_contains(std::vector<std::string> const& lines, std::string_view what) {
  return std::any_of(lines.begin(), lines.end(), [&](auto const& l) { return l.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("7b on two nodes: plain data parallelism over 100 Gbit/s is communication-bound and the advice names a fix") {
  auto const p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto const pl = evaluate(p, strategy_spec{}, current(), model, "current");
  INFO(pl.bottleneck);
  for (auto const& a : pl.advice) INFO(a);
  REQUIRE(pl.valid);
  REQUIRE(pl.time);
  CHECK(pl.grad_accum == 16);
  CHECK(pl.bottleneck.rfind("communication: dp ", 0) == 0);
  CHECK(pl.bottleneck.find("over 100 Gbit/s inter-node exposes") != std::string::npos);
  CHECK(pl.time->exposed_comm.value() > 0.25 * pl.time->step.value());
  REQUIRE_FALSE(pl.advice.empty());
  CHECK(any_contains(pl.advice, "communication dominates: dp traffic over the 100 Gbit/s inter-node link exposes "));
  CHECK((any_contains(pl.advice, "tp = ") || any_contains(pl.advice, "shard = node") ||
         any_contains(pl.advice, "micro_batch = ")));
  CHECK(any_contains(pl.advice, "checkpoint = selective costs "));
  // The fix it names is verified: re-costed, valid and faster.
  CHECK(any_contains(pl.advice, " instead of "));
}

TEST_CASE("throughput figures from the time breakdown") {
  auto const p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto const t = model.step_time(p, current());
  auto const r = rate_of(p, t);
  CHECK(r.tokens_per_s == Approx(256.0 * 4096 / t.step.value()));
  CHECK(r.samples_per_s == Approx(256.0 / t.step.value()));
  CHECK(r.model_flops_per_gpu.value() == Approx(t.model_flops.value() / t.step.value() / 16));
  CHECK(r.mfu == Approx(r.model_flops_per_gpu.value() / 989e12));
  CHECK(r.hfu >= r.mfu);
  CHECK(r.mfu <= 1.0);
}

TEST_CASE("an invalid plan carries the check's errors and no time") {
  auto p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto s = current();
  s.zero = 0;
  s.checkpoint = checkpoint_mode::none;
  auto const pl = evaluate(p, strategy_spec{}, s, model, "bad");
  CHECK_FALSE(pl.valid);
  CHECK_FALSE(pl.time);
  CHECK_FALSE(pl.errors.empty());
  CHECK(pl.advice.empty());
}

TEST_CASE("where PyTorch's all-gathered keys and values set the peak, the advice is to pass them on") {
  // Llama 3 8B's layers with a 1,024-token vocabulary (a small loss), 8,192
  // tokens over cp 4 at tp 2: a rank's queries are 8 MiB, and passing the
  // keys and values on holds 2 x (4 - 2) x 8 MiB less.
  auto p = seven_b_two_nodes();
  p.model = *catalog_model("llama3_8b");
  p.model.vocab = 1024;
  p.training.global_batch = 16;
  p.training.cp_comm_type = cp_comm_kind::allgather;
  strategy s;
  s.tp = 2;
  s.cp = 4;
  s.dp = 2;
  s.zero = 3;
  s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::full;
  analytic_cost_model const model;
  strategy_spec spec;
  auto const gathered = evaluate(p, spec, s, model, "cp4");
  REQUIRE(gathered.valid);
  p.training.cp_comm_type = cp_comm_kind::alltoall;
  auto const passed = evaluate(p, spec, s, model, "cp4");
  REQUIRE(passed.valid);
  CHECK(gathered.memory.total.value() - passed.memory.total.value() == 32.0 * 1048576);
  for (auto const& a : gathered.advice) INFO(a);
  CHECK(any_contains(gathered.advice,
                     fmt::format("context parallelism: the all-gathered keys and values of 4 ranks set the peak; "
                                 "cp_comm_type = alltoall (torchtitan's context_parallel_rotate_method) passes them "
                                 "on instead: {} instead of {} per GPU (step {} instead of {})",
                                 to_string(passed.memory.total), to_string(gathered.memory.total),
                                 to_string(passed.time->step), to_string(gathered.time->step))));
  CHECK_FALSE(any_contains(passed.advice, "context parallelism:"));
  // With Llama 3's 128,256-token vocabulary the loss sets the peak: the
  // exchange does not, and nothing is said.
  p.model.vocab = 128256;
  p.training.cp_comm_type = cp_comm_kind::allgather;
  auto const at_loss = evaluate(p, spec, s, model, "cp4");
  REQUIRE(at_loss.valid);
  CHECK(std::string(at_loss.memory.peak_moment) == "the loss (end of the forward, start of the backward)");
  CHECK_FALSE(any_contains(at_loss.advice, "context parallelism:"));
  p.model.vocab = 1024;
  // At cp 2 the two hold the same.
  s.cp = 2;
  s.dp = 4;
  p.training.cp_comm_type = cp_comm_kind::allgather;
  CHECK_FALSE(any_contains(evaluate(p, spec, s, model, "cp2").advice, "context parallelism:"));
}

TEST_CASE("ZeRO-3 gathers across nodes: the advice is hybrid sharding") {
  auto const p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto s = current();
  s.zero = 3;
  auto const pl = evaluate(p, strategy_spec{}, s, model, "z3");
  REQUIRE(pl.valid);
  CHECK(any_contains(pl.advice, "hybrid sharding: ZeRO-3 gathers the weights over the 100 Gbit/s inter-node link "
                                "every layer; shard = node keeps the gathers on the 450 GB/s intra-node link"));
}

TEST_CASE("learning-rate rescaling when the batch differs from the tuned one") {
  auto p = seven_b_two_nodes();
  p.training.base_lr = 3e-4;
  p.training.base_batch = 512;
  analytic_cost_model const model;
  auto const pl = evaluate(p, strategy_spec{}, current(), model, "current");
  CHECK(any_contains(pl.advice,
                     "learning rate: base_lr = 0.0003 was tuned at batch 512; at global_batch = 256 (0.500x) the "
                     "linear rule gives 0.00015 and the square-root rule 0.000212; warm up over the first steps "
                     "(longer when the batch grows); a starting point; retune"));
  p.training.base_batch = 256;
  auto const same = evaluate(p, strategy_spec{}, current(), model, "current");
  CHECK_FALSE(any_contains(same.advice, "learning rate"));
}

TEST_CASE("explain_scaling goes from the fewest GPUs that fit to the cluster") {
  auto const p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto const pl = evaluate(p, strategy_spec{}, current(), model, "current");
  auto const items = explain_scaling(p, pl, model);
  std::vector<std::string> lines;
  for (auto const& e : items) lines.push_back(e.text);
  for (auto const& l : lines) INFO(l);
  REQUIRE(lines.size() >= 3);
  CHECK(lines.front().rfind("scaling from ", 0) == 0);
  CHECK(lines.front().find(" to 16 GPUs") != std::string::npos);
  CHECK(any_contains(lines, "16 GPUs: step "));
  CHECK(lines.back().rfind("at 16 GPUs ", 0) == 0);
  // The same as data: the kinds, and the last point's figures are its step's.
  CHECK(items.front().kind == "scaling");
  CHECK(items.back().kind == "scaling_loss");
  CHECK(items.back().subject == "16 GPUs");
  auto const& point = items[items.size() - 2];
  CHECK(point.kind == "scaling_point");
  CHECK(point.figures.front() == std::pair<std::string, double>{"gpus", 16.0});
  CHECK(point.figures[1] == std::pair<std::string, double>{"step_s", pl.time->step.value()});
}

TEST_CASE("explain_scaling splits the time beyond the ideal into the step's parts, which sum to it") {
  // 2 GPUs (which hold the model only with ZeRO-3, whose gathers the
  // compute hides) to 16 on two nodes, where the gradients' traffic crosses
  // the 100 Gbit/s link, mostly exposed.
  auto const p = seven_b_two_nodes();
  analytic_cost_model const model;
  auto const pl = evaluate(p, strategy_spec{}, current(), model, "current");
  auto const items = explain_scaling(p, pl, model);
  std::string all;
  for (auto const& e : items) all += e.text + "\n";
  INFO(all);
  REQUIRE(items.size() == 6);
  auto const& loss = items.back();
  REQUIRE(loss.kind == "scaling_loss");
  auto figure = [](explanation const& e, std::string const& name) {
    for (auto const& [k, v] : e.figures)
      if (k == name) return v;
    FAIL("no figure " << name);
    return 0.0;
  };
  double const beyond = figure(loss, "beyond_ideal_s");
  CHECK(beyond == Approx(figure(loss, "step_s") - figure(loss, "ideal_step_s")).epsilon(1e-12));
  double sum = 0;
  for (auto const* part : {"compute", "slowdown", "host_wait", "recompute", "exposed_comm", "bubble", "optimizer",
                           "overhead"})
    sum += figure(loss, fmt::format("{}_beyond_s", part));
  CHECK(sum == Approx(beyond).epsilon(1e-12));
  // Each part against the 2-GPU step's, an eighth of it.
  auto const& two = items[1];
  REQUIRE(two.subject == "2 GPUs");
  CHECK(figure(loss, "slowdown_beyond_s") ==
        Approx(pl.time->slowdown.value() - figure(two, "slowdown_s") / 8).epsilon(1e-12));
  CHECK(figure(loss, "compute_beyond_s") == Approx(0).margin(1e-9));  // the kernels' own time scales with the GPUs
  CHECK(loss.text ==
        "at 16 GPUs 25.4 % of the per-GPU rate is lost: the step is 7.34 s against an ideal 5.48 s; exposed "
        "communication goes from 0.959 % to 26.8 % of the step, the bubble from 0 % to 0 %; the 1.86 s beyond the "
        "ideal: exposed communication +1.92 s, compute slowed by hidden communication -73.7 ms");
}

TEST_CASE("a gradient sync after the backward: the advice says what overlapping it gives, never that the backward hides it") {
  auto p = seven_b_two_nodes();
  p.training.grad_precision = precision::fp32;
  p.training.overlap_grad_sync = false;
  analytic_cost_model const model;
  auto const pl = evaluate(p, strategy_spec{}, current(), model, "current");
  for (auto const& a : pl.advice) INFO(a);
  REQUIRE(pl.time);
  CHECK(any_contains(pl.advice, "communication dominates: dp traffic over the 100 Gbit/s inter-node link exposes "));
  CHECK_FALSE(any_contains(pl.advice, "gives the backward more time to hide it"));
  CHECK(any_contains(pl.advice,
                     "the gradient sync starts after the backward (training.overlap_grad_sync = false); overlapping it "
                     "with the backward (DDP's buckets, FSDP, Megatron's --overlap-grad-reduce) gives step "));
  // The figure it names is the re-costed program's.
  p.training.overlap_grad_sync = true;
  auto const overlapped = evaluate(p, strategy_spec{}, current(), model, "current");
  REQUIRE(overlapped.time);
  CHECK(any_contains(pl.advice, "gives step " + to_string(overlapped.time->step) + " instead of " +
                                    to_string(pl.time->step)));
}

TEST_CASE("a micro-batch whose rows Megatron's fused softmax does not take gets the one that fits as advice") {
  // GPT with 16 heads under Megatron-DeepSpeed's own layers at tp 8: one
  // sequence is 2 rows of scores a GPU and falls back to PyTorch's fp32
  // softmax; two sequences are 4.
  auto p = seven_b_two_nodes();
  dtplan::test::standard_attention(p.model, 2048, 16, 5504, 1024);
  p.model.prec = precision::fp16;
  p.training.transformer_impl = transformer_impl_kind::local;
  p.training.global_batch = 64;
  strategy s;
  s.tp = 8;
  s.dp = 2;
  s.zero = 1;
  s.sequence_parallel = true;
  s.checkpoint = checkpoint_mode::full;
  s.micro_batch = 1;
  analytic_cost_model const model;
  strategy_spec spec;
  auto const one = evaluate(p, spec, s, model, "mb1");
  REQUIRE(one.valid);
  s.micro_batch = 2;
  auto const two = evaluate(p, spec, s, model, "mb2");
  REQUIRE(two.valid);
  REQUIRE(two.time->step < one.time->step);
  for (auto const& a : one.advice) INFO(a);
  CHECK(any_contains(one.advice,
                     fmt::format("attention: Megatron's fused softmax does not take micro_batch x heads / tp = 2 "
                                 "rows and falls back to PyTorch's softmax in fp32 (five kernels each way for one); "
                                 "micro_batch = 2 (4 rows) fits: step {} instead of {}",
                                 to_string(two.time->step), to_string(one.time->step))));
  CHECK_FALSE(any_contains(two.advice, "attention: Megatron's fused softmax"));
  // Transformer Engine's kernel asks the same rows.
  p.training.transformer_impl = transformer_impl_kind::transformer_engine;
  s.micro_batch = 1;
  CHECK(any_contains(evaluate(p, spec, s, model, "mb1").advice, "attention: Megatron's fused softmax"));
  // Flash attention has no such kernel.
  p.model.attention = attention_kind::flash;
  CHECK_FALSE(any_contains(evaluate(p, spec, s, model, "mb1").advice, "attention:"));
}
