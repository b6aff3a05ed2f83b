#include <catch2/catch.hpp>

#include "codegen/json_writer.hpp"

using namespace dtplan::codegen;

TEST_CASE("the JSON writer prints stable, escaped output") {
  json_writer w;
  w.begin_object();
  w.key("file").value("a \"b\"\n");
  w.key("n").value(std::int64_t{42});
  w.key("x").value(1.96);
  w.key("ok").value(true);
  w.key("list").begin_array().value(1).value(2).end_array();
  w.key("empty").begin_array().end_array();
  w.key("obj").begin_object().key("k").null().end_object();
  w.end_object();
  CHECK(w.str() ==
        "{\n"
        "  \"file\": \"a \\\"b\\\"\\n\",\n"
        "  \"n\": 42,\n"
        "  \"x\": 1.96,\n"
        "  \"ok\": true,\n"
        "  \"list\": [\n"
        "    1,\n"
        "    2\n"
        "  ],\n"
        "  \"empty\": [],\n"
        "  \"obj\": {\n"
        "    \"k\": null\n"
        "  }\n"
        "}\n");
  CHECK(json_quote("\x01") == "\"\\u0001\"");
}
