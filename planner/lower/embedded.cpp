#include "planner/lower/embedded.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "dsl/diagnostics.hpp"
#include "planner/lower/complete.hpp"
#include "planner/lower/lower.hpp"
#include "planner/lower/lower_values.hpp"

namespace dtplan::planner::edsl {

namespace {

// A catalog entry's spans point into the catalog's own source manager, which
// the caller never sees: keep which keys were written, forget where.
void detach(key_spans& keys) {
  for (auto& entry : keys) entry.second = span{};
}
template <class Block>
Block detached(Block b) {
  b.where = {};
  detach(b.keys);
  if constexpr (std::is_same_v<Block, planner::framework>) detach(b.behaviours.keys);
  return b;
}

std::string suggestion(std::string_view name, std::vector<std::string> const& names) {
  auto near = lowering::suggest(name, names);
  return near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near);
}

// Checks `v` against the key table as lowering checks a written value, and
// stores it. Keys set in C++ have no place in a file; an invalid span
// still records that the key was written, which is what the defaults look at.
template <class Block>
void assign(block_kind k, Block& b, std::string_view key, key_value const& v, std::string const& shown) {
  auto const* row = find_key(k, key);
  if (!row) throw std::logic_error(fmt::format("no key '{}' in a '{}' block", key, name(k)));
  if (auto problem = invalid(*row, v, shown)) throw error(*problem);
  store(*row, b, v);
  b.keys[std::string(key)] = span{};
}

// A key set by name: an unknown name is lowering's "unknown key" error, a
// choice's name becomes its value.
template <class Block>
void assign_by_name(block_kind k, Block& b, std::string_view key, key_setting const& v) {
  auto const* row = find_key(k, key);
  if (!row) {
    auto const* meant = alias_of(k, key);
    throw error(fmt::format("unknown key '{}' in {}{}", key, called(k, ""),
                            meant ? fmt::format("; did you mean '{}'?", meant->name)
                                  : suggestion(key, key_names(k))));
  }
  if (v.is_set && !row->takes_set) throw error(wrong_form(*row, "a set"));
  // A choice by its name, a set of choices by theirs.
  auto index_of = [&](std::string const& text) -> std::int64_t {
    auto at = std::find(row->choices.begin(), row->choices.end(), text);
    if (at == row->choices.end())
      throw error(fmt::format("expected {} for '{}', got '{}'",
                              row->dom == domain::choice ? quoted_alternatives(row->choices) : takes(*row), key, text));
    return at - row->choices.begin();
  };
  key_value value = v.value;
  if (v.is_set) {
    value_set items = std::get<value_set>(v.value);
    for (auto const& text : v.names) items.push_back(index_of(text));
    std::sort(items.begin(), items.end());
    if (auto twice = std::adjacent_find(items.begin(), items.end()); twice != items.end())
      throw error(fmt::format("{} appears twice in the set", v.names.empty() ? std::to_string(*twice)
                                                                              : row->choices[*twice]));
    value = items;
  } else if (v.is_choice && row->dom == domain::choice) {
    value = index_of(std::get<std::string>(v.value));
  }
  // What the row's domain holds: a whole number for a quantity is that
  // number of base units; anything else of the wrong kind is lowering's
  // "expected ..., got ...".
  auto const* whole = std::get_if<std::int64_t>(&value);
  bool const real = row->dom == domain::quantity || row->dom == domain::fraction || row->dom == domain::real;
  if (whole && real && !row->takes_set) value = static_cast<double>(*whole);
  bool fits = false;
  switch (row->dom) {
    case domain::count:
    case domain::choice: fits = whole || v.is_set; break;
    case domain::quantity:
    case domain::fraction:
    case domain::real: fits = std::holds_alternative<double>(value); break;
    case domain::boolean: fits = std::holds_alternative<bool>(value); break;
    case domain::text:
    case domain::gpu_name:
    case domain::framework_name: fits = std::holds_alternative<std::string>(value); break;
    case domain::shard:
    case domain::order: fits = false; break;
  }
  if (!fits) throw error(fmt::format("expected {} for '{}', got {}", takes(*row), key, v.shown));
  // One value for a key that takes a set: a set of one, as in a file.
  if (row->takes_set && whole) value = value_set{*whole};
  assign(k, b, key, value, v.shown);
}

// The block made whole by lowering's rules, or lowering's first complaint.
template <class Block>
Block built(Block b, block_kind k) {
  std::string block_name;
  if constexpr (!std::is_same_v<Block, planner::training>) block_name = b.name;
  auto problems = complete(b, called(k, block_name));
  if (!problems.empty()) throw error(problems.front().message);
  return b;
}

// Values as a file writes them, for "got ..." in messages.
std::string shown(std::int64_t v) { return std::to_string(v); }
std::string shown(double v) { return fmt::format("{}", v); }
std::string shown(bool v) { return v ? "true" : "false"; }
template <class Tag>
std::string shown(unit<Tag> v) {
  return to_string(v);
}
template <class Enum>
  requires std::is_enum_v<Enum>
std::string shown(Enum v) {
  return fmt::format("'{}'", name(v));
}
std::string shown(shard_group const& v) {
  return v.k == shard_group::kind::size ? std::to_string(v.size) : fmt::format("'{}'", to_string(v));
}
std::string shown(rank_order const& v) { return fmt::format("\"{}\"", to_string(v)); }

template <class T>
key_value value_of(T const& v) {
  if constexpr (std::is_enum_v<T>)
    return static_cast<std::int64_t>(v);
  else
    return v;
}

// One strategy value, a set or `any`, with each value as a file writes it.
template <class T>
std::pair<key_choice<key_value>, std::vector<std::string>> one(T const& v) {
  return {key_choice<key_value>::one(value_of(v)), {shown(v)}};
}
template <class T>
std::pair<key_choice<key_value>, std::vector<std::string>> set_of(std::initializer_list<T> values) {
  key_choice<key_value> c;
  c.f = choice_form::form::set;
  std::vector<std::string> texts;
  for (auto const& v : values) {
    c.values.push_back(value_of(v));
    texts.push_back(shown(v));
  }
  return {std::move(c), std::move(texts)};
}

}  // namespace

