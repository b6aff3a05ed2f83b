#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "dsl/parse.hpp"

using namespace dtplan::dsl;

namespace {

std::string const plan = R"(# plans/7b_2node.dtp: a 7B decoder on two 8-GPU nodes joined by 100 Gbit/s
model llama2_7b {
  layers    = 32
  hidden    = 4096
  heads     = 32
  ffn       = 11_008
  mlp       = swiglu
  vocab     = 32000
  seq_len   = 4096
  precision = bf16
  optimizer = adam
  name      = "Llama \"2\" 7B"
}

gpu MyH100 : H100_SXM { reserved = 6 GiB; matmul_efficiency = 0.85 }

cluster two_nodes {
  nodes         = 2
  gpus_per_node = 8
  gpu           = MyH100         # from the built-in catalog
  intra_node    = 450 GB/s       # per GPU, per direction (NVLink)
  inter_node    = 8 x 400 Gbit/s # per node, all its NICs together
  inter_latency = 5 us
  comm_efficiency = 90 %
}

training { global_batch = 256, base_lr = 3e-4 }

strategy current {
  dp          = 16
  zero        = 1
  checkpoint  = selective
  micro_batch = 1
  sequence_parallel = false
}

strategy search {
  tp          = {1, 2,
                 4, 8}
  pp          = 1..4
  zero        = auto
}
)";

struct outcome {
  bool parsed = false;
  diagnostics diags;
  source_manager sources;
};

// Whatever the input, parsing ends, and it ends either in a tree and no
// error or in no tree and at least one error, each inside the file.
void check_consistent(std::string text) {
  source_manager sources;
  diagnostics diags;
  auto const size = text.size();
  auto id = sources.add("r.dtp", std::move(text));
  auto file = parse(sources, id, diags);
  CHECK(file.has_value() == !diags.has_errors());
  CHECK(diags.error_count() <= 20);
  for (auto const& d : diags.list()) {
    CHECK(d.where.file == id);
    CHECK(d.where.begin <= d.where.end);
    CHECK(d.where.end <= size);
    CHECK_FALSE(format(d, sources).empty());
  }
}

bool parses(std::string text) {
  source_manager sources;
  diagnostics diags;
  return parse(sources, sources.add("r.dtp", std::move(text)), diags).has_value();
}

std::string first_error(std::string text) {
  source_manager sources;
  diagnostics diags;
  parse(sources, sources.add("r.dtp", std::move(text)), diags);
  return diags.empty() ? std::string() : diags.list()[0].message;
}

}  // namespace

TEST_CASE("the whole plan parses") { CHECK(parses(plan)); }

TEST_CASE("every prefix of a plan ends in a tree or in errors") {
  std::size_t complete = 0;
  for (std::size_t n = 0; n <= plan.size(); ++n) {
    auto prefix = plan.substr(0, n);
    check_consistent(prefix);
    if (parses(prefix)) ++complete;
  }
  // A prefix parses only when it ends between blocks (after a closing brace,
  // blank lines or a comment) and holds at least one block.
  std::size_t expected = 0;
  for (std::size_t n = 0; n <= plan.size(); ++n) {
    auto last_brace = plan.rfind('}', n == 0 ? 0 : n - 1);
    if (n == 0 || last_brace == std::string::npos || last_brace >= n) continue;
    auto tail = plan.substr(last_brace + 1, n - last_brace - 1);
    bool between = true;
    for (std::size_t i = 0; i < tail.size(); ++i)
      if (tail[i] != '\n' && tail[i] != ' ') between = false;
    // The closing brace of a set is not the end of a block.
    if (plan.compare(last_brace - 4, 5, "4, 8}") == 0) between = false;
    if (between) ++expected;
  }
  CHECK(complete == expected);
  CHECK(complete > 0);
}

TEST_CASE("random bytes and random edits never crash") {
  std::mt19937 rng(20261129);
  std::string const alphabet = "{}=;,.:#\"\\\n x%_/aZ09\t\r-";
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 200, ' ');
    for (auto& c : text)
      c = rng() % 4 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    check_consistent(text);
  }
  for (int i = 0; i < 2000; ++i) {
    std::string text = plan;
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      auto at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (text.empty()) text = "x";
    }
    check_consistent(text);
  }
}

