#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dsl/diagnostics.hpp"
#include "dsl/source.hpp"

/// Frameworks' own configuration files, read as written: a torchtitan job
/// TOML, a DeepSpeed ds_config.json, a Megatron-LM argument list. Each
/// reader turns a file into located key/value entries and reports what is
/// not well formed at its file:line:col; none knows what a key means (the
/// importers in planner/import/ do).
namespace dtplan::dsl::config {

/// A value as the file writes it.
struct value {
  enum class kind {
    string,   ///< `"..."`, `'...'`, or a word of an argument list
    integer,  ///< a TOML or JSON number without fraction or exponent
    real,     ///< a TOML or JSON number with one
    boolean,  ///< `true`, `false`
    array,    ///< `[...]`, or the words after an argument that takes several
    object,   ///< a JSON object inside an array (not flattened)
    null,     ///< JSON `null`
  };
  kind k = kind::string;
  /// A string's value (escapes resolved), a number as written (`1_000`,
  /// `3e-4`), "true" or "false".
  std::string text;
  std::vector<value> items;  ///< an array's elements
  span where;
  /// A word of an argument list holding a shell expansion (`$VAR`,
  /// `${VAR}`, `$(...)`, a backquote), which only the shell can resolve.
  bool unexpanded = false;
  /// Of those, one written unquoted as a whole word, which the shell splits
  /// into any number of words: perhaps not the value of the option before it.
  bool detached = false;
};

/// "a string", "a whole number", "a number", "a boolean", "an array", ...
std::string_view kind_phrase(value::kind k);

/// One key of a configuration and what it is set to.
struct entry {
  /// The key's full name: a TOML or JSON key's dotted path from the top
  /// (`parallelism.tensor_parallel_degree`, `zero_optimization.stage`), an
  /// argument as written without its value (`--num-layers`).
  std::string key;
  span key_where;
  /// An argument written alone (`--bf16`) has none.
  std::optional<value> val;
};

/// A configuration file's entries in the order written.
struct document {
  enum class syntax { toml, json, arguments, shell };
  syntax format = syntax::toml;  ///< the reader that made it
  std::uint32_t file = span::no_file;
  std::vector<entry> entries;
  /// An argument list's words that are neither an argument nor its value:
  /// the launcher and its options before the script (`torchrun
  /// --nproc_per_node 8`), the script (`pretrain_gpt.py`), environment
  /// assignments. Empty for TOML and JSON.
  std::vector<value> words;
  /// When the list names a script (a word ending in `.py`): the options
  /// before it, the launcher's (`--nproc_per_node 8`); `entries` are then
  /// the script's.
  std::vector<entry> launcher;
  /// A shell script's variables set by a line dtplan does not evaluate (a
  /// command substitution, arithmetic, a branch of an `if` whose test it
  /// cannot decide), each where that line sets it, its value `unexpanded`
  /// and as written. A later assignment dtplan evaluates replaces one.
  std::vector<entry> unevaluated;
  /// A launch script's files its here-documents write (`cat <<EOF > PATH`,
  /// run): the path and the body as the shell expands them, and where the
  /// body is written.
  struct written_file {
    std::string path;
    std::string text;
    span where;
  };
  std::vector<written_file> written;
};

/// Reads the TOML a torchtitan job configuration is written in: comments,
/// `[table]` and `[a.b]` headers, `key = value` with bare, quoted or dotted
/// keys, basic and literal strings, integers, floats, booleans and arrays of
/// them (over several lines, with a trailing comma). Anything else TOML
/// allows (inline tables, arrays of tables, multi-line strings, dates) is a
/// located error saying it is not read; so are a key or table written
/// twice. Entries carry the table's path: `[training]` then
/// `seq_len = 8192` is `training.seq_len`.
std::optional<document> read_toml(source_manager const& sources, std::uint32_t file, diagnostics& diags);

/// Reads a JSON object (RFC 8259, strictly: no comments, no trailing
/// commas). Nested objects are flattened to dotted keys
/// (`zero_optimization.stage`); an object inside an array stays one
/// `object` value. A key written twice in one object is an error.
std::optional<document> read_json(source_manager const& sources, std::uint32_t file, diagnostics& diags);

/// Reads an argument list: one argument per line, or a shell command line
/// (quotes, backslash escapes and line continuations as the shell reads
/// them, `#` comments). `--flag value`, `--flag=value` and `--flag v1 v2`
/// (every word up to the next option) are entries; a word that starts with
/// '-' and a digit is a value (`--foo -1`). When a word ends in `.py`, the
/// options before it are the launcher's (`launcher`), the ones after it the
/// script's (`entries`). Shell expansions are kept as written and marked
/// (`value::unexpanded`).
std::optional<document> read_arguments(source_manager const& sources, std::uint32_t file, diagnostics& diags);

/// Adds a file a shell script sources to the sources: its id, or why it
/// cannot be read. `path` is as the script names it, relative to the
/// directory of the script first read.
using open_sourced = std::function<std::variant<std::uint32_t, std::string>(std::string const& path)>;

/// read_arguments for a file that may be a launch script: one that assigns
/// shell arrays or expands variables (Megatron-LM's examples, core_v0.13.0
/// examples/*/train_*.sh) is run as read_shell runs a script, with arrays
/// (`NAME=(...)`, `NAME+=(...)`, `${NAME[@]}`), and its entries are the
/// arguments of the first command it runs that starts a Python script,
/// expanded as bash expands them, each at the place its text is written.
/// The files it sources are opened with `open`.
std::optional<document> read_arguments(source_manager const& sources, std::uint32_t file, open_sourced const& open,
                                       diagnostics& diags);

/// Reads a shell script of variable assignments as bash would run it, for
/// the subset NVIDIA's MLPerf configuration scripts use: `#` comments,
/// `export NAME=WORD` and `NAME=WORD`, `: "${NAME:=WORD}"`, `unset NAME`,
/// `source $(dirname ${BASH_SOURCE[0]})/FILE` (opened with `open`), and
/// `if [[ A == B ]]; then ... elif ... else ... fi` (also `!=`, `-eq`,
/// `-ne`) decided on the variables set so far. Words are expanded as the
/// shell does: quotes, `$NAME`, `${NAME}`, `${NAME:-WORD}`, `${NAME:=WORD}`
/// and their forms without ':'; `[[ -z A ]]`, `[[ -n A ]]`, tests joined by
/// `&&` and `||`, and `[ ... ]` where no operand is an unquoted expansion.
/// No variable is set when the script starts, and no positional parameter
/// (`${1:-WORD}` is WORD). Arrays (`NAME=(...)`, `NAME+=(...)`) are read
/// but are not entries; here-documents' bodies are skipped.
/// Entries are the variables the script leaves set, in the order of the
/// assignment that set each last: the key at that assignment's name, the
/// value (a string) where its text is written, through the variables it
/// was copied from. What it cannot evaluate (command substitutions,
/// arithmetic, `[ ... ]` tests on unquoted expansions, pipelines) is not run; the variables such
/// a line sets are `unevaluated`. A source cycle, a file that cannot be
/// opened and an unclosed quote are located errors.
std::optional<document> read_shell(source_manager const& sources, std::uint32_t file, open_sourced const& open,
                                   diagnostics& diags);

/// Whether `text` reads as a JSON object (its first character other than
/// white space is '{'): how `--from deepspeed` tells a ds_config.json from
/// an argument list.
bool looks_like_json(std::string_view text);

}  // namespace dtplan::dsl::config
