#pragma once
#include <span>
#include <string>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/units.hpp"
#include "planner/model/op_checkpoint.hpp"
#include "planner/model/shape.hpp"

namespace dtplan::planner {

/// One line of the readable memory breakdown ("optimizer state (fp32 Adam
/// moments, ZeRO-1 over 16)", 28.0 GiB).
struct memory_term {
  std::string name;
  bytes size;
};

/// Memory of the most loaded GPU (first pipeline stage, embedding and
/// logits owner) for one concrete strategy. The six JSON terms add up to
/// `total`; `detail` lists the finer terms inside them, each with its unit.
struct memory_breakdown {
  bytes capacity;     ///< the GPU's memory
  bytes usable;       ///< capacity - reserved
  bytes weights;      ///< 16-bit (or fp32) weights held, after ZeRO-3 sharding
  bytes gradients;    ///< gradients held, after ZeRO-2/3 sharding
  bytes optimizer;    ///< optimizer moments + fp32 master weights, after sharding
  bytes activations;  ///< stored activations of the micro-batches in flight, logits, loss
  bytes buffers;      ///< communication buckets, FSDP gathered layers, TP/SP buffers
  bytes total;        ///< the sum of the five above
  std::int64_t in_flight = 1;  ///< micro-batches whose activations stage 0 holds at once
  std::vector<memory_term> detail;
  /// With `detail`: what one layer of the stage keeps for one micro-batch,
  /// tensor by tensor (activation_terms; a mixture's layer where the stage
  /// holds one), and which layer that is ("a mixture layer").
  std::vector<memory_term> layer_detail;
  std::string layer_note;
  std::int64_t stage = 0;         ///< the most loaded pipeline stage these figures are for
  std::int64_t stage_layers = 0;  ///< transformer layers on that stage
  std::string stage_note;         ///< "stage 0 of 4 (embedding, 8 layers)"
  /// The moment of the step these figures describe: "the loss (end of the
  /// forward, start of the backward)" or "the backward of a layer",
  /// whichever needs more; set with or without `detail` (a literal, so the
  /// search's hot loop allocates nothing).
  char const* peak_moment = "";

  [[nodiscard]] bool fits() const { return total <= usable; }
};

/// Counts every term of COSTMODEL.md section 2 at the peak moment of the
/// step: on the last stage the larger of the loss (logits and loss buffers,
/// one gathered ZeRO-3 layer) and a layer's backward (its recomputed
/// activations, two gathered ZeRO-3 layers); elsewhere the latter. Saved
/// activations, model state and the other buffers count at both; under
/// ZeRO-3 the stage's embedding/output unit stays gathered through the step
/// (PyTorch FSDP's root unit). Assumes the strategy is
/// legal (dp x tp x pp x cp = GPUs, divisibility); never fails.
/// With `detail` false the readable `detail` terms and `stage_note` are left
/// empty (the totals are the same): the search's hot loop needs only totals.
///
/// Where only the ends can be the fullest stage (strategy_shape::
/// ends_only), only the first and last stages are estimated: a middle
/// stage holds no more layers than stage 0, no embedding, no logits and
/// fewer micro-batches in flight, so none of its terms is larger than
/// stage 0's (memory_test checks it against every stage on random
/// problems). Not with PyTorch pipelining's buffers
/// (p2p_buffers_per_micro_batch), which a middle stage holds most of.
memory_breakdown estimate_memory(strategy_shape const& sh, bool detail = true);
/// The memory of pipeline stage `stage` (0 to pp - 1) alone.
memory_breakdown estimate_stage_memory(strategy_shape const& sh, std::int64_t stage, bool detail = true);

/// DeepEP's buffer as Megatron-Core's flex dispatcher allocates it over
/// `ranks` (DeepEP v1.2.1's configuration for that count, 20 SMs) for
/// tokens `hidden` wide: its NVLink part and, above 8 ranks, its RDMA
/// part; none where DeepEP has no configuration for the count.
struct deepep_bytes {
  bytes nvlink;
  bytes rdma;
};
deepep_bytes deepep_buffer(std::int64_t ranks, std::int64_t hidden);
/// The rank counts DeepEP v1.2.1 has a configuration for, ascending
/// (deep_ep/buffer.py:233-242): the only ones it runs.
std::span<std::int64_t const> deepep_rank_counts();
/// DeepEP's NVLink peers (NUM_MAX_NVL_PEERS, csrc/kernels/configs.cuh:3):
/// more ranks than these run as nodes of this many.
inline constexpr std::int64_t deepep_nvl_peers = 8;
/// estimate_memory(shape_of(p, s), detail): `s` must be legal, with dp set.
memory_breakdown estimate_memory(program const& p, strategy const& s, bool detail = true);

/// Model state of `params` parameters held by one GPU before ZeRO, sharded
/// over `shard` data-parallel ranks by ZeRO `stage` (1: optimizer state and
/// master weights, 2: + gradients, 3: + weights). Bytes per parameter:
/// bf16/fp16 mixed precision 2 weights + 2 gradients + 4 fp32 master +
/// moments (adam/adamw 8, sgd_momentum 4, sgd 0), so K = 12 for Adam as in
/// the ZeRO paper; fp32 4 + 4 + moments, no master copy; fp8 as Transformer
/// Engine: bf16 weights and gradients, fp32 master and moments (the same
/// bytes as bf16; its transient fp8 weight casts are not counted).
struct model_state {
  bytes weights;
  bytes gradients;
  bytes optimizer;  ///< moments + master weights
  [[nodiscard]] bytes total() const { return weights + gradients + optimizer; }
};
/// `grad_bytes` overrides the gradient element size (4 for fp32 gradients
/// of a 16-bit model, `training.grad_precision`); 0 keeps the precision's.
/// `moment_bytes` is one optimizer moment's element (4 in fp32, 2 with
/// `optimizer_state_precision = bf16`).
model_state model_state_bytes(double params, precision prec, optimizer_kind opt, int zero, std::int64_t shard,
                              double grad_bytes = 0, double moment_bytes = 4);

/// The vocabulary as Megatron pads it: a multiple of 128 x tp.
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp);

