#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#ifndef DTPLAN_DRY_RUN_ONLY
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef DTPLAN_HAVE_MPI
#include <mpi.h>
#endif
#endif

@PLAN_CONSTANTS@

// Parallel axes, in the order of plan::k_sizes: 0 tp, 1 cp, 2 dp, 3 pp.
static char const* const k_axis_names[4] = {"tp", "cp", "dp", "pp"};

// The rank layout: the same arithmetic as dtplan's planner::rank_layout.
// The innermost axis of plan::k_order varies fastest; node n holds ranks
// [n * gpus_per_node, (n + 1) * gpus_per_node).
struct layout {
  long long size[4];
  long long stride[4];
  long long world;
  long long gpus_per_node;
  long long shard;

  explicit layout(long long dp) : size{plan::k_tp, plan::k_cp, dp, plan::k_pp}, stride{}, world(1),
      gpus_per_node(plan::k_gpus_per_node), shard(plan::k_shard_ranks) {
    for (int i = 0; i < 4; ++i) {
      stride[plan::k_order[i]] = world;
      world *= size[plan::k_order[i]];
    }
    // A plan without hybrid sharding keeps one shard group per dp group
    // whatever the --dry-run world size.
    if (shard == plan::k_dp || shard <= 0 || shard > dp || dp % shard != 0) shard = dp;
  }
  long long coord(long long rank, int a) const { return (rank / stride[a]) % size[a]; }
  std::vector<long long> group(int a, long long rank) const {
    long long base = rank - coord(rank, a) * stride[a];
    std::vector<long long> out;
    for (long long k = 0; k < size[a]; ++k) out.push_back(base + k * stride[a]);
    return out;
  }
  bool hybrid() const { return plan::k_zero > 0 && shard < size[2]; }
  std::vector<long long> shard_group(long long rank) const {
    std::vector<long long> dp = group(2, rank);
    long long first = (coord(rank, 2) / shard) * shard;
    return std::vector<long long>(dp.begin() + first, dp.begin() + first + shard);
  }
  std::vector<long long> replicate_group(long long rank) const {
    std::vector<long long> dp = group(2, rank), out;
    for (long long k = coord(rank, 2) % shard; k < (long long)dp.size(); k += shard) out.push_back(dp[k]);
    return out;
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

// The --dry-run view: parseable, one line per rank, no GPU, NCCL or MPI call.
static int dry_run(long long world) {
  long long inner = plan::k_tp * plan::k_cp * plan::k_pp;
  if (world <= 0 || world % inner != 0) {
    std::fprintf(stderr, "error: world size %lld is not a multiple of tp x cp x pp = %lld\n", world, inner);
    return 2;
  }
  layout l(world / inner);
  std::printf("# plan %s: world %lld, tp %lld cp %lld dp %lld pp %lld, order %s, %lld GPUs per node\n",
              plan::k_name, l.world, plan::k_tp, plan::k_cp, l.size[2], plan::k_pp, plan::k_order_text,
              plan::k_gpus_per_node);
  for (long long r = 0; r < l.world; ++r) {
    std::string line = "rank " + std::to_string(r) + " node " + std::to_string(r / l.gpus_per_node) +
                       " local " + std::to_string(r % l.gpus_per_node);
    for (int a = 0; a < 4; ++a) line += std::string(" ") + k_axis_names[a] + " " + std::to_string(l.coord(r, a));
    for (int a = 0; a < 4; ++a) line += std::string(" | ") + k_axis_names[a] + ": " + join(l.group(a, r));
    if (l.hybrid()) line += " | shard: " + join(l.shard_group(r)) + " | replicate: " + join(l.replicate_group(r));
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

struct options {
  bool dry_run = false;
  bool no_mpi = false;
  long long world = plan::k_world;
  double scale = 1.0;
  long long layers = -1;
  int steps = 2;
};

static void usage(char const* argv0) {
  std::printf("usage: %s [--dry-run [--world N]] [--no-mpi] [--scale F] [--layers N] [--steps N]\n"
              "  --dry-run   print every rank's coordinates and groups; touches no GPU\n"
              "  --world N   the world size for --dry-run (default %lld)\n"
              "  --no-mpi    take the rank from OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK\n"
              "  --scale F   allocate F x the planned buffers (0 < F <= 1, for small GPUs)\n"
              "  --layers N  run N layers per stage instead of the plan's\n"
              "  --steps N   steps to run, the first is a warm-up (default 2)\n",
              argv0, plan::k_world);
}

static bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](char const* what) -> char const* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: '%s' expects %s\n", a.c_str(), what);
        return nullptr;
      }
      return argv[++i];
    };
    char const* v = nullptr;
    char* end = nullptr;
    if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--no-mpi") {
      o.no_mpi = true;
    } else if (a == "--world") {
      if (!(v = value("a rank count"))) return false;
      o.world = std::strtoll(v, &end, 10);
      if (*end != '\0' || o.world <= 0) return std::fprintf(stderr, "error: bad --world '%s'\n", v), false;
    } else if (a == "--scale") {
      if (!(v = value("a fraction"))) return false;
      o.scale = std::strtod(v, &end);
      if (*end != '\0' || !(o.scale > 0 && o.scale <= 1))
        return std::fprintf(stderr, "error: --scale expects a fraction in (0, 1], got '%s'\n", v), false;
    } else if (a == "--layers") {
      if (!(v = value("a layer count"))) return false;
      o.layers = std::strtoll(v, &end, 10);
      if (*end != '\0' || o.layers <= 0) return std::fprintf(stderr, "error: bad --layers '%s'\n", v), false;
    } else if (a == "--steps") {
      if (!(v = value("a step count"))) return false;
      o.steps = (int)std::strtol(v, &end, 10);
      if (*end != '\0' || o.steps <= 0) return std::fprintf(stderr, "error: bad --steps '%s'\n", v), false;
    } else if (a == "--help" || a == "-h") {
      usage(argv[0]);
      std::exit(0);
    } else {
      std::fprintf(stderr, "error: unknown option '%s'\n", a.c_str());
      usage(argv[0]);
      return false;
    }
  }
  return true;
}

