#include "planner/lower/complete.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <tuple>

#include "planner/ir/keys.hpp"
#include "planner/model/params.hpp"

namespace dtplan::planner {

std::vector<block_problem> missing_keys(block_kind k, key_spans const& present, std::string const& called) {
  std::vector<std::string> absent;
  for (auto const& key : keys_of(k))
    if (key.required && !present.count(key.name)) absent.emplace_back(key.name);
  if (absent.empty()) return {};
  auto list = quoted_alternatives(absent);
  // "'a', 'b' or 'c'" reads as a choice; these are all required.
  if (auto pos = list.rfind(" or "); pos != std::string::npos) list.replace(pos, 4, " and ");
  return {{fmt::format("{} is missing required key{} {}", called, absent.size() > 1 ? "s" : "", list), {}, {}}};
}

std::vector<block_problem> complete(model& m, std::string const& called) {
  if (auto absent = missing_keys(block_kind::model, m.keys, called); !absent.empty()) return absent;
  if (!m.keys.count("kv_heads")) m.kv_heads = m.heads;
  if (!m.keys.count("norm")) m.norm = implied_norm(m.mlp);
  if (!m.keys.count("position_embedding")) m.position = implied_position(m.mlp);
  if (!m.keys.count("ffn")) {
    if (m.hidden > INT64_MAX / 4)
      return {{fmt::format("'hidden' = {} is too large to derive 'ffn' = 4 x hidden", m.hidden), "hidden", "hidden"}};
    m.ffn = 4 * m.hidden;
  }
  std::vector<block_problem> problems;
  if (m.hidden % m.heads != 0 && !m.keys.count("head_dim"))
    problems.push_back(
        {fmt::format("'hidden' ({}) must be a multiple of 'heads' ({}) unless 'head_dim' gives each head's width",
                     m.hidden, m.heads),
         "heads", "hidden"});
  if (m.heads % m.kv_heads != 0)
    problems.push_back(
        {fmt::format("'heads' ({}) must be a multiple of 'kv_heads' ({})", m.heads, m.kv_heads), "kv_heads", "heads"});
  if (m.keys.count("expert_ffn") && m.experts <= 1)
    problems.push_back({fmt::format("'expert_ffn' ({}) needs a mixture of experts, but 'experts' is {}", m.expert_ffn,
                                    m.experts),
                        "expert_ffn", "experts"});
  if (m.keys.count("shared_expert_ffn") && m.shared_expert_ffn > 0 && m.experts <= 1)
    problems.push_back({fmt::format("'shared_expert_ffn' ({}) needs a mixture of experts, but 'experts' is {}",
                                    m.shared_expert_ffn, m.experts),
                        "shared_expert_ffn", "experts"});
  if (m.keys.count("capacity_factor") && m.experts <= 1)
    problems.push_back({fmt::format("'capacity_factor' ({:g}) needs a mixture of experts, but 'experts' is {}",
                                    *m.capacity_factor, m.experts),
                        "capacity_factor", "experts"});
  if (m.pad_to_capacity && !m.capacity_factor)
    problems.push_back({"'pad_to_capacity' pads each expert's input to its capacity, but 'capacity_factor' is not set",
                        "pad_to_capacity", "capacity_factor"});
  if (m.keys.count("routing_imbalance") && m.routing_imbalance != 1.0) {
    // An expert takes each token at most once: k x T / experts is the mean,
    // T the most.
    double const most =
        static_cast<double>(m.experts) / static_cast<double>(std::max<std::int64_t>(1, m.experts_per_token));
    if (m.experts <= 1)
      problems.push_back({fmt::format("'routing_imbalance' ({:g}) needs a mixture of experts, but 'experts' is {}",
                                      m.routing_imbalance, m.experts),
                          "routing_imbalance", "experts"});
    else if (m.experts_per_token <= m.experts && m.routing_imbalance > most)
      problems.push_back({fmt::format("'routing_imbalance' ({:g}) cannot exceed experts / experts_per_token ({:g}): an "
                                      "expert takes each token at most once",
                                      m.routing_imbalance, most),
                          "routing_imbalance", "experts_per_token"});
  }
  // Megatron-Core's assertions on group-limited routing (core_v0.13.0
  // transformer/transformer_config.py:1143-1161): groups where a group
  // count is chosen, dividing the experts, at least as many as chosen.
  if (m.router_groups > 0 || m.router_group_topk > 0) {
    if (m.experts <= 1)
      problems.push_back({fmt::format("'{}' needs a mixture of experts, but 'experts' is {}",
                                      m.router_groups > 0 ? "router_groups" : "router_group_topk", m.experts),
                          m.router_groups > 0 ? "router_groups" : "router_group_topk", "experts"});
    else if (m.router_group_topk == 0)
      problems.push_back({fmt::format("'router_groups' ({}) needs 'router_group_topk', the groups each token's "
                                      "experts come from",
                                      m.router_groups),
                          "router_groups", "router_groups"});
    else if (m.router_groups == 0)
      problems.push_back({fmt::format("'router_group_topk' ({}) needs 'router_groups', the groups the experts are "
                                      "in",
                                      m.router_group_topk),
                          "router_group_topk", "router_group_topk"});
    else if (m.experts % m.router_groups != 0)
      problems.push_back({fmt::format("'router_groups' ({}) must divide 'experts' ({})", m.router_groups, m.experts),
                          "router_groups", "experts"});
    else if (m.router_group_topk > m.router_groups)
      problems.push_back({fmt::format("'router_group_topk' ({}) cannot exceed 'router_groups' ({})",
                                      m.router_group_topk, m.router_groups),
                          "router_group_topk", "router_groups"});
    else if (m.router_group_topk > std::min(m.experts_per_token, m.experts))
      problems.push_back({fmt::format("'router_group_topk' ({}) cannot exceed 'experts_per_token' ({}): each chosen "
                                      "group gives experts_per_token / router_group_topk of a token's experts",
                                      m.router_group_topk, m.experts_per_token),
                          "router_group_topk", "experts_per_token"});
  }
  for (auto [key, value, plain] : {std::tuple{"dense_layers", m.dense_layers, std::int64_t{0}},
                                   std::tuple{"moe_layer_freq", m.moe_layer_freq, std::int64_t{1}}})
    if (m.keys.count(key) && value != plain && m.experts <= 1)
      problems.push_back({fmt::format("'{}' ({}) needs a mixture of experts, but 'experts' is {}", key, value,
                                      m.experts),
                          key, "experts"});
  if (m.experts > 1 && m.dense_layers >= m.layers && m.layers > 0)
    problems.push_back({fmt::format("'dense_layers' ({}) leaves none of the {} layers a mixture of experts",
                                    m.dense_layers, m.layers),
                        "dense_layers", "layers"});
  // Multi-latent attention's keys need it; it has no grouped keys and
  // normalises its compressed queries and keys itself.
  if (!m.mla())
    for (auto [key, value] : {std::pair{"q_lora_rank", m.q_lora_rank}, std::pair{"qk_rope_head_dim", m.qk_rope_head_dim},
                              std::pair{"v_head_dim", m.v_head_dim}})
      if (m.keys.count(key) && value != 0)
        problems.push_back({fmt::format("'{}' ({}) is a multi-latent attention's, but 'kv_lora_rank' is not set", key,
                                        value),
                            key, key});
  if (m.mla() && m.keys.count("kv_heads") && m.kv_heads != m.heads)
    problems.push_back({fmt::format("multi-latent attention projects keys and values up for every head: 'kv_heads' "
                                    "({}) must be 'heads' ({}) or unwritten",
                                    m.kv_heads, m.heads),
                        "kv_heads", "kv_lora_rank"});
  if (m.mla() && m.qk_norm)
    problems.push_back({"multi-latent attention normalises its compressed queries and keys itself: 'qk_norm' "
                        "does not apply",
                        "qk_norm", "kv_lora_rank"});
  // Megatron-Core, the one implementation, asserts rotary or no position
  // embeddings with multi-token prediction (core_v0.13.0 megatron/training/
  // arguments.py:1073-1079).
  if (m.mtp_layers > 0 && m.position != position_kind::rotary)
    problems.push_back({fmt::format("'mtp_layers' ({}): Megatron-LM runs multi-token prediction with rotary position "
                                    "embeddings, not {}",
                                    m.mtp_layers, name(m.position)),
                        "mtp_layers", "position_embedding"});
  if (m.experts_per_token > m.experts)
    problems.push_back({fmt::format("'experts_per_token' ({}) cannot exceed 'experts' ({})", m.experts_per_token,
                                    m.experts),
                        "experts_per_token", "experts"});
  if (problems.empty())
    if (auto limit = beyond_limits(m, called)) problems.push_back({limit->message, {}, {}});
  return problems;
}

std::vector<block_problem> complete(gpu& g, std::string const& called) {
  if (auto absent = missing_keys(block_kind::gpu, g.keys, called); !absent.empty()) return absent;
  if (!g.keys.count("peak_flops_fp8")) g.peak_flops_fp8 = g.peak_flops;
  // tf32 runs at half the 16-bit tensor rate on A100, H100, H200 and B200.
  if (!g.keys.count("peak_flops_fp32")) g.peak_flops_fp32 = g.peak_flops / 2;
  if (g.reserved >= g.memory)
    return {{fmt::format("'reserved' ({}) leaves nothing of 'memory' ({}) for the job", to_string(g.reserved),
                         to_string(g.memory)),
             "reserved", "memory"}};
  return {};
}

std::vector<block_problem> complete(cluster& c, std::string const& called) {
  if (auto absent = missing_keys(block_kind::cluster, c.keys, called); !absent.empty()) return absent;
  if (auto limit = beyond_limits(c, called)) {
    std::string_view key = limit->key ? std::string_view(limit->key) : std::string_view();
    return {{limit->message, key, key}};
  }
  use_gpu_defaults(c);
  if (c.nodes > 1 && !c.keys.count("inter_node"))
    return {{fmt::format("{} has {} nodes but no 'inter_node' bandwidth (e.g. 'inter_node = 8 x 400 Gbit/s')",
                         called, c.nodes),
             {}, {}}};
  return {};
}

std::vector<block_problem> complete(training& t, std::string const& called) {
  auto problems = missing_keys(block_kind::training, t.keys, called);
  // Megatron-Core builds one split or the other (core_v0.13.0 megatron/
  // core/transformer/transformer_block.py:82-88 asserts).
  for (auto [ends, set] : {std::pair{"num_layers_in_first_pipeline_stage", t.first_stage_layers.has_value()},
                           std::pair{"num_layers_in_last_pipeline_stage", t.last_stage_layers.has_value()}})
    for (auto [counted, on] : {std::pair{"account_for_embedding_in_pipeline_split", t.embedding_in_split},
                               std::pair{"account_for_loss_in_pipeline_split", t.loss_in_split}})
      if (set && on && problems.empty())
        problems.push_back({fmt::format("'{}' and '{}' are both set: Megatron-Core splits the pipeline by one or the "
                                        "other",
                                        ends, counted),
                            counted, ends});
  return problems;
}

std::vector<block_problem> complete(framework& f, std::string const& called) {
  return missing_keys(block_kind::framework, f.keys, called);
}

void use_framework(training& t, framework const& f) {
  t.framework = f.name;
  for (auto const& k : keys_of(block_kind::training)) {
    if (!k.behaviour || t.keys.count(k.name)) continue;
    if (auto v = load(k, f.behaviours)) store(k, t, *v);
  }
  use_dispatcher(t, t.moe_token_dispatcher);  // what the dispatcher brings with it
}

void resolve_auto(training& t, gpu const& g) {
  if (t.attention_kernel == attention_backend::automatic) t.attention_kernel = resolved_attention(g.generation);
}

}  // namespace dtplan::planner
