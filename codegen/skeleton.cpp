#include "codegen/skeleton.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "codegen/escape.hpp"
#include "codegen/templates/template_text.hpp"
#include "planner/model/compute.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/params.hpp"
#include "planner/model/shape.hpp"

namespace dtplan::codegen {

using planner::axis;
using planner::collective;
using planner::comm_group;

namespace {

std::string join(std::vector<std::int64_t> const& v) {
  std::string out;
  for (auto x : v) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}", x);
  }
  return out;
}

// Exact integers for byte counts: the planner's figures are whole bytes.
long long whole(planner::bytes b) { return static_cast<long long>(b.value() + 0.5); }

// A C++ double literal; a figure that is not finite (no valid plan has
// one) becomes 0 so the program still compiles and prints no ratio for it.
std::string real(double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string("0"); }

int op_id(collective c) {
  switch (c) {
    case collective::all_reduce: return 0;
    case collective::reduce_scatter: return 1;
    case collective::all_gather: return 2;
    case collective::all_to_all: return 3;
    case collective::send_recv: return 4;
  }
  return 0;
}

int phase_id(planner::comm_phase p) {
  switch (p) {
    case planner::comm_phase::layer: return 0;
    case planner::comm_phase::layer_backward: return 1;
    case planner::comm_phase::micro_batch: return 2;
    case planner::comm_phase::grad_sync: return 3;
    case planner::comm_phase::after_step: return 4;
  }
  return 4;
}

int axis_id(axis a) { return static_cast<int>(a); }

// Element types of the generated program: 0 bf16, 1 fp16, 2 fp32, 3 fp8, 4 fp4.
int sixteen_bit(planner::precision p) { return p == planner::precision::fp16 ? 1 : 0; }
int activation_type(planner::precision p) { return p == planner::precision::fp32 ? 2 : sixteen_bit(p); }

// The precision a collective moves its elements in: gradients as the
// program keeps them (fp32 with grad_precision = fp32), weights and
// activations in the model's 16-bit type (fp8 training communicates
// 16-bit, as the cost model counts it), fp32 models in fp32.
int element_type(planner::comm_entry const& e, planner::program const& p) {
  bool const reduces = e.op == collective::reduce_scatter || e.op == collective::all_reduce;
  bool const gradients = reduces && (e.group == comm_group::dp || e.group == comm_group::shard ||
                                     e.group == comm_group::replicate || e.group == comm_group::embedding ||
                                     e.group == comm_group::expert_dp || e.group == comm_group::expert_shard);
  if (gradients) return planner::grad_element_bytes(p.model, p.training) == 4 ? 2 : sixteen_bit(p.model.prec);
  return activation_type(p.model.prec);
}

int precision_id(planner::precision p) {
  switch (p) {
    case planner::precision::bf16: return 0;
    case planner::precision::fp16: return 1;
    case planner::precision::fp32: return 2;
    case planner::precision::fp8: return 3;
    case planner::precision::fp4: return 4;
  }
  return 0;
}

// The members of `rank`'s groups, as the generated program forms them.
std::vector<std::int64_t> embedding_pair(planner::rank_layout const& l, std::int64_t rank) {
  auto const pp = l.group_of(axis::pp, rank);
  return {pp.front(), pp.back()};
}

// What one layer pass of each kind of work costs in the plan, per GPU.
struct phase_prediction {
  double forward = 0;
  double backward = 0;
  double recompute = 0;
  [[nodiscard]] double pass() const { return forward + backward + recompute; }
};

phase_prediction weight_gemm(planner::gpu const& g, planner::gemm_shape const& f, std::int64_t recompute_n,
                             planner::precision prec) {
  phase_prediction out;
  out.forward = planner::gemm_time(g, f, prec).value();
  // Input gradient [rows, out] x [out, in], weight gradient [in, rows] x [rows, out].
  out.backward = planner::gemm_time(g, {f.m, f.k, f.n, f.batch}, prec).value() +
                 planner::gemm_time(g, {f.k, f.n, f.m, f.batch}, prec).value();
  if (recompute_n > 0) out.recompute = planner::gemm_time(g, {f.m, recompute_n, f.k, f.batch}, prec).value();
  return out;
}

