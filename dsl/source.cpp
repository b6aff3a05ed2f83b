#include "dsl/source.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace dtplan::dsl {

source_file::source_file(std::string name, std::string text, bool builtin)
    : name_(std::move(name)), text_(std::move(text)), builtin_(builtin) {
  line_starts_.push_back(0);
  for (std::uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

position source_file::position_of(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
  return {line, offset - line_starts_[line - 1] + 1};
}

std::string_view source_file::line_text(std::uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  std::uint32_t b = line_starts_[line - 1];
  std::uint32_t e = line < line_starts_.size() ? line_starts_[line] - 1
                                               : static_cast<std::uint32_t>(text_.size());
  if (e > b && text_[e - 1] == '\r') --e;
  return std::string_view(text_).substr(b, e - b);
}

std::uint32_t source_manager::add(std::string name, std::string text, bool builtin) {
  files_.push_back(std::make_unique<source_file>(std::move(name), std::move(text), builtin));
  return static_cast<std::uint32_t>(files_.size() - 1);
}

std::string_view source_manager::text(span s) const {
  if (!s.valid() || s.file >= files_.size()) return {};
  auto t = files_[s.file]->text();
  if (s.begin > t.size()) return {};
  return t.substr(s.begin, std::min<std::size_t>(s.end, t.size()) - s.begin);
}

std::optional<std::string> read_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace dtplan::dsl
