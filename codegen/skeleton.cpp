#include "codegen/skeleton.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/templates/template_text.hpp"
#include "planner/model/layout.hpp"
#include "planner/model/memory.hpp"

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

// C string literal of arbitrary text (names come from the user's file).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Exact integers for byte counts: the planner's figures are whole bytes.
long long whole(planner::bytes b) { return static_cast<long long>(b.value() + 0.5); }

std::string real(double v) { return fmt::format("{:.9g}", v); }

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

int group_id(comm_group g) {
  switch (g) {
    case comm_group::tp: return 0;
    case comm_group::cp: return 1;
    case comm_group::dp: return 2;
    case comm_group::pp: return 3;
    case comm_group::shard: return 4;
    case comm_group::replicate: return 5;
    case comm_group::ep: return 2;  // experts are spread over the data-parallel ranks
    case comm_group::embedding: return 6;
  }
  return 2;
}

int axis_id(axis a) { return static_cast<int>(a); }

// The JSON names of DSL.md section 4, indexed by op_id and group_id; kept
// here so the skeleton does not depend on the cost model's library.
constexpr char const* op_text[] = {"all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send-recv"};
constexpr char const* group_text[] = {"tp", "cp", "dp", "pp", "shard", "replicate", "ep", "embedding"};
int group_text_id(comm_group g) {
  if (g == comm_group::ep) return 6;
  if (g == comm_group::embedding) return 7;
  return group_id(g);
}
char const* link_text(planner::link_kind l) { return l == planner::link_kind::intra ? "intra" : "inter"; }


}  // namespace

std::vector<gemm_shape> layer_gemms(planner::model const& m, planner::strategy const& s) {
  auto tp = std::max<std::int64_t>(1, s.tp);
  auto tokens = s.micro_batch * m.seq_len / std::max<std::int64_t>(1, s.cp);
  auto head_dim = m.heads > 0 ? m.hidden / m.heads : m.hidden;
  auto kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  auto up = m.mlp == planner::mlp_kind::swiglu ? 2 * m.ffn : m.ffn;
  auto mlp_rows = tokens * std::max<std::int64_t>(1, m.experts > 1 ? m.experts_per_token : 1);
  return {
      {"qkv", tokens, (m.heads + 2 * kv) * head_dim / tp, m.hidden},
      {"o-proj", tokens, m.hidden, m.heads * head_dim / tp},
      {"mlp-up", mlp_rows, up / tp, m.hidden},
      {"mlp-down", mlp_rows, m.hidden, m.ffn / tp},
  };
}

std::vector<std::int64_t> recompute_columns(planner::model const& m, planner::strategy const& s) {
  auto const gemms = layer_gemms(m, s);
  std::vector<std::int64_t> out(gemms.size(), 0);
  if (s.checkpoint == planner::checkpoint_mode::full) {
    for (std::size_t i = 0; i < gemms.size(); ++i) out[i] = gemms[i].n;
  } else if (s.checkpoint == planner::checkpoint_mode::ops) {
    // The k projection (a kv slice of the fused qkv), the o projection, and
    // the MLP's second matmul: SwiGLU's up half of the fused up GEMM, or a
    // GELU MLP's down projection.
    auto tp = std::max<std::int64_t>(1, s.tp);
    auto head_dim = m.heads > 0 ? m.hidden / m.heads : m.hidden;
    auto kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
    out[0] = kv * head_dim / tp;
    out[1] = gemms[1].n;
    if (m.mlp == planner::mlp_kind::swiglu)
      out[2] = gemms[2].n / 2;
    else
      out[3] = gemms[3].n;
  }
  return out;
}

std::vector<layer_range> stage_layers(std::int64_t layers, std::int64_t pp, std::int64_t virtual_stages,
                                      std::int64_t stage) {
  pp = std::max<std::int64_t>(1, pp);
  auto chunks = planner::layers_per_chunk(layers, pp * std::max<std::int64_t>(1, virtual_stages));
  std::vector<layer_range> out;
  std::int64_t first = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    if (static_cast<std::int64_t>(c) % pp == stage) out.push_back({first, first + chunks[c]});
    first += chunks[c];
  }
  return out;
}

std::int64_t shard_ranks(planner::strategy const& s, std::int64_t gpus_per_node) {
  if (s.zero == 0) return s.dp;
  auto n = planner::shard_size(s, gpus_per_node);
  return n <= 0 || n > s.dp || s.dp % n != 0 ? s.dp : n;
}

char const* name(comm_placement p) {
  switch (p) {
    case comm_placement::layer: return "layer";
    case comm_placement::layer_bwd: return "layer_bwd";
    case comm_placement::micro_batch: return "micro_batch";
    case comm_placement::grad_sync: return "grad_sync";
    case comm_placement::step_end: return "step_end";
  }
  return "step_end";
}

