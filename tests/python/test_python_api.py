"""The Python one-sided API across real processes (host-memory PEs here, GPU PEs with torch where a
GPU exists), the array adapter (gpucomm.arrays), the type stubs of the extension, and the examples
of docs/PYTHON.md."""
from __future__ import annotations

import ast
import types
import re
import sys
from pathlib import Path

import pytest

from gpus import gpu_count

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HOST = {"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "16M", "GPUCOMM_TIMEOUT": "60"}


def _core(build):
    if not list((build / "python" / "gpucomm").glob("_core*.so")):
        pytest.skip("gpucomm._core not built")
    import gpucomm
    return gpucomm._load_core()


def _ranks_ok(r, n: int, marker: str) -> None:
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):
        assert f"[{rank}] {marker} rank {rank}" in r.stdout, r.stdout + r.stderr


def test_every_one_sided_call_on_host_pes(run_gpucomm, build):
    pytest.importorskip("numpy")
    _core(build)
    r = run_gpucomm("run", "-n", "4", "--tag-output", "--", sys.executable, str(HERE / "pe_one_sided.py"), env=HOST,
                    timeout=180)
    _ranks_ok(r, 4, "PY OK")


def test_one_sided_calls_with_torch_on_gpu_pes(run_gpucomm, build):
    _core(build)
    if gpu_count() < 1:
        pytest.skip("needs a GPU")
    pytest.importorskip("torch")
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", sys.executable, str(HERE / "pe_one_sided_gpu.py"),
                    env={"GPUCOMM_DEVICE": "gpu", "GPUCOMM_HEAP_SIZE": "64M", "GPUCOMM_TIMEOUT": "60"}, timeout=600)
    _ranks_ok(r, 2, "PY GPU OK")


# ---- docs/PYTHON.md: its examples run as written ----

def _doc_example(name: str) -> str:
    text = (ROOT / "docs" / "PYTHON.md").read_text()
    m = re.search(rf"<!-- example: {name} -->\s*```python\n(.*?)```", text, re.S)
    assert m, f"docs/PYTHON.md has no example '{name}'"
    return m.group(1)


