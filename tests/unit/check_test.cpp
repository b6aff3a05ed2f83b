#include <catch2/catch.hpp>

#include <limits>
#include <sstream>

#include "dsl/diagnostics.hpp"
#include "memory_fixtures.hpp"
#include "planner/model/check.hpp"
#include "planner/model/params.hpp"

using namespace dtplan;
using namespace dtplan::planner;

namespace {

// A strategy block written as text, so diagnostics point at real keys.
// Each line "  key = value" sets one key (integers, checkpoint, shard,
// sequence_parallel); the independent parser is not needed here.
struct written {
  dsl::source_manager sources;
  strategy_spec spec;

  explicit written(std::string const& text) {
    auto id = sources.add("plan.dtp", text);
    auto at = [&](std::size_t b, std::size_t n) {
      return dsl::span{id, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b + n)};
    };
    auto header = text.find("strategy");
    auto name_begin = header + 9;
    auto name_end = text.find(' ', name_begin);
    spec.name = text.substr(name_begin, name_end - name_begin);
    spec.where = at(header, 8);
    std::size_t line_start = text.find('\n', header) + 1;
    while (line_start < text.size()) {
      auto line_end = text.find('\n', line_start);
      std::string line = text.substr(line_start, line_end - line_start);
      auto eq = line.find('=');
      if (eq != std::string::npos) {
        auto key_begin = line.find_first_not_of(' ');
        std::string key = line.substr(key_begin, line.find(' ', key_begin) - key_begin);
        std::string value = line.substr(line.find_first_not_of(' ', eq + 1));
        set(key, value, at(line_start + key_begin, key.size()), at(line_start + eq + 2, value.size()));
      }
      if (line_end == std::string::npos) break;
      line_start = line_end + 1;
    }
  }

  template <class T>
  static void single(key_choice<T>& c, T v, dsl::span k, dsl::span val) {
    c.f = key_choice<T>::form::single;
    c.values = {v};
    c.key = k;
    c.value = val;
  }

  void set(std::string const& key, std::string const& value, dsl::span k, dsl::span v) {
    if (key == "checkpoint") {
      auto mode = value == "full" ? checkpoint_mode::full
                  : value == "selective" ? checkpoint_mode::selective : checkpoint_mode::none;
      single(spec.checkpoint, mode, k, v);
    } else if (key == "shard") {
      shard_group g;
      if (value == "node") g.k = shard_group::kind::node;
      else if (value != "all") g = {shard_group::kind::size, std::stoll(value)};
      single(spec.shard, g, k, v);
    } else if (key == "sequence_parallel") {
      single(spec.sequence_parallel, value == "true", k, v);
    } else {
      std::int64_t n = std::stoll(value);
      key_choice<std::int64_t>* c = key == "dp" ? &spec.dp : key == "tp" ? &spec.tp : key == "pp" ? &spec.pp
                                  : key == "cp" ? &spec.cp : key == "ep" ? &spec.ep : key == "zero" ? &spec.zero
                                  : key == "micro_batch" ? &spec.micro_batch : &spec.virtual_stages;
      single(*c, n, k, v);
    }
  }

  check_result run(program const& p) const { return check(p, spec, spec.fixed()); }
  std::string diags(program const& p) const {
    std::string out;
    for (auto const& d : run(p).diags) out += dsl::format(d, sources);
    return out;
  }
};

program two_nodes_7b() {
  return test::program_of(test::llama2_7b(), test::nodes_of("two_nodes", 2, test::h100_sxm()), 256);
}

}  // namespace

TEST_CASE("a legal strategy derives dp and grad_accum", "[check]") {
  written w("strategy current {\n  tp = 2\n  zero = 1\n  checkpoint = selective\n}\n");
  auto r = w.run(two_nodes_7b());
  CHECK(r.legal);
  CHECK(r.fits);
  CHECK(r.valid());
  CHECK(r.s.dp == 8);
  CHECK(r.grad_accum == 32);
  CHECK(r.s.sequence_parallel);
  CHECK(r.diags.empty());
  CHECK(is_legal(two_nodes_7b(), r.s));
}

