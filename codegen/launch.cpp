#include "codegen/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "codegen/escape.hpp"
#include "codegen/templates/template_text.hpp"
#include "planner/model/layout.hpp"

namespace dtplan::codegen {

std::string launch_blocking_env(planner::program const& p) {
  if (!p.training.cuda_launch_blocking) return {};
  return "# The plan was costed with every kernel launch blocking (training.cuda_launch_blocking).\n"
         "export CUDA_LAUNCH_BLOCKING=1\n";
}

namespace {

// A SLURM job name: letters, digits, '-' and '_' only.
std::string job_name(std::string const& plan_name) {
  std::string out = "dtplan-";
  for (char c : plan_name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

std::int64_t world(planner::plan const& pl) { return pl.s.dp * pl.s.tp * pl.s.cp * pl.s.pp; }

// The NCCL settings both scripts export: shell code made of the plan's
// numbers and enum names only. Values the site knows better are
// overridable from the caller's environment.
std::string nccl_env(planner::program const& p, planner::plan const& pl) {
  planner::rank_layout l(pl.s, p.cluster.gpus_per_node);
  std::string o;
  o += "# NCCL: warnings only; set NCCL_DEBUG=INFO to see the rings and the transports.\n";
  o += "export NCCL_DEBUG=\"${NCCL_DEBUG:-WARN}\"\n";
  o += launch_blocking_env(p);
  if (gpus_per_host(p.cluster) < p.cluster.gpus_per_node)
    o += fmt::format("# Each NVLink domain of {} GPUs spans {} hosts: NCCL 2.21 or newer reaches across them\n"
                     "# (multi-node NVLink); NCCL_MNNVL_ENABLE=1 insists on it.\n",
                     p.cluster.gpus_per_node, p.cluster.gpus_per_node / gpus_per_host(p.cluster));
  if (p.cluster.nodes > 1) {
    std::string inter;
    for (auto a : {planner::axis::tp, planner::axis::cp, planner::axis::dp, planner::axis::pp})
      if (l.placement(a).crosses_nodes()) inter += fmt::format("{}{}", inter.empty() ? "" : ", ", planner::name(a));
    o += fmt::format("# Groups that cross nodes in this plan: {}.\n", inter.empty() ? "none" : inter);
    o += "# The interface NCCL bootstraps on; set it to your management network (eth0, ib0, ...).\n";
    o += "export NCCL_SOCKET_IFNAME=\"${NCCL_SOCKET_IFNAME:-^lo,docker}\"\n";
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
  if (dp_bytes > 0)
    o += fmt::format(
        "# The largest all-reduce across nodes is {}: ring is the bandwidth-optimal algorithm for it.\n"
        "export NCCL_ALGO=\"${{NCCL_ALGO:-Ring}}\"\n",
        planner::to_string(planner::bytes(dp_bytes)));
  return o;
}

// The values both templates share.
std::vector<template_value> common_values(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto const per_host = gpus_per_host(p.cluster);
  std::string trays;
  if (per_host < p.cluster.gpus_per_node)
    trays = fmt::format("# Each node of the plan is an NVLink domain of {} GPUs, launched as {} trays of {}\n"
                        "# GPUs (one host each); ranks follow the trays in order.\n",
                        p.cluster.gpus_per_node, p.cluster.gpus_per_node / per_host, per_host);
  return {
      {"PLAN", comment_text(pl.name)},
      {"FILE", comment_text(p.file)},
      {"WORLD", fmt::format("{}", world(pl))},
      {"AXES", fmt::format("tp {} cp {} dp {} pp {}, zero {}", s.tp, s.cp, s.dp, s.pp, s.zero)},
      {"TASKS_PER_NODE", fmt::format("{}", per_host)},
      {"TRAYS", trays},
      {"NCCL_ENV", nccl_env(p, pl)},
  };
}

}  // namespace

std::int64_t gpus_per_host(planner::cluster const& c) {
  constexpr std::int64_t server = 8;  // the most GPUs one host carries
  constexpr std::int64_t tray = 4;    // GB200/GB300 NVL72 compute trays
  return c.gpus_per_node > server && c.gpus_per_node % tray == 0 ? tray : c.gpus_per_node;
}

std::string slurm_script(planner::program const& p, planner::plan const& pl) {
  auto values = common_values(p, pl);
  values.push_back({"JOB_NAME", job_name(pl.name)});
  values.push_back({"SLURM_NODES", fmt::format("{}", world(pl) / gpus_per_host(p.cluster))});
  return fill(template_text("slurm.sbatch"), values);
}

std::string mpirun_script(planner::program const& p, planner::plan const& pl) {
  auto values = common_values(p, pl);
  values.push_back({"LAUNCH_NODES", fmt::format("{}", world(pl) / gpus_per_host(p.cluster))});
  return fill(template_text("mpirun.sh"), values);
}

}  // namespace dtplan::codegen
