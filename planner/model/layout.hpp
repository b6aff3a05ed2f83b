#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "planner/ir/ir.hpp"

namespace dtplan::planner {

/// A rank's position on each parallel axis, indexed by `axis`.
using coords = std::array<std::int64_t, 4>;

/// How one communication group sits on the machines.
struct group_placement {
  std::int64_t size = 1;          ///< ranks in the group
  std::int64_t nodes = 1;         ///< distinct nodes the group spans (worst group)
  std::int64_t max_per_node = 1;  ///< most members of one group on one node
  [[nodiscard]] bool crosses_nodes() const { return nodes > 1; }
};

/// How ZeRO/FSDP state is split inside a gradient-sync group (the dp x cp
/// ranks that hold the same weights). `whole`: the whole sync group is one
/// shard group (`shard = all`). `dp_block`: blocks of `dp_block`
/// consecutive dp coordinates, each with every cp coordinate (`shard = N`:
/// N x cp ranks, as FSDP's dp_shard x cp mesh). `node`: the members of the
/// sync group that share a node (`shard = node`, hybrid sharding); legal
/// only where every node holds the same number of each group's members.
/// The replicate group of a rank is the sync group's members at the same
/// position inside their own shard group.
struct shard_layout {
  enum class kind { whole, dp_block, node };
  kind k = kind::whole;
  std::int64_t dp_block = 0;  ///< dp coordinates per shard group, for dp_block
  friend bool operator==(shard_layout const&, shard_layout const&) = default;
};

/// The shard layout a strategy's `shard` key asks for (a size of dp or more
/// is the whole sync group). Whether it forms is the check's question.
shard_layout sharding_of(strategy const& s);

/// The mapping between global ranks and (tp, cp, dp, pp) coordinates given
/// the strategy's `order` (innermost axis first: with "tp-cp-dp-pp", ranks
/// 0..tp-1 form the first tensor-parallel group). Node n holds ranks
/// [n*gpus_per_node, (n+1)*gpus_per_node).
class rank_layout {
 public:
  rank_layout(strategy const& s, std::int64_t gpus_per_node);

  [[nodiscard]] std::int64_t world() const { return world_; }
  [[nodiscard]] std::int64_t size(axis a) const { return sizes_[static_cast<int>(a)]; }
  [[nodiscard]] std::int64_t node_of(std::int64_t rank) const { return rank / gpus_per_node_; }
  [[nodiscard]] coords of(std::int64_t rank) const;
  [[nodiscard]] std::int64_t rank_of(coords const& c) const;
  /// The ranks that share every coordinate with `rank` except `a`, in
  /// order of their coordinate on `a`.
  [[nodiscard]] std::vector<std::int64_t> group_of(axis a, std::int64_t rank) const;
  /// The worst placement over every group of axis `a`.
  [[nodiscard]] group_placement placement(axis a) const;
  /// The placement of the group two axes span together (dp x cp, which
  /// syncs gradients): closed form when one axis sits directly inside the
  /// other in the rank order, else rank 0's group walked.
  [[nodiscard]] group_placement placement(axis a, axis b) const;

  /// Hybrid sharding splits the data-parallel group into shard groups of
  /// `shard_size` consecutive dp coordinates and replicate groups of the
  /// ranks with the same position inside their shard group.
  [[nodiscard]] std::vector<std::int64_t> shard_group_of(std::int64_t rank, std::int64_t shard_size) const;
  [[nodiscard]] std::vector<std::int64_t> replicate_group_of(std::int64_t rank, std::int64_t shard_size) const;
  [[nodiscard]] group_placement shard_placement(std::int64_t shard_size) const;
  [[nodiscard]] group_placement replicate_placement(std::int64_t shard_size) const;

