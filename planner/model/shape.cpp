#include "planner/model/shape.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "planner/model/compute.hpp"
#include "planner/model/kernels.hpp"
#include "planner/model/memory.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner {

std::int64_t strategy_shape::chunk_layers(std::int64_t c) const { return split.chunk_layers(c); }

std::int64_t strategy_shape::stage_layers(std::int64_t r) const { return split.rank_layers(r); }

layer_range strategy_shape::chunk_range(std::int64_t c) const {
  auto const first = split.first_layer(c);
  return {first, first + chunk_layers(c)};
}

std::vector<layer_range> strategy_shape::stage_ranges(std::int64_t r) const {
  std::vector<layer_range> out;
  for (std::int64_t c = r; c < chunks; c += s.pp) out.push_back(chunk_range(c));
  return out;
}

std::int64_t strategy_shape::stage_moe_layers(std::int64_t r) const {
  model const& m = prog->model;
  if (m.experts <= 1) return 0;
  if (!m.mixed_layers()) return stage_layers(r);
  // The search asks this of every candidate's stages: its chunks directly,
  // no list of them.
  std::int64_t n = 0;
  for (std::int64_t c = r; c < chunks; c += s.pp) {
    auto const range = chunk_range(c);
    n += m.moe_layers_in(range.first, range.last);
  }
  return n;
}

bool strategy_shape::ends_only() const { return split.dtplan() && !prog->model.mixed_layers(); }

stage_shape strategy_shape::stage(std::int64_t r) const {
  model const& m = prog->model;
  stage_shape st;
  st.layers = stage_layers(r);
  st.moe_layers = stage_moe_layers(r);
  st.embedding = r == 0;
  st.final_norm = r == s.pp - 1;
  // Megatron keeps a copy of a tied embedding on the last stage for the
  // logits when the two ends are on different stages.
  st.output = r == s.pp - 1 && (!m.tied_embeddings || s.pp > 1);
  st.params = layers_params(st.layers, st.moe_layers) + (st.embedding ? vocab_params : 0.0) +
              (st.output ? vocab_params : 0.0) + (st.final_norm ? final_norm_params : 0.0);
  st.expert_params = static_cast<double>(st.moe_layers) * layer_expert_params;
  if (r == s.pp - 1 && m.mtp_layers > 0) {
    // The modules read the embedding: its copy here where stage 0 holds it
    // and the output layer is not the same table.
    st.mtp_layers = m.mtp_layers;
    double const modules = static_cast<double>(m.mtp_layers);
    st.params += modules * mtp_params + (s.pp > 1 && !m.tied_embeddings ? vocab_params : 0.0);
    st.expert_params += modules * mtp_expert_params;
  }
  return st;
}

