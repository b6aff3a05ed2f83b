#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/search/divisors.hpp"
#include "planner/search/search.hpp"

/// The strategy space a search walks: the structures (parallel degrees and
/// rank orders) and, per structure, the domain of every other key. Internal
/// to planner/search.
namespace dtplan::planner::detail {

/// The divisors of `n` among `candidates` (ascending, holding every divisor
/// of n): n's divisors without a trial division.
std::vector<std::int64_t> dividing(std::vector<std::int64_t> const& candidates, std::int64_t n);

/// The values of an integer key. `valid` is every value that can be valid
/// (ascending); a range keeps those inside it, `auto` takes `automatic`.
std::vector<std::int64_t> int_domain(key_choice<std::int64_t> const& c, std::int64_t fallback,
                                     std::vector<std::int64_t> const& valid,
                                     std::vector<std::int64_t> const& automatic);
std::vector<std::int64_t> capped(std::vector<std::int64_t> v, std::int64_t cap);

template <class T>
std::vector<T> sorted_unique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// One structural choice: the parallel degrees and the rank order. Every
// other key is enumerated inside it.
struct work_item {
  std::int64_t tp = 1, pp = 1, cp = 1, dp = 1, ep = 1;
  std::int64_t etp = 1;  ///< the experts' tensor split: tp or 1
  std::vector<rank_order> orders;
  std::int64_t candidates = 0;  // the size of its sub-tree

  // The structure's degrees, every other key at its default.
  [[nodiscard]] strategy structure() const {
    strategy s;
    s.tp = tp;
    s.pp = pp;
    s.cp = cp;
    s.dp = dp;
    s.ep = ep;
    s.etp = etp == tp ? 0 : etp;  // unset where it follows tp, as a written strategy has it
    return s;
  }
};

// The whole space with the dependent domains resolved per structure.
class space_view {
 public:
  space_view(program const& p, strategy_spec const& spec, search_options const& o)
      : p_(p), spec_(spec), options_(o) {
    auto gpus = p.cluster.gpus();
    auto g = divisors(gpus);
    gpu_divisors_ = g;
    batch_divisors_ = divisors(p.training.global_batch);
    layer_divisors_ = divisors(p.model.layers);
    padded_layer_divisors_ = divisors(p.model.layers + 2);
    tp_ = int_domain(spec.tp, 1, g, g);
    pp_ = int_domain(spec.pp, 1, g, g);
    cp_ = int_domain(spec.cp, 1, g, g);
    auto experts = divisors(p.model.experts);
    ep_ = int_domain(spec.ep, 1, experts, p.model.experts > 1 ? experts : std::vector<std::int64_t>{1});
    std::vector<std::int64_t> zeros{0, 1, 2, 3};
    zero_ = int_domain(spec.zero, 0, zeros, zeros);
    using cform = key_choice<checkpoint_mode>::form;
    if (spec.checkpoint.f == cform::any || spec.checkpoint.f == cform::range)
      checkpoint_.assign(checkpoint_modes.begin(), checkpoint_modes.end());
    else if (spec.checkpoint.f == cform::set) {
      checkpoint_ = sorted_unique(spec.checkpoint.values);
      std::stable_sort(checkpoint_.begin(), checkpoint_.end(),
                       [](auto a, auto b) { return recompute_rank(a) < recompute_rank(b); });
    } else
      checkpoint_ = {spec.fixed().checkpoint};
    using oform = key_choice<rank_order>::form;
    if (spec.order.f == oform::any || spec.order.f == oform::range)
      orders_ = search_orders();
    else if (spec.order.f == oform::set)
      orders_ = spec.order.values;
    else
      orders_ = {spec.fixed().order};
    keep_what_the_framework_runs();
  }

  /// What the framework's limits took out of the space, one line each.
  [[nodiscard]] std::vector<std::string> const& left_out() const { return left_out_; }
  /// The first key the framework runs none of the space's values of ("zero"),
  /// which empties the space; empty when there is none.
  [[nodiscard]] std::string const& emptied_by_framework() const { return emptied_; }

