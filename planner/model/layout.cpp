#include "planner/model/layout.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

namespace dtplan::planner {

rank_layout::rank_layout(strategy const& s, std::int64_t gpus_per_node)
    : gpus_per_node_(gpus_per_node) {
  sizes_[static_cast<int>(axis::tp)] = s.tp;
  sizes_[static_cast<int>(axis::cp)] = s.cp;
  sizes_[static_cast<int>(axis::dp)] = s.dp;
  sizes_[static_cast<int>(axis::pp)] = s.pp;
  std::int64_t stride = 1;
  for (axis a : s.order) {
    strides_[static_cast<int>(a)] = stride;
    stride *= sizes_[static_cast<int>(a)];
  }
  world_ = stride;
}

coords rank_layout::of(std::int64_t rank) const {
  coords c{};
  for (int a = 0; a < 4; ++a) c[a] = (rank / strides_[a]) % sizes_[a];
  return c;
}

std::int64_t rank_layout::rank_of(coords const& c) const {
  std::int64_t r = 0;
  for (int a = 0; a < 4; ++a) r += c[a] * strides_[a];
  return r;
}

std::vector<std::int64_t> rank_layout::group_of(axis a, std::int64_t rank) const {
  auto c = of(rank);
  auto i = static_cast<int>(a);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(sizes_[i]));
  for (std::int64_t k = 0; k < sizes_[i]; ++k) {
    c[i] = k;
    out.push_back(rank_of(c));
  }
  return out;
}

group_placement rank_layout::placement_of(std::vector<std::int64_t> const& ranks) const {
  std::vector<std::int64_t> nodes;
  nodes.reserve(ranks.size());
  for (auto r : ranks) nodes.push_back(node_of(r));
  // (Most groups come in rank order.)
  if (!std::is_sorted(nodes.begin(), nodes.end())) std::sort(nodes.begin(), nodes.end());
  group_placement p;
  p.size = static_cast<std::int64_t>(ranks.size());
  p.nodes = 0;
  p.max_per_node = 0;
  for (std::size_t i = 0; i < nodes.size();) {
    std::size_t j = i;
    while (j < nodes.size() && nodes[j] == nodes[i]) ++j;
    ++p.nodes;
    p.max_per_node = std::max<std::int64_t>(p.max_per_node, static_cast<std::int64_t>(j - i));
    i = j;
  }
  return p;
}

template <class F>
group_placement rank_layout::worst_over_ranks(F const& group_for) const {
  group_placement worst = placement_of(group_for(0));
  // Groups of a regular layout repeat with the node boundary; checking one
  // group per node start (and rank 0) covers every distinct shape cheaply.
  std::set<std::int64_t> seen{0};
  for (std::int64_t r = 0; r < world_; r += gpus_per_node_) {
    for (std::int64_t off : {std::int64_t{0}, gpus_per_node_ - 1}) {
      std::int64_t rank = std::min(world_ - 1, r + off);
      if (!seen.insert(rank).second) continue;
      auto p = placement_of(group_for(rank));
      if (p.nodes > worst.nodes || (p.nodes == worst.nodes && p.max_per_node > worst.max_per_node))
        worst = p;
    }
    if (seen.size() > 4096) break;  // huge clusters: the pattern has repeated long before
  }
  return worst;
}

namespace {

// The placement every group shares when `n` members `stride` ranks apart
// sit in blocks of n x stride ranks that start at multiples of n x stride
// (true of an axis's groups, shard and replicate groups), in the cases the
// numbers alone decide: members a node or more apart, or blocks that tile
// the nodes evenly. The search costs hundreds of thousands of strategies on
// clusters of thousands of nodes, where walking the groups dominates.
std::optional<group_placement> regular_placement(std::int64_t stride, std::int64_t n, std::int64_t g) {
  group_placement p;
  p.size = n;
  if (n <= 1) return p;
  if (stride >= g) {
    p.nodes = n;
    p.max_per_node = 1;
    return p;
  }
  if (g % stride != 0) return std::nullopt;
  auto const span = n * stride;
  if (span <= g && g % span == 0) {
    p.nodes = 1;
    p.max_per_node = n;
    return p;
  }
  if (span % g == 0) {
    p.nodes = span / g;
    p.max_per_node = g / stride;
    return p;
  }
  return std::nullopt;
}

}  // namespace