key_setting::key_setting(bool v) : value(v), shown(v ? "true" : "false") {}
key_setting::key_setting(int v) : value(std::int64_t{v}), shown(std::to_string(v)) {}
key_setting::key_setting(std::int64_t v) : value(v), shown(std::to_string(v)) {}
key_setting::key_setting(double v) : value(v), shown(fmt::format("{}", v)) {}
key_setting::key_setting(char const* choice) : key_setting(std::string_view(choice)) {}
key_setting::key_setting(std::string_view choice)
    : value(std::string(choice)), shown(fmt::format("'{}'", choice)), is_choice(true) {}
key_setting::key_setting(std::initializer_list<std::int64_t> set)
    : value(value_set(set)), shown(fmt::format("{{{}}}", fmt::join(set, ", "))), is_set(true) {}
key_setting::key_setting(std::initializer_list<std::string_view> set)
    : value(value_set{}), shown(fmt::format("{{{}}}", fmt::join(set, ", "))), is_set(true),
      names(set.begin(), set.end()) {}

planner::gpu catalog_gpu(std::string_view name) {
  if (auto g = planner::catalog_gpu(name)) return detached(*g);
  throw error(fmt::format("unknown gpu '{}'{}", name, suggestion(name, catalog_gpu_names())));
}

planner::framework catalog_framework(std::string_view name) {
  if (auto f = planner::catalog_framework(name)) return detached(*f);
  throw error(fmt::format("unknown framework '{}'{}", name, suggestion(name, catalog_framework_names())));
}

