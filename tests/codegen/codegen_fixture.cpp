// Emits bundles and prints the planner's rank layout for the code
// generators' end-to-end tests (tests/codegen/run_bundle.sh). A fixture is
// one of the in-memory ones (fixtures.hpp) or a .dtp file, optionally
// `FILE.dtp:STRATEGY` (default: its first fixed strategy), evaluated as
// the CLI does (planner::evaluate with the analytic cost model).
//   codegen_fixture list              in-memory fixtures and their world sizes
//   codegen_fixture world NAME        the plan's world size
//   codegen_fixture emit NAME DIR     the bundle (plan.json is a stub)
//   codegen_fixture layout NAME [W]   planner::rank_layout in --dry-run form (world W)
//   codegen_fixture schedule NAME     planner::one_f_one_b in --dry-run --schedule form
//   codegen_fixture comms NAME        each collective's group and the ranks the plan costs it over
//   codegen_fixture strategies FILE   the fixed strategies of a .dtp file
#include <fmt/format.h>

#include <optional>
#include <string>

#include "codegen/emit.hpp"
#include "codegen/skeleton.hpp"
#include "dsl/source.hpp"
#include "fixtures.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/pipeline_schedule.hpp"
#include "planner/model/shape.hpp"

using namespace dtplan;

namespace {

std::optional<codegen::fixtures::fixture> from_file(std::string const& name) {
  auto colon = name.rfind(':');
  auto path = colon == std::string::npos || colon < name.rfind(".dtp") ? name : name.substr(0, colon);
  auto wanted = path == name ? std::string() : name.substr(colon + 1);
  auto text = dsl::read_file(path);
  if (!text) return std::nullopt;
  dsl::source_manager sources;
  auto id = sources.add(path, *text);
  dsl::diagnostics diags;
  auto p = planner::load(sources, id, {}, diags);
  if (!p) {
    fmt::print(stderr, "{}", dsl::format(diags, sources));
    return std::nullopt;
  }
  for (auto const& spec : p->strategies) {
    if (spec.is_free() || (!wanted.empty() && spec.name != wanted)) continue;
    codegen::fixtures::fixture f{name, *p, {}};
    f.plan = planner::evaluate(*p, spec, spec.fixed(), planner::analytic_cost_model(), spec.name);
    return f;
  }
  fmt::print(stderr, "{}: no fixed strategy{}\n", path, wanted.empty() ? "" : " named '" + wanted + "'");
  return std::nullopt;
}

std::optional<codegen::fixtures::fixture> find(std::string const& name) {
  for (auto& f : codegen::fixtures::all())
    if (f.name == name) return f;
  if (name.find(".dtp") != std::string::npos) return from_file(name);
  return std::nullopt;
}

std::int64_t world(planner::strategy const& s) { return s.dp * s.tp * s.cp * s.pp; }

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "list") {
    for (auto const& f : codegen::fixtures::all()) fmt::print("{} {}\n", f.name, world(f.plan.s));
    return 0;
  }
  if (argc < 3) {
    fmt::print(stderr, "usage: codegen_fixture list | world NAME | emit NAME DIR | layout NAME [W] | schedule NAME | comms NAME | strategies FILE\n");
    return 2;
  }
  if (cmd == "strategies") {
    auto text = dsl::read_file(argv[2]);
    if (!text) return 2;
    dsl::source_manager sources;
    dsl::diagnostics diags;
    auto p = planner::load(sources, sources.add(argv[2], *text), {}, diags);
    if (!p) return 2;
    for (auto const& spec : p->strategies)
      if (!spec.is_free() && !spec.name.empty()) fmt::print("{}\n", spec.name);
    return 0;
  }
  auto f = find(argv[2]);
  if (!f) {
    fmt::print(stderr, "no fixture '{}'\n", argv[2]);
    return 2;
  }
  if (cmd == "world") {
    fmt::print("{}\n", world(f->plan.s));
    return 0;
  }
  auto const sh = planner::shape_of(f->program, f->plan.s);
  if (cmd == "layout") {
    auto gpn = f->program.cluster.gpus_per_node;
    auto s = sh.s;
    auto sharding = sh.sharding;
    if (argc > 3) {
      // Another world size: more or fewer data-parallel replicas, the same
      // dp blocks while they divide dp (as train_step --world does).
      s.dp = std::stoll(argv[3]) / (s.tp * s.cp * s.pp);
      if (sharding.k == planner::shard_layout::kind::dp_block &&
          (sharding.dp_block >= s.dp || s.dp % sharding.dp_block != 0))
        sharding = {};
    }
    fmt::print("{}", codegen::layout_text(s, gpn, sharding, sh.embedding.active()));
    return 0;
  }
  if (cmd == "schedule") {
    fmt::print("{}", codegen::schedule_text(planner::one_f_one_b(sh.s.pp, sh.s.virtual_stages, sh.grad_accum)));
    return 0;
  }
  if (cmd == "comms") {
    // One line per collective: its index, the group the program runs it on
    // and the ranks the cost model costs it over.
    int i = 0;
    if (f->plan.time)
      for (auto const& e : f->plan.time->comm)
        fmt::print("comm {} {} group {} ranks {}\n", i++, planner::name(e.op), codegen::name(codegen::group_of(e.group)), e.ranks);
    return 0;
  }
  if (cmd == "emit" && argc > 3) {
    dsl::diagnostics diags;
    auto json = fmt::format("{{\"file\": \"{}\", \"plans\": [{{\"name\": \"{}\"}}]}}\n", f->program.file, f->plan.name);
    auto r = codegen::emit_bundle(f->program, f->plan, json, argv[3], diags);
    for (auto const& d : diags.list()) fmt::print(stderr, "{}\n", d.message);
    return r ? 0 : 1;
  }
  fmt::print(stderr, "unknown command '{}'\n", cmd);
  return 2;
}
