#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "planner/model/check.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/layout.hpp"
#include "planner/search/search.hpp"
#include "tests/unit/memory_fixtures.hpp"

/// A stand-in cost model and a brute-force search for the search tests and
/// benchmarks: every key of the strategy moves the fake step time, so a
/// search that skips part of the space shows up as a different optimum.
namespace dtplan::test {

/// A pure, cheap, made-up step time: compute slowed by small micro-batches
/// and wide tensor splits, recomputation, a 1F1B bubble, and collectives
/// whose speed depends on whether their group crosses nodes (so the rank
/// order matters). `step_lower_bound` is compute + bubble, a true bound.
class fake_cost_model final : public planner::cost_model {
 public:
  using planner::cost_model::step_time;
  [[nodiscard]] planner::time_breakdown step_time(planner::strategy_shape const& sh) const override {
    auto const& p = *sh.prog;
    auto const& s = sh.s;
    auto t = bounded(p, s);
    planner::rank_layout layout(s, p.cluster.gpus_per_node);
    auto crosses = [&](planner::axis a) {
      return layout.placement_of(layout.group_of(a, 0)).nodes > 1;
    };
    auto link = [&](planner::axis a) {
      return crosses(a) ? p.cluster.inter_node.value() / double(p.cluster.gpus_per_node) : p.cluster.intra_node.value();
    };
    double const params = double(p.model.layers) * 12.0 * double(p.model.hidden) * double(p.model.hidden);
    double const tokens = double(p.training.global_batch) * double(p.model.seq_len);
    double comm = 0;
    if (s.dp > 1) {
      double grads = 2 * params / double(s.tp * s.pp);
      double factor = s.zero == 3 ? 1.5 : 1.0;
      if (s.zero >= 1 && s.shard.k != planner::shard_group::kind::all) factor *= 0.9;
      comm += factor * grads * 2 * double(s.dp - 1) / double(s.dp) / link(planner::axis::dp) * 0.3;
    }
    if (s.tp > 1) {
      double per = 4.0 * tokens / double(s.dp * s.cp) * double(p.model.hidden) * double(p.model.layers) / double(s.pp);
      comm += per * (s.sequence_parallel ? 1.0 : 1.15) * double(s.tp - 1) / double(s.tp) / link(planner::axis::tp);
    }
    if (s.cp > 1) comm += 2.0 * tokens / double(s.dp) * double(p.model.hidden) / link(planner::axis::cp) / double(s.pp);
    if (s.pp > 1) comm += 2.0 * tokens / double(s.dp * s.cp) * double(p.model.hidden) / link(planner::axis::pp) /
                          double(s.tp) * double(s.virtual_stages);
    t.exposed_comm = planner::seconds(comm);
    t.optimizer = planner::seconds(16 * params / double(s.tp * s.pp) / (s.zero >= 1 ? double(s.dp) : 1.0) /
                                   p.cluster.device.hbm_bandwidth.value());
    t.step = t.compute + t.recompute + t.bubble + t.exposed_comm + t.optimizer;
    return t;
  }

  [[nodiscard]] planner::seconds lower_bound(planner::program const& p) const override {
    return planner::seconds(flops(p) / (double(p.cluster.gpus()) * p.cluster.device.peak_flops.value()));
  }

  [[nodiscard]] planner::seconds step_lower_bound(planner::strategy_shape const& sh) const override {
    auto t = bounded(*sh.prog, sh.s);
    return t.compute + t.recompute + t.bubble;
  }

 private:
  static double flops(planner::program const& p) {
    return 6.0 * double(p.model.layers) * 12.0 * double(p.model.hidden) * double(p.model.hidden) *
           double(p.training.global_batch) * double(p.model.seq_len);
  }

