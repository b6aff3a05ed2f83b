#include <catch2/catch.hpp>

#include "planner/model/layout.hpp"

using namespace dtplan::planner;

namespace {
strategy make(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t cp, rank_order order = default_order) {
  strategy s;
  s.dp = dp, s.tp = tp, s.pp = pp, s.cp = cp, s.order = order;
  return s;
}
}  // namespace

TEST_CASE("the default order keeps tp innermost and inside a node") {
  rank_layout l(make(4, 2, 2, 1), 8);
  CHECK(l.world() == 16);
  CHECK(l.group_of(axis::tp, 5) == std::vector<std::int64_t>{4, 5});
  CHECK(l.group_of(axis::dp, 5) == std::vector<std::int64_t>{1, 3, 5, 7});
  CHECK(l.group_of(axis::pp, 5) == std::vector<std::int64_t>{5, 13});
  auto c = l.of(13);
  CHECK(c[static_cast<int>(axis::tp)] == 1);
  CHECK(c[static_cast<int>(axis::dp)] == 2);
  CHECK(c[static_cast<int>(axis::pp)] == 1);
  CHECK(l.rank_of(c) == 13);
  CHECK_FALSE(l.placement(axis::tp).crosses_nodes());
  CHECK_FALSE(l.placement(axis::dp).crosses_nodes());
  auto pp = l.placement(axis::pp);
  CHECK(pp.nodes == 2);
  CHECK(pp.max_per_node == 1);
}

TEST_CASE("an order with dp innermost puts tp across nodes") {
  rank_layout l(make(8, 2, 1, 1, {axis::dp, axis::tp, axis::cp, axis::pp}), 8);
  CHECK(l.group_of(axis::tp, 0) == std::vector<std::int64_t>{0, 8});
  CHECK(l.placement(axis::tp).nodes == 2);
  CHECK(l.placement(axis::dp).nodes == 1);
}

