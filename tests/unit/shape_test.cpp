#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "memory_fixtures.hpp"
#include "planner/model/shape.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

program llama3_8b_on(std::int64_t nodes) {
  program p;
  p.file = "<test>";
  p.model = test::llama3_8b();
  p.cluster = test::nodes_of("c", nodes, test::h100_sxm());
  p.training.global_batch = 64;
  return p;
}

}  // namespace

TEST_CASE("tp filling a node leaves a node-sized shard group of one rank; its peers sit on other nodes") {
  // The example: tp = 8 fills each 8-GPU node, so a node holds one
  // (cp, dp) coordinate; its dp x cp peers are on three other nodes.
  auto p = llama3_8b_on(4);
  strategy s;
  s.tp = 8, s.cp = 2, s.dp = 2, s.zero = 3, s.shard = {shard_group::kind::node, 0};
  s.checkpoint = checkpoint_mode::full, s.sequence_parallel = true;
  auto const sh = shape_of(p, s);
  CHECK(sh.sync.size == 4);
  CHECK(sh.sync.placement.nodes == 4);
  CHECK(sh.sync.link.kind == link_kind::inter);
  CHECK(sh.shard.size == 1);
  CHECK(sh.shard_ranks() == 1);
  CHECK(sh.shards_nothing());
  CHECK(sh.replicate.size == 4);
  CHECK(sh.replicate.placement.nodes == 4);
  CHECK(sh.replicate.link.kind == link_kind::inter);
  CHECK(sh.tp.link.kind == link_kind::intra);
  CHECK(sh.cp.link.kind == link_kind::inter);
}

TEST_CASE("a node-sized shard group with cp holds every dp x cp rank of the node") {
  // tp = 2, cp = 2, dp = 8 on 4 nodes of 8: a node holds 2 dp x 2 cp of each sync group.
  auto p = llama3_8b_on(4);
  strategy s;
  s.tp = 2, s.cp = 2, s.dp = 8, s.zero = 3, s.shard = {shard_group::kind::node, 0};
  auto const sh = shape_of(p, s);
  CHECK(sh.sync.size == 16);
  CHECK(sh.shard.size == 4);
  CHECK(sh.shard.placement.nodes == 1);
  CHECK(sh.shard.link.kind == link_kind::intra);
  CHECK(sh.replicate.size == 4);
  CHECK(sh.replicate.placement.nodes == 4);
  rank_layout const l(sh.s, 8);
  CHECK(l.shard_group_of(5, sh.sharding) == std::vector<std::int64_t>{1, 3, 5, 7});
  CHECK(l.replicate_group_of(5, sh.sharding) == std::vector<std::int64_t>{5, 13, 21, 29});
}

