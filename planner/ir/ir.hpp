#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dsl/source.hpp"
#include "planner/ir/units.hpp"

/// The typed intermediate representation a .dtp file lowers to: names
/// resolved, units normalised to base units, defaults filled. `model` and
/// `cluster` say what is trained on what; `strategy` says how (plain data
/// that text, search and tests can all produce).
namespace dtplan::planner {

using dsl::span;

/// fp8 and fp4 run the layers' matrix products in that format as Transformer
/// Engine does (fp4: NVFP4, e2m1 with an e4m3 scale per 16 elements), the
/// rest of the layer, the weights and the gradients in bf16.
enum class precision { bf16, fp16, fp32, fp8, fp4 };
/// fp8 or fp4: only the layers' linear GEMMs run in it.
constexpr bool low_precision(precision p) { return p == precision::fp8 || p == precision::fp4; }
/// What runs outside those GEMMs (attention, the LM head, a router): bf16
/// in fp8 and fp4 training, the model's precision otherwise.
constexpr precision unquantized(precision p) { return low_precision(p) ? precision::bf16 : p; }
enum class mlp_kind { gelu, swiglu };
/// A transformer layer's normalisation: LayerNorm (GPT, MPT, BLOOM) or
/// RMSNorm (Llama). Fused, both are one kernel; in PyTorch eager RMSNorm is
/// eight (compute_per_micro_batch counts them).
enum class norm_kind { layernorm, rmsnorm };
/// How positions enter: learned absolute embeddings added once (GPT),
/// rotary embeddings applied to q and k in every layer (Llama, NeoX), or
/// ALiBi's bias inside the attention kernel (MPT, BLOOM).
enum class position_kind { learned, rotary, alibi };
enum class attention_kind { flash, standard };
enum class optimizer_kind { adam, adamw, sgd, sgd_momentum };
/// Activation checkpointing of each transformer layer: none; selective
/// (Megatron: the core attention is recomputed); full (only the layer input
/// is kept); ops (PyTorch op-level selective checkpointing as torchtitan's
/// `selective_ac_option = 'op'`: the outputs of the attention kernel and of
/// every other matmul are kept, the rest recomputed: op_checkpoint_of). `ops` is last so the
/// values of the first three stay as they were; `recompute_rank` orders them.
enum class checkpoint_mode { none, selective, full, ops };
/// What checkpoint = selective recomputes (Megatron-Core's
/// --recompute-modules, core_v0.13.0 transformer_config.py:289-303): the
/// core attention (its default), MoE experts' activation function, the two
/// layer norms, multi-latent attention's up projections and rotary (each
/// output discarded and rebuilt in the backward), the dense MLP.
enum class recompute_module { core_attn, moe_act, layernorm, mla_up_proj, mlp, moe };
constexpr unsigned recompute_bit(recompute_module r) { return 1u << static_cast<unsigned>(r); }
/// How the loss is computed: fused (Megatron's vocab-parallel cross entropy
/// works in place on one fp32 copy of the logits) or unfused (PyTorch's
/// cross_entropy(logits.float(), labels): log_softmax then nll_loss, three
/// fp32 logit-sized buffers at the start of the backward).
enum class cross_entropy_kind { fused, unfused };
/// How context parallelism's attention exchanges keys and values: `p2p`,
/// Transformer Engine's ring (Megatron's --cp-comm-type p2p): each step
/// sends the keys and values on to the next rank, at their own heads;
/// `allgather`, PyTorch's ring attention with its all-gather rotater
/// (torchtitan's context_parallel_rotate_method = "allgather"): every
/// rank's keys and values gathered once per pass; `alltoall`, PyTorch's
/// ring passing them on (torchtitan's "alltoall"). PyTorch's runs on
/// SDPA's inputs, the keys and values expanded to the query's heads, and
/// accumulates the gradients in fp32.
enum class cp_comm_kind { p2p, allgather, alltoall };
/// How a mixture's tokens reach their experts: all-to-alls over the
/// expert-parallel ranks of each token's top-k copies, or Megatron-Core's
/// all-gather of every token over the tp x ep ranks (and a reduce-scatter
/// back), each rank keeping those of its own experts.
enum class dispatcher_kind { alltoall, allgather, flex };
/// How a framework splits the layers over the pipeline's chunks: any way
/// (dtplan's uneven split, the first chunks a layer more), into stages of
/// one size whose count is ceil(layers / size) (torchtitan's
/// pipeline_parallel_layers_per_stage), or evenly only.
enum class pipeline_split_rule { uneven, stage_size, even };
/// How a framework splits the layers with the embedding and the loss counted
/// as layers (training::embedding_in_split, loss_in_split): not at all;
/// evenly only (Megatron-Core asserts the count divides); or the first
/// chunks a layer more (torchtitan).
enum class counted_split_rule { none, even, uneven };
/// What a framework requires of seq_len: that cp ranks (and, with sequence
/// parallelism, tp ranks within them) split it evenly; that and, with
/// cp > 1, 2 x cp chunks for the causal load balance (Megatron-Core); or
/// 2 x cp x tp always (torchtitan's seq_len_divisor).
enum class sequence_split_rule { even, balanced, balanced_tp };
/// The expert grids a framework forms: any block of ep expert members
/// (Megatron-Core's expert rank generator), or dp2ep: the ep group borrows
/// whole context-parallel groups (whole tp x cp blocks with etp = 1), and
/// experts are whole on a rank (etp = 1) only with ep > 1 (torchtitan v0.2.0
/// distributed/parallel_dims.py:57-64).
enum class expert_grid_rule { any, dp2ep };
/// Megatron's layer implementation (`--transformer-impl`): Transformer
/// Engine's modules, or Megatron's own (`local`: every Megatron-LM before
/// 2023, and Megatron-DeepSpeed). It decides whose fused softmax the
/// unfused attention path runs, and where it fits (kernels.hpp).
enum class transformer_impl_kind { transformer_engine, local };
/// Whether `k` is PyTorch's ring attention (keys and values expanded to the
/// query's heads, merged and accumulated in eager fp32 operators).
constexpr bool pytorch_ring(cp_comm_kind k) { return k != cp_comm_kind::p2p; }
/// A parallel dimension of the rank layout.
enum class axis { tp, cp, dp, pp };
/// GPU generations, for the figures that differ by generation (NCCL's
/// constants, attention kernels): volta, ampere (and ada), hopper,
/// blackwell; cdna3 for AMD MI300.
enum class gpu_generation { volta, ampere, hopper, blackwell, cdna3 };
/// The attention kernel a framework runs: FlashAttention-2 (`flash`),
/// FlashAttention-3 (`flash3`), cuDNN's fused attention (`fused`, what
/// Transformer Engine and PyTorch's SDPA prefer on Hopper and later),
/// llm-foundry's Triton kernel (`triton`), or the unfused matmul + softmax
/// path (`unfused`, which keeps the a.s^2 scores as `attention = standard`).
/// `automatic` is what a file writes as `auto`: the kernel the framework
/// picks on the cluster's GPU, resolved by lowering and the C++ API once the
/// GPU is known (resolved_attention); a lowered program never holds it.
/// `flex` is PyTorch's FlexAttention (torch.nn.attention.flex_attention, the
/// Triton flash kernel torch.compile generates), which torchtitan's
/// deepseek_v3 and llama4 flavors run.
enum class attention_backend { flash, flash3, fused, triton, unfused, automatic, flex };
/// When data-parallel gradients are reduced: once per optimizer step
/// (no_sync / Megatron's DDP on the last micro-batch) or after every
/// micro-batch's backward (FSDP, torchtitan, DDP without no_sync).
enum class grad_sync_mode { per_step, per_micro_batch };
/// How big a gradient bucket is: a fixed size (`ddp_bucket_size`), or
/// Megatron-Core's max(40 M, 1 M x dp x cp) parameters (`scaled`).
enum class bucket_rule { fixed, scaled };

char const* name(precision);
char const* name(mlp_kind);
char const* name(norm_kind);
char const* name(position_kind);
/// What a model that does not say its normalisation or positions has, by
/// its MLP: Llama's RMSNorm and rotary embeddings with SwiGLU, GPT's
/// LayerNorm and learned positions with GELU.
constexpr norm_kind implied_norm(mlp_kind m) { return m == mlp_kind::swiglu ? norm_kind::rmsnorm : norm_kind::layernorm; }
constexpr position_kind implied_position(mlp_kind m) {
  return m == mlp_kind::swiglu ? position_kind::rotary : position_kind::learned;
}
char const* name(attention_kind);
char const* name(optimizer_kind);
char const* name(checkpoint_mode);
char const* name(recompute_module);
char const* name(cross_entropy_kind);
char const* name(cp_comm_kind);
char const* name(dispatcher_kind);
char const* name(transformer_impl_kind);
/// Every checkpoint mode, by how much it recomputes (and, for dense
/// transformers, how little it keeps): the order the search, the advice and
/// the check's fixes try them in.
inline constexpr std::array<checkpoint_mode, 4> checkpoint_modes{checkpoint_mode::none, checkpoint_mode::selective,
                                                                 checkpoint_mode::ops, checkpoint_mode::full};
/// A mode's place in `checkpoint_modes`: none 0, selective 1, ops 2, full 3.
int recompute_rank(checkpoint_mode);
char const* name(axis);
char const* name(gpu_generation);
char const* name(attention_backend);  ///< "flash", ..., "auto"
/// The kernel `attention_backend = auto` runs on a generation: cuDNN's
/// fused attention on Hopper and Blackwell (Transformer Engine prefers it
/// from sm 90), FlashAttention-2 on Ampere and CDNA3, the unfused path on
/// Volta (no FlashAttention-2 kernel for sm 70).
attention_backend resolved_attention(gpu_generation g);
char const* name(grad_sync_mode);
char const* name(bucket_rule);

/// Where each key of a block was written (key name -> span of the key), so
/// later stages can point at the key that breaks a plan.
using key_spans = std::map<std::string, span, std::less<>>;

struct model {
  std::string name;
  span where;  ///< the block header
  std::string description;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  ///< = heads unless set
  /// Each attention head's width (Megatron-LM's --kv-channels, Hugging
  /// Face's head_dim); 0, unwritten: hidden / heads. Qwen3's heads are 128
  /// wide whatever its hidden size (head_width).
  std::int64_t head_dim = 0;
  /// A norm on each head's queries and keys before rotary and the core,
  /// head_dim wide with its own weights (Qwen3, OLMo 2-style models;
  /// Megatron-LM's --qk-layernorm, core_v0.13.0 transformer/attention.py:
  /// 828-846; torchtitan's qwen3 qk_norm, v0.2.0 models/qwen3/model/
  /// model.py:150-159). Of the model's norm kind.
  bool qk_norm = false;
  /// Multi-latent attention (DeepSeek-V2/V3; Megatron-LM's
  /// --multi-latent-attention, core_v0.13.0 transformer/
  /// multi_latent_attention.py:249-350): keys and values projected down to
  /// `kv_lora_rank` (0: not MLA) and up again for every head, queries
  /// through `q_lora_rank` (0: projected directly), each query and key head
  /// head_dim wide plus `qk_rope_head_dim` rotary (the key's shared by every
  /// head), each value head `v_head_dim` wide (0: head_dim).
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t ffn = 0;       ///< = 4 * hidden unless set
  mlp_kind mlp = mlp_kind::gelu;
  /// Unwritten: what the MLP implies (swiglu: Llama's RMSNorm and rotary
  /// embeddings; gelu: GPT's LayerNorm and learned positions), set by
  /// lowering's completion.
  norm_kind norm = norm_kind::layernorm;
  position_kind position = position_kind::learned;
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;
  bool tied_embeddings = false;
  attention_kind attention = attention_kind::flash;
  precision prec = precision::bf16;
  optimizer_kind optimizer = optimizer_kind::adam;
  std::int64_t experts = 1;
  std::int64_t experts_per_token = 1;
  /// A mixture's expert MLP width (0, the default: ffn), Megatron-LM's
  /// --moe-ffn-hidden-size, Hugging Face's moe_intermediate_size.
  std::int64_t expert_ffn = 0;
  /// A shared expert every token runs beside its routed ones: its MLP width
  /// (0: none), split over tp like a dense MLP (Megatron-LM's
  /// --moe-shared-expert-intermediate-size).
  std::int64_t shared_expert_ffn = 0;
  /// A mixture's expert capacity (Megatron-LM's --moe-expert-capacity-
  /// factor): each expert takes at most ceil(k x T / experts x factor) of a
  /// rank's T routed tokens, the rest dropped; none: dropless.
  std::optional<double> capacity_factor;
  /// Each expert's input padded to its capacity (--moe-pad-expert-input-to-
  /// capacity): it computes and receives its capacity whatever the routing.
  bool pad_to_capacity = false;
  /// A mixture's routing skew: the most loaded expert's tokens over the
  /// mean (1: every expert as many, as --moe-router-force-load-balancing
  /// routes them). The rest of the GPU's experts share what is left evenly
  /// (routing_load).
  double routing_imbalance = 1.0;
  /// Group-limited routing (Megatron-Core's --moe-router-num-groups and
  /// --moe-router-group-topk, DeepSeek's n_group and topk_group): the
  /// experts in `router_groups` equal groups, each token's experts from its
  /// `router_group_topk` best groups (0 and 0: from all). DeepSeek-V3's 8
  /// and 4 keep a token on 4 of the 8 nodes its 256 experts span.
  std::int64_t router_groups = 0;
  std::int64_t router_group_topk = 0;
  /// A mixture's layers that are not mixtures: the first `dense_layers`
  /// run a dense MLP `ffn` wide (DeepSeek's first_k_dense_replace), and of
  /// the rest every `moe_layer_freq`-th, from the first, is a mixture
  /// (Megatron-LM's --moe-layer-freq N; Llama 4's every other layer is
  /// dense_layers = 1, moe_layer_freq = 2).
  std::int64_t dense_layers = 0;
  std::int64_t moe_layer_freq = 1;
  /// Dropout during training, so its 1-byte masks are stored for backward
  /// (GPT-3/Megatron recipes use 0.1; LLaMA, MPT, BLOOM and most recent
  /// pretraining use none). The model key `dropout`, an extension of DSL.md.
  bool dropout = false;
  /// Multi-token prediction modules after the last layer (DeepSeek-V3's
  /// one; Megatron-Core's --mtp-num-layers, core_v0.13.0 transformer/
  /// multi_token_prediction.py:302-490, 603-690): each normalises the
  /// previous depth's output and the embedding of the tokens one further
  /// on, projects the two (2 hidden -> hidden), runs a transformer layer of
  /// the last layer's kind and a final norm, and computes logits and a loss
  /// again with the shared embedding and output layer. All on the last
  /// pipeline stage (get_mtp_num_layers_to_build), never recomputed.
  std::int64_t mtp_layers = 0;
  key_spans keys;

