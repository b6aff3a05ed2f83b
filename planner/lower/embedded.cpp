#include "planner/lower/embedded.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "dsl/diagnostics.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner::edsl {

namespace {

// Keys set in C++ have no place in a file; an invalid span still records
// that the key was written, which is what lowering's defaults look at.
void written(key_spans& keys, char const* key) { keys[key] = span{}; }

// A catalog entry's spans point into the catalog's own source manager, which
// the caller never sees: keep which keys were written, forget where.
void detach(key_spans& keys) {
  for (auto& entry : keys) entry.second = span{};
}
planner::gpu detached(planner::gpu g) {
  g.where = {};
  detach(g.keys);
  return g;
}
planner::model detached(planner::model m) {
  m.where = {};
  detach(m.keys);
  return m;
}

// "key 'layers'" or "keys 'hidden', 'heads' and 'vocab'", as lowering says it.
std::string missing_keys(key_spans const& present, std::vector<std::string> const& required) {
  std::vector<std::string> absent;
  for (auto const& k : required)
    if (!present.count(k)) absent.push_back(fmt::format("'{}'", k));
  if (absent.empty()) return {};
  std::string list = absent.front();
  for (std::size_t i = 1; i < absent.size(); ++i)
    list += (i + 1 == absent.size() ? " and " : ", ") + absent[i];
  return fmt::format("key{} {}", absent.size() > 1 ? "s" : "", list);
}

std::string describe(char const* kind, std::string const& name) {
  return name.empty() ? fmt::format("this '{}' block", kind) : fmt::format("{} '{}'", kind, name);
}

void require_above_zero(char const* key, double v, std::string const& shown) {
  if (!(v > 0)) throw error(fmt::format("'{}' must be above zero, got {}", key, shown));
}

template <class T>
std::string unit_text(T v) {
  return to_string(v);
}

std::string suggestion(std::string_view name, std::vector<std::string> const& names) {
  auto near = dsl::closest(name, names);
  return near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near);
}

template <class T>
key_choice<T> set_of(char const* key, std::initializer_list<T> values,
                     std::string (*show)(T const&)) {
  if (values.size() == 0) throw error(fmt::format("an empty set leaves no value for '{}'", key));
  key_choice<T> c;
  c.f = key_choice<T>::form::set;
  for (auto const& v : values) {
    if (std::find(c.values.begin(), c.values.end(), v) != c.values.end())
      throw error(fmt::format("{} appears twice in the set", show(v)));
    c.values.push_back(v);
  }
  return c;
}


std::string show_count(std::int64_t const& v) { return std::to_string(v); }
std::string show_checkpoint(checkpoint_mode const& v) { return fmt::format("'{}'", name(v)); }
std::string show_shard(shard_group const& v) {
  return v.k == shard_group::kind::size ? std::to_string(v.size) : fmt::format("'{}'", to_string(v));
}
std::string show_order(rank_order const& v) { return fmt::format("\"{}\"", to_string(v)); }

void check_count(char const* key, std::int64_t v, std::int64_t low, std::int64_t high) {
  if (high == INT64_MAX && v < low)
    throw error(fmt::format("'{}' must be at least {}, got {}", key, low, v));
  if (v < low || v > high)
    throw error(fmt::format("'{}' must be between {} and {}, got {}", key, low, high, v));
}

std::int64_t high_of(char const* key) { return std::string_view(key) == "zero" ? 3 : INT64_MAX; }
std::int64_t low_of(char const* key) { return std::string_view(key) == "zero" ? 0 : 1; }

}  // namespace

planner::gpu catalog_gpu(std::string_view name) {
  if (auto g = planner::catalog_gpu(name)) return detached(*g);
  throw error(fmt::format("unknown gpu '{}'{}", name, suggestion(name, catalog_gpu_names())));
}

