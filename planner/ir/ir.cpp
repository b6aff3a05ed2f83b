#include "planner/ir/ir.hpp"

#include "planner/ir/keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace dtplan::planner {

char const* name(precision p) {
  switch (p) {
    case precision::bf16: return "bf16";
    case precision::fp16: return "fp16";
    case precision::fp32: return "fp32";
    case precision::fp8: return "fp8";
    case precision::fp4: return "fp4";
  }
  return "?";
}
char const* name(mlp_kind m) { return m == mlp_kind::gelu ? "gelu" : "swiglu"; }
char const* name(norm_kind n) { return n == norm_kind::layernorm ? "layernorm" : "rmsnorm"; }
char const* name(position_kind p) {
  switch (p) {
    case position_kind::learned: return "learned";
    case position_kind::rotary: return "rotary";
    case position_kind::alibi: return "alibi";
  }
  return "";
}
char const* name(attention_kind a) { return a == attention_kind::flash ? "flash" : "standard"; }
char const* name(optimizer_kind o) {
  switch (o) {
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adamw: return "adamw";
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::sgd_momentum: return "sgd_momentum";
  }
  return "?";
}
char const* name(checkpoint_mode c) {
  switch (c) {
    case checkpoint_mode::none: return "none";
    case checkpoint_mode::selective: return "selective";
    case checkpoint_mode::full: return "full";
    case checkpoint_mode::ops: return "ops";
  }
  return "?";
}
char const* name(recompute_module r) {
  switch (r) {
    case recompute_module::core_attn: return "core_attn";
    case recompute_module::moe_act: return "moe_act";
    case recompute_module::layernorm: return "layernorm";
    case recompute_module::mla_up_proj: return "mla_up_proj";
    case recompute_module::mlp: return "mlp";
    case recompute_module::moe: return "moe";
  }
  return "?";
}
char const* name(cross_entropy_kind c) {
  switch (c) {
    case cross_entropy_kind::fused: return "fused";
    case cross_entropy_kind::unfused: return "unfused";
  }
  return "?";
}
std::int64_t stage_size(std::int64_t layers, std::int64_t chunks) { return (layers + chunks - 1) / chunks; }
std::int64_t layers_of_chunk(std::int64_t layers, std::int64_t chunks, std::int64_t c) {
  return layers / chunks + (c < layers % chunks ? 1 : 0);
}
std::int64_t first_layer_of_chunk(std::int64_t layers, std::int64_t chunks, std::int64_t c) {
  // The chunks before it, and one more layer for each of them among the first layers % chunks.
  return c * (layers / chunks) + std::min(c, layers % chunks);
}
std::int64_t layers_of_rank(std::int64_t layers, std::int64_t pp, std::int64_t vpp, std::int64_t r) {
  // Each of its vpp chunks has layers / chunks, and those among the first
  // layers % chunks one more.
  auto const chunks = pp * vpp;
  auto const rest = layers % chunks;
  auto const longer = rest > r ? std::min(vpp, (rest - r + pp - 1) / pp) : 0;
  return vpp * (layers / chunks) + longer;
}

std::int64_t layer_split::middle_rank_layers() const {
  std::int64_t const middle = middle_ranks();
  // None where the ends take more than the model (refusal() says so), and
  // no sum that could wrap.
  if (middle <= 0 || first > layers || last > layers - first) return 0;
  return (layers - first - last) / middle;
}

std::int64_t layer_split::of_rank(std::int64_t r) const {
  if (r == 0 && first > 0) return first;
  if (r == pp - 1 && last > 0) return last;
  return middle_rank_layers();
}

std::int64_t layer_split::chunk_layers(std::int64_t c) const {
  if (ends()) return of_rank(c % pp) / vpp;
  if (accounted())
    return layers_of_chunk(slots(), chunks(), c) - (embedding && c == 0 ? 1 : 0) -
           (loss && c == chunks() - 1 ? 1 : 0);
  return layers_of_chunk(layers, chunks(), c);
}

