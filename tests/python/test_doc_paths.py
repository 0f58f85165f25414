"""The documentation names paths that exist: every repository path in README.md, ARCHITECTURE.md and docs/*.md.

What counts as a path (kept small on purpose):
- text in backticks or a Markdown link target, one word without spaces, with a '/' in it, that ends
  in '/' or in a file extension;
- whose first component is a top-level folder of this tree (include/, src/, tests/, ...: resolved
  from the repository root), or `gpucomm/` (an include path: resolved under include/), or a module
  folder of src/, include/gpucomm/ or python/gpucomm/ such as `core/` or `launch/` (resolved under src/,
  include/gpucomm/ or python/gpucomm/: one of them must hold it).
Not checked: globs and placeholders (`*`, `<layer>`, `{a,b}`, upper-case words such as NAME or
OUTDIR), build outputs (`build/...`), URLs, and anything whose first component is none of the above
(other projects' paths such as NCCL's `nccl_device/...`).
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} - {"build"}
MODULES = {p.name for base in (ROOT / "src", ROOT / "include" / "gpucomm", ROOT / "python" / "gpucomm") if base.is_dir()
           for p in base.iterdir() if p.is_dir()}
MODULE_BASES = [ROOT / "src", ROOT / "include" / "gpucomm", ROOT / "python" / "gpucomm"]

CANDIDATE = re.compile(r"`([^`\s]+)`|\]\(([^)\s#]+)(?:#[^)]*)?\)")
LOOKS_LIKE_PATH = re.compile(r"^[\w.\-/]+(/|\.[A-Za-z][\w]*)$")
# Wildcards, <placeholders>, and upper-case components that stand for a name: NAME, OUTDIR, X.py
# (a file name in capitals with a longer stem, such as README.md, is a real name).
PLACEHOLDER = re.compile(r"[*?<>{}$]|(^|/)([A-Z][A-Z0-9_]*(/|$)|[A-Z]\.\w+$)")


def named_paths(text: str) -> list[str]:
    found = []
    for m in CANDIDATE.finditer(text):
        p = m.group(1) or m.group(2)
        p = p.rstrip(".,:;")
        if "://" in p or p.startswith("-") or "/" not in p or PLACEHOLDER.search(p):
            continue
        p = p.removeprefix("./")
        # A path with a line number or a symbol after it: `src/core/x.cpp:42`.
        p = re.sub(r":[\w:]+$", "", p)
        if LOOKS_LIKE_PATH.match(p):
            found.append(p)
    return found


def resolves(path: str, doc: Path) -> bool | None:
    """True/False when `path` is a path of this tree that exists/does not; None when not ours."""
    first = path.split("/", 1)[0]
    if first == "build":
        return None
    if first in TOP:
        return (ROOT / path).exists()
    if first == "gpucomm":
        return (ROOT / "include" / path).exists() or (ROOT / "python" / path).exists()
    if first in MODULES:
        return any((b / path).exists() for b in MODULE_BASES)
    if doc.parent != ROOT and (doc.parent / path).exists():  # a link relative to docs/
        return True
    return None


def test_rules_on_examples():
    doc = ROOT / "README.md"
    assert named_paths("`include/gpucomm/gpucomm.hpp` [x](docs/RMA.md#sec) `bench/results/<machine>/`") == \
        ["include/gpucomm/gpucomm.hpp", "docs/RMA.md"]
    assert named_paths("`OUTDIR/trace.json` `tests/*.py` `python/gpucomm/bench/X.py` `a b/c.py`") == []
    assert named_paths("`https://x.org/a.md` `src/core/errors.cpp:42` `docs/`") == ["src/core/errors.cpp", "docs/"]
    assert resolves("nccl_device/impl.cuh", doc) is None
    assert resolves("build/ci/python/", doc) is None
    assert resolves("core/host_wait.hpp", doc) is True
    assert resolves("runtime/host_wait.hpp", doc) is False
    assert resolves("gpucomm/base/coop.cuh", doc) is True


def test_documented_paths_exist():
    missing = []
    for doc in DOCS:
        for lineno, line in enumerate(doc.read_text().splitlines(), 1):
            for p in named_paths(line):
                if resolves(p, doc) is False:
                    missing.append(f"{doc.relative_to(ROOT)}:{lineno}: {p}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)