def test_ring_exchange_of_the_docs_runs_on_host_pes(run_gpucomm, build, tmp_path):
    pytest.importorskip("numpy")
    _core(build)
    script = tmp_path / "ring.py"
    script.write_text(_doc_example("ring"))
    r = run_gpucomm("run", "-n", "3", "--", sys.executable, str(script), env=HOST, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ring ok") == 3, r.stdout


def test_torch_example_of_the_docs_runs_on_gpu_pes(run_gpucomm, build, tmp_path):
    _core(build)
    if gpu_count() < 1:
        pytest.skip("needs a GPU")
    pytest.importorskip("torch")
    script = tmp_path / "torch_ring.py"
    script.write_text(_doc_example("torch"))
    r = run_gpucomm("run", "-n", "2", "--", sys.executable, str(script),
                    env={"GPUCOMM_DEVICE": "gpu", "GPUCOMM_HEAP_SIZE": "64M", "GPUCOMM_TIMEOUT": "60"}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("torch ring ok") == 2, r.stdout


# ---- the array adapter ----

def test_adapter_names_frameworks_and_streams():
    np = pytest.importorskip("numpy")
    from gpucomm import arrays
    assert arrays.framework(np.zeros(1)) == "numpy"
    assert arrays.framework(object()) == "dlpack"
    assert arrays.stream_handle(7) == 7
    assert arrays.stream_handle(type("S", (), {"cuda_stream": 1234})()) == 1234
    assert arrays.stream_handle(type("C", (), {"ptr": 99})()) == 99
    # A framework's default stream (handle 0) is the legacy default stream, named explicitly: the
    # integer 0 means the runtime's own stream.
    assert arrays.stream_handle(type("S", (), {"cuda_stream": 0})()) == arrays.LEGACY_DEFAULT_STREAM == 1
    assert arrays.stream_handle(0) == 0
    for bad, kind in ((-1, ValueError), (True, TypeError), ("s", TypeError)):
        with pytest.raises(kind):
            arrays.stream_handle(bad)
    # No torch or cupy argument: the explicit stream, else the fallback.
    assert arrays.stream_for([np.zeros(1)], None, 42) == 42
    assert arrays.stream_for([np.zeros(1)], 5, 42) == 5
    x = np.arange(3)
    assert arrays.like(x, np.zeros(1)) is not None and arrays.like("raw", object()) == "raw"
    arrays.wait_for_producers([np.zeros(1)])  # nothing to wait for


def test_adapter_follows_torch_current_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from gpucomm import arrays
    t = torch.zeros(4, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert arrays.stream_for([t], None, 0) == s.cuda_stream
    assert arrays.stream_for([t], None, 0) == (torch.cuda.current_stream().cuda_stream or arrays.LEGACY_DEFAULT_STREAM)
    assert arrays.framework(t) == "torch"
    assert isinstance(arrays.like(t, t), torch.Tensor)  # torch.from_dlpack of a tensor


# ---- the type stubs of the extension ----

def _stub_tree():
    return ast.parse((ROOT / "python" / "gpucomm" / "_core.pyi").read_text())


def _params(fn: ast.FunctionDef) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    return [n for n in names if n != "self"]


def _split_params(text: str) -> list[str]:
    """Parameter names of a nanobind signature text 'def f(self, a: int, b: list[int] = ...) -> x'."""
    inner = text[text.index("(") + 1:]
    depth, cur, parts = 0, "", []
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = [p.strip().split(":")[0].split("=")[0].strip().lstrip("*") for p in parts if p.strip()]
    return [n for n in names if n not in ("self", "/", "")]


def _signature_params(obj) -> list[str] | None:
    sig = getattr(obj, "__nb_signature__", None)
    if not sig:
        return None
    return _split_params(sig[0][0])


def test_stubs_match_the_extension(build):
    core = _core(build)
    tree = _stub_tree()
    stub_classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")}
    stub_funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    # Submodules of the extension are stubbed as annotated module attributes.
    stub_modules = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                    and "ModuleType" in ast.unparse(n.annotation)}
    public = {n for n in dir(core) if not n.startswith("_")}
    # Every stubbed name exists, with the same parameters.
    for name, fn in stub_funcs.items():
        assert name in public, f"stub names {name}, the extension has no such function"
        assert _signature_params(getattr(core, name)) in (None, _params(fn)), name
    for cname in ("Runtime", "Team"):
        cls, node = getattr(core, cname), stub_classes[cname]
        members = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        for name, fn in members.items():
            assert hasattr(cls, name), f"stub names {cname}.{name}, the extension has no such member"
            attr = getattr(cls, name)
            if callable(attr) and not isinstance(attr, property):
                got = _signature_params(attr)
                assert got in (None, _params(fn)), f"{cname}.{name}: extension {got}, stub {_params(fn)}"
        # ... and every public member of the extension is stubbed.
        missing = {n for n in dir(cls) if not n.startswith("_")} - set(members)
        assert not missing, f"{cname} members without a stub: {sorted(missing)}"
    for enum_name, values in (("Cmp", ["eq", "ne", "gt", "ge", "lt", "le"]), ("SignalOp", ["set", "add"])):
        node = stub_classes[enum_name]
        stubbed = [t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets]
        assert stubbed == values
        assert [v.name for v in getattr(core, enum_name)] == values
    # Every public function and class of the extension is stubbed (exception types excepted).
    for name in public:
        obj = getattr(core, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        if isinstance(obj, types.ModuleType):
            assert name in stub_modules, f"submodule {name} has no stub"
            continue
        assert name in stub_funcs or name in stub_classes or name == "__version__", f"{name} has no stub"
    assert (ROOT / "python" / "gpucomm" / "py.typed").exists()


# ---- the C++ package of an installed wheel ----

def test_cmake_dir_without_a_wheel_says_so(run_gpucomm):
    r = run_gpucomm("--cmake-dir")
    assert r.returncode == 1
    assert "only an installed wheel" in r.stderr and "Traceback" not in r.stderr
    import gpucomm
    assert Path(gpucomm.cmake_prefix_path).name == "gpucomm"
