"""The PEs' output as ``gpucomm run`` passes it on.

Modes: ``lines`` (default) forwards whole lines, so lines of different PEs never mix; ``tagged``
does the same with a ``[rank] `` prefix; ``raw`` gives the PEs the launcher's own stdout and
stderr. In the line modes a PE's stdout is a pseudo-terminal when the launcher's stdout is a
terminal (so programs keep the line buffering they have on a terminal), a pipe otherwise; stderr
is a pipe. One thread reads every PE's streams and writes each complete line (ended by a newline
or a carriage return) under one lock; a line longer than 64 KiB is passed on in pieces.
"""
from __future__ import annotations

import dataclasses
import errno
import os
import selectors
import subprocess
import sys
import threading
import tty

MODES = ("lines", "tagged", "raw")
_MAX_PENDING = 64 << 10


@dataclasses.dataclass
class PeStreams:
    """What one PE's Popen gets for stdout and stderr, and the launcher's ends of them."""
    rank: int
    stdout: int | None = None      # fd or subprocess.PIPE; None: inherited
    stderr: int | None = None
    pty_child: int | None = None   # the PE's end of its pseudo-terminal (closed once it started)
    pty_parent: int | None = None  # the launcher's end

    def started(self) -> None:
        if self.pty_child is not None:
            os.close(self.pty_child)
            self.pty_child = None

    def close(self) -> None:
        for fd in (self.pty_child, self.pty_parent):
            if fd is not None:
                os.close(fd)
        self.pty_child = self.pty_parent = None


def pe_streams(mode: str, rank: int) -> PeStreams:
    if mode not in MODES:
        raise ValueError(f"output mode '{mode}' is not one of {', '.join(MODES)}")
    s = PeStreams(rank)
    if mode == "raw":
        return s
    s.stderr = subprocess.PIPE
    s.stdout = subprocess.PIPE
    if sys.stdout.isatty():
        try:
            parent, child = os.openpty()
        except OSError:  # no pseudo-terminals here (a container without /dev/pts): a pipe then
            return s
        tty.setraw(child)  # no newline translation, no echo: bytes pass as the PE wrote them
        s.pty_parent, s.pty_child, s.stdout = parent, child, child
    return s


class _Source:
    def __init__(self, fd: int, prefix: bytes, out):
        self.fd, self.prefix, self.out = fd, prefix, out
        self.pending = b""


def _complete_lines(src: _Source, data: bytes, flush_all: bool) -> list[bytes]:
    """The complete lines of what `src` delivered so far; keeps the unfinished rest."""
    buf = src.pending + data
    cut = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
    complete, src.pending = buf[:cut], buf[cut:]
    lines = (complete.splitlines(keepends=True) if src.prefix else [complete]) if complete else []
    if src.pending and (flush_all or len(src.pending) > _MAX_PENDING):
        lines.append(src.pending + (b"\n" if flush_all else b""))
        src.pending = b""
    return lines


def start_pump(procs: list[subprocess.Popen], streams: list[PeStreams], mode: str) -> list[threading.Thread]:
    """Starts the thread that forwards the PEs' output; returns it (empty list in raw mode)."""
    if mode == "raw":
        return []
    sources = []
    for p, s in zip(procs, streams):
        prefix = f"[{s.rank}] ".encode() if mode == "tagged" else b""
        if s.pty_parent is not None:
            sources.append(_Source(s.pty_parent, prefix, sys.stdout))
        elif p.stdout is not None:
            sources.append(_Source(p.stdout.fileno(), prefix, sys.stdout))
        if p.stderr is not None:
            sources.append(_Source(p.stderr.fileno(), prefix, sys.stderr))
    t = threading.Thread(target=_pump, args=(sources, procs, streams), daemon=True, name="gpucomm-run-output")
    t.start()
    return [t]


# One lock for everything written to the launcher's stdout and stderr: the PEs' lines and the
# launcher's own messages (write_line), so that no line is cut by another.
WRITE_LOCK = threading.Lock()


def write_line(out, text: str) -> None:
    """Writes `text` and its newline to `out` as one piece, under the launcher's output lock."""
    with WRITE_LOCK:
        try:
            out.write(text + "\n")
            out.flush()
        except (BrokenPipeError, ValueError):  # the reader went away
            pass


def _write(src: _Source, lines: list[bytes]) -> None:
    if not lines:
        return
    with WRITE_LOCK:
        try:
            for line in lines:
                src.out.buffer.write(src.prefix + line)
            src.out.flush()
        except (BrokenPipeError, ValueError):  # our reader went away: drop the PEs' output
            pass


def _pump(sources: list[_Source], procs: list[subprocess.Popen], streams: list[PeStreams]) -> None:
    sel = selectors.DefaultSelector()
    for src in sources:
        sel.register(src.fd, selectors.EVENT_READ, src)
    try:
        while sel.get_map():
            for key, _ in sel.select():
                src = key.data
                try:
                    data = os.read(src.fd, 65536)
                except OSError as exc:  # EIO: every holder of the pseudo-terminal's other end closed it
                    if exc.errno != errno.EIO:
                        raise
                    data = b""
                if data:
                    _write(src, _complete_lines(src, data, flush_all=False))
                else:
                    _write(src, _complete_lines(src, b"", flush_all=True))
                    sel.unregister(src.fd)
    finally:
        sel.close()
        for p in procs:
            for f in (p.stdout, p.stderr):
                if f is not None:
                    f.close()
        for s in streams:
            s.close()
