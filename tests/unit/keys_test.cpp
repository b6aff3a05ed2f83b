// The key table: every row is complete, aliases name real keys, and every
// key means the same through the text and through the C++ API.
// `DTPLAN_REBASE=1 build/tests/keys_test` rewrites docs/keys.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/ir/keys.hpp"
#include "planner/lower/embedded.hpp"
#include "planner/lower/lower.hpp"
#include "planner/search/search.hpp"
#include "tests/fuzz/extreme_keys.hpp"

using namespace dtplan;
using namespace dtplan::planner;
namespace e = dtplan::planner::edsl;

namespace {

struct lowered {
  std::optional<program> p;
  std::string errors;
};

lowered lower_text(std::string const& text) {
  dsl::source_manager sources;
  auto id = sources.add("k.dtp", text);
  dsl::diagnostics diags;
  lowered out;
  out.p = load(sources, id, {}, diags);
  out.errors = dsl::format(diags, sources);
  return out;
}

std::string const plain =
    "model m : llama3_8b { }\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
    "training { global_batch = 64 }\n";

bool field_matches_block(key_info const& k) {
  switch (k.block) {
    case block_kind::model: return std::holds_alternative<member_access<model>>(k.field);
    case block_kind::gpu: return std::holds_alternative<member_access<gpu>>(k.field);
    case block_kind::cluster: return std::holds_alternative<member_access<cluster>>(k.field);
    case block_kind::training: return std::holds_alternative<member_access<training>>(k.field);
    case block_kind::strategy: return std::holds_alternative<strategy_access>(k.field);
    case block_kind::framework: return std::holds_alternative<member_access<framework>>(k.field);
  }
  return false;
}

// A sample value of each strategy key: as the text writes it, and as the C++
// API sets it. A key missing here fails the test: a new key needs both.
struct sample {
  std::string text;
  std::function<void(e::strategy_builder&)> api;
};

std::map<std::string, std::vector<sample>> const& strategy_samples() {
  using b = e::strategy_builder;
  static std::map<std::string, std::vector<sample>> const samples{
      {"description", {{"\"mine\"", [](b&) {}}}},
      {"dp", {{"4", [](b& s) { s.dp(4); }}, {"{2, 8}", [](b& s) { s.dp({2, 8}); }},
              {"1..16", [](b& s) { s.dp(e::range(1, 16)); }}, {"auto", [](b& s) { s.dp(e::any); }}}},
      {"tp", {{"2", [](b& s) { s.tp(2); }}, {"{1, 2, 4}", [](b& s) { s.tp({1, 2, 4}); }},
              {"1..8", [](b& s) { s.tp(e::range(1, 8)); }}, {"auto", [](b& s) { s.tp(e::any); }}}},
      {"pp", {{"4", [](b& s) { s.pp(4); }}, {"{1, 2}", [](b& s) { s.pp({1, 2}); }},
              {"2..4", [](b& s) { s.pp(e::range(2, 4)); }}, {"auto", [](b& s) { s.pp(e::any); }}}},
      {"cp", {{"2", [](b& s) { s.cp(2); }}, {"{1, 2}", [](b& s) { s.cp({1, 2}); }},
              {"1..2", [](b& s) { s.cp(e::range(1, 2)); }}, {"auto", [](b& s) { s.cp(e::any); }}}},
      {"ep", {{"1", [](b& s) { s.ep(1); }}, {"{1, 2}", [](b& s) { s.ep({1, 2}); }},
              {"1..2", [](b& s) { s.ep(e::range(1, 2)); }}, {"auto", [](b& s) { s.ep(e::any); }}}},
      {"etp", {{"1", [](b& s) { s.etp(1); }}, {"{1, 2}", [](b& s) { s.etp({1, 2}); }},
               {"1..2", [](b& s) { s.etp(e::range(1, 2)); }}, {"auto", [](b& s) { s.etp(e::any); }}}},
      {"zero", {{"3", [](b& s) { s.zero(3); }}, {"{0, 1}", [](b& s) { s.zero({0, 1}); }},
                {"1..3", [](b& s) { s.zero(e::range(1, 3)); }}, {"auto", [](b& s) { s.zero(e::any); }}}},
      {"micro_batch", {{"2", [](b& s) { s.micro_batch(2); }}, {"{1, 4}", [](b& s) { s.micro_batch({1, 4}); }},
                       {"1..4", [](b& s) { s.micro_batch(e::range(1, 4)); }},
                       {"auto", [](b& s) { s.micro_batch(e::any); }}}},
      {"virtual_stages", {{"2", [](b& s) { s.virtual_stages(2); }},
                          {"{1, 2}", [](b& s) { s.virtual_stages({1, 2}); }},
                          {"1..3", [](b& s) { s.virtual_stages(e::range(1, 3)); }},
                          {"auto", [](b& s) { s.virtual_stages(e::any); }}}},
      {"shard", {{"node", [](b& s) { s.shard(e::node); }}, {"8", [](b& s) { s.shard(8); }},
                 {"{all, node, 16}", [](b& s) { s.shard({e::all, e::node, e::ranks(16)}); }},
                 {"auto", [](b& s) { s.shard(e::any); }}}},
      {"checkpoint", {{"ops", [](b& s) { s.checkpoint(e::ops); }},
                      {"{none, full}", [](b& s) { s.checkpoint({e::none, e::full}); }},
                      {"auto", [](b& s) { s.checkpoint(e::any); }}}},
      {"sequence_parallel", {{"false", [](b& s) { s.sequence_parallel(false); }},
                             {"auto", [](b& s) { s.sequence_parallel(e::any); }}}},
      {"order", {{"\"pp-dp-cp-tp\"", [](b& s) { s.order("pp-dp-cp-tp"); }},
                 {"auto", [](b& s) { s.order(e::any); }}}},
  };
  return samples;
}

}  // namespace

