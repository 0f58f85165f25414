include(GNUInstallDirs)
# Where tool executables install: inside the Python package for wheels, libexec otherwise.
if(SKBUILD)
  set(GPUCOMM_INSTALL_TOOLDIR gpucomm/_bin)
else()
  set(GPUCOMM_INSTALL_TOOLDIR ${CMAKE_INSTALL_LIBEXECDIR}/gpucomm)
endif()

# Compiler flags shared by every gpucomm target, through the INTERFACE target gpucomm_flags.
add_library(gpucomm_flags INTERFACE)
target_compile_options(gpucomm_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
if(GPUCOMM_WARNINGS_AS_ERRORS)
  target_compile_options(gpucomm_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                                 $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
if(GPUCOMM_CHECKED)
  target_compile_definitions(gpucomm_flags INTERFACE GPUCOMM_CHECKED=1)
endif()

# UCX (optional remote transport, libgpucomm_ucx): AUTO builds it when UCX is found.
set(GPUCOMM_WITH_UCX "AUTO" CACHE STRING "Build the UCX transport library libgpucomm_ucx: ON, OFF or AUTO")
set_property(CACHE GPUCOMM_WITH_UCX PROPERTY STRINGS AUTO ON OFF)

# MPI (optional bootstrap).
set(GPUCOMM_HAVE_MPI OFF)
if(NOT GPUCOMM_WITH_MPI STREQUAL "OFF")
  if(GPUCOMM_WITH_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(GPUCOMM_HAVE_MPI ON)
  endif()
endif()
message(STATUS "gpucomm: CUDA kernels ${GPUCOMM_ENABLE_CUDA}, MPI bootstrap ${GPUCOMM_HAVE_MPI}, checked ${GPUCOMM_CHECKED}")

# Adds a gpucomm tool executable, placed where the Python CLI finds it.
function(gpucomm_add_tool name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE gpucomm::gpucomm gpucomm_flags)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${GPUCOMM_TOOL_DIR}
                                           BUILD_RPATH "$<TARGET_FILE_DIR:gpucomm>"
                                           INSTALL_RPATH "$ORIGIN/..;$ORIGIN/../../lib;$ORIGIN/../lib")
  install(TARGETS ${name} RUNTIME DESTINATION ${GPUCOMM_INSTALL_TOOLDIR} COMPONENT tools)
endfunction()

# Adds every sub-folder of the current folder that has a CMakeLists.txt (layer folders,
# test folders, tools, benchmarks), except those named after EXCLUDE.
function(gpucomm_add_subdirectories)
  cmake_parse_arguments(A "" "" "EXCLUDE" ${ARGN})
  file(GLOB entries LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(dir ${entries})
    get_filename_component(name ${dir} NAME)
    if(IS_DIRECTORY ${dir} AND EXISTS ${dir}/CMakeLists.txt AND NOT name IN_LIST A_EXCLUDE)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()