planner::model preset_model(std::string_view name) {
  if (auto m = planner::catalog_model(name)) return detached(*m);
  throw error(fmt::format("unknown model '{}'{}", name, suggestion(name, catalog_model_names())));
}

model_builder::model_builder(std::string name) : m_(with_defaults<planner::model>()) { m_.name = std::move(name); }

model_builder::model_builder(std::string name, planner::model const& base) : m_(detached(base)) {
  m_.name = std::move(name);
}

model_builder& model_builder::with(std::string_view key, key_setting const& v) {
  assign_by_name(block_kind::model, m_, key, v);
  return *this;
}

model_builder& model_builder::set(std::string_view key, key_value v, std::string const& text) {
  assign(block_kind::model, m_, key, v, text);
  return *this;
}

model_builder& model_builder::description(std::string v) { return set("description", v, "\"" + v + "\""); }
model_builder& model_builder::layers(std::int64_t v) { return set("layers", v, shown(v)); }
model_builder& model_builder::hidden(std::int64_t v) { return set("hidden", v, shown(v)); }
model_builder& model_builder::heads(std::int64_t v) { return set("heads", v, shown(v)); }
model_builder& model_builder::kv_heads(std::int64_t v) { return set("kv_heads", v, shown(v)); }
model_builder& model_builder::head_dim(std::int64_t v) { return set("head_dim", v, shown(v)); }
model_builder& model_builder::qk_norm(bool v) { return set("qk_norm", v, shown(v)); }
model_builder& model_builder::ffn(std::int64_t v) { return set("ffn", v, shown(v)); }
model_builder& model_builder::vocab(std::int64_t v) { return set("vocab", v, shown(v)); }
model_builder& model_builder::seq_len(std::int64_t v) { return set("seq_len", v, shown(v)); }
model_builder& model_builder::experts(std::int64_t v) { return set("experts", v, shown(v)); }
model_builder& model_builder::experts_per_token(std::int64_t v) { return set("experts_per_token", v, shown(v)); }
model_builder& model_builder::mlp(mlp_kind v) { return set("mlp", value_of(v), shown(v)); }
model_builder& model_builder::norm(norm_kind v) { return set("norm", value_of(v), shown(v)); }
model_builder& model_builder::position_embedding(position_kind v) {
  return set("position_embedding", value_of(v), shown(v));
}
model_builder& model_builder::tied_embeddings(bool v) { return set("tied_embeddings", v, shown(v)); }
model_builder& model_builder::dropout(bool v) { return set("dropout", v, shown(v)); }
model_builder& model_builder::attention(attention_kind v) { return set("attention", value_of(v), shown(v)); }
model_builder& model_builder::precision(planner::precision v) { return set("precision", value_of(v), shown(v)); }
model_builder& model_builder::optimizer(optimizer_kind v) { return set("optimizer", value_of(v), shown(v)); }

planner::model model_builder::build() const { return built(m_, block_kind::model); }

gpu_builder::gpu_builder(std::string name) : g_(with_defaults<planner::gpu>()) { g_.name = std::move(name); }

gpu_builder::gpu_builder(std::string name, planner::gpu const& base) : g_(detached(base)) {
  g_.name = std::move(name);
}

gpu_builder& gpu_builder::with(std::string_view key, key_setting const& v) {
  assign_by_name(block_kind::gpu, g_, key, v);
  return *this;
}

gpu_builder& gpu_builder::set(std::string_view key, key_value v, std::string const& text) {
  assign(block_kind::gpu, g_, key, v, text);
  return *this;
}