TEST_CASE("every key has a name, a domain that fits its block, a default and a meaning") {
  REQUIRE(all_keys().size() > 50);
  std::size_t rows = 0;
  for (std::size_t b = 0; b < block_kind_count; ++b) {
    auto kind = static_cast<block_kind>(b);
    std::set<std::string_view> names;
    for (auto const& k : keys_of(kind)) {
      INFO(name(kind) << "." << k.name);
      ++rows;
      CHECK(k.block == kind);
      CHECK_FALSE(k.name.empty());
      CHECK(names.insert(k.name).second);
      CHECK(find_key(kind, k.name) == &k);
      CHECK_FALSE(k.default_text.empty());
      CHECK_FALSE(k.meaning.empty());
      CHECK(field_matches_block(k));
      CHECK(k.min <= k.max);
      if (k.dom == domain::choice) CHECK(k.choices.size() >= 2);
      if (k.dom == domain::quantity || k.dom == domain::fraction || k.dom == domain::real) {
        CHECK(k.range.low <= k.range.high);
        CHECK(std::isfinite(k.range.high));
        CHECK_FALSE(k.range.high_text.empty());
        if (k.range.low > 0) CHECK_FALSE(k.range.low_text.empty());
      }
      if (k.required) CHECK_FALSE(k.default_value);
      // A strategy's dp defaults to 0: derived by the checker.
      if (k.default_value && kind != block_kind::strategy) CHECK_FALSE(invalid(k, *k.default_value, "the default"));
      if (kind == block_kind::strategy)
        CHECK(k.searchable == (k.name != "description"));
      else
        CHECK_FALSE(k.searchable);
    }
    CHECK(key_names(kind).size() == keys_of(kind).size());
  }
  CHECK(rows == all_keys().size());
}

TEST_CASE("aliases point at real keys and are no key's own name") {
  for (auto const& k : all_keys()) {
    for (auto alias : k.aliases) {
      INFO(name(k.block) << "." << k.name << " alias " << alias);
      CHECK(alias_of(k.block, alias) == &k);
      CHECK_FALSE(find_key(k.block, alias));
      // What a user writes with the alias is lowered as an unknown key with the fix.
      if (k.block != block_kind::strategy) continue;
      auto r = lower_text(plain + "strategy s { " + std::string(alias) + " = 1 }\n");
      CHECK(r.errors.find(fmt::format("unknown key '{}' in strategy 's'; did you mean '{}'?", alias, k.name)) !=
            std::string::npos);
    }
  }
}

TEST_CASE("the table's defaults are the blocks lowering and the C++ API start from") {
  auto check_block = [](block_kind kind, auto const& block) {
    for (auto const& k : keys_of(kind)) {
      if (!k.default_value) continue;
      INFO(name(kind) << "." << k.name);
      CHECK(load(k, block) == k.default_value);
    }
  };
  check_block(block_kind::model, with_defaults<model>());
  check_block(block_kind::gpu, with_defaults<gpu>());
  check_block(block_kind::cluster, with_defaults<cluster>());
  check_block(block_kind::training, with_defaults<training>());
  check_block(block_kind::framework, with_defaults<framework>());
  // The IR's own defaults are the table's: a program built in code without
  // lowering (the benchmarks' runs) behaves as one lowered.
  check_block(block_kind::training, training{});
  check_block(block_kind::framework, framework{});
  auto fixed = strategy_spec{}.fixed();
  CHECK(fixed.dp == 0);  // derived by the checker
  CHECK(fixed.tp == 1);
  CHECK_FALSE(fixed.sequence_parallel);  // follows tp
  CHECK(fixed.order == default_order);
}

