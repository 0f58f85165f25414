#!/usr/bin/env python3
"""Writes docs/ENV.md from the table of GPUCOMM_* variables in src/core/env.cpp."""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = (root / "src/core/env.cpp").read_text()
# {"NAME", "default", "meaning" ...}: the meaning may be several adjacent string literals (the
# formatter splits long ones across lines); they are joined as the compiler joins them.
literal = r'"(?:[^"\\]|\\.)*"'
rows = []
for m in re.finditer(rf'\{{"(GPUCOMM_[A-Z0-9_]+)",\s*"([^"]*)",\s*((?:{literal}\s*)+)\}}', src):
    desc = "".join(part[1:-1] for part in re.findall(literal, m.group(3)))
    rows.append((m.group(1), m.group(2), desc))
out = ["# gpucomm environment variables", "",
       "Every variable gpucomm reads. An unknown `GPUCOMM_*` variable draws a warning at start-up.",
       "This file is generated from `src/core/env.cpp` by `scripts/gen-env-doc.py`; a test checks",
       "that the two agree.", "", "| Variable | Default | Meaning |", "|---|---|---|"]
for name, default, desc in rows:
    out.append(f"| `{name}` | {('`' + default + '`') if default else '(unset)'} | {desc} |")
text = "\n".join(out) + "\n"
if "--check" in sys.argv:
    sys.exit(0 if (root / "docs/ENV.md").read_text() == text else 1)
(root / "docs/ENV.md").write_text(text)
print(f"docs/ENV.md: {len(rows)} variables")
