#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "planner/ir/ir.hpp"

/// The key table: every key of every block (model, gpu, cluster, training,
/// strategy, framework) once, with its IR member, its domain and physical range, its
/// default, the names other tools use for it, and what it means. Lowering,
/// the strategy's key spans, the search's whole space, the C++ API's
/// builders, `--dump ir` and the key reference (docs/keys.md) all read it.
///
/// Adding a key is one row in keys.cpp plus its physics: give the IR block a
/// member, add the row (name, domain, member through `member<&block::m>()` or
/// `choice<&strategy_spec::m, &strategy::m>()`, range, default, meaning),
/// add the C++ API's builder method (one line, `set("key", v)`), regenerate
/// docs/keys.md (`DTPLAN_REBASE=1 build/tests/keys_test`), and use the
/// member where it changes memory or time. Lowering, `--set`, did-you-mean,
/// the dump, the search space and the checker's spans follow from the row.
/// A run-time behaviour of a framework is a training member whose row goes
/// in `behaviour_keys<B>()`: the framework block gets the same row, a preset
/// sets it and the training block overrides it.
namespace dtplan::planner {

enum class block_kind { model, gpu, cluster, training, strategy, framework };
inline constexpr std::size_t block_kind_count = 6;

/// "model", "gpu", "cluster", "training", "strategy", "framework", in that order.
std::vector<std::string> const& block_kind_names();
std::string const& name(block_kind k);
std::optional<block_kind> block_kind_of(std::string_view word);
/// How messages call a block: "model 'm'", "this 'strategy' block" (no
/// name), "the 'training' block".
std::string called(block_kind k, std::string_view name);

/// The physical dimension of a quantity.
enum class dimension { bytes, bandwidth, compute_rate, time, fraction };
/// "an amount of memory", "a bandwidth", ...
std::string_view dimension_phrase(dimension d);

/// What a key's value is.
enum class domain {
  count,     ///< a whole number in [min, max]
  quantity,  ///< a number with a unit of `dim`, in `range`
  fraction,  ///< a number in [0, 1] or a percentage
  real,      ///< a plain number in `range` (base_lr)
  choice,    ///< one of `choices`
  boolean,   ///< true or false
  text,      ///< a quoted string
  gpu_name,  ///< the name of a gpu block (the cluster's `gpu`)
  framework_name,  ///< the name of a framework block (the training's `framework`)
  shard,     ///< 'all', 'node' or a number of ranks
  order,     ///< the four axes in a string, "tp-cp-dp-pp"
};

/// The physical range of a quantity, fraction or real, in base units.
struct bounds {
  double low = 0;
  double high = std::numeric_limits<double>::infinity();
  bool above_zero = false;    ///< zero itself is out ("must be above zero")
  std::string_view low_text{};  ///< each bound as a file writes it ("1 Mbit/s")
  std::string_view high_text{};
};

/// The value of a key that takes a set outside a strategy (`takes_set`):
/// whole numbers or choices' indices, ascending, each once.
using value_set = std::vector<std::int64_t>;

/// One key's value, whatever its block: counts as int64, quantities,
/// fractions and reals as doubles in base units, a choice as its index in
/// `choices` (the IR enum's value), booleans, text, gpu and framework names,
/// a shard group, a rank order, a set.
using key_value = std::variant<std::int64_t, double, bool, std::string, shard_group, rank_order, value_set>;
struct key_value_hash {
  std::size_t operator()(key_value const& v) const;
};

/// Reads and writes a key's member of a model, gpu, cluster, training or
/// framework (a framework's behaviour keys reach into its `behaviours`, its
/// limits into `limits`).
/// `store` is null where the IR keeps nothing (a gpu's description); `load`
/// gives nothing where the member holds no value (an unset optional).
template <class Block>
struct member_access {
  void (*store)(Block&, key_value const&) = nullptr;
  std::optional<key_value> (*load)(Block const&) = nullptr;
};

/// Reads and writes a strategy key: its form in a `strategy_spec`, its
/// values, and its member of the concrete `strategy`.
struct strategy_access {
  choice_form& (*form)(strategy_spec&) = nullptr;
  choice_form const& (*read)(strategy_spec const&) = nullptr;
  void (*store)(strategy_spec&, key_choice<key_value> const&) = nullptr;
  key_choice<key_value> (*load)(strategy_spec const&) = nullptr;
  void (*fix)(strategy&, key_value const&) = nullptr;
  key_value (*get)(strategy const&) = nullptr;  ///< the member of a concrete strategy
};

using key_field = std::variant<std::monostate, member_access<model>, member_access<gpu>, member_access<cluster>,
                               member_access<training>, strategy_access, member_access<framework>>;

/// One key of one block.
struct key_info {
  block_kind block = block_kind::model;
  std::string_view name{};
  domain dom = domain::count;
  key_field field{};                    ///< the IR member
  dimension dim = dimension::fraction;  ///< quantity, fraction: what it measures
  bounds range{};                       ///< quantity, fraction, real
  std::int64_t min = 1;                 ///< count, and a shard's number of ranks
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> choices{};   ///< choice: in the order of the IR enum's values
  std::string_view what{};              ///< count: ends "expected a whole number ..."; "" is "for 'KEY'"
  bool required = false;
  std::optional<key_value> default_value{};  ///< what lowering and the C++ API start from; none: unset or derived
  /// The default as the docs say it ("5 us", "= heads", "required").
  std::string_view default_text{};
  std::vector<std::string_view> aliases{};  ///< names other tools use for it (did-you-mean)
  bool searchable = false;  ///< strategy: takes sets, ranges and auto; search_everything() frees it
  /// training and framework: a run-time behaviour of the framework, which a
  /// framework block sets and the training block overrides. Each such row
  /// of the training block has a twin in the framework block (same name,
  /// domain, default and meaning).
  bool behaviour = false;
  /// training: a flag of one framework's jobs that is not a behaviour of
  /// its preset (Megatron-Core's pipeline split and recompute modules).
  /// Like a behaviour, `--from` a job of another framework does not carry
  /// the file's value over (`of_a_framework`).
  bool framework_flag = false;
  /// Outside a strategy: the value is a set `{...}` of the domain's values
  /// (a framework's `zero_stages`, `checkpoint_modes`), a `value_set`.
  bool takes_set = false;
  bool dump_default = true;  ///< `--dump ir` shows it when neither written nor changed from its default
  /// strategy: the value fixed() gives when not written, from the other keys.
  key_value (*derived)(strategy const&) = nullptr;
  std::string_view meaning{};  ///< one line, for docs and --help
};

/// Every key, grouped by block in block_kind order.
std::vector<key_info> const& all_keys();
std::span<key_info const> keys_of(block_kind k);
/// The names of `k`'s keys in table order (for did-you-mean).
std::vector<std::string> const& key_names(block_kind k);
key_info const* find_key(block_kind k, std::string_view name);
/// A training key the file writes for its framework's jobs: a behaviour or
/// a framework's flag. `--from` a job of another framework leaves them out.
bool of_a_framework(key_info const& k);
/// The key another tool calls `written` ("tensor_parallel" is `tp`).
key_info const* alias_of(block_kind k, std::string_view written);

/// A block as lowering and the C++ API start it: the table's defaults.
template <class Block>
Block with_defaults();

/// Stores `v` in `b`'s member for `k` (a no-op where the IR keeps nothing).
template <class Block>
void store(key_info const& k, Block& b, key_value const& v);
/// `b`'s value for `k`, when the IR holds one.
template <class Block>
std::optional<key_value> load(key_info const& k, Block const& b);

/// What is wrong with `v` for `k` (below or above its range, not one of its
/// choices, an order that does not name each axis once), in the words
/// lowering reports; `shown` is the value as the user wrote it. Nothing when
/// it is valid.
std::optional<std::string> invalid(key_info const& k, key_value const& v, std::string_view shown);
/// "'k' must be at least 1, got 0" or "'zero' must be between 0 and 3, got 4".
std::string count_out_of_range(std::string_view key, std::int64_t min, std::int64_t max, std::string_view shown);
/// What a key takes, for "a range is only allowed for whole-number keys;
/// 'shard' takes ..." ("'true' or 'false'", "an order such as ...").
std::string takes(key_info const& k);
/// "expected a whole number " + this: "of layers", "for 'dp'".
std::string count_phrase(key_info const& k);

/// Whether `k` takes `auto` outside a strategy: one of its choices is named
/// "auto" (`attention_backend`).
bool takes_auto(key_info const& k);
/// The index of the choice named "auto", when `k` has one.
std::optional<std::int64_t> auto_choice(key_info const& k);

/// Why a set, a range or `auto` (`form`: "a set", "a range", "'auto'") does
/// not fit `k`, a key of any block but a strategy: "'tensor_parallel' takes
/// 'true' or 'false', not a set; in a 'framework' block only 'zero_stages' and
/// 'checkpoint_modes' take a set", or DSL.md's "sets, ranges and 'auto' are
/// only allowed in a 'strategy' block" where no key of the block takes it.
std::string wrong_form(key_info const& k, std::string_view form);

/// "'a', 'b' or 'c'"
std::string quoted_alternatives(std::vector<std::string> const& names);
/// The value as `--dump ir` shows it ("full", "80.0 GiB (85899345920 B)").
std::string shown(key_info const& k, key_value const& v);

/// "tp-cp-dp-pp" as a rank order: each of tp, cp, dp and pp once.
std::optional<rank_order> parse_order(std::string_view text);

/// docs/keys.md: every key with its values, default and meaning, by block.
std::string keys_reference();

}  // namespace dtplan::planner
