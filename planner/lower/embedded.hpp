#pragma once
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/keys.hpp"
#include "planner/ir/units.hpp"

/// The .dtp vocabulary as an embedded C++ DSL: builders with the same key
/// names as the text, producing the same IR as lowering does (same
/// defaults, same required keys, same value checks).
///
/// ```
/// using namespace dtplan::planner::edsl;
/// auto m = model("my7b").layers(32).hidden(4096).heads(32).ffn(11008).mlp(swiglu)
///              .vocab(32000).seq_len(4096);
/// auto c = cluster("two_nodes").nodes(2).gpus_per_node(8).gpu(catalog_gpu("H100_SXM"))
///              .inter_node(100_Gbitps);
/// auto s = strategy("current").dp(16).zero(1).checkpoint(selective);
/// auto free = strategy("search").tp({1, 2, 4, 8}).pp(range(1, 4)).zero(any);
/// program p = plan(m, c, training().global_batch(256), {s, free});
/// program mc = plan(m, c, training().global_batch(256).framework("megatron"), {s});
/// planner::framework mine = framework("mine", catalog_framework("megatron")).with("tp_comm_overlap", true);
/// program q = plan(m, c, training().global_batch(256), {s}, mine);
/// ```
/// Misuse (a missing required key, a value out of range) throws
/// `edsl::error` with the message lowering would print for the same text:
/// every value is checked against the key table (planner/ir/keys.hpp), and
/// `build()` applies the same rules as lowering (planner/lower/complete.hpp).
namespace dtplan::planner::edsl {

using namespace dtplan::planner::literals;

/// What lowering would report for the same plan written as text.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// `auto` (a C++ keyword, hence `any`): search every valid value.
struct any_t {};
inline constexpr any_t any{};

/// `low..high`, both included.
struct range_t {
  std::int64_t low = 0;
  std::int64_t high = 0;
};
constexpr range_t range(std::int64_t low, std::int64_t high) { return {low, high}; }

inline constexpr mlp_kind gelu = mlp_kind::gelu;
inline constexpr mlp_kind swiglu = mlp_kind::swiglu;
inline constexpr norm_kind layernorm = norm_kind::layernorm;
inline constexpr norm_kind rmsnorm = norm_kind::rmsnorm;
inline constexpr position_kind learned = position_kind::learned;
inline constexpr position_kind rotary = position_kind::rotary;
inline constexpr position_kind alibi = position_kind::alibi;
inline constexpr attention_kind flash = attention_kind::flash;
inline constexpr attention_kind standard = attention_kind::standard;
inline constexpr precision bf16 = precision::bf16;
inline constexpr precision fp16 = precision::fp16;
inline constexpr precision fp32 = precision::fp32;
inline constexpr precision fp8 = precision::fp8;
inline constexpr precision fp4 = precision::fp4;
inline constexpr optimizer_kind adam = optimizer_kind::adam;
inline constexpr optimizer_kind adamw = optimizer_kind::adamw;
inline constexpr optimizer_kind sgd = optimizer_kind::sgd;
inline constexpr optimizer_kind sgd_momentum = optimizer_kind::sgd_momentum;
inline constexpr checkpoint_mode none = checkpoint_mode::none;
inline constexpr checkpoint_mode selective = checkpoint_mode::selective;
inline constexpr checkpoint_mode full = checkpoint_mode::full;
inline constexpr checkpoint_mode ops = checkpoint_mode::ops;
inline constexpr cross_entropy_kind fused = cross_entropy_kind::fused;
inline constexpr cross_entropy_kind unfused = cross_entropy_kind::unfused;
/// `shard = all` and `shard = node`; a number of ranks is a plain integer.
inline constexpr shard_group all{shard_group::kind::all, 0};
inline constexpr shard_group node{shard_group::kind::node, 0};
/// `shard = N` inside a set: `shard({node, ranks(16)})`.
constexpr shard_group ranks(std::int64_t n) { return {shard_group::kind::size, n}; }

/// A built-in GPU (`gpu = H100_SXM`), with its defaults filled; throws
/// `error` with a "did you mean" for an unknown name.
gpu catalog_gpu(std::string_view name);
/// A built-in model preset (`model m : llama2_7b`); throws like catalog_gpu.
model preset_model(std::string_view name);
/// A built-in framework (`framework = megatron`), its `attention_backend`
/// possibly still `auto` (plan() resolves it); throws like catalog_gpu.
planner::framework catalog_framework(std::string_view name);

/// A value for a key set by name (`builder.with("tp_comm_overlap", true)`):
/// a boolean, a whole number, a plain number, a quantity (bytes, seconds,
/// bandwidth, FLOP/s), the name of a choice ("fp32", "reduce_scatter", "auto")
/// or of a framework, text, or a set for a key that takes one
/// (`.with("zero_stages", {0, 1})`, `.with("checkpoint_modes", {"none", "full"})`).
/// Every key of the table (planner/ir/keys.hpp) takes one this way, checked
/// as the text is, whether or not it has a method of its own.
struct key_setting {
  key_setting(bool v);
  key_setting(int v);
  key_setting(std::int64_t v);
  key_setting(double v);
  key_setting(char const* choice);
  key_setting(std::string_view choice);
  template <class Tag>
  key_setting(unit<Tag> v) : value(v.value()), shown(to_string(v)) {}
  key_setting(std::initializer_list<std::int64_t> set);
  key_setting(std::initializer_list<std::string_view> set);

