#pragma once
#include <string>
#include <string_view>

/// Text from the user's input (file paths, plan, model and cluster names)
/// made safe for the language of the generated file it lands in, so that
/// nothing in it can end a comment or a literal and run as code.
namespace dtplan::codegen {

/// `s` with every byte outside printable ASCII, and every backslash, written
/// as `\xNN`: one line, no control or escape sequence, nothing a terminal
/// interprets, no line splice. What the generated program prints of a name.
std::string printable(std::string_view s);

/// `s` for the body of a `//` (C++) or `#` (shell, CMake) comment:
/// printable(), and a second '?' of "??" as `\x3f` (no trigraph).
std::string comment_text(std::string_view s);

/// A C/C++ string literal, quotes included, whose value is `s` byte for
/// byte: '"', '\\' and '?' escaped, every other byte outside printable ASCII
/// as a three-digit octal escape.
std::string c_string(std::string_view s);

/// A TOML basic string, quotes included, of printable ASCII only: '"' and
/// '\\' escaped, control characters and every non-ASCII character (decoded
/// from UTF-8; a byte that is not UTF-8 as U+FFFD) as `\uXXXX` or
/// `\UXXXXXXXX`.
std::string toml_string(std::string_view s);

/// `s` as one shell word: in single quotes, each `'` written `'\''`.
std::string shell_quote(std::string_view s);

}  // namespace dtplan::codegen
