// The pipeline as the CLI runs it (cli/dtplan.cpp), in memory, and the
// promises a user relies on checked on everything it produces. Only a
// violated promise prints (then traps): libFuzzer runs millions of inputs.
#include "tests/fuzz/pipeline.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "codegen/graphviz.hpp"
#include "codegen/launch.hpp"
#include "codegen/report.hpp"
#include "codegen/skeleton.hpp"
#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/parse.hpp"
#include "dsl/source.hpp"
#include "planner/import/import.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/session.hpp"

namespace dtplan::fuzz {

namespace {

// What the CLI promises about its diagnostics: "its diagnostics stop after
// 20 errors with a count of the rest" (README), per stage.
constexpr std::size_t max_errors = 20;

[[noreturn]] void violated(std::string_view what, std::string_view detail) {
  constexpr std::size_t shown = 6000;
  fmt::print(stderr, "\nfuzz: promise violated: {}\n{}{}\n", what, detail.substr(0, shown),
             detail.size() > shown ? "\n[...]" : "");
  std::fflush(stderr);
  __builtin_trap();
}

void require(bool ok, std::string_view what, std::string_view detail = {}) {
  if (!ok) violated(what, detail);
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `text` holds `word` (lowercase) as a whole word, in any case.
bool has_word(std::string_view text, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
    if (i > 0 && word_char(text[i - 1])) continue;
    std::size_t j = 0;
    while (j < word.size() && std::tolower(static_cast<unsigned char>(text[i + j])) == word[j]) ++j;
    if (j == word.size() && (i + j == text.size() || !word_char(text[i + j]))) return true;
  }
  return false;
}

bool names_non_finite(std::string_view text) {
  return has_word(text, "inf") || has_word(text, "nan") || has_word(text, "infinity");
}

// Text for a terminal: no control character but newline and tab, no C1
// control (U+0080..U+009F) and no bidirectional override or isolate.
void check_terminal_safe(std::string_view out, std::string_view what) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto const c = static_cast<unsigned char>(out[i]);
    bool bad = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    if (c == 0xc2 && i + 1 < out.size()) {
      auto const n = static_cast<unsigned char>(out[i + 1]);
      bad = bad || (n >= 0x80 && n <= 0x9f);
    }
    if (c == 0xe2 && i + 2 < out.size()) {
      auto const a = static_cast<unsigned char>(out[i + 1]), b = static_cast<unsigned char>(out[i + 2]);
      bad = bad || (a == 0x80 && b >= 0xaa && b <= 0xae) || (a == 0x81 && b >= 0xa6 && b <= 0xa9);
    }
    if (bad) violated(fmt::format("{} carries control character 0x{:02x} at byte {}", what, c, i), out);
  }
}

// A number the user reads: no `inf`/`nan` (unless the input itself names
// one, e.g. a model called 'inf'), no negative size, no run of digits no
// figure of a physical plan needs. Digits inside a word are a name's (an
// identifier of the input such as 'c77...7'), not a figure.
void check_figures(std::string_view out, std::string_view what, bool input_names_non_finite) {
  if (!input_names_non_finite && names_non_finite(out)) violated(fmt::format("{} prints a non-finite number", what), out);
  static constexpr std::string_view byte_units[] = {"B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"};
  std::size_t digits = 0;
  bool in_name = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    bool const digit = std::isdigit(static_cast<unsigned char>(out[i])) != 0;
    if (!digit) in_name = word_char(out[i]);
    digits = digit && !in_name ? digits + 1 : 0;
    if (digits > 24) violated(fmt::format("{} prints a {}-digit number", what, digits), out.substr(i > 200 ? i - 200 : 0, 400));
    if (out[i] != '-' || i + 1 >= out.size() || !std::isdigit(static_cast<unsigned char>(out[i + 1]))) continue;
    if (i > 0 && (word_char(out[i - 1]) || out[i - 1] == '.')) continue;
    std::size_t j = i + 1;
    while (j < out.size() && (std::isdigit(static_cast<unsigned char>(out[j])) || out[j] == '.' || out[j] == ',')) ++j;
    if (j < out.size() && out[j] == ' ') ++j;
    for (auto u : byte_units)
      if (out.substr(j, u.size()) == u && (j + u.size() == out.size() || !word_char(out[j + u.size()])))
        violated(fmt::format("{} prints a negative size", what), out.substr(i > 200 ? i - 200 : 0, 400));
  }
}

