# gpucomm_add_gtest(NAME SOURCES ... [LABELS l1 l2] [LIBS ...])
#   One GoogleTest executable, registered with CTest test by test. Tests labelled `gpu` skip
#   themselves with a visible reason where no GPU exists; CTest reports them as skipped.
function(gpucomm_add_gtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE gpucomm::gpucomm gpucomm_flags gpucomm_test_support
                                        GTest::gtest GTest::gtest_main ${T_LIBS})
  set_target_properties(${name} PROPERTIES BUILD_RPATH "$<TARGET_FILE_DIR:gpucomm>")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  list(LENGTH T_LABELS n_labels)
  if(n_labels GREATER 1)
    message(FATAL_ERROR "gpucomm_add_gtest(${name}): one label per suite (gtest discovery splits lists)")
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
               SKIP_REGULAR_EXPRESSION ".  SKIPPED ."
               ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python")
endfunction()

# gpucomm_add_launch_test(NAME NP n COMMAND prog args [LABELS ...] [LAUNCHER gpucomm|mpirun]
#                         [EXPECT_FAILURE [FIRST rank] [WITHIN seconds] [SURVIVORS_MAY_STALL]])
#   Runs a program on n PEs under `gpucomm run` (default) or mpirun. EXPECT_FAILURE: a PE fails the
#   job on purpose; the test passes when the job ended failed, every PE printed "PE OK", the launcher
#   named the PE that failed first (FIRST), whose report came first, within WITHIN seconds
#   (tests/support/expect_failed_job.py). SURVIVORS_MAY_STALL: the other PEs may instead be stopped
#   by the launcher after its grace (PEs time-sharing a GPU, where a kernel beside one that faulted
#   may stop being scheduled).
function(gpucomm_add_launch_test name)
  cmake_parse_arguments(T "EXPECT_FAILURE;SURVIVORS_MAY_STALL" "NP;LAUNCHER;TIMEOUT;FIRST;WITHIN" "COMMAND;LABELS;ENV;LAUNCH_ARGS" ${ARGN})
  if(NOT T_LAUNCHER)
    set(T_LAUNCHER gpucomm)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS multiprocess)
  endif()
  if(T_LAUNCHER STREQUAL "mpirun")
    set(cmd ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np ${T_NP} ${T_COMMAND})
  else()
    set(cmd ${Python_EXECUTABLE} -m gpucomm run -n ${T_NP} --tag-output ${T_LAUNCH_ARGS} -- ${T_COMMAND})
  endif()
  if(T_EXPECT_FAILURE)
    set(expect ${Python_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/support/expect_failed_job.py --np ${T_NP})
    if(DEFINED T_FIRST)
      list(APPEND expect --first ${T_FIRST})
    endif()
    if(T_WITHIN)
      list(APPEND expect --within ${T_WITHIN})
    endif()
    if(T_SURVIVORS_MAY_STALL)
      list(APPEND expect --survivors-may-stall)
    endif()
    set(cmd ${expect} -- ${cmd})
  endif()
  add_test(NAME ${name} COMMAND ${cmd})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    SKIP_REGULAR_EXPRESSION ".  SKIPPED ."
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;${T_ENV}")
endfunction()
