# Finding UCX for the optional transport library libgpucomm_ucx (GPUCOMM_WITH_UCX: AUTO, ON, OFF).
#
# gpucomm_find_ucx() looks, in order, at
#   1. the Python wheel libucx-cu13 (scripts/setup.sh installs it) of the interpreter the project
#      uses: its lib/cmake/ucx/ucx-config.cmake,
#   2. any other ucx-config.cmake on CMake's search path,
#   3. pkg-config's `ucx`.
# and sets, in the caller's scope, GPUCOMM_HAVE_UCX (ON/OFF), GPUCOMM_UCX_VERSION and
# GPUCOMM_UCX_LIBDIR (the folder of libucp, used as the library's run path). The targets
# ucx::ucp and ucx::ucs exist afterwards where UCX was found.
set(GPUCOMM_UCX_MIN_VERSION 1.12)

function(gpucomm_find_ucx)
  set(GPUCOMM_HAVE_UCX OFF PARENT_SCOPE)
  if(GPUCOMM_WITH_UCX STREQUAL "OFF")
    message(STATUS "gpucomm: UCX transport not built (GPUCOMM_WITH_UCX=OFF)")
    return()
  endif()

  set(hints "")
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import libucx, os; print(os.path.dirname(libucx.__file__))"
                  OUTPUT_VARIABLE wheel_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND EXISTS "${wheel_dir}/lib/cmake/ucx")
    list(APPEND hints "${wheel_dir}")
  endif()

  set(libdir "")
  find_package(ucx ${GPUCOMM_UCX_MIN_VERSION} CONFIG QUIET HINTS ${hints})
  if(ucx_FOUND AND TARGET ucx::ucp AND TARGET ucx::ucs)
    get_target_property(ucp_location ucx::ucp IMPORTED_LOCATION)
    get_filename_component(libdir "${ucp_location}" DIRECTORY)
    set(version "${ucx_VERSION}")
    set(how "${ucx_DIR}")
  else()
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(GPUCOMM_UCX_PC QUIET IMPORTED_TARGET ucx>=${GPUCOMM_UCX_MIN_VERSION})
    endif()
    if(GPUCOMM_UCX_PC_FOUND)
      add_library(ucx::ucp INTERFACE IMPORTED)
      target_link_libraries(ucx::ucp INTERFACE PkgConfig::GPUCOMM_UCX_PC)
      add_library(ucx::ucs INTERFACE IMPORTED)
      list(GET GPUCOMM_UCX_PC_LIBRARY_DIRS 0 libdir)
      set(version "${GPUCOMM_UCX_PC_VERSION}")
      set(how "pkg-config")
    endif()
  endif()

  if(NOT libdir)
    if(GPUCOMM_WITH_UCX STREQUAL "ON")
      message(FATAL_ERROR "GPUCOMM_WITH_UCX=ON but UCX >= ${GPUCOMM_UCX_MIN_VERSION} was not found: "
                          "install it with `${Python_EXECUTABLE} -m pip install libucx-cu13` (scripts/setup.sh) "
                          "or point ucx_DIR at a UCX install")
    endif()
    message(STATUS "gpucomm: UCX transport not built (UCX >= ${GPUCOMM_UCX_MIN_VERSION} not found; "
                   "`pip install libucx-cu13` provides it)")
    return()
  endif()
  message(STATUS "gpucomm: UCX transport built against UCX ${version} (${how}), libraries in ${libdir}")
  set(GPUCOMM_HAVE_UCX ON PARENT_SCOPE)
  set(GPUCOMM_UCX_VERSION "${version}" PARENT_SCOPE)
  set(GPUCOMM_UCX_LIBDIR "${libdir}" PARENT_SCOPE)
endfunction()
