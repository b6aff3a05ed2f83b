#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/keys.hpp"

namespace dtplan::planner {

namespace {

std::string line(std::string_view key, std::string const& value) { return fmt::format("  {:<17} {}\n", key, value); }

// Each key of the block that holds a value, in table order; a key the
// table marks `dump_default = false` only when written or changed, or
// (`every_behaviour`) when it is a run-time behaviour; a framework's
// behaviours only when `behaviours` (the training block shows them resolved).
template <class Block>
std::string keys_text(block_kind k, Block const& b, key_spans const& written, bool every_behaviour = false,
                      bool behaviours = true) {
  std::string out;
  for (auto const& key : keys_of(k)) {
    if (key.behaviour && !behaviours) continue;
    auto v = load(key, b);
    if (!v) continue;
    bool shown_anyway = every_behaviour && key.behaviour;
    if (!key.dump_default && !shown_anyway && !written.count(key.name) && key.default_value &&
        *v == *key.default_value)
      continue;
    out += line(key.name, shown(key, *v));
  }
  return out;
}

std::string choice_text(key_info const& k, key_choice<key_value> const& c) {
  using form = choice_form::form;
  switch (c.f) {
    case form::unset: return "(default)";
    case form::single: return shown(k, c.values.front());
    case form::any: return "auto";
    case form::range: return fmt::format("{}..{}", c.low, c.high);
    case form::set: {
      std::string out = "{";
      for (std::size_t i = 0; i < c.values.size(); ++i) out += (i ? ", " : "") + shown(k, c.values[i]);
      return out + "}";
    }
  }
  return "?";
}

}  // namespace

std::string describe(strategy const& s) {
  // ep only where it splits experts, etp only where it is not tp: a dense
  // plan's line is unchanged.
  auto experts = s.ep > 1 ? fmt::format("ep {}, ", s.ep) : std::string();
  if (s.expert_tp() != s.tp) experts += fmt::format("etp {}, ", s.expert_tp());
  return fmt::format(
      "dp {}, tp {}, pp {}, cp {}, {}zero {}, shard {}, checkpoint {}, micro_batch {}, "
      "virtual_stages {}, sequence_parallel {}, order {}",
      s.dp, s.tp, s.pp, s.cp, experts, s.zero, to_string(s.shard),
      name(s.checkpoint), s.micro_batch, s.virtual_stages, s.sequence_parallel, to_string(s.order));
}

std::string dump(program const& p) {
  auto const& c = p.cluster;
  std::string out;
  out += fmt::format("model {}\n", dsl::escaped(p.model.name));
  out += keys_text(block_kind::model, p.model, p.model.keys);
  out += fmt::format("gpu {}\n", dsl::escaped(c.device.name));
  out += keys_text(block_kind::gpu, c.device, c.device.keys);
  out += fmt::format("cluster {}\n", dsl::escaped(c.name));
  out += keys_text(block_kind::cluster, c, c.keys);
  out += line("gpus", fmt::format("{}", c.gpus()));
  // Every resolved behaviour of a named framework; with `generic` (today's
  // behaviour) only those the file changes.
  out += "training\n";
  out += keys_text(block_kind::training, p.training, p.training.keys, p.training.framework != "generic");
  out += fmt::format("framework {}\n", dsl::escaped(p.framework.name));
  out += keys_text(block_kind::framework, p.framework, p.framework.keys, false, false);
  for (auto const& s : p.strategies) {
    out += fmt::format("strategy {} ({})\n", dsl::escaped(s.name), s.is_free() ? "free" : "fixed");
    for (auto const& k : keys_of(block_kind::strategy))
      if (auto const* a = std::get_if<strategy_access>(&k.field); a && a->load)
        out += line(k.name, choice_text(k, a->load(s)));
  }
  return out;
}

}  // namespace dtplan::planner
