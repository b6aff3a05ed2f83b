// The framework jobs --emit writes for fixed strategies of plans/, two or
// more per framework, beside the expected files in tests/golden/jobs/
// (<plan>.<strategy>.<framework>/). With DTPLAN_REBASE=1 the expected files
// are rewritten instead; review the diff before committing it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "codegen/framework_export.hpp"
#include "dsl/parse.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/evaluate.hpp"

using namespace dtplan;
namespace fs = std::filesystem;

namespace {

struct job_case {
  char const* plan;      // under plans/
  char const* strategy;  // a fixed strategy of it
  planner::job_format format;
  char const* tag = nullptr;                // names a variant: <plan>.<strategy>.<framework>.<tag>/
  std::array<char const*, 3> settings{};    // the variant's --set settings
};

constexpr job_case cases[] = {
    {"405b_1024_h100", "sharded", planner::job_format::torchtitan},
    {"70b_16node_h100_ib", "hsdp", planner::job_format::torchtitan},
    {"7b_2node", "current", planner::job_format::megatron},
    {"70b_16node_h100_ib", "megatron_3d", planner::job_format::megatron},
    {"405b_1024_h100", "llama3_like", planner::job_format::megatron},  // 126 + 2 layers over 16 stages
    // 32 layers over 2 x 3 chunks: --pipeline-model-parallel-layout.
    {"7b_2node", "current", planner::job_format::megatron, "uneven",
     {"current.pp=2", "current.dp=8", "current.virtual_stages=3"}},
    {"7b_2node", "current", planner::job_format::deepspeed},
    {"70b_16node_h100_ib", "hsdp", planner::job_format::deepspeed},
};

std::string slurp(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("the exported jobs of plans/ match tests/golden/jobs/") {
  bool const rebase = std::getenv("DTPLAN_REBASE") != nullptr && std::string(std::getenv("DTPLAN_REBASE")) == "1";
  fs::path const root = fs::path(DTPLAN_SOURCE_DIR) / "tests" / "golden" / "jobs";
  for (auto const& c : cases) {
    auto const name = fmt::format("{}.{}.{}{}", c.plan, c.strategy, planner::name(c.format),
                                  c.tag ? fmt::format(".{}", c.tag) : std::string());
    INFO(name);
    dsl::source_manager sources;
    dsl::diagnostics diags;
    auto const shown = fmt::format("plans/{}.dtp", c.plan);
    auto const file = sources.add(shown, *dsl::read_file(std::string(DTPLAN_SOURCE_DIR) + "/" + shown));
    planner::lower_options lo;
    auto const set_id = sources.add("<--set>", fmt::format("training.framework={}", planner::name(c.format)));
    lo.settings.push_back(*dsl::parse_setting(sources, set_id, diags));
    for (char const* setting : c.settings)
      if (setting) lo.settings.push_back(*dsl::parse_setting(sources, sources.add("<--set>", setting), diags));
    auto p = planner::load(sources, file, lo, diags);
    REQUIRE(p);
    auto const it = std::find_if(p->strategies.begin(), p->strategies.end(),
                                 [&](planner::strategy_spec const& s) { return s.name == c.strategy; });
    REQUIRE(it != p->strategies.end());
    planner::analytic_cost_model const model;
    auto const pl = planner::evaluate(*p, *it, it->fixed(), model, it->name);
    REQUIRE(pl.valid);
    REQUIRE_FALSE(codegen::export_refusal(c.format, *p, pl));
    dsl::diagnostics warnings;
    auto const files = codegen::export_job(c.format, *p, pl, warnings);
    CHECK(warnings.empty());
    auto const dir = root / name;
    std::set<std::string> written, expected;
    for (auto const& f : files) {
      written.insert(f.name);
      if (rebase) {
        fs::create_directories(dir);
        std::ofstream(dir / f.name, std::ios::binary) << f.text;
      }
      INFO(f.name);
      CHECK(slurp(dir / f.name) == f.text);
    }
    for (auto const& e : fs::directory_iterator(dir)) expected.insert(e.path().filename().string());
    CHECK(written == expected);
  }
}
