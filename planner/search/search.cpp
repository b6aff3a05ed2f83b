#include "planner/search/search.hpp"

#include <fmt/format.h>
#include <range/v3/algorithm/sort.hpp>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/join.hpp>
#include <range/v3/view/transform.hpp>
#include <range/v3/view/zip.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <tuple>

#include "planner/ir/keys.hpp"
#include "planner/model/check.hpp"
#include "planner/model/evaluate.hpp"
#include "planner/model/layout.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/params.hpp"
#include "planner/search/explain.hpp"
#include "planner/search/space.hpp"

namespace dtplan::planner {

strategy_spec search_everything(std::string name) {
  strategy_spec s;
  s.name = std::move(name);
  for (auto const& k : keys_of(block_kind::strategy))
    if (auto const* a = std::get_if<strategy_access>(&k.field); k.searchable && a && a->form)
      a->form(s).f = choice_form::form::any;
  return s;
}

strategy_spec whole_space(program const& p) {
  auto s = search_everything();
  s.where = p.model.where;
  return s;
}

std::vector<rank_order> const& search_orders() {
  // Tensor parallelism stays innermost: its collectives sit on the critical
  // path of every layer, so any axis placed inside it only spreads it over
  // more nodes. The other three axes take every order.
  static std::vector<rank_order> const orders{
      {axis::tp, axis::cp, axis::dp, axis::pp}, {axis::tp, axis::cp, axis::pp, axis::dp},
      {axis::tp, axis::dp, axis::cp, axis::pp}, {axis::tp, axis::dp, axis::pp, axis::cp},
      {axis::tp, axis::pp, axis::cp, axis::dp}, {axis::tp, axis::pp, axis::dp, axis::cp},
  };
  return orders;
}

std::optional<double> speedup(plan const& baseline, plan const& candidate) {
  if (!baseline.time || !candidate.time || candidate.time->step.value() <= 0) return std::nullopt;
  return baseline.time->step / candidate.time->step;
}

bool better(search_entry const& a, search_entry const& b) {
  if (a.step != b.step) return a.step < b.step;
  if (a.tp_nodes != b.tp_nodes) return a.tp_nodes < b.tp_nodes;
  if (a.memory != b.memory) return a.memory < b.memory;
  auto shard_rank = [](shard_group const& g) {
    return std::pair{static_cast<int>(g.k), g.size};
  };
  auto key = [&](strategy const& s) {
    return std::tuple{s.dp, s.tp, s.pp, s.cp, s.zero, shard_rank(s.shard), recompute_rank(s.checkpoint),
                      s.micro_batch, s.virtual_stages, s.sequence_parallel, s.order, s.ep, s.expert_tp()};
  };
  return key(a.s) < key(b.s);
}

namespace {

using namespace detail;
using clock_type = std::chrono::steady_clock;
constexpr double infinity = std::numeric_limits<double>::infinity();

std::string count_text(std::int64_t n) {
  if (n < 1000) return fmt::format("{}", n);
  if (n < 1'000'000) return fmt::format("{:.1f} k", double(n) / 1e3);
  return fmt::format("{:.1f} M", double(n) / 1e6);
}

// A valid candidate waiting to be costed. Every valid candidate waits
// (hundreds of thousands on large clusters), so it is kept packed (88 bytes
// against a strategy's 112 plus the bound's): fewer page faults, a faster sort.
struct candidate {
  double bound = 0;
  bytes memory;
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, etp = 1, micro_batch = 1, virtual_stages = 1;
  std::int64_t shard_size = 0;
  std::int8_t zero = 0;
  std::uint8_t checkpoint = 0, shard_kind = 0, order = 0;
  bool sequence_parallel = false;

