#include "codegen/emit.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <vector>

#include "codegen/escape.hpp"
#include "codegen/framework_export.hpp"
#include "codegen/graphviz.hpp"
#include "codegen/launch.hpp"
#include "codegen/skeleton.hpp"

namespace dtplan::codegen {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) { return std::generic_category().message(err); }

// Owns a file descriptor.
class descriptor {
 public:
  explicit descriptor(int fd) : fd_(fd) {}
  descriptor(descriptor const&) = delete;
  descriptor& operator=(descriptor const&) = delete;
  ~descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  // Closes now; the errno of a failed close (a delayed write error), or 0.
  int close() {
    int const fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// Writes all of `text`; the errno of the first failure (a full disk, a file
// size limit), or 0.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    auto n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

mode_t current_umask() {
  mode_t const mask = ::umask(0);
  ::umask(mask);
  return mask;
}

// Creates `name` in the directory `dir` as a new file holding `text`. O_EXCL
// with O_NOFOLLOW: an entry already there (a planted symbolic link) is an
// error, never opened. `shown` is the path the user knows it by.
bool create_file(int dir, char const* name, std::string_view text, mode_t mode, fs::path const& shown,
                 dsl::diagnostics& diags) {
  descriptor fd(::openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  int err = fd.get() < 0 ? errno : write_all(fd.get(), text);
  if (err == 0) err = fd.close();
  if (err != 0) {
    diags.error({}, fmt::format("cannot write '{}': {}", shown.string(), reason(err)));
    return false;
  }
  return true;
}

// Creates the sub-directory `name` of `dir` and opens it.
std::optional<int> create_dir(int dir, char const* name, fs::path const& shown, dsl::diagnostics& diags) {
  if (::mkdirat(dir, name, 0777) == 0) {
    int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return fd;
  }
  diags.error({}, fmt::format("cannot create directory '{}': {}", shown.string(), reason(errno)));
  return std::nullopt;
}

// Writes every text file of the bundle into the new, empty directory `root`.
// Stops at the first failure: the caller removes what was written.
bool write_bundle(int root, fs::path const& shown, planner::program const& p, planner::plan const& pl,
                  std::string const& json, std::optional<planner::job_format> job, std::vector<job_file> const& job_files,
                  dsl::diagnostics& diags) {
  if (!create_file(root, "plan.json", json, 0666, shown / "plan.json", diags) ||
      !create_file(root, "sharding.dot", sharding_dot(p, pl), 0666, shown / "sharding.dot", diags))
    return false;
  auto skeleton_fd = create_dir(root, "skeleton", shown / "skeleton", diags);
  if (!skeleton_fd) return false;
  descriptor skeleton(*skeleton_fd);
  if (!create_file(skeleton.get(), "CMakeLists.txt", skeleton_cmake(p, pl), 0666,
                   shown / "skeleton" / "CMakeLists.txt", diags) ||
      !create_file(skeleton.get(), "train_step.cu", train_step_cu(p, pl), 0666, shown / "skeleton" / "train_step.cu",
                   diags))
    return false;
  auto launch_fd = create_dir(root, "launch", shown / "launch", diags);
  if (!launch_fd) return false;
  descriptor launch(*launch_fd);
  // Only the scripts this run created are executable.
  if (!create_file(launch.get(), "slurm.sbatch", slurm_script(p, pl), 0777, shown / "launch" / "slurm.sbatch",
                   diags) ||
      !create_file(launch.get(), "mpirun.sh", mpirun_script(p, pl), 0777, shown / "launch" / "mpirun.sh", diags))
    return false;
  if (!job) return true;
  auto const dir_name = std::string(planner::name(*job));
  auto job_fd = create_dir(root, dir_name.c_str(), shown / dir_name, diags);
  if (!job_fd) return false;
  descriptor job_dir(*job_fd);
  for (auto const& f : job_files)
    if (!create_file(job_dir.get(), f.name.c_str(), f.text, f.executable ? 0777 : 0666, shown / dir_name / f.name,
                     diags))
      return false;
  return true;
}

// What is at the bundle's path before it is written.
enum class occupant { nothing, empty_dir, full_dir };

std::optional<occupant> inspect(fs::path const& target, fs::path const& shown, bool force, dsl::diagnostics& diags) {
  auto refuse = [&](std::string const& why) {
    diags.error({}, fmt::format("cannot write the bundle to '{}': {}", shown.string(), why));
    return std::nullopt;
  };
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return occupant::nothing;
    return refuse(reason(errno));
  }
  if (S_ISLNK(st.st_mode)) return refuse("it is a symbolic link");
  if (!S_ISDIR(st.st_mode)) return refuse("it exists and is not a directory");
  std::error_code ec;
  bool const empty = fs::is_empty(target, ec);
  if (ec) return refuse(ec.message());
  if (empty) return occupant::empty_dir;
  if (!force) return refuse("the directory is not empty (--force replaces it)");
  return occupant::full_dir;
}

// Renames the finished bundle `staged` to `target` in one step. Fails,
// leaving `target` as it is, when another process wrote there since
// `inspect` (of two concurrent emits, one wins).
bool move_into_place(fs::path const& staged, fs::path const& target, occupant was, fs::path const& shown,
                     dsl::diagnostics& diags) {
  auto fail = [&](int err) {
    diags.error({}, err == EEXIST || err == ENOTEMPTY
                        ? fmt::format("cannot write the bundle to '{}': another process wrote it meanwhile; "
                                      "it was left as it is",
                                      shown.string())
                        : fmt::format("cannot write the bundle to '{}': {}", shown.string(), reason(err)));
    return false;
  };
  unsigned const flags = was == occupant::nothing ? RENAME_NOREPLACE : was == occupant::full_dir ? RENAME_EXCHANGE : 0;
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), flags) == 0) {
    std::error_code ec;
    if (was == occupant::full_dir) fs::remove_all(staged, ec);  // the old bundle, swapped out
    return true;
  }
  if (errno != EINVAL && errno != ENOSYS) return fail(errno);
  // A file system without renameat2's flags: rename(2) replaces only an
  // empty directory, so a non-empty one is first moved aside.
  if (was != occupant::full_dir) return ::rename(staged.c_str(), target.c_str()) == 0 || fail(errno);
  auto aside = fs::path(staged.string() + "-old");
  if (::rename(target.c_str(), aside.c_str()) != 0) return fail(errno);
  if (::rename(staged.c_str(), target.c_str()) != 0) {
    int const err = errno;
    ::rename(aside.c_str(), target.c_str());
    return fail(err);
  }
  std::error_code ec;
  fs::remove_all(aside, ec);
  return true;
}

