#include "planner/model/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "planner/model/check.hpp"
#include "planner/model/compute.hpp"
#include "planner/model/kernels.hpp"
#include "planner/model/layout.hpp"

namespace dtplan::planner {

namespace {

// A component of the step is the bottleneck when it takes at least this
// share of the step (compute is the bottleneck otherwise).
constexpr double dominant_share = 0.25;

std::string gbits(bandwidth b) { return three_digits(b.value() * 8 / 1e9) + " Gbit/s"; }

std::string link_text(cluster const& c, link_kind k) {
  return k == link_kind::inter ? gbits(c.inter_node) + " inter-node" : to_string(c.intra_node) + " intra-node";
}

// An all-to-all across nodes runs at each GPU's own share of the NICs
// (nccl.hpp): the link, and that share.
std::string link_text(cluster const& c, link_kind k, collective op) {
  if (op != collective::all_to_all || k != link_kind::inter || c.gpus_per_node <= 1) return link_text(c, k);
  return fmt::format("{} ({} a GPU)", link_text(c, k),
                     gbits(c.inter_node / static_cast<double>(c.gpus_per_node)));
}

// Shares as a person reads them: three digits, and under a thousandth of a
// per cent "< 0.001 %" rather than an exponent.
std::string percent(double x) {
  double const pct = 100 * x;
  if (pct > 0 && pct < 1e-3) return "< 0.001 %";
  return three_digits(pct) + " %";
}

// A variant of the plan's strategy, checked and costed; nothing when it is
// not valid.
struct variant {
  strategy s;
  check_result checked;
  std::optional<time_breakdown> time;
};

variant try_variant(program const& p, strategy_spec const& spec, strategy s, cost_model const& model) {
  variant v;
  v.checked = check(p, spec, s);
  v.s = v.checked.s;
  if (v.checked.valid()) v.time = model.step_time(p, v.s);
  return v;
}

comm_entry const* most_exposed(time_breakdown const& t) {
  comm_entry const* best = nullptr;
  for (auto const& e : t.comm)
    if (!best || e.exposed > best->exposed) best = &e;
  return best;
}

std::string bottleneck_of(program const& p, strategy const& s, time_breakdown const& t, throughput const& r) {
  double const step = t.step.value();
  if (step <= 0) return "";
  if (t.exposed_comm.value() >= dominant_share * step) {
    if (auto const* e = most_exposed(t)) {
      std::string line = fmt::format("communication: {} {} over {} exposes {} of {}", name(e->group), name(e->op),
                                     link_text(p.cluster, e->link, e->op), to_string(e->exposed), to_string(t.step));
      if (t.exposed_comm.value() > 1.001 * e->exposed.value())
        line += fmt::format(" ({} exposed in all)", to_string(t.exposed_comm));
      return line;
    }
  }
  if (t.bubble.value() >= dominant_share * step)
    return fmt::format("pipeline bubble: {} of {} with pp = {} and {} micro-batches", to_string(t.bubble),
                       to_string(t.step), s.pp, p.training.global_batch / (s.dp * s.micro_batch));
  if (t.optimizer.value() + t.overhead.value() >= dominant_share * step)
    return fmt::format("optimizer step and overhead: {} of {}", to_string(t.optimizer + t.overhead), to_string(t.step));
  if (t.recompute.value() >= dominant_share * step)
    return fmt::format("recomputation: {} of {} ({} checkpointing)", to_string(t.recompute), to_string(t.step),
                       name(s.checkpoint));
  return fmt::format("compute: forward and backward take {} of {} at {} MFU", to_string(t.compute + t.recompute),
                     to_string(t.step), percent(r.mfu));
}

std::string faster(seconds now, seconds before) {
  return fmt::format("step {} instead of {}", to_string(now), to_string(before));
}

void advise_sharding(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                     std::vector<std::string>& out) {
  if (pl.s.zero != 3 || pl.s.shard.k == shard_group::kind::node) return;
  if (!shape_of(p, pl.s).shard.placement.crosses_nodes()) return;
  strategy s = pl.s;
  s.shard = {shard_group::kind::node, 0};
  auto v = try_variant(p, spec, s, model);
  std::string text = fmt::format(
      "hybrid sharding: ZeRO-3 gathers the weights over the {} link every layer; shard = node keeps the gathers "
      "on the {} link and only the gradient all-reduce crosses nodes",
      link_text(p.cluster, link_kind::inter), link_text(p.cluster, link_kind::intra));
  // Only a verified fix is advice: the variant must be valid, and faster
  // (on a fast network the gathers hide under the compute, and the
  // replicas' all-reduce costs more than it saves).
  if (!v.time || v.time->step >= pl.time->step) return;
  text += fmt::format(" ({})", faster(v.time->step, pl.time->step));
  out.push_back(std::move(text));
}

void advise_communication(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                          std::vector<std::string>& out) {
  auto const& t = *pl.time;
  if (t.exposed_comm.value() < dominant_share * t.step.value()) return;
  auto const* e = most_exposed(t);
  if (!e) return;
  std::vector<std::pair<std::string, variant>> tries;
  strategy const base = pl.s;
  auto const gpus = p.cluster.gpus();
  // Tensor parallelism inside a node: fewer, larger data-parallel messages cross nodes.
  for (std::int64_t tp = base.tp * 2; tp <= p.cluster.gpus_per_node; tp *= 2) {
    strategy s = base;
    s.tp = tp;
    s.sequence_parallel = true;
    s.dp = gpus / (tp * s.pp * s.cp);
    if (s.dp < 1 || s.dp * tp * s.pp * s.cp != gpus) continue;
    tries.emplace_back(fmt::format("tp = {} within the node", tp), try_variant(p, spec, s, model));
  }
  for (std::int64_t mb = base.micro_batch * 2; mb <= base.micro_batch * 8; mb *= 2) {
    strategy s = base;
    s.micro_batch = mb;
    tries.emplace_back(fmt::format("micro_batch = {}", mb), try_variant(p, spec, s, model));
  }
  if (base.zero == 3 && base.shard.k != shard_group::kind::node) {
    strategy s = base;
    s.shard = {shard_group::kind::node, 0};
    tries.emplace_back("shard = node", try_variant(p, spec, s, model));
  }
  if (base.zero != 3) {
    strategy s = base;
    s.zero = 3;
    s.shard = {shard_group::kind::node, 0};
    tries.emplace_back("zero = 3 with shard = node", try_variant(p, spec, s, model));
  }
  // The whole traffic of the most exposed collective's group, each collective named.
  seconds group_exposed;
  std::string parts;
  for (auto const& c : t.comm) {
    if (c.group != e->group || c.exposed.value() <= 0) continue;
    group_exposed += c.exposed;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name(c.op), to_string(c.exposed));
  }
  std::string const head = fmt::format("communication dominates: {} traffic over the {} link exposes {} of {} ({})",
                                       name(e->group), link_text(p.cluster, e->link, e->op), to_string(group_exposed),
                                       to_string(t.step), parts);
  std::pair<std::string, variant> const* best = nullptr;
  for (auto const& tr : tries)
    if (tr.second.time && tr.second.time->step < t.step && (!best || tr.second.time->step < best->second.time->step))
      best = &tr;
  bool const gradient_sync = e->group == comm_group::dp || e->group == comm_group::shard ||
                             e->group == comm_group::replicate || e->group == comm_group::expert_dp ||
                             e->group == comm_group::expert_shard;
  if (best) {
    out.push_back(fmt::format("{}; the best verified change is {}: {}", head, best->first,
                              faster(best->second.time->step, t.step)));
  } else if (gradient_sync && !p.training.overlap_grad_sync) {
    out.push_back(fmt::format("{}; fewer GPUs make it smaller", head));
  } else {
    out.push_back(fmt::format("{}; a larger micro-batch or more gradient accumulation gives the backward more time "
                              "to hide it, fewer GPUs make it smaller",
                              head));
  }
  // A sync that waits for the whole backward is the framework's choice, not
  // the strategy's: say what overlapping it would give.
  if (gradient_sync && !p.training.overlap_grad_sync) {
    program overlapped = p;
    overlapped.training.overlap_grad_sync = true;
    auto v = try_variant(overlapped, spec, base, model);
    if (v.time && v.time->step < t.step)
      out.push_back(fmt::format(
          "the gradient sync starts after the backward (training.overlap_grad_sync = false); overlapping it with the "
          "backward (DDP's buckets, FSDP, Megatron's --overlap-grad-reduce) gives {}",
          faster(v.time->step, t.step)));
  }
}

void advise_checkpointing(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                          std::vector<std::string>& out) {
  auto const& t = *pl.time;
  std::string text;
  if (pl.s.checkpoint != checkpoint_mode::none)
    text = fmt::format("checkpoint = {} costs {} of recomputation", name(pl.s.checkpoint), to_string(t.recompute));
  for (auto mode : checkpoint_modes) {
    if (mode == pl.s.checkpoint) continue;
    // Only modes that recompute less than the current one trade memory for time.
    bool const cheaper = recompute_rank(mode) < recompute_rank(pl.s.checkpoint);
    strategy s = pl.s;
    s.checkpoint = mode;
    auto v = try_variant(p, spec, s, model);
    if (!v.checked.legal) continue;
    if (cheaper) {
      if (v.time)
        text += fmt::format("{}{} fits in {} ({})", text.empty() ? "" : "; ", name(mode),
                            to_string(v.checked.memory.total), faster(v.time->step, t.step));
      else
        text += fmt::format("{}{} needs {} of {} usable", text.empty() ? "" : "; ", name(mode),
                            to_string(v.checked.memory.total), to_string(v.checked.memory.usable));
    } else if (pl.memory.total.value() > 0.9 * pl.memory.usable.value() && v.time &&
               v.checked.memory.total < pl.memory.total && v.time->step >= t.step) {
      // A mode that recomputes more is worth naming only where it frees
      // memory: op-level checkpointing can keep more than Megatron's
      // selective one (a 405B interleaved plan: 1.1 GiB more).
      text += fmt::format("{}{} frees {} of memory for {} more per step", text.empty() ? "" : "; ", name(mode),
                          to_string(pl.memory.total - v.checked.memory.total), to_string(v.time->step - t.step));
    }
  }
  if (!text.empty()) out.push_back(std::move(text));
}

// Where PyTorch's ring attention gathering every rank's keys and values
// sets the peak, passing them on (alltoall) holds 2 (cp - 2) of a rank's
// queries less (memory.cpp's cp_exchange); where it does not, the peak,
// and so the total, stays and nothing is said.
void advise_context_parallel(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                             std::vector<std::string>& out) {
  if (pl.s.cp <= 2 || p.training.cp_comm_type != cp_comm_kind::allgather) return;
  program passed = p;
  passed.training.cp_comm_type = cp_comm_kind::alltoall;
  auto v = try_variant(passed, spec, pl.s, model);
  if (!v.time || !(v.checked.memory.total < pl.memory.total)) return;
  out.push_back(fmt::format(
      "context parallelism: the all-gathered keys and values of {} ranks set the peak; cp_comm_type = alltoall "
      "(torchtitan's context_parallel_rotate_method) passes them on instead: {} instead of {} per GPU ({})",
      pl.s.cp, to_string(v.checked.memory.total), to_string(pl.memory.total), faster(v.time->step, pl.time->step)));
}

// Megatron's fused softmax that does not fit the shape (softmax_falls_back):
// the micro-batch that gives it rows of four, where that is valid and
// faster.
void advise_softmax(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                    std::vector<std::string>& out) {
  if (!pl.time || !pl.shape || !pl.shape->softmax_fp32) return;
  auto const heads = p.model.heads / std::max<std::int64_t>(1, pl.s.tp);
  for (std::int64_t mb = pl.s.micro_batch + 1; mb <= pl.s.micro_batch * 4; ++mb) {
    strategy s = pl.s;
    s.micro_batch = mb;
    if (softmax_falls_back(p, s)) continue;
    auto v = try_variant(p, spec, s, model);
    if (!v.time || !(v.time->step < pl.time->step)) return;
    out.push_back(fmt::format(
        "attention: Megatron's fused softmax does not take micro_batch x heads / tp = {} rows and falls back to "
        "PyTorch's softmax in fp32 (five kernels each way for one); micro_batch = {} ({} rows) fits: {}",
        pl.s.micro_batch * heads, mb, mb * heads, faster(v.time->step, pl.time->step)));
    return;
  }
}

// A mixture's operators the framework can run faster: its local experts as
// grouped GEMMs, its permutations fused, its shared expert beside the
// all-to-alls, each where the plan runs without it and the change,
// verified, is faster by 1 % or more. The flags are Megatron-LM's;
// torchtitan groups its experts unless the model's flavor says otherwise
// and has neither of the others.
void advise_experts(program const& p, strategy_spec const& spec, plan const& pl, cost_model const& model,
                    std::vector<std::string>& out) {
  if (!pl.time || !pl.shape || p.model.experts <= 1) return;
  auto const& t = p.training;
  bool const megatron_like = t.framework == "megatron" || t.framework == "generic";
  auto const& sh = *pl.shape;
  auto const offer = [&](bool applies, bool training::*key, std::string const& what) {
    if (!applies) return;
    program q = p;
    q.training.*key = true;
    auto v = try_variant(q, spec, pl.s, model);
    if (!v.time || !(v.time->step < pl.time->step * 0.99)) return;
    out.push_back(fmt::format("experts: {} ({})", what, faster(v.time->step, pl.time->step)));
  };
  offer(!t.grouped_gemm && sh.local_experts > 1, &training::grouped_gemm,
        fmt::format("the {} experts on each GPU run one after another (grouped_gemm = false); grouped_gemm = true "
                    "runs each expert matrix as one grouped GEMM (Megatron-LM's --moe-grouped-gemm, torchtitan's "
                    "use_grouped_mm)",
                    sh.local_experts));
  offer(megatron_like && !t.permute_fusion, &training::permute_fusion,
        "the tokens go into expert order and back through PyTorch's indexing operators (permute_fusion = false); "
        "permute_fusion = true runs Transformer Engine's fused kernels (Megatron-LM's --moe-permute-fusion)");
  offer(megatron_like && !t.shared_expert_overlap && p.model.shared_expert_ffn > 0 && pl.s.ep > 1 &&
            t.moe_token_dispatcher != dispatcher_kind::flex,
        &training::shared_expert_overlap,
        "the shared expert runs in line with the all-to-alls (shared_expert_overlap = false); "
        "shared_expert_overlap = true runs it on a stream of its own beneath them (Megatron-LM's "
        "--moe-shared-expert-overlap)");
  // DeepEP, where the experts are whole on their GPUs (with what it brings:
  // use_dispatcher; a written overlap the check refuses, and nothing is
  // said).
  if (megatron_like && t.moe_token_dispatcher != dispatcher_kind::flex && pl.s.ep > 1 && pl.s.expert_tp() == 1) {
    program q = p;
    use_dispatcher(q.training, dispatcher_kind::flex);
    auto v = try_variant(q, spec, pl.s, model);
    if (v.time && v.time->step < pl.time->step * 0.99)
      out.push_back(fmt::format(
          "experts: the tokens go to their experts as {} (moe_token_dispatcher = {}); moe_token_dispatcher = flex "
          "sends each once to each GPU and node its experts are on, forwarded inside a node over NVLink (DeepEP: "
          "Megatron-LM's --moe-token-dispatcher-type flex --moe-enable-deepep{}) ({})",
          t.moe_token_dispatcher == dispatcher_kind::alltoall ? "top-k copies" : "every token gathered",
          name(t.moe_token_dispatcher),
          p.model.shared_expert_ffn > 0 && t.shared_expert_overlap ? ", the shared expert in line" : "",
          faster(v.time->step, pl.time->step)));
  }
}

void advise_learning_rate(program const& p, std::vector<std::string>& out) {
  if (!p.training.base_lr || !p.training.base_batch || *p.training.base_batch <= 0 || p.training.global_batch == *p.training.base_batch) return;
  double const k = static_cast<double>(p.training.global_batch) / static_cast<double>(*p.training.base_batch);
  double const lr = *p.training.base_lr;
  out.push_back(fmt::format(
      "learning rate: base_lr = {:.3g} was tuned at batch {}; at global_batch = {} ({}x) the linear rule gives {:.3g} "
      "and the square-root rule {:.3g}; warm up over the first steps (longer when the batch grows); a starting "
      "point; retune",
      lr, *p.training.base_batch, p.training.global_batch, three_digits(k), lr * k, lr * std::sqrt(k)));
}

}  // namespace

