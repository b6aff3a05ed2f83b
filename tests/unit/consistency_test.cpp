// Every consumer of a checked strategy says the same thing about it: the
// memory model, the time model, the sharding diagram, the JSON (and the
// skeleton's --dry-run layout, tests/codegen) agree on every derived
// quantity (group sizes, members, the link each group crosses, the ZeRO
// shard size, layers per stage), checked against a reference computed here
// from first principles, rank by rank, that shares no code with the planner.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "codegen/graphviz.hpp"
#include "codegen/report.hpp"
#include "codegen/skeleton.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/lower/lower.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/search/search.hpp"

using namespace dtplan;
using namespace dtplan::planner;
using json = nlohmann::json;

namespace {

// The reference: ranks and coordinates by hand.
struct reference {
  std::int64_t tp, cp, dp, pp, gpn, world;
  std::array<std::int64_t, 4> size{}, stride{};
  planner::shard_group shard;
  int zero;

  reference(strategy const& s, std::int64_t gpus_per_node)
      : tp(s.tp), cp(s.cp), dp(s.dp), pp(s.pp), gpn(gpus_per_node), world(s.tp * s.cp * s.dp * s.pp),
        shard(s.shard), zero(s.zero) {
    size = {s.tp, s.cp, s.dp, s.pp};  // by axis: tp, cp, dp, pp
    std::int64_t st = 1;
    for (axis a : s.order) {
      stride[static_cast<std::size_t>(a)] = st;
      st *= size[static_cast<std::size_t>(a)];
    }
  }
  std::int64_t coord(std::int64_t r, axis a) const {
    return (r / stride[static_cast<std::size_t>(a)]) % size[static_cast<std::size_t>(a)];
  }
  // Ranks sharing every coordinate of r except those in `free_axes`: r
  // with those coordinates zeroed, then every value of each, ascending.
  // (Not a scan of the world for each rank: the test's own code is
  // unoptimised, and this runs for every rank of each plan's world.)
  std::vector<std::int64_t> sharing(std::int64_t r, std::initializer_list<axis> free_axes) const {
    std::int64_t base = r;
    for (axis a : free_axes) base -= coord(r, a) * stride[static_cast<std::size_t>(a)];
    std::vector<std::int64_t> out{base};
    for (axis a : free_axes) {
      std::vector<std::int64_t> next;
      for (auto q : out)
        for (std::int64_t i = 0; i < size[static_cast<std::size_t>(a)]; ++i)
          next.push_back(q + i * stride[static_cast<std::size_t>(a)]);
      out = std::move(next);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::int64_t> sync(std::int64_t r) const { return sharing(r, {axis::dp, axis::cp}); }
  std::vector<std::int64_t> shard_of(std::int64_t r) const {
    auto g = sync(r);
    if (zero == 0) return {r};
    switch (shard.k) {
      case shard_group::kind::all: return g;
      case shard_group::kind::node: std::erase_if(g, [&](std::int64_t q) { return q / gpn != r / gpn; }); return g;
      case shard_group::kind::size: {
        if (shard.size >= dp) return g;
        auto block = coord(r, axis::dp) / shard.size;
        std::erase_if(g, [&](std::int64_t q) { return coord(q, axis::dp) / shard.size != block; });
        return g;
      }
    }
    return g;
  }
  std::vector<std::int64_t> replicate_group(std::int64_t r) const {
    auto const mine = shard_of(r);
    auto const at = std::find(mine.begin(), mine.end(), r) - mine.begin();
    std::vector<std::int64_t> out;
    std::set<std::int64_t> seen;
    for (auto q : sync(r)) {
      auto const theirs = shard_of(q);
      if (!seen.insert(theirs.front()).second) continue;
      out.push_back(theirs[static_cast<std::size_t>(at)]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Whether any group of this kind spans nodes.
  template <class F>
  bool crosses(F const& group_of) const {
    for (std::int64_t r = 0; r < world; ++r) {
      auto g = group_of(r);
      if (g.front() / gpn != g.back() / gpn) return true;
    }
    return false;
  }
};

std::string link_of(bool crosses) { return crosses ? "inter" : "intra"; }

std::int64_t world_of(strategy const& s) { return s.dp * s.tp * s.cp * s.pp; }

// Components of the edges drawn in one style, as sets of ranks.
std::vector<std::vector<std::int64_t>> components(std::string const& dot, std::string const& colour_style) {
  std::map<std::int64_t, std::int64_t> parent;
  auto find = [&](std::int64_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::regex const edge("  r([0-9]+) -> r([0-9]+) \\[([^\\]]*)\\];");
  for (auto it = std::sregex_iterator(dot.begin(), dot.end(), edge); it != std::sregex_iterator(); ++it) {
    if ((*it)[3].str().find(colour_style) != 0) continue;
    auto a = std::stoll((*it)[1]), b = std::stoll((*it)[2]);
    if (!parent.count(a)) parent[a] = a;
    if (!parent.count(b)) parent[b] = b;
    parent[find(a)] = find(b);
  }
  std::map<std::int64_t, std::vector<std::int64_t>> groups;
  for (auto const& [r, _] : parent) groups[find(r)].push_back(r);
  std::vector<std::vector<std::int64_t>> out;
  for (auto& [_, g] : groups) out.push_back(g);
  return out;
}

// Checks one legal plan of `p` against the reference.
void agree(program const& p, plan const& pl) {
  auto const& s = pl.s;
  reference const ref(s, p.cluster.gpus_per_node);
  INFO(fmt::format("{} nodes x {}: {} (zero {}, shard {})", p.cluster.nodes, p.cluster.gpus_per_node, describe(s), s.zero,
                   to_string(s.shard)));
  REQUIRE(pl.shape);
  auto const shard0 = ref.shard_of(0);
  auto const shard_ranks = static_cast<std::int64_t>(shard0.size());
  auto const sync_ranks = static_cast<std::int64_t>(ref.sync(0).size());
  auto const replicas = s.zero == 0 ? sync_ranks : sync_ranks / shard_ranks;

  // The JSON.
  std::vector<plan> one{pl};
  auto const doc = json::parse(codegen::to_json({&p, &one, {}, {}, nullptr}));
  auto const& jp = doc["plans"][0];
  auto const& groups = jp["shape"]["groups"];
  CHECK(groups["sync"]["ranks"] == sync_ranks);
  CHECK(groups["sync"]["link"] == link_of(ref.crosses([&](std::int64_t r) { return ref.sync(r); })));
  CHECK(jp["shape"]["shard_ranks"] == (s.zero >= 1 ? shard_ranks : 1));
  if (s.zero >= 1) {
    CHECK(groups["shard"]["ranks"] == shard_ranks);
    CHECK(groups["shard"]["link"] == link_of(ref.crosses([&](std::int64_t r) { return ref.shard_of(r); })));
    CHECK(groups["replicate"]["ranks"] == replicas);
    if (replicas > 1)
      CHECK(groups["replicate"]["link"] == link_of(ref.crosses([&](std::int64_t r) { return ref.replicate_group(r); })));
  }
  CHECK(groups["tp"]["link"] == link_of(ref.crosses([&](std::int64_t r) { return ref.sharing(r, {axis::tp}); })));
  CHECK(groups["cp"]["link"] == link_of(ref.crosses([&](std::int64_t r) { return ref.sharing(r, {axis::cp}); })));
  std::int64_t layers = 0;
  for (auto const& n : jp["shape"]["stage_layers"]) layers += n.get<std::int64_t>();
  CHECK(layers == p.model.layers);

  // The time model: every collective over the group the shape names, on its link.
  if (pl.time)
    for (auto const& c : pl.time->comm) {
      INFO(fmt::format("{} {} over {} ranks, {}", name(c.op), name(c.group), c.ranks, name(c.link)));
      switch (c.group) {
        case comm_group::dp:
          CHECK(c.ranks == sync_ranks);
          CHECK(name(c.link) == groups["sync"]["link"]);
          break;
        case comm_group::shard:
          CHECK(c.ranks == shard_ranks);
          CHECK(name(c.link) == groups["shard"]["link"]);
          break;
        case comm_group::replicate:
          CHECK(c.ranks == replicas);
          CHECK(name(c.link) == groups["replicate"]["link"]);
          break;
        case comm_group::tp:
          CHECK(c.ranks == s.tp);
          CHECK(name(c.link) == groups["tp"]["link"]);
          break;
        case comm_group::cp:
          CHECK(c.ranks == s.cp);
          CHECK(name(c.link) == groups["cp"]["link"]);
          break;
        default: break;
      }
    }

  // The memory model: state split over the shard group, and said so.
  for (auto const& t : pl.memory.detail) {
    std::smatch m;
    static std::regex const over("ZeRO-[0-9] over ([0-9]+)");
    if (std::regex_search(t.name, m, over)) CHECK(std::stoll(m[1]) == shard_ranks);
  }
  if (s.zero >= 3 && shard_ranks == 1)
    for (auto const& t : pl.memory.detail) CHECK(t.name.find("ZeRO-") == std::string::npos);

  // The diagram: its shard and replicate edges join exactly the reference's
  // groups, and each GPU says what it holds of which layers.
  if (world_of(s) <= codegen::dot_full_limit) {
    auto const dot = codegen::sharding_dot(p, pl);
    bool const hybrid = s.zero >= 1 && shard_ranks < sync_ranks;
    if (hybrid) {
      for (auto const& g : components(dot, "color=\"#e07b00\""))
        CHECK(g == ref.shard_of(g.front()));
      if (shard_ranks == 1) CHECK(dot.find("shard group of 1: shards nothing") != std::string::npos);
      else CHECK(dot.find(fmt::format("(shard group of {})", shard_ranks)) != std::string::npos);
    }
    for (std::int64_t r = 0; r < world_of(s); ++r) {
      auto const stage = ref.coord(r, axis::pp);
      auto const ranges = pl.shape->stage_ranges(stage);
      CHECK(dot.find(fmt::format("rank {}\\ntp {} cp {} dp {} pp {}", r, ref.coord(r, axis::tp), ref.coord(r, axis::cp),
                                 ref.coord(r, axis::dp), stage)) != std::string::npos);
      std::int64_t held = 0;
      for (auto const& lr : ranges) held += lr.last - lr.first;
      CHECK(held == jp["shape"]["stage_layers"][static_cast<std::size_t>(stage)]);
    }
  }
}

program load_text(std::string const& text, dsl::source_manager& sources) {
  dsl::diagnostics diags;
  auto id = sources.add("<consistency>", text);
  auto p = load(sources, id, {}, diags);
  INFO(text);
  REQUIRE(p);
  return *p;
}

}  // namespace

TEST_CASE("the issue's example: tp = 8 fills each node, so a node-sized shard group has one member") {
  dsl::source_manager sources;
  auto const p = load_text(R"(model m : llama3_8b { }
cluster c { nodes = 4; gpus_per_node = 8; gpu = H100_SXM; inter_node = 8 x 400 Gbit/s }
training { global_batch = 64 }
strategy s { tp = 8; cp = 2; dp = 2; zero = 3; shard = node; checkpoint = full; micro_batch = 1 }
)",
                           sources);
  analytic_cost_model const model;
  auto const pl = evaluate(p, p.strategies.front(), p.strategies.front().fixed(), model, "s");
  REQUIRE(pl.valid);
  agree(p, pl);
  // No collective is called intra-node whose members are on different nodes.
  for (auto const& c : pl.time->comm) {
    CHECK(c.group != comm_group::shard);
    if (c.group == comm_group::replicate) CHECK(c.link == link_kind::inter);
  }
  REQUIRE_FALSE(pl.errors.empty());
  CHECK(pl.errors.front().message ==
        "shard = node shards nothing here: each node holds one of the 4 ranks (dp x cp = 2 x 2) that share the "
        "weights, so every rank keeps whole ZeRO-3 state and the gradients are all-reduced across nodes");
}

TEST_CASE("every plan in plans/ and its search results agree across the models, the diagram and the JSON") {
  analytic_cost_model const model;
  std::int64_t checked = 0;
  for (auto const& entry : std::filesystem::directory_iterator(DTPLAN_SOURCE_DIR "/plans")) {
    if (entry.path().extension() != ".dtp") continue;
    dsl::source_manager sources;
    auto const text = dsl::read_file(entry.path().string());
    REQUIRE(text);
    auto const p = load_text(*text, sources);
    for (auto const& spec : p.strategies) {
      if (spec.is_free()) {
        search_options o;
        o.top = 3;
        o.threads = 1;
        for (auto const& pl : search(p, spec, model, o).best) {
          agree(p, pl);
          ++checked;
        }
      } else {
        auto const pl = evaluate(p, spec, spec.fixed(), model, spec.name);
        if (pl.shape) {
          agree(p, pl);
          ++checked;
        }
      }
    }
  }
  CHECK(checked >= 20);
}

TEST_CASE("200 random strategies on random clusters agree across the models, the diagram and the JSON") {
  std::mt19937_64 rng(2026);
  auto pick = [&](std::vector<std::int64_t> const& v) { return v[rng() % v.size()]; };
  auto divisors = [](std::int64_t n) {
    std::vector<std::int64_t> d;
    for (std::int64_t k = 1; k <= n; ++k)
      if (n % k == 0) d.push_back(k);
    return d;
  };
  analytic_cost_model const model;
  int checked = 0, node_shards = 0, shards_nothing = 0, tp_fills = 0, cp_across = 0, uneven = 0;
  for (int round = 0; checked < 200 && round < 20000; ++round) {
    auto const gpn = pick({1, 2, 4, 8});
    auto const nodes = pick({1, 2, 3, 4, 8});
    auto const world = gpn * nodes;
    auto const layers = pick({3, 5, 6, 8, 12});
    dsl::source_manager sources;
    std::string text = fmt::format(
        "model m {{ layers = {}; hidden = 512; heads = 8; kv_heads = {}; ffn = 1536; mlp = swiglu; vocab = 1000; "
        "seq_len = 256 }}\n"
        "gpu big : H100_SXM {{ memory = 1 TB }}\n"
        "cluster c {{ nodes = {}; gpus_per_node = {}; gpu = big; inter_node = 100 Gbit/s }}\n"
        "training {{ global_batch = 48 }}\n",
        layers, pick({2, 4, 8}), nodes, gpn);
    auto p = load_text(text, sources);
    strategy s;
    s.tp = pick(divisors(std::min<std::int64_t>(world, 8)));
    s.cp = pick(divisors(world / s.tp));
    s.pp = pick(divisors(world / s.tp / s.cp));
    s.dp = world / (s.tp * s.cp * s.pp);
    s.zero = static_cast<int>(rng() % 4);
    auto const k = rng() % 3;
    s.shard = k == 0 ? shard_group{} : k == 1 ? shard_group{shard_group::kind::node, 0}
                                              : shard_group{shard_group::kind::size, pick(divisors(s.dp))};
    rank_order order{axis::tp, axis::cp, axis::dp, axis::pp};
    std::shuffle(order.begin(), order.end(), rng);
    s.order = order;
    s.sequence_parallel = s.tp > 1 && rng() % 2;
    s.micro_batch = pick({1, 2});
    s.virtual_stages = s.pp > 1 && rng() % 3 == 0 ? 2 : 1;
    s.checkpoint = static_cast<checkpoint_mode>(rng() % 4);
    auto const pl = evaluate(p, strategy_spec{}, s, model, "random");
    if (!pl.shape) continue;
    agree(p, pl);
    ++checked;
    node_shards += s.zero >= 1 && s.shard.k == shard_group::kind::node;
    shards_nothing += pl.shape->shards_nothing();
    tp_fills += s.tp == gpn && gpn > 1;
    cp_across += pl.shape->cp.placement.crosses_nodes();
    uneven += layers % (s.pp * s.virtual_stages) != 0;
  }
  CHECK(checked == 200);
  // The cases the renovation was about are all among them.
  CHECK(node_shards >= 10);
  CHECK(shards_nothing >= 3);
  CHECK(tp_fills >= 10);
  CHECK(cp_across >= 10);
  CHECK(uneven >= 10);
}

namespace {

// The generated program built host-only (no CUDA needed) as dir/stem and
// run with --dry-run: its layout listing, or nothing where either failed.
std::optional<std::filesystem::path> dry_run(std::filesystem::path const& dir, std::string const& stem,
                                             std::string const& cu_text) {
  auto const cu = dir / (stem + ".cu");
  std::ofstream(cu) << cu_text;
  auto const exe = dir / stem;
  auto const out = dir / (stem + ".layout");
  auto const cc = fmt::format("c++ -std=c++17 -O0 -x c++ -DDTPLAN_DRY_RUN_ONLY '{}' -o '{}' && '{}' --dry-run > '{}'",
                              cu.string(), exe.string(), exe.string(), out.string());
  if (std::system(cc.c_str()) != 0) return std::nullopt;
  return out;
}

// The members after "NAME: " in one --dry-run rank line.
std::vector<std::int64_t> members(std::string const& line, std::string const& name) {
  std::vector<std::int64_t> out;
  auto at = line.find("| " + name + ": ");
  if (at == std::string::npos) return out;
  std::istringstream in(line.substr(at + name.size() + 4));
  std::string word;
  while (in >> word && word != "|") out.push_back(std::stoll(word));
  return out;
}

// Calls f(rank, line) for each rank's line of a --dry-run listing; the
// number of them.
template <class F>
std::int64_t for_each_rank(std::filesystem::path const& listing, F&& f) {
  std::ifstream in(listing);
  std::string line;
  std::int64_t ranks = 0;
  while (std::getline(in, line)) {
    if (line.rfind("rank ", 0) != 0) continue;
    f(std::stoll(line.substr(5)), line);
    ++ranks;
  }
  return ranks;
}

// A small mixture (8 experts, top 2) under Megatron-Core on 2 x 8 GPUs of
// ample memory, the expert grids' fixture: strategy `s` evaluated on it and
// its skeleton's --dry-run listing (none where the plan is invalid or the
// build fails).
struct mixture_run {
  plan pl;
  std::optional<std::filesystem::path> listing;
};

mixture_run dry_run_mixture(std::string const& stem, strategy const& s) {
  static dsl::source_manager sources;
  static program const p = load_text("model m { layers = 4; hidden = 512; heads = 8; ffn = 1024; vocab = 1000; "
                                     "seq_len = 256; mlp = swiglu; experts = 8; experts_per_token = 2 }\n"
                                     "gpu big : H100_SXM { memory = 1 TB }\n"
                                     "cluster c { nodes = 2; gpus_per_node = 8; gpu = big; inter_node = 100 Gbit/s }\n"
                                     "training { framework = megatron; global_batch = 64 }\n",
                                     sources);
  auto const dir = std::filesystem::path(DTPLAN_BINARY_DIR) / "consistency";
  std::filesystem::create_directories(dir);
  analytic_cost_model const model;
  mixture_run out{evaluate(p, strategy_spec{}, s, model, stem), std::nullopt};
  if (out.pl.valid) out.listing = dry_run(dir, stem, codegen::train_step_cu(p, out.pl));
  return out;
}

}  // namespace

TEST_CASE("the skeleton's --dry-run groups are the reference's, for random hybrid-sharded strategies") {
  // The host-only build of the generated program (no CUDA needed): its
  // gradient, shard and replicate communicators, rank by rank.
  auto const dir = std::filesystem::path(DTPLAN_BINARY_DIR) / "consistency";
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(77);
  analytic_cost_model const model;
  int built = 0;
  for (int round = 0; built < 4 && round < 2000; ++round) {
    auto const gpn = std::int64_t{4} << (rng() % 2);  // 4 or 8
    auto const nodes = std::int64_t{2} << (rng() % 2);
    dsl::source_manager sources;
    auto p = load_text(fmt::format("model m {{ layers = 4; hidden = 512; heads = 8; ffn = 1024; vocab = 1000; seq_len = 256 }}\n"
                                   "gpu big : H100_SXM {{ memory = 1 TB }}\n"
                                   "cluster c {{ nodes = {}; gpus_per_node = {}; gpu = big; inter_node = 100 Gbit/s }}\n"
                                   "training {{ global_batch = 64 }}\n",
                                   nodes, gpn),
                       sources);
    strategy s;
    s.tp = std::int64_t{1} << (rng() % 2);
    s.cp = std::int64_t{1} << (rng() % 3);
    s.pp = 1;
    s.dp = gpn * nodes / (s.tp * s.cp);
    s.zero = 3;
    s.shard = rng() % 2 ? shard_group{shard_group::kind::node, 0} : shard_group{shard_group::kind::size, 2};
    rank_order order{axis::tp, axis::cp, axis::dp, axis::pp};
    if (rng() % 2) order = {axis::tp, axis::dp, axis::cp, axis::pp};
    s.order = order;
    auto const pl = evaluate(p, strategy_spec{}, s, model, "random");
    if (!pl.valid || s.cp == 1 || pl.shape->shard.size >= pl.shape->sync.size) continue;
    ++built;
    auto const out = dry_run(dir, fmt::format("random{}", built), codegen::train_step_cu(p, pl));
    REQUIRE(out);
    reference const ref(pl.s, gpn);
    INFO(describe(pl.s) << ", shard " << to_string(pl.s.shard) << ", " << nodes << " x " << gpn);
    auto const ranks = for_each_rank(*out, [&](std::int64_t r, std::string const& line) {
      CHECK(members(line, "grad") == ref.sync(r));
      CHECK(members(line, "shard") == ref.shard_of(r));
      CHECK(members(line, "replicate") == ref.replicate_group(r));
    });
    CHECK(ranks == world_of(pl.s));
  }
  CHECK(built == 4);
}

TEST_CASE("the skeleton's --dry-run expert groups are Megatron-Core's expert grid, experts whole or split over tp") {
  // Megatron-Core's expert rank generator over a stage's ranks, etp
  // fastest, then ep, then the expert data-parallel ranks (core_v0.13.0
  // parallel_state.py), written out here for the tp-cp-dp-pp order: a
  // stage's ranks in order, etp x ep x edp of them.
  for (std::int64_t etp : {1, 2}) {
    strategy s;
    s.tp = 2, s.cp = 2, s.dp = 2, s.pp = 2, s.ep = 4, s.etp = etp, s.zero = 1, s.sequence_parallel = true;
    auto const run = dry_run_mixture(fmt::format("experts{}", etp), s);
    REQUIRE(run.pl.valid);
    REQUIRE(run.listing);
    auto const& pl = run.pl;
    std::int64_t const stage = 8;  // tp x cp x dp ranks of a stage
    auto const ranks = for_each_rank(*run.listing, [&](std::int64_t r, std::string const& line) {
      INFO("etp " << etp << ": " << line);
      auto const base = r / stage * stage, i = r % stage;
      // With etp = tp = 2 the grid's ep coordinate steps over the tp pair.
      auto const e = i % etp, k = i / etp, ep_at = k % s.ep, edp_at = k / s.ep;
      std::vector<std::int64_t> ep_group, grad_group;
      for (std::int64_t j = 0; j < s.ep; ++j) ep_group.push_back(base + e + etp * (j + s.ep * edp_at));
      for (std::int64_t j = 0; j < stage / (etp * s.ep); ++j) grad_group.push_back(base + e + etp * (ep_at + s.ep * j));
      CHECK(members(line, "ep") == ep_group);
      CHECK(members(line, "expert_grad") == grad_group);
      // The planner's layout says the same.
      rank_layout const l(pl.s, 8);
      CHECK(l.expert_group_of(r, s.ep, etp) == ep_group);
      CHECK(l.expert_data_group_of(r, s.ep, etp) == grad_group);
    });
    CHECK(ranks == 16);
  }
}

TEST_CASE("the skeleton's --dry-run expert shard groups are Megatron-Core's intra-instance expert groups") {
  // Hybrid sharding over two optimizer instances of 8 ranks on 2 x 8 GPUs,
  // ep 4: the expert data-parallel group of rank r is {a, a + 4, a + 8,
  // a + 12} (a = r % 4), which Megatron-Core splits into its instances'
  // halves (core_v0.13.0 parallel_state.py:1259-1320): {a, a + 4} on the
  // first node, {a + 8, a + 12} on the second. The same with each expert
  // whole on a tensor-parallel rank (tp 2, etp 1, shard groups of 4 dp
  // coordinates).
  for (std::int64_t tp : {1, 2}) {
    strategy s;
    s.tp = tp, s.dp = 16 / tp, s.ep = 4, s.zero = 1, s.sequence_parallel = tp > 1;
    if (tp > 1) s.etp = 1;
    s.shard = shard_group{shard_group::kind::size, 8 / tp};
    auto const run = dry_run_mixture(fmt::format("hybrid_experts{}", tp), s);
    REQUIRE(run.pl.valid);
    REQUIRE(run.listing);
    auto const& pl = run.pl;
    CHECK(pl.shape->expert_shard.size == 2);
    rank_layout const l(pl.s, 8);
    auto const ranks = for_each_rank(*run.listing, [&](std::int64_t r, std::string const& line) {
      INFO("tp " << tp << ": " << line);
      auto const a = r % 4;
      std::vector<std::int64_t> const grad_group{a, a + 4, a + 8, a + 12};
      std::vector<std::int64_t> const shard = r < 8 ? std::vector<std::int64_t>{a, a + 4} : std::vector<std::int64_t>{a + 8, a + 12};
      CHECK(members(line, "expert_grad") == grad_group);
      CHECK(members(line, "expert_shard") == shard);
      CHECK(l.expert_shard_group_of(r, s.ep, s.expert_tp(), pl.shape->sharding) == shard);
    });
    CHECK(ranks == 16);
  }
}