// A group whose members sit `stride` ranks apart has the same placement as
// any other whose first member has the same offset within its node: the
// worst over all groups is the worst over the (at most gpus_per_node)
// offsets the layout's other axes can start a group at.
std::vector<char> rank_layout::start_offsets(std::vector<std::pair<std::int64_t, std::int64_t>> const& terms) const {
  auto const g = gpus_per_node_;
  std::vector<char> reach(static_cast<std::size_t>(g), 0);
  reach[0] = 1;
  for (auto const& [stride, count] : terms) {
    // c x stride modulo g repeats within g steps.
    auto const steps = std::min(count, g);
    std::vector<char> next(static_cast<std::size_t>(g), 0);
    for (std::int64_t r = 0; r < g; ++r) {
      if (!reach[static_cast<std::size_t>(r)]) continue;
      for (std::int64_t c = 0; c < steps; ++c) next[static_cast<std::size_t>((r + c * (stride % g)) % g)] = 1;
    }
    reach = std::move(next);
  }
  return reach;
}

group_placement rank_layout::worst_strided(std::vector<char> const& offsets, std::int64_t stride,
                                           std::int64_t n) const {
  auto const g = gpus_per_node_;
  group_placement worst;
  worst.size = n;
  worst.nodes = 0;
  worst.max_per_node = 0;
  for (std::int64_t rho = 0; rho < g; ++rho) {
    if (!offsets[static_cast<std::size_t>(rho)]) continue;
    // Member k sits at rho + k x stride, on node (rho + k x stride) / g.
    group_placement p;
    p.size = n;
    if (n <= 1 || stride >= g) {
      // One member per node.
      p.nodes = std::max<std::int64_t>(1, n);
      p.max_per_node = std::min<std::int64_t>(1, n);
    } else {
      // Members closer than a node: every node from 0 to the last member's
      // holds some. Node j holds the k with j g <= rho + k stride < (j+1) g.
      auto const last = (rho + (n - 1) * stride) / g;
      p.nodes = last + 1;
      auto first_member = [&](std::int64_t j) {  // the first k at or after node j
        auto const from = j * g - rho;
        return from <= 0 ? 0 : std::min(n, (from + stride - 1) / stride);
      };
      auto held = [&](std::int64_t j) { return first_member(j + 1) - first_member(j); };
      p.max_per_node = std::max(held(0), held(last));
      // The nodes between hold floor or ceil of g / stride members, in a
      // pattern that repeats every stride / gcd(g, stride) nodes: one period
      // holds every count the rest do.
      auto const period = stride / std::gcd(g, stride);
      for (std::int64_t j = 1; j < last && j <= period; ++j) p.max_per_node = std::max(p.max_per_node, held(j));
    }
    if (p.nodes > worst.nodes || (p.nodes == worst.nodes && p.max_per_node > worst.max_per_node)) worst = p;
  }
  return worst;
}

std::vector<std::pair<std::int64_t, std::int64_t>> rank_layout::other_axes(int skip) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (int a = 0; a < 4; ++a)
    if (a != skip) out.emplace_back(strides_[a], sizes_[a]);
  return out;
}

group_placement rank_layout::placement(axis a) const {
  auto const i = static_cast<int>(a);
  if (auto p = regular_placement(strides_[i], sizes_[i], gpus_per_node_)) return *p;
  return worst_strided(start_offsets(other_axes(i)), strides_[i], sizes_[i]);
}

group_placement rank_layout::placement(axis a, axis b) const {
  auto const i = static_cast<int>(a);
  auto const j = static_cast<int>(b);
  auto others = other_axes(i);
  std::erase_if(others, [&](auto const& t) { return t.first == strides_[j] && t.second == sizes_[j]; });
  return placement_of_terms({{strides_[i], sizes_[i]}, {strides_[j], sizes_[j]}}, others);
}

