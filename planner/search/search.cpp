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
#include <limits>
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
                      s.micro_batch, s.virtual_stages, s.sequence_parallel, s.order, s.ep};
  };
  return key(a.s) < key(b.s);
}

namespace {

using clock_type = std::chrono::steady_clock;
constexpr double infinity = std::numeric_limits<double>::infinity();

// The divisors of `n` among `candidates` (ascending, holding every divisor
// of n): n's divisors without a trial division.
std::vector<std::int64_t> dividing(std::vector<std::int64_t> const& candidates, std::int64_t n) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  for (auto d : candidates) {
    if (d > n) break;
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

template <class T>
std::vector<T> sorted_unique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The values of an integer key. `valid` is every value that can be valid
// (ascending); a range keeps those inside it, `auto` takes `automatic`.
std::vector<std::int64_t> int_domain(key_choice<std::int64_t> const& c, std::int64_t fallback,
                                     std::vector<std::int64_t> const& valid,
                                     std::vector<std::int64_t> const& automatic) {
  using form = key_choice<std::int64_t>::form;
  switch (c.f) {
    case form::unset: return {fallback};
    case form::single: return c.values.empty() ? std::vector{fallback} : std::vector{c.values.front()};
    case form::set: return sorted_unique(c.values);
    case form::range: {
      std::vector<std::int64_t> out;
      for (auto v : valid)
        if (v >= c.low && v <= c.high) out.push_back(v);
      return out;
    }
    case form::any: return automatic;
  }
  return {fallback};
}

std::vector<std::int64_t> capped(std::vector<std::int64_t> v, std::int64_t cap) {
  std::erase_if(v, [&](std::int64_t x) { return x > cap; });
  return v;
}

}  // namespace

std::int64_t node_shard_size(strategy const& s, std::int64_t gpus_per_node) {
  // The dp group of a rank is base + k x stride for k < dp, stride the
  // product of the axes inside dp. When the groups tile the nodes evenly
  // the answer follows from the stride alone; otherwise ask the layout.
  std::int64_t stride = 1;
  for (axis a : s.order) {
    if (a == axis::dp) break;
    stride *= a == axis::tp ? s.tp : a == axis::cp ? s.cp : s.pp;
  }
  auto const g = std::max<std::int64_t>(1, gpus_per_node);
  if (stride >= g) return 1;
  if (g % stride == 0) {
    auto const span = s.dp * stride;
    if (span <= g && g % span == 0) return s.dp;
    if (span >= g && span % g == 0) return g / stride;
  }
  strategy t = s;
  t.shard = shard_group{shard_group::kind::node, 0};
  return shard_size(t, gpus_per_node);
}

namespace {

// One structural choice: the parallel degrees and the rank order. Every
// other key is enumerated inside it.
struct work_item {
  std::int64_t tp = 1, pp = 1, cp = 1, dp = 1, ep = 1;
  std::vector<rank_order> orders;
  std::int64_t candidates = 0;  // the size of its sub-tree