TEST_CASE("every choice is named as its IR enum names it") {
  for (auto const& k : all_keys()) {
    // (A set's choices: below.)
    if (k.dom != domain::choice || k.block == block_kind::strategy || k.block == block_kind::framework || k.takes_set)
      continue;
    for (std::size_t i = 0; i < k.choices.size(); ++i) {
      // `auto` is resolved for the GPU (lowering's tests of attention_backend).
      if (k.choices[i] == "auto") continue;
      INFO(name(k.block) << "." << k.name << " = " << k.choices[i]);
      std::string text = plain;
      auto line = fmt::format("{} = {}", k.name, k.choices[i]);
      if (k.block == block_kind::model) text.replace(text.find("{ }"), 3, "{ " + line + " }");
      // fp4 needs fp4 tensor cores: Blackwell's.
      if (line == "precision = fp4") text.replace(text.find("H100_SXM"), 8, "B200");
      if (k.block == block_kind::training) text.replace(text.find("global_batch = 64"), 17, "global_batch = 64; " + line);
      if (k.block == block_kind::gpu || k.block == block_kind::cluster) continue;
      auto r = lower_text(text);
      INFO(r.errors);
      REQUIRE(r.p);
      auto v = k.block == block_kind::model ? load(k, r.p->model) : load(k, r.p->training);
      REQUIRE(v);
      CHECK(*v == key_value(static_cast<std::int64_t>(i)));
      CHECK(shown(k, *v) == k.choices[i]);
    }
  }
  for (std::size_t i = 0; i < 4; ++i) CHECK(name(static_cast<checkpoint_mode>(i)) == find_key(block_kind::strategy, "checkpoint")->choices[i]);
  auto const* modules = find_key(block_kind::training, "recompute_modules");
  REQUIRE(modules);
  REQUIRE(modules->choices.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(name(static_cast<recompute_module>(i)) == modules->choices[i]);
}

TEST_CASE("a framework block has each run-time behaviour row of the training block, the same row") {
  std::size_t behaviours = 0;
  for (auto const& t : keys_of(block_kind::training)) {
    if (!t.behaviour) continue;
    ++behaviours;
    INFO(t.name);
    auto const* f = find_key(block_kind::framework, t.name);
    REQUIRE(f);
    CHECK(f->behaviour);
    CHECK(f->dom == t.dom);
    CHECK(f->choices == t.choices);
    CHECK(f->default_value == t.default_value);
    CHECK(f->default_text == t.default_text);
    CHECK(f->aliases == t.aliases);
    CHECK(f->meaning == t.meaning);
    CHECK(f->range.low == t.range.low);
    CHECK(f->range.high == t.range.high);
    // The framework keeps it in its behaviours, the same member.
    framework fw;
    if (t.default_value) {
      store(*f, fw, *t.default_value);
      CHECK(load(t, fw.behaviours) == t.default_value);
    }
  }
  CHECK(behaviours >= 17);
  for (auto const& f : keys_of(block_kind::framework))
    if (f.behaviour) CHECK(find_key(block_kind::training, f.name));
  // Only a framework's limits and the training's recompute_modules take
  // sets; only attention_backend takes auto.
  for (auto const& k : all_keys()) {
    INFO(name(k.block) << "." << k.name);
    CHECK(k.takes_set == ((k.block == block_kind::framework && (k.name == "zero_stages" || k.name == "checkpoint_modes")) ||
                          (k.block == block_kind::training && k.name == "recompute_modules")));
    CHECK(takes_auto(k) == (k.name == "attention_backend"));
  }
}

TEST_CASE("every strategy key round-trips through lowering and the C++ API to the same IR") {
  auto const& samples = strategy_samples();
  for (auto const& k : keys_of(block_kind::strategy)) {
    INFO(k.name);
    REQUIRE(samples.count(std::string(k.name)));
    for (auto const& s : samples.at(std::string(k.name))) {
      INFO(s.text);
      auto r = lower_text(plain + "strategy s { " + std::string(k.name) + " = " + s.text + " }\n");
      INFO(r.errors);
      REQUIRE(r.p);
      auto const& text = r.p->strategies.at(0);
      auto built = e::strategy("s");
      s.api(built);
      auto const api = built.build();
      auto const* access = std::get_if<strategy_access>(&k.field);
      REQUIRE(access);
      if (!access->load) continue;  // the description: kept nowhere
      auto a = access->load(text), b = access->load(api);
      CHECK(a.f == b.f);
      CHECK(a.values == b.values);
      CHECK(a.low == b.low);
      CHECK(a.high == b.high);
      CHECK(text.is_free() == api.is_free());
      if (!text.is_free()) CHECK(text.fixed() == api.fixed());
      // The checker points at the key as written.
      CHECK(text.key_span(k.name) == a.key);
      CHECK(text.key_span(k.name) != text.where);
      CHECK(api.key_span(k.name) == api.where);
    }
  }
  for (auto const& [key, unused] : samples) CHECK(find_key(block_kind::strategy, key));
}

TEST_CASE("the search's whole space frees every key the table lets it free") {
  auto space = search_everything();
  CHECK(space.is_free());
  for (auto const& k : keys_of(block_kind::strategy)) {
    auto const* access = std::get_if<strategy_access>(&k.field);
    if (!access->read) continue;
    INFO(k.name);
    CHECK(access->read(space).f == (k.searchable ? choice_form::form::any : choice_form::form::unset));
  }
}

TEST_CASE("out of its physical range, a value is an error at the value, in the same words from the C++ API") {
  struct case_ {
    std::string block_text;  // the file with the value
    std::string expected;    // lowering's message
    std::function<void()> api;
    std::string api_expected;
  };
  auto gpu_file = [](std::string const& keys) {
    return "model m : llama3_8b { }\ngpu g : H100_SXM { " + keys +
           " }\ncluster c { nodes = 1; gpus_per_node = 8; gpu = g }\ntraining { global_batch = 64 }\n";
  };
  std::vector<case_> cases{
      {gpu_file("memory = 1000000000 TB"), "'memory' must be at most 1024 TiB, got 1000000000 TB",
       [] { e::gpu("g").memory(bytes(1e21)); }, "'memory' must be at most 1024 TiB, got "},
      {gpu_file("intra_latency = 1.7e308 s"), "'intra_latency' must be at most 10 s, got 1.7e308 s",
       [] { e::gpu("g").intra_latency(seconds(1.7e308)); }, "'intra_latency' must be at most 10 s, got "},
      {gpu_file("intra_node = 1e-300 TB/s"), "'intra_node' must be at least 1 Mbit/s, got 1e-300 TB/s",
       [] { e::gpu("g").intra_node(bandwidth(1e-288)); }, "'intra_node' must be at least 1 Mbit/s, got "},
      {gpu_file("peak_flops = 2000 PFLOP/s"), "'peak_flops' must be at most 1000 PFLOP/s, got 2000 PFLOP/s",
       [] { e::gpu("g").peak_flops(flop_rate(2e18)); }, "'peak_flops' must be at most 1000 PFLOP/s, got "},
      {gpu_file("matmul_efficiency = 0.001"), "'matmul_efficiency' must be at least 1 %, got 0.001",
       [] { e::gpu("g").matmul_efficiency(0.001); }, "'matmul_efficiency' must be at least 1 %, got 0.001"},
      {gpu_file("matmul_efficiency = 0"), "'matmul_efficiency' must be above zero, got 0",
       [] { e::gpu("g").matmul_efficiency(0); }, "'matmul_efficiency' must be above zero, got 0"},
      {gpu_file("reserved = -1 GiB"), "expected an amount of memory for 'reserved', got -1 GiB",
       [] { e::gpu("g").reserved(bytes(-1)); }, "expected an amount of memory for 'reserved', got "},
      {gpu_file("sm_count = 2000000"), "'sm_count' must be between 1 and 1000000, got 2000000",
       [] { e::gpu("g").sm_count(2'000'000); }, "'sm_count' must be between 1 and 1000000, got 2000000"},
      {"model m : llama3_8b { }\ncluster c { nodes = 2; gpus_per_node = 8; gpu = H100_SXM; inter_node = 1000 TB/s }\n"
       "training { global_batch = 64 }\n",
       "'inter_node' must be at most 100 TB/s, got 1000 TB/s", [] { e::cluster("c").inter_node(bandwidth(1e15)); },
       "'inter_node' must be at most 100 TB/s, got "},
      {"model m : llama3_8b { }\ncluster c { nodes = 1; gpus_per_node = 8; gpu = H100_SXM }\n"
       "training { global_batch = 64; base_lr = 1e6 }\n",
       "'base_lr' must be at most 100, got 1e6", [] { e::training().base_lr(1e6); }, "'base_lr' must be at most 100, got "},
  };
  for (auto const& c : cases) {
    INFO(c.block_text);
    auto r = lower_text(c.block_text);
    CHECK_FALSE(r.p);
    CHECK(r.errors.find("error: " + c.expected + "\n") != std::string::npos);
    CHECK(r.errors.find("k.dtp:") == 0);
    try {
      c.api();
      FAIL("the C++ API accepted it");
    } catch (e::error const& x) {
      CHECK(std::string(x.what()).rfind(c.api_expected, 0) == 0);
    }
  }
}

// fuzz_extreme writes the keys extreme_keys() derives from the table: a key
// of the wrong kind would only ever get values lowering rejects, and a
// choice with nothing but the invalid would never reach the planner.
TEST_CASE("fuzz_extreme writes every key of the table, with values of its kind") {
  using dtplan::fuzz::kind;
  auto const keys = dtplan::fuzz::extreme_keys();
  CHECK(keys.size() == all_keys().size());
  std::map<std::string, dtplan::fuzz::key> by_name;
  for (auto const& k : keys) CHECK(by_name.emplace(k.block + "." + k.name, k).second);
  for (auto const& k : all_keys()) CHECK(by_name.count(name(k.block) + "." + std::string(k.name)));
  auto of = [&](std::string const& key) {
    INFO(key);
    REQUIRE(by_name.count(key));
    return by_name.at(key);
  };
  auto has = [](dtplan::fuzz::key const& k, std::string const& value) {
    return std::find(k.choices.begin(), k.choices.end(), value) != k.choices.end();
  };
  CHECK(of("model.layers").k == kind::count);
  CHECK(of("gpu.memory").k == kind::bytes);
  CHECK(of("cluster.inter_node").k == kind::bandwidth);
  CHECK(of("gpu.peak_flops").k == kind::rate);
  CHECK(of("gpu.intra_latency").k == kind::time);
  CHECK(of("gpu.matmul_efficiency").k == kind::fraction);
  CHECK(of("training.base_lr").k == kind::real);
  CHECK(of("framework.nvls").k == kind::flag);
  CHECK(of("strategy.description").k == kind::text);
  CHECK(of("model.mlp").k == kind::choice);
  CHECK(of("model.mlp").choices == std::vector<std::string>{"gelu", "swiglu", "nonesuch"});
  // A strategy frees its keys with auto; other blocks' choices take it only as a choice.
  CHECK(has(of("strategy.checkpoint"), "auto"));
  CHECK(has(of("strategy.order"), "auto"));
  CHECK_FALSE(has(of("training.grad_sync"), "auto"));
  // The keys that take a set get sets, in and out of their domain.
  CHECK(of("framework.zero_stages").k == kind::choice);
  for (auto set : {"{0}", "{0, 1, 2, 3}", "{3, 2, 1, 0}", "{}", "{0, 0}", "{4}"})
    CHECK(has(of("framework.zero_stages"), set));
  CHECK(has(of("framework.checkpoint_modes"), "{none, selective, full, ops}"));
  CHECK(has(of("framework.checkpoint_modes"), "{nonesuch}"));
  CHECK(has(of("cluster.gpu"), "cgp0"));
  CHECK(has(of("training.framework"), "f"));
  // A key whose values the table does not list (a name, a shard group) needs
  // them in extra_values(), and each of those is a key of the table.
  for (auto const& k : keys) {
    if (k.k != kind::choice) continue;
    INFO(k.block << "." << k.name);
    CHECK(std::count_if(k.choices.begin(), k.choices.end(),
                        [](auto const& c) { return c != "nonesuch" && c != "auto"; }) > 0);
  }
  for (auto const& [key, values] : dtplan::fuzz::extra_values()) {
    INFO(key.first << "." << key.second);
    auto block = block_kind_of(key.first);
    REQUIRE(block);
    CHECK(find_key(*block, key.second));
  }
}

TEST_CASE("docs/keys.md is the table's reference") {
  auto path = std::string(DTPLAN_SOURCE_DIR) + "/docs/keys.md";
  auto expected = keys_reference();
  if (auto const* rebase = std::getenv("DTPLAN_REBASE"); rebase && std::string(rebase) == "1") {
    std::ofstream(path, std::ios::binary) << expected;
    return;
  }
  auto actual = dsl::read_file(path);
  REQUIRE(actual);
  CHECK(*actual == expected);
}
