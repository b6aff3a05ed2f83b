#pragma once
#include <cstdint>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/ast.hpp"
#include "dsl/config/config.hpp"
#include "dsl/diagnostics.hpp"
#include "planner/import/import.hpp"
#include "planner/ir/counts.hpp"
#include "planner/ir/ir.hpp"

/// What the importers share (internal to planner/import/): reading a
/// job's entries with typed, located errors, and writing dtplan keys as
/// syntax-tree assignments located where the job writes them.
namespace dtplan::planner::import_detail {

namespace ast = dsl::ast;
using dsl::span;
using dsl::config::entry;

/// What the job becomes: settings of the model and training blocks, the
/// body of the strategy block, and blocks the file lacks.
struct translation {
  std::vector<ast::setting> settings;
  std::vector<ast::assignment> strategy;
  std::vector<ast::block> blocks;
  dsl::diagnostics diags;  ///< the job's errors, and its unread keys as warnings
};

/// A job's entries, each read once: what is not read by the end is
/// reported.
class job_reader {
 public:
  job_reader(dsl::config::document const& doc, std::string_view framework, translation& out);

  /// The entry of `key` (for an argument written twice, the last: argparse
  /// keeps it), marked read; nullptr when the job does not write it.
  entry const* find(std::string_view key);
  /// An argument written alone (`--bf16`), marked read; nullptr when it is
  /// not written. One written with a value is an error (argparse rejects
  /// `--bf16 yes`).
  entry const* flag(std::string_view key);
  /// Marks every entry whose key starts with `prefix` read, as not
  /// changing a step's time or memory (a warning says so, by name), or for
  /// the reason `why` ("it applies only with ...").
  void not_costed(std::string_view prefix, std::string_view why = "it does not change a step's time or memory");

  /// The value of `e` as a whole number, number, boolean or text, or a
  /// located error ("expected a whole number for '--num-layers', got a
  /// string"). An argument's words are read as numbers and booleans; a
  /// word with a shell expansion is an error naming it.
  std::optional<std::int64_t> integer(entry const& e);
  std::optional<double> real(entry const& e);
  std::optional<bool> boolean(entry const& e);
  std::optional<std::string> text(entry const& e);
  /// The words of an argument that takes several (argparse's nargs): each
  /// of them, or its one value's text; none written, none.
  std::optional<std::vector<std::string>> texts(entry const& e);

  /// Reports every entry not read: a warning per key, naming it, at its
  /// place in the job's file. Called once, at the end.
  void report_unread();

  [[nodiscard]] std::uint32_t file() const { return doc_.file; }
  /// Whether values are words, which read as numbers and booleans (an
  /// argument list, a shell script), not typed TOML or JSON values.
  [[nodiscard]] bool words() const {
    return doc_.format == dsl::config::document::syntax::arguments ||
           doc_.format == dsl::config::document::syntax::shell;
  }
  /// The file's start: where a value the job leaves at its framework's
  /// default is said to come from.
  [[nodiscard]] span origin() const { return {doc_.file, 0, 0}; }
  [[nodiscard]] dsl::config::document const& document() const { return doc_; }
  /// Where `e`'s key (its value) is written; the file's start when the job
  /// does not write it (nullptr), or for the value of an argument alone.
  [[nodiscard]] span key_at(entry const* e) const { return e ? e->key_where : origin(); }
  [[nodiscard]] span value_at(entry const* e) const { return e && e->val ? e->val->where : key_at(e); }
  translation& out() { return out_; }

 private:
  std::optional<std::string> word(entry const& e, std::string_view what);