// Bytes a memory-bound kernel moves in `t` seconds of the plan's roofline
// for `kernels` launches (planner::memory_time inverted): the cost model
// keeps the bytes of its element-wise work inside compute.cpp.
double bytes_in(planner::gpu const& g, double t, std::int64_t kernels) {
  double const moving = t - static_cast<double>(kernels) * g.kernel_latency.value();
  return std::max(0.0, moving) * g.hbm_bandwidth.value() * g.hbm_efficiency;  // >= 0 up to rounding
}

struct line_writer {
  std::string& out;
  template <class... A>
  void operator()(fmt::format_string<A...> f, A&&... a) {
    out += fmt::format(f, std::forward<A>(a)...);
    out += '\n';
  }
};

void write_groups(line_writer& line, planner::program const& p, planner::strategy_shape const& sh,
                  std::vector<planner::comm_entry> const& comm) {
  auto const& s = sh.s;
  line("constexpr long long k_world = {};", sh.world);
  line("constexpr long long k_tp = {}, k_cp = {}, k_dp = {}, k_pp = {}, k_ep = {}, k_etp = {};", s.tp, s.cp, s.dp, s.pp,
       s.ep, s.expert_tp());
  line("constexpr long long k_gpus_per_node = {}, k_nodes = {};", sh.gpus_per_node, p.cluster.nodes);
  line("// Rank order, innermost axis first (0 tp, 1 cp, 2 dp, 3 pp).");
  line("constexpr int k_order[4] = {{{}, {}, {}, {}}};", axis_id(s.order[0]), axis_id(s.order[1]), axis_id(s.order[2]),
       axis_id(s.order[3]));
  line("constexpr char const* k_order_text = {};", c_string(planner::to_string(s.order)));
  line("constexpr int k_zero = {};", s.zero);
  line("// The ZeRO shard group inside the gradient group (dp x cp = {} ranks): 0 all of it,", sh.sync.size);
  line("// 1 blocks of k_shard_dp_block dp coordinates with every cp coordinate, 2 the members on one node.");
  int const kind = sh.sharding.k == planner::shard_layout::kind::whole ? 0
                   : sh.sharding.k == planner::shard_layout::kind::dp_block ? 1 : 2;
  line("constexpr int k_shard_kind = {};", s.zero >= 1 ? kind : 0);
  line("constexpr long long k_shard_dp_block = {};", sh.sharding.dp_block);
  line("constexpr long long k_shard_ranks = {}, k_replicate_ranks = {};", sh.shard.size, sh.replicate.size);
  line("constexpr bool k_embedding_pair = {};  // a tied embedding on the first and last stage", sh.embedding.active());
  line("// Groups: 0 tp, 1 cp, 2 grad (dp x cp, the cost model's 'dp'), 3 pp, 4 shard, 5 replicate,");
  line("// 6 embedding (first and last stage), 7 ep, 8 expert_grad (the ranks holding the same experts,");
  line("// tp / etp x dp x cp / ep), 9 expert_shard (those of them in the rank's shard group, under");
  line("// hybrid sharding). Elements: 0 bf16, 1 fp16, 2 fp32.");
  line("// op: 0 all-reduce 1 reduce-scatter 2 all-gather 3 all-to-all 4 send-recv; phase: 0 every layer");
  line("// (forward and backward), 1 every layer's backward, 2 between pipeline stages, 3 gradient");
  line("// sync, 4 after the optimizer; overlapped: on the communication stream.");
  line("struct comm_spec {{ int op, group; char const* group_name; long long ranks, bytes, count; double predicted_s, "
       "exposed_s; int phase, overlapped, type; char const* link; }};");
  line("constexpr int k_comm_count = {};", comm.size());
  line("constexpr comm_spec k_comm[{}] = {{", std::max<std::size_t>(1, comm.size()));
  for (auto const& e : comm) {
    auto const g = group_of(e.group);
    line("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},  // {} {} over {} ranks", op_id(e.op),
         static_cast<int>(g), c_string(planner::name(e.group)), e.ranks, whole(e.size), e.count,
         real(e.time.value()), real(e.exposed.value()), phase_id(e.phase), overlapped(e) ? 1 : 0, element_type(e, p),
         c_string(planner::name(e.link)), planner::name(e.op), planner::to_string(e.size), e.ranks);
  }
  if (comm.empty()) line("    {{0, 0, \"tp\", 1, 0, 0, 0, 0, 4, 0, 0, \"intra\"}},  // unused: the plan has no collective");
  line("}};");
}

