"""Fault injection cases on host-memory PEs, shared by ``gpucomm bench faults`` and the
reliability tests (tests/reliability).

Each case starts a job of ``gpucomm-fault-pe`` under ``gpucomm run``, injects one fault (or one
kind of hostile input), waits for the job to end and returns a result dict: whether the job
handled it (ended, named the right PE, its PEs reported what they should), how long it took from
the fault to the job's end, and the case's counts. Times use CLOCK_MONOTONIC, the clock of the
PEs' "FAULT ... at NS" lines.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

from gpucomm._tools import find_tool

TARGET_S = 1.0  # the whole job ends within 1 s of the first PE's error (of its timeout, stalled)


def _now() -> int:
    return time.monotonic_ns()


def _package_root() -> str:
    """The folder this gpucomm package was imported from, for the launchers this module starts."""
    import gpucomm
    root = os.path.dirname(os.path.dirname(os.path.abspath(gpucomm.__file__)))
    return os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


class Job:
    """A ``gpucomm run`` job whose output lines are collected (with arrival times) as they come."""

    def __init__(self, np: int, args: list[str], env: dict[str, str] | None = None,
                 launch_args: tuple[str, ...] = (), wrapper: list[str] | None = None, kill_grace: float = 5.0):
        cmd = [sys.executable, "-m", "gpucomm", "run", "-n", str(np), "--tag-output", "--kill-grace",
               str(kill_grace), *launch_args, "--"]
        pe = [str(find_tool("gpucomm-fault-pe")), *args]
        # A wrapper runs the PE as a grandchild of the launcher: sh -c 'PE ARGS; true'.
        cmd += wrapper + [" ".join(pe) + "; true"] if wrapper else pe
        e = {k: v for k, v in os.environ.items() if not k.startswith("GPUCOMM_") or k == "GPUCOMM_BIN_DIR"}
        e.update({"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "8M", "PYTHONPATH": _package_root()})
        e.update(env or {})
        self.np = np
        self.started = _now()
        self.proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: list[tuple[int, str]] = []  # (arrival ns, line), stdout and stderr
        self.ended: int | None = None
        self._cv = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(s,), daemon=True)
                         for s in (self.proc.stdout, self.proc.stderr)]
        for t in self._readers:
            t.start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _read(self, stream) -> None:
        for line in iter(stream.readline, ""):
            with self._cv:
                self.lines.append((_now(), line.rstrip("\n")))
                self._cv.notify_all()

    def _reap(self) -> None:
        self.proc.wait()
        with self._cv:
            self.ended = _now()
            self._cv.notify_all()

    def wait_lines(self, pattern: str, count: int, timeout: float) -> list[str]:
        """Waits until `count` lines match `pattern` (a regex searched in each line)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                found = [l for _, l in self.lines if rx.search(l)]
                if len(found) >= count or self.ended is not None or time.monotonic() > deadline:
                    return found
                self._cv.wait(0.05)

    def wait(self, timeout: float) -> bool:
        """Waits for the launcher to exit; on timeout kills the job and returns False."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return False
        for t in self._readers:
            t.join(timeout=5)
        with self._cv:
            while self.ended is None:
                self._cv.wait(0.05)
        return True

    def text(self) -> str:
        return "\n".join(l for _, l in self.lines)

    def pids(self) -> dict[int, int]:
        out = {}
        for _, l in self.lines:
            m = re.search(r"READY rank (\d+) pid (\d+)", l)
            if m:
                out[int(m.group(1))] = int(m.group(2))
        return out

    def fault_ns(self) -> int | None:
        for _, l in self.lines:
            m = re.search(r"FAULT rank \d+ at (\d+)", l)
            if m:
                return int(m.group(1))
        return None

    def named_first(self) -> int | None:
        """The rank gpucomm run named as failing first."""
        m = re.search(r"gpucomm run: rank (\d+) (exited|was killed|failed)", self.text())
        return int(m.group(1)) if m else None

    def errors_naming(self, rank: int, survivors: list[int]) -> list[int]:
        """The survivors whose error line names `rank` (as 'rank R' or 'PE R')."""
        good = []
        for s in survivors:
            line = next((l for _, l in self.lines if re.match(rf"\[{s}\] PE ERROR", l)), "")
            if re.search(rf"\b(rank|PE) {rank}\b", line):
                good.append(s)
        return good


def _result(case: str, np: int, victim: int | None, job: Job, fault_ns: int | None, ok: bool, target: float,
            **extra) -> dict:
    elapsed = (job.ended - fault_ns) / 1e9 if fault_ns and job.ended else None
    return {"case": case, "np": np, "victim": victim, "handled": bool(ok), "time_to_fail_s": elapsed,
            "target_s": target, "meets_target": elapsed is not None and elapsed <= target,
            "exit_code": job.proc.returncode, "named_first": job.named_first(), **extra,
            "output": job.text() if not ok else ""}


def _bound(timeout: float = 0.0) -> float:
    """How long a case may take before it counts as hung (generous: CI machines are shared)."""
    return timeout + 30.0


# ---- faults that end the job ----

def kill(np: int, victim: int) -> dict:
    """SIGKILL one PE of a running job."""
    job = Job(np, ["loop"])
    job.wait_lines(r"READY rank", np, _bound())
    pid = job.pids().get(victim)
    t0 = _now()
    if pid:
        os.kill(pid, signal.SIGKILL)
    ended = job.wait(_bound())
    survivors = [r for r in range(np) if r != victim]
    ok = ended and pid is not None and job.named_first() == victim and job.proc.returncode == 128 + 9 and \
        job.errors_naming(victim, survivors) == survivors
    return _result("kill" if victim else "kill-rank0", np, victim, job, t0, ok, TARGET_S)


def stop(np: int, victim: int, timeout_s: float = 2.0) -> dict:
    """SIGSTOP one PE: the others time out, abort, and the launcher kills the stopped PE."""
    job = Job(np, ["loop"], env={"GPUCOMM_TIMEOUT": str(timeout_s)})
    job.wait_lines(r"READY rank", np, _bound())
    pid = job.pids().get(victim)
    t0 = _now()
    if pid:
        os.kill(pid, signal.SIGSTOP)
    ended = job.wait(_bound(timeout_s))
    text = job.text()
    ok = ended and pid is not None and job.proc.returncode not in (0, None) and \
        f"rank {victim} is stopped" in text and "timed out" in text
    r = _result("stop", np, victim, job, t0, ok, timeout_s + TARGET_S, gpucomm_timeout_s=timeout_s)
    if r["time_to_fail_s"] is not None:
        r["after_timeout_s"] = r["time_to_fail_s"] - timeout_s
    return r


def self_inflicted(scenario: str, np: int, victim: int) -> dict:
    """A fault the victim injects itself: exception, abort, bad-env-heap, bad-env-timeout,
    caught-timeout (its own wait times out, it catches the error and closes its runtime),
    coll-raise (its check inside an alltoallv raises while the others wait for its data)."""
    job = Job(np, [scenario, str(victim)], env={"GPUCOMM_TIMEOUT": "30"})
    ended = job.wait(_bound(30))
    survivors = [r for r in range(np) if r != victim]
    ok = ended and job.named_first() == victim and job.proc.returncode not in (0, None) and \
        job.errors_naming(victim, survivors) == survivors
    return _result(scenario, np, victim, job, job.fault_ns(), ok, TARGET_S)


def launcher_killed(np: int) -> dict:
    """SIGKILL ``gpucomm run`` itself while its PEs run behind a wrapper (sh -c 'PE; true'): the
    PEs are not its children, only their lifeline tells them."""
    job = Job(np, ["loop"], wrapper=["sh", "-c"], kill_grace=5.0)
    job.wait_lines(r"READY rank", np, _bound())
    pids = list(job.pids().values())
    t0 = _now()
    os.kill(job.proc.pid, signal.SIGKILL)
    job.proc.wait()
    deadline = time.monotonic() + _bound()
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") and _alive(p) for p in pids):
        time.sleep(0.005)
    gone = _now()
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    elapsed = (gone - t0) / 1e9
    return {"case": "launcher-killed", "np": np, "victim": None, "handled": len(pids) == np and not left,
            "time_to_fail_s": elapsed, "target_s": TARGET_S, "meets_target": elapsed <= TARGET_S and not left,
            "exit_code": None, "named_first": None, "output": "" if not left else job.text()}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---- checks that ship ----

def checks(scenario: str, np: int, victim: int | None = None, env: dict[str, str] | None = None) -> dict:
    """bad-input, heap-mismatch, alloc-mismatch, dead-put, barrier-blame, cloexec: every PE that
    is not the victim must pass its checks."""
    args = [scenario] + ([str(victim)] if victim is not None else [])
    job = Job(np, args, env={"GPUCOMM_TIMEOUT": "30", **(env or {})})
    ended = job.wait(_bound(30))
    text = job.text()
    survivors = [r for r in range(np) if r != victim] if scenario in ("dead-put", "barrier-blame") else list(range(np))
    if scenario == "barrier-blame":
        ok = ended and f"stalled: rank(s) {victim} did not enter the barrier" in text
    else:
        ok = ended and all(re.search(rf"^\[{r}\] PE OK rank {r}$", text, re.M) for r in survivors)
    tried = sum(int(m) for m in re.findall(r"bad_inputs_tried=(\d+)", text))
    refused = sum(int(m) for m in re.findall(r"bad_inputs_tried=\d+ refused=(\d+)", text))
    # A stalled PE is noticed by the others' timeout: the target counts from it.
    waited = float((env or {}).get("GPUCOMM_TIMEOUT", 0)) if scenario == "barrier-blame" else 0.0
    r = _result(scenario, np, victim, job, job.fault_ns(), ok, waited + TARGET_S, bad_inputs_tried=tried,
                bad_inputs_refused=refused)
    if waited and r["time_to_fail_s"] is not None:
        r["after_timeout_s"] = r["time_to_fail_s"] - waited
    return r


def soak(np: int, seconds: int) -> dict:
    job = Job(np, ["soak", "-", str(seconds)])
    ended = job.wait(_bound(seconds))
    text = job.text()
    counts = {k: sum(int(v) for v in re.findall(rf"{k}=(\d+)", text)) for k in ("messages", "increments", "lost",
                                                                                "corrupted")}
    ok = ended and job.proc.returncode == 0 and counts["lost"] == 0 and \
        len(re.findall(r"RESULT rank", text)) == np
    r = _result("soak", np, None, job, None, ok, 0.0, seconds=seconds, **counts)
    r["meets_target"] = ok
    return r


# ---- hostile clients ----

def _as_user(user: str) -> list[str]:
    """The command prefix that runs a program as `user` ("self" or "nobody")."""
    if user == "self":
        return []
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def can_switch_user() -> bool:
    return os.geteuid() == 0 and any(os.access(os.path.join(d, "setpriv"), os.X_OK)
                                     for d in os.environ.get("PATH", "/usr/bin").split(os.pathsep))


def hostile_store(user: str = "self", idle: int = 200) -> dict:
    """Foreign clients against the store of a running job; the job must go on and finish."""
    job = Job(2, ["loop", "-", "0"], env={"GPUCOMM_TIMEOUT": "60"})
    job.wait_lines(r"READY rank", 2, _bound())
    m = re.search(r"store (\S+)", " ".join(job.wait_lines(r"READY rank 0", 1, 5)))
    report = {}
    if m:
        r = subprocess.run(_as_user(user) + [str(find_tool("gpucomm-hostile-client")), "store", m.group(1), str(idle)],
                           capture_output=True, text=True, timeout=120)
        report = _json_line(r.stdout)
    os.killpg(job.proc.pid, signal.SIGTERM)  # the loop has no end: stop it like a user would
    job.wait(_bound())
    ok = bool(report) and report.get("let_through", 1) == 0 and report.get("idle_closed_within_5s", 0) >= \
        report.get("idle", 0) - 64
    return {"case": f"hostile-store-{user}", "np": 2, "victim": None, "handled": ok, "time_to_fail_s": None,
            "target_s": None, "meets_target": ok, "exit_code": job.proc.returncode, "named_first": None,
            "hostile_clients_tried": report.get("tried", 0), "let_through": report.get("let_through"),
            "report": report, "output": "" if ok else job.text()}


def hostile_fdx(user: str = "self", starts: int = 8) -> dict:
    """A foreign client hunting for fd-exchange sockets while jobs start; every start must
    succeed and the client must receive no descriptor."""
    seconds = 4 + 2 * starts
    attacker = subprocess.Popen(_as_user(user) + [str(find_tool("gpucomm-hostile-client")), "fdx", str(seconds)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    ok_starts = 0
    failures = []
    for _ in range(starts):
        job = Job(2, ["loop", "-", "3"])
        if job.wait(_bound()) and job.proc.returncode == 0:
            ok_starts += 1
        else:
            failures.append(job.text())
    out, _ = attacker.communicate(timeout=seconds + 60)
    report = _json_line(out)
    ok = ok_starts == starts and bool(report) and report.get("fds_received", 1) == 0
    return {"case": f"hostile-fdx-{user}", "np": 2, "victim": None, "handled": ok, "time_to_fail_s": None,
            "target_s": None, "meets_target": ok, "exit_code": None, "named_first": None,
            "job_starts": starts, "job_starts_ok": ok_starts, "hostile_clients_tried": report.get("tried", 0),
            "fds_received": report.get("fds_received"), "report": report, "output": "\n".join(failures[:1])}


def _json_line(text: str) -> dict:
    import json
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return {}
