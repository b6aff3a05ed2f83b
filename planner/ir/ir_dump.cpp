#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "planner/ir/ir.hpp"
#include "planner/ir/keys.hpp"

namespace dtplan::planner {

namespace {

std::string line(std::string_view key, std::string const& value) { return fmt::format("  {:<17} {}\n", key, value); }

// Each key of the block that holds a value, in table order; a key the
// table marks `dump_default = false` only when written or changed.
template <class Block>
std::string keys_text(block_kind k, Block const& b, key_spans const& written) {
  std::string out;
  for (auto const& key : keys_of(k)) {
    auto v = load(key, b);
    if (!v) continue;
    if (!key.dump_default && !written.count(key.name) && key.default_value && *v == *key.default_value) continue;
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
  return fmt::format(
      "dp {}, tp {}, pp {}, cp {}, zero {}, shard {}, checkpoint {}, micro_batch {}, "
      "virtual_stages {}, sequence_parallel {}, order {}",
      s.dp, s.tp, s.pp, s.cp, s.zero, to_string(s.shard), name(s.checkpoint), s.micro_batch,
      s.virtual_stages, s.sequence_parallel, to_string(s.order));
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
  out += "training\n";
  out += keys_text(block_kind::training, p.training, p.training.keys);
  for (auto const& s : p.strategies) {
    out += fmt::format("strategy {} ({})\n", dsl::escaped(s.name), s.is_free() ? "free" : "fixed");
    for (auto const& k : keys_of(block_kind::strategy))
      if (auto const* a = std::get_if<strategy_access>(&k.field); a && a->load)
        out += line(k.name, choice_text(k, a->load(s)));
  }
  return out;
}

}  // namespace dtplan::planner