// One kind of layer's weight GEMMs as `<prefix>gemm_count` and
// `<prefix>gemms`.
void write_layer_gemms(line_writer& line, std::string_view prefix, planner::strategy_shape const& sh,
                       planner::gpu const& g, planner::precision prec) {
  line("constexpr int {}gemm_count = {};", prefix, sh.gemm_count);
  line("constexpr gemm_spec {}gemms[{}] = {{", prefix, sh.gemm_count);
  for (int i = 0; i < sh.gemm_count; ++i) {
    auto const& x = sh.gemms[static_cast<std::size_t>(i)];
    auto const calls = sh.calls_of(x);
    auto const call = planner::gemm_shape{x.forward.m, x.forward.n, x.forward.k, x.forward.batch / calls};
    auto const t = weight_gemm(g, call, x.recompute_n, prec);
    line("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},", c_string(x.name), call.m, call.n, call.k, call.batch, calls,
         x.recompute_n, real(t.forward * static_cast<double>(calls)), real(t.backward * static_cast<double>(calls)),
         real(t.recompute * static_cast<double>(calls)));
  }
  line("}};");
}

// One kind of layer's memory-bound work (norms, residual adds, activation,
// rotary; standard attention's softmax and dropout are in the attention
// core) as `<prefix>memory`: what its compute has beside its GEMMs and
// attention.
void write_layer_memory(line_writer& line, std::string_view prefix, planner::strategy_shape const& sh,
                        planner::stage_compute const& sc, bool flash) {
  auto const& g = sh.prog->cluster.device;
  auto const prec = sh.prog->model.prec;
  double gemm_forward = 0, gemm_backward = 0;
  std::int64_t gemm_calls = 0;
  for (int i = 0; i < sh.gemm_count; ++i) {
    auto const& x = sh.gemms[static_cast<std::size_t>(i)];
    auto const calls = sh.calls_of(x);
    auto const t = weight_gemm(g, {x.forward.m, x.forward.n, x.forward.k, x.forward.batch / calls}, x.recompute_n, prec);
    gemm_forward += t.forward * static_cast<double>(calls);
    gemm_backward += t.backward * static_cast<double>(calls);
    gemm_calls += calls;
  }
  auto const core_kernels = flash ? 1 : 4;
  auto const fwd_kernels = sc.layer_kernels - gemm_calls - core_kernels;
  auto const bwd_kernels = sc.layer_kernels_backward - 2 * gemm_calls - (flash ? 1 : 8);
  double const mem_fwd = sc.layer_forward.value() - gemm_forward - sc.layer_attention_core.value();
  double const mem_bwd = sc.layer_backward.value() - gemm_backward - sc.layer_attention_core_backward.value();
  line("constexpr memory_spec {}memory = {{{}, {}, {}, {}, {}, {}}};", prefix,
       static_cast<long long>(bytes_in(g, mem_fwd, fwd_kernels)), fwd_kernels,
       static_cast<long long>(bytes_in(g, mem_bwd, bwd_kernels)), bwd_kernels, real(mem_fwd), real(mem_bwd));
}

