#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"
#include "planner/model/comm.hpp"
#include "planner/model/layout.hpp"
#include "planner/model/op_checkpoint.hpp"
#include "planner/model/params.hpp"

/// What a checked strategy *is* on the cluster: every quantity that memory,
/// compute, the cost model, the diagram, the skeleton and the advice derive
/// from a program and a strategy, derived once, here. Consumers read it and
/// re-derive nothing: no clamps, no re-defaulted keys (the IR is trusted
/// after lowering, and `shape_of` is only called on a legal strategy).
namespace dtplan::planner {

/// One GEMM: C[M,N] = A[M,K] x B[K,N], `batch` times.
struct gemm_shape {
  std::int64_t m = 1;
  std::int64_t n = 1;
  std::int64_t k = 1;
  std::int64_t batch = 1;
  friend bool operator==(gemm_shape const&, gemm_shape const&) = default;
};

/// What a layer's weight GEMM belongs to.
enum class gemm_role {
  attention,      ///< q/k/v and the o projection
  router,         ///< a mixture's router (16-bit even in fp8 training)
  shared_expert,  ///< a mixture's shared expert, a dense MLP beside the routed ones
  mlp,            ///< a dense model's MLP
  experts,        ///< a mixture's routed experts: `batch` is the GPU's local experts
};

/// A weight GEMM of a transformer layer, forward, on one GPU: `tokens`
/// rows times the layer's input width into its (tp-split) output width.
struct layer_gemm {
  char const* name = "";  ///< "qkv", "o-proj", "router", "shared-up", "shared-down", "mlp-up", "mlp-down";
                          ///< under MLA "q-down", "q-up" (or "q"), "kv-down", "kv-up", then "o-proj"
  gemm_shape forward;     ///< [rows, in] x [in, out]
  /// Output columns (n) the backward recomputes first under the
  /// strategy's checkpointing, in `recompute_batch` of the GEMM's batch
  /// (its local experts): all of them under `full`; under `ops` those
  /// torchtitan's policy does not keep (op_checkpoint_of).
  std::int64_t recompute_n = 0;
  std::int64_t recompute_batch = 0;
  gemm_role role = gemm_role::attention;
};

/// One communication group of the strategy: how many ranks, where its
/// members sit (the worst group of its kind), and the link its collectives
/// run over.
struct group_shape {
  std::int64_t size = 1;
  group_placement placement;
  link_choice link;
  nccl::group net;  ///< as NCCL sees it (its algorithm and latency choice)
  [[nodiscard]] bool active() const { return size > 1; }
};

/// Layers [first, last) of one pipeline chunk.
struct layer_range {
  std::int64_t first = 0;
  std::int64_t last = 0;
  friend bool operator==(layer_range const&, layer_range const&) = default;
};

/// One pipeline stage as one of its GPUs holds it.
struct stage_shape {
  std::int64_t layers = 0;   ///< transformer layers over all its chunks
  bool embedding = false;    ///< holds the input embedding (stage 0)
  bool output = false;       ///< holds the logits projection (the last stage, unless tied on one stage)
  bool final_norm = false;   ///< the last stage
  double params = 0;         ///< weights of one GPU of the stage, before ZeRO sharding
  double expert_params = 0;  ///< the experts' share of `params` (0 for a dense model)
  std::int64_t moe_layers = 0;  ///< of `layers`, those that are mixtures (all of a mixture's but its dense ones)
  /// Multi-token prediction modules (the last stage: model::mtp_layers),
  /// beside `layers`; `params` holds them and, where the embedding is on
  /// another stage and not tied to the output, the embedding's copy they
  /// read (core_v0.13.0 models/gpt/gpt_model.py:134-141, 540-562).
  std::int64_t mtp_layers = 0;
};

/// The groups of a strategy and the links they cross: what depends on the
/// parallel degrees, the rank order, the ZeRO stage and the shard key (the
/// search derives it once for every candidate that shares those).
struct shape_groups {
  group_shape tp, cp, dp, pp;
  group_shape ep;         ///< experts over blocks of ep expert members (dp x cp ranks; with etp = 1, tp x dp x cp)
  group_shape sync;       ///< dp x cp: the ranks that hold the same weights and sum their gradients
  shard_layout sharding;  ///< the ZeRO shard group inside `sync`
  group_shape shard;      ///< ZeRO/FSDP shard group: ZeRO-1/2/3 state is split over its ranks (1: none)
  group_shape replicate;  ///< the ranks holding the same shard (sync / shard of them)
  /// tp / etp x dp x cp / ep: the ranks that hold the same experts and sum
  /// their gradients, one in each block of ep
  /// (rank_layout::expert_data_group_of); `sync` itself when ep = 1 and
  /// etp = tp.
  group_shape expert_sync;
  /// Under hybrid sharding, the ranks of `expert_sync` in this rank's shard
  /// group: the experts' ZeRO shards and reduce-scatters run over them, the
  /// replicas' all-reduce over `replicate` (rank_layout::
  /// expert_shard_group_of); `expert_sync` itself without hybrid sharding.
  group_shape expert_shard;
  group_shape embedding;  ///< first and last stage, for a tied embedding split over a pipeline
  /// ZeRO-sharded state at stage `zero` is split over this many ranks (1
  /// when it is not).
  [[nodiscard]] std::int64_t shard_ranks(int zero) const { return zero >= 1 ? shard.size : 1; }
};

/// What a shape reads of its program that no strategy changes: a search
/// derives it once for all its candidates rather than once a shape.
struct program_facts {
  param_counts params;  ///< count_params(model)
  flops model_flops;    ///< model_flops_per_step(program)
};

/// The most weight GEMMs a layer runs: multi-latent attention's five, a
/// router, a shared expert's two and the MLP's two.
inline constexpr std::size_t max_layer_gemms = 10;

struct strategy_shape : shape_groups {
  strategy s;                    ///< as checked: dp derived, sequence_parallel only with tp > 1
  std::int64_t gpus_per_node = 1;
  std::int64_t world = 1;        ///< dp x tp x pp x cp
  std::int64_t grad_accum = 1;   ///< micro-batches per step on each data-parallel rank
  std::int64_t seq_local = 1;    ///< seq_len / cp: the sequence one GPU holds
  std::int64_t tokens = 1;       ///< rows of one micro-batch on one GPU: micro_batch x seq_len / cp
  /// Divisor of the tensors tensor parallelism replicates: tp with sequence
  /// parallelism (norms, residuals and dropout see tokens / tp), else 1.
  std::int64_t sp_divisor = 1;