  candidate() = default;
  candidate(double b, strategy const& s, bytes m)
      : bound(b), memory(m), dp(s.dp), tp(s.tp), pp(s.pp), cp(s.cp), ep(s.ep), etp(s.expert_tp()), micro_batch(s.micro_batch),
        virtual_stages(s.virtual_stages), shard_size(s.shard.size), zero(static_cast<std::int8_t>(s.zero)),
        checkpoint(static_cast<std::uint8_t>(s.checkpoint)), shard_kind(static_cast<std::uint8_t>(s.shard.k)),
        sequence_parallel(s.sequence_parallel) {
    // Two bits per axis, innermost first.
    for (int i = 0; i < 4; ++i)
      order = static_cast<std::uint8_t>(order | (static_cast<unsigned>(s.order[static_cast<std::size_t>(i)]) << (2 * i)));
  }

  [[nodiscard]] strategy unpacked() const {
    strategy s;
    s.dp = dp, s.tp = tp, s.pp = pp, s.cp = cp, s.ep = ep, s.etp = etp == tp ? 0 : etp;
    s.micro_batch = micro_batch, s.virtual_stages = virtual_stages;
    s.zero = zero;
    s.checkpoint = static_cast<checkpoint_mode>(checkpoint);
    s.shard = {static_cast<shard_group::kind>(shard_kind), shard_size};
    s.sequence_parallel = sequence_parallel;
    for (int i = 0; i < 4; ++i) s.order[static_cast<std::size_t>(i)] = static_cast<axis>((order >> (2 * i)) & 3u);
    return s;
  }
};

void sort_by_bound(std::vector<candidate>& v) {
  std::sort(v.begin(), v.end(), [](candidate const& a, candidate const& b) { return a.bound < b.bound; });
}

// The groups of candidates costed lately, by what groups_of reads of a
// strategy: its degrees, rank order and shard key, and whether ZeRO shards
// at all. Costed in the order of their bounds, candidates of one structure
// come back again and again: with 512 entries (0.8 MB a thread), the 70B
// bench search derives 31.5 k groups for 86 k candidates costed.
class group_cache {
 public:
  shape_groups const& of(program const& p, candidate const& c, strategy const& s) {
    key const k{c.dp, c.tp, c.pp, c.cp, c.ep, c.etp, c.shard_size, c.zero >= 1, c.shard_kind, c.order};
    if (entries_.empty()) entries_.resize(512);
    auto& e = entries_[k.hash() % entries_.size()];
    if (!e.first || !(*e.first == k)) e = {k, groups_of(p, s)};
    return e.second;
  }

 private:
  struct key {
    std::int64_t dp, tp, pp, cp, ep, etp, shard_size;
    bool sharded;
    std::uint8_t shard_kind, order;
    bool operator==(key const&) const = default;
    [[nodiscard]] std::size_t hash() const {
      std::size_t h = 0;
      for (auto v : {dp, tp, pp, cp, ep, etp, shard_size, std::int64_t{sharded}, std::int64_t{shard_kind},
                     std::int64_t{order}})
        h = h * 1000003u ^ static_cast<std::size_t>(v);
      return h;
    }
  };
  std::vector<std::pair<std::optional<key>, shape_groups>> entries_;
};

// What one thread found; merged in the total order at the end.
struct thread_state {
  std::vector<search_entry> top;
  std::vector<candidate> waiting;  ///< valid candidates bounded, not yet costed
  search_tally tally;
  group_cache groups;
};

class searcher {
 public:
  searcher(program const& p, cost_model const& model, search_options const& o, space_view const& space,
           std::size_t waiting_cap)
      : p_(p), model_(model), options_(o), space_(space),
        k_(static_cast<std::size_t>(std::max(0, o.top))), waiting_cap_(std::max<std::size_t>(1, waiting_cap)),
        dense_twin_(p.model.mixed_layers() ? std::optional<program>(dense_layer_program(p)) : std::nullopt),
        facts_(facts_of(p)) {}

  void run(std::vector<work_item> const& items, thread_state& st, std::atomic<std::size_t>& next,
           std::atomic<std::int64_t>& done) {
    for (;;) {
      if (deadline_ && clock_type::now() > *deadline_) {
        stopped_.store(true);
        return;
      }
      auto i = next.fetch_add(1);
      if (i >= items.size()) return;
      search_item(items[i], st);
      done.fetch_add(items[i].candidates);
    }
  }