#ifndef DTPLAN_DRY_RUN_ONLY

static bool g_mpi = false;

[[noreturn]] static void die(int code) {
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
      char s_[MPI_MAX_ERROR_STRING];                                                             \
      int n_ = 0;                                                                                \
      MPI_Error_string(e_, s_, &n_);                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_);             \
      die(1);                                                                                    \
    }                                                                                            \
  } while (0)
#endif

static long long env_int(std::initializer_list<char const*> names, long long fallback) {
  for (char const* n : names)
    if (char const* v = std::getenv(n)) return std::atoll(v);
  return fallback;
}

// Without MPI, rank 0 publishes the NCCL id through a file every rank can
// read (a shared directory on several nodes).
static void share_id_by_file(ncclUniqueId& id, long long rank) {
  char const* env = std::getenv("DTPLAN_NCCL_ID_FILE");
  std::string path = env ? env : "dtplan_nccl_id.bin";
  if (rank == 0) {
    std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "error: cannot write the NCCL id to '%s'\n", path.c_str());
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
  std::fprintf(stderr, "error: rank %lld found no NCCL id in '%s' after 60 s (set DTPLAN_NCCL_ID_FILE)\n", rank, path.c_str());
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
  long long used = 0;  // carved out for GEMM operands and messages
};

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

// A region of `want` bytes from the first planned buffer with room, so the
// program's footprint stays the plan's; `got` may be less under --scale.
static char* carve(std::vector<buffer>& bufs, std::initializer_list<int> prefer, long long want, long long& got) {
  int best = -1;
  for (int i : prefer) {
    long long room = bufs[i].size - bufs[i].used;
    if (room >= want) {
      best = i;
      break;
    }
    if (best < 0 || room > bufs[best].size - bufs[best].used) best = i;
  }
  got = std::min(want, bufs[best].size - bufs[best].used) & ~255LL;
  return bufs[best].ptr + bufs[best].used;
}

__global__ void optimizer_update(float* state, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < n; i += stride) state[i] = state[i] * 0.999f + 1e-8f;
}

struct timed_call {
  cudaEvent_t start, stop;
};

struct comm_stats {
  std::vector<timed_call> calls;
  long long issued = 0;
  bool clamped = false;
};

