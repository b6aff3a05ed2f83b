#pragma once
#include <array>
#include <optional>
#include <span>
#include <string_view>

/// The frameworks' own job configurations dtplan reads (`--from`,
/// planner/import/import.hpp) and, all but one, writes (`--emit` with
/// `--framework`, codegen/framework_export.hpp), each at the version
/// recorded in tests/data/framework_keys/ (NeMo's MLPerf scripts: in
/// tests/data/published/mlperf_nemo_gpt3/).
namespace dtplan::planner {

enum class job_format {
  torchtitan,  ///< torchtitan v0.2.0: a job TOML (torchtitan/config/job_config.py)
  megatron,    ///< Megatron-LM core_v0.13.0: pretrain_gpt.py's arguments (megatron/training/arguments.py)
  deepspeed,   ///< DeepSpeed v0.17.5's ds_config.json with Megatron-DeepSpeed 4efb479's arguments
  nemo,        ///< NVIDIA's MLPerf Training v4.0 GPT-3 scripts: shell variables NeMo's custom.yaml reads (read only)
};

/// The formats dtplan writes as well as reads.
inline constexpr std::array<job_format, 3> job_formats{job_format::torchtitan, job_format::megatron,
                                                        job_format::deepspeed};

/// Every format `--from` reads.
inline constexpr std::array<job_format, 4> read_job_formats{job_format::torchtitan, job_format::megatron,
                                                             job_format::deepspeed, job_format::nemo};

/// "torchtitan", "megatron", "deepspeed", "nemo": the word `--from` and
/// `--framework` take.
constexpr std::string_view name(job_format f) {
  switch (f) {
    case job_format::torchtitan: return "torchtitan";
    case job_format::megatron: return "megatron";
    case job_format::deepspeed: return "deepspeed";
    case job_format::nemo: return "nemo";
  }
  return "";
}

/// The built-in framework preset (planner/catalog/frameworks.dtp) a job of
/// that format runs: its own name, except NeMo's scripts, which run
/// Megatron-Core (`megatron`).
constexpr std::string_view preset(job_format f) {
  return f == job_format::nemo ? std::string_view("megatron") : name(f);
}

/// The format named `word` among `among` (the formats dtplan writes, or
/// read_job_formats: those `--from` reads), if it is one.
constexpr std::optional<job_format> job_format_of(std::string_view word,
                                                  std::span<job_format const> among = job_formats) {
  for (auto f : among)
    if (name(f) == word) return f;
  return std::nullopt;
}

}  // namespace dtplan::planner
