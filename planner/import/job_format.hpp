#pragma once
#include <array>
#include <optional>
#include <string_view>

/// The frameworks whose own job configuration dtplan writes (`--emit` with
/// `--framework`, codegen/framework_export.hpp) and reads (`--from`,
/// planner/import/import.hpp), each at the version recorded in
/// tests/data/framework_keys/.
namespace dtplan::planner {

enum class job_format {
  torchtitan,  ///< torchtitan v0.2.0: a job TOML (torchtitan/config/job_config.py)
  megatron,    ///< Megatron-LM core_v0.13.0: pretrain_gpt.py's arguments (megatron/training/arguments.py)
  deepspeed,   ///< DeepSpeed v0.17.5's ds_config.json with Megatron-DeepSpeed 4efb479's arguments
};

inline constexpr std::array<job_format, 3> job_formats{job_format::torchtitan, job_format::megatron,
                                                        job_format::deepspeed};

/// "torchtitan", "megatron", "deepspeed": also the name of the built-in
/// framework preset (planner/catalog/frameworks.dtp) a job of that format runs.
constexpr std::string_view name(job_format f) {
  switch (f) {
    case job_format::torchtitan: return "torchtitan";
    case job_format::megatron: return "megatron";
    case job_format::deepspeed: return "deepspeed";
  }
  return "";
}

/// The format named `word`, if it is one.
constexpr std::optional<job_format> job_format_of(std::string_view word) {
  for (auto f : job_formats)
    if (name(f) == word) return f;
  return std::nullopt;
}

}  // namespace dtplan::planner
