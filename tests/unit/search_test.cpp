#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include <limits>
#include <vector>

#include "planner/search/search.hpp"
#include "tests/unit/search_fixtures.hpp"

using namespace dtplan;
using namespace dtplan::planner;
using namespace dtplan::planner::literals;

namespace {

search_options with_threads(unsigned threads, int top = 5) {
  search_options o;
  o.threads = threads;
  o.top = top;
  o.explain = true;
  return o;
}

// The small 2-node problem every fixed-figure test below uses.
program two_nodes() {
  auto g = test::h100_sxm();
  g.memory = 2_GiB;
  g.reserved = 0_GiB;
  return test::program_of(test::decoder("small", 4, 512, 8, 8, 2048, mlp_kind::gelu, 8192, 1024),
                          test::nodes_of("pair", 2, g, 4), 32);
}

void same_entries(std::vector<search_entry> const& a, std::vector<search_entry> const& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].s == b[i].s);
    CHECK(a[i].step == b[i].step);
    CHECK(a[i].memory == b[i].memory);
  }
}

}  // namespace

// Fewer problems under the sanitizers, where each costs ten times more.
#ifdef DTPLAN_SANITIZED
constexpr int problems = 20, with_valid_floor = 12;
#else
constexpr int problems = 50, with_valid_floor = 35;
#endif

// Searches seeded random problems with `model` and compares the top five
// with a brute force that checks and costs every strategy one by one.
void compare_with_brute_force(cost_model const& model, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int with_valid = 0;
  for (int i = 0; i < problems; ++i) {
    auto p = test::random_problem(rng);
    INFO("problem " << i << ": " << p.cluster.nodes << " x " << p.cluster.gpus_per_node << " GPUs, " << p.model.layers
                    << " layers, hidden " << p.model.hidden << ", global batch " << p.training.global_batch);
    auto expected = test::brute_force(p, model);
    auto got = search(p, search_everything(), model, with_threads(2));
    CHECK(got.stats.valid == static_cast<std::int64_t>(expected.size()));
    if (expected.empty()) {
      CHECK(got.best.empty());
      continue;
    }
    ++with_valid;
    REQUIRE_FALSE(got.ranked.empty());
    CHECK(got.ranked.front().step == expected.front().step);
    // The whole top five, ties included, in the same total order.
    expected.resize(std::min<std::size_t>(expected.size(), 5));
    same_entries(got.ranked, expected);
    // evaluate() costs the plan as the search ranked it.
    for (std::size_t k = 0; k < got.best.size(); ++k) {
      REQUIRE(got.best[k].time);
      CHECK(got.best[k].time->step == got.ranked[k].step);
    }
  }
  // The generator must exercise the search, not only empty spaces.
  CHECK(with_valid >= with_valid_floor);
}

TEST_CASE("search finds the brute-force optimum on random small problems (fake model)") {
  compare_with_brute_force(test::fake_cost_model{}, 20261129);
}

TEST_CASE("search finds the brute-force optimum on random small problems (analytic model)") {
  compare_with_brute_force(analytic_cost_model{}, 4242);
}

TEST_CASE("search finds the brute-force optimum on random mixtures with dense layers (analytic model)") {
  // The memory probe's monotonicity (interleaving holds the least with the
  // fewest chunks) and the time bound, where each stage holds its own mix
  // of dense layers and mixtures (experts on every rank: ep 1).
  std::mt19937_64 rng(20261207);
  analytic_cost_model const model;
  int with_valid = 0, mixed = 0;
  for (int i = 0; i < problems / 2; ++i) {
    auto p = test::random_problem(rng);
    p.model.experts = 4;
    p.model.experts_per_token = 2;
    p.model.dense_layers = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.model.layers));
    p.model.moe_layer_freq = 1 + static_cast<std::int64_t>(rng() % 2);
    mixed += p.model.mixed_layers() ? 1 : 0;
    INFO("problem " << i << ": " << p.model.layers << " layers, " << p.model.dense_layers << " dense first, every "
                    << p.model.moe_layer_freq << " a mixture");
    auto expected = test::brute_force(p, model);
    // The brute force's space: the experts on every rank, each split over tp.
    auto spec = search_everything();
    spec.ep = key_choice<std::int64_t>::one(1);
    spec.etp.f = choice_form::form::unset;
    auto got = search(p, spec, model, with_threads(2));
    CHECK(got.stats.valid == static_cast<std::int64_t>(expected.size()));
    for (auto const& e : expected) {
      auto bound = model.step_lower_bound(shape_of(p, e.s));
      if (bound > e.step) FAIL_CHECK("bound " << bound.value() << " > step " << e.step.value());
    }
    if (expected.empty()) continue;
    ++with_valid;
    REQUIRE_FALSE(got.ranked.empty());
    CHECK(got.ranked.front().step == expected.front().step);
  }
  CHECK(mixed >= problems / 4);
  CHECK(with_valid >= with_valid_floor / 3);
}

