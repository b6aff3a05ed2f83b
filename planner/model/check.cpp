#include "planner/model/check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>

#include "planner/ir/counts.hpp"
#include "planner/model/layout.hpp"

namespace dtplan::planner {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

std::string gbits(bandwidth b) { return three_digits(b.value() * 8 / 1e9) + " Gbit/s"; }

std::string capacity_text(bytes b) {
  double const g = b.value() / gib;
  if (g == std::floor(g)) return fmt::format("{:.0f} GiB", g);
  return to_string(b);
}

std::string strategy_label(strategy_spec const& spec) {
  return spec.name.empty() ? std::string("the unnamed strategy") : fmt::format("strategy '{}'", spec.name);
}

bool written(strategy_spec const& spec, std::string_view key) {
  if (key == "dp") return spec.dp.is_set();
  if (key == "tp") return spec.tp.is_set();
  if (key == "pp") return spec.pp.is_set();
  if (key == "cp") return spec.cp.is_set();
  if (key == "micro_batch") return spec.micro_batch.is_set();
  return false;
}

// Applies the legality rules to `s`, deriving dp; reports through `out`
// when a spec is given (the first pass) and stays silent for is_legal and
// for the re-checks of candidate fixes.
class rules {
 public:
  rules(program const& p, strategy_spec const* spec, std::vector<dsl::diagnostic>* out)
      : p_(p), spec_(spec), out_(out) {}

  bool apply(strategy& s, std::int64_t& grad_accum) {
    bool const placed = degrees(s) && world(s);
    // A step's micro-batches are arithmetic on the batch alone: known even
    // where the strategy does not fit the cluster.
    grad_accum = micro_batches(s);
    if (!placed) return false;
    splits(s);
    pipeline(s);
    batch(s, grad_accum);
    sharding(s);
    if (s.sequence_parallel && s.tp == 1) {
      if (spec_ && spec_->sequence_parallel.is_set())
        warning("sequence_parallel", [&] { return "sequence_parallel = true has no effect with tp = 1; ignored"; });
      s.sequence_parallel = false;
    }
    // Unwritten, it follows tp where the framework runs it.
    if (s.sequence_parallel && !p_.framework.limits.sequence_parallel && spec_ && !spec_->sequence_parallel.is_set())
      s.sequence_parallel = false;
    sequence(s);
    experts(s);
    what_the_framework_runs(s);
    if (reporting() && legal_ && s.tp > 1) {
      auto placed = rank_layout(s, p_.cluster.gpus_per_node).placement(axis::tp);
      if (placed.crosses_nodes())
        warning("tp", [&] {
          return fmt::format("tensor parallelism across nodes: tp = {} spans {} nodes over {}", s.tp, placed.nodes,
                             gbits(p_.cluster.inter_node));
        });
    }
    return legal_;
  }

  // Every degree at least 1, none beyond the cluster; a ZeRO stage 0..3.
  bool degrees(strategy const& s) {
    model const& m = p_.model;
    std::int64_t const gpus = p_.cluster.gpus();
    for (auto [key, v] : {std::pair<char const*, std::int64_t>{"tp", s.tp}, {"pp", s.pp}, {"cp", s.cp},
                          {"ep", s.ep}, {"etp", s.expert_tp()}, {"micro_batch", s.micro_batch},
                          {"virtual_stages", s.virtual_stages}})
      if (v < 1) error(key, [key = key, v = v] { return fmt::format("expected {} of at least 1, got {} = {}", key, key, v); });
    if (s.dp < 0) error("dp", [&] { return fmt::format("expected dp of at least 1, got dp = {}", s.dp); });
    if (s.zero < 0 || s.zero > 3)
      error("zero", [&] { return fmt::format("expected a ZeRO stage 0, 1, 2 or 3, got zero = {}", s.zero); });
    if (!legal_) return false;
    for (auto [key, v] : {std::pair<char const*, std::int64_t>{"tp", s.tp}, {"pp", s.pp}, {"cp", s.cp}, {"dp", s.dp}})
      if (v > gpus)
        error(key, [&, key = key, v = v] {
          return fmt::format("{} = {} exceeds the {} of cluster '{}'", key, v, counted(gpus, "GPU"), p_.cluster.name);
        });
    if (s.virtual_stages > m.layers)
      error("virtual_stages", [&] {
        return fmt::format("virtual_stages = {} exceeds the {} of model '{}'", s.virtual_stages,
                           counted(m.layers, "layer"), m.name);
      });
    if (s.micro_batch > p_.training.global_batch)
      error("micro_batch", [&] {
        return fmt::format("micro_batch = {} exceeds global_batch = {}", s.micro_batch, p_.training.global_batch);
      });
    if (!legal_) return false;

    return legal_;
  }

