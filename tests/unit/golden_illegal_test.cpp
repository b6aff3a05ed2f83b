#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/model/check.hpp"
#include "planner/lower/lower.hpp"

// Each tests/golden/illegal/NNN_name.dtp (first line: why it is illegal)
// beside NNN_name.stderr: the formatted diagnostics of `check` for every
// fixed strategy of the file. DTPLAN_REBASE=1 rewrites the expected files.
using namespace dtplan;
namespace fs = std::filesystem;

namespace {

std::string read(fs::path const& p) { return dsl::read_file(p.string()).value_or(std::string()); }

struct outcome {
  std::string diags;
  bool any_valid = false;
};

outcome check_file(std::string const& relative, std::string text) {
  dsl::source_manager sources;
  auto id = sources.add(relative, std::move(text));
  dsl::diagnostics load_diags;
  auto prog = planner::load(sources, id, {}, load_diags);
  outcome out;
  out.diags = dsl::format(load_diags, sources);
  if (!prog) return out;
  for (auto const& spec : prog->strategies) {
    if (spec.is_free()) continue;
    auto r = planner::check(*prog, spec, spec.fixed());
    out.any_valid = out.any_valid || r.valid();
    for (auto const& d : r.diags) out.diags += dsl::format(d, sources);
  }
  return out;
}

}  // namespace

TEST_CASE("illegal strategies: golden diagnostics", "[golden][check]") {
  fs::path const dir = fs::path(DTPLAN_SOURCE_DIR) / "tests/golden/illegal";
  bool const rebase = std::getenv("DTPLAN_REBASE") && std::string(std::getenv("DTPLAN_REBASE")) != "0";
  std::vector<fs::path> inputs;
  for (auto const& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".dtp") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  REQUIRE(inputs.size() >= 20);
  for (auto const& input : inputs) {
    std::string const relative = "tests/golden/illegal/" + input.filename().string();
    std::string const text = read(input);
    auto out = check_file(relative, text);
    auto expected_path = fs::path(input).replace_extension(".stderr");
    if (rebase) std::ofstream(expected_path, std::ios::binary) << out.diags;
    INFO(relative);
    CHECK(text.rfind("# ", 0) == 0);
    CHECK_FALSE(out.any_valid);
    CHECK(out.diags.find("error: ") != std::string::npos);
    CHECK(out.diags == read(expected_path));
  }
}
