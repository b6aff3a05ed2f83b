#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtplan::dsl {

/// A half-open byte range [begin, end) in one source file. `file` indexes the
/// `source_manager` that owns the text; a default span points nowhere.
struct span {
  std::uint32_t file = no_file;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;

  static constexpr std::uint32_t no_file = 0xffffffffu;
  [[nodiscard]] bool valid() const { return file != no_file; }
  [[nodiscard]] std::uint32_t size() const { return end - begin; }
  friend bool operator==(span const&, span const&) = default;
};

/// A 1-based line and column. Columns count characters (UTF-8 code
/// points): a tab counts one, a byte-order mark none.
struct position {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// One text buffer with its display name ("plans/7b_2node.dtp", "<catalog>").
class source_file {
 public:
  source_file(std::string name, std::string text, bool builtin = false);

  [[nodiscard]] std::string const& name() const { return name_; }
  [[nodiscard]] std::string_view text() const { return text_; }
  [[nodiscard]] bool builtin() const { return builtin_; }
  [[nodiscard]] position position_of(std::uint32_t offset) const;
  /// The text of the 1-based line `line`, without its newline.
  [[nodiscard]] std::string_view line_text(std::uint32_t line) const;
  /// The offset of the first byte of the 1-based line `line`.
  [[nodiscard]] std::uint32_t line_begin(std::uint32_t line) const;

 private:
  /// UTF-8 continuation bytes in [0, offset).
  [[nodiscard]] std::uint32_t continuations_before(std::uint32_t offset) const;

  std::string name_;
  std::string text_;
  bool builtin_;
  std::vector<std::uint32_t> line_starts_;
  /// Continuation bytes before each 4 KiB block, so a column is found
  /// without scanning a long line from its start.
  std::vector<std::uint32_t> continuations_;
};

/// Owns every source file of a run (the user's file, the built-in catalog,
/// `--set` snippets) so that spans stay valid for the whole pipeline.
/// The name of the source a command line's `--set` overrides are read
/// from: diagnostics point into it, and lowering prefers it to the file
/// the override changes.
inline constexpr char const* set_source_name = "<--set>";

class source_manager {
 public:
  std::uint32_t add(std::string name, std::string text, bool builtin = false);
  [[nodiscard]] source_file const& file(std::uint32_t id) const { return *files_.at(id); }
  [[nodiscard]] std::size_t size() const { return files_.size(); }
  /// The source text a span covers.
  [[nodiscard]] std::string_view text(span s) const;

 private:
  std::vector<std::unique_ptr<source_file>> files_;
};

/// The most a source file may hold: hundreds of thousands of blocks, more
/// than any plan needs, and little enough that lowering the worst such file
/// (a block a line) stays within a few GiB of memory.
inline constexpr std::size_t max_source_bytes = std::size_t{16} << 20;

/// A file's text, or why there is none.
struct read_result {
  std::optional<std::string> text;
  /// "cannot read 'PATH': REASON" (the system's reason, "it is a directory",
  /// "it holds more than 16 MiB, the most a .dtp file may hold").
  std::string error;
};

/// The bytes of the file at `path`, as they are (no newline translation).
/// Reads at most `limit` bytes whatever `path` is (a regular file, a pipe, a
/// device such as /dev/zero), so a huge or endless input ends in an error,
/// not in exhausted memory.
read_result read_source(std::string const& path, std::size_t limit = max_source_bytes);

/// read_source's text; nullopt when it cannot be read.
std::optional<std::string> read_file(std::string const& path);

}  // namespace dtplan::dsl