TEST_CASE("an illegal strategy still has its micro-batches a step, or 0 where the batch does not split", "[check]") {
  // 16 GPUs, global batch 256: dp = 32 is more than the cluster holds.
  written beyond("strategy current {\n  dp = 32\n  micro_batch = 2\n}\n");
  auto r = beyond.run(two_nodes_7b());
  CHECK_FALSE(r.legal);
  CHECK(r.grad_accum == 4);
  written odd("strategy current {\n  dp = 16\n  micro_batch = 3\n}\n");
  auto o = odd.run(two_nodes_7b());
  CHECK_FALSE(o.legal);
  CHECK(o.grad_accum == 0);
}

TEST_CASE("tp must divide heads and ffn", "[check]") {
  written w("strategy current {\n  tp = 3\n}\n");
  auto p = two_nodes_7b();
  p.cluster.nodes = 3;
  p.cluster.gpus_per_node = 4;
  p.training.global_batch = 252;
  CHECK(w.diags(p) ==
        "plan.dtp:2:3: error: tp = 3 does not divide heads = 32\n"
        "    2 |   tp = 3\n"
        "      |   ^~\n"
        "plan.dtp:2:3: error: tp = 3 does not divide ffn = 11008\n"
        "    2 |   tp = 3\n"
        "      |   ^~\n");
  auto s = w.spec.fixed();
  s.dp = 4;
  CHECK_FALSE(is_legal(p, s));
}

TEST_CASE("the world size must match the cluster", "[check]") {
  written w("strategy current {\n  dp = 8\n  tp = 2\n}\n");
  auto p = two_nodes_7b();
  p.cluster.nodes = 4;
  CHECK(w.diags(p) ==
        "plan.dtp:2:3: error: dp x tp x pp x cp = 8 x 2 x 1 x 1 = 16, but cluster 'two_nodes' has 32 GPUs\n"
        "    2 |   dp = 8\n"
        "      |   ^~\n");
  p.cluster.nodes = 2;
  CHECK(w.run(p).legal);

  written underived("strategy odd {\n  pp = 3\n}\n");
  CHECK(underived.diags(two_nodes_7b()) ==
        "plan.dtp:2:3: error: tp x pp x cp = 1 x 3 x 1 = 3 does not divide the 16 GPUs of cluster 'two_nodes', so "
        "dp cannot be derived\n"
        "    2 |   pp = 3\n"
        "      |   ^~\n");
}

TEST_CASE("global batch divisible by dp x micro_batch", "[check]") {
  written w("strategy current {\n  micro_batch = 3\n}\n");
  CHECK(w.diags(two_nodes_7b()) ==
        "plan.dtp:2:3: error: global_batch = 256 is not divisible by dp x micro_batch = 48\n"
        "    2 |   micro_batch = 3\n"
        "      |   ^~~~~~~~~~~\n");
}

TEST_CASE("uneven pipeline stages warn and say how layers are spread", "[check]") {
  auto p = two_nodes_7b();
  p.cluster.nodes = 3;
  p.cluster.gpus_per_node = 5;
  p.training.global_batch = 20;
  written w("strategy five {\n  pp = 5\n  dp = 3\n  zero = 1\n}\n");
  auto r = w.run(p);
  CHECK_FALSE(r.legal);  // 20 is not divisible by dp x micro_batch = 3
  p.training.global_batch = 30;
  r = w.run(p);
  CHECK(r.legal);
  CHECK(w.diags(p) ==
        "plan.dtp:2:3: warning: 32 layers over 5 pipeline stages: 7 on stages 0-1, 6 on stages 2-4\n"
        "    2 |   pp = 5\n"
        "      |   ^~\n");
  CHECK(r.memory.stage_layers == 7);
}