  [[nodiscard]] std::vector<std::int64_t> const& tp() const { return tp_; }
  [[nodiscard]] std::vector<std::int64_t> const& pp() const { return pp_; }
  [[nodiscard]] std::vector<std::int64_t> const& cp() const { return cp_; }
  [[nodiscard]] std::vector<std::int64_t> const& ep() const { return ep_; }

  // The experts' tensor split at `tp`: tp unless written; searched, also 1
  // (the experts whole on each rank) for a mixture where the framework runs
  // its own expert grid and sequence parallelism, which etp = 1 needs.
  [[nodiscard]] std::vector<std::int64_t> etp(std::int64_t tp) const {
    using form = key_choice<std::int64_t>::form;
    auto const& c = spec_.etp;
    auto const& lim = p_.framework.limits;
    bool const whole = tp > 1 && p_.model.experts > 1 && lim.expert_parallel && lim.sequence_parallel;
    switch (c.f) {
      case form::unset: return {tp};
      case form::single: return {c.values.empty() ? tp : c.values.front()};
      case form::set: return sorted_unique(c.values);
      case form::range: {
        std::vector<std::int64_t> out;
        for (auto v : whole ? std::vector<std::int64_t>{1, tp} : std::vector<std::int64_t>{tp})
          if (v >= c.low && v <= c.high) out.push_back(v);
        return out;
      }
      case form::any: return whole ? std::vector<std::int64_t>{1, tp} : std::vector<std::int64_t>{tp};
    }
    return {tp};
  }
  [[nodiscard]] std::vector<std::int64_t> const& zero() const { return zero_; }
  [[nodiscard]] std::vector<checkpoint_mode> const& checkpoint() const { return checkpoint_; }

  // dp is derived from the others; a written dp only filters.
  [[nodiscard]] bool dp_allowed(std::int64_t dp) const {
    using form = key_choice<std::int64_t>::form;
    auto const& c = spec_.dp;
    switch (c.f) {
      case form::unset:
      case form::any: return true;
      case form::single: return c.values.empty() || c.values.front() == dp;
      case form::set: return std::find(c.values.begin(), c.values.end(), dp) != c.values.end();
      case form::range: return dp >= c.low && dp <= c.high;
    }
    return true;
  }

  // Orders that give the same layout (they differ only in where axes of
  // size 1 sit) are one candidate: the first of them in the list.
  [[nodiscard]] std::vector<rank_order> orders(std::int64_t tp, std::int64_t pp, std::int64_t cp,
                                               std::int64_t dp) const {
    if (orders_.size() == 1) return orders_;
    std::array<std::int64_t, 4> size{};
    size[static_cast<int>(axis::tp)] = tp;
    size[static_cast<int>(axis::pp)] = pp;
    size[static_cast<int>(axis::cp)] = cp;
    size[static_cast<int>(axis::dp)] = dp;
    std::vector<rank_order> out;
    std::vector<std::vector<axis>> seen;
    for (auto const& o : orders_) {
      std::vector<axis> effective;
      for (axis a : o)
        if (size[static_cast<int>(a)] > 1) effective.push_back(a);
      if (std::find(seen.begin(), seen.end(), effective) != seen.end()) continue;
      seen.push_back(effective);
      out.push_back(o);
    }
    return out;
  }

  // Sharding only changes anything with ZeRO: a free shard key takes `all`
  // alone when zero = 0 or the framework has no hybrid sharding. `node` and
  // every divisor of dp strictly between 1 and dp otherwise (1 shards
  // nothing, dp is `all`).
  [[nodiscard]] std::vector<shard_group> shard(int zero, std::int64_t dp) const {
    using form = key_choice<shard_group>::form;
    auto const& c = spec_.shard;
    if (c.f == form::unset) return {shard_group{}};
    if (c.f == form::single) return {c.values.empty() ? shard_group{} : c.values.front()};
    if (zero == 0 || !p_.framework.limits.hybrid_sharding) return {shard_group{}};
    if (c.f == form::set) return c.values;
    std::vector<shard_group> out{shard_group{}};
    if (dp > 1) out.push_back(shard_group{shard_group::kind::node, 0});
    for (auto d : dividing(gpu_divisors_, dp)) {
      if (d <= 1 || d >= dp) continue;
      if (c.f == form::range && (d < c.low || d > c.high)) continue;
      out.push_back(shard_group{shard_group::kind::size, d});
    }
    return out;
  }