gpu_builder& gpu_builder::description(std::string v) { return set("description", v, "\"" + v + "\""); }
gpu_builder& gpu_builder::memory(bytes v) { return set("memory", v.value(), shown(v)); }
gpu_builder& gpu_builder::reserved(bytes v) { return set("reserved", v.value(), shown(v)); }
gpu_builder& gpu_builder::peak_flops(flop_rate v) { return set("peak_flops", v.value(), shown(v)); }
gpu_builder& gpu_builder::peak_flops_fp8(flop_rate v) { return set("peak_flops_fp8", v.value(), shown(v)); }
gpu_builder& gpu_builder::peak_flops_fp4(flop_rate v) { return set("peak_flops_fp4", v.value(), shown(v)); }
gpu_builder& gpu_builder::peak_flops_fp32(flop_rate v) { return set("peak_flops_fp32", v.value(), shown(v)); }
gpu_builder& gpu_builder::hbm_bandwidth(bandwidth v) { return set("hbm_bandwidth", v.value(), shown(v)); }
gpu_builder& gpu_builder::intra_node(bandwidth v) { return set("intra_node", v.value(), shown(v)); }
gpu_builder& gpu_builder::intra_latency(seconds v) { return set("intra_latency", v.value(), shown(v)); }
gpu_builder& gpu_builder::inter_latency(seconds v) { return set("inter_latency", v.value(), shown(v)); }
gpu_builder& gpu_builder::matmul_efficiency(double v) { return set("matmul_efficiency", v, shown(v)); }
gpu_builder& gpu_builder::comm_efficiency(double v) { return set("comm_efficiency", v, shown(v)); }
gpu_builder& gpu_builder::hbm_efficiency(double v) { return set("hbm_efficiency", v, shown(v)); }
gpu_builder& gpu_builder::sustained_clock(double v) { return set("sustained_clock", v, shown(v)); }
gpu_builder& gpu_builder::sm_count(std::int64_t v) { return set("sm_count", v, shown(v)); }
gpu_builder& gpu_builder::matmul_tile_overhead(std::int64_t v) { return set("matmul_tile_overhead", v, shown(v)); }
gpu_builder& gpu_builder::matmul_tile_overhead_fp8(std::int64_t v) {
  return set("matmul_tile_overhead_fp8", v, shown(v));
}
gpu_builder& gpu_builder::attention_efficiency(double v) { return set("attention_efficiency", v, shown(v)); }
gpu_builder& gpu_builder::kernel_latency(seconds v) { return set("kernel_latency", v.value(), shown(v)); }
gpu_builder& gpu_builder::overlap_slowdown(double v) { return set("overlap_slowdown", v, shown(v)); }
gpu_builder& gpu_builder::step_overhead(seconds v) { return set("step_overhead", v.value(), shown(v)); }
gpu_builder& gpu_builder::dispatch_latency(seconds v) { return set("dispatch_latency", v.value(), shown(v)); }

planner::gpu gpu_builder::build() const { return built(g_, block_kind::gpu); }

cluster_builder::cluster_builder(std::string name) : c_(with_defaults<planner::cluster>()) {
  c_.name = std::move(name);
}

cluster_builder& cluster_builder::with(std::string_view key, key_setting const& v) {
  assign_by_name(block_kind::cluster, c_, key, v);
  return *this;
}

cluster_builder& cluster_builder::set(std::string_view key, key_value v, std::string const& text) {
  assign(block_kind::cluster, c_, key, v, text);
  return *this;
}

cluster_builder& cluster_builder::description(std::string v) { return set("description", v, "\"" + v + "\""); }
cluster_builder& cluster_builder::nodes(std::int64_t v) { return set("nodes", v, shown(v)); }
cluster_builder& cluster_builder::gpus_per_node(std::int64_t v) { return set("gpus_per_node", v, shown(v)); }
cluster_builder& cluster_builder::gpu(planner::gpu const& v) {
  c_.device = v;
  c_.keys["gpu"] = span{};
  return *this;
}
cluster_builder& cluster_builder::gpu(std::string_view catalog_name) {
  return gpu(edsl::catalog_gpu(catalog_name));
}
cluster_builder& cluster_builder::intra_node(bandwidth v) { return set("intra_node", v.value(), shown(v)); }
cluster_builder& cluster_builder::inter_node(bandwidth v) { return set("inter_node", v.value(), shown(v)); }
cluster_builder& cluster_builder::inter_node(std::int64_t nics, bandwidth each) {
  if (nics < 1) throw error(fmt::format("expected at least 1 link before 'x', got {}", nics));
  return inter_node(each * static_cast<double>(nics));
}
cluster_builder& cluster_builder::intra_latency(seconds v) { return set("intra_latency", v.value(), shown(v)); }
cluster_builder& cluster_builder::inter_latency(seconds v) { return set("inter_latency", v.value(), shown(v)); }
cluster_builder& cluster_builder::comm_efficiency(double v) { return set("comm_efficiency", v, shown(v)); }