struct runner {
  options opt;
  long long rank = 0;
  layout lay{plan::k_dp};
  ncclComm_t world_comm{};
  ncclComm_t comms[2][7]{};  // [overlapped][tp cp dp pp shard replicate embedding]
  int comm_rank[7]{};
  int comm_size[7]{};
  cudaStream_t compute{}, comm{};
  cublasHandle_t blas{};
  std::vector<buffer> bufs;
  char* gemm_a = nullptr;
  char* gemm_b = nullptr;
  char* gemm_c = nullptr;
  char* gemm_extra = nullptr;  // operands outside the planned buffers, when they do not fit
  long long gemm_rows = 0;  // tokens per GEMM after --scale shrinking
  std::vector<char*> msg;   // message region per comm entry
  std::vector<long long> msg_bytes;
  std::vector<comm_stats> stats;
  std::vector<timed_call> compute_events;
  size_t compute_used = 0;
  std::vector<cudaEvent_t> slot_ready, gathered;
  long long stage = 0, layers_here = 0, planned_layers_here = 0;

  cudaEvent_t new_event_pair(std::vector<timed_call>& pool, size_t i, bool start) {
    while (pool.size() <= i) {
      timed_call t;
      CUDA_CHECK(cudaEventCreate(&t.start));
      CUDA_CHECK(cudaEventCreate(&t.stop));
      pool.push_back(t);
    }
    return start ? pool[i].start : pool[i].stop;
  }

  // Calls of entry `e` in slot `s` out of `slots`: the count spread evenly,
  // so each step issues exactly the planned number.
  long long calls_in_slot(int e, long long s, long long slots) const {
    long long count = effective_count(e);
    return (s + 1) * count / slots - s * count / slots;
  }

  long long effective_count(int e) const {
    long long c = plan::k_comm[e].count;
    int p = plan::k_comm[e].placement;
    if ((p == 0 || p == 1) && planned_layers_here > 0 && layers_here != planned_layers_here)
      c = (c * layers_here + planned_layers_here / 2) / planned_layers_here;
    return c;
  }

