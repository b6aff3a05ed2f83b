#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/config/config.hpp"

/// A command's words as the shell hands them to the program, shared by the
/// argument-list reader and the shell reader's launch scripts. Internal to
/// dsl/config/.
namespace dtplan::dsl::config::detail {

/// A word written right before `>` or `<` that is a redirection's file
/// descriptor (`2>&1`), not an argument: digits, unquoted (`raw` is the
/// word as written).
inline bool is_descriptor(std::string_view raw) {
  return !raw.empty() && raw.find_first_not_of("0123456789") == std::string_view::npos;
}

/// One word: its text (quotes removed, expansions resolved) and where that
/// text is written (a word of a variable's value points there).
struct arg_word {
  std::string text;
  span where;
  /// A shell expansion dtplan could not resolve, kept as written.
  bool unexpanded = false;
  /// For `--option=VALUE` written unquoted: the file offset of the '='.
  std::optional<std::uint32_t> equals;
  /// An unquoted expansion dtplan could not resolve, which bash splits
  /// into any number of words: an option's value only as its first word.
  bool detached = false;
};

/// The entries of a command's words: options with their values, the
/// launcher's before a word ending in `.py` (config.hpp, read_arguments).
/// A word after the script that is neither, and that dtplan could not
/// expand, is a warning: the words it stands for are not read.
document arguments_document(std::vector<arg_word> const& words, std::uint32_t file, diagnostics& diags);

/// Whether `text` reads as a launch script rather than an argument list: a
/// shell array assigned at a line's start (`ARGS=(`, `ARGS+=(`), or a
/// variable assigned at a line's start and a `$` expansion somewhere.
bool looks_like_script(std::string_view text);

/// What a launch script runs: the words of the first command that starts a
/// Python script, expanded as bash would expand them, and the files its
/// here-documents write on the way.
struct launch {
  std::vector<arg_word> words;
  std::vector<document::written_file> written;
};

/// Runs a launch script (the shell subset of read_shell, with arrays) up to
/// its Python command; an error, and nullopt, when no such command runs.
std::optional<launch> launch_command(source_manager const& sources, std::uint32_t file, open_sourced const& open,
                                     diagnostics& diags);

}  // namespace dtplan::dsl::config::detail
