#include "planner/ir/ir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace dtplan::planner {

char const* name(precision p) {
  switch (p) {
    case precision::bf16: return "bf16";
    case precision::fp16: return "fp16";
    case precision::fp32: return "fp32";
    case precision::fp8: return "fp8";
  }
  return "?";
}
char const* name(mlp_kind m) { return m == mlp_kind::gelu ? "gelu" : "swiglu"; }
char const* name(attention_kind a) { return a == attention_kind::flash ? "flash" : "standard"; }
char const* name(optimizer_kind o) {
  switch (o) {
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adamw: return "adamw";
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::sgd_momentum: return "sgd_momentum";
  }
  return "?";
}
char const* name(checkpoint_mode c) {
  switch (c) {
    case checkpoint_mode::none: return "none";
    case checkpoint_mode::selective: return "selective";
    case checkpoint_mode::full: return "full";
    case checkpoint_mode::ops: return "ops";
  }
  return "?";
}
char const* name(cross_entropy_kind c) {
  switch (c) {
    case cross_entropy_kind::fused: return "fused";
    case cross_entropy_kind::unfused: return "unfused";
  }
  return "?";
}
int recompute_rank(checkpoint_mode c) {
  auto const at = std::find(checkpoint_modes.begin(), checkpoint_modes.end(), c);
  return static_cast<int>(at - checkpoint_modes.begin());
}
char const* name(axis a) {
  switch (a) {
    case axis::tp: return "tp";
    case axis::cp: return "cp";
    case axis::dp: return "dp";
    case axis::pp: return "pp";
  }
  return "?";
}

std::string to_string(shard_group const& s) {
  switch (s.k) {
    case shard_group::kind::all: return "all";
    case shard_group::kind::node: return "node";
    case shard_group::kind::size: return fmt::format("{}", s.size);
  }
  return "?";
}

std::string to_string(rank_order const& o) {
  return fmt::format("{}-{}-{}-{}", name(o[0]), name(o[1]), name(o[2]), name(o[3]));
}

std::optional<size_limit> beyond_limits(cluster const& c, std::string const& called) {
  if (c.gpus_per_node > max_gpus_per_node)
    return size_limit{"gpus_per_node", fmt::format("gpus_per_node = {}: dtplan plans nodes of at most {} GPUs",
                                                   c.gpus_per_node, grouped(max_gpus_per_node))};
  if (c.gpus_per_node > 0 && c.nodes > max_gpus / c.gpus_per_node)
    return size_limit{nullptr, fmt::format("{} has {} nodes of {} GPUs; dtplan plans clusters of at most {} GPUs",
                                           called, c.nodes, c.gpus_per_node, grouped(max_gpus))};
  return std::nullopt;
}

std::optional<size_limit> beyond_limits(model const& m, training const& t) {
  if (m.seq_len > 0 && t.global_batch > INT64_MAX / m.seq_len)
    return size_limit{"global_batch",
                      fmt::format("global_batch = {} sequences of {} tokens: more tokens per step than fit in 64 bits",
                                  t.global_batch, m.seq_len)};
  return std::nullopt;
}

void use_gpu_defaults(cluster& c) {
  if (!c.keys.count("intra_node")) c.intra_node = c.device.intra_node;
  if (!c.keys.count("intra_latency")) c.intra_latency = c.device.intra_latency;
  if (!c.keys.count("inter_latency")) c.inter_latency = c.device.inter_latency;
  if (!c.keys.count("comm_efficiency")) c.comm_efficiency = c.device.comm_efficiency;
}

double grad_element_bytes(model const& m, training const& t) {
  if (t.grad_precision) return *t.grad_precision == precision::fp32 ? 4 : 2;
  return m.prec == precision::fp32 ? 4 : 2;
}

bool strategy_spec::is_free() const {
  return dp.is_free() || tp.is_free() || pp.is_free() || cp.is_free() || ep.is_free() ||
         zero.is_free() || micro_batch.is_free() || virtual_stages.is_free() || shard.is_free() ||
         checkpoint.is_free() || sequence_parallel.is_free() || order.is_free();
}

namespace {
template <class T>
T single_or(key_choice<T> const& c, T fallback) {
  return c.f == key_choice<T>::form::single && !c.values.empty() ? c.values.front() : fallback;
}
}  // namespace

strategy strategy_spec::fixed() const {
  strategy s;
  s.dp = single_or<std::int64_t>(dp, 0);
  s.tp = single_or<std::int64_t>(tp, 1);
  s.pp = single_or<std::int64_t>(pp, 1);
  s.cp = single_or<std::int64_t>(cp, 1);
  s.ep = single_or<std::int64_t>(ep, 1);
  s.zero = static_cast<int>(single_or<std::int64_t>(zero, 0));
  s.shard = single_or(shard, shard_group{});
  s.checkpoint = single_or(checkpoint, checkpoint_mode::none);
  s.micro_batch = single_or<std::int64_t>(micro_batch, 1);
  s.sequence_parallel = single_or(sequence_parallel, s.tp > 1);
  s.virtual_stages = single_or<std::int64_t>(virtual_stages, 1);
  s.order = single_or(order, default_order);
  return s;
}

span strategy_spec::key_span(std::string_view key) const {
  auto pick = [&](auto const& c) { return c.key.valid() ? c.key : where; };
  if (key == "dp") return pick(dp);
  if (key == "tp") return pick(tp);
  if (key == "pp") return pick(pp);
  if (key == "cp") return pick(cp);
  if (key == "ep") return pick(ep);
  if (key == "zero") return pick(zero);
  if (key == "micro_batch") return pick(micro_batch);
  if (key == "virtual_stages") return pick(virtual_stages);
  if (key == "shard") return pick(shard);
  if (key == "checkpoint") return pick(checkpoint);
  if (key == "sequence_parallel") return pick(sequence_parallel);
  if (key == "order") return pick(order);
  return where;
}

}  // namespace dtplan::planner