  // dp x tp x pp x cp = the GPUs, deriving dp when not written.
  bool world(strategy& s) {
    std::int64_t const gpus = p_.cluster.gpus();
    std::int64_t const model_parallel = saturating_product({s.tp, s.pp, s.cp});
    if (s.dp == 0) {
      if (gpus % model_parallel != 0) {
        error(first_written({"tp", "pp", "cp"}), [&] {
          return fmt::format(
              "tp x pp x cp = {} x {} x {} = {} does not divide the {} of cluster '{}', so dp cannot be derived",
              s.tp, s.pp, s.cp, model_parallel, counted(gpus, "GPU"), p_.cluster.name);
        });
        return false;
      }
      s.dp = gpus / model_parallel;
    } else if (saturating_product({s.dp, model_parallel}) != gpus) {
      error("dp", [&] {
        return fmt::format("dp x tp x pp x cp = {} x {} x {} x {} = {}, but cluster '{}' has {}", s.dp, s.tp, s.pp,
                           s.cp, saturating_product({s.dp, model_parallel}), p_.cluster.name, counted(gpus, "GPU"));
      });
      return false;
    }

    return true;
  }

  // Tensor parallelism splits heads, key/value heads and the MLP evenly;
  // what the model's attention and multi-token prediction allow.
  void splits(strategy const& s) {
    model const& m = p_.model;
    std::int64_t const kv_heads = m.kv_heads;
    // A mixture's expert width splits over etp (1 or tp).
    std::int64_t const ffn = m.mlp_width();
    std::int64_t const ffn_split = m.experts > 1 && s.expert_tp() == 1 ? 1 : s.tp;
    char const* const ffn_key = m.experts > 1 && m.expert_ffn > 0 ? "expert_ffn" : "ffn";
    if (m.heads % s.tp != 0)
      error("tp", [&] { return fmt::format("tp = {} does not divide heads = {}", s.tp, m.heads); });
    if (kv_heads != m.heads && kv_heads % s.tp != 0)
      error("tp", [&] { return fmt::format("tp = {} does not divide kv_heads = {}", s.tp, kv_heads); });
    if (ffn % ffn_split != 0)
      error("tp", [&] { return fmt::format("tp = {} does not divide {} = {}", s.tp, ffn_key, ffn); });
    if (m.experts > 1 && m.shared_expert_ffn % s.tp != 0)
      error("tp", [&] { return fmt::format("tp = {} does not divide shared_expert_ffn = {}", s.tp, m.shared_expert_ffn); });
    // Multi-latent attention's down projections are column-parallel: tp
    // splits their outputs (core_v0.13.0 transformer/
    // multi_latent_attention.py:286-336), q_lora_rank and kv_lora_rank with
    // the rotary key.
    if (m.mla() && m.q_lora_rank % s.tp != 0)
      error("tp", [&] { return fmt::format("tp = {} does not divide q_lora_rank = {}", s.tp, m.q_lora_rank); });
    if (m.mla() && (m.kv_lora_rank + m.qk_rope_head_dim) % s.tp != 0)
      error("tp", [&] {
        return fmt::format("tp = {} does not divide kv_lora_rank + qk_rope_head_dim = {} + {}", s.tp, m.kv_lora_rank,
                           m.qk_rope_head_dim);
      });
    // The allgather token dispatcher as dtplan costs it: over the ep ranks
    // (etp = 1) or the tp ranks (ep = 1), with sequence parallelism under tp
    // (Megatron-Core refuses a mixture under tp without it in training,
    // moe/moe_layer.py:240-244).
    if (m.experts > 1 && p_.training.moe_token_dispatcher == dispatcher_kind::allgather) {
      if (s.ep > 1 && s.expert_tp() > 1)
        error("ep", [&] {
          return fmt::format("moe_token_dispatcher = allgather over tp x ep = {} x {} ranks, each expert split over "
                             "tp, is not costed: alltoall, or etp = 1",
                             s.tp, s.ep);
        });
      if (s.tp > 1 && !s.sequence_parallel)
        error("sequence_parallel", [&] {
          return fmt::format("moe_token_dispatcher = allgather under tp = {} is costed with sequence parallelism "
                             "only",
                             s.tp);
        });
    }
    // DeepEP's dispatcher as Megatron-Core runs it (core_v0.13.0
    // moe/token_dispatcher.py:1133-1174, transformer_config.py:719-727): over
    // the etp x ep ranks, more than one; no padding to capacity; no shared
    // expert on a side stream. dtplan costs it over the ep ranks, experts
    // whole (etp = 1).
    if (m.experts > 1 && p_.training.moe_token_dispatcher == dispatcher_kind::flex) {
      if (s.expert_tp() * s.ep <= 1)
        error("ep", [&] {
          return std::string("moe_token_dispatcher = flex needs etp x ep > 1: Megatron-Core's DeepEP dispatcher "
                             "runs over the expert-parallel ranks");
        });
      else if (s.expert_tp() > 1)
        error("ep", [&] {
          return fmt::format("moe_token_dispatcher = flex with each expert split over etp = {} ranks is not "
                             "costed: etp = 1, or alltoall",
                             s.expert_tp());
        });
      // DeepEP v1.2.1 runs the rank counts it has a configuration for
      // (deep_ep/buffer.py:233-242) and more than 8 as nodes of 8 peers over
      // NVLink (csrc/kernels/configs.cuh:3, csrc/config.hpp:50-53,
      // 72-81): an expert-parallel group across nodes places 8 on each.
      else if (auto const counts = deepep_rank_counts();
               std::find(counts.begin(), counts.end(), s.ep) == counts.end())
        error("ep", [&] {
          return fmt::format("moe_token_dispatcher = flex over ep = {} ranks: DeepEP (v1.2.1) runs {} or {}", s.ep,
                             fmt::join(counts.first(counts.size() - 1), ", "), counts.back());
        });
      else {
        rank_layout const layout(s, p_.cluster.gpus_per_node);
        auto const placed = layout.placement_of(layout.expert_group_of(0, s.ep, 1));
        if (placed.crosses_nodes() && (s.ep <= deepep_nvl_peers || placed.max_per_node != deepep_nvl_peers))
          error("ep", [&] {
            return fmt::format("moe_token_dispatcher = flex over ep = {} ranks, {} a node: DeepEP runs {} ranks or "
                               "fewer inside a node and more as nodes of {}",
                               s.ep, placed.max_per_node, deepep_nvl_peers, deepep_nvl_peers);
          });
      }
      if (m.pad_to_capacity)
        error("ep", [&] {
          return std::string("moe_token_dispatcher = flex does not pad the experts' input to capacity "
                             "(pad_to_capacity): Megatron-Core refuses the two together");
        });
      if (p_.training.shared_expert_overlap && m.shared_expert_ffn > 0)
        error("ep", [&] {
          return std::string("moe_token_dispatcher = flex runs the shared expert in line: Megatron-Core's DeepEP "
                             "dispatcher has no shared_expert_overlap");
        });
    }
    // PyTorch's ring attention has no FlexAttention path: torchtitan
    // v0.2.0 raises "CP support for FlexAttention is still in progress"
    // (models/llama3/infra/parallelize.py:71-72, deepseek_v3's :65-66).
    if (p_.training.attention_kernel == attention_backend::flex && s.cp > 1)
      error("cp", [&] {
        return fmt::format("cp = {} with attention_backend = flex: PyTorch's context parallelism does not run "
                           "FlexAttention (torchtitan v0.2.0 refuses it)",
                           s.cp);
      });
    // Megatron-Core, the one implementation of multi-token prediction,
    // asserts it runs without context parallelism (core_v0.13.0
    // megatron/training/arguments.py:1073-1076).
    if (m.mtp_layers > 0 && s.cp > 1)
      error("cp", [&] {
        return fmt::format("cp = {}: Megatron-LM runs multi-token prediction (mtp_layers = {}) without context "
                           "parallelism only",
                           s.cp, m.mtp_layers);
      });
  }