TEST_CASE("100000-deep braces end in one diagnostic, not in a stack overflow") {
  std::string const deep = std::string(100000, '{') + std::string(100000, '}');
  CHECK(first_error(deep) == "expected a block such as 'model NAME { ... }', got '{'");
  check_consistent(deep);
  CHECK(first_error("model m {" + deep) == "expected a key such as 'layers', or '}', got '{'");
  check_consistent("model m {" + deep);
  CHECK(first_error("model m { a = " + deep) == "expected ',' or '}' in the set, got '{'");
  check_consistent("model m { a = " + deep);
  check_consistent("model m { a = " + std::string(100000, '{'));
  check_consistent(std::string(100000, '"'));
  check_consistent("model m { a = {" + std::string(100000, '\n'));
}

TEST_CASE("a 10 MB file parses") {
  std::string big;
  std::size_t blocks = 0;
  while (big.size() < 10'000'000) {
    big += plan;
    ++blocks;
  }
  source_manager sources;
  diagnostics diags;
  auto file = parse(sources, sources.add("big.dtp", big), diags);
  REQUIRE(file);
  CHECK(file->blocks.size() == blocks * 6);
  CHECK(file->blocks.back().body.size() == 3);
}

TEST_CASE("a 10 MB file of garbage ends in at most 20 errors") {
  std::string junk;
  std::mt19937 rng(7);
  while (junk.size() < 10'000'000) junk += "model m { a = 1 2 } ; = {{ \"x\n";
  check_consistent(junk);
  std::string line(10'000'000, 'a');
  check_consistent(line);
  CHECK(first_error(line) == "expected '{' to open the block, got end of file");
  CHECK(first_error("model " + line + "!") ==
        "expected '{' to open the block, got '!'");
  CHECK(first_error("model m { a = x " + line) ==
        "expected a new line, ';' or '}' after the value, got "
        "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
  check_consistent("model m { a = \"" + line);
}

namespace {

// A fresh directory under the system's temporary one, removed afterwards.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() /
           ("dtplan_robustness_" + std::to_string(::getpid()) + "_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

TEST_CASE("reading a source is bounded whatever the path names") {
  scratch_dir dir;
  auto const file = (dir.path / "plan.dtp").string();
  std::ofstream(file, std::ios::binary) << "model m { }\r\n";
  auto ok = read_source(file);
  REQUIRE(ok.text);
  CHECK(*ok.text == "model m { }\r\n");
  CHECK(ok.error.empty());
  CHECK(read_file(file) == ok.text);

  // A device that never ends: one byte past the limit is enough to know.
  auto zero = read_source("/dev/zero", 1 << 20);
  CHECK_FALSE(zero.text);
  CHECK(zero.error == "cannot read '/dev/zero': it holds more than 1 MiB, the most a .dtp file may hold");
  CHECK(read_source("/dev/zero").error ==
        "cannot read '/dev/zero': it holds more than 16 MiB, the most a .dtp file may hold");

  auto directory = read_source(dir.path.string());
  CHECK_FALSE(directory.text);
  CHECK(directory.error == "cannot read '" + dir.path.string() + "': it is a directory");

  auto missing = read_source((dir.path / "none.dtp").string());
  CHECK_FALSE(missing.text);
  CHECK(missing.error == "cannot read '" + (dir.path / "none.dtp").string() + "': No such file or directory");

  // A regular file over the limit is refused by its size, before reading.
  auto const big = (dir.path / "big.dtp").string();
  std::ofstream(big, std::ios::binary) << std::string(2000, 'x');
  CHECK(read_source(big, 1000).error == "cannot read '" + big + "': it holds more than 1000 bytes, the most a .dtp "
                                        "file may hold");
  CHECK(read_source(big, 2000).text);
  CHECK(read_source("/dev/null").text == std::string());
}

TEST_CASE("a pipe is read up to the limit") {
  scratch_dir dir;
  auto const fifo = (dir.path / "pipe.dtp").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::signal(SIGPIPE, SIG_IGN);  // a writer that outlives the reader must not end the test
  auto write = [&](std::size_t n) {
    return std::thread([&fifo, n] { std::ofstream(fifo, std::ios::binary) << std::string(n, 'a'); });
  };
  auto small = write(100);
  auto got = read_source(fifo, 1000);
  small.join();
  REQUIRE(got.text);
  CHECK(got.text->size() == 100);
  auto endless = write(5000);
  auto refused = read_source(fifo, 1000);
  CHECK_FALSE(refused.text);
  CHECK(refused.error.find("it holds more than 1000 bytes") != std::string::npos);
  endless.join();  // the writer sees the pipe close early and stops
}
