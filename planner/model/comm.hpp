#pragma once
#include <cstdint>

#include "planner/model/collective.hpp"
#include "planner/model/nccl.hpp"
#include "planner/ir/ir.hpp"
#include "planner/model/layout.hpp"
#include "planner/ir/units.hpp"

/// The communication side of the time model: which link a group's
/// collectives run over, and at what bandwidth.
namespace dtplan::planner {

/// The link one collective of a group runs over: the bandwidth a ring
/// step sees (comm_efficiency applied), the per-step latency, the kind.
struct link_choice {
  bandwidth bw;
  seconds latency;
  link_kind kind = link_kind::intra;
};

/// A group inside one node runs over the scale-up link (intra_node per
/// GPU). A group that spans nodes crosses the node's NICs (inter_node, all
/// NICs of a node together). Every GPU of a node belongs to some group of
/// the same kind and all those groups communicate at once (data-parallel
/// gradient syncs of the tensor-parallel ranks run together), so the
/// node's gpus_per_node / max_per_node concurrent groups share the NICs.
/// A ring crosses the node boundary once per direction whatever the number
/// of its members on the node (NCCL spreads its channels over all NICs), so
/// one group's ring runs at inter_node x max_per_node / gpus_per_node: the
/// per-GPU share of the NICs times the members that pool it. The intra-node
/// hops still bound it. With one GPU per node each GPU has its own share:
/// 8 nodes x 1 GPU on 100 Gbit/s links is 12.5 GB/s per ring step.
/// Inside a node the bandwidth is the measured NCCL ring bus bandwidth
/// (intra_node x comm_efficiency); across nodes the NICs' share at the
/// measured per-NIC efficiency (inter_node x network_efficiency).
link_choice link_for(cluster const& c, group_placement const& g);

/// The group as NCCL sees it: ranks, nodes, members per node, bus
/// bandwidth, the GPU's generation, NVLink SHARP where the GPU has it and
/// `training.nvls` allows it; a latency the cluster or GPU block writes
/// (intra_latency, inter_latency) replaces NCCL's per-step ones.
nccl::group nccl_group(cluster const& c, training const& t, group_placement const& g, link_choice const& link);

/// Bytes one member sends for a collective of `size` over `ranks` members
/// with ring algorithms: all-reduce 2(N-1)/N S, reduce-scatter, all-gather
/// and all-to-all (N-1)/N S, send/recv S.
bytes bytes_moved(collective op, bytes size, std::int64_t ranks);
/// Latency steps of the ring algorithm: 2(N-1) for all-reduce, N-1 for
/// reduce-scatter, all-gather and all-to-all, 1 for send/recv.
std::int64_t latency_steps(collective op, std::int64_t ranks);

/// The textbook ring (COSTMODEL.md): time of one collective of `size`
/// bytes over `ranks` members, each with `link` bytes/s per direction,
/// `latency` per step. The time model runs nccl::best instead.
seconds collective_time(collective op, bytes size, std::int64_t ranks, bandwidth link, seconds latency);

/// collective_time over a chosen link.
seconds collective_time(collective op, bytes size, std::int64_t ranks, link_choice const& link);

}  // namespace dtplan::planner
