#pragma once
#include <string>
#include <vector>

#include "planner/ir.hpp"
#include "planner/units.hpp"

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

  [[nodiscard]] bool fits() const { return total <= usable; }
};

/// Counts every term of COSTMODEL.md section 2. Assumes the strategy is
/// legal (dp x tp x pp x cp = GPUs, divisibility); never fails.
memory_breakdown estimate_memory(program const& p, strategy const& s);

/// Per transformer layer and one micro-batch: the bytes of activations kept
/// for the backward pass, per Korthikanti et al. generalised to GQA, SwiGLU
/// and flash attention.
bytes activations_per_layer(model const& m, strategy const& s);

}  // namespace dtplan::planner
