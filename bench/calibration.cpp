#include "bench/calibration.hpp"

#include "dsl/source.hpp"
#include "planner/model/cost_model.hpp"
#include "planner/lower/lower.hpp"
#include "planner/search/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>

namespace dtplan::bench {

using namespace planner;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return lower(hay).find(lower(needle)) != std::string::npos; }

std::string_view trim(std::string_view s) {
  auto const begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::optional<double> number(std::string_view text) {
  auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return std::nullopt;
  text.remove_prefix(begin);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> integer(std::string_view text) {
  auto v = number(text);
  if (!v || *v != std::floor(*v)) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

std::string read_file(std::string const& path) {
  auto text = dsl::read_file(path);
  if (!text) throw std::runtime_error(fmt::format("cannot read '{}'", path));
  return *text;
}

// Column lookup by header name.
struct row_view {
  std::map<std::string, std::size_t, std::less<>> const& index;
  std::vector<std::string> const& fields;
  [[nodiscard]] std::string_view operator[](std::string_view col) const {
    auto it = index.find(col);
    if (it == index.end()) throw std::runtime_error(fmt::format("calibration data lacks column '{}'", col));
    return it->second < fields.size() ? std::string_view(fields[it->second]) : std::string_view();
  }
};

int zero_stage(std::string_view text, bool& unknown) {
  unknown = false;
  if (text.empty() || contains(text, "none")) return 0;
  if (contains(text, "SHARD_GRAD_OP")) return 2;
  if (contains(text, "FULL_SHARD") || contains(text, "FSDP2") || contains(text, "fully sharded")) return 3;
  if (contains(text, "ZeRO-1")) return 1;
  if (contains(text, "ZeRO-2")) return 2;
  if (contains(text, "ZeRO-3")) return 3;
  unknown = true;
  return 0;
}

std::optional<checkpoint_mode> checkpoint_of(std::string_view text) {
  if (contains(text, "selective")) return checkpoint_mode::selective;
  if (contains(text, "full")) return checkpoint_mode::full;
  if (contains(text, "none")) return checkpoint_mode::none;
  return std::nullopt;
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  bool any = false;  // the current row has content
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      field.clear();
      row.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// A CSV file's rows, its header first, and each column's place by its
// header's name (what row_view reads).
struct csv_table {
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::size_t, std::less<>> index;
};

csv_table read_csv(std::string const& path) {
  csv_table t{parse_csv(read_file(path)), {}};
  if (t.rows.empty()) throw std::runtime_error(fmt::format("'{}' is empty", path));
  for (std::size_t i = 0; i < t.rows[0].size(); ++i) t.index[t.rows[0][i]] = i;
  return t;
}

}  // namespace

std::optional<gpu> catalog_gpu(std::string_view name) {
  // Lowering the catalog is not free: keep each GPU once.
  static std::mutex lock;
  static std::map<std::string, std::optional<gpu>, std::less<>> cache;
  std::lock_guard<std::mutex> guard(lock);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(std::string(name), planner::catalog_gpu(name)).first;
  return it->second;
}

std::optional<gpu> catalog_gpu_for(std::string_view text, std::optional<double> memory_gb) {
  std::string t = lower(text);
  if (t.find("h100") != std::string::npos) {
    // Meta's Grand Teton H100: 96 GB of HBM2e, power-capped at 500 W.
    if (t.find("hbm2e") != std::string::npos && t.find("500w") != std::string::npos)
      return catalog_gpu("H100_SXM_96GB_500W");
    return catalog_gpu("H100_SXM");
  }
  if (t.find("a100") != std::string::npos) {
    bool is80 = t.find("80gb") != std::string::npos || (memory_gb && *memory_gb >= 79);
    bool is40 = t.find("40gb") != std::string::npos || (memory_gb && *memory_gb < 79);
    if (is80 && !is40) return catalog_gpu("A100_SXM_80GB");
    if (is40 && !is80) return catalog_gpu("A100_SXM_40GB");
    return std::nullopt;
  }
  if (t.find("v100") != std::string::npos) return catalog_gpu("V100_SXM_32GB");
  return std::nullopt;
}

// 5,777 MB/s of a 100 Gbit/s (12,500 MB/s) Omni-Path link through verbs
// (openucx/ucx#3196, osu_put_bw at 512 KiB): 46.2 %, as
// tests/data/published/bigscience_bloom_176b/cluster.dtp writes it.
constexpr double omni_path_verbs_efficiency = 0.462;

std::optional<bandwidth> parse_link(std::string_view text, std::int64_t gpus_per_node, bool per_node) {
  std::string t = lower(text);
  std::smatch m;
  auto const per_gpu_text = t.find("per gpu") != std::string::npos;
  // "NxM Gb/s" or "N x M Gb/s": N links of M Gbit/s each (a node's NICs).
  static std::regex const multi(R"((\d+)\s*x\s*(\d+(?:\.\d+)?)\s*gb/s)");
  double bytes_per_s = 0;
  bool node_total = true;
  if (std::regex_search(t, m, multi)) {
    bytes_per_s = std::stod(m[1]) * std::stod(m[2]) * 1e9 / 8;
  } else if (std::regex_search(t, m, std::regex(R"((\d+)\s*x\s*connectx-6)"))) {
    bytes_per_s = std::stod(m[1]) * 200e9 / 8;  // ConnectX-6 HDR: 200 Gbit/s each
  } else if (t.find("omni-path") != std::string::npos) {
    std::regex_search(t, m, std::regex(R"((\d+)\s*links)"));
    double links = m.empty() ? 1 : std::stod(m[1]);
    bytes_per_s = links * 100e9 / 8;  // OPA: 100 Gbit/s per link
  } else {
    // Gb/s (bits) and GB/s (bytes) differ only in case: search the original text.
    std::string orig(text);
    static std::regex const bits(R"((\d+(?:\.\d+)?)\s*Gb/s)");
    static std::regex const byts(R"((\d+(?:\.\d+)?)\s*GB/s)");
    if (std::regex_search(orig, m, bits)) {
      bytes_per_s = std::stod(m[1]) * 1e9 / 8;
    } else if (std::regex_search(orig, m, byts)) {
      bytes_per_s = std::stod(m[1]) * 1e9;
      if (t.find("bidir") != std::string::npos) bytes_per_s /= 2;
    } else {
      return std::nullopt;
    }
    node_total = !per_gpu_text;
  }
  if (per_node && !node_total) bytes_per_s *= static_cast<double>(gpus_per_node);
  if (!per_node && node_total && per_gpu_text) bytes_per_s /= static_cast<double>(gpus_per_node);
  return bandwidth(bytes_per_s);
}

namespace {

// A table of bench/data keyed by its case_id column, each row made by `make`.
template <class Row, class Make>
std::map<std::string, Row, std::less<>> by_case_id(std::string_view file, Make make) {
  std::map<std::string, Row, std::less<>> out;
  auto const [rows, index] = read_csv(std::string(DTPLAN_BENCH_DATA_DIR) + "/" + std::string(file));
  for (std::size_t r = 1; r < rows.size(); ++r) {
    row_view row{index, rows[r]};
    out.emplace(std::string(row["case_id"]), make(row));
  }
  return out;
}

}  // namespace

std::map<std::string, family_row, std::less<>> const& families() {
  static auto const table = by_case_id<family_row>("families.csv", [](row_view const& row) {
    return family_row{std::string(row["family"]), std::string(row["same_job_group"])};
  });
  return table;
}

namespace {

// What a source's own scripts publish beside its table (supplements.csv):
// a run's micro-batch, interleaving and runtime settings, each row citing
// the file it was read from.
struct supplement {
  std::string micro_batch, vpp, source;
  std::vector<std::pair<std::string, std::string>> runtime;
};

std::map<std::string, supplement, std::less<>> const& supplements() {
  static auto const table = by_case_id<supplement>("supplements.csv", [](row_view const& row) {
    supplement x{std::string(row["micro_batch"]), std::string(row["vpp"]), std::string(row["source"]), {}};
    // "key=value; key=value": training keys, as the .dtp spells them.
    std::string_view rest = row["runtime"];
    while (!rest.empty()) {
      auto const end = std::min(rest.find(';'), rest.size());
      auto const item = trim(rest.substr(0, end));
      rest = end < rest.size() ? rest.substr(end + 1) : std::string_view();
      if (item.empty()) continue;
      auto const eq = item.find('=');
      if (eq == std::string_view::npos)
        throw std::runtime_error(fmt::format("supplements.csv: '{}' is not key=value", item));
      x.runtime.emplace_back(std::string(trim(item.substr(0, eq))), std::string(trim(item.substr(eq + 1))));
    }
    return x;
  });
  return table;
}

// The run's family and same-job group from families.csv (`fallback` for a
// run the table does not list).
void family_of(calibration_run& run, std::string_view fallback) {
  auto const& f = families();
  auto it = f.find(run.id);
  run.family = it == f.end() ? std::string(fallback) : it->second.family;
  if (it != f.end()) run.same_job = it->second.same_job;
}

}  // namespace

std::vector<calibration_run> load_calibration_runs(std::string const& path) {
  auto const [rows, index] = read_csv(path);

  std::vector<calibration_run> runs;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    row_view row{index, rows[r]};
    calibration_run run;
    run.id = std::string(row["case_id"]);
    run.tier = row["tier"].empty() ? 'C' : row["tier"][0];
    run.source = std::string(row["source"]);
    family_of(run, run.source.substr(0, run.source.find(' ')));
    auto const found = supplements().find(run.id);
    supplement const* extra = found == supplements().end() ? nullptr : &found->second;
    // A column the source's table leaves empty, from its scripts where
    // supplements.csv has them.
    auto published = [&](std::string_view column, std::string const supplement::*field) {
      auto const own = row[column];
      return own.empty() && extra ? std::string_view(extra->*field) : own;
    };
    std::vector<std::string> skips;
    auto skip = [&](std::string why) {
      if (std::find(skips.begin(), skips.end(), why) == skips.end()) skips.push_back(std::move(why));
    };

    model& m = run.prog.model;
    m.name = std::string(row["model"]);
    m.layers = integer(row["layers"]).value_or(0);
    m.hidden = integer(row["hidden"]).value_or(0);
    m.heads = integer(row["heads"]).value_or(0);
    m.kv_heads = integer(row["kv_heads"]).value_or(m.heads);
    m.ffn = integer(row["ffn"]).value_or(4 * m.hidden);
    m.vocab = integer(row["vocab"]).value_or(0);
    m.seq_len = integer(row["seq_len"]).value_or(0);
    if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0 || m.seq_len <= 0)
      skip("model shape incomplete");
    std::string_view arch = row["arch_notes"];
    std::string_view model_name = row["model"];
    m.mlp = contains(model_name, "llama") ? mlp_kind::swiglu : mlp_kind::gelu;
    // Llama: RMSNorm and rotary embeddings; GPT-NeoX: LayerNorm and rotary;
    // MPT and BLOOM: LayerNorm and ALiBi; Megatron's GPT: LayerNorm and
    // learned positions.
    m.norm = implied_norm(m.mlp);
    m.position = contains(model_name, "NeoX")                                   ? position_kind::rotary
                 : contains(model_name, "MPT") || contains(model_name, "BLOOM") ? position_kind::alibi
                                                                                : implied_position(m.mlp);
    // MPT, BLOOM and Megatron's GPT (shared input and output embeddings
    // unless --untie-embeddings-and-output-weights) tie their embeddings;
    // Llama 3.1 and GPT-NeoX do not.
    m.tied_embeddings = contains(model_name, "MPT") || contains(model_name, "BLOOM") ||
                        contains(row["framework"], "Megatron-LM");
    // Megatron-LM's GPT trains with dropout unless told otherwise
    // (--attention-dropout and --hidden-dropout default to 0.1: MLM de7dc40f88
    // megatron/arguments.py:341-344, as in core_v0.13.0); none of its tables
    // or scripts here sets them.
    m.dropout = contains(row["framework"], "Megatron-LM");
    bool flash = contains(arch, "FlashAttention") || contains(row["framework"], "torchtitan");
    m.attention = flash ? attention_kind::flash : attention_kind::standard;
    m.optimizer = optimizer_kind::adamw;
    if (contains(arch, "parallel attn+MLP")) skip("parallel attention + MLP block (not modeled)");

    std::string_view prec = row["precision"];
    // torchtitan's Float8 linears (torchao's tensorwise dynamic scaling):
    // the linears' GEMMs in fp8 with their casts, attention and the LM head
    // in bf16, as the time model costs fp8 training.
    if (contains(prec, "fp8") || contains(prec, "Float8")) m.prec = precision::fp8;
    else if (contains(prec, "bf16")) m.prec = precision::bf16;
    else if (contains(prec, "fp16") || contains(prec, "16-bit")) m.prec = precision::fp16;
    else skip(fmt::format("precision '{}' not recognised", prec));
    std::string_view framework = row["framework"];
    // The framework that ran it (its preset's behaviours, planner/catalog/
    // frameworks.dtp), then what the source says beyond the preset.
    auto& rt = run.runtime;
    if (contains(framework, "Composer")) {
      rt.emplace_back("framework", "fsdp");
      // Every MosaicML benchmark table predates llm-foundry's switch to
      // FlashAttention (2024-03-26): its Triton kernel ran (frameworks.md C7).
      rt.emplace_back("attention_backend", "triton");
      // Composer's automatic mixed precision (amp_bf16, amp_fp8) runs FSDP's
      // DEFAULT mixed precision: 16-bit gathers, fp32 gradient reduction;
      // its pure bf16 (PURE) reduces in bf16 (C2).
      rt.emplace_back("grad_precision", contains(prec, "amp_") ? "fp32" : "bf16");
      // llm-foundry's MPT computes its loss with FlashAttention's fused cross
      // entropy unless the config says otherwise (llmfoundry/models/mpt/
      // modeling_mpt.py: om_model_config.get('loss_fn', 'fused_crossentropy')).
      rt.emplace_back("cross_entropy", "fused");
    } else if (contains(framework, "torchtitan")) {
      rt.emplace_back("framework", "torchtitan");
      // The January 2025 measurements ran a torch nightly whose SDPA picked
      // FlashAttention-2 on H100 (frameworks.dtp's header, frameworks.md
      // section 1).
      rt.emplace_back("attention_backend", "flash");
      // torch.compile per transformer block fuses the element-wise work
      // (torchtitan's compile.enable, T9); async TP needs it (T4).
      if (contains(prec, "compile") || contains(run.id, "compile")) rt.emplace_back("fused_elementwise", "true");
      if (contains(prec, "AsyncTP") || contains(run.id, "AsyncTP")) rt.emplace_back("tp_comm_overlap", "true");
    } else if (contains(framework, "DeepSpeed") || contains(framework, "NeoX")) {
      rt.emplace_back("framework", "deepspeed");
    } else if (contains(framework, "Megatron")) {
      // Megatron-LM's README tables of 2020 and Narayanan et al.'s of 2021
      // ran the v1 and v2 code, before sequence parallelism and selective
      // recomputation (cfd2e21607, 2022-04): megatron_v2 proposes neither.
      std::string_view source = row["source"];
      bool const v2 = contains(source, "Megatron-LM README (2020") || contains(source, "Narayanan et al. 2021");
      rt.emplace_back("framework", v2 ? "megatron_v2" : "megatron_2021");
    }
    // DeepSpeed's BF16_Optimizer accumulates fp32 gradients ("fp32 grad
    // accumulation") and all-reduces them cast to communication_data_type,
    // bf16 by default (DeepSpeed 56c522386 runtime/engine.py:712-721,
    // 2068-2069; pipe/engine.py:250-267), then each rank updates its slice
    // and all-gathers the weights.
    if (contains(prec, "fp32 grad")) rt.emplace_back("grad_precision", "fp32");
    if (contains(prec, "BF16_Optimizer")) {
      rt.emplace_back("grad_reduce", "all_reduce");
      rt.emplace_back("grad_comm_precision", "bf16");
      rt.emplace_back("contiguous_gradients", "false");  // its own fp32 buffers, no ZeRO buckets
    }

    // BigScience's tr11 job script exports CUDA_LAUNCH_BLOCKING=1 ("do not
    // remove or the training will hang", bigscience-workshop/bigscience
    // train/tr11-176B-ml/tr11-176B-ml.slurm; the README's "Important
    // environment variables"): BLOOM's steps ran with every launch blocking,
    // each operator's host time added to its GPU time.
    if (contains(row["source"], "(tr11)")) rt.emplace_back("cuda_launch_blocking", "true");
    // What the source's scripts set beyond its framework's preset.
    if (extra) {
      rt.insert(rt.end(), extra->runtime.begin(), extra->runtime.end());
      run.source += "; " + extra->source;
    }

    auto mem_gb = number(row["gpu_mem_GB"]);
    auto g = catalog_gpu_for(row["gpu"], mem_gb);
    cluster& c = run.prog.cluster;
    c.gpus_per_node = integer(row["gpus_per_node"]).value_or(8);
    c.nodes = integer(row["nodes"]).value_or(1);
    auto num_gpus = integer(row["num_gpus"]).value_or(c.nodes * c.gpus_per_node);
    if (num_gpus < c.gpus_per_node) {
      // A single partial node (e.g. 2 of a DGX's 8 GPUs): the job sees those GPUs only.
      c.gpus_per_node = num_gpus;
      c.nodes = 1;
    }
    if (c.nodes * c.gpus_per_node != num_gpus) skip("GPU count does not match nodes x GPUs per node");
    if (!g) {
      skip(fmt::format("GPU '{}' not in the catalog", row["gpu"]));
    } else {
      c.device = *g;
      c.name = g->name;
      use_gpu_defaults(c);
      if (auto l = parse_link(row["intra_node"], c.gpus_per_node, false)) c.intra_node = *l;
      if (auto l = parse_link(row["inter_node"], c.gpus_per_node, true)) {
        c.inter_node = *l;
        // NCCL drives Omni-Path through its InfiniBand verbs transport, not
        // Omni-Path's own PSM2: one user's measurement over 100 Gbit/s
        // Omni-Path puts verbs at 5,777 MB/s at 512 KiB, the size NCCL's
        // Simple protocol moves a step (its 4 MiB buffer over NCCL_STEPS =
        // 8), where PSM2 reaches 12,330 (osu_put_bw, openucx/ucx#3196,
        // 2019-02; docs/research/hardware.md section 3).
        if (contains(lower(row["inter_node"]), "omni-path")) {
          c.network_efficiency = omni_path_verbs_efficiency;
          run.assumptions.push_back(fmt::format("Omni-Path: NCCL over verbs at {:.1f} % of the line rate (openucx/ucx#3196)",
                                                100 * omni_path_verbs_efficiency));
        }
      } else {
        // H100 clusters of the period: 8 x 400 Gbit/s NICs per node; A100: 8 x 200.
        c.inter_node = g->name == "H100_SXM" ? bandwidth(400e9) : bandwidth(200e9);
        if (c.nodes > 1)
          run.assumptions.push_back(fmt::format("inter-node link not stated: assumed {}", to_string(c.inter_node)));
      }
    }

    strategy& s = run.s;
    s.dp = integer(row["dp"]).value_or(0);
    s.tp = integer(row["tp"]).value_or(1);
    s.pp = integer(row["pp"]).value_or(1);
    s.cp = integer(row["cp"]).value_or(1);
    s.ep = integer(row["ep"]).value_or(1);
    s.virtual_stages = integer(published("vpp", &supplement::vpp)).value_or(1);
    s.sequence_parallel = contains(row["sp"], "yes");
    if (s.dp == 0 && s.tp * s.pp * s.cp > 0) s.dp = num_gpus / (s.tp * s.pp * s.cp);
    if (s.dp * s.tp * s.pp * s.cp != num_gpus) skip("dp x tp x pp x cp does not match the GPU count");
    bool unknown_zero = false;
    s.zero = zero_stage(row["zero_or_fsdp"], unknown_zero);
    if (unknown_zero) skip(fmt::format("sharding '{}' not recognised", row["zero_or_fsdp"]));
    if (auto ck = checkpoint_of(row["act_recompute"])) {
      s.checkpoint = *ck;
      // One checkpointed layer per block is what every listed framework does.
    } else {
      skip("activation recomputation not published");
    }
    if (contains(framework, "torchtitan")) {
      // torchtitan's "selective" is op-level selective checkpointing
      // (selective_ac_option = 'op'), not Megatron's; its loss is PyTorch's
      // cross_entropy(logits.float(), labels), unfused; its tensor-parallel
      // plan shards the norms over the sequence (sequence parallelism).
      if (s.checkpoint == checkpoint_mode::selective) s.checkpoint = checkpoint_mode::ops;
      if (s.tp > 1) s.sequence_parallel = true;
    }
    auto mb = integer(published("micro_batch", &supplement::micro_batch));
    if (!mb || *mb <= 0) skip("no micro_batch published");
    s.micro_batch = mb.value_or(1);
    if (contains(framework, "torchtitan") && s.pp > 1 && mb) {
      // torchtitan's table gives the local batch. Its pipeline splits it
      // into one micro-batch per stage of the whole pipeline: one stage per
      // rank for 1F1B, two for the interleaved schedules (torchtitan
      // d4c86e375 parallelisms/pipelining_utils.py: generate_split_points
      // and build_pipeline_schedule, n_microbatches = pp x stages per rank).
      auto const stages = contains(row["notes"], "Interleaved") ? 2 : 1;
      s.virtual_stages = stages;
      if (*mb % (s.pp * stages) == 0) s.micro_batch = *mb / (s.pp * stages);
      else skip("local batch not a multiple of torchtitan's pipeline micro-batches");
    }

    run.prog.training.global_batch = integer(row["global_batch_seqs"]).value_or(0);
    if (run.prog.training.global_batch <= 0) skip("no global batch published");
    if (s.dp > 0 && s.micro_batch > 0 && run.prog.training.global_batch % (s.dp * s.micro_batch) != 0)
      skip("global batch not a multiple of dp x micro_batch");
    else if (s.dp > 0 && s.micro_batch > 0)
      run.grad_accum = run.prog.training.global_batch / (s.dp * s.micro_batch);

    auto tokens = static_cast<double>(run.prog.training.global_batch) * static_cast<double>(m.seq_len);
    if (auto st = number(row["step_time_s"]); st && *st > 0) run.step_time = seconds(*st);
    if (auto tpg = number(row["tokens_per_s_per_gpu"]); tpg && *tpg > 0) run.tokens_per_s_per_gpu = *tpg;
    if (!run.step_time && run.tokens_per_s_per_gpu && num_gpus > 0)
      run.step_time = seconds(tokens / (*run.tokens_per_s_per_gpu * static_cast<double>(num_gpus)));
    if (!run.step_time) {
      if (auto tps = number(row["tokens_per_s"]); tps && *tps > 0) run.step_time = seconds(tokens / *tps);
    }
    if (run.step_time && !run.tokens_per_s_per_gpu && num_gpus > 0)
      run.tokens_per_s_per_gpu = tokens / run.step_time->value() / static_cast<double>(num_gpus);
    if (!run.step_time) skip("no step time or tokens/s published");
    if (auto pm = number(row["peak_mem_GiB"]); pm && *pm > 0) run.peak_memory = bytes(*pm * 1073741824.0);

    m.name = std::string(row["model"]);
    run.prog.file = path;
    for (std::size_t i = 0; i < skips.size(); ++i) run.skip_reason += (i ? "; " : "") + skips[i];
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<calibration_run> load_calibration_runs() {
  return load_calibration_runs(std::string(DTPLAN_BENCH_DATA_DIR) + "/calibration_runs.csv");
}

namespace {

// The catalog GPU of an MLPerf system's accelerator name; nothing for the
// GPUs the catalog lacks (GB200, GB300, B300).
std::optional<gpu> mlperf_gpu(std::string_view name) {
  if (contains(name, "GB200")) return catalog_gpu("GB200");
  if (contains(name, "GB300")) return catalog_gpu("GB300");
  if (contains(name, "B300")) return catalog_gpu("B300");
  if (contains(name, "H100")) return catalog_gpu("H100_SXM");
  if (contains(name, "H200")) return catalog_gpu("H200_SXM");
  if (contains(name, "B200")) return catalog_gpu("B200");
  return std::nullopt;
}

// Megatron-Core's bucket_size is a parameter count; the submissions'
// small values (64, 200) are millions of parameters as NeMo's configs
// write them (bench/data/mlperf/README.md: "raw value, unit not
// re-verified"); bucket_cap_mb (Apex, v3-v4) is MB of the gradients.
std::string bucket_setting(std::string_view text) {
  auto at = text.find("bucket_size=");
  if (at != std::string_view::npos) {
    auto v = number(text.substr(at + 12));
    if (!v) return {};
    double const params = *v < 1e5 ? *v * 1e6 : *v;
    return fmt::format("{:.0f} B", params * 2);  // bf16 gradients
  }
  at = text.find("bucket_cap_mb=");
  if (at != std::string_view::npos) {
    auto v = number(text.substr(at + 14));
    if (v) return fmt::format("{} MB", *v);
  }
  return {};
}

}  // namespace

std::vector<calibration_run> load_mlperf(std::string const& path) {
  auto const [rows, index] = read_csv(path);
  std::vector<calibration_run> runs;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    row_view row{index, rows[r]};
    calibration_run run;
    run.id = std::string(row["case_id"]);
    run.tier = 'A';
    run.source = std::string(row["source"]);
    std::string_view const name = row["model"];
    family_of(run, contains(name, "GPT-3")   ? "MLPerf-GPT3-175B"
                   : contains(name, "405B") ? "MLPerf-Llama31-405B"
                                            : "MLPerf-Llama31-8B");
    std::vector<std::string> skips;
    model& m = run.prog.model;
    m.name = std::string(name);
    m.layers = integer(row["layers"]).value_or(0);
    m.hidden = integer(row["hidden"]).value_or(0);
    m.heads = integer(row["heads"]).value_or(0);
    m.kv_heads = integer(row["kv_heads"]).value_or(m.heads);
    m.ffn = integer(row["ffn"]).value_or(4 * m.hidden);
    m.vocab = integer(row["vocab"]).value_or(0);
    m.seq_len = integer(row["seq_len"]).value_or(0);
    bool const llama = contains(name, "Llama");
    m.mlp = llama ? mlp_kind::swiglu : mlp_kind::gelu;
    // Llama 3.1: RMSNorm and rotary; MLPerf's GPT-3: LayerNorm and learned positions.
    m.norm = implied_norm(m.mlp);
    m.position = implied_position(m.mlp);
    // NeMo's GPT shares the input and output embeddings; Llama does not.
    m.tied_embeddings = !llama;
    m.attention = attention_kind::flash;
    m.optimizer = optimizer_kind::adamw;
    std::string_view const prec = row["precision"];
    // fp8 rows, and the v5.1 rows with Transformer Engine's NVFP4 recipe
    // (config_common_fp4.sh: FP4=True, FP4_RECIPE=nvfp4, FP8=False).
    m.prec = contains(prec, "fp4") ? precision::fp4 : precision::fp8;

    cluster& c = run.prog.cluster;
    c.gpus_per_node = integer(row["gpus_per_node"]).value_or(8);
    c.nodes = integer(row["nodes"]).value_or(1);
    auto const gpus = c.nodes * c.gpus_per_node;
    // A GB200/GB300 NVL72 rack is one NVLink domain over 4-GPU trays: the
    // cluster's node is the domain (launch splits it into trays again). A
    // job whose GPUs are not whole racks takes the same share of each (the
    // configs' Slurm segment; 256 GPUs: 16 of a rack's 18 trays in 4
    // racks), the most GPUs per rack, a whole number of trays, that
    // divides the job.
    if (auto const domain = integer(row["nvlink_domain_gpus"]).value_or(c.gpus_per_node);
        domain > c.gpus_per_node) {
      auto per_rack = domain - domain % c.gpus_per_node;
      while (per_rack > c.gpus_per_node && gpus % per_rack != 0) per_rack -= c.gpus_per_node;
      c.gpus_per_node = per_rack;
      c.nodes = gpus / per_rack;
    }
    if (auto g = mlperf_gpu(row["gpu"])) {
      c.device = *g;
      c.name = g->name;
      use_gpu_defaults(c);
      // One NIC per GPU: NDR 400 Gbit/s, or ConnectX-8 XDR 800 Gbit/s where
      // the system has them (GB300's trays).
      double const nic = contains(row["inter_node"], "800 Gb") || contains(row["inter_node"], "800Gb") ? 800e9 : 400e9;
      c.inter_node = bandwidth(nic / 8 * static_cast<double>(c.gpus_per_node));
    } else {
      skips.push_back(fmt::format("GPU '{}' not in the catalog", row["gpu"]));
    }

    strategy& s = run.s;
    s.tp = integer(row["tp"]).value_or(1);
    s.pp = integer(row["pp"]).value_or(1);
    s.cp = integer(row["cp"]).value_or(1);
    s.dp = integer(row["dp"]).value_or(1);
    s.virtual_stages = integer(row["vpp"]).value_or(1);
    s.micro_batch = integer(row["micro_batch"]).value_or(1);
    s.sequence_parallel = s.tp > 1 && contains(row["sequence_parallel"], "true");
    s.zero = contains(row["distributed_optimizer"], "true") ? 1 : 0;
    s.checkpoint = checkpoint_mode::none;
    // NeMo's use_tp_pp_dp_mapping: Megatron-Core's rank order "tp-cp-ep-pp-dp"
    // (data parallelism outermost), which keeps a model replica in one rack.
    if (contains(row["other_flags"], "TP_PP_DP_MAPPING=True"))
      s.order = rank_order{axis::tp, axis::cp, axis::pp, axis::dp};
    run.prog.training.global_batch = integer(row["global_batch"]).value_or(0);
    if (s.dp * s.micro_batch > 0) run.grad_accum = run.prog.training.global_batch / (s.dp * s.micro_batch);

    // What Megatron-Core/NeMo ran, as the training block says it.
    auto& rt = run.runtime;
    rt.emplace_back("framework", "megatron");
    rt.emplace_back("grad_precision", "bf16");  // v3 Apex grad_sync_dtype bf16; v5 grad_reduce_in_fp32 False
    rt.emplace_back("tp_comm_overlap", contains(row["tp_comm_overlap"], "true") ? "true" : "false");
    rt.emplace_back("overlap_grad_sync", contains(row["overlap_grad_reduce"], "true") ? "true" : "false");
    rt.emplace_back("overlap_param_gather", contains(row["overlap_param_gather"], "true") ? "true" : "false");
    rt.emplace_back("overlap_p2p_comm", contains(row["other_flags"], "OVERLAP_P2P_COMM=True") ? "true" : "false");
    rt.emplace_back("fp8_param_gather", contains(prec, "param all-gather") ? "true" : "false");
    rt.emplace_back("cuda_graphs", contains(row["cuda_graphs"], "none") ? "false" : "true");
    rt.emplace_back("nvls", contains(row["other_flags"], "NCCL_NVLS_ENABLE=0") ? "false" : "true");
    // NeMo's ASYM_PP_EMBED / ASYM_PP_LOSS: Megatron-Core's
    // --account-for-embedding/loss-in-pipeline-split (the 405B's 126 + 2
    // layers over 8 x 8 chunks).
    if (contains(row["other_flags"], "ASYM_PP_EMBED=True"))
      rt.emplace_back("account_for_embedding_in_pipeline_split", "true");
    if (contains(row["other_flags"], "ASYM_PP_LOSS=True"))
      rt.emplace_back("account_for_loss_in_pipeline_split", "true");
    if (auto b = bucket_setting(row["bucket"]); !b.empty()) {
      rt.emplace_back("grad_bucket", "fixed");
      rt.emplace_back("ddp_bucket_size", b);
    }

    if (auto st = number(row["step_time_s"]); st && *st > 0) run.step_time = seconds(*st);
    else skips.push_back("no step time");
    if (run.step_time && gpus > 0)
      run.tokens_per_s_per_gpu = static_cast<double>(run.prog.training.global_batch * m.seq_len) /
                                 run.step_time->value() / static_cast<double>(gpus);
    if (s.dp * s.tp * s.pp * s.cp != gpus) skips.push_back("dp x tp x pp x cp does not match the GPU count");
    run.prog.file = path;
    for (std::size_t i = 0; i < skips.size(); ++i) run.skip_reason += (i ? "; " : "") + skips[i];
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<calibration_run> load_mlperf() {
  return load_mlperf(std::string(DTPLAN_BENCH_DATA_DIR) + "/mlperf/mlperf_runs.csv");
}

std::vector<calibration_run> load_vtrain(std::string const& path) {
  auto const [rows, index] = read_csv(path);
  bool multi = index.count("Parameters (billion)") > 0;
  std::vector<calibration_run> runs;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    row_view row{index, rows[r]};
    calibration_run run;
    run.id = fmt::format("vtrain-{}-{}", multi ? "multi" : "single", r);
    run.tier = 'B';
    run.source = "vTrain ground truth (Bang et al., MICRO 2024)";
    family_of(run, multi ? "vTrain-multi" : "vTrain-single");
    model& m = run.prog.model;
    m.name = "GPT";
    m.layers = integer(row["# layers"]).value_or(0);
    m.hidden = integer(row["hidden size"]).value_or(0);
    m.heads = integer(row["attention heads"]).value_or(0);
    m.kv_heads = m.heads;
    m.ffn = 4 * m.hidden;
    m.vocab = 51200;
    m.tied_embeddings = true;  // Megatron GPT's default
    m.seq_len = integer(row["sequence length"]).value_or(0);
    m.attention = attention_kind::standard;
    m.prec = precision::fp16;
    m.optimizer = optimizer_kind::adam;
    // Megatron's GPT dropout, 0.1 on the attention and the residuals, as
    // vTrain's own model of the runs has it (VIA-Research/vTrain f8dda84
    // src/model/gpt_model.py:16-18).
    m.dropout = true;
    auto gpus = integer(multi ? row["# GPUs"] : row["# GPUs"]).value_or(0);
    cluster& c = run.prog.cluster;
    c.device = *catalog_gpu("A100_SXM_80GB");
    use_gpu_defaults(c);
    c.name = "vtrain";
    c.gpus_per_node = std::min<std::int64_t>(8, gpus);
    c.nodes = c.gpus_per_node > 0 ? gpus / c.gpus_per_node : 0;
    // The machine's own NVLink (the A100's 300 GB/s, use_gpu_defaults) at
    // what the source measured on it: vTrain's all-reduce tables (nccl-tests
    // on 2, 4 and 8 of its GPUs, 1 MiB to 1 GiB; VIA-Research/vTrain f8dda84
    // trace/a100/AR_GPU{2,4,8}_1M_1024M_LUT) fit a ring of 6.5 us a step at
    // 188 GB/s of bus bandwidth (0.63 of the link), mean |log error| 0.20
    // over 27 sizes (calibration_test has them). The validation configs'
    // intra_node_bandwidth = 150 is the simulator's figure for groups larger
    // than those tables (src/predictor.py compute_comm_time), not the link:
    // taken as the link it had halved every tensor-parallel collective.
    c.comm_efficiency = vtrain_comm_efficiency;
    c.intra_latency = vtrain_intra_latency;
    c.keys["intra_latency"] = {};
    c.inter_node = bandwidth(800e9 / 8);
    strategy& s = run.s;
    s.tp = integer(row["tensor parallelism"]).value_or(1);
    s.dp = integer(row["data parallelism"]).value_or(1);
    s.pp = integer(row["pipeline parallelism"]).value_or(1);
    s.micro_batch = integer(row["micro batch"]).value_or(1);
    s.checkpoint = checkpoint_mode::full;
    run.prog.training.global_batch = integer(row["global batch"]).value_or(0);
    // Megatron-DeepSpeed without gradient bucketing (the published
    // validation setup): the data-parallel all-reduce follows the backward.
    run.runtime.emplace_back("framework", "deepspeed");
    run.runtime.emplace_back("overlap_grad_sync", "false");
    if (s.dp * s.tp * s.pp != gpus || c.nodes * c.gpus_per_node != gpus) run.skip_reason = "GPU count mismatch";
    if (s.dp > 0 && s.micro_batch > 0) run.grad_accum = std::max<std::int64_t>(1, run.prog.training.global_batch / (s.dp * s.micro_batch));
    if (auto ms = number(row["iteration time (ms)"])) run.step_time = seconds(*ms / 1e3);
    if (run.step_time && gpus > 0)
      run.tokens_per_s_per_gpu = static_cast<double>(run.prog.training.global_batch * m.seq_len) / run.step_time->value() / static_cast<double>(gpus);
    if (!run.step_time) run.skip_reason = "no iteration time";
    runs.push_back(std::move(run));
  }
  return runs;
}

namespace {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto const n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

accuracy_summary measure_accuracy(std::vector<calibration_run> const& runs, planner::cost_model const& model) {
  accuracy_summary out;
  std::vector<double> all, tier_a;
  for (auto const& r : runs) {
    if (!r.representable() || !r.step_time) continue;
    auto const t = model.step_time(r.prog, r.s);
    run_prediction p;
    p.id = r.id;
    p.tier = r.tier;
    p.measured = *r.step_time;
    p.predicted = t.step;
    p.error = (t.step - *r.step_time) / *r.step_time;
    auto const gpus = static_cast<double>(std::max<std::int64_t>(1, r.prog.cluster.gpus()));
    double const tokens = static_cast<double>(r.prog.training.global_batch * r.prog.model.seq_len);
    p.measured_tokens_per_gpu = tokens / r.step_time->value() / gpus;
    p.predicted_tokens_per_gpu = tokens / t.step.value() / gpus;
    all.push_back(std::fabs(p.error));
    if (r.tier == 'A') tier_a.push_back(std::fabs(p.error));
    out.within_target += std::fabs(p.error) <= 0.25;
    if (std::fabs(p.error) > out.worst) {
      out.worst = std::fabs(p.error);
      out.worst_id = p.id;
    }
    out.rows.push_back(std::move(p));
  }
  out.median = median_of(all);
  out.median_a = median_of(tier_a);
  out.worst_a = tier_a.empty() ? 0 : *std::max_element(tier_a.begin(), tier_a.end());
  out.tier_a = tier_a.size();
  return out;
}

}  // namespace dtplan::bench
