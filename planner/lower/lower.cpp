#include "planner/lower/lower.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>
#include <variant>

#include "dsl/parse.hpp"
#include "planner/lower/catalog.hpp"
#include "planner/lower/lower_values.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner {

namespace {

namespace ast = dsl::ast;
using lowering::as_scalar;
using lowering::converter;
using lowering::dimension;
using lowering::span_of;

enum class kind { model, gpu, cluster, training, strategy };
constexpr std::size_t kind_count = 5;

std::vector<std::string> const& kind_names() {
  static std::vector<std::string> const names{"model", "gpu", "cluster", "training", "strategy"};
  return names;
}

std::string const& kind_name(kind k) { return kind_names()[static_cast<std::size_t>(k)]; }

std::optional<kind> kind_of(std::string_view word) {
  auto const& names = kind_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == word) return static_cast<kind>(i);
  return std::nullopt;
}

std::vector<std::string> const& keys_of(kind k) {
  static std::array<std::vector<std::string>, kind_count> const keys{{
      {"description", "layers", "hidden", "heads", "kv_heads", "ffn", "mlp", "vocab", "seq_len",
       "tied_embeddings", "attention", "precision", "optimizer", "experts", "experts_per_token",
       "dropout"},
      {"description", "memory", "peak_flops", "peak_flops_fp8", "peak_flops_fp32", "hbm_bandwidth",
       "intra_node", "matmul_efficiency", "reserved", "intra_latency", "inter_latency",
       "comm_efficiency", "hbm_efficiency",
       // time-model figures (planner/model/compute.hpp, calibrated by bench/accuracy)
       "sm_count", "attention_efficiency", "kernel_latency", "overlap_slowdown", "step_overhead",
       "dispatch_latency"},
      {"description", "nodes", "gpus_per_node", "gpu", "intra_node", "inter_node", "intra_latency",
       "inter_latency", "comm_efficiency"},
      {"description", "global_batch", "base_lr", "base_batch", "grad_precision", "overlap_grad_sync", "grad_reduce",
       "cross_entropy"},
      {"description", "dp", "tp", "pp", "cp", "ep", "zero", "shard", "checkpoint", "micro_batch",
       "sequence_parallel", "virtual_stages", "order"},
  }};
  return keys[static_cast<std::size_t>(k)];
}

// Names other tools use for our keys, which no edit distance finds.
std::string key_alias(kind k, std::string_view key) {
  struct alias {
    kind k;
    std::string_view written, meant;
  };
  static constexpr alias aliases[] = {
      {kind::strategy, "tensor_parallel", "tp"},   {kind::strategy, "pipeline_parallel", "pp"},
      {kind::strategy, "data_parallel", "dp"},     {kind::strategy, "context_parallel", "cp"},
      {kind::strategy, "expert_parallel", "ep"},   {kind::strategy, "zero_stage", "zero"},
      {kind::strategy, "recompute", "checkpoint"}, {kind::strategy, "activation_checkpointing", "checkpoint"},
      {kind::strategy, "fsdp", "zero"},            {kind::strategy, "interleave", "virtual_stages"},
      {kind::model, "num_layers", "layers"},       {kind::model, "hidden_size", "hidden"},
      {kind::model, "num_attention_heads", "heads"}, {kind::model, "num_key_value_heads", "kv_heads"},
      {kind::model, "intermediate_size", "ffn"},   {kind::model, "vocab_size", "vocab"},
      {kind::model, "max_position_embeddings", "seq_len"}, {kind::model, "seq_length", "seq_len"},
      {kind::model, "dtype", "precision"},         {kind::gpu, "hbm", "hbm_bandwidth"},
      {kind::gpu, "nvlink", "intra_node"},         {kind::gpu, "flops", "peak_flops"},
      {kind::cluster, "gpus", "gpus_per_node"},    {kind::cluster, "network", "inter_node"},
      {kind::cluster, "nvlink", "intra_node"},     {kind::training, "batch_size", "global_batch"},
      {kind::training, "lr", "base_lr"},
      {kind::training, "accumulate_allreduce_grads_in_fp32", "grad_precision"},
      {kind::training, "reduce_dtype", "grad_precision"},
      {kind::training, "overlap_grad_reduce", "overlap_grad_sync"},
      {kind::training, "reduce_scatter", "grad_reduce"},
  };
  for (auto const& a : aliases)
    if (a.k == k && a.written == key) return std::string(a.meant);
  return {};
}

