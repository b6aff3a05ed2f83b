#pragma once
#include <string>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// Launch scripts for the generated skeleton (DSL.md section 5). Both build
/// `../skeleton` when its binary is missing, set the NCCL environment the
/// plan needs and start one rank per GPU.
namespace dtplan::codegen {

/// `launch/slurm.sbatch`: `sbatch launch/slurm.sbatch` from the bundle.
std::string slurm_script(planner::program const& p, planner::plan const& pl);

/// `launch/mpirun.sh`: `launch/mpirun.sh HOSTFILE [train_step flags]`.
std::string mpirun_script(planner::program const& p, planner::plan const& pl);

}  // namespace dtplan::codegen
