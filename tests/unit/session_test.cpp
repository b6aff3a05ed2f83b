#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <system_error>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"
#include "planner/lower/lower.hpp"
#include "planner/session.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

// plans/7b_2node.dtp's model and cluster with the given strategy blocks.
std::string seven_b(std::string const& strategies) {
  return "model m : llama2_7b { }\n"
         "cluster c {\n  nodes = 2\n  gpus_per_node = 8\n  gpu = H100_SXM\n  inter_node = 100 Gbit/s\n}\n"
         "training { global_batch = 256 }\n" +
         strategies;
}

std::string const current = "strategy current { dp = 16\n zero = 1\n checkpoint = selective\n micro_batch = 1 }\n";
std::string const searched = "strategy search { tp = {1, 2}\n pp = 1..2\n zero = auto\n micro_batch = {1, 2} }\n";

struct loaded {
  dsl::source_manager sources;
  program p;
};

loaded load_text(std::string const& text) {
  loaded l;
  dsl::diagnostics diags;
  auto id = l.sources.add("test.dtp", text);
  auto p = load(l.sources, id, {}, diags);
  INFO(dsl::format(diags, l.sources));
  REQUIRE(p);
  l.p = std::move(*p);
  return l;
}

session_options options(bool optimize = false) {
  session_options o;
  o.optimize = optimize;
  o.search.threads = 2;
  return o;
}

// run_plan with --optimize, --top `top` and --strategy `name` when given.
session_outcome optimized(program const& p, int top, std::optional<std::string> name = {}) {
  auto o = options(true);
  o.search.top = top;
  o.strategy = std::move(name);
  dsl::diagnostics diags;
  auto out = run_plan(p, o, diags);
  REQUIRE(out);
  return std::move(*out);
}

// Search stand-ins: threads that cannot start, then (or never) one that can.
int calls = 0;
search_result no_threads_beyond_one(program const& p, strategy_spec const& s, cost_model const& m,
                                    search_options const& o) {
  ++calls;
  if (o.threads != 1) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
  return search(p, s, m, o);
}
search_result no_threads(program const&, strategy_spec const&, cost_model const&, search_options const&) {
  ++calls;
  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
}

}  // namespace

TEST_CASE("session: without --optimize the fixed strategies are checked and the free ones named") {
  auto l = load_text(seven_b(current + searched));
  dsl::diagnostics diags;
  auto out = run_plan(l.p, options(), diags);
  REQUIRE(out);
  REQUIRE(out->plans.size() == 1);
  CHECK(out->plans[0].name == "current");
  CHECK_FALSE(out->plans[0].from_search);
  CHECK_FALSE(out->stats);
  CHECK(out->chosen == 0u);
  CHECK(out->any_valid());
  REQUIRE(diags.list().size() == 1);
  CHECK(diags.list()[0].level == dsl::severity::note);
  CHECK(diags.list()[0].message == "strategy 'search' has free keys: --optimize searches it");
  CHECK(dsl::location(diags.list()[0].where, l.sources) == "test.dtp:13:1");
}

TEST_CASE("session: --strategy must name a strategy, and a free one needs --optimize") {
  auto l = load_text(seven_b(current + searched));
  auto o = options();
  o.strategy = "curent";
  dsl::diagnostics diags;
  CHECK_FALSE(select_strategies(l.p, o, diags));
  REQUIRE(diags.list().size() == 1);
  CHECK_FALSE(diags.list()[0].where.valid());
  CHECK(diags.list()[0].message == "no strategy 'curent' in 'test.dtp'; did you mean 'current'?");

  o.strategy = "search";
  dsl::diagnostics free_diags;
  CHECK_FALSE(run_plan(l.p, o, free_diags));
  REQUIRE(free_diags.list().size() == 1);
  CHECK(free_diags.list()[0].message == "strategy 'search' has free keys: --optimize searches it");

  o.optimize = true;
  dsl::diagnostics ok;
  auto chosen = select_strategies(l.p, o, ok);
  REQUIRE(chosen);
  CHECK(chosen->fixed.empty());
  REQUIRE(chosen->free.size() == 1);
  CHECK(chosen->free[0]->name == "search");

  auto only_free = load_text(seven_b(searched));
  dsl::diagnostics none;
  CHECK_FALSE(run_plan(only_free.p, options(), none));
  REQUIRE(none.list().size() == 1);
  CHECK(none.list()[0].message == "'test.dtp' has no fixed strategy to check; --optimize searches its free strategies");
}

