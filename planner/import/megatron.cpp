// Megatron-LM's pretrain_gpt.py arguments (core_v0.13.0,
// megatron/training/arguments.py for every argument and default read here),
// and what Megatron-DeepSpeed 4efb479 (megatron/arguments.py) shares of them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "planner/import/translate.hpp"
#include "planner/ir/keys.hpp"
#include "planner/ir/ir.hpp"

namespace dtplan::planner::import_detail {

namespace {

// Arguments that do not change a step's time or memory: data, tokenizer,
// learning rate, logging, checkpoints, initialisation.
constexpr std::string_view not_costed_arguments[] = {
    "--train-iters", "--train-samples", "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters",
    "--lr-decay-samples", "--lr-warmup-fraction", "--lr-warmup-iters", "--lr-warmup-samples", "--weight-decay",
    "--adam-beta1", "--adam-beta2", "--adam-eps", "--init-method-std", "--clip-grad", "--data-path", "--vocab-file",
    "--merge-file", "--split", "--data-impl", "--tokenizer-type", "--tokenizer-model", "--log-interval",
    "--save-interval", "--eval-interval", "--eval-iters", "--save", "--load", "--tensorboard-dir", "--seed",
    "--exit-interval", "--distributed-backend", "--loss-scale", "--wandb-project",
    "--wandb-exp-name", "--wandb-save-dir", "--log-throughput", "--use-mcore-models",
    // Megatron-LM's examples (core_v0.13.0 examples/llama, examples/mixtral):
    // checkpoint loading and format, run limits, data loading, the
    // decoupled learning rate, per-token loss averaging, RoPE's base, the
    // profiler's window.
    "--no-load-optim", "--no-load-rng", "--ckpt-format", "--exit-duration-in-mins", "--distributed-timeout-minutes",
    "--mock-data", "--data-cache-path", "--num-workers", "--no-mmap-bin-files", "--tiktoken-pattern",
    "--no-create-attention-mask-in-dataloader", "--decoupled-lr", "--decoupled-min-lr", "--calculate-per-token-loss",
    "--rotary-base", "--profile", "--profile-step-start", "--profile-step-end",
    // LayerNorm's weight kept as 1 + gamma: the same kernels. Delayed fp8
    // scaling's history of amaxes, a few kilobytes a tensor.
    "--apply-layernorm-1p", "--fp8-amax-history-len", "--fp8-amax-compute-algo",
    // The multi-token prediction loss's weight (core_v0.13.0
    // transformer/multi_token_prediction.py:674-686): a scale on a loss.
    "--mtp-loss-scaling-factor"};

// A value of Megatron-LM's `what` dtplan does not model, at its key.
void not_modelled(translation& t, entry const& e, std::string_view what, std::string_view value,
                  std::string_view costed_as) {
  t.diags.warning(e.key_where, fmt::format("Megatron-LM's {} '{}' is not modelled: costed as '{}'", what,
                                           dsl::escaped(value), costed_as));
}

// A flag of a few values, each the value of dtplan's `key` by the same
// name: set, or a warning that the value is not modelled and `costed_as`
// stands. False when the value could not be read (the reader said why).
bool set_megatron_choice(job_reader& job, entry const& e, std::string_view key,
                         std::initializer_list<std::string_view> values, std::string_view what,
                         std::string_view costed_as) {
  auto v = job.text(e);
  if (!v) return false;
  auto& t = job.out();
  if (std::find(values.begin(), values.end(), *v) != values.end())
    set(t, "training", key, identifier_value(*v, job.value_at(&e)), e.key_where);
  else
    not_modelled(t, e, what, *v, costed_as);
  return true;
}

// Megatron-Core's --pipeline-model-parallel-layout unrolled as
// PipelineParallelLayerLayout.parse_str_to_list does it (core_v0.13.0
// megatron/core/transformer/pipeline_parallel_layer_layout.py:228-260):
// commas dropped, then every "(x)*n" written n times, then every "c*n";
// the stages are what '|' separates. nullopt past `limit` characters.
std::optional<std::string> unroll_layout(std::string_view text, std::size_t limit) {
  std::string s;
  for (char c : text)
    if (c != ',') s += c;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  // The count that starts at s[at], and where it ends; nullopt past `limit`.
  auto count = [&](std::string const& from, std::size_t at, std::size_t& end) -> std::optional<std::size_t> {
    std::size_t n = 0;
    for (end = at; end < from.size() && is_digit(from[end]); ++end) {
      n = n * 10 + static_cast<std::size_t>(from[end] - '0');
      if (n > limit) return std::nullopt;
    }
    return n;
  };
  auto repeat = [&](std::string& out, std::string_view what, std::size_t n) {
    if (what.size() * n > limit - std::min(limit, out.size())) return false;
    for (std::size_t k = 0; k < n; ++k) out += what;
    return true;
  };
  std::string groups;  // after r'\(([^)]+)\)\*(\d+)'
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      auto const close = s.find(')', i + 1);
      if (close != std::string::npos && close > i + 1 && close + 2 < s.size() && s[close + 1] == '*' &&
          is_digit(s[close + 2])) {
        std::size_t end = 0;
        auto n = count(s, close + 2, end);
        if (!n || !repeat(groups, std::string_view(s).substr(i + 1, close - i - 1), *n)) return std::nullopt;
        i = end;
        continue;
      }
    }
    groups += s[i++];
    if (groups.size() > limit) return std::nullopt;
  }
  std::string out;  // after r'(.)\*(\d+)'
  for (std::size_t i = 0; i < groups.size();) {
    if (i + 2 < groups.size() && groups[i + 1] == '*' && is_digit(groups[i + 2])) {
      std::size_t end = 0;
      auto n = count(groups, i + 2, end);
      if (!n || !repeat(out, std::string_view(groups).substr(i, 1), *n)) return std::nullopt;
      i = end;
      continue;
    }
    out += groups[i++];
    if (out.size() > limit) return std::nullopt;
  }
  return out;
}

// --moe-layer-freq's list pattern, as Megatron-LM evaluates it (core_v0.13.0
// megatron/training/arguments.py:302-330, a Python expression such as
// "([0]*3+[1]*58)" or "[0,1]*24"): lists of integers, '+' joining them,
// '*' repeating one by a count, parentheses. nullopt where the text is not
// such an expression or its list would pass `limit` entries.
std::optional<std::vector<std::int64_t>> layer_pattern(std::string_view text, std::size_t limit) {
  struct value {
    bool list = false;
    std::int64_t n = 0;
    std::vector<std::int64_t> items;
  };
  std::size_t at = 0;
  auto skip = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  };
  auto eat = [&](char c) {
    skip();
    if (at < text.size() && text[at] == c) return ++at, true;
    return false;
  };
  auto number = [&]() -> std::optional<std::int64_t> {
    skip();
    std::int64_t n = 0;
    auto const from = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (n > (std::int64_t{1} << 40)) return std::nullopt;
      n = n * 10 + (text[at++] - '0');
    }
    if (at == from) return std::nullopt;
    return n;
  };
  std::function<std::optional<value>()> expr;
  auto factor = [&]() -> std::optional<value> {
    if (eat('(')) {
      auto v = expr();
      if (!v || !eat(')')) return std::nullopt;
      return v;
    }
    if (eat('[')) {
      value v;
      v.list = true;
      if (eat(']')) return v;
      do {
        auto n = number();
        if (!n || v.items.size() >= limit) return std::nullopt;
        v.items.push_back(*n);
      } while (eat(','));
      if (!eat(']')) return std::nullopt;
      return v;
    }
    auto n = number();
    if (!n) return std::nullopt;
    return value{false, *n, {}};
  };
  auto term = [&]() -> std::optional<value> {
    auto v = factor();
    while (v && eat('*')) {
      auto w = factor();
      if (!w || (v->list && w->list)) return std::nullopt;
      if (!v->list && !w->list) {
        if (w->n != 0 && v->n > static_cast<std::int64_t>(limit) / w->n) return std::nullopt;
        v->n *= w->n;
        continue;
      }
      auto& list = v->list ? *v : *w;
      auto const times = v->list ? w->n : v->n;
      if (times > 0 && list.items.size() > limit / static_cast<std::size_t>(times)) return std::nullopt;
      value out{true, 0, {}};
      for (std::int64_t k = 0; k < times; ++k) out.items.insert(out.items.end(), list.items.begin(), list.items.end());
      v = std::move(out);
    }
    return v;
  };
  expr = [&]() -> std::optional<value> {
    auto v = term();
    while (v && eat('+')) {
      auto w = term();
      if (!w || v->list != w->list) return std::nullopt;
      if (!v->list) return std::nullopt;
      if (v->items.size() + w->items.size() > limit) return std::nullopt;
      v->items.insert(v->items.end(), w->items.begin(), w->items.end());
    }
    return v;
  };
  auto v = expr();
  skip();
  if (!v || !v->list || at != text.size()) return std::nullopt;
  return v->items;
}