group_placement rank_layout::placement_of_terms(std::vector<std::pair<std::int64_t, std::int64_t>> group,
                                                std::vector<std::pair<std::int64_t, std::int64_t>> const& others) const {
  auto const g = gpus_per_node_;
  std::erase_if(group, [](auto const& t) { return t.second <= 1; });
  std::int64_t n = 1;
  for (auto const& t : group) n *= t.second;
  if (group.empty()) return {};
  std::sort(group.begin(), group.end());
  // One run of ranks: inner x size = outer stride, chained.
  if (group.size() == 2 && group[0].first * group[0].second == group[1].first)
    group = {{group[0].first, n}};
  auto const single = [&](std::pair<std::int64_t, std::int64_t> const& t,
                          std::vector<std::pair<std::int64_t, std::int64_t>> const& rest) {
    if (auto p = regular_placement(t.first, t.second, g)) return *p;
    return worst_strided(start_offsets(rest), t.first, t.second);
  };
  if (group.size() == 1) return single(group[0], others);
  // The outer term moves whole nodes and starts past the inner run: the
  // group is copies of the inner run, each on nodes of its own.
  if (group.size() == 2 && group[1].first % g == 0 && group[1].first >= group[0].first * group[0].second) {
    auto p = single(group[0], others);
    p.size = n;
    p.nodes *= group[1].second;
    return p;
  }
  return walk_terms(group, others).worst;
}

std::vector<std::int64_t> rank_layout::shard_group_of(std::int64_t rank, std::int64_t shard_size) const {
  auto dp_group = group_of(axis::dp, rank);
  auto d = of(rank)[static_cast<int>(axis::dp)];
  auto first = (d / shard_size) * shard_size;
  return {dp_group.begin() + first, dp_group.begin() + first + shard_size};
}

std::vector<std::int64_t> rank_layout::replicate_group_of(std::int64_t rank, std::int64_t shard_size) const {
  auto dp_group = group_of(axis::dp, rank);
  auto d = of(rank)[static_cast<int>(axis::dp)];
  std::vector<std::int64_t> out;
  for (auto k = d % shard_size; k < static_cast<std::int64_t>(dp_group.size()); k += shard_size)
    out.push_back(dp_group[static_cast<std::size_t>(k)]);
  return out;
}

group_placement rank_layout::shard_placement(std::int64_t shard_size) const {
  auto const d = static_cast<int>(axis::dp);
  if (shard_size > 0 && sizes_[d] % shard_size == 0) {
    if (auto p = regular_placement(strides_[d], shard_size, gpus_per_node_)) return *p;
    auto terms = other_axes(d);
    terms.emplace_back(strides_[d] * shard_size, sizes_[d] / shard_size);
    return worst_strided(start_offsets(terms), strides_[d], shard_size);
  }
  return worst_over_ranks([&](std::int64_t r) { return shard_group_of(r, shard_size); });
}

group_placement rank_layout::replicate_placement(std::int64_t shard_size) const {
  auto const d = static_cast<int>(axis::dp);
  if (shard_size > 0 && sizes_[d] % shard_size == 0) {
    if (auto p = regular_placement(strides_[d] * shard_size, sizes_[d] / shard_size, gpus_per_node_)) return *p;
    auto terms = other_axes(d);
    terms.emplace_back(strides_[d], shard_size);
    return worst_strided(start_offsets(terms), strides_[d] * shard_size, sizes_[d] / shard_size);
  }
  return worst_over_ranks([&](std::int64_t r) { return replicate_group_of(r, shard_size); });
}


std::vector<std::int64_t> rank_layout::sync_group_of(std::int64_t rank) const {
  std::vector<std::int64_t> out;
  for (auto r : group_of(axis::dp, rank))
    for (auto q : group_of(axis::cp, r)) out.push_back(q);
  std::sort(out.begin(), out.end());
  return out;
}