  void collective(int e, cudaStream_t st) {
    plan::comm_spec const& c = plan::k_comm[e];
    ncclComm_t nc = comms[c.overlapped][c.group];
    // The embedding pair has no member on the middle pipeline stages.
    if (nc == nullptr) return;
    int n = comm_size[c.group], me = comm_rank[c.group];
    char* buf = msg[e];
    long long bytes = msg_bytes[e];
    comm_stats& s = stats[e];
    CUDA_CHECK(cudaEventRecord(new_event_pair(s.calls, s.issued, true), st));
    size_t elems = (size_t)(bytes / 2);
    switch (c.op) {
      case 0:
        NCCL_CHECK(ncclAllReduce(buf, buf, elems, ncclBfloat16, ncclSum, nc, st));
        break;
      case 1: {
        size_t part = elems / n;
        NCCL_CHECK(ncclReduceScatter(buf, buf + (size_t)me * part * 2, part, ncclBfloat16, ncclSum, nc, st));
        break;
      }
      case 2: {
        size_t part = elems / n;
        NCCL_CHECK(ncclAllGather(buf + (size_t)me * part * 2, buf, part, ncclBfloat16, nc, st));
        break;
      }
      case 3: {
        // The message is what each rank sends in all; it receives as much
        // into the second half of its region.
        size_t part = elems / 2 / n;
        char* recv = buf + elems / 2 * 2;
        NCCL_CHECK(ncclGroupStart());
        for (int peer = 0; peer < n; ++peer) {
          NCCL_CHECK(ncclSend(buf + (size_t)peer * part * 2, part, ncclBfloat16, peer, nc, st));
          NCCL_CHECK(ncclRecv(recv + (size_t)peer * part * 2, part, ncclBfloat16, peer, nc, st));
        }
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
      case 4: {
        // Activations (forward) or their gradients (backward) to the next
        // and from the previous stage; every stage issues the same calls in
        // the same slots, so the pairs always match.
        size_t part = elems / 2;
        char* recv = buf + part * 2;
        NCCL_CHECK(ncclGroupStart());
        if (me + 1 < n) NCCL_CHECK(ncclSend(buf, part, ncclBfloat16, me + 1, nc, st));
        if (me > 0) NCCL_CHECK(ncclRecv(recv, part, ncclBfloat16, me - 1, nc, st));
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
    }
    CUDA_CHECK(cudaEventRecord(s.calls[s.issued].stop, st));
    ++s.issued;
  }

  // Rows of a GEMM whose planned row count is `m` tokens, after scaling.
  long long rows(long long m) const { return std::max(1LL, m * gemm_rows / std::max(1LL, plan::k_tokens)); }

  // Elements of the largest operand of any forward or backward product.
  long long gemm_slab() const {
    long long e = 0;
    for (int i = 0; i < plan::k_gemm_count; ++i) {
      plan::gemm_spec const& x = plan::k_gemms[i];
      e = std::max(e, std::max(rows(x.m) * std::max(x.k, x.n), x.k * x.n));
    }
    return e;
  }
  long long gemm_bytes() const { return 3 * ((gemm_slab() * 2 + 255) & ~255LL); }

  void gemm(long long m, long long n, long long k) {
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T.
    CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, gemm_b, CUDA_R_16BF,
                              (int)n, gemm_a, CUDA_R_16BF, (int)k, &beta, gemm_c, CUDA_R_16BF, (int)n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // Collectives of `placement` in slot `s`: the critical-path ones on the
  // compute stream, after GEMM `after` of `gemms`; the overlapped ones on
  // the communication stream once the slot's compute is recorded.
  void issue(int placement, long long s, long long slots, bool want_overlapped, int gemm_index, int gemms,
             bool gathers_only, bool skip_gathers) {
    for (int e = 0; e < plan::k_comm_count; ++e) {
      plan::comm_spec const& c = plan::k_comm[e];
      if (c.placement != placement || (bool)c.overlapped != want_overlapped) continue;
      bool gather = c.op == 2 && c.overlapped && (placement == 0);
      if (gathers_only && !gather) continue;
      if (skip_gathers && gather) continue;
      long long n = calls_in_slot(e, s, slots);
      for (long long j = 0; j < n; ++j) {
        if (gemms > 0 && j % gemms != gemm_index) continue;
        collective(e, want_overlapped ? comm : compute);
      }
    }
  }

  void layer(bool backward, long long slot, long long slots) {
    // ZeRO-3 gathers of this slot were issued one slot ahead; wait for them
    // and prefetch the next slot's.
    CUDA_CHECK(cudaStreamWaitEvent(compute, gathered[slot % 2], 0));
    if (slot + 1 < slots) {
      issue(0, slot + 1, slots, true, 0, 0, true, false);
      CUDA_CHECK(cudaEventRecord(gathered[(slot + 1) % 2], comm));
    }
    int g = plan::k_gemm_count;
    CUDA_CHECK(cudaEventRecord(new_event_pair(compute_events, compute_used, true), compute));
    if (backward)
      for (int i = 0; i < g; ++i)
        if (plan::k_recompute_n[i] > 0) gemm(rows(plan::k_gemms[i].m), plan::k_recompute_n[i], plan::k_gemms[i].k);
    for (int ii = 0; ii < g; ++ii) {
      int i = backward ? g - 1 - ii : ii;
      plan::gemm_spec const& x = plan::k_gemms[i];
      if (backward) {
        gemm(rows(x.m), x.k, x.n);  // input gradient
        gemm(x.k, x.n, rows(x.m));  // weight gradient
      } else {
        gemm(rows(x.m), x.n, x.k);
      }
      issue(0, slot, slots, false, ii, g, false, false);
    }
    CUDA_CHECK(cudaEventRecord(compute_events[compute_used].stop, compute));
    ++compute_used;
  }

  void after_slot_overlapped(int placement, long long s, long long slots) {
    CUDA_CHECK(cudaEventRecord(slot_ready[0], compute));
    CUDA_CHECK(cudaStreamWaitEvent(comm, slot_ready[0], 0));
    issue(placement, s, slots, true, 0, 0, false, true);
  }

  void step() {
    for (comm_stats& s : stats) s.issued = 0;
    compute_used = 0;
    long long m = plan::k_micro_batches, l = layers_here;
    long long layer_slots = m * l * 2, bwd_slots = m * l, micro_slots = 2 * m;
    // The first slot's ZeRO-3 gathers have nothing to hide behind.
    issue(0, 0, layer_slots, true, 0, 0, true, false);
    CUDA_CHECK(cudaEventRecord(gathered[0], comm));
    long long ls = 0, bs = 0;
    for (long long mb = 0; mb < m; ++mb) {
      for (long long i = 0; i < l; ++i, ++ls) {
        layer(false, ls, layer_slots);
        after_slot_overlapped(0, ls, layer_slots);
      }
      issue(2, 2 * mb, micro_slots, false, 0, 0, false, false);
    }
    for (long long mb = 0; mb < m; ++mb) {
      for (long long i = 0; i < l; ++i, ++ls, ++bs) {
        layer(true, ls, layer_slots);
        issue(1, bs, bwd_slots, false, 0, 0, false, false);
        after_slot_overlapped(0, ls, layer_slots);
        after_slot_overlapped(1, bs, bwd_slots);
        // Overlapped gradient sync rides on the last micro-batch's backward.
        if (mb == m - 1) after_slot_overlapped(3, i, l);
      }
      issue(2, 2 * mb + 1, micro_slots, false, 0, 0, false, false);
    }
    CUDA_CHECK(cudaEventRecord(slot_ready[1], comm));
    CUDA_CHECK(cudaStreamWaitEvent(compute, slot_ready[1], 0));
    issue(3, 0, 1, false, 0, 0, false, false);
    buffer& o = bufs[2];
    long long n = o.size / 4;
    if (n > 0) optimizer_update<<<1024, 256, 0, compute>>>((float*)o.ptr, n);
    CUDA_CHECK(cudaGetLastError());
    issue(4, 0, 1, false, 0, 0, false, false);
    CUDA_CHECK(cudaEventRecord(slot_ready[0], compute));
    CUDA_CHECK(cudaStreamWaitEvent(comm, slot_ready[0], 0));
    issue(4, 0, 1, true, 0, 0, false, false);
    CUDA_CHECK(cudaEventRecord(slot_ready[1], comm));
    CUDA_CHECK(cudaStreamWaitEvent(compute, slot_ready[1], 0));
  }
};

static double elapsed(timed_call const& t) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
  return ms / 1e3;
}

static char const* const k_op_names[5] = {"all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send-recv"};

int main(int argc, char** argv) {
  options opt;
  if (!parse_args(argc, argv, opt)) return 2;
  if (opt.dry_run) return dry_run(opt.world);

  runner r;
  r.opt = opt;
  long long world = 0, local = 0;
#ifdef DTPLAN_HAVE_MPI
  if (!opt.no_mpi) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    g_mpi = true;
    int rk = 0, sz = 0;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rk));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &sz));
    r.rank = rk;
    world = sz;
    local = env_int({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}, rk % plan::k_gpus_per_node);
  }