void write_compute(line_writer& line, planner::program const& p, planner::strategy_shape const& sh,
                   planner::stage_compute const& sc) {
  auto const& s = sh.s;
  auto const& g = p.cluster.device;
  auto const prec = p.model.prec;
  bool const flash = p.model.attention == planner::attention_kind::flash;
  line("constexpr long long k_micro_batches = {};  // per step (gradient accumulation)", sh.grad_accum);
  line("constexpr long long k_micro_batch = {}, k_seq_len = {}, k_seq_local = {};", s.micro_batch, p.model.seq_len,
       sh.seq_local);
  line("constexpr long long k_tokens = {};  // rows of a micro-batch on one GPU: micro_batch x seq_len / cp", sh.tokens);
  line("constexpr long long k_layers = {}, k_virtual_stages = {}, k_chunks = {};", p.model.layers, s.virtual_stages,
       sh.chunks);
  std::string chunks;
  for (std::int64_t c = 0; c < sh.chunks; ++c) chunks += fmt::format("{}{}", c ? ", " : "", sh.chunk_layers(c));
  line("constexpr long long k_chunk_layers[{}] = {{{}}};  // model chunk c runs on stage c % pp", sh.chunks, chunks);
  line("// GEMM inputs: 0 bf16, 1 fp16, 2 fp32, 3 fp8 (cuBLASLt, E4M3 forward, E5M2 gradients),");
  line("// 4 fp4 (cuBLASLt, NVFP4: E2M1 with an E4M3 scale per 16 elements).");
  line("constexpr int k_precision = {};  // {}", precision_id(prec), planner::name(prec));
  line("constexpr int k_activation_type = {};", activation_type(prec));

  line("// One layer's weight GEMMs per GPU, row-major C[m, n] = A[m, k] B[k, n], `batch` of them a call,");
  line("// `calls` calls (a mixture's experts one after another: a call per local expert);");
  line("// recompute_n: output columns the backward recomputes first (checkpoint = {}); the plan's", name(s.checkpoint));
  line("// roofline seconds of one forward, backward (input and weight gradient) and recomputation.");
  line("struct gemm_spec {{ char const* name; long long m, n, k, batch, calls, recompute_n; double forward_s, "
       "backward_s, recompute_s; }};");
  write_layer_gemms(line, "k_", sh, g, prec);
  // The LM head runs at 16 bits in fp8 and fp4 training (the cost model's choice).
  auto const head_prec = planner::unquantized(prec);
  auto const logits = weight_gemm(g, sh.logits, 0, head_prec);
  line("// The LM head on the last stage: [tokens, hidden] x [hidden, vocab / tp] ({} bits).",
       head_prec == planner::precision::fp32 ? 32 : 16);
  line("constexpr gemm_spec k_logits = {{\"logits\", {}, {}, {}, 1, 1, 0, {}, {}, 0}};", sh.logits.m, sh.logits.n,
       sh.logits.k, real(logits.forward), real(logits.backward));
  // Multi-token prediction modules (model::mtp_layers) on the last chunk:
  // each its projection, a layer of the last layer's kind and the LM head
  // again.
  auto const mtp = p.model.mtp_layers;
  auto const& projection = sh.mtp_projection;
  auto const proj = weight_gemm(g, projection, 0, prec);
  line("// Multi-token prediction modules after the last layer, each a layer of the last layer's kind");
  line("// (never recomputed), its projection [tokens, 2 hidden] x [2 hidden, hidden / tp] and the LM head.");
  line("constexpr long long k_mtp_layers = {};", mtp);
  line("constexpr bool k_mtp_dense = {};", mtp > 0 && !p.model.mtp_moe() && p.model.experts > 1);
  line("constexpr gemm_spec k_mtp_projection = {{\"mtp-projection\", {}, {}, {}, 1, 1, 0, {}, {}, 0}};",
       projection.m, projection.n, projection.k, real(proj.forward), real(proj.backward));

  // Attention core: per (sample, local head) the local queries against the
  // keys a causal flash kernel visits (the blocks on and below the
  // diagonal), or every key for standard attention.
  auto const seq = p.model.seq_len;
  std::int64_t keys = seq;
  if (flash) {
    constexpr std::int64_t block = 128;
    auto const blocks = (seq + block - 1) / block;
    keys = std::max<std::int64_t>(1, seq * (blocks + 1) / (2 * blocks));
  }
  bool const recompute_attention = s.checkpoint == planner::checkpoint_mode::selective ||
                                   s.checkpoint == planner::checkpoint_mode::full ||
                                   (s.checkpoint == planner::checkpoint_mode::ops && !flash);
  bool const recompute_memory =
      s.checkpoint == planner::checkpoint_mode::full || s.checkpoint == planner::checkpoint_mode::ops;
  line("// Attention core ({}): cuBLAS batched GEMMs over micro_batch x heads / tp = {} heads, {} local queries",
       planner::name(p.model.attention), s.micro_batch * sh.local_heads, sh.seq_local);
  line("// against {} keys{}; the backward runs {} GEMMs for the forward's two.", keys,
       flash ? " (a causal kernel's blocks on and below the diagonal)" : "", flash ? 5 : 4);
  line("struct attention_spec {{ long long heads, queries, keys, head_dim; int flash; double forward_s, backward_s; }};");
  // Multi-latent attention's query/key heads are wider than its value
  // heads: the skeleton's heads are their mean, the same work.
  auto const core_dim = (sh.qk_head_dim + sh.v_head_dim) / 2;
  if (sh.qk_head_dim != sh.v_head_dim)
    line("// Query/key heads {} wide, value heads {}: run as heads of their mean, {}.", sh.qk_head_dim, sh.v_head_dim,
         core_dim);
  line("constexpr attention_spec k_attention = {{{}, {}, {}, {}, {}, {}, {}}};", s.micro_batch * sh.local_heads,
       sh.seq_local, keys, core_dim, flash ? 1 : 0, real(sc.layer_attention_core.value()),
       real(sc.layer_attention_core_backward.value()));
  line("constexpr bool k_recompute_attention = {}, k_recompute_memory = {};", recompute_attention, recompute_memory);

  line("// Memory-bound work per layer: bytes moved and kernels, forward and backward, and their roofline.");
  line("struct memory_spec {{ long long forward_bytes, forward_kernels, backward_bytes, backward_kernels; double "
       "forward_s, backward_s; }};");
  write_layer_memory(line, "k_", sh, sc, flash);
  // The head's memory-bound work: final norm, loss (and the embedding on
  // one stage), forward and backward together.
  auto const head_kernels =
      sc.head_kernels() - sc.mtp_layers * (sc.mtp_kernels_forward + sc.mtp_kernels_backward) - 3;
  double const head_mem = sc.head_forward.value() + sc.head_backward.value() -
                          static_cast<double>(sc.mtp_layers) * (sc.mtp_forward + sc.mtp_backward).value() -
                          logits.forward - logits.backward;
  line("constexpr memory_spec k_head_memory = {{{}, {}, 0, 0, {}, 0}};  // norm, loss, embedding",
       static_cast<long long>(bytes_in(g, head_mem, head_kernels)), head_kernels, real(std::max(0.0, head_mem)));
}