  // The model as one GPU holds it.
  std::int64_t head_dim = 1;
  /// A query or key head's width and a value head's: head_dim, or under
  /// multi-latent attention head_dim + qk_rope_head_dim and v_head_dim.
  std::int64_t qk_head_dim = 1;
  std::int64_t v_head_dim = 1;
  std::int64_t q_width = 1;      ///< heads x qk_head_dim
  std::int64_t kv_width = 1;     ///< kv_heads x head_dim (model::kv_width under MLA)
  /// The keys' (and values') width context parallelism's ring moves and
  /// holds: kv_width, or q_width for PyTorch's ring, which runs on SDPA's
  /// inputs expanded to the query's heads (cp_comm_type).
  std::int64_t cp_kv_width = 1;
  std::int64_t local_heads = 1;  ///< heads / tp
  /// The unfused attention path's softmax runs as PyTorch's fp32 operators:
  /// the framework's fused kernel does not take this shape (kernels.hpp
  /// softmax_falls_back).
  bool softmax_fp32 = false;
  std::int64_t active_experts = 1;  ///< experts one token goes through
  std::int64_t local_experts = 1;   ///< experts one GPU holds (experts / ep; 1 for a dense model)
  std::int64_t mlp_tokens = 1;      ///< rows of each local expert's GEMMs
  /// Routed rows as a share of k copies of the rank's tokens (routed_share):
  /// 1 dropless, the capacity's share with capacity_factor.
  double routed_share = 1;
  /// Rows the busiest GPU's experts receive, as a share of k copies of a
  /// rank's tokens (routing_load): routed_share under an even routing.
  double received_share = 1;
  std::int64_t padded_vocab = 1;    ///< vocab padded to a multiple of 128 x tp (Megatron)
  std::int64_t local_vocab = 1;     ///< padded_vocab / tp: logits columns one GPU computes
  double layer_params = 0;   ///< one layer's weights on one GPU (tp/ep split; norms and router replicated)
  double layer_expert_params = 0;  ///< the experts' share of layer_params (0 for a dense model)
  /// A mixture's dense layer (model::dense_layers, moe_layer_freq) on one
  /// GPU: attention and norms as layer_params, an MLP ffn wide over tp;
  /// layer_params for a dense model.
  double dense_layer_params = 0;
  double vocab_params = 0;   ///< one (padded) vocabulary table on one GPU
  /// One multi-token prediction module on one GPU: a layer of the last
  /// layer's kind, its projection (2 hidden x hidden / tp, column-parallel)
  /// and three norms; and the experts' share of it (model::mtp_moe).
  double mtp_params = 0;
  double mtp_expert_params = 0;
  double final_norm_params = 0;  ///< the final norm (on the last stage)

