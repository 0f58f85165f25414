"""Watching the PEs of a ``gpucomm run`` job: the launcher's failure semantics.

Every PE has a lifeline, a Unix socket pair whose other end the PE inherits
(``GPUCOMM_LIFELINE=FD:PID``): when the launcher dies, even by SIGKILL and with a wrapper
between it and the PE, the PE sees EOF and its job fails. Over the lifeline the PE reports the
first failure it learns of (``failed RANK TEXT``: the store's verdict or its own abort), and the
launcher relays a failure it saw to every PE (``abort RANK TEXT``), so that a PE that died before it
could tell the store, or a store that cannot speak (its rank stopped), still ends the job at once.

The supervisor reacts to events as they come (a PE's exit through its pidfd, a report on its
lifeline), names the PE that failed first (the one the PEs' reports name, else the first
non-zero exit in time), gives the others ``kill_grace`` seconds to exit by themselves (a stopped
PE cannot: it is killed at once), then stops them. The exit code is the first failing PE's
status: its code, or 128+N when signal N killed it; 124 when ``--timeout`` stopped the job; 128+N
when the launcher itself received signal N; 0 when every PE succeeded.
"""
from __future__ import annotations

import dataclasses
import os
import select
import signal
import socket
import subprocess
import sys
import time

from .output import write_line

# How long the launcher leaves the store to tell the PEs of a failure before relaying it itself:
# the store's message is the more precise one (an abort's reason), the relay the safety net.
RELAY_DELAY_S = 0.1
# After SIGTERM, the PEs' groups get this long before SIGKILL.
TERM_GRACE_S = 2.0


def log(msg: str) -> None:
    # Under the output lock: a PE's line relayed at the same moment never lands inside this one.
    write_line(sys.stderr, f"gpucomm run: {msg}")


def describe_status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def exit_code(status: int) -> int:
    """A process's status as a shell reports it: the code, or 128+N for signal N."""
    return 128 - status if status < 0 else status


@dataclasses.dataclass
class Pe:
    rank: int
    proc: subprocess.Popen
    lifeline: socket.socket | None = None  # the launcher's end
    pidfd: int = -1
    inbox: bytes = b""
    exited_at: float | None = None


@dataclasses.dataclass
class Failure:
    rank: int          # the PE named as failing first (-1: none, e.g. --timeout)
    text: str          # what happened, for the relay and the report
    code: int | None   # the launcher's exit code when known now (timeout, signal)
    at: float


def make_lifeline() -> tuple[socket.socket, socket.socket]:
    """(launcher's end, PE's end); only the PE's end is inheritable."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    theirs.set_inheritable(True)
    return ours, theirs


def signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# The watchdog: a small process in its own session that learns every PE's process group (one pid
# a line on its stdin, written by each PE between fork and exec). When its stdin reaches EOF without
# "end" (the launcher died, even by SIGKILL, before it could stop the PEs), it kills those groups:
# PDEATHSIG reaches only a PE's own process, not what it started behind a wrapper (`sh -c ...`).
_WATCHDOG = """
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
groups, buf = set(), b""
while True:
    data = os.read(0, 4096)
    if not data:
        break
    buf += data
    *lines, buf = buf.split(b"\\n")
    for line in lines:
        if line == b"end":
            sys.exit(0)
        if line.isdigit():
            groups.add(int(line))
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
"""


class Watchdog:
    """Kills the PEs' process groups if the launcher dies without doing it (see _WATCHDOG)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.fd = -1
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG], stdin=subprocess.PIPE,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            self.fd = self.proc.stdin.fileno()
        except OSError as exc:  # e.g. an embedded interpreter without sys.executable: PDEATHSIG alone
            log(f"warning: no watchdog ({exc}); a PE's children may outlive a killed launcher")

    def register_self(self) -> None:
        """In a PE between fork and exec: its pid is its process group's id (start_new_session)."""
        if self.fd < 0:
            return
        try:
            os.write(self.fd, b"%d\n" % os.getpid())
        except OSError:
            pass

    def close(self, stopped: bool) -> None:
        """`stopped`: the launcher stopped every PE's group itself; else the watchdog kills them."""
        if self.proc is None:
            return
        try:
            if stopped:
                os.write(self.fd, b"end\n")
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def stopped_groups(pgids: set[int]) -> set[int]:
    """Those of `pgids` with a process stopped by a signal (state T): it cannot exit by itself.

    A traced process (state t) is left to its tracer: a debugger, or LeakSanitizer, which stops the
    threads of a process that exits to scan its memory and then lets it go."""
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] == b"T" and int(fields[2]) in pgids:
            found.add(int(fields[2]))
    return found


