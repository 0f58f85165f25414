"""``gpucomm run``: start N local PEs of a program."""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys

from gpucomm.cli import _args
from gpucomm.launch import LaunchOptions, launch

# Exit codes of a program that cannot be started, as POSIX shells and env(1) use them.
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127


def register(sub) -> None:
    p = sub.add_parser(
        "run", help="start N local PEs of a program",
        description="Start N PEs of PROGRAM on this host. Each gets GPUCOMM_RANK, GPUCOMM_SIZE, the job's "
                    "unique id, a lifeline to this launcher (if gpucomm run dies, the job fails) and a GPU "
                    "(round robin) if GPUs exist. If one PE fails, gpucomm run names the PE that failed first "
                    "and tells the others, which get --kill-grace seconds to exit (a stopped PE is killed at "
                    "once), then are stopped. The exit code is the status of the PE that failed first (its "
                    "exit code, or 128+N when signal N killed it), 124 when --timeout stopped the job, 128+N "
                    "when gpucomm run received signal N (passed on to the PEs; a second one kills them; Ctrl-C "
                    "is reported as the user's interrupt, exit code 130), 0 when every PE succeeded; 2 for a "
                    "usage error, 126 for a PROGRAM that is not executable, 127 for one that is not found. The "
                    "PEs' output is passed on whole lines at a time, so lines of different PEs never mix.")
    p.add_argument("-n", "--np", dest="nprocs", type=_args.positive_int, required=True, metavar="N",
                   help="number of PEs (at least 1)")
    p.add_argument("--tag-output", action="store_true", help="prefix every output line with [rank]")
    p.add_argument("--raw-output", action="store_true",
                   help="give the PEs this terminal's output directly (lines of different PEs may mix)")
    p.add_argument("--gpus", default="auto", type=_args.gpu_list, metavar="LIST",
                   help="GPUs to assign round robin: auto (all visible), none, or e.g. 0,1 (default: auto)")
    p.add_argument("--kill-grace", type=_args.nonneg_seconds, default=5.0, metavar="S",
                   help="seconds the other PEs get to exit after one fails (default: 5)")
    p.add_argument("--timeout", type=_args.nonneg_seconds, default=0.0, metavar="S",
                   help="stop the whole job after S seconds, exit code 124 (default: 0, no limit)")
    p.add_argument("--bind", default="127.0.0.1", type=_args.bind_address, metavar="ADDR",
                   help="address the bootstrap store listens on (default: 127.0.0.1)")
    p.add_argument("--env", action="append", type=_args.env_assignment, metavar="NAME=VALUE",
                   help="extra environment for every PE (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is being launched")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]")
    p.set_defaults(func=_run, parser=p)


def _program_problem(name: str) -> tuple[int, str] | None:
    """(exit code, message) when `name` cannot be executed, as the PEs would find it."""
    path = name if os.sep in name else shutil.which(name)
    if path is None or not os.path.exists(path):
        return EXIT_NOT_FOUND, f"program not found: {name}"
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        return EXIT_NOT_EXECUTABLE, f"program is not executable: {path}"
    return None


def _check_gpus(parser: argparse.ArgumentParser, spec: str) -> None:
    if spec in ("auto", "none"):
        return
    from gpucomm.launch.gpus import visible_gpu_count
    wanted = [int(x) for x in spec.split(",")]
    have = visible_gpu_count()
    if have == 0:
        parser.error(f"argument --gpus: GPUs {spec} were asked for, but no GPU is visible here "
                     "(use --gpus none, or leave --gpus out for host-memory PEs)")
    missing = [g for g in wanted if g >= have]
    if missing:
        parser.error(f"argument --gpus: GPU {missing[0]} does not exist; this machine has {have} "
                     f"(indices 0..{have - 1})")


def _check_bind(parser: argparse.ArgumentParser, addr: str) -> None:
    try:
        family = socket.getaddrinfo(addr, 0, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((addr, 0))
    except OSError as exc:
        parser.error(f"argument --bind: cannot listen on {addr}: {exc.strerror or exc}")


def _run(args) -> int:
    parser = args.parser
    cmd = list(args.program)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        parser.error("no program given: gpucomm run -n N [--] PROGRAM [ARGS...]")
    if args.tag_output and args.raw_output:
        parser.error("--tag-output and --raw-output exclude each other")
    _check_gpus(parser, args.gpus)
    _check_bind(parser, args.bind)
    problem = _program_problem(cmd[0])
    if problem:
        code, msg = problem
        print(f"gpucomm run: error: {msg}", file=sys.stderr)
        return code
    output = "raw" if args.raw_output else "tagged" if args.tag_output else "lines"
    return launch(LaunchOptions(nprocs=args.nprocs, command=cmd, tag_output=args.tag_output, gpus=args.gpus,
                                kill_grace=args.kill_grace, timeout=args.timeout, bind=args.bind,
                                extra_env=dict(args.env or []), verbose=args.verbose, output=output))