  // The structure's degrees, every other key at its default.
  [[nodiscard]] strategy structure() const {
    strategy s;
    s.tp = tp;
    s.pp = pp;
    s.cp = cp;
    s.dp = dp;
    s.ep = ep;
    return s;
  }
};

// The whole space with the dependent domains resolved per structure.
class space_view {
 public:
  space_view(program const& p, strategy_spec const& spec, search_options const& o)
      : p_(p), spec_(spec), options_(o) {
    auto gpus = p.cluster.gpus();
    auto g = divisors(gpus);
    gpu_divisors_ = g;
    batch_divisors_ = divisors(p.training.global_batch);
    layer_divisors_ = divisors(p.model.layers);
    tp_ = int_domain(spec.tp, 1, g, g);
    pp_ = int_domain(spec.pp, 1, g, g);
    cp_ = int_domain(spec.cp, 1, g, g);
    auto experts = divisors(std::max<std::int64_t>(1, p.model.experts));
    ep_ = int_domain(spec.ep, 1, experts, p.model.experts > 1 ? experts : std::vector<std::int64_t>{1});
    std::vector<std::int64_t> zeros{0, 1, 2, 3};
    zero_ = int_domain(spec.zero, 0, zeros, zeros);
    using cform = key_choice<checkpoint_mode>::form;
    if (spec.checkpoint.f == cform::any || spec.checkpoint.f == cform::range)
      checkpoint_.assign(checkpoint_modes.begin(), checkpoint_modes.end());
    else if (spec.checkpoint.f == cform::set) {
      checkpoint_ = sorted_unique(spec.checkpoint.values);
      std::stable_sort(checkpoint_.begin(), checkpoint_.end(),
                       [](auto a, auto b) { return recompute_rank(a) < recompute_rank(b); });
    } else
      checkpoint_ = {spec.fixed().checkpoint};
    using oform = key_choice<rank_order>::form;
    if (spec.order.f == oform::any || spec.order.f == oform::range)
      orders_ = search_orders();
    else if (spec.order.f == oform::set)
      orders_ = spec.order.values;
    else
      orders_ = {spec.fixed().order};
  }

  [[nodiscard]] std::vector<std::int64_t> const& tp() const { return tp_; }
  [[nodiscard]] std::vector<std::int64_t> const& pp() const { return pp_; }
  [[nodiscard]] std::vector<std::int64_t> const& cp() const { return cp_; }
  [[nodiscard]] std::vector<std::int64_t> const& ep() const { return ep_; }
  [[nodiscard]] std::vector<std::int64_t> const& zero() const { return zero_; }
  [[nodiscard]] std::vector<checkpoint_mode> const& checkpoint() const { return checkpoint_; }

  // dp is derived from the others; a written dp only filters.
  [[nodiscard]] bool dp_allowed(std::int64_t dp) const {
    using form = key_choice<std::int64_t>::form;
    auto const& c = spec_.dp;
    switch (c.f) {
      case form::unset:
      case form::any: return true;
      case form::single: return c.values.empty() || c.values.front() == dp;
      case form::set: return std::find(c.values.begin(), c.values.end(), dp) != c.values.end();
      case form::range: return dp >= c.low && dp <= c.high;
    }
    return true;
  }

  // Orders that give the same layout (they differ only in where axes of
  // size 1 sit) are one candidate: the first of them in the list.
  [[nodiscard]] std::vector<rank_order> orders(std::int64_t tp, std::int64_t pp, std::int64_t cp,
                                               std::int64_t dp) const {
    if (orders_.size() == 1) return orders_;
    std::array<std::int64_t, 4> size{};
    size[static_cast<int>(axis::tp)] = tp;
    size[static_cast<int>(axis::pp)] = pp;
    size[static_cast<int>(axis::cp)] = cp;
    size[static_cast<int>(axis::dp)] = dp;
    std::vector<rank_order> out;
    std::vector<std::vector<axis>> seen;
    for (auto const& o : orders_) {
      std::vector<axis> effective;
      for (axis a : o)
        if (size[static_cast<int>(a)] > 1) effective.push_back(a);
      if (std::find(seen.begin(), seen.end(), effective) != seen.end()) continue;
      seen.push_back(effective);
      out.push_back(o);
    }
    return out;
  }

