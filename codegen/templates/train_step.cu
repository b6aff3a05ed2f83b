// The fixed part of the training-step program dtplan generates for a plan
// (codegen/templates/train_step.cu of dtplan). The generator writes the
// plan's constants, namespace `plan`, in place of the placeholder line
// below; everything else is this file. One program runs one rank: it binds its
// GPU, forms the plan's communicators, allocates the planned buffers, runs
// the plan's step (the pipeline schedule, every layer's GEMMs, attention and
// memory-bound work, each collective where and in the precision the plan
// has it) and prints measured against predicted time, phase by phase.
// `--dry-run` prints the rank layout, the communicators and (with
// `--schedule`) the pipeline schedule without touching a GPU; the
// DTPLAN_DRY_RUN_ONLY build needs no CUDA at all.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <thread>
#include <vector>

#ifndef DTPLAN_DRY_RUN_ONLY
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "train_step needs NCCL 2.18 or newer (ncclCommSplit)"
#endif
#ifdef DTPLAN_HAVE_MPI
#include <mpi.h>
#endif
#endif

@PLAN_CONSTANTS@

// Parallel axes, in the order of plan::k_order's values: 0 tp, 1 cp, 2 dp, 3 pp.
static char const* const k_axis_names[4] = {"tp", "cp", "dp", "pp"};
// Groups, in the order of plan::comm_spec::group.
enum group_id {
  g_tp, g_cp, g_grad, g_pp, g_shard, g_replicate, g_embedding, g_ep, g_expert_grad, g_expert_shard, group_count
};
static char const* const k_group_names[group_count] = {"tp",        "cp",        "grad", "pp",          "shard",
                                                       "replicate", "embedding", "ep",   "expert_grad", "expert_shard"};
static char const* const k_op_names[5] = {"all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send-recv"};
static char const* const k_type_names[3] = {"bf16", "fp16", "fp32"};
static char const* const k_phase_names[5] = {"layer", "layer_backward", "micro_batch", "grad_sync", "after_step"};

// The rank layout: the same arithmetic as dtplan's planner::rank_layout.
// The innermost axis of plan::k_order varies fastest; node n holds ranks
// [n * gpus_per_node, (n + 1) * gpus_per_node).
struct layout {
  long long size[4];
  long long stride[4];
  long long world;
  long long gpus_per_node;
  int shard_kind;
  long long dp_block;

  explicit layout(long long dp) : size{plan::k_tp, plan::k_cp, dp, plan::k_pp}, stride{}, world(1),
      gpus_per_node(plan::k_gpus_per_node), shard_kind(plan::k_shard_kind), dp_block(plan::k_shard_dp_block) {
    for (int i = 0; i < 4; ++i) {
      stride[plan::k_order[i]] = world;
      world *= size[plan::k_order[i]];
    }
    // Another --dry-run world keeps the plan's dp blocks while they divide dp.
    if (shard_kind == 1 && (dp_block >= dp || dp % dp_block != 0)) shard_kind = 0;
  }
  long long coord(long long rank, int a) const { return (rank / stride[a]) % size[a]; }
  long long node(long long rank) const { return rank / gpus_per_node; }
  std::vector<long long> group(int a, long long rank) const {
    long long base = rank - coord(rank, a) * stride[a];
    std::vector<long long> out;
    for (long long k = 0; k < size[a]; ++k) out.push_back(base + k * stride[a]);
    return out;
  }
  // The ranks holding the same weights: every dp and cp coordinate.
  std::vector<long long> grad_group(long long rank) const {
    std::vector<long long> out;
    for (long long r : group(2, rank))
      for (long long q : group(1, r)) out.push_back(q);
    std::sort(out.begin(), out.end());
    return out;
  }
  bool split() const { return plan::k_zero >= 1 && shard_kind != 0; }
  std::vector<long long> shard_group(long long rank) const {
    std::vector<long long> out;
    if (shard_kind == 1) {
      std::vector<long long> dp = group(2, rank);
      long long first = coord(rank, 2) / dp_block * dp_block;
      for (long long k = first; k < first + dp_block; ++k)
        for (long long q : group(1, dp[k])) out.push_back(q);
      std::sort(out.begin(), out.end());
    } else if (shard_kind == 2) {
      for (long long r : grad_group(rank))
        if (node(r) == node(rank)) out.push_back(r);
    } else {
      out = grad_group(rank);
    }
    return out;
  }
  std::vector<long long> replicate_group(long long rank) const {
    std::vector<long long> out;
    if (shard_kind == 1) {
      std::vector<long long> dp = group(2, rank);
      for (long long k = coord(rank, 2) % dp_block; k < (long long)dp.size(); k += dp_block) out.push_back(dp[k]);
    } else if (shard_kind == 2) {
      std::vector<long long> sync = grad_group(rank), mine = shard_group(rank);
      size_t at = std::find(mine.begin(), mine.end(), rank) - mine.begin();
      for (size_t i = 0; i < sync.size();) {
        size_t j = i;
        while (j < sync.size() && node(sync[j]) == node(sync[i])) ++j;
        if (at < j - i) out.push_back(sync[i + at]);
        i = j;
      }
    } else {
      out.push_back(rank);
    }
    return out;
  }
  // The ranks with this rank's slice of the experts, in the expert grid's
  // order: the grad group, or with k_etp = 1 below k_tp, the grad groups of
  // every tensor-parallel rank taken member by member.
  std::vector<long long> expert_members(long long rank) const {
    if (plan::k_etp >= plan::k_tp) return grad_group(rank);
    std::vector<std::vector<long long>> syncs;
    long long const base = rank - coord(rank, 0) * stride[0];
    for (long long j = coord(rank, 0) % plan::k_etp; j < plan::k_tp; j += plan::k_etp)
      syncs.push_back(grad_group(base + j * stride[0]));
    std::vector<long long> out;
    for (size_t i = 0; i < syncs.front().size(); ++i)
      for (auto const& g : syncs) out.push_back(g[i]);
    return out;
  }
  std::vector<long long> expert_group(long long rank) const {
    std::vector<long long> members = expert_members(rank);
    long long at = std::find(members.begin(), members.end(), rank) - members.begin();
    long long first = at / plan::k_ep * plan::k_ep;
    return std::vector<long long>(members.begin() + first, members.begin() + first + plan::k_ep);
  }
  // The ranks that hold the same experts: the expert members at this
  // rank's position in their blocks of k_ep.
  std::vector<long long> expert_grad_group(long long rank) const {
    std::vector<long long> members = expert_members(rank), out;
    long long at = std::find(members.begin(), members.end(), rank) - members.begin();
    for (long long i = at % plan::k_ep; i < static_cast<long long>(members.size()); i += plan::k_ep)
      out.push_back(members[i]);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Under hybrid sharding, those of them in this rank's shard group (the
  // same position in their replicate groups).
  std::vector<long long> expert_shard_group(long long rank) const {
    auto shard_index = [&](long long q) {
      std::vector<long long> replicas = replicate_group(q);
      return std::find(replicas.begin(), replicas.end(), q) - replicas.begin();
    };
    std::vector<long long> out;
    for (long long q : expert_grad_group(rank))
      if (shard_index(q) == shard_index(rank)) out.push_back(q);
    return out;
  }
  std::vector<long long> members(int g, long long rank) const {
    switch (g) {
      case g_tp: return group(0, rank);
      case g_cp: return group(1, rank);
      case g_grad: return grad_group(rank);
      case g_pp: return group(3, rank);
      case g_shard: return shard_group(rank);
      case g_replicate: return replicate_group(rank);
      case g_embedding: {
        std::vector<long long> pp = group(3, rank);
        return {pp.front(), pp.back()};
      }
      case g_ep: return expert_group(rank);
      case g_expert_shard: return expert_shard_group(rank);
      default: return expert_grad_group(rank);
    }
  }
};

static std::string join(std::vector<long long> const& v) {
  std::string out;
  for (long long x : v) {
    if (!out.empty()) out += ' ';
    out += std::to_string(x);
  }
  return out;
}

// The pipeline schedule: the same rules as dtplan's planner::one_f_one_b
// and planner::issue_order (Megatron's 1F1B, interleaved with several
// chunks per stage), built here for every stage; the plan's counts of it
// are baked in and checked before it runs.
struct pipe_op {
  int pass = 0;  // 0 forward, 1 backward
  long long micro_batch = 0;
  long long chunk = 0;  // on the stage; model chunk chunk * pp + stage
  long long recv_from = -1, send_to = -1;  // stages; -1: none
  long long start = 0, end = 0, recv_time = 0;  // forward 1, backward 2 units per chunk
};
// What a stage issues, in order: an op (kind 0) or the send of an op's
// result (1) or the receive of its input (2); transfers of one `group` are
// issued together (one ncclGroupStart/End).
struct pipe_item {
  int kind = 0;
  long long op = 0, peer = -1, group = -1, time = 0;
};

struct pipeline {
  long long pp, v, m;
  std::vector<std::vector<pipe_op>> ops;  // [stage]
  long long makespan = 0, idle = 0;