std::int64_t layer_split::first_layer(std::int64_t c) const {
  if (ends()) {
    // Whole rounds of every rank's chunk before it, then the ranks before
    // it in its round (never the last rank).
    auto const r = c % pp;
    std::int64_t round = 0;
    for (std::int64_t k = 0; k < pp; ++k) round += of_rank(k) / vpp;
    std::int64_t before = r > 0 ? of_rank(0) / vpp + (r - 1) * (middle_rank_layers() / vpp) : 0;
    return c / pp * round + before;
  }
  if (accounted()) return first_layer_of_chunk(slots(), chunks(), c) - (embedding && c > 0 ? 1 : 0);
  return first_layer_of_chunk(layers, chunks(), c);
}

std::int64_t layer_split::rank_layers(std::int64_t r) const {
  if (ends()) return of_rank(r);
  if (accounted()) {
    std::int64_t n = 0;
    for (std::int64_t c = r; c < chunks(); c += pp) n += chunk_layers(c);
    return n;
  }
  return layers_of_rank(layers, pp, vpp, r);
}

bool layer_split::places_as_dtplan() const {
  if (chunks() > layers) return false;  // no split of the layers at all
  for (std::int64_t c = 0; c < chunks(); ++c)
    if (chunk_layers(c) != layers_of_chunk(layers, chunks(), c)) return false;
  return true;
}

std::int64_t layer_split::end_layers() const {
  // Summed without overflow: a plan or job can write 2^63 - 1 for each.
  std::int64_t placed = 0;
  if (__builtin_add_overflow(first, last, &placed)) placed = std::numeric_limits<std::int64_t>::max();
  return placed;
}

layer_split::fault layer_split::fault_of() const {
  if (dtplan()) return fault::none;
  if (ends()) {
    // TransformerConfig's checks (core_v0.13.0 transformer_config.py:
    // 924-989), and the layers it would build (transformer_block.py:82-130).
    if (first > 0 && first % vpp != 0) return fault::first_vpp;
    if (last > 0 && last % vpp != 0) return fault::last_vpp;
    auto const placed = end_layers();
    std::int64_t const middle = middle_ranks();
    if (placed > layers || (middle == 0 && placed != layers)) return fault::ends_placed;
    auto const rest = layers - placed;
    if (middle == 1 && rest % vpp != 0) return fault::middle_vpp;
    if (middle > 1 && (rest % middle != 0 || (rest / middle) % vpp != 0)) return fault::middle_uneven;
    if (middle > 0 && rest / middle / vpp == 0) return fault::middle_empty;
    return fault::none;
  }
  // The even split of the layers and the counted embedding and loss
  // (arguments.py:521-562; transformer_block.py:152-191), or torchtitan's,
  // which gives the first chunks the rest (pipeline_parallel.py:262-330);
  // no chunk of the embedding or the loss alone.
  if (!rest_first && slots() % chunks() != 0) return fault::chunks_divide;
  if (embedding && chunk_layers(0) <= 0) return fault::embedding_alone;
  if (loss && chunk_layers(chunks() - 1) <= 0) return fault::loss_alone;
  return fault::none;
}

std::string layer_split::refusal() const {
  auto const placed = end_layers();
  auto const middle = middle_ranks();
  auto const rest = layers - std::min(placed, layers);
  switch (fault_of()) {
    case fault::none: return {};
    case fault::first_vpp:
      return fmt::format("the first stage's {} layers do not divide over its {} virtual stages", first, vpp);
    case fault::last_vpp:
      return fmt::format("the last stage's {} layers do not divide over its {} virtual stages", last, vpp);
    case fault::ends_placed:
      return fmt::format("the first and last stages' {} layers are {} the model's {}", placed,
                         placed > layers ? "more than" : "not", layers);
    case fault::middle_vpp:
      return fmt::format("the {} layers left for the middle stage do not divide over its {} virtual stages", rest,
                         vpp);
    case fault::middle_uneven:
      return fmt::format("the {} layers left for the {} middle stages do not split evenly over them{}", rest, middle,
                         vpp > 1 ? " and their virtual stages" : "");
    case fault::middle_empty:
      return middle == 1 ? std::string("the middle stage would hold no layer")
                         : fmt::format("the {} middle stages would hold no layer", middle);
    case fault::chunks_divide:
      return fmt::format("{} layers and the {} counted as {} do not divide over {} pipeline chunks", layers,
                         embedding && loss ? "embedding and the loss" : embedding ? "embedding" : "loss",
                         embedding && loss ? "two more" : "one more", chunks());
    case fault::embedding_alone: return "the first chunk would hold the embedding alone";
    case fault::loss_alone: return "the last chunk would hold the loss alone";
  }
  return {};
}