  // Sharding only changes anything with ZeRO: a free shard key takes `all`
  // alone when zero = 0. `node` and every divisor of dp strictly between 1
  // and dp otherwise (1 shards nothing, dp is `all`).
  [[nodiscard]] std::vector<shard_group> shard(int zero, std::int64_t dp) const {
    using form = key_choice<shard_group>::form;
    auto const& c = spec_.shard;
    if (c.f == form::unset) return {shard_group{}};
    if (c.f == form::single) return {c.values.empty() ? shard_group{} : c.values.front()};
    if (zero == 0) return {shard_group{}};
    if (c.f == form::set) return c.values;
    std::vector<shard_group> out{shard_group{}};
    if (dp > 1) out.push_back(shard_group{shard_group::kind::node, 0});
    for (auto d : dividing(gpu_divisors_, dp)) {
      if (d <= 1 || d >= dp) continue;
      if (c.f == form::range && (d < c.low || d > c.high)) continue;
      out.push_back(shard_group{shard_group::kind::size, d});
    }
    return out;
  }

  // Sequence parallelism only exists with tensor parallelism.
  [[nodiscard]] std::vector<bool> sequence_parallel(std::int64_t tp) const {
    using form = key_choice<bool>::form;
    auto const& c = spec_.sequence_parallel;
    switch (c.f) {
      case form::unset: return {tp > 1};
      case form::single: return {c.values.empty() ? tp > 1 : c.values.front()};
      case form::set:
      case form::range:
      case form::any:
        if (tp == 1) return {false};
        if (c.f == form::set) return sorted_unique(c.values);
        return {false, true};
    }
    return {tp > 1};
  }

  // Interleaving only exists with pipelining: chunks of layers / pp.
  [[nodiscard]] std::vector<std::int64_t> virtual_stages(std::int64_t pp) const {
    std::vector<std::int64_t> valid{1};
    if (pp > 1 && p_.model.layers % pp == 0) valid = dividing(layer_divisors_, p_.model.layers / pp);
    auto automatic = capped(valid, options_.max_virtual_stages);
    return int_domain(spec_.virtual_stages, 1, valid, automatic);
  }

  // Ascending, which the memory cut-off in the search relies on.
  [[nodiscard]] std::vector<std::int64_t> micro_batch(std::int64_t dp) const {
    auto per_rank = p_.training.global_batch % dp == 0 ? p_.training.global_batch / dp : 0;
    auto valid = dividing(batch_divisors_, per_rank);
    return int_domain(spec_.micro_batch, 1, valid, capped(valid, options_.max_micro_batch));
  }

  [[nodiscard]] std::int64_t count(work_item const& w) const {
    auto inner = static_cast<std::int64_t>(checkpoint_.size() * sequence_parallel(w.tp).size() *
                                           virtual_stages(w.pp).size() * micro_batch(w.dp).size());
    std::int64_t n = 0;
    for (auto z : zero_) n += static_cast<std::int64_t>(shard(static_cast<int>(z), w.dp).size()) * inner;
    return n * static_cast<std::int64_t>(w.orders.size());
  }

 private:
  program const& p_;
  strategy_spec const& spec_;
  search_options const& options_;
  std::vector<std::int64_t> tp_, pp_, cp_, ep_, zero_;
  std::vector<checkpoint_mode> checkpoint_;
  std::vector<rank_order> orders_;
  // dp divides the GPUs, a rank's batch the global batch, a stage's layers
  // the model's: their divisors are filtered from these, found once
  // (trial division per structure costs seconds on huge clusters).
  std::vector<std::int64_t> gpu_divisors_, batch_divisors_, layer_divisors_;
};

std::string structure_text(work_item const& w) {
  return fmt::format("tp = {}, pp = {}, cp = {}, dp = {}", w.tp, w.pp, w.cp, w.dp);
}

std::string count_text(std::int64_t n) {
  if (n < 1000) return fmt::format("{}", n);
  if (n < 1'000'000) return fmt::format("{:.1f} k", double(n) / 1e3);
  return fmt::format("{:.1f} M", double(n) / 1e6);
}

// A valid candidate waiting to be costed. Every valid candidate waits
// (hundreds of thousands on large clusters), so it is kept packed (96 bytes
// against a strategy's 112 plus the bound's): fewer page faults, a faster sort.
struct candidate {
  double bound = 0;
  bytes memory;
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, micro_batch = 1, virtual_stages = 1;
  std::int64_t shard_size = 0, costed_shard_size = 0;  // costed: the size a `node` group resolves to
  std::int8_t zero = 0;
  std::uint8_t checkpoint = 0, shard_kind = 0, costed_shard_kind = 0, order = 0;
  bool sequence_parallel = false;