namespace {

// Whether a pipeline's first and last stage each hold a copy of the
// embedding whose gradients they sum: a tied one (the last stage's logits),
// or one that multi-token prediction reads on the last stage.
bool embedding_pair(model const& m) { return m.tied_embeddings || m.mtp_layers > 0; }

// The ranks of a stage the expert grid lays out: tp / etp x dp x cp (each
// expert slice's members, rank_layout::expert_members_of).
std::int64_t expert_ranks(strategy const& s) { return s.expert_slice_ranks() * s.dp * s.cp; }

// Whether the experts' weights sit on another grid than the dense ones: ep
// splits them, or they are whole on each tensor-parallel rank.
bool experts_apart(strategy const& s) { return s.ep > 1 || s.expert_tp() != s.tp; }

group_shape group(program const& p, group_placement const& placed) {
  group_shape g;
  g.size = placed.size;
  g.placement = placed;
  g.link = link_for(p.cluster, placed);
  g.net = nccl_group(p.cluster, p.training, placed, g.link);
  return g;
}

void fill_gemms(strategy_shape& sh, model const& m) {
  auto const tp = sh.s.tp;
  auto const h = m.hidden;
  auto const add = [&](char const* name, gemm_shape g, gemm_role role) {
    sh.gemms.at(static_cast<std::size_t>(sh.gemm_count++)) = {name, g, 0, 0, role};
  };
  if (m.mla()) {
    // Multi-latent attention as Megatron-Core lays it out (core_v0.13.0
    // transformer/multi_latent_attention.py:268-336, gpt_layer_specs.py:
    // 124-150: every projection column-parallel, o row-parallel): q down and
    // up (or straight up), keys and values down with the rotary key, up to
    // every head's key and value.
    auto const heads = m.heads;
    if (m.q_lora_rank > 0) {
      add("q-down", {sh.tokens, m.q_lora_rank / tp, h, 1}, gemm_role::attention);
      add("q-up", {sh.tokens, heads * sh.qk_head_dim / tp, m.q_lora_rank, 1}, gemm_role::attention);
    } else {
      add("q", {sh.tokens, heads * sh.qk_head_dim / tp, h, 1}, gemm_role::attention);
    }
    add("kv-down", {sh.tokens, (m.kv_lora_rank + m.qk_rope_head_dim) / tp, h, 1}, gemm_role::attention);
    add("kv-up", {sh.tokens, heads * (m.head_width() + sh.v_head_dim) / tp, m.kv_lora_rank, 1}, gemm_role::attention);
    add("o-proj", {sh.tokens, h, heads * sh.v_head_dim / tp, 1}, gemm_role::attention);
  } else {
    add("qkv", {sh.tokens, (sh.q_width + 2 * sh.kv_width) / tp, h, 1}, gemm_role::attention);
    add("o-proj", {sh.tokens, h, sh.q_width / tp, 1}, gemm_role::attention);
  }
  if (m.experts > 1) add("router", {sh.tokens, m.experts, h, 1}, gemm_role::router);
  // A shared expert: a dense MLP beside the routed ones, split over tp.
  if (auto const shared = m.experts > 1 ? m.shared_expert_ffn : 0; shared > 0) {
    add("shared-up", {sh.tokens, (m.mlp == mlp_kind::swiglu ? 2 * shared : shared) / tp, h, 1}, gemm_role::shared_expert);
    add("shared-down", {sh.tokens, h, shared / tp, 1}, gemm_role::shared_expert);
  }
  auto const mlp_tp = m.experts > 1 ? sh.s.expert_tp() : tp;  // an expert's split
  auto const width = m.mlp_width();
  auto const up = (m.mlp == mlp_kind::swiglu ? 2 * width : width) / mlp_tp;
  auto const mlp_role = m.experts > 1 ? gemm_role::experts : gemm_role::mlp;
  add("mlp-up", {sh.mlp_tokens, up, h, sh.local_experts}, mlp_role);
  add("mlp-down", {sh.mlp_tokens, h, width / mlp_tp, sh.local_experts}, mlp_role);
  switch (sh.s.checkpoint) {
    case checkpoint_mode::none:
    case checkpoint_mode::selective: break;
    case checkpoint_mode::full:
      for (int i = 0; i < sh.gemm_count; ++i) {
        auto& g = sh.gemms[static_cast<std::size_t>(i)];
        g.recompute_n = g.forward.n;
        g.recompute_batch = g.forward.batch;
      }
      break;
    case checkpoint_mode::ops: {
      // What torchtitan's policy does not keep runs again: each GEMM's
      // recomputed columns over its batch, summed over the products it
      // stands for (a fused GEMM's parts; an expert loop's share).
      auto const plan = op_checkpoint_of(m, sh.local_experts, op_wrap_of(sh.prog->training));
      sh.ops = plan;
      for (int i = 0; i < sh.gemm_count; ++i) {
        auto& g = sh.gemms[static_cast<std::size_t>(i)];
        double again = 0;  // columns x batch elements run again
        for (auto const& x : plan) {
          if (std::strcmp(x.gemm, g.name) != 0) continue;
          std::int64_t const split = x.full_width ? 1 : x.routed ? mlp_tp : tp;
          again += (1 - x.kept) * static_cast<double>(x.columns / split) * static_cast<double>(g.forward.batch);
        }
        auto const total = std::llround(again);
        if (total <= 0) continue;
        if (total % g.forward.batch == 0) {
          g.recompute_n = total / g.forward.batch;
          g.recompute_batch = g.forward.batch;
        } else {  // whole products in some of the batch's experts
          g.recompute_n = g.forward.n;
          g.recompute_batch = std::max<std::int64_t>(1, total / g.forward.n);
        }
      }
      break;
    }
  }
  sh.logits = {sh.tokens, sh.local_vocab, h, 1};
  // Multi-token prediction's projection of its two inputs, column-parallel.
  if (m.mtp_layers > 0) sh.mtp_projection = {sh.tokens, h / tp, 2 * h, 1};
}

}  // namespace