  // Sequence parallelism only exists with tensor parallelism, and by default
  // wherever the framework runs it. A single value stays as written (the
  // checker says what the framework does not run); a searched one keeps
  // what the framework runs.
  [[nodiscard]] std::vector<bool> sequence_parallel(std::int64_t tp) const {
    using form = key_choice<bool>::form;
    auto const& c = spec_.sequence_parallel;
    bool const runs = p_.framework.limits.sequence_parallel;
    switch (c.f) {
      case form::unset: return {tp > 1 && runs};
      case form::single: return {c.values.empty() ? tp > 1 && runs : c.values.front()};
      case form::set:
      case form::range:
      case form::any:
        if (tp == 1 || !runs) return {false};
        if (!p_.framework.limits.tp_without_sequence_parallel) return {true};
        if (p_.model.experts > 1 && !p_.framework.limits.experts_without_sequence_parallel) return {true};
        if (c.f == form::set) return sorted_unique(c.values);
        return {false, true};
    }
    return {tp > 1 && runs};
  }

  // Interleaving only exists with pipelining. Under Megatron-Core's split
  // (the training block's num_layers_in_first_pipeline_stage and the
  // rest) the virtual stages it builds; under dtplan's, chunks of layers /
  // pp, or of (layers + 2) / pp (MLPerf's Llama 3.1 405B: 126 + 2 layers
  // over 8 x 8 chunks), which dtplan splits unevenly.
  [[nodiscard]] std::vector<std::int64_t> virtual_stages(std::int64_t pp) const {
    std::vector<std::int64_t> valid{1};
    auto const layers = p_.model.layers;
    strategy probe;
    probe.pp = pp;
    auto const split = [&] { return split_of(p_.model, p_.training, p_.framework.limits, probe); };
    if (pp > 1 && p_.framework.limits.interleaving && !split().dtplan()) {
      for (probe.virtual_stages = 2; probe.virtual_stages <= layers / pp; ++probe.virtual_stages)
        if (split().builds()) valid.push_back(probe.virtual_stages);
    } else if (pp > 1 && p_.framework.limits.interleaving) {
      if (layers % pp == 0) valid = dividing(layer_divisors_, layers / pp);
      if ((layers + 2) % pp == 0)
        for (auto v : dividing(padded_layer_divisors_, (layers + 2) / pp))
          if (v <= layers / pp) valid.push_back(v);
      valid = sorted_unique(valid);
    }
    auto automatic = capped(valid, options_.max_virtual_stages);
    return int_domain(spec_.virtual_stages, 1, valid, automatic);
  }

  // Ascending, which the memory cut-off in the search relies on.
  [[nodiscard]] std::vector<std::int64_t> micro_batch(std::int64_t dp) const {
    auto per_rank = p_.training.global_batch % dp == 0 ? p_.training.global_batch / dp : 0;
    auto valid = dividing(batch_divisors_, per_rank);
    return int_domain(spec_.micro_batch, 1, valid, capped(valid, options_.max_micro_batch));
  }

  [[nodiscard]] std::int64_t count(work_item const& w) const {
    auto inner = static_cast<std::int64_t>(checkpoint_.size() * sequence_parallel(w.tp).size() *
                                           virtual_stages(w.pp).size() * micro_batch(w.dp).size());
    std::int64_t n = 0;
    for (auto z : zero_) n += static_cast<std::int64_t>(shard(static_cast<int>(z), w.dp).size()) * inner;
    return n * static_cast<std::int64_t>(w.orders.size());
  }