planner::model preset_model(std::string_view name) {
  if (auto m = planner::catalog_model(name)) return detached(*m);
  throw error(fmt::format("unknown model '{}'{}", name, suggestion(name, catalog_model_names())));
}

model_builder::model_builder(std::string name) { m_.name = std::move(name); }

model_builder::model_builder(std::string name, planner::model const& base) : m_(detached(base)) {
  m_.name = std::move(name);
}

model_builder& model_builder::count(std::int64_t planner::model::*field, char const* key,
                                    std::int64_t v, std::int64_t low) {
  check_count(key, v, low, INT64_MAX);
  m_.*field = v;
  written(m_.keys, key);
  return *this;
}

model_builder& model_builder::description(std::string v) {
  m_.description = std::move(v);
  written(m_.keys, "description");
  return *this;
}
model_builder& model_builder::layers(std::int64_t v) { return count(&planner::model::layers, "layers", v); }
model_builder& model_builder::hidden(std::int64_t v) { return count(&planner::model::hidden, "hidden", v); }
model_builder& model_builder::heads(std::int64_t v) { return count(&planner::model::heads, "heads", v); }
model_builder& model_builder::kv_heads(std::int64_t v) {
  return count(&planner::model::kv_heads, "kv_heads", v);
}
model_builder& model_builder::ffn(std::int64_t v) { return count(&planner::model::ffn, "ffn", v); }
model_builder& model_builder::vocab(std::int64_t v) { return count(&planner::model::vocab, "vocab", v); }
model_builder& model_builder::seq_len(std::int64_t v) {
  return count(&planner::model::seq_len, "seq_len", v);
}
model_builder& model_builder::experts(std::int64_t v) {
  return count(&planner::model::experts, "experts", v);
}
model_builder& model_builder::experts_per_token(std::int64_t v) {
  return count(&planner::model::experts_per_token, "experts_per_token", v);
}
model_builder& model_builder::mlp(mlp_kind v) {
  m_.mlp = v;
  written(m_.keys, "mlp");
  return *this;
}
model_builder& model_builder::tied_embeddings(bool v) {
  m_.tied_embeddings = v;
  written(m_.keys, "tied_embeddings");
  return *this;
}
model_builder& model_builder::dropout(bool v) {
  m_.dropout = v;
  written(m_.keys, "dropout");
  return *this;
}
model_builder& model_builder::attention(attention_kind v) {
  m_.attention = v;
  written(m_.keys, "attention");
  return *this;
}
model_builder& model_builder::precision(planner::precision v) {
  m_.prec = v;
  written(m_.keys, "precision");
  return *this;
}
model_builder& model_builder::optimizer(optimizer_kind v) {
  m_.optimizer = v;
  written(m_.keys, "optimizer");
  return *this;
}

planner::model model_builder::build() const {
  auto m = m_;
  auto absent = missing_keys(m.keys, {"layers", "hidden", "heads", "vocab", "seq_len"});
  if (!absent.empty())
    throw error(fmt::format("{} is missing required {}", describe("model", m.name), absent));
  if (!m.keys.count("kv_heads")) m.kv_heads = m.heads;
  if (!m.keys.count("ffn")) {
    if (m.hidden > INT64_MAX / 4)
      throw error(fmt::format("'hidden' = {} is too large to derive 'ffn' = 4 x hidden", m.hidden));
    m.ffn = 4 * m.hidden;
  }
  if (m.hidden % m.heads != 0)
    throw error(fmt::format("'hidden' ({}) must be a multiple of 'heads' ({})", m.hidden, m.heads));
  if (m.heads % m.kv_heads != 0)
    throw error(
        fmt::format("'heads' ({}) must be a multiple of 'kv_heads' ({})", m.heads, m.kv_heads));
  if (m.experts_per_token > m.experts)
    throw error(fmt::format("'experts_per_token' ({}) cannot exceed 'experts' ({})",
                            m.experts_per_token, m.experts));
  if (auto limit = beyond_limits(m, describe("model", m.name))) throw error(limit->message);
  return m;
}