// A warning at `at` where Megatron's split of the layers over pp x vpp
// chunks (`theirs`: each chunk's layers in chunk order, or with `by_rank`
// each pipeline rank's) is not dtplan's, which costs the plan; compared by
// the most loaded pipeline rank, the stage that bounds the step. `whose`
// names Megatron's ("the layout's").
void split_against_ours(translation& t, span at, std::int64_t pp, std::int64_t vpp,
                        std::vector<std::int64_t> const& theirs, bool by_rank, std::string_view whose) {
  std::int64_t total = 0;
  for (auto n : theirs) total += n;
  auto const chunks = pp * vpp;
  std::vector<std::int64_t> ours(static_cast<std::size_t>(pp)), theirs_by_rank(static_cast<std::size_t>(pp));
  bool same = true;
  for (std::int64_t r = 0; r < pp; ++r) ours[static_cast<std::size_t>(r)] = layers_of_rank(total, pp, vpp, r);
  if (by_rank) {
    theirs_by_rank = theirs;
    same = theirs == ours;
  } else {
    for (std::int64_t c = 0; c < chunks; ++c) {
      same = same && theirs[static_cast<std::size_t>(c)] == layers_of_chunk(total, chunks, c);
      theirs_by_rank[static_cast<std::size_t>(c % pp)] += theirs[static_cast<std::size_t>(c)];
    }
  }
  if (same) return;
  auto const mine = *std::max_element(ours.begin(), ours.end());
  auto const most = *std::max_element(theirs_by_rank.begin(), theirs_by_rank.end());
  auto const split = total % chunks == 0 ? fmt::format("{} each", total / chunks)
                                         : fmt::format("the first {} a layer more", total % chunks);
  t.diags.warning(at, fmt::format("costed as dtplan's split of {} layers over {} {}, {}, whose most loaded pipeline "
                                  "rank has {} layers{}",
                                  total, chunks, vpp > 1 ? "chunks" : "stages", split, mine,
                                  mine == most ? fmt::format(", as {} has", whose)
                                               : fmt::format("; {} has {}", whose, most)));
}

// The Megatron-Core split (uneven first or last stage, or the embedding or
// loss counted) that places `theirs` (each chunk's layers, in chunk order,
// over pp x vpp chunks) where dtplan's split does not; nullopt where
// dtplan's does or none does. The counted embedding and loss are tried
// first, then the first and last stages.
std::optional<layer_split> split_keys_of(std::vector<std::int64_t> const& theirs, std::int64_t pp, std::int64_t vpp) {
  std::int64_t layers = 0;
  for (auto n : theirs) layers += n;
  auto const places = [&](layer_split const& s) {
    if (!s.builds()) return false;
    for (std::int64_t c = 0; c < s.chunks(); ++c)
      if (s.chunk_layers(c) != theirs[static_cast<std::size_t>(c)]) return false;
    return true;
  };
  layer_split base{.layers = layers, .pp = pp, .vpp = vpp};
  if (pp <= 1 || places(base)) return std::nullopt;
  std::int64_t first = 0, last = 0;
  for (std::int64_t c = 0; c < pp * vpp; c += pp) first += theirs[static_cast<std::size_t>(c)];
  for (std::int64_t c = pp - 1; c < pp * vpp; c += pp) last += theirs[static_cast<std::size_t>(c)];
  std::vector<layer_split> tries;
  for (auto [embedding, loss] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
    auto s = base;
    s.embedding = embedding, s.loss = loss;
    tries.push_back(s);
  }
  for (auto [f, l] : {std::pair{first, last}, std::pair{first, std::int64_t{0}}, std::pair{std::int64_t{0}, last}}) {
    auto s = base;
    s.first = f, s.last = l;
    tries.push_back(s);
  }
  for (auto const& s : tries)
    if (places(s)) return s;
  return std::nullopt;
}