  // Pipeline chunks: no more than layers; interleaving needs a pipeline.
  void pipeline(strategy const& s) {
    model const& m = p_.model;
    std::int64_t const chunks = saturating_product({s.pp, s.virtual_stages});
    if (s.virtual_stages > 1 && s.pp == 1) {
      error("virtual_stages",
            [&] { return fmt::format("virtual_stages = {} needs pp > 1, got pp = 1", s.virtual_stages); });
    } else if (m.layers < chunks) {
      if (s.virtual_stages > 1)
        error(s.pp > m.layers ? "pp" : "virtual_stages", [&] {
          return fmt::format("pp x virtual_stages = {} x {} = {} pipeline chunks, but model '{}' has {}", s.pp,
                             s.virtual_stages, chunks, m.name, counted(m.layers, "layer"));
        });
      else
        error("pp", [&] {
          return fmt::format("pp = {} stages, but model '{}' has {}", s.pp, m.name, counted(m.layers, "layer"));
        });
    } else if (auto const split = split_of(m, p_.training, p_.framework.limits, s);
               !split.dtplan() && !runs_split(p_.framework.limits, split)) {
      error("pp", [&] {
        return fmt::format("framework '{}' does not split a pipeline with {}", p_.framework.name,
                           split_keys(p_.training));
      });
    } else if (!split.dtplan() && has_split(p_.framework.limits, split)) {
      // Megatron-Core's own split, as the training block asks for it: its
      // assertions (torchtitan's where it counts the embedding and loss); and
      // torchtitan's stages of one size, of the layers and those.
      auto const degree_text = [&] {
        return s.virtual_stages > 1 ? fmt::format("pp x virtual_stages = {} x {}", s.pp, s.virtual_stages)
                                    : fmt::format("pp = {}", s.pp);
      };
      if (!split.builds())
        error(s.virtual_stages > 1 ? "virtual_stages" : "pp",
              [&] { return fmt::format("{} with {}: {}", degree_text(), split_keys(p_.training), split.refusal()); });
      else if (split.accounted() && !splits_layers(p_.framework.limits, split.slots(), chunks))
        error(s.virtual_stages > 1 ? "virtual_stages" : "pp", [&] {
          auto const per = stage_size(split.slots(), chunks);
          return fmt::format("framework '{}' splits the layers and the counted embedding and loss into stages of one "
                             "size, ceil({} / size) of them: none gives {} pipeline chunks ({}; {} a stage makes {})",
                             p_.framework.name, split.slots(), chunks, degree_text(), per, stage_size(split.slots(), per));
        });
      // (A framework without the split runs it where it is dtplan's own: the
      // checks below.)
    } else if (!splits_layers(p_.framework.limits, m.layers, chunks)) {
      auto const& fw = p_.framework;
      error(s.virtual_stages > 1 ? "virtual_stages" : "pp", [&] {
        if (fw.limits.pipeline_split == pipeline_split_rule::even)
          return fmt::format("framework '{}' splits the layers evenly: {} layers over {} pipeline chunks (pp x "
                             "virtual_stages = {} x {}) do not divide",
                             fw.name, m.layers, chunks, s.pp, s.virtual_stages);
        auto const per = stage_size(m.layers, chunks);
        return fmt::format("framework '{}' splits the layers into stages of one size, ceil(layers / size) of them: "
                           "none gives {} layers over {} pipeline chunks (pp x virtual_stages = {} x {}; {} a stage "
                           "makes {})",
                           fw.name, m.layers, chunks, s.pp, s.virtual_stages, per, stage_size(m.layers, per));
      });
    } else if (m.layers % chunks != 0) {
      warning(s.virtual_stages > 1 ? "virtual_stages" : "pp", [&] {
        auto per = layers_per_chunk(m.layers, chunks);
        return s.virtual_stages > 1
                   ? fmt::format("{} layers over {} pipeline chunks (pp x virtual_stages = {} x {}): {}", m.layers,
                                 chunks, s.pp, s.virtual_stages, layer_counts_text(per, "chunk"))
                   : fmt::format("{} layers over {} pipeline stages: {}", m.layers, s.pp,
                                 layer_counts_text(per, "stage"));
      });
    }

  }