TEST_CASE("pipeline rules: more stages than layers, interleaving", "[check]") {
  auto p = two_nodes_7b();
  written many("strategy deep {\n  pp = 16\n  virtual_stages = 4\n}\n");
  CHECK(many.diags(p) ==
        "plan.dtp:3:3: error: pp x virtual_stages = 16 x 4 = 64 pipeline chunks, but model 'llama2_7b' has 32 "
        "layers\n"
        "    3 |   virtual_stages = 4\n"
        "      |   ^~~~~~~~~~~~~~\n");
  written flat("strategy flat {\n  virtual_stages = 2\n}\n");
  CHECK(flat.diags(p) ==
        "plan.dtp:2:3: error: virtual_stages = 2 needs pp > 1, got pp = 1\n"
        "    2 |   virtual_stages = 2\n"
        "      |   ^~~~~~~~~~~~~~\n");
  p.training.global_batch = 24;
  written odd("strategy odd {\n  pp = 4\n  virtual_stages = 2\n}\n");
  CHECK(odd.diags(p) ==
        "plan.dtp:3:3: error: virtual_stages = 2 needs the micro-batches per step to be a multiple of pp = 4, got "
        "grad_accum = 6\n"
        "    3 |   virtual_stages = 2\n"
        "      |   ^~~~~~~~~~~~~~\n");
}

TEST_CASE("context parallel, shard group, ep, zero range", "[check]") {
  auto p = two_nodes_7b();
  p.model.seq_len = 4097;
  written cp("strategy c {\n  cp = 2\n}\n");
  CHECK(cp.run(p).diags.at(0).message == "cp = 2 does not divide seq_len = 4097");

  p = two_nodes_7b();
  written shard("strategy s {\n  zero = 3\n  shard = 3\n}\n");
  CHECK(shard.run(p).diags.at(0).message == "shard = 3 does not divide dp = 16");
  written node("strategy s {\n  zero = 3\n  shard = node\n}\n");
  auto r = node.run(p);
  CHECK(r.valid());
  CHECK(r.memory.detail.at(0).name == "weights (bf16, 6.74B params x 2 B, ZeRO-3 over 8)");
  written useless("strategy s {\n  shard = node\n}\n");
  CHECK(useless.run(p).diags.at(0).message == "shard = node has no effect with zero = 0");
  CHECK(useless.run(p).diags.at(0).level == dsl::severity::warning);

  written zero("strategy z {\n  zero = 4\n}\n");
  CHECK(zero.run(p).diags.at(0).message == "expected a ZeRO stage 0, 1, 2 or 3, got zero = 4");
  written ep("strategy e {\n  ep = 2\n}\n");
  CHECK(ep.run(p).diags.at(0).message == "ep = 2 needs a model with experts, but model 'llama2_7b' has experts = 1");
  p.model.experts = 6;
  p.model.experts_per_token = 2;
  written ep4("strategy e {\n  ep = 4\n}\n");
  CHECK(ep4.run(p).diags.at(0).message == "ep = 4 does not divide experts = 6");
}

TEST_CASE("the sequence splits as the framework requires it", "[check]") {
  auto p = two_nodes_7b();
  // cp = 4 divides 4,100 tokens; Megatron-Core's 2 x cp = 8 chunks do not.
  p.model.seq_len = 4100;
  written cp("strategy c {\n  cp = 4\n  zero = 1\n}\n");
  CHECK(cp.diags(p).empty());
  p.framework.name = "megatron";
  p.framework.limits.sequence_split = sequence_split_rule::balanced;
  CHECK(cp.diags(p) ==
        "plan.dtp:2:3: error: framework 'megatron' balances causal attention over 2 x cp = 8 chunks of the "
        "sequence, which seq_len = 4100 does not divide into\n"
        "    2 |   cp = 4\n"
        "      |   ^~\n");
  // Without cp the balance does not apply.
  written tp("strategy t {\n  tp = 2\n  zero = 1\n}\n");
  CHECK(tp.diags(p).empty());

  // torchtitan's seq_len_divisor is 2 x cp x tp whatever cp: 4,100 is not a
  // multiple of 2 x 1 x 8.
  p.framework.name = "torchtitan";
  p.framework.limits.sequence_split = sequence_split_rule::balanced_tp;
  CHECK(tp.diags(p).empty());
  written tp8("strategy t {\n  tp = 8\n  zero = 1\n}\n");
  CHECK(tp8.diags(p) ==
        "plan.dtp:2:3: error: framework 'torchtitan' needs seq_len to divide into 2 x cp x tp = 2 x 1 x 8 = 16 "
        "chunks, not seq_len = 4100\n"
        "    2 |   tp = 8\n"
        "      |   ^~\n");

  // Sequence parallelism splits each cp rank's tokens over tp, in any
  // framework; without it tp splits no tokens.
  p = two_nodes_7b();
  p.model.seq_len = 4098;
  written both("strategy b {\n  cp = 2\n  tp = 2\n  zero = 1\n}\n");
  CHECK(both.run(p).diags.at(0).message ==
        "sequence parallelism splits each cp rank's 2049 tokens (seq_len = 4098 / cp = 2) over tp = 2 ranks, which "
        "do not divide them");
  p.model.seq_len = 4097;
  CHECK(tp.run(p).diags.at(0).message ==
        "sequence parallelism splits seq_len = 4097 over tp = 2 ranks, which do not divide it");
  written replicated("strategy t {\n  tp = 2\n  zero = 1\n  sequence_parallel = false\n}\n");
  CHECK(replicated.diags(p).empty());
}