// The schedule's figures in closed form (planner::counts_of): building the
// schedule here would take memory in proportion to the micro-batches.
void write_schedule(line_writer& line, planner::schedule_counts const& ps) {
  line("// The pipeline schedule, planner::one_f_one_b({}, {}, {}): the program builds the order", ps.stages,
       ps.virtual_stages, ps.micro_batches);
  line("// with the same rules and runs only if it has these counts (time in the schedule's units:");
  line("// a chunk's forward 1, its backward 2).");
  line("constexpr long long k_pipe_slots = {}, k_pipe_makespan = {}, k_pipe_idle = {}, k_pipe_bubble_pairs = {};",
       ps.slots, ps.makespan, ps.idle, ps.bubble_pairs);
  line("constexpr long long k_pipe_sends = {};", ps.sends);
  line("// Per stage: forwards before the first backward, backwards after the last forward, and");
  line("// sends of activations (to the next stage) and of gradients (to the previous one).");
  line("constexpr long long k_pipe_warmup[{}] = {{{}}};", ps.stages, fmt::join(ps.warmup, ", "));
  line("constexpr long long k_pipe_cooldown[{}] = {{{}}};", ps.stages, fmt::join(ps.cooldown, ", "));
  line("constexpr long long k_pipe_forward_sends[{}] = {{{}}};", ps.stages, fmt::join(ps.forward_sends, ", "));
  line("constexpr long long k_pipe_backward_sends[{}] = {{{}}};", ps.stages, fmt::join(ps.backward_sends, ", "));
}

}  // namespace

