#include "dsl/source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace dtplan::dsl {

namespace {

constexpr std::size_t block_size = 4096;

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

bool starts_with_bom(std::string_view text) { return text.substr(0, 3) == "\xef\xbb\xbf"; }

}  // namespace

source_file::source_file(std::string name, std::string text, bool builtin)
    : name_(std::move(name)), text_(std::move(text)), builtin_(builtin) {
  line_starts_.push_back(0);
  // Spans are 32-bit: a text past 4 GiB is indexed up to there (the parser
  // rejects it), and the index never wraps.
  auto const size = std::min<std::size_t>(text_.size(), std::numeric_limits<std::uint32_t>::max() - 1);
  std::uint32_t continuations = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (i % block_size == 0) continuations_.push_back(continuations);
    if (text_[i] == '\n') line_starts_.push_back(static_cast<std::uint32_t>(i + 1));
    if (is_continuation(text_[i])) ++continuations;
  }
}

std::uint32_t source_file::continuations_before(std::uint32_t offset) const {
  if (continuations_.empty()) return 0;
  auto const block = std::min<std::size_t>(offset / block_size, continuations_.size() - 1);
  std::uint32_t n = continuations_[block];
  for (std::size_t i = block * block_size; i < offset; ++i) n += is_continuation(text_[i]) ? 1 : 0;
  return n;
}

position source_file::position_of(std::uint32_t offset) const {
  auto const indexed = std::min<std::size_t>(text_.size(), std::numeric_limits<std::uint32_t>::max() - 1);
  offset = std::min(offset, static_cast<std::uint32_t>(indexed));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
  auto const start = line_starts_[line - 1];
  std::uint32_t column = offset - start - (continuations_before(offset) - continuations_before(start)) + 1;
  if (start == 0 && offset >= 3 && starts_with_bom(text_)) --column;
  return {line, column};
}

std::string_view source_file::line_text(std::uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  std::uint32_t b = line_starts_[line - 1];
  std::size_t e = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  if (e > b && text_[e - 1] == '\r') --e;
  return std::string_view(text_).substr(b, e - b);
}

std::uint32_t source_file::line_begin(std::uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return 0;
  return line_starts_[line - 1];
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

namespace {

std::string size_text(std::size_t n) {
  if (n % (std::size_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// Closes the descriptor on every path out.
struct descriptor {
  int fd = -1;
  ~descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

read_result read_source(std::string const& path, std::size_t limit) {
  auto failed = [&](std::string const& why) { return read_result{std::nullopt, "cannot read '" + path + "': " + why}; };
  auto too_large = [&] {
    return failed("it holds more than " + size_text(limit) + ", the most a .dtp file may hold");
  };
  descriptor in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return failed(std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) return failed(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return failed("it is a directory");
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > limit) return too_large();
  // Pipes and devices say nothing of their size: read one byte past the
  // limit to know whether there is more.
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  while (text.size() <= limit) {
    auto const want = std::min(sizeof buffer, limit + 1 - text.size());
    auto const got = ::read(in.fd, buffer, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      return failed(std::strerror(errno));
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  if (text.size() > limit) return too_large();
  return read_result{std::move(text), {}};
}

std::optional<std::string> read_file(std::string const& path) { return read_source(path).text; }

}  // namespace dtplan::dsl
