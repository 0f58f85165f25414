"""``gpucomm run``: start N local PEs of a program."""
from __future__ import annotations

import argparse

from gpucomm.launch import LaunchOptions, launch


def _parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--env: '{item}' is not NAME=VALUE")
        k, v = item.split("=", 1)
        env[k] = v
    return env


def register(sub) -> None:
    p = sub.add_parser(
        "run", help="start N local PEs of a program",
        description="Start N PEs of PROGRAM on this host. Each gets GPUCOMM_RANK, GPUCOMM_SIZE, the job's "
                    "unique id, a lifeline to this launcher (if gpucomm run dies, the job fails) and a GPU "
                    "(round robin) if GPUs exist. If one PE fails, gpucomm run names the PE that failed first "
                    "and tells the others, which get --kill-grace seconds to exit (a stopped PE is killed at "
                    "once), then are stopped. The exit code is the status of the PE that failed first (its "
                    "exit code, or 128+N when signal N killed it), 124 when --timeout stopped the job, 128+N "
                    "when gpucomm run received signal N, 0 when every PE succeeded.")
    p.add_argument("-n", "--np", dest="nprocs", type=int, required=True, metavar="N", help="number of PEs")
    p.add_argument("--tag-output", action="store_true", help="prefix every output line with [rank]")
    p.add_argument("--gpus", default="auto", metavar="LIST",
                   help="GPUs to assign round robin: auto (all visible), none, or e.g. 0,1 (default: auto)")
    p.add_argument("--kill-grace", type=float, default=5.0, metavar="S",
                   help="seconds the other PEs get to exit after one fails (default: 5)")
    p.add_argument("--timeout", type=float, default=0.0, metavar="S",
                   help="stop the whole job after S seconds, exit code 124 (default: no limit)")
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                   help="address the bootstrap store listens on (default: 127.0.0.1)")
    p.add_argument("--env", action="append", metavar="NAME=VALUE", help="extra environment for every PE")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is being launched")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]")
    p.set_defaults(func=_run)


def _run(args) -> int:
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return launch(LaunchOptions(nprocs=args.nprocs, command=cmd, tag_output=args.tag_output, gpus=args.gpus,
                                kill_grace=args.kill_grace, timeout=args.timeout, bind=args.bind,
                                extra_env=_parse_env(args.env), verbose=args.verbose))