  pipeline(long long stages, long long chunks, long long micro_batches) : pp(stages), v(chunks), m(micro_batches) {
    for (long long st = 0; st < pp; ++st) ops.push_back(order(st));
    simulate();
  }
  std::vector<pipe_op> order(long long stage) const {
    long long total = m * v, warmup = 0;
    if (v == 1) warmup = std::min(pp - stage - 1, m);
    else if (m == pp) warmup = total;
    else warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
    auto op = [&](int pass, long long k) {
      pipe_op o;
      o.pass = pass;
      o.micro_batch = (k / (pp * v)) * pp + k % pp;
      long long c = (k % (pp * v)) / pp;
      o.chunk = pass == 0 ? c : v - 1 - c;
      return o;
    };
    std::vector<pipe_op> out;
    for (long long k = 0; k < warmup; ++k) out.push_back(op(0, k));
    for (long long k = 0; k < total - warmup; ++k) {
      out.push_back(op(0, k + warmup));
      out.push_back(op(1, k));
    }
    for (long long k = total - warmup; k < total; ++k) out.push_back(op(1, k));
    return out;
  }
  // Each op as soon as its input exists, in its stage's order.
  void simulate() {
    long long last = pp * v - 1;
    std::vector<long long> done((size_t)(2 * m * (last + 1)), -1);
    auto at = [&](int pass, long long mb, long long g) -> long long& { return done[(size_t)((pass * m + mb) * (last + 1) + g)]; };
    std::vector<size_t> next((size_t)pp, 0);
    std::vector<long long> clock((size_t)pp, 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (long long st = 0; st < pp; ++st) {
        for (size_t& i = next[st]; i < ops[st].size(); ++i) {
          pipe_op& o = ops[st][i];
          long long g = o.chunk * pp + st, ready = 0;
          if (o.pass == 0) {
            if (g > 0) {
              ready = at(0, o.micro_batch, g - 1);
              o.recv_from = (st + pp - 1) % pp;
            }
            o.send_to = g < last ? (st + 1) % pp : -1;
          } else {
            if (g < last) {
              ready = at(1, o.micro_batch, g + 1);
              o.recv_from = (st + 1) % pp;
            } else {
              ready = at(0, o.micro_batch, g);
            }
            o.send_to = g > 0 ? (st + pp - 1) % pp : -1;
          }
          if (ready < 0) break;
          o.recv_time = o.recv_from >= 0 ? ready : 0;
          o.start = std::max(clock[st], ready);
          o.end = o.start + (o.pass == 0 ? 1 : 2);
          clock[st] = o.end;
          at(o.pass, o.micro_batch, g) = o.end;
          progress = true;
        }
      }
    }
    makespan = *std::max_element(clock.begin(), clock.end());
    idle = makespan - m * v * 3;
  }
  bool complete() const {
    for (auto const& stage : ops)
      for (pipe_op const& o : stage)
        if (o.end == 0) return false;
    return true;
  }
  long long warmup(long long st) const {
    long long n = 0;
    while (n < (long long)ops[st].size() && ops[st][n].pass == 0) ++n;
    return n;
  }
  long long cooldown(long long st) const {
    long long n = 0, size = (long long)ops[st].size();
    while (n < size && ops[st][size - 1 - n].pass == 1) ++n;
    return n;
  }
  long long sends(long long st, int pass) const {
    long long n = 0;
    for (pipe_op const& o : ops[st]) n += o.pass == pass && o.send_to >= 0;
    return n;
  }
  long long sends() const {
    long long n = 0;
    for (long long st = 0; st < pp; ++st) n += sends(st, 0) + sends(st, 1);
    return n;
  }
  // Receives before the op that needs them, sends after the op that makes
  // them, all transfers in one global order (producer's end, direction,
  // micro-batch, model chunk): blocking NCCL transfers cannot deadlock.
  std::vector<pipe_item> items(long long stage) const {
    struct keyed {
      std::array<long long, 6> key;
      pipe_item item;
    };
    std::vector<keyed> all;
    for (size_t i = 0; i < ops[stage].size(); ++i) {
      pipe_op const& o = ops[stage][i];
      long long g = o.chunk * pp + stage, op = (long long)i;
      all.push_back({{o.start, 1, o.pass, o.micro_batch, g, op}, {0, op, -1, -1, o.start}});
      if (o.recv_from >= 0)
        all.push_back({{o.recv_time, 0, o.pass, o.micro_batch, o.pass == 0 ? g - 1 : g + 1, op},
                       {2, op, o.recv_from, -1, o.recv_time}});
      if (o.send_to >= 0) all.push_back({{o.end, 0, o.pass, o.micro_batch, g, op}, {1, op, o.send_to, -1, o.end}});
    }
    std::sort(all.begin(), all.end(), [](keyed const& a, keyed const& b) { return a.key < b.key; });
    std::vector<pipe_item> out;
    long long group = -1;
    for (keyed const& k : all) {
      pipe_item it = k.item;
      if (it.kind != 0) {
        if (out.empty() || out.back().kind == 0 || out.back().time != it.time) ++group;
        it.group = group;
      }
      out.push_back(it);
    }
    return out;
  }
  // Whether this is the schedule dtplan planned (its baked counts).
  bool is_planned() const {
    if (!complete() || 2 * m * v != plan::k_pipe_slots || makespan != plan::k_pipe_makespan || idle != plan::k_pipe_idle ||
        idle / 3 != plan::k_pipe_bubble_pairs || sends() != plan::k_pipe_sends)
      return false;
    for (long long st = 0; st < pp; ++st)
      if (warmup(st) != plan::k_pipe_warmup[st] || cooldown(st) != plan::k_pipe_cooldown[st] ||
          sends(st, 0) != plan::k_pipe_forward_sends[st] || sends(st, 1) != plan::k_pipe_backward_sends[st])
        return false;
    return true;
  }
};

static std::string peer_text(long long stage) { return stage < 0 ? std::string("-") : std::to_string(stage); }

// `--dry-run --schedule`: the schedule in the form dtplan's
// codegen::schedule_text prints it.
static int print_schedule(pipeline const& p) {
  std::printf("schedule pp %lld virtual %lld micro_batches %lld slots %lld makespan %lld idle %lld bubble_pairs %lld sends %lld\n",
              p.pp, p.v, p.m, 2 * p.m * p.v, p.makespan, p.idle, p.idle / 3, p.sends());
  for (long long st = 0; st < p.pp; ++st) {
    std::printf("stage %lld warmup %lld cooldown %lld forward_sends %lld backward_sends %lld\n", st, p.warmup(st),
                p.cooldown(st), p.sends(st, 0), p.sends(st, 1));
    long long i = 0;
    for (pipe_op const& o : p.ops[st])
      std::printf("op %lld %lld %s mb %lld chunk %lld recv %s send %s start %lld end %lld\n", st, i++,
                  o.pass == 0 ? "forward" : "backward", o.micro_batch, o.chunk, peer_text(o.recv_from).c_str(),
                  peer_text(o.send_to).c_str(), o.start, o.end);
    for (pipe_item const& it : p.items(st)) {
      if (it.kind == 0)
        std::printf("issue %lld op %lld\n", st, it.op);
      else
        std::printf("issue %lld group %lld %s %lld peer %lld time %lld\n", st, it.group, it.kind == 1 ? "send" : "recv",
                    it.op, it.peer, it.time);
    }
  }
  if (!p.is_planned()) {
    std::fprintf(stderr, "error: this schedule is not the one dtplan planned (its counts differ)\n");
    return 2;
  }
  return 0;
}

// The --dry-run view: parseable, one line per rank, then the collectives
// and their communicators; no GPU, NCCL or MPI call.
static int dry_run(long long world, bool schedule) {
  long long inner = plan::k_tp * plan::k_cp * plan::k_pp;
  if (world <= 0 || world % inner != 0) {
    std::fprintf(stderr, "error: world size %lld is not a multiple of tp x cp x pp = %lld\n", world, inner);
    return 2;
  }
  layout l(world / inner);
  long long const expert_ranks = (plan::k_etp < plan::k_tp ? plan::k_tp / plan::k_etp : 1) * l.size[2] * plan::k_cp;
  if (plan::k_ep > 1 && expert_ranks % plan::k_ep != 0) {
    std::fprintf(stderr, "error: ep = %lld does not divide %s = %lld at world size %lld\n", plan::k_ep,
                 plan::k_etp < plan::k_tp ? "tp / etp x dp x cp" : "dp x cp", expert_ranks, world);
    return 2;
  }
  std::printf("# plan %s: world %lld, tp %lld cp %lld dp %lld pp %lld (%lld chunks each), ep %lld, order %s, %lld GPUs per node\n",
              plan::k_name, l.world, plan::k_tp, plan::k_cp, l.size[2], plan::k_pp, plan::k_virtual_stages, plan::k_ep,
              plan::k_order_text, plan::k_gpus_per_node);
  std::printf("# planned: gradients over dp x cp = %lld ranks, ZeRO-%d shard groups of %lld ranks, replicated %lld times\n",
              plan::k_dp * plan::k_cp, plan::k_zero, plan::k_shard_ranks, plan::k_replicate_ranks);
  for (long long r = 0; r < l.world; ++r) {
    std::string line = "rank " + std::to_string(r) + " node " + std::to_string(l.node(r)) + " local " +
                       std::to_string(r % l.gpus_per_node);
    for (int a = 0; a < 4; ++a) line += std::string(" ") + k_axis_names[a] + " " + std::to_string(l.coord(r, a));
    for (int a = 0; a < 4; ++a) line += std::string(" | ") + k_axis_names[a] + ": " + join(l.group(a, r));
    line += " | grad: " + join(l.grad_group(r));
    if (l.split()) line += " | shard: " + join(l.shard_group(r)) + " | replicate: " + join(l.replicate_group(r));
    if (plan::k_ep > 1) line += " | ep: " + join(l.expert_group(r));
    if (plan::k_ep > 1 || plan::k_etp < plan::k_tp) {
      line += " | expert_grad: " + join(l.expert_grad_group(r));
      if (l.split()) line += " | expert_shard: " + join(l.expert_shard_group(r));
    }
    if (plan::k_embedding_pair) line += " | embedding: " + join(l.members(g_embedding, r));
    std::printf("%s\n", line.c_str());
  }
  // Each collective with the communicator rank 0 runs it on: its members
  // are the ranks the plan costs it over.
  for (int e = 0; e < plan::k_comm_count; ++e) {
    plan::comm_spec const& c = plan::k_comm[e];
    std::printf("comm %d %s group %s ranks %lld members %zu type %s phase %s overlapped %d bytes %lld count %lld link %s\n", e,
                k_op_names[c.op], k_group_names[c.group], c.ranks, l.members(c.group, 0).size(), k_type_names[c.type],
                k_phase_names[c.phase], c.overlapped, c.bytes, c.count, c.link);
  }
  if (schedule) return print_schedule(pipeline(plan::k_pp, plan::k_virtual_stages, plan::k_micro_batches));
  return 0;
}

struct options {
  bool dry_run = false;
  bool schedule = false;
  bool no_mpi = false;
  long long world = plan::k_world;
  double scale = 1.0;
  long long layers = -1;
  int steps = 2;
};

static void usage(FILE* to, char const* argv0) {
  std::fprintf(to,
               "usage: %s [--dry-run [--schedule] [--world N]] [--no-mpi] [--scale F] [--layers N] [--steps N]\n"
               "  --dry-run    print every rank's coordinates and groups and each collective's\n"
               "               communicator; touches no GPU and needs no launcher\n"
               "  --schedule   with --dry-run: the pipeline schedule, op by op, and its issue order\n"
               "  --world N    the world size for --dry-run (default %lld)\n"
               "  --no-mpi     take the rank from OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK or RANK and\n"
               "               share the NCCL id through a file (DTPLAN_NCCL_ID_FILE, or one named after\n"
               "               the job in the working directory, removed once every rank has it)\n"
               "  --scale F    allocate F x the planned buffers (0 < F <= 1, for small GPUs)\n"
               "  --layers N   run about N layers per stage instead of the plan's\n"
               "  --steps N    steps to run, the first is a warm-up (default 2)\n",
               argv0, plan::k_world);
}

// 0: go on; 1: exit 0 (--help); 2: a usage error (reported).
static int parse_args(int argc, char** argv, options& o) {
  auto bad = [&](char const* fmt, char const* what) {
    std::fprintf(stderr, fmt, what);
    usage(stderr, argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    char const* v = nullptr;
    char* end = nullptr;
    auto value = [&]() -> char const* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--schedule") {
      o.schedule = true;
    } else if (a == "--no-mpi") {
      o.no_mpi = true;
    } else if (a == "--world") {
      if (!(v = value())) return bad("error: '%s' expects a rank count\n", "--world");
      o.world = std::strtoll(v, &end, 10);
      if (*end != '\0' || o.world <= 0) return bad("error: bad --world '%s'\n", v);
    } else if (a == "--scale") {
      if (!(v = value())) return bad("error: '%s' expects a fraction\n", "--scale");
      o.scale = std::strtod(v, &end);
      if (*end != '\0' || !(o.scale > 0 && o.scale <= 1)) return bad("error: --scale expects a fraction in (0, 1], got '%s'\n", v);
    } else if (a == "--layers") {
      if (!(v = value())) return bad("error: '%s' expects a layer count\n", "--layers");
      o.layers = std::strtoll(v, &end, 10);
      if (*end != '\0' || o.layers <= 0) return bad("error: bad --layers '%s'\n", v);
    } else if (a == "--steps") {
      if (!(v = value())) return bad("error: '%s' expects a step count\n", "--steps");
      o.steps = (int)std::strtol(v, &end, 10);
      if (*end != '\0' || o.steps <= 0) return bad("error: bad --steps '%s'\n", v);
    } else if (a == "--help" || a == "-h") {
      usage(stdout, argv[0]);
      return 1;
    } else {
      return bad("error: unknown option '%s'\n", a.c_str());
    }
  }
  if (o.schedule && !o.dry_run) return bad("error: '%s' goes with --dry-run\n", "--schedule");
  return 0;
}

#ifndef DTPLAN_DRY_RUN_ONLY

static long long env_int(std::initializer_list<char const*> names, long long fallback) {
  for (char const* n : names)
    if (char const* v = std::getenv(n)) {
      char* end = nullptr;
      long long x = std::strtoll(v, &end, 10);
      if (end != v && *end == '\0') return x;
    }
  return fallback;
}

// The local rank the launcher gives this process, or -1: Open MPI, Slurm,
// MPICH/Intel MPI, MVAPICH, torchrun.
static long long local_rank_from_env() {
  return env_int({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                  "LOCAL_RANK"},
                 -1);
}

#ifdef DTPLAN_HAVE_MPI
static bool g_mpi = false;  // MPI_Abort on failure
#endif
static std::string g_id_file;  // the NCCL id file rank 0 wrote, removed at exit

static void remove_id_file() {
  if (!g_id_file.empty()) std::remove(g_id_file.c_str());
  g_id_file.clear();
}

[[noreturn]] static void die(int code) {
  remove_id_file();
#ifdef DTPLAN_HAVE_MPI
  if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      die(1);                                                                                    \
    }                                                                                            \
  } while (0)
