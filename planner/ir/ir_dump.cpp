#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"

namespace dtplan::planner {

namespace {

template <class T, class F>
std::string choice_text(key_choice<T> const& c, F const& show) {
  using form = typename key_choice<T>::form;
  switch (c.f) {
    case form::unset: return "(default)";
    case form::single: return show(c.values.front());
    case form::any: return "auto";
    case form::range: return fmt::format("{}..{}", c.low, c.high);
    case form::set: {
      std::string out = "{";
      for (std::size_t i = 0; i < c.values.size(); ++i)
        out += (i ? ", " : "") + show(c.values[i]);
      return out + "}";
    }
  }
  return "?";
}

std::string show_int(std::int64_t v) { return fmt::format("{}", v); }

}  // namespace

std::string describe(strategy const& s) {
  return fmt::format(
      "dp {}, tp {}, pp {}, cp {}, zero {}, shard {}, checkpoint {}, micro_batch {}, "
      "virtual_stages {}, sequence_parallel {}, order {}",
      s.dp, s.tp, s.pp, s.cp, s.zero, to_string(s.shard), name(s.checkpoint), s.micro_batch,
      s.virtual_stages, s.sequence_parallel, to_string(s.order));
}

std::string dump(program const& p) {
  auto const& m = p.model;
  auto const& c = p.cluster;
  auto const& g = c.device;
  std::string out;
  out += fmt::format("model {}\n", dsl::escaped(m.name));
  if (!m.description.empty()) out += fmt::format("  description       {}\n", dsl::quoted(m.description));
  out += fmt::format(
      "  layers            {}\n  hidden            {}\n  heads             {}\n"
      "  kv_heads          {}\n  ffn               {}\n  mlp               {}\n"
      "  vocab             {}\n  seq_len           {}\n  tied_embeddings   {}\n"
      "  attention         {}\n  precision         {}\n  optimizer         {}\n"
      "  experts           {}\n  experts_per_token {}\n  dropout           {}\n",
      m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, name(m.mlp), m.vocab, m.seq_len,
      m.tied_embeddings, name(m.attention), name(m.prec), name(m.optimizer), m.experts,
      m.experts_per_token, m.dropout);
  out += fmt::format("gpu {}\n", dsl::escaped(g.name));
  out += fmt::format(
      "  memory            {} ({} B)\n  peak_flops        {}\n  peak_flops_fp8    {}\n"
      "  peak_flops_fp32   {}\n  hbm_bandwidth     {}\n  intra_node        {}\n"
      "  matmul_efficiency {}\n  reserved          {}\n  intra_latency     {}\n"
      "  inter_latency     {}\n  comm_efficiency   {}\n  hbm_efficiency    {}\n",
      g.memory, static_cast<std::int64_t>(g.memory.value()), g.peak_flops, g.peak_flops_fp8,
      g.peak_flops_fp32, g.hbm_bandwidth, g.intra_node, g.matmul_efficiency, g.reserved,
      g.intra_latency, g.inter_latency, g.comm_efficiency, g.hbm_efficiency);
  out += fmt::format(
      "cluster {}\n  nodes             {}\n  gpus_per_node     {}\n  gpus              {}\n"
      "  gpu               {}\n  intra_node        {}\n  inter_node        {}\n"
      "  intra_latency     {}\n  inter_latency     {}\n  comm_efficiency   {}\n",
      dsl::escaped(c.name), c.nodes, c.gpus_per_node, c.gpus(), dsl::escaped(g.name), c.intra_node, c.inter_node,
      c.intra_latency, c.inter_latency, c.comm_efficiency);
  out += fmt::format("training\n  global_batch      {}\n", p.training.global_batch);
  if (p.training.base_lr) out += fmt::format("  base_lr           {}\n", *p.training.base_lr);
  if (p.training.base_batch) out += fmt::format("  base_batch        {}\n", *p.training.base_batch);
  // Shown when written or not the default, so dumps of plans without it stay as they were.
  if (p.training.cross_entropy != cross_entropy_kind::fused || p.training.keys.count("cross_entropy"))
    out += fmt::format("  cross_entropy     {}\n", name(p.training.cross_entropy));
  if (p.training.grad_precision) out += fmt::format("  grad_precision    {}\n", name(*p.training.grad_precision));
  if (!p.training.overlap_grad_sync) out += "  overlap_grad_sync false\n";
  if (!p.training.grad_reduce_scatter) out += "  grad_reduce       all_reduce\n";
  for (auto const& s : p.strategies) {
    out += fmt::format("strategy {} ({})\n", dsl::escaped(s.name), s.is_free() ? "free" : "fixed");
    out += fmt::format("  dp                {}\n", choice_text(s.dp, show_int));
    out += fmt::format("  tp                {}\n", choice_text(s.tp, show_int));
    out += fmt::format("  pp                {}\n", choice_text(s.pp, show_int));
    out += fmt::format("  cp                {}\n", choice_text(s.cp, show_int));
    out += fmt::format("  ep                {}\n", choice_text(s.ep, show_int));
    out += fmt::format("  zero              {}\n", choice_text(s.zero, show_int));
    out += fmt::format("  shard             {}\n",
                       choice_text(s.shard, [](shard_group const& g) { return to_string(g); }));
    out += fmt::format("  checkpoint        {}\n",
                       choice_text(s.checkpoint, [](checkpoint_mode m) { return std::string(name(m)); }));
    out += fmt::format("  micro_batch       {}\n", choice_text(s.micro_batch, show_int));
    out += fmt::format("  virtual_stages    {}\n", choice_text(s.virtual_stages, show_int));
    out += fmt::format("  sequence_parallel {}\n",
                       choice_text(s.sequence_parallel, [](bool b) { return std::string(b ? "true" : "false"); }));
    out += fmt::format("  order             {}\n",
                       choice_text(s.order, [](rank_order const& o) { return fmt::format("\"{}\"", to_string(o)); }));
  }
  return out;
}

}  // namespace dtplan::planner
