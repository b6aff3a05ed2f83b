#include "codegen/graphviz.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "planner/model/layout.hpp"
#include "planner/model/shape.hpp"

namespace dtplan::codegen {

using planner::axis;

namespace {

// One colour per pipeline stage (fill), cycling.
constexpr char const* stage_fill[] = {"#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf2", "#fbf3c4", "#f6d5d5", "#d5f2ef", "#e6e6e6"};

struct edge_style {
  char const* group;
  char const* attrs;
  char const* meaning;
};
constexpr edge_style tp_style{"tp", "color=\"#1f5fbf\", penwidth=2.0, dir=none", "tensor parallel (tp)"};
constexpr edge_style cp_style{"cp", "color=\"#7b3fa0\", penwidth=1.6, style=dashed, dir=none", "context parallel (cp)"};
constexpr edge_style dp_style{"dp", "color=\"#2e8b57\", style=dashed, dir=none, constraint=false", "data parallel (dp)"};
constexpr edge_style shard_style{"shard", "color=\"#e07b00\", style=dotted, penwidth=2.0, dir=none, constraint=false",
                                 "ZeRO shard group (hybrid)"};
constexpr edge_style replicate_style{"replicate", "color=\"#2e8b57\", style=dashed, dir=none, constraint=false",
                                     "replicas across shard groups (dp)"};
constexpr edge_style ep_style{"ep", "color=\"#8c6d1f\", penwidth=1.6, style=dotted, dir=none, constraint=false",
                              "expert parallel (ep): tokens to their experts, all-to-all"};
constexpr edge_style pp_style{"pp", "color=\"#c0392b\", penwidth=2.0, arrowsize=0.7", "pipeline (pp), stage to next stage"};

std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string range(std::int64_t a, std::int64_t b) { return a == b ? fmt::format("{}", a) : fmt::format("{}-{}", a, b); }

struct context {
  planner::program const& p;
  planner::plan const& pl;
  planner::strategy_shape sh;
  planner::rank_layout l;
  std::int64_t shard;  // ranks ZeRO state is split over
  bool hybrid;         // shard groups smaller than the dp x cp group
};

// A mixture split over ep > 1 ranks, or whole on each tensor-parallel rank
// (etp < tp): each GPU's experts and their groups are drawn.
bool experts(context const& c) {
  auto const& s = c.pl.s;
  return c.p.model.experts > 1 && (s.ep > 1 || s.expert_tp() != s.tp);
}

// What rank `r` holds, one line each (the GPU box's body).
std::vector<std::string> holdings(context const& c, std::int64_t r) {
  auto const& s = c.pl.s;
  auto co = c.l.of(r);
  auto stage = co[static_cast<int>(axis::pp)];
  std::vector<std::string> out;
  auto ranges = c.sh.stage_ranges(stage);
  std::string held;
  std::int64_t count = 0;
  for (auto r : ranges) {
    if (r.last <= r.first) continue;
    held += fmt::format("{}{}", held.empty() ? "" : ", ", range(r.first, r.last - 1));
    count += r.last - r.first;
  }
  if (count == 0) out.push_back("no transformer layers");
  else if (ranges.size() > 1) out.push_back(fmt::format("layers {} of {} ({} chunks)", held, c.p.model.layers, ranges.size()));
  else out.push_back(fmt::format("layers {} of {}", held, c.p.model.layers));
  if (stage == 0) out.push_back("embedding");
  if (stage == s.pp - 1) out.push_back("output layer, loss");
  if (s.tp > 1) out.push_back(fmt::format("1/{} of each weight matrix", s.tp));
  if (s.cp > 1) out.push_back(fmt::format("1/{} of each sequence", s.cp));
  if (experts(c)) {
    // Its place in its block of ep holds that slice of every layer's
    // experts (rank_layout::expert_group_of).
    auto const block = c.l.expert_group_of(r, s.ep, s.expert_tp());
    auto const at = std::find(block.begin(), block.end(), r) - block.begin();
    auto const per = c.p.model.experts / s.ep;
    auto const whole = s.expert_tp() != s.tp ? ", each whole" : "";
    if (s.ep > 1)
      out.push_back(fmt::format("experts {} of {} in each layer{}", range(at * per, at * per + per - 1),
                                c.p.model.experts, whole));
    else
      out.push_back(fmt::format("all {} experts in each layer{}", c.p.model.experts, whole));
  }
  auto of = c.hybrid ? fmt::format(" (shard group of {})", c.shard) : std::string();
  // The experts' sharded state splits over the ranks that hold them.
  if (s.zero >= 1 && experts(c) && c.sh.expert_shard_ranks() != c.shard) {
    auto const e = c.sh.expert_shard_ranks();
    of += e == 1 ? std::string("; its experts' whole") : fmt::format("; its experts' 1/{}", e);
  }
  if (s.zero >= 1 && c.shard == 1 && c.sh.sync.active())
    out.push_back("whole weights, gradients, optimizer state (shard group of 1: shards nothing)");
  else if (s.zero >= 3) out.push_back(fmt::format("1/{} of weights, gradients, optimizer state{}", c.shard, of));
  else if (s.zero == 2) out.push_back(fmt::format("1/{} of gradients and optimizer state{}", c.shard, of));
  else if (s.zero == 1) out.push_back(fmt::format("1/{} of optimizer state{}", c.shard, of));
  else if (c.sh.sync.active()) out.push_back("full replica of its stage's state");
  return out;
}

std::string memory_line(context const& c, std::int64_t r) {
  auto stage = c.l.of(r)[static_cast<int>(axis::pp)];
  auto const& m = c.pl.memory;
  if (stage == 0) return fmt::format("{} of {} usable", planner::to_string(m.total), planner::to_string(m.usable));
  return fmt::format("at most {} (stage 0 is the most loaded)", planner::to_string(m.total));
}

std::string gpu_node(context const& c, std::int64_t r) {
  auto co = c.l.of(r);
  std::string label = fmt::format("rank {}\\ntp {} cp {} dp {} pp {}", r, co[0], co[1], co[2], co[3]);
  for (auto const& h : holdings(c, r)) label += "\\n" + esc(h);
  label += "\\n" + esc(memory_line(c, r));
  auto fill = stage_fill[co[static_cast<int>(axis::pp)] % 8];
  return fmt::format("    r{} [label=\"{}\", fillcolor=\"{}\"];\n", r, label, fill);
}

void chain(std::string& o, std::vector<std::int64_t> const& g, edge_style const& st, std::set<std::int64_t> const& drawn) {
  for (std::size_t i = 0; i + 1 < g.size(); ++i)
    if (drawn.count(g[i]) && drawn.count(g[i + 1]))
      o += fmt::format("  r{} -> r{} [{}];\n", g[i], g[i + 1], st.attrs);
}

// Edges of every group among the drawn ranks, each group once (from its
// first member), in a fixed order.
void group_edges(std::string& o, context const& c, std::set<std::int64_t> const& drawn) {
  auto const& s = c.pl.s;
  for (auto r : drawn) {
    if (s.tp > 1 && c.l.group_of(axis::tp, r).front() == r) chain(o, c.l.group_of(axis::tp, r), tp_style, drawn);
    if (s.cp > 1 && c.l.group_of(axis::cp, r).front() == r) chain(o, c.l.group_of(axis::cp, r), cp_style, drawn);
    if (c.hybrid) {
      auto sh = c.l.shard_group_of(r, c.sh.sharding);
      if (sh.front() == r && sh.size() > 1) chain(o, sh, shard_style, drawn);
      auto rep = c.l.replicate_group_of(r, c.sh.sharding);
      if (rep.front() == r && rep.size() > 1) chain(o, rep, replicate_style, drawn);
    } else if (s.dp > 1 && c.l.group_of(axis::dp, r).front() == r) {
      chain(o, c.l.group_of(axis::dp, r), dp_style, drawn);
    }
    if (s.pp > 1 && c.l.group_of(axis::pp, r).front() == r) chain(o, c.l.group_of(axis::pp, r), pp_style, drawn);
    if (experts(c) && s.ep > 1) {
      auto const block = c.l.expert_group_of(r, s.ep, s.expert_tp());
      if (block.front() == r) chain(o, block, ep_style, drawn);
    }
  }
}

std::vector<edge_style> styles_used(context const& c) {
  auto const& s = c.pl.s;
  std::vector<edge_style> out;
  if (s.tp > 1) out.push_back(tp_style);
  if (s.cp > 1) out.push_back(cp_style);
  if (c.hybrid) {
    out.push_back(shard_style);
    out.push_back(replicate_style);
  } else if (s.dp > 1) {
    out.push_back(dp_style);
  }
  if (s.pp > 1) out.push_back(pp_style);
  if (experts(c) && s.ep > 1) out.push_back(ep_style);
  return out;
}

void legend(std::string& o, context const& c, bool condensed) {
  auto const& s = c.pl.s;
  o += "  subgraph cluster_legend {\n    label=\"legend\";\n    style=rounded;\n    color=\"#888888\";\n";
  std::string text = fmt::format("plan '{}': {} GPUs = tp {} x cp {} x dp {} x pp {}\\l", esc(c.pl.name), c.l.world(), s.tp,
                                 s.cp, s.dp, s.pp);
  text += fmt::format("rank order {} (innermost first), zero {}, shard {}\\l", planner::to_string(s.order), s.zero,
                      esc(planner::to_string(s.shard)));
  if (experts(c) && s.expert_tp() == s.tp)
    text += fmt::format("{} experts a layer over ep {} of the dp x cp ranks, {} on each\\l", c.p.model.experts, s.ep,
                        c.p.model.experts / s.ep);
  else if (experts(c))
    text += fmt::format("{} experts a layer over ep {} of the tp x dp x cp ranks, {} on each, whole (etp 1)\\l",
                        c.p.model.experts, s.ep, c.p.model.experts / s.ep);
  text += fmt::format("memory: predicted per GPU; weights {}, gradients {}, optimizer {},\\l", planner::to_string(c.pl.memory.weights),
                      planner::to_string(c.pl.memory.gradients), planner::to_string(c.pl.memory.optimizer));
  text += fmt::format("activations {}, buffers {}\\l", planner::to_string(c.pl.memory.activations),
                      planner::to_string(c.pl.memory.buffers));
  text += "box fill colour = pipeline stage\\l";
  if (condensed) text += fmt::format("condensed: more than {} GPUs; node 0 in full, other nodes summarised\\l", dot_full_limit);
  o += fmt::format("    legend_text [shape=plaintext, style=\"\", label=\"{}\"];\n", text);
  int i = 0;
  for (auto const& st : styles_used(c)) {
    o += fmt::format("    legend_{0}_a [shape=point, width=0.05, label=\"\"];\n    legend_{0}_b [shape=plaintext, style=\"\", label=\"{1}\"];\n",
                     i, st.meaning);
    o += fmt::format("    legend_{0}_a -> legend_{0}_b [{1}];\n    {{ rank=same; legend_{0}_a; legend_{0}_b; }}\n", i, st.attrs);
    ++i;
  }
  o += "  }\n";
}

std::string header(context const& c) {
  std::string o = "digraph sharding {\n";
  o += fmt::format("  graph [label=\"{} on {} ({} x {} GPUs): plan '{}'\", labelloc=t, fontname=\"Helvetica\", fontsize=14, "
                   "nodesep=0.25, ranksep=0.5];\n",
                   esc(c.p.model.name), esc(c.p.cluster.name), c.p.cluster.nodes, c.p.cluster.gpus_per_node, esc(c.pl.name));
  o += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=9];\n";
  o += "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  return o;
}

void full_node(std::string& o, context const& c, std::int64_t n) {
  auto gpn = c.p.cluster.gpus_per_node;
  auto first = n * gpn;
  auto last = std::min(c.l.world(), first + gpn) - 1;
  o += fmt::format("  subgraph cluster_node{} {{\n    label=\"node {} (ranks {})\";\n    style=rounded;\n    color=\"#444444\";\n", n,
                   n, range(first, last));
  for (auto r = first; r <= last; ++r) o += gpu_node(c, r);
  // The first GPU of each tp/cp column in one row, left to right by rank;
  // tp and cp peers hang below their column head.
  std::vector<std::int64_t> heads;
  for (auto r = first; r <= last; ++r) {
    auto co = c.l.of(r);
    if (co[static_cast<int>(axis::tp)] == 0 && co[static_cast<int>(axis::cp)] == 0) heads.push_back(r);
  }
  if (heads.size() > 1) {
    o += "    { rank=same;";
    for (auto r : heads) o += fmt::format(" r{};", r);
    o += " }\n";
    for (std::size_t i = 0; i + 1 < heads.size(); ++i) o += fmt::format("    r{} -> r{} [style=invis];\n", heads[i], heads[i + 1]);
  }
  o += "  }\n";
}

std::string full(context const& c) {
  std::string o = header(c);
  auto world = c.l.world();
  auto gpn = c.p.cluster.gpus_per_node;
  std::set<std::int64_t> drawn;
  for (std::int64_t r = 0; r < world; ++r) drawn.insert(r);
  for (std::int64_t n = 0; n * gpn < world; ++n) full_node(o, c, n);
  // Stack the machines top to bottom rather than in one wide row.
  for (std::int64_t n = 1; n * gpn < world; ++n) o += fmt::format("  r{} -> r{} [style=invis];\n", (n - 1) * gpn, n * gpn);
  group_edges(o, c, drawn);
  legend(o, c, false);
  o += "}\n";
  return o;
}

// Nodes 1.. summarised: consecutive nodes whose GPUs hold the same set of
// pipeline stages share one box, at most 32 boxes.
std::string condensed(context const& c) {
  std::string o = header(c);
  auto world = c.l.world();
  auto gpn = c.p.cluster.gpus_per_node;
  auto nodes = (world + gpn - 1) / gpn;
  full_node(o, c, 0);
  std::set<std::int64_t> drawn;
  for (std::int64_t r = 0; r < std::min(world, gpn); ++r) drawn.insert(r);
  group_edges(o, c, drawn);

  auto stages_of = [&](std::int64_t n) {
    std::set<std::int64_t> st;
    for (auto r = n * gpn; r < std::min(world, (n + 1) * gpn); ++r) st.insert(c.l.of(r)[static_cast<int>(axis::pp)]);
    return st;
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;  // [first node, last node]
  for (std::int64_t n = 1; n < nodes; ++n) {
    if (!runs.empty() && stages_of(runs.back().second) == stages_of(n)) runs.back().second = n;
    else runs.emplace_back(n, n);
  }
  while (runs.size() > 32) {
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (std::size_t i = 0; i < runs.size(); i += 2)
      merged.emplace_back(runs[i].first, i + 1 < runs.size() ? runs[i + 1].second : runs[i].second);
    runs = merged;
  }
  o += "  subgraph cluster_rest {\n    label=\"other nodes (summarised)\";\n    style=rounded;\n    color=\"#444444\";\n";
  for (auto [a, b] : runs) {
    auto r0 = a * gpn;
    auto r1 = std::min(world, (b + 1) * gpn) - 1;
    std::set<std::int64_t> st;
    std::int64_t dp_lo = c.l.size(axis::dp), dp_hi = -1;
    for (auto n = a; n <= b; ++n) {
      auto s = stages_of(n);
      st.insert(s.begin(), s.end());
    }
    for (auto r = r0; r <= r1; r += std::max<std::int64_t>(1, (r1 - r0) / 4096)) {
      auto d = c.l.of(r)[static_cast<int>(axis::dp)];
      dp_lo = std::min(dp_lo, d);
      dp_hi = std::max(dp_hi, d);
    }
    auto d = c.l.of(r1)[static_cast<int>(axis::dp)];
    dp_lo = std::min(dp_lo, d);
    dp_hi = std::max(dp_hi, d);
    std::string label = fmt::format("nodes {}\\nranks {} ({} GPUs)\\npp stages {}\\ndp coordinates {}", range(a, b), range(r0, r1),
                                    r1 - r0 + 1, range(*st.begin(), *st.rbegin()), range(dp_lo, dp_hi));
    std::int64_t count = 0;
    for (auto stage : st)
      for (auto r : c.sh.stage_ranges(stage)) count += r.last - r.first;
    if (c.pl.s.virtual_stages == 1) {
      auto first = c.sh.stage_ranges(*st.begin()).front().first;
      auto last = c.sh.stage_ranges(*st.rbegin()).front().last;
      label += fmt::format("\\nlayers {} of {}", last > first ? range(first, last - 1) : "none", c.p.model.layers);
    } else {
      label += fmt::format("\\n{} of {} layers in {} chunks per stage", count, c.p.model.layers, c.pl.s.virtual_stages);
    }
    auto h = holdings(c, r0);
    for (std::size_t i = 1; i < h.size(); ++i)
      if (h[i].rfind("1/", 0) == 0 || h[i].rfind("full", 0) == 0) label += "\\neach GPU: " + esc(h[i]);
    label += "\\n" + esc(memory_line(c, r0));
    o += fmt::format("    n{} [label=\"{}\", fillcolor=\"{}\"];\n", a, label, stage_fill[*st.begin() % 8]);
  }
  o += "  }\n";
  // Rank 0's groups reaching into the summarised boxes.
  auto box_of = [&](std::int64_t r) {
    auto n = r / gpn;
    for (auto [a, b] : runs)
      if (n >= a && n <= b) return a;
    return std::int64_t{-1};
  };
  auto reach = [&](std::vector<std::int64_t> const& g, edge_style const& st) {
    std::set<std::int64_t> boxes;
    for (auto r : g)
      if (r >= gpn) boxes.insert(box_of(r));
    for (auto b : boxes) o += fmt::format("  r0 -> n{} [{}, label=\"{}\"];\n", b, st.attrs, st.group);
  };
  if (c.hybrid) {
    reach(c.l.shard_group_of(0, c.sh.sharding), shard_style);
    reach(c.l.replicate_group_of(0, c.sh.sharding), replicate_style);
  } else {
    reach(c.l.group_of(axis::dp, 0), dp_style);
  }
  reach(c.l.group_of(axis::tp, 0), tp_style);
  reach(c.l.group_of(axis::cp, 0), cp_style);
  if (experts(c) && c.pl.s.ep > 1) reach(c.l.expert_group_of(0, c.pl.s.ep, c.pl.s.expert_tp()), ep_style);
  // The pipeline as a chain from rank 0 through the boxes of its next stages.
  std::string prev = "r0";
  for (auto r : c.l.group_of(axis::pp, 0)) {
    if (r < gpn) continue;
    auto box = fmt::format("n{}", box_of(r));
    if (box != prev) o += fmt::format("  {} -> {} [{}, label=\"pp\"];\n", prev, box, pp_style.attrs);
    prev = box;
  }
  legend(o, c, true);
  o += "}\n";
  return o;
}

}  // namespace

std::string sharding_dot(planner::program const& p, planner::plan const& pl) {
  auto sh = planner::shape_of(p, pl.s);
  auto const shard = sh.shard_ranks();
  bool const hybrid = pl.s.zero > 0 && sh.shard.size < sh.sync.size;
  context c{p, pl, sh, planner::rank_layout(pl.s, p.cluster.gpus_per_node), shard, hybrid};
  return c.l.world() > dot_full_limit ? condensed(c) : full(c);
}

}  // namespace dtplan::codegen
