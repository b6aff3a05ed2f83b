#include "codegen/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "codegen/json_writer.hpp"
#include "planner/model/expected_error.hpp"
#include "planner/model/params.hpp"

namespace dtplan::codegen {

using namespace planner;

namespace {

// "454 k", "1.05 M": counts a user reads at a glance.
std::string count(double v) {
  if (std::fabs(v) >= 1e9) return three_digits(v / 1e9) + " G ";
  if (std::fabs(v) >= 1e6) return three_digits(v / 1e6) + " M ";
  if (std::fabs(v) >= 1e3) return three_digits(v / 1e3) + " k ";
  return three_digits(v) + " ";
}

std::string percent(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }

std::string billions(std::int64_t n) { return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9); }

std::vector<plan const*> baselines(std::vector<plan> const& plans) {
  std::vector<plan const*> out;
  for (auto const& pl : plans)
    if (!pl.from_search && pl.valid && pl.time) out.push_back(&pl);
  return out;
}

void write_diags(json_writer& w, char const* key, plan const& pl, dsl::severity level,
                 dsl::source_manager const* sources) {
  w.key(key).begin_array();
  for (auto const& d : pl.errors) {
    if (d.level != level) continue;
    w.begin_object();
    dsl::position pos;
    if (sources && d.where.valid() && d.where.file < sources->size())
      pos = sources->file(d.where.file).position_of(d.where.begin);
    w.key("line").value(static_cast<std::int64_t>(pos.line));
    w.key("col").value(static_cast<std::int64_t>(pos.column));
    w.key("message").value(d.message);
    w.key("notes").begin_array();
    for (auto const& n : d.notes) w.value(n.message);
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

void write_strategy(json_writer& w, plan const& pl) {
  auto const& s = pl.s;
  w.key("strategy").begin_object();
  w.key("dp").value(s.dp).key("tp").value(s.tp).key("pp").value(s.pp).key("cp").value(s.cp);
  w.key("ep").value(s.ep).key("etp").value(s.expert_tp());
  w.key("zero").value(s.zero);
  w.key("shard");
  if (s.shard.k == shard_group::kind::size) w.value(s.shard.size);
  else w.value(to_string(s.shard));
  w.key("checkpoint").value(name(s.checkpoint));
  w.key("micro_batch").value(s.micro_batch);
  w.key("grad_accum").value(pl.grad_accum);
  w.key("virtual_stages").value(s.virtual_stages);
  w.key("sequence_parallel").value(s.sequence_parallel);
  w.key("order").value(to_string(s.order));
  w.end_object();
}

void write_memory(json_writer& w, memory_breakdown const& m) {
  w.key("memory").begin_object();
  w.key("capacity_bytes").whole(m.capacity.value());
  w.key("usable_bytes").whole(m.usable.value());
  w.key("total_bytes").whole(m.total.value());
  w.key("weights_bytes").whole(m.weights.value());
  w.key("gradients_bytes").whole(m.gradients.value());
  w.key("optimizer_bytes").whole(m.optimizer.value());
  w.key("activations_bytes").whole(m.activations.value());
  w.key("buffers_bytes").whole(m.buffers.value());
  w.key("in_flight_micro_batches").value(m.in_flight);
  w.key("peak_moment").value(m.peak_moment);
  w.key("detail").begin_array();
  for (auto const& t : m.detail)
    w.begin_object().key("term").value(t.name).key("bytes").whole(t.size.value()).end_object();
  w.end_array();
  w.key("layer").value(m.layer_note);
  w.key("layer_detail").begin_array();
  for (auto const& t : m.layer_detail)
    w.begin_object().key("term").value(t.name).key("bytes").whole(t.size.value()).end_object();
  w.end_array();
  w.end_object();
}

// What the plan runs that no published run behind the expected error ran:
// the model's terms for it are physics and source, never checked against
// a measured step.
std::vector<std::string> unmeasured(program const& p) {
  std::vector<std::string> out;
  if (p.model.experts > 1) out.emplace_back("mixture of experts");
  if (p.model.mla()) out.emplace_back("multi-latent attention");
  if (p.training.attention_kernel == attention_backend::flex) out.emplace_back("FlexAttention kernel");
  return out;
}

// The cross-validated error of the time model for this GPU and framework
// (planner/model/expected_error.hpp), or null when no published run
// measures the pair; then, where the framework has held-out runs on another
// GPU of the same generation, those figures as `related_expected_error`
// with the GPU they were measured on (null otherwise); then what the plan
// runs that those runs did not (`unmeasured`).
void write_expected_error(json_writer& w, program const& p) {
  auto figures = [&](expected_error const& e, bool named) {
    w.begin_object();
    if (named) w.key("gpu").value(e.gpu);
    w.key("median").value(e.median);
    w.key("p90").value(e.p90);
    w.key("held_out_runs").value(static_cast<std::int64_t>(e.runs));
    w.key("families").value(static_cast<std::int64_t>(e.families));
    w.end_object();
  };
  auto const& g = p.cluster.device;
  auto const e = expected_error_for(g.name, p.training.framework);
  w.key("expected_error");
  if (e)
    figures(*e, false);
  else
    w.null();
  auto const r = related_expected_error(g.name, g.generation, p.training.framework);
  w.key("related_expected_error");
  if (r)
    figures(*r, true);
  else
    w.null();
  w.key("unmeasured").begin_array();
  for (auto const& u : unmeasured(p)) w.value(u);
  w.end_array();
}

// The first plan of the search `pl` came from ("search#1" for "search#3",
// "all#1" for "all#2" where a file has two free strategies): the plan a
// runner-up is compared with. Null for that plan itself, a strategy of the
// file, or a plan whose best has no time.
plan const* best_of_search(std::vector<plan> const& plans, plan const& pl) {
  if (!pl.from_search) return nullptr;
  auto const search = std::string_view(pl.name).substr(0, pl.name.rfind('#'));
  for (auto const& p : plans)
    if (p.from_search && std::string_view(p.name).substr(0, p.name.rfind('#')) == search)
      return &p == &pl || !p.time ? nullptr : &p;
  return nullptr;
}

// A search plan after the first: how much slower than it, and how often
// published pairs predicted as far apart were ordered as measured (null
// where none were).
// The share of a bin's published pairs ordered as measured, or null where
// no pair was that far apart.
void write_agreement(json_writer& w, std::optional<order_agreement> const& bin) {
  if (bin)
    w.value(bin->share());
  else
    w.null();
}

void write_behind(json_writer& w, plan const& best, plan const& pl) {
  double const gap = predicted_gap(pl.time->step, best.time->step);
  auto const bin = order_agreement_for(gap);
  w.key("behind_best").begin_object();
  w.key("name").value(best.name);
  w.key("slower").value(gap);
  w.key("order_agreement");
  write_agreement(w, bin);
  w.key("pairs").value(static_cast<std::int64_t>(bin ? bin->pairs : 0));
  w.end_object();
}

void write_time(json_writer& w, program const& p, time_breakdown const& t) {
  w.key("time").begin_object();
  w.key("step_s").value(t.step.value());
  write_expected_error(w, p);
  w.key("compute_s").value(t.compute.value());
  w.key("slowdown_s").value(t.slowdown.value());
  w.key("host_wait_s").value(t.host_wait.value());
  w.key("recompute_s").value(t.recompute.value());
  w.key("exposed_comm_s").value(t.exposed_comm.value());
  w.key("bubble_s").value(t.bubble.value());
  w.key("optimizer_s").value(t.optimizer.value());
  w.key("overhead_s").value(t.overhead.value());
  w.key("comm").begin_array();
  for (auto const& c : t.comm) {
    w.begin_object();
    w.key("collective").value(name(c.op));
    w.key("group").value(name(c.group));
    w.key("ranks").value(c.ranks);
    w.key("bytes").whole(c.size.value());
    w.key("count").value(c.count);
    w.key("seconds").value(c.time.value());
    w.key("exposed_s").value(c.exposed.value());
    w.key("link").value(name(c.link));
    w.key("phase").value(name(c.phase));
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_group(json_writer& w, char const* key, group_shape const& g) {
  w.key(key).begin_object();
  w.key("ranks").value(g.size);
  w.key("nodes").value(g.placement.nodes);
  w.key("max_per_node").value(g.placement.max_per_node);
  w.key("link").value(name(g.link.kind));
  w.end_object();
}

// What the strategy is on the cluster: every quantity the memory and time
// models, the diagram and the skeleton derive from it (shape.hpp).
void write_shape(json_writer& w, strategy_shape const& sh) {
  w.key("shape").begin_object();
  w.key("world").value(sh.world);
  w.key("grad_accum").value(sh.grad_accum);
  w.key("tokens_per_micro_batch").value(sh.tokens);
  w.key("stage_layers").begin_array();
  for (std::int64_t r = 0; r < sh.s.pp; ++r) w.value(sh.stage_layers(r));
  w.end_array();
  w.key("stage_params_per_gpu").begin_array();
  for (std::int64_t r = 0; r < sh.s.pp; ++r) w.whole(sh.stage(r).params);
  w.end_array();
  w.key("layer_params_per_gpu").whole(sh.layer_params);
  w.key("layer_expert_params_per_gpu").whole(sh.layer_expert_params);
  w.key("stage_moe_layers").begin_array();
  for (std::int64_t r = 0; r < sh.s.pp; ++r) w.value(sh.stage_moe_layers(r));
  w.end_array();
  w.key("dense_layer_params_per_gpu").whole(sh.dense_layer_params);
  w.key("shard_ranks").value(sh.shard_ranks());
  w.key("expert_shard_ranks").value(sh.expert_shard_ranks());
  w.key("groups").begin_object();
  write_group(w, "tp", sh.tp);
  write_group(w, "cp", sh.cp);
  write_group(w, "dp", sh.dp);
  write_group(w, "pp", sh.pp);
  write_group(w, "ep", sh.ep);
  write_group(w, "sync", sh.sync);
  write_group(w, "shard", sh.shard);
  write_group(w, "replicate", sh.replicate);
  write_group(w, "embedding", sh.embedding);
  write_group(w, "expert_sync", sh.expert_sync);
  write_group(w, "expert_shard", sh.expert_shard);
  w.end_object();
  w.key("layer_gemms").begin_array();
  for (int i = 0; i < sh.gemm_count; ++i) {
    auto const& g = sh.gemms[static_cast<std::size_t>(i)];
    w.begin_object().key("name").value(g.name).key("m").value(g.forward.m).key("n").value(g.forward.n);
    w.key("k").value(g.forward.k).key("batch").value(g.forward.batch).key("recompute_n").value(g.recompute_n);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_throughput(json_writer& w, throughput const& r) {
  w.key("throughput").begin_object();
  w.key("tokens_per_s").value(r.tokens_per_s);
  w.key("samples_per_s").value(r.samples_per_s);
  w.key("model_flops_per_step").value(r.model_flops_per_step.value());
  w.key("hardware_flops_per_step").value(r.hardware_flops_per_step.value());
  w.key("model_tflops_per_gpu").value(r.model_flops_per_gpu.value() / 1e12);
  w.key("hardware_tflops_per_gpu").value(r.hardware_flops_per_gpu.value() / 1e12);
  w.key("mfu").value(r.mfu);
  w.key("hfu").value(r.hfu);
  w.end_object();
}

}  // namespace

char const* tool_version() { return DTPLAN_VERSION; }

std::string to_json(report const& r) {
  auto const& p = *r.program;
  json_writer w;
  w.begin_object();
  w.key("file").value(p.file);
  // The document's own version (docs/spec/dtplan.schema.json) and the tool's.
  w.key("schema_version").value(json_schema_version);
  w.key("dtplan_version").value(tool_version());
  auto params = count_params(p.model);
  w.key("model").begin_object();
  w.key("name").value(p.model.name);
  w.key("params").value(params.total);
  w.key("layers").value(p.model.layers);
  w.key("hidden").value(p.model.hidden);
  w.key("heads").value(p.model.heads);
  w.key("kv_heads").value(p.model.kv_heads);
  w.key("head_dim").value(p.model.head_width());
  w.key("qk_norm").value(p.model.qk_norm);
  w.key("mtp_layers").value(p.model.mtp_layers);
  w.key("q_lora_rank").value(p.model.mla() ? p.model.q_lora_rank : 0);
  w.key("kv_lora_rank").value(p.model.kv_lora_rank);
  w.key("qk_rope_head_dim").value(p.model.mla() ? p.model.qk_rope_head_dim : 0);
  w.key("v_head_dim").value(p.model.v_head_width());
  w.key("ffn").value(p.model.ffn).key("expert_ffn").value(p.model.mlp_width());
  w.key("shared_expert_ffn").value(p.model.experts > 1 ? p.model.shared_expert_ffn : 0);
  w.key("mlp").value(name(p.model.mlp));
  w.key("vocab").value(p.model.vocab);
  w.key("seq_len").value(p.model.seq_len);
  w.key("tied_embeddings").value(p.model.tied_embeddings);
  w.key("attention").value(name(p.model.attention));
  w.key("precision").value(name(p.model.prec));
  w.key("optimizer").value(name(p.model.optimizer));
  w.key("experts").value(p.model.experts);
  w.key("experts_per_token").value(p.model.experts_per_token);
  if (p.model.experts > 1 && p.model.capacity_factor)
    w.key("capacity_factor").value(*p.model.capacity_factor);
  else
    w.key("capacity_factor").null();
  w.key("pad_to_capacity").value(p.model.experts > 1 && p.model.pad_to_capacity);
  w.key("routing_imbalance").value(p.model.experts > 1 ? p.model.routing_imbalance : 1.0);
  w.key("router_groups").value(p.model.experts > 1 ? p.model.router_groups : 0);
  w.key("router_group_topk").value(p.model.experts > 1 ? p.model.router_group_topk : 0);
  w.key("dense_layers").value(p.model.experts > 1 ? p.model.dense_layers : 0);
  w.key("moe_layer_freq").value(p.model.experts > 1 ? p.model.moe_layer_freq : 1);
  w.key("dropout").value(p.model.dropout);
  w.end_object();
  w.key("cluster").begin_object();
  w.key("name").value(p.cluster.name);
  w.key("gpus").value(p.cluster.gpus());
  w.key("nodes").value(p.cluster.nodes);
  w.key("gpus_per_node").value(p.cluster.gpus_per_node);
  w.key("gpu").value(p.cluster.device.name);
  w.key("gpu_memory_bytes").whole(p.cluster.device.memory.value());
  w.key("intra_node_bytes_per_s").value(p.cluster.intra_node.value());
  w.key("inter_node_bytes_per_s").value(p.cluster.inter_node.value());
  w.end_object();
  w.key("training").begin_object();
  w.key("global_batch").value(p.training.global_batch);
  w.key("tokens_per_step").value(p.training.global_batch * p.model.seq_len);
  // Only when not the default, so reports of existing plans keep their bytes.
  if (p.training.cross_entropy != planner::cross_entropy_kind::fused) w.key("cross_entropy").value(name(p.training.cross_entropy));
  if (!p.training.recomputes_core_attention_only()) {
    w.key("recompute_modules").begin_array();
    for (auto r : p.training.recompute_modules) w.value(name(r));
    w.end_array();
  }
  w.end_object();
  auto base = baselines(*r.plans);
  w.key("plans").begin_array();
  for (auto const& pl : *r.plans) {
    w.begin_object();
    w.key("name").value(pl.name);
    w.key("source").value(pl.from_search ? "search" : "file");
    write_strategy(w, pl);
    w.key("valid").value(pl.valid);
    write_diags(w, "errors", pl, dsl::severity::error, r.sources);
    write_diags(w, "warnings", pl, dsl::severity::warning, r.sources);
    write_memory(w, pl.memory);
    if (pl.shape) write_shape(w, *pl.shape);
    if (pl.valid && pl.time) {
      write_time(w, *r.program, *pl.time);
      write_throughput(w, pl.rate);
      w.key("bottleneck").value(pl.bottleneck);
      w.key("advice").begin_array();
      for (auto const& a : pl.advice) w.value(a);
      w.end_array();
      if (pl.from_search && !base.empty()) {
        w.key("speedup").begin_object();
        for (auto const* b : base) w.key(b->name).value(b->time->step / pl.time->step);
        w.end_object();
        // How often published pairs predicted as far apart were ordered as
        // measured (null where none were).
        w.key("speedup_order_agreement").begin_object();
        for (auto const* b : base) {
          w.key(b->name);
          write_agreement(w, order_agreement_for(predicted_gap(b->time->step, pl.time->step)));
        }
        w.end_object();
      }
      if (auto const* best = best_of_search(*r.plans, pl)) write_behind(w, *best, pl);
    }
    w.end_object();
  }
  w.end_array();
  if (r.stats) {
    w.key("search").begin_object();
    w.key("candidates").value(r.stats->candidates);
    w.key("valid").value(r.stats->valid);
    w.key("seconds").value(r.stats->elapsed.value());
    w.end_object();
  }
  if (!r.explanations.empty()) {
    w.key("explain").begin_array();
    for (auto const& e : r.explanations) {
      w.begin_object();
      w.key("kind").value(e.kind);
      w.key("subject").value(e.subject);
      w.key("figures").begin_object();
      // A count or a size is written as the whole number it is (sizes are
      // whole bytes everywhere in the document); times and shares as reals.
      for (auto const& [name, v] : e.figures) {
        w.key(name);
        if (std::abs(v) < 0x1p53 && v == std::trunc(v)) w.value(static_cast<std::int64_t>(v));
        else w.value(v);
      }
      w.end_object();
      w.key("text").value(e.text);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
  return w.str();
}

namespace {

void text_memory(std::string& out, memory_breakdown const& m, bool explain) {
  out += fmt::format("  memory per GPU (most loaded)   {:>10} of {} usable ({} on the GPU)\n",
                     to_string(m.total), to_string(m.usable), to_string(m.capacity));
  auto line = [&](char const* label, bytes b) {
    out += fmt::format("    {:<28} {:>10}\n", label, to_string(b));
  };
  line("weights", m.weights);
  line("gradients", m.gradients);
  line("optimizer state", m.optimizer);
  line("activations", m.activations);
  line("buffers", m.buffers);
  out += fmt::format("    micro-batches in flight      {:>10}\n", m.in_flight);
  if (m.detail.empty()) return;
  out += *m.peak_moment ? fmt::format("    in detail, at {}\n", m.peak_moment) : std::string("    in detail\n");
  for (auto const& t : m.detail) out += fmt::format("      {:>10}  {}\n", to_string(t.size), t.name);
  // With --explain, what one layer keeps for one micro-batch.
  if (!explain || m.layer_detail.empty()) return;
  bytes layer;
  for (auto const& t : m.layer_detail) layer += t.size;
  out += fmt::format("    one layer's activations: {} for one micro-batch, {}\n", m.layer_note, to_string(layer));
  for (auto const& t : m.layer_detail) out += fmt::format("      {:>10}  {}\n", to_string(t.size), t.name);
}

void text_time(std::string& out, program const& p, time_breakdown const& t) {
  out += fmt::format("  time per step                  {:>10}\n", to_string(t.step));
  out += fmt::format("    expected error               {}\n",
                     describe_expected_error(p.cluster.device.name, p.cluster.device.generation, p.training.framework));
  for (auto const& u : unmeasured(p))
    out += fmt::format("    not measured                 {}: no published run behind that figure has one, so its terms "
                       "are unchecked\n",
                       u);
  auto line = [&](char const* label, seconds s) {
    double share = t.step.value() > 0 ? s / t.step : 0;
    out += fmt::format("    {:<28} {:>10} {:>7}\n", label, to_string(s), percent(share));
  };
  line("compute", t.compute);
  // The parts of compute that are not the kernels' own time, where there are.
  if (t.slowdown > seconds()) line("  slowed by hidden comm", t.slowdown);
  if (t.host_wait > seconds()) line("  waiting on the host", t.host_wait);
  line("recomputation", t.recompute);
  line("exposed communication", t.exposed_comm);
  line("pipeline bubble", t.bubble);
  line("optimizer step", t.optimizer);
  line("per-step overhead", t.overhead);
  if (t.comm.empty()) return;
  out += "  collectives\n";
  out += fmt::format("    {:<15} {:<9} {:>5} {:>11} {:>6} {:<5} {:>10} {:>10}\n", "collective", "group",
                     "ranks", "size", "count", "link", "time", "exposed");
  for (auto const& c : t.comm)
    out += fmt::format("    {:<15} {:<9} {:>5} {:>11} {:>6} {:<5} {:>10} {:>10}\n", name(c.op),
                       name(c.group), c.ranks, to_string(c.size), c.count, name(c.link),
                       to_string(c.time), to_string(c.exposed));
}

void text_rate(std::string& out, program const& p, throughput const& r) {
  out += fmt::format("  throughput                     {}tokens/s ({}tokens/s per GPU), {} samples/s\n",
                     count(r.tokens_per_s), count(r.tokens_per_s / static_cast<double>(p.cluster.gpus())),
                     three_digits(r.samples_per_s));
  out += fmt::format("  per GPU                        model {} (MFU {}), hardware {} (HFU {})\n",
                     to_string(r.model_flops_per_gpu), percent(r.mfu),
                     to_string(r.hardware_flops_per_gpu), percent(r.hfu));
}

// "  versus 'current'              ": a comparison's head, its figure in the
// report's value column.
std::string against(char const* word, std::string const& name) {
  return fmt::format("  {} '{}'{:<{}} ", word, name, "", std::max<int>(0, 20 - static_cast<int>(name.size())));
}

// "; published pairs predicted 0 to 2 % apart: 61.9 % ordered as measured
// (...)": how far a predicted difference of `gap` is to be trusted.
std::string trust(double gap) {
  auto const said = describe_order_agreement(gap);
  return said.empty() ? said : "; " + said;
}

// The keys in which `s` differs from `best`, as "zero 3 (#1: 2)".
std::string differences(strategy const& s, strategy const& best) {
  std::vector<std::string> out;
  auto add = [&](char const* key, auto const& mine, auto const& theirs) {
    if (mine != theirs) out.push_back(fmt::format("{} {} (not {})", key, mine, theirs));
  };
  add("dp", s.dp, best.dp);
  add("tp", s.tp, best.tp);
  add("pp", s.pp, best.pp);
  add("cp", s.cp, best.cp);
  add("ep", s.ep, best.ep);
  if (s.expert_tp() != s.tp || best.expert_tp() != best.tp) add("etp", s.expert_tp(), best.expert_tp());
  add("zero", s.zero, best.zero);
  add("shard", to_string(s.shard), to_string(best.shard));
  add("checkpoint", name(s.checkpoint), name(best.checkpoint));
  add("micro_batch", s.micro_batch, best.micro_batch);
  add("virtual_stages", s.virtual_stages, best.virtual_stages);
  add("sequence_parallel", s.sequence_parallel, best.sequence_parallel);
  add("order", to_string(s.order), to_string(best.order));
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

std::string to_text(report const& r, bool explain) {
  auto const& p = *r.program;
  auto const& m = p.model;
  auto const& c = p.cluster;
  std::string out;
  out += fmt::format("{}\n", p.file);
  std::string mixture;
  if (m.experts > 1) {
    mixture = fmt::format(" x {} experts ({} a token", m.experts, std::min(m.experts_per_token, m.experts));
    if (m.capacity_factor) mixture += fmt::format(", capacity {:g}{}", *m.capacity_factor, m.pad_to_capacity ? " padded" : "");
    if (m.router_groups > 0 && m.router_group_topk > 0)
      mixture += fmt::format(" from {} of {} groups", m.router_group_topk, m.router_groups);
    if (m.routing_imbalance != 1.0) mixture += fmt::format(", routing imbalance {:g}", m.routing_imbalance);
    mixture += ")";
    if (m.shared_expert_ffn > 0) mixture += fmt::format(" + a shared expert {} wide", m.shared_expert_ffn);
    // A mixture's dense layers: "in 58 of 61 layers, the others dense ffn 18432".
    if (m.mixed_layers())
      mixture += fmt::format(" in {} of {} layers, the others dense ffn {}", m.moe_layer_count(), m.layers, m.ffn);
  }
  // Heads narrower or wider than hidden / heads say so, and q/k norms:
  // "32 heads (4 kv) of 128 with q/k norms".
  std::string head_width = m.q_width() != m.hidden ? fmt::format(" of {}", m.head_width()) : std::string();
  if (m.qk_norm) head_width += " with q/k norms";
  // Multi-latent attention: "128 heads (128 kv) of multi-latent attention
  // (q rank 1536, kv rank 512; q/k heads 128 + 64 rotary, v heads 128)".
  if (m.mla())
    head_width = fmt::format(" of multi-latent attention (q rank {}, kv rank {}; q/k heads {} + {} rotary, v heads {})",
                             m.q_lora_rank > 0 ? fmt::format("{}", m.q_lora_rank) : std::string("none"),
                             m.kv_lora_rank, m.head_width(), m.qk_rope_head_dim, m.v_head_width());
  // Multi-token prediction: "61 layers + 1 multi-token prediction module".
  std::string layers = counted(m.layers, "layer");
  if (m.mtp_layers > 0) layers += " + " + counted(m.mtp_layers, "multi-token prediction module");
  out += fmt::format(
      "  model     {}: {} parameters; {}, hidden {}, {} ({} kv){}, ffn {} {}{}, vocab {}, "
      "seq_len {}; {}, {}\n",
      m.name, billions(count_params(m).total), layers, m.hidden, counted(m.heads, "head"),
      m.kv_heads, head_width, m.mlp_width(), name(m.mlp), mixture, m.vocab, m.seq_len, name(m.prec),
      name(m.optimizer));
  out += fmt::format("  cluster   {}: {} x {} {} = {}; {} per GPU inside a node", c.name, c.nodes, c.gpus_per_node,
                     c.device.name, counted(c.gpus(), "GPU"), to_string(c.intra_node));
  if (c.nodes > 1) out += fmt::format(", {} per node between nodes", to_string(c.inter_node));
  out += "\n";
  // What selective recomputation recomputes where not the core attention
  // alone: "; selective recomputation of layernorm, mla_up_proj".
  std::string recomputed;
  if (!p.training.recomputes_core_attention_only()) {
    for (auto r : p.training.recompute_modules) recomputed += fmt::format("{}{}", recomputed.empty() ? "" : ", ", name(r));
    recomputed = "; selective recomputation of " + recomputed;
  }
  out += fmt::format("  training  global batch {} = {}tokens per step{}{}\n",
                     counted(p.training.global_batch, "sequence"),
                     count(static_cast<double>(p.training.global_batch * m.seq_len)),
                     p.training.cross_entropy == planner::cross_entropy_kind::fused ? "" : "; unfused cross entropy",
                     recomputed);
  if (r.stats)
    out += fmt::format("  search    {}, {} valid, {}\n", counted(r.stats->candidates, "candidate"), r.stats->valid,
                       to_string(r.stats->elapsed));
  auto base = baselines(*r.plans);
  for (auto const& pl : *r.plans) {
    out += "\n";
    out += fmt::format("{} '{}'  [{}]\n", pl.from_search ? "plan" : "strategy", pl.name,
                       pl.valid ? "valid" : "invalid");
    out += fmt::format("  {}\n", describe(pl.s));
    if (pl.grad_accum > 0) out += fmt::format("  grad_accum {}\n", pl.grad_accum);
    if (pl.shape && pl.s.pp > 1) {
      // The layers a stage holds, where they differ; and, where the last
      // stage holds fewer than the fullest, that the step is costed by the
      // fullest with the head (compute_per_micro_batch), more than either.
      std::vector<std::int64_t> per;
      for (std::int64_t r = 0; r < pl.s.pp; ++r) per.push_back(pl.shape->stage_layers(r));
      if (std::adjacent_find(per.begin(), per.end(), std::not_equal_to<>()) != per.end()) {
        auto const most = pl.shape->max_stage_layers;
        out += fmt::format("  layers {}{}\n", planner::layer_counts_text(per, "stage"),
                           per.back() < most ? fmt::format("; each micro-batch costed as {} layers and the logits and "
                                                           "loss (an upper bound)",
                                                           most)
                                             : std::string());
      }
    }
    for (auto const& d : pl.errors)
      if (d.level == dsl::severity::error) out += fmt::format("  error: {}\n", d.message);
    if (pl.memory.capacity.value() > 0) text_memory(out, pl.memory, explain);
    if (!pl.valid || !pl.time) continue;
    text_time(out, p, *pl.time);
    text_rate(out, p, pl.rate);
    if (pl.from_search)
      for (auto const* b : base)
        out += fmt::format("{}{}x as fast ({} -> {}){}\n", against("versus", b->name),
                           three_digits(b->time->step / pl.time->step), to_string(b->time->step),
                           to_string(pl.time->step), trust(predicted_gap(b->time->step, pl.time->step)));
    if (auto const* best = best_of_search(*r.plans, pl)) {
      out += fmt::format("  differs from '{}' in {}\n", best->name, differences(pl.s, best->s));
      // How much the order of the two is to be trusted, from published
      // pairs the model put as far apart.
      double const gap = predicted_gap(pl.time->step, best->time->step);
      out += fmt::format("{}{} % slower{}\n", against("behind", best->name), three_digits(100 * gap), trust(gap));
    }
    if (!pl.bottleneck.empty()) out += fmt::format("  bottleneck     {}\n", pl.bottleneck);
    if (!pl.advice.empty()) {
      out += "  advice\n";
      for (auto const& a : pl.advice) out += fmt::format("    - {}\n", a);
    }
  }
  if (explain && !r.explanations.empty()) {
    out += "\nexplain\n";
    for (auto const& e : r.explanations) out += fmt::format("  {}\n", e.text);
  }
  return out;
}

std::string to_summary(report const& r) {
  std::string out;
  for (auto const& pl : *r.plans) {
    if (pl.valid && pl.time)
      out += fmt::format("{}: valid, {} per step, {}tokens/s, MFU {}, {} per GPU\n", pl.name,
                         to_string(pl.time->step), count(pl.rate.tokens_per_s), percent(pl.rate.mfu),
                         to_string(pl.memory.total));
    else
      out += fmt::format("{}: invalid\n", pl.name);
  }
  return out;
}

}  // namespace dtplan::codegen
