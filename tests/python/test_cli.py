"""The ``gpucomm`` command's usage errors, exit codes and messages: usage errors exit 2 with the
subcommand's name and usage on stderr, programs that cannot start exit 126/127, no tracebacks;
PE output stays whole lines; `gpucomm info` flags unknown variables; benchmarks name the real
cause when a GPU is missing."""
from __future__ import annotations

import json

import pytest

HOST = {"GPUCOMM_DEVICE": "host"}


def usage_error(r, *texts: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == "", r.stdout
    assert "Traceback" not in r.stderr and "['" not in r.stderr, r.stderr
    for t in texts:
        assert t in r.stderr, (t, r.stderr)


@pytest.mark.parametrize("args,texts", [
    (["run", "-n", "0", "--", "true"], ["gpucomm run: error: argument -n/--np: must be at least 1, got 0"]),
    (["run", "-n", "x", "--", "true"], ["argument -n/--np: 'x' is not an integer"]),
    (["run", "-n", "1", "--timeout", "-1", "--", "true"], ["argument --timeout: must be a finite number"]),
    (["run", "-n", "1", "--kill-grace", "-0.5", "--", "true"], ["argument --kill-grace"]),
    (["run", "-n", "1", "--kill-grace", "nan", "--", "true"], ["argument --kill-grace"]),
    (["run", "-n", "1", "--bind", "no-such-host.invalid", "--", "true"], ["argument --bind", "no-such-host.invalid"]),
    (["run", "-n", "1", "--gpus", "0,x", "--", "true"], ["argument --gpus: '0,x' is not"]),
    (["run", "-n", "1", "--env", "NOVALUE", "--", "true"], ["argument --env: 'NOVALUE' is not NAME=VALUE"]),
    (["run", "-n", "1"], ["gpucomm run: error: no program given"]),
    (["run", "-n", "1", "--tag-output", "--raw-output", "--", "true"], ["exclude each other"]),
    (["bench", "pingpong", "-n", "0"], ["gpucomm bench pingpong: error: argument -n/--np"]),
    (["bench", "pingpong", "-n", "1"], ["a ping-pong needs at least 2 PEs, got 1"]),
    (["trace", "analyze", ".", "--rank", "-1"], ["argument --rank: -1 is negative"]),
])
def test_usage_errors_exit_2_on_stderr(run_gpucomm, args, texts):
    usage_error(run_gpucomm(*args), "usage: gpucomm", *texts)


def test_programs_that_cannot_start(run_gpucomm, tmp_path):
    r = run_gpucomm("run", "-n", "2", "--", str(tmp_path / "missing"), "--flag")
    assert r.returncode == 127 and r.stderr.strip() == f"gpucomm run: error: program not found: {tmp_path / 'missing'}"
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    r = run_gpucomm("run", "-n", "2", "--", str(script))
    assert r.returncode == 126 and "program is not executable" in r.stderr and "Traceback" not in r.stderr
    r = run_gpucomm("run", "-n", "1", "--", str(tmp_path))
    assert r.returncode == 126 and "Traceback" not in r.stderr
    r = run_gpucomm("run", "-n", "1", "--", "no-such-program-on-path")
    assert r.returncode == 127 and "program not found: no-such-program-on-path" in r.stderr


def test_gpus_without_gpus_is_a_usage_error(run_gpucomm):
    from gpucomm.launch.gpus import visible_gpu_count
    have = visible_gpu_count()
    r = run_gpucomm("run", "-n", "1", "--gpus", f"0,{have}", "--", "true")
    if have == 0:
        usage_error(r, "argument --gpus: GPUs 0,0 were asked for, but no GPU is visible here")
    else:
        usage_error(r, f"argument --gpus: GPU {have} does not exist")


def test_pe_output_stays_whole_lines(run_gpucomm):
    # Each PE writes every line in three pieces with pauses between them; the launcher passes on
    # whole lines only, so no line mixes pieces of two PEs.
    prog = ("for i in 1 2 3 4 5; do printf \"r$GPUCOMM_RANK-a \"; sleep 0.01; printf \"r$GPUCOMM_RANK-b \"; "
            "sleep 0.01; printf \"r$GPUCOMM_RANK-c\\n\"; done; printf \"tail$GPUCOMM_RANK\"")
    r = run_gpucomm("run", "-n", "4", "--", "sh", "-c", prog)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 24, r.stdout
    for rank in range(4):
        assert lines.count(f"r{rank}-a r{rank}-b r{rank}-c") == 5, r.stdout
        assert f"tail{rank}" in lines  # an unfinished last line is passed on when the PE ends
    tagged = run_gpucomm("run", "-n", "2", "--tag-output", "--", "sh", "-c", "echo out; echo err >&2")
    assert sorted(tagged.stdout.splitlines()) == ["[0] out", "[1] out"]
    assert sorted(tagged.stderr.splitlines()) == ["[0] err", "[1] err"]
    raw = run_gpucomm("run", "-n", "2", "--raw-output", "--", "sh", "-c", "echo raw")
    assert raw.returncode == 0 and raw.stdout.splitlines() == ["raw", "raw"]


def test_info_flags_unknown_variables(run_gpucomm, build):
    if not list((build / "python" / "gpucomm").glob("_core*.so")):
        pytest.skip("gpucomm._core not built")
    env = {"GPUCOMM_TIMEOUT": "5", "GPUCOMM_TIMEOUTS": "9", "GPUCOMM_FOO": "1"}
    r = run_gpucomm("info", "--json", env=env)
    assert r.returncode == 0, r.stderr
    unknown = json.loads(r.stdout)["unknown_env"]
    assert "GPUCOMM_TIMEOUT" not in unknown
    assert unknown["GPUCOMM_FOO"] == "not a gpucomm variable (docs/ENV.md lists them)"
    assert unknown["GPUCOMM_TIMEOUTS"] == "did you mean GPUCOMM_TIMEOUT?"
    r = run_gpucomm("info", env=env)
    assert "  GPUCOMM_TIMEOUTS=9   <- unknown: did you mean GPUCOMM_TIMEOUT?" in r.stdout
    assert "  GPUCOMM_TIMEOUT=5\n" in r.stdout


def test_bench_rma_without_gpu_names_the_cause(run_gpucomm):
    from gpucomm.launch.gpus import visible_gpu_count
    if visible_gpu_count():
        pytest.skip("this machine has a GPU")
    r = run_gpucomm("bench", "rma", "--quick")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "gpucomm bench rma: error: the RMA benchmark runs on GPU PEs and this machine has no usable GPU" in r.stderr
    assert "GPUCOMM_DEVICE" not in r.stderr
    r = run_gpucomm("bench", "rma", env=HOST)
    assert r.returncode == 1 and "GPUCOMM_DEVICE=host asks for another kind" in r.stderr


def test_help_of_every_subcommand(run_gpucomm):
    for args in (["--help"], ["run", "--help"], ["info", "--help"], ["bench", "--help"], ["bench", "rma", "--help"],
                 ["bench", "pingpong", "--help"], ["bench", "ucx", "--help"], ["trace", "analyze", "--help"]):
        r = run_gpucomm(*args)
        assert r.returncode == 0 and r.stdout.startswith("usage: gpucomm"), (args, r.stderr)
    assert "--cmake-dir" in run_gpucomm("--help").stdout
    assert "gpucomm[plots]" in run_gpucomm("trace", "analyze", "--help").stdout
