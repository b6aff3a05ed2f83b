#pragma once
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

}  // namespace dtplan::planner
