#include "planner/lower/lower.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include "dsl/parse.hpp"
#include "planner/ir/keys.hpp"
#include "planner/lower/catalog.hpp"
#include "planner/lower/complete.hpp"
#include "planner/lower/lower_keys.hpp"
#include "planner/lower/lower_values.hpp"
#include "planner/lower/settings.hpp"

namespace dtplan::planner {

namespace {

namespace ast = dsl::ast;
using lowering::as_scalar;
using lowering::converter;
using lowering::span_of;

// Past this many errors in one file the rest is most likely fallout of the
// first ones; and a file of a million mistakes must not print a million
// diagnostics. The parser stops at the same number.
constexpr std::size_t max_errors = 20;

/// A cluster before its gpu name is resolved (the gpu may be defined after it).
struct cluster_draft {
  cluster c;
  std::string gpu_name;
  span gpu_where;
};

using block_value = std::variant<std::monostate, model, gpu, cluster_draft, training, strategy_spec, framework>;

/// A block as lowering starts it: the key table's defaults.
block_value initial(block_kind k) {
  switch (k) {
    case block_kind::model: return with_defaults<model>();
    case block_kind::gpu: return with_defaults<gpu>();
    case block_kind::cluster: return cluster_draft{with_defaults<cluster>(), {}, {}};
    case block_kind::training: return with_defaults<training>();
    case block_kind::strategy: return strategy_spec{};
    case block_kind::framework: return with_defaults<framework>();
  }
  return {};
}

struct entry {
  ast::block const* b = nullptr;
  block_kind k = block_kind::model;
  bool builtin = false;
  bool registered = false;  ///< reachable by name (not a duplicate)
  std::string name;
  enum class state { todo, busy, done } st = state::todo;
  bool ok = true;
  bool in_cycle = false;
  std::optional<std::size_t> base;
  /// The lowered block; dropped once it failed, unless it is a cluster or
  /// the training block (whose gpu or framework name is still checked), so a
  /// million broken blocks cost little memory.
  std::unique_ptr<block_value> result;
};

std::string called(entry const& e) { return planner::called(e.k, e.name); }

class lowerer {
 public:
  lowerer(dsl::source_manager& sources, dsl::diagnostics& diags)
      : sources_(sources), diags_(diags), conv_(sources, diags) {}

  void add(ast::block b, bool builtin);

  std::optional<program> run(std::uint32_t file);

  /// Lowers every block (the catalog on its own).
  void lower_all() {
    for (std::size_t i = 0; i < entries_.size(); ++i) lower_entry(i);
  }
  /// A named model, gpu or framework lowered (its base first) and made whole.
  template <class Block>
  std::optional<Block> finish(std::size_t i);
  std::optional<std::size_t> builtin_named(block_kind k, std::string const& name) const {
    auto const& names = builtin_names_[static_cast<std::size_t>(k)];
    auto it = names.find(name);
    if (it == names.end()) return std::nullopt;
    return it->second;
  }

 private:
  bool lower_entry(std::size_t i);
  void lower_one(std::size_t i);
  std::optional<std::size_t> find_base(std::size_t i);
  void report_cycle(std::size_t start);
  bool check_keys(entry const& e, std::vector<ast::assignment const*>& accepted);
  /// Whether a set, range or `auto` written for `key` outside a strategy
  /// fits it; reports why not.
  bool check_form(key_info const& key, ast::assignment const& a);
  /// The framework the training block names (or `generic`), lowered; its
  /// behaviours become the training's where the block does not write them.
  std::optional<framework> resolve_framework(training& t);
  bool apply(block_value& value, block_kind k, ast::assignment const& a);

  std::optional<cluster> finish_cluster(std::size_t i);
  std::optional<std::size_t> pick_root(block_kind k, std::uint32_t file);
  std::optional<std::size_t> lookup(block_kind k, std::string const& name, bool builtin_only) const;
  /// Reports each problem at its key (see block_problem); true when there is none.
  bool report(std::vector<block_problem> const& problems, key_spans const& keys, span header);
  /// The span of key `a`, or of `b` when only `b` was written in the user's file.
  span user_key(key_spans const& keys, std::string_view a, std::string_view b, span fallback) const;
  /// The names a misspelt base or gpu of kind `k` may have meant: the file's
  /// (unless `builtin_only`), then the catalog's in its own order.
  std::vector<std::string> const& candidates(block_kind k, bool builtin_only);