bool overlapped(planner::comm_entry const& e) {
  return e.time.value() > 0 && e.exposed.value() < e.time.value() * 0.999;
}

skeleton_group group_of(comm_group g) {
  switch (g) {
    case comm_group::tp: return skeleton_group::tp;
    case comm_group::cp: return skeleton_group::cp;
    case comm_group::dp: return skeleton_group::grad;
    case comm_group::pp: return skeleton_group::pp;
    case comm_group::shard: return skeleton_group::shard;
    case comm_group::replicate: return skeleton_group::replicate;
    case comm_group::embedding: return skeleton_group::embedding;
    case comm_group::ep: return skeleton_group::ep;
    case comm_group::expert_dp: return skeleton_group::expert_grad;
    case comm_group::expert_shard: return skeleton_group::expert_shard;
  }
  return skeleton_group::grad;
}

char const* name(skeleton_group g) {
  switch (g) {
    case skeleton_group::tp: return "tp";
    case skeleton_group::cp: return "cp";
    case skeleton_group::grad: return "grad";
    case skeleton_group::pp: return "pp";
    case skeleton_group::shard: return "shard";
    case skeleton_group::replicate: return "replicate";
    case skeleton_group::embedding: return "embedding";
    case skeleton_group::ep: return "ep";
    case skeleton_group::expert_grad: return "expert_grad";
    case skeleton_group::expert_shard: return "expert_shard";
  }
  return "?";
}

std::string layout_text(planner::strategy const& s, std::int64_t gpus_per_node, planner::shard_layout const& sharding,
                        bool embedding_pair_used) {
  planner::rank_layout l(s, gpus_per_node);
  bool const split = s.zero >= 1 && sharding.k != planner::shard_layout::kind::whole;
  std::string out;
  for (std::int64_t r = 0; r < l.world(); ++r) {
    auto c = l.of(r);
    out += fmt::format("rank {} node {} local {} tp {} cp {} dp {} pp {}", r, l.node_of(r), r % gpus_per_node,
                       c[axis_id(axis::tp)], c[axis_id(axis::cp)], c[axis_id(axis::dp)], c[axis_id(axis::pp)]);
    for (axis a : {axis::tp, axis::cp, axis::dp, axis::pp})
      out += fmt::format(" | {}: {}", planner::name(a), join(l.group_of(a, r)));
    out += fmt::format(" | grad: {}", join(l.sync_group_of(r)));
    if (split)
      out += fmt::format(" | shard: {} | replicate: {}", join(l.shard_group_of(r, sharding)),
                         join(l.replicate_group_of(r, sharding)));
    if (s.ep > 1) out += fmt::format(" | ep: {}", join(l.expert_group_of(r, s.ep, s.expert_tp())));
    if (s.ep > 1 || s.expert_tp() < s.tp) {
      out += fmt::format(" | expert_grad: {}", join(l.expert_data_group_of(r, s.ep, s.expert_tp())));
      if (split) out += fmt::format(" | expert_shard: {}", join(l.expert_shard_group_of(r, s.ep, s.expert_tp(), sharding)));
    }
    if (embedding_pair_used) out += fmt::format(" | embedding: {}", join(embedding_pair(l, r)));
    out += '\n';
  }
  return out;
}

