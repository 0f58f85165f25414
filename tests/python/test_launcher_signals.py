"""`gpucomm run` stopped from outside: Ctrl-C, SIGTERM, SIGKILL. The job's message says what happened, and
no process of the job outlives it, not even one behind a wrapper (`sh -c ...`)."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

import pytest


def processes_with(marker: str, exclude: set[int]) -> list[int]:
    """Pids of the processes whose command line contains `marker` (the PEs and what they started)."""
    found = []
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) in exclude:
            continue
        try:
            with open(f"/proc/{e}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # A launcher's child between fork and exec still has the launcher's command line: not a PE yet.
        zombie = stat[stat.rfind(b")") + 2:][:1] == b"Z"
        if marker.encode() in cmdline and b"-m\0gpucomm\0run" not in cmdline and not zombie:
            found.append(int(e))
    return found


def wait_for(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def kill_leftovers(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Job:
    """`gpucomm run -n N -- PROGRAM...` in its own session (a signal to it reaches the launcher only)."""

    def __init__(self, gpucomm_env, n: int, program: list[str], marker: str, *options: str):
        self.marker = marker
        self.proc = subprocess.Popen([sys.executable, "-m", "gpucomm", "run", "-n", str(n), *options, "--",
                                      *program], env=gpucomm_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def ours(self) -> list[int]:
        return processes_with(self.marker, {self.proc.pid, os.getpid()})

    def wait_ready(self, count: int) -> None:
        """Until `count` PEs printed `ready` (a signal before that would hit the PEs' start)."""
        ready = 0
        while ready < count:
            line = self.proc.stdout.readline()
            assert line, f"the PEs did not start: {self.proc.stderr.read() if self.proc.poll() is not None else ''}"
            ready += line.strip() == "ready"

    def finish(self) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


def sleeping_python(marker: str, on_sigint: str = "SIG_DFL") -> list[str]:
    return [sys.executable, "-c", f"import signal, time; signal.signal(signal.SIGINT, signal.{on_sigint}); "
                                  "print('ready', flush=True); time.sleep(60)", marker]


@pytest.mark.parametrize("on_sigint", ["SIG_DFL", "SIG_IGN"])
def test_ctrl_c_is_reported_as_the_users_interrupt(gpucomm_env, on_sigint):
    marker = f"gpucomm-test-{secrets.token_hex(6)}"
    job = Job(gpucomm_env, 2, sleeping_python(marker, on_sigint), marker, "--kill-grace", "1")
    try:
        job.wait_ready(2)
        os.kill(job.proc.pid, signal.SIGINT)
        code, err = job.finish()
        assert code == 130, err
        assert "gpucomm run: interrupted by the user (SIGINT); stopping 2 PE(s)" in err, err
        assert "aborted" not in err and "Traceback" not in err and "rank 0" not in err, err
        assert wait_for(lambda: not job.ours(), 5), f"PEs left after Ctrl-C: {job.ours()}"
    finally:
        kill_leftovers(job.ours())
        if job.proc.poll() is None:
            job.proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_no_process_outlives_a_killed_launcher_behind_a_wrapper(gpucomm_env, sig):
    # `sh -c` forks `sleep` (the `; true` keeps sh from exec'ing it): the PE's child, not the launcher's.
    # The marker is in sh's arguments and in sleep's (the seconds' fraction).
    marker = f"60.{secrets.randbelow(10**12):012d}"
    job = Job(gpucomm_env, 2, ["sh", "-c", 'echo ready; sleep "$1"; true', "sh", marker], marker)
    try:
        job.wait_ready(2)
        assert wait_for(lambda: len(job.ours()) >= 4, 10), f"expected 2 sh and 2 sleep: {job.ours()}"
        os.kill(job.proc.pid, sig)
        job.finish()
        assert wait_for(lambda: not job.ours(), 5), f"processes left after {sig.name}: {job.ours()}"
    finally:
        kill_leftovers(job.ours())
        if job.proc.poll() is None:
            job.proc.kill()


def test_ctrl_c_of_gpucomm_pes_names_no_rank(gpucomm_env, pe_program):
    # Rank 0 waits for a signal nobody sends, the others wait in a barrier: a PE that sees another
    # die of the forwarded SIGINT reports a failure, which must not be taken for the job's cause.
    env = {**gpucomm_env, "GPUCOMM_DEVICE": "host", "GPUCOMM_TIMEOUT": "60"}
    marker = "wait-timeout"
    job = Job(env, 4, [pe_program, marker], marker, "--kill-grace", "1")
    try:
        time.sleep(1.0)  # bootstrap done, the PEs waiting
        os.kill(job.proc.pid, signal.SIGINT)
        code, err = job.finish()
        launcher_lines = [l for l in err.splitlines() if l.startswith("gpucomm run:")]
        assert code == 130, err
        assert launcher_lines == ["gpucomm run: interrupted by the user (SIGINT); stopping 4 PE(s)"], err
    finally:
        if job.proc.poll() is None:
            job.proc.kill()