throughput rate_of(program const& p, time_breakdown const& t) {
  throughput r;
  double const step = t.step.value();
  if (step <= 0) return r;
  auto const gpus = static_cast<double>(p.cluster.gpus());
  r.samples_per_s = static_cast<double>(p.training.global_batch) / step;
  r.tokens_per_s = r.samples_per_s * static_cast<double>(p.model.seq_len);
  r.model_flops_per_step = t.model_flops;
  r.hardware_flops_per_step = t.hardware_flops;
  r.model_flops_per_gpu = flop_rate(t.model_flops.value() / step / gpus);
  r.hardware_flops_per_gpu = flop_rate(t.hardware_flops.value() / step / gpus);
  double const peak = peak_at(p.cluster.device, p.model.prec).value();
  r.mfu = r.model_flops_per_gpu.value() / peak;
  r.hfu = r.hardware_flops_per_gpu.value() / peak;
  return r;
}

plan evaluate(program const& p, strategy_spec const& spec, strategy const& s, cost_model const& model,
              std::string name) {
  plan out;
  out.name = std::move(name);
  out.where = spec.where;
  auto const checked = check(p, spec, s);
  out.s = checked.s;
  out.grad_accum = checked.grad_accum;
  out.valid = checked.valid();
  out.errors = checked.diags;
  out.memory = checked.memory;
  if (checked.legal) out.shape = shape_of(p, out.s);
  if (!out.valid) return out;
  out.time = model.step_time(*out.shape);
  out.rate = rate_of(p, *out.time);
  out.bottleneck = bottleneck_of(p, out.s, *out.time, out.rate);
  advise_sharding(p, spec, out, model, out.advice);
  advise_communication(p, spec, out, model, out.advice);
  advise_checkpointing(p, spec, out, model, out.advice);
  advise_context_parallel(p, spec, out, model, out.advice);
  advise_softmax(p, spec, out, model, out.advice);
  advise_experts(p, spec, out, model, out.advice);
  advise_learning_rate(p, out.advice);
  return out;
}