shape_groups group_sizes_of(program const& p, strategy const& s) {
  shape_groups sh;
  rank_layout const layout(s, p.cluster.gpus_per_node);
  auto sized = [](std::int64_t n) {
    group_shape g;
    g.size = g.placement.size = g.placement.max_per_node = n;
    return g;
  };
  sh.tp = sized(s.tp), sh.cp = sized(s.cp), sh.dp = sized(s.dp), sh.pp = sized(s.pp), sh.ep = sized(s.ep);
  sh.sync = sized(s.dp * s.cp);
  auto const members = expert_ranks(s);
  sh.expert_sync = experts_apart(s) && members % s.ep == 0 ? sized(members / s.ep) : sh.sync;
  sh.embedding = sized(s.pp > 1 && embedding_pair(p.model) ? 2 : 1);
  if (s.zero >= 1) {
    sh.sharding = sharding_of(s);
    auto const n = layout.shard_ranks(sh.sharding);
    sh.shard = sized(n > 0 ? n : sh.sync.size);
    sh.replicate = sized(sh.sync.size / sh.shard.size);
  } else {
    sh.replicate = sh.sync;
  }
  sh.expert_shard = sh.expert_sync;
  if (s.zero >= 1 && sh.shard.size < sh.sync.size && experts_apart(s) && sh.expert_sync.size % sh.replicate.size == 0)
    sh.expert_shard = sized(sh.expert_sync.size / sh.replicate.size);
  return sh;
}

shape_groups groups_of(program const& p, strategy const& s) {
  model const& m = p.model;
  cluster const& c = p.cluster;
  shape_groups sh;
  rank_layout const layout(s, c.gpus_per_node);
  sh.tp = group(p, layout.placement(axis::tp));
  sh.cp = group(p, layout.placement(axis::cp));
  sh.dp = group(p, layout.placement(axis::dp));
  sh.pp = group(p, layout.placement(axis::pp));
  sh.sync = group(p, layout.placement(axis::dp, axis::cp));
  if (s.zero >= 1) {
    sh.sharding = sharding_of(s);
    // A shard key that cannot be formed is illegal (the check says so); its
    // groups are never costed, so any stand-in serves.
    bool const forms = sh.sharding.k == shard_layout::kind::dp_block ? s.dp % sh.sharding.dp_block == 0
                       : sh.sharding.k == shard_layout::kind::node   ? layout.node_sync_members() != 0
                                                                     : true;
    if (!forms) sh.sharding = {};
    sh.shard = group(p, layout.shard_placement(sh.sharding));
    sh.replicate = group(p, layout.replicate_placement(sh.sharding));
  } else {
    // Nothing is sharded: every sync member holds all of it.
    sh.shard = group(p, group_placement{});
    sh.replicate = sh.sync;
  }
  // Experts: rank 0's block of ep expert members, as the skeleton lays
  // them out (rank_layout::expert_group_of).
  auto const etp = s.expert_tp();
  group_placement experts;
  if (s.ep > 1) experts = layout.placement_of(layout.expert_group_of(0, s.ep, etp));
  sh.ep = group(p, experts);
  auto const members = expert_ranks(s);
  sh.expert_sync = experts_apart(s) && members % s.ep == 0
                       ? group(p, layout.placement_of(layout.expert_data_group_of(0, s.ep, etp)))
                       : sh.sync;
  // Under hybrid sharding the experts' shard group is rank 0's expert
  // data-parallel ranks in its shard group (whole blocks of experts where
  // the check holds: ep divides the shard group's expert members).
  sh.expert_shard = sh.expert_sync;
  if (s.zero >= 1 && sh.shard.size < sh.sync.size && experts_apart(s) && members % s.ep == 0)
    sh.expert_shard = group(p, layout.placement_of(layout.expert_shard_group_of(0, s.ep, etp, sh.sharding)));
  if (s.pp > 1 && embedding_pair(m)) {
    // The first and last stage of one pipeline: apart when the pipeline's
    // stages are.
    group_placement pair;
    pair.size = 2;
    pair.nodes = sh.pp.placement.crosses_nodes() ? 2 : 1;
    pair.max_per_node = sh.pp.placement.crosses_nodes() ? 1 : 2;
    sh.embedding = group(p, pair);
  } else {
    sh.embedding = group(p, group_placement{});
  }
  return sh;
}

strategy_shape shape_of(program const& p, strategy const& s) { return shape_of(p, s, groups_of(p, s)); }

namespace {

// An expert's capacity over its even share of a rank's `router_tokens`
// routed k ways: ceil(k x T / experts x factor) / (k x T / experts); 1
// without a capacity.
double capacity_share(model const& m, double router_tokens) {
  if (m.experts <= 1 || !m.capacity_factor) return 1.0;
  double const even =
      router_tokens * static_cast<double>(std::min(m.experts_per_token, m.experts)) / static_cast<double>(m.experts);
  if (even <= 0) return 1.0;
  return std::ceil(even * *m.capacity_factor) / even;
}

}  // namespace