#define NCCL_CHECK(call)                                                                         \
  do {                                                                                           \
    ncclResult_t e_ = (call);                                                                    \
    if (e_ != ncclSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(e_)); \
      die(1);                                                                                    \
    }                                                                                            \
  } while (0)
#define CUBLAS_CHECK(call)                                                                       \
  do {                                                                                           \
    cublasStatus_t e_ = (call);                                                                  \
    if (e_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cublasGetStatusString(e_)); \
      die(1);                                                                                    \
    }                                                                                            \
  } while (0)
#ifdef DTPLAN_HAVE_MPI
#define MPI_CHECK(call)                                                                          \
  do {                                                                                           \
    int e_ = (call);                                                                             \
    if (e_ != MPI_SUCCESS) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed with MPI error %d\n", __FILE__, __LINE__, #call, e_); \
      die(1);                                                                                    \
    }                                                                                            \
  } while (0)
#endif

// Binds this rank to GPU local_rank (modulo the GPUs it sees). Runs before
// MPI_Init: a CUDA-aware MPI creates its context on the current device, and
// every local rank on GPU 0 would defeat "the planned buffers fit".
static void bind_gpu(long long local) {
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  CUDA_CHECK(cudaSetDevice((int)(local % devices)));
}

// The job's name for the NCCL id file: unique per job, so a stale file of
// an earlier run is never read.
static std::string job_tag() {
  std::string id;
  if (char const* v = std::getenv("SLURM_JOB_ID")) {
    id = v;
    if (char const* step = std::getenv("SLURM_STEP_ID")) id += std::string(".") + step;
  } else {
    for (char const* n : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "DTPLAN_JOB_ID"})
      if (char const* v = std::getenv(n)) {
        id = v;
        break;
      }
  }
  for (char& c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) c = '_';
  return id;
}

// The file --no-mpi shares the NCCL id through: DTPLAN_NCCL_ID_FILE, or
// one named after the job in the working directory; empty (with a message)
// when there is no job to name it after.
static std::string nccl_id_path(long long rank) {
  if (char const* env = std::getenv("DTPLAN_NCCL_ID_FILE")) return env;
  std::string tag = job_tag();
  if (tag.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "error: --no-mpi needs a file to share the NCCL id through, named after the job: set "
                           "DTPLAN_NCCL_ID_FILE to a new path every rank sees (or DTPLAN_JOB_ID); no SLURM_JOB_ID, "
                           "PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid is set\n");
    return "";
  }
  return "dtplan_nccl_id." + tag;
}

// Without MPI, rank 0 publishes the NCCL id through `path`, a file every
// rank can read (a shared directory on several nodes); it is removed once
// the world communicator exists (every rank has read it then) or when rank
// 0 fails.
static void share_id_by_file(ncclUniqueId& id, long long rank, std::string const& path) {
  if (rank == 0) {
    std::string tmp = path + ".tmp";
    g_id_file = path;
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "error: cannot write the NCCL id to '%s': %s\n", path.c_str(), std::strerror(errno));
      die(1);
    }
    return;
  }
  for (int tries = 0; tries < 6000; ++tries) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      bool ok = std::fread(&id, sizeof id, 1, f) == 1;
      std::fclose(f);
      if (ok) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "error: rank %lld found no NCCL id in '%s' after 60 s (is the directory shared? set DTPLAN_NCCL_ID_FILE)\n",
               rank, path.c_str());
  die(1);
}

static std::string human_bytes(long long b) {
  char s[32];
  if (b >= 1LL << 30) std::snprintf(s, sizeof s, "%.1f GiB", b / 1073741824.0);
  else if (b >= 1LL << 20) std::snprintf(s, sizeof s, "%.1f MiB", b / 1048576.0);
  else if (b >= 1LL << 10) std::snprintf(s, sizeof s, "%.1f KiB", b / 1024.0);
  else std::snprintf(s, sizeof s, "%lld B", b);
  return s;
}

// One planned per-GPU allocation.
struct buffer {
  char const* name;
  long long planned;
  long long size = 0;
  char* ptr = nullptr;
  long long used = 0;  // carved out for operands, scratch and messages
};

enum buffer_id { b_weights, b_gradients, b_optimizer, b_activations, b_buffers };

static std::vector<buffer> allocate(double scale, long long rank) {
  std::vector<buffer> bufs = {{"weights", plan::k_weights_bytes}, {"gradients", plan::k_gradients_bytes},
                              {"optimizer", plan::k_optimizer_bytes}, {"activations", plan::k_activations_bytes},
                              {"buffers", plan::k_buffers_bytes}};
  for (buffer& b : bufs) {
    b.size = (long long)(b.planned * scale) & ~255LL;
    if (b.size == 0) continue;
    cudaError_t e = cudaMalloc((void**)&b.ptr, (size_t)b.size);
    if (e != cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      cudaGetLastError();
      cudaMemGetInfo(&free_b, &total_b);
      std::fprintf(stderr, "rank %lld: cannot allocate %s: %.2f GiB (planned %.2f GiB x scale %g), %.2f GiB free of %.2f GiB: %s\n",
                   rank, b.name, b.size / 1073741824.0, b.planned / 1073741824.0, scale, free_b / 1073741824.0,
                   total_b / 1073741824.0, cudaGetErrorString(e));
      die(3);
    }
    CUDA_CHECK(cudaMemset(b.ptr, 0, (size_t)b.size));
  }
  return bufs;
}

// Regions of the planned buffers, taken in order of preference so the
// program's footprint stays the plan's; what does not fit is allocated
// beside them (and said so).
struct arena {
  std::vector<buffer>* bufs;
  std::vector<char*> extra;
  long long extra_bytes = 0;

  // Up to `want` bytes from the first preferred buffer with room for all of
  // it, else from the one with the most room; `got` may be less.
  char* carve(std::initializer_list<int> prefer, long long want, long long& got) {
    int best = -1;
    for (int i : prefer) {
      long long room = (*bufs)[i].size - (*bufs)[i].used;
      if (room >= want) {
        best = i;
        break;
      }
      if (best < 0 || room > (*bufs)[best].size - (*bufs)[best].used) best = i;
    }
    buffer& b = (*bufs)[best];
    got = std::min(want, b.size - b.used) & ~255LL;
    char* p = b.ptr + b.used;
    b.used += got;
    return p;
  }
  // Exactly `want` bytes: carved when they fit, else allocated.
  char* take(std::initializer_list<int> prefer, long long want) {
    want = (want + 255) & ~255LL;
    long long got = 0;
    char* p = carve(prefer, want, got);
    if (got >= want) return p;
    for (int i : prefer)  // give back the short region
      if ((*bufs)[i].ptr + (*bufs)[i].used - got == p) (*bufs)[i].used -= got;
    CUDA_CHECK(cudaMalloc((void**)&p, (size_t)want));
    extra.push_back(p);
    extra_bytes += want;
    return p;
  }
};

// Reads and writes `moved` bytes in all (half each way) over `region` bytes
// in place, 16 bytes per access: memory-bound work of a planned size.
__global__ void stream_bytes(int4* region, long long region_vectors, long long accesses) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < accesses; i += stride) {
    int4* p = region + i % region_vectors;
    int4 v = *p;
    v.x ^= 1;
    *p = v;
  }
}

static cudaDataType_t cuda_type(int type) {
  return type == 2 ? CUDA_R_32F : type == 1 ? CUDA_R_16F : CUDA_R_16BF;
}
static ncclDataType_t nccl_type(int type) { return type == 2 ? ncclFloat32 : type == 1 ? ncclFloat16 : ncclBfloat16; }
static long long type_bytes(int type) { return type == 2 ? 4 : 2; }

struct timed_call {
  cudaEvent_t start, stop;
};

// A pool of timing event pairs, reused every step.
struct event_pool {
  std::vector<timed_call> pairs;
  size_t used = 0;
  timed_call& next() {
    if (used == pairs.size()) {
      timed_call t;
      CUDA_CHECK(cudaEventCreate(&t.start));
      CUDA_CHECK(cudaEventCreate(&t.stop));
      pairs.push_back(t);
    }
    return pairs[used++];
  }
  double total() const {
    double s = 0;
    for (size_t i = 0; i < used; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, pairs[i].start, pairs[i].stop));
      s += ms / 1e3;
    }
    return s;
  }
};