  key_value value;
  std::string shown;
  bool is_choice = false;
  bool is_set = false;
  std::vector<std::string> names;  ///< a set of choices, by name
};

/// `model NAME [: BASE] { ... }`
class model_builder {
 public:
  explicit model_builder(std::string name);
  model_builder(std::string name, model const& base);

  model_builder& description(std::string v);
  model_builder& layers(std::int64_t v);
  model_builder& hidden(std::int64_t v);
  model_builder& heads(std::int64_t v);
  model_builder& kv_heads(std::int64_t v);
  model_builder& head_dim(std::int64_t v);
  model_builder& qk_norm(bool v = true);
  model_builder& ffn(std::int64_t v);
  model_builder& mlp(mlp_kind v);
  model_builder& norm(norm_kind v);
  model_builder& position_embedding(position_kind v);
  model_builder& vocab(std::int64_t v);
  model_builder& seq_len(std::int64_t v);
  model_builder& tied_embeddings(bool v);
  model_builder& attention(attention_kind v);
  model_builder& precision(planner::precision v);
  model_builder& optimizer(optimizer_kind v);
  model_builder& experts(std::int64_t v);
  model_builder& experts_per_token(std::int64_t v);
  model_builder& dropout(bool v);

  /// The model with lowering's defaults (kv_heads = heads, ffn = 4 x hidden);
  /// throws `error` for a missing required key or an inconsistent shape.
  [[nodiscard]] model build() const;
  operator model() const { return build(); }  // NOLINT: a builder stands for its model

 private:
  model_builder& set(std::string_view key, key_value v, std::string const& shown);

 public:
  /// Any key of the block by its name in the text (key_setting).
  model_builder& with(std::string_view key, key_setting const& v);

 private:
  model m_;
};

/// `gpu NAME [: BASE] { ... }`
class gpu_builder {
 public:
  explicit gpu_builder(std::string name);
  gpu_builder(std::string name, gpu const& base);

  /// Free text; the IR keeps no description of a GPU, only that one was written.
  gpu_builder& description(std::string v);
  gpu_builder& memory(bytes v);
  gpu_builder& peak_flops(flop_rate v);
  gpu_builder& peak_flops_fp8(flop_rate v);
  gpu_builder& peak_flops_fp4(flop_rate v);
  gpu_builder& peak_flops_fp32(flop_rate v);
  gpu_builder& hbm_bandwidth(bandwidth v);
  gpu_builder& intra_node(bandwidth v);
  gpu_builder& matmul_efficiency(double v);
  gpu_builder& reserved(bytes v);
  gpu_builder& intra_latency(seconds v);
  gpu_builder& inter_latency(seconds v);
  gpu_builder& comm_efficiency(double v);
  gpu_builder& hbm_efficiency(double v);
  gpu_builder& sustained_clock(double v);
  gpu_builder& sm_count(std::int64_t v);
  gpu_builder& matmul_tile_overhead(std::int64_t v);
  gpu_builder& matmul_tile_overhead_fp8(std::int64_t v);
  gpu_builder& attention_efficiency(double v);
  gpu_builder& kernel_latency(seconds v);
  gpu_builder& overlap_slowdown(double v);
  gpu_builder& step_overhead(seconds v);
  gpu_builder& dispatch_latency(seconds v);