bool is_key(kind k, std::string_view key) {
  auto const& keys = keys_of(k);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<std::string> const precision_names{"bf16", "fp16", "fp32", "fp8"};
std::vector<std::string> const mlp_names{"gelu", "swiglu"};
std::vector<std::string> const attention_names{"flash", "standard"};
std::vector<std::string> const optimizer_names{"adam", "adamw", "sgd", "sgd_momentum"};
std::vector<std::string> const checkpoint_names{"none", "selective", "full", "ops"};
std::vector<std::string> const cross_entropy_names{"fused", "unfused"};
// Gradients are kept and reduced in 16 or 32 bits: there is no fp8 gradient.
std::vector<std::string> const grad_precision_names{"bf16", "fp16", "fp32"};
std::vector<std::string> const grad_reduce_names{"reduce_scatter", "all_reduce"};

/// A cluster before its gpu name is resolved (the gpu may be defined after it).
struct cluster_draft {
  cluster c;
  std::string gpu_name;
  span gpu_where;
};

struct entry {
  ast::block const* b = nullptr;
  kind k = kind::model;
  bool builtin = false;
  bool registered = false;  ///< reachable by name (not a duplicate)
  std::string name;
  enum class state { todo, busy, done } st = state::todo;
  bool ok = true;
  bool in_cycle = false;
  std::optional<std::size_t> base;
  std::variant<std::monostate, model, gpu, cluster_draft, training, strategy_spec> result;
};

/// The text a block is called by in messages: "model 'x'", "the 'training' block".
std::string describe(entry const& e) {
  if (e.k == kind::training) return "the 'training' block";
  if (e.name.empty()) return fmt::format("this '{}' block", kind_name(e.k));
  return fmt::format("{} '{}'", kind_name(e.k), e.name);
}

class lowerer {
 public:
  lowerer(dsl::source_manager& sources, dsl::diagnostics& diags)
      : sources_(sources), diags_(diags), conv_(sources, diags) {}

  void add(ast::block b, bool builtin);
  void apply_settings(std::vector<ast::block>& user, std::vector<ast::block>& builtin,
                      std::vector<ast::setting> const& settings);

  std::optional<program> run(std::uint32_t file);

  /// Lowers every built-in block (for catalog_gpu / catalog_model).
  void lower_all() {
    for (std::size_t i = 0; i < entries_.size(); ++i) lower_entry(i);
  }
  std::optional<gpu> finish_gpu(std::size_t i);
  std::optional<model> finish_model(std::size_t i);
  std::optional<std::size_t> builtin_named(kind k, std::string const& name) const {
    auto const& names = builtin_names_[static_cast<std::size_t>(k)];
    auto it = names.find(name);
    if (it == names.end()) return std::nullopt;
    return it->second;
  }

 private:
  bool lower_entry(std::size_t i);
  std::optional<std::size_t> find_base(std::size_t i);
  void report_cycle(std::size_t start);
  bool check_keys(entry const& e, std::vector<ast::assignment const*>& accepted);

  bool apply(model& m, ast::assignment const& a);
  bool apply(gpu& g, ast::assignment const& a);
  bool apply(cluster_draft& c, ast::assignment const& a);
  bool apply(training& t, ast::assignment const& a);
  bool apply(strategy_spec& s, ast::assignment const& a);

  std::optional<cluster> finish_cluster(std::size_t i);
  std::optional<std::size_t> pick_root(kind k, std::uint32_t file);
  std::optional<std::size_t> lookup(kind k, std::string const& name, bool builtin_only) const;
  void missing(entry const& e, std::string_view key);
  /// The span of key `a`, or of `b` when only `b` was written in the user's file.
  span user_key(key_spans const& keys, std::string_view a, std::string_view b, span fallback) const;

  dsl::source_manager& sources_;
  dsl::diagnostics& diags_;
  converter conv_;
  std::deque<ast::block> blocks_;
  std::vector<entry> entries_;
  std::vector<std::size_t> stack_;
  std::size_t unknown_kinds_ = 0;
  std::array<std::map<std::string, std::size_t, std::less<>>, kind_count> user_names_, builtin_names_;
};

void lowerer::add(ast::block b, bool builtin) {
  auto k = kind_of(b.kind.name);
  if (!k) {
    ++unknown_kinds_;
    auto near = lowering::suggest(b.kind.name, kind_names());
    if (near.empty())
      diags_.error(b.kind.where, fmt::format("unknown block kind '{}'; expected {}", b.kind.name,
                                             lowering::quoted_alternatives(kind_names())));
    else
      diags_.error(b.kind.where,
                   fmt::format("unknown block kind '{}'; did you mean '{}'?", b.kind.name, near));
    return;
  }
  blocks_.push_back(std::move(b));
  ast::block const& blk = blocks_.back();
  entry e;
  e.b = &blk;
  e.k = *k;
  e.builtin = builtin;
  if (blk.name) e.name = blk.name->name;
  bool needs_name = *k == kind::model || *k == kind::gpu || *k == kind::cluster;
  if (needs_name && !blk.name) {
    diags_.error(blk.kind.where, fmt::format("a '{0}' block needs a name, as in '{0} NAME {{ ... }}'",
                                             blk.kind.name));
    e.ok = false;
  }
  if (*k == kind::training && blk.base) {
    diags_.error(blk.base->where, "a 'training' block cannot have a base");
    e.ok = false;
  }
  if (!e.name.empty() && *k != kind::training) {
    auto& names = (builtin ? builtin_names_ : user_names_)[static_cast<std::size_t>(*k)];
    auto it = names.find(e.name);
    if (it != names.end()) {
      auto& d = diags_.error(blk.name->where, fmt::format("duplicate {} '{}'", blk.kind.name, e.name));
      d.notes.push_back({entries_[it->second].b->name->where,
                         fmt::format("'{}' is first defined here", e.name)});
      e.ok = false;
    } else {
      names.emplace(e.name, entries_.size());
      e.registered = true;
    }
  }
  entries_.push_back(std::move(e));
}

void lowerer::apply_settings(std::vector<ast::block>& user, std::vector<ast::block>& builtin,
                             std::vector<ast::setting> const& settings) {
  for (auto const& s : settings) {
    std::vector<ast::block*> targets;
    auto target_kind = kind_of(s.target.name);
    auto collect = [&](std::vector<ast::block>& blocks) {
      for (auto& b : blocks) {
        bool hit = target_kind ? b.kind.name == s.target.name
                               : (b.name && b.name->name == s.target.name);
        if (hit && kind_of(b.kind.name)) targets.push_back(&b);
      }
    };
    collect(user);
    // A built-in block is changed only when the file does not define one:
    // `--set H100_SXM.reserved=6GiB`, or `--set gpu.reserved=6GiB` on a file
    // that names its gpu from the catalog.
    if (targets.empty()) collect(builtin);
    if (targets.empty()) {
      if (target_kind) {
        diags_.error(s.target.where, fmt::format("no '{}' block for this setting to change",
                                                 s.target.name));
      } else {
        std::vector<std::string> candidates = kind_names();
        for (auto const& b : user)
          if (b.name) candidates.push_back(b.name->name);
        auto near = lowering::suggest(s.target.name, candidates);
        diags_.error(s.target.where,
                     near.empty()
                         ? fmt::format("unknown block '{}'", s.target.name)
                         : fmt::format("unknown block '{}'; did you mean '{}'?", s.target.name, near));
      }
      continue;
    }
    auto k = *kind_of(targets.front()->kind.name);
    if (!is_key(k, s.key.name)) {
      auto near = lowering::suggest(s.key.name, keys_of(k));
      diags_.error(s.key.where, near.empty()
                                    ? fmt::format("unknown key '{}' for a '{}' block", s.key.name,
                                                  kind_name(k))
                                    : fmt::format("unknown key '{}' for a '{}' block; did you mean '{}'?",
                                                  s.key.name, kind_name(k), near));
      continue;
    }
    for (auto* b : targets) {
      ast::assignment replacement{s.where, s.key, s.rhs};
      auto it = std::find_if(b->body.begin(), b->body.end(),
                             [&](ast::assignment const& a) { return a.key.name == s.key.name; });
      if (it != b->body.end())
        *it = replacement;
      else
        b->body.push_back(replacement);
    }
  }
}

std::optional<std::size_t> lowerer::lookup(kind k, std::string const& name, bool builtin_only) const {
  auto const slot = static_cast<std::size_t>(k);
  if (!builtin_only) {
    auto it = user_names_[slot].find(name);
    if (it != user_names_[slot].end()) return it->second;
  }
  auto it = builtin_names_[slot].find(name);
  if (it != builtin_names_[slot].end()) return it->second;
  return std::nullopt;
}

std::optional<std::size_t> lowerer::find_base(std::size_t i) {
  auto const& e = entries_[i];
  auto const& base = *e.b->base;
  auto const slot = static_cast<std::size_t>(e.k);
  if (!e.builtin) {
    auto it = user_names_[slot].find(base.name);
    // `model llama2_7b : llama2_7b { ... }` changes the preset of that name.
    if (it != user_names_[slot].end() && (it->second != i || !builtin_names_[slot].count(base.name)))
      return it->second;
  }
  auto it = builtin_names_[slot].find(base.name);
  if (it != builtin_names_[slot].end()) return it->second;
  // The file's names first, then the catalog's in its own order (H100_SXM
  // before H100_PCIE), so a prefix finds the usual choice.
  std::vector<std::string> candidates;
  for (bool builtin : {false, true})
    for (auto const& other : entries_)
      if (other.k == e.k && other.registered && other.builtin == builtin && (builtin || !e.builtin))
        candidates.push_back(other.name);
  auto near = lowering::suggest(base.name, candidates);
  diags_.error(base.where, near.empty() ? fmt::format("unknown base {} '{}'", kind_name(e.k), base.name)
                                        : fmt::format("unknown base {} '{}'; did you mean '{}'?",
                                                      kind_name(e.k), base.name, near));
  return std::nullopt;
}

void lowerer::report_cycle(std::size_t start) {
  auto pos = std::find(stack_.begin(), stack_.end(), start);
  std::vector<std::size_t> cycle(pos, stack_.end());
  std::string chain;
  for (auto i : cycle) chain += fmt::format("'{}' -> ", entries_[i].name);
  chain += fmt::format("'{}'", entries_[start].name);
  auto& d = diags_.error(entries_[cycle.front()].b->base->where, fmt::format("base cycle: {}", chain));
  for (std::size_t n = 1; n < cycle.size(); ++n) {
    auto const& e = entries_[cycle[n]];
    d.notes.push_back({e.b->base->where, fmt::format("'{}' is based on '{}' here", e.name,
                                                     e.b->base->name)});
  }
  for (auto i : cycle) entries_[i].in_cycle = true;
}

bool lowerer::check_keys(entry const& e, std::vector<ast::assignment const*>& accepted) {
  bool ok = true;
  std::map<std::string, ast::assignment const*, std::less<>> seen;
  for (auto const& a : e.b->body) {
    if (!is_key(e.k, a.key.name)) {
      auto near = key_alias(e.k, a.key.name);
      if (near.empty()) near = lowering::suggest(a.key.name, keys_of(e.k));
      diags_.error(a.key.where, near.empty()
                                    ? fmt::format("unknown key '{}' in {}", a.key.name, describe(e))
                                    : fmt::format("unknown key '{}' in {}; did you mean '{}'?",
                                                  a.key.name, describe(e), near));
      ok = false;
      continue;
    }
    if (auto it = seen.find(a.key.name); it != seen.end()) {
      auto& d = diags_.error(a.key.where, fmt::format("duplicate key '{}' in {}", a.key.name, describe(e)));
      d.notes.push_back({it->second->key.where, fmt::format("'{}' is first set here", a.key.name)});
      ok = false;
      continue;
    }
    seen.emplace(a.key.name, &a);
    if (e.k != kind::strategy && !as_scalar(a.rhs)) {
      diags_.error(span_of(a.rhs), "sets, ranges and 'auto' are only allowed in a 'strategy' block");
      ok = false;
      continue;
    }
    accepted.push_back(&a);
  }
  return ok;
}

bool lowerer::lower_entry(std::size_t i) {
  if (entries_[i].st == entry::state::done) return entries_[i].ok;
  entries_[i].st = entry::state::busy;
  stack_.push_back(i);
  bool ok = entries_[i].ok;
  decltype(entry::result) start;
  switch (entries_[i].k) {
    case kind::model: start = model{}; break;
    case kind::gpu: {
      gpu g;
      g.intra_latency = seconds(5e-6);
      g.inter_latency = seconds(10e-6);
      g.reserved = bytes(2.0 * 1024 * 1024 * 1024);
      start = g;
      break;
    }
    case kind::cluster: start = cluster_draft{}; break;
    case kind::training: start = training{}; break;
    case kind::strategy: start = strategy_spec{}; break;
  }
  if (entries_[i].b->base && entries_[i].k != kind::training) {
    auto base = find_base(i);
    entries_[i].base = base;
    if (!base) {
      ok = false;
    } else if (entries_[*base].st == entry::state::busy) {
      report_cycle(*base);
      ok = false;
    } else if (!lower_entry(*base)) {
      ok = false;
    } else {
      start = entries_[*base].result;
      // Keys written in the base keep pointing at the base's text.
    }
  }
  std::vector<ast::assignment const*> accepted;
  if (!check_keys(entries_[i], accepted)) ok = false;
  std::visit(
      [&](auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (!std::is_same_v<T, std::monostate>)
          for (auto const* a : accepted)
            if (!apply(value, *a)) ok = false;
      },
      start);
  auto& e = entries_[i];
  e.result = std::move(start);
  stack_.pop_back();
  e.st = entry::state::done;
  e.ok = ok && !e.in_cycle;
  return e.ok;
}

bool lowerer::apply(model& m, ast::assignment const& a) {
  auto v = *as_scalar(a.rhs);
  auto const& key = a.key.name;
  static std::map<std::string, std::pair<std::int64_t model::*, char const*>, std::less<>> const counts{
      {"layers", {&model::layers, "of layers"}},
      {"hidden", {&model::hidden, "for 'hidden'"}},
      {"heads", {&model::heads, "of heads"}},
      {"kv_heads", {&model::kv_heads, "of key/value heads"}},
      {"ffn", {&model::ffn, "for 'ffn'"}},
      {"vocab", {&model::vocab, "for 'vocab'"}},
      {"seq_len", {&model::seq_len, "of tokens for 'seq_len'"}},
      {"experts", {&model::experts, "of experts"}},
      {"experts_per_token", {&model::experts_per_token, "of experts per token"}},
  };
  bool ok = true;
  if (auto it = counts.find(key); it != counts.end()) {
    auto n = conv_.count(v, key, it->second.second, 1);
    if (n) m.*(it->second.first) = *n;
    ok = n.has_value();
  } else if (key == "description") {
    auto s = conv_.text(v, key);
    if (s) m.description = *s;
    ok = s.has_value();
  } else if (key == "mlp") {
    auto c = conv_.choice(v, key, mlp_names);
    if (c) m.mlp = static_cast<mlp_kind>(*c);
    ok = c.has_value();
  } else if (key == "attention") {
    auto c = conv_.choice(v, key, attention_names);
    if (c) m.attention = static_cast<attention_kind>(*c);
    ok = c.has_value();
  } else if (key == "precision") {
    auto c = conv_.choice(v, key, precision_names);
    if (c) m.prec = static_cast<precision>(*c);
    ok = c.has_value();
  } else if (key == "optimizer") {
    auto c = conv_.choice(v, key, optimizer_names);
    if (c) m.optimizer = static_cast<optimizer_kind>(*c);
    ok = c.has_value();
  } else if (key == "tied_embeddings") {
    auto b = conv_.boolean(v, key);
    if (b) m.tied_embeddings = *b;
    ok = b.has_value();
  } else if (key == "dropout") {
    auto b = conv_.boolean(v, key);
    if (b) m.dropout = *b;
    ok = b.has_value();
  }
  if (ok) m.keys[key] = a.key.where;
  return ok;
}

namespace {
// Rates, sizes and bandwidths of zero would divide by zero downstream.
bool positive(converter& conv, ast::scalar const& v, std::string_view key, double x) {
  if (x > 0) return true;
  conv.diags().error(span_of(v), fmt::format("'{}' must be above zero, got {}", key, conv.echo(v)));
  return false;
}
}  // namespace

bool lowerer::apply(gpu& g, ast::assignment const& a) {
  auto v = *as_scalar(a.rhs);
  auto const& key = a.key.name;
  bool ok = false;
  auto measure = [&](dimension d, bool strictly_positive) -> std::optional<double> {
    auto x = conv_.quantity(v, key, d);
    if (x && strictly_positive && !positive(conv_, v, key, *x)) return std::nullopt;
    return x;
  };
  if (key == "description") {
    auto s = conv_.text(v, key);
    ok = s.has_value();
  } else if (key == "memory" || key == "reserved") {
    auto x = measure(dimension::bytes, key == "memory");
    if (x) (key == "memory" ? g.memory : g.reserved) = bytes(*x);
    ok = x.has_value();
  } else if (key == "peak_flops" || key == "peak_flops_fp8" || key == "peak_flops_fp32") {
    auto x = measure(dimension::compute_rate, true);
    if (x) (key == "peak_flops" ? g.peak_flops : key == "peak_flops_fp8" ? g.peak_flops_fp8 : g.peak_flops_fp32) = flop_rate(*x);
    ok = x.has_value();
  } else if (key == "hbm_bandwidth" || key == "intra_node") {
    auto x = measure(dimension::bandwidth, true);
    if (x) (key == "hbm_bandwidth" ? g.hbm_bandwidth : g.intra_node) = bandwidth(*x);
    ok = x.has_value();
  } else if (key == "intra_latency" || key == "inter_latency") {
    auto x = measure(dimension::time, false);
    if (x) (key == "intra_latency" ? g.intra_latency : g.inter_latency) = seconds(*x);
    ok = x.has_value();
  } else if (key == "matmul_efficiency" || key == "comm_efficiency" || key == "hbm_efficiency") {
    auto x = measure(dimension::fraction, true);
    if (x) (key == "matmul_efficiency" ? g.matmul_efficiency : key == "comm_efficiency" ? g.comm_efficiency : g.hbm_efficiency) = *x;
    ok = x.has_value();
  } else if (key == "attention_efficiency" || key == "overlap_slowdown") {
    auto x = measure(dimension::fraction, key == "attention_efficiency");
    if (x) (key == "attention_efficiency" ? g.attention_efficiency : g.overlap_slowdown) = *x;
    ok = x.has_value();
  } else if (key == "kernel_latency" || key == "step_overhead" || key == "dispatch_latency") {
    auto x = measure(dimension::time, false);
    if (x) (key == "kernel_latency" ? g.kernel_latency : key == "step_overhead" ? g.step_overhead : g.dispatch_latency) = seconds(*x);
    ok = x.has_value();
  } else if (key == "sm_count") {
    auto n = conv_.count(v, key, "of streaming multiprocessors", 1);
    if (n) g.sm_count = *n;
    ok = n.has_value();
  }
  if (ok) g.keys[key] = a.key.where;
  return ok;
}


bool lowerer::apply(cluster_draft& d, ast::assignment const& a) {
  auto v = *as_scalar(a.rhs);
  auto const& key = a.key.name;
  auto& c = d.c;
  bool ok = false;
  if (key == "description") {
    ok = conv_.text(v, key).has_value();
  } else if (key == "nodes" || key == "gpus_per_node") {
    auto n = conv_.count(v, key, key == "nodes" ? "of nodes" : "of GPUs per node", 1);
    if (n) (key == "nodes" ? c.nodes : c.gpus_per_node) = *n;
    ok = n.has_value();
  } else if (key == "gpu") {
    if (auto const* id = std::get_if<ast::identifier>(&v)) {
      d.gpu_name = id->name;
      d.gpu_where = id->where;
      ok = true;
    } else {
      diags_.error(span_of(v), fmt::format("expected a gpu name such as 'H100_SXM' for 'gpu', got {}",
                                           conv_.echo(v)));
    }
  } else if (key == "intra_node" || key == "inter_node") {
    auto x = conv_.quantity(v, key, dimension::bandwidth);
    if (x && !positive(conv_, v, key, *x)) x.reset();
    if (x) (key == "intra_node" ? c.intra_node : c.inter_node) = bandwidth(*x);
    ok = x.has_value();
  } else if (key == "intra_latency" || key == "inter_latency") {
    auto x = conv_.quantity(v, key, dimension::time);
    if (x) (key == "intra_latency" ? c.intra_latency : c.inter_latency) = seconds(*x);
    ok = x.has_value();
  } else if (key == "comm_efficiency") {
    auto x = conv_.quantity(v, key, dimension::fraction);
    if (x && !positive(conv_, v, key, *x)) x.reset();
    if (x) c.comm_efficiency = *x;
    ok = x.has_value();
  }
  if (ok) c.keys[key] = a.key.where;
  return ok;
}

bool lowerer::apply(training& t, ast::assignment const& a) {
  auto v = *as_scalar(a.rhs);
  auto const& key = a.key.name;
  bool ok = false;
  if (key == "description") {
    ok = conv_.text(v, key).has_value();
  } else if (key == "global_batch" || key == "base_batch") {
    auto n = conv_.count(v, key, fmt::format("of sequences for '{}'", key), 1);
    if (n) {
      if (key == "global_batch")
        t.global_batch = *n;
      else
        t.base_batch = *n;
    }
    ok = n.has_value();
  } else if (key == "base_lr") {
    auto x = conv_.plain_real(v, key);
    if (x && !positive(conv_, v, key, *x)) x.reset();
    if (x) t.base_lr = *x;
    ok = x.has_value();
  } else if (key == "cross_entropy") {
    auto c = conv_.choice(v, key, cross_entropy_names);
    if (c) t.cross_entropy = static_cast<cross_entropy_kind>(*c);
    ok = c.has_value();
  } else if (key == "grad_precision") {
    auto c = conv_.choice(v, key, grad_precision_names);
    if (c) t.grad_precision = static_cast<precision>(*c);
    ok = c.has_value();
  } else if (key == "grad_reduce") {
    auto c = conv_.choice(v, key, grad_reduce_names);
    if (c) t.grad_reduce_scatter = *c == 0;
    ok = c.has_value();
  } else if (key == "overlap_grad_sync") {
    auto b = conv_.boolean(v, key);
    if (b) t.overlap_grad_sync = *b;
    ok = b.has_value();
  }
  if (ok) t.keys[key] = a.key.where;
  return ok;
}

namespace {

std::optional<rank_order> parse_order(std::string const& text) {
  rank_order order{};
  std::size_t n = 0;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto dash = text.find('-', start);
    auto part = text.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    if (n == 4 || !seen.insert(part).second) return std::nullopt;
    if (part == "tp") order[n++] = axis::tp;
    else if (part == "cp") order[n++] = axis::cp;
    else if (part == "dp") order[n++] = axis::dp;
    else if (part == "pp") order[n++] = axis::pp;
    else return std::nullopt;
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (n != 4) return std::nullopt;
  return order;
}

}  // namespace

template <class T, class Convert>
bool choose(converter& conv, key_choice<T>& out, ast::assignment const& a, Convert convert,
            std::optional<std::pair<std::int64_t, std::int64_t>> range_bounds,
            std::string_view takes) {
  key_choice<T> c;
  c.key = a.key.where;
  c.value = span_of(a.rhs);
  auto const& key = a.key.name;
  bool ok = true;
  if (std::holds_alternative<ast::auto_value>(a.rhs)) {
    c.f = key_choice<T>::form::any;
  } else if (auto const* s = std::get_if<ast::set>(&a.rhs)) {
    c.f = key_choice<T>::form::set;
    if (s->items.empty()) {
      conv.diags().error(s->where, fmt::format("an empty set leaves no value for '{}'", key));
      ok = false;
    }
    for (auto const& item : s->items) {
      if (auto const* id = std::get_if<ast::identifier>(&item); id && id->name == "auto") {
        conv.diags().error(id->where, fmt::format("'auto' already means every value: write '{} = auto' "
                                                  "without a set",
                                                  key));
        ok = false;
        continue;
      }
      auto x = convert(item);
      if (!x) {
        ok = false;
        continue;
      }
      if (std::find(c.values.begin(), c.values.end(), *x) != c.values.end()) {
        conv.diags().error(span_of(item), fmt::format("{} appears twice in the set", conv.echo(item)));
        ok = false;
        continue;
      }
      c.values.push_back(*x);
    }
  } else if (auto const* r = std::get_if<ast::range>(&a.rhs)) {
    c.f = key_choice<T>::form::range;
    if (!range_bounds) {
      conv.diags().error(r->where, fmt::format("a range is only allowed for whole-number keys; '{}' takes {}",
                                               key, takes));
      return false;
    }
    auto what = fmt::format("for '{}'", key);
    auto low = conv.count(ast::scalar{r->low}, key, what, range_bounds->first, range_bounds->second);
    auto high = conv.count(ast::scalar{r->high}, key, what, range_bounds->first, range_bounds->second);
    if (!low || !high) return false;
    if (*low > *high) {
      conv.diags().error(r->where, fmt::format("range {}..{} is empty: its first bound is above its last",
                                               r->low.text, r->high.text));
      return false;
    }
    c.low = *low;
    c.high = *high;
  } else {
    c.f = key_choice<T>::form::single;
    auto x = convert(*as_scalar(a.rhs));
    if (!x) return false;
    c.values.push_back(*x);
  }
  if (ok) out = std::move(c);
  return ok;
}

bool lowerer::apply(strategy_spec& s, ast::assignment const& a) {
  auto const& key = a.key.name;
  if (key == "description") {
    auto v = as_scalar(a.rhs);
    if (!v) {
      diags_.error(span_of(a.rhs), "'description' takes one string, not a set, range or 'auto'");
      return false;
    }
    return conv_.text(*v, key).has_value();
  }
  static std::map<std::string, key_choice<std::int64_t> strategy_spec::*, std::less<>> const counts{
      {"dp", &strategy_spec::dp},
      {"tp", &strategy_spec::tp},
      {"pp", &strategy_spec::pp},
      {"cp", &strategy_spec::cp},
      {"ep", &strategy_spec::ep},
      {"micro_batch", &strategy_spec::micro_batch},
      {"virtual_stages", &strategy_spec::virtual_stages},
  };
  if (auto it = counts.find(key); it != counts.end()) {
    auto what = fmt::format("for '{}'", key);
    return choose(
        conv_, s.*(it->second), a, [&](ast::scalar const& v) { return conv_.count(v, key, what, 1); },
        std::pair<std::int64_t, std::int64_t>{1, INT64_MAX}, "");
  }
  if (key == "zero")
    return choose(
        conv_, s.zero, a,
        [&](ast::scalar const& v) { return conv_.count(v, key, "for 'zero' (a ZeRO stage)", 0, 3); },
        std::pair<std::int64_t, std::int64_t>{0, 3}, "");
  if (key == "shard")
    return choose(
        conv_, s.shard, a,
        [&](ast::scalar const& v) -> std::optional<shard_group> {
          if (auto const* id = std::get_if<ast::identifier>(&v)) {
            if (id->name == "all") return shard_group{shard_group::kind::all, 0};
            if (id->name == "node") return shard_group{shard_group::kind::node, 0};
            auto near = lowering::suggest(id->name, {"all", "node"});
            diags_.error(id->where,
                         fmt::format("expected 'all', 'node' or a number of ranks for 'shard', got '{}'{}",
                                     id->name, near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
            return std::nullopt;
          }
          if (auto const* n = std::get_if<ast::number>(&v); n && n->is_integer) {
            auto size = conv_.count(v, key, "of ranks for 'shard'", 1);
            if (!size) return std::nullopt;
            return shard_group{shard_group::kind::size, *size};
          }
          diags_.error(span_of(v), fmt::format("expected 'all', 'node' or a number of ranks for 'shard', got {}",
                                               conv_.echo(v)));
          return std::nullopt;
        },
        std::nullopt, "'all', 'node' or a number of ranks (a set such as {node, 16} searches several)");
  if (key == "checkpoint")
    return choose(
        conv_, s.checkpoint, a,
        [&](ast::scalar const& v) -> std::optional<checkpoint_mode> {
          auto c = conv_.choice(v, key, checkpoint_names);
          if (!c) return std::nullopt;
          return static_cast<checkpoint_mode>(*c);
        },
        std::nullopt, lowering::quoted_alternatives(checkpoint_names));
  if (key == "sequence_parallel")
    return choose(
        conv_, s.sequence_parallel, a, [&](ast::scalar const& v) { return conv_.boolean(v, key); },
        std::nullopt, "'true' or 'false'");
  if (key == "order")
    return choose(
        conv_, s.order, a,
        [&](ast::scalar const& v) -> std::optional<rank_order> {
          std::optional<rank_order> order;
          if (auto const* str = std::get_if<ast::string_literal>(&v)) order = parse_order(str->value);
          if (!order)
            diags_.error(span_of(v),
                         fmt::format("expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for "
                                     "'order', got {}",
                                     conv_.echo(v)));
          return order;
        },
        std::nullopt, "an order such as \"tp-cp-dp-pp\"");
  return false;
}

void lowerer::missing(entry const& e, std::string_view keys) {
  diags_.error(e.b->header, fmt::format("{} is missing required {}", describe(e), keys));
}

namespace {

// "key 'layers'" or "keys 'hidden', 'heads' and 'vocab'"
std::string missing_keys(key_spans const& present, std::vector<std::string> const& required) {
  std::vector<std::string> absent;
  for (auto const& k : required)
    if (!present.count(k)) absent.push_back(k);
  if (absent.empty()) return {};
  return fmt::format("key{} {}", absent.size() > 1 ? "s" : "", lowering::quoted_alternatives(absent));
}

}  // namespace

span lowerer::user_key(key_spans const& keys, std::string_view a, std::string_view b, span fallback) const {
  // Prefer pointing at what the user wrote over the catalog text it derives from.
  auto sa = keys.count(a) ? keys.find(a)->second : fallback;
  auto sb = keys.count(b) ? keys.find(b)->second : fallback;
  bool a_builtin = !sa.valid() || sources_.file(sa.file).builtin();
  bool b_builtin = !sb.valid() || sources_.file(sb.file).builtin();
  if (a_builtin && !b_builtin) return sb;
  if (a_builtin && b_builtin) return fallback;
  return sa;
}

std::optional<model> lowerer::finish_model(std::size_t i) {
  auto const& e = entries_[i];
  if (!e.ok) return std::nullopt;
  auto m = std::get<model>(e.result);
  m.name = e.name;
  m.where = e.b->header;
  auto absent = missing_keys(m.keys, {"layers", "hidden", "heads", "vocab", "seq_len"});
  if (!absent.empty()) {
    // "'a', 'b' or 'c'" reads as a choice; these are all required.
    auto pos = absent.rfind(" or ");
    if (pos != std::string::npos) absent.replace(pos, 4, " and ");
    missing(e, absent);
    return std::nullopt;
  }
  auto at = [&](std::string_view a, std::string_view b) { return user_key(m.keys, a, b, m.where); };
  if (!m.keys.count("kv_heads")) m.kv_heads = m.heads;
  if (!m.keys.count("ffn")) {
    if (m.hidden > INT64_MAX / 4) {
      diags_.error(at("hidden", "hidden"), fmt::format("'hidden' = {} is too large to derive 'ffn' = 4 x hidden",
                                                       m.hidden));
      return std::nullopt;
    }
    m.ffn = 4 * m.hidden;
  }
  bool ok = true;
  if (m.hidden % m.heads != 0) {
    diags_.error(at("heads", "hidden"), fmt::format("'hidden' ({}) must be a multiple of 'heads' ({})",
                                                    m.hidden, m.heads));
    ok = false;
  }
  if (m.heads % m.kv_heads != 0) {
    diags_.error(at("kv_heads", "heads"), fmt::format("'heads' ({}) must be a multiple of 'kv_heads' ({})",
                                                      m.heads, m.kv_heads));
    ok = false;
  }
  if (m.experts_per_token > m.experts) {
    diags_.error(at("experts_per_token", "experts"),
                 fmt::format("'experts_per_token' ({}) cannot exceed 'experts' ({})", m.experts_per_token,
                             m.experts));
    ok = false;
  }
  if (auto limit = ok ? beyond_limits(m, describe(e)) : std::nullopt) {
    diags_.error(m.where, limit->message);
    ok = false;
  }
  if (!ok) return std::nullopt;
  return m;
}

std::optional<gpu> lowerer::finish_gpu(std::size_t i) {
  auto const& e = entries_[i];
  if (!e.ok) return std::nullopt;
  auto g = std::get<gpu>(e.result);
  g.name = e.name;
  g.where = e.b->header;
  auto absent = missing_keys(g.keys, {"memory", "peak_flops", "hbm_bandwidth", "intra_node"});
  if (!absent.empty()) {
    auto pos = absent.rfind(" or ");
    if (pos != std::string::npos) absent.replace(pos, 4, " and ");
    missing(e, absent);
    return std::nullopt;
  }
  if (!g.keys.count("peak_flops_fp8")) g.peak_flops_fp8 = g.peak_flops;
  // tf32 runs at half the 16-bit tensor rate on A100, H100, H200 and B200.
  if (!g.keys.count("peak_flops_fp32")) g.peak_flops_fp32 = g.peak_flops / 2;
  if (g.reserved >= g.memory) {
    auto where = user_key(g.keys, "reserved", "memory", g.where);
    diags_.error(where, fmt::format("'reserved' ({}) leaves nothing of 'memory' ({}) for the job",
                                    to_string(g.reserved), to_string(g.memory)));
    return std::nullopt;
  }
  return g;
}

std::optional<cluster> lowerer::finish_cluster(std::size_t i) {
  auto const& e = entries_[i];
  auto d = std::get<cluster_draft>(e.result);
  auto& c = d.c;
  c.name = e.name;
  c.where = e.b->header;
  // The gpu name is checked even when other keys of the block are wrong.
  std::optional<std::size_t> g;
  if (!d.gpu_name.empty())
    g = lookup(kind::gpu, d.gpu_name, e.builtin && !sources_.file(d.gpu_where.file).builtin());
  if (!d.gpu_name.empty() && !g) {
    std::vector<std::string> candidates;
    for (auto const& other : entries_)
      if (other.k == kind::gpu && other.registered) candidates.push_back(other.name);
    auto near = lowering::suggest(d.gpu_name, candidates);
    auto& diag = diags_.error(d.gpu_where, near.empty() ? fmt::format("unknown gpu '{}'", d.gpu_name)
                                                        : fmt::format("unknown gpu '{}'; did you mean '{}'?",
                                                                      d.gpu_name, near));
    std::vector<std::string> builtin;
    for (auto const& other : entries_)
      if (other.k == kind::gpu && other.builtin && other.registered) builtin.push_back(other.name);
    diag.notes.push_back({{}, fmt::format("the built-in gpus are {}", fmt::join(builtin, ", "))});
    return std::nullopt;
  }
  if (!e.ok) return std::nullopt;
  auto absent = missing_keys(c.keys, {"nodes", "gpus_per_node", "gpu"});
  if (!absent.empty()) {
    auto pos = absent.rfind(" or ");
    if (pos != std::string::npos) absent.replace(pos, 4, " and ");
    missing(e, absent);
    return std::nullopt;
  }
  if (!lower_entry(*g)) return std::nullopt;
  auto device = finish_gpu(*g);
  if (!device) return std::nullopt;
  c.device = *device;
  if (auto limit = beyond_limits(c, describe(e))) {
    diags_.error(limit->key ? user_key(c.keys, limit->key, limit->key, c.where) : c.where, limit->message);
    return std::nullopt;
  }
  use_gpu_defaults(c);
  if (c.nodes > 1 && !c.keys.count("inter_node")) {
    diags_.error(c.where, fmt::format("{} has {} nodes but no 'inter_node' bandwidth (e.g. 'inter_node = "
                                      "8 x 400 Gbit/s')",
                                      describe(e), c.nodes));
    return std::nullopt;
  }
  return c;
}

std::optional<std::size_t> lowerer::pick_root(kind k, std::uint32_t file) {
  std::vector<std::size_t> mine;
  std::set<std::size_t> bases;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    auto const& e = entries_[i];
    if (e.k != k || e.builtin || (!e.registered && !e.name.empty())) continue;
    mine.push_back(i);
    if (e.base) bases.insert(*e.base);
  }
  if (mine.empty()) {
    // A misspelt block kind was probably meant to be this block: its
    // error says so already.
    if (unknown_kinds_ > 0) return std::nullopt;
    static std::array<char const*, kind_count> const examples{
        "model m : llama3_8b { }", "", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }",
        "training { global_batch = 256 }", ""};
    diags_.error(span{file, 0, 0},
                 fmt::format("no '{}' block: a plan needs one, e.g. '{}'", kind_name(k),
                             examples[static_cast<std::size_t>(k)]));
    return std::nullopt;
  }
  std::vector<std::size_t> roots;
  for (auto i : mine)
    if (!bases.count(i)) roots.push_back(i);
  if (roots.size() > 1) {
    auto const& first = entries_[roots[0]];
    auto const& second = entries_[roots[1]];
    auto& d = diags_.error(second.b->header,
                           fmt::format("two {0}s to plan, '{1}' and '{2}': a file plans one {0}; remove one "
                                       "or make it the base of the other",
                                       kind_name(k), first.name, second.name));
    d.notes.push_back({first.b->header, fmt::format("'{}' is defined here", first.name)});
    return std::nullopt;
  }
  if (roots.empty()) return std::nullopt;  // every one is in a base cycle, already reported
  return roots.front();
}

std::optional<program> lowerer::run(std::uint32_t file) {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (!entries_[i].builtin) lower_entry(i);
  program p;
  if (file != dsl::span::no_file) p.file = sources_.file(file).name();
  bool ok = true;
  auto mi = pick_root(kind::model, file);
  auto ci = pick_root(kind::cluster, file);
  std::vector<std::size_t> trainings;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].k == kind::training && !entries_[i].builtin) trainings.push_back(i);
  if (trainings.empty()) {
    pick_root(kind::training, file);  // reports the missing block
    ok = false;
  } else if (trainings.size() > 1) {
    auto& d = diags_.error(entries_[trainings[1]].b->header, "a file has one 'training' block; this is a second");
    d.notes.push_back({entries_[trainings[0]].b->header, "the first 'training' block is here"});
    ok = false;
  } else if (entries_[trainings[0]].ok) {
    auto t = std::get<training>(entries_[trainings[0]].result);
    t.where = entries_[trainings[0]].b->header;
    if (!t.keys.count("global_batch")) {
      missing(entries_[trainings[0]], "key 'global_batch'");
      ok = false;
    }
    p.training = t;
  }
  if (mi) {
    auto m = finish_model(*mi);
    if (m) p.model = *m;
    ok = ok && m.has_value();
  }
  if (ci) {
    auto c = finish_cluster(*ci);
    if (c) p.cluster = *c;
    ok = ok && c.has_value();
  }
  if (ok && mi) {
    if (auto limit = beyond_limits(p.model, p.training)) {
      diags_.error(user_key(p.training.keys, limit->key, limit->key, p.training.where), limit->message);
      ok = false;
    }
  }
  std::size_t unnamed = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    auto const& e = entries_[i];
    if (e.k != kind::strategy || e.builtin) continue;
    auto name = e.name.empty() ? fmt::format("strategy#{}", ++unnamed) : e.name;
    if (!e.ok) continue;
    auto s = std::get<strategy_spec>(e.result);
    s.name = name;
    s.where = e.b->header;
    p.strategies.push_back(std::move(s));
  }
  if (!ok || !mi || !ci) return std::nullopt;
  return p;
}