TEST_CASE("the analytic model's per-strategy bound never exceeds its step time") {
  std::mt19937_64 rng(99);
  analytic_cost_model model;
  std::int64_t checked = 0;
  for (int i = 0; i < problems * 3 / 5; ++i) {
    auto p = test::random_problem(rng);
    for (auto const& e : test::brute_force(p, model)) {
      auto bound = model.step_lower_bound(shape_of(p, e.s));
      if (bound > e.step) FAIL_CHECK("bound " << bound.value() << " > step " << e.step.value() << " at problem " << i);
      CHECK(bound >= model.lower_bound(p) * 0.999);
      ++checked;
    }
  }
  CHECK(checked > problems * 200);
}

TEST_CASE("search results are identical for 1, 2 and 4 threads") {
  std::mt19937_64 rng(7);
  test::fake_cost_model model;
  for (int i = 0; i < 10; ++i) {
    auto p = test::random_problem(rng);
    auto one = search(p, search_everything(), model, with_threads(1, 8));
    for (unsigned t : {2u, 4u}) {
      auto many = search(p, search_everything(), model, with_threads(t, 8));
      same_entries(one.ranked, many.ranked);
      CHECK(one.stats.candidates == many.stats.candidates);
      CHECK(one.stats.valid == many.stats.valid);
      CHECK(one.explanations == many.explanations);
      REQUIRE(one.best.size() == many.best.size());
      for (std::size_t k = 0; k < one.best.size(); ++k) {
        CHECK(one.best[k].name == many.best[k].name);
        CHECK(one.best[k].s == many.best[k].s);
      }
    }
  }
}

TEST_CASE("memory for waiting candidates is bounded and does not change the result") {
  // A buffer of 8 forces every thread to cost what it holds thousands of
  // times: the plans, counts and explanations stay the same.
  std::mt19937_64 rng(11);
  analytic_cost_model model;
  for (int i = 0; i < 6; ++i) {
    auto p = test::random_problem(rng);
    auto o = with_threads(2, 5);
    o.explain = true;
    auto unbounded = search(p, search_everything(), model, o);
    o.max_waiting = 8;
    auto bounded = search(p, search_everything(), model, o);
    same_entries(unbounded.ranked, bounded.ranked);
    CHECK(unbounded.stats.valid == bounded.stats.valid);
    CHECK(unbounded.explanations == bounded.explanations);
  }
}

TEST_CASE("top plans come best first, named after the spec") {
  auto p = two_nodes();
  test::fake_cost_model model;
  auto spec = search_everything("tune");
  auto r = search(p, spec, model, with_threads(2, 4));
  REQUIRE(r.best.size() == 4);
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    CHECK(r.best[i].name == "tune#" + std::to_string(i + 1));
    CHECK(r.best[i].s == r.ranked[i].s);
    REQUIRE(r.best[i].time);
    CHECK(r.best[i].time->step == r.ranked[i].step);
  }
  for (std::size_t i = 1; i < r.ranked.size(); ++i) CHECK(better(r.ranked[i - 1], r.ranked[i]));
  CHECK(search(p, search_everything(""), model, with_threads(1, 1)).best.at(0).name == "search#1");
}

