"""The local launcher behind ``gpucomm run``.

It starts N PEs of one program on this host, hands each its rank and the job's unique id (rank 0
inherits the store's listening socket, so the port cannot be taken in between), assigns GPUs
round robin, optionally prefixes output lines with the rank, forwards SIGINT/SIGTERM, and, when
one PE fails, gives the others a grace period to notice and exit on their own before stopping
them: no orphaned process, no hang. The PEs' output is passed on line by line (launch/output.py).
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

from . import output


@dataclasses.dataclass
class LaunchOptions:
    nprocs: int
    command: list[str]
    tag_output: bool = False      # prefix lines with [rank] (output mode "tagged")
    gpus: str = "auto"            # "auto", "none", or a comma list of device indices
    kill_grace: float = 5.0       # seconds the other PEs get to exit after one failed
    timeout: float = 0.0          # whole-job limit in seconds, 0 = none
    bind: str = "127.0.0.1"
    extra_env: dict[str, str] = dataclasses.field(default_factory=dict)
    verbose: bool = False
    output: str = "lines"         # "lines", "tagged" or "raw" (launch/output.py)


def _log(msg: str) -> None:
    print(f"gpucomm run: {msg}", file=sys.stderr, flush=True)


def _die_with_parent() -> None:
    # Runs in the child before exec: if the launcher dies (even by SIGKILL), the PE gets SIGKILL.
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


def _describe_status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


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
        _log(f"{opts.nprocs} PEs, store at {host_text}:{port}, {mode}")

    mode = "tagged" if opts.tag_output else opts.output
    procs: list[subprocess.Popen] = []
    streams: list[output.PeStreams] = []
    try:
        for rank in range(opts.nprocs):
            env = dict(os.environ)
            env.update(opts.extra_env)
            env.update({"GPUCOMM_RANK": str(rank), "GPUCOMM_SIZE": str(opts.nprocs),
                        "GPUCOMM_LOCAL_RANK": str(rank), "GPUCOMM_LOCAL_SIZE": str(opts.nprocs),
                        "GPUCOMM_UNIQUE_ID": unique_id})
            env.pop("GPUCOMM_BOOTSTRAP_LISTEN_FD", None)
            if devices:
                env["GPUCOMM_DEVICE_ID"] = str(devices[rank % len(devices)])
            pass_fds: tuple[int, ...] = ()
            if rank == 0:
                env["GPUCOMM_BOOTSTRAP_LISTEN_FD"] = str(listener.fileno())
                pass_fds = (listener.fileno(),)
            streams.append(output.pe_streams(mode, rank))
            try:
                p = subprocess.Popen(opts.command, env=env, pass_fds=pass_fds, stdout=streams[-1].stdout,
                                     stderr=streams[-1].stderr, start_new_session=True, preexec_fn=_die_with_parent)
            except FileNotFoundError:
                raise FileNotFoundError(f"program not found: {opts.command[0]}") from None
            except PermissionError:
                raise PermissionError(f"program is not executable: {opts.command[0]}") from None
            finally:
                streams[-1].started()
            procs.append(p)
    except BaseException:
        for p in procs:
            _signal_group(p, signal.SIGKILL)
        for s in streams:
            s.close()
        raise
    finally:
        listener.close()  # rank 0 holds its own copy

    pumps = output.start_pump(procs, streams, mode)
    return _supervise(procs, pumps, opts)


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _supervise(procs: list[subprocess.Popen], pumps: list[threading.Thread], opts: LaunchOptions) -> int:
    stop_reason: list[str] = []

    def on_signal(signum, _frame):
        stop_reason.append(f"received {signal.Signals(signum).name}")
        for p in procs:
            if p.poll() is None:
                _signal_group(p, signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    start = time.monotonic()
    first_failure: tuple[int, int] | None = None  # (rank, code) of the first PE that failed by itself
    worst = 0  # worst exit status among PEs that failed by themselves (not stopped by the launcher)
    stopping_since: float | None = None
    terminated: set[int] = set()
    try:
        while True:
            running = [r for r, p in enumerate(procs) if p.poll() is None]
            for r, p in enumerate(procs):
                code = p.returncode
                if code is not None and code != 0 and r not in terminated:
                    worst = max(worst, 128 - code if code < 0 else code)
                if code is not None and code != 0 and first_failure is None and r not in terminated:
                    first_failure = (r, code)
                    if running:
                        _log(f"rank {r} {_describe_status(code)}; the other {len(running)} PE(s) get "
                             f"{opts.kill_grace:g} s to exit before they are stopped")
                    else:
                        _log(f"rank {r} {_describe_status(code)}")
                    stopping_since = time.monotonic()
            if not running:
                break
            now = time.monotonic()
            if opts.timeout > 0 and now - start > opts.timeout and stopping_since is None:
                _log(f"job ran past --timeout {opts.timeout:g} s; stopping {len(running)} PE(s): ranks {running}")
                first_failure = first_failure or (-1, 124)
                stopping_since = now - opts.kill_grace  # stop at once
            if stop_reason and stopping_since is None:
                stopping_since = now
                first_failure = first_failure or (-1, 130)
            if stopping_since is not None:
                waited = now - stopping_since
                if waited >= opts.kill_grace:
                    sig = signal.SIGTERM if waited < opts.kill_grace + 3 else signal.SIGKILL
                    for r in running:
                        if r not in terminated or sig == signal.SIGKILL:
                            _signal_group(procs[r], sig)
                            terminated.add(r)
            time.sleep(0.02)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for p in procs:  # descendants the PEs left behind in their groups
            _signal_group(p, signal.SIGKILL)
        for t in pumps:
            t.join(timeout=5)
    if first_failure is None:
        return 0
    rank, code = first_failure
    return code if rank < 0 else worst