// The virtual stages of a --pipeline-model-parallel-layout over `pp`
// stages of `layers` layers (0: not known), checked as Megatron checks it
// (core_v0.13.0 megatron/training/arguments.py:509-519,
// pipeline_parallel_layer_layout.py:20-110); the training keys of
// Megatron-Core's own split where the layout is one (split_keys_of), else
// a warning where its split is not dtplan's, which costs the plan. nullopt
// after an error.
std::optional<std::int64_t> read_layout(job_reader& job, entry const& e, std::int64_t pp, std::int64_t layers) {
  auto& t = job.out();
  auto const at = job.value_at(&e);
  auto text = job.text(e);
  if (!text) return std::nullopt;
  constexpr std::size_t limit = 1 << 20;
  auto unrolled = unroll_layout(*text, limit);
  if (!unrolled) {
    t.diags.error(at, fmt::format("'--pipeline-model-parallel-layout' unrolls to more than {} layers", limit));
    return std::nullopt;
  }
  std::vector<std::string_view> stages;
  std::string_view rest = *unrolled;
  for (;;) {
    auto const bar = rest.find('|');
    stages.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  std::int64_t embeddings = 0, losses = 0, decoders = 0, mtp = 0;
  for (std::size_t i = 0; i < unrolled->size(); ++i) {
    char const c = (*unrolled)[i];
    switch (c) {
      case 'E': ++embeddings; break;
      case 'L': ++losses; break;
      case 't': ++decoders; break;
      case 'm': ++mtp; break;
      case '|': break;
      default:
        t.diags.error(at, fmt::format("'--pipeline-model-parallel-layout' has '{}' where Megatron-LM reads E "
                                      "(embedding), t (transformer layer), m (MTP layer), L (loss) and '|'",
                                      dsl::escaped(dsl::character_at(*unrolled, i))));
        return std::nullopt;
    }
  }
  auto const chunks = static_cast<std::int64_t>(stages.size());
  if (chunks % pp != 0) {
    t.diags.error(at, fmt::format("'--pipeline-model-parallel-layout' has {} stage{}, not a multiple of the "
                                  "pipeline's {}",
                                  chunks, chunks == 1 ? "" : "s", pp));
    return std::nullopt;
  }
  if (embeddings != 1 || losses != 1 || unrolled->front() != 'E' || unrolled->back() != 'L') {
    t.diags.error(at, "'--pipeline-model-parallel-layout' must start with the embedding E and end with the loss L, "
                      "each written once");
    return std::nullopt;
  }
  if (layers > 0 && decoders != layers) {
    t.diags.error(at, fmt::format("'--pipeline-model-parallel-layout' places {} transformer layers; the model has {}",
                                  decoders, layers));
    return std::nullopt;
  }
  if (mtp > 0) {
    t.diags.error(at, "'--pipeline-model-parallel-layout' places multi-token prediction layers (m), which "
                      "Megatron-LM core_v0.13.0 does not run in a layout (pipeline_parallel_layer_layout.py:109-110): "
                      "without one it runs them on the last stage");
    return std::nullopt;
  }
  std::vector<std::int64_t> theirs(static_cast<std::size_t>(chunks));
  for (std::int64_t c = 0; c < chunks; ++c)
    theirs[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(
        std::count(stages[static_cast<std::size_t>(c)].begin(), stages[static_cast<std::size_t>(c)].end(), 't'));
  // A layout that places the layers as Megatron-Core's uneven first/last
  // stages or its counted embedding and loss would: the plan says so with
  // those keys (which the Megatron export writes back as the flags).
  if (auto own = split_keys_of(theirs, pp, chunks / pp)) {
    auto const origin = e.key_where;
    if (own->first > 0) set(t, "training", "num_layers_in_first_pipeline_stage", integer_value(own->first, at), origin);
    if (own->last > 0) set(t, "training", "num_layers_in_last_pipeline_stage", integer_value(own->last, at), origin);
    if (own->embedding)
      set(t, "training", "account_for_embedding_in_pipeline_split", boolean_value(true, at), origin);
    if (own->loss) set(t, "training", "account_for_loss_in_pipeline_split", boolean_value(true, at), origin);
  } else {
    split_against_ours(t, at, pp, chunks / pp, theirs, false, "the layout's");
  }
  return chunks / pp;
}

// Megatron-Core's uneven first and last stages (--decoder-first- and
// --decoder-last-pipeline-num-layers; nullptr where not written), checked
// as Megatron checks them (core_v0.13.0 megatron/training/arguments.py:
// 521-524, core/transformer/transformer_config.py:924-989) and split as it
// splits them (core/transformer/transformer_block.py:82-130: the middle
// ranks share the rest evenly); a warning where the split is not dtplan's.
// False after an error.
bool read_first_last(job_reader& job, entry const* first, entry const* last, std::int64_t pp, std::int64_t vpp,
                     std::int64_t layers, entry const* per_virtual) {
  auto& t = job.out();
  std::optional<std::int64_t> f, l;
  if (first && !(f = job.integer(*first))) return false;
  if (last && !(l = job.integer(*last))) return false;
  auto const* at = first ? first : last;
  if (per_virtual) {
    t.diags.error(per_virtual->key_where,
                  fmt::format("Megatron-LM takes '--num-virtual-stages-per-pipeline-rank', not '{}', with '{}'",
                              per_virtual->key, at->key));
    return false;
  }
  for (auto const* account : {"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"})
    if (auto const* e = job.find(account)) {
      t.diags.error(e->key_where, fmt::format("'{}' and '{}' are both written (Megatron-LM splits by one or the "
                                              "other)",
                                              e->key, at->key));
      return false;
    }
  if (pp == 1) {
    t.diags.warning(at->key_where, fmt::format("'{}' applies only with a pipeline: not read", at->key));
    return true;
  }
  for (auto [n, e] : {std::pair{f, first}, std::pair{l, last}})
    if (n && *n <= 0) {
      t.diags.error(job.value_at(e), fmt::format("'{}' must be larger than 0", e->key));
      return false;
    }
  // The plan says the same (training.num_layers_in_first/last_pipeline_stage);
  // the model's layers, where known here, are checked below as Megatron checks
  // them (layer_split::refusal, the strategy check's), and by the strategy
  // check where they are not.
  if (first) set(t, "training", "num_layers_in_first_pipeline_stage", integer_value(*f, job.value_at(first)),
                 first->key_where);
  if (last) set(t, "training", "num_layers_in_last_pipeline_stage", integer_value(*l, job.value_at(last)),
                last->key_where);
  if (layers <= 0) return true;  // the model's layers are not known here
  layer_split const split{.layers = layers, .pp = pp, .vpp = vpp, .first = f.value_or(0), .last = l.value_or(0)};
  if (auto why = split.refusal(); !why.empty()) {
    t.diags.error(job.value_at(at), why);
    return false;
  }
  return true;
}

// Megatron's even split, where the job writes neither a layout nor uneven
// first and last stages: the layers (and the embedding and the loss where
// the job counts them as layers) divide over the pipeline's ranks, and each
// rank's over its virtual stages (`chunks`, written at `chunks_at`:
// --num-virtual-stages-per-pipeline-rank, or with `per_chunk` the layers a
// chunk, --num-layers-per-virtual-pipeline-stage; nullopt where neither).
// Megatron-LM asserts each before it builds the model (core_v0.13.0
// megatron/training/arguments.py:536-540, 549-562; core/transformer/
// transformer_block.py:131-164; v2.6 asserts the like, of the whole model's
// layers, in megatron/arguments.py:125-135 and megatron/model/
// transformer.py:545-556). dtplan's uneven split would cost a job that never
// starts. False after an error.
bool even_split(job_reader& job, std::int64_t layers, std::int64_t pp, entry const* chunks_at,
                std::optional<std::int64_t> chunks, bool per_chunk) {
  auto& t = job.out();
  if (per_chunk && chunks && *chunks <= 0) {
    t.diags.error(job.value_at(chunks_at), fmt::format("'{}' must be larger than 0", chunks_at->key));
    return false;
  }
  if (layers <= 0 || pp <= 1) return true;  // nothing split, or the model's layers are not known here
  std::int64_t counted = layers;
  std::string with;
  for (auto [flag, what] : {std::pair{"--account-for-embedding-in-pipeline-split", "the embedding"},
                            std::pair{"--account-for-loss-in-pipeline-split", "the loss"}})
    if (job.find(flag)) {
      ++counted;
      with += with.empty() ? fmt::format(" ({} layers and {}", layers, what) : fmt::format(" and {}", what);
    }
  if (!with.empty()) with += ")";
  auto const* at = job.find("--pipeline-model-parallel-size");
  if (counted % pp != 0) {
    t.diags.error(job.value_at(at ? at : job.find("--num-layers")),
                  fmt::format("Megatron-LM splits the layers evenly over the pipeline's ranks: {} layers{} do not "
                              "divide over {}; '--decoder-first-pipeline-num-layers', "
                              "'--decoder-last-pipeline-num-layers' or '--pipeline-model-parallel-layout' split them "
                              "unevenly",
                              counted, with, pp));
    return false;
  }
  auto const per_rank = counted / pp;
  if (chunks && *chunks > 0 && per_rank % *chunks != 0) {
    t.diags.error(job.value_at(chunks_at),
                  per_chunk ? fmt::format("each pipeline rank's {} layers do not divide into chunks of {} layers",
                                          per_rank, *chunks)
                            : fmt::format("each pipeline rank's {} layers do not divide over its {} virtual stages",
                                          per_rank, *chunks));
    return false;
  }
  return true;
}

}  // namespace

void set_megatron_behaviour(job_reader& job, entry const* e, std::string_view key, bool applies, bool value) {
  auto& t = job.out();
  if (!applies) {
    if (e) t.diags.warning(e->key_where, fmt::format("'{}' does not apply to this job: not read", e->key));
    return;
  }
  set(t, "training", key, boolean_value(value, job.key_at(e)), job.key_at(e));
}

bool set_megatron_recomputation(job_reader& job, std::string_view mode, entry const* mode_at, bool granularity,
                                entry const* method, entry const* layers, std::string_view full) {
  auto& t = job.out();
  if (mode == "full" && granularity) {
    auto m = method ? job.text(*method) : std::optional<std::string>("uniform");
    auto n = layers ? job.integer(*layers) : std::optional<std::int64_t>(1);
    if (!m || !n) return false;
    if (*m != "uniform" || *n != 1)
      t.diags.warning(job.key_at(method ? method : layers),
                      fmt::format("recomputing {} layers at a time ('{}') is costed as checkpoint = full, every layer",
                                  *n, *m));
  } else {
    if (method) t.diags.warning(method->key_where, fmt::format("'{}' is read only with '{}'", method->key, full));
    if (layers) t.diags.warning(layers->key_where, fmt::format("'{}' is read only with '{}'", layers->key, full));
  }
  set_strategy(t, "checkpoint", identifier_value(std::string(mode), job.key_at(mode_at)), job.key_at(mode_at));
  return true;
}

void set_megatron_bucket(job_reader& job, double bytes, entry const* at) {
  auto& t = job.out();
  set(t, "training", "grad_bucket", identifier_value("fixed", job.key_at(at)), job.key_at(at));
  set(t, "training", "ddp_bucket_size", bytes_value(bytes, job.value_at(at)), job.key_at(at));
}

megatron_common import_megatron_args(job_reader& job, context const& ctx, bool deepspeed) {
  auto& t = job.out();
  auto const origin = job.origin();
  megatron_common c;
  auto key_at = [&](entry const* e) { return job.key_at(e); };
  auto value_at = [&](entry const* e) { return job.value_at(e); };
  auto integer = [&](std::string_view key) -> std::pair<std::optional<std::int64_t>, entry const*> {
    auto const* e = job.find(key);
    if (!e) return {std::nullopt, nullptr};
    return {job.integer(*e), e};
  };
  bool failed = false;
  auto model_int = [&](std::string_view flag, std::string_view key) -> std::optional<std::int64_t> {
    auto [v, e] = integer(flag);
    if (e && !v) failed = true;
    if (v) set(t, "model", key, integer_value(*v, value_at(e)), key_at(e));
    return v;
  };

  // The model's shape. When the arguments give it (--num-layers), the
  // arguments they leave out take Megatron's defaults: a GELU MLP, tied
  // embeddings, dropout 0.1.
  c.layers = model_int("--num-layers", "layers");
  auto const hidden = model_int("--hidden-size", "hidden");
  auto const heads = model_int("--num-attention-heads", "heads");
  auto const ffn = model_int("--ffn-hidden-size", "ffn");
  model_int("--seq-length", "seq_len");
  model_int("--vocab-size", "vocab");
  // --kv-channels: each head's width, hidden / heads unless written
  // (core_v0.13.0 megatron/training/arguments.py:771-773).
  model_int("--kv-channels", "head_dim");
  job.find("--max-position-embeddings");  // at least --seq-length; Megatron asserts it
  bool const describes = c.layers.has_value();
  if (describes && !ctx.file_has_model) {
    // The model pretrain_gpt.py trains, as the arguments describe it.
    auto const at = key_at(job.find("--num-layers"));
    ast::block b;
    b.where = b.header = at;
    b.kind = {at, "model"};
    b.name = ast::identifier{at, "pretrain_gpt"};
    t.blocks.push_back(std::move(b));
  }
  bool const swiglu = job.flag("--swiglu") != nullptr;
  auto const* untie = job.flag("--untie-embeddings-and-output-weights");
  auto const* swiglu_at = job.flag("--swiglu");
  // Linear layers without biases are what dtplan counts for a SwiGLU model;
  // a GELU model is counted with GPT's biases (params.cpp), a few vectors
  // of the hidden size a layer.
  bool const gated = describes ? swiglu : ctx.prior && ctx.prior->model.mlp == mlp_kind::swiglu;
  if (auto const* plain = job.flag("--disable-bias-linear"); plain && !gated)
    t.diags.warning(plain->key_where, "Megatron-LM's '--disable-bias-linear' with a GELU MLP is not modelled: costed "
                                      "with GPT's biases, a few vectors of the hidden size a layer");
  // Rotary embedding over the whole head (1.0) is what dtplan costs.
  if (auto const* rotary = job.find("--rotary-percent")) {
    if (auto v = job.real(*rotary); !v)
      failed = true;
    else if (*v != 1.0)
      not_modelled(t, *rotary, "rotary share of each head", fmt::format("{}", *v), "1.0");
  }
  // --multi-latent-attention with its ranks and head widths, Megatron-LM's
  // defaults where unwritten (core_v0.13.0 arguments.py:1458, 2819-2828:
  // no q rank, kv rank 32, heads 128 + 64 rotary, values 128); with it
  // --qk-layernorm is the compressed tensors' norms (gpt_layer_specs.py:
  // 124-150), which dtplan's multi-latent attention always has.
  auto const* mla = job.flag("--multi-latent-attention");
  if (mla || describes) {
    auto const at = key_at(mla);
    auto mla_int = [&](std::string_view flag, std::string_view key, std::int64_t fallback) {
      auto [v, e] = integer(flag);
      if (e && !v) failed = true;
      std::int64_t const value = !mla ? 0 : v ? *v : fallback;
      set(t, "model", key, integer_value(value, e ? value_at(e) : at), e ? key_at(e) : at);
    };
    mla_int("--q-lora-rank", "q_lora_rank", 0);
    mla_int("--kv-lora-rank", "kv_lora_rank", 32);
    mla_int("--qk-pos-emb-head-dim", "qk_rope_head_dim", 64);
    mla_int("--v-head-dim", "v_head_dim", 128);
    if (mla) {
      auto [v, e] = integer("--qk-head-dim");
      if (e && !v) failed = true;
      set(t, "model", "head_dim", integer_value(v ? *v : 128, e ? value_at(e) : at), e ? key_at(e) : at);
    }
  }
  // --mtp-num-layers: multi-token prediction modules after the last layer
  // (core_v0.13.0 arguments.py:1460-1464; none unless written).
  {
    auto [v, e] = integer("--mtp-num-layers");
    if (e && !v) failed = true;
    if (v || (!e && describes)) set(t, "model", "mtp_layers", integer_value(v.value_or(0), value_at(e)), key_at(e));
  }
  // --qk-layernorm: a norm of the model's kind on each head's queries and
  // keys (core_v0.13.0 arguments.py:2690, transformer/attention.py:828-846).
  auto const* qk = job.flag("--qk-layernorm");
  if (mla) {
    set(t, "model", "qk_norm", boolean_value(false, key_at(qk)), key_at(qk ? qk : mla));
    if (!qk)
      t.diags.warning(mla->key_where, "Megatron-LM runs this multi-latent attention without its compressed queries' "
                                      "and keys' norms (no --qk-layernorm): costed with them, as DeepSeek's");
  } else if (qk || describes) {
    set(t, "model", "qk_norm", boolean_value(qk != nullptr, key_at(qk)), key_at(qk));
  }
  if (describes) {
    set(t, "model", "mlp", identifier_value(swiglu ? "swiglu" : "gelu", key_at(swiglu_at)), key_at(swiglu_at));
    set(t, "model", "tied_embeddings", boolean_value(untie == nullptr, key_at(untie)), key_at(untie));
    if (hidden && !ffn) {
      // Megatron's default: 4h, or 2/3 of it rounded down to 64 for SwiGLU
      // (megatron/training/arguments.py, validate_args).
      auto const f = swiglu ? (saturating_product({8, *hidden}) / 3) / 64 * 64 : saturating_product({4, *hidden});
      set(t, "model", "ffn", integer_value(f, value_at(job.find("--hidden-size"))), key_at(job.find("--hidden-size")));
    }
  }
  // The normalisation and the positions, at Megatron's defaults when the
  // arguments leave them out (LayerNorm, learned absolute positions):
  // Megatron-LM's --normalization LayerNorm|RMSNorm and
  // --position-embedding-type learned_absolute|rope (core_v0.13.0
  // megatron/training/arguments.py); Megatron-DeepSpeed's --normalization
  // layernorm|rmsnorm and --use-rotary-position-embeddings (4efb479), and
  // BigScience's fork's --position-embedding-type alibi (BLOOM).
  if (describes) {
    auto const* norm = job.find("--normalization");
    std::string norm_name = "layernorm";
    if (norm) {
      auto v = job.text(*norm);
      if (!v) {
        failed = true;
      } else if (*v == "RMSNorm" || (deepspeed && *v == "rmsnorm")) {
        norm_name = "rmsnorm";
      } else if (!(*v == "LayerNorm" || (deepspeed && *v == "layernorm"))) {
        t.diags.error(value_at(norm), fmt::format("expected {} for '--normalization', got '{}'",
                                                  deepspeed ? "'layernorm' or 'rmsnorm'" : "'LayerNorm' or 'RMSNorm'",
                                                  dsl::escaped(*v)));
        failed = true;
      }
    }
    set(t, "model", "norm", identifier_value(norm_name, norm ? value_at(norm) : origin), key_at(norm));
    auto const* type = job.find("--position-embedding-type");
    auto const* rotary_flag = deepspeed ? job.flag("--use-rotary-position-embeddings") : nullptr;
    std::string position = rotary_flag ? "rotary" : "learned";
    if (type) {
      auto v = job.text(*type);
      if (!v) {
        failed = true;
      } else if (*v == "rope") {
        position = "rotary";
      } else if (*v == "alibi") {
        position = "alibi";
      } else if (*v != "learned_absolute") {
        t.diags.warning(type->key_where, fmt::format("position embedding '{}' is not modelled: costed as learned "
                                                     "absolute positions",
                                                     dsl::escaped(*v)));
      }
    }
    auto const* at = type ? type : rotary_flag;
    set(t, "model", "position_embedding", identifier_value(position, type ? value_at(type) : key_at(at)), key_at(at));
  }
  if (deepspeed) {
    auto [kv, e] = integer("--num-key-value-heads");
    if (e && !kv) failed = true;
    if (kv) set(t, "model", "kv_heads", integer_value(*kv, value_at(e)), key_at(e));
    else if (heads && describes) set(t, "model", "kv_heads", integer_value(*heads, origin), origin);
  } else {
    auto const* gqa = job.flag("--group-query-attention");
    auto [groups, e] = integer("--num-query-groups");
    if (e && !groups) failed = true;
    if (gqa) {
      auto const n = groups.value_or(1);
      set(t, "model", "kv_heads", integer_value(n, value_at(e ? e : gqa)), key_at(e ? e : gqa));
    } else if (heads && describes) {
      set(t, "model", "kv_heads", integer_value(*heads, origin), origin);
      if (e) t.diags.warning(e->key_where, "'--num-query-groups' is read only with '--group-query-attention'");
    }
  }
  {
    auto const* ad = job.find("--attention-dropout");
    auto const* hd = job.find("--hidden-dropout");
    std::optional<double> a = ad ? job.real(*ad) : std::optional<double>(0.1);
    std::optional<double> h = hd ? job.real(*hd) : std::optional<double>(0.1);
    if (!a || !h) failed = true;
    else if (describes || ad || hd)
      set(t, "model", "dropout", boolean_value(*a > 0 || *h > 0, value_at(ad ? ad : hd)), key_at(ad ? ad : hd));
  }

  // Precision.
  auto const* bf16 = job.flag("--bf16");
  auto const* fp16 = job.flag("--fp16");
  auto const* fp8 = job.find("--fp8-format");
  if (fp8 && !job.text(*fp8)) failed = true;
  if (bf16 && fp16) {
    t.diags.error(fp16->key_where, "'--fp16' and '--bf16' are both written");
    failed = true;
  }
  // NVFP4 (core_v0.15.0 and later: arguments.py:1353-1360; --fp4-recipe
  // defaults to nvfp4, Transformer Engine's NVFP4BlockScaling).
  auto const* fp4 = job.find("--fp4-format");
  if (fp4) {
    if (auto v = job.text(*fp4); !v) failed = true;
    else if (*v != "e2m1") {
      t.diags.error(job.value_at(fp4), fmt::format("expected 'e2m1' for '--fp4-format', got '{}'", dsl::escaped(*v)));
      failed = true;
    }
    if (fp8) {
      t.diags.error(fp4->key_where, "'--fp4-format' and '--fp8-format' are both written (Megatron-LM refuses both)");
      failed = true;
    }
    if (auto const* recipe = job.find("--fp4-recipe")) {
      if (auto v = job.text(*recipe); !v) failed = true;
      else if (*v != "nvfp4")
        not_modelled(t, *recipe, "fp4 recipe", *v, "nvfp4");
    }
  }
  c.prec = fp4 ? precision::fp4 : fp8 ? precision::fp8 : bf16 ? precision::bf16 : fp16 ? precision::fp16 : precision::fp32;
  c.prec_where = key_at(fp4 ? fp4 : fp8 ? fp8 : bf16 ? bf16 : fp16);
  set(t, "model", "precision", identifier_value(name(*c.prec), c.prec_where), c.prec_where);

  // The batch and the parallel degrees.
  auto parallel = [&](std::string_view flag, std::string_view key, std::optional<std::int64_t>& into) {
    auto [v, e] = integer(flag);
    if (e && !v) failed = true;
    into = v.value_or(1);
    set_strategy(t, key, integer_value(*into, value_at(e)), key_at(e));
  };
  parallel("--tensor-model-parallel-size", "tp", c.tp);
  parallel("--pipeline-model-parallel-size", "pp", c.pp);
  if (!deepspeed) parallel("--context-parallel-size", "cp", c.cp);
  else c.cp = 1, set_strategy(t, "cp", integer_value(1, origin), origin);
  // A mixture of experts (core_v0.13.0 arguments.py:2700-2755): --num-experts
  // makes every layer's MLP that many experts, each token routed to
  // --moe-router-topk of them (2 unless written), spread over
  // --expert-model-parallel-size ranks of the data-parallel ones. The
  // experts' tensor parallelism defaults to tp (arguments.py:425-426) and
  // their MLP's width to --ffn-hidden-size (arguments.py:943-945), which is
  // what dtplan costs. Megatron-DeepSpeed spells its experts otherwise.
  if (!deepspeed) {
    auto [n, e] = integer("--num-experts");
    if (e && !n) failed = true;
    if (n) {
      set(t, "model", "experts", integer_value(*n, value_at(e)), key_at(e));
      auto [k, ke] = integer("--moe-router-topk");
      if (ke && !k) failed = true;
      set(t, "model", "experts_per_token", integer_value(k.value_or(2), value_at(ke ? ke : e)), key_at(ke ? ke : e));
    } else if (describes) {
      set(t, "model", "experts", integer_value(1, origin), origin);
      set(t, "model", "experts_per_token", integer_value(1, origin), origin);
    }
    auto [ep, epe] = integer("--expert-model-parallel-size");
    if (epe && !ep) failed = true;
    set_strategy(t, "ep", integer_value(ep.value_or(1), value_at(epe)), key_at(epe));
    // The tokens' trip to their experts: Megatron-LM's default gathers
    // every token over the tp x ep ranks (arguments.py:2790-2793,
    // moe/token_dispatcher.py:196-330); alltoall sends each its top-k
    // copies; flex is DeepEP's, which Megatron-Core runs only with
    // --moe-enable-deepep and refuses that flag without it
    // (token_dispatcher.py:1160-1162, transformer_config.py:719-721).
    // Looked up only where it applies: a dense job's is left unread, and
    // said so.
    if (n) {
      auto const* dispatcher = job.find("--moe-token-dispatcher-type");
      auto const* deepep = job.flag("--moe-enable-deepep");
      std::optional<std::string> v = dispatcher ? job.text(*dispatcher) : std::optional<std::string>("allgather");
      auto const& kinds = find_key(block_kind::training, "moe_token_dispatcher")->choices;
      if (!v) {
        failed = true;
      } else if (*v == "flex" && !deepep) {
        t.diags.error(value_at(dispatcher), "'--moe-token-dispatcher-type flex' runs DeepEP, which needs "
                                            "'--moe-enable-deepep': Megatron-Core asserts it");
        failed = true;
      } else if (*v != "flex" && deepep) {
        t.diags.error(key_at(deepep), fmt::format("'--moe-enable-deepep' needs '--moe-token-dispatcher-type flex', "
                                                  "not {}: Megatron-Core refuses DeepEP with another dispatcher",
                                                  dsl::escaped(*v)));
        failed = true;
      } else if (std::find(kinds.begin(), kinds.end(), *v) != kinds.end()) {
        set(t, "training", "moe_token_dispatcher", identifier_value(*v, value_at(dispatcher)), key_at(dispatcher));
      } else {
        t.diags.error(value_at(dispatcher), fmt::format("'--moe-token-dispatcher-type' takes allgather, alltoall or "
                                                        "flex, not '{}'",
                                                        dsl::escaped(*v)));
        failed = true;
      }
    }
    bool shared_expert = false;
    if (n) {
      // 1: each expert whole on its rank, the expert grid over tp x dp x cp
      // (core_v0.13.0 arguments.py --expert-tensor-parallel-size, tp when
      // unwritten; parallel_state.py's expert rank generator). Other sizes
      // below tp are not modelled.
      if (auto [etp, etpe] = integer("--expert-tensor-parallel-size"); etp && *etp == 1 && *c.tp > 1)
        set_strategy(t, "etp", integer_value(1, value_at(etpe)), key_at(etpe));
      else if (etp && *etp != *c.tp)
        not_modelled(t, *etpe, "expert tensor-parallel size", fmt::format("{}", *etp), fmt::format("{} (tp)", *c.tp));
      // Each expert's width, --ffn-hidden-size unless written
      // (core_v0.13.0 arguments.py:943-945).
      model_int("--moe-ffn-hidden-size", "expert_ffn");
      // A shared expert beside the routed ones (arguments.py
      // --moe-shared-expert-intermediate-size; none unless written).
      shared_expert = model_int("--moe-shared-expert-intermediate-size", "shared_expert_ffn").value_or(0) > 0;
      // A capacity per expert, tokens past it dropped, or padded up to it
      // (core_v0.13.0 transformer_config.py --moe-expert-capacity-factor,
      // --moe-pad-expert-input-to-capacity; dropless unless written).
      if (auto const* factor = job.find("--moe-expert-capacity-factor")) {
        if (auto c = job.real(*factor); !c)
          failed = true;
        else
          set(t, "model", "capacity_factor", real_value(*c, value_at(factor)), key_at(factor));
      }
      if (auto const* pad = job.flag("--moe-pad-expert-input-to-capacity"))
        set(t, "model", "pad_to_capacity", boolean_value(true, key_at(pad)), key_at(pad));
      // Group-limited routing (core_v0.13.0 transformer_config.py:410-426,
      // 1143-1161; arguments.py:2757-2762): the lowering checks the two as
      // Megatron-Core asserts them.
      for (auto [flag, key] : {std::pair{"--moe-router-num-groups", "router_groups"},
                               std::pair{"--moe-router-group-topk", "router_group_topk"}})
        if (auto [g, ge] = integer(flag); ge && !g)
          failed = true;
        else if (g)
          set(t, "model", key, integer_value(*g, value_at(ge)), key_at(ge));
      // Which layers are mixtures: every N-th from the first (an integer), or
      // a list of 0 and 1 a layer (core_v0.13.0 models/gpt/
      // gpt_layer_specs.py:446-474). dtplan's dense_layers and moe_layer_freq
      // say a run of dense layers first, then every N-th a mixture; another
      // list is costed as every layer a mixture.
      if (auto const* freq = job.find("--moe-layer-freq")) {
        auto const v = job.text(*freq);
        if (!v) {
          failed = true;
        } else if (v->find('[') == std::string_view::npos) {
          if (auto [f, fe] = integer("--moe-layer-freq"); !f || *f < 1)
            failed = true;
          else if (*f != 1)
            set(t, "model", "moe_layer_freq", integer_value(*f, value_at(fe)), key_at(fe));
        } else if (auto pattern = layer_pattern(*v, 1 << 20); !pattern) {
          t.diags.error(value_at(freq), fmt::format("'--moe-layer-freq' is not a list of 0 and 1 as Megatron-LM "
                                                    "evaluates it (such as \"([0]*3+[1]*58)\"): '{}'",
                                                    dsl::escaped(*v)));
          failed = true;
        } else {
          auto const& l = *pattern;
          auto const size = static_cast<std::int64_t>(l.size());
          auto const first = std::find(l.begin(), l.end(), 1) - l.begin();
          auto const next = first < size ? std::find(l.begin() + first + 1, l.end(), 1) - l.begin() : size;
          std::int64_t const every = next < size ? next - first : std::max<std::int64_t>(1, size - first);
          bool fits = first < size;
          for (std::int64_t i = 0; fits && i < size; ++i)
            fits = l[static_cast<std::size_t>(i)] == ((i >= first && (i - first) % every == 0) ? 1 : 0);
          std::int64_t const layers = c.layers ? *c.layers : ctx.prior ? ctx.prior->model.layers : 0;
          if (layers > 0 && size != layers) {
            t.diags.error(value_at(freq), fmt::format("'--moe-layer-freq' names {} layers; the model has {}", size,
                                                      layers));
            failed = true;
          } else if (!fits) {
            not_modelled(t, *freq, "MoE layer pattern", *v,
                         "1: every layer a mixture of experts (dtplan says dense layers first, then every N-th a "
                         "mixture)");
          } else {
            if (first > 0) set(t, "model", "dense_layers", integer_value(first, value_at(freq)), key_at(freq));
            if (every > 1) set(t, "model", "moe_layer_freq", integer_value(every, value_at(freq)), key_at(freq));
          }
        }
      }
    }
    // The local experts as one grouped GEMM (TEGroupedMLP) with
    // --moe-grouped-gemm; one after another (SequentialMLP) without it
    // (core_v0.13.0 transformer_config.py:461, arguments.py:2725).
    auto const* grouped = job.flag("--moe-grouped-gemm");
    set_megatron_behaviour(job, grouped, "grouped_gemm", n && *n > 1, grouped != nullptr);
    // Transformer Engine's fused permutation with --moe-permute-fusion,
    // PyTorch's indexing operators without (transformer_config.py:513).
    auto const* fusion = job.flag("--moe-permute-fusion");
    set_megatron_behaviour(job, fusion, "permute_fusion", n && *n > 1, fusion != nullptr);
    // The shared expert on a side stream under the all-to-alls
    // (transformer_config.py:378); it needs a shared expert.
    auto const* overlap = job.flag("--moe-shared-expert-overlap");
    set_megatron_behaviour(job, overlap, "shared_expert_overlap", n && *n > 1 && shared_expert, overlap != nullptr);
  } else {
    // Megatron-DeepSpeed's experts are DeepSpeed-MoE's (v0.17.5 deepspeed/
    // moe/sharded_moe.py: capacity-bound top-k gating, :161-170; dispatch and
    // combine as dense einsums over [tokens, experts, capacity], :612, :672;
    // a mixture every --expert-interval-th layer, 2 unless written,
    // Megatron-DeepSpeed 4efb479 megatron/arguments.py:614): not the
    // all-to-all of Megatron-LM's that dtplan costs. --num-experts 1 is a
    // dense model; more is refused rather than costed as a dense one.
    if (auto [n, e] = integer("--num-experts"); e && !n) {
      failed = true;
    } else if (n && *n > 1) {
      t.diags.error(value_at(e), fmt::format("Megatron-DeepSpeed's mixture of experts (DeepSpeed-MoE's capacity-bound "
                                             "gating and einsum dispatch) is not modelled: dtplan costs Megatron-LM's "
                                             "experts (--from megatron), not {} experts here as a dense model",
                                             *n));
      return c;
    }
    for (auto prefix : {"--topk", "--expert-interval", "--mlp-type", "--moe-", "--disable-moe-token-dropping",
                        "--create-moe-param-group", "--enable-expert-tensor-parallelism"})
      job.not_costed(prefix, "it applies only to a mixture of experts (--num-experts above 1)");
    set_strategy(t, "ep", integer_value(1, origin), origin);
  }
  auto const* sp = job.flag("--sequence-parallel");
  c.sequence_parallel = sp && *c.tp > 1;
  set_strategy(t, "sequence_parallel", boolean_value(c.sequence_parallel, key_at(sp)), key_at(sp));
  {
    auto [micro, e] = integer("--micro-batch-size");
    if (e && !micro) failed = true;
    c.micro_batch = micro;
    if (micro) set_strategy(t, "micro_batch", integer_value(*micro, value_at(e)), key_at(e));
    auto [global, g] = integer("--global-batch-size");
    if (g && !global) failed = true;
    c.global_batch = global;
  }
  if (auto const* ramp = job.find("--rampup-batch-size"))
    t.diags.warning(ramp->key_where, fmt::format("{}'s '--rampup-batch-size' is not modelled: the plan is costed at "
                                                 "the full global batch",
                                                 deepspeed ? "Megatron-DeepSpeed" : "Megatron-LM"));
  {
    auto [n, e] = integer("--num-layers-per-virtual-pipeline-stage");
    auto [v, ve] = integer("--num-virtual-stages-per-pipeline-rank");
    if ((e && !n) || (ve && !v)) failed = true;
    if (e && ve) {
      t.diags.error(ve->key_where, fmt::format("'{}' and '{}' are both written (Megatron-LM takes one; "
                                               "core_v0.13.0 arguments.py:496-507)",
                                               e->key, ve->key));
      failed = true;
    }
    std::int64_t const layers = c.layers ? *c.layers : ctx.prior ? ctx.prior->model.layers : 0;
    if (v) c.virtual_stages = *v;
    else if (n && layers > 0 && *n > 0 && *c.pp > 0)
      c.virtual_stages = std::max<std::int64_t>(1, layers / saturating_product({*c.pp, *n}));
    auto const* at = ve ? ve : e;
    // A stage a chunk, written out (core_v0.13.0 and later); it names the
    // virtual stages itself and takes no other split argument
    // (arguments.py:496-507; transformer_config.py:874-891).
    if (auto const* layout = deepspeed ? nullptr : job.find("--pipeline-model-parallel-layout")) {
      entry const* other = e ? e : ve;
      for (auto flag : {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
                        "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"})
        if (!other) other = job.find(flag);
      if (other) {
        t.diags.error(other->key_where, fmt::format("'{}' and '--pipeline-model-parallel-layout' are both written "
                                                    "(Megatron-LM takes the layout alone)",
                                                    other->key));
        failed = true;
      } else if (auto vpp = read_layout(job, *layout, *c.pp > 0 ? *c.pp : 1, layers)) {
        c.virtual_stages = *vpp;
        at = layout;
      } else {
        failed = true;
      }
    } else if (!deepspeed) {
      auto const* first = job.find("--decoder-first-pipeline-num-layers");
      auto const* last = job.find("--decoder-last-pipeline-num-layers");
      if ((first || last) && !read_first_last(job, first, last, *c.pp > 0 ? *c.pp : 1,
                                              std::max<std::int64_t>(1, c.virtual_stages), layers, v ? nullptr : e))
        failed = true;
      else if (!first && !last && !(e && ve) && !even_split(job, layers, *c.pp, n ? e : ve, n ? n : v, n.has_value()))
        failed = true;
    }
    set_strategy(t, "virtual_stages", integer_value(c.virtual_stages, value_at(at)), key_at(at));
  }
  // The embedding and the loss counted as a layer each in the pipeline's
  // split (Megatron-Core), as the plan says it.
  if (!deepspeed)
    for (auto [flag, key] : {std::pair{"--account-for-embedding-in-pipeline-split",
                                       "account_for_embedding_in_pipeline_split"},
                             std::pair{"--account-for-loss-in-pipeline-split", "account_for_loss_in_pipeline_split"}})
      if (auto const* e = job.flag(flag)) set(t, "training", key, boolean_value(true, key_at(e)), key_at(e));

  // Recomputation, as each Megatron reads its flags. Megatron-DeepSpeed,
  // and Megatron-LM before v3.0 (2022-07), spell full recomputation
  // --checkpoint-activations (its chunk --checkpoint-num-layers); Megatron-LM
  // from c1e0689d92 (2021-08) to v3.0 also --activations-checkpoint-method
  // uniform|block with --activations-checkpoint-num-layers (MLM 42d1dd4538
  // megatron/arguments.py:106-112, 474-494). v3.0 named them --recompute-*
  // (bbab79f869) and still read --checkpoint-activations as full, uniform
  // recomputation over any granularity, --recompute-activations (selective)
  // over both (bbab79f869 megatron/arguments.py:107-119), until 3e71ad9c62
  // (2023-04) made it exit.
  auto const* granularity = job.find("--recompute-granularity");
  auto const* activations = job.flag("--recompute-activations");
  auto const* checkpoint_activations = job.flag("--checkpoint-activations");
  auto const* legacy_method = deepspeed ? nullptr : job.find("--activations-checkpoint-method");
  bool const renamed = granularity || activations;  // the job spells v3.0's names
  if (legacy_method && renamed) {
    t.diags.error(legacy_method->key_where,
                  fmt::format("'{}' is Megatron-LM's before v3.0 (2022-07) and '{}' from it: the job mixes two "
                              "versions' arguments",
                              legacy_method->key, (granularity ? granularity : activations)->key));
    return c;
  }
  if (legacy_method && c.sequence_parallel) {
    t.diags.error(legacy_method->key_where,
                  fmt::format("'{}' is Megatron-LM's before cfd2e21607 (2022-04) and '--sequence-parallel' from it: "
                              "the job mixes two versions' arguments",
                              legacy_method->key));
    return c;
  }
  if (!deepspeed) c.legacy = checkpoint_activations ? checkpoint_activations : legacy_method;
  c.before_sequence_parallel = legacy_method;
  entry const* method = nullptr;
  entry const* layers = nullptr;
  if (c.legacy && !renamed) {
    method = legacy_method;
    layers = job.find("--activations-checkpoint-num-layers");
    if (!layers) layers = job.find("--checkpoint-num-layers");
  } else {
    // Beside --checkpoint-activations v3.0 took the method as uniform.
    if (!c.legacy) method = job.find("--recompute-method");
    layers = job.find("--recompute-num-layers");
  }
  std::string mode = "none";
  entry const* mode_at = nullptr;
  if (c.legacy && activations) {
    mode = "selective", mode_at = activations;
  } else if (c.legacy) {
    mode = "full", mode_at = c.legacy;
    if (granularity)
      t.diags.warning(granularity->key_where, fmt::format("'{}' is read as full recomputation over '{}', as "
                                                          "Megatron-LM did from v3.0 until it refused the flag",
                                                          c.legacy->key, granularity->key));
  } else if (granularity) {
    auto g = job.text(*granularity);
    if (!g) failed = true;
    else if (*g == "full" || *g == "selective") mode = *g, mode_at = granularity;
    else {
      t.diags.error(value_at(granularity), fmt::format("'--recompute-granularity' is 'full' or 'selective', not '{}'",
                                                       dsl::escaped(*g)));
      failed = true;
    }
  } else if (activations) {
    mode = "selective", mode_at = activations;
  } else if (checkpoint_activations) {
    mode = "full", mode_at = checkpoint_activations;  // Megatron-DeepSpeed's
  }
  if (!set_megatron_recomputation(job, mode, mode_at, granularity != nullptr || c.legacy != nullptr, method, layers,
                                  c.legacy && !renamed ? "--checkpoint-activations" : "--recompute-granularity full"))
    failed = true;
  // --recompute-modules: what selective recomputation recomputes, the core
  // attention unless written (core_v0.13.0 arguments.py:1768,
  // transformer_config.py:289-303, 813-836).
  if (auto const* modules = deepspeed ? nullptr : job.find("--recompute-modules")) {
    auto const names = job.texts(*modules);
    if (!names) return c;
    // Megatron-LM's names are dtplan's choices.
    auto const& choices = find_key(block_kind::training, "recompute_modules")->choices;
    ast::set chosen{value_at(modules), {}};
    for (auto const& n : *names) {
      if (std::find(choices.begin(), choices.end(), n) != choices.end()) {
        chosen.items.push_back(ast::identifier{value_at(modules), n});
      } else {
        std::vector<std::string> const most(choices.begin(), choices.end() - 1);
        t.diags.error(value_at(modules), fmt::format("'--recompute-modules' takes {} or {}, not '{}'",
                                                     fmt::join(most, ", "), choices.back(), dsl::escaped(n)));
        return c;
      }
    }
    if (!chosen.items.empty()) set(t, "training", "recompute_modules", chosen, modules->key_where);
    if (mode != "selective")
      t.diags.warning(modules->key_where, "'--recompute-modules' applies to '--recompute-granularity selective'; "
                                          "this job does not recompute selectively");
  }
  set_strategy(t, "order", string_value("tp-cp-dp-pp", origin), origin);

  if (auto const* opt = job.find("--optimizer")) {
    auto v = job.text(*opt);
    if (!v) {
      failed = true;
    } else if (*v == "sgd") {
      auto const* momentum = job.find("--sgd-momentum");
      auto m = momentum ? job.real(*momentum) : std::optional<double>(0.9);
      if (!m) failed = true;
      else set(t, "model", "optimizer", identifier_value(*m > 0 ? "sgd_momentum" : "sgd", value_at(opt)), opt->key_where);
    } else if (*v == "adam") {
      if (ctx.prior && ctx.prior->model.optimizer != optimizer_kind::adam &&
          ctx.prior->model.optimizer != optimizer_kind::adamw)
        set(t, "model", "optimizer", identifier_value("adam", value_at(opt)), opt->key_where);
    } else {
      t.diags.warning(opt->key_where, fmt::format("{}'s optimizer '{}' is not modelled: costed as the model's",
                                                  deepspeed ? "Megatron-DeepSpeed" : "Megatron-LM", dsl::escaped(*v)));
    }
  }
  for (auto flag : not_costed_arguments) job.not_costed(flag);
  if (failed && !t.diags.has_errors()) t.diags.error(origin, "the job's arguments could not be read");
  return c;
}

namespace {

// Derives the global batch Megatron takes when --global-batch-size is
// left out (micro-batch x data-parallel ranks), and dp.
void batch_and_dp(job_reader& job, context const& ctx, megatron_common const& c) {
  auto& t = job.out();
  auto const origin = job.origin();
  auto const* g = job.find("--global-batch-size");
  std::optional<std::int64_t> dp;
  if (c.tp && c.pp && c.cp) dp = ranks_left(ctx, {*c.tp, *c.pp, *c.cp});
  if (dp) set_strategy(t, "dp", integer_value(*dp, origin), origin);
  if (c.global_batch) {
    set(t, "training", "global_batch", integer_value(*c.global_batch, g->val ? g->val->where : g->key_where),
        g->key_where);
  } else if (c.micro_batch) {
    auto const* m = job.find("--micro-batch-size");
    set(t, "training", "global_batch", integer_value(saturating_product({*c.micro_batch, dp.value_or(1)}), m->val->where),
        m->key_where);
  }
}

}  // namespace

void import_megatron(job_reader& job, context const& ctx) {
  auto& t = job.out();
  auto const origin = job.origin();
  auto key_at = [&](entry const* e) { return job.key_at(e); };
  auto value_at = [&](entry const* e) { return job.value_at(e); };
  set(t, "training", "framework", identifier_value("megatron", origin), origin);
  auto const c = import_megatron_args(job, ctx, false);
  if (t.diags.has_errors()) return;

  // Megatron-LM of 2021-23: its recomputation spellings (above) and its
  // data-parallel implementation, --DDP-impl local (the default: every
  // gradient all-reduced after the backward) or torch (PyTorch's DDP, 25
  // MiB buckets under the backward; MLM 42d1dd4538 megatron/arguments.py:696,
  // megatron/training.py), which 3fb3e95ec6 (2023-08) removed. Such a job is
  // costed with that code's preset, megatron_2021.
  auto const* ddp_impl = job.find("--DDP-impl");
  entry const* const legacy = c.legacy ? c.legacy : ddp_impl;
  bool torch_ddp = false;
  if (ddp_impl) {
    auto v = job.text(*ddp_impl);
    if (!v) return;
    if (*v != "local" && *v != "torch") {
      t.diags.error(value_at(ddp_impl), fmt::format("'--DDP-impl' is 'local' or 'torch', not '{}'", dsl::escaped(*v)));
      return;
    }
    torch_ddp = *v == "torch";
  }
  if (auto const* v2 = c.before_sequence_parallel) {
    // Megatron-LM v2.x: neither sequence parallelism nor selective
    // recomputation, which megatron_v2 does not propose.
    t.diags.warning(v2->key_where, fmt::format("'{}' is Megatron-LM v2's (2021-22), which today's rejects: the job is "
                                               "costed with framework = megatron_v2",
                                               v2->key));
    set(t, "training", "framework", identifier_value("megatron_v2", key_at(v2)), key_at(v2));
  } else if (legacy) {
    t.diags.warning(legacy->key_where, fmt::format("'{}' is Megatron-LM's of 2021-23, which today's rejects: the job "
                                                   "is costed with framework = megatron_2021",
                                                   legacy->key));
    set(t, "training", "framework", identifier_value("megatron_2021", key_at(legacy)), key_at(legacy));
  }
  if (!c.micro_batch) {
    t.diags.error(origin, "the job does not write '--micro-batch-size', which Megatron-LM needs");
    return;
  }
  batch_and_dp(job, ctx, c);

  // The distributed optimizer (ZeRO-1), and its instances (hybrid).
  auto const* dist = job.flag("--use-distributed-optimizer");
  int const zero = dist ? 1 : 0;
  set_strategy(t, "zero", integer_value(zero, key_at(dist)), key_at(dist));
  if (auto const* inst = job.find("--num-distributed-optimizer-instances")) {
    auto k = job.integer(*inst);
    if (!k) return;
    auto const dp = ranks_left(ctx, {*c.tp, *c.pp, *c.cp}).value_or(0);
    if (*k > 1 && zero == 1 && dp > 0) {
      if (dp % *k != 0) {
        t.diags.error(value_at(inst), fmt::format("{} distributed-optimizer instances do not split the {} "
                                                  "data-parallel ranks evenly",
                                                  *k, dp));
        return;
      }
      strategy degrees;
      degrees.dp = dp, degrees.tp = *c.tp, degrees.pp = *c.pp, degrees.cp = *c.cp;
      if (auto const* mapping = job.flag("--use-tp-pp-dp-mapping"); mapping)
        degrees.order = {axis::tp, axis::cp, axis::pp, axis::dp};
      set_strategy(t, "shard", shard_value(dp / *k, degrees, ctx, value_at(inst)), key_at(inst));
    } else if (*k > 1 && zero == 0) {
      t.diags.warning(inst->key_where, "'--num-distributed-optimizer-instances' is read only with "
                                       "'--use-distributed-optimizer'");
    }
  }
  bool const hybrid = std::any_of(t.strategy.begin(), t.strategy.end(),
                                  [](ast::assignment const& a) { return a.key.name == "shard"; });
  if (!hybrid) set_strategy(t, "shard", identifier_value("all", key_at(dist)), key_at(dist));
  if (auto const* mapping = job.flag("--use-tp-pp-dp-mapping"))
    set_strategy(t, "order", string_value("tp-cp-pp-dp", mapping->key_where), mapping->key_where);

  // What overlaps what: each off unless written (arguments.py:2284-2319).
  auto behaviour = [&](std::string_view flag, std::string_view key, bool applies, bool when_written = true) {
    auto const* e = job.flag(flag);
    set_megatron_behaviour(job, e, key, applies, e ? when_written : !when_written);
  };
  behaviour("--overlap-grad-reduce", "overlap_grad_sync", true);
  behaviour("--overlap-param-gather", "overlap_param_gather", zero == 1);
  behaviour("--tp-comm-overlap", "tp_comm_overlap", *c.tp > 1 && c.sequence_parallel);
  if (!legacy) behaviour("--no-overlap-p2p-communication", "overlap_p2p_comm", c.virtual_stages > 1, false);
  behaviour("--enable-cuda-graph", "cuda_graphs", true);
  behaviour("--fp8-param-gather", "fp8_param_gather", c.prec == precision::fp8 && zero == 1);
  // The timers around each micro-batch's forward and backward synchronise
  // the host at level 2 (training/arguments.py --timing-log-level, 0 to 2).
  if (auto const* timing = job.find("--timing-log-level")) {
    auto n = job.integer(*timing);
    if (!n) return;
    set(t, "training", "timing_log_level", integer_value(*n, value_at(timing)), key_at(timing));
  }

  // Gradients: fp32 for bf16 unless --grad-reduce-in-bf16; fp16 for fp16
  // unless --accumulate-allreduce-grads-in-fp32 (arguments.py:2200-2230).
  auto const* in_bf16 = job.flag("--grad-reduce-in-bf16");
  auto const* in_fp32 = job.flag("--accumulate-allreduce-grads-in-fp32");
  precision grads = precision::fp32;
  entry const* grads_at = nullptr;
  if (c.prec == precision::fp16) grads = in_fp32 ? precision::fp32 : precision::fp16, grads_at = in_fp32;
  else if (c.prec != precision::fp32 && in_bf16) grads = precision::bf16, grads_at = in_bf16;
  set(t, "training", "grad_precision", identifier_value(name(grads), key_at(grads_at)), key_at(grads_at));
  // An older job's local DDP keeps megatron_2021's one all-reduce of the
  // whole gradient buffer; its torch DDP reduces PyTorch's buckets, copies
  // of the gradients (torchDDP with its defaults: MLM21 megatron/training.py).
  if (torch_ddp) {
    set(t, "training", "overlap_grad_sync", boolean_value(true, value_at(ddp_impl)), key_at(ddp_impl));
    set(t, "training", "gradient_as_bucket_view", boolean_value(false, value_at(ddp_impl)), key_at(ddp_impl));
    set_megatron_bucket(job, training{}.ddp_bucket_size.value(), ddp_impl);  // PyTorch DDP's 25 MiB
  } else if (!legacy) {
    if (auto const* bucket = job.find("--ddp-bucket-size")) {
      auto n = job.integer(*bucket);
      if (!n) return;
      set_megatron_bucket(job, static_cast<double>(*n) * (grads == precision::fp32 ? 4 : 2), bucket);
    } else {
      set(t, "training", "grad_bucket", identifier_value("scaled", origin), origin);
    }
  }
  if (auto const* backend = job.find("--attention-backend"))
    if (!set_megatron_choice(job, *backend, "attention_backend", {"flash", "fused", "unfused", "auto"},
                             "attention backend", "auto"))
      return;
  if (auto const* impl = job.find("--transformer-impl"))
    if (!set_megatron_choice(job, *impl, "transformer_impl", {"local", "transformer_engine"},
                             "transformer implementation", "transformer_engine"))
      return;
  if (auto const* comm = job.find("--cp-comm-type")) {
    // One type for every layer, or one per layer (nargs '+'). a2a
    // (Ulysses), allgather and a2a+p2p move other tensors than Transformer
    // Engine's ring.
    auto const types = job.texts(*comm);
    if (!types) return;
    auto const other = std::find_if(types->begin(), types->end(), [](std::string const& v) { return v != "p2p"; });
    if (other == types->end())
      set(t, "training", "cp_comm_type", identifier_value("p2p", value_at(comm)), comm->key_where);
    else
      t.diags.warning(comm->key_where, fmt::format("Megatron-LM's context-parallel communication '{}' is not "
                                                   "modelled: costed as 'p2p'",
                                                   dsl::escaped(*other)));
  }
  {
    auto const* aware = job.flag("--use-precision-aware-optimizer");
    auto const* avg = job.find("--exp-avg-dtype");
    auto const* sq = job.find("--exp-avg-sq-dtype");
    std::string state = "fp32";
    if (aware && avg) {
      auto v = job.text(*avg);
      if (!v) return;
      if (*v == "bf16" || *v == "fp32") state = *v;
      else
        t.diags.warning(avg->key_where, fmt::format("Adam's moments in '{}' are not modelled: costed in fp32",
                                                    dsl::escaped(*v)));
    }
    if (sq && !job.text(*sq)) return;
    set(t, "training", "optimizer_state_precision", identifier_value(state, key_at(avg)), key_at(avg));
  }
}

}  // namespace dtplan::planner::import_detail