TEST_CASE("ties are broken by tp nodes, memory, then the strategy's keys") {
  search_entry a, b;
  a.step = b.step = seconds(1.0);
  a.tp_nodes = 1;
  b.tp_nodes = 2;
  a.memory = 9_GiB;
  b.memory = 1_GiB;
  CHECK(better(a, b));
  CHECK_FALSE(better(b, a));
  b.tp_nodes = 1;
  CHECK(better(b, a));
  b.memory = a.memory;
  a.s.dp = 2;
  b.s.dp = 4;
  CHECK(better(a, b));
  b.s.dp = 2;
  a.s.shard = shard_group{shard_group::kind::node, 0};
  b.s.shard = shard_group{shard_group::kind::size, 2};
  CHECK(better(a, b));
  b.s.shard = shard_group{};
  CHECK(better(b, a));
  b.s = a.s;
  CHECK_FALSE(better(a, b));
  CHECK_FALSE(better(b, a));

  // Every strategy costs the same: the least memory wins, then the keys.
  auto p = two_nodes();
  test::flat_cost_model flat;
  auto r = search(p, search_everything(), flat, with_threads(3, 3));
  auto expected = test::brute_force(p, flat);
  expected.resize(3);
  same_entries(r.ranked, expected);
  REQUIRE(r.ranked.size() == 3);
  CHECK(r.ranked[0].memory <= r.ranked[1].memory);
  CHECK(r.ranked[1].memory <= r.ranked[2].memory);
}

TEST_CASE("a spec's fixed and unset keys stay as written") {
  auto p = two_nodes();
  test::fake_cost_model model;
  strategy_spec spec;
  spec.name = "some";
  spec.tp.f = key_choice<std::int64_t>::form::set;
  spec.tp.values = {1, 2, 3};
  spec.zero.f = key_choice<std::int64_t>::form::single;
  spec.zero.values = {1};
  spec.micro_batch.f = key_choice<std::int64_t>::form::range;
  spec.micro_batch.low = 1;
  spec.micro_batch.high = 2;
  auto r = search(p, spec, model, with_threads(2, 50));
  REQUIRE_FALSE(r.ranked.empty());
  for (auto const& e : r.ranked) {
    CHECK((e.s.tp == 1 || e.s.tp == 2));
    CHECK(e.s.zero == 1);
    CHECK(e.s.pp == 1);
    CHECK(e.s.cp == 1);
    CHECK(e.s.micro_batch <= 2);
    CHECK(e.s.checkpoint == checkpoint_mode::none);
    CHECK(e.s.shard == shard_group{});
    CHECK(e.s.order == default_order);
    CHECK(e.s.sequence_parallel == (e.s.tp > 1));
  }
  // tp 1, 2 (and 3, which never divides 8 GPUs) x micro-batch 1, 2.
  CHECK(r.stats.candidates == 4);
  CHECK(r.explanations.front().text == "tp = 3: does not divide 8 GPUs");
}

TEST_CASE("checkpoint = auto explores op-level checkpointing") {
  auto p = two_nodes();
  test::flat_cost_model model;
  strategy_spec spec;
  spec.name = "ckpt";
  spec.checkpoint.f = key_choice<checkpoint_mode>::form::any;
  auto r = search(p, spec, model, with_threads(2, 50));
  CHECK(r.stats.candidates == 4);
  std::vector<checkpoint_mode> seen;
  for (auto const& e : r.ranked) seen.push_back(e.s.checkpoint);
  // Equal steps: less memory first, so the modes come most recomputing first.
  CHECK(seen == std::vector{checkpoint_mode::full, checkpoint_mode::ops, checkpoint_mode::selective,
                            checkpoint_mode::none});
  // A set is searched in recomputation order whatever order it is written in.
  spec.checkpoint.f = key_choice<checkpoint_mode>::form::set;
  spec.checkpoint.values = {checkpoint_mode::ops, checkpoint_mode::none};
  auto two = search(p, spec, model, with_threads(1, 50));
  CHECK(two.stats.candidates == 2);
  REQUIRE(two.ranked.size() == 2);
  CHECK(two.ranked[0].s.checkpoint == checkpoint_mode::ops);
}

