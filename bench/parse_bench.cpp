// Parse throughput on a generated 10,000-line plan: prints lines, bytes,
// milliseconds per run and MB/s. Figures only, no pass/fail.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "dsl/parse.hpp"

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
  return 0;
}
