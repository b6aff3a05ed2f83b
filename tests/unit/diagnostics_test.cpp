#include <catch2/catch.hpp>

#include "dsl/diagnostics.hpp"

using namespace dtplan::dsl;

TEST_CASE("a diagnostic prints clang style with a caret under its span") {
  source_manager sm;
  auto id = sm.add("plans/x.dtp", "strategy current {\n  zero        = 0\n}\n");
  diagnostics ds;
  auto& d = ds.error({id, 21, 25}, "strategy 'current' needs 118.4 GiB per GPU; H100_SXM has 80 GiB (74.0 usable)");
  d.notes.push_back({{}, "optimizer state is 84.0 GiB of it; zero = 1 brings the total to 36.2 GiB"});
  CHECK(format(ds, sm) ==
        "plans/x.dtp:2:3: error: strategy 'current' needs 118.4 GiB per GPU; H100_SXM has 80 GiB (74.0 usable)\n"
        "    2 |   zero        = 0\n"
        "      |   ^~~~\n"
        "note: optimizer state is 84.0 GiB of it; zero = 1 brings the total to 36.2 GiB\n");
  CHECK(ds.has_errors());
  CHECK(ds.error_count() == 1);
}

TEST_CASE("notes with a location show their own line") {
  source_manager sm;
  auto id = sm.add("a.dtp", "x = 1\nx = 2\n");
  diagnostics ds;
  ds.warning({id, 6, 7}, "duplicate key 'x'").notes.push_back({{id, 0, 1}, "first set here"});
  CHECK(format(ds, sm) ==
        "a.dtp:2:1: warning: duplicate key 'x'\n"
        "    2 | x = 2\n"
        "      | ^\n"
        "a.dtp:1:1: note: first set here\n"
        "    1 | x = 1\n"
        "      | ^\n");
  CHECK_FALSE(ds.has_errors());
}

TEST_CASE("a caret at the end of a line and control bytes stay aligned") {
  source_manager sm;
  auto id = sm.add("b.dtp", "a\x01 = \n");
  diagnostics ds;
  ds.error({id, 5, 5}, "expected a value after '=', got end of line");
  CHECK(format(ds, sm) ==
        "b.dtp:1:6: error: expected a value after '=', got end of line\n"
        "    1 | a? = \n"
        "      |      ^\n");
}

TEST_CASE("did you mean finds near misses only") {
  std::vector<std::string> keys{"layers", "hidden", "heads", "kv_heads", "seq_len"};
  CHECK(closest("layer", keys) == "layers");
  CHECK(closest("hiden", keys) == "hidden");
  CHECK(closest("kvheads", keys) == "kv_heads");
  CHECK(closest("optimizer", keys).empty());
}

TEST_CASE("a very long line is shown as a window around the caret") {
  source_manager sm;
  std::string text(100000, 'a');
  text.replace(50000, 3, "bad");
  auto id = sm.add("long.dtp", text);
  diagnostics ds;
  ds.error({id, 50000, 50003}, "unknown key 'bad'");
  auto shown = std::string(80, 'a') + "bad" + std::string(77, 'a');
  CHECK(format(ds, sm) ==
        "long.dtp:1:50001: error: unknown key 'bad'\n"
        "    1 | ..." + shown + "...\n"
        "      | " + std::string(83, ' ') + "^~~\n");
}