  candidate() = default;
  candidate(double b, strategy const& s, shard_group costed, bytes m)
      : bound(b), memory(m), dp(s.dp), tp(s.tp), pp(s.pp), cp(s.cp), ep(s.ep), micro_batch(s.micro_batch),
        virtual_stages(s.virtual_stages), shard_size(s.shard.size), costed_shard_size(costed.size),
        zero(static_cast<std::int8_t>(s.zero)), checkpoint(static_cast<std::uint8_t>(s.checkpoint)),
        shard_kind(static_cast<std::uint8_t>(s.shard.k)), costed_shard_kind(static_cast<std::uint8_t>(costed.k)),
        sequence_parallel(s.sequence_parallel) {
    // Two bits per axis, innermost first.
    for (int i = 0; i < 4; ++i)
      order = static_cast<std::uint8_t>(order | (static_cast<unsigned>(s.order[static_cast<std::size_t>(i)]) << (2 * i)));
  }

  [[nodiscard]] strategy unpacked() const {
    strategy s;
    s.dp = dp, s.tp = tp, s.pp = pp, s.cp = cp, s.ep = ep;
    s.micro_batch = micro_batch, s.virtual_stages = virtual_stages;
    s.zero = zero;
    s.checkpoint = static_cast<checkpoint_mode>(checkpoint);
    s.shard = {static_cast<shard_group::kind>(shard_kind), shard_size};
    s.sequence_parallel = sequence_parallel;
    for (int i = 0; i < 4; ++i) s.order[static_cast<std::size_t>(i)] = static_cast<axis>((order >> (2 * i)) & 3u);
    return s;
  }
  [[nodiscard]] strategy as_costed() const {
    auto s = unpacked();
    s.shard = {static_cast<shard_group::kind>(costed_shard_kind), costed_shard_size};
    return s;
  }
};

// What one thread found; merged in the total order at the end.
struct thread_state {
  std::vector<search_entry> top;
  std::vector<candidate> waiting;
  std::int64_t valid = 0;
  std::int64_t illegal = 0;
  std::int64_t memory_cut = 0;     // candidates that do not fit (checked or cut off)
  std::int64_t structure_cut = 0;  // candidates of structures that fit nowhere
  std::vector<double> bounds;      // with explain: the bound of every valid candidate
  // With explain: structures none of whose candidates is legal, and the
  // structures cut by memory with the least memory they need.
  std::vector<work_item> illegal_structures;
  std::vector<std::pair<work_item, double>> memory_structures;
};

class searcher {
 public:
  searcher(program const& p, strategy_spec const& spec, cost_model const& model, search_options const& o,
           space_view const& space)
      : p_(p), spec_(spec), model_(model), options_(o), space_(space),
        k_(static_cast<std::size_t>(std::max(0, o.top))) {}

