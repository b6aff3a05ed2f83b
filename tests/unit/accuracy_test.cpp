#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "bench/calibration.hpp"
#include "dsl/diagnostics.hpp"
#include "bench/fit.hpp"
#include "bench/study.hpp"
#include "planner/model/check.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/expected_error.hpp"

using namespace dtplan;
using namespace dtplan::planner;

// The time model against every published run of bench/data, each costed with
// its framework and the behaviours its source states. What counts is out of
// sample: each family is predicted by figures fitted without it
// (bench_accuracy's leave-one-family-out cross-validation). The bounds are
// the figures bench_accuracy reports, with a little room: a change to the
// physics or the catalog that loses accuracy fails here. Where they miss
// issue 13's targets (every family within 12 %, overall 8 %) the README's
// Accuracy section says why.

namespace {

std::vector<bench::calibration_run> const& the_runs() {
  static auto const runs = bench::costed(bench::load_everything());
  return runs;
}

// The leave-one-family-out cross-validation, once per process: the cases
// that read it are sections of one test case (it takes a minute).
std::vector<bench::held_out> const& the_cross_validation() {
  static auto const cv = bench::cross_validate(the_runs(), analytic_cost_model{});
  return cv;
}

std::string slurp(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("out of sample: each family predicted by figures fitted without it") {
  auto const& runs = the_runs();
  auto const& cv = the_cross_validation();
  CHECK(runs.size() == 1875);

  SECTION("every family within its bound") {
  std::map<std::string, double> median;
  std::vector<double> medians, all;
  for (auto const& h : cv) {
    median[h.family] = h.median;
    medians.push_back(h.median);
    for (auto const& p : h.rows) all.push_back(std::fabs(p.error));
  }
  REQUIRE(median.size() == 11);
  // 3.8 % before Ampere's memory-bound share was the measured 0.89 and
  // its sustained clock fitted (0.94): the fitted 0.64 had absorbed the
  // clock these large-model runs hold.
  CHECK(median["Korthikanti2022"] <= 0.025);
  // 6.6 % before MLPerf v5.1's fp4 runs were costed: five B200 submissions
  // of one 8B configuration (a replicate group) weigh as five runs of the
  // 8B family, which moved Hopper's fitted figures (kernel latency 5 -> 2
  // us, slow-down under overlap 0.10 -> 0.12) and, in this fold, its
  // slow-down onto the other bound (0 rather than its kernel latency on 1
  // us). Weighing a replicate group as one run was tried (README: Accuracy).
  CHECK(median["MLPerf-GPT3-175B"] <= 0.085);
  // 3.9 % before torchtitan's compiled rotary was costed as it runs (eager):
  // Hopper's figures in this fold moved with torchtitan's runs.
  CHECK(median["MLPerf-Llama31-405B"] <= 0.055);
  // 6.0 % before Ampere's sustained clock was fitted (its step overhead
  // had gone from 20 to 5 ms in this fold; 20 ms again now).
  CHECK(median["MLPerf-Llama31-8B"] <= 0.03);
  // GB200 and GB300 in NVL72 racks (nodes of 64 or 72 GPUs, their NICs
  // pooled), a family no fit sees: the 405B's seven runs 1-5 % fast, the
  // error growing with the data-parallel size (a fixed part per step the
  // model lacks), GB300's one-rack 8B runs 11-23 % slow (GB300 measured
  // 13.5 % faster than GB200 at the same peaks; its faster exponentials
  // account for 2 points of it).
  CHECK(median["MLPerf-NVL72"] <= 0.05);
  for (auto const& h : cv)
    if (h.family == "MLPerf-NVL72") CHECK(h.worst <= 0.25);
  // Megatron-LM's Table 1 of April 2021 at the micro-batches its SC21
  // scripts set, a family no fit sees: every run 4-13 % fast. Its 530B
  // and 1T ran 10.3 and 8.7 % slower than Korthikanti et al.'s of 2022
  // (the same layers, micro-batches and schedule a pipeline; 8 or 6
  // pipelines against 1), which the model costs within 2 %: the software
  // of 2021, not a term the model lacks (residuals.md s.26).
  CHECK(median["Narayanan2021"] <= 0.09);
  for (auto const& h : cv)
    if (h.family == "Narayanan2021")
      for (auto const& p : h.rows) {
        INFO(p.id);
        CHECK(p.error < -0.04);
        CHECK(p.error > -0.13);
      }
  // 7.8 % before llm-foundry's Triton kernel paid a query block's measured
  // fixed cost (240 keys): its short sequences were 6-7 % fast.
  CHECK(median["MosaicML"] <= 0.065);
  CHECK(median["vTrain-multi"] <= 0.035);
  // BLOOM's second run is the ramp-up's one micro-batch per pipeline
  // (gbs 16): 13 % fast, 27 % before its data-parallel reduce was costed
  // as DeepSpeed runs it (bf16 on the wire) over Omni-Path as NCCL drives
  // it (verbs, 46 % of the line rate) and its launches as its job script
  // blocks them (CUDA_LAUNCH_BLOCKING=1); 17.0 % then, 8.2 % before
  // Ampere's measured memory share and fitted clock.
  CHECK(median["BLOOM"] <= 0.08);
  // torchtitan's own measurements on power-capped H100s (the only family on
  // that GPU): five long-context runs through PyTorch's ring attention (8B
  // at 128-256 K tokens, 405B at 64-256 K) are 18-28 % fast (24-35 % before
  // the ring's eager fp32 merges were costed) and the 405B's
  // interleaved 1F1B 23 %, the rest within 12 %. Its compiled runs keep
  // the complex-number rotary eager (12.5 % before that was costed).
  CHECK(median["torchtitan"] <= 0.09);
  for (auto const& h : cv)
    if (h.family == "torchtitan") CHECK(h.worst <= 0.29);  // 34.2 % before the merges
  // vTrain's single-node runs are bound by the host's time (0.1-0.5 s steps
  // of 0.35-1.3 B models), and BLOOM's through their blocked launches:
  // held out, BLOOM's runs bind the host's per-operator figure (56 us).
  // Before they were costed so it stayed at its neutral 20 us in this
  // fold, and the family was 19.4 % off (every held-out run 16.4 %). With
  // Ampere's measured memory share its large micro-batches come out right,
  // but the fold's kernel latency ends on its 20 us bound and BLOOM binds
  // the host at 48 us: 11.7 % (10.7 % before), its 90th percentile 21.7 %
  // (27.9 %), every held-out run 10.2 % (9.2 %) and 85.9 % of them within
  // 20 % (78.3 %).
  CHECK(median["vTrain-single"] <= 0.12);
  // 4.7 % over ten families before Narayanan2021 (8.5 %) became an
  // eleventh: the median is MosaicML's now.
  CHECK(bench::median_of(medians) <= 0.06);
  CHECK(bench::median_of(all) <= 0.102);
  auto const within = std::count_if(all.begin(), all.end(), [](double e) { return e <= 0.20; });
  CHECK(static_cast<double>(within) / static_cast<double>(all.size()) >= 0.85);
  }

  SECTION("the model orders runs of one job as they were measured") {
    std::size_t pairs = 0, agree = 0;
    for (auto const& r : bench::rank_agreement(cv, runs)) {
      if (r.family == "every pair 10 % apart") {
        CHECK(r.agreement() >= 0.93);
        continue;
      }
      if (r.family == "every pair" || r.family == "all but vTrain") continue;  // the totals
      pairs += r.pairs;
      agree += r.agree;
      if (r.family == "Korthikanti2022" || r.family == "MosaicML" || r.family == "torchtitan")
        CHECK(r.agreement() == 1.0);
    }
    CHECK(pairs == 11307);
    CHECK(static_cast<double>(agree) / static_cast<double>(pairs) >= 0.89);
  }

  SECTION("which choices the model orders as measured") {
    // The same pairs by what the two runs differ in. Splitting the same
    // GPUs another way between data and pipeline parallelism is ordered
    // almost always, and tensor against data parallelism nine times in
    // ten; changing the tensor-parallel size together with the pipeline or
    // the micro-batch is where vTrain's pairs are mis-ordered (a quarter of
    // them: the tensor-parallel all-reduce their loop pays, README:
    // Accuracy).
    std::map<std::string, bench::ranking> by;
    std::size_t pairs = 0;
    for (auto const& r : bench::rank_by_difference(cv, runs)) {
      by[r.family] = r;
      pairs += r.pairs;
    }
    CHECK(pairs == 11307);
    CHECK(by["dp + pp"].pairs == 569);
    CHECK(by["dp + pp"].agreement() >= 0.98);
    CHECK(by["dp + tp"].pairs == 661);
    CHECK(by["dp + tp"].agreement() >= 0.90);
    CHECK(by["micro_batch"].pairs == 1595);
    CHECK(by["micro_batch"].agreement() >= 0.92);
    CHECK(by["tp + pp"].pairs == 1005);
    CHECK(by["tp + pp"].agreement() >= 0.75);
    // torchtitan's compiled against eager runs, and Float8 against bf16.
    CHECK(by["fused_elementwise"].pairs == 2);
    CHECK(by["fused_elementwise"].agreement() == 1.0);
    CHECK(by["precision"].pairs == 6);
    CHECK(by["precision"].agreement() == 1.0);
  }

  SECTION("how far apart the model predicts two runs says how often it orders them as measured") {
    // The same pairs by the predicted gap: under 2 % the order is right
    // about three times in five, from 20 % on almost always. The report
    // quotes the bin beside each runner-up of a search (behind 'search#1').
    auto const bins = bench::rank_by_predicted_gap(cv, runs);
    REQUIRE(bins.size() == bench::predicted_gap_bounds.size());
    std::size_t pairs = 0;
    for (auto const& b : bins) pairs += b.pairs;
    CHECK(pairs == 11307);
    CHECK(bins.front().family == "0 to 2 %");
    CHECK(bins.back().family == "20 % or more");
    CHECK(bins.front().agreement() <= 0.65);
    CHECK(bins.back().agreement() >= 0.98);
    for (std::size_t i = 1; i < bins.size(); ++i) {
      INFO(bins[i].family);
      CHECK(bins[i].agreement() > bins[i - 1].agreement());  // a wider predicted gap is a surer order
    }
    // The README's table is these bins, to the digits it shows.
    auto const readme = slurp(std::string(DTPLAN_SOURCE_DIR) + "/README.md");
    for (auto const& b : bins) {
      auto const row = fmt::format("| {} | {} | {:.1f} % |", b.family, dsl::grouped(static_cast<std::int64_t>(b.pairs)),
                                   100 * b.agreement());
      INFO(row);
      CHECK(readme.find(row) != std::string::npos);
    }
    // The generated table behind the report is these bins.
    auto const& table = order_agreements();
    REQUIRE(table.size() == bins.size());
    for (std::size_t i = 0; i < bins.size(); ++i) {
      CHECK(table[i].gap_from == bench::predicted_gap_bounds[i]);
      CHECK(table[i].pairs == bins[i].pairs);
      CHECK(table[i].agree == bins[i].agree);
    }
  }

  SECTION("the published jobs published_import_test imports, predicted without their family") {
    // published_import_test costs these jobs with the catalog, whose figures
    // were fitted with these runs among the rest; held out, they are still
    // within the error dtplan states for their GPU and framework.
    std::map<std::string, double> held;
    for (auto const& h : cv)
      for (auto const& p : h.rows) held[p.id] = p.error;
    auto const megatron = expected_error_for("H100_SXM", "megatron");
    auto const torchtitan = expected_error_for("H100_SXM_96GB_500W", "torchtitan");
    auto const deepspeed = expected_error_for("A100_SXM_80GB", "deepspeed");
    REQUIRE(megatron);
    REQUIRE(torchtitan);
    REQUIRE(deepspeed);
    // NVIDIA's three v4.0 GPT-3 scripts: +9.6 %, -7.1 %, -7.1 % held out
    // (+8.7, -4.1, -3.9 % before the fp4 runs moved Hopper's figures in this
    // fold, docs/research/residuals.md s.25).
    std::vector<double> nvidia;
    for (char const* id : {"MLPv40-NV-gpt3-H100-512g", "MLPv40-NV-gpt3-H100-10752g", "MLPv40-NV-gpt3-H100-11616g"}) {
      INFO(id << ": " << held.at(id));
      CHECK(std::fabs(held.at(id)) <= megatron->p90);
      nvidia.push_back(std::fabs(held.at(id)));
    }
    CHECK(bench::median_of(nvidia) <= megatron->median);
    CHECK(held.at("MLPv40-NV-gpt3-H100-512g") == Approx(0.096).margin(0.001));
    // torchtitan's llama3_8b.toml at its measurement: -2.5 %.
    CHECK(std::fabs(held.at("TT-8B-128gpu-FSDP")) <= torchtitan->median);
    CHECK(held.at("TT-8B-128gpu-FSDP") == Approx(-0.025).margin(0.001));
    // BLOOM-176B: +0.2 % (-1.7 % before Ampere's measured memory share).
    CHECK(std::fabs(held.at("BLOOM-176B-gbs2048")) <= deepspeed->median);
    CHECK(held.at("BLOOM-176B-gbs2048") == Approx(0.002).margin(0.001));
  }

  SECTION("the folds' figures on a bound are the findings the README names") {
    // A figure that ends on a bound of its range has absorbed something the
    // model does not describe (README, "What the fit says"): Hopper's kernel
    // latency on its 1 us floor without any MLPerf family, Blackwell's
    // memory-bound share on its floor without the 8B family's B200 runs,
    // Ampere's kernel latency on its 20 us ceiling without vTrain's one-node
    // runs. A change that adds or removes one is a finding to write down.
    std::set<std::string> on_bound;
    for (auto const& h : cv)
      for (auto const& k : h.fitted.knobs)
        if (k.on_bound()) on_bound.insert(h.family + ": " + k.label());
    CHECK(on_bound == std::set<std::string>{"MLPerf-GPT3-175B: hopper.overlap_slowdown",
                                            "MLPerf-Llama31-8B: blackwell.hbm_efficiency",
                                            "MLPerf-Llama31-8B: hopper.kernel_latency",
                                            "MosaicML: hopper.kernel_latency",
                                            "vTrain-single: ampere.kernel_latency"});
  }

  SECTION("the error bars the report quotes are this cross-validation's") {
    // planner/model/expected_error.cpp is generated: bench_accuracy --errors.
    CHECK(bench::expected_error_source(cv, runs) ==
          slurp(std::string(DTPLAN_SOURCE_DIR) + "/planner/model/expected_error.cpp"));
  }
}

TEST_CASE("a predicted gap finds its bin of published pairs, and the report's sentence names it") {
  auto const& table = order_agreements();
  REQUIRE(table.size() == 5);
  auto const bin_of = [](double gap) { return order_agreement_for(gap).value().gap_from; };
  CHECK(bin_of(0) == 0);
  CHECK(bin_of(0.0199) == 0);
  CHECK(bin_of(0.02) == 0.02);
  CHECK(bin_of(0.0499) == 0.02);
  CHECK(bin_of(0.1) == 0.1);
  CHECK(bin_of(0.2) == 0.2);
  CHECK(bin_of(3.0) == 0.2);
  CHECK_FALSE(order_agreement_for(-0.01));
  CHECK_FALSE(order_agreement_for(std::nan("")));
  CHECK(describe_order_agreement(-0.01).empty());
  auto const& first = table.front();
  REQUIRE(first.pairs > 0);
  CHECK(first.mostly == "deepspeed on A100_SXM_80GB");  // vTrain's runs: the caveat the sentence carries
  auto const share = [](order_agreement const& b) {
    return fmt::format("{:g}", std::round(1000.0 * static_cast<double>(b.agree) / static_cast<double>(b.pairs)) / 10);
  };
  CHECK(describe_order_agreement(0.0113) ==
        fmt::format("published pairs predicted 0 to 2 % apart: {} % ordered as measured ({} pairs, "
                    "mostly deepspeed on A100_SXM_80GB)",
                    share(first), dsl::grouped(static_cast<std::int64_t>(first.pairs))));
  CHECK(describe_order_agreement(0.5) ==
        fmt::format("published pairs predicted 20 % or more apart: {} % ordered as measured ({} pairs, mostly "
                    "deepspeed on A100_SXM_80GB)",
                    share(table.back()), dsl::grouped(static_cast<std::int64_t>(table.back().pairs))));
  // Two steps' gap as the bins count it: the difference over the shorter.
  CHECK(predicted_gap(seconds(5.27), seconds(7.905)) == Approx(0.5).epsilon(1e-12));
  CHECK(predicted_gap(seconds(7.905), seconds(5.27)) == Approx(0.5).epsilon(1e-12));
}

TEST_CASE("in sample: the catalog's figures on every run") {
  auto runs = the_runs();
  auto const acc = bench::measure_accuracy(runs, analytic_cost_model{});
  // A validation family weighs nothing in any fit: its runs leave the fitted
  // figures where the rest put them, so in sample they are as held out.
  {
    auto without = runs;
    without.erase(std::remove_if(without.begin(), without.end(),
                                 [](auto const& r) { return bench::validation_only(r.family); }),
                  without.end());
    REQUIRE(without.size() == runs.size() - 28);
    auto const all = bench::fit(runs, bench::family_weights(runs), bench::knobs_for(runs, false), analytic_cost_model{});
    auto const rest =
        bench::fit(without, bench::family_weights(without), bench::knobs_for(runs, false), analytic_cost_model{});
    for (auto const& k : all.figures.knobs) CHECK(rest.figures.value(k.label()) == k.value);
  }
  CHECK(acc.rows.size() == 1875);
  // 7.1 % (7.6 % before Ampere's memory share was measured): issue 13 asks
  // that in sample stays as good as it was.
  CHECK(acc.median <= 0.075);
  CHECK(acc.worst <= 0.70);
}

TEST_CASE("every representable published run fits in memory as it ran") {
  std::string rejected;
  std::size_t checked = 0;
  for (auto const& r : bench::load_everything()) {
    if (!r.representable()) continue;
    ++checked;
    auto const c = check(r.prog, strategy_spec{}, r.s);
    if (!c.valid()) rejected += r.id + (c.diags.empty() ? "" : ": " + c.diags.front().message) + "\n";
  }
  INFO(rejected);
  CHECK(rejected.empty());
  CHECK(checked == 1875);
}

// Narayanan et al.'s Table 1 (GPT 1.7B to 1T on up to 3,072 A100s) leaves out
// each run's micro-batch and interleaving; the scripts that ran it
// (NVIDIA/Megatron-LM de7dc40f88, examples/sc21/run_table_1.sh) give them,
// and bench/data/supplements.csv carries them with that source.
TEST_CASE("Megatron's Table 1 runs as the SC21 scripts ran them") {
  struct script {
    char const* id;
    std::int64_t micro_batch, virtual_stages, grad_accum;
    bool torch_ddp;
  };
  // MBS, layers per virtual stage (76B: 60 layers / pp 4 / 5 a chunk) and
  // DDP=torch or local, as run_table_1.sh sets them.
  std::vector<script> const table{
      {"MLM21-1.7B", 16, 1, 1, true},   {"MLM21-3.6B", 16, 1, 1, true},  {"MLM21-7.5B", 16, 1, 1, true},
      {"MLM21-18B", 8, 1, 4, true},     {"MLM21-39B", 4, 1, 12, false},  {"MLM21-76B", 2, 3, 28, false},
      {"MLM21-145B", 2, 2, 48, false},  {"MLM21-310B", 1, 2, 144, false}, {"MLM21-530B", 1, 3, 280, false},
      {"MLM21-1T", 1, 1, 512, false},
  };
  auto runs = bench::load_calibration_runs();
  std::size_t seen = 0;
  for (auto& run : runs) {
    auto const row = std::find_if(table.begin(), table.end(), [&](script const& x) { return run.id == x.id; });
    if (row == table.end()) continue;
    ++seen;
    INFO(run.id);
    bench::apply_runtime(run);
    REQUIRE(run.representable());
    CHECK(run.family == "Narayanan2021");
    CHECK(bench::validation_only(run.family));
    CHECK(run.s.micro_batch == row->micro_batch);
    CHECK(run.s.virtual_stages == row->virtual_stages);
    CHECK(run.grad_accum == row->grad_accum);
    CHECK(run.s.checkpoint == checkpoint_mode::full);
    CHECK(run.source.find("examples/sc21/run_table_1.sh") != std::string::npos);
    auto const& t = run.prog.training;
    // fp16 without --accumulate-allreduce-grads-in-fp32: the gradients
    // reduce in fp16 (MLM de7dc40 megatron/arguments.py:130-156).
    CHECK(t.grad_precision == precision::fp16);
    // torch DDP reduces 25 MiB buckets under the backward; Megatron's local
    // DDP all-reduces every gradient after it (megatron/training.py:362-367).
    CHECK(t.overlap_grad_sync == row->torch_ddp);
    if (row->torch_ddp) CHECK(t.ddp_bucket_size.value() == 25.0 * 1048576);
  }
  CHECK(seen == table.size());
}