TEST_CASE("columns and carets count characters, not bytes, after multibyte UTF-8") {
  source_manager sm;
  auto id = sm.add("u.dtp", "x = \"\xc3\xa9\"; bad = 1\ny = \"\xe6\xa8\xa1\xe5\x9e\x8b\"; bad = 1\n");
  diagnostics ds;
  ds.error({id, 10, 13}, "unknown key 'bad'");
  ds.error({id, 32, 35}, "unknown key 'bad'");
  CHECK(format(ds, sm) ==
        "u.dtp:1:10: error: unknown key 'bad'\n"
        "    1 | x = \"\xc3\xa9\"; bad = 1\n"
        "      |          ^~~\n"
        // Each of the two CJK characters takes two columns on a terminal.
        "u.dtp:2:11: error: unknown key 'bad'\n"
        "    2 | y = \"\xe6\xa8\xa1\xe5\x9e\x8b\"; bad = 1\n"
        "      |             ^~~\n");
  // A span over a multibyte character is underlined by its width.
  diagnostics one;
  one.error({id, 5, 7}, "here");
  CHECK(format(one, sm).find("      |      ^\n") != std::string::npos);
  // A byte-order mark takes no column.
  auto bom = sm.add("bom.dtp", "\xef\xbb\xbfmodel m { }\n");
  CHECK(sm.file(bom).position_of(3).column == 1);
  CHECK(sm.file(bom).position_of(9).column == 7);
}

TEST_CASE("what the user wrote reaches the terminal without its control characters") {
  source_manager sm;
  auto id = sm.add("e.dtp", "n = \"\x1b[2J\"\n");
  diagnostics ds;
  auto& d = ds.error({id, 4, 10}, "expected a whole number, got \"\x1b[2J\"");
  d.notes.push_back({{}, "note with \xc2\x9b and \xe2\x80\xae"});
  CHECK(format(ds, sm) ==
        "e.dtp:1:5: error: expected a whole number, got \"\\x1b[2J\"\n"
        "    1 | n = \"?[2J\"\n"
        "      |     ^~~~~~\n"
        "note: note with \\u{9b} and \\u{202e}\n");
  CHECK(escaped("plain \xc3\xa9 text\t") == "plain \xc3\xa9 text\\x09");
  CHECK(escaped("\x7f\xff") == "\\x7f\\xff");
}

TEST_CASE("past its limit, a diagnostics list counts errors instead of keeping them") {
  diagnostics ds;
  ds.limit_errors(2);
  ds.warning({}, "kept: a warning");
  ds.error({}, "one");
  CHECK_FALSE(ds.full());
  ds.error({}, "two");
  CHECK(ds.full());
  for (int i = 0; i < 1000; ++i) ds.error({}, "dropped").notes.push_back({{}, "a note of a dropped error"});
  ds.add({severity::error, {}, "added", {}});
  CHECK(ds.error_count() == 2);
  CHECK(ds.dropped() == 1001);
  CHECK(ds.list().size() == 3);
  CHECK(ds.has_errors());
  ds.clear();
  CHECK(ds.empty());
  CHECK(ds.dropped() == 0);
}

TEST_CASE("a file's name from the input is printed escaped, like a message") {
  // fuzz_jobs' first finding: a Megatron-DeepSpeed job naming a
  // "ds_config.j\x0e..." whose text was not text printed the control byte
  // raw in the location.
  source_manager sm;
  auto id = sm.add("ds_config.j\x0e\x1b[2J", "{\n");
  diagnostics ds;
  ds.error({id, 0, 1}, "expected a key");
  CHECK(location({id, 0, 1}, sm) == "ds_config.j\\x0e\\x1b[2J:1:1");
  CHECK(format(ds, sm).rfind("ds_config.j\\x0e\\x1b[2J:1:1: error: expected a key\n", 0) == 0);
}

TEST_CASE("character_at takes a whole UTF-8 sequence, or one byte where none starts") {
  std::string const text = "t\xc3\xa9|\xf0\x9f\x98\x80\xc3";
  CHECK(character_at(text, 0) == "t");
  CHECK(character_at(text, 1) == "\xc3\xa9");
  CHECK(character_at(text, 3) == "|");
  CHECK(character_at(text, 4) == "\xf0\x9f\x98\x80");
  CHECK(character_at(text, 2) == "\xa9");  // a continuation byte alone
  CHECK(character_at(text, 8) == "\xc3");  // a sequence the text cuts short
}