  void run(std::vector<work_item> const& items, thread_state& st, std::atomic<std::size_t>& next,
           std::atomic<std::int64_t>& done) {
    for (;;) {
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
  // allowed) holds the least; a larger micro-batch scales every activation
  // and logits term up (the peak is the larger of two moments, each
  // monotone in it). The probe tries every zero stage, every checkpoint
  // mode and both sequence_parallel values because none is monotone in
  // general: ZeRO-3 adds gathered-layer buffers, full recomputation
  // re-materialises one layer, and under `checkpoint = ops` sequence
  // parallelism keeps two reduce-scatter outputs per layer, more than the
  // h/tp it saves on the layer input at tp = 2.
  std::optional<double> structure_needs(work_item const& w) {
    auto shards_all = space_.shard(3, w.dp);
    auto sp = space_.sequence_parallel(w.tp);
    auto vs = space_.virtual_stages(w.pp);
    auto mb = space_.micro_batch(w.dp);
    if (vs.empty() || mb.empty() || sp.empty()) return std::nullopt;
    double least = infinity;
    for (auto z : space_.zero()) {
      auto shards = space_.shard(static_cast<int>(z), w.dp);
      if (std::find(shards.begin(), shards.end(), shard_group{}) == shards.end()) return std::nullopt;
      for (auto c : space_.checkpoint()) {
        for (bool with_sp : sp) {
          // Outside `ops` sequence parallelism only divides: its probe alone is the least.
          if (c != checkpoint_mode::ops && !with_sp && std::find(sp.begin(), sp.end(), true) != sp.end()) continue;
          strategy s = w.structure();
          s.order = w.orders.front();
          s.zero = static_cast<int>(z);
          s.shard = shard_group{};
          s.checkpoint = c;
          s.sequence_parallel = with_sp;
          s.virtual_stages = vs.front();
          s.micro_batch = mb.front();
          if (!is_legal(p_, s)) return std::nullopt;
          auto m = estimate_memory(p_, s, false);
          if (m.fits()) return std::nullopt;
          least = std::min(least, m.total.value());
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
      st.illegal += w.candidates;
      if (options_.explain) st.illegal_structures.push_back(w);
      return;
    }
    if (auto needs = structure_needs(w)) {
      st.structure_cut += w.candidates;
      if (options_.explain) st.memory_structures.emplace_back(w, *needs);
      return;
    }
    auto const illegal_before = st.illegal;
    strategy s = w.structure();
    auto const& orders = w.orders;
    auto const n_orders = orders.size();
    // The size of a `node` shard group depends on the order; computed once.
    std::vector<std::int64_t> node_shard(n_orders, 0);
    bool node_needed = false;
    for (auto z : space_.zero())
      for (auto const& g : space_.shard(static_cast<int>(z), w.dp))
        node_needed = node_needed || g.k == shard_group::kind::node;
    bool has_node = false;
    bool has_all = false;
    if (node_needed)
      for (std::size_t o = 0; o < n_orders; ++o) {
        strategy t = s;
        t.order = orders[o];
        node_shard[o] = node_shard_size(t, p_.cluster.gpus_per_node);
      }
    auto sps = space_.sequence_parallel(w.tp);
    auto vss = space_.virtual_stages(w.pp);
    auto mbs = space_.micro_batch(w.dp);
    std::vector<char> fits_so_far(n_orders);
    // estimate_memory reads the order only through the shard group's size
    // (shard_size), so one estimate serves every order with the same size.
    std::vector<std::pair<std::int64_t, memory_breakdown>> memo;
    memo.reserve(n_orders);
    for (auto z : space_.zero()) {
      s.zero = static_cast<int>(z);
      auto const shards = space_.shard(s.zero, w.dp);
      has_node = std::find(shards.begin(), shards.end(), shard_group{shard_group::kind::node, 0}) != shards.end();
      has_all = std::find(shards.begin(), shards.end(), shard_group{}) != shards.end();
      for (auto const& shard : shards) {
        s.shard = shard;
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
                for (std::size_t o = 0; o < n_orders; ++o) {
                  if (!fits_so_far[o]) continue;
                  s.order = orders[o];
                  // A `node` group that resolves to `all` or to a size also
                  // in the space is the same plan: only the first counts.
                  if (shard.k == shard_group::kind::node && node_shard[o] == w.dp && has_all) continue;
                  if (shard.k == shard_group::kind::size && node_shard[o] == shard.size && has_node) continue;
                  // The models see a `node` group through the size it
                  // resolves to (shard_size); costing it as that size skips
                  // the layout walk per candidate on large clusters.
                  strategy as_costed = s;
                  if (shard.k == shard_group::kind::node && node_shard[o] > 0)
                    as_costed.shard = shard_group{shard_group::kind::size, node_shard[o]};
                  if (!is_legal(p_, as_costed)) {
                    ++st.illegal;
                    continue;
                  }
                  std::int64_t size = shard.k == shard_group::kind::all    ? w.dp
                                      : shard.k == shard_group::kind::node ? node_shard[o]
                                                                           : shard.size;
                  auto hit = std::find_if(memo.begin(), memo.end(), [&](auto const& e) { return e.first == size; });
                  if (hit == memo.end()) {
                    memo.emplace_back(size, estimate_memory(p_, as_costed, false));
                    hit = memo.end() - 1;
                  }
                  auto const& mem = hit->second;
                  if (!mem.fits()) {
                    // Every larger micro-batch needs at least as much.
                    fits_so_far[o] = 0;
                    st.memory_cut += static_cast<std::int64_t>(mbs.size() - i);
                    continue;
                  }
                  ++st.valid;
                  evaluate_candidate(st, s, as_costed, mem.total);
                }
              }
            }
          }
        }
      }
    }
    if (options_.explain && st.illegal - illegal_before == w.candidates) st.illegal_structures.push_back(w);
  }