  // global_batch / (dp x micro_batch), where the batch splits into whole
  // micro-batches on every dp rank; 0 where it does not (or dp is unknown).
  std::int64_t micro_batches(strategy const& s) const {
    if (s.dp < 1 || s.micro_batch < 1) return 0;
    std::int64_t const per_step = saturating_product({s.dp, s.micro_batch});
    auto const batch = p_.training.global_batch;
    return batch >= per_step && batch % per_step == 0 ? batch / per_step : 0;
  }

  // The global batch splits into whole micro-batches on every dp rank.
  void batch(strategy const& s, std::int64_t grad_accum) {
    if (grad_accum == 0) {
      error(first_written({"micro_batch", "dp"}), [&] {
        return fmt::format("global_batch = {} is not divisible by dp x micro_batch = {}", p_.training.global_batch,
                           saturating_product({s.dp, s.micro_batch}));
      });
    } else {
      if (s.virtual_stages > 1 && s.pp > 1 && grad_accum % s.pp != 0)
        error("virtual_stages", [&] {
          return fmt::format(
              "virtual_stages = {} needs the micro-batches per step to be a multiple of pp = {}, got grad_accum = {}",
              s.virtual_stages, s.pp, grad_accum);
        });
    }

  }

  // The ZeRO shard group forms, and says when it shards nothing.
  void sharding(strategy const& s) {
    if (s.shard.k == shard_group::kind::size && (s.shard.size < 1 || s.dp % s.shard.size != 0)) {
      error("shard", [&] { return fmt::format("shard = {} does not divide dp = {}", s.shard.size, s.dp); });
    } else if (s.shard.k == shard_group::kind::node && rank_layout(s, p_.cluster.gpus_per_node).node_sync_members() == 0) {
      error("shard", [&] {
        return fmt::format(
            "shard = node needs the data-parallel ranks of each node to form whole shard groups; with order '{}', dp = "
            "{} and {} GPUs per node they do not",
            to_string(s.order), s.dp, p_.cluster.gpus_per_node);
      });
    } else if (s.shard.k != shard_group::kind::all && s.zero == 0) {
      warning("shard", [&] { return fmt::format("shard = {} has no effect with zero = 0", to_string(s.shard)); });
    } else if (reporting() && legal_ && s.shard.k != shard_group::kind::all && s.dp * s.cp > 1) {
      rank_layout const layout(s, p_.cluster.gpus_per_node);
      if (layout.shard_ranks(sharding_of(s)) == 1)
        warning("shard", [&] {
          return s.shard.k == shard_group::kind::node
                     ? fmt::format("shard = node shards nothing here: each node holds one of the {} ranks (dp x cp = "
                                   "{} x {}) that share the weights, so every rank keeps whole ZeRO-{} state and the "
                                   "gradients are all-reduced across nodes",
                                   s.dp * s.cp, s.dp, s.cp, s.zero)
                     : fmt::format("shard = 1 shards nothing: every rank keeps whole ZeRO-{} state and the gradients "
                                   "are all-reduced over dp x cp = {} ranks",
                                   s.zero, s.dp * s.cp);
        });
    }

  }