  /// Each head's width: head_dim where written, else hidden / heads.
  [[nodiscard]] std::int64_t head_width() const { return head_dim > 0 ? head_dim : heads > 0 ? hidden / heads : 0; }
  /// Whether the attention is multi-latent (kv_lora_rank).
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  /// A query or key head's width: head_width, and under MLA its rotary
  /// part after it; a value head's: head_width, or MLA's v_head_dim.
  [[nodiscard]] std::int64_t qk_head_width() const { return head_width() + (mla() ? qk_rope_head_dim : 0); }
  [[nodiscard]] std::int64_t v_head_width() const { return mla() && v_head_dim > 0 ? v_head_dim : head_width(); }
  /// The queries' width (heads x qk_head_width; hidden unless head_dim says
  /// otherwise) and the keys' or values' (kv_heads x head_width; under MLA
  /// the mean of a key's and a value's over every head, so that twice it
  /// is what a token's keys and values hold).
  [[nodiscard]] std::int64_t q_width() const { return heads * qk_head_width(); }
  [[nodiscard]] std::int64_t kv_width() const {
    return mla() ? heads * (qk_head_width() + v_head_width()) / 2 : kv_heads * head_width();
  }
  /// The attention's output, the o projection's input: heads x v_head_width.
  [[nodiscard]] std::int64_t attention_out_width() const { return heads * v_head_width(); }
  /// The width of the MLP a token runs through: a mixture's expert width,
  /// else ffn.
  [[nodiscard]] std::int64_t mlp_width() const { return experts > 1 && expert_ffn > 0 ? expert_ffn : ffn; }
  /// Whether layer `i` (from 0) is a mixture of experts.
  [[nodiscard]] bool moe_layer(std::int64_t i) const {
    return experts > 1 && i >= dense_layers && (i - dense_layers) % moe_layer_freq == 0;
  }
  /// How many of layers [first, last) are mixtures.
  [[nodiscard]] std::int64_t moe_layers_in(std::int64_t first, std::int64_t last) const {
    if (experts <= 1) return 0;
    auto const from = first > dense_layers ? first : dense_layers;
    if (last <= from) return 0;
    // Mixtures sit at dense_layers + j x freq: those from `from` below `last`.
    auto const below = [&](std::int64_t x) {
      auto const d = x - dense_layers;
      return d / moe_layer_freq + (d % moe_layer_freq != 0 ? 1 : 0);
    };
    return below(last) - below(from);
  }
  /// The mixture layers of the whole model.
  [[nodiscard]] std::int64_t moe_layer_count() const { return moe_layers_in(0, layers); }
  /// Whether some layers of a mixture are dense.
  [[nodiscard]] bool mixed_layers() const { return experts > 1 && moe_layer_count() < layers; }
  /// Whether a multi-token prediction module's layer is a mixture: the
  /// last layer's kind, as Megatron-LM builds and counts it (core_v0.13.0
  /// megatron/training/training.py:263-269, last_layer_is_moe).
  [[nodiscard]] bool mtp_moe() const { return layers > 0 && moe_layer(layers - 1); }
};

struct gpu {
  std::string name;
  span where;
  bytes memory;
  flop_rate peak_flops;       ///< dense bf16/fp16 tensor peak
  flop_rate peak_flops_fp8;   ///< dense fp8 peak (= peak_flops where the GPU has no fp8)
  flop_rate peak_flops_fp32;  ///< dense fp32/tf32 matmul peak
  flop_rate peak_flops_fp4;   ///< dense fp4 (NVFP4) peak; 0 where the GPU has no fp4 tensor cores
  bandwidth hbm_bandwidth;
  bandwidth intra_node;       ///< scale-up link per GPU per direction
  double matmul_efficiency = 0.7;  ///< share of the 16-bit peak a large matmul reaches (measured)
  /// Share of the fp8 peak a large fp8 matmul reaches (measured; lower than
  /// bf16's on Hopper); 0: matmul_efficiency.
  double matmul_efficiency_fp8 = 0;
  /// A matmul tile's fixed cost (filling its pipeline, writing C), as the
  /// elements of the reduction (K) its main loop would cover meanwhile:
  /// a GEMM with reduction k reaches k / (k + this) of its long-k rate.
  /// The faster the tensor cores, the more K one tile's fixed cost is worth.
  std::int64_t matmul_tile_overhead = 128;
  /// The same for fp8 matmuls; 0: matmul_tile_overhead.
  std::int64_t matmul_tile_overhead_fp8 = 0;
  /// Share of the fp4 peak a large fp4 matmul reaches; 0: matmul_efficiency_fp8's.
  double matmul_efficiency_fp4 = 0;
  /// The tile overhead of fp4 matmuls; 0: twice matmul_tile_overhead_fp8's
  /// (the same fixed time over a main loop twice as fast).
  std::int64_t matmul_tile_overhead_fp4 = 0;
  gpu_generation generation = gpu_generation::ampere;
  /// Bus bandwidth of an NVLink SHARP (NVLS) all-reduce inside a node, per
  /// GPU; 0 where the GPU has none.
  bandwidth nvls_bandwidth;
  /// Share of a NIC's line rate NCCL's bus bandwidth reaches across nodes
  /// (measured: 46-49 GB/s per 400 Gbit/s NDR port).
  double network_efficiency = 0.95;
  bytes reserved;                  ///< never available to the job
  // Extensions (catalog defaults a cluster may override):
  seconds intra_latency;
  seconds inter_latency;
  double comm_efficiency = 0.8;  ///< share of the scale-up link a large ring collective reaches (measured busbw)
  double hbm_efficiency = 0.8;   ///< share of HBM bandwidth a streaming kernel reaches
  /// Share of the boost clock the SMs hold through a long run (power and
  /// thermal limits): matmul and attention rates scale with it, memory-bound
  /// work does not. The GEMM ceilings are short measurements at boost.
  double sustained_clock = 1.0;
  // Time-model extensions (calibrated per GPU kind, see bench/accuracy.cpp):
  std::int64_t sm_count = 108;    ///< streaming multiprocessors: tiles run in waves over them
  /// Exponentials (MUFU.EX2) an SM issues per clock: 16 through Blackwell,
  /// 32 on Blackwell Ultra, whose attention kernels gain by it
  /// (planner/model/kernels.hpp).
  std::int64_t exp_per_clock = 16;
  seconds kernel_latency{5e-6};   ///< fixed launch + tail cost of one kernel
  /// Share of the 16-bit peak the framework's attention kernel reaches;
  /// unset: the published figure of the kernel on this generation
  /// (planner/model/kernels.hpp).
  std::optional<double> attention_efficiency;
  double overlap_slowdown = 0.1;  ///< compute slow-down while communication overlaps it (0.1 = 10 %)
  /// Fixed per optimizer step (data loading, logging, launch gaps); unset:
  /// the framework's figure.
  std::optional<seconds> step_overhead;
  /// Host time to issue one operator (framework dispatch + launch): a GPU
  /// never runs a layer faster than its host can issue the layer's kernels.
  /// Unset: the framework's figure.
  std::optional<seconds> dispatch_latency;
  key_spans keys;
};

/// The largest node and cluster dtplan plans: far beyond any machine built,
/// and small enough that every placement is exact and quick to work out.
constexpr std::int64_t max_gpus_per_node = 4096;
constexpr std::int64_t max_gpus = std::int64_t{1} << 24;

struct cluster {
  std::string name;
  span where;
  std::int64_t nodes = 0;
  std::int64_t gpus_per_node = 0;
  gpu device;
  bandwidth intra_node;  ///< per GPU, per direction
  bandwidth inter_node;  ///< per node, all NICs together, per direction
  seconds intra_latency;
  seconds inter_latency;
  double comm_efficiency = 0.8;
  double network_efficiency = 0.95;  ///< the GPU's unless written
  key_spans keys;

