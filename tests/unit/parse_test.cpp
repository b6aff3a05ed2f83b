#include <catch2/catch.hpp>

#include <string>

#include "dsl/parse.hpp"

using namespace dtplan::dsl;

namespace {

struct parsed {
  source_manager sources;
  diagnostics diags;
  std::optional<ast::file> file;
  std::uint32_t id = 0;

  /// Every diagnostic as the user sees it.
  [[nodiscard]] std::string errors() const { return format(diags, sources); }
  /// `line:col+width` of a span, to check spans against the text.
  [[nodiscard]] std::string at(span s) const {
    auto p = sources.file(s.file).position_of(s.begin);
    return std::to_string(p.line) + ":" + std::to_string(p.column) + "+" + std::to_string(s.size());
  }
  [[nodiscard]] std::string_view text(span s) const { return sources.text(s); }
};

parsed parse_text(std::string text) {
  parsed p;
  p.id = p.sources.add("t.dtp", std::move(text));
  p.file = parse(p.sources, p.id, p.diags);
  return p;
}

/// The one value of the one assignment of `x { k = VALUE }`.
ast::value value_of(std::string const& v) {
  auto p = parse_text("x {\n  k = " + v + "\n}\n");
  INFO(p.errors());
  REQUIRE(p.file);
  REQUIRE(p.file->blocks.size() == 1);
  REQUIRE(p.file->blocks[0].body.size() == 1);
  return p.file->blocks[0].body[0].rhs;
}

std::string error_of(std::string text) { return parse_text(std::move(text)).errors(); }

}  // namespace

TEST_CASE("integers keep their spelling, separators included") {
  auto v = value_of("1_000_000");
  auto const& n = std::get<ast::number>(v);
  CHECK(n.text == "1_000_000");
  CHECK(n.is_integer);
  CHECK(std::get<ast::number>(value_of("32")).text == "32");
  CHECK(std::get<ast::number>(value_of("-3")).text == "-3");
}

TEST_CASE("reals are numbers that are not integers") {
  for (auto text : {"3e-4", "0.85", "1.5", "2E+3", "1_000.5"}) {
    auto v = value_of(text);
    auto const& n = std::get<ast::number>(v);
    CHECK(n.text == text);
    CHECK_FALSE(n.is_integer);
  }
}

TEST_CASE("quantities are a number and a unit-shaped word") {
  struct expected {
    char const* text;
    char const* amount;
    char const* unit;
  };
  for (auto e : {expected{"80 GiB", "80", "GiB"}, expected{"450 GB/s", "450", "GB/s"},
                 expected{"100 Gbit/s", "100", "Gbit/s"}, expected{"989 TFLOP/s", "989", "TFLOP/s"},
                 expected{"5 us", "5", "us"}, expected{"90 %", "90", "%"},
                 expected{"1.5 TB", "1.5", "TB"}, expected{"7 parsecs", "7", "parsecs"},
                 expected{"80GiB", "80", "GiB"}}) {
    INFO(e.text);
    auto v = value_of(e.text);
    auto const& q = std::get<ast::quantity>(v);
    CHECK(q.amount.text == e.amount);
    CHECK(q.unit == e.unit);
    CHECK_FALSE(q.multiplier);
  }
}

TEST_CASE("a multiplier: N x quantity") {
  auto v = value_of("8 x 400 Gbit/s");
  auto const& q = std::get<ast::quantity>(v);
  REQUIRE(q.multiplier);
  CHECK(q.multiplier->text == "8");
  CHECK(q.amount.text == "400");
  CHECK(q.unit == "Gbit/s");
}