  /// The GPU with lowering's defaults (fp8 peak = 16-bit peak, fp32 peak =
  /// half of it, 2 GiB reserved, 5 us / 10 us latencies).
  [[nodiscard]] gpu build() const;
  operator gpu() const { return build(); }  // NOLINT: a builder stands for its GPU

 private:
  gpu_builder& set(std::string_view key, key_value v, std::string const& shown);

 public:
  /// Any key of the block by its name in the text (key_setting).
  gpu_builder& with(std::string_view key, key_setting const& v);

 private:
  gpu g_;
};

/// `cluster NAME { ... }`
class cluster_builder {
 public:
  explicit cluster_builder(std::string name);

  /// Free text; the IR keeps no description of a cluster, only that one was written.
  cluster_builder& description(std::string v);
  cluster_builder& nodes(std::int64_t v);
  cluster_builder& gpus_per_node(std::int64_t v);
  cluster_builder& gpu(planner::gpu const& v);
  /// `gpu = NAME` for a built-in GPU.
  cluster_builder& gpu(std::string_view catalog_name);
  cluster_builder& intra_node(bandwidth v);
  cluster_builder& inter_node(bandwidth v);
  /// `inter_node = N x BANDWIDTH`: N NICs of that bandwidth.
  cluster_builder& inter_node(std::int64_t nics, bandwidth each);
  cluster_builder& intra_latency(seconds v);
  cluster_builder& inter_latency(seconds v);
  cluster_builder& comm_efficiency(double v);

  /// The cluster with the GPU's defaults for the links it does not set;
  /// throws `error` when a required key is missing (inter_node with nodes > 1).
  [[nodiscard]] cluster build() const;
  operator cluster() const { return build(); }  // NOLINT: a builder stands for its cluster

 private:
  cluster_builder& set(std::string_view key, key_value v, std::string const& shown);

 public:
  /// Any key of the block by its name in the text (key_setting).
  cluster_builder& with(std::string_view key, key_setting const& v);

 private:
  cluster c_;
};

/// `training { ... }`
class training_builder {
 public:
  /// Free text; the IR keeps no description of a run, only that one was written.
  training_builder& description(std::string v);
  training_builder& global_batch(std::int64_t v);
  training_builder& base_lr(double v);
  training_builder& base_batch(std::int64_t v);
  /// `cross_entropy = fused | unfused`.
  training_builder& cross_entropy(cross_entropy_kind v);
  /// bf16, fp16 or fp32 (fp8 is no gradient precision: throws).
  training_builder& grad_precision(precision v);
  training_builder& overlap_grad_sync(bool v);
  /// ZeRO-1/2 gradient reduction: true reduce-scatter (default), false all-reduce.
  training_builder& grad_reduce_scatter(bool v);
  /// `framework = NAME`: a built-in framework, resolved by plan() (which
  /// throws lowering's "unknown framework" for a name the catalog lacks). The
  /// behaviours this builder sets override the framework's.
  training_builder& framework(std::string_view name);
  /// `attention_backend = ...`; `automatic` is `auto`, resolved by plan().
  training_builder& attention_backend(planner::attention_backend v);

  [[nodiscard]] training build() const;
  operator training() const { return build(); }  // NOLINT: a builder stands for its block

 private:
  training_builder& set(std::string_view key, key_value v, std::string const& shown);

 public:
  /// Any key of the block by its name in the text (key_setting).
  training_builder& with(std::string_view key, key_setting const& v);

 private:
  training t_ = with_defaults<training>();
};

/// `framework NAME [: BASE] { ... }`: its run-time behaviours (any key of
/// the training block that a framework sets, by name: `.with("grad_sync",
/// "per_micro_batch")`), what it can run and its figures.
class framework_builder {
 public:
  explicit framework_builder(std::string name);
  framework_builder(std::string name, planner::framework const& base);

