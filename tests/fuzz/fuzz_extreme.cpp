// libFuzzer target, structure-aware: the input's bytes choose a program
// that parses (mostly) and is extreme in one or more ways, which then runs
// through the whole pipeline (tests/fuzz/pipeline.hpp): long `: BASE`
// chains and cycles of every block kind (up to 20,000 links), huge sets and
// ranges, numbers at the edges of double and int64 (1e308, 1e-300, 2^63),
// every key free, thousands of strategies, odd Unicode and invalid UTF-8 in
// strings and names, `--set` overrides of the same. Byte mutations rarely
// reach these: each needs thousands of well-formed bytes.
//
// DTPLAN_FUZZ_PRINT=1 prints each generated program to stdout instead (to
// read what an input means, e.g. a crash's).
#include <algorithm>
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/extreme_keys.hpp"
#include "tests/fuzz/pipeline.hpp"

namespace {

// Generated text stays below the 16 MiB a source may hold, and small enough
// that one program costs about a second under the sanitizers.
constexpr std::size_t max_text = std::size_t{6} << 20;

using dtplan::fuzz::key;
using dtplan::fuzz::kind;

// The key table's keys, derived once.
std::vector<key> const& keys() {
  static auto const all = dtplan::fuzz::extreme_keys();
  return all;
}

constexpr std::array gpus{"H100_SXM", "A100_SXM_40GB", "A100_SXM_80GB", "H100_PCIE", "H200_SXM",
                          "B200",     "MI300X",        "L40S",          "V100_SXM_32GB"};
constexpr std::array presets{"llama2_7b", "llama2_13b", "llama2_70b", "llama3_1b", "llama3_3b", "llama3_8b",
                             "llama3_70b", "llama3_405b", "gpt3_175b", "gpt3_1_3b", "mpt_7b"};
constexpr std::array degree_keys{"dp", "tp", "pp", "cp", "ep", "micro_batch", "virtual_stages", "zero"};

// Counts at the edges: small, composite, powers of two around 2^31, 2^32,
// 2^53, 2^63, and past int64.
constexpr std::array counts{"0",          "1",          "2",          "3",
                            "7",          "8",          "64",         "720720",
                            "1024",       "4096",       "4097",       "65536",
                            "2097152",    "16777216",   "16777217",   "2147483647",
                            "2147483648", "4294967296", "9007199254740993", "4611686018427387904",
                            "9223372036854775807", "9223372036854775808", "99999999999999999999", "1_000_000_007",
                            "-1",         "-9223372036854775808"};
// Magnitudes for quantities: the edges of double.
constexpr std::array reals{"0",      "1",       "0.5",     "1e308",    "1.7976931348623157e308", "1e309",
                           "1e-300", "4.9e-324", "1e-320", "2.5e-308", "1e18",                   "1e-9",
                           "100",    "3e-4",    "9223372036854775807",  "0.000000000000000000001", "-0", "-1e308"};
constexpr std::array byte_units{"B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"};
constexpr std::array bandwidth_units{"MB/s", "GB/s", "TB/s", "Mbit/s", "Gbit/s", "Tbit/s", "Gb/s"};
constexpr std::array rate_units{"GFLOP/s", "TFLOP/s", "PFLOP/s"};
constexpr std::array time_units{"ns", "us", "ms", "s"};
// Strings a terminal, a shell, CMake or C++ would act on, and text that is
// not UTF-8.
constexpr std::array odd_text{
    "\xe2\x80\xae" "evil" "\xe2\x80\xac",  // right-to-left override
    "\x1b[2J\x1b]0;title\x07",             // terminal escapes
    "line\rreturn",                        "tab\there",
    "\xc2\x9b" "31m",                      // C1 CSI
    "\xef\xbb\xbf" "bom",                  "\xe2\x80\xa8" "sep",
    "\xf0\x9f\x98\x80\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb",  // emoji, ZWJ
    "e\xcc\x81\xcc\x81\xcc\x81",           // combining marks
    "\xff\xfe",                            "\xc0\x80",  // invalid, overlong NUL
    "\xed\xa0\x80",                        // a surrogate
    "\xf4\x90\x80\x80",                    // past U+10FFFF
    "\\\"; rm -rf / #",                    "$(touch /tmp/x)`id`",
    "*/ int main() { } /*",                "\\",
    "?\?/",                                 "}\nstrategy x {",
    "\xe4\xb8\xad\xe6\x96\x87\xe5\x90\x8d",  // CJK
};

template <class A>
auto pick(FuzzedDataProvider& in, A const& a) {
  return a[in.ConsumeIntegralInRange<std::size_t>(0, a.size() - 1)];
}

std::string odd_string(FuzzedDataProvider& in) {
  std::string s = "\"";
  for (int n = in.ConsumeIntegralInRange(1, 4); n > 0; --n) s += pick(in, odd_text);
  // Repeated, up to a long line.
  if (in.ConsumeBool()) s = s + std::string(in.ConsumeIntegralInRange<std::size_t>(0, 5000), 'x');
  std::string out;
  for (char c : s.substr(1)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return "\"" + out + "\"";
}

std::string number(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return pick(in, reals);
  return pick(in, counts);
}

// Half the time a value at the edge of the key's documented range (valid),
// else one anywhere, mostly out of range.
bool edge(FuzzedDataProvider& in) { return in.ConsumeBool(); }

// A value of `k`'s kind, at an edge; sometimes of another kind or free.
std::string value_of(FuzzedDataProvider& in, key const& k) {
  switch (in.ConsumeIntegralInRange(0, 15)) {
    case 0: return number(in) + " " + pick(in, byte_units);
    case 1: return "auto";
    case 2: return "{" + std::string(pick(in, counts)) + ", " + pick(in, counts) + "}";
    default: break;
  }
  static constexpr std::array valid_counts{"1", "2", "3", "7", "8", "64", "720720", "1024", "4096",
                                           "65536", "2097152", "16777216", "2147483647", "9223372036854775807"};
  static constexpr std::array bytes_edges{"1 B", "1024 TiB", "1125899906842624 B", "0 B", "1e-300 TiB"};
  static constexpr std::array bandwidth_edges{"1 Mbit/s", "100 TB/s", "0.001 Gbit/s", "800 Tbit/s",
                                              "1 x 1 Mbit/s", "9223372036854775807 x 1 Mbit/s"};
  static constexpr std::array rate_edges{"1 GFLOP/s", "1000 PFLOP/s", "0.001 TFLOP/s"};
  static constexpr std::array time_edges{"0 s", "10 s", "1 ns", "3600 s", "9.999999 s", "1e-300 s"};
  static constexpr std::array fraction_edges{"1 %", "100 %", "0.01", "1", "0 %", "1e-300"};
  static constexpr std::array real_edges{"1e-300", "100", "4.9e-324", "99.99999999"};
  if (edge(in)) switch (k.k) {
      case kind::count: return pick(in, valid_counts);
      case kind::bytes: return pick(in, bytes_edges);
      case kind::bandwidth: return pick(in, bandwidth_edges);
      case kind::rate: return pick(in, rate_edges);
      case kind::time: return pick(in, time_edges);
      case kind::fraction: return pick(in, fraction_edges);
      case kind::real: return pick(in, real_edges);
      default: break;
    }
  switch (k.k) {
    case kind::count: return pick(in, counts);
    case kind::bytes: return number(in) + " " + pick(in, byte_units);
    case kind::bandwidth:
      if (in.ConsumeBool()) return std::string(pick(in, counts)) + " x " + number(in) + " " + pick(in, bandwidth_units);
      return number(in) + " " + pick(in, bandwidth_units);
    case kind::rate: return number(in) + " " + pick(in, rate_units);
    case kind::time: return number(in) + " " + pick(in, time_units);
    case kind::fraction: return in.ConsumeBool() ? number(in) + " %" : number(in);
    case kind::real: return number(in);
    case kind::flag: return in.ConsumeBool() ? "true" : "false";
    case kind::text: return odd_string(in);
    case kind::choice: return pick(in, k.choices);
  }
  return "0";
}

// The blocks' keys, each written once (a later choice replaces an earlier
// one: a duplicate key would end the run at lowering).
using keyed = std::map<std::string, std::string>;

struct program {
  std::string header;  // `#set` lines
  std::string model_base = "llama2_7b";
  keyed model;
  std::optional<keyed> gpu_block;  // a gpu block of the file, when the cluster uses one
  std::optional<keyed> framework_block;  // a framework block of the file, when training uses one
  std::string framework_base = "megatron";
  std::string gpu_base = "H100_SXM";
  keyed cluster{{"nodes", "1"}, {"gpus_per_node", "8"}, {"inter_node", "8 x 400 Gbit/s"}};
  keyed training{{"global_batch", "64"}};
  std::vector<std::string> extra;  // chains, strategies, ...
  std::size_t size = 0;

  void add(std::string block) {
    size += block.size();
    extra.push_back(std::move(block));
  }
};

// A chain of `n` blocks of one kind, each based on the next (or the
// previous), ending at a catalog entry, an unknown name or a cycle; the
// program's block of that kind derives from its head.
void chain(FuzzedDataProvider& in, program& p) {
  static constexpr std::array kinds{"gpu", "model", "strategy", "cluster", "training", "framework"};
  static constexpr std::array lengths{2, 3, 50, 1000, 5000, 10000, 10001, 20000};
  std::string const k = pick(in, kinds);
  int n = in.ConsumeBool() ? pick(in, lengths) : in.ConsumeIntegralInRange(1, 3000);
  // Every strategy of a chain is a plan, checked, costed and reported in
  // each of the harness's reports: 20,000 take 1.3 s in a release build but
  // 40 s of CPU here (ASan, UBSan, coverage), past the unit's timeout. The
  // deep chains' promise (no recursion) is the other kinds' to keep, and
  // lower_test resolves a 10,000-link strategy cycle.
  if (k == "strategy") n = std::min(n, 2000);
  int const end = in.ConsumeIntegralInRange(0, 3);  // 0 catalog, 1 cycle, 2 unknown, 3 none
  bool const forward = in.ConsumeBool();            // bases defined later in the file
  std::string const body = in.ConsumeBool() ? "" : " " + pick(in, keys()).name + " = " + pick(in, counts) + " ";
  std::string const prefix = "c" + k.substr(0, 2);
  auto name = [&](int i) { return prefix + std::to_string(i); };
  std::string text;
  for (int j = 0; j < n && p.size + text.size() < max_text; ++j) {
    int const i = forward ? j : n - 1 - j;
    std::string base;
    if (i + 1 < n) base = name(i + 1);
    else if (end == 0) base = k == "gpu" ? pick(in, gpus) : k == "model" ? pick(in, presets) : k == "framework" ? "fsdp" : "";
    else if (end == 1) base = name(0);
    else if (end == 2) base = name(i) + "_missing";
    text += k + " " + name(i) + (base.empty() ? "" : " : " + base) + " {" + (i == 0 ? body : "") + "}\n";
  }
  p.add(std::move(text));
  if (k == "gpu") p.gpu_base = name(0);
  else if (k == "model") p.model_base = name(0);
  else if (k == "framework") p.framework_base = name(0), p.framework_block.emplace();
  else if (k == "strategy") p.add("strategy head : " + name(0) + " { }\n");
}

// A strategy key over a huge set or an extreme range.
void huge_domain(FuzzedDataProvider& in, program& p) {
  std::string const k = pick(in, degree_keys);
  std::string v;
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: {  // 1..n, or n copies of one value
      static constexpr std::array sizes{10, 1000, 100000, 300000};
      int const n = pick(in, sizes);
      bool const same = in.ConsumeBool();
      v = "{";
      for (int i = 1; i <= n; ++i) v += (i > 1 ? ", " : "") + std::to_string(same ? 2 : i);
      v += "}";
      break;
    }
    case 1: v = std::string(pick(in, counts)) + ".." + pick(in, counts); break;
    case 2: {  // large values in a set
      v = "{";
      for (int i = in.ConsumeIntegralInRange(1, 64); i > 0; --i) v += std::string(pick(in, counts)) + (i > 1 ? ", " : "");
      v += "}";
      break;
    }
    default: v = "{}"; break;
  }
  p.add("strategy huge {\n  " + k + " = " + v + "\n}\n");
}

void every_key_free(FuzzedDataProvider& in, program& p) {
  std::string s = "strategy all {\n";
  for (auto k : {"dp", "tp", "pp", "cp", "ep", "zero", "shard", "checkpoint", "micro_batch", "sequence_parallel",
                 "virtual_stages", "order"})
    if (in.remaining_bytes() == 0 || in.ConsumeIntegralInRange(0, 7) != 0) s += std::string("  ") + k + " = auto\n";
  p.add(s + "}\n");
}

void many_strategies(FuzzedDataProvider& in, program& p) {
  static constexpr std::array sizes{30, 100, 1000, 5000};
  int const n = pick(in, sizes);
  bool const same_name = in.ConsumeBool();
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += "strategy " + (same_name ? std::string("dup") : "s" + std::to_string(i)) + " { tp = " +
            std::to_string(1 << (i % 4)) + "; pp = " + std::to_string(1 + i % 3) + "; zero = " + std::to_string(i % 4) +
            " }\n";
  }
  p.add(std::move(text));
}

