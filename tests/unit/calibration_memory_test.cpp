#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "bench/calibration.hpp"
#include "bench/study.hpp"
#include "planner/model/check.hpp"

using namespace dtplan;
using namespace dtplan::planner;

TEST_CASE("every representable published run is judged valid", "[calibration][memory]") {
  auto runs = bench::load_calibration_runs_applied();
  std::set<std::string> invalid;
  int representable = 0;
  for (auto const& run : runs) {
    if (!run.representable()) continue;
    ++representable;
    strategy_spec spec;
    spec.name = run.id;
    auto r = check(run.prog, spec, run.s);
    if (!r.valid()) invalid.insert(run.id + ": " + (r.diags.empty() ? std::string() : r.diags.front().message));
  }
  CHECK(representable == 255);  // 245 before Narayanan et al.'s Table 1 had its scripts' micro-batches
  std::string why;
  for (auto const& w : invalid) why += w + "\n";
  INFO(why);
  CHECK(invalid.empty());
}

TEST_CASE("predicted peak memory against the published peaks", "[calibration][memory]") {
  auto runs = bench::load_calibration_runs_applied();
  auto error_of = [&](std::string_view id) {
    auto run = *std::find_if(runs.begin(), runs.end(), [&](auto const& r) { return r.id == id; });
    REQUIRE(run.peak_memory);
    REQUIRE(is_legal(run.prog, run.s));
    auto mem = estimate_memory(run.prog, run.s);
    return std::pair{(mem.total - *run.peak_memory) / *run.peak_memory, mem.total.value() / 1073741824.0};
  };
  // torchtitan's "selective" is op-level selective checkpointing
  // (`checkpoint = ops`: 31,744 16-bit values per token per layer kept), its
  // loss PyTorch's unfused cross entropy (three fp32 logit-sized buffers at
  // the start of the backward, and the 16-bit logits' memory, which the
  // caching allocator keeps though torchtitan frees them: 3.9 GiB), FSDP2
  // keeps its root unit (embedding, output) gathered through the step; the
  // peak is at the loss. The eager runs are under-predicted by ~5 GiB, what
  // torch.compile saves on the same runs (published 82.4 -> 77.0 and 67.0
  // -> 62.0 GiB); the compiled runs are within 1.5 %. Without the logits'
  // memory the two eager runs were 73.9 and 58.1 GiB (-10.4 and -13.3 %).
  auto [small_error, small_total] = error_of("TT-8B-8gpu-FSDP");
  auto [large_error, large_total] = error_of("TT-8B-128gpu-FSDP");
  CHECK(small_total == Approx(77.777).margin(0.001));
  CHECK(large_total == Approx(62.001).margin(0.001));
  CHECK(small_error == Approx(-0.0561).margin(0.0001));
  CHECK(large_error == Approx(-0.0746).margin(0.0001));
  CHECK(error_of("TT-8B-8gpu-FSDP+compile").first == Approx(0.0101).margin(0.0001));
  CHECK(error_of("TT-8B-128gpu-FSDP+compile").first == Approx(0.0000).margin(0.0001));
  // The runs differ only in ZeRO-3 over 8 vs 128 ranks, i.e. in model state:
  // predicted 15.8 GiB apart (torchtitan reduces and keeps its sharded
  // gradients in fp32: FSDP2's reduce_dtype), published 15.4 GiB.
  CHECK(small_total - large_total == Approx(15.78).margin(0.01));

  // 405B over FSDP 8 x TP 8 x PP 8 (1F1B, 8 micro-batches of 4): torchtitan
  // keeps each stage's 16 layers gathered through the step and PyTorch's
  // pipelining accumulates their gradients unsharded, in fp32, until the
  // last backward: 6.3 B parameters at 2 + 4 bytes, held beside the sharded
  // state. Without them the prediction was 35.0 GiB, -58 %. PyTorch's
  // pipelining keeps a gradient receive buffer for each of the 8
  // micro-batches and each in-flight micro-batch's stage output (8 on stage
  // 0), 16 x 128 MiB where two send/recv buffers were counted: 69.1 GiB,
  // -16.2 %, before.
  auto [pp_error, pp_total] = error_of("TT-405B-512gpu-1F1B");
  CHECK(pp_total == Approx(70.9).margin(0.05));
  CHECK(pp_error == Approx(-0.141).margin(0.001));
  // Interleaved (two stages a GPU, 16 micro-batches of 2): rank 0's second
  // stage receives, both send; 23 chunks in flight. 64 x 64 MiB of
  // buffers; 63.1 GiB, -13.2 %, with two.
  auto [vpp_error, vpp_total] = error_of("TT-405B-512gpu-Interleaved1F1B");
  CHECK(vpp_total == Approx(67.0).margin(0.05));
  CHECK(vpp_error == Approx(-0.079).margin(0.001));

  // 70B over FSDP 32 x TP 8, 16 sequences of 8 K tokens: the loss is
  // DTensor's loss_parallel on vocab-sharded logits, four fp32 buffers of
  // 16 x 8,192 x 16,128 at the start of the backward (31.5 GiB). With
  // three, as log_softmax's own backward keeps, it was 51.2 GiB, -28.8 %;
  // without the 16-bit logits' memory (3.9 GiB) 59.1 GiB, -17.9 %. Async TP
  // allocates the same tensors; published 4.3 GiB less.
  auto [tp_error, tp_total] = error_of("TT-70B-256gpu-2D");
  CHECK(tp_total == Approx(63.0).margin(0.05));
  CHECK(tp_error == Approx(-0.124).margin(0.001));
  CHECK(error_of("TT-70B-256gpu-2D+AsyncTP").first == Approx(-0.068).margin(0.001));

  // The same 405B with context parallelism, 32 K tokens a GPU at every cp:
  // torchtitan's ring (allgather, on keys and values expanded to the 16
  // local heads) holds (2 cp + 16) x 128 MiB in a layer's backward: 2.5,
  // 3.0 and 4.0 GiB at cp 2, 4 and 8. Published 75.3, 75.9, 77.1 and 84.9
  // GiB at cp 1-8; the rises over cp 1 (0.6, 1.8, 9.6 GiB) are the
  // allocator's reservation, not only what is allocated, and the model
  // stays under each.
  auto [cp1_error, cp1_total] = error_of("TT-405B-512gpu-CP1-32K");
  auto [cp2_error, cp2_total] = error_of("TT-405B-512gpu-CP2-64K");
  auto [cp4_error, cp4_total] = error_of("TT-405B-512gpu-CP4-128K");
  auto [cp8_error, cp8_total] = error_of("TT-405B-512gpu-CP8-256K");
  CHECK(cp2_total - cp1_total == Approx(2.5).margin(0.001));
  CHECK(cp4_total - cp1_total == Approx(3.0).margin(0.001));
  CHECK(cp8_total - cp1_total == Approx(4.0).margin(0.001));
  CHECK(cp1_error == Approx(-0.058).margin(0.001));
  CHECK(cp2_error == Approx(-0.033).margin(0.001));
  CHECK(cp4_error == Approx(-0.042).margin(0.001));
  CHECK(cp8_error == Approx(-0.118).margin(0.001));
}

TEST_CASE("every published peak memory is predicted within 15 %", "[calibration][memory]") {
  // Issue 13's goal. The 18 torchtitan runs publish
  // torch.cuda.max_memory_reserved; 17 were within 15 % before the 16-bit
  // logits' memory was counted at the loss (the 70B 2D run -17.9 %).
  auto runs = bench::load_calibration_runs_applied();
  int published = 0, within = 0;
  std::string outside;
  for (auto const& run : runs) {
    if (!run.representable() || !run.peak_memory) continue;
    ++published;
    auto const mem = estimate_memory(run.prog, run.s);
    double const error = (mem.total - *run.peak_memory) / *run.peak_memory;
    if (std::abs(error) <= 0.15)
      ++within;
    else
      outside += run.id + "\n";
  }
  INFO(outside);
  CHECK(published == 18);
  CHECK(within == 18);
}