gpu_builder::gpu_builder(std::string name) {
  // A new gpu block starts from lowering's defaults.
  g_.intra_latency = seconds(5e-6);
  g_.inter_latency = seconds(10e-6);
  g_.reserved = bytes(2.0 * 1024 * 1024 * 1024);
  g_.name = std::move(name);
}

gpu_builder::gpu_builder(std::string name, planner::gpu const& base) : g_(detached(base)) {
  g_.name = std::move(name);
}

gpu_builder& gpu_builder::description(std::string) {
  written(g_.keys, "description");
  return *this;
}
gpu_builder& gpu_builder::memory(bytes v) {
  require_above_zero("memory", v.value(), unit_text(v));
  g_.memory = v;
  written(g_.keys, "memory");
  return *this;
}
gpu_builder& gpu_builder::reserved(bytes v) {
  if (v.value() < 0) throw error(fmt::format("'reserved' must not be negative, got {}", unit_text(v)));
  g_.reserved = v;
  written(g_.keys, "reserved");
  return *this;
}
gpu_builder& gpu_builder::peak_flops(flop_rate v) {
  require_above_zero("peak_flops", v.value(), unit_text(v));
  g_.peak_flops = v;
  written(g_.keys, "peak_flops");
  return *this;
}
gpu_builder& gpu_builder::peak_flops_fp8(flop_rate v) {
  require_above_zero("peak_flops_fp8", v.value(), unit_text(v));
  g_.peak_flops_fp8 = v;
  written(g_.keys, "peak_flops_fp8");
  return *this;
}
gpu_builder& gpu_builder::peak_flops_fp32(flop_rate v) {
  require_above_zero("peak_flops_fp32", v.value(), unit_text(v));
  g_.peak_flops_fp32 = v;
  written(g_.keys, "peak_flops_fp32");
  return *this;
}
gpu_builder& gpu_builder::hbm_bandwidth(bandwidth v) {
  require_above_zero("hbm_bandwidth", v.value(), unit_text(v));
  g_.hbm_bandwidth = v;
  written(g_.keys, "hbm_bandwidth");
  return *this;
}
gpu_builder& gpu_builder::intra_node(bandwidth v) {
  require_above_zero("intra_node", v.value(), unit_text(v));
  g_.intra_node = v;
  written(g_.keys, "intra_node");
  return *this;
}
gpu_builder& gpu_builder::intra_latency(seconds v) {
  if (v.value() < 0) throw error(fmt::format("'intra_latency' must not be negative, got {}", unit_text(v)));
  g_.intra_latency = v;
  written(g_.keys, "intra_latency");
  return *this;
}
gpu_builder& gpu_builder::inter_latency(seconds v) {
  if (v.value() < 0) throw error(fmt::format("'inter_latency' must not be negative, got {}", unit_text(v)));
  g_.inter_latency = v;
  written(g_.keys, "inter_latency");
  return *this;
}
gpu_builder& gpu_builder::fraction(double planner::gpu::*field, char const* key, double v) {
  if (!(v > 0 && v <= 1))
    throw error(fmt::format("expected a fraction in (0, 1] for '{}', got {}", key, v));
  g_.*field = v;
  written(g_.keys, key);
  return *this;
}
gpu_builder& gpu_builder::matmul_efficiency(double v) {
  return fraction(&planner::gpu::matmul_efficiency, "matmul_efficiency", v);
}
gpu_builder& gpu_builder::comm_efficiency(double v) {
  return fraction(&planner::gpu::comm_efficiency, "comm_efficiency", v);
}
gpu_builder& gpu_builder::hbm_efficiency(double v) {
  return fraction(&planner::gpu::hbm_efficiency, "hbm_efficiency", v);
}