comm_placement placement_of(planner::comm_entry const& e, int zero) {
  switch (e.group) {
    case comm_group::tp:
    case comm_group::cp:
    case comm_group::ep:
      return comm_placement::layer;
    case comm_group::pp:
      return comm_placement::micro_batch;
    case comm_group::dp:
    case comm_group::shard:
      if (zero >= 3) return e.op == collective::reduce_scatter ? comm_placement::layer_bwd : comm_placement::layer;
      return e.op == collective::all_gather ? comm_placement::step_end : comm_placement::grad_sync;
    case comm_group::replicate:
      return e.op == collective::all_gather ? comm_placement::step_end : comm_placement::grad_sync;
    case comm_group::embedding:
      return comm_placement::grad_sync;
  }
  return comm_placement::step_end;
}

bool overlapped(planner::comm_entry const& e) {
  return e.time.value() > 0 && e.exposed.value() < e.time.value() * 0.999;
}

std::string layout_text(planner::strategy const& s, std::int64_t gpus_per_node, std::int64_t shard_size) {
  planner::rank_layout l(s, gpus_per_node);
  bool hybrid = s.zero > 0 && shard_size > 0 && shard_size < s.dp && s.dp % shard_size == 0;
  std::string out;
  for (std::int64_t r = 0; r < l.world(); ++r) {
    auto c = l.of(r);
    out += fmt::format("rank {} node {} local {} tp {} cp {} dp {} pp {}", r, l.node_of(r), r % gpus_per_node,
                       c[axis_id(axis::tp)], c[axis_id(axis::cp)], c[axis_id(axis::dp)], c[axis_id(axis::pp)]);
    for (axis a : {axis::tp, axis::cp, axis::dp, axis::pp})
      out += fmt::format(" | {}: {}", planner::name(a), join(l.group_of(a, r)));
    if (hybrid)
      out += fmt::format(" | shard: {} | replicate: {}", join(l.shard_group_of(r, shard_size)),
                         join(l.replicate_group_of(r, shard_size)));
    out += '\n';
  }
  return out;
}