// `dir` without a trailing separator, and absolute when it ends in "." or
// "..", so that it has a last component to rename onto.
fs::path bundle_path(fs::path const& dir) {
  auto target = dir.lexically_normal();
  if (!target.has_filename() && target.has_parent_path()) target = target.parent_path();
  if (target.filename() == "." || target.filename() == ".." || target.empty())
    target = fs::absolute(target).lexically_normal();
  if (!target.has_filename() && target.has_parent_path() && target != target.root_path())
    target = target.parent_path();
  return target;
}

// A path given to a command as an operand, never as an option.
std::string operand(fs::path const& p) {
  auto s = p.string();
  return s.starts_with("-") ? "./" + s : s;
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

// render_svg, naming `dot_file` as `shown` in its diagnostics.
bool render(fs::path const& dot_file, fs::path const& svg_file, fs::path const& shown, bool& missing,
            dsl::diagnostics& diags) {
  auto dot = find_dot();
  missing = dot.empty();
  if (missing) return false;
  auto cmd = fmt::format("{} -Tsvg -o {} {} 2>&1", shell_quote(dot.string()), shell_quote(operand(svg_file)),
                         shell_quote(operand(dot_file)));
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    diags.error({}, fmt::format("cannot run '{}': {}", dot.string(), reason(errno)));
    return false;
  }
  char chunk[512];
  while (auto n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  int status = pclose(pipe);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (status != 0) {
    auto& d = diags.error({}, fmt::format("'dot' failed to render '{}'", shown.string()));
    if (!output.empty()) d.notes.push_back({{}, output});
    return false;
  }
  if (!output.empty()) {
    auto& d = diags.warning({}, fmt::format("'dot' reported problems rendering '{}'", shown.string()));
    d.notes.push_back({{}, output});
  }
  return true;
}

}  // namespace