  // Phase 1 only bounds a candidate; costing waits until every bound is
  // known, so candidates are costed best bound first and the k-th best is
  // tight from the start.
  void evaluate_candidate(thread_state& st, strategy const& s, strategy const& as_costed, bytes memory) {
    candidate const c(model_.step_lower_bound(p_, as_costed).value(), s, as_costed.shard, memory);
    if (options_.explain) st.bounds.push_back(c.bound);
    st.waiting.push_back(c);
  }

 public:
  // Phase 2: cost the candidates in order of their bound until the bound
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
        auto step = model_.step_time(p_, c.as_costed()).step.value();
        if (k_ == 0) continue;
        if (st.top.size() == k_ && step > st.top.back().step.value()) continue;
        search_entry e;
        e.step = seconds(step);
        e.memory = c.memory;
        e.s = c.unpacked();
        rank_layout layout(e.s, p_.cluster.gpus_per_node);
        e.tp_nodes = layout.placement_of(layout.group_of(axis::tp, 0)).nodes;
        offer(st, std::move(e));
      }
    }
  }

 private:
  program const& p_;
  strategy_spec const& spec_;
  cost_model const& model_;
  search_options const& options_;
  space_view const& space_;
  std::size_t k_;
  std::atomic<double> kth_{infinity};
};

