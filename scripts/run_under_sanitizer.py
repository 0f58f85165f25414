#!/usr/bin/env python3
"""Runs every CTest test labelled `gpu` under compute-sanitizer with one tool.

usage: run_under_sanitizer.py BUILD_DIR memcheck|racecheck|synccheck
Exit code 0 when every test is clean; prints one line per test.
"""
import json
import os
import subprocess
import sys

build, tool = sys.argv[1], sys.argv[2]
info = json.loads(subprocess.run(["ctest", "--test-dir", build, "-L", "gpu", "--show-only=json-v1"],
                                 capture_output=True, text=True, check=True).stdout)
bad = 0
for t in info.get("tests", []):
    cmd = t.get("command")
    if not cmd:
        continue
    env = dict(os.environ, GPUCOMM_UNDER_SANITIZER=tool)
    for prop in t.get("properties", []):
        if prop["name"] == "ENVIRONMENT":
            for kv in prop["value"]:
                k, _, v = kv.partition("=")
                env[k] = v
    full = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "99", "--target-processes", "all",
            "--print-limit", "20"] + cmd
    r = subprocess.run(full, capture_output=True, text=True, env=env, cwd=build, timeout=900)
    clean = r.returncode == 0 or ("[  SKIPPED ]" in r.stdout and r.returncode == 0)
    print(f"{'clean' if clean else 'ERRORS'} {tool} {t['name']}")
    if not clean:
        bad += 1
        print(r.stdout[-3000:], r.stderr[-3000:])
print(f"{tool}: {bad} test(s) with errors")
sys.exit(1 if bad else 0)
