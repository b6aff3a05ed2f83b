// The keys fuzz_extreme writes, with the kind of value each takes: a header
// so that keys_test can check the list against the key table.
#pragma once

#include <array>

namespace dtplan::fuzz {

enum class kind { count, bytes, bandwidth, rate, time, fraction, real, flag, text, choice };

struct key {
  char const* block;
  char const* name;
  kind k;
  char const* choices = "";  // for kind::choice, '|'-separated
};

// Every key of docs/keys.md (the key table), with its kind (keys_test checks
// that none is missing); keys the table does not have are located errors,
// which is fine.
constexpr std::array keys{
    key{"model", "layers", kind::count},          key{"model", "hidden", kind::count},
    key{"model", "heads", kind::count},           key{"model", "kv_heads", kind::count},
    key{"model", "ffn", kind::count},             key{"model", "mlp", kind::choice, "gelu|swiglu"},
    key{"model", "vocab", kind::count},           key{"model", "seq_len", kind::count},
    key{"model", "tied_embeddings", kind::flag},  key{"model", "attention", kind::choice, "flash|standard"},
    key{"model", "precision", kind::choice, "bf16|fp16|fp32|fp8"},
    key{"model", "optimizer", kind::choice, "adam|adamw|sgd|sgd_momentum"},
    key{"model", "experts", kind::count},         key{"model", "experts_per_token", kind::count},
    key{"model", "dropout", kind::flag},          key{"model", "description", kind::text},
    key{"model", "norm", kind::choice, "layernorm|rmsnorm|nonesuch"},
    key{"model", "position_embedding", kind::choice, "learned|rotary|alibi|nonesuch"},
    key{"gpu", "memory", kind::bytes},            key{"gpu", "peak_flops", kind::rate},
    key{"gpu", "peak_flops_fp8", kind::rate},     key{"gpu", "peak_flops_fp32", kind::rate},
    key{"gpu", "hbm_bandwidth", kind::bandwidth}, key{"gpu", "intra_node", kind::bandwidth},
    key{"gpu", "matmul_efficiency", kind::fraction}, key{"gpu", "reserved", kind::bytes},
    key{"gpu", "intra_latency", kind::time},      key{"gpu", "inter_latency", kind::time},
    key{"gpu", "comm_efficiency", kind::fraction}, key{"gpu", "hbm_efficiency", kind::fraction},
    key{"gpu", "sm_count", kind::count},          key{"gpu", "attention_efficiency", kind::fraction},
    key{"gpu", "kernel_latency", kind::time},     key{"gpu", "overlap_slowdown", kind::fraction},
    key{"gpu", "step_overhead", kind::time},      key{"gpu", "dispatch_latency", kind::time},
    key{"gpu", "description", kind::text},
    key{"gpu", "generation", kind::choice, "volta|ampere|hopper|blackwell|cdna3|ada"},
    key{"gpu", "nvls_bandwidth", kind::bandwidth},
    key{"gpu", "matmul_efficiency_fp8", kind::fraction},
    key{"gpu", "network_efficiency", kind::fraction},
    key{"gpu", "matmul_tile_overhead", kind::count}, key{"gpu", "matmul_tile_overhead_fp8", kind::count},
    key{"cluster", "nodes", kind::count},         key{"cluster", "gpus_per_node", kind::count},
    key{"cluster", "gpu", kind::choice, "H100_SXM|B200|MI300X|cgp0|nonesuch"},
    key{"cluster", "intra_node", kind::bandwidth}, key{"cluster", "inter_node", kind::bandwidth},
    key{"cluster", "intra_latency", kind::time},  key{"cluster", "inter_latency", kind::time},
    key{"cluster", "comm_efficiency", kind::fraction}, key{"cluster", "description", kind::text},
    key{"cluster", "network_efficiency", kind::fraction},
    key{"training", "global_batch", kind::count}, key{"training", "base_lr", kind::real},
    key{"training", "base_batch", kind::count},
    key{"training", "framework", kind::choice, "generic|megatron|megatron_2021|torchtitan|deepspeed|fsdp|ddp|f|cfr0|nonesuch"},
    key{"training", "description", kind::text},
    key{"training", "attention_backend", kind::choice, "flash|flash3|fused|triton|unfused|auto"},
    key{"training", "fused_elementwise", kind::flag},
    key{"training", "cross_entropy", kind::choice, "fused|unfused"},
    key{"training", "grad_precision", kind::choice, "bf16|fp16|fp32"},
    key{"training", "grad_sync", kind::choice, "per_step|per_micro_batch"},
    key{"training", "grad_bucket", kind::choice, "fixed|scaled"},
    key{"training", "ddp_bucket_size", kind::bytes},
    key{"training", "overlap_grad_sync", kind::flag},
    key{"training", "grad_reduce", kind::choice, "reduce_scatter|all_reduce"},
    key{"training", "overlap_param_gather", kind::flag},
    key{"training", "tp_comm_overlap", kind::flag},
    key{"training", "overlap_p2p_comm", kind::flag},
    key{"training", "p2p_scatter_gather", kind::flag},
    key{"training", "fp8_param_gather", kind::flag},
    key{"training", "optimizer_state_precision", kind::choice, "bf16|fp16|fp32"},
    key{"training", "cuda_graphs", kind::flag},
    key{"training", "nvls", kind::flag},
    key{"training", "fsdp_reshard_with_pp", kind::flag},
    key{"framework", "attention_backend", kind::choice, "flash|flash3|fused|triton|unfused|auto"},
    key{"framework", "fused_elementwise", kind::flag},
    key{"framework", "cross_entropy", kind::choice, "fused|unfused"},
    key{"framework", "grad_precision", kind::choice, "bf16|fp16|fp32"},
    key{"framework", "grad_sync", kind::choice, "per_step|per_micro_batch"},
    key{"framework", "grad_bucket", kind::choice, "fixed|scaled"},
    key{"framework", "ddp_bucket_size", kind::bytes},
    key{"framework", "overlap_grad_sync", kind::flag},
    key{"framework", "grad_reduce", kind::choice, "reduce_scatter|all_reduce"},
    key{"framework", "overlap_param_gather", kind::flag},
    key{"framework", "tp_comm_overlap", kind::flag},
    key{"framework", "overlap_p2p_comm", kind::flag},
    key{"framework", "p2p_scatter_gather", kind::flag},
    key{"framework", "fp8_param_gather", kind::flag},
    key{"framework", "optimizer_state_precision", kind::choice, "bf16|fp16|fp32"},
    key{"framework", "cuda_graphs", kind::flag},
    key{"framework", "nvls", kind::flag},
    key{"framework", "fsdp_reshard_with_pp", kind::flag},
    key{"framework", "checkpoint_modes", kind::choice, "{none}|{none, selective, ops, full}|{}|{full, full}|{bogus}"},
    key{"framework", "dispatch_latency", kind::time},
    key{"framework", "step_overhead", kind::time},
    key{"framework", "zero_stages", kind::choice, "{0}|{0, 1, 2, 3}|{3}|{}|{4}|{0, 0}"},
    key{"framework", "pipeline_max_zero", kind::count},
    key{"framework", "bf16_min_zero", kind::count},
    key{"framework", "tensor_parallel", kind::flag},
    key{"framework", "pipeline_parallel", kind::flag},
    key{"framework", "interleaving", kind::flag},
    key{"framework", "context_parallel", kind::flag},
    key{"framework", "hybrid_sharding", kind::flag},
    key{"framework", "description", kind::text},
    key{"strategy", "dp", kind::count},           key{"strategy", "tp", kind::count},
    key{"strategy", "pp", kind::count},           key{"strategy", "cp", kind::count},
    key{"strategy", "ep", kind::count},           key{"strategy", "zero", kind::count},
    key{"strategy", "shard", kind::choice, "all|node|1|2|8|auto"},
    key{"strategy", "checkpoint", kind::choice, "none|selective|ops|full|auto"},
    key{"strategy", "micro_batch", kind::count},  key{"strategy", "sequence_parallel", kind::flag},
    key{"strategy", "virtual_stages", kind::count},
    key{"strategy", "order", kind::choice, "\"tp-cp-dp-pp\"|\"pp-dp-cp-tp\"|\"dp-tp\"|auto|\"tp-tp-dp-pp\""},
    key{"strategy", "description", kind::text},
};

}  // namespace dtplan::fuzz