// A cuBLASLt fp8 GEMM, set up once per shape.
struct lt_gemm {
  bool ok = false;
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  cublasLtMatmulAlgo_t algo{};
};

struct runner {
  options opt;
  long long rank = 0, stage = 0;
  layout lay{plan::k_dp};
  ncclComm_t world_comm{};
  ncclComm_t comms[2][group_count]{};  // [overlapped][group]
  ncclComm_t pipe_comm{};              // the pipeline's sends and receives
  int comm_rank[group_count]{};
  int comm_size[group_count]{};
  cudaStream_t compute{}, comm{}, pipe{}, ring{};  // ring: the context-parallel K/V ring
  cublasHandle_t blas{};
  cublasLtHandle_t lt{};
  std::map<std::array<long long, 6>, lt_gemm> lt_plans;
  long long fp8_fallbacks = 0;
  std::vector<buffer> bufs;
  arena mem;
  char* slab[3] = {};  // GEMM and attention operands A, B, C
  char* scores = nullptr;
  long long score_rows = 0;  // queries per attention tile
  char* stream_region = nullptr;
  long long stream_vectors = 0;
  char* lt_workspace = nullptr;
  long long lt_workspace_bytes = 32LL << 20;
  std::vector<char*> msg;  // message region per comm entry
  std::vector<long long> msg_bytes;
  std::vector<bool> clamped;
  char* pipe_send = nullptr;
  char* pipe_recv = nullptr;
  long long pipe_bytes = 0;
  int pipe_entry = -1;  // the plan's pp entry, if any
  int cp_entry = -1;    // the plan's context-parallel ring entry, if any
  bool has_gathers = false;  // ZeRO-3 weight gathers to prefetch

  // The step's schedule and its bookkeeping.
  std::vector<pipe_op> ops;     // this stage's
  std::vector<pipe_item> items;
  std::vector<cudaEvent_t> op_done, recv_ready;
  std::vector<long long> last_backward_of_chunk;
  long long layers_here = 0, planned_layers_here = 0;
  long long dense_here = 0;  // of layers_here, a mixture's dense layers
  long long layer_slot = 0, backward_slot = 0, grad_slot = 0;
  long long layer_slots = 0, backward_slots = 0, grad_slots = 0;
  std::vector<long long> issued;
  cudaEvent_t gathered[2]{}, joined[2]{}, ring_ready{}, ring_done{};
  event_pool busy, stalls, optimizer_time;

  // Whether the i-th of the `run` layers model chunk `c` runs is one of a
  // mixture's dense layers: its place among the chunk's planned layers
  // (scaled with --layers), then plan::k_dense_layers and k_moe_layer_freq.
  static bool dense_layer(long long c, long long i, long long run) {
    long long first = 0;
    for (long long k = 0; k < c; ++k) first += plan::k_chunk_layers[k];
    long long planned = plan::k_chunk_layers[c];
    long long at = first + (run > 0 ? i * planned / run : 0);
    return at < plan::k_dense_layers || (at - plan::k_dense_layers) % plan::k_moe_layer_freq != 0;
  }
  long long chunk_layers(long long model_chunk) const {
    long long planned = plan::k_chunk_layers[model_chunk];
    if (opt.layers <= 0) return planned;
    long long per_chunk = (opt.layers + plan::k_virtual_stages - 1) / plan::k_virtual_stages;
    return std::max(1LL, std::min(planned, per_chunk));
  }

  // Calls of entry `e` in slot `s` out of `slots`: the step's calls spread
  // evenly, so each step issues exactly the planned number.
  long long calls_in_slot(int e, long long s, long long slots) const {
    long long count = effective_count(e);
    return (s + 1) * count / slots - s * count / slots;
  }
  // The planned calls of entry `e`, scaled to the layers run with --layers.
  long long effective_count(int e) const {
    long long c = plan::k_comm[e].count;
    int p = plan::k_comm[e].phase;
    if ((p == 0 || p == 1) && planned_layers_here > 0 && layers_here != planned_layers_here)
      c = (c * layers_here + planned_layers_here / 2) / planned_layers_here;
    return c;
  }

  // One call of entry `e` on stream `st`.
  void collective(int e, cudaStream_t st) {
    plan::comm_spec const& c = plan::k_comm[e];
    ncclComm_t nc = comms[c.overlapped][c.group];
    // The embedding pair has no member on the middle pipeline stages.
    if (nc == nullptr) return;
    int n = comm_size[c.group], me = comm_rank[c.group];
    char* buf = msg[e];
    long long bytes = msg_bytes[e];
    long long eb = type_bytes(c.type);
    ncclDataType_t t = nccl_type(c.type);
    size_t elems = (size_t)(bytes / eb);
    switch (c.op) {
      case 0:
        NCCL_CHECK(ncclAllReduce(buf, buf, elems, t, ncclSum, nc, st));
        break;
      case 1: {
        size_t part = elems / n;
        NCCL_CHECK(ncclReduceScatter(buf, buf + (size_t)me * part * eb, part, t, ncclSum, nc, st));
        break;
      }
      case 2: {
        size_t part = elems / n;
        NCCL_CHECK(ncclAllGather(buf + (size_t)me * part * eb, buf, part, t, nc, st));
        break;
      }
      case 3: {
        // The message is what each rank sends in all; it receives as much
        // into the second half of its region.
        size_t part = elems / n;
        char* recv = buf + elems * eb;
        NCCL_CHECK(ncclGroupStart());
        for (int peer = 0; peer < n; ++peer) {
          NCCL_CHECK(ncclSend(buf + (size_t)peer * part * eb, part, t, peer, nc, st));
          NCCL_CHECK(ncclRecv(recv + (size_t)peer * part * eb, part, t, peer, nc, st));
        }
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
      case 4: {
        // One hop of a ring (the context-parallel K/V ring, and the probe of
        // the pipeline's hop): to the next member, from the previous one,
        // the last member's next being the first.
        char* recv = buf + elems * eb;
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(buf, elems, t, (me + 1) % n, nc, st));
        NCCL_CHECK(ncclRecv(recv, elems, t, (me + n - 1) % n, nc, st));
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
    }
    ++issued[e];
  }

  // Row-major C[m, n] = A[m, k] B[k, n], `batch` of them `stride_*` elements
  // apart, in the activations' type (16 or 32 bits).
  void gemm16(long long m, long long n, long long k, long long batch, char const* a, long long stride_a,
              char const* b, long long stride_b, char* c, long long stride_c) {
    const float alpha = 1.0f, beta = 0.0f;
    cudaDataType_t t = cuda_type(plan::k_activation_type);
    // Row-major C = A B is column-major C^T = B^T A^T.
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b, t, (int)n,
                                            stride_b, a, t, (int)k, stride_a, &beta, c, t, (int)n, stride_c, (int)batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // cuBLASLt's first algorithm for a described GEMM within the workspace;
  // g.ok says whether there is one (none: the GPU or the shape cannot).
  void choose_algo(lt_gemm& g) {
    cublasLtMatmulPreference_t pref{};
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    size_t ws = (size_t)lt_workspace_bytes;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return;
    if (cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
            CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.a, g.b, g.c, g.c, pref, 1, &result, &found) == CUBLAS_STATUS_SUCCESS &&
        found > 0) {
      g.ok = true;
      g.algo = result.algo;
    }
    cublasLtMatmulPreferenceDestroy(pref);
  }

  // Runs a chosen cuBLASLt GEMM on the slabs (W in slab 1, X in slab 0, out
  // in slab 2); false when it has no algorithm.
  bool run_lt(lt_gemm const& g) {
    if (!g.ok) return false;
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(lt, g.desc, &alpha, slab[1], g.a, slab[0], g.b, &beta, slab[2], g.c, slab[2], g.c,
                                &g.algo, lt_workspace, (size_t)lt_workspace_bytes, compute));
    return true;
  }