  framework_builder& description(std::string v);
  /// The ZeRO stages it runs: `zero_stages({0, 1})`.
  framework_builder& zero_stages(std::initializer_list<std::int64_t> v);
  framework_builder& pipeline_max_zero(std::int64_t v);
  framework_builder& bf16_min_zero(std::int64_t v);
  framework_builder& tensor_parallel(bool v);
  framework_builder& pipeline_parallel(bool v);
  framework_builder& interleaving(bool v);
  framework_builder& context_parallel(bool v);
  framework_builder& sequence_parallel(bool v);
  framework_builder& tp_without_sequence_parallel(bool v);
  framework_builder& zero0_with_model_parallel(bool v);
  framework_builder& hybrid_sharding(bool v);
  framework_builder& checkpoint_modes(std::initializer_list<checkpoint_mode> v);
  framework_builder& dispatch_latency(seconds v);
  framework_builder& step_overhead(seconds v);

  [[nodiscard]] planner::framework build() const;
  operator planner::framework() const { return build(); }  // NOLINT: a builder stands for its framework

  /// Any key of the block by its name in the text (key_setting).
  framework_builder& with(std::string_view key, key_setting const& v);

 private:
  framework_builder& set(std::string_view key, key_value v, std::string const& shown);
  planner::framework f_;
};

/// `strategy [NAME] { ... }`: each key takes one value, a set `{...}`, a
/// `range(a, b)` (whole-number keys) or `any` (`auto` in the text).
class strategy_builder {
 public:
  explicit strategy_builder(std::string name = {});

#define DTPLAN_EDSL_COUNT_KEY(key)                            \
  strategy_builder& key(std::int64_t v);                      \
  strategy_builder& key(std::initializer_list<std::int64_t> v); \
  strategy_builder& key(range_t v);                           \
  strategy_builder& key(any_t);
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

  strategy_builder& shard(shard_group v);
  /// `shard = N`: shard over groups of N data-parallel ranks.
  strategy_builder& shard(std::int64_t ranks);
  strategy_builder& shard(std::initializer_list<shard_group> v);
  strategy_builder& shard(any_t);
  strategy_builder& checkpoint(checkpoint_mode v);
  strategy_builder& checkpoint(std::initializer_list<checkpoint_mode> v);
  strategy_builder& checkpoint(any_t);
  strategy_builder& sequence_parallel(bool v);
  strategy_builder& sequence_parallel(any_t);
  strategy_builder& order(rank_order v);
  /// `order = "tp-cp-dp-pp"`: throws `error` unless it names each axis once.
  strategy_builder& order(std::string_view v);
  strategy_builder& order(std::initializer_list<rank_order> v);
  strategy_builder& order(any_t);

  /// The strategy as written (name "" stays unnamed until `plan` numbers it).
  [[nodiscard]] strategy_spec build() const { return s_; }
  operator strategy_spec() const { return s_; }  // NOLINT: a builder stands for its block

 private:
  /// Checks `c` against the key table (`shown`: each value as a file writes it) and stores it.
  strategy_builder& set(std::string_view key, key_choice<key_value> c, std::vector<std::string> const& shown);
  strategy_spec s_;
};

model_builder model(std::string name);
/// `model NAME : BASE`, e.g. `model("my7b", preset_model("llama2_7b")).seq_len(8192)`.
model_builder model(std::string name, planner::model const& base);
gpu_builder gpu(std::string name);
gpu_builder gpu(std::string name, planner::gpu const& base);
cluster_builder cluster(std::string name);
training_builder training();
strategy_builder strategy(std::string name = {});
framework_builder framework(std::string name);
/// `framework NAME : BASE`, e.g. `framework("mine", catalog_framework("megatron"))`.
framework_builder framework(std::string name, planner::framework const& base);

/// The program lowering would produce for the same blocks written as text:
/// the framework `t` names (the built-in `generic` unless it names one)
/// resolved as lowering resolves it; unnamed strategies are called
/// "strategy#1", "strategy#2", ... as there.
program plan(planner::model const& m, planner::cluster const& c, planner::training const& t,
             std::vector<strategy_spec> const& strategies = {});
/// The same with a framework of the program's own, as a file's framework
/// block that `t` names (whatever name `t` holds, `f` is the one used).
program plan(planner::model const& m, planner::cluster const& c, planner::training const& t,
             std::vector<strategy_spec> const& strategies, planner::framework const& f);

}  // namespace dtplan::planner::edsl
