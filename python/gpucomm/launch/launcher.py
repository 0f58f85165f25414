"""The local launcher behind ``gpucomm run``.

It starts N PEs of one program on this host, hands each its rank and the job's unique id (rank 0
inherits the store's listening socket, so the port cannot be taken in between) and a lifeline,
assigns GPUs round robin, optionally prefixes output lines with the rank, forwards
SIGINT/SIGTERM, and, when one PE fails, names it, tells the others and gives them a grace period
to exit on their own before stopping them (supervisor.py): no orphaned process, no hang. Every PE
runs in its own process group, which the launcher kills as a whole when the job ends; a watchdog
process kills those groups if the launcher dies without doing it (SIGKILL), so that what a PE
started behind a wrapper (`sh -c ...`) does not outlive the job either. The PEs'
output is passed on line by line (launch/output.py).
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import secrets
import signal
import socket
import subprocess

from . import output
from .supervisor import Pe, Supervisor, Watchdog, log, make_lifeline, signal_group


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


def _die_with_parent() -> None:
    # Runs in the child before exec: if the launcher dies (even by SIGKILL), the child gets
    # SIGKILL. What the child starts (PEs behind a wrapper) does not inherit it: their lifeline
    # and the watchdog, which kills the child's whole process group, cover them.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child_setup(watchdog: Watchdog):
    def setup() -> None:
        _die_with_parent()
        watchdog.register_self()
    return setup


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




def launch(opts: LaunchOptions) -> int:
    if opts.nprocs < 1:
        raise ValueError(f"-n: the number of PEs must be at least 1, got {opts.nprocs}")
    if not opts.command:
        raise ValueError("no program given: gpucomm run -n N [--] PROGRAM [ARGS...]")
    devices = _device_list(opts.gpus)
    watchdog = Watchdog()
    stopped = False  # the supervisor stopped every PE's group itself; on any other way out the watchdog does
    try:
        code = _launch(opts, devices, watchdog)
        stopped = True
        return code
    finally:
        watchdog.close(stopped)


def _launch(opts: LaunchOptions, devices: list[int], watchdog: Watchdog) -> int:
    listener = socket.create_server((opts.bind, 0), backlog=max(128, opts.nprocs * 2))
    port = listener.getsockname()[1]
    host = listener.getsockname()[0]
    host_text = f"[{host}]" if ":" in host else host
    unique_id = f"gpucomm1:{host_text}:{port}:{secrets.token_hex(16)}"
    if opts.verbose:
        mode = f"GPUs {devices}" if devices else "host-memory PEs (no GPU assigned)"
        log(f"{opts.nprocs} PEs, store at {host_text}:{port}, {mode}")

    mode = "tagged" if opts.tag_output else opts.output
    pes: list[Pe] = []
    streams: list[output.PeStreams] = []
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
            streams.append(output.pe_streams(mode, rank))
            try:
                p = subprocess.Popen(opts.command, env=env, pass_fds=pass_fds, stdout=streams[-1].stdout,
                                     stderr=streams[-1].stderr, start_new_session=True,
                                     preexec_fn=_child_setup(watchdog))
            except FileNotFoundError:
                ours.close()
                raise FileNotFoundError(f"program not found: {opts.command[0]}") from None
            except PermissionError:
                ours.close()
                raise PermissionError(f"program is not executable: {opts.command[0]}") from None
            finally:
                theirs.close()  # the PE holds it now; the launcher keeps only its own end
                streams[-1].started()
            pes.append(Pe(rank, p, ours))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C while the PEs were being started
            log(f"interrupted by the user (SIGINT); stopping {len(pes)} PE(s)")
        for pe in pes:
            signal_group(pe.proc, signal.SIGKILL)
            if pe.lifeline is not None:
                pe.lifeline.close()
        for s in streams:
            s.close()
        raise
    finally:
        listener.close()  # rank 0 holds its own copy

    pumps = output.start_pump([pe.proc for pe in pes], streams, mode)
    try:
        return Supervisor(pes, opts.kill_grace, opts.timeout).run()
    finally:
        try:
            for t in pumps:
                t.join(timeout=5)
        except KeyboardInterrupt:  # another Ctrl-C while the last output drains: the job is over
            pass
