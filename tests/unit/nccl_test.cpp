#include <catch2/catch.hpp>

#include "planner/model/nccl.hpp"

using namespace dtplan::planner;
using namespace dtplan::planner::nccl;

namespace {

constexpr double mib = 1048576.0;

group dgx_h100(std::int64_t nodes, std::int64_t per_node, double bus_gbps) {
  group g;
  g.ranks = nodes * per_node;
  g.nodes = nodes;
  g.per_node = per_node;
  g.bus = bandwidth(bus_gbps * 1e9);
  g.gen = generation::hopper;
  return g;
}

}  // namespace

TEST_CASE("a 2,048-rank all-reduce runs NCCL's tree: 2 log2(nodes) network latencies, not a ring's 4,094 steps") {
  // 256 nodes x 8 H100, 8 x NDR per node: 384 GB/s of bus per node
  // (docs/research/nccl.md section 5).
  auto const g = dgx_h100(256, 8, 384);
  auto const big = best(collective::all_reduce, bytes(64 * mib), g);
  CHECK(big.algo == algorithm::tree);
  auto const small = best(collective::all_reduce, bytes(1 * mib), g);
  CHECK(small.algo == algorithm::tree);
  CHECK(small.proto == protocol::ll128);
  // 14 + 2 (7 x 1.25 + log2(256) x 8.5) = 167.5 us: 16 network hops.
  CHECK(small.latency.value() == Approx(167.5e-6));
  // NCCL predicts 0.81 ms for 64 MiB and 0.18 ms for 1 MiB (tuning model
  // with its size correction); without the correction, within 10 %.
  CHECK(big.time.value() == Approx(0.81e-3).epsilon(0.10));
  CHECK(small.time.value() == Approx(0.18e-3).epsilon(0.10));
  // A flat ring would pay 8.4 + 3584 x 3.4 + 510 x 14 = 19,334 us (x 1.4).
  group ring_only = g;
  ring_only.hop_latency = seconds(3.4e-6);
  CHECK(best(collective::all_reduce, bytes(1 * mib), ring_only).time.value() > 10e-3);
}

TEST_CASE("an all-gather over one rank per node runs PAT") {
  // 256 nodes, one rank each on its own NIC (2 channels x 24 GB/s).
  auto const g = dgx_h100(256, 1, 48);
  auto const c = best(collective::all_gather, bytes(64 * mib), g);
  CHECK(c.algo == algorithm::pat);
  // 8 + log2(256) x 14 / 3.5 + 2.8 x 256 = 756.8 us; 36 GB/s: 2.62 ms.
  CHECK(c.latency.value() == Approx(756.8e-6));
  CHECK(c.time.value() == Approx(2.62e-3).epsilon(0.01));
  // Several ranks per node: no PAT, a ring.
  CHECK(best(collective::all_gather, bytes(64 * mib), dgx_h100(256, 8, 384)).algo == algorithm::ring);
}

TEST_CASE("inside one H100 node a large all-reduce runs a Simple ring at the measured 370 GB/s") {
  auto g = dgx_h100(1, 8, 370.8);
  auto const c = best(collective::all_reduce, bytes(64 * mib), g);
  CHECK(c.algo == algorithm::ring);
  CHECK(c.proto == protocol::simple);
  // 8.4 + 14 x 3.4 = 56 us, then 2 x 7/8 x 64 MiB at 370.8 GB/s: 373 us.
  CHECK(c.latency.value() == Approx(56e-6));
  CHECK(c.time.value() == Approx(373e-6).epsilon(0.005));
  // Small messages take LL.
  CHECK(best(collective::all_reduce, bytes(64 * 1024), g).proto == protocol::ll);
  // With NVLink SHARP (480 GB/s bus) a large all-reduce takes NVLS.
  g.nvls_bus = bandwidth(480e9);
  CHECK(best(collective::all_reduce, bytes(64 * mib), g).algo == algorithm::nvls);
}