  dsl::config::document const& doc_;
  std::string framework_;
  translation& out_;
  std::vector<bool> read_;
  std::map<std::string, std::string, std::less<>> not_costed_;  // key -> why
};

/// Syntax-tree values located at `where`.
ast::value integer_value(std::int64_t v, span where);
/// A real number, written as the shortest text that reads back to `v`.
ast::value real_value(double v, span where);
ast::value identifier_value(std::string name, span where);
ast::value boolean_value(bool v, span where);
ast::value string_value(std::string text, span where);
/// A number of bytes as `N B`.
ast::value bytes_value(double v, span where);

/// `BLOCK.key = value` as the job sets it (`target` is a block kind).
void set(translation& t, std::string_view target, std::string_view key, ast::value v, span key_where);
/// `key = value` in the job's strategy block.
void set_strategy(translation& t, std::string_view key, ast::value v, span key_where);

/// What an importer knows of the program before the job is lowered with it:
/// nothing on the first pass; the first pass's program (the cluster's size,
/// the model's layers) on the second.
struct context {
  program const* prior = nullptr;
  bool file_has_model = false;
  bool file_has_training = false;
};

/// The importers: each reads its job's entries into `out`.
void import_torchtitan(job_reader& job, context const& ctx);
void import_megatron(job_reader& job, context const& ctx);
/// `args`: Megatron-DeepSpeed's arguments, when the job is given as those;
/// `config`: the ds_config.json (given, or named by `--deepspeed_config`).
void import_deepspeed(job_reader* args, job_reader* config, context const& ctx);
/// NeMo's variables as NVIDIA's MLPerf scripts set them: Megatron-Core
/// through NeMo, with conf/custom.yaml's defaults for what they leave out.
void import_nemo(job_reader& job, context const& ctx);

/// The arguments Megatron-LM and Megatron-DeepSpeed share (the model's
/// shape, the batch, tp/pp/sp, recomputation, precision); `deepspeed` for
/// the latter's spellings. Returns what the rest of an importer needs.
struct megatron_common {
  std::optional<std::int64_t> tp, pp, cp, micro_batch, global_batch;
  std::optional<std::int64_t> layers;  ///< --num-layers, else the prior model's
  std::optional<precision> prec;       ///< from --bf16/--fp16/--fp8-format
  span prec_where;
  bool sequence_parallel = false;
  std::int64_t virtual_stages = 1;
  /// The first argument only Megatron-LM of 2021-22 takes
  /// (--checkpoint-activations, --activations-checkpoint-method), or null.
  entry const* legacy = nullptr;
  /// --activations-checkpoint-method, which only Megatron-LM v2.x took (from
  /// c1e0689d92, 2021-08, until cfd2e21607, 2022-04, brought sequence
  /// parallelism and selective recomputation), or null.
  entry const* before_sequence_parallel = nullptr;
};
megatron_common import_megatron_args(job_reader& job, context const& ctx, bool deepspeed);

/// What Megatron-LM's arguments and NeMo's variables both set, written the
/// same way whichever job says it.
///
/// A run-time behaviour (`training.KEY`) as the job sets it at `e` (nullptr:
/// the framework's default, `value`); where it does not `applies` to the
/// job, a warning at `e` instead ("'--tp-comm-overlap' does not apply to
/// this job: not read").
void set_megatron_behaviour(job_reader& job, entry const* e, std::string_view key, bool applies, bool value);
/// The strategy's `checkpoint` for Megatron-Core's recomputation `mode`
/// ("none", "selective", "full") written at `mode_at`; `granularity` when
/// the job states it as a granularity, whose `method` and `layers` are read
/// with full recomputation only (`full` names that setting in warnings:
/// "--recompute-granularity full"). False on an error in them.
bool set_megatron_recomputation(job_reader& job, std::string_view mode, entry const* mode_at, bool granularity,
                                entry const* method, entry const* layers, std::string_view full);
/// A fixed gradient bucket of `bytes`, as the job writes it at `at`.
void set_megatron_bucket(job_reader& job, double bytes, entry const* at);

/// A shard group of `dp_block` data-parallel coordinates (each with every
/// context-parallel one) as the strategy's `shard` key writes it: `node`
/// when that is the members of a gradient-sync group on one node of the
/// prior program's cluster, else the number.
ast::value shard_value(std::int64_t dp_block, strategy const& degrees, context const& ctx, span where);

/// The world's size on the second pass (nothing on the first).
std::optional<std::int64_t> world(context const& ctx);

/// The ranks of the world a job's model degrees (tp x pp x cp) leave: the
/// world over their product where that is positive and divides it.
std::optional<std::int64_t> ranks_left(context const& ctx, std::initializer_list<std::int64_t> degrees);

}  // namespace dtplan::planner::import_detail