layer_split split_of(model const& m, training const& t, framework_limits const& lim, strategy const& s) {
  layer_split out;
  out.layers = m.layers;
  out.pp = std::max<std::int64_t>(1, s.pp);
  out.vpp = std::max<std::int64_t>(1, s.virtual_stages);
  out.first = t.first_stage_layers.value_or(0);
  out.last = t.last_stage_layers.value_or(0);
  out.embedding = t.embedding_in_split;
  out.loss = t.loss_in_split;
  out.rest_first = lim.embedding_loss_in_split == counted_split_rule::uneven;
  return out;
}

std::string layer_counts_text(std::vector<std::int64_t> const& per, char const* what) {
  std::string out;
  std::size_t i = 0;
  while (i < per.size()) {
    std::size_t j = i;
    while (j + 1 < per.size() && per[j + 1] == per[i]) ++j;
    if (!out.empty()) out += ", ";
    out += i == j ? fmt::format("{} on {} {}", per[i], what, i) : fmt::format("{} on {}s {}-{}", per[i], what, i, j);
    i = j + 1;
  }
  return out;
}

bool has_split(framework_limits const& lim, layer_split const& split) {
  if (split.dtplan()) return true;
  return split.ends() ? lim.first_last_stage_layers : lim.embedding_loss_in_split != counted_split_rule::none;
}

bool runs_split(framework_limits const& lim, layer_split const& split) {
  return has_split(lim, split) || split.places_as_dtplan();
}

std::string split_keys(training const& t) {
  std::vector<std::string> keys;
  if (t.first_stage_layers)
    keys.push_back(fmt::format("num_layers_in_first_pipeline_stage = {}", *t.first_stage_layers));
  if (t.last_stage_layers)
    keys.push_back(fmt::format("num_layers_in_last_pipeline_stage = {}", *t.last_stage_layers));
  if (keys.empty()) {
    if (t.embedding_in_split) keys.emplace_back("account_for_embedding_in_pipeline_split");
    if (t.loss_in_split) keys.emplace_back("account_for_loss_in_pipeline_split");
  }
  return fmt::format("{}", fmt::join(keys, ", "));
}

bool splits_layers(framework_limits const& lim, std::int64_t layers, std::int64_t chunks) {
  if (layers % chunks == 0) return true;
  switch (lim.pipeline_split) {
    case pipeline_split_rule::uneven: return true;
    case pipeline_split_rule::even: return false;
    case pipeline_split_rule::stage_size: {
      auto const per = stage_size(layers, chunks);
      return stage_size(layers, per) == chunks;
    }
  }
  return true;
}

bool zero0_beside_model_parallel(strategy const& s) {
  return s.zero == 0 && (s.cp > 1 || (s.dp > 1 && (s.tp > 1 || s.pp > 1)));
}

std::optional<grid_refusal> expert_grid_refusal(framework_limits const& lim, model const& m, strategy const& s) {
  if (m.experts <= 1 || lim.expert_grid != expert_grid_rule::dp2ep) return std::nullopt;
  auto const etp = s.expert_tp();
  if (etp == 1 && s.tp > 1 && s.ep == 1)
    return grid_refusal{"etp", fmt::format("keeps experts whole on a rank (etp = 1) only with ep > 1; with ep = 1 it "
                                           "splits them over tp = {}",
                                           s.tp)};
  if (s.ep > 1 && etp == s.tp && s.ep % s.cp != 0)
    return grid_refusal{"ep", fmt::format("forms its expert-parallel group from whole context-parallel groups: ep = {} "
                                          "is not a multiple of cp = {}",
                                          s.ep, s.cp)};
  if (s.ep > 1 && etp == 1 && s.ep % (s.tp * s.cp) != 0)
    return grid_refusal{"ep", fmt::format("forms its expert-parallel group from whole tp x cp blocks with etp = 1: ep "
                                          "= {} is not a multiple of tp x cp = {}",
                                          s.ep, s.tp * s.cp)};
  return std::nullopt;
}

void use_dispatcher(training& t, dispatcher_kind d) {
  t.moe_token_dispatcher = d;
  if (d == dispatcher_kind::flex && !t.keys.count("shared_expert_overlap")) t.shared_expert_overlap = false;
}