  [[nodiscard]] std::int64_t gpus() const { return nodes * gpus_per_node; }
};

/// A size beyond what dtplan plans: the key it is written at (nullptr for
/// the block itself) and the message lowering reports and the C++ API throws.
struct size_limit {
  char const* key = nullptr;
  std::string message;
};
/// Nodes of more than max_gpus_per_node GPUs, clusters of more than
/// max_gpus; `called` is how messages name the block ("cluster 'c'").
std::optional<size_limit> beyond_limits(cluster const& c, std::string const& called);

/// Gives `c` its GPU's intra_node, latencies, comm_efficiency and network_efficiency where its
/// block does not write them (`c.keys`): what lowering and the C++ API do
/// once the GPU is known.
void use_gpu_defaults(cluster& c);

struct training {
  span where;
  std::int64_t global_batch = 0;  ///< sequences per optimizer step
  std::optional<double> base_lr;
  std::optional<std::int64_t> base_batch;
  /// How the loss is computed (what the loss moment holds).
  cross_entropy_kind cross_entropy = cross_entropy_kind::fused;
  /// With tp > 1 the loss runs on the vocabulary-split logits (Megatron's
  /// vocab-parallel cross entropy, DTensor's loss_parallel); false: the
  /// logits are all-gathered over tp and every rank computes the whole
  /// vocabulary's loss (torchtitan's parallelism.disable_loss_parallel).
  bool loss_parallel = true;
  /// A mixture's local experts run as one grouped GEMM per matrix
  /// (Megatron-Core's TEGroupedMLP with --moe-grouped-gemm, torchtitan's
  /// torch._grouped_mm); false: one expert after another, each its own
  /// GEMMs and activation (Megatron-Core's SequentialMLP, torchtitan's
  /// for-loop).
  bool grouped_gemm = true;
  /// A mixture's tokens put into expert order and summed back by fused
  /// kernels (Transformer Engine's, Megatron-Core's --moe-permute-fusion);
  /// false: by PyTorch's indexing operators, more kernels for the same bytes.
  bool permute_fusion = true;
  /// Megatron-Core's own split of the layers over a pipeline (pp > 1;
  /// core_v0.13.0 megatron/core/transformer/transformer_block.py:66-191):
  /// the first and the last pipeline rank's layers, each of its virtual
  /// stages an equal share, the middle ranks sharing the rest evenly
  /// (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-
  /// layers; unset: no such rank); or the embedding and the loss each
  /// counted as a layer of the first and of the last chunk in an even
  /// split (--account-for-embedding-in-pipeline-split, --account-for-loss-
  /// in-pipeline-split). Neither: dtplan's split (layer_split).
  std::optional<std::int64_t> first_stage_layers, last_stage_layers;
  bool embedding_in_split = false, loss_in_split = false;
  /// A mixture's token dispatcher (Megatron-Core's
  /// --moe-token-dispatcher-type; torchtitan and DeepSpeed all-to-all).
  dispatcher_kind moe_token_dispatcher = dispatcher_kind::alltoall;
  /// A mixture's shared expert runs on a stream of its own from the
  /// dispatch to the combine, its GEMMs under the all-to-alls (Megatron-
  /// Core's --moe-shared-expert-overlap); false: in line with the rest.
  bool shared_expert_overlap = false;
  /// A mixture's shared expert's forward placed between the combine's
  /// all-to-all and the use of its output, on the compute stream while the
  /// collective runs on its own: the forward's combine hides under it, the
  /// dispatch and the backward's all-to-alls do not (torchtitan v0.2.0
  /// models/moe/moe.py:464-470).
  bool shared_expert_combine_overlap = false;
  /// Precision of the gradient buffers and of their data-parallel reduction
  /// (Megatron's --accumulate-allreduce-grads-in-fp32, DeepSpeed's
  /// BF16_Optimizer: fp32); unset means the model's 16-bit precision (bf16
  /// for fp8 models, fp32 for fp32 models).
  std::optional<precision> grad_precision;
  /// Precision the data-parallel reduction moves gradients in when it casts
  /// them first (DeepSpeed's communication_data_type: the BF16_Optimizer
  /// keeps fp32 gradients and reduces them as bf16); unset, grad_precision's.
  std::optional<precision> grad_comm_precision;
  /// Whether the data-parallel gradient reduction runs under the backward
  /// (DDP buckets, FSDP, Megatron's --overlap-grad-reduce) or after it
  /// (DeepSpeed's pipeline engine, Megatron before 2023).
  bool overlap_grad_sync = true;
  /// How ZeRO-1/2 reduce gradients: a reduce-scatter (each rank receives the
  /// slice it updates: Megatron's distributed optimizer, DeepSpeed's
  /// default) or a full all-reduce (DeepSpeed's reduce_scatter = false and
  /// its BF16_Optimizer). ZeRO-0 always all-reduces, ZeRO-3 reduce-scatters.
  bool grad_reduce_scatter = true;
  /// Tensor-parallel collectives overlapped with the GEMMs they feed or
  /// follow (Transformer Engine userbuffers, Megatron's --tp-comm-overlap;
  /// needs sequence parallelism): each all-gather and reduce-scatter runs
  /// in chunks under its GEMM, exposing about one chunk.
  bool tp_comm_overlap = false;

