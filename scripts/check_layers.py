#!/usr/bin/env python3
"""Checks that gpucomm's layers depend downward only.

Every C++/CUDA file under include/gpucomm/<layer>/ and src/<layer>/ belongs to <layer>. Each of
its quoted includes is resolved to a layer ("gpucomm/<layer>/..." for public headers,
"<layer>/..." for the library's internal headers, a plain name for a file of the same folder).
An include of a layer that is not below the file's own (LAYERS below) is an error, and so is a
cycle among the headers themselves. The build runs this check (target check_layers), so a bad
include fails the build; tests/python/test_layers.py checks the check.

  scripts/check_layers.py [--root DIR] [--print-layers]
Exit status: 0 when every include points down, 1 otherwise (each offence printed as
file:line: message), 2 on usage errors.
"""
import argparse
import os
import re
import sys

# Each layer and the layers it may include (directly; what they include comes with them).
# The order of the docs: core; bootstrap, topology, heap; the device base; transport; proxy; the
# one-sided device API; runtime; matching (on the base); messaging and collectives; patterns;
# apps. The trace toolkit sits on core; the matching engines read its snapshot format.
LAYERS = {
    "core": [],
    "bootstrap": ["core"],
    "topology": ["core"],
    "heap": ["bootstrap", "core"],
    "base": ["core"],
    "transport": ["base", "bootstrap", "core"],
    "proxy": ["transport", "base", "bootstrap", "core"],
    "device": ["proxy", "base", "core"],
    "trace": ["core"],
    "matching": ["trace", "base", "core"],
    "runtime": ["device", "proxy", "transport", "heap", "topology", "bootstrap", "base", "core"],
    "messaging": ["runtime", "matching", "device", "proxy", "base", "core", "bootstrap", "heap", "topology", "transport"],
    "collectives": ["runtime", "messaging", "matching", "device", "proxy", "base", "core", "bootstrap", "heap", "topology",
                    "transport"],
    "patterns": ["collectives", "messaging", "runtime", "matching", "device", "proxy", "base", "core", "bootstrap", "heap",
                 "topology", "transport"],
    "apps": ["patterns", "collectives", "messaging", "runtime", "matching", "device", "proxy", "base", "core", "bootstrap",
             "heap", "topology", "transport"],
}
# Headers at the top of include/gpucomm that belong to a layer.
TOP_LEVEL = {"version.hpp.in": "core", "version.hpp": "core", "gpucomm.hpp": "umbrella"}
EXTENSIONS = (".hpp", ".h", ".cuh", ".cpp", ".cu", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def below(layer):
    """Every layer `layer` may reach (transitively)."""
    seen, todo = set(), list(LAYERS.get(layer, []))
    while todo:
        x = todo.pop()
        if x not in seen:
            seen.add(x)
            todo.extend(LAYERS.get(x, []))
    return seen


def layer_of(root, path):
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    parts = rel.split("/")
    if parts[:2] == ["include", "gpucomm"]:
        if len(parts) == 3:
            return TOP_LEVEL.get(parts[2], "umbrella")
        return parts[2]
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1]
    return None


def resolve(root, src_file, target):
    """The file an include names, or None when it is not gpucomm's (system or third party)."""
    if target.startswith("gpucomm/"):
        return os.path.join(root, "include", target)
    first = target.split("/")[0]
    if "/" in target and first in LAYERS and os.path.isdir(os.path.join(root, "src", first)):
        return os.path.join(root, "src", target)
    local = os.path.normpath(os.path.join(os.path.dirname(src_file), target))
    if os.path.exists(local):
        return local
    return None


def files(root):
    for base in ("include/gpucomm", "src"):
        top = os.path.join(root, base)
        for d, _, names in os.walk(top):
            for n in sorted(names):
                if n.endswith(EXTENSIONS):
                    yield os.path.join(d, n)


def check(root):
    errors, graph = [], {}
    for f in files(root):
        mine = layer_of(root, f)
        if mine not in LAYERS and mine not in ("umbrella",):
            if mine is not None:
                errors.append(f"{os.path.relpath(f, root)}:1: folder '{mine}' is not a known layer (add it to LAYERS)")
            continue
        allowed = below(mine) | {mine} if mine in LAYERS else set(LAYERS) | {"umbrella"}
        edges = graph.setdefault(os.path.normpath(f), [])
        with open(f, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, f, m.group(1))
                if target is None:
                    continue
                theirs = layer_of(root, target)
                edges.append((os.path.normpath(target), lineno))
                if theirs is None or theirs == mine:
                    continue
                if theirs not in allowed:
                    why = "a higher layer" if mine in below(theirs) else "a layer it does not build on"
                    errors.append(f"{os.path.relpath(f, root)}:{lineno}: layer '{mine}' includes \"{m.group(1)}\" of layer "
                                  f"'{theirs}', {why} (allowed: {', '.join(sorted(allowed - {mine})) or 'none'})")
    errors.extend(cycles(root, graph))
    return errors


def cycles(root, graph):
    """Include cycles among gpucomm's own files (each reported once)."""
    out, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m, line in graph.get(n, []):
            if state.get(m) == 1:
                loop = stack[stack.index(m):] + [m]
                out.append(f"{os.path.relpath(n, root)}:{line}: include cycle: " +
                           " -> ".join(os.path.relpath(x, root) for x in loop))
            elif m in graph and state.get(m) is None:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if state.get(n) is None:
            visit(n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: this script's repository)")
    ap.add_argument("--print-layers", action="store_true", help="print the layer table and exit")
    args = ap.parse_args()
    if args.print_layers:
        for k, v in LAYERS.items():
            print(f"{k:12s} -> {', '.join(v) or '-'}")
        return 0
    if not os.path.isdir(os.path.join(args.root, "include", "gpucomm")):
        print(f"check_layers: {args.root} has no include/gpucomm", file=sys.stderr)
        return 2
    errors = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} include(s) break the layer order (see ARCHITECTURE.md, 'Layers')", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
