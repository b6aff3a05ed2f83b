#include <catch2/catch.hpp>

#include <stdexcept>

#include "codegen/templates/template_text.hpp"

using namespace dtplan;

TEST_CASE("fill replaces placeholders and keeps every other '@'") {
  CHECK(codegen::fill("a @X@ b @Y_2@ c", {{"X", "1"}, {"Y_2", "two"}}) == "a 1 b two c");
  CHECK(codegen::fill("exec \"$@\" user@host @ @x@ @@", {}) == "exec \"$@\" user@host @ @x@ @@");
  CHECK(codegen::fill("@X@@X@", {{"X", "ab"}}) == "abab");
  // A value is never scanned again: text that looks like a placeholder stays.
  CHECK(codegen::fill("@X@", {{"X", "@Y@"}}) == "@Y@");
  CHECK_THROWS_AS(codegen::fill("@MISSING@", {}), std::logic_error);
  CHECK_THROWS_AS(codegen::fill("no placeholder", {{"X", "1"}}), std::logic_error);
}

TEST_CASE("the templates are embedded") {
  CHECK(codegen::template_text("train_step.cu").find("@PLAN_CONSTANTS@\n") != std::string_view::npos);
  CHECK(codegen::template_text("skeleton.cmake").find("project(dtplan_train_step") != std::string_view::npos);
  CHECK_THROWS_AS(codegen::template_text("nothing.cu"), std::logic_error);
}
