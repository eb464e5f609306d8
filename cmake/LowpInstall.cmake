include(CMakePackageConfigHelpers)

install(TARGETS lowp_numerics lowp_formats lowp_quant lowp_hadamard lowp_accuracy lowp_lowp
        EXPORT lowpTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS lowp_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir numerics formats quant hadamard accuracy)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(EXPORT lowpTargets NAMESPACE lowp:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lowpConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/lowpConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lowpConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lowpConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/lowpConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lowp)