planner::cluster cluster_builder::build() const { return built(c_, block_kind::cluster); }

training_builder& training_builder::with(std::string_view key, key_setting const& v) {
  assign_by_name(block_kind::training, t_, key, v);
  return *this;
}

training_builder& training_builder::set(std::string_view key, key_value v, std::string const& text) {
  assign(block_kind::training, t_, key, v, text);
  return *this;
}

training_builder& training_builder::description(std::string v) { return set("description", v, "\"" + v + "\""); }
training_builder& training_builder::global_batch(std::int64_t v) { return set("global_batch", v, shown(v)); }
training_builder& training_builder::base_lr(double v) { return set("base_lr", v, shown(v)); }
training_builder& training_builder::base_batch(std::int64_t v) { return set("base_batch", v, shown(v)); }
training_builder& training_builder::grad_precision(precision v) {
  return set("grad_precision", value_of(v), shown(v));
}
training_builder& training_builder::overlap_grad_sync(bool v) { return set("overlap_grad_sync", v, shown(v)); }
training_builder& training_builder::grad_reduce_scatter(bool v) {
  return set("grad_reduce", std::int64_t{v ? 0 : 1}, v ? "'reduce_scatter'" : "'all_reduce'");
}
training_builder& training_builder::cross_entropy(cross_entropy_kind v) {
  return set("cross_entropy", value_of(v), shown(v));
}

training_builder& training_builder::framework(std::string_view name) {
  return set("framework", std::string(name), fmt::format("'{}'", name));
}
training_builder& training_builder::attention_backend(planner::attention_backend v) {
  return set("attention_backend", value_of(v), shown(v));
}

planner::training training_builder::build() const { return built(t_, block_kind::training); }

framework_builder::framework_builder(std::string name) : f_(with_defaults<planner::framework>()) {
  f_.name = std::move(name);
}

framework_builder::framework_builder(std::string name, planner::framework const& base) : f_(detached(base)) {
  f_.name = std::move(name);
}

framework_builder& framework_builder::with(std::string_view key, key_setting const& v) {
  assign_by_name(block_kind::framework, f_, key, v);
  return *this;
}

framework_builder& framework_builder::set(std::string_view key, key_value v, std::string const& text) {
  assign(block_kind::framework, f_, key, v, text);
  return *this;
}