/// Layers per pipeline chunk when `layers` are spread over `chunks` =
/// pp x virtual_stages chunks: the first layers % chunks chunks take one
/// more ("10 layers over 4 stages: 3 on stages 0-1, 2 on 2-3"). Chunk c
/// runs on stage c % pp.
std::vector<std::int64_t> layers_per_chunk(std::int64_t layers, std::int64_t chunks);

/// The per-tensor accounting behind `activations_per_layer`, one term per
/// stored tensor (bytes for one layer and one micro-batch on one GPU).
/// With kv_heads = heads, gelu, ffn = 4h and standard attention it sums to
/// Korthikanti et al.'s closed forms exactly (with `dropout`). Conventions:
/// dropout masks (1 byte per element) only when the model trains with
/// dropout; flash attention keeps fp32 softmax statistics (4.a.s.b/t bytes)
/// instead of the a.s^2 scores; selective recomputation drops the core
/// attention's internals; full keeps only the layer input; ops keeps what
/// torchtitan's op-level policy saves, wrapped as `wrap` says
/// (op_checkpoint_of: for Llama 3 8B at tp = 1 the layer input, q, v, the
/// flash kernel's output and log-sum-exp, the SwiGLU gate projection, the
/// down projection's full-width output: 31,744 values per token); context
/// parallelism divides s by cp; fp32 precision doubles the 2-byte tensors
/// (fp8 stores them in 16 bits). Mixture of experts multiplies the MLP
/// intermediates by experts_per_token.
/// `fp32_softmax`: the standard path's softmax output is kept in fp32, as
/// PyTorch's softmax keeps it where Megatron's fused kernel does not fit
/// (softmax_falls_back, kernels.hpp).
/// `recomputed`: what checkpoint = selective recomputes (recompute_mask of
/// the training's recompute_modules; Megatron's default, the core
/// attention).
std::vector<memory_term> activation_terms(model const& m, strategy const& s, bool fp32_softmax = false,
                                          unsigned recomputed = recompute_bit(recompute_module::core_attn),
                                          op_wrap wrap = {});

/// Per transformer layer and one micro-batch: the bytes of activations kept
/// for the backward pass, per Korthikanti et al. generalised to GQA, SwiGLU
/// and flash attention.
bytes activations_per_layer(model const& m, strategy const& s, bool fp32_softmax = false,
                            unsigned recomputed = recompute_bit(recompute_module::core_attn), op_wrap wrap = {});

/// The training's recompute_modules as a mask of recompute_bit.
unsigned recompute_mask(training const& t);

}  // namespace dtplan::planner