  // The sequence's split over cp ranks, and over tp ranks within each where
  // sequence parallel, as the framework requires it (sequence_split_rule):
  // the time and memory models split it evenly.
  void sequence(strategy const& s) {
    auto const seq = p_.model.seq_len;
    auto const& fw = p_.framework;
    if (seq % s.cp != 0) {
      error("cp", [&] { return fmt::format("cp = {} does not divide seq_len = {}", s.cp, seq); });
      return;
    }
    switch (fw.limits.sequence_split) {
      case sequence_split_rule::even: break;
      case sequence_split_rule::balanced:
        if (s.cp > 1 && seq % (2 * s.cp) != 0) {
          error("cp", [&] {
            return fmt::format("framework '{}' balances causal attention over 2 x cp = {} chunks of the sequence, "
                               "which seq_len = {} does not divide into",
                               fw.name, 2 * s.cp, seq);
          });
          return;
        }
        break;
      case sequence_split_rule::balanced_tp:
        if (seq % (2 * s.cp * s.tp) != 0) {
          error(s.cp > 1 ? "cp" : "tp", [&] {
            return fmt::format("framework '{}' needs seq_len to divide into 2 x cp x tp = 2 x {} x {} = {} chunks, "
                               "not seq_len = {}",
                               fw.name, s.cp, s.tp, 2 * s.cp * s.tp, seq);
          });
          return;
        }
        break;
    }
    // Where tp already fails to divide the heads, this would repeat it.
    if (legal_ && s.sequence_parallel && (seq / s.cp) % s.tp != 0)
      error("tp", [&] {
        return s.cp == 1 ? fmt::format("sequence parallelism splits seq_len = {} over tp = {} ranks, which do not "
                                       "divide it",
                                       seq, s.tp)
                         : fmt::format("sequence parallelism splits each cp rank's {} tokens (seq_len = {} / cp = {}) "
                                       "over tp = {} ranks, which do not divide them",
                                       seq / s.cp, seq, s.cp, s.tp);
      });
  }