double routed_share(model const& m, double router_tokens) {
  if (m.experts <= 1 || !m.capacity_factor) return 1.0;
  double const share = capacity_share(m, router_tokens);
  return m.pad_to_capacity ? share : std::min(1.0, share);
}

double routing_load(model const& m, std::int64_t ep, double router_tokens) {
  if (m.experts <= 1) return 1.0;
  double const r = m.routing_imbalance;
  double const experts = static_cast<double>(m.experts);
  double const local = static_cast<double>(std::max<std::int64_t>(1, m.experts / std::max<std::int64_t>(1, ep)));
  double const busiest = (r + (local - 1) * ((experts - r) / (experts - 1))) / local;
  if (!m.capacity_factor) return busiest;
  double const share = capacity_share(m, router_tokens);
  return m.pad_to_capacity ? share : std::min(busiest, share);
}

namespace {
// C(n - a, k) / C(n, k): the chance k of n picked alike avoid a given a.
// A product where k is small (exact for any n), in logarithms otherwise.
double avoid(double n, double a, double k) {
  if (k <= 0 || a <= 0) return 1.0;
  if (k > n - a) return 0.0;
  if (k <= 4096) {
    double r = 1.0;
    for (double i = 0; i < k; ++i) r *= (n - a - i) / (n - i);
    return r;
  }
  auto const lc = [](double x, double y) { return std::lgamma(x + 1) - std::lgamma(y + 1) - std::lgamma(x - y + 1); };
  return std::exp(lc(n - a, k) - lc(n, k));
}
}  // namespace

double routing_reach(model const& m, std::int64_t blocks) {
  if (m.experts <= 1 || blocks <= 1) return 1.0;
  double const experts = static_cast<double>(m.experts);
  double const k = static_cast<double>(std::min(m.experts_per_token, m.experts));
  bool const grouped = m.router_groups > 0 && m.router_group_topk > 0 && m.experts % m.router_groups == 0;
  double const groups = grouped ? static_cast<double>(m.router_groups) : 1.0;
  double const chosen = grouped ? static_cast<double>(std::min(m.router_group_topk, m.router_groups)) : 1.0;
  double const per_group = experts / groups;
  double const picks = std::min(per_group, std::max(1.0, std::floor(k / chosen)));
  double const per_block = std::max(1.0, std::floor(experts / static_cast<double>(blocks)));
  // The first block: `whole` groups inside it, and the part `rest` of the
  // next one where a group does not end on its edge.
  double const whole = std::floor(per_block / per_group);
  double const rest = per_block - whole * per_group;
  // Missed: no whole group chosen and, of a partial one, none chosen or its
  // picks elsewhere in it. C(G - w - 1, g - 1) / C(G, g) is g / G times
  // C(G - 1 - w, g - 1) / C(G - 1, g - 1).
  double missed = avoid(groups, whole + (rest > 0 ? 1.0 : 0.0), chosen);
  if (rest > 0) missed += chosen / groups * avoid(groups - 1, whole, chosen - 1) * avoid(per_group, rest, picks);
  double const b = static_cast<double>(blocks);
  double const reach = b * (1.0 - std::clamp(missed, 0.0, 1.0));
  return std::clamp(reach, 1.0, std::min(b, k));
}

program_facts facts_of(program const& p) {
  program_facts f;
  f.params = count_params(p.model);
  f.model_flops = model_flops_per_step(p, f.params);
  return f;
}

strategy_shape shape_of(program const& p, strategy const& s, shape_groups const& groups) {
  return shape_of(p, s, groups, facts_of(p));
}

