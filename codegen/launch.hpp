#pragma once
#include <cstdint>
#include <string>

#include "planner/ir/ir.hpp"
#include "planner/ir/plan.hpp"

/// Launch scripts for the generated skeleton (DSL.md section 5), filled
/// from codegen/templates/{slurm.sbatch,mpirun.sh}. Both find the bundle,
/// source a site set-up hook (DTPLAN_SETUP), build `skeleton/` when its
/// binary is missing, set the NCCL environment the plan needs and start one
/// rank per GPU; nothing from the input file but comment text (escaped)
/// reaches them.
namespace dtplan::codegen {

/// GPUs a launcher starts per host: the cluster's gpus_per_node, except
/// for a node that is an NVLink domain larger than one server (an NVL72
/// rack modelled as gpus_per_node = 72), which is launched as its trays of
/// 4 GPUs, one host (Slurm node) per tray; ranks stay in order, so each
/// domain's ranks are its trays'. (A cluster key for the tray size would
/// replace the rule when one exists.)
std::int64_t gpus_per_host(planner::cluster const& c);

/// The lines a launch script exports when the plan was costed with every
/// kernel launch blocking (training.cuda_launch_blocking); empty otherwise.
/// The bundle's scripts and the framework jobs' launch.sh share them.
std::string launch_blocking_env(planner::program const& p);

/// `launch/slurm.sbatch`: `sbatch launch/slurm.sbatch` from the bundle, or
/// `sbatch ../launch/slurm.sbatch` from its skeleton/ directory.
std::string slurm_script(planner::program const& p, planner::plan const& pl);

/// `launch/mpirun.sh`: `launch/mpirun.sh HOSTFILE [train_step flags]`.
std::string mpirun_script(planner::program const& p, planner::plan const& pl);

}  // namespace dtplan::codegen
