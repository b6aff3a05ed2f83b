#include "planner/ir/keys.hpp"

#include <fmt/format.h>

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
template <class C>
struct choice_of;
template <class T>
struct choice_of<key_choice<T>> {
  using type = T;
};

template <class T>
key_value to_value(T const& v) {
  if constexpr (std::is_enum_v<T>)
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
  if constexpr (std::is_enum_v<T>)
    return static_cast<T>(std::get<std::int64_t>(v));
  else if constexpr (is_unit<T>::value)
    return T(std::get<double>(v));
  else if constexpr (std::is_same_v<T, int>)
    return static_cast<int>(std::get<std::int64_t>(v));
  else
    return std::get<T>(v);
}

// The member `M` of a model, gpu, cluster or training. An optional member
// holds no value until set; an empty string is no text.
template <auto M>
key_field member() {
  using B = typename member_of<decltype(M)>::block;
  using T = typename member_of<decltype(M)>::type;
  member_access<B> a;
  if constexpr (is_optional<T>::value) {
    a.store = [](B& b, key_value const& v) { b.*M = from_value<typename T::value_type>(v); };
    a.load = [](B const& b) -> std::optional<key_value> {
      if (!(b.*M)) return std::nullopt;
      return to_value(*(b.*M));
    };
  } else {
    a.store = [](B& b, key_value const& v) { b.*M = from_value<T>(v); };
    a.load = [](B const& b) -> std::optional<key_value> {
      if constexpr (std::is_same_v<T, std::string>)
        if ((b.*M).empty()) return std::nullopt;
      return to_value(b.*M);
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
  return a;
}

key_field gpu_of_cluster() {
  member_access<cluster> a;
  a.load = [](cluster const& c) -> std::optional<key_value> { return c.device.name; };
  return a;
}

// grad_reduce names how ZeRO-1/2 reduce; the IR keeps whether it scatters.
key_field grad_reduce_of_training() {
  member_access<training> a;
  a.store = [](training& t, key_value const& v) { t.grad_reduce_scatter = std::get<std::int64_t>(v) == 0; };
  a.load = [](training const& t) -> std::optional<key_value> {
    return std::int64_t{t.grad_reduce_scatter ? 0 : 1};
  };
  return a;
}

constexpr double kib = 1024.0;
constexpr double pib = kib * kib * kib * kib * kib;

// The physical ranges: generous, so that no machine built or planned is
// out, and narrow enough that every figure derived from them stays finite.
constexpr bounds memory_range{0, pib, true, "", "1024 TiB"};
constexpr bounds optional_link_range{0, 100e12, false, "", "100 TB/s"};
constexpr bounds reserved_range{0, pib, false, "", "1024 TiB"};
constexpr bounds rate_range{1e9, 1e18, true, "1 GFLOP/s", "1000 PFLOP/s"};
constexpr bounds link_range{1e6 / 8, 100e12, true, "1 Mbit/s", "100 TB/s"};
constexpr bounds latency_range{0, 10, false, "", "10 s"};
constexpr bounds overhead_range{0, 3600, false, "", "3600 s"};
constexpr bounds positive_fraction{0.01, 1, true, "1 %", "100 %"};
constexpr bounds any_fraction{0, 1, false, "", "100 %"};
constexpr bounds learning_rate{0, 100, true, "", "100"};

constexpr std::int64_t max_sm_count = 1'000'000;

std::vector<key_info> model_keys() {
  using k = block_kind;
  using d = domain;
  return {
    {.block = k::model, .name = "description", .dom = d::text, .field = member<&model::description>(),
     .default_text = "none", .meaning = "free text shown in reports"},
    {.block = k::model, .name = "layers", .dom = d::count, .field = member<&model::layers>(),
     .what = "of layers", .required = true, .default_text = "required", .aliases = {"num_layers"},
     .meaning = "transformer layers"},
    {.block = k::model, .name = "hidden", .dom = d::count, .field = member<&model::hidden>(),
     .required = true, .default_text = "required", .aliases = {"hidden_size"},
     .meaning = "hidden size: the width of each layer"},
    {.block = k::model, .name = "heads", .dom = d::count, .field = member<&model::heads>(), .what = "of heads",
     .required = true, .default_text = "required", .aliases = {"num_attention_heads"},
     .meaning = "attention heads; 'hidden' is a multiple of it"},
    {.block = k::model, .name = "kv_heads", .dom = d::count, .field = member<&model::kv_heads>(),
     .what = "of key/value heads", .default_text = "= heads", .aliases = {"num_key_value_heads"},
     .meaning = "key/value heads (grouped-query attention); divides 'heads'"},
    {.block = k::model, .name = "ffn", .dom = d::count, .field = member<&model::ffn>(),
     .default_text = "= 4 x hidden", .aliases = {"intermediate_size"}, .meaning = "inner size of the MLP"},
    {.block = k::model, .name = "mlp", .dom = d::choice, .field = member<&model::mlp>(),
     .choices = {"gelu", "swiglu"}, .default_value = std::int64_t{0}, .default_text = "gelu",
     .meaning = "MLP kind: two matrices (gelu) or three (swiglu)"},
    {.block = k::model, .name = "vocab", .dom = d::count, .field = member<&model::vocab>(), .required = true,
     .default_text = "required", .aliases = {"vocab_size"}, .meaning = "vocabulary size"},
    {.block = k::model, .name = "seq_len", .dom = d::count, .field = member<&model::seq_len>(),
     .what = "of tokens for 'seq_len'", .required = true, .default_text = "required",
     .aliases = {"max_position_embeddings", "seq_length"}, .meaning = "tokens per sequence"},
    {.block = k::model, .name = "tied_embeddings", .dom = d::boolean, .field = member<&model::tied_embeddings>(),
     .default_value = false, .default_text = "false",
     .meaning = "input and output embeddings share one matrix"},
    {.block = k::model, .name = "attention", .dom = d::choice, .field = member<&model::attention>(),
     .choices = {"flash", "standard"}, .default_value = std::int64_t{0}, .default_text = "flash",
     .meaning = "attention kernel: flash keeps no score matrix"},
    {.block = k::model, .name = "precision", .dom = d::choice, .field = member<&model::prec>(),
     .choices = {"bf16", "fp16", "fp32", "fp8"}, .default_value = std::int64_t{0}, .default_text = "bf16",
     .aliases = {"dtype"}, .meaning = "precision of weights and activations in compute"},
    {.block = k::model, .name = "optimizer", .dom = d::choice, .field = member<&model::optimizer>(),
     .choices = {"adam", "adamw", "sgd", "sgd_momentum"}, .default_value = std::int64_t{0},
     .default_text = "adam", .meaning = "optimizer, which sets the state kept per parameter"},
    {.block = k::model, .name = "experts", .dom = d::count, .field = member<&model::experts>(),
     .what = "of experts", .default_value = std::int64_t{1}, .default_text = "1",
     .meaning = "experts per MoE layer (1: a dense model)"},
    {.block = k::model, .name = "experts_per_token", .dom = d::count,
     .field = member<&model::experts_per_token>(), .what = "of experts per token",
     .default_value = std::int64_t{1}, .default_text = "1", .meaning = "experts each token is routed to"},
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
    {.block = k::gpu, .name = "reserved", .dom = d::quantity, .field = member<&gpu::reserved>(), .dim = dim::bytes,
     .range = reserved_range, .default_value = two_gib, .default_text = "2 GiB",
     .meaning = "memory never available to the job (driver, CUDA context)"},
    {.block = k::gpu, .name = "intra_latency", .dom = d::quantity, .field = member<&gpu::intra_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 5e-6, .default_text = "5 us",
     .meaning = "latency of one step of a collective inside a node"},
    {.block = k::gpu, .name = "inter_latency", .dom = d::quantity, .field = member<&gpu::inter_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 10e-6, .default_text = "10 us",
     .meaning = "latency of one step of a collective across nodes"},
    {.block = k::gpu, .name = "comm_efficiency", .dom = d::fraction, .field = member<&gpu::comm_efficiency>(),
     .range = positive_fraction, .default_value = 0.8, .default_text = "0.8",
     .meaning = "share of link bandwidth a large collective reaches"},
    {.block = k::gpu, .name = "network_efficiency", .dom = d::fraction,
     .field = member<&gpu::network_efficiency>(), .range = positive_fraction, .default_value = 0.95,
     .default_text = "0.95", .meaning = "share of a NIC's line rate NCCL's bus bandwidth reaches across nodes"},
    {.block = k::gpu, .name = "hbm_efficiency", .dom = d::fraction, .field = member<&gpu::hbm_efficiency>(),
     .range = positive_fraction, .default_value = 0.8, .default_text = "0.8",
     .meaning = "share of memory bandwidth a streaming kernel reaches"},
    {.block = k::gpu, .name = "sm_count", .dom = d::count, .field = member<&gpu::sm_count>(),
     .max = max_sm_count, .what = "of streaming multiprocessors", .default_value = std::int64_t{108},
     .default_text = "108", .meaning = "streaming multiprocessors: matmul tiles run in waves over them"},
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
     .dim = dim::time, .range = overhead_range, .default_value = 0.02, .default_text = "20 ms",
     .meaning = "fixed time per optimizer step (data loading, logging, launch gaps)"},
    {.block = k::gpu, .name = "dispatch_latency", .dom = d::quantity, .field = member<&gpu::dispatch_latency>(),
     .dim = dim::time, .range = latency_range, .default_value = 0.0, .default_text = "0 s",
     .meaning = "host time to issue one operator"},
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

std::vector<key_info> training_keys() {
  using k = block_kind;
  using d = domain;
  return {
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
    {.block = k::training, .name = "grad_precision", .dom = d::choice,
     .field = member<&training::grad_precision>(), .choices = {"bf16", "fp16", "fp32"},
     .default_text = "the model's 16-bit",
     .aliases = {"accumulate_allreduce_grads_in_fp32", "reduce_dtype"},
     .meaning = "precision gradients are kept and reduced in"},
    {.block = k::training, .name = "overlap_grad_sync", .dom = d::boolean,
     .field = member<&training::overlap_grad_sync>(), .default_value = true, .default_text = "true",
     .aliases = {"overlap_grad_reduce"}, .dump_default = false,
     .meaning = "the data-parallel gradient sync runs under the backward"},
    {.block = k::training, .name = "grad_reduce", .dom = d::choice, .field = grad_reduce_of_training(),
     .choices = {"reduce_scatter", "all_reduce"}, .default_value = std::int64_t{0},
     .default_text = "reduce_scatter", .aliases = {"reduce_scatter"}, .dump_default = false,
     .meaning = "how ZeRO-1/2 reduce gradients"},
    {.block = k::training, .name = "tp_comm_overlap", .dom = d::boolean, .field = member<&training::tp_comm_overlap>(),
     .default_value = false, .default_text = "false", .aliases = {"enable_async_tensor_parallel"},
     .dump_default = false,
     .meaning = "tensor-parallel collectives overlapped with their GEMMs (Megatron's --tp-comm-overlap)"},
    {.block = k::training, .name = "cross_entropy", .dom = d::choice, .field = member<&training::cross_entropy>(),
     .choices = {"fused", "unfused"}, .default_value = std::int64_t{0}, .default_text = "fused",
     .dump_default = false, .meaning = "the loss as Megatron's fused kernel or PyTorch's unfused one computes it"},
  };
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
  for (auto rows : {model_keys, gpu_keys, cluster_keys, training_keys, strategy_keys})
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

template <class B>
constexpr block_kind kind_of_block() {
  if constexpr (std::is_same_v<B, model>) return block_kind::model;
  else if constexpr (std::is_same_v<B, gpu>) return block_kind::gpu;
  else if constexpr (std::is_same_v<B, cluster>) return block_kind::cluster;
  else return block_kind::training;
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
template std::optional<key_value> load<model>(key_info const&, model const&);
template std::optional<key_value> load<gpu>(key_info const&, gpu const&);
template std::optional<key_value> load<cluster>(key_info const&, cluster const&);
template std::optional<key_value> load<training>(key_info const&, training const&);
template model with_defaults<model>();
template gpu with_defaults<gpu>();
template cluster with_defaults<cluster>();
template training with_defaults<training>();

}  // namespace dtplan::planner