rank_layout::member_order rank_layout::expert_order(std::int64_t rank, std::int64_t etp) const {
  auto const t = static_cast<int>(axis::tp), d = static_cast<int>(axis::dp), c = static_cast<int>(axis::cp);
  auto const tp = sizes_[t];
  auto co = of(rank);
  member_order o;
  // A sync group in rank order: the larger-stride axis of dp and cp outer
  // (the strides are a mixed radix, so the inner axis's whole run fits
  // under one step of the outer).
  auto const [inner, outer] = strides_[d] < strides_[c] ? std::pair{d, c} : std::pair{c, d};
  o.inner_size = sizes_[inner];
  o.inner_stride = strides_[inner];
  o.outer_stride = strides_[outer];
  o.size = sizes_[d] * sizes_[c];
  std::int64_t slice = 0;
  if (etp > 0 && etp < tp && tp % etp == 0) {
    o.slices = tp / etp;
    o.slice_stride = etp * strides_[t];
    slice = co[t] / etp;
    co[t] %= etp;
    o.size *= o.slices;
  }
  o.at_rank = ((co[outer] * sizes_[inner] + co[inner]) * o.slices) + slice;
  co[d] = co[c] = 0;
  o.base = rank_of(co);
  return o;
}

std::int64_t rank_layout::member_order::operator[](std::int64_t m) const {
  auto const i = m / slices;
  return base + (m % slices) * slice_stride + (i % inner_size) * inner_stride + (i / inner_size) * outer_stride;
}

std::vector<std::int64_t> rank_layout::expert_members_of(std::int64_t rank, std::int64_t etp) const {
  auto const o = expert_order(rank, etp);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(o.size));
  for (std::int64_t m = 0; m < o.size; ++m) out.push_back(o[m]);
  return out;
}

std::vector<std::int64_t> rank_layout::expert_group_of(std::int64_t rank, std::int64_t ep, std::int64_t etp) const {
  auto const o = expert_order(rank, etp);
  auto const first = o.at_rank / ep * ep;
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(std::min(ep, o.size - first)));
  for (auto m = first; m < std::min(first + ep, o.size); ++m) out.push_back(o[m]);
  return out;
}

