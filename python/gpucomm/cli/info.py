"""``gpucomm info``: what a job would find on this machine: GPUs and their links, the kind of
PE it would run, the gpucomm version and the ``GPUCOMM_*`` settings in effect."""
from __future__ import annotations

import difflib
import json
import os

from gpucomm import __version__


def register(sub) -> None:
    p = sub.add_parser(
        "info", help="show this machine's GPUs, their links and the PE mode a job would use",
        description="Reports the GPUs of this machine (CUDA properties, PCI bus id, NUMA node), "
                    "how each pair is linked (NVLink with its link count, PCIe, none), the PE "
                    "mode a job started here would use, the gpucomm version and the GPUCOMM_* "
                    "variables that are set, flagging those gpucomm does not know (a typo is silently "
                    "ignored otherwise).")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object with keys version, pe_mode, topology, env and unknown_env "
                        "(the GPUCOMM_* variables gpucomm does not know) instead of the readable report")
    p.set_defaults(func=run)


def gpucomm_env() -> dict[str, str]:
    """The GPUCOMM_* variables set in this environment."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("GPUCOMM_")}


def unknown_env(env: dict[str, str], known: list[str]) -> dict[str, str]:
    """The variables of `env` gpucomm does not read, each with a hint: the closest known name."""
    out = {}
    for name in env:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
            out[name] = f"did you mean {close[0]}?" if close else "not a gpucomm variable (docs/ENV.md lists them)"
    return out


def pe_mode(gpu_count: int, device: str | None) -> str:
    """The PE kind a job would use here, following GPUCOMM_DEVICE (auto, gpu, host)."""
    device = (device or "").strip() or "auto"
    gpus = f"{gpu_count} GPU" + ("" if gpu_count == 1 else "s")
    if device == "host":
        return "host-memory PEs: GPUCOMM_DEVICE=host forces host-memory PEs"
    if device == "gpu":
        if gpu_count:
            return f"GPU PEs: {gpus}"
        return "none: GPUCOMM_DEVICE=gpu requires a GPU and none was found (a job would fail)"
    if device == "auto":
        return f"GPU PEs: {gpus}" if gpu_count else "host-memory PEs: no GPU found"
    return f"none: GPUCOMM_DEVICE={device!r} is not one of auto, gpu, host (a job would fail)"


def _core():
    import gpucomm
    try:
        return gpucomm._load_core()
    except ImportError as exc:
        raise RuntimeError(str(exc)) from None


def run(args) -> int:
    core = _core()
    topology = json.loads(core.topology_json())
    mode = pe_mode(len(topology["gpus"]), os.environ.get("GPUCOMM_DEVICE"))
    env = gpucomm_env()
    unknown = unknown_env(env, [v[0] for v in core.env_variables()])
    if args.json:
        print(json.dumps({"version": __version__, "pe_mode": mode, "topology": topology, "env": env,
                          "unknown_env": unknown}, indent=2))
        return 0
    print(f"gpucomm {__version__}")
    print(f"PE mode: {mode}")
    print()
    print(core.topology_text(), end="")
    print()
    print("Environment:")
    if env:
        for k, v in env.items():
            note = f"   <- unknown: {unknown[k]}" if k in unknown else ""
            print(f"  {k}={v}{note}")
    else:
        print("  (no GPUCOMM_* variables set)")
    return 0