TEST_CASE("a written latency restores the plain alpha-beta ring of COSTMODEL.md") {
  // 7B gradients (14 GB) over 8 GPUs on 12.5 GB/s each: 1.96 s.
  group g;
  g.ranks = 8;
  g.nodes = 8;
  g.per_node = 1;
  g.bus = bandwidth(12.5e9);
  g.hop_latency = seconds(0);
  auto const c = best(collective::all_reduce, bytes(14e9), g);
  CHECK(c.algo == algorithm::ring);
  CHECK(c.time.value() == Approx(1.96));
}

TEST_CASE("an all-to-all across nodes runs at each GPU's own NIC, not the node's pooled ring bandwidth") {
  // 64 ranks on 8 DGX H100 nodes (the 64-way expert parallelism of
  // DeepSeek-V3): the ring's bus is all 8 NICs (384 GB/s), but an
  // all-to-all's point-to-point sends each leave by the GPU's own NIC
  // (46 GB/s measured, hardware_facts.md B3), its own node's peers over
  // NVLink (370.8 GB/s) at the same time.
  auto g = dgx_h100(8, 8, 384);
  g.nic = bandwidth(46e9);
  g.scale_up = bandwidth(370.8e9);
  auto const c = best(collective::all_to_all, bytes(64 * mib), g);
  // 56/64 of 64 MiB for other nodes: 58.72 MB at 46 GB/s = 1,276.5 us, at
  // LL128's 0.92 1,387.5 us (7/64 for the node's peers over NVLink: 21.5
  // us); LL128's latency 14 + 56 x 1.9 + 7 x 4 = 148.4 us; Simple would be
  // 296.8 + 1,276.5 us.
  CHECK(c.proto == protocol::ll128);
  CHECK(c.latency.value() == Approx(148.4e-6));
  CHECK(c.time.value() == Approx(1535.9e-6).epsilon(0.001));
  // The same buffer as if the NICs pooled (the ring's bus): 4.6 x faster.
  group pooled = g;
  pooled.nic = bandwidth(0);
  CHECK(c.time.value() / best(collective::all_to_all, bytes(64 * mib), pooled).time.value() == Approx(4.58).epsilon(0.01));
  // One rank per node: every byte leaves by the NIC; and never PAT, which
  // NCCL runs for all-gathers and reduce-scatters only.
  auto one = dgx_h100(256, 1, 46);
  one.nic = bandwidth(46e9);
  one.scale_up = bandwidth(370.8e9);
  CHECK(best(collective::all_to_all, bytes(64 * mib), one).algo == algorithm::ring);
  // Inside one node nothing changes: the NVLink ring's bus.
  auto node = dgx_h100(1, 8, 370.8);
  node.nic = bandwidth(46e9);
  node.scale_up = bandwidth(370.8e9);
  auto plain = node;
  plain.nic = plain.scale_up = bandwidth(0);
  CHECK(best(collective::all_to_all, bytes(64 * mib), node).time.value() ==
        best(collective::all_to_all, bytes(64 * mib), plain).time.value());
}

TEST_CASE("an all-to-all's two legs run at once: the slower one's time, the ring's bus for a missing figure") {
  auto g = dgx_h100(8, 8, 384);
  g.nic = bandwidth(46e9);
  g.scale_up = bandwidth(370.8e9);
  // 46 MB over the NIC: 1 ms; 185.4 MB over NVLink beside it: 0.5 ms.
  CHECK(all_to_all_transfer(bytes(46e6), bytes(185.4e6), g).value() == Approx(1e-3).epsilon(1e-12));
  // 741.6 MB over NVLink: 2 ms, now the slower.
  CHECK(all_to_all_transfer(bytes(46e6), bytes(741.6e6), g).value() == Approx(2e-3).epsilon(1e-12));
  CHECK(all_to_all_transfer(bytes(0), bytes(0), g).value() == 0.0);
  // No NIC figure: the ring's 384 GB/s for the network leg.
  g.nic = bandwidth(0);
  CHECK(all_to_all_transfer(bytes(384e6), bytes(0), g).value() == Approx(1e-3).epsilon(1e-12));
}