  // The framework's limits: what it implements (framework_limits).
  void what_the_framework_runs(strategy const& s) {
    auto const& fw = p_.framework;
    auto const& lim = fw.limits;
    auto const runs = [&](char const* key, std::string what) {
      error(key, [&] { return fmt::format("framework '{}' does not run {}", fw.name, what); });
    };
    if (s.tp > 1 && !lim.tensor_parallel) runs("tp", fmt::format("tensor parallelism (tp = {})", s.tp));
    if (s.pp > 1 && !lim.pipeline_parallel) runs("pp", fmt::format("pipeline parallelism (pp = {})", s.pp));
    if (s.cp > 1 && !lim.context_parallel) runs("cp", fmt::format("context parallelism (cp = {})", s.cp));
    if (s.ep > 1 && !lim.expert_parallel) runs("ep", fmt::format("expert parallelism (ep = {})", s.ep));
    if (auto grid = expert_grid_refusal(lim, p_.model, s))
      error(grid->key, [&] { return fmt::format("framework '{}' {}", fw.name, grid->does); });
    if (s.tp > 1 && s.sequence_parallel && !lim.sequence_parallel)
      runs("sequence_parallel", "sequence parallelism (sequence_parallel = true)");
    if (s.tp > 1 && !s.sequence_parallel && !lim.tp_without_sequence_parallel)
      runs("sequence_parallel", "tensor parallelism without sequence parallelism (sequence_parallel = false)");
    else if (s.tp > 1 && !s.sequence_parallel && p_.model.experts > 1 && !lim.experts_without_sequence_parallel)
      runs("sequence_parallel",
           "a mixture of experts with tensor parallelism without sequence parallelism (sequence_parallel = false)");
    if (!lim.zero0_with_model_parallel && zero0_beside_model_parallel(s))
      error("zero", [&] {
        return fmt::format("framework '{}' replicates with zero = 0 only without tensor, pipeline or context "
                           "parallelism (tp = {}, pp = {}, cp = {})",
                           fw.name, s.tp, s.pp, s.cp);
      });
    if (s.virtual_stages > 1 && !lim.interleaving)
      runs("virtual_stages", fmt::format("interleaved pipelines (virtual_stages = {})", s.virtual_stages));
    else if (s.virtual_stages > 1 && s.pp == 2 && !lim.interleaving_pp2_batched && !p_.training.overlap_p2p_comm)
      error("virtual_stages", [&] {
        return fmt::format("framework '{}' interleaves a pipeline of pp = 2 only with overlap_p2p_comm = true: its "
                           "batched send and receive would pair the two ranks twice (virtual_stages = {})",
                           fw.name, s.virtual_stages);
      });
    if (std::find(lim.zero_stages.begin(), lim.zero_stages.end(), s.zero) == lim.zero_stages.end())
      error("zero", [&] {
        return fmt::format("framework '{}' runs ZeRO stage {}, not zero = {}", fw.name, fmt::join(lim.zero_stages, " or "),
                           s.zero);
      });
    else if (s.pp > 1 && s.zero > lim.pipeline_max_zero)
      error("zero", [&] {
        return fmt::format("framework '{}' runs ZeRO stage {} at most with a pipeline, not zero = {} with pp = {}",
                           fw.name, lim.pipeline_max_zero, s.zero, s.pp);
      });
    if (p_.model.prec == precision::bf16 && s.zero < lim.bf16_min_zero)
      error("zero", [&] {
        return fmt::format("framework '{}' runs bf16 with ZeRO stage {} at least, not zero = {}", fw.name,
                           lim.bf16_min_zero, s.zero);
      });
    if (s.zero >= 1 && s.shard.k != shard_group::kind::all && !lim.hybrid_sharding)
      runs("shard", fmt::format("hybrid sharding (shard = {})", to_string(s.shard)));
    if (std::find(lim.checkpoint_modes.begin(), lim.checkpoint_modes.end(), s.checkpoint) == lim.checkpoint_modes.end())
      runs("checkpoint", fmt::format("checkpoint = {}", name(s.checkpoint)));
  }

  // Experts split over ep ranks inside the dp x cp group (and, with etp =
  // 1, the tensor-parallel ranks).
  void experts(strategy const& s) {
    model const& m = p_.model;
    if (s.ep > 1) {
      if (m.experts <= 1)
        error("ep", [&] {
          return fmt::format("ep = {} needs a model with experts, but model '{}' has experts = {}", s.ep, m.name,
                             m.experts);
        });
      else if (m.experts % s.ep != 0)
        error("ep", [&] { return fmt::format("ep = {} does not divide experts = {}", s.ep, m.experts); });
    }
    auto const etp = s.expert_tp();
    if (etp != s.tp) {
      // Megatron-Core's --expert-tensor-parallel-size 1 with tp > 1: the
      // experts whole on each rank, the tokens each tensor-parallel rank
      // holds under sequence parallelism sent to them (core_v0.13.0
      // megatron/core/transformer/moe/token_dispatcher.py, the tp x ep grid
      // of parallel_state.py's expert rank generator).
      if (etp != 1)
        error("etp", [&] {
          return fmt::format("etp = {} is neither 1 nor tp = {}: dtplan costs each expert whole on a rank or split "
                             "over the tensor-parallel ranks",
                             etp, s.tp);
        });
      else if (m.experts <= 1)
        error("etp", [&] {
          return fmt::format("etp = 1 below tp = {} needs a model with experts, but model '{}' has experts = {}", s.tp,
                             m.name, m.experts);
        });
      else if (!s.sequence_parallel)
        error("etp", [&] {
          return fmt::format("etp = 1 below tp = {} needs sequence_parallel = true: each tensor-parallel rank sends "
                             "its own tokens to the experts",
                             s.tp);
        });
      else if (!p_.framework.limits.expert_parallel)
        error("etp", [&] {
          return fmt::format("framework '{}' does not run a mixture's own expert grid (etp = 1 below tp = {})",
                             p_.framework.name, s.tp);
        });
    }
    // The experts' grid: tp / etp x dp x cp ranks of a stage hold one
    // expert slice each, in blocks of ep.
    if (s.ep > 1 && (etp == 1 || etp == s.tp)) {
      auto const ranks = s.expert_slice_ranks() * s.dp * s.cp;
      if (ranks % s.ep != 0)
        error("ep", [&] {
          return etp == s.tp ? fmt::format("ep = {} does not divide dp x cp = {}", s.ep, ranks)
                             : fmt::format("ep = {} does not divide tp / etp x dp x cp = {}", s.ep, ranks);
        });
      else if (auto const shard = hybrid_shard_ranks(s); shard > 0 && shard * s.expert_slice_ranks() % s.ep != 0)
        // Under hybrid sharding each shard group holds whole blocks of ep:
        // Megatron-Core asserts the expert data-parallel size divides by
        // the optimizer instances (core_v0.13.0 parallel_state.py:1277-1279),
        // torchtitan builds ep inside dp_shard x cp.
        error("ep", [&] {
          return etp == s.tp ? fmt::format("ep = {} does not divide the {} ranks of a shard group (shard = {}): under "
                                           "hybrid sharding each shard group holds whole blocks of ep",
                                           s.ep, shard, to_string(s.shard))
                             : fmt::format("ep = {} does not divide tp / etp x the {} ranks of a shard group (shard = "
                                           "{}) = {}: under hybrid sharding each shard group holds whole blocks of ep",
                                           s.ep, shard, to_string(s.shard), shard * s.expert_slice_ranks());
        });
    }
  }