TEST_CASE("session: --optimize merges the file's plans with the search's and chooses the best found") {
  auto l = load_text(seven_b(current + searched));
  auto out = optimized(l.p, 3);
  REQUIRE(out.plans.size() == 4);
  CHECK(out.plans[0].name == "current");
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(out.plans[i].from_search);
    CHECK(out.plans[i].name == "search#" + std::to_string(i));
  }
  REQUIRE(out.stats);
  CHECK(out.stats->candidates > 0);
  CHECK(out.stats->valid > 0);
  CHECK(out.chosen == 1u);
  CHECK(out.explanations.empty());
}

TEST_CASE("session: the searches of several free strategies are summed, each space's results kept") {
  auto l = load_text(seven_b(searched + "strategy other { tp = 8\n pp = {1, 2}\n zero = {1, 2} }\n"));
  auto out = optimized(l.p, 2);
  REQUIRE(out.plans.size() == 4);
  CHECK(out.plans[0].name == "search#1");
  CHECK(out.plans[2].name == "other#1");
  auto a = optimized(l.p, 2, "search");
  auto b = optimized(l.p, 2, "other");
  REQUIRE((out.stats && a.stats && b.stats));
  CHECK(out.stats->candidates == a.stats->candidates + b.stats->candidates);
  CHECK(out.stats->valid == a.stats->valid + b.stats->valid);
}

TEST_CASE("session: a named fixed strategy is the plan chosen, also with --optimize") {
  auto l = load_text(seven_b(current + searched));
  auto o = options(true);
  o.strategy = "current";
  o.search.top = 2;
  o.search.explain = true;
  dsl::diagnostics diags;
  auto out = run_plan(l.p, o, diags);
  REQUIRE(out);
  // No free strategy was selected: the whole space is searched, `current` is its baseline.
  REQUIRE(out->plans.size() == 3);
  CHECK(out->plans[1].from_search);
  CHECK(out->chosen == 0u);
  // --explain's scaling view is the chosen plan's.
  CHECK_FALSE(out->explanations.empty());

  // Named but invalid: nothing to emit, though the search found valid plans.
  auto bad = load_text(seven_b("strategy current { dp = 16\n zero = 0\n micro_batch = 16 }\n"));
  dsl::diagnostics bad_diags;
  auto none = run_plan(bad.p, o, bad_diags);
  REQUIRE(none);
  CHECK_FALSE(none->plans[0].valid);
  CHECK_FALSE(none->chosen);
  CHECK(none->any_valid());
  CHECK(bad_diags.has_errors());
}

TEST_CASE("session: a space without a valid plan is an error at its strategy, pointing to --explain") {
  auto l = load_text(seven_b("strategy tight { tp = 1\n pp = 1\n zero = 0\n checkpoint = none\n micro_batch = {32, 16} }\n"));
  dsl::diagnostics diags;
  auto out = run_plan(l.p, options(true), diags);
  REQUIRE(out);
  CHECK(out->plans.empty());
  CHECK_FALSE(out->chosen);
  CHECK_FALSE(out->any_valid());
  REQUIRE(diags.list().size() == 1);
  auto const& d = diags.list()[0];
  CHECK(d.message == "no valid plan in the space of strategy 'tight' (2 candidates)");
  CHECK(dsl::location(d.where, l.sources) == "test.dtp:9:1");
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].message == "--explain says which regions were rejected and why");

  auto o = options(true);
  o.search.explain = true;
  dsl::diagnostics explained;
  REQUIRE(run_plan(l.p, o, explained));
  REQUIRE(explained.list().size() == 1);
  CHECK(explained.list()[0].notes.empty());
}

TEST_CASE("session: search threads that cannot start fall back to one thread, or fail cleanly") {
  auto l = load_text(seven_b(current + searched));
  auto o = options(true);
  o.search.threads = 8;
  o.run_search = &no_threads_beyond_one;
  calls = 0;
  dsl::diagnostics diags;
  auto out = run_plan(l.p, o, diags);
  REQUIRE(out);
  CHECK(calls == 2);
  REQUIRE(diags.list().size() == 1);
  CHECK(diags.list()[0].level == dsl::severity::warning);
  CHECK(diags.list()[0].message ==
        "cannot start the search's threads (Resource temporarily unavailable); searching with one thread");
  dsl::diagnostics plain;
  auto reference = run_plan(l.p, options(true), plain);
  REQUIRE(reference);
  REQUIRE(out->plans.size() == reference->plans.size());
  for (std::size_t i = 0; i < out->plans.size(); ++i) CHECK(out->plans[i].s == reference->plans[i].s);

  o.run_search = &no_threads;
  calls = 0;
  dsl::diagnostics failed;
  CHECK_FALSE(run_plan(l.p, o, failed));
  CHECK(calls == 2);
  REQUIRE(failed.list().size() == 2);
  CHECK(failed.list()[1].level == dsl::severity::error);
  CHECK(failed.list()[1].message == "cannot start a thread for the search: Resource temporarily unavailable");
}