namespace {

// One part of a step (they sum to it) and what it takes at the largest
// count beyond its ideal: the smallest count's part, scaled by the counts.
struct step_part {
  char const* key;   // the JSON figure's stem
  char const* text;  // as the sentence names it
  seconds beyond;
};

std::vector<step_part> step_parts(time_breakdown const& first, time_breakdown const& last, double ratio) {
  auto const kernels = [](time_breakdown const& t) { return t.compute - t.slowdown - t.host_wait; };
  auto const part = [&](char const* key, char const* text, seconds a, seconds b) {
    return step_part{key, text, b - a * ratio};
  };
  return {
      part("compute", "compute", kernels(first), kernels(last)),
      part("slowdown", "compute slowed by hidden communication", first.slowdown, last.slowdown),
      part("host_wait", "the GPU waiting on the host", first.host_wait, last.host_wait),
      part("recompute", "recomputation", first.recompute, last.recompute),
      part("exposed_comm", "exposed communication", first.exposed_comm, last.exposed_comm),
      part("bubble", "the bubble", first.bubble, last.bubble),
      part("optimizer", "the optimizer step", first.optimizer, last.optimizer),
      part("overhead", "the per-step overhead", first.overhead, last.overhead),
  };
}

// "; the 371 ms beyond it: compute slowed by hidden communication +175 ms,
// the bubble +128 ms, ...": the parts that move it by a hundredth or more,
// largest first; nothing when the step is at its ideal or under it.
std::string where_beyond(seconds beyond, std::vector<step_part> parts) {
  if (beyond == seconds()) return {};
  std::erase_if(parts, [&](step_part const& x) { return std::fabs(x.beyond / beyond) < 0.01; });
  std::stable_sort(parts.begin(), parts.end(), [](step_part const& a, step_part const& b) {
    return std::fabs(a.beyond.value()) > std::fabs(b.beyond.value());
  });
  std::string out = fmt::format("; the {} {} the ideal:", to_string(seconds(std::fabs(beyond.value()))),
                                beyond > seconds() ? "beyond" : "under");
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += fmt::format("{} {} {}{}", i ? "," : "", parts[i].text, parts[i].beyond < seconds() ? "-" : "+",
                       to_string(seconds(std::fabs(parts[i].beyond.value()))));
  return out;
}

}  // namespace

