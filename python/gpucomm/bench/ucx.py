"""``gpucomm bench ucx``: the UCX transport's put latency and bandwidth beside ``ucx_perftest``.

Runs ``gpucomm-bench-ucx`` on 2 host PEs (``gpucomm run -n 2``, GPUCOMM_DEVICE=host), then, in the
same run and with the same UCX_TLS, sizes and iterations, the ``ucx_perftest`` of the libucx wheel
(server and client on 127.0.0.1: ucp_put_lat and ucp_put_bw), and prints them side by side.
ucx_perftest runs twice: with endpoint error handling (``-e``), as gpucomm's endpoints have it (the
like-for-like comparison, and the ratio), and without, UCX's fastest configuration (over TCP, UCX
emulates puts with active messages when error handling is on, and uses its zero-copy put without).
gpucomm's latency is a put, a fence and an 8-byte signal put per direction (the data-before-signal
protocol); ucx_perftest's is one put whose last byte the receiver polls (no ordering guarantee
between the bytes of a put is needed there). Bandwidth: bursts of puts then flush, against
ucx_perftest's stream of puts. MB/s is 2^20 bytes per second in both.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gpucomm._tools import find_tool

_UNIT = {"put_lat": "us", "put_bw": "MB/s"}
_PERFTEST = {"put_lat": "ucp_put_lat", "put_bw": "ucp_put_bw"}


def register(targets) -> None:
    p = targets.add_parser("ucx", help="UCX transport put latency and bandwidth (2 host PEs) vs ucx_perftest",
                           description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer iterations")
    p.add_argument("--json", metavar="FILE", help="write gpucomm's and ucx_perftest's results and the ratios")
    p.add_argument("--tls", default="tcp", metavar="LIST",
                   help="UCX_TLS for both (default: tcp, UCX's TCP transport over loopback)")
    p.add_argument("--no-perftest", action="store_true", help="run gpucomm-bench-ucx alone")
    p.set_defaults(func=run)


def libucx_dir() -> Path | None:
    try:
        import libucx  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    return Path(libucx.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def perftest_batch(results: list[dict]) -> list[tuple[str, dict, str]]:
    """(line name, gpucomm result, batch-file line) for every gpucomm point: same size, same number
    of puts, same warm-up."""
    lines = []
    for r in results:
        name = f"{r['name']}_{r['bytes']}"
        puts, warm = r["iters"] * r["puts_per_iter"], r["warmup"] * r["puts_per_iter"]
        lines.append((name, r, f"{name} -t {_PERFTEST[r['name']]} -s {r['bytes']} -n {puts} -w {warm}"))
    return lines


def parse_perftest(output: str, names: list[str]) -> dict[str, dict]:
    """The final line of each batch test: name, iterations, latency 50%ile/average/overall (us),
    bandwidth average/overall (MB/s), message rate average/overall."""
    found = {}
    for line in output.splitlines():
        words = line.split()
        if len(words) == 9 and words[0] in names:
            v = [float(w) for w in words[1:]]
            found[words[0]] = {"iters": int(v[0]), "lat_median_us": v[1], "lat_avg_us": v[2], "bw_MBps": v[5],
                               "msg_rate": v[7], "line": line.strip()}
    return found


def _run_client(cmd: list[str], env: dict, names: list[str]) -> subprocess.CompletedProcess:
    """Runs ucx_perftest's client, saying on stderr when each of the batch's tests finished; stops
    it after 30 minutes."""
    # stderr joins stdout: one pipe read to its end cannot fill the other and stall the client.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(1800, proc.kill)
    watchdog.start()
    out = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            words = line.split()
            if len(words) == 9 and words[0] in names:
                print(f"gpucomm bench ucx: ucx_perftest [{names.index(words[0]) + 1}/{len(names)}] {words[0]} done",
                      file=sys.stderr, flush=True)
        proc.wait()
    finally:
        watchdog.cancel()
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(out), "")


def run_perftest(binary: Path, batch: list[tuple[str, dict, str]], env: dict, extra: list[str]) -> dict[str, dict]:
    with tempfile.NamedTemporaryFile("w", prefix="gpucomm-ucx-perftest-", suffix=".txt", delete=False) as f:
        f.write("\n".join(line for _, _, line in batch) + "\n")
        batch_file = f.name
    try:
        for attempt in range(3):
            port = str(_free_port())
            server = subprocess.Popen([str(binary), "-p", port, "-b", batch_file, *extra], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5 + attempt)  # the server listens once it started
                client = _run_client([str(binary), "127.0.0.1", "-p", port, "-b", batch_file, "-f", *extra], env,
                                     [n for n, _, _ in batch])
            finally:
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            found = parse_perftest(client.stdout, [n for n, _, _ in batch])
            if found:
                return found
            print(f"gpucomm bench ucx: ucx_perftest gave no results (attempt {attempt + 1}):\n"
                  f"{client.stdout[-2000:]}{client.stderr[-2000:]}", file=sys.stderr)
        return {}
    finally:
        os.unlink(batch_file)


def _value(r: dict, t: dict | None) -> float | None:
    if not t:
        return None
    return t["lat_median_us"] if r["name"] == "put_lat" else t["bw_MBps"]


def compare(ours: list[dict], with_eh: dict[str, dict], without_eh: dict[str, dict]) -> list[dict]:
    rows = []
    for r in ours:
        key = f"{r['name']}_{r['bytes']}"
        other, fastest = _value(r, with_eh.get(key)), _value(r, without_eh.get(key))
        ratio = None
        if other and r["median"]:
            ratio = other / r["median"] if r["name"] == "put_lat" else r["median"] / other
        rows.append({"name": r["name"], "bytes": r["bytes"], "gpucomm": r["median"], "ucx_perftest": other,
                     "ucx_perftest_no_error_handling": fastest, "unit": _UNIT[r["name"]], "ratio": ratio})
    return rows


def table(rows: list[dict]) -> str:
    def num(v):
        return f"{v:12.3f}" if v is not None else f"{'-':>12}"

    out = [f"{'test':<8} {'bytes':>10} {'gpucomm':>12} {'perftest -e':>12} {'perftest':>12} {'unit':<5} {'ratio':>6}",
           "         (perftest -e: endpoint error handling, as gpucomm; ratio = gpucomm vs perftest -e, > 1: gpucomm better)"]
    for c in rows:
        ratio = f"{c['ratio']:6.2f}" if c["ratio"] is not None else f"{'-':>6}"
        out.append(f"{c['name']:<8} {c['bytes']:>10} {num(c['gpucomm'])} {num(c['ucx_perftest'])} "
                   f"{num(c['ucx_perftest_no_error_handling'])} {c['unit']:<5} {ratio}")
    return "\n".join(out)


def run(args) -> int:
    tool = find_tool("gpucomm-bench-ucx")
    env = dict(os.environ)
    env["GPUCOMM_DEVICE"] = "host"
    env["UCX_TLS"] = args.tls
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-ucx-") as tmp:
        ours_path = os.path.join(tmp, "gpucomm.json")
        cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "2", "--", str(tool), "--json", ours_path]
        if args.quick:
            cmd.append("--quick")
        print(f"gpucomm bench ucx: gpucomm-bench-ucx on 2 host PEs, UCX_TLS={args.tls}", flush=True)
        rc = subprocess.call(cmd, env=env)
        if rc != 0:
            print(f"gpucomm bench ucx: the benchmark failed (exit code {rc})", file=sys.stderr)
            return rc
        ours = json.loads(Path(ours_path).read_text())
    report = {"gpucomm": ours}
    if not args.no_perftest:
        pkg = libucx_dir()
        binary = pkg / "bin" / "ucx_perftest" if pkg else None
        if not binary or not binary.is_file():
            print("gpucomm bench ucx: ucx_perftest not found (pip install libucx-cu13); gpucomm's numbers only",
                  file=sys.stderr)
        else:
            # The wheel's tools carry a run path of the machine they were built on: point them at
            # the wheel's libraries, not at another UCX the system may have.
            penv = dict(env)
            penv["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(pkg / "lib"), env.get("LD_LIBRARY_PATH")]))
            batch = perftest_batch(ours["results"])
            print(f"\ngpucomm bench ucx: {binary} (server and client on 127.0.0.1), UCX_TLS={args.tls}, "
                  f"{len(batch)} tests with endpoint error handling, then {len(batch)} without", flush=True)
            with_eh = run_perftest(binary, batch, penv, ["-e"])
            without_eh = run_perftest(binary, batch, penv, [])
            rows = compare(ours["results"], with_eh, without_eh)
            report["ucx_perftest"] = {
                "binary": str(binary), "ucx_tls": args.tls,
                "error_handling": [dict(name=n, **with_eh[n]) for n, _, _ in batch if n in with_eh],
                "no_error_handling": [dict(name=n, **without_eh[n]) for n, _, _ in batch if n in without_eh]}
            report["comparison"] = rows
            print()
            print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
