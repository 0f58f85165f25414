"""Where an installed wheel keeps gpucomm's C++ package (headers, libgpucomm, CMake config), in the
manner of ``torch.utils.cmake_prefix_path`` and ``pybind11.get_cmake_dir()``:

    cmake -DCMAKE_PREFIX_PATH="$(python -m gpucomm --cmake-prefix-path)" ...
    cmake -Dgpucomm_DIR="$(python -m gpucomm --cmake-dir)" ...
"""
from __future__ import annotations

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The prefix to put on CMAKE_PREFIX_PATH: find_package(gpucomm) finds lib/cmake/gpucomm below it.
cmake_prefix_path = PACKAGE_DIR


class NoSdkError(RuntimeError):
    """This copy of the package carries no C++ package (a build tree, or the source folder)."""


def _existing(path: str, what: str) -> str:
    if not os.path.isdir(path):
        raise NoSdkError(
            f"gpucomm at {PACKAGE_DIR} has no {what} ({path} is missing): only an installed wheel "
            "(pip install .) carries the C++ package; from a source build use `cmake --install` and its prefix")
    return path


def get_cmake_dir() -> str:
    """The folder of gpucommConfig.cmake (for gpucomm_DIR)."""
    return _existing(os.path.join(PACKAGE_DIR, "lib", "cmake", "gpucomm"), "CMake package")


def get_include() -> str:
    """The folder to add to the include path (it holds gpucomm/gpucomm.hpp)."""
    return _existing(os.path.join(PACKAGE_DIR, "include"), "C++ headers")


def get_cmake_prefix_path() -> str:
    """The prefix for CMAKE_PREFIX_PATH (checked to hold the CMake package)."""
    get_cmake_dir()
    return cmake_prefix_path