TEST_CASE("hybrid sharding splits dp into node-local shards and cross-node replicas") {
  strategy s = make(16, 1, 1, 1);
  s.shard.k = shard_group::kind::node;
  rank_layout l(s, 8);
  CHECK(l.node_sync_members() == 8);
  CHECK(l.shard_ranks(shard_layout{shard_layout::kind::node, 0}) == 8);
  CHECK(l.shard_group_of(9, 8) == std::vector<std::int64_t>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(l.replicate_group_of(9, 8) == std::vector<std::int64_t>{1, 9});
  CHECK(l.shard_placement(8).nodes == 1);
  CHECK(l.replicate_placement(8).nodes == 2);
  CHECK(l.shard_ranks(shard_layout{}) == 16);
  CHECK(l.shard_ranks(shard_layout{shard_layout::kind::dp_block, 4}) == 4);
}

TEST_CASE("a group spread over nodes reports its worst placement") {
  rank_layout l(make(3, 1, 1, 1), 2);  // 3 ranks, 2 per node
  auto p = l.placement(axis::dp);
  CHECK(p.nodes == 2);
  CHECK(p.max_per_node == 2);
}

TEST_CASE("the placement of two axes together matches a walk of the group") {
  for (rank_order order : {default_order, rank_order{axis::tp, axis::dp, axis::cp, axis::pp},
                           rank_order{axis::dp, axis::tp, axis::pp, axis::cp},
                           rank_order{axis::tp, axis::dp, axis::pp, axis::cp},
                           rank_order{axis::cp, axis::pp, axis::tp, axis::dp}}) {
    for (std::int64_t gpn : {1, 2, 4, 8, 16}) {
      rank_layout l(make(4, 2, 2, 2, order), gpn);
      std::vector<std::int64_t> group;
      for (auto r : l.group_of(axis::dp, 0))
        for (auto q : l.group_of(axis::cp, r)) group.push_back(q);
      auto walked = l.placement_of(group);
      auto closed = l.placement(axis::dp, axis::cp);
      INFO(to_string(order) << " on " << gpn << " GPUs per node");
      CHECK(closed.size == 8);
      CHECK(closed.nodes == walked.nodes);
      CHECK(closed.max_per_node == walked.max_per_node);
    }
  }
  rank_layout l(make(4, 2, 1, 1), 8);
  CHECK(l.placement(axis::dp, axis::cp).size == 4);
  CHECK(l.placement(axis::dp, axis::cp).nodes == 1);
}

namespace {

// The worst placement over every group, walked rank by rank.
template <class F>
group_placement walked_worst(rank_layout const& l, F const& group_for) {
  group_placement worst;
  worst.nodes = 0;
  worst.max_per_node = 0;
  for (std::int64_t r = 0; r < l.world(); ++r) {
    auto p = l.placement_of(group_for(r));
    if (p.nodes > worst.nodes || (p.nodes == worst.nodes && p.max_per_node > worst.max_per_node)) worst = p;
  }
  return worst;
}

}  // namespace

TEST_CASE("placements in closed form equal the worst group walked, for sizes that do not tile the nodes") {
  std::vector<rank_order> const orders{default_order, rank_order{axis::dp, axis::tp, axis::cp, axis::pp},
                                       rank_order{axis::pp, axis::cp, axis::dp, axis::tp},
                                       rank_order{axis::tp, axis::pp, axis::dp, axis::cp}};
  int checked = 0;
  for (std::int64_t dp : {1, 2, 3, 4, 6})
    for (std::int64_t tp : {1, 2, 3, 5})
      for (std::int64_t pp : {1, 2, 7})
        for (std::int64_t cp : {1, 3})
          for (std::int64_t gpn : {1, 3, 4, 6, 8})
            for (auto const& order : orders) {
              rank_layout l(make(dp, tp, pp, cp, order), gpn);
              INFO("dp " << dp << " tp " << tp << " pp " << pp << " cp " << cp << " order " << to_string(order)
                         << " on " << gpn << " per node");
              for (axis a : {axis::tp, axis::cp, axis::dp, axis::pp}) {
                auto const closed = l.placement(a);
                auto const walked = walked_worst(l, [&](std::int64_t r) { return l.group_of(a, r); });
                CHECK(closed.size == walked.size);
                CHECK(closed.nodes == walked.nodes);
                CHECK(closed.max_per_node == walked.max_per_node);
              }
              for (std::int64_t shard = 1; shard <= dp; ++shard) {
                if (dp % shard != 0) continue;
                auto const s = l.shard_placement(shard);
                auto const sw = walked_worst(l, [&](std::int64_t r) { return l.shard_group_of(r, shard); });
                CHECK(s.nodes == sw.nodes);
                CHECK(s.max_per_node == sw.max_per_node);
                auto const rp = l.replicate_placement(shard);
                auto const rw = walked_worst(l, [&](std::int64_t r) { return l.replicate_group_of(r, shard); });
                CHECK(rp.nodes == rw.nodes);
                CHECK(rp.max_per_node == rw.max_per_node);
              }
              ++checked;
            }
  CHECK(checked == 5 * 4 * 3 * 2 * 5 * 4);
}

// Groups spanning more nodes than their pattern's period (stride / gcd of
// stride and node size): the closed form counts one period of inner nodes.
TEST_CASE("placements of long strided groups equal the walk") {
  int checked = 0;
  for (std::int64_t tp : {3, 5, 7})
    for (std::int64_t dp : {29, 37, 40})
      for (std::int64_t gpn : {4, 6, 8, 9, 16})
        for (auto const& order : {default_order, rank_order{axis::dp, axis::tp, axis::cp, axis::pp}}) {
          rank_layout l(make(dp, tp, 2, 1, order), gpn);
          INFO("dp " << dp << " tp " << tp << " order " << to_string(order) << " on " << gpn << " per node");
          for (axis a : {axis::tp, axis::dp, axis::pp}) {
            auto const closed = l.placement(a);
            auto const walked = walked_worst(l, [&](std::int64_t r) { return l.group_of(a, r); });
            CHECK(closed.nodes == walked.nodes);
            CHECK(closed.max_per_node == walked.max_per_node);
          }
          ++checked;
        }
  CHECK(checked == 3 * 3 * 5 * 2);
}
