# What `cmake --install` puts under the prefix: the static libraries
# (dtplan::dsl, dtplan::planner, dtplan::codegen and dtplan::dtplan, which
# links them all), their public headers under include/dtplan/, the dtplan
# command, and the CMake package that lets another project write
#   find_package(dtplan REQUIRED)
#   target_link_libraries(app PRIVATE dtplan::dtplan)
# tests/install/ builds such a project against a temporary prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(dtplan_include_root ${CMAKE_INSTALL_INCLUDEDIR}/dtplan)
set(dtplan_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/dtplan)

# One target for the whole C++ API.
add_library(dtplan_library INTERFACE)
add_library(dtplan::dtplan ALIAS dtplan_library)
target_link_libraries(dtplan_library INTERFACE dtplan::codegen)
target_include_directories(dtplan_library INTERFACE $<INSTALL_INTERFACE:${dtplan_include_root}>)
set_target_properties(dtplan_options PROPERTIES EXPORT_NAME options)
set_target_properties(dtplan_dsl PROPERTIES EXPORT_NAME dsl)
set_target_properties(dtplan_planner PROPERTIES EXPORT_NAME planner)
set_target_properties(dtplan_codegen PROPERTIES EXPORT_NAME codegen)
set_target_properties(dtplan_library PROPERTIES EXPORT_NAME dtplan)

install(TARGETS dtplan_options dtplan_dsl dtplan_planner dtplan_codegen dtplan_library
        EXPORT dtplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${dtplan_include_root})
install(TARGETS dtplan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The headers of the libraries; the parser's Spirit X3 internals stay out.
foreach(dir dsl planner codegen)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${dtplan_include_root}/${dir}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "detail" EXCLUDE)
endforeach()
install(EXPORT dtplanTargets NAMESPACE dtplan:: DESTINATION ${dtplan_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dtplanConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/dtplanConfig.cmake INSTALL_DESTINATION ${dtplan_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dtplanConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dtplanConfig.cmake ${PROJECT_BINARY_DIR}/dtplanConfigVersion.cmake
        DESTINATION ${dtplan_cmake_dir})
