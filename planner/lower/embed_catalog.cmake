# Writes a C++ file holding every built-in catalog .dtp file as a raw string,
# so the binary needs no data files at run time.
set(body "#include \"planner/lower/catalog.hpp\"\n\nnamespace dtplan::planner {\n\nstd::vector<builtin_source> const& builtin_sources() {\n  static std::vector<builtin_source> const sources{\n")
list(SORT FILES)
foreach(f IN LISTS FILES)
  file(READ ${f} text)
  get_filename_component(name ${f} NAME)
  string(APPEND body "      {\"<catalog>/${name}\", R\"dtp__(${text})dtp__\"},\n")
endforeach()
string(APPEND body "  };\n  return sources;\n}\n\n}  // namespace dtplan::planner\n")
file(WRITE ${OUT} "${body}")
