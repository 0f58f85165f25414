"""Code that the documentation shows runs or compiles as written: the parts of the example sources
between their markers appear verbatim in the docs (docs/MESSAGING.md's kernel, README's C++ ring;
the build compiles both and GPU tests run them), and README's Python example runs under
``gpucomm run`` on 1 and 2 host-memory PEs."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def example_body(path: Path) -> str:
    src = path.read_text()
    assert "// example-begin\n" in src and "// example-end" in src, path
    return src.split("// example-begin\n", 1)[1].split("// example-end", 1)[0]


@pytest.mark.parametrize("source, doc", [("tests/messaging/example_kernel_pingpong.cu", "docs/MESSAGING.md"),
                                         ("tests/runtime/example_readme_ring.cu", "README.md")])
def test_cpp_example_matches_its_source(source, doc):
    body = example_body(ROOT / source)
    assert "__global__" in body and "int main()" in body
    assert "```cpp\n" + body + "```" in (ROOT / doc).read_text(), f"{doc}'s example differs from {source}"


def readme_python_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (ring,) = [b for b in blocks if b.startswith("# ring.py")]
    return ring


@pytest.mark.parametrize("np_", [1, 2])
def test_readme_python_example_runs(gpucomm_env, tmp_path, np_):
    script = tmp_path / "ring.py"
    script.write_text(readme_python_example())
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(np_):
        assert f"rank {rank} got {1000 + (rank - 1) % np_} from rank {(rank - 1) % np_}" in r.stdout, r.stdout
