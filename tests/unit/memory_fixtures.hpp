#pragma once
#include <string>

#include "planner/ir/ir.hpp"

/// In-memory models, GPUs and clusters for the params, memory and check
/// tests, independent of the parser and the catalog.
namespace dtplan::test {

inline planner::model decoder(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                              std::int64_t kv_heads, std::int64_t ffn, planner::mlp_kind mlp, std::int64_t vocab,
                              std::int64_t seq_len = 4096) {
  planner::model m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.mlp = mlp;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

/// `m` on the standard (unfused) attention path at this width, heads (as
/// many key-value heads), MLP width and sequence.
inline void standard_attention(planner::model& m, std::int64_t hidden, std::int64_t heads, std::int64_t ffn,
                               std::int64_t seq_len) {
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn = ffn;
  m.seq_len = seq_len;
  m.attention = planner::attention_kind::standard;
}

inline planner::model llama2_7b() {
  return decoder("llama2_7b", 32, 4096, 32, 32, 11008, planner::mlp_kind::swiglu, 32000);
}
inline planner::model llama3_8b() {
  return decoder("llama3_8b", 32, 4096, 32, 8, 14336, planner::mlp_kind::swiglu, 128256, 8192);
}
inline planner::model llama3_70b() {
  return decoder("llama3_70b", 80, 8192, 64, 8, 28672, planner::mlp_kind::swiglu, 128256, 8192);
}
inline planner::model llama3_405b() {
  return decoder("llama3_405b", 126, 16384, 128, 8, 53248, planner::mlp_kind::swiglu, 128256, 8192);
}
inline planner::model gpt3_175b() {
  auto m = decoder("gpt3_175b", 96, 12288, 96, 96, 49152, planner::mlp_kind::gelu, 50257, 2048);
  m.tied_embeddings = true;
  return m;
}

inline planner::gpu h100_sxm() {
  using namespace planner::literals;
  planner::gpu g;
  g.name = "H100_SXM";
  g.memory = 80_GiB;
  g.reserved = 6_GiB;
  g.peak_flops = 989_TFLOPps;
  g.peak_flops_fp8 = 1979_TFLOPps;
  g.peak_flops_fp32 = 495_TFLOPps;
  g.hbm_bandwidth = 3350_GBps;
  g.intra_node = 450_GBps;
  return g;
}

inline planner::cluster nodes_of(std::string name, std::int64_t nodes, planner::gpu g, std::int64_t per_node = 8) {
  using namespace planner::literals;
  planner::cluster c;
  c.name = std::move(name);
  c.nodes = nodes;
  c.gpus_per_node = per_node;
  c.device = std::move(g);
  c.intra_node = 450_GBps;
  c.inter_node = 100_Gbitps;
  return c;
}

inline planner::program program_of(planner::model m, planner::cluster c, std::int64_t global_batch) {
  planner::program p;
  p.file = "test.dtp";
  p.model = std::move(m);
  p.cluster = std::move(c);
  p.training.global_batch = global_batch;
  return p;
}

}  // namespace dtplan::test