strategy_shape shape_of(program const& p, strategy const& s_in, shape_groups const& groups, program_facts const& facts) {
  model const& m = p.model;
  cluster const& c = p.cluster;
  strategy_shape sh;
  static_cast<shape_groups&>(sh) = groups;
  sh.prog = &p;
  sh.facts = facts;
  sh.s = s_in;
  auto& s = sh.s;
  if (s.tp == 1) s.sequence_parallel = false;
  sh.gpus_per_node = c.gpus_per_node;
  sh.world = s.dp * s.tp * s.pp * s.cp;
  sh.grad_accum = p.training.global_batch / (s.dp * s.micro_batch);
  sh.seq_local = m.seq_len / s.cp;
  sh.tokens = s.micro_batch * sh.seq_local;
  sh.sp_divisor = s.sequence_parallel ? s.tp : 1;

  sh.head_dim = m.head_width();
  sh.qk_head_dim = m.qk_head_width();
  sh.v_head_dim = m.v_head_width();
  sh.q_width = m.q_width();
  sh.kv_width = m.kv_width();
  sh.cp_kv_width = pytorch_ring(p.training.cp_comm_type) ? sh.q_width : sh.kv_width;
  sh.local_heads = m.heads / s.tp;
  sh.softmax_fp32 = softmax_falls_back(p, s);
  sh.active_experts = std::min(m.experts_per_token, m.experts);
  if (m.experts > 1) {
    sh.local_experts = m.experts / s.ep;
    // Each expert of a GPU sees the tokens routed to it from the ep ranks:
    // each rank's tokens, gathered over the etp ranks that split the expert
    // (with sequence parallelism a rank holds tokens / tp; without it, the
    // whole micro-batch, and etp = tp).
    // In long double: exact for any real job, and no overflow for any other.
    auto const gathered = s.sequence_parallel ? s.expert_tp() : 1;
    sh.routed_share = routed_share(m, static_cast<double>(sh.tokens) / static_cast<double>(sh.sp_divisor));
    sh.received_share = routing_load(m, s.ep, static_cast<double>(sh.tokens) / static_cast<double>(sh.sp_divisor));
    long double const rows = std::floor(static_cast<long double>(sh.tokens) * static_cast<long double>(gathered) *
                                        static_cast<long double>(sh.active_experts) * static_cast<long double>(s.ep) /
                                        (static_cast<long double>(sh.sp_divisor) * static_cast<long double>(m.experts)) *
                                        static_cast<long double>(sh.received_share));
    sh.mlp_tokens = rows >= 0x1p62L ? std::int64_t{1} << 62 : std::max<std::int64_t>(1, static_cast<std::int64_t>(rows));
  } else {
    sh.mlp_tokens = sh.tokens;
  }
  sh.padded_vocab = padded_vocab(m.vocab, s.tp);
  sh.local_vocab = sh.padded_vocab / s.tp;
  auto const& counts = facts.params;
  sh.final_norm_params = static_cast<double>(counts.final_norm);
  auto const mlp_split = static_cast<double>(m.experts > 1 ? s.expert_tp() * s.ep : s.tp);
  sh.layer_params = static_cast<double>(counts.attention + counts.shared) / static_cast<double>(s.tp) +
                    static_cast<double>(counts.mlp) / mlp_split + static_cast<double>(counts.norms + counts.router);
  if (m.experts > 1) sh.layer_expert_params = static_cast<double>(counts.mlp) / mlp_split;
  sh.dense_layer_params = m.experts > 1 ? static_cast<double>(counts.attention + counts.dense_mlp) /
                                                  static_cast<double>(s.tp) +
                                              static_cast<double>(counts.norms)
                                        : sh.layer_params;
  sh.vocab_params = static_cast<double>(sh.padded_vocab) * static_cast<double>(m.hidden) / static_cast<double>(s.tp);
  if (m.mtp_layers > 0) {
    bool const moe = m.mtp_moe();
    sh.mtp_params = (moe ? sh.layer_params : sh.dense_layer_params) +
                    2.0 * static_cast<double>(m.hidden) * static_cast<double>(m.hidden) / static_cast<double>(s.tp) +
                    3.0 * sh.final_norm_params;
    sh.mtp_expert_params = moe ? sh.layer_expert_params : 0.0;
  }
  fill_gemms(sh, m);

  sh.chunks = s.pp * s.virtual_stages;
  sh.split = split_of(m, p.training, p.framework.limits, s);
  // The fullest stage (of those, the most mixtures: the costed one) and the
  // heaviest; where only the ends can be either, the search's many shapes
  // read them without a pass over the stages.
  bool const ends_only = sh.ends_only();
  double most = -1;
  for (std::int64_t r = 0; r < s.pp; r = ends_only && r < s.pp - 1 ? s.pp - 1 : r + 1) {
    auto const st = sh.stage(r);
    if (st.layers > sh.max_stage_layers || (st.layers == sh.max_stage_layers && st.moe_layers > sh.costed_moe_layers))
      sh.max_stage_layers = st.layers, sh.costed_moe_layers = st.moe_layers;
    if (st.params > most) most = st.params, sh.heaviest_stage = r;
  }
  return sh;
}

}  // namespace dtplan::planner