bool render_svg(fs::path const& dot_file, fs::path const& svg_file, bool& missing, dsl::diagnostics& diags) {
  return render(dot_file, svg_file, dot_file, missing, diags);
}

bool write_dot(planner::program const& p, planner::plan const& pl, fs::path const& file, dsl::diagnostics& diags) {
  auto fail = [&](int err) {
    diags.error({}, fmt::format("cannot write '{}': {}", file.string(), reason(err)));
    return false;
  };
  auto dir = file.parent_path();
  auto staged = ((dir.empty() ? fs::path(".") : dir) / ("." + file.filename().string() + ".dtplan-XXXXXX")).string();
  descriptor fd(::mkostemp(staged.data(), O_CLOEXEC));
  if (fd.get() < 0) return fail(errno);
  int err = write_all(fd.get(), sharding_dot(p, pl));
  if (err == 0 && ::fchmod(fd.get(), 0666 & ~current_umask()) != 0) err = errno;
  if (err == 0) err = fd.close();
  if (err == 0 && ::rename(staged.c_str(), file.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(staged.c_str());
    return fail(err);
  }
  return true;
}

std::optional<emit_result> emit_bundle(planner::program const& p, planner::plan const& pl, std::string const& json,
                                       fs::path const& dir, dsl::diagnostics& diags, emit_options const& options) {
  try {
    auto const target = bundle_path(dir);
    auto const parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec || !fs::is_directory(parent)) {
      diags.error({}, fmt::format("cannot create directory '{}': {}", dir.string(),
                                  ec ? ec.message() : reason(ENOTDIR)));
      return std::nullopt;
    }
    // The framework's job is made first: a plan it cannot run writes nothing.
    std::vector<job_file> job_files;
    if (options.job) {
      if (auto why = export_refusal(*options.job, p, pl)) {
        diags.error({}, fmt::format("cannot write plan '{}' as a {} job: {}", pl.name, planner::name(*options.job),
                                    *why));
        return std::nullopt;
      }
      job_files = export_job(*options.job, p, pl, diags);
    }
    auto was = inspect(target, dir, options.force, diags);
    if (!was) return std::nullopt;

    // The bundle is written into a new directory beside DIR (mode 0700, only
    // this user can reach it) and renamed onto DIR when complete.
    auto staged_name = (parent / ("." + target.filename().string() + ".dtplan-XXXXXX")).string();
    if (!::mkdtemp(staged_name.data())) {
      diags.error({}, fmt::format("cannot create a directory beside '{}': {}", dir.string(), reason(errno)));
      return std::nullopt;
    }
    fs::path const staged = staged_name;
    auto discard = [&] {
      std::error_code ignored;
      fs::remove_all(staged, ignored);
      return std::nullopt;
    };
    {
      descriptor root(::open(staged.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (root.get() < 0) {
        diags.error({}, fmt::format("cannot write the bundle to '{}': {}", dir.string(), reason(errno)));
        return discard();
      }
      if (!write_bundle(root.get(), dir, p, pl, json, options.job, job_files, diags)) return discard();
      if (::fchmod(root.get(), 0777 & ~current_umask()) != 0) {
        diags.error({}, fmt::format("cannot write the bundle to '{}': {}", dir.string(), reason(errno)));
        return discard();
      }
    }
    emit_result r;
    bool missing = false;
    r.svg = render(staged / "sharding.dot", staged / "sharding.svg", dir / "sharding.dot", missing, diags);
    if (!missing && !r.svg) return discard();
    if (!move_into_place(staged, target, *was, dir, diags)) return discard();
    if (missing)
      diags.add({dsl::severity::note, {}, "'dot' (Graphviz) is not installed: sharding.svg not written; render it with 'dot -Tsvg sharding.dot'", {}});
    return r;
  } catch (std::exception const& e) {
    diags.error({}, fmt::format("cannot write the bundle to '{}': {}", dir.string(), e.what()));
    return std::nullopt;
  }
}

}  // namespace dtplan::codegen