 private:
  [[nodiscard]] double kth() const { return kth_.load(std::memory_order_relaxed); }

  void publish(thread_state const& st) {
    if (st.top.size() < k_) return;
    double mine = st.top.back().step.value();
    double cur = kth_.load(std::memory_order_relaxed);
    while (mine < cur && !kth_.compare_exchange_weak(cur, mine, std::memory_order_relaxed)) {
    }
  }

  void offer(thread_state& st, search_entry e) {
    if (k_ == 0) return;
    if (st.top.size() == k_ && !better(e, st.top.back())) return;
    auto at = std::upper_bound(st.top.begin(), st.top.end(), e, better);
    st.top.insert(at, std::move(e));
    if (st.top.size() > k_) st.top.pop_back();
    publish(st);
  }

  // The least memory any candidate of the structure could need, when it
  // does not fit; nullopt when some candidate may fit (or the probe is not
  // legal, so nothing is claimed).
  //
  // Memory is argued monotone in the keys the probe fixes, per
  // COSTMODEL.md section 2: a larger shard group (`all` is the largest)
  // divides sharded state by more ranks and adds nothing; interleaving only
  // raises the micro-batches stage 0 holds, so 1 chunk (or the fewest
  // allowed) holds the least (not for a mixture with dense layers, whose
  // chunks spread them over the stages: every chunk count is probed there);
  // a larger micro-batch scales every activation
  // and logits term up (the peak is the larger of two moments, each
  // monotone in it). The probe tries every zero stage, every checkpoint
  // mode and both sequence_parallel values because none is monotone in
  // general: ZeRO-3 adds gathered-layer buffers, full recomputation
  // re-materialises one layer, and under `checkpoint = ops` sequence
  // parallelism keeps two reduce-scatter outputs per layer, more than the
  // h/tp it saves on the layer input at tp = 2.
  std::optional<bytes> structure_needs(work_item const& w) {
    auto shards_all = space_.shard(3, w.dp);
    auto sp = space_.sequence_parallel(w.tp);
    auto vs = space_.virtual_stages(w.pp);
    auto mb = space_.micro_batch(w.dp);
    if (vs.empty() || mb.empty() || sp.empty()) return std::nullopt;
    bytes least(infinity);
    for (auto z : space_.zero()) {
      auto shards = space_.shard(static_cast<int>(z), w.dp);
      if (std::find(shards.begin(), shards.end(), shard_group{}) == shards.end()) return std::nullopt;
      for (auto c : space_.checkpoint()) {
        for (bool with_sp : sp) {
          // Outside `ops` sequence parallelism only divides: its probe alone is the least.
          if (c != checkpoint_mode::ops && !with_sp && std::find(sp.begin(), sp.end(), true) != sp.end()) continue;
          for (std::size_t v = 0; v < (p_.model.mixed_layers() ? vs.size() : 1); ++v) {
            strategy s = w.structure();
            s.order = w.orders.front();
            s.zero = static_cast<int>(z);
            s.shard = shard_group{};
            s.checkpoint = c;
            s.sequence_parallel = with_sp;
            s.virtual_stages = vs[v];
            s.micro_batch = mb.front();
            if (!is_legal(p_, s)) return std::nullopt;
            auto m = estimate_memory(shaped(shape_of(p_, s, group_sizes_of(p_, s), facts_)), false);
            if (m.fits()) return std::nullopt;
            least = min(least, m.total);
          }
        }
      }
    }
    return least;
  }

