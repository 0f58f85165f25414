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
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"gpucomm {args.command}: error: {exc}", file=sys.stderr)
        return 1