// Every diagnostic lies inside a source it names, prints as
// "NAME:LINE:COL: LEVEL: ..." and is safe for a terminal.
void check_diagnostics(dsl::diagnostics const& diags, dsl::source_manager const& sources, std::string_view stage) {
  auto in_source = [&](dsl::span where) {
    if (!where.valid() || where.file >= sources.size()) return false;
    auto const& file = sources.file(where.file);
    return where.begin <= where.end && where.end <= file.text().size();
  };
  // Counted as the CLI prints them: each distinct text once (an override
  // that breaks every strategy is one error at the --set).
  std::set<std::string> errors;
  for (auto const& d : diags.list()) {
    auto const text = dsl::format(d, sources);
    require(in_source(d.where), fmt::format("a diagnostic of {} has no location in a source", stage), text);
    require(text.rfind(dsl::location(d.where, sources) + ": ", 0) == 0,
            fmt::format("a diagnostic of {} does not start with file:line:col", stage), text);
    auto const at = sources.file(d.where.file).position_of(d.where.begin);
    require(at.line >= 1 && at.column >= 1, "a diagnostic at line or column 0", text);
    for (auto const& n : d.notes)
      require(!n.where.valid() || in_source(n.where), "a note's location is outside its source", text);
    check_terminal_safe(text, "a diagnostic");
    require(!d.message.empty(), "a diagnostic without a message", text);
    if (d.level == dsl::severity::error) errors.insert(text);
  }
  require(errors.size() <= max_errors,
          fmt::format("{} reports {} distinct errors, more than {}", stage, errors.size(), max_errors),
          dsl::format(diags, sources));
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

void check_plan(planner::plan const& pl, std::string const& printed) {
  auto fail = [&](std::string_view what) { violated(fmt::format("plan '{}': {}", pl.name, what), printed); };
  if (!pl.valid) {
    bool error = false;
    for (auto const& d : pl.errors) error = error || d.level == dsl::severity::error;
    if (!error) fail("invalid without an error saying why");
  }
  auto const& m = pl.memory;
  for (auto b : {m.capacity, m.usable, m.weights, m.gradients, m.optimizer, m.activations, m.buffers, m.total})
    if (!finite_non_negative(b.value())) fail("a memory figure is negative or not finite");
  for (auto const& t : m.detail)
    if (!finite_non_negative(t.size.value())) fail("a memory term is negative or not finite");
  if (!pl.valid) return;
  if (!pl.time) fail("valid without a time");
  auto const& t = *pl.time;
  if (!(std::isfinite(t.step.value()) && t.step.value() > 0)) fail("the step time is not finite and positive");
  for (auto s : {t.compute, t.recompute, t.exposed_comm, t.bubble, t.optimizer, t.overhead})
    if (!finite_non_negative(s.value())) fail("a time term is negative or not finite");
  if (!(std::isfinite(t.model_flops.value()) && t.model_flops.value() > 0)) fail("model FLOPs not finite and positive");
  if (!finite_non_negative(t.hardware_flops.value())) fail("hardware FLOPs negative or not finite");
  for (auto const& e : t.comm) {
    if (!finite_non_negative(e.size.value()) || e.count < 0 || !finite_non_negative(e.time.value()) ||
        !finite_non_negative(e.exposed.value()))
      fail("a collective's size, count or time is negative or not finite");
  }
  if (!(m.total.value() <= m.usable.value() && m.usable.value() <= m.capacity.value()))
    fail("valid but its memory exceeds what is usable");
  auto const& r = pl.rate;
  if (!(std::isfinite(r.tokens_per_s) && r.tokens_per_s > 0)) fail("tokens/s not finite and positive");
  if (!finite_non_negative(r.samples_per_s)) fail("samples/s negative or not finite");
  if (!(r.mfu > 0 && r.mfu <= 1)) fail(fmt::format("MFU {} outside (0, 1]", r.mfu));
  if (!(r.hfu >= r.mfu && r.hfu <= 1)) fail(fmt::format("HFU {} outside [MFU, 1]", r.hfu));
}

// The JSON document parses, and every number in it is a finite,
// non-negative figure (sizes whole bytes), the differences of --explain's
// scaling from its ideal step finite: the writer writes a non-finite
// double as null.
// The scaling explanation's differences from the ideal step are signed (a
// part can shrink faster than the GPUs grow).
bool is_signed(std::string const& path) {
  return path.ends_with("_beyond_s") || path.ends_with(".beyond_ideal_s");
}

void check_json_value(nlohmann::json const& j, std::string const& path, std::string const& doc) {
  using value_t = nlohmann::json::value_t;
  switch (j.type()) {
    case value_t::null:
      // The keys the report writes null on purpose: no published run to
      // judge the plan's GPU and framework by, none of the framework on
      // another GPU of the generation, no published pair predicted as far
      // apart as a runner-up and the best plan, no expert capacity
      // (codegen/report.cpp).
      if (path.ends_with(".expected_error") || path.ends_with(".related_expected_error") ||
          path.ends_with(".behind_best.order_agreement") || path.find(".speedup_order_agreement.") != std::string::npos ||
          path == "$.model.capacity_factor")
        return;
      violated(fmt::format("JSON: null at {} (a number that was not finite)", path), doc);
    case value_t::object:
      for (auto const& [k, v] : j.items()) check_json_value(v, path + "." + k, doc);
      return;
    case value_t::array:
      for (std::size_t i = 0; i < j.size(); ++i) check_json_value(j[i], fmt::format("{}[{}]", path, i), doc);
      return;
    case value_t::number_integer:
      if (j.get<std::int64_t>() < 0 && !is_signed(path)) violated(fmt::format("JSON: negative number at {}", path), doc);
      return;
    case value_t::number_float:
      if (is_signed(path)) {
        if (!std::isfinite(j.get<double>())) violated(fmt::format("JSON: number not finite at {}", path), doc);
        return;
      }
      if (!finite_non_negative(j.get<double>())) violated(fmt::format("JSON: negative number at {}", path), doc);
      // Sizes: check_json holds their text to whole digits (one past 2^64
      // reads as a double).
      return;
    default: return;
  }
}

void check_json(std::string const& doc, std::string_view what) {
  auto j = nlohmann::json::parse(doc, nullptr, false);
  if (j.is_discarded()) violated(fmt::format("{} is not JSON", what), doc);
  check_json_value(j, "$", doc);
  // Every size is written as whole bytes, digits alone, however large.
  constexpr std::string_view size_key = "bytes\": ";
  for (auto at = doc.find(size_key); at != std::string::npos; at = doc.find(size_key, at + 1)) {
    auto const begin = at + size_key.size();
    auto const end = doc.find_first_of(",\n}", begin);
    auto const text = doc.substr(begin, end - begin);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      violated(fmt::format("JSON: a size written '{}', not whole bytes", text), doc);
  }
}

// A generated file is data: printable ASCII and newlines only, whatever the
// input's names were, so nothing can end a comment or a literal.
void check_generated(std::string const& text, std::string_view what, bool input_names_non_finite) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto const c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c >= 0x7f)
      violated(fmt::format("{} holds byte 0x{:02x} at {}", what, c, i), text.substr(i > 300 ? i - 300 : 0, 600));
  }
  check_figures(text, what, input_names_non_finite);
}