  // What the framework does at run time (its preset, then the keys written
  // here; docs/research/frameworks.md has each default with its source).
  std::string framework = "generic";  ///< the preset the behaviours start from
  attention_backend attention_kernel = attention_backend::flash;  ///< key `attention_backend`
  /// Element-wise operators fused into few kernels (Megatron/TE, compiled
  /// code) rather than one PyTorch eager kernel each.
  bool fused_elementwise = true;
  /// Rotary embeddings in one fused kernel each way; false: as PyTorch's
  /// eager kernels even in compiled code (torchtitan's complex-number
  /// rotary, which Inductor does not lower).
  bool fused_rotary = true;
  /// Whose layers (Megatron's --transformer-impl): Transformer Engine's, or
  /// Megatron's own, whose fused softmax fits fewer shapes.
  transformer_impl_kind transformer_impl = transformer_impl_kind::transformer_engine;
  /// The step replayed as CUDA graphs: no host time per operator.
  bool cuda_graphs = false;
  /// Megatron's --timing-log-level: at 2 the timers around every
  /// micro-batch's forward and backward synchronise the host with the GPU
  /// when they start and stop (as every timer did before Megatron-LM's
  /// "Timing levels", 2022-08).
  std::int64_t timing_log_level = 0;
  grad_sync_mode grad_sync = grad_sync_mode::per_step;
  bucket_rule grad_bucket = bucket_rule::fixed;
  bytes ddp_bucket_size{25.0 * 1048576.0};  ///< for `grad_bucket = fixed` (PyTorch DDP: 25 MiB)
  /// Whether the data-parallel reduction's buckets are views of the
  /// gradients (Megatron's contiguous gradient buffer; PyTorch DDP with
  /// gradient_as_bucket_view = True), or, as PyTorch DDP does by default,
  /// flat buckets beside .grad that every gradient is copied into: one more
  /// gradient-sized buffer through the step without ZeRO (ZeRO-0 and 1).
  bool gradient_as_bucket_view = true;
  /// DeepSpeed's ZeRO-1/2 copy each gradient into a reduce bucket of
  /// reduce_bucket_size elements (ddp_bucket_size) that each backward
  /// allocates as it starts, two with overlap_comm (contiguous_gradients,
  /// its default); its pipeline engine allocates them after the backward.
  bool contiguous_gradients = false;
  /// ZeRO-1's updated weights gathered under the next forward, bucket by
  /// bucket (Megatron's --overlap-param-gather), not after the step.
  bool overlap_param_gather = false;
  /// Pipeline sends and receives overlapped with compute (Megatron's
  /// overlap_p2p_comm, on with interleaving).
  bool overlap_p2p_comm = false;
  /// Each tensor rank sends 1/tp of an activation across a stage boundary
  /// and the receiver all-gathers it (Megatron 2021, DeepSpeed's pipeline
  /// engine); Megatron-Core sends the sequence-parallel shard as it is.
  bool p2p_scatter_gather = true;
  /// fp8 weights gathered in fp8 (Megatron's --fp8-param-gather, FSDP
  /// float8 all-gather): half the bytes of the 16-bit gather.
  bool fp8_param_gather = false;
  /// With bf16, a tied embedding's two gradient copies (first and last
  /// pipeline stage) are summed in the optimizer's fp32 gradients, not in the
  /// gradient's own precision (DeepSpeed's BF16_Optimizer: `_hp_grad`).
  bool tied_hp_grad = false;
  /// With pipeline parallelism, FSDP (ZeRO-3) regathers each layer for
  /// every micro-batch (true), or keeps the stage's weights gathered and its
  /// gradients unsharded through the step, gathering once and
  /// reduce-scattering after the last backward (false: torchtitan's
  /// fsdp_reshard_after_forward "default" with PyTorch's pipelining).
  bool fsdp_reshard_with_pp = true;
  /// A pipeline stage's send/recv tensors: two in flight, allocated per
  /// call (false), or PyTorch's pipelining (true): a receive buffer for each
  /// micro-batch's activation and gradient allocated for the whole step,
  /// each stage output held until its backward and each input gradient
  /// until the step ends.
  bool p2p_buffers_per_micro_batch = false;
  /// Adam's moments kept in fp32 (default) or bf16 (precision-aware
  /// optimizers, Apex/NeMo DistributedFusedAdam dtype = bf16).
  precision optimizer_state_precision = precision::fp32;
  /// NCCL may run NVLink SHARP all-reduces (NCCL_NVLS_ENABLE; MLPerf turns it off).
  bool nvls = false;
  /// Context parallelism's key and value exchange (what a layer's attention
  /// holds beside its own keys and values).
  cp_comm_kind cp_comm_type = cp_comm_kind::p2p;
  /// The run's environment sets CUDA_LAUNCH_BLOCKING=1: every kernel and
  /// collective returns to the host only when it has finished, so the host's
  /// time to issue each operator adds to the GPU's instead of hiding under
  /// it, and no communication overlaps compute (BigScience's BLOOM ran so).
  bool cuda_launch_blocking = false;
  /// What checkpoint = selective recomputes (recompute_module); Megatron's
  /// default, the core attention alone.
  std::vector<recompute_module> recompute_modules{recompute_module::core_attn};
  [[nodiscard]] bool recomputes(recompute_module r) const {
    return std::find(recompute_modules.begin(), recompute_modules.end(), r) != recompute_modules.end();
  }
  /// Whether it is Megatron's default, the core attention alone.
  [[nodiscard]] bool recomputes_core_attention_only() const {
    return recompute_modules.size() == 1 && recompute_modules.front() == recompute_module::core_attn;
  }
  key_spans keys;
};

/// What a framework can run: the strategies `--optimize` proposes for it and
/// the check accepts.
struct framework_limits {
  std::vector<int> zero_stages{0, 1, 2, 3};  ///< ZeRO stages it implements, ascending
  int pipeline_max_zero = 3;    ///< the highest stage it runs with pp > 1 (DeepSpeed: 1)
  int bf16_min_zero = 0;        ///< the lowest stage it runs in bf16 (DeepSpeed: 1, its BF16_Optimizer)
  bool tensor_parallel = true;
  bool pipeline_parallel = true;
  bool interleaving = true;     ///< virtual_stages > 1
  bool context_parallel = true;
  bool expert_parallel = true;    ///< ep > 1
  bool sequence_parallel = true;  ///< sequence_parallel = true with tp > 1
  bool tp_without_sequence_parallel = true;  ///< tp > 1 with sequence_parallel = false (torchtitan: never)
  /// A mixture of experts with tp > 1 and sequence_parallel = false
  /// (Megatron-Core: refused in training, moe_layer.py:240-244).
  bool experts_without_sequence_parallel = true;
  /// zero = 0 beside tensor, pipeline or context parallelism (torchtitan's
  /// DDP is 1-D, and its context parallelism shards with FSDP: never).
  bool zero0_with_model_parallel = true;
  pipeline_split_rule pipeline_split = pipeline_split_rule::uneven;
  /// Megatron-Core's split with an uneven first or last stage (training::
  /// first_stage_layers, last_stage_layers).
  bool first_last_stage_layers = true;
  /// The embedding and the loss each counted as a layer of the first and
  /// last chunk (training::embedding_in_split, loss_in_split: Megatron-Core's
  /// flags, evenly; torchtitan's first/last_stage_less_layers of 1, the
  /// first chunks a layer more where the count does not divide).
  counted_split_rule embedding_loss_in_split = counted_split_rule::even;
  sequence_split_rule sequence_split = sequence_split_rule::even;
  expert_grid_rule expert_grid = expert_grid_rule::any;
  /// virtual_stages > 1 at pp = 2 with overlap_p2p_comm = false (Megatron:
  /// never, its batched send/receive would pair the two ranks twice).
  bool interleaving_pp2_batched = true;
  bool hybrid_sharding = true;  ///< a shard group smaller than dp x cp
  /// In the enum's order, as lowering stores a set.
  std::vector<checkpoint_mode> checkpoint_modes{checkpoint_mode::none, checkpoint_mode::selective,
                                                checkpoint_mode::full, checkpoint_mode::ops};
  friend bool operator==(framework_limits const&, framework_limits const&) = default;
};

/// A `framework` block: a documented bundle of run-time behaviours (the
/// training keys it sets) and what it can run. The built-in ones are in
/// planner/catalog/frameworks.dtp, each default with its source.
struct framework {
  std::string name = "generic";
  span where;
  std::string description;
  training behaviours;      ///< only the run-time keys are read
  framework_limits limits;
  /// Framework-level figures of the time model (fitted across GPUs and
  /// runs, never per run): the host's time to issue one operator, and a
  /// fixed cost per optimizer step (data loading, logging, launch gaps).
  seconds dispatch_latency{0};
  seconds step_overhead{0.02};
  key_spans keys;
};

/// More tokens per step (global_batch x seq_len) than fit in 64 bits, at
/// the training block's global_batch.
std::optional<size_limit> beyond_limits(model const& m, training const& t);
/// A precision the GPU cannot run: fp4 without fp4 tensor cores (no rate
/// to fall back to would be what a run gets). The key is the model's.
std::optional<size_limit> beyond_limits(model const& m, gpu const& g);

/// Bytes of one gradient element as the program keeps it (and reduces it,
/// unless training.grad_comm_precision says otherwise).
double grad_element_bytes(model const& m, training const& t);
/// Bytes of one gradient element as the data-parallel reduction moves it.
double grad_comm_bytes(model const& m, training const& t);
/// Bytes of one element of a tied embedding's gradient as its two copies
/// are summed across the pipeline's ends: fp32 with bf16 where the
/// framework sums the optimizer's copy (training.tied_hp_grad), else the
/// gradient's.
double tied_grad_bytes(model const& m, training const& t);

/// The ZeRO/FSDP shard group: all data-parallel ranks, the ranks of one
/// node (hybrid sharding), or a fixed number of ranks.
struct shard_group {
  enum class kind { all, node, size };
  kind k = kind::all;
  std::int64_t size = 0;  ///< for kind::size
  friend bool operator==(shard_group const&, shard_group const&) = default;
};
std::string to_string(shard_group const&);

/// Rank layout, innermost (fastest-varying) axis first.
using rank_order = std::array<axis, 4>;
inline constexpr rank_order default_order{axis::tp, axis::cp, axis::dp, axis::pp};
std::string to_string(rank_order const&);  ///< "tp-cp-dp-pp"

/// A concrete strategy: every key has exactly one value.
struct strategy {
  std::int64_t dp = 1;
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  /// Tensor-parallel ranks each expert's weights are split over: tp (0, the
  /// default, reads as tp) or 1, the experts whole on every rank and the
  /// expert-parallel group spanning the tensor-parallel ranks (Megatron-Core's
  /// --expert-tensor-parallel-size; torchtitan's expert_tensor_parallel_degree).
  std::int64_t etp = 0;
  int zero = 0;
  shard_group shard;
  checkpoint_mode checkpoint = checkpoint_mode::none;
  std::int64_t micro_batch = 1;
  bool sequence_parallel = false;
  std::int64_t virtual_stages = 1;
  rank_order order = default_order;