  // Ranks in a ZeRO shard group smaller than dp x cp (hybrid sharding); 0
  // without one (or where the shard key is illegal, which sharding() says).
  std::int64_t hybrid_shard_ranks(strategy const& s) const {
    if (s.zero < 1 || (s.shard.k == shard_group::kind::size && (s.shard.size < 1 || s.dp % s.shard.size != 0)))
      return 0;
    auto const n = rank_layout(s, p_.cluster.gpus_per_node).shard_ranks(sharding_of(s));
    return n > 0 && n < s.dp * s.cp ? n : 0;
  }

 private:
  std::string_view first_written(std::initializer_list<std::string_view> keys) const {
    for (auto k : keys)
      if (spec_ && written(*spec_, k)) return k;
    return *keys.begin();
  }

  // Messages are built only when reported: the silent passes (is_legal, the
  // search's hot loop) meet millions of illegal candidates.
  [[nodiscard]] bool reporting() const { return out_ != nullptr && spec_ != nullptr; }

  template <class F>
  void error(std::string_view key, F const& message) {
    legal_ = false;
    if (reporting()) report(dsl::severity::error, key, message());
  }
  template <class F>
  void warning(std::string_view key, F const& message) {
    if (reporting()) report(dsl::severity::warning, key, message());
  }
  void report(dsl::severity level, std::string_view key, std::string message) {
    dsl::diagnostic d;
    d.level = level;
    d.where = spec_->key_span(key);
    d.message = std::move(message);
    out_->push_back(std::move(d));
  }

