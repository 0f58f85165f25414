"""Foreign clients against a running job's store and against the fd exchange while jobs start:
as another user (CI runs as root, so setpriv always works there: this test runs in CI) and as the
job's own user. Nothing is let through and every job start succeeds."""
from __future__ import annotations

import os

import pytest


def _other_user(cases):
    if not cases.can_switch_user():
        if os.environ.get("CI") or os.geteuid() == 0:
            pytest.fail("switching to user nobody needs root and setpriv, which CI has")
        pytest.skip("needs root and setpriv to run a client as another user")


def test_store_flood_as_another_user(cases):
    _other_user(cases)
    r = cases.hostile_store("nobody", idle=150)
    assert r["handled"] and r["let_through"] == 0, r


def test_store_flood_as_the_jobs_user(cases):
    r = cases.hostile_store("self", idle=150)
    assert r["handled"] and r["let_through"] == 0, r


def test_fd_exchange_hunted_by_another_user(cases):
    _other_user(cases)
    r = cases.hostile_fdx("nobody", starts=4)
    assert r["handled"] and r["fds_received"] == 0 and r["job_starts_ok"] == 4, r


def test_fd_exchange_hunted_by_the_jobs_user(cases):
    r = cases.hostile_fdx("self", starts=4)
    assert r["handled"] and r["fds_received"] == 0 and r["job_starts_ok"] == 4, r