TEST_CASE("a mixture's search tries each expert whole (etp 1) beside split over tp; a dense model's does not") {
  auto p = two_nodes();
  p.model.experts = 4;
  p.model.experts_per_token = 2;
  auto g = p.cluster.device;
  g.memory = 64_GiB;
  p.cluster.device = g;
  analytic_cost_model const model;
  auto const all = search(p, search_everything(), model, with_threads(2, 1000));
  std::int64_t whole = 0, split = 0;
  for (auto const& e : all.ranked) {
    INFO(describe(e.s));
    // Every ranked entry costs what step_time says of it.
    CHECK(e.step == model.step_time(p, e.s).step);
    if (e.s.tp > 1) (e.s.expert_tp() == 1 ? whole : split) += 1;
    // Unset where it follows tp, as a written strategy has it.
    CHECK(e.s.etp != e.s.tp);
  }
  CHECK(whole > 0);
  CHECK(split > 0);
  // Unset, etp follows tp: the etp 1 candidates leave the space.
  auto fixed = search_everything();
  fixed.etp.f = choice_form::form::unset;
  auto const as_tp = search(p, fixed, model, with_threads(2, 1000));
  CHECK(as_tp.stats.valid < all.stats.valid);
  CHECK(as_tp.stats.candidates < all.stats.candidates);
  for (auto const& e : as_tp.ranked) CHECK(e.s.expert_tp() == e.s.tp);
  p.model.experts = 1;
  auto const dense = search(p, search_everything(), model, with_threads(2, 1000));
  for (auto const& e : dense.ranked) CHECK(e.s.expert_tp() == e.s.tp);
}

TEST_CASE("explain reports the time bound's pruning deterministically") {
  auto p = two_nodes();
  test::fake_cost_model model;
  auto r = search(p, search_everything(), model, with_threads(1, 1));
  REQUIRE_FALSE(r.explanations.empty());
  CHECK(r.explanations.back().text == "135 candidates pruned by the time bound (>= 1.14 ms, best 1.08 ms)");
  CHECK(search(p, search_everything(), model, with_threads(4, 1)).explanations == r.explanations);
  // A model without a per-strategy bound never prunes by time.
  test::flat_cost_model flat;
  for (auto const& line : search(p, search_everything(), flat, with_threads(2, 1)).explanations)
    CHECK(line.text.find("time bound") == std::string::npos);
}

TEST_CASE("explain lists the reasons that rule out the most candidates first, the rest on one line") {
  // 720 GPUs (many divisors) for a model of 6 heads and 4 layers: tp, pp
  // and cp are ruled out for many different reasons.
  auto g = test::h100_sxm();
  auto p = test::program_of(test::decoder("few_heads", 4, 768, 6, 6, 3072, mlp_kind::gelu, 8192, 1024),
                            test::nodes_of("ninety", 90, g, 8), 720);
  test::fake_cost_model model;
  auto const r = search(p, search_everything(), model, with_threads(2, 1));
  auto const candidates = [](explanation const& e) {
    for (auto const& [name, value] : e.figures)
      if (name == "candidates") return value;
    return 0.0;
  };
  std::vector<explanation> illegal;
  for (auto const& e : r.explanations)
    if (e.kind == "illegal") illegal.push_back(e);
  REQUIRE(illegal.size() == 13);
  for (std::size_t i = 1; i < 12; ++i)
    CHECK(candidates(illegal[i - 1]) >= candidates(illegal[i]));
  CHECK(illegal[0].text == "tp = 12, pp = 1, cp = 1, dp = 60 and 49 more: tp = 12 does not divide heads = 6 "
                           "(217,504 candidates)");
  auto const& more = illegal.back();
  CHECK(more.subject == "65 more reasons");
  CHECK(more.text == "65 more reasons rule out 256 more structures (418,776 candidates)");
  CHECK(candidates(more) == 418776);
  // Shard keys whose groups are another key's are counted once, and said.
  auto const same = std::find_if(r.explanations.begin(), r.explanations.end(),
                                 [](explanation const& e) { return e.kind == "same_plan"; });
  REQUIRE(same != r.explanations.end());
  CHECK(same->text == "546,096 candidates are another shard key's plan (their shard and replicate groups are the "
                      "same), counted once");
  // Every candidate is valid or in one line (the pruned are valid): nothing
  // the cap hides is lost.
  double listed = 0;
  for (auto const& e : r.explanations)
    if (e.kind != "pruned") listed += candidates(e);
  CHECK(listed + static_cast<double>(r.stats.valid) == static_cast<double>(r.stats.candidates));
  // The threads do not change the order.
  CHECK(search(p, search_everything(), model, with_threads(1, 1)).explanations == r.explanations);
}

