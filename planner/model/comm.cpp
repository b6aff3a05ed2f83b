#include "planner/model/comm.hpp"

#include <algorithm>

namespace dtplan::planner {

link_choice link_for(cluster const& c, group_placement const& g) {
  bandwidth const nvlink = c.intra_node * c.comm_efficiency;
  if (!g.crosses_nodes()) return {nvlink, c.intra_latency, link_kind::intra};
  auto const per_node = c.gpus_per_node;
  auto const members = std::clamp<std::int64_t>(g.max_per_node, 1, per_node);
  bandwidth ring = c.inter_node * c.network_efficiency * (static_cast<double>(members) / static_cast<double>(per_node));
  if (members > 1) ring = min(ring, nvlink);
  return {ring, c.inter_latency, link_kind::inter};
}

nccl::group nccl_group(cluster const& c, training const& t, group_placement const& g, link_choice const& link) {
  nccl::group n;
  n.ranks = g.size;
  n.nodes = g.nodes;
  n.per_node = g.max_per_node;
  n.bus = link.bw;
  n.nic = c.inter_node * c.network_efficiency / static_cast<double>(std::max<std::int64_t>(1, c.gpus_per_node));
  n.scale_up = c.intra_node * c.comm_efficiency;
  switch (c.device.generation) {
    case gpu_generation::hopper: n.gen = nccl::generation::hopper; break;
    case gpu_generation::blackwell: n.gen = nccl::generation::blackwell; break;
    default: n.gen = nccl::generation::ampere; break;
  }
  if (t.nvls && c.device.nvls_bandwidth.value() > 0 && !g.crosses_nodes()) n.nvls_bus = c.device.nvls_bandwidth;
  char const* const key = g.crosses_nodes() ? "inter_latency" : "intra_latency";
  if (c.keys.count(key) || c.device.keys.count(key)) n.hop_latency = link.latency;
  return n;
}

bytes bytes_moved(collective op, bytes size, std::int64_t ranks) {
  if (op == collective::send_recv) return size;
  if (ranks <= 1) return bytes(0);
  double const n = static_cast<double>(ranks);
  double const share = (n - 1) / n;
  return op == collective::all_reduce ? size * (2 * share) : size * share;
}

std::int64_t latency_steps(collective op, std::int64_t ranks) {
  if (op == collective::send_recv) return 1;
  if (ranks <= 1) return 0;
  return op == collective::all_reduce ? 2 * (ranks - 1) : ranks - 1;
}

seconds collective_time(collective op, bytes size, std::int64_t ranks, bandwidth link, seconds latency) {
  if (op != collective::send_recv && ranks <= 1) return seconds(0);
  if (size.value() <= 0) return seconds(0);
  return latency * static_cast<double>(latency_steps(op, ranks)) + bytes_moved(op, size, ranks) / link;
}

seconds collective_time(collective op, bytes size, std::int64_t ranks, link_choice const& link) {
  return collective_time(op, size, ranks, link.bw, link.latency);
}

}  // namespace dtplan::planner
