# Install rules and the exported CMake package: find_package(gpucomm) from an install prefix
# gives gpucomm::gpucomm (host library) and gpucomm::device (header-only device API).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS gpucomm gpucomm_device EXPORT gpucommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/gpucomm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/include/gpucomm/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpucomm)
install(EXPORT gpucommTargets NAMESPACE gpucomm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpucomm)
configure_package_config_file(cmake/gpucommConfig.cmake.in
  ${CMAKE_BINARY_DIR}/gpucommConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpucomm)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/gpucommConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/gpucommConfig.cmake ${CMAKE_BINARY_DIR}/gpucommConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpucomm)
