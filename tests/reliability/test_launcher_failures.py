"""`gpucomm run`'s failure semantics with plain programs (no gpucomm inside): the first failure in
time is named and its status is the exit code (as the help says), a stopped PE is killed at once,
every PE gets a lifeline."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest


def run(gpucomm_env, *args, timeout: float = 60):
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", *args], env=gpucomm_env, capture_output=True,
                       text=True, timeout=timeout)
    return r, time.monotonic() - start


def test_first_failure_in_time_is_named(gpucomm_env):
    # Rank 2 is killed; a moment later the others fail with code 3 (as PEs do after a death).
    prog = 'sleep 0.5; if [ "$GPUCOMM_RANK" = 2 ]; then kill -9 $$; fi; sleep 0.3; exit 3'
    r, _ = run(gpucomm_env, "-n", "4", "--", "sh", "-c", prog)
    assert "gpucomm run: rank 2 was killed by SIGKILL" in r.stderr, r.stderr
    assert r.returncode == 128 + 9


@pytest.mark.parametrize("prog,code", [
    ('exit $((GPUCOMM_RANK == 1 ? 7 : 0))', 7),
    ('if [ "$GPUCOMM_RANK" = 1 ]; then kill -TERM $$; fi; sleep 2', 128 + 15),
    ('sleep 0.2; exit $((GPUCOMM_RANK + 4))', None),  # several fail: the first in time, whichever it is
])
def test_exit_code_is_the_first_failures(gpucomm_env, prog, code):
    r, _ = run(gpucomm_env, "-n", "3", "--", "sh", "-c", prog)
    if code is None:
        named = int(r.stderr.split("gpucomm run: rank ")[1].split()[0])
        assert r.returncode == named + 4, r.stderr
    else:
        assert r.returncode == code, r.stderr


def test_help_states_the_exit_codes(gpucomm_env):
    r, _ = run(gpucomm_env, "--help")
    text = " ".join(r.stdout.split())
    for phrase in ("the PE that failed first", "128+N when signal N killed it", "124 when --timeout",
                   "128+N when gpucomm run received signal N", "0 when every PE succeeded"):
        assert phrase in text, text


def test_timeout_exit_code(gpucomm_env):
    r, took = run(gpucomm_env, "-n", "2", "--timeout", "0.5", "--kill-grace", "0.2", "--", "sleep", "30")
    assert r.returncode == 124 and took < 10


def test_stopped_pe_is_killed_at_once(gpucomm_env):
    prog = 'if [ "$GPUCOMM_RANK" = 1 ]; then kill -STOP $$; fi; sleep 0.3; exit 2'
    r, took = run(gpucomm_env, "-n", "2", "--kill-grace", "60", "--", "sh", "-c", prog)
    assert r.returncode == 2, r.stderr
    assert "rank 1 is stopped" in r.stderr, r.stderr
    assert took < 5, f"took {took:.1f} s"


def test_every_pe_has_a_lifeline_to_the_launcher(gpucomm_env):
    r, _ = run(gpucomm_env, "-n", "2", "--tag-output", "--", "sh", "-c", 'echo "LIFELINE $GPUCOMM_LIFELINE $PPID"')
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        line = next(l for l in r.stdout.splitlines() if l.startswith(f"[{rank}] LIFELINE"))
        _, _, spec, parent = line.split()
        fd, pid = spec.split(":")
        assert pid == parent and int(fd) > 2, line  # the launcher (the PE's parent) holds the other end