planner::gpu gpu_builder::build() const {
  auto g = g_;
  auto absent = missing_keys(g.keys, {"memory", "peak_flops", "hbm_bandwidth", "intra_node"});
  if (!absent.empty())
    throw error(fmt::format("{} is missing required {}", describe("gpu", g.name), absent));
  if (!g.keys.count("peak_flops_fp8")) g.peak_flops_fp8 = g.peak_flops;
  if (!g.keys.count("peak_flops_fp32")) g.peak_flops_fp32 = g.peak_flops / 2;
  if (g.reserved >= g.memory)
    throw error(fmt::format("'reserved' ({}) leaves nothing of 'memory' ({}) for the job",
                            to_string(g.reserved), to_string(g.memory)));
  return g;
}

cluster_builder::cluster_builder(std::string name) { c_.name = std::move(name); }

cluster_builder& cluster_builder::description(std::string) {
  written(c_.keys, "description");
  return *this;
}
cluster_builder& cluster_builder::nodes(std::int64_t v) {
  check_count("nodes", v, 1, INT64_MAX);
  c_.nodes = v;
  written(c_.keys, "nodes");
  return *this;
}
cluster_builder& cluster_builder::gpus_per_node(std::int64_t v) {
  check_count("gpus_per_node", v, 1, INT64_MAX);
  c_.gpus_per_node = v;
  written(c_.keys, "gpus_per_node");
  return *this;
}
cluster_builder& cluster_builder::gpu(planner::gpu const& v) {
  c_.device = v;
  has_gpu_ = true;
  written(c_.keys, "gpu");
  return *this;
}
cluster_builder& cluster_builder::gpu(std::string_view catalog_name) {
  return gpu(edsl::catalog_gpu(catalog_name));
}
cluster_builder& cluster_builder::intra_node(bandwidth v) {
  require_above_zero("intra_node", v.value(), unit_text(v));
  c_.intra_node = v;
  written(c_.keys, "intra_node");
  return *this;
}
cluster_builder& cluster_builder::inter_node(bandwidth v) {
  require_above_zero("inter_node", v.value(), unit_text(v));
  c_.inter_node = v;
  written(c_.keys, "inter_node");
  return *this;
}
cluster_builder& cluster_builder::inter_node(std::int64_t nics, bandwidth each) {
  if (nics < 1) throw error(fmt::format("expected at least 1 link before 'x', got {}", nics));
  return inter_node(each * static_cast<double>(nics));
}
cluster_builder& cluster_builder::intra_latency(seconds v) {
  if (v.value() < 0) throw error(fmt::format("'intra_latency' must not be negative, got {}", unit_text(v)));
  c_.intra_latency = v;
  written(c_.keys, "intra_latency");
  return *this;
}
cluster_builder& cluster_builder::inter_latency(seconds v) {
  if (v.value() < 0) throw error(fmt::format("'inter_latency' must not be negative, got {}", unit_text(v)));
  c_.inter_latency = v;
  written(c_.keys, "inter_latency");
  return *this;
}
cluster_builder& cluster_builder::comm_efficiency(double v) {
  if (!(v > 0 && v <= 1))
    throw error(fmt::format("expected a fraction in (0, 1] for 'comm_efficiency', got {}", v));
  c_.comm_efficiency = v;
  written(c_.keys, "comm_efficiency");
  return *this;
}

planner::cluster cluster_builder::build() const {
  auto c = c_;
  auto absent = missing_keys(c.keys, {"nodes", "gpus_per_node", "gpu"});
  if (!absent.empty())
    throw error(fmt::format("{} is missing required {}", describe("cluster", c.name), absent));
  if (auto limit = beyond_limits(c, describe("cluster", c.name))) throw error(limit->message);
  use_gpu_defaults(c);
  if (c.nodes > 1 && !c.keys.count("inter_node"))
    throw error(fmt::format(
        "{} has {} nodes but no 'inter_node' bandwidth (e.g. 'inter_node = 8 x 400 Gbit/s')",
        describe("cluster", c.name), c.nodes));
  return c;
}