framework_builder& framework_builder::description(std::string v) { return set("description", v, "\"" + v + "\""); }
framework_builder& framework_builder::zero_stages(std::initializer_list<std::int64_t> v) { return with("zero_stages", v); }
framework_builder& framework_builder::pipeline_max_zero(std::int64_t v) { return set("pipeline_max_zero", v, shown(v)); }
framework_builder& framework_builder::bf16_min_zero(std::int64_t v) { return set("bf16_min_zero", v, shown(v)); }
framework_builder& framework_builder::tensor_parallel(bool v) { return set("tensor_parallel", v, shown(v)); }
framework_builder& framework_builder::pipeline_parallel(bool v) { return set("pipeline_parallel", v, shown(v)); }
framework_builder& framework_builder::interleaving(bool v) { return set("interleaving", v, shown(v)); }
framework_builder& framework_builder::context_parallel(bool v) { return set("context_parallel", v, shown(v)); }
framework_builder& framework_builder::sequence_parallel(bool v) { return set("sequence_parallel", v, shown(v)); }
framework_builder& framework_builder::tp_without_sequence_parallel(bool v) {
  return set("tp_without_sequence_parallel", v, shown(v));
}
framework_builder& framework_builder::zero0_with_model_parallel(bool v) {
  return set("zero0_with_model_parallel", v, shown(v));
}
framework_builder& framework_builder::hybrid_sharding(bool v) { return set("hybrid_sharding", v, shown(v)); }
framework_builder& framework_builder::checkpoint_modes(std::initializer_list<checkpoint_mode> v) {
  key_setting set(std::initializer_list<std::string_view>{});
  for (auto m : v) set.names.emplace_back(name(m));
  set.shown = fmt::format("{{{}}}", fmt::join(set.names, ", "));
  return with("checkpoint_modes", set);
}
framework_builder& framework_builder::dispatch_latency(seconds v) { return set("dispatch_latency", v.value(), shown(v)); }
framework_builder& framework_builder::step_overhead(seconds v) { return set("step_overhead", v.value(), shown(v)); }

planner::framework framework_builder::build() const { return built(f_, block_kind::framework); }

strategy_builder::strategy_builder(std::string name) { s_.name = std::move(name); }

strategy_builder& strategy_builder::set(std::string_view key, key_choice<key_value> c,
                                        std::vector<std::string> const& texts) {
  auto const* row = find_key(block_kind::strategy, key);
  if (!row) throw std::logic_error(fmt::format("no key '{}' in a 'strategy' block", key));
  using form = choice_form::form;
  if (c.f == form::set && c.values.empty()) throw error(fmt::format("an empty set leaves no value for '{}'", key));
  std::unordered_set<key_value, key_value_hash> seen;
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    if (auto problem = invalid(*row, c.values[i], texts[i])) throw error(*problem);
    if (!seen.insert(c.values[i]).second) throw error(fmt::format("{} appears twice in the set", texts[i]));
  }
  if (c.f == form::range) {
    for (auto bound : {c.low, c.high})
      if (auto problem = invalid(*row, bound, shown(bound))) throw error(*problem);
    if (c.low > c.high)
      throw error(fmt::format("range {}..{} is empty: its first bound is above its last", c.low, c.high));
  }
  std::get<strategy_access>(row->field).store(s_, c);
  return *this;
}