  /// A mixture's dense layers as a program of their own
  /// (dense_layer_program of *prog), where the caller keeps one for many
  /// shapes (the search); null: built where needed.
  program const* dense_twin = nullptr;
  program_facts facts;  ///< of *prog

  /// The layer's weight GEMMs on one GPU, in the order they run: the
  /// attention's two (qkv, o-proj) or multi-latent attention's five, then
  /// the router, shared expert and MLP.
  std::array<layer_gemm, max_layer_gemms> gemms{};
  int gemm_count = 0;
  /// Under checkpoint = ops, how torchtitan's policy wraps a layer
  /// (op_checkpoint_of, whose products the GEMMs' recompute_n follow).
  op_wrapping ops;
  gemm_shape logits;  ///< [tokens, hidden] x [hidden, local_vocab]
  /// A multi-token prediction module's projection, [tokens, 2 hidden] x
  /// [2 hidden, hidden / tp] (model::mtp_layers; unset without one).
  gemm_shape mtp_projection;

  // The pipeline.
  std::int64_t chunks = 1;            ///< pp x virtual_stages; chunk c runs on stage c % pp
  layer_split split;                  ///< how the layers sit on the chunks (dtplan's or Megatron-Core's)
  std::int64_t max_stage_layers = 0;  ///< the most layers any stage holds
  /// Of the max_stage_layers of a fullest stage, the mixtures: of the
  /// stages with the most layers, the most mixtures (all of a mixture's
  /// without dense layers; 0 for a dense model).
  std::int64_t costed_moe_layers = 0;
  std::int64_t heaviest_stage = 0;    ///< the stage with the most weights (its gradients sync last)

  /// Layers on stage `r` (every chunk of it).
  [[nodiscard]] std::int64_t stage_layers(std::int64_t r) const;
  /// Layers of chunk `c` (0 <= c < chunks), as `split` places them.
  [[nodiscard]] std::int64_t chunk_layers(std::int64_t c) const;
  /// The layers of stage `r`'s chunks, in the order it runs them.
  [[nodiscard]] std::vector<layer_range> stage_ranges(std::int64_t r) const;
  /// The layers of pipeline chunk `c`.
  [[nodiscard]] layer_range chunk_range(std::int64_t c) const;
  /// Stage `r` as one of its GPUs holds it.
  [[nodiscard]] stage_shape stage(std::int64_t r) const;
  /// Whether only the first and last stages can be the fullest or the
  /// heaviest: dtplan's split of a model of one layer kind puts the most
  /// layers on stage 0 and the output on the last. A mixture's dense
  /// layers, or Megatron's split, can make any stage either.
  [[nodiscard]] bool ends_only() const;
  /// Of the layers of stage `r`, those that are mixtures of experts.
  [[nodiscard]] std::int64_t stage_moe_layers(std::int64_t r) const;
  /// The weights of `layers` layers of which `moe` are mixtures, on one GPU.
  [[nodiscard]] double layers_params(std::int64_t layers, std::int64_t moe) const {
    return static_cast<double>(moe) * layer_params + static_cast<double>(layers - moe) * dense_layer_params;
  }
  /// Calls of each expert GEMM (`layer_gemm::expert`) a layer issues: one,
  /// or a call per local expert where they run one after another
  /// (training.grouped_gemm = false).
  [[nodiscard]] std::int64_t expert_gemm_calls() const {
    return prog->training.grouped_gemm ? 1 : local_experts;
  }
  /// Calls a layer issues of GEMM `g`: expert_gemm_calls() for the routed
  /// experts' (each call `g.forward.batch / calls` of them), else one.
  [[nodiscard]] std::int64_t calls_of(layer_gemm const& g) const {
    return g.role == gemm_role::experts ? expert_gemm_calls() : 1;
  }
  /// ZeRO-sharded state is split over this many ranks (1 when it is not).
  [[nodiscard]] std::int64_t shard_ranks() const { return shape_groups::shard_ranks(s.zero); }
  /// The experts' ZeRO-sharded state is split over this many ranks: those
  /// of the shard group, widened over the tp / etp ranks that hold the same
  /// expert slice, that hold the same experts, one in each block of ep
  /// (Megatron-Core's expert data-parallel group, tp / etp x dp x cp / ep;
  /// core_v0.13.0 megatron/core/parallel_state.py,
  /// expert_data_parallel_group). 1 when not sharded.
  [[nodiscard]] std::int64_t expert_shard_ranks() const {
    if (s.zero < 1) return 1;
    auto const widened = shard_ranks() * s.expert_slice_ranks();
    return s.ep > 1 ? std::max<std::int64_t>(1, widened / s.ep) : widened;
  }
  /// A mixture's expert gradients are summed over `expert_sync` (and their
  /// ZeRO shards formed there; under hybrid sharding over `expert_shard`,
  /// then across the replicas), apart from the dense weights': with ep > 1
  /// or etp < tp.
  [[nodiscard]] bool experts_sync_apart() const {
    bool const grid = (s.ep > 1 && expert_sync.size < sync.size) || s.expert_tp() != s.tp;
    return grid && layer_expert_params > 0;
  }
  /// ZeRO's shard groups are smaller than the sync group (hybrid sharding):
  /// the replicas all-reduce each shard's gradient slice.
  [[nodiscard]] bool hybrid() const { return s.zero >= 1 && shard.size < sync.size; }
  /// `shard = node` or a size whose shard group has one rank: the stage
  /// shards nothing (the check warns).
  [[nodiscard]] bool shards_nothing() const {
    return s.zero >= 1 && sync.size > 1 && shard.size == 1;
  }