TEST_CASE("Megatron-Core's own split: its assertions, and frameworks that do not split so", "[check]") {
  auto p = two_nodes_7b();
  p.training.first_stage_layers = 12;
  written two("strategy s {\n  pp = 2\n  zero = 1\n}\n");
  CHECK(two.diags(p).empty());  // 12 and 20: no uneven warning, the split is the job's
  CHECK(two.run(p).memory.stage_layers == 20);
  written four("strategy s {\n  pp = 4\n  zero = 1\n}\n");
  CHECK(four.diags(p) ==
        "plan.dtp:2:3: error: pp = 4 with num_layers_in_first_pipeline_stage = 12: the 20 layers left for the 3 "
        "middle stages do not split evenly over them\n"
        "    2 |   pp = 4\n"
        "      |   ^~\n");
  written chunks("strategy s {\n  pp = 2\n  virtual_stages = 5\n  zero = 1\n}\n");
  p.training.global_batch = 192;
  CHECK(chunks.diags(p) ==
        "plan.dtp:3:3: error: pp x virtual_stages = 2 x 5 with num_layers_in_first_pipeline_stage = 12: the first "
        "stage's 12 layers do not divide over its 5 virtual stages\n"
        "    3 |   virtual_stages = 5\n"
        "      |   ^~~~~~~~~~~~~~\n");
  // Figures whose sum would wrap: it saturates.
  p.training.global_batch = 256;
  p.training.first_stage_layers = p.training.last_stage_layers = std::numeric_limits<std::int64_t>::max();
  CHECK(four.diags(p) ==
        "plan.dtp:2:3: error: pp = 4 with num_layers_in_first_pipeline_stage = 9223372036854775807, "
        "num_layers_in_last_pipeline_stage = 9223372036854775807: the first and last stages' "
        "9223372036854775807 layers are more than the model's 32\n"
        "    2 |   pp = 4\n"
        "      |   ^~\n");
  p.training.first_stage_layers = 12;
  p.training.last_stage_layers.reset();
  // A framework without the split refuses it, unless it places the layers
  // as dtplan's does.
  p.framework.name = "torchtitan";
  p.framework.limits.first_last_stage_layers = false;
  CHECK(two.diags(p) ==
        "plan.dtp:2:3: error: framework 'torchtitan' does not split a pipeline with "
        "num_layers_in_first_pipeline_stage = 12\n"
        "    2 |   pp = 2\n"
        "      |   ^~\n");
  p.training.first_stage_layers = 16;
  CHECK(two.diags(p).empty());
  p.training.first_stage_layers.reset();
  p.training.embedding_in_split = p.training.loss_in_split = true;
  p.framework.limits.embedding_loss_in_split = counted_split_rule::none;
  CHECK(two.diags(p).empty());  // 32 + 2 over 2: 16 and 16
  CHECK(four.diags(p) ==
        "plan.dtp:2:3: error: framework 'torchtitan' does not split a pipeline with "
        "account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split\n"
        "    2 |   pp = 4\n"
        "      |   ^~\n");
  p.framework.limits.embedding_loss_in_split = counted_split_rule::even;
  CHECK(four.diags(p) ==
        "plan.dtp:2:3: error: pp = 4 with account_for_embedding_in_pipeline_split, "
        "account_for_loss_in_pipeline_split: 32 layers and the embedding and the loss counted as two more do not "
        "divide over 4 pipeline chunks\n"
        "    2 |   pp = 4\n"
        "      |   ^~\n");
  // torchtitan gives the first stages the rest: 34 over 4 is 8, 9, 8, 7
  // (the most memory on stage 0: 8 layers, 4 micro-batches in flight); its
  // stages of one size must still come to the chunks (pp x virtual_stages =
  // 4 x 4: 34 in stages of 3 make 12), and no chunk may hold the loss alone
  // (4 x 5: 34 over 20 leaves the last chunk 1 - 1).
  p.framework.limits.embedding_loss_in_split = counted_split_rule::uneven;
  p.framework.limits.pipeline_split = pipeline_split_rule::stage_size;
  CHECK(four.diags(p).empty());
  CHECK(four.run(p).memory.stage_layers == 8);
  written sixteen("strategy s {\n  pp = 4\n  virtual_stages = 4\n  zero = 1\n}\n");
  CHECK(sixteen.diags(p) ==
        "plan.dtp:3:3: error: framework 'torchtitan' splits the layers and the counted embedding and loss into "
        "stages of one size, ceil(34 / size) of them: none gives 16 pipeline chunks (pp x virtual_stages = 4 x 4; "
        "3 a stage makes 12)\n"
        "    3 |   virtual_stages = 4\n"
        "      |   ^~~~~~~~~~~~~~\n");
  written twenty("strategy s {\n  pp = 4\n  virtual_stages = 5\n  zero = 1\n}\n");
  p.training.global_batch = 320;
  CHECK(twenty.diags(p) ==
        "plan.dtp:3:3: error: pp x virtual_stages = 4 x 5 with account_for_embedding_in_pipeline_split, "
        "account_for_loss_in_pipeline_split: the last chunk would hold the loss alone\n"
        "    3 |   virtual_stages = 5\n"
        "      |   ^~~~~~~~~~~~~~\n");
}