  void search_item(work_item const& w, thread_state& st) {
    // dp x micro_batch must divide the global batch: a dp that does not
    // makes every candidate of the structure illegal (a cluster far larger
    // than the batch has millions of such structures).
    if (w.dp <= 0 || p_.training.global_batch % w.dp != 0) {
      st.tally.illegal += w.candidates;
      if (options_.explain) st.tally.illegal_structures.push_back(w);
      return;
    }
    if (auto needs = structure_needs(w)) {
      st.tally.structure_cut += w.candidates;
      if (options_.explain) st.tally.memory_structures.emplace_back(w, *needs);
      return;
    }
    auto const illegal_before = st.tally.illegal;
    strategy s = w.structure();
    auto const& orders = w.orders;
    auto const n_orders = orders.size();
    auto sps = space_.sequence_parallel(w.tp);
    auto vss = space_.virtual_stages(w.pp);
    auto mbs = space_.micro_batch(w.dp);
    std::vector<char> fits_so_far(n_orders);
    // Groups depend on the order, the zero stage and the shard key: derived
    // once for every candidate that shares them.
    std::vector<shape_groups> groups(n_orders);
    // Memory reads the order only through the shard group's size, and the
    // bound not at all: one estimate serves every order with that size.
    std::vector<std::pair<std::int64_t, memory_breakdown>> memo;
    memo.reserve(n_orders);
    for (auto z : space_.zero()) {
      s.zero = static_cast<int>(z);
      auto const shards = space_.shard(s.zero, w.dp);
      for (auto const& shard : shards) {
        s.shard = shard;
        std::vector<char> same_as_other(n_orders, 0);
        for (std::size_t o = 0; o < n_orders; ++o) {
          s.order = orders[o];
          groups[o] = group_sizes_of(p_, s);
          same_as_other[o] = duplicate_shard(s, shards, groups[o]);
        }
        for (auto c : space_.checkpoint()) {
          s.checkpoint = c;
          for (bool sp : sps) {
            s.sequence_parallel = sp;
            for (auto v : vss) {
              s.virtual_stages = v;
              std::fill(fits_so_far.begin(), fits_so_far.end(), char{1});
              for (std::size_t i = 0; i < mbs.size(); ++i) {
                s.micro_batch = mbs[i];
                memo.clear();
                std::optional<double> bound;
                for (std::size_t o = 0; o < n_orders; ++o) {
                  if (!fits_so_far[o]) continue;
                  if (same_as_other[o]) {
                    ++st.tally.same_plan;
                    continue;
                  }
                  s.order = orders[o];
                  if (!is_legal(p_, s)) {
                    ++st.tally.illegal;
                    continue;
                  }
                  // The shape is built only when the memo or the bound needs
                  // it: most orders of a micro-batch need neither.
                  std::optional<strategy_shape> shape;
                  auto const shape_now = [&]() -> strategy_shape const& {
                    if (!shape) shape = shaped(shape_of(p_, s, groups[o], facts_));
                    return *shape;
                  };
                  auto const size = groups[o].shard_ranks(s.zero);
                  auto hit = std::find_if(memo.begin(), memo.end(), [&](auto const& e) { return e.first == size; });
                  if (hit == memo.end()) {
                    memo.emplace_back(size, estimate_memory(shape_now(), false));
                    hit = memo.end() - 1;
                  }
                  auto const& mem = hit->second;
                  if (!mem.fits()) {
                    // Every larger micro-batch needs at least as much.
                    fits_so_far[o] = 0;
                    st.tally.memory_cut += static_cast<std::int64_t>(mbs.size() - i);
                    continue;
                  }
                  ++st.tally.valid;
                  if (!bound) bound = model_.step_lower_bound(shape_now()).value();
                  if (recount_) {
                    // The explain pass: how many the final k-th best step prunes.
                    if (*bound > *recount_) {
                      auto& t = st.tally;
                      t.least_pruned = t.pruned > 0 ? min(t.least_pruned, seconds(*bound)) : seconds(*bound);
                      ++t.pruned;
                    }
                    continue;
                  }
                  st.waiting.emplace_back(*bound, s, mem.total);
                  // Memory stays bounded however many candidates are
                  // valid: a full buffer is costed now (best bound first).
                  if (st.waiting.size() >= waiting_cap_) flush(st);
                }
              }
            }
          }
        }
      }
    }
    if (options_.explain && st.tally.illegal - illegal_before == w.candidates) st.tally.illegal_structures.push_back(w);
  }

