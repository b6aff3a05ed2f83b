#include "planner/model/kernels.hpp"

#include <algorithm>
#include <array>

namespace dtplan::planner {

namespace {

// Rows: flash (FlashAttention-2), flash3, fused (cuDNN), triton; columns:
// volta, ampere, hopper, blackwell, cdna3. Each figure is the share of the
// dense bf16 peak over forward and backward (the backward does 2.5 x the
// forward's FLOPs at a lower rate than the forward).
// - FlashAttention-2 (Dao 2023, arXiv:2307.08691, abstract and fig. 4-6):
//   50-73 % of A100's peak forward, ~60 % forward + backward -> 0.55; on
//   H100 "only 35 % utilization" (Shah et al. 2024, FlashAttention-3,
//   arXiv:2407.08608, sec. 1) -> 0.33; Blackwell runs it without its new
//   tensor-core instructions: as Hopper, 0.30.
// - FlashAttention-3 (Shah et al. 2024): 740 TFLOP/s = 75 % forward, backward
//   1.5-1.75 x FlashAttention-2's -> 0.60 over the step on H100; elsewhere
//   the GPU's best kernel stands in (cuDNN).
// - cuDNN fused attention (the kernel Transformer Engine and PyTorch SDPA
//   prefer on Hopper and later; docs/research/frameworks.md M10, T11): on
//   H100 within 10-20 % of FlashAttention-3 (FlashAttention-3 paper, fig.
//   5-7) -> 0.52; torch's tritonbench on H100, B1 H24 S4608 D128: cuDNN SDPA
//   631 TFLOP/s forward vs 329 for the default (pytorch/pytorch#142132);
//   Blackwell 0.52: cuDNN 9.17-9.27 on GB200, causal, head dim 128, 64/8
//   heads, 8 K tokens, forward and backward (backward 2.5 x the forward's
//   FLOPs) at 0.52-0.57 of the 2,500 TFLOP/s peak (NVIDIA/cudnn-frontend
//   benchmark/sdpa_benchmark_training, results at d48a60e, df73764,
//   e99b0d0, 20dc108: docs/research/hardware.md s.6);
//   Ampere: cuDNN's kernel is FlashAttention-2-class, 0.50.
// - llm-foundry's Triton kernel (the MosaicML benchmark tables before
//   2024-03-26, frameworks.md C7): FlashAttention-2 is "1.3-2.5 x faster
//   than FlashAttention in Triton" (Dao 2023, fig. 4) -> 0.55 / 1.8 = 0.30
//   on A100; on Hopper the same 1.8 x below FlashAttention-2, 0.18. Read as
//   the kernel's rate at long sequences, beside its query block's measured
//   fixed cost (triton_block_keys below).
// Volta and CDNA3 have no figure of their own: 0.30 (a FlashAttention-1
// class kernel), their vendors' kernels not measured here.
// - PyTorch's FlexAttention (flex, below): a Triton flash kernel that
//   torch.compile generates from the mask and score functions; on A100,
//   causal, 90 % of FlashAttention-2's forward and 85 % of its backward
//   (PyTorch blog, "FlexAttention: The Flexibility of PyTorch with the
//   Performance of FlashAttention", Aug. 2024; the kernel: Dong et al.
//   2024, arXiv:2412.05496). Over a step the backward, 2.5 x the
//   forward's FLOPs at a lower rate, takes some three quarters of
//   FlashAttention-2's time:
//   1 / (0.25 / 0.90 + 0.75 / 0.85) = 0.86 of its share. No other GPU is
//   published: the same ratio to FlashAttention-2's figure on each.
constexpr std::array<std::array<double, 5>, 4> published{{
    {0.30, 0.55, 0.33, 0.30, 0.30},  // flash
    {0.30, 0.55, 0.60, 0.52, 0.30},  // flash3
    {0.30, 0.50, 0.52, 0.52, 0.30},  // fused
    {0.20, 0.30, 0.18, 0.17, 0.20},  // triton
}};

// FlexAttention's share of FlashAttention-2's (above).
constexpr double flex_of_flash = 0.86;

}  // namespace

double attention_efficiency(gpu const& g, attention_backend backend) {
  if (g.attention_efficiency) return *g.attention_efficiency;
  // A hand-built program may still say `auto`: the kernel the generation gets.
  if (backend == attention_backend::automatic) backend = resolved_attention(g.generation);
  if (backend == attention_backend::flex)
    return flex_of_flash * published[0][static_cast<std::size_t>(g.generation)];
  auto const row = backend == attention_backend::unfused ? std::size_t{0} : static_cast<std::size_t>(backend);
  double const share = published[row][static_cast<std::size_t>(g.generation)];
  // Blackwell Ultra doubles the SMs' exponential rate (MUFU.EX2, 32 a clock
  // against 16), which the forward's softmax waits on; the backward waits on
  // shared memory. Measured on the same days, cuDNN's forward and backward
  // on GB300 run 1.08-1.11 x GB200's at 8 K tokens and 1.11-1.15 x at 16 K
  // (forward alone 1.18-1.21 x): 1.10 x for the kernels that use the units
  // as cuDNN's and FlashAttention-3/4's do (docs/research/hardware.md s.6).
  constexpr double ultra_gain = 1.10;
  bool const tuned = backend == attention_backend::fused || backend == attention_backend::flash3;
  return tuned && g.exp_per_clock >= 32 ? share * ultra_gain : share;
}

namespace {

// A Triton flash kernel's fixed cost per query block (loading its queries,
// setting up, the final rescale and write), in keys of its loop: the
// Triton tutorial's FlashAttention-2 forward on H100 (pytorch/benchmark
// ff65cb6, PR 2391; B x S = 16 K, 16 heads of 128) ran 328.9, 389.7,
// 433.7, 458.4, 470.7 and 476.8 TFLOP/s at 512 to 16 K keys, which
// rate = asymptote x keys / (keys + 240) meets within 1.3 %
// (docs/research/residuals.md s.14, s.22).
constexpr double triton_block_keys = 240;

}  // namespace

std::optional<double> query_block_keys(attention_backend backend) {
  if (backend == attention_backend::triton) return triton_block_keys;
  return std::nullopt;
}

bool uses_flash(program const& p) {
  return p.model.attention == attention_kind::flash && p.training.attention_kernel != attention_backend::unfused;
}

bool softmax_falls_back(program const& p, strategy const& s) {
  model const& m = p.model;
  if (uses_flash(p) || !p.training.fused_elementwise) return false;
  if (m.prec == precision::fp32) return false;  // no fused kernel to fall back from
  std::int64_t const keys = m.seq_len;
  std::int64_t const queries = m.seq_len / std::max<std::int64_t>(1, s.cp);
  std::int64_t const rows = s.micro_batch * (m.heads / std::max<std::int64_t>(1, s.tp));
  // The kernels' rows a block: a warp takes two rows up to 128 keys, one
  // above; four warps a block of 128 threads.
  std::int64_t const rows_per_block = keys <= 128 ? 8 : 4;
  if (rows % 4 != 0 || queries % 4 != 0) return true;
  if (p.training.transformer_impl == transformer_impl_kind::transformer_engine)
    return !(keys > 16 && keys < 16384 && keys % 8 == 0 && queries == keys && queries % rows_per_block == 0);
  return !(keys > 16 && keys <= 4096 && rows % rows_per_block == 0);
}

}  // namespace dtplan::planner
