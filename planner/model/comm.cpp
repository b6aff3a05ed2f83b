#include "planner/model/comm.hpp"

#include <algorithm>

namespace dtplan::planner {

link_choice link_for(cluster const& c, group_placement const& g) {
  double const eff = c.comm_efficiency;
  if (!g.crosses_nodes()) return {c.intra_node * eff, c.intra_latency, link_kind::intra};
  auto const per_node = c.gpus_per_node;
  auto const members = std::clamp<std::int64_t>(g.max_per_node, 1, per_node);
  bandwidth ring = c.inter_node * (static_cast<double>(members) / static_cast<double>(per_node));
  if (members > 1) ring = min(ring, c.intra_node);
  return {ring * eff, c.inter_latency, link_kind::inter};
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