class Supervisor:
    def __init__(self, pes: list[Pe], kill_grace: float, timeout: float):
        self.pes = pes
        self.kill_grace = kill_grace
        self.timeout = timeout
        self.start = time.monotonic()
        self.reports: list[tuple[int, str]] = []  # (failed rank, text), in arrival order
        self.failure: Failure | None = None
        self.relayed = False
        self.term_sent_at: float | None = None
        self.killed: set[int] = set()  # ranks the launcher stopped
        self.signals: list[int] = []
        self.running_at_signal = 0  # PEs running when the first signal came
        self.poller = select.poll()
        self.by_fd: dict[int, tuple[str, Pe]] = {}
        for pe in pes:
            try:
                pe.pidfd = os.pidfd_open(pe.proc.pid)
                self.watch(pe.pidfd, "exit", pe)
            except (AttributeError, OSError):
                pe.pidfd = -1  # no pidfd: exits are found by the 20 ms sweep
            if pe.lifeline is not None:
                self.watch(pe.lifeline.fileno(), "line", pe)

    def watch(self, fd: int, kind: str, pe: Pe) -> None:
        self.poller.register(fd, select.POLLIN)
        self.by_fd[fd] = (kind, pe)

    def unwatch(self, fd: int) -> None:
        if fd in self.by_fd:
            self.poller.unregister(fd)
            del self.by_fd[fd]

    # ---- events ----
    def read_lines(self, pe: Pe) -> None:
        assert pe.lifeline is not None
        try:
            data = pe.lifeline.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.unwatch(pe.lifeline.fileno())
            return
        pe.inbox += data
        while b"\n" in pe.inbox:
            line, pe.inbox = pe.inbox.split(b"\n", 1)
            parts = line.decode(errors="replace").split(" ", 2)
            if len(parts) == 3 and parts[0] == "failed":
                try:
                    self.reports.append((int(parts[1]), parts[2]))
                except ValueError:
                    pass
        pe.inbox = pe.inbox[-65536:]

    def sweep_exits(self, now: float) -> None:
        for pe in self.pes:
            if pe.exited_at is None and pe.proc.poll() is not None:
                pe.exited_at = now
                if pe.pidfd >= 0:
                    self.unwatch(pe.pidfd)
                    os.close(pe.pidfd)
                    pe.pidfd = -1

    def running(self) -> list[Pe]:
        return [pe for pe in self.pes if pe.exited_at is None]

    # ---- decisions ----
    def notice_failure(self, now: float) -> None:
        """Names the PE that failed first, once the job failed: the one the PEs' reports name (the
        store's verdict), else the first PE that exited with a failure."""
        if self.failure is not None:
            return
        reported = [(r, t) for r, t in self.reports if 0 <= r < len(self.pes)]
        if reported:
            self.failure = Failure(reported[0][0], reported[0][1], None, now)
        else:
            failed = [pe for pe in self.pes if pe.exited_at is not None and pe.proc.returncode != 0
                      and pe.rank not in self.killed]
            if not failed:
                return
            first = min(failed, key=lambda pe: (pe.exited_at, pe.rank))
            self.failure = Failure(first.rank, f"rank {first.rank} {describe_status(first.proc.returncode)} "
                                               "(reported by gpucomm run)", None, now)
        pe = self.pes[self.failure.rank]
        what = f"rank {pe.rank} {describe_status(pe.proc.returncode)}" if pe.exited_at is not None \
            else f"rank {pe.rank} failed"
        if reported:
            what += f" ({self.failure.text})"
        running = self.running()
        others = sum(1 for p in running if p.rank != pe.rank)
        if running:
            # A PE that reported its failure may still be running (its teardown): it gets the grace too.
            who = f"the other {others} PE(s)" + (" and rank " + str(pe.rank) if others < len(running) else "")
            log(f"{what}; {who} get {self.kill_grace:g} s to exit before they are stopped")
        else:
            log(what)

    def relay(self, now: float) -> None:
        """Tells the PEs still running which PE failed (the store may not have been able to)."""
        if self.failure is None or self.relayed or self.failure.rank < 0 or now < self.failure.at + RELAY_DELAY_S:
            return
        self.relayed = True
        line = f"abort {self.failure.rank} {self.failure.text}".replace("\n", " ") + "\n"
        for pe in self.running():
            if pe.lifeline is None:
                continue
            try:
                pe.lifeline.send(line.encode(), socket.MSG_DONTWAIT)
            except OSError:
                pass

    def stop_stragglers(self, now: float) -> None:
        """Once the job failed or must stop: stopped PEs at once, the others after the grace."""
        stop_since = self.failure.at if self.failure is not None else None
        if stop_since is None:
            return
        running = self.running()
        if not running:
            return
        groups = {pe.proc.pid: pe for pe in running}
        for pgid in stopped_groups(set(groups)):
            pe = groups[pgid]
            if pe.rank not in self.killed:
                log(f"rank {pe.rank} is stopped (it cannot exit by itself); killing it")
            self.killed.add(pe.rank)
            signal_group(pe.proc, signal.SIGKILL)
        if now - stop_since < self.kill_grace:
            return
        if self.term_sent_at is None:
            self.term_sent_at = now
            for pe in running:
                self.killed.add(pe.rank)
                signal_group(pe.proc, signal.SIGTERM)
                signal_group(pe.proc, signal.SIGCONT)  # a stopped process acts on SIGTERM only when continued
        elif now - self.term_sent_at >= TERM_GRACE_S:
            for pe in running:
                signal_group(pe.proc, signal.SIGKILL)

    def on_signal(self, signum, _frame) -> None:
        self.signals.append(signum)
        if len(self.signals) == 1:
            self.running_at_signal = len(self.running())
        # The first signal is passed on (a PE may clean up); a second one stops the job at once.
        sig = signum if len(self.signals) == 1 else signal.SIGKILL
        for pe in self.running():
            signal_group(pe.proc, sig)

    # ---- the loop ----
    def run(self) -> int:
        old = {s: signal.signal(s, self.on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            while True:
                try:
                    events = self.poller.poll(20)
                except InterruptedError:
                    events = []
                now = time.monotonic()
                # Reports before exits: a PE writes its report before it exits.
                for fd, _ in sorted(events, key=lambda e: self.by_fd.get(e[0], ("", None))[0] != "line"):
                    kind, pe = self.by_fd.get(fd, ("", None))
                    if kind == "line":
                        self.read_lines(pe)
                self.sweep_exits(now)
                # Before the exits are judged: PEs that the forwarded signal ended did not fail.
                if self.signals and self.failure is None:
                    sig = self.signals[0]
                    name = signal.Signals(sig).name
                    why = f"interrupted by the user ({name})" if sig == signal.SIGINT else f"received {name}"
                    # Not a PE's failure: what the PEs report or how they exit from here on is not news.
                    log(f"{why}; stopping {self.running_at_signal} PE(s)")
                    self.failure = Failure(-1, f"gpucomm run {why}", 128 + sig, now)
                if not self.running():
                    self.notice_failure(now)
                    break
                if self.timeout > 0 and now - self.start > self.timeout and self.failure is None:
                    ranks = [pe.rank for pe in self.running()]
                    log(f"job ran past --timeout {self.timeout:g} s; stopping {len(ranks)} PE(s): ranks {ranks}")
                    self.failure = Failure(-1, "the job ran past --timeout", 124, now - self.kill_grace)
                self.notice_failure(now)
                self.relay(now)
                self.stop_stragglers(now)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            for pe in self.pes:  # descendants the PEs left behind in their groups
                signal_group(pe.proc, signal.SIGKILL)
                if pe.pidfd >= 0:
                    os.close(pe.pidfd)
                if pe.lifeline is not None:
                    pe.lifeline.close()
        return self.result()

    def result(self) -> int:
        if self.failure is None:
            return 0
        if self.failure.code is not None:
            return self.failure.code
        rank = self.failure.rank
        if 0 <= rank < len(self.pes) and self.pes[rank].proc.returncode not in (None, 0):
            return exit_code(self.pes[rank].proc.returncode)
        # The PE named first exited cleanly or was stopped by the launcher: the first other failure.
        failed = [pe for pe in self.pes if pe.proc.returncode not in (None, 0)]
        if failed:
            return exit_code(min(failed, key=lambda pe: (pe.exited_at or 0, pe.rank)).proc.returncode)
        return 1