  static planner::time_breakdown bounded(planner::program const& p, planner::strategy const& s) {
    planner::time_breakdown t;
    double const ideal = flops(p) / (double(p.cluster.gpus()) * p.cluster.device.peak_flops.value());
    double const slow = 1.0 + 0.4 / double(s.micro_batch) + 0.03 * double(s.tp) + 0.02 * double(s.cp);
    t.compute = planner::seconds(ideal * slow);
    double const again = s.checkpoint == planner::checkpoint_mode::full        ? 1.0 / 3
                         : s.checkpoint == planner::checkpoint_mode::selective ? 0.04
                         : s.checkpoint == planner::checkpoint_mode::ops       ? 0.15
                                                                               : 0.0;
    t.recompute = t.compute * again;
    double const m = double(p.training.global_batch / (s.dp * s.micro_batch));
    t.bubble = (t.compute + t.recompute) * (double(s.pp - 1) / (m * double(s.virtual_stages)));
    t.model_flops = planner::flops(flops(p));
    t.hardware_flops = planner::flops(flops(p) * (1 + again));
    return t;
  }
};

/// A cost model that prices every strategy the same, for the tie-break.
class flat_cost_model final : public planner::cost_model {
 public:
  using planner::cost_model::step_time;
  [[nodiscard]] planner::time_breakdown step_time(planner::strategy_shape const&) const override {
    planner::time_breakdown t;
    t.step = planner::seconds(1.0);
    t.compute = t.step;
    return t;
  }
  [[nodiscard]] planner::seconds lower_bound(planner::program const&) const override {
    return planner::seconds(1.0);
  }
};

inline std::vector<std::int64_t> divisors_of(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

/// Every strategy of search_everything()'s space (search.hpp documents its
/// domains), checked with check() and costed with step_time one by one, no
/// pruning; orders that give the same layout count once (the first).
/// Returns every valid entry sorted in the search's total order.
inline std::vector<planner::search_entry> brute_force(planner::program const& p, planner::cost_model const& model,
                                                      planner::search_options const& o = {}) {
  using namespace planner;
  auto spec = search_everything();
  std::vector<search_entry> out;
  auto const gpus = p.cluster.gpus();
  for (auto tp : divisors_of(gpus))
    for (auto pp : divisors_of(gpus / tp))
      for (auto cp : divisors_of(gpus / tp / pp)) {
        auto dp = gpus / (tp * pp * cp);
        std::vector<std::vector<axis>> seen_orders;
        for (auto const& order : search_orders()) {
          std::vector<axis> effective;
          for (axis a : order) {
            auto size = a == axis::tp ? tp : a == axis::pp ? pp : a == axis::cp ? cp : dp;
            if (size > 1) effective.push_back(a);
          }
          if (std::find(seen_orders.begin(), seen_orders.end(), effective) != seen_orders.end()) continue;
          seen_orders.push_back(effective);
          for (int zero = 0; zero <= 3; ++zero) {
            std::vector<shard_group> shards{shard_group{}};
            if (zero > 0 && dp > 1) {
              shards.push_back({shard_group::kind::node, 0});
              for (auto d : divisors_of(dp))
                if (d > 1 && d < dp) shards.push_back({shard_group::kind::size, d});
            }
            for (auto shard : shards) {
              // A `node` or size key whose groups are another key's is that
              // plan (`all` before `node` before sizes).
              strategy keyed;
              keyed.dp = dp, keyed.tp = tp, keyed.pp = pp, keyed.cp = cp, keyed.order = order;
              keyed.zero = zero, keyed.shard = shard;
              bool const keyed_forms = shard.k != shard_group::kind::node ||
                                       rank_layout(keyed, p.cluster.gpus_per_node).node_sync_members() != 0;
              if (zero > 0 && shard.k != shard_group::kind::all && keyed_forms) {
                auto const g = groups_of(p, keyed);
                if (g.shard.size == g.sync.size) continue;
                strategy by_node = keyed;
                by_node.shard = {shard_group::kind::node, 0};
                if (shard.k == shard_group::kind::size &&
                    rank_layout(by_node, p.cluster.gpus_per_node).node_sync_members() != 0) {
                  auto const n = groups_of(p, by_node);
                  if (n.shard.size == g.shard.size && n.shard.placement.nodes == g.shard.placement.nodes &&
                      n.shard.placement.max_per_node == g.shard.placement.max_per_node)
                    continue;
                }
              }
              for (auto ckpt : {checkpoint_mode::none, checkpoint_mode::selective, checkpoint_mode::ops, checkpoint_mode::full})
                for (bool sp : {false, true}) {
                  if (sp && tp == 1) continue;
                  // Chunks of layers / pp, or of (layers + 2) / pp (the
                  // embedding and the loss as a layer each), each chunk
                  // at least one layer.
                  std::set<std::int64_t> vss{1};
                  if (pp > 1 && p.model.layers % pp == 0)
                    for (auto v : divisors_of(p.model.layers / pp))
                      if (v <= o.max_virtual_stages) vss.insert(v);
                  if (pp > 1 && (p.model.layers + 2) % pp == 0)
                    for (auto v : divisors_of((p.model.layers + 2) / pp))
                      if (v <= o.max_virtual_stages && v <= p.model.layers / pp) vss.insert(v);
                  for (auto vs : vss) {
                    if (p.training.global_batch % dp != 0) continue;
                    for (auto mb : divisors_of(p.training.global_batch / dp)) {
                      if (mb > o.max_micro_batch) continue;
                      strategy s;
                      s.dp = dp;
                      s.tp = tp;
                      s.pp = pp;
                      s.cp = cp;
                      s.zero = zero;
                      s.shard = shard;
                      s.checkpoint = ckpt;
                      s.sequence_parallel = sp;
                      s.virtual_stages = vs;
                      s.micro_batch = mb;
                      s.order = order;
                      auto r = check(p, spec, s);
                      if (!r.valid()) continue;
                      search_entry e;
                      e.s = s;
                      e.step = model.step_time(p, s).step;
                      e.memory = r.memory.total;
                      e.tp_nodes = shape_of(p, r.s).tp.placement.nodes;
                      out.push_back(e);
                    }
                  }
                }
            }
          }
        }
      }
  std::sort(out.begin(), out.end(), better);
  return out;
}

/// A small random problem: a decoder of a few layers on up to 16 GPUs in up
/// to 4 nodes, with a GPU small enough that memory rules part of the space out.
inline planner::program random_problem(std::mt19937_64& rng) {
  using namespace planner::literals;
  auto pick = [&](std::vector<std::int64_t> const& v) { return v[rng() % v.size()]; };
  auto heads = pick({4, 8, 16});
  auto hidden = heads * pick({32, 64, 128});
  auto kv = pick(divisors_of(heads));
  auto m = decoder("random", pick({2, 3, 4, 6, 8, 12}), hidden, heads, kv, hidden * pick({2, 4}),
                   rng() % 2 ? planner::mlp_kind::swiglu : planner::mlp_kind::gelu, pick({1000, 8192, 32000}),
                   pick({256, 1024, 2048}));
  auto g = h100_sxm();
  g.memory = planner::bytes(double(pick({1, 2, 3, 4, 8})) * 1073741824.0 / 4);
  g.reserved = planner::bytes(0);
  // At most 16 GPUs keeps the brute force quick.
  auto nodes = pick({1, 2, 4});
  auto c = nodes_of("random", nodes, g, nodes == 4 ? pick({1, 2, 4}) : pick({1, 2, 4, 8}));
  return program_of(std::move(m), std::move(c), pick({4, 8, 16, 24, 64}));
}

}  // namespace dtplan::test