#else
  opt.no_mpi = true;
#endif
  if (opt.no_mpi) {
    r.rank = env_int({"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}, 0);
    world = env_int({"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}, 1);
    local = env_int({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}, r.rank % plan::k_gpus_per_node);
  }
  if (world != plan::k_world) {
    if (r.rank == 0)
      std::fprintf(stderr, "error: plan '%s' needs %lld ranks, this job has %lld\n", plan::k_name, plan::k_world, world);
    die(2);
  }
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  CUDA_CHECK(cudaSetDevice((int)(local % devices)));

  ncclUniqueId id;
  if (r.rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
#ifdef DTPLAN_HAVE_MPI
  if (!opt.no_mpi) MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
#endif
  if (opt.no_mpi) share_id_by_file(id, r.rank);
  NCCL_CHECK(ncclCommInitRank(&r.world_comm, (int)world, id, (int)r.rank));

  // One communicator per group the plan uses, split from the world:
  // color = the group's first rank (unique per group), key = this rank's
  // place in the group. Overlapped collectives get their own communicator
  // so the two streams never share one.
  layout& l = r.lay;
  for (int a = 0; a < 7; ++a) {
    std::vector<long long> g = a < 4 ? l.group(a, r.rank) : a == 4 ? l.shard_group(r.rank)
                             : a == 5 ? l.replicate_group(r.rank) : l.group(3, r.rank);
    bool member = true;
    if (a == 6) {
      // The first and last stage of this rank's pipeline.
      g = {g.front(), g.back()};
      member = r.rank == g.front() || r.rank == g.back();
    }
    int key = (int)(std::find(g.begin(), g.end(), r.rank) - g.begin());
    r.comm_rank[a] = key;
    r.comm_size[a] = (int)g.size();
    for (int ov = 0; ov < 2; ++ov) {
      bool used = false;
      for (int e = 0; e < plan::k_comm_count; ++e) used |= plan::k_comm[e].group == a && plan::k_comm[e].overlapped == ov;
      if (!used) continue;
      NCCL_CHECK(ncclCommSplit(r.world_comm, member ? (int)g.front() : NCCL_SPLIT_NOCOLOR, key, &r.comms[ov][a], nullptr));
      if (!member) r.comms[ov][a] = nullptr;
    }
  }

  r.stage = l.coord(r.rank, 3);
  r.planned_layers_here = plan::k_stage_layers[r.stage];
  r.layers_here = opt.layers > 0 ? std::min(opt.layers, r.planned_layers_here) : r.planned_layers_here;

  r.bufs = allocate(opt.scale, r.rank);
  if (r.rank == 0) {
    long long total = 0;
    for (buffer const& b : r.bufs) {
      std::printf("allocated %-11s %9s (planned %s)\n", b.name, human_bytes(b.size).c_str(), human_bytes(b.planned).c_str());
      total += b.size;
    }
    std::printf("allocated %-11s %9s per GPU\n", "in all", human_bytes(total).c_str());
  }
  // GEMM operands: three slabs (A, B, C) big enough for the forward and
  // both backward products of every GEMM, carved from the activations.
  r.gemm_rows = plan::k_tokens;
  long long want = r.gemm_bytes();
  long long got = 0;
  char* region = carve(r.bufs, {3, 4, 0}, want, got);
  while (got < want && r.gemm_rows > 1) {
    r.gemm_rows /= 2;  // scaled-down buffers: fewer tokens per GEMM
    want = r.gemm_bytes();
  }
  if (got < want) {
    r.gemm_rows = plan::k_tokens;
    want = r.gemm_bytes();
    CUDA_CHECK(cudaMalloc((void**)&region, (size_t)want));
    r.gemm_extra = region;
    if (r.rank == 0)
      std::printf("note: GEMM operands (%.2f GiB) allocated beside the scaled buffers\n", want / 1073741824.0);
  } else {
    for (buffer& b : r.bufs)
      if (region == b.ptr + b.used) {
        b.used += want;
        break;
      }
    if (r.rank == 0 && r.gemm_rows != plan::k_tokens)
      std::printf("note: GEMM rows scaled from %lld to %lld tokens to fit the scaled buffers\n", plan::k_tokens, r.gemm_rows);
  }
  long long slab = (r.gemm_slab() * 2 + 255) & ~255LL;
  r.gemm_a = region;
  r.gemm_b = region + slab;
  r.gemm_c = region + 2 * slab;

  r.stats.resize(plan::k_comm_count);
  for (int e = 0; e < plan::k_comm_count; ++e) {
    plan::comm_spec const& c = plan::k_comm[e];
    // Gradient traffic lives in the gradient buffer, ZeRO-3 gathers in the
    // working buffers, tensor and pipeline messages in the activations.
    std::initializer_list<int> prefer = c.group == 2 || c.group >= 4 ? std::initializer_list<int>{1, 4, 2, 0, 3}
                                                                     : std::initializer_list<int>{3, 4, 0, 1, 2};
    long long want = c.op >= 3 ? 2 * c.bytes : c.bytes;
    long long have = 0;
    char* p = carve(r.bufs, prefer, want, have);
    r.msg.push_back(p);
    r.msg_bytes.push_back(c.op >= 3 ? have / 2 : have);
    r.stats[e].clamped = have < want;
  }

  CUBLAS_CHECK(cublasCreate(&r.blas));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&r.comm, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasSetStream(r.blas, r.compute));
  for (int i = 0; i < 2; ++i) {
    cudaEvent_t e1, e2;
    CUDA_CHECK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    r.slot_ready.push_back(e1);
    r.gathered.push_back(e2);
  }

  cudaEvent_t step_start, step_stop;
  CUDA_CHECK(cudaEventCreate(&step_start));
  CUDA_CHECK(cudaEventCreate(&step_stop));
  double wall = 0;
  for (int s = 0; s < opt.steps; ++s) {
#ifdef DTPLAN_HAVE_MPI
    if (!opt.no_mpi) MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
#endif
    auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(step_start, r.compute));
    r.step();
    CUDA_CHECK(cudaEventRecord(step_stop, r.compute));
    CUDA_CHECK(cudaStreamSynchronize(r.compute));
    CUDA_CHECK(cudaStreamSynchronize(r.comm));
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // The last step's figures; with MPI, the slowest rank's.
  std::vector<double> measured(plan::k_comm_count + 2, 0.0);
  for (int e = 0; e < plan::k_comm_count; ++e)
    for (long long i = 0; i < r.stats[e].issued; ++i) measured[e] += elapsed(r.stats[e].calls[i]);
  for (size_t i = 0; i < r.compute_used; ++i) measured[plan::k_comm_count] += elapsed(r.compute_events[i]);
  measured[plan::k_comm_count + 1] = wall;
#ifdef DTPLAN_HAVE_MPI
  if (!opt.no_mpi)
    MPI_CHECK(MPI_Reduce(r.rank == 0 ? MPI_IN_PLACE : measured.data(), measured.data(), (int)measured.size(),
                         MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
#endif
  if (r.rank == 0) {
    double layer_share = r.planned_layers_here > 0 ? (double)r.layers_here / r.planned_layers_here : 1.0;
    std::printf("plan '%s' of %s: %lld ranks on %lld nodes, tp %lld cp %lld dp %lld pp %lld (%lld virtual), zero %d\n",
                plan::k_name, plan::k_file, plan::k_world, plan::k_nodes, plan::k_tp, plan::k_cp, plan::k_dp, plan::k_pp,
                plan::k_virtual_stages, plan::k_zero);
    std::printf("%lld micro-batches of %lld x %lld tokens, %lld of %lld layers on stage 0 (%lld in the model), scale %g\n",
                plan::k_micro_batches, plan::k_micro_batch, plan::k_seq_len, r.layers_here, r.planned_layers_here,
                plan::k_layers, opt.scale);
    std::printf("%-15s %-10s %12s %7s %12s %12s %7s\n", "collective", "group", "bytes", "count", "predicted s",
                "measured s", "ratio");
    for (int e = 0; e < plan::k_comm_count; ++e) {
      plan::comm_spec const& c = plan::k_comm[e];
      double predicted = c.predicted_s * r.effective_count(e) / std::max(1LL, c.count);
      std::printf("%-15s %-10s %12s %7lld %12.6f %12.6f %7.2f%s\n", k_op_names[c.op], c.group_name,
                  human_bytes(c.bytes).c_str(), r.effective_count(e), predicted, measured[e],
                  predicted > 0 ? measured[e] / predicted : 0.0, r.stats[e].clamped ? "  (message clamped by --scale)" : "");
    }
    std::printf("%-15s %-10s %12s %7s %12.6f %12.6f %7.2f\n", "compute", "-", "-", "-",
                plan::k_predicted_compute_s * layer_share, measured[plan::k_comm_count],
                measured[plan::k_comm_count] / (plan::k_predicted_compute_s * layer_share));
    std::printf("%-15s %-10s %12s %7s %12.6f %12.6f %7.2f\n", "step", "-", "-", "-", plan::k_predicted_step_s * layer_share,
                measured[plan::k_comm_count + 1], measured[plan::k_comm_count + 1] / (plan::k_predicted_step_s * layer_share));
  }

  CUBLAS_CHECK(cublasDestroy(r.blas));
  for (int ov = 0; ov < 2; ++ov)
    for (int a = 0; a < 7; ++a)
      if (r.comms[ov][a]) NCCL_CHECK(ncclCommDestroy(r.comms[ov][a]));
  NCCL_CHECK(ncclCommDestroy(r.world_comm));
  for (buffer& b : r.bufs)
    if (b.ptr) CUDA_CHECK(cudaFree(b.ptr));
  if (r.gemm_extra) CUDA_CHECK(cudaFree(r.gemm_extra));
#ifdef DTPLAN_HAVE_MPI
  if (!opt.no_mpi) MPI_CHECK(MPI_Finalize());
#endif
  return 0;
}

#else

int main(int argc, char** argv) {
  options opt;
  if (!parse_args(argc, argv, opt)) return 2;
  if (opt.dry_run) return dry_run(opt.world);
  std::fprintf(stderr, "error: built with DTPLAN_DRY_RUN_ONLY; only --dry-run is available\n");
  return 2;
}

#endif
