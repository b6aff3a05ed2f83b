// Golden tests of bad inputs: each tests/golden/errors/NNN_name.dtp is loaded
// and its diagnostics must equal NNN_name.stderr byte for byte. With
// DTPLAN_REBASE=1 the expected files are rewritten instead.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/lower/lower.hpp"

namespace fs = std::filesystem;
using namespace dtplan;

namespace {

std::string read(fs::path const& p) { return dsl::read_file(p.string()).value_or(std::string()); }

// The diagnostics `dtplan FILE` prints for a file, located by its path
// relative to the repository so the text is the same in every checkout.
std::string diagnose(fs::path const& file) {
  dsl::source_manager sources;
  auto name = fs::relative(file, DTPLAN_SOURCE_DIR).generic_string();
  auto id = sources.add(name, read(file));
  dsl::diagnostics diags;
  auto p = planner::load(sources, id, {}, diags);
  std::string out = dsl::format(diags, sources);
  if (p && !diags.has_errors()) out += "(no error)\n";
  return out;
}

std::vector<fs::path> inputs() {
  std::vector<fs::path> files;
  for (auto const& e : fs::directory_iterator(fs::path(DTPLAN_SOURCE_DIR) / "tests/golden/errors"))
    if (e.path().extension() == ".dtp") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("every bad input reports exactly its expected diagnostics") {
  bool rebase = std::getenv("DTPLAN_REBASE") != nullptr && std::string(std::getenv("DTPLAN_REBASE")) == "1";
  auto files = inputs();
  REQUIRE(files.size() >= 40);
  for (auto const& file : files) {
    auto expected_path = fs::path(file).replace_extension(".stderr");
    auto actual = diagnose(file);
    if (rebase) {
      std::ofstream(expected_path, std::ios::binary) << actual;
      continue;
    }
    INFO(file.filename().string());
    REQUIRE(fs::exists(expected_path));
    CHECK(actual == read(expected_path));
    // A bad input must be rejected, with at least one error.
    CHECK(actual.find("error: ") != std::string::npos);
  }
}

TEST_CASE("each bad input says why it is wrong on its first line") {
  for (auto const& file : inputs()) {
    INFO(file.filename().string());
    auto text = read(file);
    if (text.empty() || text.find('\0') != std::string::npos) continue;  // the empty and binary cases
    CHECK(text.rfind("# ", 0) == 0);
  }
}
