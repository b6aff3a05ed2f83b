// dtplan: the command-line driver. Parses flags, reads the file, runs the
// stages (parse, lower, the planner's session, emit) as a straight line that
// stops at the first one that fails, prints the collected diagnostics once
// and the report. It never parses DSL text itself and decides no policy:
// which strategies are checked, searched and emitted is planner::session's.
#include <fmt/format.h>
#include <unistd.h>

#include <variant>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/report.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/parse.hpp"
#include "dsl/source.hpp"
#include "planner/import/import.hpp"
#include "planner/lower/lower.hpp"
#include "planner/session.hpp"

namespace {

using namespace dtplan;

constexpr int exit_valid = 0;
constexpr int exit_invalid = 1;
constexpr int exit_error = 2;

constexpr char const* usage = R"(usage: dtplan FILE [--optimize] [--top N] [--strategy NAME] [--set BLOCK.KEY=VALUE]...
              [--format text|json] [--emit DIR [--force] [--framework NAME]] [--dot FILE] [--quiet]
              [--explain] [--threads N] [--progress] [--max-candidates N] [--time-limit SECONDS]
              [--from torchtitan|megatron|deepspeed|nemo CONFIG] [--dump ast|ir]
       dtplan --help | --version
)";

constexpr char const* help = R"(dtplan plans distributed training of a large model on a GPU cluster.

It reads a .dtp file describing a model, a cluster, a training run and
strategies, checks each fixed strategy (divisibility, memory per GPU), costs
it (compute, collectives over the topology, overlap, pipeline bubbles) and,
with --optimize, searches the strategies' free keys for the fastest valid plan.

options:
  --optimize            search every free strategy of the file (or, when there is
                        none, the whole strategy space, with the file's fixed
                        strategies as baselines)
  --top N               plans to show from the search (default 5)
  --strategy NAME       only this strategy (checked, searched or emitted)
  --set BLOCK.KEY=VALUE override a key before checking; BLOCK is a block kind
                        (every block of that kind) or a block name
  --format text|json    the report's format on stdout (default text)
  --emit DIR            write the bundle for the chosen plan (the strategy named
                        with --strategy, else the best search result): plan.json,
                        sharding.dot/.svg, skeleton/ (NCCL/CUDA), launch/; DIR
                        is written whole or not at all and must be new or empty
  --force               with --emit, replace a DIR that is not empty
  --framework NAME      with --emit, also write the plan as a torchtitan, megatron or
                        deepspeed job (DIR/NAME/: its configuration and launch
                        script); by default the framework the training block names,
                        when it is one of those
  --from NAME CONFIG    cost the job of a torchtitan job TOML, Megatron-LM argument
                        list, DeepSpeed ds_config.json (or Megatron-DeepSpeed
                        arguments naming one) or NeMo MLPerf config_*.sh script
                        (nemo: the files it sources beside it) on FILE's cluster
                        and model, in place of FILE's strategies; what dtplan does
                        not model is a warning at its key in CONFIG
  --dot FILE            write only the sharding diagram (Graphviz); FILE's
                        directory must exist
  --explain             say where time goes as the plan scales and why the
                        search rejected whole regions
  --threads N           search threads (default: all cores; results are the
                        same for any N)
  --progress            show the search's progress on stderr even when it is
                        not a terminal (searches over a second; a terminal
                        shows it by default)
  --max-candidates N    refuse a search space larger than N candidates, saying
                        how large it is (default 64000000: seconds)
  --time-limit SECONDS  stop looking at new parts of the space after this long
                        and rank what was seen, saying so (default: none)
  --quiet               one line per plan; no warnings, no progress
  --dump ast|ir         print the syntax tree or the lowered IR and stop
  --                    ends the options: what follows is the FILE
  --help, --version

A value that starts with '-' is taken as the next option, not as the value:
write --emit=-dir (or --emit ./-dir) for a name that starts with '-'.

exit status: 0 a valid plan, 1 no strategy is valid, 2 an error in the file or
the command line.

examples:
  dtplan plans/7b_2node.dtp --optimize
  dtplan plans/7b_2node.dtp --strategy current --format json
  dtplan plans/7b_2node.dtp --set cluster.nodes=4 --set current.dp=32
  dtplan plans/70b_16node_h100_ib.dtp --optimize --top 3 --emit out/70b
)";

