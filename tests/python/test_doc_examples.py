"""Code that the documentation shows and a build compiles stays the same in both places: the part of
tests/messaging/example_kernel_pingpong.cu between its example markers appears verbatim in
docs/MESSAGING.md."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_messaging_kernel_example_matches_its_source():
    src = (ROOT / "tests" / "messaging" / "example_kernel_pingpong.cu").read_text()
    assert "// example-begin\n" in src and "// example-end" in src
    body = src.split("// example-begin\n", 1)[1].split("// example-end", 1)[0]
    assert "__global__" in body and "int main()" in body
    doc = (ROOT / "docs" / "MESSAGING.md").read_text()
    assert "```cpp\n" + body + "```" in doc, "docs/MESSAGING.md's kernel example differs from its source"