  program const& p_;
  strategy_spec const* spec_;
  std::vector<dsl::diagnostic>* out_;
  bool legal_ = true;
};

check_result run(program const& p, strategy_spec const* spec, strategy s, bool report) {
  check_result r;
  rules rs(p, spec, report ? &r.diags : nullptr);
  r.legal = rs.apply(s, r.grad_accum);
  r.s = s;
  if (r.legal) {
    r.memory = estimate_memory(shape_of(p, s));
    r.fits = r.memory.fits();
  }
  return r;
}

struct fix {
  std::string text;
  bytes total;
};

// The single-key changes that make an over-full plan fit, each re-checked;
// for every key only its mildest change that fits.
std::vector<fix> find_fixes(program const& p, strategy_spec const& spec, strategy const& s) {
  std::vector<fix> fixes;
  bool const dp_written = spec.dp.is_set();
  std::int64_t const gpus = p.cluster.gpus();
  auto try_first = [&](auto const& candidates) {
    for (auto const& [text, cand] : candidates) {
      auto r = run(p, &spec, cand, false);
      if (r.valid()) {
        fixes.push_back({text, r.memory.total});
        return;
      }
    }
  };
  using candidate = std::pair<std::string, strategy>;

  std::vector<candidate> zero;
  for (int z = s.zero + 1; z <= 3; ++z) {
    auto c = s;
    c.zero = z;
    zero.emplace_back(fmt::format("zero = {}", z), c);
  }
  try_first(zero);

  std::vector<candidate> ckpt;
  // Megatron's modes only: op-level checkpointing (`ops`) is PyTorch's, not
  // every framework's; the advice and the search propose it.
  for (auto mode : {checkpoint_mode::selective, checkpoint_mode::full}) {
    if (recompute_rank(mode) <= recompute_rank(s.checkpoint)) continue;
    auto c = s;
    c.checkpoint = mode;
    ckpt.emplace_back(fmt::format("checkpoint = {}", name(mode)), c);
  }
  try_first(ckpt);

  // The largest smaller micro-batch that divides the per-replica batch;
  // bounded so that an absurd micro_batch cannot stall the check.
  std::vector<candidate> micro;
  std::int64_t const per_replica = p.training.global_batch / s.dp;
  for (std::int64_t mb = s.micro_batch - 1, tried = 0; mb >= 1 && tried < 4096 && micro.size() < 16; --mb, ++tried) {
    if (per_replica % mb != 0) continue;
    auto c = s;
    c.micro_batch = mb;
    micro.emplace_back(fmt::format("micro_batch = {}", mb), c);
  }
  try_first(micro);

  if (s.tp > 1 && !s.sequence_parallel) {
    auto c = s;
    c.sequence_parallel = true;
    try_first(std::vector<candidate>{{"sequence_parallel = true", c}});
  }
  if (s.zero > 0 && s.shard.k != shard_group::kind::all) {
    auto c = s;
    c.shard = shard_group{};
    try_first(std::vector<candidate>{{"shard = all", c}});
  }

  // Model-parallel degrees: dp follows when the user did not write it.
  auto grow = [&](char const* key, std::int64_t strategy::*field, std::int64_t limit) {
    std::vector<candidate> out;
    for (std::int64_t v = s.*field * 2; v <= limit && v <= gpus; v *= 2) {
      auto c = s;
      c.*field = v;
      std::int64_t const rest = c.tp * c.pp * c.cp;
      if (gpus % rest != 0) break;
      c.dp = gpus / rest;
      std::string text = fmt::format("{} = {}", key, v);
      if (dp_written) text += fmt::format(" with dp = {}", c.dp);
      out.emplace_back(std::move(text), c);
    }
    try_first(out);
  };
  grow("tp", &strategy::tp, std::max<std::int64_t>(p.cluster.gpus_per_node, 1));
  grow("pp", &strategy::pp, p.model.layers);
  grow("cp", &strategy::cp, p.model.seq_len);

  std::stable_sort(fixes.begin(), fixes.end(), [](fix const& a, fix const& b) { return a.total < b.total; });
  if (fixes.size() > 3) fixes.resize(3);
  return fixes;
}

}  // namespace

check_result check(program const& p, strategy_spec const& spec, strategy s) {
  auto r = run(p, &spec, s, true);
  if (!r.legal || r.fits) return r;

  auto const& mem = r.memory;
  std::array<std::tuple<char const*, bytes, char const*>, 5> terms{{
      {"optimizer state is", mem.optimizer, "zero"},
      {"weights are", mem.weights, "zero"},
      {"gradients are", mem.gradients, "zero"},
      {"activations are", mem.activations, "checkpoint"},
      {"buffers are", mem.buffers, "micro_batch"},
  }};
  auto dominant = *std::max_element(terms.begin(), terms.end(), [](auto const& a, auto const& b) {
    return std::get<1>(a) < std::get<1>(b);
  });
  std::string_view key = spec.zero.is_set() ? "zero" : std::get<2>(dominant);
  if (key == "checkpoint" && !spec.checkpoint.is_set() && spec.micro_batch.is_set()) key = "micro_batch";

  dsl::diagnostic d;
  d.where = spec.key_span(key);
  d.message = fmt::format("{} needs {:.1f} GiB per GPU; {} has {} ({:.1f} usable)", strategy_label(spec),
                          mem.total.value() / gib, p.cluster.device.name, capacity_text(mem.capacity),
                          mem.usable.value() / gib);
  std::string const share =
      fmt::format("{} {:.1f} GiB of it", std::get<0>(dominant), std::get<1>(dominant).value() / gib);
  auto fixes = find_fixes(p, spec, r.s);
  if (fixes.empty()) {
    d.notes.push_back(
        {{}, share + "; no single change of zero, checkpoint, micro_batch, tp, pp or cp makes it fit"});
  } else {
    for (std::size_t i = 0; i < fixes.size(); ++i)
      d.notes.push_back({{}, fmt::format("{}{} brings the total to {:.1f} GiB", i == 0 ? share + "; " : "",
                                         fixes[i].text, fixes[i].total.value() / gib)});
  }
  r.diags.push_back(std::move(d));
  return r;
}

bool is_legal(program const& p, strategy const& s) {
  auto copy = s;
  std::int64_t grad_accum = 0;
  return rules(p, nullptr, nullptr).apply(copy, grad_accum);
}

}  // namespace dtplan::planner