void explain(program const& p, strategy_spec const& spec, std::map<std::int64_t, std::int64_t> const& structures_of_tp,
             std::vector<std::string> const& structural, thread_state const& all, double kth, double best,
             std::vector<std::string>& out) {
  out.insert(out.end(), structural.begin(), structural.end());
  auto usable = p.cluster.device.memory - p.cluster.device.reserved;

  // Structures every candidate of which is illegal, grouped by the first
  // error the checker gives for one of them.
  std::map<std::string, std::pair<std::int64_t, std::vector<std::string>>> reasons;
  for (auto const& w : all.illegal_structures) {
    strategy s = w.structure();
    s.order = w.orders.front();
    s.sequence_parallel = w.tp > 1;
    auto r = check(p, spec, s);
    std::string why = "not legal";
    for (auto const& d : r.diags)
      if (d.level == dsl::severity::error) {
        why = d.message;
        break;
      }
    auto& entry = reasons[why];
    entry.first += w.candidates;
    auto text = structure_text(w);
    if (std::find(entry.second.begin(), entry.second.end(), text) == entry.second.end())
      entry.second.push_back(text);
  }
  for (auto const& [why, entry] : reasons) {
    auto const& where = entry.second;
    std::string at = where.front();
    if (where.size() > 1) at += fmt::format(" and {} more", where.size() - 1);
    out.push_back(fmt::format("{}: {} ({} candidates)", at, why, grouped(entry.first)));
  }

  // Structures that fit nowhere: by tp when every structure of that tp is
  // cut, one line per structure otherwise (the first few).
  std::map<std::int64_t, std::pair<std::int64_t, double>> cut_by_tp;  // tp -> (structures, least memory)
  std::map<std::int64_t, std::int64_t> candidates_by_tp;
  for (auto const& [w, needs] : all.memory_structures) {
    auto& e = cut_by_tp[w.tp];
    e.second = e.first == 0 ? needs : std::min(e.second, needs);
    ++e.first;
    candidates_by_tp[w.tp] += w.candidates;
  }
  std::vector<std::pair<work_item, double>> rest;
  for (auto const& [w, needs] : all.memory_structures) {
    // A tp every one of whose structures was cut is reported once.
    if (cut_by_tp[w.tp].first == structures_of_tp.at(w.tp)) continue;
    rest.emplace_back(w, needs);
  }
  for (auto const& [tp, e] : cut_by_tp) {
    if (e.first != structures_of_tp.at(tp)) continue;
    out.push_back(fmt::format("tp = {}: {} per GPU > {} usable, at any pp, cp, dp, zero, checkpoint ({} candidates)",
                              tp, bytes(e.second), usable, grouped(candidates_by_tp[tp])));
  }
  std::sort(rest.begin(), rest.end(), [](auto const& a, auto const& b) {
    return std::tuple{a.first.tp, a.first.pp, a.first.cp, a.first.dp} <
           std::tuple{b.first.tp, b.first.pp, b.first.cp, b.first.dp};
  });
  constexpr std::size_t shown = 8;
  std::vector<std::string> lines;
  std::int64_t hidden_candidates = 0;
  std::size_t hidden = 0;
  for (auto const& [w, needs] : rest) {
    auto text = fmt::format("{}: {} per GPU > {} usable, at any zero, checkpoint ({} candidates)",
                            structure_text(w), bytes(needs), usable, grouped(w.candidates));
    if (std::find(lines.begin(), lines.end(), text) != lines.end()) continue;
    if (lines.size() < shown) {
      lines.push_back(text);
    } else {
      ++hidden;
      hidden_candidates += w.candidates;
    }
  }
  out.insert(out.end(), lines.begin(), lines.end());
  if (hidden > 0)
    out.push_back(fmt::format("{} more structures do not fit in {} per GPU ({} candidates)", hidden, usable,
                              grouped(hidden_candidates)));
  if (all.memory_cut > 0)
    out.push_back(fmt::format("{} candidates need more than {} per GPU (micro-batch too large for the rest)",
                              grouped(all.memory_cut), usable));
  std::int64_t other = all.illegal;
  for (auto const& w : all.illegal_structures) other -= w.candidates;
  if (other > 0) out.push_back(fmt::format("{} other candidates are not legal", grouped(other)));

  std::int64_t above = 0;
  double least = infinity;
  for (double b : all.bounds)
    if (b > kth) {
      ++above;
      least = std::min(least, b);
    }
  if (above > 0)
    out.push_back(fmt::format("{} candidates pruned by the time bound (>= {}, best {})", grouped(above),
                              seconds(least), seconds(best)));
}

}  // namespace