training_builder& training_builder::description(std::string) {
  written(t_.keys, "description");
  return *this;
}
training_builder& training_builder::global_batch(std::int64_t v) {
  check_count("global_batch", v, 1, INT64_MAX);
  t_.global_batch = v;
  written(t_.keys, "global_batch");
  return *this;
}
training_builder& training_builder::base_lr(double v) {
  require_above_zero("base_lr", v, fmt::format("{}", v));
  t_.base_lr = v;
  written(t_.keys, "base_lr");
  return *this;
}
training_builder& training_builder::base_batch(std::int64_t v) {
  check_count("base_batch", v, 1, INT64_MAX);
  t_.base_batch = v;
  written(t_.keys, "base_batch");
  return *this;
}
training_builder& training_builder::grad_precision(precision v) {
  if (v == precision::fp8) throw error("expected 'bf16', 'fp16' or 'fp32' for 'grad_precision', got 'fp8'");
  t_.grad_precision = v;
  written(t_.keys, "grad_precision");
  return *this;
}
training_builder& training_builder::overlap_grad_sync(bool v) {
  t_.overlap_grad_sync = v;
  written(t_.keys, "overlap_grad_sync");
  return *this;
}
training_builder& training_builder::grad_reduce_scatter(bool v) {
  t_.grad_reduce_scatter = v;
  written(t_.keys, "grad_reduce");
  return *this;
}

training_builder& training_builder::cross_entropy(cross_entropy_kind v) {
  t_.cross_entropy = v;
  written(t_.keys, "cross_entropy");
  return *this;
}

planner::training training_builder::build() const {
  if (!t_.keys.count("global_batch"))
    throw error("the 'training' block is missing required key 'global_batch'");
  return t_;
}

strategy_builder::strategy_builder(std::string name) { s_.name = std::move(name); }

strategy_builder& strategy_builder::count(key_choice<std::int64_t> strategy_spec::*field,
                                          char const* key, key_choice<std::int64_t> c) {
  auto low = low_of(key);
  auto high = high_of(key);
  for (auto v : c.values) check_count(key, v, low, high);
  if (c.f == key_choice<std::int64_t>::form::range) {
    check_count(key, c.low, low, high);
    check_count(key, c.high, low, high);
    if (c.low > c.high)
      throw error(fmt::format("range {}..{} is empty: its first bound is above its last", c.low,
                              c.high));
  }
  s_.*field = std::move(c);
  return *this;
}

