# Writes a C++ file holding every template of codegen/templates as raw
# strings, for template_text(): the templates stay real CUDA, CMake and shell
# files (read, diffed and highlighted as such) and the binary needs no data
# files at run time. Each template is cut into pieces of at most 16,000
# characters, joined once at first use: a compiler need not take a longer
# string literal (the standard's minimum is 65,536; MSVC's piece is 16,380
# bytes), and train_step.cu alone is over 74,000.
# Run as: cmake -DOUT=file.cpp "-DFILES=a;b" -P embed.cmake
set(delimiter "dtplan_template")
set(piece 16000)
set(body "// Generated from codegen/templates by embed.cmake; do not edit.\n#include \"codegen/templates/template_text.hpp\"\n\n#include <initializer_list>\n#include <stdexcept>\n#include <string>\n#include <utility>\n#include <vector>\n\nnamespace dtplan::codegen {\n\nstd::string_view template_text(std::string_view file) {\n  using entry = std::pair<std::string_view, std::string>;\n  static std::vector<entry> const files = [] {\n    std::vector<entry> out;\n    auto add = [&](std::string_view name, std::initializer_list<std::string_view> pieces) {\n      std::string text;\n      for (auto p : pieces) text += p;\n      out.emplace_back(name, std::move(text));\n    };\n")
list(SORT FILES)
foreach(f IN LISTS FILES)
  file(READ ${f} text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains ')${delimiter}\"', which ends the raw string it is embedded in")
  endif()
  get_filename_component(name ${f} NAME)
  string(LENGTH "${text}" length)
  string(APPEND body "    add(\"${name}\", {")
  set(at 0)
  set(first TRUE)
  while(first OR at LESS length)
    string(SUBSTRING "${text}" ${at} ${piece} part)
    if(NOT first)
      string(APPEND body ",\n")
    endif()
    string(APPEND body "R\"${delimiter}(${part})${delimiter}\"")
    math(EXPR at "${at} + ${piece}")
    set(first FALSE)
  endwhile()
  string(APPEND body "});\n")
endforeach()
string(APPEND body "    return out;\n  }();\n  for (auto const& [name, text] : files)\n    if (name == file) return text;\n  throw std::logic_error(\"no template '\" + std::string(file) + \"'\");\n}\n\n}  // namespace dtplan::codegen\n")
file(WRITE ${OUT} "${body}")