  // An fp8 GEMM through cuBLASLt, E4M3 x E4M3 forward and E5M2 gradients
  // against E4M3 (Transformer Engine's recipe), 16-bit output. cuBLASLt
  // takes fp8 as "TN" with every dimension a multiple of 16; false when the
  // shape or the GPU cannot (the caller then runs it at 16 bits).
  bool gemm8(long long m, long long n, long long k, long long batch, bool a_e5m2, bool b_e5m2) {
    if (m % 16 || n % 16 || k % 16) return false;
    std::array<long long, 6> key{m, n, k, batch, a_e5m2, b_e5m2};
    auto it = lt_plans.find(key);
    if (it == lt_plans.end()) {
      lt_gemm g;
      cudaDataType_t ta = a_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3, tb = b_e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
      // Column-major D^T[n, m] = op(W)[n, k] X^T[k, m]: W stored k x n, transposed.
      cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
      bool made = cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.a, tb, (uint64_t)k, (uint64_t)n, k) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.b, ta, (uint64_t)k, (uint64_t)m, k) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n) == CUBLAS_STATUS_SUCCESS;
      if (made && batch > 1) {
        int count = (int)batch;
        long long sa = k * n, sb = k * m, sc = n * m;
        made = cublasLtMatrixLayoutSetAttribute(g.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) == CUBLAS_STATUS_SUCCESS &&
               cublasLtMatrixLayoutSetAttribute(g.b, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) == CUBLAS_STATUS_SUCCESS &&
               cublasLtMatrixLayoutSetAttribute(g.c, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) == CUBLAS_STATUS_SUCCESS &&
               cublasLtMatrixLayoutSetAttribute(g.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa) == CUBLAS_STATUS_SUCCESS &&
               cublasLtMatrixLayoutSetAttribute(g.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb) == CUBLAS_STATUS_SUCCESS &&
               cublasLtMatrixLayoutSetAttribute(g.c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof sc) == CUBLAS_STATUS_SUCCESS;
      }
      if (made) choose_algo(g);
      it = lt_plans.emplace(key, g).first;
    }
    return run_lt(it->second);
  }

  // An fp4 GEMM through cuBLASLt as Transformer Engine's NVFP4 recipe runs
  // it: E2M1 x E2M1 with an E4M3 scale per 16 elements of K (the scales in
  // the slabs after the operands), "TN", 16-bit output. False when the shape
  // (every dimension a multiple of 32, one matrix) or the GPU (fp4 tensor
  // cores: Blackwell) cannot; the caller then runs it at 16 bits.
  bool gemm4(long long m, long long n, long long k, long long batch) {
    if (m % 32 || n % 32 || k % 32 || batch != 1) return false;
    std::array<long long, 6> key{m, n, k, batch, 4, 4};
    auto it = lt_plans.find(key);
    if (it == lt_plans.end()) {
      lt_gemm g;
      cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
      cublasLtMatmulMatrixScale_t vec16 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
      // Each operand's scales follow its k x rows half-byte elements: at most
      // rows rounded to 128 times k / 16 rounded to 4, which with every
      // dimension a multiple of 32 fits in the rest of its 16-bit slab.
      void const* scale_a = slab[1] + k * n / 2;
      void const* scale_b = slab[0] + k * m / 2;
      bool made = cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &vec16, sizeof vec16) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec16, sizeof vec16) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof scale_a) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof scale_b) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.a, CUDA_R_4F_E2M1, (uint64_t)k, (uint64_t)n, k) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.b, CUDA_R_4F_E2M1, (uint64_t)k, (uint64_t)m, k) == CUBLAS_STATUS_SUCCESS &&
                  cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n) == CUBLAS_STATUS_SUCCESS;
      if (made) choose_algo(g);
      it = lt_plans.emplace(key, g).first;
    }
    return run_lt(it->second);
  }

  // A weight GEMM of the layer: C[m, n] = A[m, k] W[k, n] in the plan's
  // precision; `pass` 0 forward, 1 input gradient, 2 weight gradient (their
  // fp8 inputs: activations and weights E4M3, gradients E5M2).
  void gemm(long long m, long long n, long long k, long long batch, int pass) {
    if (plan::k_precision == 3) {
      if (gemm8(m, n, k, batch, pass == 1, pass == 2)) return;
      ++fp8_fallbacks;
    }
    if (plan::k_precision == 4) {
      if (gemm4(m, n, k, batch)) return;
      ++fp8_fallbacks;
    }
    gemm16(m, n, k, batch, slab[0], m * k, slab[1], k * n, slab[2], m * n);
  }

  // Memory-bound work: `moved` bytes in `kernels` launches on `st`.
  void stream(long long moved, long long kernels, cudaStream_t st, char* region = nullptr, long long region_bytes = 0) {
    if (moved <= 0 || kernels <= 0) return;
    if (!region) {
      region = stream_region;
      region_bytes = stream_vectors * 16;
    }
    long long vectors = region_bytes / 16;
    if (vectors <= 0) return;
    long long accesses = std::max(1LL, moved / 32 / kernels);  // 16 bytes read and 16 written each
    for (long long i = 0; i < kernels; ++i) stream_bytes<<<1024, 256, 0, st>>>((int4*)region, vectors, accesses);
    CUDA_CHECK(cudaGetLastError());
  }

  // The critical-path calls of `phase` in slot `slot` that follow GEMM
  // `gemm_index` of `gemms`, on the compute stream (the context-parallel
  // ring runs inside attention).
  void issue_after_gemm(int phase, long long slot, long long slots, int gemm_index, int gemms) {
    for (int e = 0; e < plan::k_comm_count; ++e) {
      plan::comm_spec const& c = plan::k_comm[e];
      if (c.phase != phase || c.overlapped || e == cp_entry) continue;
      long long n = calls_in_slot(e, slot, slots);
      for (long long j = 0; j < n; ++j)
        if (j % gemms == gemm_index) collective(e, compute);
    }
  }

  // The overlapped calls of `phase` in slot `slot`, on the communication
  // stream once the compute issued so far is recorded (ZeRO-3's gathers are
  // prefetched instead, the context-parallel ring runs inside attention).
  void issue_overlapped(int phase, long long slot, long long slots) {
    bool joined_once = false;
    for (int e = 0; e < plan::k_comm_count; ++e) {
      plan::comm_spec const& c = plan::k_comm[e];
      if (c.phase != phase || !c.overlapped || e == cp_entry || (phase == 0 && c.op == 2)) continue;
      long long n = calls_in_slot(e, slot, slots);
      if (n > 0 && !joined_once) {
        CUDA_CHECK(cudaEventRecord(joined[0], compute));
        CUDA_CHECK(cudaStreamWaitEvent(comm, joined[0], 0));
        joined_once = true;
      }
      for (long long j = 0; j < n; ++j) collective(e, comm);
    }
  }

  // ZeRO-3's weight gathers of slot `slot`, prefetched on the communication
  // stream (queued behind its other overlapped collectives, as FSDP's are
  // behind the reduce-scatters of the same communicator).
  void prefetch_gathers(long long slot) {
    if (!has_gathers) return;
    for (int e = 0; e < plan::k_comm_count; ++e) {
      plan::comm_spec const& c = plan::k_comm[e];
      if (c.phase != 0 || c.op != 2 || !c.overlapped) continue;
      for (long long j = calls_in_slot(e, slot, layer_slots); j > 0; --j) collective(e, comm);
    }
    CUDA_CHECK(cudaEventRecord(gathered[slot % 2], comm));
  }

  // Attention over the local queries in tiles of score_rows, keys split into
  // `pieces` for the context-parallel ring: piece j + 1 waits for hop j,
  // which runs while piece j is computed. Forward: S = Q K^T, softmax, O = P V
  // (a flash kernel's FLOPs; the scores make a round trip through HBM a
  // flash kernel avoids); backward: dV = P^T dO, dP = dO V^T, softmax
  // backward, dQ = dS K, dK = dS^T Q, plus S recomputed for flash.
  void attention(bool backward, long long hops) {
    plan::attention_spec const& a = plan::k_attention;
    long long pieces = hops + 1;
    long long eb = type_bytes(plan::k_activation_type);
    double score_bytes = a.flash ? 4 : 11;  // softmax (flash: S read, P written); standard: + dropout
    for (long long j = 0; j < pieces; ++j) {
      if (j > 0) {
        // Hop j - 1 was issued before piece j - 1; this piece needs it.
        CUDA_CHECK(cudaEventRecord(ring_done, cp_overlapped() ? ring : compute));
        CUDA_CHECK(cudaStreamWaitEvent(compute, ring_done, 0));
      }
      if (j + 1 < pieces && cp_entry >= 0) {
        if (cp_overlapped()) {
          CUDA_CHECK(cudaEventRecord(ring_ready, compute));
          CUDA_CHECK(cudaStreamWaitEvent(ring, ring_ready, 0));
        }
        collective(cp_entry, cp_overlapped() ? ring : compute);
      }
      long long keys = a.keys / pieces + (j < a.keys % pieces ? 1 : 0);
      if (keys <= 0) continue;
      for (long long q0 = 0; q0 < a.queries; q0 += score_rows) {
        long long q = std::min(score_rows, a.queries - q0);
        long long h = a.heads, d = a.head_dim;
        char* Q = slab[0];
        char* K = slab[1];
        char* O = slab[2];
        if (!backward || a.flash) gemm16(q, keys, d, h, Q, q * d, K, d * keys, scores, q * keys);
        if (!backward) {
          stream((long long)(score_bytes * q * keys * h), 1, compute, scores, q * keys * h * eb);
          gemm16(q, d, keys, h, scores, q * keys, K, keys * d, O, q * d);
        } else {
          gemm16(keys, d, q, h, scores, keys * q, O, q * d, K, keys * d);     // dV
          gemm16(q, keys, d, h, O, q * d, K, d * keys, scores, q * keys);     // dP
          stream((long long)(score_bytes * q * keys * h), 1, compute, scores, q * keys * h * eb);
          gemm16(q, d, keys, h, scores, q * keys, K, keys * d, Q, q * d);     // dQ
          gemm16(keys, d, q, h, scores, keys * q, Q, q * d, K, keys * d);     // dK
        }
      }
    }
  }
  bool cp_overlapped() const { return cp_entry >= 0 && plan::k_comm[cp_entry].overlapped; }

  // One transformer layer, forward or backward (recomputation first), with
  // the layer-phase collectives the plan places in it; `dense`: a
  // mixture's dense layer (k_dense_gemms, k_dense_memory).
  void layer(bool backward, bool dense) {
    long long slot = layer_slot++;
    // ZeRO-3 gathers of this slot were issued one slot ahead; wait for them
    // and prefetch the next slot's.
    if (has_gathers) CUDA_CHECK(cudaStreamWaitEvent(compute, gathered[slot % 2], 0));
    if (slot + 1 < layer_slots) prefetch_gathers(slot + 1);
    int g = dense ? plan::k_dense_gemm_count : plan::k_gemm_count;
    plan::gemm_spec const* gemms = dense ? plan::k_dense_gemms : plan::k_gemms;
    long long hops = cp_entry >= 0 ? calls_in_slot(cp_entry, slot, layer_slots) : 0;
    plan::memory_spec const& mem = dense ? plan::k_dense_memory : plan::k_memory;
    if (backward) {
      for (int i = 0; i < g; ++i) {
        plan::gemm_spec const& x = gemms[i];
        if (x.recompute_n > 0)
          for (long long c = 0; c < x.calls; ++c) gemm(x.m, x.recompute_n, x.k, x.batch, 0);
      }
      if (plan::k_recompute_attention) attention(false, 0);
      if (plan::k_recompute_memory) stream(mem.forward_bytes, mem.forward_kernels, compute);
      for (int ii = 0; ii < g; ++ii) {
        int i = g - 1 - ii;
        plan::gemm_spec const& x = gemms[i];
        for (long long c = 0; c < x.calls; ++c) {
          gemm(x.m, x.k, x.n, x.batch, 1);  // input gradient
          gemm(x.k, x.n, x.m, x.batch, 2);  // weight gradient
        }
        if (i == 1) {
          stream(mem.backward_bytes, mem.backward_kernels, compute);
          attention(true, hops);
        }
        issue_after_gemm(0, slot, layer_slots, ii, g);
      }
      issue_overlapped(0, slot, layer_slots);
      long long bs = backward_slot++;
      issue_after_gemm(1, bs, backward_slots, 0, 1);
      issue_overlapped(1, bs, backward_slots);
    } else {
      for (int i = 0; i < g; ++i) {
        plan::gemm_spec const& x = gemms[i];
        for (long long c = 0; c < x.calls; ++c) gemm(x.m, x.n, x.k, x.batch, 0);
        if (i == 0) attention(false, hops);
        if (i == 1) stream(mem.forward_bytes, mem.forward_kernels, compute);
        issue_after_gemm(0, slot, layer_slots, i, g);
      }
      issue_overlapped(0, slot, layer_slots);
    }
  }

  // The LM head: logits and loss on the last model chunk.
  void head(bool backward) {
    plan::gemm_spec const& x = plan::k_logits;
    if (backward) {
      gemm16(x.m, x.k, x.n, 1, slab[0], 0, slab[1], 0, slab[2], 0);
      gemm16(x.k, x.n, x.m, 1, slab[0], 0, slab[1], 0, slab[2], 0);
    } else {
      gemm16(x.m, x.n, x.k, 1, slab[0], 0, slab[1], 0, slab[2], 0);
    }
    stream(plan::k_head_memory.forward_bytes / 2, std::max(1LL, plan::k_head_memory.forward_kernels / 2), compute);
  }

  // Multi-token prediction modules after the last chunk's layers: each its
  // projection, a layer of the last layer's kind (k_mtp_dense) never
  // recomputed, and the LM head again; backward the mirror. Their
  // collectives are among the layers' in the plan's entries.
  void mtp(bool backward) {
    int g = plan::k_mtp_dense ? plan::k_dense_gemm_count : plan::k_gemm_count;
    plan::gemm_spec const* gemms = plan::k_mtp_dense ? plan::k_dense_gemms : plan::k_gemms;
    plan::memory_spec const& mem = plan::k_mtp_dense ? plan::k_dense_memory : plan::k_memory;
    plan::gemm_spec const& pr = plan::k_mtp_projection;
    for (long long module = 0; module < plan::k_mtp_layers; ++module) {
      if (backward) {
        head(true);
        for (int ii = 0; ii < g; ++ii) {
          int i = g - 1 - ii;
          plan::gemm_spec const& x = gemms[i];
          for (long long c = 0; c < x.calls; ++c) {
            gemm(x.m, x.k, x.n, x.batch, 1);
            gemm(x.k, x.n, x.m, x.batch, 2);
          }
          if (i == 1) {
            stream(mem.backward_bytes, mem.backward_kernels, compute);
            attention(true, 0);
          }
        }
        gemm(pr.m, pr.k, pr.n, 1, 1);
        gemm(pr.k, pr.n, pr.m, 1, 2);
      } else {
        gemm(pr.m, pr.n, pr.k, 1, 0);
        for (int i = 0; i < g; ++i) {
          plan::gemm_spec const& x = gemms[i];
          for (long long c = 0; c < x.calls; ++c) gemm(x.m, x.n, x.k, x.batch, 0);
          if (i == 0) attention(false, 0);
          if (i == 1) stream(mem.forward_bytes, mem.forward_kernels, compute);
        }
        head(false);
      }
    }
  }

  // Pipeline op `op` of this stage: its layers (and the head on the last
  // model chunk), timed as compute-stream busy time.
  void run_op(long long op) {
    pipe_op const& o = ops[op];
    if (o.recv_from >= 0) {
      timed_call& w = stalls.next();
      CUDA_CHECK(cudaEventRecord(w.start, compute));
      CUDA_CHECK(cudaStreamWaitEvent(compute, recv_ready[op], 0));
      CUDA_CHECK(cudaEventRecord(w.stop, compute));
    }
    timed_call& t = busy.next();
    CUDA_CHECK(cudaEventRecord(t.start, compute));
    long long chunk = o.chunk * plan::k_pp + stage;
    long long layers = chunk_layers(chunk);
    bool last = chunk == plan::k_chunks - 1;
    bool final_backward = o.pass == 1 && last_backward_of_chunk[o.chunk] == op;
    if (o.pass == 0) {
      for (long long i = 0; i < layers; ++i) layer(false, dense_layer(chunk, i, layers));
      if (last) mtp(false);
      if (last) head(false);
    } else {
      if (last) head(true);
      if (last) mtp(true);
      for (long long i = 0; i < layers; ++i) {
        layer(true, dense_layer(chunk, layers - 1 - i, layers));
        // The chunk's gradients are final after its last backward: the
        // overlapped gradient sync runs under these layers.
        if (final_backward) issue_overlapped(3, grad_slot++, grad_slots);
      }
    }
    CUDA_CHECK(cudaEventRecord(t.stop, compute));
    CUDA_CHECK(cudaEventRecord(op_done[op], compute));
  }

  // A group of the schedule's transfers, [first, end) of the stage's items.
  void transfers(long long first, long long end) {
    for (long long i = first; i < end; ++i)
      if (items[i].kind == 1) CUDA_CHECK(cudaStreamWaitEvent(pipe, op_done[items[i].op], 0));
    int t = plan::k_activation_type;
    size_t elems = (size_t)(pipe_bytes / type_bytes(t));
    NCCL_CHECK(ncclGroupStart());
    for (long long i = first; i < end; ++i) {
      pipe_item const& it = items[i];
      if (it.kind == 1) NCCL_CHECK(ncclSend(pipe_send, elems, nccl_type(t), it.peer, pipe_comm, pipe));
      else NCCL_CHECK(ncclRecv(pipe_recv, elems, nccl_type(t), it.peer, pipe_comm, pipe));
    }
    NCCL_CHECK(ncclGroupEnd());
    for (long long i = first; i < end; ++i)
      if (items[i].kind == 2) CUDA_CHECK(cudaEventRecord(recv_ready[items[i].op], pipe));
  }

  void step() {
    std::fill(issued.begin(), issued.end(), 0);
    busy.used = stalls.used = optimizer_time.used = 0;
    layer_slot = backward_slot = grad_slot = 0;
    // The first slot's ZeRO-3 gathers have nothing to hide behind.
    prefetch_gathers(0);
    long long count = (long long)items.size();
    for (long long i = 0; i < count;) {
      pipe_item const& it = items[i];
      if (it.kind == 0) {
        run_op(it.op);
        ++i;
        continue;
      }
      long long end = i;
      while (end < count && items[end].kind != 0 && items[end].group == it.group) ++end;
      transfers(i, end);
      i = end;
    }
    // Gradient sync that waits for the whole backward, then the optimizer
    // and the weights it publishes.
    CUDA_CHECK(cudaEventRecord(joined[0], comm));
    CUDA_CHECK(cudaStreamWaitEvent(compute, joined[0], 0));
    CUDA_CHECK(cudaEventRecord(joined[1], pipe));
    CUDA_CHECK(cudaStreamWaitEvent(compute, joined[1], 0));
    for (int e = 0; e < plan::k_comm_count; ++e)
      if (plan::k_comm[e].phase == 3 && !plan::k_comm[e].overlapped)
        for (long long j = effective_count(e); j > 0; --j) collective(e, compute);
    timed_call& t = optimizer_time.next();
    CUDA_CHECK(cudaEventRecord(t.start, compute));
    buffer& o = bufs[b_optimizer];
    stream(plan::k_optimizer_moved_bytes, 1, compute, o.ptr, o.size);
    CUDA_CHECK(cudaEventRecord(t.stop, compute));
    for (int e = 0; e < plan::k_comm_count; ++e)
      if (plan::k_comm[e].phase == 4 && !plan::k_comm[e].overlapped)
        for (long long j = effective_count(e); j > 0; --j) collective(e, compute);
    issue_overlapped(4, 0, 1);
    CUDA_CHECK(cudaEventRecord(joined[0], comm));
    CUDA_CHECK(cudaStreamWaitEvent(compute, joined[0], 0));
  }

  // Seconds one call of `run` takes on the compute stream, alone, averaged
  // over a few calls after a warm-up.
  template <class F>
  double probe(F run) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    run();
    CUDA_CHECK(cudaEventRecord(a, compute));
    const int reps = 5;
    for (int i = 0; i < reps; ++i) run();
    CUDA_CHECK(cudaEventRecord(b, compute));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return ms / 1e3 / reps;
  }
};