struct options {
  std::string file;
  bool optimize = false;
  int top = 5;
  std::optional<std::string> strategy;
  std::vector<std::string> settings;
  bool json = false;
  std::optional<std::string> emit_dir;
  bool force = false;
  std::optional<std::string> dot_file;
  bool quiet = false;
  bool explain = false;
  unsigned threads = 0;
  bool progress = false;
  std::int64_t max_candidates = 64'000'000;
  planner::seconds time_limit;  ///< --time-limit (zero: none)
  std::optional<std::string> dump;
  std::optional<planner::job_format> framework;  ///< --framework
  std::optional<planner::job_format> from;       ///< --from NAME ...
  std::string from_file;                         ///< ... CONFIG
};

int usage_error(std::string const& message) {
  fmt::print(stderr, "dtplan: error: {}\n{}", message, usage);
  return exit_error;
}

std::optional<long> parse_count(std::string_view text, long low, long high) {
  long v = 0;
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  if (v < low || v > high) return std::nullopt;
  return v;
}

// Returns an exit status when the command line ends the run (help, errors).
std::optional<int> parse_args(int argc, char** argv, options& o) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  bool options_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto a = args[i];
    auto file = [&]() -> std::optional<int> {
      if (!o.file.empty()) return usage_error(fmt::format("more than one input file ('{}' and '{}')", o.file, a));
      o.file = std::string(a);
      return std::nullopt;
    };
    if (options_ended) {
      if (auto status = file()) return status;
      continue;
    }
    if (a == "--") {
      options_ended = true;
      continue;
    }
    // `--flag=VALUE` takes VALUE as written; `--flag VALUE` does not take a
    // VALUE that looks like an option (`--emit --optimize` lacks its DIR).
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (auto eq = a.find('='); eq != std::string_view::npos && a.substr(0, eq) == flag)
        return std::string(a.substr(eq + 1));
      if (i + 1 >= args.size() || (args[i + 1].starts_with("-") && args[i + 1] != "-")) return std::nullopt;
      return std::string(args[++i]);
    };
    auto is = [&](std::string_view flag) { return a == flag || a.starts_with(std::string(flag) + "="); };
    if (a == "--help" || a == "-h") {
      fmt::print("{}\n{}", usage, help);
      return exit_valid;
    }
    if (a == "--version") {
      fmt::print("dtplan {}\n", DTPLAN_VERSION);
      return exit_valid;
    }
    if (a == "--optimize") { o.optimize = true; continue; }
    if (a == "--quiet" || a == "-q") { o.quiet = true; continue; }
    if (a == "--explain") { o.explain = true; continue; }
    if (a == "--force") { o.force = true; continue; }
    if (a == "--progress") { o.progress = true; continue; }
    if (is("--top")) {
      auto v = value("--top");
      auto n = v ? parse_count(*v, 1, 1000) : std::nullopt;
      if (!n) return usage_error("--top needs a number from 1 to 1000");
      o.top = static_cast<int>(*n);
      continue;
    }
    if (is("--threads")) {
      auto v = value("--threads");
      auto n = v ? parse_count(*v, 1, 1024) : std::nullopt;
      if (!n) return usage_error("--threads needs a number from 1 to 1024");
      o.threads = static_cast<unsigned>(*n);
      continue;
    }
    if (is("--max-candidates")) {
      auto v = value("--max-candidates");
      auto n = v ? parse_count(*v, 1, 999'999'999) : std::nullopt;
      if (!n) return usage_error("--max-candidates needs a number from 1 to 999999999");
      o.max_candidates = *n;
      continue;
    }
    if (is("--time-limit")) {
      auto v = value("--time-limit");
      auto n = v ? parse_count(*v, 1, 86400) : std::nullopt;
      if (!n) return usage_error("--time-limit needs a number of seconds from 1 to 86400");
      o.time_limit = planner::seconds(static_cast<double>(*n));
      continue;
    }
    if (is("--strategy")) {
      auto v = value("--strategy");
      if (!v || v->empty()) return usage_error("--strategy needs a strategy name");
      o.strategy = *v;
      continue;
    }
    if (is("--set")) {
      auto v = value("--set");
      if (!v) return usage_error("--set needs BLOCK.KEY=VALUE");
      o.settings.push_back(*v);
      continue;
    }
    if (is("--format")) {
      auto v = value("--format");
      if (!v || (*v != "text" && *v != "json")) return usage_error("--format needs 'text' or 'json'");
      o.json = *v == "json";
      continue;
    }
    if (is("--emit")) {
      auto v = value("--emit");
      if (!v || v->empty()) return usage_error("--emit needs a directory");
      o.emit_dir = *v;
      continue;
    }
    if (is("--dot")) {
      auto v = value("--dot");
      if (!v || v->empty()) return usage_error("--dot needs a file name");
      o.dot_file = *v;
      continue;
    }
    if (is("--framework")) {
      auto v = value("--framework");
      auto f = v ? planner::job_format_of(*v) : std::nullopt;
      if (!f) return usage_error("--framework needs 'torchtitan', 'megatron' or 'deepspeed'");
      o.framework = f;
      continue;
    }
    if (is("--from")) {
      auto v = value("--from");
      auto f = v ? planner::job_format_of(*v, planner::read_job_formats) : std::nullopt;
      if (!f) return usage_error("--from needs 'torchtitan', 'megatron', 'deepspeed' or 'nemo', then the job's file");
      if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1].starts_with("--"))
        return usage_error(fmt::format("--from {} needs the job's file", *v));
      o.from = f;
      o.from_file = std::string(args[++i]);
      continue;
    }
    if (is("--dump")) {
      auto v = value("--dump");
      if (!v || (*v != "ast" && *v != "ir")) return usage_error("--dump needs 'ast' or 'ir'");
      o.dump = *v;
      continue;
    }
    if (a.starts_with("-") && a != "-") {
      auto known = std::vector<std::string>{"--optimize", "--top",   "--strategy", "--set",     "--format",
                                            "--emit",     "--force", "--dot",      "--quiet",   "--explain",
                                            "--threads",  "--progress", "--dump",  "--help",    "--version",
                                            "--max-candidates", "--time-limit", "--framework", "--from"};
      auto near = dsl::closest(a, known);
      return usage_error(near.empty() ? fmt::format("unknown option '{}'", a)
                                      : fmt::format("unknown option '{}'; did you mean '{}'?", a, near));
    }
    if (auto status = file()) return status;
  }
  if (o.file.empty()) return usage_error("no input file");
  if (o.force && !o.emit_dir) return usage_error("--force only applies to --emit DIR");
  if (o.framework && !o.emit_dir) return usage_error("--framework only applies to --emit DIR");
  return std::nullopt;
}

