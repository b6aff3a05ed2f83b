// Emits bundles and prints the planner's rank layout for the in-memory
// fixtures, for tests/codegen/run_bundle.sh:
//   codegen_fixture list
//   codegen_fixture emit NAME DIR     the bundle (plan.json is a stub)
//   codegen_fixture layout NAME       planner::rank_layout in --dry-run form
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "codegen/emit.hpp"
#include "codegen/skeleton.hpp"
#include "fixtures.hpp"

using namespace dtplan;

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  auto fs = codegen::fixtures::all();
  if (cmd == "list") {
    for (auto const& f : fs) fmt::print("{} {}\n", f.name, f.plan.s.dp * f.plan.s.tp * f.plan.s.cp * f.plan.s.pp);
    return 0;
  }
  if (argc < 3) {
    fmt::print(stderr, "usage: codegen_fixture list | emit NAME DIR | layout NAME\n");
    return 2;
  }
  for (auto const& f : fs) {
    if (f.name != argv[2]) continue;
    if (cmd == "layout") {
      fmt::print("{}", codegen::layout_text(f.plan.s, f.program.c.gpus_per_node,
                                            codegen::shard_ranks(f.plan.s, f.program.c.gpus_per_node)));
      return 0;
    }
    if (cmd == "emit" && argc > 3) {
      dsl::diagnostics diags;
      auto json = fmt::format("{{\"file\": \"{}\", \"plans\": [{{\"name\": \"{}\"}}]}}\n", f.program.file, f.plan.name);
      auto r = codegen::emit_bundle(f.program, f.plan, json, argv[3], diags);
      for (auto const& d : diags.list()) fmt::print(stderr, "{}\n", d.message);
      return r ? 0 : 1;
    }
  }
  fmt::print(stderr, "unknown command or fixture\n");
  return 2;
}
