#include "planner/model/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "planner/ir/counts.hpp"

namespace dtplan::planner {

namespace {

// The schedule's own time: a chunk's backward costs twice its forward, as
// for a transformer layer without recomputation. Any positive costs give a
// valid order; these make the listing read like the usual diagrams.
constexpr std::int64_t forward_cost = 1;
constexpr std::int64_t backward_cost = 2;

// Chunk forwards a stage runs before its steady state (one forward, one
// backward): Megatron's warm-up, of `total` chunk forwards in all.
std::int64_t warmup_forwards(std::int64_t pp, std::int64_t v, std::int64_t m, std::int64_t stage, std::int64_t total) {
  if (v == 1) return std::min(pp - stage - 1, m);
  if (m == pp) return total;  // Megatron: every chunk forward first when there are only `pp` micro-batches
  return std::min(saturating_sum(saturating_product({pp - stage - 1, 2}), saturating_product({v - 1, pp})), total);
}

void check_arguments(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches) {
  if (stages < 1 || virtual_stages < 1 || micro_batches < 1)
    throw std::invalid_argument("a pipeline schedule needs at least one stage, chunk and micro-batch");
  if (virtual_stages > 1 && micro_batches % stages != 0)
    throw std::invalid_argument("an interleaved schedule needs micro-batches in whole groups of the stages");
}

// The ops of one stage in Megatron's order, without peers or times.
std::vector<pipe_op> stage_order(std::int64_t pp, std::int64_t v, std::int64_t m, std::int64_t stage) {
  std::int64_t const total = m * v;
  std::int64_t const warmup = warmup_forwards(pp, v, m, stage, total);
  // The k-th chunk forward (backward) of the stage: micro-batches in groups
  // of pp, each group through chunk 0, 1, ... (backward: the last chunk first).
  auto const op = [&](pipe_pass pass, std::int64_t k) {
    pipe_op o;
    o.pass = pass;
    o.micro_batch = (k / (pp * v)) * pp + k % pp;
    auto const c = (k % (pp * v)) / pp;
    o.chunk = pass == pipe_pass::forward ? c : v - 1 - c;
    return o;
  };
  std::vector<pipe_op> out;
  out.reserve(static_cast<std::size_t>(2 * total));
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back(op(pipe_pass::forward, k));
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(op(pipe_pass::forward, k + warmup));
    out.push_back(op(pipe_pass::backward, k));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(op(pipe_pass::backward, k));
  return out;
}

// Runs the ops in their stages' orders, each as soon as its input exists,
// to give every op its start and end and every receive its time.
void simulate(pipeline_schedule& s) {
  auto const pp = s.stages;
  auto const last = pp * s.virtual_stages - 1;
  // The end of (pass, micro-batch, model chunk), -1 until it has run.
  std::vector<std::int64_t> done(static_cast<std::size_t>(2 * s.micro_batches * (last + 1)), -1);
  auto const at = [&](pipe_pass pass, std::int64_t mb, std::int64_t g) -> std::int64_t& {
    return done[static_cast<std::size_t>(((pass == pipe_pass::forward ? 0 : 1) * s.micro_batches + mb) * (last + 1) + g)];
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<std::int64_t> clock(static_cast<std::size_t>(pp), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t st = 0; st < pp; ++st) {
      auto& ops = s.ops[static_cast<std::size_t>(st)];
      auto& i = next[static_cast<std::size_t>(st)];
      for (; i < ops.size(); ++i) {
        auto& o = ops[i];
        auto const g = o.chunk * pp + st;
        std::int64_t ready = 0;
        if (o.pass == pipe_pass::forward) {
          if (g > 0) {
            ready = at(pipe_pass::forward, o.micro_batch, g - 1);
            o.recv_from = (st + pp - 1) % pp;
          }
          o.send_to = g < last ? (st + 1) % pp : -1;
        } else {
          // The last chunk's backward starts from its own forward's loss.
          if (g < last) {
            ready = at(pipe_pass::backward, o.micro_batch, g + 1);
            o.recv_from = (st + 1) % pp;
          } else {
            ready = at(pipe_pass::forward, o.micro_batch, g);
          }
          o.send_to = g > 0 ? (st + pp - 1) % pp : -1;
        }
        if (ready < 0) break;
        o.recv_time = o.recv_from >= 0 ? ready : 0;
        o.start = std::max(clock[static_cast<std::size_t>(st)], ready);
        o.end = o.start + (o.pass == pipe_pass::forward ? forward_cost : backward_cost);
        clock[static_cast<std::size_t>(st)] = o.end;
        at(o.pass, o.micro_batch, g) = o.end;
        progress = true;
      }
    }
  }
  for (std::int64_t st = 0; st < pp; ++st)
    if (next[static_cast<std::size_t>(st)] != s.ops[static_cast<std::size_t>(st)].size())
      throw std::logic_error("pipeline schedule deadlocks");  // a bug in stage_order
  s.makespan = *std::max_element(clock.begin(), clock.end());
  s.idle = s.makespan - s.micro_batches * s.virtual_stages * (forward_cost + backward_cost);
}

}  // namespace

std::int64_t pipeline_schedule::warmup(std::int64_t stage) const {
  std::int64_t n = 0;
  for (auto const& o : ops[static_cast<std::size_t>(stage)]) {
    if (o.pass == pipe_pass::backward) break;
    ++n;
  }
  return n;
}

std::int64_t pipeline_schedule::cooldown(std::int64_t stage) const {
  auto const& list = ops[static_cast<std::size_t>(stage)];
  std::int64_t n = 0;
  for (auto it = list.rbegin(); it != list.rend() && it->pass == pipe_pass::backward; ++it) ++n;
  return n;
}

std::int64_t pipeline_schedule::forward_sends(std::int64_t stage) const {
  auto const& list = ops[static_cast<std::size_t>(stage)];
  return std::count_if(list.begin(), list.end(),
                       [](pipe_op const& o) { return o.pass == pipe_pass::forward && o.send_to >= 0; });
}

std::int64_t pipeline_schedule::backward_sends(std::int64_t stage) const {
  auto const& list = ops[static_cast<std::size_t>(stage)];
  return std::count_if(list.begin(), list.end(),
                       [](pipe_op const& o) { return o.pass == pipe_pass::backward && o.send_to >= 0; });
}

std::int64_t pipeline_schedule::sends() const {
  std::int64_t n = 0;
  for (std::int64_t st = 0; st < stages; ++st) n += forward_sends(st) + backward_sends(st);
  return n;
}

pipeline_schedule one_f_one_b(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches) {
  check_arguments(stages, virtual_stages, micro_batches);
  pipeline_schedule s;
  s.stages = stages;
  s.virtual_stages = virtual_stages;
  s.micro_batches = micro_batches;
  for (std::int64_t st = 0; st < stages; ++st) s.ops.push_back(stage_order(stages, virtual_stages, micro_batches, st));
  simulate(s);
  return s;
}

schedule_counts counts_of(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches) {
  check_arguments(stages, virtual_stages, micro_batches);
  auto const pp = stages, v = virtual_stages, m = micro_batches;
  schedule_counts c;
  c.stages = pp;
  c.virtual_stages = v;
  c.micro_batches = m;
  // Each stage runs a forward and a backward of each of its chunks for each
  // micro-batch, 1 + 2 time units; every stage waits for the pipeline to
  // fill and drain, 3 (pp - 1) units, interleaved or not.
  auto const total = saturating_product({m, v});
  c.slots = saturating_product({2, total});
  c.idle = 3 * (pp - 1);
  c.makespan = saturating_sum(saturating_product({3, total}), c.idle);
  c.bubble_pairs = pp - 1;
  for (std::int64_t st = 0; st < pp; ++st) {
    // The warm-up forwards, then the steady state opens with a forward and
    // closes with a backward (none when the warm-up is every forward).
    auto const w = warmup_forwards(pp, v, m, st, total);
    c.warmup.push_back(w < total ? w + 1 : total);
    c.cooldown.push_back(w < total ? w + 1 : total);
    // Every forward sends but the last model chunk's (the last stage's
    // last chunk), every backward but the first chunk's (stage 0's chunk 0).
    c.forward_sends.push_back(total - (st == pp - 1 ? m : 0));
    c.backward_sends.push_back(total - (st == 0 ? m : 0));
    c.sends = saturating_sum(c.sends, saturating_sum(c.forward_sends.back(), c.backward_sends.back()));
  }
  return c;
}

std::vector<pipe_step> issue_order(pipeline_schedule const& s, std::int64_t stage) {
  auto const pp = s.stages;
  auto const& ops = s.ops[static_cast<std::size_t>(stage)];
  // (time, kind, pass, micro-batch, producer's model chunk, op): kind 0 a
  // transfer, 1 an op, so the receives an op needs come before it. A
  // message has the same key at both of its ends.
  using key = std::tuple<std::int64_t, int, int, std::int64_t, std::int64_t, std::int64_t>;
  struct item {
    key k;
    bool compute = false;
    pipe_transfer t;
  };
  std::vector<item> items;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto const& o = ops[i];
    auto const op = static_cast<std::int64_t>(i);
    auto const g = o.chunk * pp + stage;
    int const pass = o.pass == pipe_pass::forward ? 0 : 1;
    items.push_back({{o.start, 1, pass, o.micro_batch, g, op}, true, {}});
    if (o.recv_from >= 0) {
      auto const producer = o.pass == pipe_pass::forward ? g - 1 : g + 1;
      items.push_back({{o.recv_time, 0, pass, o.micro_batch, producer, op}, false, {false, op, o.recv_from, o.recv_time}});
    }
    if (o.send_to >= 0) items.push_back({{o.end, 0, pass, o.micro_batch, g, op}, false, {true, op, o.send_to, o.end}});
  }
  std::sort(items.begin(), items.end(), [](item const& a, item const& b) { return a.k < b.k; });
  std::vector<pipe_step> out;
  for (auto const& it : items) {
    if (it.compute) {
      out.push_back({true, std::get<5>(it.k), {}});
      continue;
    }
    if (out.empty() || out.back().compute || out.back().transfers.back().time != it.t.time)
      out.push_back({false, 0, {}});
    out.back().transfers.push_back(it.t);
  }
  return out;
}

}  // namespace dtplan::planner