std::string schedule_text(planner::pipeline_schedule const& ps) {
  std::string out = fmt::format("schedule pp {} virtual {} micro_batches {} slots {} makespan {} idle {} bubble_pairs {} sends {}\n",
                                ps.stages, ps.virtual_stages, ps.micro_batches, ps.slots(), ps.makespan, ps.idle,
                                ps.bubble_pairs(), ps.sends());
  auto const peer = [](std::int64_t st) { return st < 0 ? std::string("-") : fmt::format("{}", st); };
  for (std::int64_t st = 0; st < ps.stages; ++st) {
    out += fmt::format("stage {} warmup {} cooldown {} forward_sends {} backward_sends {}\n", st, ps.warmup(st),
                       ps.cooldown(st), ps.forward_sends(st), ps.backward_sends(st));
    std::int64_t i = 0;
    for (auto const& o : ps.ops[static_cast<std::size_t>(st)])
      out += fmt::format("op {} {} {} mb {} chunk {} recv {} send {} start {} end {}\n", st, i++,
                         o.pass == planner::pipe_pass::forward ? "forward" : "backward", o.micro_batch, o.chunk,
                         peer(o.recv_from), peer(o.send_to), o.start, o.end);
    std::int64_t group = 0;
    for (auto const& step : planner::issue_order(ps, st)) {
      if (step.compute) {
        out += fmt::format("issue {} op {}\n", st, step.op);
        continue;
      }
      for (auto const& t : step.transfers)
        out += fmt::format("issue {} group {} {} {} peer {} time {}\n", st, group, t.send ? "send" : "recv", t.op, t.peer,
                           t.time);
      ++group;
    }
  }
  return out;
}