  // A `node` or size shard key whose groups are those of another key also
  // in the space is the same plan: only the first counts (`all` before
  // `node` before sizes). `g` holds sizes only.
  bool duplicate_shard(strategy const& s, std::vector<shard_group> const& shards, shape_groups const& sizes) const {
    if (s.zero == 0 || s.shard.k == shard_group::kind::all) return false;
    bool const has_all = std::find(shards.begin(), shards.end(), shard_group{}) != shards.end();
    if (sizes.shard.size == sizes.sync.size) return has_all;
    shard_group const node{shard_group::kind::node, 0};
    if (s.shard.k != shard_group::kind::size || std::find(shards.begin(), shards.end(), node) == shards.end())
      return false;
    strategy t = s;
    t.shard = node;
    if (rank_layout(t, p_.cluster.gpus_per_node).node_sync_members() == 0) return false;
    if (rank_layout(t, p_.cluster.gpus_per_node).node_sync_members() != sizes.shard.size) return false;
    auto const by_node = groups_of(p_, t);
    auto const g = groups_of(p_, s);
    return by_node.shard.placement.nodes == g.shard.placement.nodes &&
           by_node.shard.placement.max_per_node == g.shard.placement.max_per_node;
  }

 public:
  // Costs a full buffer of one thread now, best bound first.
  void flush(thread_state& st) {
    sort_by_bound(st.waiting);
    std::atomic<std::size_t> from{0};
    cost(st.waiting, st, from);
    st.waiting.clear();
  }

  // Phase 2: cost the candidates (sorted by bound) in order until the bound
  // passes the k-th best step; every later one is at least as slow.
  void cost(std::vector<candidate> const& all, thread_state& st, std::atomic<std::size_t>& next) {
    constexpr std::size_t block = 16;
    for (;;) {
      auto first = next.fetch_add(block);
      if (first >= all.size()) return;
      auto last = std::min(all.size(), first + block);
      for (auto i = first; i < last; ++i) {
        auto const& c = all[i];
        // Strictly above: a candidate equal to the k-th best may still win
        // the tie-break.
        if (c.bound > kth()) {
          next.store(all.size());
          return;
        }
        auto const s = c.unpacked();
        auto const shape = shaped(shape_of(p_, s, st.groups.of(p_, c, s), facts_));
        auto step = model_.step_time(shape).step.value();
        if (k_ == 0) continue;
        if (st.top.size() == k_ && step > st.top.back().step.value()) continue;
        search_entry e;
        e.step = seconds(step);
        e.memory = c.memory;
        e.s = s;
        e.tp_nodes = shape.tp.placement.nodes;
        offer(st, std::move(e));
      }
    }
  }

 private:
  program const& p_;
  cost_model const& model_;
  search_options const& options_;
  space_view const& space_;
  std::size_t k_;
  std::size_t waiting_cap_;
  // A mixture's dense layers as a program, built once for every candidate's
  // shape (strategy_shape::dense_twin) rather than once a shape.
  std::optional<program> const dense_twin_;
  program_facts const facts_;  // of p_, for every candidate's shape
  [[nodiscard]] strategy_shape shaped(strategy_shape sh) const {
    if (dense_twin_) sh.dense_twin = &*dense_twin_;
    return sh;
  }
  std::atomic<double> kth_{infinity};