std::string train_step_cu(planner::program const& p, planner::plan const& pl) {
  auto const& s = pl.s;
  auto gpn = p.cluster.gpus_per_node;
  std::string o, c;
  auto head = [&]<class... A>(fmt::format_string<A...> f, A&&... a) {
    o += fmt::format(f, std::forward<A>(a)...);
    o += '\n';
  };
  head("// train_step.cu: one training step of plan '{}' of {}, generated by dtplan.", pl.name, p.file);
  head("// {} ranks ({} nodes x {} GPUs): tp {} cp {} dp {} pp {}, order {}, zero {}, shard {}.", s.dp * s.tp * s.cp * s.pp,
       p.cluster.nodes, gpn, s.tp, s.cp, s.dp, s.pp, planner::to_string(s.order), s.zero, planner::to_string(s.shard));
  head("// Build: cmake -S . -B build && cmake --build build. Run: mpirun -np {} build/train_step", s.dp * s.tp * s.cp * s.pp);
  head("// (see ../launch), or ./train_step --dry-run to print the rank layout without a GPU.");
  auto line = [&]<class... A>(fmt::format_string<A...> f, A&&... a) {
    c += fmt::format(f, std::forward<A>(a)...);
    c += '\n';
  };
  line("// Everything this program knows of the plan, as dtplan predicted it.");
  line("namespace plan {{");
  line("constexpr char const* k_name = {};", quoted(pl.name));
  line("constexpr char const* k_file = {};", quoted(p.file));
  line("constexpr long long k_world = {};", s.dp * s.tp * s.cp * s.pp);
  line("constexpr long long k_tp = {}, k_cp = {}, k_dp = {}, k_pp = {};", s.tp, s.cp, s.dp, s.pp);
  line("constexpr long long k_gpus_per_node = {}, k_nodes = {};", gpn, p.cluster.nodes);
  line("// Rank order, innermost axis first (0 tp, 1 cp, 2 dp, 3 pp).");
  line("constexpr int k_order[4] = {{{}, {}, {}, {}}};", axis_id(s.order[0]), axis_id(s.order[1]), axis_id(s.order[2]),
       axis_id(s.order[3]));
  line("constexpr char const* k_order_text = {};", quoted(planner::to_string(s.order)));
  line("constexpr int k_zero = {};", s.zero);
  line("constexpr long long k_shard_ranks = {};  // data-parallel ranks per ZeRO shard group", shard_ranks(s, gpn));
  line("constexpr long long k_micro_batches = {};  // per step (gradient accumulation)", pl.grad_accum);
  line("constexpr long long k_micro_batch = {}, k_seq_len = {};", s.micro_batch, p.model.seq_len);
  line("constexpr long long k_tokens = {};  // rows of each GEMM: micro_batch x seq_len / cp", s.micro_batch * p.model.seq_len / std::max<std::int64_t>(1, s.cp));
  line("constexpr long long k_virtual_stages = {};", s.virtual_stages);
  line("constexpr long long k_layers = {};", p.model.layers);
  std::string stages;
  for (std::int64_t st = 0; st < std::max<std::int64_t>(1, s.pp); ++st) {
    std::int64_t n = 0;
    for (auto r : stage_layers(p.model.layers, s.pp, s.virtual_stages, st)) n += r.last - r.first;
    stages += fmt::format("{}{}", st ? ", " : "", n);
  }
  line("constexpr long long k_stage_layers[{}] = {{{}}};  // transformer layers per pipeline stage", std::max<std::int64_t>(1, s.pp), stages);
  line("// Planned per-GPU memory of the most loaded GPU (total {} of {} usable).", planner::to_string(pl.memory.total),
       planner::to_string(pl.memory.usable));
  line("constexpr long long k_weights_bytes = {};", whole(pl.memory.weights));
  line("constexpr long long k_gradients_bytes = {};", whole(pl.memory.gradients));
  line("constexpr long long k_optimizer_bytes = {};", whole(pl.memory.optimizer));
  line("constexpr long long k_activations_bytes = {};", whole(pl.memory.activations));
  line("constexpr long long k_buffers_bytes = {};", whole(pl.memory.buffers));
  line("struct gemm_spec {{ char const* name; long long m, n, k; }};");
  auto gemms = layer_gemms(p.model, s);
  line("// One layer's forward GEMMs per GPU, row-major C[m, n] = A[m, k] B[k, n].");
  line("constexpr int k_gemm_count = {};", gemms.size());
  line("constexpr gemm_spec k_gemms[{}] = {{", gemms.size());
  for (auto const& g : gemms) line("    {{{}, {}, {}, {}}},", quoted(g.name), g.m, g.n, g.k);
  line("}};");
  auto const redo = recompute_columns(p.model, s);
  std::string cols;
  for (std::size_t i = 0; i < redo.size(); ++i) cols += fmt::format("{}{}", i ? ", " : "", redo[i]);
  line("// Columns (n) of each GEMM the backward recomputes first (checkpoint = {}).", name(s.checkpoint));
  line("constexpr long long k_recompute_n[{}] = {{{}}};", redo.size(), cols);
  line("// op: 0 all-reduce 1 reduce-scatter 2 all-gather 3 all-to-all 4 send-recv;");
  line("// group: 0 tp 1 cp 2 dp 3 pp 4 shard 5 replicate 6 embedding (first and last");
  line("// stage); placement: 0 every layer");
  line("// (forward and backward), 1 every layer's backward, 2 every micro-batch, 3 gradient");
  line("// sync, 4 after the optimizer; overlapped: on the communication stream.");
  line("struct comm_spec {{ int op, group; char const* group_name; long long bytes, count; double predicted_s, exposed_s; int placement, overlapped; char const* link; }};");
  std::vector<planner::comm_entry> comm;
  if (pl.time) comm = pl.time->comm;
  line("constexpr int k_comm_count = {};", comm.size());
  line("constexpr comm_spec k_comm[{}] = {{", std::max<std::size_t>(1, comm.size()));
  for (auto const& e : comm)
    line("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},  // {} {} over {} ranks", op_id(e.op), group_id(e.group),
         quoted(group_text[group_text_id(e.group)]), whole(e.size), e.count, real(e.time.value()),
         real(e.exposed.value()), static_cast<int>(placement_of(e, s.zero)), overlapped(e) ? 1 : 0,
         quoted(link_text(e.link)), op_text[op_id(e.op)], planner::to_string(e.size), e.ranks);
  if (comm.empty()) line("    {{0, 0, \"tp\", 0, 0, 0, 0, 4, 0, \"intra\"}},  // unused: the plan has no collective");
  line("}};");
  auto t = pl.time.value_or(planner::time_breakdown{});
  line("constexpr double k_predicted_step_s = {};", real(t.step.value()));
  line("constexpr double k_predicted_compute_s = {};  // forward + backward + recompute", real(t.compute.value() + t.recompute.value()));
  line("}}  // namespace plan");
  c.pop_back();  // the placeholder's line ends with its own newline
  return o + fill(template_text("train_step.cu"), {{"PLAN_CONSTANTS", c}});
}

std::string skeleton_cmake(planner::program const& p, planner::plan const& pl) {
  std::string o = fmt::format("# The training-step skeleton of plan '{}' of {}, generated by dtplan.\n", pl.name, p.file);
  o += template_text("skeleton.cmake");
  return o;
}

}  // namespace dtplan::codegen