std::string train_step_cu(planner::program const& p, planner::plan const& pl) {
  auto const sh = planner::shape_of(p, pl.s);
  auto const& s = sh.s;
  std::vector<planner::comm_entry> comm;
  if (pl.time) comm = pl.time->comm;
  auto const t = pl.time.value_or(planner::time_breakdown{});
  std::string o, c;
  line_writer head{o}, line{c};
  head("// train_step.cu: one training step of plan '{}' of {}, generated by dtplan.", comment_text(pl.name),
       comment_text(p.file));
  head("// {} ranks ({} nodes x {} GPUs): tp {} cp {} dp {} pp {} (x{} chunks), order {}, zero {}, shard {}.", sh.world,
       p.cluster.nodes, sh.gpus_per_node, s.tp, s.cp, s.dp, s.pp, s.virtual_stages, planner::to_string(s.order),
       s.zero, planner::to_string(s.shard));
  head("// Build: cmake -S . -B build && cmake --build build. Run: ../launch/mpirun.sh or sbatch");
  head("// ../launch/slurm.sbatch, or build/train_step --dry-run [--schedule] without a GPU.");
  head("// The runtime below the constants is codegen/templates/train_step.cu of dtplan.");
  line("// Everything this program knows of the plan, as dtplan predicted it. Names are");
  line("// printable ASCII (other bytes as \\\\xNN).");
  line("namespace plan {{");
  line("constexpr char const* k_name = {};", c_string(printable(pl.name)));
  line("constexpr char const* k_file = {};", c_string(printable(p.file)));
  line("constexpr char const* k_gpu = {};", c_string(printable(p.cluster.device.name)));
  write_groups(line, p, sh, comm);
  // A mixture's dense layers (model::dense_layers, moe_layer_freq) run
  // tables of their own: the mixture's are those of the model with every
  // layer a mixture, the dense ones' those of its dense layer.
  auto const& m = p.model;
  bool const flash = m.attention == planner::attention_kind::flash;
  if (m.mixed_layers()) {
    planner::program moe = p;
    moe.model.dense_layers = 0;
    moe.model.moe_layer_freq = 1;
    auto const dense = planner::dense_layer_program(p);
    auto const moe_sh = planner::shape_of(moe, s, sh);
    auto const dense_sh = planner::shape_of(dense, s, sh);
    write_compute(line, p, moe_sh, planner::compute_per_micro_batch(moe_sh));
    line("// A mixture's dense layers: the first k_dense_layers, then all but every k_moe_layer_freq-th");
    line("// from there; their weight GEMMs and memory-bound work.");
    line("constexpr bool k_mixed_layers = true;");
    line("constexpr long long k_dense_layers = {}, k_moe_layer_freq = {};", m.dense_layers, m.moe_layer_freq);
    write_layer_gemms(line, "k_dense_", dense_sh, p.cluster.device, m.prec);
    write_layer_memory(line, "k_dense_", dense_sh, planner::compute_per_micro_batch(dense_sh), flash);
  } else {
    write_compute(line, p, sh, planner::compute_per_micro_batch(sh));
    line("// Every layer of one kind: the dense tables are the layer's own.");
    line("constexpr bool k_mixed_layers = false;");
    line("constexpr long long k_dense_layers = 0, k_moe_layer_freq = 1;");
    line("constexpr int k_dense_gemm_count = k_gemm_count;");
    line("constexpr gemm_spec const* k_dense_gemms = k_gemms;");
    line("constexpr memory_spec k_dense_memory = k_memory;");
  }
  line("// Planned per-GPU memory of the most loaded GPU (total {} of {} usable).", planner::to_string(pl.memory.total),
       planner::to_string(pl.memory.usable));
  line("constexpr long long k_weights_bytes = {};", whole(pl.memory.weights));
  line("constexpr long long k_gradients_bytes = {};", whole(pl.memory.gradients));
  line("constexpr long long k_optimizer_bytes = {};", whole(pl.memory.optimizer));
  line("constexpr long long k_activations_bytes = {};", whole(pl.memory.activations));
  line("constexpr long long k_buffers_bytes = {};", whole(pl.memory.buffers));
  auto const& g = p.cluster.device;
  line("// The optimizer step: bytes it streams, as the plan's roofline for it.");
  line("constexpr long long k_optimizer_moved_bytes = {};", static_cast<long long>(bytes_in(g, t.optimizer.value(), 1)));
  write_schedule(line, planner::counts_of(s.pp, s.virtual_stages, sh.grad_accum));
  double pp_exposed = 0;
  for (auto const& e : comm)
    if (e.group == comm_group::pp) pp_exposed += e.exposed.value();
  line("// The plan's step: total, compute (forward + backward + recompute), bubble, exposed");
  line("// pipeline transfers, optimizer.");
  line("constexpr double k_predicted_step_s = {};", real(t.step.value()));
  line("constexpr double k_predicted_compute_s = {};", real(t.compute.value() + t.recompute.value()));
  line("constexpr double k_predicted_bubble_s = {}, k_predicted_pp_exposed_s = {};", real(t.bubble.value()),
       real(pp_exposed));
  line("constexpr double k_predicted_optimizer_s = {};", real(t.optimizer.value()));
  line("}}  // namespace plan");
  c.pop_back();  // the placeholder's line ends with its own newline
  return o + fill(template_text("train_step.cu"), {{"PLAN_CONSTANTS", c}});
}

std::string skeleton_cmake(planner::program const& p, planner::plan const& pl) {
  return fill(template_text("skeleton.cmake"),
              {{"PLAN", comment_text(pl.name)}, {"FILE", comment_text(p.file)}});
}

}  // namespace dtplan::codegen