  /// The ranks that hold the same weights as `rank` (every dp and cp
  /// coordinate, its tp and pp ones), ascending.
  [[nodiscard]] std::vector<std::int64_t> sync_group_of(std::int64_t rank) const;
  /// The ranks of `rank`'s stage that hold the same slice of the experts'
  /// weights (its tensor-parallel coordinate modulo `etp`) in the order the
  /// expert grid takes them: for each member of its sync group in turn, the
  /// tp / etp ranks of its tensor-parallel group with that slice (Megatron-
  /// Core's expert rank generator, order tp-ep-dp over the stage's tp x cp x
  /// dp ranks; core_v0.13.0 megatron/core/parallel_state.py). With etp = tp,
  /// the sync group itself.
  [[nodiscard]] std::vector<std::int64_t> expert_members_of(std::int64_t rank, std::int64_t etp) const;
  /// The expert-parallel group of `rank`: its block of `ep` consecutive
  /// expert members (with etp = tp, of its sync group: experts spread over
  /// the ranks that hold the same weights outside the experts; with cp > 1 a
  /// block can take context-parallel ranks, with etp = 1 tensor-parallel
  /// ones). `ep` divides the members' count.
  [[nodiscard]] std::vector<std::int64_t> expert_group_of(std::int64_t rank, std::int64_t ep, std::int64_t etp) const;
  /// The ranks that hold the same experts as `rank` and sum their gradients
  /// (Megatron-Core's expert data-parallel group, tp / etp x dp x cp / ep
  /// ranks): the expert members at its position in their blocks of `ep`,
  /// ascending.
  [[nodiscard]] std::vector<std::int64_t> expert_data_group_of(std::int64_t rank, std::int64_t ep,
                                                               std::int64_t etp) const;
  /// Under hybrid sharding `k`, the ranks of `rank`'s expert data-parallel
  /// group in the same shard group as it (the same position in their
  /// replicate groups): Megatron-Core's intra-instance expert data-parallel
  /// group (core_v0.13.0 parallel_state.py:1259-1320), torchtitan's
  /// dp_shard_mod_ep FSDP mesh. Ascending.
  [[nodiscard]] std::vector<std::int64_t> expert_shard_group_of(std::int64_t rank, std::int64_t ep, std::int64_t etp,
                                                                shard_layout const& k) const;
  /// The members of a sync group on one node when every node holds the same
  /// number of every sync group's members, in one run of ranks (or copies
  /// of one on nodes of their own): the size of a `shard = node` group; 0
  /// when they do not (and for rank orders that put another axis between cp
  /// and dp without moving whole nodes).
  [[nodiscard]] std::int64_t node_sync_members() const;
  /// The shard group of `rank` inside its sync group, ascending.
  [[nodiscard]] std::vector<std::int64_t> shard_group_of(std::int64_t rank, shard_layout const& k) const;
  /// The ranks of `rank`'s sync group at its position in their shard groups.
  [[nodiscard]] std::vector<std::int64_t> replicate_group_of(std::int64_t rank, shard_layout const& k) const;
  /// Which shard group of its sync group `rank` is in: its position in its
  /// replicate group (one member per shard group, in their order).
  [[nodiscard]] std::int64_t shard_index(std::int64_t rank, shard_layout const& k) const;
  /// Ranks per shard group.
  [[nodiscard]] std::int64_t shard_ranks(shard_layout const& k) const;
  /// The worst placement of shard and replicate groups.
  [[nodiscard]] group_placement shard_placement(shard_layout const& k) const;
  [[nodiscard]] group_placement replicate_placement(shard_layout const& k) const;

  /// The placement of an arbitrary set of ranks.
  [[nodiscard]] group_placement placement_of(std::vector<std::int64_t> const& ranks) const;

 private:
  template <class F>
  group_placement worst_over_ranks(F const& group_for) const;
  /// Which ranks modulo gpus_per_node are reachable as sums of c x stride
  /// (0 <= c < count) over `terms`: the node offsets groups can start at.
  [[nodiscard]] std::vector<char> start_offsets(std::vector<std::pair<std::int64_t, std::int64_t>> const& terms) const;
  /// The worst placement over groups of `n` members `stride` ranks apart
  /// whose first member sits at one of `offsets` within its node.
  [[nodiscard]] group_placement worst_strided(std::vector<char> const& offsets, std::int64_t stride,
                                              std::int64_t n) const;
  /// The worst placement over the groups {rho + sum k_i x stride_i} (k_i <
  /// size_i over `group`'s (stride, size) terms) whose first member can sit
  /// at any node offset rho the `others` terms reach, and the members every
  /// node holds when all those groups spread evenly (0 when they do not).
  /// Walks the members: on larger layouts only the first offsets are
  /// walked, and evenness is not claimed.
  struct walked {
    group_placement worst;
    std::int64_t even_share = 0;
  };
  /// The worst placement of groups made of one or two strided terms
  /// (members rho + sum k_i x stride_i), in closed form where the terms
  /// form one run or the outer one moves whole nodes, else walked.
  [[nodiscard]] group_placement placement_of_terms(std::vector<std::pair<std::int64_t, std::int64_t>> group,
                                                   std::vector<std::pair<std::int64_t, std::int64_t>> const& others) const;
  [[nodiscard]] walked walk_terms(std::vector<std::pair<std::int64_t, std::int64_t>> const& group,
                                  std::vector<std::pair<std::int64_t, std::int64_t>> const& others) const;
  /// (stride, size) of every axis but `skip`.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::int64_t>> other_axes(int skip) const;

  /// expert_members_of's order as a mixed radix, without building it:
  /// member m is slice m % slices of sync member m / slices, the sync
  /// members in rank order (inner axis of dp and cp fastest); `at_rank` is
  /// the position of the rank it was made for.
  struct member_order {
    std::int64_t base = 0;  ///< the first member
    std::int64_t slices = 1, slice_stride = 0;
    std::int64_t inner_size = 1, inner_stride = 0, outer_stride = 0;
    std::int64_t size = 1, at_rank = 0;
    [[nodiscard]] std::int64_t operator[](std::int64_t m) const;
  };
  [[nodiscard]] member_order expert_order(std::int64_t rank, std::int64_t etp) const;

  std::array<std::int64_t, 4> sizes_{};    // by axis
  std::array<std::int64_t, 4> strides_{};  // by axis
  std::int64_t world_ = 1;
  std::int64_t gpus_per_node_ = 1;
};

}  // namespace dtplan::planner