  /// etp as it runs: tp where unset.
  [[nodiscard]] std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  /// The tensor-parallel ranks of a group that hold the same expert slice:
  /// tp / etp (1 where etp does not divide tp, which the check refuses).
  [[nodiscard]] std::int64_t expert_slice_ranks() const {
    auto const e = expert_tp();
    return e >= 1 && e <= tp && tp % e == 0 ? tp / e : 1;
  }

  friend bool operator==(strategy const&, strategy const&) = default;
};

/// How a pipeline's layers sit on its pp x vpp chunks: chunk c on rank
/// c % pp (its virtual stage c / pp), the model's layers through the chunks
/// in order. dtplan's split (layers / chunks each, the first layers %
/// chunks a layer more), or Megatron-Core's where training says so
/// (training::first_stage_layers, last_stage_layers, embedding_in_split,
/// loss_in_split; transformer_block.py:66-191, transformer_layer.py:37-
/// 160). Its figures hold where legal() is empty.
struct layer_split {
  std::int64_t layers = 0, pp = 1, vpp = 1;
  std::int64_t first = 0, last = 0;  ///< the first and last rank's layers; 0: split with the middle ones
  bool embedding = false, loss = false;
  /// With the embedding or loss counted: the first chunks take a layer more
  /// where the count does not divide (torchtitan); false: it must divide.
  bool rest_first = false;

