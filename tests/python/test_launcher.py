"""``gpucomm run`` and the runtime's failure handling across real processes."""
from __future__ import annotations

import time

import pytest

HOST = {"GPUCOMM_DEVICE": "host"}


def test_runs_all_ranks_with_tagged_output(run_gpucomm, pe_program):
    r = run_gpucomm("run", "-n", "4", "--tag-output", "--", pe_program, "bootstrap", env=HOST)
    assert r.returncode == 0, r.stderr
    for rank in range(4):
        assert f"[{rank}] PE OK rank {rank} of 4" in r.stdout


def test_exit_code_is_the_failing_pe(run_gpucomm):
    r = run_gpucomm("run", "-n", "3", "--", "sh", "-c", 'exit $((GPUCOMM_RANK == 1 ? 7 : 0))')
    assert r.returncode == 7
    assert "rank 1 exited with code 7" in r.stderr


def test_missing_program_is_a_clear_error(run_gpucomm):
    r = run_gpucomm("run", "-n", "2", "--", "/no/such/program")
    assert r.returncode != 0
    assert "program not found: /no/such/program" in r.stderr


def test_bad_np_names_the_argument(run_gpucomm):
    r = run_gpucomm("run", "-n", "0", "--", "true")
    assert r.returncode != 0 and "-n" in r.stderr


def test_hung_job_is_stopped_by_timeout(run_gpucomm):
    start = time.monotonic()
    r = run_gpucomm("run", "-n", "2", "--timeout", "1", "--kill-grace", "0.5", "--", "sleep", "60")
    assert r.returncode == 124
    assert time.monotonic() - start < 10
    assert "--timeout" in r.stderr


@pytest.mark.parametrize("scenario,victim,where", [
    ("die-in-barrier", 2, "barrier"),  # in its wait, or entering it after the death
    ("die-in-wait", 1, "wait_until"),
])
def test_dead_pe_makes_the_others_fail_fast_with_its_name(run_gpucomm, pe_program, scenario, victim, where):
    start = time.monotonic()
    # A long grace period: the survivors must exit by themselves, not be killed by the launcher.
    r = run_gpucomm("run", "-n", "4", "--tag-output", "--kill-grace", "60", "--", pe_program, scenario, "2",
                    str(victim), env={**HOST, "GPUCOMM_TIMEOUT": "30"})
    elapsed = time.monotonic() - start
    assert r.returncode != 0
    assert elapsed < 20, f"survivors took {elapsed:.1f} s"
    survivors = [x for x in range(4) if x != victim]
    for rank in survivors:
        line = next((l for l in r.stderr.splitlines() if l.startswith(f"[{rank}] PE ERROR")), "")
        # The store's notice (its connection closed) or, when the store is slow to see the EOF, the
        # launcher's relay of the death: either way the dead PE, never a survivor, is named.
        named = f"rank {victim} closed its connection" in line or f"rank {victim} was killed by SIGKILL" in line
        # A slow survivor may still be in the barrier before the wait when the victim (already past
        # it) dies: it fails there, naming the victim all the same.
        assert (where in line or "barrier" in line) and named, r.stderr


def test_pe_dying_before_bootstrap_is_reported_at_once(run_gpucomm, pe_program):
    # The store never heard of rank 3; the launcher relays its death over the lifelines.
    start = time.monotonic()
    r = run_gpucomm("run", "-n", "4", "--tag-output", "--kill-grace", "60", "--", pe_program, "die-before-init", "0",
                    "3", env={**HOST, "GPUCOMM_TIMEOUT": "30"})
    elapsed = time.monotonic() - start
    assert r.returncode == 128 + 9
    assert elapsed < 10, f"took {elapsed:.1f} s"
    for rank in range(3):
        line = next((l for l in r.stderr.splitlines() if l.startswith(f"[{rank}] PE ERROR")), "")
        assert "rank 3 was killed by SIGKILL" in line, r.stderr


def test_wait_timeout_reports_who_waited_for_what(run_gpucomm, pe_program):
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", pe_program, "wait-timeout", env={**HOST, "GPUCOMM_TIMEOUT": "1"})
    assert r.returncode != 0
    assert "[0] PE ERROR: gpucomm rank 0: rank 0 wait_until(heap+0x0 >= 9, last seen 7): timed out" in r.stderr


def test_unknown_gpucomm_variable_draws_a_warning(run_gpucomm, pe_program):
    r = run_gpucomm("run", "-n", "1", "--", pe_program, "bootstrap", env={**HOST, "GPUCOMM_NO_SUCH": "1"})
    assert r.returncode == 0
    assert "unknown environment variable GPUCOMM_NO_SUCH" in r.stderr


def test_help_everywhere(run_gpucomm):
    for args in (["--help"], ["run", "--help"], ["bench", "--help"]):
        r = run_gpucomm(*args)
        assert r.returncode == 0 and "usage:" in r.stdout


def test_failed_job_checker_and_stalled_survivors():
    """tests/support/expect_failed_job.py: every PE must print PE OK, except, with
    --survivors-may-stall, the PEs other than the one failing first once the launcher said it would
    stop them (PEs sharing a GPU whose kernels stall beside a faulted one)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "support" / "expect_failed_job.py"
    spec = importlib.util.spec_from_file_location("expect_failed_job", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lines = ["[0] [gpucomm 0/2 error] aborting the job: collective allreduce: reduction differs",
             "gpucomm run: rank 0 failed (rank 0 aborted: reduction differs); the other 1 PE(s) and rank 0 get 5 s "
             "to exit before they are stopped",
             "[1] [gpucomm 1/2 error] job failed: rank 0 aborted: reduction differs",
             "[0] PE OK rank 0 of 2: mismatch"]
    assert mod.check(lines, 143, 2, 0, 6.0, 40.0) == ["rank 1 printed no 'PE OK' line"]
    assert mod.check(lines, 143, 2, 0, 6.0, 40.0, survivors_may_stall=True) == []
    # The PE that failed first must still print its line, and the job must still fail in time.
    assert "rank 0 printed no 'PE OK' line" in mod.check(lines[:3], 143, 2, 0, 6.0, 40.0, survivors_may_stall=True)
    assert any("more than 40 s" in p for p in mod.check(lines, 143, 2, 0, 45.0, 40.0, survivors_may_stall=True))
    assert any("status 0" in p for p in mod.check(lines, 0, 2, 0, 6.0, 40.0, survivors_may_stall=True))
