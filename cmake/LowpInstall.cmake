# `cmake --install`: headers, static libraries, the `lowp` program and a CMake package, so an
# external project does find_package(lowp) and links lowp::lowp (tests/install checks this).
include(CMakePackageConfigHelpers)

# Consumers of lowp::lowp compile its public headers, which need C++20.
target_compile_features(lowp_lowp INTERFACE cxx_std_20)
# The program is exported too, as lowp::cli, so a consumer can locate it ($<TARGET_FILE:lowp::cli>).
set_target_properties(lowp_cli PROPERTIES EXPORT_NAME cli)

install(TARGETS lowp_numerics lowp_formats lowp_quant lowp_hadamard lowp_accuracy lowp_lowp lowp_cli
        EXPORT lowpTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir numerics formats quant hadamard accuracy)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(EXPORT lowpTargets NAMESPACE lowp:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lowpConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/lowpConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lowpConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lowpConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/lowpConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