char const* name(dispatcher_kind d) {
  switch (d) {
    case dispatcher_kind::alltoall: return "alltoall";
    case dispatcher_kind::allgather: return "allgather";
    case dispatcher_kind::flex: return "flex";
  }
  return "?";
}
char const* name(cp_comm_kind c) {
  switch (c) {
    case cp_comm_kind::p2p: return "p2p";
    case cp_comm_kind::allgather: return "allgather";
    case cp_comm_kind::alltoall: return "alltoall";
  }
  return "?";
}

char const* name(transformer_impl_kind k) {
  switch (k) {
    case transformer_impl_kind::transformer_engine: return "transformer_engine";
    case transformer_impl_kind::local: return "local";
  }
  return "?";
}

int recompute_rank(checkpoint_mode c) {
  auto const at = std::find(checkpoint_modes.begin(), checkpoint_modes.end(), c);
  return static_cast<int>(at - checkpoint_modes.begin());
}
char const* name(axis a) {
  switch (a) {
    case axis::tp: return "tp";
    case axis::cp: return "cp";
    case axis::dp: return "dp";
    case axis::pp: return "pp";
  }
  return "?";
}

char const* name(gpu_generation g) {
  switch (g) {
    case gpu_generation::volta: return "volta";
    case gpu_generation::ampere: return "ampere";
    case gpu_generation::hopper: return "hopper";
    case gpu_generation::blackwell: return "blackwell";
    case gpu_generation::cdna3: return "cdna3";
  }
  return "?";
}
char const* name(attention_backend a) {
  switch (a) {
    case attention_backend::flash: return "flash";
    case attention_backend::flash3: return "flash3";
    case attention_backend::fused: return "fused";
    case attention_backend::triton: return "triton";
    case attention_backend::unfused: return "unfused";
    case attention_backend::automatic: return "auto";
    case attention_backend::flex: return "flex";
  }
  return "?";
}

attention_backend resolved_attention(gpu_generation g) {
  switch (g) {
    case gpu_generation::hopper:
    case gpu_generation::blackwell: return attention_backend::fused;
    case gpu_generation::volta: return attention_backend::unfused;
    case gpu_generation::ampere:
    case gpu_generation::cdna3: return attention_backend::flash;
  }
  return attention_backend::flash;
}
char const* name(grad_sync_mode g) { return g == grad_sync_mode::per_step ? "per_step" : "per_micro_batch"; }
char const* name(bucket_rule b) { return b == bucket_rule::fixed ? "fixed" : "scaled"; }

std::string to_string(shard_group const& s) {
  switch (s.k) {
    case shard_group::kind::all: return "all";
    case shard_group::kind::node: return "node";
    case shard_group::kind::size: return fmt::format("{}", s.size);
  }
  return "?";
}

std::string to_string(rank_order const& o) {
  return fmt::format("{}-{}-{}-{}", name(o[0]), name(o[1]), name(o[2]), name(o[3]));
}

std::optional<size_limit> beyond_limits(cluster const& c, std::string const& called) {
  if (c.gpus_per_node > max_gpus_per_node)
    return size_limit{"gpus_per_node", fmt::format("gpus_per_node = {}: dtplan plans nodes of at most {} GPUs",
                                                   c.gpus_per_node, grouped(max_gpus_per_node))};
  if (c.gpus_per_node > 0 && c.nodes > max_gpus / c.gpus_per_node)
    return size_limit{nullptr, fmt::format("{} has {} nodes of {} GPUs; dtplan plans clusters of at most {} GPUs",
                                           called, c.nodes, c.gpus_per_node, grouped(max_gpus))};
  return std::nullopt;
}

std::optional<size_limit> beyond_limits(model const& m, gpu const& g) {
  if (m.prec == precision::fp4 && g.peak_flops_fp4.value() <= 0)
    return size_limit{"precision", fmt::format("precision = fp4 needs a GPU with fp4 tensor cores; gpu '{}' has none "
                                               "(it sets no peak_flops_fp4)",
                                               g.name)};
  return std::nullopt;
}

