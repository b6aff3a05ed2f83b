#include "codegen/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "planner/model/layout.hpp"

namespace dtplan::codegen {

namespace {

// A SLURM job name: letters, digits, '-' and '_' only.
std::string job_name(std::string const& plan_name) {
  std::string out = "dtplan-";
  for (char c : plan_name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

// The NCCL settings shared by both scripts. Values the site knows better
// are overridable from the caller's environment.
std::string nccl_env(planner::program const& p, planner::plan const& pl, std::string& exported) {
  planner::rank_layout l(pl.s, p.cluster.gpus_per_node);
  std::string o;
  o += "# NCCL: warnings only; set NCCL_DEBUG=INFO to see the rings and the transports.\n";
  o += "export NCCL_DEBUG=\"${NCCL_DEBUG:-WARN}\"\n";
  exported = "-x NCCL_DEBUG";
  if (p.cluster.nodes > 1) {
    std::string inter;
    for (auto a : {planner::axis::tp, planner::axis::cp, planner::axis::dp, planner::axis::pp})
      if (l.placement(a).crosses_nodes()) inter += fmt::format("{}{}", inter.empty() ? "" : ", ", planner::name(a));
    o += fmt::format("# Groups that cross nodes in this plan: {}.\n", inter.empty() ? "none" : inter);
    o += "# The interface NCCL bootstraps on; set it to your management network (eth0, ib0, ...).\n";
    o += "export NCCL_SOCKET_IFNAME=\"${NCCL_SOCKET_IFNAME:-^lo,docker}\"\n";
    exported += " -x NCCL_SOCKET_IFNAME";
    o += "# InfiniBand/RoCE: list the HCAs of the GPU-attached NICs, e.g.\n";
    o += "# export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3\n";
    o += "# and, on RoCE, the GID index of the RoCEv2 address: export NCCL_IB_GID_INDEX=3\n";
  } else {
    o += "# One node: NVLink/PCIe only; no network settings needed.\n";
  }
  auto dp_bytes = 0.0;
  if (pl.time)
    for (auto const& e : pl.time->comm)
      if (e.op == planner::collective::all_reduce && e.link == planner::link_kind::inter)
        dp_bytes = std::max(dp_bytes, e.size.value());
  if (dp_bytes > 0) {
    exported += " -x NCCL_ALGO";
    o += fmt::format(
        "# The largest all-reduce across nodes is {}: ring is the bandwidth-optimal algorithm for it.\n"
        "export NCCL_ALGO=\"${{NCCL_ALGO:-Ring}}\"\n",
        planner::to_string(planner::bytes(dp_bytes)));
  }
  return o;
}

// What both scripts do once they know $BUNDLE: the NCCL environment, then
// the skeleton built if it is not yet.
std::string skeleton_setup(planner::program const& p, planner::plan const& pl, std::string& exported) {
  std::string o = "SKELETON=\"$BUNDLE/skeleton\"\n";
  o += nccl_env(p, pl, exported);
  o += "\n";
  o += "if [ ! -x \"$SKELETON/build/train_step\" ]; then\n"
       "  cmake -S \"$SKELETON\" -B \"$SKELETON/build\" -DCMAKE_BUILD_TYPE=Release\n"
       "  cmake --build \"$SKELETON/build\" -j\n"
       "fi\n";
  return o;
}

std::int64_t world(planner::plan const& pl) { return pl.s.dp * pl.s.tp * pl.s.cp * pl.s.pp; }

}  // namespace

std::string slurm_script(planner::program const& p, planner::plan const& pl) {
  auto const gpn = p.cluster.gpus_per_node;
  std::string o = "#!/bin/bash\n";
  o += fmt::format("#SBATCH --job-name={}\n", job_name(pl.name));
  o += fmt::format("#SBATCH --nodes={}\n", p.cluster.nodes);
  o += fmt::format("#SBATCH --ntasks-per-node={}\n", gpn);
  o += fmt::format("#SBATCH --gpus-per-node={}\n", gpn);
  o += "#SBATCH --cpus-per-task=8\n";
  o += "#SBATCH --time=00:30:00\n";
  o += "#SBATCH --exclusive\n";
  o += "#SBATCH --output=train_step-%j.out\n";
  o += fmt::format("# Plan '{}' of {}: {} ranks, tp {} cp {} dp {} pp {}, zero {}.\n", pl.name, p.file, world(pl), pl.s.tp,
                   pl.s.cp, pl.s.dp, pl.s.pp, pl.s.zero);
  o += "# Submit from the bundle directory: sbatch launch/slurm.sbatch [train_step flags]\n";
  o += "set -euo pipefail\n\n";
  o += "# The bundle must sit on a file system every node sees: the batch step\n";
  o += "# builds the skeleton once and every task runs that binary.\n";
  o += "BUNDLE=\"${SLURM_SUBMIT_DIR:-$(pwd)}\"\n";
  std::string exported;
  o += skeleton_setup(p, pl, exported);
  o += fmt::format(
      "\n# One task per GPU; train_step reads its rank from MPI (srun's PMIx) and\n"
      "# picks GPU local_rank. Without PMIx support, add --no-mpi.\n"
      "srun --ntasks={} --ntasks-per-node={} --cpu-bind=cores \"$SKELETON/build/train_step\" \"$@\"\n",
      world(pl), gpn);
  return o;
}

std::string mpirun_script(planner::program const& p, planner::plan const& pl) {
  auto const gpn = p.cluster.gpus_per_node;
  std::string o = "#!/bin/bash\n";
  o += fmt::format("# Plan '{}' of {}: {} ranks on {} nodes x {} GPUs.\n", pl.name, p.file, world(pl), p.cluster.nodes, gpn);
  o += "# Usage: launch/mpirun.sh HOSTFILE [train_step flags]\n";
  o += fmt::format("# HOSTFILE lists the {} nodes, one per line with 'slots={}'.\n", p.cluster.nodes, gpn);
  o += "set -euo pipefail\n\n";
  o += "if [ $# -lt 1 ]; then\n";
  o += "  echo \"usage: $0 HOSTFILE [train_step flags]\" >&2\n";
  o += "  exit 2\n";
  o += "fi\n";
  o += "HOSTFILE=\"$1\"\n";
  o += "shift\n";
  o += "BUNDLE=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")/..\" && pwd)\"\n";
  std::string exported;
  o += skeleton_setup(p, pl, exported);
  o += fmt::format(
      "\nmpirun -np {} --hostfile \"$HOSTFILE\" --map-by ppr:{}:node --bind-to none \\\n"
      "  {} \\\n"
      "  \"$SKELETON/build/train_step\" \"$@\"\n",
      world(pl), gpn, exported);
  return o;
}

}  // namespace dtplan::codegen