std::vector<explanation> explain_scaling(program const& p, plan const& pl, cost_model const& model) {
  std::vector<explanation> lines;
  if (!pl.valid || !pl.time) return lines;
  strategy const base = pl.s;
  auto const per_replica = base.tp * base.pp * base.cp;
  strategy_spec const spec;
  struct point {
    std::int64_t gpus;
    std::string forced;  // "zero = 3, checkpoint = full": what it needs to fit, where the plan's keys do not
    time_breakdown t;
  };
  std::vector<point> points;
  for (std::int64_t dp = 1; dp <= base.dp; dp = dp * 2 > base.dp && dp < base.dp ? base.dp : dp * 2) {
    auto const gpus = dp * per_replica;
    program q = p;
    q.cluster.gpus_per_node = std::min(p.cluster.gpus_per_node, gpus);
    q.cluster.nodes = (gpus + q.cluster.gpus_per_node - 1) / q.cluster.gpus_per_node;
    if (q.cluster.nodes * q.cluster.gpus_per_node != gpus) continue;
    strategy s = base;
    s.dp = dp;
    if (s.zero > 0 && dp == 1) s.zero = 0;
    if (s.shard.k == shard_group::kind::size && s.shard.size > dp) s.shard = {};
    std::string forced;
    auto v = try_variant(q, spec, s, model);
    // Memory-forced choices: what the smaller count needs to fit at all.
    if (!v.time) {
      for (auto fix : {std::pair<int, checkpoint_mode>{3, base.checkpoint}, {3, checkpoint_mode::full}}) {
        strategy f = s;
        if (dp > 1) f.zero = fix.first;
        f.checkpoint = fix.second;
        auto w = try_variant(q, spec, f, model);
        if (w.time) {
          forced = fmt::format("zero = {}, checkpoint = {}", f.zero, name(f.checkpoint));
          v = std::move(w);
          break;
        }
      }
    }
    if (v.time) points.push_back({gpus, forced, *v.time});
    if (dp == base.dp) break;
  }
  if (points.empty()) return lines;
  auto const& first = points.front();
  double const tokens = static_cast<double>(p.training.global_batch * p.model.seq_len);
  double const base_rate = tokens / first.t.step.value() / static_cast<double>(first.gpus);
  lines.push_back({"scaling", pl.name,
                   {{"from_gpus", static_cast<double>(first.gpus)}, {"to_gpus", static_cast<double>(points.back().gpus)},
                    {"global_batch", static_cast<double>(p.training.global_batch)}},
                   fmt::format("scaling from {} to {} GPUs (global batch {} kept, dp grows; tp {}, pp {}, cp {}):",
                               first.gpus, points.back().gpus, p.training.global_batch, base.tp, base.pp, base.cp)});
  for (auto const& pt : points) {
    double const rate = tokens / pt.t.step.value() / static_cast<double>(pt.gpus);
    lines.push_back(
        {"scaling_point", fmt::format("{} GPUs", pt.gpus),
         {{"gpus", static_cast<double>(pt.gpus)}, {"step_s", pt.t.step.value()}, {"tokens_per_s_per_gpu", rate},
          {"rate_of_smallest", rate / base_rate}, {"exposed_comm_s", pt.t.exposed_comm.value()},
          {"bubble_s", pt.t.bubble.value()}, {"recompute_s", pt.t.recompute.value()},
          {"slowdown_s", pt.t.slowdown.value()}, {"host_wait_s", pt.t.host_wait.value()}},
         fmt::format("{} GPUs: step {}, {} tokens/s per GPU, {} of the {}-GPU rate; exposed communication {} ({}), "
                     "bubble {} ({}), recomputation {} ({}), compute slowed by hidden communication {} ({}){}",
                     pt.gpus, to_string(pt.t.step), grouped(std::llround(rate)), percent(rate / base_rate), first.gpus,
                     to_string(pt.t.exposed_comm), percent(pt.t.exposed_comm / pt.t.step), to_string(pt.t.bubble),
                     percent(pt.t.bubble / pt.t.step), to_string(pt.t.recompute),
                     percent(pt.t.recompute / pt.t.step), to_string(pt.t.slowdown),
                     percent(pt.t.slowdown / pt.t.step),
                     pt.forced.empty() ? std::string() : fmt::format(" (fits only with {})", pt.forced))});
  }
  auto const& last = points.back();
  if (points.size() > 1) {
    double const lost = 1 - (tokens / last.t.step.value() / static_cast<double>(last.gpus)) / base_rate;
    double const ratio = static_cast<double>(first.gpus) / static_cast<double>(last.gpus);
    seconds const ideal = first.t.step * ratio;
    seconds const beyond = last.t.step - ideal;
    // Where the time beyond the ideal goes: each part of the step against
    // the same part of the smallest count's, scaled as the ideal is. The
    // parts sum to the step, so their differences sum to `beyond`.
    auto const parts = step_parts(first.t, last.t, ratio);
    std::vector<std::pair<std::string, double>> figures{
        {"gpus", static_cast<double>(last.gpus)}, {"lost", std::max(0.0, lost)}, {"gained", std::max(0.0, -lost)},
        {"step_s", last.t.step.value()},
        {"ideal_step_s", ideal.value()}, {"exposed_comm_share_first", first.t.exposed_comm / first.t.step},
        {"exposed_comm_share", last.t.exposed_comm / last.t.step},
        {"bubble_share_first", first.t.bubble / first.t.step}, {"bubble_share", last.t.bubble / last.t.step},
        {"beyond_ideal_s", beyond.value()}};
    for (auto const& part : parts) figures.emplace_back(fmt::format("{}_beyond_s", part.key), part.beyond.value());
    // More GPUs can raise the per-GPU rate: the smaller counts fit only by
    // recomputing or sharding more (`forced`), or hide less.
    std::string const head =
        lost >= 0 ? fmt::format("at {} GPUs {} of the per-GPU rate is lost", last.gpus, percent(lost))
                  : fmt::format("at {} GPUs the per-GPU rate is {} above the {}-GPU one", last.gpus, percent(-lost),
                                first.gpus);
    std::string const why =
        lost < 0 && !first.forced.empty() ? fmt::format(", whose step fits only with {}", first.forced) : std::string();
    lines.push_back(
        {"scaling_loss", fmt::format("{} GPUs", last.gpus), std::move(figures),
         fmt::format("{}{}: the step is {} against an ideal {}; exposed communication goes from {} to {} of the "
                     "step, the bubble from {} to {}{}",
                     head, why, to_string(last.t.step), to_string(ideal), percent(first.t.exposed_comm / first.t.step),
                     percent(last.t.exposed_comm / last.t.step), percent(first.t.bubble / first.t.step),
                     percent(last.t.bubble / last.t.step), where_beyond(beyond, parts))});
  }
  return lines;
}

}  // namespace dtplan::planner