TEST_CASE("node_sync_members agrees with a walk of every sync group on every small layout") {
  // A node-sized shard group exists when every node holds the same number
  // of every gradient-sync (dp x cp) group's members, or none.
  auto walked = [](rank_layout const& l) {
    std::int64_t share = 0;
    for (std::int64_t r = 0; r < l.world(); ++r) {
      std::map<std::int64_t, std::int64_t> per_node;
      for (auto q : l.sync_group_of(r)) ++per_node[l.node_of(q)];
      for (auto const& [node, n] : per_node) {
        if (share != 0 && n != share) return std::int64_t{0};
        share = n;
      }
    }
    return share;
  };
  std::int64_t layouts = 0, refused = 0;
  for (std::int64_t per_node : {1, 2, 3, 4, 6, 8})
    for (std::int64_t nodes : {1, 2, 3, 4}) {
      auto gpus = per_node * nodes;
      for (auto tp : test::divisors_of(gpus))
        for (auto pp : test::divisors_of(gpus / tp))
          for (auto cp : test::divisors_of(gpus / tp / pp)) {
            rank_order order{axis::tp, axis::cp, axis::dp, axis::pp};
            std::sort(order.begin(), order.end());
            do {
              strategy s;
              s.tp = tp, s.pp = pp, s.cp = cp, s.dp = gpus / (tp * pp * cp), s.order = order;
              rank_layout const l(s, per_node);
              INFO(per_node << " per node, " << nodes << " nodes, tp " << tp << " pp " << pp << " cp " << cp
                            << " order " << to_string(order));
              // Formed exactly where the walk finds even shares, except for
              // orders whose node-local parts are not one run (refused).
              auto const formed = l.node_sync_members();
              if (formed != 0) CHECK(formed == walked(l));
              else refused += walked(l) != 0;
              ++layouts;
            } while (std::next_permutation(order.begin(), order.end()));
          }
    }
  CHECK(layouts > 2000);
  // Refusals are the exception: 79 of the layouts (every one a rank order
  // with another axis between cp and dp).
  CHECK(refused < layouts / 20);
}