search_result search(program const& p, strategy_spec const& spec, cost_model const& model,
                     search_options const& options) {
  auto const start = clock_type::now();
  search_result result;
  space_view space(p, spec, options);
  auto const gpus = p.cluster.gpus();

  std::vector<std::string> structural;
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
        for (auto ep : space.ep()) {
          work_item w{tp, pp, cp, dp, ep, space.orders(tp, pp, cp, dp), 0};
          w.candidates = space.count(w);
          if (w.candidates > 0) items.push_back(std::move(w));
        }
      }
    }
  }
  std::map<std::int64_t, std::int64_t> structures_of_tp;
  for (auto const& w : items) {
    result.stats.candidates += w.candidates;
    ++structures_of_tp[w.tp];
  }
  if (options.explain && items.empty())
    result.explanations.push_back(
        fmt::format("no combination of tp x pp x cp x dp in the space multiplies to {} GPUs", gpus));

  auto threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, items.size())));
  searcher worker(p, spec, model, options, space);
  std::vector<thread_state> states(threads);
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> done{0};
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
    std::unique_lock lock(m);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; })) {
      if (!options.progress || clock_type::now() - start < std::chrono::seconds(1)) continue;
      auto d = done.load();
      auto total = std::max<std::int64_t>(1, result.stats.candidates);
      std::fprintf(stderr, "\rsearching: %d%% (%s of %s candidates)", static_cast<int>(100 * d / total),
                   count_text(d).c_str(), count_text(result.stats.candidates).c_str());
      std::fflush(stderr);
      shown = true;
    }
    if (shown) {
      std::fprintf(stderr, "\r%60s\r", "");
      std::fflush(stderr);
    }
  }

  {
    std::vector<candidate> queue;
    for (auto& st : states) {
      queue.insert(queue.end(), st.waiting.begin(), st.waiting.end());
      st.waiting = {};
    }
    std::sort(queue.begin(), queue.end(), [](candidate const& a, candidate const& b) { return a.bound < b.bound; });
    std::atomic<std::size_t> next_cost{0};
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { worker.cost(queue, states[t], next_cost); });
  }

  // The per-thread top lists merged in the total order: which thread found
  // a plan cannot change the result.
  thread_state all;
  all.top = states | ranges::views::transform(&thread_state::top) | ranges::views::join |
            ranges::to<std::vector>();
  ranges::sort(all.top, better);
  for (auto& st : states) {
    all.valid += st.valid;
    all.illegal += st.illegal;
    all.memory_cut += st.memory_cut;
    all.structure_cut += st.structure_cut;
    all.bounds.insert(all.bounds.end(), st.bounds.begin(), st.bounds.end());
    all.illegal_structures.insert(all.illegal_structures.end(), st.illegal_structures.begin(),
                                  st.illegal_structures.end());
    all.memory_structures.insert(all.memory_structures.end(), st.memory_structures.begin(),
                                 st.memory_structures.end());
  }
  auto k = static_cast<std::size_t>(std::max(0, options.top));
  if (all.top.size() > k) all.top.resize(k);
  // Threads finish structures in any order: sort what explain reports.
  auto by_structure = [](work_item const& a, work_item const& b) {
    return std::tuple{a.tp, a.pp, a.cp, a.dp, a.ep} < std::tuple{b.tp, b.pp, b.cp, b.dp, b.ep};
  };
  std::sort(all.illegal_structures.begin(), all.illegal_structures.end(), by_structure);
  std::sort(all.memory_structures.begin(), all.memory_structures.end(),
            [&](auto const& a, auto const& b) { return by_structure(a.first, b.first); });
  result.stats.valid = all.valid;

  auto base = spec.name.empty() ? std::string("search") : spec.name;
  result.best = ranges::views::zip(ranges::views::iota(1), all.top) |
                ranges::views::transform([&](auto const& ranked) {
                  auto const& [place, entry] = ranked;
                  return evaluate(p, spec, entry.s, model, fmt::format("{}#{}", base, place));
                }) |
                ranges::to<std::vector>();
  result.ranked = all.top;

  if (options.explain) {
    double kth = all.top.size() == k && k > 0 ? all.top.back().step.value() : infinity;
    double best = all.top.empty() ? infinity : all.top.front().step.value();
    explain(p, spec, structures_of_tp, structural, all, kth, best, result.explanations);
  }
  result.stats.elapsed = seconds(std::chrono::duration<double>(clock_type::now() - start).count());
  return result;
}

}  // namespace dtplan::planner