  /// ZeRO-3 with pipelining that keeps a stage's weights gathered and its
  /// gradients unsharded through the step (training.fsdp_reshard_with_pp =
  /// false: torchtitan), gathering and reduce-scattering each layer once.
  [[nodiscard]] bool stage_kept_gathered() const {
    return s.zero == 3 && shard_ranks() > 1 && s.pp > 1 && !prog->training.fsdp_reshard_with_pp;
  }

  program const* prog = nullptr;  ///< what it was derived from (outlives the shape)
};

/// The routed rows a mixture's experts compute and its dispatcher moves, as
/// a share of k copies of each of a rank's `router_tokens` routed evenly: 1
/// dropless; with a capacity of ceil(k x T / experts x capacity_factor) an
/// expert (Megatron-Core core_v0.13.0 moe/moe_utils.py:166-182, 529-640),
/// capacity over the even share when padded to it, else at most 1 (an even
/// routing drops nothing at a factor of 1 or more).
double routed_share(model const& m, double router_tokens);
/// The rows the busiest GPU of an expert-parallel group of `ep` receives,
/// as a share of k copies of each rank's `router_tokens`: under a skew
/// (model.routing_imbalance r) the GPU holds the most loaded expert, r
/// times the mean, and L - 1 more (L = experts / ep) sharing the rest of
/// the experts' tokens evenly, (r + (L - 1)(E - r) / (E - 1)) / L of its even
/// share: r with one expert a GPU, 1 with every expert on it. A capacity
/// caps it (padded: exactly the capacity). routed_share where r is 1.
double routing_load(model const& m, std::int64_t ep, double router_tokens);
/// The distinct blocks of experts one token's experts fall in, expected,
/// the experts cut into `blocks` equal runs (the GPUs or the nodes of an
/// expert-parallel group): each of the k experts from a group the token's
/// router chose (model::router_groups, router_group_topk: k / topk from each
/// of topk groups, chosen alike), else k of all alike. A block is missed
/// where no chosen group holds its experts or the group's picks avoid them;
/// the count over the first block's groups holds for every block where
/// blocks and groups nest. DeepSeek-V3's 8 experts of 256 over 8 nodes:
/// 5.29 nodes a token from all, 4.0 from 4 of 8 groups a node each.
double routing_reach(model const& m, std::int64_t blocks);

/// The shape of `s` on `p`'s cluster. `s` must be legal (check's rules, with
/// dp set): every degree divides what it splits.
strategy_shape shape_of(program const& p, strategy const& s);
/// The same with its groups already derived (groups_of(p, t) for a `t` with
/// the degrees, order, zero stage and shard key of `s`).
strategy_shape shape_of(program const& p, strategy const& s, shape_groups const& groups);
/// The same with the program's facts already derived (facts_of(p)).
strategy_shape shape_of(program const& p, strategy const& s, shape_groups const& groups, program_facts const& facts);
/// What no strategy of `p` changes.
program_facts facts_of(program const& p);
/// The groups of `s` on `p`'s cluster.
shape_groups groups_of(program const& p, strategy const& s);
/// Only the groups' sizes (every placement one node, links unset): what
/// memory and the search's bounds read, without placing any group.
shape_groups group_sizes_of(program const& p, strategy const& s);

}  // namespace dtplan::planner
