#include "planner/ir/keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <type_traits>


namespace dtplan::planner {

namespace {

// How a member's type becomes a key_value and back: enums by value (the
// index of their name in `choices`), unit types in base units.
template <class T>
struct is_unit : std::false_type {};
template <class Tag>
struct is_unit<unit<Tag>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class M>
struct member_of;
template <class T, class B>
struct member_of<T B::*> {
  using type = T;
  using block = B;
};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class C>
struct choice_of;
template <class T>
struct choice_of<key_choice<T>> {
  using type = T;
};

template <class T>
key_value to_value(T const& v) {
  if constexpr (is_vector<T>::value) {
    value_set out;
    for (auto const& x : v) out.push_back(std::get<std::int64_t>(to_value(x)));
    std::sort(out.begin(), out.end());
    return out;
  } else if constexpr (std::is_enum_v<T>)
    return static_cast<std::int64_t>(v);
  else if constexpr (is_unit<T>::value)
    return v.value();
  else if constexpr (std::is_same_v<T, int>)
    return static_cast<std::int64_t>(v);
  else
    return key_value(v);
}

template <class T>
T from_value(key_value const& v) {
  if constexpr (is_vector<T>::value) {
    T out;
    for (auto x : std::get<value_set>(v)) out.push_back(from_value<typename T::value_type>(x));
    return out;
  } else if constexpr (std::is_enum_v<T>)
    return static_cast<T>(std::get<std::int64_t>(v));
  else if constexpr (is_unit<T>::value)
    return T(std::get<double>(v));
  else if constexpr (std::is_same_v<T, int>)
    return static_cast<int>(std::get<std::int64_t>(v));
  else
    return std::get<T>(v);
}

// Where block `B` keeps the struct `Owner` a member belongs to: the block
// itself, or a framework's behaviours (a training) and its limits.
template <class B, class Owner>
struct part;
template <class B>
struct part<B, B> {
  static B& of(B& b) { return b; }
  static B const& of(B const& b) { return b; }
};
template <>
struct part<framework, training> {
  static training& of(framework& f) { return f.behaviours; }
  static training const& of(framework const& f) { return f.behaviours; }
};
template <>
struct part<framework, framework_limits> {
  static framework_limits& of(framework& f) { return f.limits; }
  static framework_limits const& of(framework const& f) { return f.limits; }
};

// The member `M` of a model, gpu, cluster, training or framework, as block
// `B` holds it. An optional member holds no value until set; an empty string
// is no text.
template <auto M, class B = typename member_of<decltype(M)>::block>
key_field member() {
  using O = typename member_of<decltype(M)>::block;
  using T = typename member_of<decltype(M)>::type;
  member_access<B> a;
  if constexpr (is_optional<T>::value) {
    a.store = [](B& b, key_value const& v) { part<B, O>::of(b).*M = from_value<typename T::value_type>(v); };
    a.load = [](B const& b) -> std::optional<key_value> {
      auto const& m = part<B, O>::of(b).*M;
      if (!m) return std::nullopt;
      return to_value(*m);
    };
  } else {
    a.store = [](B& b, key_value const& v) { part<B, O>::of(b).*M = from_value<T>(v); };
    a.load = [](B const& b) -> std::optional<key_value> {
      auto const& m = part<B, O>::of(b).*M;
      if constexpr (std::is_same_v<T, std::string>)
        if (m.empty()) return std::nullopt;
      return to_value(m);
    };
  }
  return a;
}

// A key the IR keeps nothing of (the description of a gpu, cluster, run or strategy).
template <class B>
key_field nothing() {
  return member_access<B>{};
}
key_field nothing_of_strategy() { return strategy_access{}; }

// The strategy key `S` of a strategy_spec, fixed into `C` of a strategy.
template <auto S, auto C>
key_field choice() {
  using T = typename choice_of<typename member_of<decltype(S)>::type>::type;
  using U = typename member_of<decltype(C)>::type;
  strategy_access a;
  a.form = [](strategy_spec& s) -> choice_form& { return s.*S; };
  a.read = [](strategy_spec const& s) -> choice_form const& { return s.*S; };
  a.store = [](strategy_spec& s, key_choice<key_value> const& c) {
    key_choice<T> out;
    static_cast<choice_form&>(out) = c;
    out.values.reserve(c.values.size());
    for (auto const& v : c.values) out.values.push_back(from_value<T>(v));
    s.*S = std::move(out);
  };
  a.load = [](strategy_spec const& s) {
    key_choice<key_value> out;
    static_cast<choice_form&>(out) = s.*S;
    out.values.reserve((s.*S).values.size());
    for (auto const& v : (s.*S).values) out.values.push_back(to_value(v));
    return out;
  };
  a.fix = [](strategy& s, key_value const& v) { s.*C = from_value<U>(v); };
  a.get = [](strategy const& s) { return to_value(s.*C); };
  return a;
}

key_field gpu_of_cluster() {
  member_access<cluster> a;
  a.load = [](cluster const& c) -> std::optional<key_value> { return c.device.name; };
  return a;
}

// grad_reduce names how ZeRO-1/2 reduce; the IR keeps whether it scatters.
template <class B>
key_field grad_reduce_of() {
  member_access<B> a;
  a.store = [](B& b, key_value const& v) {
    part<B, training>::of(b).grad_reduce_scatter = std::get<std::int64_t>(v) == 0;
  };
  a.load = [](B const& b) -> std::optional<key_value> {
    return std::int64_t{part<B, training>::of(b).grad_reduce_scatter ? 0 : 1};
  };
  return a;
}

template <class B>
constexpr block_kind kind_of_block() {
  if constexpr (std::is_same_v<B, model>) return block_kind::model;
  else if constexpr (std::is_same_v<B, gpu>) return block_kind::gpu;
  else if constexpr (std::is_same_v<B, cluster>) return block_kind::cluster;
  else if constexpr (std::is_same_v<B, framework>) return block_kind::framework;
  else return block_kind::training;
}

constexpr double kib = 1024.0;
constexpr double pib = kib * kib * kib * kib * kib;

// The physical ranges: generous, so that no machine built or planned is
// out, and narrow enough that every figure derived from them stays finite.
constexpr bounds memory_range{0, pib, true, "", "1024 TiB"};
// A bucket holds at least a byte: smaller ones made a count of buckets past
// any integer (fuzzing.md).
constexpr bounds bucket_range{1, pib, false, "1 B", "1024 TiB"};
constexpr bounds optional_link_range{0, 100e12, false, "", "100 TB/s"};
constexpr bounds reserved_range{0, pib, false, "", "1024 TiB"};
constexpr bounds rate_range{1e9, 1e18, true, "1 GFLOP/s", "1000 PFLOP/s"};
constexpr bounds link_range{1e6 / 8, 100e12, true, "1 Mbit/s", "100 TB/s"};
constexpr bounds latency_range{0, 10, false, "", "10 s"};
constexpr bounds overhead_range{0, 3600, false, "", "3600 s"};
constexpr bounds positive_fraction{0.01, 1, true, "1 %", "100 %"};
constexpr bounds any_fraction{0, 1, false, "", "100 %"};
constexpr bounds capacity_range{0, 1024, true, "", "1024"};
constexpr bounds imbalance_range{1, 1'000'000, false, "1", "1000000"};
constexpr bounds learning_rate{0, 100, true, "", "100"};

constexpr std::int64_t max_sm_count = 1'000'000;
constexpr std::int64_t max_exp_per_clock = 4096;
constexpr std::int64_t max_tile_overhead = 1'000'000;

std::vector<key_info> model_keys() {
  using k = block_kind;
  using d = domain;
  return {
    {.block = k::model, .name = "description", .dom = d::text, .field = member<&model::description>(),
     .default_text = "none", .meaning = "free text shown in reports"},
    {.block = k::model, .name = "layers", .dom = d::count, .field = member<&model::layers>(),
     .what = "of layers", .required = true, .default_text = "required", .aliases = {"num_layers", "n_layers", "n_layer"},
     .meaning = "transformer layers"},
    {.block = k::model, .name = "hidden", .dom = d::count, .field = member<&model::hidden>(),
     .required = true, .default_text = "required", .aliases = {"hidden_size", "dim", "d_model", "n_embd"},
     .meaning = "hidden size: the width of each layer"},
    {.block = k::model, .name = "heads", .dom = d::count, .field = member<&model::heads>(), .what = "of heads",
     .required = true, .default_text = "required", .aliases = {"num_attention_heads", "n_heads", "n_head"},
     .meaning = "attention heads; 'hidden' is a multiple of it unless 'head_dim' is written"},
    {.block = k::model, .name = "kv_heads", .dom = d::count, .field = member<&model::kv_heads>(),
     .what = "of key/value heads", .default_text = "= heads", .aliases = {"num_key_value_heads", "n_kv_heads", "num_query_groups"},
     .meaning = "key/value heads (grouped-query attention); divides 'heads'"},
    {.block = k::model, .name = "head_dim", .dom = d::count, .field = member<&model::head_dim>(),
     .what = "for 'head_dim'", .default_text = "= hidden / heads", .aliases = {"kv_channels"},
     .meaning = "each attention head's width: q is heads x head_dim wide, k and v kv_heads x head_dim "
                "(Qwen3: 128 whatever 'hidden')"},
    {.block = k::model, .name = "qk_norm", .dom = d::boolean, .field = member<&model::qk_norm>(),
     .default_value = false, .default_text = "false", .aliases = {"qk_layernorm"},
     .meaning = "a norm of the model's kind on each head's queries and keys, head_dim wide with its own weights "
                "(Qwen3; Megatron-LM's --qk-layernorm)"},
    {.block = k::model, .name = "q_lora_rank", .dom = d::count, .field = member<&model::q_lora_rank>(),
     .min = 0, .what = "for 'q_lora_rank'", .default_value = std::int64_t{0}, .default_text = "0 (none)",
     .meaning = "multi-latent attention: the rank queries are projected down to and normalised at before each "
                "head's up projection (DeepSeek-V3: 1536; 0: projected directly)"},
    {.block = k::model, .name = "kv_lora_rank", .dom = d::count, .field = member<&model::kv_lora_rank>(),
     .min = 0, .what = "for 'kv_lora_rank'", .default_value = std::int64_t{0}, .default_text = "0 (not MLA)",
     .meaning = "multi-latent attention (DeepSeek-V2/V3, Megatron-LM's --multi-latent-attention): the rank keys and "
                "values are projected down to and normalised at, then up for every head (DeepSeek-V3: 512)"},
    {.block = k::model, .name = "qk_rope_head_dim", .dom = d::count, .field = member<&model::qk_rope_head_dim>(),
     .min = 0, .what = "for 'qk_rope_head_dim'", .default_value = std::int64_t{0}, .default_text = "0",
     .aliases = {"qk_pos_emb_head_dim"},
     .meaning = "multi-latent attention: the rotary width each query and key head carries after its head_dim "
                "(the key's projected once and shared by every head; DeepSeek-V3: 64)"},
    {.block = k::model, .name = "v_head_dim", .dom = d::count, .field = member<&model::v_head_dim>(),
     .min = 0, .what = "for 'v_head_dim'", .default_value = std::int64_t{0}, .default_text = "head_dim (0)",
     .meaning = "multi-latent attention: each value head's width (DeepSeek-V3: 128)"},
    {.block = k::model, .name = "ffn", .dom = d::count, .field = member<&model::ffn>(),
     .default_text = "= 4 x hidden", .aliases = {"intermediate_size", "ffn_hidden_size", "ffn_hidden", "ffn_dim"}, .meaning = "inner size of the MLP"},
    {.block = k::model, .name = "mlp", .dom = d::choice, .field = member<&model::mlp>(),
     .choices = {"gelu", "swiglu"}, .default_value = std::int64_t{0}, .default_text = "gelu",
     .aliases = {"activation", "hidden_act", "activation_function"}, .meaning = "MLP kind: two matrices (gelu) or three (swiglu)"},
    {.block = k::model, .name = "norm", .dom = d::choice, .field = member<&model::norm>(),
     .choices = {"layernorm", "rmsnorm"}, .default_text = "rmsnorm with mlp = swiglu, else layernorm",
     .aliases = {"normalization"}, .meaning = "a layer's normalisation: LayerNorm (GPT, MPT, BLOOM) or RMSNorm (Llama)"},
    {.block = k::model, .name = "position_embedding", .dom = d::choice, .field = member<&model::position>(),
     .choices = {"learned", "rotary", "alibi"}, .default_text = "rotary with mlp = swiglu, else learned",
     .aliases = {"position_embedding_type"},
     .meaning = "positions: learned embeddings added once, rotary on q and k in every layer, or ALiBi's bias "
                "inside the attention kernel"},
    {.block = k::model, .name = "vocab", .dom = d::count, .field = member<&model::vocab>(), .required = true,
     .default_text = "required", .aliases = {"vocab_size"}, .meaning = "vocabulary size"},
    {.block = k::model, .name = "seq_len", .dom = d::count, .field = member<&model::seq_len>(),
     .what = "of tokens for 'seq_len'", .required = true, .default_text = "required",
     .aliases = {"max_position_embeddings", "seq_length", "max_seq_len", "n_positions"}, .meaning = "tokens per sequence"},
    {.block = k::model, .name = "tied_embeddings", .dom = d::boolean, .field = member<&model::tied_embeddings>(),
     .default_value = false, .default_text = "false",
     .meaning = "input and output embeddings share one matrix"},
    {.block = k::model, .name = "attention", .dom = d::choice, .field = member<&model::attention>(),
     .choices = {"flash", "standard"}, .default_value = std::int64_t{0}, .default_text = "flash",
     .meaning = "attention kernel: flash keeps no score matrix"},
    {.block = k::model, .name = "precision", .dom = d::choice, .field = member<&model::prec>(),
     .choices = {"bf16", "fp16", "fp32", "fp8", "fp4"}, .default_value = std::int64_t{0}, .default_text = "bf16",
     .aliases = {"dtype"}, .meaning = "precision of weights and activations in compute"},
    {.block = k::model, .name = "optimizer", .dom = d::choice, .field = member<&model::optimizer>(),
     .choices = {"adam", "adamw", "sgd", "sgd_momentum"}, .default_value = std::int64_t{0},
     .default_text = "adam", .meaning = "optimizer, which sets the state kept per parameter"},
    {.block = k::model, .name = "experts", .dom = d::count, .field = member<&model::experts>(),
     .what = "of experts", .default_value = std::int64_t{1}, .default_text = "1",
     .aliases = {"num_experts", "num_local_experts", "moe_num_experts"}, .meaning = "experts per MoE layer (1: a dense model)"},
    {.block = k::model, .name = "experts_per_token", .dom = d::count,
     .field = member<&model::experts_per_token>(), .what = "of experts per token",
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"num_experts_per_tok", "moe_router_topk", "top_k"},
     .meaning = "experts each token is routed to"},
    {.block = k::model, .name = "expert_ffn", .dom = d::count, .field = member<&model::expert_ffn>(),
     .min = 0, .what = "for 'expert_ffn'", .default_value = std::int64_t{0}, .default_text = "ffn (0)",
     .aliases = {"moe_ffn_hidden_size", "moe_intermediate_size"},
     .meaning = "a mixture's expert MLP width, each expert's ffn (0: ffn)"},
    {.block = k::model, .name = "shared_expert_ffn", .dom = d::count, .field = member<&model::shared_expert_ffn>(),
     .min = 0, .what = "for 'shared_expert_ffn'", .default_value = std::int64_t{0}, .default_text = "0 (none)",
     .aliases = {"moe_shared_expert_intermediate_size", "shared_expert_intermediate_size"},
     .meaning = "a mixture's shared expert: an MLP this wide every token runs beside its routed experts, split over tp "
                "(0: none)"},
    {.block = k::model, .name = "capacity_factor", .dom = d::real, .field = member<&model::capacity_factor>(),
     .range = capacity_range, .default_text = "none (dropless)",
     .aliases = {"moe_expert_capacity_factor", "expert_capacity_factor"},
     .meaning = "a mixture's expert capacity: each expert takes at most this many times its even share of a rank's "
                "routed tokens, the rest dropped (none: dropless)"},
    {.block = k::model, .name = "pad_to_capacity", .dom = d::boolean, .field = member<&model::pad_to_capacity>(),
     .default_value = false, .default_text = "false", .aliases = {"moe_pad_expert_input_to_capacity"},
     .meaning = "each expert's input padded to its capacity: it computes and receives capacity_factor times its even "
                "share whatever the routing"},
    {.block = k::model, .name = "routing_imbalance", .dom = d::real, .field = member<&model::routing_imbalance>(),
     .range = imbalance_range, .default_value = 1.0, .default_text = "1 (even)",
     .meaning = "a mixture's routing skew: the most loaded expert's tokens over the mean, the GPU that holds it the "
                "busiest (1: even; at most experts / experts_per_token)"},
    {.block = k::model, .name = "router_groups", .dom = d::count, .field = member<&model::router_groups>(),
     .min = 0, .what = "for 'router_groups'", .default_value = std::int64_t{0}, .default_text = "0 (none)",
     .aliases = {"moe_router_num_groups", "n_group"},
     .meaning = "group-limited routing: the experts in this many equal groups, each token's experts from its "
                "router_group_topk best groups (0: no groups)"},
    {.block = k::model, .name = "router_group_topk", .dom = d::count, .field = member<&model::router_group_topk>(),
     .min = 0, .what = "for 'router_group_topk'", .default_value = std::int64_t{0}, .default_text = "0 (none)",
     .aliases = {"moe_router_group_topk", "topk_group"},
     .meaning = "group-limited routing: the groups each token's experts come from (DeepSeek-V3: 4 of 8)"},
    {.block = k::model, .name = "dense_layers", .dom = d::count, .field = member<&model::dense_layers>(),
     .min = 0, .what = "for 'dense_layers'", .default_value = std::int64_t{0}, .default_text = "0",
     .aliases = {"first_k_dense_replace", "n_dense_layers"},
     .meaning = "a mixture's first layers that run a dense MLP ffn wide instead of experts"},
    {.block = k::model, .name = "moe_layer_freq", .dom = d::count, .field = member<&model::moe_layer_freq>(),
     .what = "for 'moe_layer_freq'", .default_value = std::int64_t{1}, .default_text = "1 (every layer)",
     .meaning = "of a mixture's layers after dense_layers, every this-many-th is a mixture, from the first "
                "(Megatron-LM's --moe-layer-freq); the others dense"},
    {.block = k::model, .name = "mtp_layers", .dom = d::count, .field = member<&model::mtp_layers>(),
     .min = 0, .what = "for 'mtp_layers'", .default_value = std::int64_t{0}, .default_text = "0",
     .aliases = {"mtp_num_layers", "num_nextn_predict_layers"},
     .meaning = "multi-token prediction modules after the last layer (DeepSeek-V3: 1; Megatron-LM's "
                "--mtp-num-layers): each a projection, a layer of the last layer's kind and logits again, on the "
                "last pipeline stage"},
    {.block = k::model, .name = "dropout", .dom = d::boolean, .field = member<&model::dropout>(),
     .default_value = false, .default_text = "false", .meaning = "dropout masks are kept for the backward"},
  };
}

std::vector<key_info> gpu_keys() {
  using k = block_kind;
  using d = domain;
  using dim = dimension;
  auto const two_gib = 2.0 * kib * kib * kib;
  return {
    {.block = k::gpu, .name = "description", .dom = d::text, .field = nothing<gpu>(), .default_text = "none",
     .meaning = "free text (the catalog's sources)"},
    {.block = k::gpu, .name = "generation", .dom = d::choice, .field = member<&gpu::generation>(),
     .choices = {"volta", "ampere", "hopper", "blackwell", "cdna3"}, .default_value = std::int64_t{1},
     .default_text = "ampere",
     .meaning = "GPU generation: the figures NCCL and the attention kernels differ by (ada is ampere)"},
    {.block = k::gpu, .name = "memory", .dom = d::quantity, .field = member<&gpu::memory>(), .dim = dim::bytes,
     .range = memory_range, .required = true, .default_text = "required", .meaning = "memory of one GPU"},
    {.block = k::gpu, .name = "peak_flops", .dom = d::quantity, .field = member<&gpu::peak_flops>(),
     .dim = dim::compute_rate, .range = rate_range, .required = true, .default_text = "required",
     .aliases = {"flops"}, .meaning = "dense bf16/fp16 tensor peak"},
    {.block = k::gpu, .name = "peak_flops_fp8", .dom = d::quantity, .field = member<&gpu::peak_flops_fp8>(),
     .dim = dim::compute_rate, .range = rate_range, .default_text = "= peak_flops",
     .meaning = "dense fp8 tensor peak"},
    {.block = k::gpu, .name = "peak_flops_fp32", .dom = d::quantity, .field = member<&gpu::peak_flops_fp32>(),
     .dim = dim::compute_rate, .range = rate_range, .default_text = "= peak_flops / 2",
     .meaning = "dense fp32/tf32 matmul peak"},
    {.block = k::gpu, .name = "peak_flops_fp4", .dom = d::quantity, .field = member<&gpu::peak_flops_fp4>(),
     .dim = dim::compute_rate, .range = rate_range, .default_text = "none: no fp4 tensor cores",
     .dump_default = false, .meaning = "dense fp4 (NVFP4) tensor peak"},
    {.block = k::gpu, .name = "hbm_bandwidth", .dom = d::quantity, .field = member<&gpu::hbm_bandwidth>(),
     .dim = dim::bandwidth, .range = link_range, .required = true, .default_text = "required",
     .aliases = {"hbm"}, .meaning = "memory bandwidth"},
    {.block = k::gpu, .name = "intra_node", .dom = d::quantity, .field = member<&gpu::intra_node>(),
     .dim = dim::bandwidth, .range = link_range, .required = true, .default_text = "required",
     .aliases = {"nvlink"}, .meaning = "scale-up link per GPU per direction"},
    {.block = k::gpu, .name = "nvls_bandwidth", .dom = d::quantity, .field = member<&gpu::nvls_bandwidth>(),
     .dim = dim::bandwidth, .range = optional_link_range, .default_value = 0.0, .default_text = "0: none",
     .dump_default = false, .meaning = "bus bandwidth of an NVLink SHARP (NVLS) all-reduce inside a node, per GPU"},
    {.block = k::gpu, .name = "matmul_efficiency", .dom = d::fraction, .field = member<&gpu::matmul_efficiency>(),
     .range = positive_fraction, .default_value = 0.7, .default_text = "0.7",
     .meaning = "share of peak a large matmul reaches"},
    {.block = k::gpu, .name = "matmul_efficiency_fp8", .dom = d::fraction,
     .field = member<&gpu::matmul_efficiency_fp8>(), .range = any_fraction, .default_value = 0.0,
     .default_text = "0: = matmul_efficiency", .dump_default = false,
     .meaning = "share of the fp8 peak a large fp8 matmul reaches (measured)"},
    {.block = k::gpu, .name = "matmul_tile_overhead", .dom = d::count,
     .field = member<&gpu::matmul_tile_overhead>(), .max = max_tile_overhead, .what = "of reduction elements",
     .default_value = std::int64_t{128}, .default_text = "128",
     .meaning = "a matmul tile's fixed cost as reduction (K) elements: a GEMM reaches k / (k + this) of its long-k rate"},
    {.block = k::gpu, .name = "matmul_tile_overhead_fp8", .dom = d::count,
     .field = member<&gpu::matmul_tile_overhead_fp8>(), .min = 0, .max = max_tile_overhead,
     .what = "of reduction elements", .default_value = std::int64_t{0}, .default_text = "0: = matmul_tile_overhead",
     .dump_default = false, .meaning = "the same for fp8 matmuls"},
    {.block = k::gpu, .name = "matmul_efficiency_fp4", .dom = d::fraction,
     .field = member<&gpu::matmul_efficiency_fp4>(), .range = any_fraction, .default_value = 0.0,
     .default_text = "0: = matmul_efficiency_fp8", .dump_default = false,
     .meaning = "share of the fp4 peak a large fp4 matmul reaches (measured)"},
    {.block = k::gpu, .name = "matmul_tile_overhead_fp4", .dom = d::count,
     .field = member<&gpu::matmul_tile_overhead_fp4>(), .min = 0, .max = max_tile_overhead,
     .what = "of reduction elements", .default_value = std::int64_t{0},
     .default_text = "0: 2 x the fp8 figure", .dump_default = false, .meaning = "the same for fp4 matmuls"},
    {.block = k::gpu, .name = "reserved", .dom = d::quantity, .field = member<&gpu::reserved>(), .dim = dim::bytes,
     .range = reserved_range, .default_value = two_gib, .default_text = "2 GiB",
     .meaning = "memory never available to the job (driver, CUDA context)"},
    {.block = k::gpu, .name = "intra_latency", .dom = d::quantity, .field = member<&gpu::intra_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 5e-6, .default_text = "NCCL's",
     .meaning = "latency of one step of a collective inside a node; written, it replaces NCCL's per-algorithm figure"},
    {.block = k::gpu, .name = "inter_latency", .dom = d::quantity, .field = member<&gpu::inter_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 10e-6, .default_text = "NCCL's",
     .meaning = "latency of one step of a collective across nodes; written, it replaces NCCL's per-algorithm figure"},
    {.block = k::gpu, .name = "comm_efficiency", .dom = d::fraction, .field = member<&gpu::comm_efficiency>(),
     .range = positive_fraction, .default_value = 0.8, .default_text = "0.8",
     .meaning = "share of link bandwidth a large collective reaches"},
    {.block = k::gpu, .name = "network_efficiency", .dom = d::fraction,
     .field = member<&gpu::network_efficiency>(), .range = positive_fraction, .default_value = 0.95,
     .default_text = "0.95", .meaning = "share of a NIC's line rate NCCL's bus bandwidth reaches across nodes"},
    {.block = k::gpu, .name = "hbm_efficiency", .dom = d::fraction, .field = member<&gpu::hbm_efficiency>(),
     .range = positive_fraction, .default_value = 0.8, .default_text = "0.8",
     .meaning = "share of memory bandwidth a streaming kernel reaches"},
    {.block = k::gpu, .name = "sustained_clock", .dom = d::fraction, .field = member<&gpu::sustained_clock>(),
     .range = positive_fraction, .default_value = 1.0, .default_text = "1",
     .meaning = "share of the boost clock the SMs hold through a long run: matmul and attention rates scale with it, "
                "memory-bound work does not"},
    {.block = k::gpu, .name = "sm_count", .dom = d::count, .field = member<&gpu::sm_count>(),
     .max = max_sm_count, .what = "of streaming multiprocessors", .default_value = std::int64_t{108},
     .default_text = "108", .meaning = "streaming multiprocessors: matmul tiles run in waves over them"},
    {.block = k::gpu, .name = "exp_per_clock", .dom = d::count, .field = member<&gpu::exp_per_clock>(),
     .max = max_exp_per_clock, .what = "of exponentials per SM per clock", .default_value = std::int64_t{16},
     .default_text = "16",
     .meaning = "exponentials (MUFU.EX2) an SM issues per clock: 16 through Blackwell, 32 on Blackwell Ultra, whose "
                "attention kernels run faster by it"},
    {.block = k::gpu, .name = "attention_efficiency", .dom = d::fraction,
     .field = member<&gpu::attention_efficiency>(), .range = positive_fraction,
     .default_text = "the kernel's published figure",
     .meaning = "share of the 16-bit peak the framework's attention kernel reaches"},
    {.block = k::gpu, .name = "kernel_latency", .dom = d::quantity, .field = member<&gpu::kernel_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 5e-6, .default_text = "5 us",
     .meaning = "fixed launch and tail cost of one kernel"},
    {.block = k::gpu, .name = "overlap_slowdown", .dom = d::fraction, .field = member<&gpu::overlap_slowdown>(),
     .range = any_fraction, .default_value = 0.1, .default_text = "0.1",
     .meaning = "compute slow-down while communication overlaps it"},
    {.block = k::gpu, .name = "step_overhead", .dom = d::quantity, .field = member<&gpu::step_overhead>(),
     .dim = dim::time, .range = overhead_range, .default_text = "the framework's",
     .meaning = "fixed time per optimizer step (data loading, logging, launch gaps); written, it replaces the framework's"},
    {.block = k::gpu, .name = "dispatch_latency", .dom = d::quantity, .field = member<&gpu::dispatch_latency>(),
     .dim = dim::time, .range = latency_range, .default_text = "the framework's",
     .meaning = "host time to issue one operator; written, it replaces the framework's"},
  };
}

std::vector<key_info> cluster_keys() {
  using k = block_kind;
  using d = domain;
  using dim = dimension;
  return {
    {.block = k::cluster, .name = "description", .dom = d::text, .field = nothing<cluster>(),
     .default_text = "none", .meaning = "free text"},
    {.block = k::cluster, .name = "nodes", .dom = d::count, .field = member<&cluster::nodes>(), .what = "of nodes",
     .required = true, .default_text = "required", .meaning = "nodes"},
    {.block = k::cluster, .name = "gpus_per_node", .dom = d::count, .field = member<&cluster::gpus_per_node>(),
     .what = "of GPUs per node", .required = true, .default_text = "required", .aliases = {"gpus"},
     .meaning = "GPUs in each node"},
    {.block = k::cluster, .name = "gpu", .dom = d::gpu_name, .field = gpu_of_cluster(), .required = true,
     .default_text = "required", .meaning = "the GPU: a gpu block of the file or of the catalog"},
    {.block = k::cluster, .name = "intra_node", .dom = d::quantity, .field = member<&cluster::intra_node>(),
     .dim = dim::bandwidth, .range = link_range, .default_text = "the gpu's", .aliases = {"nvlink"},
     .meaning = "scale-up link per GPU per direction"},
    {.block = k::cluster, .name = "inter_node", .dom = d::quantity, .field = member<&cluster::inter_node>(),
     .dim = dim::bandwidth, .range = link_range, .default_text = "required with more than one node",
     .aliases = {"network"}, .meaning = "network per node, all NICs together, per direction"},
    {.block = k::cluster, .name = "intra_latency", .dom = d::quantity, .field = member<&cluster::intra_latency>(),
     .dim = dim::time, .range = latency_range, .default_text = "the gpu's",
     .meaning = "latency of one step of a collective inside a node"},
    {.block = k::cluster, .name = "inter_latency", .dom = d::quantity, .field = member<&cluster::inter_latency>(),
     .dim = dim::time, .range = latency_range, .default_text = "the gpu's",
     .meaning = "latency of one step of a collective across nodes"},
    {.block = k::cluster, .name = "comm_efficiency", .dom = d::fraction,
     .field = member<&cluster::comm_efficiency>(), .range = positive_fraction, .default_text = "the gpu's",
     .meaning = "share of link bandwidth a large collective reaches"},
    {.block = k::cluster, .name = "network_efficiency", .dom = d::fraction,
     .field = member<&cluster::network_efficiency>(), .range = positive_fraction, .default_text = "the gpu's",
     .meaning = "share of a NIC's line rate NCCL's bus bandwidth reaches across nodes"},
  };
}

// The run-time behaviours of a framework: rows of the training block and,
// the same rows, of the framework block (`B`), which keeps them in its
// `behaviours`.
template <class B>
std::vector<key_info> behaviour_keys() {
  constexpr auto k = kind_of_block<B>();
  using d = domain;
  using dim = dimension;
  constexpr double mib = kib * kib;
  std::vector<key_info> rows{
    {.block = k, .name = "attention_backend", .dom = d::choice, .field = member<&training::attention_kernel, B>(),
     .choices = {"flash", "flash3", "fused", "triton", "unfused", "auto", "flex"}, .default_value = std::int64_t{0},
     .default_text = "flash", .aliases = {"attn_impl", "use_flex_attn"}, .dump_default = false,
     .meaning = "attention kernel: FlashAttention-2 or -3, cuDNN's fused, llm-foundry's Triton, unfused; auto: "
                "the framework's pick on the GPU (fused on Hopper and Blackwell, flash on Ampere and CDNA3, "
                "unfused on Volta); flex: PyTorch's FlexAttention (torchtitan's use_flex_attn), no context "
                "parallelism"},
    {.block = k, .name = "fused_elementwise", .dom = d::boolean, .field = member<&training::fused_elementwise, B>(),
     .default_value = true, .default_text = "true", .dump_default = false,
     .meaning = "element-wise operators fused into few kernels, not one PyTorch eager kernel each"},
    {.block = k, .name = "fused_rotary", .dom = d::boolean, .field = member<&training::fused_rotary, B>(),
     .default_value = true, .default_text = "true", .dump_default = false,
     .meaning = "rotary embeddings in one fused kernel each way; false: PyTorch's eager kernels even when the rest "
                "is fused (torchtitan's complex-number rotary, which torch.compile leaves uncompiled)"},
    {.block = k, .name = "transformer_impl", .dom = d::choice, .field = member<&training::transformer_impl, B>(),
     .choices = {"transformer_engine", "local"}, .default_value = std::int64_t{0},
     .default_text = "transformer_engine", .dump_default = false,
     .meaning = "Megatron's layers (--transformer-impl): Transformer Engine's, or its own (local: Megatron-LM "
                "before 2023, Megatron-DeepSpeed), whose fused softmax fits fewer shapes of the unfused attention "
                "path and falls back to PyTorch's fp32 softmax elsewhere"},
    {.block = k, .name = "cross_entropy", .dom = d::choice, .field = member<&training::cross_entropy, B>(),
     .choices = {"fused", "unfused"}, .default_value = std::int64_t{0}, .default_text = "fused",
     .dump_default = false,
     .meaning = "the loss as Megatron's fused kernel or PyTorch's unfused one computes it (with tp > 1, DTensor's "
                "loss_parallel)"},
    {.block = k, .name = "loss_parallel", .dom = d::boolean, .field = member<&training::loss_parallel, B>(),
     .default_value = true, .default_text = "true", .dump_default = false,
     .meaning = "with tp > 1 the loss on the vocabulary-split logits; false: the logits gathered over tp first, the "
                "whole vocabulary's loss on every rank (torchtitan's parallelism.disable_loss_parallel)"},
    {.block = k, .name = "grouped_gemm", .dom = d::boolean, .field = member<&training::grouped_gemm, B>(),
     .default_value = true, .default_text = "true", .aliases = {"moe_grouped_gemm", "use_grouped_mm"},
     .dump_default = false,
     .meaning = "a mixture's local experts as one grouped GEMM per matrix; false: one expert after another, each its "
                "own GEMMs and activation (Megatron-Core's SequentialMLP, torchtitan's for-loop)"},
    {.block = k, .name = "permute_fusion", .dom = d::boolean, .field = member<&training::permute_fusion, B>(),
     .default_value = true, .default_text = "true", .aliases = {"moe_permute_fusion"}, .dump_default = false,
     .meaning = "a mixture's tokens put into expert order and summed back by fused kernels; false: by PyTorch's "
                "indexing operators (Megatron-Core without --moe-permute-fusion, torchtitan)"},
    {.block = k, .name = "moe_token_dispatcher", .dom = d::choice,
     .field = member<&training::moe_token_dispatcher, B>(), .choices = {"alltoall", "allgather", "flex"},
     .default_value = std::int64_t{0}, .default_text = "alltoall", .aliases = {"moe_token_dispatcher_type"},
     .dump_default = false,
     .meaning = "a mixture's token dispatcher: all-to-alls of each token's top-k copies over the expert-parallel "
                "ranks, every token all-gathered over the tp x ep ranks and reduce-scattered back, or DeepEP's "
                "(flex): each token once to each node and each GPU it is routed to, forwarded inside a node over "
                "NVLink (Megatron-Core's --moe-token-dispatcher-type, flex with --moe-enable-deepep)"},
    {.block = k, .name = "shared_expert_overlap", .dom = d::boolean,
     .field = member<&training::shared_expert_overlap, B>(), .default_value = false, .default_text = "false",
     .aliases = {"moe_shared_expert_overlap"}, .dump_default = false,
     .meaning = "a mixture's shared expert on a stream of its own, its GEMMs under the dispatch and combine "
                "all-to-alls (Megatron-Core's --moe-shared-expert-overlap)"},
    {.block = k, .name = "shared_expert_combine_overlap", .dom = d::boolean,
     .field = member<&training::shared_expert_combine_overlap, B>(), .default_value = false,
     .default_text = "false", .dump_default = false,
     .meaning = "a mixture's shared expert's forward run while the combine's all-to-all is in flight, hiding the "
                "forward's combine only (torchtitan's order)"},
    {.block = k, .name = "grad_precision", .dom = d::choice, .field = member<&training::grad_precision, B>(),
     .choices = {"bf16", "fp16", "fp32"}, .default_text = "the model's 16-bit",
     .aliases = {"accumulate_allreduce_grads_in_fp32", "reduce_dtype"},
     .meaning = "precision gradients are kept and reduced in"},
    {.block = k, .name = "grad_comm_precision", .dom = d::choice,
     .field = member<&training::grad_comm_precision, B>(), .choices = {"bf16", "fp16", "fp32"},
     .default_text = "grad_precision's", .aliases = {"communication_data_type"}, .dump_default = false,
     .meaning = "precision the data-parallel reduction casts gradients to before it moves them (DeepSpeed's "
                "BF16_Optimizer: fp32 gradients reduced as bf16)"},
    {.block = k, .name = "grad_sync", .dom = d::choice, .field = member<&training::grad_sync, B>(),
     .choices = {"per_step", "per_micro_batch"}, .default_value = std::int64_t{0}, .default_text = "per_step",
     .aliases = {"ddp_sync_strategy"}, .dump_default = false,
     .meaning = "data-parallel gradients reduced once per step or after every micro-batch's backward"},
    {.block = k, .name = "grad_bucket", .dom = d::choice, .field = member<&training::grad_bucket, B>(),
     .choices = {"fixed", "scaled"}, .default_value = std::int64_t{0}, .default_text = "fixed",
     .dump_default = false,
     .meaning = "gradient bucket: 'ddp_bucket_size', or Megatron-Core's max(40 M, 1 M x dp x cp) parameters"},
    {.block = k, .name = "ddp_bucket_size", .dom = d::quantity, .field = member<&training::ddp_bucket_size, B>(),
     .dim = dim::bytes, .range = bucket_range, .default_value = 25.0 * mib, .default_text = "25 MiB",
     .aliases = {"bucket_size", "bucket_cap_mb", "reduce_bucket_size"}, .dump_default = false,
     .meaning = "gradient bucket size with grad_bucket = fixed (PyTorch DDP: 25 MiB)"},
    {.block = k, .name = "gradient_as_bucket_view", .dom = d::boolean,
     .field = member<&training::gradient_as_bucket_view, B>(), .default_value = true, .default_text = "true",
     .dump_default = false,
     .meaning = "the data-parallel buckets are views of the gradients (Megatron's gradient buffer); false: PyTorch "
                "DDP's default, a bucket copy of every gradient beside it (ZeRO 0 and 1)"},
    {.block = k, .name = "contiguous_gradients", .dom = d::boolean,
     .field = member<&training::contiguous_gradients, B>(), .default_value = false, .default_text = "false",
     .dump_default = false,
     .meaning = "ZeRO-1/2 copy the gradients into reduce buckets each backward allocates, ddp_bucket_size each, "
                "two with overlap_grad_sync (DeepSpeed's contiguous_gradients; not with its pipeline engine)"},
    {.block = k, .name = "overlap_grad_sync", .dom = d::boolean, .field = member<&training::overlap_grad_sync, B>(),
     .default_value = true, .default_text = "true", .aliases = {"overlap_grad_reduce"}, .dump_default = false,
     .meaning = "the data-parallel gradient sync runs under the backward"},
    {.block = k, .name = "grad_reduce", .dom = d::choice, .field = grad_reduce_of<B>(),
     .choices = {"reduce_scatter", "all_reduce"}, .default_value = std::int64_t{0},
     .default_text = "reduce_scatter", .aliases = {"reduce_scatter"}, .dump_default = false,
     .meaning = "how ZeRO-1/2 reduce gradients"},
    {.block = k, .name = "overlap_param_gather", .dom = d::boolean,
     .field = member<&training::overlap_param_gather, B>(), .default_value = false, .default_text = "false",
     .aliases = {"overlap_param_sync"}, .dump_default = false,
     .meaning = "ZeRO-1's updated weights gathered under the next forward (Megatron's --overlap-param-gather)"},
    {.block = k, .name = "tp_comm_overlap", .dom = d::boolean, .field = member<&training::tp_comm_overlap, B>(),
     .default_value = false, .default_text = "false", .aliases = {"enable_async_tensor_parallel"},
     .dump_default = false,
     .meaning = "tensor-parallel collectives overlapped with their GEMMs (Megatron's --tp-comm-overlap)"},
    {.block = k, .name = "overlap_p2p_comm", .dom = d::boolean, .field = member<&training::overlap_p2p_comm, B>(),
     .default_value = false, .default_text = "false", .aliases = {"overlap_p2p_communication"},
     .dump_default = false, .meaning = "pipeline sends and receives overlapped with compute (with interleaving)"},
    {.block = k, .name = "p2p_scatter_gather", .dom = d::boolean,
     .field = member<&training::p2p_scatter_gather, B>(), .default_value = true, .default_text = "true",
     .aliases = {"scatter_gather_tensors_in_pipeline", "pipe_partitioned"}, .dump_default = false,
     .meaning = "each tensor rank sends 1/tp of an activation across a stage boundary; the receiver all-gathers it"},
    {.block = k, .name = "fp8_param_gather", .dom = d::boolean, .field = member<&training::fp8_param_gather, B>(),
     .default_value = false, .default_text = "false",
     .aliases = {"fp8_params", "enable_fsdp_float8_all_gather"}, .dump_default = false,
     .meaning = "fp8 weights gathered in fp8 (Megatron's --fp8-param-gather)"},
    {.block = k, .name = "tied_hp_grad", .dom = d::boolean, .field = member<&training::tied_hp_grad, B>(),
     .default_value = false, .default_text = "false", .dump_default = false,
     .meaning = "with bf16, a tied embedding's gradient copies on the first and last stage are summed in the "
                "optimizer's fp32 gradients (DeepSpeed's BF16_Optimizer)"},
    {.block = k, .name = "fsdp_reshard_with_pp", .dom = d::boolean,
     .field = member<&training::fsdp_reshard_with_pp, B>(), .default_value = true, .default_text = "true",
     .dump_default = false,
     .meaning = "with pipeline parallelism, ZeRO-3 regathers each layer every micro-batch; false: the stage's "
                "weights stay gathered and its gradients unsharded through the step (torchtitan)"},
    {.block = k, .name = "p2p_buffers_per_micro_batch", .dom = d::boolean,
     .field = member<&training::p2p_buffers_per_micro_batch, B>(), .default_value = false, .default_text = "false",
     .dump_default = false,
     .meaning = "PyTorch's pipelining: a stage keeps a receive buffer for each micro-batch's activation and "
                "gradient through the step, each output until its backward and each input gradient until the "
                "step ends; false: two send/recv buffers"},
    {.block = k, .name = "optimizer_state_precision", .dom = d::choice,
     .field = member<&training::optimizer_state_precision, B>(), .choices = {"bf16", "fp16", "fp32"},
     .default_value = std::int64_t{2}, .default_text = "fp32", .aliases = {"exp_avg_dtype"}, .dump_default = false,
     .meaning = "precision of Adam's moments (bf16: precision-aware optimizers)"},
    {.block = k, .name = "cuda_graphs", .dom = d::boolean, .field = member<&training::cuda_graphs, B>(),
     .default_value = false, .default_text = "false", .aliases = {"enable_cuda_graph"}, .dump_default = false,
     .meaning = "the step replayed as CUDA graphs: no host time per operator"},
    {.block = k, .name = "timing_log_level", .dom = d::count, .field = member<&training::timing_log_level, B>(),
     .min = 0, .max = 2, .default_value = std::int64_t{0}, .default_text = "0", .dump_default = false,
     .meaning = "Megatron's --timing-log-level: at 2 the host waits for the GPU as every micro-batch's forward and "
                "backward starts and ends (the timers around them synchronise)"},
    {.block = k, .name = "cp_comm_type", .dom = d::choice, .field = member<&training::cp_comm_type, B>(),
     .choices = {"p2p", "allgather", "alltoall"}, .default_value = std::int64_t{0}, .default_text = "p2p",
     .dump_default = false,
     .meaning = "context parallelism's key and value exchange: Transformer Engine's ring (p2p, Megatron's "
                "--cp-comm-type), or PyTorch's ring attention gathering them (allgather) or passing them on "
                "(alltoall), torchtitan's context_parallel_rotate_method"},
    {.block = k, .name = "nvls", .dom = d::boolean, .field = member<&training::nvls, B>(),
     .default_value = false, .default_text = "false", .aliases = {"nvls_enable"}, .dump_default = false,
     .meaning = "NCCL may run NVLink SHARP (NVLS) all-reduces inside a node"},
  };
  for (auto& row : rows) row.behaviour = true;
  return rows;
}

std::vector<key_info> training_keys() {
  using k = block_kind;
  using d = domain;
  std::vector<key_info> rows{
    {.block = k::training, .name = "description", .dom = d::text, .field = nothing<training>(),
     .default_text = "none", .meaning = "free text"},
    {.block = k::training, .name = "global_batch", .dom = d::count, .field = member<&training::global_batch>(),
     .what = "of sequences for 'global_batch'", .required = true, .default_text = "required",
     .aliases = {"batch_size"}, .meaning = "sequences per optimizer step"},
    {.block = k::training, .name = "base_lr", .dom = d::real, .field = member<&training::base_lr>(),
     .range = learning_rate, .default_text = "none", .aliases = {"lr"},
     .meaning = "learning rate tuned at 'base_batch' (advice scales it)"},
    {.block = k::training, .name = "base_batch", .dom = d::count, .field = member<&training::base_batch>(),
     .what = "of sequences for 'base_batch'", .default_text = "none",
     .meaning = "the batch 'base_lr' was tuned at"},
    {.block = k::training, .name = "framework", .dom = d::framework_name, .field = member<&training::framework>(),
     .default_value = std::string("generic"), .default_text = "generic", .dump_default = false,
     .meaning = "the framework whose run-time behaviours the run starts from: a framework block of the file or "
                "of the catalog"},
    {.block = k::training, .name = "recompute_modules", .dom = d::choice,
     .field = member<&training::recompute_modules>(),
     .choices = {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe"}, .default_value = value_set{0},
     .default_text = "{core_attn}", .framework_flag = true, .takes_set = true, .dump_default = false,
     .meaning = "what checkpoint = selective recomputes (a set; Megatron-Core's --recompute-modules): the core "
                "attention, a mixture's expert activation, the two layer norms, multi-latent attention's up "
                "projections and rotary, the dense MLP, a mixture's whole MLP with its dispatch and combine"},
    {.block = k::training, .name = "num_layers_in_first_pipeline_stage", .dom = d::count,
     .field = member<&training::first_stage_layers>(), .what = "of layers for 'num_layers_in_first_pipeline_stage'",
     .default_text = "none", .aliases = {"decoder_first_pipeline_num_layers"}, .framework_flag = true, .dump_default = false,
     .meaning = "with pp > 1, the layers of the first pipeline stage, the middle stages sharing the rest evenly "
                "(Megatron-Core's --decoder-first-pipeline-num-layers)"},
    {.block = k::training, .name = "num_layers_in_last_pipeline_stage", .dom = d::count,
     .field = member<&training::last_stage_layers>(), .what = "of layers for 'num_layers_in_last_pipeline_stage'",
     .default_text = "none", .aliases = {"decoder_last_pipeline_num_layers"}, .framework_flag = true, .dump_default = false,
     .meaning = "with pp > 1, the layers of the last pipeline stage (Megatron-Core's "
                "--decoder-last-pipeline-num-layers)"},
    {.block = k::training, .name = "account_for_embedding_in_pipeline_split", .dom = d::boolean,
     .field = member<&training::embedding_in_split>(), .default_value = false, .default_text = "false",
     .framework_flag = true, .dump_default = false,
     .meaning = "with pp > 1, the embedding counts as a layer of the first pipeline chunk in an even split "
                "(Megatron-Core's flag)"},
    {.block = k::training, .name = "account_for_loss_in_pipeline_split", .dom = d::boolean,
     .field = member<&training::loss_in_split>(), .default_value = false, .default_text = "false",
     .framework_flag = true, .dump_default = false,
     .meaning = "with pp > 1, the loss counts as a layer of the last pipeline chunk in an even split "
                "(Megatron-Core's flag)"},
    {.block = k::training, .name = "cuda_launch_blocking", .dom = d::boolean,
     .field = member<&training::cuda_launch_blocking>(), .default_value = false, .default_text = "false",
     .dump_default = false,
     .meaning = "the run sets CUDA_LAUNCH_BLOCKING=1: each operator's host time adds to its GPU time and no "
                "communication overlaps compute"},
  };
  for (auto& row : behaviour_keys<training>()) rows.push_back(std::move(row));
  return rows;
}

std::vector<key_info> framework_keys() {
  using k = block_kind;
  using d = domain;
  using dim = dimension;
  auto const all_stages = value_set{0, 1, 2, 3};
  std::vector<key_info> rows{
    {.block = k::framework, .name = "description", .dom = d::text, .field = member<&framework::description>(),
     .default_text = "none", .meaning = "free text (the catalog's version and sources)"},
  };
  for (auto& row : behaviour_keys<framework>()) rows.push_back(std::move(row));
  std::vector<key_info> limits{
    {.block = k::framework, .name = "zero_stages", .dom = d::count,
     .field = member<&framework_limits::zero_stages, framework>(), .min = 0, .max = 3,
     .what = "for 'zero_stages' (a ZeRO stage)", .default_value = all_stages, .default_text = "{0, 1, 2, 3}",
     .takes_set = true, .meaning = "the ZeRO stages it runs (a set)"},
    {.block = k::framework, .name = "pipeline_max_zero", .dom = d::count,
     .field = member<&framework_limits::pipeline_max_zero, framework>(), .min = 0, .max = 3,
     .what = "for 'pipeline_max_zero' (a ZeRO stage)", .default_value = std::int64_t{3}, .default_text = "3",
     .meaning = "the highest ZeRO stage it runs with pp > 1"},
    {.block = k::framework, .name = "bf16_min_zero", .dom = d::count,
     .field = member<&framework_limits::bf16_min_zero, framework>(), .min = 0, .max = 3,
     .what = "for 'bf16_min_zero' (a ZeRO stage)", .default_value = std::int64_t{0}, .default_text = "0",
     .meaning = "the lowest ZeRO stage it runs when the model trains in bf16"},
    {.block = k::framework, .name = "tensor_parallel", .dom = d::boolean,
     .field = member<&framework_limits::tensor_parallel, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs tp > 1"},
    {.block = k::framework, .name = "pipeline_parallel", .dom = d::boolean,
     .field = member<&framework_limits::pipeline_parallel, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs pp > 1"},
    {.block = k::framework, .name = "interleaving", .dom = d::boolean,
     .field = member<&framework_limits::interleaving, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs virtual_stages > 1 (interleaved 1F1B)"},
    {.block = k::framework, .name = "context_parallel", .dom = d::boolean,
     .field = member<&framework_limits::context_parallel, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs cp > 1"},
    {.block = k::framework, .name = "expert_parallel", .dom = d::boolean,
     .field = member<&framework_limits::expert_parallel, framework>(), .default_value = true,
     .default_text = "true",
     .meaning = "it runs a mixture's own expert grid: ep > 1 (experts over data-parallel ranks), or etp = 1 below tp"},
    {.block = k::framework, .name = "tp_without_sequence_parallel", .dom = d::boolean,
     .field = member<&framework_limits::tp_without_sequence_parallel, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs tp > 1 with sequence_parallel = false"},
    {.block = k::framework, .name = "experts_without_sequence_parallel", .dom = d::boolean,
     .field = member<&framework_limits::experts_without_sequence_parallel, framework>(), .default_value = true,
     .default_text = "true",
     .meaning = "it runs a mixture of experts with tp > 1 and sequence_parallel = false (Megatron-Core: false)"},
    {.block = k::framework, .name = "zero0_with_model_parallel", .dom = d::boolean,
     .field = member<&framework_limits::zero0_with_model_parallel, framework>(), .default_value = true,
     .default_text = "true",
     .meaning = "it runs zero = 0 with dp > 1 beside tp or pp > 1, or with cp > 1 (torchtitan's DDP is 1-D: false)"},
    {.block = k::framework, .name = "pipeline_split", .dom = d::choice,
     .field = member<&framework_limits::pipeline_split, framework>(), .choices = {"uneven", "stage_size", "even"},
     .default_value = std::int64_t{0}, .default_text = "uneven",
     .meaning = "how it splits the layers over the pipeline's chunks: any way (the first chunks a layer more), in "
                "stages of one size, ceil(layers / size) of them (torchtitan), or evenly only"},
    {.block = k::framework, .name = "first_last_stage_layers", .dom = d::boolean,
     .field = member<&framework_limits::first_last_stage_layers, framework>(), .default_value = true,
     .default_text = "true",
     .meaning = "it runs a pipeline split with num_layers_in_first_pipeline_stage or "
                "num_layers_in_last_pipeline_stage"},
    {.block = k::framework, .name = "embedding_loss_in_split", .dom = d::choice,
     .field = member<&framework_limits::embedding_loss_in_split, framework>(), .choices = {"none", "even", "uneven"},
     .default_value = std::int64_t{1}, .default_text = "even",
     .meaning = "how it splits a pipeline with account_for_embedding_in_pipeline_split or "
                "account_for_loss_in_pipeline_split: not at all, only where the layers and they divide over the "
                "chunks (Megatron-Core), or the first chunks a layer more (torchtitan)"},
    {.block = k::framework, .name = "sequence_split", .dom = d::choice,
     .field = member<&framework_limits::sequence_split, framework>(), .choices = {"even", "balanced", "balanced_tp"},
     .default_value = std::int64_t{0}, .default_text = "even",
     .meaning = "what seq_len must divide into: cp x tp (tp where sequence parallel) even chunks; those and 2 x cp "
                "chunks where cp > 1 (Megatron-Core's causal load balance); or 2 x cp x tp always (torchtitan)"},
    {.block = k::framework, .name = "expert_grid", .dom = d::choice,
     .field = member<&framework_limits::expert_grid, framework>(), .choices = {"any", "dp2ep"},
     .default_value = std::int64_t{0}, .default_text = "any",
     .meaning = "the expert grids it forms: any block of ep expert members, or dp2ep: ep a multiple of cp (of tp x cp "
                "with etp = 1), and etp = 1 only with ep > 1 (torchtitan)"},
    {.block = k::framework, .name = "interleaving_pp2_batched", .dom = d::boolean,
     .field = member<&framework_limits::interleaving_pp2_batched, framework>(), .default_value = true,
     .default_text = "true",
     .meaning = "it runs virtual_stages > 1 at pp = 2 with overlap_p2p_comm = false (Megatron: false, its batched "
                "send and receive would pair the two ranks twice)"},
    {.block = k::framework, .name = "sequence_parallel", .dom = d::boolean,
     .field = member<&framework_limits::sequence_parallel, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs sequence_parallel = true (tp > 1); where it does not, a strategy's default is false"},
    {.block = k::framework, .name = "hybrid_sharding", .dom = d::boolean,
     .field = member<&framework_limits::hybrid_sharding, framework>(), .default_value = true,
     .default_text = "true", .meaning = "it runs a ZeRO shard group smaller than dp x cp"},
    {.block = k::framework, .name = "checkpoint_modes", .dom = d::choice,
     .field = member<&framework_limits::checkpoint_modes, framework>(),
     .choices = {"none", "selective", "full", "ops"}, .default_value = all_stages,
     .default_text = "{none, selective, full, ops}", .takes_set = true,
     .meaning = "the activation checkpointing modes it runs (a set)"},
    {.block = k::framework, .name = "dispatch_latency", .dom = d::quantity,
     .field = member<&framework::dispatch_latency>(), .dim = dim::time, .range = latency_range,
     .default_value = 0.0, .default_text = "0 s", .meaning = "host time to issue one operator (fitted)"},
    {.block = k::framework, .name = "step_overhead", .dom = d::quantity, .field = member<&framework::step_overhead>(),
     .dim = dim::time, .range = overhead_range, .default_value = 0.02, .default_text = "20 ms",
     .meaning = "fixed time per optimizer step: data loading, logging, launch gaps (fitted)"},
  };
  for (auto& row : limits) rows.push_back(std::move(row));
  return rows;
}

std::vector<key_info> strategy_keys() {
  using k = block_kind;
  using d = domain;
  return {
    {.block = k::strategy, .name = "description", .dom = d::text, .field = nothing_of_strategy(),
     .default_text = "none", .meaning = "free text"},
    {.block = k::strategy, .name = "dp", .dom = d::count, .field = choice<&strategy_spec::dp, &strategy::dp>(),
     .default_value = std::int64_t{0}, .default_text = "GPUs / (tp x cp x pp)", .aliases = {"data_parallel"},
     .searchable = true, .meaning = "data-parallel ranks"},
    {.block = k::strategy, .name = "tp", .dom = d::count, .field = choice<&strategy_spec::tp, &strategy::tp>(),
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"tensor_parallel"}, .searchable = true,
     .meaning = "tensor-parallel ranks"},
    {.block = k::strategy, .name = "pp", .dom = d::count, .field = choice<&strategy_spec::pp, &strategy::pp>(),
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"pipeline_parallel"},
     .searchable = true, .meaning = "pipeline stages"},
    {.block = k::strategy, .name = "cp", .dom = d::count, .field = choice<&strategy_spec::cp, &strategy::cp>(),
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"context_parallel"}, .searchable = true,
     .meaning = "context-parallel ranks (the sequence split)"},
    {.block = k::strategy, .name = "ep", .dom = d::count, .field = choice<&strategy_spec::ep, &strategy::ep>(),
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"expert_parallel"}, .searchable = true,
     .meaning = "expert-parallel ranks"},
    {.block = k::strategy, .name = "etp", .dom = d::count, .field = choice<&strategy_spec::etp, &strategy::etp>(),
     .default_value = std::int64_t{0}, .default_text = "tp", .aliases = {"expert_tensor_parallel"},
     .searchable = true,
     .meaning = "tensor-parallel ranks each expert is split over: tp, or 1 (experts whole on each rank, the "
                "expert-parallel group spanning the tensor-parallel ranks)"},
    {.block = k::strategy, .name = "zero", .dom = d::count,
     .field = choice<&strategy_spec::zero, &strategy::zero>(), .min = 0, .max = 3,
     .what = "for 'zero' (a ZeRO stage)", .default_value = std::int64_t{0}, .default_text = "0",
     .aliases = {"zero_stage", "fsdp"}, .searchable = true,
     .meaning = "ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also weights (FSDP)"},
    {.block = k::strategy, .name = "shard", .dom = d::shard,
     .field = choice<&strategy_spec::shard, &strategy::shard>(), .what = "of ranks for 'shard'",
     .default_value = shard_group{}, .default_text = "all", .searchable = true,
     .meaning = "ZeRO shard group: all data-parallel ranks, one node's, or N ranks (hybrid sharding)"},
    {.block = k::strategy, .name = "checkpoint", .dom = d::choice,
     .field = choice<&strategy_spec::checkpoint, &strategy::checkpoint>(),
     .choices = {"none", "selective", "full", "ops"}, .default_value = std::int64_t{0}, .default_text = "none",
     .aliases = {"recompute", "activation_checkpointing"}, .searchable = true,
     .meaning = "activation checkpointing of each layer"},
    {.block = k::strategy, .name = "micro_batch", .dom = d::count,
     .field = choice<&strategy_spec::micro_batch, &strategy::micro_batch>(), .default_value = std::int64_t{1},
     .default_text = "1", .searchable = true, .meaning = "sequences per micro-batch"},
    {.block = k::strategy, .name = "sequence_parallel", .dom = d::boolean,
     .field = choice<&strategy_spec::sequence_parallel, &strategy::sequence_parallel>(),
     .default_text = "tp > 1", .searchable = true,
     .derived = [](strategy const& s) -> key_value { return s.tp > 1; },
     .meaning = "norms and dropout split over the tensor-parallel ranks"},
    {.block = k::strategy, .name = "virtual_stages", .dom = d::count,
     .field = choice<&strategy_spec::virtual_stages, &strategy::virtual_stages>(),
     .default_value = std::int64_t{1}, .default_text = "1", .aliases = {"interleave"}, .searchable = true,
     .meaning = "model chunks per pipeline stage (interleaved 1F1B)"},
    {.block = k::strategy, .name = "order", .dom = d::order,
     .field = choice<&strategy_spec::order, &strategy::order>(), .default_value = default_order,
     .default_text = "\"tp-cp-dp-pp\"", .searchable = true,
     .meaning = "rank layout, innermost axis first"},
  };
}

std::vector<key_info> make_table() {
  std::vector<key_info> t;
  for (auto rows : {model_keys, gpu_keys, cluster_keys, training_keys, strategy_keys, framework_keys})
    for (auto& row : rows()) t.push_back(std::move(row));
  return t;
}

struct table {
  std::vector<key_info> rows = make_table();
  std::array<std::span<key_info const>, block_kind_count> by_block;
  std::array<std::vector<std::string>, block_kind_count> names;

  table() {
    std::size_t start = 0;
    for (std::size_t b = 0; b < block_kind_count; ++b) {
      std::size_t end = start;
      while (end < rows.size() && static_cast<std::size_t>(rows[end].block) == b) ++end;
      by_block[b] = std::span<key_info const>(rows.data() + start, end - start);
      for (auto const& r : by_block[b]) names[b].emplace_back(r.name);
      start = end;
    }
    if (start != rows.size()) throw std::logic_error("the key table is not grouped by block");
  }
};

table const& the_table() {
  static table const t;
  return t;
}

}  // namespace

std::vector<key_info> const& all_keys() { return the_table().rows; }

std::span<key_info const> keys_of(block_kind k) { return the_table().by_block[static_cast<std::size_t>(k)]; }

std::vector<std::string> const& key_names(block_kind k) { return the_table().names[static_cast<std::size_t>(k)]; }

key_info const* find_key(block_kind k, std::string_view key) {
  for (auto const& row : keys_of(k))
    if (row.name == key) return &row;
  return nullptr;
}

bool of_a_framework(key_info const& k) { return k.behaviour || k.framework_flag; }

key_info const* alias_of(block_kind k, std::string_view written) {
  for (auto const& row : keys_of(k))
    for (auto a : row.aliases)
      if (a == written) return &row;
  return nullptr;
}

template <class Block>
void store(key_info const& k, Block& b, key_value const& v) {
  if (auto const* a = std::get_if<member_access<Block>>(&k.field); a && a->store) a->store(b, v);
}

template <class Block>
std::optional<key_value> load(key_info const& k, Block const& b) {
  if (auto const* a = std::get_if<member_access<Block>>(&k.field); a && a->load) return a->load(b);
  return std::nullopt;
}

template <class Block>
Block with_defaults() {
  Block b;
  for (auto const& k : keys_of(kind_of_block<Block>()))
    if (k.default_value) store(k, b, *k.default_value);
  return b;
}

template void store<model>(key_info const&, model&, key_value const&);
template void store<gpu>(key_info const&, gpu&, key_value const&);
template void store<cluster>(key_info const&, cluster&, key_value const&);
template void store<training>(key_info const&, training&, key_value const&);
template void store<framework>(key_info const&, framework&, key_value const&);
template std::optional<key_value> load<model>(key_info const&, model const&);
template std::optional<key_value> load<gpu>(key_info const&, gpu const&);
template std::optional<key_value> load<cluster>(key_info const&, cluster const&);
template std::optional<key_value> load<training>(key_info const&, training const&);
template std::optional<key_value> load<framework>(key_info const&, framework const&);
template model with_defaults<model>();
template gpu with_defaults<gpu>();
template cluster with_defaults<cluster>();
template training with_defaults<training>();
template framework with_defaults<framework>();

}  // namespace dtplan::planner