TEST_CASE("Megatron interleaves two stages only with its p2p overlap", "[check]") {
  auto p = two_nodes_7b();
  written two("strategy i {\n  pp = 2\n  virtual_stages = 2\n  zero = 1\n}\n");
  CHECK(two.diags(p).empty());
  p.framework.name = "megatron";
  p.framework.limits.interleaving_pp2_batched = false;
  p.training.overlap_p2p_comm = true;
  CHECK(two.diags(p).empty());
  p.training.overlap_p2p_comm = false;
  CHECK(two.diags(p) ==
        "plan.dtp:3:3: error: framework 'megatron' interleaves a pipeline of pp = 2 only with overlap_p2p_comm = "
        "true: its batched send and receive would pair the two ranks twice (virtual_stages = 2)\n"
        "    3 |   virtual_stages = 2\n"
        "      |   ^~~~~~~~~~~~~~\n");
  written four("strategy i {\n  pp = 4\n  virtual_stages = 2\n  zero = 1\n}\n");
  CHECK(four.diags(p).empty());
}

TEST_CASE("warnings: tp across nodes, sequence parallel without tp", "[check]") {
  auto p = two_nodes_7b();
  written wide("strategy wide {\n  tp = 16\n  zero = 1\n}\n");
  p.model.heads = 32;
  p.model.ffn = 11264;
  p.training.global_batch = 8;
  CHECK(wide.diags(p) ==
        "plan.dtp:2:3: warning: tensor parallelism across nodes: tp = 16 spans 2 nodes over 100 Gbit/s\n"
        "    2 |   tp = 16\n"
        "      |   ^~\n");
  CHECK(wide.run(p).valid());
  written sp("strategy sp {\n  sequence_parallel = true\n  zero = 1\n}\n");
  auto r = sp.run(two_nodes_7b());
  CHECK(r.valid());
  CHECK_FALSE(r.s.sequence_parallel);
  CHECK(r.diags.at(0).message == "sequence_parallel = true has no effect with tp = 1; ignored");
}

