#include "planner/model/layout.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

namespace dtplan::planner {

rank_layout::rank_layout(strategy const& s, std::int64_t gpus_per_node)
    : gpus_per_node_(std::max<std::int64_t>(1, gpus_per_node)) {
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
  std::sort(nodes.begin(), nodes.end());
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
  if (sizes_[i] == 1) return placement(b);
  if (sizes_[j] == 1) return placement(a);
  auto const n = sizes_[i] * sizes_[j];
  auto const [inner, outer] = strides_[i] < strides_[j] ? std::pair{i, j} : std::pair{j, i};
  if (strides_[inner] * sizes_[inner] == strides_[outer]) {
    if (auto p = regular_placement(strides_[inner], n, gpus_per_node_)) return *p;
  } else if (strides_[outer] % gpus_per_node_ == 0) {
    // The outer axis moves whole nodes and its stride exceeds the inner
    // group's span: the group is size(outer) copies of an inner group, each
    // on nodes of its own.
    if (auto p = regular_placement(strides_[inner], sizes_[inner], gpus_per_node_)) {
      p->size = n;
      p->nodes *= sizes_[outer];
      return *p;
    }
  }
  std::vector<std::int64_t> group;
  for (auto r : group_of(a, 0))
    for (auto q : group_of(b, r)) group.push_back(q);
  return placement_of(group);
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

std::int64_t shard_size(strategy const& s, std::int64_t gpus_per_node) {
  switch (s.shard.k) {
    case shard_group::kind::all: return s.dp;
    case shard_group::kind::size: return s.shard.size;
    case shard_group::kind::node: {
      rank_layout layout(s, gpus_per_node);
      auto p = layout.placement(axis::dp);
      // The dp ranks of one node form the shard group only when every
      // node holds the same whole number of them.
      if (p.max_per_node <= 0 || s.dp % p.max_per_node != 0) return 0;
      return layout.shard_placement(p.max_per_node).nodes == 1 ? p.max_per_node : 0;
    }
  }
  return s.dp;
}

}  // namespace dtplan::planner