std::optional<size_limit> beyond_limits(model const& m, training const& t) {
  if (m.seq_len > 0 && t.global_batch > INT64_MAX / m.seq_len)
    return size_limit{"global_batch",
                      fmt::format("global_batch = {} sequences of {} tokens: more tokens per step than fit in 64 bits",
                                  t.global_batch, m.seq_len)};
  // Each module recomputed must exist in the model, as Megatron-Core
  // asserts (core_v0.13.0 transformer_config.py:813-836).
  if (t.recomputes(recompute_module::moe_act) && m.experts <= 1)
    return size_limit{"recompute_modules", fmt::format("recompute_modules has moe_act, a mixture's expert activation, "
                                                       "but model '{}' has no experts",
                                                       m.name)};
  if (t.recomputes(recompute_module::moe) && m.experts <= 1)
    return size_limit{"recompute_modules", fmt::format("recompute_modules has moe, a mixture's whole MLP, but model "
                                                       "'{}' has no experts",
                                                       m.name)};
  if (t.recomputes(recompute_module::moe_act) && !t.grouped_gemm)
    return size_limit{"recompute_modules", "recompute_modules has moe_act, which Megatron-Core runs with grouped "
                                           "experts only (grouped_gemm = true)"};
  if (t.recomputes(recompute_module::mla_up_proj) && !m.mla())
    return size_limit{"recompute_modules", fmt::format("recompute_modules has mla_up_proj, but model '{}' has no "
                                                       "multi-latent attention (kv_lora_rank)",
                                                       m.name)};
  if (t.recomputes(recompute_module::mlp) && m.experts > 1 && !m.mixed_layers())
    return size_limit{"recompute_modules", fmt::format("recompute_modules has mlp, a dense MLP, but every layer of "
                                                       "model '{}' is a mixture of experts",
                                                       m.name)};
  return std::nullopt;
}

void use_gpu_defaults(cluster& c) {
  if (!c.keys.count("intra_node")) c.intra_node = c.device.intra_node;
  if (!c.keys.count("intra_latency")) c.intra_latency = c.device.intra_latency;
  if (!c.keys.count("inter_latency")) c.inter_latency = c.device.inter_latency;
  if (!c.keys.count("comm_efficiency")) c.comm_efficiency = c.device.comm_efficiency;
  if (!c.keys.count("network_efficiency")) c.network_efficiency = c.device.network_efficiency;
}

namespace {

// A gradient is 16-bit or fp32 (the keys' choices; fp8 models keep bf16 ones).
double gradient_bytes(precision p) { return p == precision::fp32 ? 4 : 2; }

}  // namespace

double grad_element_bytes(model const& m, training const& t) {
  return gradient_bytes(t.grad_precision.value_or(m.prec));
}

double grad_comm_bytes(model const& m, training const& t) {
  return t.grad_comm_precision ? gradient_bytes(*t.grad_comm_precision) : grad_element_bytes(m, t);
}

double tied_grad_bytes(model const& m, training const& t) {
  return t.tied_hp_grad && m.prec == precision::bf16 ? 4 : grad_element_bytes(m, t);
}

bool strategy_spec::is_free() const {
  for (auto const& k : keys_of(block_kind::strategy))
    if (auto const* a = std::get_if<strategy_access>(&k.field); a && a->read && a->read(*this).is_free()) return true;
  return false;
}

strategy strategy_spec::fixed() const {
  strategy s;
  std::vector<key_info const*> derived;
  for (auto const& k : keys_of(block_kind::strategy)) {
    auto const* a = std::get_if<strategy_access>(&k.field);
    if (!a || !a->fix) continue;
    if (a->read(*this).f == choice_form::form::single) {
      auto written = a->load(*this);
      if (!written.values.empty()) {
        a->fix(s, written.values.front());
        continue;
      }
    }
    if (k.derived)
      derived.push_back(&k);  // after the keys it is derived from
    else if (k.default_value)
      a->fix(s, *k.default_value);
  }
  for (auto const* k : derived) std::get<strategy_access>(k->field).fix(s, k->derived(s));
  return s;
}

span strategy_spec::key_span(std::string_view key) const {
  auto const* k = find_key(block_kind::strategy, key);
  auto const* a = k ? std::get_if<strategy_access>(&k->field) : nullptr;
  if (!a || !a->read) return where;
  auto const& c = a->read(*this);
  return c.key.valid() ? c.key : where;
}

}  // namespace dtplan::planner
