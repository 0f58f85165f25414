"""The Python front under failures: the gpucomm.Error classes, GIL released and Ctrl-C honoured in
blocking calls, an exception leaving `with` (or the program) aborts the job at once, symmetric
arrays outlive close(), shapes and PEs are checked."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = str(Path(__file__).with_name("py_pe.py"))


def run(gpucomm_env, np: int, mode: str, env: dict[str, str] | None = None, timeout: float = 60):
    e = dict(gpucomm_env)
    e.update({"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "8M", **(env or {})})
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np), "--tag-output", "--kill-grace", "30",
                        "--", sys.executable, SCRIPT, mode], env=e, capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - start, r.stdout + r.stderr


def test_exception_in_with_aborts_the_job(core_built, gpucomm_env):
    r, took, out = run(gpucomm_env, 3, "exception-in-with")
    assert took < 10, out
    for rank in (0, 2):
        line = next((l for l in out.splitlines() if l.startswith(f"[{rank}] PY rank {rank} PeerFailureError")), "")
        assert "rank 1 aborted: ValueError: injected on rank 1" in line, out
        assert float(re.search(r"after ([\d.]+) s", line).group(1)) < 1.0, line
    assert re.search(r"gpucomm run: rank 1 (exited with code 1|failed)", out), out
    assert r.returncode == 1, out  # rank 1's status: Python's for an uncaught exception


def test_keyboard_interrupt_in_a_blocking_call(core_built, gpucomm_env):
    r, took, out = run(gpucomm_env, 2, "interrupt")
    assert "[0] PY rank 0 KeyboardInterrupt after" in out, out
    line = next(l for l in out.splitlines() if "KeyboardInterrupt after" in l)
    assert float(re.search(r"after ([\d.]+) s", line).group(1)) < 2.5, line
    assert "[1] PY rank 1 failed after" in out, out  # rank 0's interrupt aborted the job
    assert took < 15, out


def test_caught_timeout_followed_by_a_barrier_does_not_fail_the_job(core_built, gpucomm_env):
    r, took, out = run(gpucomm_env, 2, "caught-timeout-resync", env={"GPUCOMM_TIMEOUT": "30"})
    assert r.returncode == 0, out
    assert "[0] PY rank 0 caught TimeoutError" in out and "wait_until" in out, out
    for rank in (0, 1):
        assert f"[{rank}] PY rank {rank} in step again, failed=False" in out, out
    assert "aborting the job" not in out, out
    assert took < 15, out


def test_arrays_outlive_close_and_inputs_are_checked(core_built, gpucomm_env):
    r, _, out = run(gpucomm_env, 2, "arrays")
    assert r.returncode == 0, out
    assert "[1] PY rank 1 arrays ok sum 128 errors []" in out, out


def test_timeout_is_a_gpucomm_timeout_error(core_built, gpucomm_env):
    r, took, out = run(gpucomm_env, 2, "timeout-class", env={"GPUCOMM_TIMEOUT": "1"})
    assert "[0] PY rank 0 TimeoutError (True)" in out, out
    assert "[1] PY rank 1 learned of the failure after" in out, out
    assert took < 1 + 10, out


def test_abort_from_python(core_built, gpucomm_env):
    r, _, out = run(gpucomm_env, 3, "abort")
    assert "[0] PY rank 0 AbortError after abort" in out, out
    for rank in (1, 2):
        assert f"[{rank}] PY rank {rank} PeerFailureError (True)" in out, out


def test_uncaught_exception_without_with_aborts_at_exit(core_built, gpucomm_env):
    r, took, out = run(gpucomm_env, 3, "uncaught")
    assert took < 10, out
    for rank in (0, 2):
        assert re.search(rf"\[{rank}\] PY rank {rank} PeerFailureError after 0\.\d+ s: .*rank 1 aborted: uncaught "
                         r"RuntimeError: uncaught on rank 1", out), out


def test_error_classes_without_a_job():
    import gpucomm
    assert issubclass(gpucomm.TimeoutError, gpucomm.Error) and issubclass(gpucomm.TimeoutError, TimeoutError)
    assert issubclass(gpucomm.InvalidArgumentError, ValueError)
    assert issubclass(gpucomm.PeerFailureError, gpucomm.Error) and issubclass(gpucomm.AbortError, gpucomm.Error)
    assert gpucomm.errors.class_for("peer_failure") is gpucomm.PeerFailureError
    assert gpucomm.errors.class_for("cuda") is gpucomm.Error