std::vector<std::int64_t> rank_layout::expert_data_group_of(std::int64_t rank, std::int64_t ep,
                                                            std::int64_t etp) const {
  auto const o = expert_order(rank, etp);
  std::vector<std::int64_t> out;
  for (auto m = o.at_rank % ep; m < o.size; m += ep) out.push_back(o[m]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::int64_t> rank_layout::expert_shard_group_of(std::int64_t rank, std::int64_t ep, std::int64_t etp,
                                                             shard_layout const& k) const {
  auto const mine = shard_index(rank, k);
  std::vector<std::int64_t> out;
  for (auto q : expert_data_group_of(rank, ep, etp))
    if (shard_index(q, k) == mine) out.push_back(q);
  return out;
}

std::int64_t rank_layout::shard_index(std::int64_t rank, shard_layout const& k) const {
  // Under `dp_block` the dp coordinate's block; under `node`, where every
  // node holds the same n members of each sync group, the position in the
  // sync group (ascending: the expert order without tensor-parallel
  // slices) over n, a node's members being consecutive in it; else found
  // in the replicate group.
  switch (k.k) {
    case shard_layout::kind::whole: return 0;
    case shard_layout::kind::dp_block:
      if (k.dp_block > 0) return of(rank)[static_cast<int>(axis::dp)] / k.dp_block;
      break;
    case shard_layout::kind::node:
      if (auto const n = node_sync_members(); n > 0) return expert_order(rank, sizes_[static_cast<int>(axis::tp)]).at_rank / n;
      break;
  }
  auto const replicas = replicate_group_of(rank, k);
  return std::find(replicas.begin(), replicas.end(), rank) - replicas.begin();
}

std::int64_t rank_layout::node_sync_members() const {
  auto const d = static_cast<int>(axis::dp);
  auto const c = static_cast<int>(axis::cp);
  auto const n = sizes_[d] * sizes_[c];
  if (n == 1) return 1;
  auto const g = gpus_per_node_;
  // One run of ranks `stride` apart (one axis of size 1, or cp and dp
  // adjacent in the order): every group's nodes hold equal shares exactly
  // when the run tiles the nodes, which regular_placement decides.
  auto run = [&]() -> std::optional<std::pair<std::int64_t, std::int64_t>> {
    if (sizes_[d] == 1) return std::pair{strides_[c], n};
    if (sizes_[c] == 1) return std::pair{strides_[d], n};
    auto const [inner, outer] = strides_[d] < strides_[c] ? std::pair{d, c} : std::pair{c, d};
    if (strides_[inner] * sizes_[inner] == strides_[outer]) return std::pair{strides_[inner], n};
    return std::nullopt;
  }();
  if (run) {
    auto p = regular_placement(run->first, run->second, g);
    return p ? p->max_per_node : 0;
  }
  // The outer axis moves whole nodes: each copy of the inner run sits on
  // nodes of its own.
  auto const [inner, outer] = strides_[d] < strides_[c] ? std::pair{d, c} : std::pair{c, d};
  if (strides_[outer] % g == 0) {
    auto p = regular_placement(strides_[inner], sizes_[inner], g);
    return p ? p->max_per_node : 0;
  }
  // Any other order (an axis between cp and dp that does not move whole
  // nodes): the node-local parts of a sync group are not one run of ranks,
  // and dtplan does not form shard groups from them.
  return 0;
}

rank_layout::walked rank_layout::walk_terms(std::vector<std::pair<std::int64_t, std::int64_t>> const& group,
                                            std::vector<std::pair<std::int64_t, std::int64_t>> const& others) const {
  auto const g = gpus_per_node_;
  auto const offsets = start_offsets(others);
  auto terms = group;
  std::sort(terms.begin(), terms.end());
  std::int64_t members = 1;
  for (auto const& t : terms) members *= t.second;
  // Members in ascending order, outer term major: every inner run fits
  // below the next outer step (a term's stride is the product of the axes
  // inside it), so the walk needs no sort and no list.
  auto for_each_member = [&](std::int64_t rho, auto&& visit) {
    if (terms.size() == 1) {
      for (std::int64_t a = 0; a < terms[0].second; ++a) visit(rho + a * terms[0].first);
      return;
    }
    for (std::int64_t b = 0; b < terms[1].second; ++b)
      for (std::int64_t a = 0; a < terms[0].second; ++a) visit(rho + b * terms[1].first + a * terms[0].first);
  };
  // Bounded work: 2^20 member visits in all; past it only the offsets walked count.
  constexpr std::int64_t budget = std::int64_t{1} << 20;
  walked out;
  out.worst.size = members;
  out.worst.nodes = 0;
  out.worst.max_per_node = 0;
  bool complete = true, even = true;
  std::int64_t share = 0, visited = 0;
  for (std::int64_t rho = 0; rho < g; ++rho) {
    if (!offsets[static_cast<std::size_t>(rho)]) continue;
    if (visited + members > budget && out.worst.nodes > 0) {
      complete = false;
      break;
    }
    visited += members;
    group_placement p;
    p.size = members;
    p.nodes = 0;
    p.max_per_node = 0;
    std::int64_t node = -1, held = 0;
    auto close = [&] {
      if (held == 0) return;
      ++p.nodes;
      p.max_per_node = std::max(p.max_per_node, held);
      if (share == 0) share = held;
      even = even && held == share;
    };
    for_each_member(rho, [&](std::int64_t r) {
      if (r / g != node) {
        close();
        node = r / g;
        held = 0;
      }
      ++held;
    });
    close();
    if (p.nodes > out.worst.nodes || (p.nodes == out.worst.nodes && p.max_per_node > out.worst.max_per_node))
      out.worst = p;
  }
  out.even_share = complete && even ? share : 0;
  return out;
}

shard_layout sharding_of(strategy const& s) {
  switch (s.shard.k) {
    case shard_group::kind::all: return {};
    case shard_group::kind::node: return {shard_layout::kind::node, 0};
    case shard_group::kind::size:
      if (s.shard.size >= s.dp) return {};
      return {shard_layout::kind::dp_block, s.shard.size};
  }
  return {};
}

std::int64_t rank_layout::shard_ranks(shard_layout const& k) const {
  auto const cp = sizes_[static_cast<int>(axis::cp)];
  switch (k.k) {
    case shard_layout::kind::whole: return sizes_[static_cast<int>(axis::dp)] * cp;
    case shard_layout::kind::dp_block: return k.dp_block * cp;
    case shard_layout::kind::node: return node_sync_members();
  }
  return 1;
}

std::vector<std::int64_t> rank_layout::shard_group_of(std::int64_t rank, shard_layout const& k) const {
  switch (k.k) {
    case shard_layout::kind::whole: return sync_group_of(rank);
    case shard_layout::kind::dp_block: {
      std::vector<std::int64_t> out;
      for (auto r : shard_group_of(rank, k.dp_block))
        for (auto q : group_of(axis::cp, r)) out.push_back(q);
      std::sort(out.begin(), out.end());
      return out;
    }
    case shard_layout::kind::node: {
      auto out = sync_group_of(rank);
      std::erase_if(out, [&](std::int64_t r) { return node_of(r) != node_of(rank); });
      return out;
    }
  }
  return {rank};
}

std::vector<std::int64_t> rank_layout::replicate_group_of(std::int64_t rank, shard_layout const& k) const {
  switch (k.k) {
    case shard_layout::kind::whole: return {rank};
    case shard_layout::kind::dp_block: return replicate_group_of(rank, k.dp_block);
    case shard_layout::kind::node: {
      auto const sync = sync_group_of(rank);
      auto const mine = shard_group_of(rank, k);
      auto const at = std::find(mine.begin(), mine.end(), rank) - mine.begin();
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < sync.size();) {
        std::size_t j = i;
        while (j < sync.size() && node_of(sync[j]) == node_of(sync[i])) ++j;
        if (at < static_cast<std::ptrdiff_t>(j - i)) out.push_back(sync[i + static_cast<std::size_t>(at)]);
        i = j;
      }
      return out;
    }
  }
  return {rank};
}

group_placement rank_layout::shard_placement(shard_layout const& k) const {
  auto const d = static_cast<int>(axis::dp);
  auto const c = static_cast<int>(axis::cp);
  switch (k.k) {
    case shard_layout::kind::whole: return placement(axis::dp, axis::cp);
    case shard_layout::kind::node: {
      group_placement p;
      p.size = p.max_per_node = node_sync_members();
      p.nodes = 1;
      return p;
    }
    case shard_layout::kind::dp_block: {
      if (k.dp_block >= sizes_[d]) return placement(axis::dp, axis::cp);
      if (sizes_[c] == 1) return shard_placement(k.dp_block);
      auto others = other_axes(d);
      std::erase_if(others, [&](auto const& t) { return t.first == strides_[c] && t.second == sizes_[c]; });
      others.emplace_back(strides_[d] * k.dp_block, sizes_[d] / k.dp_block);
      return placement_of_terms({{strides_[d], k.dp_block}, {strides_[c], sizes_[c]}}, others);
    }
  }
  return {};
}

group_placement rank_layout::replicate_placement(shard_layout const& k) const {
  auto const n = sizes_[static_cast<int>(axis::dp)] * sizes_[static_cast<int>(axis::cp)];
  switch (k.k) {
    case shard_layout::kind::whole: return {};
    case shard_layout::kind::dp_block:
      if (k.dp_block >= sizes_[static_cast<int>(axis::dp)]) return {};
      return replicate_placement(k.dp_block);
    case shard_layout::kind::node: {
      auto const members = node_sync_members();
      group_placement p;
      p.size = members > 0 ? n / members : 1;
      p.nodes = p.size;
      p.max_per_node = 1;
      return p;
    }
  }
  return {};
}

}  // namespace dtplan::planner