#define DTPLAN_EDSL_COUNT_KEY(key)                                                        \
  strategy_builder& strategy_builder::key(std::int64_t v) {                               \
    return count(&strategy_spec::key, #key, key_choice<std::int64_t>::one(v));                                   \
  }                                                                                       \
  strategy_builder& strategy_builder::key(std::initializer_list<std::int64_t> v) {        \
    return count(&strategy_spec::key, #key, set_of<std::int64_t>(#key, v, show_count));   \
  }                                                                                       \
  strategy_builder& strategy_builder::key(range_t v) {                                    \
    key_choice<std::int64_t> c;                                                           \
    c.f = key_choice<std::int64_t>::form::range;                                          \
    c.low = v.low;                                                                        \
    c.high = v.high;                                                                      \
    return count(&strategy_spec::key, #key, c);                                           \
  }                                                                                       \
  strategy_builder& strategy_builder::key(any_t) {                                        \
    return count(&strategy_spec::key, #key, key_choice<std::int64_t>::any());                  \
  }
DTPLAN_EDSL_COUNT_KEY(dp)
DTPLAN_EDSL_COUNT_KEY(tp)
DTPLAN_EDSL_COUNT_KEY(pp)
DTPLAN_EDSL_COUNT_KEY(cp)
DTPLAN_EDSL_COUNT_KEY(ep)
DTPLAN_EDSL_COUNT_KEY(zero)
DTPLAN_EDSL_COUNT_KEY(micro_batch)
DTPLAN_EDSL_COUNT_KEY(virtual_stages)
#undef DTPLAN_EDSL_COUNT_KEY

strategy_builder& strategy_builder::shard(shard_group v) {
  if (v.k == shard_group::kind::size) check_count("shard", v.size, 1, INT64_MAX);
  s_.shard = key_choice<shard_group>::one(v);
  return *this;
}
strategy_builder& strategy_builder::shard(std::int64_t ranks) {
  return shard(shard_group{shard_group::kind::size, ranks});
}
strategy_builder& strategy_builder::shard(std::initializer_list<shard_group> v) {
  for (auto const& g : v)
    if (g.k == shard_group::kind::size) check_count("shard", g.size, 1, INT64_MAX);
  s_.shard = set_of<shard_group>("shard", v, show_shard);
  return *this;
}
strategy_builder& strategy_builder::shard(any_t) {
  s_.shard = key_choice<shard_group>::any();
  return *this;
}
strategy_builder& strategy_builder::checkpoint(checkpoint_mode v) {
  s_.checkpoint = key_choice<checkpoint_mode>::one(v);
  return *this;
}
strategy_builder& strategy_builder::checkpoint(std::initializer_list<checkpoint_mode> v) {
  s_.checkpoint = set_of<checkpoint_mode>("checkpoint", v, show_checkpoint);
  return *this;
}
strategy_builder& strategy_builder::checkpoint(any_t) {
  s_.checkpoint = key_choice<checkpoint_mode>::any();
  return *this;
}
strategy_builder& strategy_builder::sequence_parallel(bool v) {
  s_.sequence_parallel = key_choice<bool>::one(v);
  return *this;
}
strategy_builder& strategy_builder::sequence_parallel(any_t) {
  s_.sequence_parallel = key_choice<bool>::any();
  return *this;
}
strategy_builder& strategy_builder::order(rank_order v) {
  std::set<axis> seen(v.begin(), v.end());
  if (seen.size() != v.size())
    throw error(fmt::format(
        "expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for 'order', got \"{}\"",
        to_string(v)));
  s_.order = key_choice<rank_order>::one(v);
  return *this;
}
strategy_builder& strategy_builder::order(std::string_view text) {
  rank_order o{};
  std::set<std::string_view> seen;
  std::size_t n = 0;
  bool ok = true;
  for (std::size_t start = 0; ok;) {
    auto dash = text.find('-', start);
    auto part = text.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start);
    ok = n < 4 && seen.insert(part).second;
    if (part == "tp") o[n++] = axis::tp;
    else if (part == "cp") o[n++] = axis::cp;
    else if (part == "dp") o[n++] = axis::dp;
    else if (part == "pp") o[n++] = axis::pp;
    else ok = false;
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (!ok || n != 4)
    throw error(fmt::format(
        "expected an order of tp, cp, dp and pp such as \"tp-cp-dp-pp\" for 'order', got \"{}\"",
        text));
  s_.order = key_choice<rank_order>::one(o);
  return *this;
}
strategy_builder& strategy_builder::order(std::initializer_list<rank_order> v) {
  s_.order = set_of<rank_order>("order", v, show_order);
  return *this;
}
strategy_builder& strategy_builder::order(any_t) {
  s_.order = key_choice<rank_order>::any();
  return *this;
}

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

program plan(planner::model const& m, planner::cluster const& c, planner::training const& t,
             std::vector<strategy_spec> const& strategies) {
  if (auto limit = beyond_limits(m, t)) throw error(limit->message);
  program p;
  p.file = "<embedded>";
  p.model = m;
  p.cluster = c;
  p.training = t;
  std::size_t unnamed = 0;
  for (auto s : strategies) {
    if (s.name.empty()) s.name = fmt::format("strategy#{}", ++unnamed);
    p.strategies.push_back(std::move(s));
  }
  return p;
}

}  // namespace dtplan::planner::edsl