  /// pp x vpp, held below 2^63 (a strategy's degrees can be absurd before
  /// the check refuses them).
  [[nodiscard]] std::int64_t chunks() const {
    std::int64_t n = 0;
    return __builtin_mul_overflow(pp, vpp, &n) ? std::numeric_limits<std::int64_t>::max() : n;
  }
  /// Whether the split is Megatron's uneven first or last rank.
  [[nodiscard]] bool ends() const { return pp > 1 && (first > 0 || last > 0); }
  /// Whether the embedding or the loss takes a layer's place.
  [[nodiscard]] bool accounted() const { return pp > 1 && (embedding || loss) && !ends(); }
  /// Whether it is dtplan's own split.
  [[nodiscard]] bool dtplan() const { return !ends() && !accounted(); }
  /// The layers and the counted embedding and loss.
  [[nodiscard]] std::int64_t slots() const { return layers + (embedding ? 1 : 0) + (loss ? 1 : 0); }
  /// Whether it places every chunk's layers as dtplan's split does (a
  /// Megatron split may: 128 layers and the embedding and loss over 2).
  [[nodiscard]] bool places_as_dtplan() const;
  /// Layers of chunk `c`, the first of them (from 0), and those of rank `r`.
  [[nodiscard]] std::int64_t chunk_layers(std::int64_t c) const;
  [[nodiscard]] std::int64_t first_layer(std::int64_t c) const;
  [[nodiscard]] std::int64_t rank_layers(std::int64_t r) const;
  /// Why Megatron-Core would not build the split (its assertions), for a
  /// Megatron split: "" where it does.
  [[nodiscard]] std::string refusal() const;
  /// Whether Megatron-Core builds it: refusal() is empty, without writing
  /// the reason (the search asks of every candidate).
  [[nodiscard]] bool builds() const { return fault_of() == fault::none; }

