#pragma once
#include <cstdint>
#include <optional>

#include "planner/ir/units.hpp"
#include "planner/model/collective.hpp"

/// How long NCCL takes for one collective: the algorithm and protocol it
/// picks and the time it predicts, restated from NCCL's own tuning model
/// (NVIDIA/nccl v2.30.7, src/graph/tuning.cc; docs/research/nccl.md has the
/// constants with file:line). NCCL evaluates every enabled (algorithm,
/// protocol) and runs the fastest: a ring pays 2(n-1) (all-reduce) or n-1
/// latency steps, a tree all-reduce 2 log2(nodes) network ones, PAT (one
/// rank per node, all-gather and reduce-scatter) log2(nodes). The bandwidth
/// a group reaches is measured hardware (the catalog's link figures), not
/// NCCL's guess.
namespace dtplan::planner::nccl {

enum class algorithm { ring, tree, pat, nvls };
enum class protocol { ll, ll128, simple };
char const* name(algorithm);
char const* name(protocol);

/// GPU generations NCCL's constants distinguish.
enum class generation { ampere, hopper, blackwell };

/// One communication group as NCCL sees it.
struct group {
  std::int64_t ranks = 1;
  std::int64_t nodes = 1;     ///< NVLink domains the group spans
  std::int64_t per_node = 1;  ///< most members on one node
  /// Bus bandwidth a ring over this group reaches, per rank: the measured
  /// NVLink ring figure inside a node, the NICs the members on a node
  /// share across nodes (comm.hpp's link_for).
  bandwidth bus;
  /// What an all-to-all's traffic runs at where the group spans nodes: each
  /// member's own share of its node's NICs (NCCL runs an all-to-all as
  /// point-to-point sends, each over the GPU's nearest NIC: it cannot pool
  /// a node's NICs the way a ring's channels do, hardware_facts.md B3), and
  /// the measured NVLink figure for the peers on its own node.
  bandwidth nic;
  bandwidth scale_up;
  generation gen = generation::hopper;
  /// NVLink SHARP all-reduce bus bandwidth when the node has it and NCCL
  /// may use it (NCCL_NVLS_ENABLE); nothing otherwise.
  std::optional<bandwidth> nvls_bus;
  /// A fixed per-step latency instead of NCCL's per-protocol hop latencies
  /// (a cluster's intra_latency / inter_latency written by the user).
  std::optional<seconds> hop_latency;
};

struct choice {
  algorithm algo = algorithm::ring;
  protocol proto = protocol::simple;
  seconds latency;  ///< the fixed part
  seconds time;     ///< latency + bytes at the algorithm's bandwidth
};

/// An all-to-all's two legs, which run at once: `network` bytes at each
/// member's NIC share and `nvlink` bytes over NVLink, the slower leg's time
/// (the ring's bus stands in for a figure the group lacks). NCCL's
/// all-to-all across nodes (best) and DeepEP's dispatch both run so.
seconds all_to_all_transfer(bytes network, bytes nvlink, group const& g);

/// The fastest (algorithm, protocol) for `op` of `size` bytes (the whole
/// buffer: the gathered tensor of an all-gather, the input of a
/// reduce-scatter) over `g`. Send/recv is one hop at the ring's bandwidth.
/// An all-to-all pays the ring's latency steps; across nodes its bytes for
/// other nodes run at the member's NIC share while those for its own node's
/// peers run over NVLink at once, the slower of the two its time (no PAT:
/// NCCL's PAT runs all-gathers and reduce-scatters only).
choice best(collective op, bytes size, group const& g);

}  // namespace dtplan::planner::nccl