std::vector<std::uint32_t> catalog_files(dsl::source_manager& sources) {
  std::vector<std::uint32_t> ids;
  for (auto const& b : builtin_sources()) {
    std::optional<std::uint32_t> id;
    for (std::uint32_t f = 0; f < sources.size(); ++f)
      if (sources.file(f).builtin() && sources.file(f).name() == b.name) id = f;
    if (!id) id = sources.add(std::string(b.name), std::string(b.text), true);
    ids.push_back(*id);
  }
  return ids;
}

std::vector<ast::block> catalog_blocks(dsl::source_manager& sources, dsl::diagnostics& diags) {
  std::vector<ast::block> blocks;
  for (auto id : catalog_files(sources))
    if (auto f = dsl::parse(sources, id, diags))
      for (auto& b : f->blocks) blocks.push_back(std::move(b));
  return blocks;
}

std::optional<program> lower_file(ast::file const& file, std::uint32_t file_id, dsl::source_manager& sources,
                                  lower_options const& options, dsl::diagnostics& diags) {
  dsl::diagnostics local;
  auto builtin = catalog_blocks(sources, local);
  auto user = file.blocks;
  lowerer l(sources, local);
  l.apply_settings(user, builtin, options.settings);
  for (auto& b : user) l.add(std::move(b), false);
  for (auto& b : builtin) l.add(std::move(b), true);
  auto p = l.run(file_id);
  // Report in reading order: the order of discovery follows base chains.
  auto list = local.list();
  std::stable_sort(list.begin(), list.end(), [](dsl::diagnostic const& a, dsl::diagnostic const& b) {
    return std::pair(a.where.file, a.where.begin) < std::pair(b.where.file, b.where.begin);
  });
  for (auto& d : list) diags.add(std::move(d));
  if (local.has_errors()) return std::nullopt;
  return p;
}