TEST_CASE("shard = N holds N dp coordinates times every cp coordinate") {
  auto p = llama3_8b_on(4);
  strategy s;
  s.tp = 2, s.cp = 2, s.dp = 8, s.zero = 3, s.shard = {shard_group::kind::size, 4};
  auto const sh = shape_of(p, s);
  CHECK(sh.shard.size == 8);
  CHECK(sh.shard.placement.nodes == 2);
  CHECK(sh.replicate.size == 2);
  rank_layout const l(sh.s, 8);
  CHECK(l.shard_group_of(0, sh.sharding) == std::vector<std::int64_t>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK(l.replicate_group_of(0, sh.sharding) == std::vector<std::int64_t>{0, 16});
}

TEST_CASE("stage layers, chunks and the heaviest stage") {
  auto p = llama3_8b_on(4);
  p.model.layers = 10;
  strategy s;
  s.tp = 8, s.pp = 4, s.dp = 1, s.virtual_stages = 2;
  p.training.global_batch = 8;
  auto const sh = shape_of(p, s);
  CHECK(sh.chunks == 8);
  CHECK(sh.chunk_layers(0) == 2);
  CHECK(sh.chunk_layers(1) == 2);
  CHECK(sh.chunk_layers(2) == 1);
  CHECK(sh.stage_layers(0) == 3);
  CHECK(sh.stage_layers(1) == 3);
  CHECK(sh.stage_layers(2) == 2);
  CHECK(sh.stage_layers(3) == 2);
  CHECK(sh.max_stage_layers == 3);
  CHECK(sh.grad_accum == 8);
  auto total = 0;
  for (int r = 0; r < 4; ++r) total += static_cast<int>(sh.stage_layers(r));
  CHECK(total == 10);
}

TEST_CASE("stage layer ranges spread the remainder over the first chunks") {
  auto p = llama3_8b_on(1);
  p.training.global_batch = 8;
  auto ranges = [&](std::int64_t layers, std::int64_t pp, std::int64_t v, std::int64_t stage) {
    p.model.layers = layers;
    strategy s;
    s.tp = 8 / pp, s.pp = pp, s.dp = 1, s.virtual_stages = v;
    return shape_of(p, s).stage_ranges(stage);
  };
  using r = layer_range;
  CHECK(ranges(40, 4, 1, 0) == std::vector<r>{{0, 10}});
  CHECK(ranges(42, 4, 1, 0) == std::vector<r>{{0, 11}});
  CHECK(ranges(42, 4, 1, 1) == std::vector<r>{{11, 22}});
  CHECK(ranges(42, 4, 1, 3) == std::vector<r>{{32, 42}});
  CHECK(ranges(32, 1, 1, 0) == std::vector<r>{{0, 32}});
  // Interleaved: 10 layers in 4 chunks of 3, 3, 2, 2; stage 1 runs chunks 1 and 3.
  CHECK(ranges(10, 2, 2, 1) == std::vector<r>{{3, 6}, {8, 10}});
}

TEST_CASE("Megatron-Core's uneven first and last stages: the middle ranks share the rest, each rank's chunks alike") {
  // NeMo's DeepSeek-V3 recipe: 61 layers, 3 on the first of 16 stages and 2
  // on the last (recipes/deepseek_v3.py:60-126).
  layer_split split{.layers = 61, .pp = 16, .vpp = 1, .first = 3, .last = 2};
  CHECK(split.ends());
  CHECK_FALSE(split.dtplan());
  CHECK(split.refusal().empty());
  CHECK(split.rank_layers(0) == 3);
  CHECK(split.rank_layers(1) == 4);
  CHECK(split.rank_layers(14) == 4);
  CHECK(split.rank_layers(15) == 2);
  CHECK(split.first_layer(1) == 3);
  CHECK(split.first_layer(15) == 59);
  // Interleaved: 32 layers, pp 2 x 2 virtual stages, 8 on the last rank:
  // rank 0 builds 12 a chunk, rank 1 4; chunk order c = v x pp + r.
  layer_split inter{.layers = 32, .pp = 2, .vpp = 2, .last = 8};
  CHECK(inter.refusal().empty());
  std::vector<layer_range> got;
  for (std::int64_t c = 0; c < 4; ++c)
    got.push_back({inter.first_layer(c), inter.first_layer(c) + inter.chunk_layers(c)});
  CHECK(got == std::vector<layer_range>{{0, 12}, {12, 16}, {16, 28}, {28, 32}});
  CHECK(inter.rank_layers(0) == 24);
  CHECK(inter.rank_layers(1) == 8);
  // What Megatron-Core refuses (transformer_config.py:924-989), and dtplan's
  // reason for a middle stage of no layer.
  CHECK(layer_split{.layers = 61, .pp = 8, .vpp = 1, .first = 3, .last = 2}.refusal() ==
        "the 56 layers left for the 6 middle stages do not split evenly over them");
  CHECK(layer_split{.layers = 32, .pp = 2, .vpp = 2, .first = 13}.refusal() ==
        "the first stage's 13 layers do not divide over its 2 virtual stages");
  CHECK(layer_split{.layers = 32, .pp = 2, .vpp = 1, .first = 12, .last = 19}.refusal() ==
        "the first and last stages' 31 layers are not the model's 32");
  CHECK(layer_split{.layers = 32, .pp = 3, .vpp = 1, .first = 20, .last = 20}.refusal() ==
        "the first and last stages' 40 layers are more than the model's 32");
  constexpr auto most = std::numeric_limits<std::int64_t>::max();
  layer_split const huge{.layers = 32, .pp = 4, .vpp = 1, .first = most, .last = most};
  CHECK(huge.refusal() == "the first and last stages' 9223372036854775807 layers are more than the model's 32");
  CHECK_FALSE(huge.places_as_dtplan());  // and no sum wraps on the way
  CHECK(layer_split{.layers = 32, .pp = 3, .vpp = 1, .first = 16, .last = 16}.refusal() ==
        "the middle stage would hold no layer");
  CHECK(layer_split{.layers = 32, .pp = 2, .vpp = 3, .first = 12}.refusal() ==
        "the 20 layers left for the middle stage do not divide over its 3 virtual stages");
  CHECK(layer_split{.layers = 30, .pp = 4, .vpp = 2, .first = 4, .last = 4}.refusal() ==
        "the 22 layers left for the 2 middle stages do not split evenly over them and their virtual "
        "stages");
}

TEST_CASE("the embedding and the loss counted as layers: the first and last chunk a layer short") {
  // MLPerf's Llama 3.1 405B: 126 + 2 over 8 x 8 chunks of 2.
  layer_split split{.layers = 126, .pp = 8, .vpp = 8, .embedding = true, .loss = true};
  CHECK(split.accounted());
  CHECK(split.refusal().empty());
  CHECK(split.chunk_layers(0) == 1);
  CHECK(split.chunk_layers(1) == 2);
  CHECK(split.chunk_layers(63) == 1);
  CHECK(split.first_layer(0) == 0);
  CHECK(split.first_layer(1) == 1);
  CHECK(split.first_layer(63) == 125);
  CHECK(split.rank_layers(0) == 15);
  CHECK(split.rank_layers(3) == 16);
  CHECK(split.rank_layers(7) == 15);
  std::int64_t total = 0;
  for (std::int64_t r = 0; r < 8; ++r) total += split.rank_layers(r);
  CHECK(total == 126);
  CHECK_FALSE(split.places_as_dtplan());  // dtplan's: 16 on stages 0-5, 15 on 6-7
  // 126 + 2 over 2 stages of 64: 63 each, dtplan's own.
  CHECK(layer_split{.layers = 126, .pp = 2, .vpp = 1, .embedding = true, .loss = true}.places_as_dtplan());
  CHECK(layer_split{.layers = 32, .pp = 2, .vpp = 1, .embedding = true}.refusal() ==
        "32 layers and the embedding counted as one more do not divide over 2 pipeline chunks");
  CHECK(layer_split{.layers = 2, .pp = 4, .vpp = 1, .embedding = true, .loss = true}.refusal() ==
        "the first chunk would hold the embedding alone");
  // torchtitan's: 32 + 2 over 4, the first stages a layer more (8, 9, 8, 7).
  layer_split titan{.layers = 32, .pp = 4, .vpp = 1, .embedding = true, .loss = true, .rest_first = true};
  CHECK(titan.refusal().empty());
  CHECK(titan.rank_layers(0) == 8);
  CHECK(titan.rank_layers(1) == 9);
  CHECK(titan.rank_layers(2) == 8);
  CHECK(titan.rank_layers(3) == 7);
  CHECK(titan.first_layer(1) == 8);
  CHECK(titan.first_layer(3) == 25);
  CHECK(layer_split{.layers = 32, .pp = 4, .vpp = 1, .embedding = true, .loss = true}.refusal() ==
        "32 layers and the embedding and the loss counted as two more do not divide over 4 pipeline chunks");
  // Without a pipeline neither applies: dtplan's split of everything.
  CHECK(layer_split{.layers = 32, .pp = 1, .vpp = 1, .first = 12, .embedding = true}.dtplan());
}

TEST_CASE("a shape follows the training block's split: the fullest and the heaviest stage are any") {
  auto p = llama3_8b_on(2);
  p.training.global_batch = 16;
  p.training.first_stage_layers = 4;
  p.training.last_stage_layers = 12;
  strategy s;
  s.tp = 4, s.pp = 4, s.dp = 1;
  auto const sh = shape_of(p, s);
  CHECK(sh.stage_layers(0) == 4);
  CHECK(sh.stage_layers(1) == 8);
  CHECK(sh.stage_layers(3) == 12);
  CHECK(sh.max_stage_layers == 12);
  CHECK(sh.heaviest_stage == 3);
  CHECK(sh.stage_ranges(3) == std::vector<layer_range>{{20, 32}});
}

TEST_CASE("an expert group is a block of ep consecutive members of the sync group, cp ranks among them") {
  // One node of 8: cp = 8 holds the sync group, so ep = 8 takes the
  // context-parallel ranks and stays on the node (it was placed as if it
  // spanned tp x cp x ep = 64 ranks: eight nodes of a one-node cluster).
  auto const mixture_on = [](std::int64_t nodes) {
    auto p = llama3_8b_on(nodes);
    p.model.experts = 8;
    p.model.experts_per_token = 2;
    return p;
  };
  auto const p = mixture_on(1);
  strategy s;
  s.cp = 8, s.dp = 1, s.ep = 8;
  auto const one = shape_of(p, s);
  CHECK(one.ep.size == 8);
  CHECK(one.ep.placement.nodes == 1);
  CHECK(one.ep.link.kind == link_kind::intra);
  // tp = 2, dp = 8 on 2 nodes: blocks of 4 dp ranks two apart, one node each.
  auto const q = mixture_on(2);
  strategy t;
  t.tp = 2, t.dp = 8, t.ep = 4;
  auto const two = shape_of(q, t);
  CHECK(two.ep.placement.nodes == 1);
  CHECK(two.ep.placement.max_per_node == 4);
  t.ep = 8;
  auto const across = shape_of(q, t);
  CHECK(across.ep.placement.nodes == 2);
  CHECK(across.ep.placement.max_per_node == 4);
  CHECK(across.ep.link.kind == link_kind::inter);
}

TEST_CASE("the expert grid's order is the sync groups' members interleaved, whatever the rank order") {
  // expert_members_of's definition written out the long way: the sync
  // groups (ascending) of the tp / etp ranks with a rank's slice, taken
  // member by member. The layout computes positions in that order without
  // building it; every rank, ep and etp of every order must agree, and so
  // must the expert shard groups under each sharding.
  using v = std::vector<std::int64_t>;
  auto const reference = [](rank_layout const& l, std::int64_t rank, std::int64_t etp) {
    auto const tp = l.size(axis::tp);
    if (etp >= tp) return l.sync_group_of(rank);
    auto c = l.of(rank);
    std::vector<v> syncs;
    for (auto j = c[static_cast<int>(axis::tp)] % etp; j < tp; j += etp) {
      c[static_cast<int>(axis::tp)] = j;
      syncs.push_back(l.sync_group_of(l.rank_of(c)));
    }
    v out;
    for (std::size_t i = 0; i < syncs.front().size(); ++i)
      for (auto const& g : syncs) out.push_back(g[i]);
    return out;
  };
  std::array<axis, 4> order{axis::tp, axis::cp, axis::dp, axis::pp};
  std::sort(order.begin(), order.end());
  int layouts = 0;
  std::int64_t sharded = 0;
  do {
    for (auto [tp, cp, dp] : {std::array<std::int64_t, 3>{4, 2, 3}, {2, 1, 6}, {4, 3, 1}, {1, 2, 4}}) {
      strategy s;
      s.tp = tp, s.cp = cp, s.dp = dp, s.pp = 2;
      s.order = order;
      rank_layout const l(s, 8);
      ++layouts;
      for (std::int64_t etp = 1; etp <= tp; etp *= 2) {
        auto const slices = tp / etp * cp * dp;
        for (std::int64_t rank = 0; rank < l.world(); ++rank) {
          INFO("order " << to_string(s.order) << ", tp " << tp << " cp " << cp << " dp " << dp << ", etp " << etp
                        << ", rank " << rank);
          auto const members = reference(l, rank, etp);
          REQUIRE(l.expert_members_of(rank, etp) == members);
          auto const at = std::find(members.begin(), members.end(), rank) - members.begin();
          for (std::int64_t ep = 1; ep <= slices; ++ep) {
            if (slices % ep != 0) continue;
            auto const first = at / ep * ep;
            CHECK(l.expert_group_of(rank, ep, etp) == v(members.begin() + first, members.begin() + first + ep));
            v data;
            for (auto m = at % ep; m < std::ssize(members); m += ep) data.push_back(members[static_cast<std::size_t>(m)]);
            std::sort(data.begin(), data.end());
            CHECK(l.expert_data_group_of(rank, ep, etp) == data);
            // Under each sharding, those of them in its shard group: at its
            // position in their replicate groups.
            std::vector<shard_layout> kinds{{shard_layout::kind::whole, 0}, {shard_layout::kind::node, 0}};
            for (std::int64_t b = 1; b < dp; ++b)
              if (dp % b == 0) kinds.push_back({shard_layout::kind::dp_block, b});
            for (auto const& k : kinds) {
              auto const position = [&](std::int64_t q) {
                auto const replicas = l.replicate_group_of(q, k);
                return std::find(replicas.begin(), replicas.end(), q) - replicas.begin();
              };
              v shard;
              for (auto q : data)
                if (position(q) == position(rank)) shard.push_back(q);
              INFO("shard kind " << static_cast<int>(k.k) << ", block " << k.dp_block);
              CHECK(l.expert_shard_group_of(rank, ep, etp, k) == shard);
              ++sharded;
            }
          }
        }
      }
    }
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(layouts == 96);
  CHECK(sharded > 0);
}

TEST_CASE("etp = 1: the expert grid spans the tensor-parallel ranks, tp fastest") {
  // Megatron-Core's expert rank generator lays a stage's ranks out as etp
  // x ep x expert-dp, etp fastest (core_v0.13.0 parallel_state.py); with
  // etp = 1 an ep group is ep consecutive ranks of tp x dp and the ranks
  // holding the same experts are ep apart. tp = 2, dp = 8 on 2 nodes of 8.
  strategy s;
  s.tp = 2, s.dp = 8, s.ep = 4, s.etp = 1, s.sequence_parallel = true;
  rank_layout const l(s, 8);
  using v = std::vector<std::int64_t>;
  CHECK(l.expert_members_of(0, 1) == v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(l.expert_group_of(0, 4, 1) == v{0, 1, 2, 3});
  CHECK(l.expert_group_of(6, 4, 1) == v{4, 5, 6, 7});
  CHECK(l.expert_data_group_of(1, 4, 1) == v{1, 5, 9, 13});
  // etp = tp: the sync group's blocks, as before (rank 1's tp coordinate).
  CHECK(l.expert_group_of(1, 4, 2) == v{1, 3, 5, 7});
  CHECK(l.expert_data_group_of(1, 4, 2) == v{1, 9});
  // dp outside cp: the cp ranks come first inside each tp pair's blocks.
  strategy c;
  c.tp = 2, c.cp = 2, c.dp = 4, c.ep = 8, c.etp = 1, c.sequence_parallel = true;
  rank_layout const lc(c, 8);
  CHECK(lc.expert_group_of(9, 8, 1) == v{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(lc.expert_data_group_of(3, 8, 1) == v{3, 11});

  // The shape: each GPU holds 8 / 4 experts whole, twice the weights of
  // etp = tp, their rows the tokens of its own sequence share (seq / tp)
  // routed from the ep ranks; the experts' gradients sum over tp x dp / ep.
  auto p = llama3_8b_on(2);
  p.model.experts = 8;
  p.model.experts_per_token = 2;
  auto const whole = shape_of(p, s);
  strategy split = s;
  split.etp = 0;
  auto const halves = shape_of(p, split);
  CHECK(whole.layer_expert_params == 2 * halves.layer_expert_params);
  CHECK(whole.expert_sync.size == 4);
  CHECK(halves.expert_sync.size == 2);
  CHECK(whole.ep.placement.nodes == 1);
  CHECK(whole.experts_sync_apart());
  auto const& up = whole.gemms[static_cast<std::size_t>(whole.gemm_count - 2)];
  CHECK(std::string(up.name) == "mlp-up");
  CHECK(up.forward.n == 2 * p.model.ffn);
  CHECK(up.forward.batch == 2);
  // 8192 tokens / tp 2 x top-2 x ep 4 / 8 experts.
  CHECK(up.forward.m == 8192 / 2 * 2 * 4 / 8);
  auto const& up_split = halves.gemms[static_cast<std::size_t>(halves.gemm_count - 2)];
  CHECK(up_split.forward.n == p.model.ffn);
  CHECK(up_split.forward.m == 8192 * 2 * 4 / 8);
  // Experts of their own width (expert_ffn): the expert GEMMs and weights.
  auto narrow = p;
  narrow.model.expert_ffn = 1024;
  auto const thin = shape_of(narrow, s);
  auto const& up_thin = thin.gemms[static_cast<std::size_t>(thin.gemm_count - 2)];
  auto const& down_thin = thin.gemms[static_cast<std::size_t>(thin.gemm_count - 1)];
  CHECK(up_thin.forward.n == 2 * 1024);
  CHECK(down_thin.forward.k == 1024);
  CHECK(thin.layer_expert_params * double(p.model.ffn) == Approx(whole.layer_expert_params * 1024.0));
  // ep = 1 with etp = 1: every expert on every rank, whole; their
  // gradients over tp x dp, apart from the dense weights' dp.
  s.ep = 1;
  auto const everywhere = shape_of(p, s);
  CHECK(everywhere.expert_sync.size == 16);
  CHECK(everywhere.sync.size == 8);
  CHECK(everywhere.experts_sync_apart());
}

TEST_CASE("a pipeline rank's layers are the sum of its chunks', for every split") {
  for (std::int64_t layers = 1; layers <= 100; ++layers)
    for (std::int64_t pp = 1; pp <= 8; ++pp)
      for (std::int64_t vpp = 1; vpp <= 4 && pp * vpp <= layers; ++vpp)
        for (std::int64_t r = 0; r < pp; ++r) {
          std::int64_t sum = 0;
          for (std::int64_t c = r; c < pp * vpp; c += pp) sum += layers_of_chunk(layers, pp * vpp, c);
          INFO(layers << " layers, pp " << pp << ", vpp " << vpp << ", rank " << r);
          REQUIRE(layers_of_rank(layers, pp, vpp, r) == sum);
        }
}

namespace {

// DeepSpeed's linear partition of a pipeline's layer specs by weight, as its
// PipelineModule runs partition_method 'type:transformer' (DS v0.17.5
// deepspeed/runtime/utils.py:583-620, runtime/pipe/module.py:409-414): the
// split of n specs into m parts whose heaviest minus lightest part is least,
// over cuts k from the first (a later k wins a tie, the '>=' of its loop);
// each part's weight.
std::vector<std::int64_t> deepspeed_partition(std::vector<int> const& weights, std::int64_t parts) {
  auto const n = static_cast<std::int64_t>(weights.size());
  auto const m = parts;
  double const inf = std::numeric_limits<double>::infinity();
  auto at = [&](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>(i * (m + 1) + j); };
  std::vector<double> most(static_cast<std::size_t>((n + 1) * (m + 1)), inf), least(most), cost(most);
  std::vector<std::int64_t> cut(most.size(), 0);
  std::vector<double> prefix(static_cast<std::size_t>(n + 1), 0.0);
  for (std::int64_t i = 0; i < n; ++i) prefix[static_cast<std::size_t>(i + 1)] = prefix[static_cast<std::size_t>(i)] + weights[static_cast<std::size_t>(i)];
  most[at(0, 0)] = 0;
  cost[at(0, 0)] = 0;
  for (std::int64_t i = 1; i <= n; ++i)
    for (std::int64_t j = 1; j <= std::min(i, m); ++j)
      for (std::int64_t k = 0; k < i; ++k) {
        double const part = prefix[static_cast<std::size_t>(i)] - prefix[static_cast<std::size_t>(k)];
        double const hi = std::max(most[at(k, j - 1)], part), lo = std::min(least[at(k, j - 1)], part);
        if (cost[at(i, j)] >= hi - lo) {
          cost[at(i, j)] = hi - lo;
          most[at(i, j)] = hi;
          least[at(i, j)] = lo;
          cut[at(i, j)] = k;
        }
      }
  std::vector<std::int64_t> bounds{n};
  for (std::int64_t j = m; j >= 1; --j) bounds.push_back(cut[at(bounds.back(), j)]);
  std::reverse(bounds.begin(), bounds.end());
  std::vector<std::int64_t> out;
  for (std::int64_t j = 0; j < m; ++j)
    out.push_back(static_cast<std::int64_t>(prefix[static_cast<std::size_t>(bounds[static_cast<std::size_t>(j + 1)])] -
                                            prefix[static_cast<std::size_t>(bounds[static_cast<std::size_t>(j)])]));
  return out;
}

}  // namespace

TEST_CASE("Megatron-DeepSpeed's pipeline splits uneven layers as dtplan costs them, the first stages a layer more") {
  // GPTModelPipe's specs: a few that are not transformer layers before and
  // after them (embedding, casts, final norm, head, loss), weight 0.
  auto specs = [](std::int64_t before, std::int64_t layers, std::int64_t after) {
    std::vector<int> w(static_cast<std::size_t>(before), 0);
    w.insert(w.end(), static_cast<std::size_t>(layers), 1);
    w.insert(w.end(), static_cast<std::size_t>(after), 0);
    return w;
  };
  // BLOOM-176B: 70 layers over 12 stages, 6 on stages 0-9 and 5 on 10-11.
  CHECK(deepspeed_partition(specs(2, 70, 4), 12) ==
        std::vector<std::int64_t>{6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5});
  int checked = 0;
  for (std::int64_t before : {1, 2, 3})
    for (std::int64_t after : {1, 3, 5})
      for (std::int64_t pp : {2, 3, 4, 6, 8, 12, 16})
        for (std::int64_t layers = pp + 1; layers < 80; layers += 3) {
          if (layers % pp == 0) continue;
          auto const got = deepspeed_partition(specs(before, layers, after), pp);
          for (std::int64_t r = 0; r < pp; ++r) {
            INFO(layers << " layers over " << pp << " stages, " << before << " + " << after << " other specs, stage " << r);
            REQUIRE(got[static_cast<std::size_t>(r)] == layers_of_chunk(layers, pp, r));
          }
          ++checked;
        }
  CHECK(checked == 1323);
}