 public:
  /// With a step set, phase 1 again only counts the valid candidates whose
  /// bound passes it (deterministic, whatever the threads did).
  std::optional<double> recount_;
  /// The time limit: structures not started by then are not searched.
  std::optional<clock_type::time_point> deadline_;
  std::atomic<bool> stopped_{false};
};



// The structures of the space (degrees that multiply to the GPU count, with
// their rank orders) and the candidates under each.
std::vector<work_item> structures(program const& p, space_view const& space, search_options const& options,
                                  std::vector<std::string>& structural) {
  auto const gpus = p.cluster.gpus();
  std::vector<work_item> items;
  for (auto tp : space.tp()) {
    if (tp <= 0 || gpus % tp != 0) {
      if (options.explain) structural.push_back(fmt::format("tp = {}: does not divide {} GPUs", tp, gpus));
      continue;
    }
    for (auto pp : space.pp()) {
      if (pp <= 0 || gpus % pp != 0) {
        if (options.explain && tp == space.tp().front())
          structural.push_back(fmt::format("pp = {}: does not divide {} GPUs", pp, gpus));
        continue;
      }
      for (auto cp : space.cp()) {
        if (cp <= 0 || gpus % (tp * pp) != 0 || (gpus / (tp * pp)) % cp != 0) continue;
        auto dp = gpus / (tp * pp * cp);
        if (!space.dp_allowed(dp)) continue;
        for (auto ep : space.ep())
          for (auto etp : space.etp(tp)) {
            work_item w{tp, pp, cp, dp, ep, etp, space.orders(tp, pp, cp, dp), 0};
            w.candidates = space.count(w);
            if (w.candidates > 0) items.push_back(std::move(w));
          }
      }
    }
  }
  return items;
}

// Phase 1 on `threads` threads (with a progress line on stderr when asked
// and the search runs over a second), then phase 2: every thread's waiting
// candidates costed together, best bound first.
void run_phases(searcher& worker, std::vector<work_item> const& items, std::vector<thread_state>& states,
                search_options const& options, std::int64_t candidates, clock_type::time_point start,
                std::atomic<std::int64_t>& done) {
  auto const threads = static_cast<unsigned>(states.size());
  std::atomic<std::size_t> next{0};
  std::atomic<unsigned> running{threads};
  std::mutex m;
  std::condition_variable finished;
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        worker.run(items, states[t], next, done);
        std::lock_guard lock(m);
        if (--running == 0) finished.notify_all();
      });
    bool shown = false;
    auto last_line = start - std::chrono::seconds(5);
    std::unique_lock lock(m);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; })) {
      auto const now = clock_type::now();
      if (!options.progress || now - start < std::chrono::seconds(1)) continue;
      // A log gets a whole line every 5 seconds; a terminal one line, rewritten.
      if (options.progress_lines && now - last_line < std::chrono::seconds(5)) continue;
      last_line = now;
      auto d = done.load();
      auto total = std::max<std::int64_t>(1, candidates);
      auto const seconds_in = std::chrono::duration<double>(now - start).count();
      std::fprintf(stderr, "%ssearching: %d%% (%s of %s candidates, %.0f s)%s", options.progress_lines ? "" : "\r",
                   static_cast<int>(100 * d / total), count_text(d).c_str(), count_text(candidates).c_str(),
                   seconds_in, options.progress_lines ? "\n" : "");
      std::fflush(stderr);
      shown = true;
    }
    if (shown && !options.progress_lines) {
      std::fprintf(stderr, "\r%70s\r", "");
      std::fflush(stderr);
    }
  }
  std::vector<candidate> queue;
  for (auto& st : states) {
    queue.insert(queue.end(), st.waiting.begin(), st.waiting.end());
    st.waiting = {};
  }
  sort_by_bound(queue);
  std::atomic<std::size_t> next_cost{0};
  std::vector<std::jthread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&, t] { worker.cost(queue, states[t], next_cost); });
}

}  // namespace