void extreme_value(FuzzedDataProvider& in, program& p) {
  auto const& k = pick(in, keys());
  auto const v = value_of(in, k);
  std::string_view const b = k.block;
  if (b == "model") p.model[k.name] = v;
  else if (b == "cluster") p.cluster[k.name] = v;
  else if (b == "training") p.training[k.name] = v;
  else if (b == "gpu") {
    if (!p.gpu_block) p.gpu_block.emplace();
    (*p.gpu_block)[k.name] = v;
  } else if (b == "framework") {
    if (!p.framework_block) p.framework_block.emplace();
    (*p.framework_block)[k.name] = v;
  } else {
    p.add("strategy x" + std::to_string(p.extra.size()) + " {\n  " + k.name + " = " + v + "\n}\n");
  }
}

void odd_names(FuzzedDataProvider& in, program& p) {
  // Names are ASCII identifiers: these are errors at the name, located.
  std::string const name = std::string("n") + pick(in, odd_text);
  p.add("strategy " + name + " { tp = 2 }\n");
}

void setting(FuzzedDataProvider& in, program& p) {
  auto const& k = pick(in, keys());
  std::string target = in.ConsumeBool() ? k.block : (k.block == "strategy" ? "head" : "m");
  std::string v = value_of(in, k);
  for (auto& c : v)
    if (c == '\n' || c == '\r') c = ' ';
  p.header += "#set " + target + "." + k.name + "=" + v + "\n";
}

