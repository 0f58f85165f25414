include(GNUInstallDirs)
# Where things install. A wheel carries everything inside the Python package folder `gpucomm/`:
# the libraries beside the extension, the tools in _bin, and the C++ package (headers and the
# CMake config), so that `find_package(gpucomm)` works against an installed wheel with
# CMAKE_PREFIX_PATH=$(python -m gpucomm --cmake-prefix-path). Otherwise the usual prefix layout.
if(SKBUILD)
  set(GPUCOMM_INSTALL_TOOLDIR gpucomm/_bin)
  set(GPUCOMM_INSTALL_LIBDIR gpucomm)
  set(GPUCOMM_INSTALL_INCLUDEDIR gpucomm/include)
  set(GPUCOMM_INSTALL_CMAKEDIR gpucomm/lib/cmake/gpucomm)
else()
  set(GPUCOMM_INSTALL_TOOLDIR ${CMAKE_INSTALL_LIBEXECDIR}/gpucomm)
  set(GPUCOMM_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
  set(GPUCOMM_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
  set(GPUCOMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpucomm)
endif()

# Compiler flags shared by every gpucomm target, through the INTERFACE target gpucomm_flags.
add_library(gpucomm_flags INTERFACE)
# The CUDA runtime for this project's own targets (libgpucomm links it privately; tests and tools
# call it from host code). It is not part of gpucomm::gpucomm's link interface: programs that use
# only the host API build and link without a CUDA toolkit.
target_link_libraries(gpucomm_flags INTERFACE CUDA::cudart_static)
target_compile_options(gpucomm_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
if(GPUCOMM_WARNINGS_AS_ERRORS)
  target_compile_options(gpucomm_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                                 $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  # GCC's flow-sensitive warnings depend on how far -O3 inlines and give false positives there
  # (GCC 12: maybe-uninitialized on moved strings, restrict on string concatenation). In Release
  # they stay warnings, so that the release preset builds with any GCC; the CI build (-O2) keeps
  # them errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(gcc_o3_only maybe-uninitialized restrict array-bounds stringop-overflow stringop-overread dangling-pointer)
    list(TRANSFORM gcc_o3_only PREPEND "-Wno-error=" OUTPUT_VARIABLE cxx_demoted)
    list(JOIN cxx_demoted "," cuda_demoted)
    target_compile_options(gpucomm_flags INTERFACE
      $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:${cxx_demoted}>
      $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CUDA>>:-Xcompiler=${cuda_demoted}>)
  endif()
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

# A toolchain whose library path finds libstdc++.a before any libstdc++.so (a compiler installed
# outside /usr with only the static runtime beside it, as some machines have) links a private
# copy of libstdc++ into libgpucomm and into the Python extension. Exceptions thrown by one copy
# and caught by the other then break, and in a Python process that already loaded the shared
# libstdc++ (numpy does) the copies mix and the first std::ostringstream crashes. A probe library
# built at configure time shows which runtime the compiler links; where it is the static one, these
# shared libraries link the shared runtime (libstdc++.so.6) explicitly, so a process has one.
function(gpucomm_use_shared_cxx_runtime target)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  if(NOT DEFINED GPUCOMM_SHARED_CXX_RUNTIME)
    set(runtime "")
    set(probe_dir "${CMAKE_BINARY_DIR}/cxx_runtime_probe")
    file(MAKE_DIRECTORY "${probe_dir}")
    file(WRITE "${probe_dir}/probe.cpp" "#include <sstream>\nstd::string probe(int v) { std::ostringstream o; o << v; return o.str(); }\n")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -shared -fPIC -o "${probe_dir}/probe.so" "${probe_dir}/probe.cpp"
                    RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(probe_rc EQUAL 0)
      file(STRINGS "${probe_dir}/probe.so" needs_shared REGEX "libstdc\\+\\+\\.so")
      if(NOT needs_shared)
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                        OUTPUT_VARIABLE found OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT IS_ABSOLUTE "${found}" OR NOT EXISTS "${found}")
          find_file(GPUCOMM_SYSTEM_LIBSTDCXX NAMES libstdc++.so.6 PATHS /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu
                    /usr/lib/aarch64-linux-gnu /usr/lib64 /lib64 NO_DEFAULT_PATH)
          set(found "${GPUCOMM_SYSTEM_LIBSTDCXX}")
        endif()
        if(found AND EXISTS "${found}")
          set(runtime "${found}")
          message(STATUS "gpucomm: ${CMAKE_CXX_COMPILER} links libstdc++ statically; shared libraries link ${runtime}")
        else()
          message(WARNING "gpucomm: ${CMAKE_CXX_COMPILER} links libstdc++ statically and no libstdc++.so.6 was "
                          "found: the Python extension may fail where another C++ library is loaded")
        endif()
      endif()
    endif()
    set(GPUCOMM_SHARED_CXX_RUNTIME "${runtime}" CACHE INTERNAL "libstdc++.so.6 linked explicitly (empty: not needed)")
  endif()
  if(GPUCOMM_SHARED_CXX_RUNTIME)
    target_link_libraries(${target} PRIVATE "${GPUCOMM_SHARED_CXX_RUNTIME}")
  endif()
endfunction()
