"""Locating gpucomm's tool programs (benchmarks, helpers) installed beside the package."""
from __future__ import annotations

import os
from pathlib import Path


def tool_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("GPUCOMM_BIN_DIR"):
        dirs.append(Path(os.environ["GPUCOMM_BIN_DIR"]))
    dirs.append(Path(__file__).resolve().parent / "_bin")
    # The build tree links this file from the source tree: look beside the link too.
    dirs.append(Path(os.path.abspath(__file__)).parent / "_bin")
    return dirs


def find_tool(name: str) -> Path:
    for d in tool_dirs():
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return p
    searched = ", ".join(str(d) for d in tool_dirs())
    raise FileNotFoundError(f"gpucomm tool '{name}' not found (searched {searched}); "
                            "build the project or set GPUCOMM_BIN_DIR")