search_result search(program const& p, strategy_spec const& spec, cost_model const& model,
                     search_options const& options) {
  auto const start = clock_type::now();
  search_result result;
  space_view space(p, spec, options);
  std::vector<std::string> structural;
  if (options.explain) structural = space.left_out();
  auto const items = structures(p, space, options, structural);
  std::map<std::int64_t, std::int64_t> structures_of_tp;
  for (auto const& w : items) {
    result.stats.candidates += w.candidates;
    ++structures_of_tp[w.tp];
  }
  if (options.explain && items.empty()) {
    // A key the framework runs none of the written values of empties the
    // space before any product of degrees is tried.
    auto const& emptied = space.emptied_by_framework();
    result.explanations.push_back(
        {"no_structure", "the space", {{"gpus", static_cast<double>(p.cluster.gpus())}},
         emptied.empty()
             ? fmt::format("no combination of tp x pp x cp x dp in the space multiplies to {} GPUs", p.cluster.gpus())
             : fmt::format("framework '{}' runs none of the space's values of {}", p.framework.name, emptied)});
  }
  if (result.stats.candidates > options.max_candidates) {
    result.refused = fmt::format(
        "{} holds {} candidates, more than the {} --optimize searches (--max-candidates); fix some of its keys "
        "(tp, pp, cp, micro_batch, order) or raise the limit",
        spec.name.empty() || spec.name == "search" ? std::string("the space") : fmt::format("the space of strategy '{}'", spec.name),
        grouped(result.stats.candidates), grouped(options.max_candidates));
    result.stats.elapsed = seconds(std::chrono::duration<double>(clock_type::now() - start).count());
    return result;
  }

  auto threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, items.size())));
  searcher worker(p, model, options, space, options.max_waiting / threads);
  if (options.time_limit > seconds())
    worker.deadline_ =
        start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(options.time_limit.value()));
  std::vector<thread_state> states(threads);
  std::atomic<std::int64_t> looked_at{0};
  run_phases(worker, items, states, options, result.stats.candidates, start, looked_at);
  result.stopped = worker.stopped_.load();
  result.stats.looked_at = result.stopped ? looked_at.load() : result.stats.candidates;
  worker.deadline_.reset();

  // The per-thread top lists merged in the total order: which thread found
  // a plan cannot change the result.
  auto top = states | ranges::views::transform(&thread_state::top) | ranges::views::join | ranges::to<std::vector>();
  ranges::sort(top, better);
  search_tally all;
  for (auto const& st : states) all.merge(st.tally);
  auto k = static_cast<std::size_t>(std::max(0, options.top));
  if (top.size() > k) top.resize(k);
  if (options.explain && top.size() == k && k > 0) {
    worker.recount_ = top.back().step.value();
    std::vector<thread_state> counts(threads);
    std::atomic<std::size_t> next{0};
    std::atomic<std::int64_t> done{0};
    {
      std::vector<std::jthread> pool;
      for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&, t] { worker.run(items, counts[t], next, done); });
    }
    for (auto const& c : counts) {
      if (c.tally.pruned > 0)
        all.least_pruned = all.pruned > 0 ? std::min(all.least_pruned, c.tally.least_pruned) : c.tally.least_pruned;
      all.pruned += c.tally.pruned;
    }
  }
  // Threads finish structures in any order: sort what explain reports.
  auto by_structure = [](work_item const& a, work_item const& b) {
    return std::tuple{a.tp, a.pp, a.cp, a.dp, a.ep, -a.etp} < std::tuple{b.tp, b.pp, b.cp, b.dp, b.ep, -b.etp};
  };
  std::sort(all.illegal_structures.begin(), all.illegal_structures.end(), by_structure);
  std::sort(all.memory_structures.begin(), all.memory_structures.end(),
            [&](auto const& a, auto const& b) { return by_structure(a.first, b.first); });
  result.stats.valid = all.valid;

  auto base = spec.name.empty() ? std::string("search") : spec.name;
  result.best = ranges::views::zip(ranges::views::iota(1), top) |
                ranges::views::transform([&](auto const& ranked) {
                  auto const& [place, entry] = ranked;
                  return evaluate(p, spec, entry.s, model, fmt::format("{}#{}", base, place));
                }) |
                ranges::to<std::vector>();
  result.ranked = top;

  if (options.explain) {
    // The time bound prunes only once k plans are ranked: `best` is read then.
    seconds const best = top.empty() ? seconds() : top.front().step;
    explain(p, spec, structures_of_tp, structural, all, best, result.explanations);
  }
  result.stats.elapsed = seconds(std::chrono::duration<double>(clock_type::now() - start).count());
  return result;
}

}  // namespace dtplan::planner
