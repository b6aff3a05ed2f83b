#include "planner/model/nccl.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace dtplan::planner::nccl {

char const* name(algorithm a) {
  switch (a) {
    case algorithm::ring: return "ring";
    case algorithm::tree: return "tree";
    case algorithm::pat: return "pat";
    case algorithm::nvls: return "nvls";
  }
  return "?";
}

char const* name(protocol p) {
  switch (p) {
    case protocol::ll: return "LL";
    case protocol::ll128: return "LL128";
    case protocol::simple: return "Simple";
  }
  return "?";
}

namespace {

// NCCL v2.30.7 src/graph/tuning.cc:149-175 (docs/research/nccl.md section
// 2), microseconds, indexed by protocol: LL, LL128, Simple.
using per_protocol = std::array<double, 3>;
constexpr per_protocol ring_base{6.6, 14.0, 8.4};
constexpr per_protocol tree_base{6.8, 14.0, 8.4};
constexpr per_protocol ring_nvlink_hop{0.6, 1.9, 3.4};
constexpr per_protocol tree_nvlink_hop{0.6, 1.25, 4.0};
constexpr per_protocol ring_net_hop{2.7, 4.0, 14.0};
constexpr per_protocol tree_net_hop{5.0, 8.5, 14.0};
constexpr double pat_base = 8.0, pat_nvlink_hop = 4.0, pat_net_hop = 14.0;
constexpr double nvls_nvlink_hop = 25.0;
// A ring across nodes waits at least this per intra-node step on the host's
// network proxy (Intel CPUs; x3 for Simple), tuning.cc:225-233, 404-410.
constexpr double net_overhead = 1.0;
// Simple all-reduce rings across nodes hit a latency plateau, x1.4 on
// Ampere and later (tuning.cc:647-650).
constexpr double ring_plateau = 1.4;

// Bandwidth of each protocol against the bus bandwidth (tuning.cc:307-337):
// LL moves 8 bytes of which 4 are data, capped; LL128 a 0.92 efficiency;
// a tree reaches 0.92 of the bus at most, under its per-channel ceiling;
// PAT 0.75. (NCCL's size correction of tree bandwidth, 0.4-1.0 between
// 64 B and 256 MiB, is left out: dtplan's messages are large.)
constexpr double ll128_share = 0.92;
constexpr double tree_share = 0.92;
constexpr double tree_ll_share = 1 / 3.8;
constexpr double pat_share = 0.75;

// LL's bandwidth ceiling, GB/s: on one node by generation, across nodes by
// node count (2, 4 or more) for Intel hosts (tuning.cc:178-211).
double ll_ceiling(generation gen, std::int64_t nodes) {
  if (nodes == 1) return gen == generation::ampere ? 87.7 : gen == generation::hopper ? 141.0 : 282.0;
  return nodes == 2 ? 39.0 : 20.4;
}

// A tree's per-channel ceiling, GB/s, by generation and node count (1, 2,
// 4 or more), for Simple and LL128 (tuning.cc:178-211), times the channels
// a DGX-class node's tree graph runs (one per NIC rail: 8, an assumption
// NCCL's logs support for ring graphs; docs/research/nccl.md section 3).
constexpr double tree_channels = 8;
double tree_ceiling(generation gen, std::int64_t nodes, protocol p) {
  int const at = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
  static constexpr std::array<std::array<double, 3>, 3> simple{{{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
  static constexpr std::array<std::array<double, 3>, 3> ll128{{{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
  auto const g = static_cast<std::size_t>(gen);
  return tree_channels * (p == protocol::ll128 ? ll128[g][static_cast<std::size_t>(at)] : simple[g][static_cast<std::size_t>(at)]) * 1e9;
}

std::int64_t floor_log2(std::int64_t n) { return n <= 1 ? 0 : std::bit_width(static_cast<std::uint64_t>(n)) - 1; }

struct candidate {
  algorithm algo;
  protocol proto;
  double latency_us;
  double bus;  // bytes/s the bytes moved run at
};

double moved(collective op, double size, std::int64_t n) {
  double const share = static_cast<double>(n - 1) / static_cast<double>(n);
  return op == collective::all_reduce ? 2 * share * size : share * size;
}

}  // namespace

seconds all_to_all_transfer(bytes network, bytes nvlink, group const& g) {
  bandwidth const nic = g.nic.value() > 0 ? g.nic : g.bus;
  bandwidth const scale_up = g.scale_up.value() > 0 ? g.scale_up : g.bus;
  seconds const over_network = network.value() > 0 ? network / nic : seconds(0);
  seconds const over_nvlink = nvlink.value() > 0 ? nvlink / scale_up : seconds(0);
  return over_network < over_nvlink ? over_nvlink : over_network;
}

choice best(collective op, bytes size, group const& g) {
  auto const n = g.ranks;
  auto const nodes = g.nodes;
  double const bus = g.bus.value();
  choice out;
  if (op == collective::send_recv) {
    double const hop = g.hop_latency ? g.hop_latency->value() * 1e6 : (nodes > 1 ? ring_net_hop[2] : ring_nvlink_hop[2]);
    out.latency = seconds(hop * 1e-6);
    out.time = out.latency + seconds(size.value() / bus);
    return out;
  }
  if (n <= 1 || size.value() <= 0) return out;
  bool const all_reduce = op == collective::all_reduce;
  std::int64_t const steps = all_reduce ? 2 * (n - 1) : n - 1;
  std::int64_t const net_steps = nodes <= 1 ? 0 : (all_reduce ? 2 * (nodes - 1) : nodes - 1);

  std::array<candidate, 8> cands{};
  std::size_t count = 0;
  if (g.hop_latency) {
    // A latency the user wrote: every step of a plain ring pays it.
    double const hop = g.hop_latency->value() * 1e6;
    cands[count++] = {algorithm::ring, protocol::simple, static_cast<double>(steps) * hop, bus};
  } else {
    for (int p = 0; p < 3; ++p) {
      auto const proto = static_cast<protocol>(p);
      double intra = ring_nvlink_hop[p];
      if (nodes > 1) intra = std::max(intra, net_overhead * (proto == protocol::simple ? 3 : 1));
      double const inter = g.per_node == 1 ? tree_net_hop[p] : ring_net_hop[p];
      double latency =
          ring_base[p] + static_cast<double>(steps - net_steps) * intra + static_cast<double>(net_steps) * inter;
      if (all_reduce && proto == protocol::simple && nodes > 1) latency *= ring_plateau;
      double const b = proto == protocol::simple ? bus
                       : proto == protocol::ll128 ? ll128_share * bus
                                                  : std::min(0.5 * bus, ll_ceiling(g.gen, nodes) * 1e9);
      cands[count++] = {algorithm::ring, proto, latency, b};
      if (all_reduce && nodes > 1) {
        double const tree_latency =
            tree_base[p] + 2 * (static_cast<double>(g.per_node - 1) * tree_nvlink_hop[p] +
                                static_cast<double>(floor_log2(nodes)) * tree_net_hop[p]);
        double const tb = proto == protocol::ll ? std::min(tree_ll_share * bus, ll_ceiling(g.gen, nodes) * 1e9)
                                                : std::min(tree_share * bus, tree_ceiling(g.gen, nodes, proto));
        cands[count++] = {algorithm::tree, proto, tree_latency, tb};
      }
    }
    if (!all_reduce && op != collective::all_to_all && g.per_node == 1 && nodes > 1)
      cands[count++] = {algorithm::pat, protocol::simple,
                        pat_base + static_cast<double>(floor_log2(nodes)) * pat_net_hop / 3.5 +
                            2.8 * static_cast<double>(n),
                        pat_share * bus};
    if (all_reduce && nodes == 1 && g.nvls_bus)
      cands[count++] = {algorithm::nvls, protocol::simple, nvls_nvlink_hop, g.nvls_bus->value()};
    static_cast<void>(pat_nvlink_hop);
  }
  double const bytes_moved = moved(op, size.value(), n);
  // An all-to-all across nodes: the share of its buffer for other nodes
  // over the member's own NIC, the share for its node's other members over
  // NVLink, each at the protocol's efficiency against the ring's bus.
  auto transfer = [&](candidate const& c) {
    if (op != collective::all_to_all || nodes <= 1 || g.nic.value() <= 0 || g.scale_up.value() <= 0)
      return bytes_moved / c.bus;
    double const efficiency = c.bus / bus;
    double const local = static_cast<double>(std::clamp<std::int64_t>(g.per_node, 1, n));
    double const off = size.value() * (static_cast<double>(n) - local) / static_cast<double>(n);
    double const on = size.value() * (local - 1) / static_cast<double>(n);
    return all_to_all_transfer(bytes(off / efficiency), bytes(on / efficiency), g).value();
  };
  for (std::size_t i = 0; i < count; ++i) {
    auto const& c = cands[i];
    seconds const t = seconds(c.latency_us * 1e-6 + transfer(c));
    if (i == 0 || t < out.time) out = {c.algo, c.proto, seconds(c.latency_us * 1e-6), t};
  }
  return out;
}

}  // namespace dtplan::planner::nccl
