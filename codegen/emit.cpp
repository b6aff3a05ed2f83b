#include "codegen/emit.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include "codegen/graphviz.hpp"
#include "codegen/launch.hpp"
#include "codegen/skeleton.hpp"

namespace dtplan::codegen {

namespace fs = std::filesystem;

namespace {

bool write_file(fs::path const& file, std::string const& text, dsl::diagnostics& diags) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out) {
    diags.error({}, fmt::format("cannot write '{}'", file.string()));
    return false;
  }
  return true;
}

bool make_dir(fs::path const& dir, dsl::diagnostics& diags) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    diags.error({}, fmt::format("cannot create directory '{}': {}", dir.string(),
                                ec ? ec.message() : std::string("a file of that name exists")));
    return false;
  }
  return true;
}

// The `dot` executable on PATH, or empty.
fs::path find_dot() {
  char const* path = std::getenv("PATH");
  if (!path) return {};
  std::string_view rest(path);
  while (true) {
    auto colon = rest.find(':');
    auto dir = rest.substr(0, colon);
    if (!dir.empty()) {
      auto candidate = fs::path(dir) / "dot";
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) return candidate;
    }
    if (colon == std::string_view::npos) return {};
    rest.remove_prefix(colon + 1);
  }
}

std::string shell_quote(std::string const& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool render_svg(fs::path const& dot_file, fs::path const& svg_file, bool& missing, dsl::diagnostics& diags) {
  auto dot = find_dot();
  missing = dot.empty();
  if (missing) return false;
  auto cmd = fmt::format("{} -Tsvg -o {} {} 2>&1", shell_quote(dot.string()), shell_quote(svg_file.string()),
                         shell_quote(dot_file.string()));
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    diags.error({}, fmt::format("cannot run '{}'", dot.string()));
    return false;
  }
  char chunk[512];
  while (auto n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  int status = pclose(pipe);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (status != 0) {
    auto& d = diags.error({}, fmt::format("'dot' failed to render '{}'", dot_file.string()));
    if (!output.empty()) d.notes.push_back({{}, output});
    return false;
  }
  if (!output.empty()) {
    auto& d = diags.warning({}, fmt::format("'dot' reported problems rendering '{}'", dot_file.string()));
    d.notes.push_back({{}, output});
  }
  return true;
}

bool write_dot(planner::program const& p, planner::plan const& pl, fs::path const& file, dsl::diagnostics& diags) {
  if (file.has_parent_path() && !make_dir(file.parent_path(), diags)) return false;
  return write_file(file, sharding_dot(p, pl), diags);
}

std::optional<emit_result> emit_bundle(planner::program const& p, planner::plan const& pl, std::string const& json,
                                       fs::path const& dir, dsl::diagnostics& diags) {
  try {
    if (!make_dir(dir, diags) || !make_dir(dir / "skeleton", diags) || !make_dir(dir / "launch", diags))
      return std::nullopt;
    bool ok = write_file(dir / "plan.json", json, diags);
    ok = write_file(dir / "sharding.dot", sharding_dot(p, pl), diags) && ok;
    ok = write_file(dir / "skeleton" / "CMakeLists.txt", skeleton_cmake(p, pl), diags) && ok;
    ok = write_file(dir / "skeleton" / "train_step.cu", train_step_cu(p, pl), diags) && ok;
    ok = write_file(dir / "launch" / "slurm.sbatch", slurm_script(p, pl), diags) && ok;
    ok = write_file(dir / "launch" / "mpirun.sh", mpirun_script(p, pl), diags) && ok;
    if (!ok) return std::nullopt;
    std::error_code ec;
    for (auto const* f : {"slurm.sbatch", "mpirun.sh"})
      fs::permissions(dir / "launch" / f, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
    emit_result r;
    bool missing = false;
    r.svg = render_svg(dir / "sharding.dot", dir / "sharding.svg", missing, diags);
    if (missing)
      diags.add({dsl::severity::note, {}, "'dot' (Graphviz) is not installed: sharding.svg not written; render it with 'dot -Tsvg sharding.dot'", {}});
    else if (!r.svg)
      return std::nullopt;
    return r;
  } catch (std::exception const& e) {
    diags.error({}, fmt::format("cannot write the bundle to '{}': {}", dir.string(), e.what()));
    return std::nullopt;
  }
}

}  // namespace dtplan::codegen