void wide_cluster(FuzzedDataProvider& in, program& p) {
  p.cluster["nodes"] = pick(in, counts);
  p.cluster["gpus_per_node"] = pick(in, counts);
}

std::string block(std::string const& head, keyed const& keys) {
  std::string out = head + " {\n";
  for (auto const& [k, v] : keys) out += "  " + k + " = " + v + "\n";
  return out + "}\n";
}

std::string generate(FuzzedDataProvider& in) {
  program p;
  if (in.ConsumeBool()) p.model_base = pick(in, presets);
  if (in.ConsumeBool()) p.gpu_base = pick(in, gpus);
  static constexpr std::array small_nodes{"1", "2", "4"};
  static constexpr std::array small_gpus{"1", "2", "4", "8"};
  p.cluster["nodes"] = pick(in, small_nodes);
  p.cluster["gpus_per_node"] = pick(in, small_gpus);
  static constexpr std::array batches{"8", "16", "64", "256", "720720"};
  p.training["global_batch"] = pick(in, batches);
  for (int n = in.ConsumeIntegralInRange(1, 6); n > 0 && p.size < max_text; --n) {
    switch (in.ConsumeIntegralInRange(0, 9)) {
      case 0: chain(in, p); break;
      case 1: huge_domain(in, p); break;
      case 2: every_key_free(in, p); break;
      case 3: many_strategies(in, p); break;
      case 4: odd_names(in, p); break;
      case 5: setting(in, p); break;
      case 6: wide_cluster(in, p); break;
      default: extreme_value(in, p); break;
    }
  }
  if (in.ConsumeBool()) p.add("strategy fixed { tp = 2 }\n");
  std::string text = p.header + block("model m : " + p.model_base, p.model);
  if (p.gpu_block) text += block("gpu g : " + p.gpu_base, *p.gpu_block);
  if (!p.cluster.contains("gpu")) p.cluster["gpu"] = p.gpu_block ? "g" : p.gpu_base;
  if (p.framework_block) {
    text += block("framework f : " + p.framework_base, *p.framework_block);
    if (!p.training.contains("framework")) p.training["framework"] = "f";
  }
  text += block("cluster c", p.cluster) + block("training", p.training);
  for (auto const& b : p.extra) text += b;
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  auto const text = generate(in);
  static bool const print = std::getenv("DTPLAN_FUZZ_PRINT") != nullptr;
  if (print) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  dtplan::fuzz::run_pipeline(text);
  return 0;
}
