"""The local launcher behind ``gpucomm run``.

It starts N PEs of one program on this host, hands each its rank and the job's unique id (rank 0
inherits the store's listening socket, so the port cannot be taken in between) and a lifeline,
assigns GPUs round robin, optionally prefixes output lines with the rank, forwards
SIGINT/SIGTERM, and, when one PE fails, names it, tells the others and gives them a grace period
to exit on their own before stopping them (supervisor.py): no orphaned process, no hang.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import threading

from .supervisor import Pe, Supervisor, log, make_lifeline, signal_group


@dataclasses.dataclass
class LaunchOptions:
    nprocs: int
    command: list[str]
    tag_output: bool = False
    gpus: str = "auto"            # "auto", "none", or a comma list of device indices
    kill_grace: float = 5.0       # seconds the other PEs get to exit after one failed
    timeout: float = 0.0          # whole-job limit in seconds, 0 = none
    bind: str = "127.0.0.1"
    extra_env: dict[str, str] = dataclasses.field(default_factory=dict)
    verbose: bool = False


def _die_with_parent() -> None:
    # Runs in the child before exec: if the launcher dies (even by SIGKILL), the child gets
    # SIGKILL. PEs behind a wrapper are not its children: their lifeline covers them.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _device_list(spec: str) -> list[int]:
    if spec == "none":
        return []
    if spec == "auto":
        from .gpus import visible_gpu_count
        return list(range(visible_gpu_count()))
    try:
        return [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--gpus: '{spec}' is not auto, none or a comma-separated list of GPU indices") from None


def _pump(streams: list[tuple[object, int, object]]) -> None:
    """Copies the PEs' output lines, prefixed with "[rank] ", in the order they arrive: one thread
    waits on every pipe, so a line written a millisecond before another is printed before it (the
    first PE to fail prints its error first)."""
    sel = selectors.DefaultSelector()
    partial: dict[int, bytes] = {}
    for stream, rank, out in streams:
        sel.register(stream, selectors.EVENT_READ, (rank, out))
        partial[stream.fileno()] = b""
    while sel.get_map():
        for key, _ in sel.select():
            rank, out = key.data
            fd = key.fileobj.fileno()
            data = os.read(fd, 65536)
            if not data:  # EOF: flush a last line without its newline
                sel.unregister(key.fileobj)
                key.fileobj.close()
                data = b"\n" if partial[fd] else b""
            lines = (partial[fd] + data).split(b"\n")
            partial[fd] = lines.pop()
            if lines:
                out.buffer.write(b"".join(f"[{rank}] ".encode() + line + b"\n" for line in lines))
                out.flush()


def launch(opts: LaunchOptions) -> int:
    if opts.nprocs < 1:
        raise ValueError(f"-n: the number of PEs must be at least 1, got {opts.nprocs}")
    if not opts.command:
        raise ValueError("no program given: gpucomm run -n N [--] PROGRAM [ARGS...]")
    devices = _device_list(opts.gpus)

    listener = socket.create_server((opts.bind, 0), backlog=max(128, opts.nprocs * 2))
    port = listener.getsockname()[1]
    host = listener.getsockname()[0]
    host_text = f"[{host}]" if ":" in host else host
    unique_id = f"gpucomm1:{host_text}:{port}:{secrets.token_hex(16)}"
    if opts.verbose:
        mode = f"GPUs {devices}" if devices else "host-memory PEs (no GPU assigned)"
        log(f"{opts.nprocs} PEs, store at {host_text}:{port}, {mode}")

    pes: list[Pe] = []
    try:
        for rank in range(opts.nprocs):
            env = dict(os.environ)
            env.update(opts.extra_env)
            ours, theirs = make_lifeline()
            env.update({"GPUCOMM_RANK": str(rank), "GPUCOMM_SIZE": str(opts.nprocs),
                        "GPUCOMM_LOCAL_RANK": str(rank), "GPUCOMM_LOCAL_SIZE": str(opts.nprocs),
                        "GPUCOMM_UNIQUE_ID": unique_id, "GPUCOMM_LIFELINE": f"{theirs.fileno()}:{os.getpid()}"})
            env.pop("GPUCOMM_BOOTSTRAP_LISTEN_FD", None)
            if devices:
                env["GPUCOMM_DEVICE_ID"] = str(devices[rank % len(devices)])
            pass_fds: tuple[int, ...] = (theirs.fileno(),)
            if rank == 0:
                env["GPUCOMM_BOOTSTRAP_LISTEN_FD"] = str(listener.fileno())
                pass_fds += (listener.fileno(),)
            pipe = subprocess.PIPE if opts.tag_output else None
            try:
                p = subprocess.Popen(opts.command, env=env, pass_fds=pass_fds, stdout=pipe, stderr=pipe,
                                     start_new_session=True, preexec_fn=_die_with_parent)
            except FileNotFoundError:
                ours.close()
                raise FileNotFoundError(f"program not found: {opts.command[0]}") from None
            except PermissionError:
                ours.close()
                raise PermissionError(f"program is not executable: {opts.command[0]}") from None
            finally:
                theirs.close()  # the PE holds it now; the launcher keeps only its own end
            pes.append(Pe(rank, p, ours))
    except BaseException:
        for pe in pes:
            signal_group(pe.proc, signal.SIGKILL)
            if pe.lifeline is not None:
                pe.lifeline.close()
        raise
    finally:
        listener.close()  # rank 0 holds its own copy

    pump = None
    if opts.tag_output:
        streams = [(s, pe.rank, out) for pe in pes
                   for s, out in ((pe.proc.stdout, sys.stdout), (pe.proc.stderr, sys.stderr))]
        pump = threading.Thread(target=_pump, args=(streams,), daemon=True)
        pump.start()
    try:
        return Supervisor(pes, opts.kill_grace, opts.timeout).run()
    finally:
        if pump is not None:
            pump.join(timeout=5)
