# Install rules and the exported CMake package: find_package(gpucomm) from an install prefix, or
# from an installed wheel (GPUCOMM_INSTALL_* in GpucommOptions.cmake place everything inside the
# Python package there), gives gpucomm::gpucomm (host library) and gpucomm::device (header-only
# device API). Components: `python` (libgpucomm; in wheels also the extension), `sdk` (headers and
# the CMake package), `tools`.
include(CMakePackageConfigHelpers)

install(TARGETS gpucomm gpucomm_device EXPORT gpucommTargets
        LIBRARY DESTINATION ${GPUCOMM_INSTALL_LIBDIR} COMPONENT python
        ARCHIVE DESTINATION ${GPUCOMM_INSTALL_LIBDIR} COMPONENT sdk
        INCLUDES DESTINATION ${GPUCOMM_INSTALL_INCLUDEDIR})
install(DIRECTORY include/gpucomm DESTINATION ${GPUCOMM_INSTALL_INCLUDEDIR} COMPONENT sdk PATTERN "*.in" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/include/gpucomm/version.hpp DESTINATION ${GPUCOMM_INSTALL_INCLUDEDIR}/gpucomm
        COMPONENT sdk)
install(EXPORT gpucommTargets NAMESPACE gpucomm:: DESTINATION ${GPUCOMM_INSTALL_CMAKEDIR} COMPONENT sdk)
configure_package_config_file(cmake/gpucommConfig.cmake.in ${CMAKE_BINARY_DIR}/gpucommConfig.cmake
                              INSTALL_DESTINATION ${GPUCOMM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/gpucommConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/gpucommConfig.cmake ${CMAKE_BINARY_DIR}/gpucommConfigVersion.cmake
        DESTINATION ${GPUCOMM_INSTALL_CMAKEDIR} COMPONENT sdk)