 private:
  enum class fault : std::uint8_t {
    none, first_vpp, last_vpp, ends_placed, middle_vpp, middle_uneven, middle_empty, chunks_divide,
    embedding_alone, loss_alone
  };
  [[nodiscard]] fault fault_of() const;
  [[nodiscard]] std::int64_t end_layers() const;  // first + last, held below 2^63
  [[nodiscard]] std::int64_t middle_ranks() const { return pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0); }
  [[nodiscard]] std::int64_t middle_rank_layers() const;  // ends(): a middle rank's
  [[nodiscard]] std::int64_t of_rank(std::int64_t r) const;  // ends(): rank r's
};
/// The split `s` runs `m`'s layers in under `t`, on a framework with `lim`.
layer_split split_of(model const& m, training const& t, framework_limits const& lim, strategy const& s);

/// Sets the token dispatcher `d` and what comes with it: Megatron-Core's
/// flex dispatcher has no side stream for the shared expert (core_v0.13.0
/// moe/token_dispatcher.py:1174-1177 raises on it), so flex turns
/// shared_expert_overlap off where the training block does not write it, as
/// NeMo's DeepEP callback does (lightning/pytorch/callbacks/deepep.py:
/// 39-51); written, the check says so.
void use_dispatcher(training& t, dispatcher_kind d);