// The input's text, bounded like any source (standard input too), or why
// there is none.
dsl::read_result read_input(std::string const& path) {
  if (path != "-") return dsl::read_source(path);
  auto r = dsl::read_source("/dev/stdin");
  if (!r.text) {
    auto const at = r.error.find("'/dev/stdin'");
    if (at != std::string::npos) r.error.replace(at, 12, "the standard input");
  }
  return r;
}

struct run {
  options const& o;
  dsl::source_manager sources;
  dsl::diagnostics diags;

  std::set<std::string> printed;

  // Prints what was collected, each distinct diagnostic once (an override
  // that breaks two strategies, or a warning every search result shares,
  // points at the same text with the same words); --quiet keeps only the
  // errors.
  void flush() {
    for (auto const& d : diags.list()) {
      if (o.quiet && d.level != dsl::severity::error) continue;
      auto text = dsl::format(d, sources);
      if (printed.insert(text).second) fmt::print(stderr, "{}", text);
    }
    diags.clear();
  }
};

// Parses the file and the --set overrides and lowers them; nothing when
// either failed (the diagnostics say why).
std::optional<planner::program> load(run& r, std::uint32_t file) {
  planner::lower_options lowering;
  for (auto const& s : r.o.settings) {
    auto id = r.sources.add(dsl::set_source_name, s);
    if (auto setting = dsl::parse_setting(r.sources, id, r.diags)) lowering.settings.push_back(*setting);
  }
  if (r.diags.has_errors()) return std::nullopt;
  std::optional<planner::program> program;
  if (r.o.from) {
    // The job's file, and a file it names, read as any source is; a path
    // the job names is relative to the job's own directory.
    auto job_input = dsl::read_source(r.o.from_file);
    if (!job_input.text) {
      fmt::print(stderr, "dtplan: error: {}\n", job_input.error);
      return std::nullopt;
    }
    planner::job_source job{*r.o.from, r.sources.add(r.o.from_file, std::move(*job_input.text)), {}};
    auto const base = std::filesystem::path(r.o.from_file).parent_path();
    job.open = [&r, base](std::string const& path) -> std::variant<std::uint32_t, std::string> {
      auto full = std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : base / path;
      auto text = dsl::read_source(full.string());
      if (!text.text) return text.error;
      return r.sources.add(full.string(), std::move(*text.text));
    };
    program = planner::load_job(r.sources, file, job, lowering, r.diags);
  } else {
    program = planner::load(r.sources, file, lowering, r.diags);
  }
  if (r.diags.has_errors()) return std::nullopt;
  return program;
}