// The communicator of group `g` for this rank, split from the world with
// color = the group's first rank (unique per group), key = this rank's
// place in it; null where the rank is not a member (the embedding pair).
static ncclComm_t split(runner& r, int g) {
  std::vector<long long> m = r.lay.members(g, r.rank);
  bool member = std::find(m.begin(), m.end(), r.rank) != m.end();
  int key = member ? (int)(std::find(m.begin(), m.end(), r.rank) - m.begin()) : 0;
  r.comm_rank[g] = key;
  r.comm_size[g] = (int)m.size();
  ncclComm_t c = nullptr;
  NCCL_CHECK(ncclCommSplit(r.world_comm, member ? (int)m.front() : NCCL_SPLIT_NOCOLOR, key, &c, nullptr));
  return member ? c : nullptr;
}

// The world's largest value of each of `v`, through NCCL (no MPI needed).
static void max_over_ranks(runner& r, std::vector<double>& v) {
  double* d = nullptr;
  CUDA_CHECK(cudaMalloc((void**)&d, v.size() * sizeof(double)));
  CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(double), cudaMemcpyHostToDevice));
  NCCL_CHECK(ncclAllReduce(d, d, v.size(), ncclFloat64, ncclMax, r.world_comm, r.compute));
  CUDA_CHECK(cudaStreamSynchronize(r.compute));
  CUDA_CHECK(cudaMemcpy(v.data(), d, v.size() * sizeof(double), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(d));
}

static void barrier(runner& r) {
  std::vector<double> one(1, 0.0);
  max_over_ranks(r, one);
}

struct table_row {
  std::string phase;
  double calls;
  double predicted;
  double measured;
  std::string note;
};

static void print_table(std::vector<table_row> const& rows) {
  std::printf("%-34s %9s %12s %12s %7s\n", "phase (per step, this rank's stage)", "calls", "predicted s", "measured s",
              "ratio");
  for (table_row const& t : rows)
    std::printf("%-34s %9.0f %12.6f %12.6f %7.2f%s%s\n", t.phase.c_str(), t.calls, t.predicted, t.measured,
                t.predicted > 0 ? t.measured / t.predicted : 0.0, t.note.empty() ? "" : "  ", t.note.c_str());
}