TEST_CASE("group placements match a walk over every rank on every small layout") {
  auto worst = [](rank_layout const& l, auto const& group_for) {
    group_placement w = l.placement_of(group_for(0));
    for (std::int64_t r = 1; r < l.world(); ++r) {
      auto p = l.placement_of(group_for(r));
      if (p.nodes > w.nodes || (p.nodes == w.nodes && p.max_per_node > w.max_per_node)) w = p;
    }
    return w;
  };
  auto same = [](group_placement const& a, group_placement const& b) {
    return a.size == b.size && a.nodes == b.nodes && a.max_per_node == b.max_per_node;
  };
  std::int64_t layouts = 0;
  for (std::int64_t per_node : {1, 2, 4, 8})
    for (std::int64_t nodes : {1, 2, 4}) {
      auto gpus = per_node * nodes;
      for (auto tp : test::divisors_of(gpus))
        for (auto pp : test::divisors_of(gpus / tp))
          for (auto cp : test::divisors_of(gpus / tp / pp)) {
            rank_order order{axis::tp, axis::cp, axis::dp, axis::pp};
            std::sort(order.begin(), order.end());
            do {
              strategy s;
              s.tp = tp;
              s.pp = pp;
              s.cp = cp;
              s.dp = gpus / (tp * pp * cp);
              s.order = order;
              rank_layout l(s, per_node);
              INFO(per_node << " per node, " << nodes << " nodes, tp " << tp << " pp " << pp << " cp " << cp
                            << " order " << to_string(order));
              for (axis a : {axis::tp, axis::cp, axis::dp, axis::pp})
                CHECK(same(l.placement(a), worst(l, [&](std::int64_t r) { return l.group_of(a, r); })));
              for (auto shard : test::divisors_of(s.dp)) {
                CHECK(same(l.shard_placement(shard), worst(l, [&](std::int64_t r) { return l.shard_group_of(r, shard); })));
                CHECK(same(l.replicate_placement(shard),
                           worst(l, [&](std::int64_t r) { return l.replicate_group_of(r, shard); })));
                // The ZeRO shard group of dp x cp ranks: N dp coordinates x every cp one.
                shard_layout const k{shard_layout::kind::dp_block, shard};
                CHECK(same(l.shard_placement(k), worst(l, [&](std::int64_t r) { return l.shard_group_of(r, k); })));
                CHECK(same(l.replicate_placement(k), worst(l, [&](std::int64_t r) { return l.replicate_group_of(r, k); })));
              }
              for (shard_layout const k : {shard_layout{}, shard_layout{shard_layout::kind::node, 0}}) {
                if (k.k == shard_layout::kind::node && l.node_sync_members() == 0) continue;
                CHECK(same(l.shard_placement(k), worst(l, [&](std::int64_t r) { return l.shard_group_of(r, k); })));
                CHECK(same(l.replicate_placement(k), worst(l, [&](std::int64_t r) { return l.replicate_group_of(r, k); })));
                CHECK(l.shard_ranks(k) == static_cast<std::int64_t>(l.shard_group_of(0, k).size()));
              }
              ++layouts;
            } while (std::next_permutation(order.begin(), order.end()));
          }
    }
  CHECK(layouts > 1000);
}

TEST_CASE("search of an empty or impossible space returns no plan") {
  auto p = two_nodes();
  test::fake_cost_model model;
  p.cluster.device.memory = 1_B;
  auto r = search(p, search_everything(), model, with_threads(2));
  CHECK(r.best.empty());
  CHECK(r.stats.valid == 0);
  CHECK(r.stats.candidates > 0);
  auto q = two_nodes();
  q.cluster.nodes = 0;
  auto none = search(q, search_everything(), model, with_threads(2));
  CHECK(none.best.empty());
  CHECK(none.stats.candidates == 0);
  auto zero_top = search(two_nodes(), search_everything(), model, with_threads(2, 0));
  CHECK(zero_top.best.empty());
  CHECK(zero_top.stats.valid > 0);
}

TEST_CASE("divisors: exact for small numbers, large primes and the 64-bit edge") {
  using v = std::vector<std::int64_t>;
  CHECK(divisors(0).empty());
  CHECK(divisors(-12).empty());
  CHECK(divisors(1) == v{1});
  CHECK(divisors(12) == v{1, 2, 3, 4, 6, 12});
  CHECK(divisors(2048) == v{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048});
  // Every n up to 3,000 against trial division.
  for (std::int64_t n = 1; n <= 3000; ++n) REQUIRE(divisors(n) == test::divisors_of(n));
  // A Mersenne prime, a product of two 30-bit primes, a power of two, and
  // 2^63 - 1 = 7^2 x 73 x 127 x 337 x 92737 x 649657 (3 x 2^5 = 96 divisors).
  CHECK(divisors(2305843009213693951) == v{1, 2305843009213693951});
  CHECK(divisors(998244353LL * 1000000007LL) == v{1, 998244353, 1000000007, 998244353LL * 1000000007LL});
  CHECK(divisors(std::int64_t{1} << 62).size() == 63);
  auto const top = divisors(std::numeric_limits<std::int64_t>::max());
  REQUIRE(top.size() == 96);
  CHECK(top[1] == 7);
  CHECK(top[2] == 49);
  CHECK(top[3] == 73);
  CHECK(top[94] == std::numeric_limits<std::int64_t>::max() / 7);
  for (auto d : top) CHECK(std::numeric_limits<std::int64_t>::max() % d == 0);
}
