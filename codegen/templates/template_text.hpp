#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// The files of codegen/templates, embedded at build time (embed.cmake),
/// and the substitution that turns one into a generated file.
namespace dtplan::codegen {

/// The text of template `file` ("train_step.cu", "CMakeLists.txt", ...).
/// Throws std::logic_error for a name that is not a template (a bug).
std::string_view template_text(std::string_view file);

/// One substitution: `@NAME@` in a template becomes `text`, which the caller
/// has already escaped for the language of the template.
struct template_value {
  std::string_view name;
  std::string text;
};

/// `tpl` with every `@NAME@` (NAME: capital letters, digits and '_') replaced
/// by its value; any other '@' is kept. Throws std::logic_error when a
/// placeholder has no value or a value is not used (both are generator bugs).
std::string fill(std::string_view tpl, std::vector<template_value> const& values);

}  // namespace dtplan::codegen