// The leading `#set BLOCK.KEY=VALUE` comment lines: --set overrides.
std::vector<std::string> settings_of(std::string_view text) {
  std::vector<std::string> out;
  while (out.size() < 8 && text.starts_with("#set ")) {
    auto const end = text.find('\n');
    out.emplace_back(text.substr(5, end == std::string_view::npos ? end : end - 5));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

void run_program(planner::program const& program, dsl::source_manager const& sources, bool odd_names, bool optimize);

void run(std::string_view text) {
  bool const odd_names = names_non_finite(text);
  dsl::source_manager sources;
  auto const file = sources.add("fuzz.dtp", std::string(text));

  // --dump ast, on inputs of a size byte mutations reach (the dump of the
  // extreme programs' chains costs seconds under the sanitizers and finds
  // nothing more).
  if (text.size() <= (std::size_t{64} << 10)) {
    dsl::diagnostics diags;
    auto tree = dsl::parse(sources, file, diags);
    check_diagnostics(diags, sources, "parsing");
    require(tree.has_value() == !diags.has_errors(), "parse returned a tree with errors, or none without");
    if (tree) check_terminal_safe(dsl::ast::dump(*tree, sources), "--dump ast");
  }

  dsl::diagnostics diags;
  planner::lower_options lowering;
  for (auto const& s : settings_of(text)) {
    auto const id = sources.add("<--set>", s);
    if (auto setting = dsl::parse_setting(sources, id, diags)) lowering.settings.push_back(*setting);
  }
  check_diagnostics(diags, sources, "--set");
  if (diags.has_errors()) return;
  auto program = planner::load(sources, file, lowering, diags);
  check_diagnostics(diags, sources, "lowering");
  require(program.has_value() == !diags.has_errors(), "lowering returned a program with errors, or none without",
          dsl::format(diags, sources));
  if (!program) return;
  run_program(*program, sources, odd_names, true);
}

// The session, the reports and the bundle of a lowered program: searched
// (`optimize`) as --optimize runs it, or its fixed strategies costed.
void run_program(planner::program const& program, dsl::source_manager const& sources, bool odd_names, bool optimize) {
  dsl::diagnostics diags;
  check_terminal_safe(planner::dump(program), "--dump ir");

  planner::session_options so;
  so.optimize = optimize;
  so.search.top = 3;
  so.search.threads = 1;
  so.search.explain = true;
  so.search.progress = false;
  // Small spaces, so that an input takes a fraction of a second under the
  // sanitizers: a node with every key free fits; a larger space is
  // refused, as the CLI refuses one over --max-candidates.
  so.search.max_micro_batch = 8;
  so.search.max_virtual_stages = 4;
  so.search.max_candidates = 4'000;
  so.search.time_limit = planner::seconds(0.2);
  auto selected = planner::select_strategies(program, so, diags);
  require(selected.has_value(), "--optimize refused a program", dsl::format(diags, sources));
  auto outcome = planner::run(program, *selected, so, diags);
  require(outcome.has_value(), "the session failed", dsl::format(diags, sources));
  check_diagnostics(diags, sources, "the session");

  codegen::report rep{&program, &outcome->plans, outcome->stats, outcome->explanations, &sources};
  auto const report_text = codegen::to_text(rep, true);
  check_terminal_safe(report_text, "the text report");
  check_figures(report_text, "the text report", odd_names);
  auto const summary = codegen::to_summary(rep);
  check_terminal_safe(summary, "the --quiet summary");
  check_figures(summary, "the --quiet summary", odd_names);
  auto const json = codegen::to_json(rep);
  check_json(json, "the JSON report");
  for (auto const& pl : outcome->plans) check_plan(pl, report_text);

  // The bundle, in memory, for the chosen plan and the first valid others.
  std::vector<std::size_t> emitted;
  if (outcome->chosen) emitted.push_back(*outcome->chosen);
  for (std::size_t i = 0; i < outcome->plans.size() && emitted.size() < 3; ++i)
    if (outcome->plans[i].valid && (emitted.empty() || emitted.front() != i)) emitted.push_back(i);
  for (auto const i : emitted) {
    auto const& pl = outcome->plans[i];
    if (!pl.valid) continue;
    std::vector<planner::plan> one{pl};
    check_json(codegen::to_json({rep.program, &one, rep.stats, {}, &sources}), "plan.json");
    auto const dot = codegen::sharding_dot(program, pl);
    check_terminal_safe(dot, "sharding.dot");
    check_figures(dot, "sharding.dot", odd_names);
    check_generated(codegen::skeleton_cmake(program, pl), "skeleton/CMakeLists.txt", odd_names);
    check_generated(codegen::train_step_cu(program, pl), "skeleton/train_step.cu", odd_names);
    check_generated(codegen::slurm_script(program, pl), "launch/slurm.sbatch", odd_names);
    check_generated(codegen::mpirun_script(program, pl), "launch/mpirun.sh", odd_names);
  }
}

// A framework's job (the first byte picks the format) against a fixed
// cluster and model, read, lowered, costed and reported; the bytes after
// the first NUL are the file the job names (Megatron-DeepSpeed's
// ds_config.json, a script a NeMo script sources), whatever path it gives.
void run_job_bytes(std::string_view bytes) {
  if (bytes.empty()) return;
  constexpr std::array formats{planner::job_format::torchtitan, planner::job_format::megatron,
                               planner::job_format::deepspeed, planner::job_format::nemo};
  auto const format = formats[static_cast<unsigned char>(bytes.front()) % formats.size()];
  bytes.remove_prefix(1);
  auto const cut = bytes.find('\0');
  auto const job_text = bytes.substr(0, cut);
  auto const related = cut == std::string_view::npos ? std::string_view{} : bytes.substr(cut + 1);
  dsl::source_manager sources;
  auto const file = sources.add("fuzz.dtp",
                                "model m : llama3_8b { seq_len = 2048 }\n"
                                "cluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }\n"
                                "training { global_batch = 64 }\n");
  planner::job_source job{format, sources.add("job", std::string(job_text)), {}};
  job.open = [&](std::string const& path) -> std::variant<std::uint32_t, std::string> {
    if (related.empty()) return std::string("no such file");
    return sources.add(path, std::string(related));
  };
  dsl::diagnostics diags;
  auto program = planner::load_job(sources, file, job, {}, diags);
  check_diagnostics(diags, sources, "the job's import");
  require(program.has_value() == !diags.has_errors(), "the import returned a program with errors, or none without",
          dsl::format(diags, sources));
  if (!program) return;
  run_program(*program, sources, names_non_finite(job_text), false);
}

}  // namespace

namespace {

// Runs `stage` on the input; an exception escaping it breaks the contract.
template <class Stage>
void guarded(char const* what, Stage&& stage) {
  try {
    stage();
  } catch (std::exception const& e) {
    violated(what, e.what());
  } catch (...) {
    violated(what, "(not a std::exception)");
  }
}

}  // namespace

void run_job(std::string_view bytes) {
  guarded("an exception escaped the job's import", [&] { run_job_bytes(bytes); });
}

void run_pipeline(std::string_view text) {
  guarded("an exception escaped the pipeline", [&] { run(text); });
}

}  // namespace dtplan::fuzz