planner::session_options session_of(options const& o) {
  planner::session_options so;
  so.optimize = o.optimize;
  so.strategy = o.strategy;
  so.search.top = o.top;
  so.search.threads = o.threads;
  so.search.explain = o.explain;
  bool const terminal = isatty(STDERR_FILENO);
  so.search.progress = o.progress || (!o.quiet && terminal);
  so.search.progress_lines = !terminal;
  so.search.max_candidates = o.max_candidates;
  so.search.time_limit = o.time_limit;
  return so;
}

// --emit and --dot for the session's chosen plan; the exit status.
int write_outputs(run& r, codegen::report const& rep, planner::session_outcome const& outcome, bool named_fixed,
                  int status) {
  auto const& o = r.o;
  if (!outcome.chosen) {
    if (named_fixed) fmt::print(stderr, "dtplan: error: strategy '{}' is not valid: no plan to emit\n", *o.strategy);
    else fmt::print(stderr, "dtplan: error: no valid plan to emit\n");
    return exit_invalid;
  }
  auto const& chosen = outcome.plans[*outcome.chosen];
  if (o.emit_dir) {
    std::vector<planner::plan> one{chosen};
    auto json = codegen::to_json({rep.program, &one, rep.stats, {}, &r.sources});
    // The framework's own job: the one asked for, else the one the plan was
    // costed for when dtplan writes its jobs.
    auto job = o.framework ? o.framework : planner::job_format_of(rep.program->training.framework);
    if (!codegen::emit_bundle(*rep.program, chosen, json, *o.emit_dir, r.diags, {.force = o.force, .job = job})) {
      r.flush();
      return exit_error;
    }
    if (!o.quiet) fmt::print(stderr, "dtplan: wrote the bundle for '{}' to {}\n", chosen.name, *o.emit_dir);
  }
  if (o.dot_file && !codegen::write_dot(*rep.program, chosen, *o.dot_file, r.diags)) {
    r.flush();
    return exit_error;
  }
  r.flush();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (auto status = parse_args(argc, argv, o)) return *status;
  run r{o, {}, {}, {}};

  auto input = read_input(o.file);
  if (!input.text) {
    fmt::print(stderr, "dtplan: error: {}\n", input.error);
    return exit_error;
  }
  auto file = r.sources.add(o.file == "-" ? "<stdin>" : o.file, std::move(*input.text));

  if (o.dump == "ast") {
    auto tree = dsl::parse(r.sources, file, r.diags);
    r.flush();
    if (!tree) return exit_error;
    fmt::print("{}", dsl::ast::dump(*tree, r.sources));
    return exit_valid;
  }

  auto program = load(r, file);
  if (!program) {
    r.flush();
    return exit_error;
  }
  if (o.dump == "ir") {
    r.flush();
    fmt::print("{}", planner::dump(*program));
    return exit_valid;
  }

  auto const so = session_of(o);
  dsl::diagnostics request;
  auto selected = planner::select_strategies(*program, so, request);
  if (!selected) {
    r.flush();
    return usage_error(request.list().front().message);
  }
  auto outcome = planner::run(*program, *selected, so, r.diags);
  if (!outcome) {
    r.flush();
    return exit_error;
  }

  codegen::report rep{&*program, &outcome->plans, outcome->stats, std::move(outcome->explanations), &r.sources};
  r.flush();
  if (o.json) fmt::print("{}", codegen::to_json(rep));
  else if (o.quiet) fmt::print("{}", codegen::to_summary(rep));
  else fmt::print("{}", codegen::to_text(rep, o.explain));

  auto const status = outcome->any_valid() ? exit_valid : exit_invalid;
  if (!o.emit_dir && !o.dot_file) return status;
  return write_outputs(r, rep, *outcome, o.strategy && !selected->fixed.empty(), status);
}