TEST_CASE("identifiers, strings, booleans, auto") {
  CHECK(std::get<ast::identifier>(value_of("H100_SXM")).name == "H100_SXM");
  CHECK(std::get<ast::identifier>(value_of("_x1")).name == "_x1");
  CHECK(std::get<ast::string_literal>(value_of(R"("Llama 2 7B")")).value == "Llama 2 7B");
  CHECK(std::get<ast::string_literal>(value_of(R"("a \"b\" \\ c # d")")).value ==
        R"(a "b" \ c # d)");
  CHECK(std::get<ast::string_literal>(value_of(R"("")")).value.empty());
  CHECK(std::get<ast::boolean>(value_of("true")).value);
  CHECK_FALSE(std::get<ast::boolean>(value_of("false")).value);
  CHECK(std::holds_alternative<ast::auto_value>(value_of("auto")));
}

TEST_CASE("keywords need a word boundary") {
  CHECK(std::get<ast::identifier>(value_of("auto_x")).name == "auto_x");
  CHECK(std::get<ast::identifier>(value_of("trueish")).name == "trueish");
  CHECK(std::get<ast::identifier>(value_of("false2")).name == "false2");
  CHECK(std::get<ast::identifier>(value_of("x")).name == "x");
  auto p = parse_text("x { k = 8 xl }\n");
  CHECK(std::get<ast::quantity>(p.file->blocks[0].body[0].rhs).unit == "xl");
}

TEST_CASE("sets hold scalars and may span lines") {
  auto v = value_of("{1, 2,\n     4, 8}");
  auto const& s = std::get<ast::set>(v);
  REQUIRE(s.items.size() == 4);
  CHECK(std::get<ast::number>(s.items[3]).text == "8");
  auto mixed = std::get<ast::set>(value_of("{ selective, \"a\", 80 GiB, true, 0.5, }"));
  REQUIRE(mixed.items.size() == 5);
  CHECK(std::get<ast::identifier>(mixed.items[0]).name == "selective");
  CHECK(std::get<ast::string_literal>(mixed.items[1]).value == "a");
  CHECK(std::get<ast::quantity>(mixed.items[2]).unit == "GiB");
  CHECK(std::get<ast::boolean>(mixed.items[3]).value);
  CHECK_FALSE(std::get<ast::number>(mixed.items[4]).is_integer);
  CHECK(std::get<ast::set>(value_of("{}")).items.empty());
  auto commented = std::get<ast::set>(value_of("{1,  # one\n  2  # two\n}"));
  CHECK(commented.items.size() == 2);
}

TEST_CASE("ranges are never read as reals") {
  auto v = value_of("1..8");
  auto const& r = std::get<ast::range>(v);
  CHECK(r.low.text == "1");
  CHECK(r.high.text == "8");
  auto spaced = std::get<ast::range>(value_of("2 .. 16"));
  CHECK(spaced.high.text == "16");
}

TEST_CASE("blocks: kind, name, base") {
  auto p = parse_text(
      "model my7b : llama2_7b { seq_len = 8192 }\n"
      "training { global_batch = 64 }\n"
      "strategy s { tp = 2; pp = 2 }\n"
      "gpu: H100_SXM {}\n");
  INFO(p.errors());
  REQUIRE(p.file);
  auto const& b = p.file->blocks;
  REQUIRE(b.size() == 4);
  CHECK(b[0].kind.name == "model");
  CHECK(b[0].name->name == "my7b");
  CHECK(b[0].base->name == "llama2_7b");
  CHECK(b[0].body[0].key.name == "seq_len");
  CHECK(b[1].kind.name == "training");
  CHECK_FALSE(b[1].name);
  CHECK_FALSE(b[1].base);
  REQUIRE(b[2].body.size() == 2);
  CHECK(b[2].body[1].key.name == "pp");
  CHECK_FALSE(b[3].name);
  CHECK(b[3].base->name == "H100_SXM");
  CHECK(b[3].body.empty());
}

TEST_CASE("assignments end at a newline, ';', ',' or the closing brace") {
  auto p = parse_text("strategy s { tp = 2, pp = 2; cp = 1\n zero = 1 }\nstrategy t{dp=1}strategy u{}\n");
  INFO(p.errors());
  REQUIRE(p.file);
  REQUIRE(p.file->blocks.size() == 3);
  CHECK(p.file->blocks[0].body.size() == 4);
  CHECK(p.file->blocks[1].body.size() == 1);
  CHECK(p.file->blocks[2].name->name == "u");
  auto blank = parse_text("x {\n  a = 1;;\n  ,\n  b = 2;\n}\n");
  REQUIRE(blank.file);
  CHECK(blank.file->blocks[0].body.size() == 2);
}

TEST_CASE("comments, blank lines and CRLF anywhere") {
  auto p = parse_text(
      "# head\n\n  # indented\nmodel m # after the header\n{\n}\n");
  CHECK(p.errors() ==
        "t.dtp:4:27: error: expected '{' to open the block, got end of line\n"
        "    4 | model m # after the header\n"
        "      |                           ^\n");
  auto q = parse_text(
      "# head\r\n\r\nmodel m { # c { } \r\n\r\n  layers = 32 # c\r\n  # c\r\n} # c\r\n# end");
  INFO(q.errors());
  REQUIRE(q.file);
  CHECK(q.file->blocks[0].body[0].key.name == "layers");
  CHECK(std::get<ast::number>(q.file->blocks[0].body[0].rhs).text == "32");
}

TEST_CASE("spans of keys, values, units and headers are exact") {
  auto p = parse_text(
      "cluster two_nodes {\n"
      "  inter_node = 8 x 400 Gbit/s  # c\n"
      "  gpu        = H100_SXM\n"
      "  tp = {1, 2}\n"
      "  name = \"a\\\"b\"\n"
      "}\n"
      "  training { pp = 1..4 }\n");
  INFO(p.errors());
  REQUIRE(p.file);
  auto const& c = p.file->blocks[0];
  CHECK(p.at(c.kind.where) == "1:1+7");
  CHECK(p.at(c.name->where) == "1:9+9");
  CHECK(p.at(c.header) == "1:1+19");
  CHECK(p.text(c.header) == "cluster two_nodes {");
  CHECK(p.text(c.where).substr(0, 7) == "cluster");
  CHECK(p.text(c.where).back() == '}');
  CHECK(p.at(c.body[0].key.where) == "2:3+10");
  CHECK(p.at(c.body[0].where) == "2:3+27");
  auto const& q = std::get<ast::quantity>(c.body[0].rhs);
  CHECK(p.at(q.where) == "2:16+14");
  CHECK(p.at(q.multiplier->where) == "2:16+1");
  CHECK(p.at(q.amount.where) == "2:20+3");
  CHECK(p.at(q.unit_where) == "2:24+6");
  CHECK(p.at(ast::where_of(c.body[1].rhs)) == "3:16+8");
  auto const& s = std::get<ast::set>(c.body[2].rhs);
  CHECK(p.at(s.where) == "4:8+6");
  CHECK(p.at(ast::where_of(s.items[1])) == "4:12+1");
  CHECK(p.at(ast::where_of(c.body[3].rhs)) == "5:10+6");
  auto const& t = p.file->blocks[1];
  CHECK(p.at(t.where) == "7:3+22");
  CHECK(p.at(t.header) == "7:3+10");
  auto const& r = std::get<ast::range>(t.body[0].rhs);
  CHECK(p.at(r.where) == "7:19+4");
  CHECK(p.at(r.high.where) == "7:22+1");
}

TEST_CASE("syntax errors: one diagnostic at the offending token") {
  CHECK(error_of("model m {\n  layers =\n}\n") ==
        "t.dtp:2:11: error: expected a value after '=', got end of line\n"
        "    2 |   layers =\n"
        "      |           ^\n");
  CHECK(error_of("model m {\n  layers = # none\n}\n") ==
        "t.dtp:2:18: error: expected a value after '=', got end of line\n"
        "    2 |   layers = # none\n"
        "      |                  ^\n");
  CHECK(error_of("model m {\n  layers 32\n}\n") ==
        "t.dtp:2:10: error: expected '=' after the key, got '32'\n"
        "    2 |   layers 32\n"
        "      |          ^~\n");
  CHECK(error_of("model m {\n  hidden = 32 33\n}\n") ==
        "t.dtp:2:15: error: expected a new line, ';' or '}' after the value, got '33'\n"
        "    2 |   hidden = 32 33\n"
        "      |               ^~\n");
  CHECK(error_of("model m {\n  = 3\n}\n") ==
        "t.dtp:2:3: error: expected a key such as 'layers', or '}', got '='\n"
        "    2 |   = 3\n"
        "      |   ^\n");
  CHECK(error_of("model m {\n  s = \"abc\n}\n") ==
        "t.dtp:2:11: error: expected '\"' to close the string, got end of line\n"
        "    2 |   s = \"abc\n"
        "      |           ^\n");
  CHECK(error_of("model m {\n  s = \"a\\nb\"\n}\n") ==
        "t.dtp:2:10: error: expected '\"' or '\\' after '\\', got 'nb'\n"
        "    2 |   s = \"a\\nb\"\n"
        "      |          ^~\n");
  CHECK(error_of("strategy s {\n  tp = {1 2}\n}\n") ==
        "t.dtp:2:11: error: expected ',' or '}' in the set, got '2'\n"
        "    2 |   tp = {1 2}\n"
        "      |           ^\n");
  CHECK(error_of("strategy s {\n  pp = 1..\n}\n") ==
        "t.dtp:2:11: error: expected a number after '..', got end of line\n"
        "    2 |   pp = 1..\n"
        "      |           ^\n");
  CHECK(error_of("cluster c {\n  inter_node = 8 x Gbit/s\n}\n") ==
        "t.dtp:2:20: error: expected a quantity such as '400 Gbit/s' after 'x', got 'Gbit'\n"
        "    2 |   inter_node = 8 x Gbit/s\n"
        "      |                    ^~~~\n");
  CHECK(error_of("model llama 7b {\n}\n") ==
        "t.dtp:1:13: error: expected '{' to open the block, got '7b'\n"
        "    1 | model llama 7b {\n"
        "      |             ^~\n");
  CHECK(error_of("model m : {\n}\n") ==
        "t.dtp:1:11: error: expected a base name after ':', got '{'\n"
        "    1 | model m : {\n"
        "      |           ^\n");
  CHECK(error_of("{ a = 1 }\n") ==
        "t.dtp:1:1: error: expected a block such as 'model NAME { ... }', got '{'\n"
        "    1 | { a = 1 }\n"
        "      | ^\n");
  CHECK(error_of("model m { a = 1 }\n}\n") ==
        "t.dtp:2:1: error: expected a block such as 'model NAME { ... }', got '}'\n"
        "    2 | }\n"
        "      | ^\n");
  CHECK(error_of("model m { a = ±1 }\n") ==
        "t.dtp:1:15: error: expected a value after '=', got '±'\n"
        "    1 | model m { a = ±1 }\n"
        "      |               ^\n");
}

TEST_CASE("an unclosed block is reported where the next block or the file starts") {
  CHECK(error_of("model m {\n  layers = 32\n") ==
        "t.dtp:3:1: error: expected '}' to close the block, got end of file\n"
        "    3 | \n"
        "      | ^\n"
        "t.dtp:1:1: note: the block 'model m' opens here\n"
        "    1 | model m {\n"
        "      | ^~~~~~~~~\n");
  CHECK(error_of("model m {\n  layers = 32\ntraining { global_batch = 1 }\n") ==
        "t.dtp:3:1: error: expected '}' to close the block, got 'training'\n"
        "    3 | training { global_batch = 1 }\n"
        "      | ^~~~~~~~\n"
        "t.dtp:1:1: note: the block 'model m' opens here\n"
        "    1 | model m {\n"
        "      | ^~~~~~~~~\n");
}

TEST_CASE("every syntax error of a file is reported, once") {
  auto p = parse_text(
      "model a {\n"
      "  layers =\n"
      "  hidden = 4096\n"
      "  heads 32\n"
      "  tp = {1 2}\n"
      "  ok = 1\n"
      "}\n"
      "model b c {\n"
      "  q = 8 x foo\n"
      "}\n"
      "training { global_batch = 64 }\n");
  CHECK_FALSE(p.file);
  REQUIRE(p.diags.error_count() == 5);
  auto const& l = p.diags.list();
  CHECK(l[0].message == "expected a value after '=', got end of line");
  CHECK(l[1].message == "expected '=' after the key, got '32'");
  CHECK(l[2].message == "expected ',' or '}' in the set, got '2'");
  CHECK(l[3].message == "expected '{' to open the block, got 'c'");
  CHECK(l[4].message == "expected a quantity such as '400 Gbit/s' after 'x', got 'foo'");
  CHECK(p.at(l[4].where) == "9:11+3");
}

TEST_CASE("reporting stops after 20 errors") {
  std::string text = "model m {\n";
  for (int i = 0; i < 50; ++i) text += "  k" + std::to_string(i) + " 1\n";
  text += "}\n";
  auto p = parse_text(text);
  REQUIRE(p.diags.error_count() == 20);
  CHECK(p.diags.list().back().message == "expected '=' after the key, got '1'");
  REQUIRE(p.diags.list().back().notes.size() == 1);
  CHECK(p.diags.list().back().notes[0].message == "stopping after 20 syntax errors");
}

TEST_CASE("a file's sets hold at most 1,048,576 values in all, and the next is an error at it") {
  // Two sets: the first at the whole budget (one value a line, so the
  // error's line says which value), the second one value past it.
  std::string text = "strategy s {\n  tp = {\n";
  for (std::size_t i = 0; i + 1 < max_set_values; ++i) text += "1,\n";
  text += "1}\n  pp = {2, 4}\n}\nstrategy t { dp = {8} }\n";
  auto p = parse_text(text);
  CHECK_FALSE(p.file);
  REQUIRE(p.diags.error_count() == 1);
  auto const line = max_set_values + 3;  // the block, tp's line, then a value a line
  CHECK(p.diags.list()[0].message == "a file's sets hold at most 1,048,576 values in all; this is one more");
  // tp's 1,048,576 values were read; pp's first is one more. Nothing past
  // it is read (t's set would be an error again).
  CHECK(p.at(p.diags.list()[0].where) == std::to_string(line) + ":9+1");
  CHECK(p.errors().starts_with("t.dtp:" + std::to_string(line) + ":9: error: a file's sets hold at most 1,048,576"));
}

TEST_CASE("files that are not text or are empty") {
  CHECK(error_of(std::string("model m {\n  a = 1\0\n}\n", 20)) ==
        "t.dtp:2:8: error: file is not text: NUL byte at line 2, column 8\n"
        "    2 |   a = 1?\n"
        "      |        ^\n");
  CHECK(error_of("model m {\n  a = \"\xff\"\n}\n") ==
        "t.dtp:2:8: error: file is not text: invalid UTF-8 at line 2, column 8\n"
        "    2 |   a = \"\xff\"\n"
        "      |        ^\n");
  CHECK(error_of("a = \"\xc3\"") ==
        "t.dtp:1:6: error: file is not text: invalid UTF-8 at line 1, column 6\n"
        "    1 | a = \"\xc3\"\n"
        "      |      ^\n");
  std::string const empty =
      "t.dtp:1:1: error: file is empty: expected a 'model', 'cluster', 'training' or 'strategy' "
      "block\n"
      "    1 | {}\n"
      "      | ^\n";
  CHECK(error_of("") ==
        "t.dtp:1:1: error: file is empty: expected a 'model', 'cluster', 'training' or 'strategy' "
        "block\n"
        "    1 | \n"
        "      | ^\n");
  auto blank = parse_text("\n  # only a comment\n\t\n");
  REQUIRE(blank.diags.error_count() == 1);
  CHECK(blank.diags.list()[0].message ==
        "file is empty: expected a 'model', 'cluster', 'training' or 'strategy' block");
  CHECK(blank.at(blank.diags.list()[0].where) == "1:1+0");
  auto utf8 = parse_text("\xef\xbb\xbfmodel m { name = \"Größe 🚀\" }\n");
  INFO(utf8.errors());
  REQUIRE(utf8.file);
  CHECK(std::get<ast::string_literal>(utf8.file->blocks[0].body[0].rhs).value == "Größe 🚀");
  (void)empty;
}

TEST_CASE("parse_value reads one value, all of the text") {
  source_manager sources;
  diagnostics diags;
  auto ok = parse_value(sources, sources.add("<--set>", "8 x 400 Gbit/s"), diags);
  REQUIRE(ok);
  CHECK(std::get<ast::quantity>(*ok).multiplier->text == "8");
  auto set = parse_value(sources, sources.add("<--set>", "{1, 2}"), diags);
  REQUIRE(set);
  CHECK(std::get<ast::set>(*set).items.size() == 2);
  CHECK(diags.empty());
  CHECK_FALSE(parse_value(sources, sources.add("<--set>", "4 4"), diags));
  CHECK_FALSE(parse_value(sources, sources.add("<--set>", ""), diags));
  CHECK(format(diags, sources) ==
        "<--set>:1:3: error: expected the end of the value, got '4'\n"
        "    1 | 4 4\n"
        "      |   ^\n"
        "<--set>:1:1: error: expected a value, got end of file\n"
        "    1 | \n"
        "      | ^\n");
}

TEST_CASE("parse_setting reads TARGET.KEY=VALUE") {
  source_manager sources;
  diagnostics diags;
  auto s = parse_setting(sources, sources.add("<--set>", "cluster.nodes=4"), diags);
  REQUIRE(s);
  CHECK(s->target.name == "cluster");
  CHECK(s->key.name == "nodes");
  CHECK(std::get<ast::number>(s->rhs).text == "4");
  CHECK(s->key.where.begin == 8);
  CHECK(s->key.where.end == 13);
  auto spaced = parse_setting(sources, sources.add("<--set>", "current.tp = {1, 2}"), diags);
  REQUIRE(spaced);
  CHECK(std::get<ast::set>(spaced->rhs).items.size() == 2);
  auto q = parse_setting(sources, sources.add("<--set>", "cluster.inter_node=100 Gbit/s"), diags);
  REQUIRE(q);
  CHECK(std::get<ast::quantity>(q->rhs).unit == "Gbit/s");
  CHECK(diags.empty());
  CHECK_FALSE(parse_setting(sources, sources.add("<--set>", "nodes=4"), diags));
  CHECK_FALSE(parse_setting(sources, sources.add("<--set>", "cluster.=4"), diags));
  CHECK_FALSE(parse_setting(sources, sources.add("<--set>", "cluster.nodes"), diags));
  CHECK_FALSE(parse_setting(sources, sources.add("<--set>", "cluster.nodes=4 GiB x"), diags));
  CHECK(format(diags, sources) ==
        "<--set>:1:6: error: expected '.' after the block kind or name, got '='\n"
        "    1 | nodes=4\n"
        "      |      ^\n"
        "<--set>:1:9: error: expected a key after '.', got '='\n"
        "    1 | cluster.=4\n"
        "      |         ^\n"
        "<--set>:1:14: error: expected '=' after the key, got end of file\n"
        "    1 | cluster.nodes\n"
        "      |              ^\n"
        "<--set>:1:21: error: expected the end of the setting, got 'x'\n"
        "    1 | cluster.nodes=4 GiB x\n"
        "      |                     ^\n");
}

TEST_CASE("dump renders one node a line with its position") {
  auto p = parse_text(
      "model m : base {\n"
      "  layers = 32\n"
      "  lr = 3e-4\n"
      "  bw = 8 x 400 Gbit/s\n"
      "  mlp = swiglu\n"
      "  name = \"a \\\"q\\\"\"\n"
      "  tied = false\n"
      "}\n"
      "strategy { zero = auto; tp = {1, 2}; pp = 1..4 }\n");
  INFO(p.errors());
  REQUIRE(p.file);
  CHECK(ast::dump(*p.file, p.sources) ==
        "1:1 block 'model' name 'm' base 'base'\n"
        "  2:3 assignment 'layers' = integer 32\n"
        "  3:3 assignment 'lr' = real 3e-4\n"
        "  4:3 assignment 'bw' = quantity 8 x 400 'Gbit/s'\n"
        "  5:3 assignment 'mlp' = identifier 'swiglu'\n"
        "  6:3 assignment 'name' = string \"a \\\"q\\\"\"\n"
        "  7:3 assignment 'tied' = boolean false\n"
        "9:1 block 'strategy'\n"
        "  9:12 assignment 'zero' = auto\n"
        "  9:25 assignment 'tp' = set of 2\n"
        "    9:31 integer 1\n"
        "    9:34 integer 2\n"
        "  9:38 assignment 'pp' = range 1..4\n");
}

TEST_CASE("a carriage return without a line feed is an error where it stands") {
  CHECK(error_of("model m { a = 1 }\rmodel n { }\n") ==
        "t.dtp:1:18: error: file has a carriage return without a line feed at line 1, column 18: end lines with "
        "LF or CR LF\n"
        "    1 | model m { a = 1 }?model n { }\n"
        "      |                  ^\n");
  auto only = parse_text("\r\r\r");
  REQUIRE(only.diags.error_count() == 1);
  CHECK(only.diags.list()[0].message ==
        "file has a carriage return without a line feed at line 1, column 1: end lines with LF or CR LF");
  CHECK(parse_text("model m { a = 1 }\r\nmodel n { }\r\n").file);
}

TEST_CASE("the syntax tree dump shows strings with their control characters escaped") {
  auto p = parse_text("model m { description = \"\x1b[31mred \\\"x\\\" \xe2\x80\xae\" }\n");
  REQUIRE(p.file);
  auto text = ast::dump(*p.file, p.sources);
  CHECK(text.find("string \"\\x1b[31mred \\\"x\\\" \\u{202e}\"") != std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}