#define DTPLAN_EDSL_COUNT_KEY(key)                                                          \
  strategy_builder& strategy_builder::key(std::int64_t v) {                                 \
    auto [c, texts] = one(v);                                                               \
    return set(#key, std::move(c), texts);                                                  \
  }                                                                                         \
  strategy_builder& strategy_builder::key(std::initializer_list<std::int64_t> v) {          \
    auto [c, texts] = set_of(v);                                                            \
    return set(#key, std::move(c), texts);                                                  \
  }                                                                                         \
  strategy_builder& strategy_builder::key(range_t v) {                                      \
    key_choice<key_value> c;                                                                \
    c.f = choice_form::form::range;                                                         \
    c.low = v.low;                                                                          \
    c.high = v.high;                                                                        \
    return set(#key, std::move(c), {});                                                    \
  }                                                                                         \
  strategy_builder& strategy_builder::key(any_t) { return set(#key, key_choice<key_value>::any(), {}); }
DTPLAN_EDSL_COUNT_KEY(dp)
DTPLAN_EDSL_COUNT_KEY(tp)
DTPLAN_EDSL_COUNT_KEY(pp)
DTPLAN_EDSL_COUNT_KEY(cp)
DTPLAN_EDSL_COUNT_KEY(ep)
DTPLAN_EDSL_COUNT_KEY(etp)
DTPLAN_EDSL_COUNT_KEY(zero)
DTPLAN_EDSL_COUNT_KEY(micro_batch)
DTPLAN_EDSL_COUNT_KEY(virtual_stages)
#undef DTPLAN_EDSL_COUNT_KEY

strategy_builder& strategy_builder::shard(shard_group v) {
  auto [c, texts] = one(v);
  return set("shard", std::move(c), texts);
}
strategy_builder& strategy_builder::shard(std::int64_t ranks) {
  return shard(shard_group{shard_group::kind::size, ranks});
}
strategy_builder& strategy_builder::shard(std::initializer_list<shard_group> v) {
  auto [c, texts] = set_of(v);
  return set("shard", std::move(c), texts);
}
strategy_builder& strategy_builder::shard(any_t) { return set("shard", key_choice<key_value>::any(), {}); }
strategy_builder& strategy_builder::checkpoint(checkpoint_mode v) {
  auto [c, texts] = one(v);
  return set("checkpoint", std::move(c), texts);
}
strategy_builder& strategy_builder::checkpoint(std::initializer_list<checkpoint_mode> v) {
  auto [c, texts] = set_of(v);
  return set("checkpoint", std::move(c), texts);
}
strategy_builder& strategy_builder::checkpoint(any_t) {
  return set("checkpoint", key_choice<key_value>::any(), {});
}
strategy_builder& strategy_builder::sequence_parallel(bool v) {
  auto [c, texts] = one(v);
  return set("sequence_parallel", std::move(c), texts);
}
strategy_builder& strategy_builder::sequence_parallel(any_t) {
  return set("sequence_parallel", key_choice<key_value>::any(), {});
}
strategy_builder& strategy_builder::order(rank_order v) {
  auto [c, texts] = one(v);
  return set("order", std::move(c), texts);
}
strategy_builder& strategy_builder::order(std::string_view text) {
  auto parsed = parse_order(text);
  if (!parsed)
    throw error(fmt::format(
        "expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for 'order', got \"{}\"", text));
  return order(*parsed);
}
strategy_builder& strategy_builder::order(std::initializer_list<rank_order> v) {
  auto [c, texts] = set_of(v);
  return set("order", std::move(c), texts);
}
strategy_builder& strategy_builder::order(any_t) { return set("order", key_choice<key_value>::any(), {}); }

model_builder model(std::string name) { return model_builder(std::move(name)); }
model_builder model(std::string name, planner::model const& base) {
  return model_builder(std::move(name), base);
}
gpu_builder gpu(std::string name) { return gpu_builder(std::move(name)); }
gpu_builder gpu(std::string name, planner::gpu const& base) {
  return gpu_builder(std::move(name), base);
}
cluster_builder cluster(std::string name) { return cluster_builder(std::move(name)); }
training_builder training() { return {}; }
strategy_builder strategy(std::string name) { return strategy_builder(std::move(name)); }
framework_builder framework(std::string name) { return framework_builder(std::move(name)); }
framework_builder framework(std::string name, planner::framework const& base) {
  return framework_builder(std::move(name), base);
}

program plan(planner::model const& m, planner::cluster const& c, planner::training const& t,
             std::vector<strategy_spec> const& strategies, planner::framework const& f) {
  if (auto limit = beyond_limits(m, t)) throw error(limit->message);
  if (auto limit = beyond_limits(m, c.device)) throw error(limit->message);
  program p;
  p.file = "<embedded>";
  p.model = m;
  p.cluster = c;
  p.training = t;
  p.framework = f;
  use_framework(p.training, p.framework);
  resolve_auto(p.training, c.device);
  resolve_auto(p.framework.behaviours, c.device);
  std::size_t unnamed = 0;
  for (auto s : strategies) {
    if (s.name.empty()) s.name = fmt::format("strategy#{}", ++unnamed);
    p.strategies.push_back(std::move(s));
  }
  return p;
}

program plan(planner::model const& m, planner::cluster const& c, planner::training const& t,
             std::vector<strategy_spec> const& strategies) {
  return plan(m, c, t, strategies, catalog_framework(t.framework));
}

}  // namespace dtplan::planner::edsl