TEST_CASE("a plan that does not fit names the dominant term and verified fixes", "[check][fix]") {
  written w("strategy current {\n  dp = 16\n  zero = 0\n  checkpoint = selective\n  micro_batch = 1\n}\n");
  auto r = w.run(two_nodes_7b());
  CHECK(r.legal);
  CHECK_FALSE(r.fits);
  CHECK(w.diags(two_nodes_7b()) ==
        "plan.dtp:3:3: error: strategy 'current' needs 117.2 GiB per GPU; H100_SXM has 80 GiB (74.0 usable)\n"
        "    3 |   zero = 0\n"
        "      |   ^~~~\n"
        "note: optimizer state is 75.3 GiB of it; zero = 1 brings the total to 46.6 GiB\n"
        "note: tp = 2 with dp = 8 brings the total to 60.7 GiB\n"
        "note: pp = 2 with dp = 8 brings the total to 66.3 GiB\n");
}

TEST_CASE("fixes are ordered by the resulting total, at most three", "[check][fix]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 64);
  written w("strategy big {\n  zero = 1\n  micro_batch = 4\n}\n");
  CHECK(w.diags(p) ==
        "plan.dtp:2:3: error: strategy 'big' needs 101.9 GiB per GPU; H100_SXM has 80 GiB (74.0 usable)\n"
        "    2 |   zero = 1\n"
        "      |   ^~~~\n"
        "note: activations are 67.4 GiB of it; checkpoint = full brings the total to 41.6 GiB\n"
        "note: tp = 2 brings the total to 63.8 GiB\n"
        "note: micro_batch = 2 brings the total to 68.2 GiB\n");
  // Every listed change was re-checked: the changed plan is legal and fits.
  auto changed = w.spec.fixed();
  changed.micro_batch = 2;
  CHECK(check(p, w.spec, changed).valid());
  changed.micro_batch = 3;
  CHECK_FALSE(check(p, w.spec, changed).legal);
}

TEST_CASE("is_legal agrees with check on a sweep of strategies", "[check]") {
  auto p = two_nodes_7b();
  strategy_spec spec;
  spec.name = "sweep";
  int legal = 0, total = 0;
  for (std::int64_t tp : {1, 2, 3, 4, 8, 16})
    for (std::int64_t pp : {1, 2, 3, 4, 5})
      for (std::int64_t mb : {1, 2, 3})
        for (std::int64_t v : {1, 2})
          for (int zero : {0, 3}) {
            strategy s;
            s.dp = 0;
            s.tp = tp;
            s.pp = pp;
            s.micro_batch = mb;
            s.virtual_stages = v;
            s.zero = zero;
            s.sequence_parallel = tp > 1;
            auto r = check(p, spec, s);
            ++total;
            if (!r.legal) continue;
            ++legal;
            CHECK(r.s.dp * tp * pp == 16);
            CHECK(is_legal(p, r.s));
          }
  CHECK(total == 360);
  CHECK(legal == 76);  // 12 (tp, pp) pairs x 2 micro-batches, 7 of them also interleaved; x 2 zero
}

TEST_CASE("absurd values are errors, not overflows", "[check]") {
  auto p = two_nodes_7b();
  written huge("strategy huge {\n  tp = 4611686018427387904\n  pp = 4\n}\n");
  CHECK(huge.run(p).diags.at(0).message == "tp = 4611686018427387904 exceeds the 16 GPUs of cluster 'two_nodes'");
  written chunks("strategy chunks {\n  pp = 2\n  virtual_stages = 4611686018427387904\n}\n");
  CHECK(chunks.run(p).diags.at(0).message ==
        "virtual_stages = 4611686018427387904 exceeds the 32 layers of model 'llama2_7b'");
  written batch("strategy batch {\n  micro_batch = 4611686018427387904\n}\n");
  CHECK(batch.run(p).diags.at(0).message == "micro_batch = 4611686018427387904 exceeds global_batch = 256");
  auto m = test::llama2_7b();
  m.hidden = 4'000'000'000'000;
  m.heads = 1;
  CHECK(count_params(m).total == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("a huge micro_batch that does not fit is reported promptly", "[check][fix]") {
  auto p = test::program_of(test::llama2_7b(), test::nodes_of("one_node", 1, test::h100_sxm()), 8'000'000'000);
  written w("strategy huge {\n  zero = 3\n  micro_batch = 1000000000\n}\n");
  auto r = w.run(p);
  REQUIRE(r.legal);
  CHECK_FALSE(r.fits);
  CHECK(r.diags.at(0).notes.at(0).message.rfind("activations are ", 0) == 0);
}