  dsl::source_manager& sources_;
  dsl::diagnostics& diags_;
  converter conv_;
  std::deque<ast::block> blocks_;
  std::vector<entry> entries_;
  std::vector<std::size_t> stack_;  ///< the base chain being lowered, busy entries
  std::size_t unknown_kinds_ = 0;
  std::array<std::map<std::string, std::size_t, std::less<>>, block_kind_count> user_names_, builtin_names_;
  std::map<std::pair<block_kind, bool>, std::vector<std::string>> candidates_;
  span framework_where_;  ///< the value of the training block's `framework`
};

void lowerer::add(ast::block b, bool builtin) {
  auto k = block_kind_of(b.kind.name);
  if (!k) {
    ++unknown_kinds_;
    auto near = lowering::suggest(b.kind.name, block_kind_names());
    if (near.empty())
      diags_.error(b.kind.where, fmt::format("unknown block kind '{}'; expected {}", b.kind.name,
                                             quoted_alternatives(block_kind_names())));
    else
      diags_.error(b.kind.where, fmt::format("unknown block kind '{}'; did you mean '{}'?", b.kind.name, near));
    return;
  }
  candidates_.clear();
  blocks_.push_back(std::move(b));
  ast::block const& blk = blocks_.back();
  entry e;
  e.b = &blk;
  e.k = *k;
  e.builtin = builtin;
  if (blk.name) e.name = blk.name->name;
  bool needs_name =
      *k == block_kind::model || *k == block_kind::gpu || *k == block_kind::cluster || *k == block_kind::framework;
  if (needs_name && !blk.name) {
    diags_.error(blk.kind.where, fmt::format("a '{0}' block needs a name, as in '{0} NAME {{ ... }}'", blk.kind.name));
    e.ok = false;
  }
  if (*k == block_kind::training && blk.base) {
    diags_.error(blk.base->where, "a 'training' block cannot have a base");
    e.ok = false;
  }
  if (!e.name.empty() && *k != block_kind::training) {
    auto& names = (builtin ? builtin_names_ : user_names_)[static_cast<std::size_t>(*k)];
    auto it = names.find(e.name);
    if (it != names.end()) {
      auto& d = diags_.error(blk.name->where, fmt::format("duplicate {} '{}'", blk.kind.name, e.name));
      d.notes.push_back({entries_[it->second].b->name->where, fmt::format("'{}' is first defined here", e.name)});
      e.ok = false;
    } else {
      names.emplace(e.name, entries_.size());
      e.registered = true;
    }
  }
  entries_.push_back(std::move(e));
}

std::optional<std::size_t> lowerer::lookup(block_kind k, std::string const& name, bool builtin_only) const {
  auto const slot = static_cast<std::size_t>(k);
  if (!builtin_only) {
    auto it = user_names_[slot].find(name);
    if (it != user_names_[slot].end()) return it->second;
  }
  auto it = builtin_names_[slot].find(name);
  if (it != builtin_names_[slot].end()) return it->second;
  return std::nullopt;
}

std::vector<std::string> const& lowerer::candidates(block_kind k, bool builtin_only) {
  auto [it, fresh] = candidates_.try_emplace({k, builtin_only});
  if (fresh)
    for (bool builtin : {false, true})
      for (auto const& other : entries_)
        if (other.k == k && other.registered && other.builtin == builtin && (builtin || !builtin_only))
          it->second.push_back(other.name);
  return it->second;
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
  // A did-you-mean searches every name: only for errors that are shown.
  auto near = diags_.full() ? std::string() : lowering::suggest(base.name, candidates(e.k, e.builtin));
  diags_.error(base.where, near.empty() ? fmt::format("unknown base {} '{}'", name(e.k), base.name)
                                        : fmt::format("unknown base {} '{}'; did you mean '{}'?", name(e.k),
                                                      base.name, near));
  return std::nullopt;
}

void lowerer::report_cycle(std::size_t start) {
  auto pos = std::find(stack_.begin(), stack_.end(), start);
  std::vector<std::size_t> cycle(pos, stack_.end());
  for (auto i : cycle) entries_[i].in_cycle = true;
  // A cycle of thousands of blocks is named by its first links.
  constexpr std::size_t shown = 8;
  std::string chain;
  for (std::size_t n = 0; n < cycle.size() && n < shown; ++n) chain += fmt::format("'{}' -> ", entries_[cycle[n]].name);
  if (cycle.size() > shown) chain += fmt::format("... ({} blocks) -> ", grouped(static_cast<std::int64_t>(cycle.size())));
  chain += fmt::format("'{}'", entries_[start].name);
  auto& d = diags_.error(entries_[cycle.front()].b->base->where, fmt::format("base cycle: {}", chain));
  for (std::size_t n = 1; n < cycle.size() && n < shown; ++n) {
    auto const& e = entries_[cycle[n]];
    d.notes.push_back({e.b->base->where, fmt::format("'{}' is based on '{}' here", e.name, e.b->base->name)});
  }
  if (cycle.size() > shown)
    d.notes.push_back({{}, fmt::format("and {} more blocks of the cycle", grouped(static_cast<std::int64_t>(cycle.size() - shown)))});
}

bool lowerer::check_keys(entry const& e, std::vector<ast::assignment const*>& accepted) {
  bool ok = true;
  std::map<std::string, ast::assignment const*, std::less<>> seen;
  for (auto const& a : e.b->body) {
    if (!find_key(e.k, a.key.name)) {
      auto const* alias = alias_of(e.k, a.key.name);
      auto near = alias ? std::string(alias->name) : lowering::suggest(a.key.name, key_names(e.k));
      diags_.error(a.key.where, near.empty() ? fmt::format("unknown key '{}' in {}", a.key.name, called(e))
                                             : fmt::format("unknown key '{}' in {}; did you mean '{}'?", a.key.name,
                                                           called(e), near));
      ok = false;
      continue;
    }
    if (auto it = seen.find(a.key.name); it != seen.end()) {
      auto& d = diags_.error(a.key.where, fmt::format("duplicate key '{}' in {}", a.key.name, called(e)));
      d.notes.push_back({it->second->key.where, fmt::format("'{}' is first set here", a.key.name)});
      ok = false;
      continue;
    }
    seen.emplace(a.key.name, &a);
    if (e.k != block_kind::strategy && !as_scalar(a.rhs) && !check_form(*find_key(e.k, a.key.name), a)) {
      ok = false;
      continue;
    }
    accepted.push_back(&a);
  }
  return ok;
}

bool lowerer::check_form(key_info const& key, ast::assignment const& a) {
  bool const is_set = std::holds_alternative<ast::set>(a.rhs);
  bool const is_auto = std::holds_alternative<ast::auto_value>(a.rhs);
  if ((is_set && key.takes_set) || (is_auto && takes_auto(key))) return true;
  diags_.error(span_of(a.rhs), wrong_form(key, is_set ? "a set" : is_auto ? "'auto'" : "a range"));
  return false;
}

bool lowerer::lower_entry(std::size_t i) {
  if (entries_[i].st == entry::state::done) return entries_[i].ok;
  // Walk down the chain of bases to the first block already lowered (or
  // unknown, or in a cycle), then lower back up from there: a chain of any
  // length costs no stack. Errors come in the order recursion would give.
  for (std::size_t at = i;;) {
    auto& e = entries_[at];
    e.st = entry::state::busy;
    stack_.push_back(at);
    if (!e.b->base || e.k == block_kind::training) break;
    e.base = find_base(at);
    if (!e.base) break;
    auto const& base = entries_[*e.base];
    if (base.st == entry::state::busy) {
      report_cycle(*e.base);
      break;
    }
    if (base.st == entry::state::done) break;
    at = *e.base;
  }
  while (!stack_.empty()) {
    auto const at = stack_.back();
    lower_one(at);
    stack_.pop_back();
  }
  return entries_[i].ok;
}

// Lowers one block whose base, if any, is lowered (or failed).
void lowerer::lower_one(std::size_t i) {
  auto& e = entries_[i];
  bool ok = e.ok;
  auto start = initial(e.k);
  if (e.b->base && e.k != block_kind::training) {
    auto const* base = e.base ? &entries_[*e.base] : nullptr;
    if (base && base->st == entry::state::done && base->ok)
      start = *base->result;  // keys written in the base keep pointing at the base's text
    else
      ok = false;
  }
  std::vector<ast::assignment const*> accepted;
  if (!check_keys(e, accepted)) ok = false;
  for (auto const* a : accepted)
    if (!apply(start, e.k, *a)) ok = false;
  e.st = entry::state::done;
  e.ok = ok && !e.in_cycle;
  if (e.ok || e.k == block_kind::cluster || e.k == block_kind::training)
    e.result = std::make_unique<block_value>(std::move(start));
}

bool lowerer::apply(block_value& value, block_kind k, ast::assignment const& a) {
  auto const& key = *find_key(k, a.key.name);
  if (k == block_kind::strategy) {
    auto c = lowering::choice_value(conv_, key, a);
    if (!c) return false;
    if (auto const& access = std::get<strategy_access>(key.field); access.store)
      access.store(std::get<strategy_spec>(value), *c);
    return true;
  }
  auto v = lowering::block_value(conv_, key, a);
  if (!v) return false;
  std::visit(
      [&](auto& block) {
        using T = std::decay_t<decltype(block)>;
        if constexpr (std::is_same_v<T, cluster_draft>) {
          if (key.dom == domain::gpu_name) {
            block.gpu_name = std::get<std::string>(*v);
            block.gpu_where = span_of(a.rhs);
          } else {
            store(key, block.c, *v);
          }
          block.c.keys[a.key.name] = a.key.where;
        } else if constexpr (std::is_same_v<T, model> || std::is_same_v<T, gpu> || std::is_same_v<T, training> ||
                             std::is_same_v<T, framework>) {
          store(key, block, *v);
          block.keys[a.key.name] = a.key.where;
          if (key.dom == domain::framework_name) framework_where_ = span_of(a.rhs);
        }
      },
      value);
  return true;
}

span lowerer::user_key(key_spans const& keys, std::string_view a, std::string_view b, span fallback) const {
  // Prefer pointing at what the user wrote over the catalog text it derives
  // from, and at a command line's --set over the file it overrides: the
  // override is what changed.
  auto sa = keys.count(a) ? keys.find(a)->second : fallback;
  auto sb = keys.count(b) ? keys.find(b)->second : fallback;
  bool a_builtin = !sa.valid() || sources_.file(sa.file).builtin();
  bool b_builtin = !sb.valid() || sources_.file(sb.file).builtin();
  auto overridden = [&](span sp) { return sp.valid() && sources_.file(sp.file).name() == dsl::set_source_name; };
  if (overridden(sb) && !overridden(sa)) return sb;
  if (a_builtin && !b_builtin) return sb;
  if (a_builtin && b_builtin) return fallback;
  return sa;
}

bool lowerer::report(std::vector<block_problem> const& problems, key_spans const& keys, span header) {
  for (auto const& p : problems)
    diags_.error(p.key.empty() ? header : user_key(keys, p.key, p.other, header), p.message);
  return problems.empty();
}

template <class Block>
std::optional<Block> lowerer::finish(std::size_t i) {
  auto const& e = entries_[i];
  if (!e.ok) return std::nullopt;
  auto b = std::get<Block>(*e.result);
  b.name = e.name;
  b.where = e.b->header;
  if (!report(complete(b, called(e)), b.keys, b.where)) return std::nullopt;
  return b;
}

std::optional<framework> lowerer::resolve_framework(training& t) {
  auto i = lookup(block_kind::framework, t.framework, false);
  if (!i) {
    auto near = lowering::suggest(t.framework, candidates(block_kind::framework, false));
    auto at = framework_where_.valid() ? framework_where_ : t.where;
    auto& diag = diags_.error(at, near.empty() ? fmt::format("unknown framework '{}'", t.framework)
                                               : fmt::format("unknown framework '{}'; did you mean '{}'?",
                                                             t.framework, near));
    diag.notes.push_back({{}, fmt::format("the built-in frameworks are {}",
                                          fmt::join(candidates(block_kind::framework, true), ", "))});
    return std::nullopt;
  }
  if (!lower_entry(*i)) return std::nullopt;
  auto f = finish<framework>(*i);
  if (f) use_framework(t, *f);
  return f;
}

std::optional<cluster> lowerer::finish_cluster(std::size_t i) {
  auto const& e = entries_[i];
  auto d = std::get<cluster_draft>(*e.result);
  auto& c = d.c;
  c.name = e.name;
  c.where = e.b->header;
  // The gpu name is checked even when other keys of the block are wrong.
  std::optional<std::size_t> g;
  if (!d.gpu_name.empty())
    g = lookup(block_kind::gpu, d.gpu_name, e.builtin && !sources_.file(d.gpu_where.file).builtin());
  if (!d.gpu_name.empty() && !g) {
    auto near = lowering::suggest(d.gpu_name, candidates(block_kind::gpu, false));
    auto& diag = diags_.error(d.gpu_where, near.empty() ? fmt::format("unknown gpu '{}'", d.gpu_name)
                                                        : fmt::format("unknown gpu '{}'; did you mean '{}'?",
                                                                      d.gpu_name, near));
    diag.notes.push_back(
        {{}, fmt::format("the built-in gpus are {}", fmt::join(candidates(block_kind::gpu, true), ", "))});
    return std::nullopt;
  }
  if (!e.ok) return std::nullopt;
  if (!report(missing_keys(block_kind::cluster, c.keys, called(e)), c.keys, c.where)) return std::nullopt;
  if (!lower_entry(*g)) return std::nullopt;
  auto device = finish<gpu>(*g);
  if (!device) return std::nullopt;
  c.device = *device;
  if (!report(complete(c, called(e)), c.keys, c.where)) return std::nullopt;
  return c;
}

std::optional<std::size_t> lowerer::pick_root(block_kind k, std::uint32_t file) {
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
    static std::array<char const*, block_kind_count> const examples{
        "model m : llama3_8b { }", "", "cluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }",
        "training { global_batch = 256 }", "", ""};
    diags_.error(span{file, 0, 0}, fmt::format("no '{}' block: a plan needs one, e.g. '{}'", name(k),
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
                                       name(k), first.name, second.name));
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
  auto mi = pick_root(block_kind::model, file);
  auto ci = pick_root(block_kind::cluster, file);
  std::vector<std::size_t> trainings;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].k == block_kind::training && !entries_[i].builtin) trainings.push_back(i);
  if (trainings.empty()) {
    pick_root(block_kind::training, file);  // reports the missing block
    ok = false;
  } else if (trainings.size() > 1) {
    auto& d = diags_.error(entries_[trainings[1]].b->header, "a file has one 'training' block; this is a second");
    d.notes.push_back({entries_[trainings[0]].b->header, "the first 'training' block is here"});
    ok = false;
  } else if (auto const& e = entries_[trainings[0]]; e.result) {
    auto t = std::get<training>(*e.result);
    t.where = e.b->header;
    // The framework is looked up even when other keys of the block are wrong.
    auto f = resolve_framework(t);
    ok = e.ok && report(complete(t, called(e)), t.keys, t.where) && f;
    if (f) p.framework = std::move(*f);
    p.training = t;
  } else {
    ok = false;
  }
  if (mi) {
    auto m = finish<model>(*mi);
    if (m) p.model = *m;
    ok = ok && m.has_value();
  }
  if (ci) {
    auto c = finish_cluster(*ci);
    if (c) p.cluster = *c;
    ok = ok && c.has_value();
  }
  if (ok && ci) {
    resolve_auto(p.training, p.cluster.device);
    resolve_auto(p.framework.behaviours, p.cluster.device);
  }
  if (ok && mi && ci) {
    if (auto limit = beyond_limits(p.model, p.cluster.device)) {
      diags_.error(user_key(p.model.keys, limit->key, limit->key, p.model.where), limit->message);
      ok = false;
    }
  }
  if (ok && mi) {
    if (auto limit = beyond_limits(p.model, p.training)) {
      diags_.error(user_key(p.training.keys, limit->key, limit->key, p.training.where), limit->message);
      ok = false;
    }
  }
  std::size_t unnamed = 0;
  for (auto& e : entries_) {
    if (e.k != block_kind::strategy || e.builtin) continue;
    auto name = e.name.empty() ? fmt::format("strategy#{}", ++unnamed) : e.name;
    if (!e.ok) continue;
    // Nothing reads a block after this: a file of many strategies keeps one copy.
    auto s = std::move(std::get<strategy_spec>(*e.result));
    s.name = name;
    s.where = e.b->header;
    p.strategies.push_back(std::move(s));
  }
  if (!ok || !mi || !ci) return std::nullopt;
  return p;
}

