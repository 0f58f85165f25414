"""Checks that ship (the CI build is checked, but none of these depends on it): bad inputs on every
path, heaps and collective allocations that differ between PEs, puts to a dead PE, barrier
timeouts that blame the stalled PE, descriptors that programs a PE starts do not inherit."""
from __future__ import annotations


def test_bad_inputs_are_refused_and_the_job_goes_on(cases):
    r = cases.checks("bad-input", 2)
    assert r["handled"], r
    assert r["bad_inputs_tried"] >= 2 * 25 and r["bad_inputs_refused"] == r["bad_inputs_tried"], r


def test_heap_sizes_must_agree_naming_the_other_pe(cases):
    assert cases.checks("heap-mismatch", 3, 1)["handled"]


def test_asymmetric_allocation_is_refused_and_the_job_goes_on(cases):
    assert cases.checks("alloc-mismatch", 3, 1)["handled"]


def test_put_to_a_dead_pe_fails(cases):
    assert cases.checks("dead-put", 3, 2)["handled"]


def test_barrier_timeout_blames_the_stalled_pe(cases):
    r = cases.checks("barrier-blame", 4, 1, {"GPUCOMM_TIMEOUT": "1"})
    assert r["handled"], r


def test_no_descriptor_leaks_into_programs_a_pe_starts(cases):
    assert cases.checks("cloexec", 2)["handled"]