struct catalog_cache {
  dsl::source_manager sources;
  std::vector<std::string> gpu_names, model_names;
  std::map<std::string, gpu, std::less<>> gpus;
  std::map<std::string, model, std::less<>> models;
};

catalog_cache const& cache() {
  static catalog_cache const c = [] {
    catalog_cache c;
    dsl::diagnostics diags;
    auto blocks = catalog_blocks(c.sources, diags);
    lowerer l(c.sources, diags);
    std::vector<std::pair<kind, std::string>> order;
    for (auto& b : blocks) {
      if (auto k = kind_of(b.kind.name); k && b.name) order.emplace_back(*k, b.name->name);
      l.add(std::move(b), true);
    }
    l.lower_all();
    for (auto const& [k, name] : order) {
      auto i = l.builtin_named(k, name);
      if (!i) continue;
      if (k == kind::gpu) {
        if (auto g = l.finish_gpu(*i); g && !c.gpus.count(name)) {
          c.gpu_names.push_back(name);
          c.gpus.emplace(name, *g);
        }
      } else if (k == kind::model) {
        if (auto m = l.finish_model(*i); m && !c.models.count(name)) {
          c.model_names.push_back(name);
          c.models.emplace(name, *m);
        }
      }
    }
    return c;
  }();
  return c;
}

}  // namespace

std::optional<program> lower(ast::file const& file, dsl::source_manager& sources, lower_options const& options,
                             dsl::diagnostics& diags) {
  std::uint32_t id = dsl::span::no_file;
  for (auto const& b : file.blocks)
    if (b.where.valid()) {
      id = b.where.file;
      break;
    }
  return lower_file(file, id, sources, options, diags);
}

std::optional<program> load(dsl::source_manager& sources, std::uint32_t file, lower_options const& options,
                            dsl::diagnostics& diags) {
  auto parsed = dsl::parse(sources, file, diags);
  if (!parsed) return std::nullopt;
  return lower_file(*parsed, file, sources, options, diags);
}

std::vector<std::string> catalog_gpu_names() { return cache().gpu_names; }
std::vector<std::string> catalog_model_names() { return cache().model_names; }

std::optional<gpu> catalog_gpu(std::string_view name) {
  auto const& c = cache();
  auto it = c.gpus.find(name);
  if (it == c.gpus.end()) return std::nullopt;
  return it->second;
}

std::optional<model> catalog_model(std::string_view name) {
  auto const& c = cache();
  auto it = c.models.find(name);
  if (it == c.models.end()) return std::nullopt;
  return it->second;
}

}  // namespace dtplan::planner
