#include "planner/import/import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>

#include "dsl/parse.hpp"
#include "planner/import/translate.hpp"
#include "planner/ir/keys.hpp"
#include "planner/model/layout.hpp"

namespace dtplan::planner {

namespace import_detail {

job_reader::job_reader(dsl::config::document const& doc, std::string_view framework, translation& out)
    : doc_(doc), framework_(framework), out_(out), read_(doc.entries.size(), false) {}

entry const* job_reader::find(std::string_view key) {
  entry const* last = nullptr;
  for (std::size_t i = 0; i < doc_.entries.size(); ++i)
    if (doc_.entries[i].key == key) {
      read_[i] = true;
      last = &doc_.entries[i];
    }
  return last;
}

entry const* job_reader::flag(std::string_view key) {
  auto const* e = find(key);
  if (e && e->val && e->val->detached) {
    // `--bf16 $EXTRA`: the expansion is more arguments, not a value.
    out_.diags.warning(e->val->where, fmt::format("'{}' is a shell expansion dtplan cannot resolve: the arguments it "
                                                  "gives are not read",
                                                  dsl::escaped(e->val->text)));
  } else if (e && e->val) {
    out_.diags.error(e->val->where, fmt::format("'{}' takes no value, got '{}'", key, dsl::escaped(e->val->text)));
  }
  return e;
}

void job_reader::not_costed(std::string_view prefix, std::string_view why) {
  for (std::size_t i = 0; i < doc_.entries.size(); ++i)
    if (!read_[i] && doc_.entries[i].key.starts_with(prefix)) {
      read_[i] = true;
      not_costed_.emplace(doc_.entries[i].key, why);
    }
}

std::optional<std::string> job_reader::word(entry const& e, std::string_view what) {
  if (!e.val) {
    out_.diags.error(e.key_where, fmt::format("expected {} after '{}'", what, e.key));
    return std::nullopt;
  }
  auto const& v = *e.val;
  if (v.unexpanded) {
    out_.diags.error(v.where, fmt::format("'{}' is '{}', a shell expansion dtplan cannot resolve: write its value",
                                          e.key, dsl::escaped(v.text)));
    return std::nullopt;
  }
  if (v.k == dsl::config::value::kind::array) {
    out_.diags.error(v.where, fmt::format("expected {} for '{}', got {} words", what, e.key, v.items.size()));
    return std::nullopt;
  }
  return v.text;
}

// Decimal only: strtod also reads C's hexadecimal (`0x10`, `0x1p-3`), which
// no framework's arguments do.
namespace {
bool decimal(std::string const& digits) { return digits.find_first_not_of("+-0123456789.eE") == std::string::npos; }
}  // namespace

std::optional<std::int64_t> job_reader::integer(entry const& e) {
  using kind = dsl::config::value::kind;
  constexpr std::string_view what = "a whole number";
  if (e.val && e.val->k != kind::integer && e.val->k != kind::string && e.val->k != kind::real) {
    out_.diags.error(e.val->where, fmt::format("expected {} for '{}', got {}", what, e.key,
                                               dsl::config::kind_phrase(e.val->k)));
    return std::nullopt;
  }
  if (e.val && e.val->k == kind::string && !words()) {
    // A TOML or JSON string is not a number, even when it reads as one.
    out_.diags.error(e.val->where, fmt::format("expected {} for '{}', got a string", what, e.key));
    return std::nullopt;
  }
  auto w = word(e, what);
  if (!w) return std::nullopt;
  std::string digits;
  for (char c : *w)
    if (c != '_') digits += c;
  // JSON and Python write large whole numbers as reals too (`5e8`).
  char* end = nullptr;
  errno = 0;
  double const v = std::strtod(digits.c_str(), &end);
  bool const number = decimal(digits) && !digits.empty() && end == digits.c_str() + digits.size() && errno == 0 &&
                      std::isfinite(v) && v == std::floor(v);
  if (number && std::fabs(v) >= 9.2e18) {
    // A whole number still, but past what an int64 holds with room to spare.
    out_.diags.error(e.val->where, fmt::format("'{}' for '{}' is past the whole numbers dtplan reads (below 9.2 x "
                                               "10^18)",
                                               dsl::escaped(*w), e.key));
    return std::nullopt;
  }
  bool const whole = number;
  if (!whole) {
    out_.diags.error(e.val->where, fmt::format("expected {} for '{}', got '{}'", what, e.key, dsl::escaped(*w)));
    return std::nullopt;
  }
  if (digits.find_first_of(".eE") == std::string::npos) return std::stoll(digits);
  return static_cast<std::int64_t>(v);
}

std::optional<double> job_reader::real(entry const& e) {
  using kind = dsl::config::value::kind;
  if (e.val && e.val->k != kind::integer && e.val->k != kind::string && e.val->k != kind::real) {
    out_.diags.error(e.val->where,
                     fmt::format("expected a number for '{}', got {}", e.key, dsl::config::kind_phrase(e.val->k)));
    return std::nullopt;
  }
  auto w = word(e, "a number");
  if (!w) return std::nullopt;
  std::string digits;
  for (char c : *w)
    if (c != '_') digits += c;
  char* end = nullptr;
  double const v = std::strtod(digits.c_str(), &end);
  if (!decimal(digits) || digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(v)) {
    out_.diags.error(e.val->where, fmt::format("expected a number for '{}', got '{}'", e.key, dsl::escaped(*w)));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> job_reader::boolean(entry const& e) {
  using kind = dsl::config::value::kind;
  if (!e.val) return true;  // an argument alone: `--bf16`
  if (e.val->k == kind::boolean) return e.val->text == "true";
  if (e.val->k == kind::string && words()) {
    if (e.val->text == "true" || e.val->text == "True") return true;
    if (e.val->text == "false" || e.val->text == "False") return false;
  }
  out_.diags.error(e.val->where, fmt::format("expected 'true' or 'false' for '{}', got {}", e.key,
                                             e.val->k == kind::string
                                                 ? fmt::format("'{}'", dsl::escaped(e.val->text))
                                                 : std::string(dsl::config::kind_phrase(e.val->k))));
  return std::nullopt;
}

std::optional<std::vector<std::string>> job_reader::texts(entry const& e) {
  std::vector<std::string> out;
  if (e.val && e.val->k == dsl::config::value::kind::array) {
    for (auto const& item : e.val->items) out.push_back(item.text);
  } else if (e.val) {
    auto v = text(e);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

std::optional<std::string> job_reader::text(entry const& e) {
  using kind = dsl::config::value::kind;
  if (e.val && e.val->k != kind::string) {
    out_.diags.error(e.val->where,
                     fmt::format("expected a string for '{}', got {}", e.key, dsl::config::kind_phrase(e.val->k)));
    return std::nullopt;
  }
  return word(e, "a value");
}

void job_reader::report_unread() {
  for (std::size_t i = 0; i < doc_.entries.size(); ++i) {
    auto const& e = doc_.entries[i];
    if (!read_[i]) {
      out_.diags.warning(e.key_where, fmt::format("{}'s '{}' is not modelled: the plan is costed without it",
                                                  framework_, e.key));
    } else if (auto it = not_costed_.find(e.key); it != not_costed_.end()) {
      out_.diags.warning(e.key_where, fmt::format("{}'s '{}' is not read: {}", framework_, e.key, it->second));
    }
  }
}

ast::value integer_value(std::int64_t v, span where) { return ast::number{where, fmt::format("{}", v), true}; }

ast::value real_value(double v, span where) { return ast::number{where, fmt::format("{}", v), false}; }

ast::value identifier_value(std::string name, span where) { return ast::identifier{where, std::move(name)}; }

ast::value boolean_value(bool v, span where) { return ast::boolean{where, v}; }

ast::value string_value(std::string text, span where) { return ast::string_literal{where, std::move(text)}; }

ast::value bytes_value(double v, span where) {
  ast::quantity q;
  q.where = where;
  // Whole bytes where an int64 holds them; past that a real, which lowering
  // then holds to the key's range (a count of elements times its bytes can
  // pass 2^63).
  q.amount = std::fabs(v) < 0x1p62 ? ast::number{where, fmt::format("{}", std::llround(v)), true}
                                   : ast::number{where, fmt::format("{:e}", v), false};
  q.unit = "B";
  q.unit_where = where;
  return q;
}

void set(translation& t, std::string_view target, std::string_view key, ast::value v, span key_where) {
  ast::setting s;
  s.where = key_where;
  s.target = ast::identifier{key_where, std::string(target)};
  s.key = ast::identifier{key_where, std::string(key)};
  s.rhs = std::move(v);
  t.settings.push_back(std::move(s));
}

void set_strategy(translation& t, std::string_view key, ast::value v, span key_where) {
  auto it = std::find_if(t.strategy.begin(), t.strategy.end(),
                         [&](ast::assignment const& a) { return a.key.name == key; });
  ast::assignment a{key_where, ast::identifier{key_where, std::string(key)}, std::move(v)};
  if (it != t.strategy.end()) *it = std::move(a);
  else t.strategy.push_back(std::move(a));
}

ast::value shard_value(std::int64_t dp_block, strategy const& degrees, context const& ctx, span where) {
  if (ctx.prior && degrees.dp > 0) {
    rank_layout const layout(degrees, ctx.prior->cluster.gpus_per_node);
    if (layout.node_sync_members() == dp_block * degrees.cp) return identifier_value("node", where);
  }
  return integer_value(dp_block, where);
}

std::optional<std::int64_t> world(context const& ctx) {
  if (!ctx.prior) return std::nullopt;
  return ctx.prior->cluster.gpus();
}

std::optional<std::int64_t> ranks_left(context const& ctx, std::initializer_list<std::int64_t> degrees) {
  auto const w = world(ctx);
  auto const model = saturating_product(degrees);
  if (!w || model <= 0 || *w % model != 0) return std::nullopt;
  return *w / model;
}

}  // namespace import_detail

namespace {

using namespace import_detail;

std::optional<dsl::config::document> read_job(job_format f, dsl::source_manager const& sources, std::uint32_t file,
                                              open_related const& open, dsl::diagnostics& diags) {
  switch (f) {
    case job_format::nemo: return dsl::config::read_shell(sources, file, open, diags);
    case job_format::torchtitan: return dsl::config::read_toml(sources, file, diags);
    case job_format::megatron: return dsl::config::read_arguments(sources, file, open, diags);
    case job_format::deepspeed:
      return dsl::config::looks_like_json(sources.file(file).text()) ? dsl::config::read_json(sources, file, diags)
                                                                     : dsl::config::read_arguments(sources, file, open, diags);
  }
  return std::nullopt;
}

// The launcher's options before the script (`torchrun --nproc_per_node 8
// --nnodes 2`, `deepspeed --num_nodes 2`): the processes it starts are
// checked against the cluster, the rest reported unread.
void read_launcher(dsl::config::document const& doc, context const& ctx, std::string_view called,
                   dsl::diagnostics& diags) {
  for (auto const& e : doc.launcher) {
    bool const per_node = e.key == "--nproc_per_node" || e.key == "--nproc-per-node" || e.key == "--num_gpus";
    bool const nodes = e.key == "--nnodes" || e.key == "--num_nodes";
    if (!per_node && !nodes) {
      diags.warning(e.key_where, fmt::format("the launcher's '{}' is not read: the cluster is the .dtp file's",
                                             e.key));
      continue;
    }
    if (!ctx.prior || !e.val || e.val->unexpanded || e.val->k != dsl::config::value::kind::string ||
        e.val->text.empty() || e.val->text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    // Digits alone; past 2^63 they cannot be the cluster's count either.
    auto const& text = e.val->text;
    std::int64_t n = 0;
    bool const read = std::from_chars(text.data(), text.data() + text.size(), n).ec == std::errc{};
    auto const& c = ctx.prior->cluster;
    auto const want = per_node ? c.gpus_per_node : c.nodes;
    if (!read || n != want)
      diags.warning(e.val->where, fmt::format("the launcher starts {} {}; cluster '{}' has {}: the {} job is costed on "
                                              "the cluster",
                                              text,
                                              per_node ? (n == 1 ? "process per node" : "processes per node")
                                                       : (n == 1 ? "node" : "nodes"),
                                              c.name, want, called));
  }
}

// The Python script an argument list starts, by its file name: dtplan
// costs the decoder-only transformer of Megatron-LM's pretrain_gpt.py (and
// Megatron-DeepSpeed's). Megatron-LM's other pretrain_*.py (core_v0.13.0's
// top directory) train encoders, encoder-decoders, Mamba hybrids, retrieval,
// vision and multimodal models, and its text-generation servers run
// inference: an error; any other name a warning that the arguments are
// read as pretrain_gpt.py's. False after an error.
bool read_script(dsl::config::document const& doc, std::string_view called, dsl::diagnostics& diags) {
  static constexpr std::array<std::string_view, 9> others{
      "pretrain_bert.py",           "pretrain_t5.py",           "pretrain_mamba.py",
      "pretrain_retro.py",          "pretrain_ict.py",          "pretrain_vision_classify.py",
      "pretrain_vision_dino.py",    "pretrain_vision_inpaint.py", "pretrain_vlm.py"};
  for (auto const& w : doc.words) {
    if (w.unexpanded || !w.text.ends_with(".py")) continue;
    auto const slash = w.text.rfind('/');
    auto const base = std::string_view(w.text).substr(slash == std::string::npos ? 0 : slash + 1);
    if (base == "pretrain_gpt.py") return true;
    // Megatron-LM's inference examples start tools/run_text_generation_server.py
    // and the like (core_v0.13.0 examples/inference/): no training step.
    if (base.find("text_generation") != std::string_view::npos || base.find("inference") != std::string_view::npos) {
      diags.error(w.where, fmt::format("'{}' runs inference, not training: dtplan plans a training step",
                                       dsl::escaped(base)));
      return false;
    }
    if (std::find(others.begin(), others.end(), base) != others.end()) {
      diags.error(w.where, fmt::format("'{}' trains another kind of model than dtplan costs: dtplan reads the jobs of "
                                       "{}'s pretrain_gpt.py, decoder-only transformers",
                                       dsl::escaped(base), called));
      return false;
    }
    diags.warning(w.where, fmt::format("'{}' is not {}'s pretrain_gpt.py: its arguments are read as that script's, "
                                       "a decoder-only transformer's",
                                       dsl::escaped(base), called));
    return true;
  }
  return true;
}

bool has_block(dsl::ast::file const& f, std::string_view kind) {
  return std::any_of(f.blocks.begin(), f.blocks.end(), [&](dsl::ast::block const& b) { return b.kind.name == kind; });
}

// The file's training block was written for its framework's jobs. Costing a
// job of another framework, what it writes for that framework (its
// behaviours and framework flags: Megatron's DeepEP dispatcher, bf16
// gradient reduction, pipeline split) is left out, with a warning naming
// each key: the job's framework's preset and the job's own flags run it.
// A framework block of the file that derives from the job's framework
// stays the job's framework, with everything the file writes. The file's
// framework is what `--set training.framework=...` makes it, else what it
// writes.
void fit_training_to_job(dsl::ast::block& training, dsl::ast::file const& file,
                         std::vector<dsl::ast::setting>& settings, std::vector<dsl::ast::setting> const& user,
                         dsl::diagnostics& out) {
  // A setting of the training block's framework (by kind or by name), the
  // importer's or the user's.
  auto const set_here = [&](dsl::ast::setting const& s) {
    return s.key.name == "framework" &&
           (s.target.name == "training" || (training.name && s.target.name == training.name->name));
  };
  auto const job_setting = std::find_if(settings.rbegin(), settings.rend(), set_here);
  if (job_setting == settings.rend()) return;
  auto const* job_framework = std::get_if<dsl::ast::identifier>(&job_setting->rhs);
  if (!job_framework) return;
  std::string const& job = job_framework->name;

  auto const written = std::find_if(training.body.begin(), training.body.end(),
                                    [](dsl::ast::assignment const& a) { return a.key.name == "framework"; });
  std::string framework = std::get<std::string>(*find_key(block_kind::training, "framework")->default_value);
  span const at = written != training.body.end() ? written->key.where : training.header;
  auto const by_user = std::find_if(user.rbegin(), user.rend(), set_here);
  dsl::ast::value const* named = by_user != user.rend()        ? &by_user->rhs
                                 : written != training.body.end() ? &written->rhs
                                                                  : nullptr;
  if (named) {
    auto const* id = std::get_if<dsl::ast::identifier>(named);
    if (!id) return;  // lowering reports the value
    framework = id->name;
  }
  // The file's framework and each framework block of the file it derives
  // from (a cycle is lowering's error: the walk stops at a name seen).
  std::vector<std::string> chain{framework};
  for (bool more = true; more;) {
    more = false;
    for (auto const& b : file.blocks)
      if (b.kind.name == "framework" && b.name && b.name->name == chain.back() && b.base &&
          std::find(chain.begin(), chain.end(), b.base->name) == chain.end()) {
        chain.push_back(b.base->name);
        more = true;
        break;
      }
  }
  if (std::find(chain.begin(), chain.end(), job) != chain.end()) {
    std::erase_if(settings, set_here);
    return;
  }
  std::vector<std::string> left_out;
  std::erase_if(training.body, [&](dsl::ast::assignment const& a) {
    auto const* k = find_key(block_kind::training, a.key.name);
    if (!k || !of_a_framework(*k)) return false;
    left_out.push_back(a.key.name);
    return true;
  });
  if (left_out.empty()) return;
  out.warning(at, fmt::format("the training block's keys for framework '{}' are left out of this {} job, which its "
                              "framework's preset and its own settings run: {} (--set training.framework={} "
                              "keeps them)",
                              dsl::escaped(framework), dsl::escaped(job), fmt::join(left_out, ", "), dsl::escaped(job)));
}

}  // namespace

std::optional<program> load_job(dsl::source_manager& sources, std::uint32_t file, job_source const& job,
                                lower_options const& options, dsl::diagnostics& diags) {
  auto tree = dsl::parse(sources, file, diags);
  if (!tree) return std::nullopt;
  auto doc = read_job(job.format, sources, job.file, job.open, diags);
  if (!doc) return std::nullopt;

  // Megatron-DeepSpeed's arguments name the ds_config.json DeepSpeed reads.
  std::optional<dsl::config::document> ds_config;
  bool const arguments = doc->format == dsl::config::document::syntax::arguments;
  if (job.format == job_format::deepspeed && arguments) {
    dsl::config::entry const* named = nullptr;
    for (auto const& e : doc->entries)
      if (e.key == "--deepspeed_config" || e.key == "--deepspeed-config" || e.key == "--deepscale_config") named = &e;
    // A launch script that writes it with a here-document (Megatron-
    // DeepSpeed's examples: `cat <<EOT > $DS_CONFIG`) gives it as it runs.
    auto const same = [](std::string_view a, std::string_view b) {
      while (a.starts_with("./")) a.remove_prefix(2);
      while (b.starts_with("./")) b.remove_prefix(2);
      return a == b;
    };
    auto const heredoc = !named || !named->val ? doc->written.end()
                                               : std::find_if(doc->written.begin(), doc->written.end(),
                                                              [&](auto const& w) { return same(w.path, named->val->text); });
    if (heredoc != doc->written.end()) {
      auto const at = sources.file(heredoc->where.file).position_of(heredoc->where.begin);
      auto const id = sources.add(fmt::format("{}:{} (here-document)", sources.file(heredoc->where.file).name(), at.line),
                                  heredoc->text);
      ds_config = dsl::config::read_json(sources, id, diags);
      if (!ds_config) return std::nullopt;
    } else if (named && named->val && !named->val->unexpanded) {
      if (!job.open) {
        diags.error(named->val->where, "cannot read the ds_config.json this job names");
        return std::nullopt;
      }
      auto opened = job.open(named->val->text);
      if (auto const* why = std::get_if<std::string>(&opened)) {
        diags.error(named->val->where, *why);
        return std::nullopt;
      }
      ds_config = dsl::config::read_json(sources, std::get<std::uint32_t>(opened), diags);
      if (!ds_config) return std::nullopt;
    }
  }

  context ctx;
  ctx.file_has_model = has_block(*tree, "model");
  ctx.file_has_training = has_block(*tree, "training");
  auto const strategy_name = std::string(name(job.format));
  // How warnings name the job's framework.
  auto const called = job.format == job_format::torchtitan ? "torchtitan"
                      : job.format == job_format::megatron ? "Megatron-LM"
                      : job.format == job_format::nemo     ? "NeMo"
                      : arguments                          ? "Megatron-DeepSpeed"
                                                           : "DeepSpeed";

  if (arguments && (job.format == job_format::megatron || job.format == job_format::deepspeed) &&
      !read_script(*doc, called, diags))
    return std::nullopt;

  auto pass = [&](program const* prior, dsl::diagnostics& out) -> std::optional<program> {
    translation t;
    ctx.prior = prior;
    job_reader main(*doc, called, t);
    std::optional<job_reader> extra;
    if (ds_config) extra.emplace(*ds_config, "DeepSpeed", t);
    switch (job.format) {
      case job_format::torchtitan: import_torchtitan(main, ctx); break;
      case job_format::megatron: import_megatron(main, ctx); break;
      case job_format::nemo: import_nemo(main, ctx); break;
      case job_format::deepspeed:
        if (!arguments)
          import_deepspeed(nullptr, &main, ctx);
        else
          import_deepspeed(&main, extra ? &*extra : nullptr, ctx);
        break;
    }
    // After an error the importer stops reading: what it left is not unread.
    if (!t.diags.has_errors()) {
      main.report_unread();
      if (extra) extra->report_unread();
      read_launcher(*doc, ctx, called, t.diags);
    }
    bool const failed = t.diags.has_errors();
    for (auto const& d : t.diags.list()) out.add(d);
    if (failed) return std::nullopt;

    dsl::ast::file f;
    for (auto const& b : tree->blocks) {
      if (b.kind.name == "strategy") continue;
      f.blocks.push_back(b);
      if (b.kind.name == "training") fit_training_to_job(f.blocks.back(), *tree, t.settings, options.settings, out);
    }
    for (auto& b : t.blocks) f.blocks.push_back(std::move(b));
    span const origin{job.file, 0, 0};
    if (!ctx.file_has_training) {
      // The job's batch goes in a training block of its own.
      dsl::ast::block b;
      b.where = b.header = origin;
      b.kind = {origin, "training"};
      f.blocks.push_back(std::move(b));
    }
    dsl::ast::block s;
    s.where = s.header = origin;
    s.kind = {origin, "strategy"};
    s.name = dsl::ast::identifier{origin, strategy_name};
    s.body = std::move(t.strategy);
    f.blocks.push_back(std::move(s));
    lower_options lo;
    lo.settings = std::move(t.settings);
    lo.settings.insert(lo.settings.end(), options.settings.begin(), options.settings.end());
    return lower(f, sources, lo, out);
  };

  dsl::diagnostics first;
  auto p = pass(nullptr, first);
  if (!p) {
    for (auto const& d : first.list()) diags.add(d);
    return std::nullopt;
  }
  return pass(&*p, diags);
}

}  // namespace dtplan::planner
