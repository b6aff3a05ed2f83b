#pragma once
#include <optional>

#include "planner/ir/ir.hpp"

/// Published figures of the kernels a framework runs, by GPU generation:
/// what share of the 16-bit dense peak each attention kernel reaches over a
/// training step's forward and backward. These are the libraries' physics,
/// read from their papers and benchmarks (kernels.cpp has each source); a
/// GPU block's `attention_efficiency` overrides them.
namespace dtplan::planner {

/// The share of `g`'s 16-bit peak `backend` reaches (forward and backward
/// of a causal training kernel at long sequences, the tile and wave losses
/// of short ones left to the roofline).
double attention_efficiency(gpu const& g, attention_backend backend);

/// A kernel's measured fixed cost per query block, in keys of its loop,
/// where one is measured: its rate is then attention_efficiency x keys /
/// (keys + this) over the keys a query block runs over. Only the Triton
/// kernel's is (240); the others' shares were read at one length each and
/// the GEMM tile's overhead stands for theirs.
std::optional<double> query_block_keys(attention_backend backend);

/// Whether the model's attention runs as a fused kernel (flash, cuDNN,
/// Triton), not the unfused matmul and softmax path that keeps the a.s^2
/// scores.
bool uses_flash(program const& p);

/// Whether the unfused attention path of a framework with fused kernels
/// (`fused_elementwise`) runs its softmax in PyTorch's eager fp32 operators
/// because the fused kernel does not fit the shape. Megatron's own
/// (`transformer_impl = local`, FusedScaleMaskSoftmax) takes 16-bit scores,
/// 16 < keys <= 4,096, queries a multiple of 4, and micro_batch x heads /
/// tp a multiple of the kernel's rows a block (8 up to 128 keys, 4 above):
/// Megatron-Core megatron/core/fusions/fused_softmax.py
/// `is_kernel_available` (Megatron-LM aed2f75e20) and microsoft/Megatron-
/// DeepSpeed 0782d753dd megatron/model/fused_softmax.py, whose kernel took
/// up to 2,048 keys (dtplan takes 4,096 for every version). Transformer
/// Engine's (`transformer_engine`) asks the same rows of four, and 16 <
/// keys < 16,384, keys a multiple of 8, as many queries as keys and
/// queries a multiple of the rows a block (TE v2.5, f05f12c974,
/// transformer_engine/pytorch/attention/dot_product_attention/softmax.py
/// `is_kernel_available`, :177-209). The flash path, frameworks of eager
/// kernels and fp32 training never fall back.
bool softmax_falls_back(program const& p, strategy const& s);

}  // namespace dtplan::planner