std::optional<program> lower_file(std::vector<ast::block> user, std::uint32_t file_id, dsl::source_manager& sources,
                                  lower_options const& options, dsl::diagnostics& diags) {
  dsl::diagnostics local;
  local.limit_errors(max_errors);
  auto builtin = catalog_blocks(sources, local);
  apply_settings(user, builtin, options.settings, local);
  lowerer l(sources, local);
  for (auto& b : user) l.add(std::move(b), false);
  for (auto& b : builtin) l.add(std::move(b), true);
  auto p = l.run(file_id);
  // Report in reading order: the order of discovery follows base chains.
  auto list = local.list();
  std::stable_sort(list.begin(), list.end(), [](dsl::diagnostic const& a, dsl::diagnostic const& b) {
    return std::pair(a.where.file, a.where.begin) < std::pair(b.where.file, b.where.begin);
  });
  if (local.dropped() > 0 && !list.empty()) {
    auto const n = static_cast<std::int64_t>(local.dropped());
    list.back().notes.push_back({{}, fmt::format("{} more error{} not shown", grouped(n), n == 1 ? "" : "s")});
  }
  for (auto& d : list) diags.add(std::move(d));
  if (local.has_errors()) return std::nullopt;
  return p;
}

}  // namespace

lowered_catalog lower_catalog(dsl::source_manager& sources, dsl::diagnostics& diags) {
  auto blocks = catalog_blocks(sources, diags);
  lowerer l(sources, diags);
  std::vector<std::pair<block_kind, std::string>> order;
  for (auto& b : blocks) {
    if (auto k = block_kind_of(b.kind.name); k && b.name) order.emplace_back(*k, b.name->name);
    l.add(std::move(b), true);
  }
  l.lower_all();
  lowered_catalog out;
  std::set<std::string> gpus, models, frameworks;
  for (auto const& [k, name] : order) {
    auto i = l.builtin_named(k, name);
    if (!i) continue;
    if (k == block_kind::gpu) {
      if (auto g = l.finish<gpu>(*i); g && gpus.insert(name).second) out.gpus.push_back(*g);
    } else if (k == block_kind::model) {
      if (auto m = l.finish<model>(*i); m && models.insert(name).second) out.models.push_back(*m);
    } else if (k == block_kind::framework) {
      if (auto f = l.finish<framework>(*i); f && frameworks.insert(name).second) out.frameworks.push_back(*f);
    }
  }
  return out;
}

std::optional<program> lower(ast::file const& file, dsl::source_manager& sources, lower_options const& options,
                             dsl::diagnostics& diags) {
  std::uint32_t id = dsl::span::no_file;
  for (auto const& b : file.blocks)
    if (b.where.valid()) {
      id = b.where.file;
      break;
    }
  return lower_file(file.blocks, id, sources, options, diags);
}

std::optional<program> load(dsl::source_manager& sources, std::uint32_t file, lower_options const& options,
                            dsl::diagnostics& diags) {
  auto parsed = dsl::parse(sources, file, diags);
  if (!parsed) return std::nullopt;
  return lower_file(std::move(parsed->blocks), file, sources, options, diags);
}

}  // namespace dtplan::planner