/// The stage size whose ceil(layers / size) stages are `chunks` with the
/// first a layer more: ceil(layers / chunks) (torchtitan's
/// pipeline_parallel_layers_per_stage).
std::int64_t stage_size(std::int64_t layers, std::int64_t chunks);
/// The layers of pipeline chunk `c` in dtplan's split of `layers` over
/// `chunks` chunks: layers / chunks each, the first layers % chunks a layer
/// more ("10 layers over 4 stages: 3 on stages 0-1, 2 on 2-3").
std::int64_t layers_of_chunk(std::int64_t layers, std::int64_t chunks, std::int64_t c);
/// The first layer (from 0) of pipeline chunk `c` in that split.
std::int64_t first_layer_of_chunk(std::int64_t layers, std::int64_t chunks, std::int64_t c);
/// The layers pipeline rank `r` holds in that split over pp x vpp chunks:
/// its chunks r, r + pp, ... (stage 0 the most).
std::int64_t layers_of_rank(std::int64_t layers, std::int64_t pp, std::int64_t vpp, std::int64_t r);
/// Layers per chunk or stage (`what`) in runs: "7 on stage 0, 8 on stages
/// 1-14, 7 on stage 15".
std::string layer_counts_text(std::vector<std::int64_t> const& per, char const* what);
/// Whether a framework with `lim` has `split`'s kind (dtplan's, or the
/// uneven ends, or the counted embedding and loss it has a key for).
bool has_split(framework_limits const& lim, layer_split const& split);
/// Whether it runs `split`: has it, or it places the layers as dtplan's does.
bool runs_split(framework_limits const& lim, layer_split const& split);
/// The training keys that ask for a split other than dtplan's, as written:
/// "num_layers_in_first_pipeline_stage = 3, num_layers_in_last_pipeline_stage = 2".
std::string split_keys(training const& t);
/// Whether a framework with `lim` splits `layers` over `chunks` pipeline
/// chunks as dtplan costs them (the first chunks a layer more).
bool splits_layers(framework_limits const& lim, std::int64_t layers, std::int64_t chunks);
/// zero = 0 replicating beside tensor or pipeline parallelism, or with
/// context parallelism (what `zero0_with_model_parallel` permits).
bool zero0_beside_model_parallel(strategy const& s);
/// What a framework with `lim` cannot form of a mixture's expert grid
/// (expert_grid = dp2ep, torchtitan's mesh): the key at fault and what the
/// framework does, worded to follow its name; nothing where it forms it.
struct grid_refusal {
  char const* key;
  std::string does;
};
std::optional<grid_refusal> expert_grid_refusal(framework_limits const& lim, model const& m, strategy const& s);

/// What a strategy block says of one key, whatever the key's type: nothing
/// (the default), one value, a set `{...}`, a range `a..b` (integer keys
/// only) or `auto`; and where it was written.
struct choice_form {
  enum class form { unset, single, set, range, any };
  form f = form::unset;
  std::int64_t low = 0;   ///< range bounds, inclusive
  std::int64_t high = 0;
  span key;    ///< where the key was written
  span value;  ///< where its value was written

  [[nodiscard]] bool is_free() const { return f == form::set || f == form::range || f == form::any; }
  [[nodiscard]] bool is_set() const { return f != form::unset; }
};

/// A strategy key as written, with its values.
template <class T>
struct key_choice : choice_form {
  std::vector<T> values;  ///< single: one value; set: the values in order written

  /// `key = v`, written nowhere (the C++ API, a published run).
  static key_choice one(T v) {
    key_choice c;
    c.f = form::single;
    c.values = {std::move(v)};
    return c;
  }
  /// `key = auto`, written nowhere.
  static key_choice any() {
    key_choice c;
    c.f = form::any;
    return c;
  }
};

/// A strategy block as written: fixed when every key is unset or single.
struct strategy_spec {
  std::string name;  ///< as written; an unnamed block is "strategy#N" (N counts blocks from 1)
  span where;        ///< the block header
  key_choice<std::int64_t> dp, tp, pp, cp, ep, etp, zero, micro_batch, virtual_stages;
  key_choice<shard_group> shard;
  key_choice<checkpoint_mode> checkpoint;
  key_choice<bool> sequence_parallel;
  key_choice<rank_order> order;

  /// Whether any key is a set, a range or `auto` (the key table's strategy keys).
  [[nodiscard]] bool is_free() const;
  /// The concrete strategy of a fixed spec, the key table's defaults filled;
  /// dp is 0 when not written (the checker derives it), sequence_parallel
  /// follows tp (the checker clears it where the framework does not run it).
  [[nodiscard]] strategy fixed() const;
  /// The span of a key by name ("tp", "zero", ...), or the header when unset
  /// or not a strategy key.
  [[nodiscard]] span key_span(std::string_view key) const;
};

/// A lowered .dtp file: the model, the cluster, the training run and the
/// strategies to check, cost or search.
struct program {
  std::string file;
  planner::model model;        ///< what is trained
  planner::cluster cluster;    ///< on what
  planner::training training;  ///< the run: batch, and what the framework does at run time
  planner::framework framework;  ///< the framework `training.framework` names (its limits and figures)
  std::vector<strategy_spec> strategies;
};

/// The IR as readable text (`dtplan --dump ir`): every resolved value with
/// its unit, defaults filled, each strategy key with its form.
std::string dump(program const& p);

/// A strategy as one line: "dp 16, tp 1, pp 1, cp 1, zero 1, ..." (with "ep 8, " after cp
/// where it splits experts).
std::string describe(strategy const& s);

}  // namespace dtplan::planner
