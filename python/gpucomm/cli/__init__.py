"""The ``gpucomm`` command: one subcommand per module of this package.

Each module defines ``register(subparsers)`` which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from gpucomm import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpucomm",
        description="GPU-centric communication: launch PEs, inspect the machine, benchmark, "
                    "analyse MPI traces.")
    parser.add_argument("--version", action="version", version=f"gpucomm {__version__}")
    where = parser.add_argument_group("the C++ package of an installed wheel (prints a folder and exits)")
    where.add_argument("--cmake-prefix-path", dest="print_path", action="store_const", const="cmake_prefix_path",
                       help="the prefix for CMAKE_PREFIX_PATH, so that find_package(gpucomm) finds it")
    where.add_argument("--cmake-dir", dest="print_path", action="store_const", const="cmake_dir",
                       help="the folder of gpucommConfig.cmake (for gpucomm_DIR)")
    where.add_argument("--include-dir", dest="print_path", action="store_const", const="include",
                       help="the folder of the C++ headers")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if mod.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.print_path:
        return _print_path(args.print_path)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"{command_name(args)}: error: {exc}", file=sys.stderr)
        return 1


def _print_path(which: str) -> int:
    from gpucomm import _sdk
    get = {"cmake_prefix_path": _sdk.get_cmake_prefix_path, "cmake_dir": _sdk.get_cmake_dir,
           "include": _sdk.get_include}[which]
    try:
        print(get())
    except _sdk.NoSdkError as exc:
        print(f"gpucomm: error: {exc}", file=sys.stderr)
        return 1
    return 0


def command_name(args: argparse.Namespace) -> str:
    """'gpucomm run', 'gpucomm bench rma', ...: the words of the command that ran."""
    words = ["gpucomm", args.command]
    words += [w for w in (getattr(args, "target", None), getattr(args, "trace_command", None)) if w]
    return " ".join(words)
