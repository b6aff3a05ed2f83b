// A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput on given
// inputs and on mutants of them, each chosen by a fixed seed, so the same
// inputs run every time. ctest runs it in both of scripts/test-all's passes
// (tests/fuzz/replay.sh); the coverage-guided fuzzing is scripts/fuzz's.
//
//   fuzz_replay_TARGET [--mutants N] [--random N] [--seed S] [--dict FILE]
//                      [--max-len L] [--last FILE] INPUT...
//
// INPUT: a file, or a folder whose files are read in name order. Each input
// runs as it is; then --mutants N runs N mutants of them (a dictionary
// word, a byte, a number made extreme, a span cut, copied or spliced from
// another input, one to four at a time), and --random N runs N strings of
// random bytes of up to --max-len bytes (fuzz_extreme's inputs). Before each
// run the input is written to --last FILE: a violated promise or a
// sanitizer report ends the process, and that file is the input to give
// the program back to reproduce it.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

struct options {
  std::size_t mutants = 0;
  std::size_t random = 0;
  std::uint64_t seed = 1;
  std::size_t max_len = 16384;
  std::string dict;
  std::string last;
  std::vector<std::string> inputs;
};

[[noreturn]] void usage(std::string_view why) {
  std::fprintf(stderr,
               "fuzz_replay: %.*s\nusage: fuzz_replay [--mutants N] [--random N] [--seed S] [--dict FILE] "
               "[--max-len L] [--last FILE] INPUT...\n",
               static_cast<int>(why.size()), why.data());
  std::exit(2);
}

std::size_t count(char const* text, std::string_view option) {
  char* end = nullptr;
  auto const n = std::strtoull(text, &end, 10);
  if (*text == '\0' || *end != '\0') usage(std::string(option) + " takes a count");
  return static_cast<std::size_t>(n);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view const arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) usage(std::string(arg) + " takes a value");
      return argv[++i];
    };
    if (arg == "--mutants") o.mutants = count(value(), arg);
    else if (arg == "--random") o.random = count(value(), arg);
    else if (arg == "--seed") o.seed = count(value(), arg);
    else if (arg == "--max-len") o.max_len = std::max<std::size_t>(1, count(value(), arg));
    else if (arg == "--dict") o.dict = value();
    else if (arg == "--last") o.last = value();
    else if (arg.starts_with("--")) usage("unknown option " + std::string(arg));
    else o.inputs.emplace_back(arg);
  }
  return o;
}

std::string read(fs::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usage("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

// The inputs: files as given, a folder's files in name order.
std::vector<std::string> inputs(std::vector<std::string> const& paths) {
  std::vector<std::string> out;
  for (auto const& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (auto const& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (auto const& f : files) out.push_back(read(f));
    } else {
      out.push_back(read(p));
    }
  }
  return out;
}

// A libFuzzer dictionary's words: "word" lines, with \\, \" and \xNN escapes.
std::vector<std::string> dictionary(std::string const& path) {
  std::vector<std::string> words;
  if (path.empty()) return words;
  std::istringstream lines(read(path));
  for (std::string line; std::getline(lines, line);) {
    auto const open = line.find('"');
    auto const close = line.rfind('"');
    if (line.starts_with('#') || open == std::string::npos || close <= open) continue;
    std::string word;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        unsigned byte = 0;
        auto const hex = line.data() + i + 2;
        if (line[i + 1] == 'x' && i + 3 < close && std::from_chars(hex, hex + 2, byte, 16).ptr == hex + 2) {
          word += static_cast<char>(byte);
          i += 3;
        } else {
          word += line[++i];
        }
      } else {
        word += line[i];
      }
    }
    words.push_back(std::move(word));
  }
  return words;
}

// Mutants of the inputs, each a function of the seed alone: the generator's
// sequence is the standard's (mt19937_64), and each choice takes it modulo
// its range rather than a library's distribution.
class mutator {
 public:
  mutator(std::uint64_t seed, std::vector<std::string> const& inputs, std::vector<std::string> const& words,
          std::size_t max_len)
      : rng_(seed), inputs_(inputs), words_(words), max_len_(max_len) {}

  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }

  std::string random_bytes() {
    std::string s(below(max_len_ + 1), '\0');
    for (auto& c : s) c = static_cast<char>(below(256));
    return s;
  }

  std::string mutant() {
    std::string s = inputs_.empty() ? std::string() : inputs_[below(inputs_.size())];
    for (std::size_t n = 1 + below(4); n > 0; --n) mutate(s);
    if (s.size() > max_len_) s.resize(max_len_);
    return s;
  }

 private:
  void mutate(std::string& s) {
    auto const at = below(s.size() + 1);
    switch (below(7)) {
      case 0:  // a word of the language
        if (!words_.empty()) s.insert(at, words_[below(words_.size())]);
        break;
      case 1:  // a byte, printable or not
        if (!s.empty()) s[below(s.size())] = static_cast<char>(below(256));
        break;
      case 2:  // a span cut
        s.erase(at, 1 + below(32));
        break;
      case 3: {  // a span copied elsewhere
        if (s.empty()) break;
        auto const from = below(s.size());
        auto const span = s.substr(from, 1 + below(64));
        s.insert(below(s.size() + 1), span);
        break;
      }
      case 4: {  // a number made extreme
        static constexpr std::string_view extremes[] = {
            "0", "-1", "1", "3", "0.5", "65536", "4294967296", "9223372036854775807", "18446744073709551616",
            "1e308", "1e-308", "1e999", "-0", "1000000007"};
        auto const digit = s.find_first_of("0123456789", at);
        if (digit == std::string::npos) break;
        auto const end = s.find_first_not_of("0123456789.", digit);
        s.replace(digit, (end == std::string::npos ? s.size() : end) - digit, extremes[below(std::size(extremes))]);
        break;
      }
      case 5: {  // spliced: this input's head, another's tail
        if (inputs_.empty()) break;
        auto const& other = inputs_[below(inputs_.size())];
        s = s.substr(0, at) + other.substr(below(other.size() + 1));
        break;
      }
      default: {  // a line of another input, at a line's start
        if (inputs_.empty()) break;
        auto const& other = inputs_[below(inputs_.size())];
        auto const from = other.rfind('\n', below(other.size() + 1));
        auto const begin = from == std::string::npos ? 0 : from + 1;
        auto const end = other.find('\n', begin);
        auto const line = other.substr(begin, end == std::string::npos ? std::string::npos : end - begin + 1);
        auto const start = s.rfind('\n', at);
        s.insert(start == std::string::npos ? 0 : start + 1, line);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> const& inputs_;
  std::vector<std::string> const& words_;
  std::size_t max_len_;
};

void run(options const& o, std::string const& input) {
  if (!o.last.empty()) {
    std::ofstream last(o.last, std::ios::binary | std::ios::trunc);
    last.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  LLVMFuzzerTestOneInput(reinterpret_cast<std::uint8_t const*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  auto const o = parse(argc, argv);
  auto const given = inputs(o.inputs);
  if (given.empty() && o.mutants > 0) usage("--mutants needs inputs to mutate");
  auto const words = dictionary(o.dict);
  for (auto const& input : given) run(o, input);
  mutator m(o.seed, given, words, o.max_len);
  for (std::size_t i = 0; i < o.mutants; ++i) run(o, m.mutant());
  for (std::size_t i = 0; i < o.random; ++i) run(o, m.random_bytes());
  std::printf("fuzz_replay: %zu inputs, %zu mutants, %zu random (seed %llu): no promise broken\n", given.size(),
              o.mutants, o.random, static_cast<unsigned long long>(o.seed));
  return 0;
}
