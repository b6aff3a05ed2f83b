// Parse throughput on a generated 10,000-line plan: prints lines, bytes,
// milliseconds per run and MB/s. Figures only, no pass/fail.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "dsl/parse.hpp"
#include "planner/lower/lower.hpp"

using namespace dtplan::dsl;

namespace {

// Blocks with every value form, each block 12 lines, until `lines` lines.
std::string generate(std::size_t lines) {
  std::string text;
  std::size_t n = 0;
  for (std::size_t i = 0; n < lines; ++i) {
    text += fmt::format(
        "# block {}\n"
        "strategy s{} : base {{\n"
        "  dp = {}\n"
        "  lr = 3e-4; frac = 0.85\n"
        "  memory = 80 GiB\n"
        "  inter_node = 8 x 400 Gbit/s   # eight NICs\n"
        "  checkpoint = selective\n"
        "  name = \"run \\\"{}\\\"\"\n"
        "  sequence_parallel = true, zero = auto\n"
        "  tp = {{1, 2, 4, 8}}\n"
        "  pp = 1..{}\n"
        "}}\n",
        i, i, 1'000 + i, i, 1 + i % 8);
    n += 12;
  }
  return text;
}

// A plan lowering accepts: a model, a cluster, training, then strategies
// with every form a strategy key takes, until `lines` lines.
std::string generate_plan(std::size_t lines) {
  std::string text =
      "model m : llama2_7b {\n  seq_len = 8_192\n  description = \"bench\"\n}\n"
      "cluster c {\n  nodes = 2\n  gpus_per_node = 8\n  gpu = H100_SXM\n"
      "  intra_node = 450 GB/s\n  inter_node = 8 x 100 Gbit/s\n  inter_latency = 5 us\n}\n"
      "training { global_batch = 256; base_lr = 3e-4; base_batch = 128 }\n";
  for (std::size_t i = 0; static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) < lines;
       ++i)
    text += fmt::format(
        "strategy s{} {{  # candidate {}\n"
        "  tp = {{1, 2, 4, 8}}\n"
        "  pp = 1..4\n"
        "  zero = auto\n"
        "  checkpoint = selective\n"
        "  micro_batch = {}\n"
        "  sequence_parallel = true\n"
        "  order = \"tp-cp-dp-pp\"\n"
        "}}\n",
        i, i, 1 + i % 4);
  return text;
}

template <typename F>
std::vector<double> time_runs(int runs, F&& f) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

}  // namespace

int main() {
  auto text = generate(10'000);
  auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  constexpr int runs = 10;
  std::size_t blocks = 0;
  bool ok = true;
  auto ms = time_runs(runs, [&] {
    source_manager sources;
    diagnostics diags;
    auto file = parse(sources, sources.add("bench.dtp", text), diags);
    ok = ok && file.has_value();
    blocks = file ? file->blocks.size() : 0;
  });
  double median = ms[ms.size() / 2];
  fmt::print("parse: {} lines, {} bytes, {} blocks, {} runs\n", lines, text.size(), blocks, runs);
  fmt::print("parse: min {:.2f} ms, median {:.2f} ms, max {:.2f} ms per run, {:.1f} MB/s (median)\n",
             ms.front(), median, ms.back(), static_cast<double>(text.size()) / 1e3 / median);
  if (!ok) fmt::print("parse: the generated file did not parse\n");

  auto plan = generate_plan(10'000);
  auto plan_lines = static_cast<std::size_t>(std::count(plan.begin(), plan.end(), '\n'));
  std::size_t strategies = 0;
  std::string errors;
  auto lower_ms = time_runs(runs, [&] {
    source_manager sources;
    diagnostics diags;
    auto id = sources.add("plan.dtp", plan);
    auto program = dtplan::planner::load(sources, id, {}, diags);
    strategies = program ? program->strategies.size() : 0;
    if (!program) errors = format(diags, sources).substr(0, 400);
  });
  double lower_median = lower_ms[lower_ms.size() / 2];
  fmt::print("parse+lower: {} lines, {} bytes, {} strategies, {} runs\n", plan_lines, plan.size(),
             strategies, runs);
  fmt::print(
      "parse+lower: min {:.2f} ms, median {:.2f} ms, max {:.2f} ms per run, {:.1f} MB/s (median)\n",
      lower_ms.front(), lower_median, lower_ms.back(),
      static_cast<double>(plan.size()) / 1e3 / lower_median);
  if (!errors.empty()) fmt::print("parse+lower: the generated plan did not lower:\n{}", errors);
  return 0;
}