// This rank, the world and its GPU: from the launcher's variables with
// --no-mpi, else from MPI, the GPU bound first (see bind_gpu). 0 to go on,
// else the exit status.
static int start(runner& r, int& argc, char**& argv, long long& world, std::string& id_path) {
  options& opt = r.opt;
  long long local = local_rank_from_env();
#ifndef DTPLAN_HAVE_MPI
  opt.no_mpi = true;
  (void)argc;
  (void)argv;
#endif
  if (opt.no_mpi) {
    r.rank = env_int({"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "RANK"}, 0);
    world = env_int({"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", "WORLD_SIZE"}, 1);
    if (world != plan::k_world) {
      if (r.rank == 0)
        std::fprintf(stderr, "error: plan '%s' needs %lld ranks, this job has %lld (--no-mpi reads OMPI_COMM_WORLD_SIZE, "
                             "SLURM_NTASKS, PMI_SIZE or WORLD_SIZE)\n", plan::k_name, plan::k_world, world);
      return 2;
    }
    id_path = nccl_id_path(r.rank);
    if (id_path.empty()) return 2;
    bind_gpu(local >= 0 ? local : r.rank % plan::k_gpus_per_node);
  }
#ifdef DTPLAN_HAVE_MPI
  if (!opt.no_mpi) {
    // Whether a launcher started this process is read before MPI_Init,
    // which sets variables of its own; the GPU is bound before it too.
    bool launcher = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
                    std::getenv("SLURM_STEP_ID") || std::getenv("MPI_LOCALNRANKS");
    if (local >= 0) bind_gpu(local);
    MPI_CHECK(MPI_Init(&argc, &argv));
    g_mpi = true;
    int rk = 0, sz = 0;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rk));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &sz));
    r.rank = rk;
    world = sz;
    if (world != plan::k_world) {
      if (r.rank == 0) {
        long long tasks = env_int({"SLURM_STEP_NUM_TASKS"}, -1);
        if (world == 1 && tasks > 1)
          std::fprintf(stderr, "error: plan '%s' needs %lld ranks; srun started %lld tasks but MPI sees each alone: srun's "
                               "MPI plugin does not match this MPI library (use srun --mpi=pmix, DTPLAN_SRUN_MPI in "
                               "launch/slurm.sbatch, or --no-mpi)\n", plan::k_name, plan::k_world, tasks);
        else if (world == 1 && !launcher)
          std::fprintf(stderr, "error: plan '%s' needs %lld ranks, this job has 1: an MPI singleton, started without a "
                               "launcher; run it with ../launch/mpirun.sh, sbatch ../launch/slurm.sbatch or mpirun -np "
                               "%lld (--dry-run needs no launcher)\n", plan::k_name, plan::k_world, plan::k_world);
        else
          std::fprintf(stderr, "error: plan '%s' needs %lld ranks, this job has %lld\n", plan::k_name, plan::k_world, world);
      }
      // Every rank sees the same count: a clean exit, no MPI_Abort.
      MPI_Finalize();
      return 2;
    }
    if (local < 0) {
      // No launcher variable named the local rank: ask MPI (after MPI_Init,
      // so a CUDA-aware MPI may already hold a context on GPU 0).
      MPI_Comm node;
      int lr = 0;
      MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rk, MPI_INFO_NULL, &node));
      MPI_CHECK(MPI_Comm_rank(node, &lr));
      MPI_CHECK(MPI_Comm_free(&node));
      if (r.rank == 0)
        std::fprintf(stderr, "warning: no local rank in the environment (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, ...); "
                             "GPUs bound after MPI_Init\n");
      bind_gpu(lr);
    }
  }
#endif

  return 0;
}

// The world communicator (its id from MPI or through a file) and one
// communicator per group the plan uses; overlapped collectives get their
// own so the two streams never share one, and the pipeline's transfers one
// of their own.
static void connect(runner& r, long long world, std::string const& id_path) {
  ncclUniqueId id;
  if (r.rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
#ifdef DTPLAN_HAVE_MPI
  if (!r.opt.no_mpi) MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
#endif
  if (r.opt.no_mpi) share_id_by_file(id, r.rank, id_path);
  NCCL_CHECK(ncclCommInitRank(&r.world_comm, (int)world, id, (int)r.rank));
  remove_id_file();  // every rank has read it: the world communicator exists

  for (int g = 0; g < group_count; ++g)
    for (int ov = 0; ov < 2; ++ov) {
      bool used = false;
      for (int e = 0; e < plan::k_comm_count; ++e) used |= plan::k_comm[e].group == g && plan::k_comm[e].overlapped == ov;
      if (used) r.comms[ov][g] = split(r, g);
    }
  if (plan::k_pp > 1) r.pipe_comm = split(r, g_pp);
  for (int e = 0; e < plan::k_comm_count; ++e) {
    plan::comm_spec const& c = plan::k_comm[e];
    if (c.group == g_pp && c.op == 4) r.pipe_entry = e;
    if (c.group == g_cp && c.op == 4) r.cp_entry = e;
    if (c.phase == 0 && c.op == 2 && c.overlapped) r.has_gathers = true;
    if (r.rank == 0 && r.comms[c.overlapped][c.group] && r.comm_size[c.group] != c.ranks)
      std::fprintf(stderr, "warning: the plan costs %s over %s as %lld ranks; its communicator has %d\n", k_op_names[c.op],
                   c.group_name, c.ranks, r.comm_size[c.group]);
  }

}

// This rank's pipeline stage: its part of the planned schedule (refused if
// it is not the planned one), its layers and the slots collectives spread over.
static void take_stage(runner& r) {
  r.stage = r.lay.coord(r.rank, 3);
  {
    pipeline schedule(plan::k_pp, plan::k_virtual_stages, plan::k_micro_batches);
    if (!schedule.is_planned()) {
      if (r.rank == 0) std::fprintf(stderr, "error: the pipeline schedule built here is not the one dtplan planned\n");
      die(2);
    }
    r.ops = schedule.ops[r.stage];
    r.items = schedule.items(r.stage);
  }
  for (long long c = 0; c < plan::k_virtual_stages; ++c) {
    long long const chunk = c * plan::k_pp + r.stage;
    r.planned_layers_here += plan::k_chunk_layers[chunk];
    long long const run = r.chunk_layers(chunk);
    r.layers_here += run;
    for (long long i = 0; i < run; ++i) r.dense_here += runner::dense_layer(chunk, i, run) ? 1 : 0;
  }
  r.layer_slots = 2 * plan::k_micro_batches * r.layers_here;
  r.backward_slots = plan::k_micro_batches * r.layers_here;
  r.grad_slots = std::max(1LL, r.layers_here);
  r.last_backward_of_chunk.assign(plan::k_virtual_stages, -1);
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i].pass == 1) r.last_backward_of_chunk[r.ops[i].chunk] = (long long)i;

}

// The planned buffers, and in them the operands, scratch and messages.
static void place_buffers(runner& r) {
  r.bufs = allocate(r.opt.scale, r.rank);
  r.mem.bufs = &r.bufs;
  if (r.rank == 0) {
    long long total = 0;
    for (buffer const& b : r.bufs) {
      std::printf("allocated %-11s %9s (planned %s)\n", b.name, human_bytes(b.size).c_str(), human_bytes(b.planned).c_str());
      total += b.size;
    }
    std::printf("allocated %-11s %9s per GPU\n", "in all", human_bytes(total).c_str());
  }
  // GEMM and attention operands: three slabs big enough for every product,
  // in the activations' type (fp8 operands take fewer bytes of them).
  long long eb = type_bytes(plan::k_activation_type);
  long long slab_elems = 0;
  auto fit = [&](long long m, long long n, long long k, long long batch) {
    slab_elems = std::max({slab_elems, m * k * batch, k * n * batch, m * n * batch});
  };
  for (int i = 0; i < plan::k_gemm_count; ++i) {
    plan::gemm_spec const& x = plan::k_gemms[i];
    fit(x.m, x.n, x.k, x.batch);
    fit(x.k, x.n, x.m, x.batch);
  }
  for (int i = 0; i < plan::k_dense_gemm_count; ++i) {
    plan::gemm_spec const& x = plan::k_dense_gemms[i];
    fit(x.m, x.n, x.k, x.batch);
    fit(x.k, x.n, x.m, x.batch);
  }
  fit(plan::k_logits.m, plan::k_logits.n, plan::k_logits.k, 1);
  if (plan::k_mtp_layers > 0) {
    fit(plan::k_mtp_projection.m, plan::k_mtp_projection.n, plan::k_mtp_projection.k, 1);
    fit(plan::k_mtp_projection.k, plan::k_mtp_projection.n, plan::k_mtp_projection.m, 1);
  }
  plan::attention_spec const& a = plan::k_attention;
  slab_elems = std::max({slab_elems, a.heads * a.queries * a.head_dim, a.heads * a.keys * a.head_dim});
  for (int s = 0; s < 3; ++s) r.slab[s] = r.mem.take({b_activations, b_buffers, b_weights}, slab_elems * eb);
  // Attention scores in tiles of queries, at most 256 MiB.
  long long tile_budget = 256LL << 20;
  r.score_rows = std::max(1LL, std::min(a.queries, tile_budget / std::max(1LL, a.heads * a.keys * eb)));
  r.scores = r.mem.take({b_activations, b_buffers}, r.score_rows * a.keys * a.heads * eb);
  // Memory-bound work streams over four times the L2 cache (at least 64 MiB).
  int l2 = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  long long region = std::max(64LL << 20, 4LL * l2);
  r.stream_region = r.mem.take({b_activations, b_buffers}, region);
  r.stream_vectors = region / 16;
  if (plan::k_precision >= 3) r.lt_workspace = r.mem.take({b_buffers, b_activations}, r.lt_workspace_bytes);

  r.issued.assign(plan::k_comm_count, 0);
  r.clamped.assign(plan::k_comm_count, false);
  for (int e = 0; e < plan::k_comm_count; ++e) {
    plan::comm_spec const& c = plan::k_comm[e];
    // Gradient traffic lives in the gradient buffer, ZeRO-3 gathers in the
    // working buffers, tensor and pipeline messages in the activations. An
    // all-to-all or a ring hop receives as much as it sends.
    bool grads = c.group == g_grad || c.group == g_shard || c.group == g_replicate || c.group == g_embedding ||
                 c.group == g_expert_grad || c.group == g_expert_shard;
    std::initializer_list<int> prefer = grads ? std::initializer_list<int>{b_gradients, b_buffers, b_optimizer, b_weights, b_activations}
                                              : std::initializer_list<int>{b_activations, b_buffers, b_weights, b_gradients, b_optimizer};
    long long want = c.op >= 3 ? 2 * c.bytes : c.bytes;
    long long have = 0;
    char* p = r.mem.carve(prefer, want, have);
    r.msg.push_back(p);
    r.msg_bytes.push_back(c.op >= 3 ? have / 2 : have);
    r.clamped[e] = have < want;
  }
  if (plan::k_pp > 1) {
    r.pipe_bytes = r.pipe_entry >= 0 ? r.msg_bytes[r.pipe_entry] : 0;
    r.pipe_send = r.pipe_entry >= 0 ? r.msg[r.pipe_entry] : r.slab[0];
    r.pipe_recv = r.pipe_send + r.pipe_bytes;
  }
  if (r.rank == 0 && r.mem.extra_bytes > 0)
    std::printf("note: %s of operands and scratch allocated beside the planned buffers\n",
                human_bytes(r.mem.extra_bytes).c_str());

}

static void make_streams(runner& r) {
  CUBLAS_CHECK(cublasCreate(&r.blas));
  CUBLAS_CHECK(cublasLtCreate(&r.lt));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.comm, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.pipe, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.ring, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&r.ring_ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&r.ring_done, cudaEventDisableTiming));
  CUBLAS_CHECK(cublasSetStream(r.blas, r.compute));
  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaEventCreateWithFlags(&r.gathered[i], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&r.joined[i], cudaEventDisableTiming));
  }
  r.op_done.resize(r.ops.size());
  r.recv_ready.resize(r.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    CUDA_CHECK(cudaEventCreateWithFlags(&r.op_done[i], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&r.recv_ready[i], cudaEventDisableTiming));
  }

}

