# Writes a C++ file holding every template of codegen/templates as a raw
# string, for template_text(): the templates stay real CUDA, CMake and shell
# files (read, diffed and highlighted as such) and the binary needs no data
# files at run time. Run as: cmake -DOUT=file.cpp "-DFILES=a;b" -P embed.cmake
set(delimiter "dtplan_template")
set(body "// Generated from codegen/templates by embed.cmake; do not edit.\n#include \"codegen/templates/template_text.hpp\"\n\n#include <stdexcept>\n#include <string>\n#include <utility>\n\nnamespace dtplan::codegen {\n\nstd::string_view template_text(std::string_view file) {\n  static constexpr std::pair<std::string_view, std::string_view> files[] = {\n")
list(SORT FILES)
foreach(f IN LISTS FILES)
  file(READ ${f} text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains ')${delimiter}\"', which ends the raw string it is embedded in")
  endif()
  get_filename_component(name ${f} NAME)
  string(APPEND body "      {\"${name}\", R\"${delimiter}(${text})${delimiter}\"},\n")
endforeach()
string(APPEND body "  };\n  for (auto const& [name, text] : files)\n    if (name == file) return text;\n  throw std::logic_error(\"no template '\" + std::string(file) + \"'\");\n}\n\n}  // namespace dtplan::codegen\n")
file(WRITE ${OUT} "${body}")
