#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "planner/model/pipeline_schedule.hpp"

using namespace dtplan::planner;

namespace {

// A stage's ops as "F3" (forward of micro-batch 3) or, interleaved,
// "F3.1" (chunk 1), space separated.
std::string order(pipeline_schedule const& s, std::int64_t stage) {
  std::string out;
  for (auto const& o : s.ops[static_cast<std::size_t>(stage)]) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}{}", o.pass == pipe_pass::forward ? 'F' : 'B', o.micro_batch);
    if (s.virtual_stages > 1) out += fmt::format(".{}", o.chunk);
  }
  return out;
}

// Runs every stage's issue order under NCCL's rules: a group of sends and
// receives on a stage's point-to-point stream starts once the ops whose
// results it sends have run and its previous group has finished; a
// transfer completes when the groups holding both of its ends have started;
// an op runs once its receive has completed and the stage's previous op
// has run. True when everything completes (no deadlock).
bool runs_to_completion(pipeline_schedule const& s) {
  auto const pp = s.stages;
  std::vector<std::vector<pipe_step>> steps;
  for (std::int64_t st = 0; st < pp; ++st) steps.push_back(issue_order(s, st));
  // Per stage: the next compute step and the next (or current) transfer group.
  std::vector<std::size_t> next_op(static_cast<std::size_t>(pp), 0), next_group(static_cast<std::size_t>(pp), 0);
  std::vector<bool> started(static_cast<std::size_t>(pp), false);
  std::vector<std::vector<bool>> op_done(static_cast<std::size_t>(pp)), recv_done(static_cast<std::size_t>(pp));
  for (std::int64_t st = 0; st < pp; ++st) {
    op_done[static_cast<std::size_t>(st)].assign(s.ops[static_cast<std::size_t>(st)].size(), false);
    recv_done[static_cast<std::size_t>(st)].assign(s.ops[static_cast<std::size_t>(st)].size(), false);
  }
  auto const skip_to = [&](std::int64_t st, std::size_t& i, bool compute) {
    auto const& list = steps[static_cast<std::size_t>(st)];
    while (i < list.size() && list[i].compute != compute) ++i;
  };
  // The message a transfer moves: (sender, pass, micro-batch, producer's model chunk).
  auto const message = [&](std::int64_t st, pipe_transfer const& t) {
    auto const& o = s.ops[static_cast<std::size_t>(st)][static_cast<std::size_t>(t.op)];
    auto const g = o.chunk * pp + st;
    auto const producer = t.send ? g : (o.pass == pipe_pass::forward ? g - 1 : g + 1);
    return std::tuple{t.send ? st : t.peer, o.pass == pipe_pass::forward, o.micro_batch, producer};
  };
  std::set<std::tuple<std::int64_t, bool, std::int64_t, std::int64_t>> moved;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t st = 0; st < pp; ++st) {
      auto const u = static_cast<std::size_t>(st);
      auto& g = next_group[u];
      skip_to(st, g, false);
      if (g < steps[u].size() && !started[u]) {
        bool ready = true;
        for (auto const& t : steps[u][g].transfers) ready = ready && (!t.send || op_done[u][static_cast<std::size_t>(t.op)]);
        if (ready) started[u] = true, progress = true;
      }
    }
    // A transfer completes once both of its ends sit in started groups; a
    // group finishes when all of its transfers have completed.
    std::map<std::tuple<std::int64_t, bool, std::int64_t, std::int64_t>, int> posted;
    for (std::int64_t st = 0; st < pp; ++st)
      if (started[static_cast<std::size_t>(st)])
        for (auto const& t : steps[static_cast<std::size_t>(st)][next_group[static_cast<std::size_t>(st)]].transfers)
          ++posted[message(st, t)];
    for (auto const& [m, ends] : posted)
      if (ends == 2) moved.insert(m);
    for (std::int64_t st = 0; st < pp; ++st) {
      auto const u = static_cast<std::size_t>(st);
      if (!started[u]) continue;
      bool complete = true;
      for (auto const& t : steps[u][next_group[u]].transfers) complete = complete && moved.count(message(st, t)) == 1;
      if (!complete) continue;
      for (auto const& t : steps[u][next_group[u]].transfers)
        if (!t.send) recv_done[u][static_cast<std::size_t>(t.op)] = true;
      started[u] = false;
      ++next_group[u];
      progress = true;
    }
    for (std::int64_t st = 0; st < pp; ++st) {
      auto const u = static_cast<std::size_t>(st);
      auto& i = next_op[u];
      for (skip_to(st, i, true); i < steps[u].size(); ++i, skip_to(st, i, true)) {
        auto const op = static_cast<std::size_t>(steps[u][i].op);
        if (s.ops[u][op].recv_from >= 0 && !recv_done[u][op]) break;
        op_done[u][op] = true;
        progress = true;
      }
    }
  }
  for (std::int64_t st = 0; st < pp; ++st) {
    auto const u = static_cast<std::size_t>(st);
    if (next_op[u] < steps[u].size() || next_group[u] < steps[u].size()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("1F1B over 4 stages and 8 micro-batches, as Narayanan et al. draw it (figure 3)") {
  auto const s = one_f_one_b(4, 1, 8);
  CHECK(order(s, 0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(order(s, 1) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  CHECK(order(s, 3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  CHECK(s.warmup(0) == 4);  // 3 warm-up forwards, then the first of the steady 1F1B pairs
  CHECK(s.warmup(3) == 1);
  CHECK(s.cooldown(0) == 4);
  CHECK(s.slots() == 16);
  // Forward 1 and backward 2 units: (8 + 4 - 1) x 3 units, of which 3 x 3 idle.
  CHECK(s.makespan == 33);
  CHECK(s.idle == 9);
  CHECK(s.bubble_pairs() == 3);
  CHECK(s.bubble_micro_batches() == 3.0);
  // Activations go to the next stage, their gradients to the previous one.
  auto const& first = s.ops[0];
  CHECK((first[0].recv_from == -1 && first[0].send_to == 1));
  CHECK((first[4].pass == pipe_pass::backward && first[4].recv_from == 1 && first[4].send_to == -1));
  auto const& last = s.ops[3];
  CHECK((last[0].recv_from == 2 && last[0].send_to == -1));
  CHECK((last[1].pass == pipe_pass::backward && last[1].recv_from == -1 && last[1].send_to == 2));
  CHECK(s.forward_sends(0) == 8);
  CHECK(s.backward_sends(0) == 0);
  CHECK(s.forward_sends(1) == 8);
  CHECK(s.backward_sends(1) == 8);
  CHECK(s.forward_sends(3) == 0);
  CHECK(s.backward_sends(3) == 8);
  CHECK(s.sends() == 2 * 8 * 3);
  // Stage 1's first backward waits for stage 2's, which ends at 3 + 1 + 2 x 2.
  auto const& b0 = s.ops[1][3];
  CHECK((b0.pass == pipe_pass::backward && b0.micro_batch == 0));
  CHECK(b0.recv_time == 8);
  CHECK(b0.start == 8);
}

TEST_CASE("interleaved 1F1B over 4 stages of 2 chunks and 8 micro-batches (figure 4, Megatron's order)") {
  auto const s = one_f_one_b(4, 2, 8);
  // Stage 0 warms up with (4 - 0 - 1) x 2 + (2 - 1) x 4 = 10 chunk forwards,
  // micro-batches in groups of 4 through chunk 0 and then chunk 1.
  CHECK(order(s, 0) ==
        "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 "
        "F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 "
        "B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
  CHECK(s.warmup(0) == 11);  // 10, then the first forward of the steady phase
  CHECK(s.warmup(3) == 5);   // (2 - 1) x 4 = 4, plus one
  CHECK(s.slots() == 32);
  CHECK(s.idle == 9);  // (4 - 1) x (1 + 2): the bubble of one chunk per stage boundary
  CHECK(s.bubble_micro_batches() == 1.5);  // (pp - 1) / v
  // Chunk 0 of the last stage feeds chunk 1 of stage 0 (model chunk 3 -> 4),
  // and the gradients go back the same way round.
  auto const& last = s.ops[3];
  for (auto const& o : last) {
    if (o.pass == pipe_pass::forward) CHECK(o.send_to == (o.chunk == 0 ? 0 : -1));
    if (o.pass == pipe_pass::backward) CHECK(o.send_to == 2);
    if (o.pass == pipe_pass::backward) CHECK(o.recv_from == (o.chunk == 0 ? 0 : -1));
  }
  for (auto const& o : s.ops[0]) {
    if (o.pass == pipe_pass::forward) CHECK(o.recv_from == (o.chunk == 0 ? -1 : 3));
    if (o.pass == pipe_pass::backward) CHECK(o.send_to == (o.chunk == 0 ? -1 : 3));
  }
  CHECK(s.forward_sends(0) == 16);
  CHECK(s.backward_sends(0) == 8);
  CHECK(s.forward_sends(3) == 8);
  CHECK(s.backward_sends(3) == 16);
  CHECK(s.sends() == 2 * 8 * (4 * 2 - 1));
}

TEST_CASE("fewer micro-batches than stages, one stage, and micro-batches equal to the stages") {
  auto const short_pipe = one_f_one_b(4, 1, 2);
  CHECK(order(short_pipe, 0) == "F0 F1 B0 B1");
  CHECK(short_pipe.idle == 9);
  auto const one = one_f_one_b(1, 1, 3);
  CHECK(order(one, 0) == "F0 B0 F1 B1 F2 B2");
  CHECK(one.idle == 0);
  CHECK(one.sends() == 0);
  // Megatron runs every chunk forward first when there are only pp micro-batches.
  auto const square = one_f_one_b(2, 2, 2);
  CHECK(order(square, 1) == "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
  CHECK(square.idle == 3);
  CHECK_THROWS_AS(one_f_one_b(4, 2, 6), std::invalid_argument);
  CHECK_THROWS_AS(one_f_one_b(0, 1, 1), std::invalid_argument);
}

TEST_CASE("the bubble is (pp - 1) / v micro-batches and every send meets a receive, for many pipelines") {
  for (std::int64_t pp : {1, 2, 3, 4, 8})
    for (std::int64_t v : {1, 2, 3, 5})
      for (std::int64_t m : {1, 2, 4, 6, 8, 16, 24}) {
        if (v > 1 && (pp == 1 || m % pp != 0)) continue;
        INFO(fmt::format("pp {} v {} m {}", pp, v, m));
        auto const s = one_f_one_b(pp, v, m);
        CHECK(s.bubble_micro_batches() == Approx(static_cast<double>(pp - 1) / static_cast<double>(v)));
        std::int64_t sends = 0, recvs = 0;
        for (std::int64_t st = 0; st < pp; ++st) {
          CHECK(static_cast<std::int64_t>(s.ops[static_cast<std::size_t>(st)].size()) == s.slots());
          CHECK(s.warmup(st) + s.cooldown(st) <= s.slots());
          for (auto const& o : s.ops[static_cast<std::size_t>(st)]) {
            if (o.send_to >= 0) {
              ++sends;
              auto const next = o.pass == pipe_pass::forward ? (st + 1) % pp : (st + pp - 1) % pp;
              CHECK(o.send_to == next);
            }
            if (o.recv_from >= 0) ++recvs;
            CHECK(o.start >= o.recv_time);
          }
        }
        CHECK(sends == s.sends());
        CHECK(recvs == sends);
        CHECK(sends == 2 * m * (pp * v - 1));
        CHECK(runs_to_completion(s));
      }
}

TEST_CASE("the issue order: receives before their op, sends after it, both ends of a message in one order") {
  auto const s = one_f_one_b(4, 2, 8);
  for (std::int64_t st = 0; st < 4; ++st) {
    auto const steps = issue_order(s, st);
    std::vector<int> seen(s.ops[static_cast<std::size_t>(st)].size(), 0);
    std::int64_t computes = 0;
    std::int64_t last_time = -1;
    for (auto const& step : steps) {
      if (step.compute) {
        auto const op = static_cast<std::size_t>(step.op);
        CHECK((seen[op] & 1) == (s.ops[static_cast<std::size_t>(st)][op].recv_from >= 0 ? 1 : 0));
        seen[op] |= 2;
        ++computes;
        continue;
      }
      REQUIRE_FALSE(step.transfers.empty());
      for (auto const& t : step.transfers) {
        CHECK(t.time == step.transfers.front().time);
        CHECK(t.time > last_time);
        auto const op = static_cast<std::size_t>(t.op);
        if (t.send) CHECK((seen[op] & 2) == 2);
        else seen[op] |= 1;
      }
      last_time = step.transfers.front().time;
    }
    CHECK(computes == s.slots());
  }
}

// Found by fuzzing (docs/research/fuzzing.md): the skeleton of a plan of
// 10^9 micro-batches per step built its whole schedule (256 GB of ops) to
// print a few counts. counts_of gives them in closed form.
TEST_CASE("counts_of equals the schedule's own figures, for every pipeline up to 12 stages") {
  int compared = 0;
  for (std::int64_t pp = 1; pp <= 12; ++pp)
    for (std::int64_t v = 1; v <= 6; ++v)
      for (std::int64_t m = 1; m <= 60; ++m) {
        if (v > 1 && (pp == 1 || m % pp != 0)) continue;
        INFO(fmt::format("pp {} v {} m {}", pp, v, m));
        auto const s = one_f_one_b(pp, v, m);
        auto const c = counts_of(pp, v, m);
        REQUIRE(c.stages == pp);
        REQUIRE(c.virtual_stages == v);
        REQUIRE(c.micro_batches == m);
        REQUIRE(c.slots == s.slots());
        REQUIRE(c.makespan == s.makespan);
        REQUIRE(c.idle == s.idle);
        REQUIRE(c.bubble_pairs == s.bubble_pairs());
        REQUIRE(c.sends == s.sends());
        for (std::int64_t st = 0; st < pp; ++st) {
          auto const i = static_cast<std::size_t>(st);
          REQUIRE(c.warmup[i] == s.warmup(st));
          REQUIRE(c.cooldown[i] == s.cooldown(st));
          REQUIRE(c.forward_sends[i] == s.forward_sends(st));
          REQUIRE(c.backward_sends[i] == s.backward_sends(st));
        }
        ++compared;
      }
  CHECK(compared == 1340);
}

TEST_CASE("counts_of a billion micro-batches, and of more ops than 64 bits count, without building them") {
  auto const c = counts_of(2, 1, 1'000'000'000);
  CHECK(c.slots == 2'000'000'000);
  CHECK(c.makespan == 3'000'000'003);
  CHECK(c.idle == 3);
  CHECK(c.sends == 2 * 1'000'000'000);
  CHECK(c.warmup == std::vector<std::int64_t>{2, 1});
  CHECK(c.cooldown == std::vector<std::int64_t>{2, 1});
  // 2^62 micro-batches of 4 chunks: the figures saturate at 2^63 - 1.
  auto const huge = counts_of(2, 4, std::int64_t{1} << 62);
  CHECK(huge.slots == std::numeric_limits<std::int64_t>::max());
  CHECK(huge.makespan == std::numeric_limits<std::int64_t>::max());
  CHECK(huge.sends == std::numeric_limits<std::int64_t>::max());
  CHECK(huge.idle == 3);
  CHECK_THROWS_AS(counts_of(2, 2, 3), std::invalid_argument);
}