// The phases alone, a few calls each, then the last step's figures: the
// slowest rank's of each.
static std::vector<double> measure(runner& r, double wall) {
  // Per call, like for like with the plan's roofline and alpha-beta figures.
  std::vector<double> m;  // measured per call, in the order of the rows below
  // Each weight GEMM of a kind of layer: forward, both gradients, recomputation.
  auto probe_gemms = [&](plan::gemm_spec const* gemms, int count) {
    for (int i = 0; i < count; ++i) {
      plan::gemm_spec const& x = gemms[i];
      m.push_back(r.probe([&] {
        for (long long c = 0; c < x.calls; ++c) {
          r.gemm(x.m, x.n, x.k, x.batch, 0);
          r.gemm(x.m, x.k, x.n, x.batch, 1);
          r.gemm(x.k, x.n, x.m, x.batch, 2);
          if (x.recompute_n > 0) r.gemm(x.m, x.recompute_n, x.k, x.batch, 0);
        }
      }));
    }
  };
  probe_gemms(plan::k_gemms, plan::k_gemm_count);
  if (plan::k_mixed_layers) probe_gemms(plan::k_dense_gemms, plan::k_dense_gemm_count);
  m.push_back(r.probe([&] {
    r.head(false);
    r.head(true);
  }));
  m.push_back(r.probe([&] {
    r.attention(false, 0);
    r.attention(true, 0);
    if (plan::k_recompute_attention) r.attention(false, 0);
  }));
  for (int kind = 0; kind < (plan::k_mixed_layers ? 2 : 1); ++kind) {
    plan::memory_spec const& mem = kind == 0 ? plan::k_memory : plan::k_dense_memory;
    m.push_back(r.probe([&] {
      r.stream(mem.forward_bytes, mem.forward_kernels, r.compute);
      r.stream(mem.backward_bytes, mem.backward_kernels, r.compute);
      if (plan::k_recompute_memory) r.stream(mem.forward_bytes, mem.forward_kernels, r.compute);
    }));
  }
  for (int e = 0; e < plan::k_comm_count; ++e) {
    barrier(r);
    plan::comm_spec const& c = plan::k_comm[e];
    if (c.group == g_pp && c.op == 4 && r.comms[c.overlapped][g_pp]) {
      // The pipeline's hop: every stage to the next and from the previous.
      m.push_back(r.probe([&] { r.collective(e, r.compute); }));
    } else if (r.comms[c.overlapped][c.group]) {
      m.push_back(r.probe([&] { r.collective(e, r.compute); }));
    } else {
      m.push_back(0);
    }
  }
  m.push_back(r.busy.total());
  m.push_back(r.stalls.total());
  m.push_back(r.optimizer_time.total());
  m.push_back(wall);
  max_over_ranks(r, m);

  return m;
}

// The measured-vs-predicted table, on rank 0.
static void report(runner const& r, std::vector<double> const& m) {
  if (r.rank != 0) return;
  double share = r.planned_layers_here > 0 ? (double)r.layers_here / r.planned_layers_here : 1.0;
  double mb = (double)plan::k_micro_batches;
  double passes = mb * r.layers_here;
  // A mixture's layers and its dense ones run their own GEMMs and
  // memory-bound work.
  double moe_passes = mb * (r.layers_here - r.dense_here), dense_passes = mb * r.dense_here;
  std::printf("plan '%s' of %s on %s: %lld ranks on %lld nodes, tp %lld cp %lld dp %lld pp %lld (%lld chunks), zero %d\n",
              plan::k_name, plan::k_file, plan::k_gpu, plan::k_world, plan::k_nodes, plan::k_tp, plan::k_cp, plan::k_dp,
              plan::k_pp, plan::k_virtual_stages, plan::k_zero);
  std::printf("%lld micro-batches of %lld x %lld tokens (%lld a GPU, %lld of the sequence), %lld of %lld layers on "
              "stage 0 (%lld in the model), scale %g\n",
              plan::k_micro_batches, plan::k_micro_batch, plan::k_seq_len, plan::k_tokens, plan::k_seq_local,
              r.layers_here, r.planned_layers_here, plan::k_layers, r.opt.scale);
  std::printf("rows down to the collectives: each phase alone (a few calls) x its calls a step; the last four: the step "
              "itself; slowest rank\n");
  std::vector<table_row> rows;
  size_t k = 0;
  for (int i = 0; i < plan::k_gemm_count; ++i, ++k) {
    plan::gemm_spec const& x = plan::k_gemms[i];
    rows.push_back({std::string("gemm ") + x.name, moe_passes, (x.forward_s + x.backward_s + x.recompute_s) * moe_passes,
                    m[k] * moe_passes, ""});
  }
  if (plan::k_mixed_layers)
    for (int i = 0; i < plan::k_dense_gemm_count; ++i, ++k) {
      plan::gemm_spec const& x = plan::k_dense_gemms[i];
      rows.push_back({std::string("gemm ") + x.name + " (dense layers)", dense_passes,
                      (x.forward_s + x.backward_s + x.recompute_s) * dense_passes, m[k] * dense_passes, ""});
    }
  if (plan::k_precision >= 3 && r.fp8_fallbacks > 0)
    rows.back().note = plan::k_precision == 3 ? "some fp8 GEMMs ran at 16 bits (shape or GPU)"
                                              : "some fp4 GEMMs ran at 16 bits (shape or GPU)";
  plan::gemm_spec const& lg = plan::k_logits;
  rows.push_back({"gemm logits + loss (last stage)", mb, (lg.forward_s + lg.backward_s + plan::k_head_memory.forward_s) * mb,
                  m[k++] * mb, ""});
  plan::memory_spec const& mem = plan::k_memory;
  plan::attention_spec const& at = plan::k_attention;
  rows.push_back({plan::k_attention.flash ? "attention (flash's FLOPs, batched)" : "attention (standard)", passes,
                  (at.forward_s + at.backward_s + (plan::k_recompute_attention ? at.forward_s : 0)) * passes, m[k++] * passes,
                  plan::k_attention.flash ? "scores through HBM: slower than a flash kernel" : ""});
  rows.push_back({"memory-bound", moe_passes,
                  (mem.forward_s + mem.backward_s + (plan::k_recompute_memory ? mem.forward_s : 0)) * moe_passes,
                  m[k++] * moe_passes, ""});
  if (plan::k_mixed_layers) {
    plan::memory_spec const& dm = plan::k_dense_memory;
    rows.push_back({"memory-bound (dense layers)", dense_passes,
                    (dm.forward_s + dm.backward_s + (plan::k_recompute_memory ? dm.forward_s : 0)) * dense_passes,
                    m[k++] * dense_passes, ""});
  }
  double in_layer = 0;
  for (int e = 0; e < plan::k_comm_count; ++e, ++k) {
    plan::comm_spec const& c = plan::k_comm[e];
    double calls = (double)r.effective_count(e);
    double predicted = c.predicted_s * calls / std::max(1LL, c.count);
    if ((c.phase == 0 || c.phase == 1) && !c.overlapped) in_layer += c.exposed_s * calls / std::max(1LL, c.count);
    char name[96];
    std::snprintf(name, sizeof name, "%s %s %s %s", k_op_names[c.op], c.group_name, k_type_names[c.type],
                  human_bytes(c.bytes).c_str());
    rows.push_back({name, calls, predicted, m[k] * calls, r.clamped[e] ? "message clamped by --scale" : ""});
  }
  rows.push_back({"compute + in-layer comm (step)", passes, (plan::k_predicted_compute_s + in_layer) * share, m[k++], ""});
  rows.push_back({"bubble + pipeline wait (step)", (double)plan::k_pipe_bubble_pairs,
                  (plan::k_predicted_bubble_s + plan::k_predicted_pp_exposed_s) * share, m[k++], ""});
  rows.push_back({"optimizer (step)", 1, plan::k_predicted_optimizer_s, m[k++], ""});
  rows.push_back({"step", 1, plan::k_predicted_step_s * share, m[k++], ""});
  print_table(rows);
}

static void finish(runner& r) {
  CUBLAS_CHECK(cublasDestroy(r.blas));
  for (auto& [key, g] : r.lt_plans) {
    (void)key;
    if (g.desc) cublasLtMatmulDescDestroy(g.desc);
    if (g.a) cublasLtMatrixLayoutDestroy(g.a);
    if (g.b) cublasLtMatrixLayoutDestroy(g.b);
    if (g.c) cublasLtMatrixLayoutDestroy(g.c);
  }
  CUBLAS_CHECK(cublasLtDestroy(r.lt));
  for (int ov = 0; ov < 2; ++ov)
    for (int g = 0; g < group_count; ++g)
      if (r.comms[ov][g]) NCCL_CHECK(ncclCommDestroy(r.comms[ov][g]));
  if (r.pipe_comm) NCCL_CHECK(ncclCommDestroy(r.pipe_comm));
  NCCL_CHECK(ncclCommDestroy(r.world_comm));
  for (buffer& b : r.bufs)
    if (b.ptr) CUDA_CHECK(cudaFree(b.ptr));
  for (char* p : r.mem.extra) CUDA_CHECK(cudaFree(p));
#ifdef DTPLAN_HAVE_MPI
  if (!r.opt.no_mpi) MPI_CHECK(MPI_Finalize());
#endif
}

int main(int argc, char** argv) {
  options opt;
  int parsed = parse_args(argc, argv, opt);
  if (parsed != 0) return parsed == 1 ? 0 : 2;
  if (opt.dry_run) return dry_run(opt.world, opt.schedule);
  runner r;
  r.opt = opt;
  long long world = 0;
  std::string id_path;  // --no-mpi
  if (int status = start(r, argc, argv, world, id_path)) return status;
  connect(r, world, id_path);
  take_stage(r);
  place_buffers(r);
  make_streams(r);
  double wall = 0;
  for (int s = 0; s < r.opt.steps; ++s) {
    barrier(r);
    auto t0 = std::chrono::steady_clock::now();
    r.step();
    CUDA_CHECK(cudaStreamSynchronize(r.compute));
    CUDA_CHECK(cudaStreamSynchronize(r.comm));
    CUDA_CHECK(cudaStreamSynchronize(r.pipe));
    CUDA_CHECK(cudaStreamSynchronize(r.ring));
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  report(r, measure(r, wall));
  finish(r);
  return 0;
}

#else

int main(int argc, char** argv) {
  options opt;
  int parsed = parse_args(argc, argv, opt);
  if (parsed != 0) return parsed == 1 ? 0 : 2;
  if (opt.dry_run) return dry_run(opt.world, opt.schedule);
  std::fprintf(stderr, "error: built with DTPLAN_DRY_RUN_ONLY; only --dry-run is available\n");
  return 2;
}

#endif
