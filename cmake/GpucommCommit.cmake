# GPUCOMM_GIT_COMMIT: the commit the benchmark programs and gpucomm-apps record in their reports.
# GPU_CHECK_COMMIT in the environment names it when the checkout's own history may not describe
# the tree (scripts/gpu-check.sh on a copied work tree); otherwise `git describe --dirty`, so a tree
# with changes on top of its commit says so ("<hash>-dirty").
if(NOT "$ENV{GPU_CHECK_COMMIT}" STREQUAL "")
  set(GPUCOMM_GIT_COMMIT "$ENV{GPU_CHECK_COMMIT}")
else()
  execute_process(COMMAND git describe --always --dirty --abbrev=12 --exclude=* WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE GPUCOMM_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT GPUCOMM_GIT_COMMIT)
  set(GPUCOMM_GIT_COMMIT unknown)
endif()
