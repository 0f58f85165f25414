"""``gpucomm bench TARGET``: the benchmarks; each target is a module of gpucomm.bench."""
from __future__ import annotations

import importlib
import pkgutil

import gpucomm.bench as bench_pkg


def register(sub) -> None:
    p = sub.add_parser("bench", help="run benchmarks (see `gpucomm bench --help`)",
                       description="Benchmarks. Each writes a table, and JSON with --json FILE.")
    targets = p.add_subparsers(dest="target", metavar="TARGET")
    for name in sorted(m.name for m in pkgutil.iter_modules(bench_pkg.__path__)):
        if name.startswith("_"):
            continue
        module = importlib.import_module(f"gpucomm.bench.{name}")
        if hasattr(module, "register"):
            module.register(targets)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