 private:
  // The framework's limits (framework_limits): degrees, stages and modes it
  // does not run leave the space, and left_out() says which.
  void keep_what_the_framework_runs() {
    auto const& fw = p_.framework;
    auto const& lim = fw.limits;
    auto drop = [&](char const* key, auto& values, auto const& keep, std::string what) {
      auto const before = values.size();
      std::erase_if(values, [&](auto const& v) { return !keep(v); });
      if (values.size() != before)
        left_out_.push_back(fmt::format("framework '{}' does not run {}: left out of the space", fw.name, what));
      if (before > 0 && values.empty() && emptied_.empty()) emptied_ = key;
    };
    if (!lim.tensor_parallel) drop("tp", tp_, [](std::int64_t v) { return v == 1; }, "tensor parallelism");
    if (!lim.pipeline_parallel) drop("pp", pp_, [](std::int64_t v) { return v == 1; }, "pipeline parallelism");
    if (!lim.context_parallel) drop("cp", cp_, [](std::int64_t v) { return v == 1; }, "context parallelism");
    if (!lim.expert_parallel) drop("ep", ep_, [](std::int64_t v) { return v == 1; }, "expert parallelism");
    if (!lim.sequence_parallel && std::ranges::any_of(tp_, [](std::int64_t v) { return v > 1; }))
      left_out_.push_back(fmt::format("framework '{}' does not run sequence parallelism: left out of the space", fw.name));
    using sp_form = key_choice<bool>::form;
    if (!lim.tp_without_sequence_parallel && spec_.sequence_parallel.f != sp_form::unset &&
        spec_.sequence_parallel.f != sp_form::single && std::ranges::any_of(tp_, [](std::int64_t v) { return v > 1; }))
      left_out_.push_back(fmt::format(
          "framework '{}' does not run tensor parallelism without sequence parallelism: left out of the space", fw.name));
    else if (p_.model.experts > 1 && !lim.experts_without_sequence_parallel && spec_.sequence_parallel.f != sp_form::unset &&
             spec_.sequence_parallel.f != sp_form::single && std::ranges::any_of(tp_, [](std::int64_t v) { return v > 1; }))
      left_out_.push_back(fmt::format("framework '{}' does not run a mixture of experts with tensor parallelism "
                                      "without sequence parallelism: left out of the space",
                                      fw.name));
    drop("zero", zero_,
         [&](std::int64_t z) {
           return std::find(lim.zero_stages.begin(), lim.zero_stages.end(), static_cast<int>(z)) != lim.zero_stages.end();
         },
         "every ZeRO stage (only " + fmt::format("{}", fmt::join(lim.zero_stages, ", ")) + ")");
    if (p_.model.prec == precision::bf16)
      drop("zero", zero_, [&](std::int64_t z) { return z >= lim.bf16_min_zero; },
           fmt::format("ZeRO below stage {} in bf16", lim.bf16_min_zero));
    drop("checkpoint", checkpoint_,
         [&](checkpoint_mode c) {
           return std::find(lim.checkpoint_modes.begin(), lim.checkpoint_modes.end(), c) != lim.checkpoint_modes.end();
         },
         "every checkpoint mode (only " + [&] {
           std::string names;
           for (auto c : lim.checkpoint_modes) names += (names.empty() ? "" : ", ") + std::string(name(c));
           return names;
         }() + ")");
  }

  std::vector<std::string> left_out_;
  std::string emptied_;  // the first key whose every value the framework does not run
  program const& p_;
  strategy_spec const& spec_;
  search_options const& options_;
  std::vector<std::int64_t> tp_, pp_, cp_, ep_, zero_;
  std::vector<checkpoint_mode> checkpoint_;
  std::vector<rank_order> orders_;
  // dp divides the GPUs, a rank's batch the global batch, a stage's layers
  // the model's: their divisors are filtered from these, found once
  // (trial division per structure costs seconds on huge clusters).
  std::vector<std::int64_t> gpu_divisors_, batch_divisors_, layer_divisors_, padded_layer_divisors_;
};

/// "tp = 2, pp = 4, cp = 1, dp = 8"
std::string structure_text(work_item const& w);

}  // namespace dtplan::planner::detail
