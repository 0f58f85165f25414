"""The layer check (scripts/check_layers.py) passes on the tree and fails on bad includes."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")


def run(root):
    return subprocess.run([sys.executable, SCRIPT, "--root", str(root)], capture_output=True, text=True)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_tree_respects_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_upward_include_fails(tmp_path):
    write(tmp_path, "include/gpucomm/runtime/runtime.hpp", "#pragma once\n")
    write(tmp_path, "include/gpucomm/core/bad.hpp", '#pragma once\n#include "gpucomm/runtime/runtime.hpp"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "include/gpucomm/core/bad.hpp:2: layer 'core' includes \"gpucomm/runtime/runtime.hpp\" of layer 'runtime'" in r.stdout
    assert "a higher layer" in r.stdout


def test_internal_upward_include_fails(tmp_path):
    write(tmp_path, "src/runtime/state.hpp", "#pragma once\n")
    write(tmp_path, "src/proxy/agent.cpp", '#include "runtime/state.hpp"\n')
    write(tmp_path, "include/gpucomm/core/error.hpp", "#pragma once\n")
    r = run(tmp_path)
    assert r.returncode == 1
    assert "src/proxy/agent.cpp:1: layer 'proxy' includes \"runtime/state.hpp\" of layer 'runtime'" in r.stdout


def test_sideways_include_fails(tmp_path):
    write(tmp_path, "include/gpucomm/topology/topology.hpp", "#pragma once\n")
    write(tmp_path, "include/gpucomm/heap/heap.hpp", '#pragma once\n#include "gpucomm/topology/topology.hpp"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "a layer it does not build on" in r.stdout


def test_include_cycle_fails(tmp_path):
    write(tmp_path, "include/gpucomm/core/a.hpp", '#pragma once\n#include "gpucomm/core/b.hpp"\n')
    write(tmp_path, "include/gpucomm/core/b.hpp", '#pragma once\n#include "gpucomm/core/a.hpp"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "include cycle" in r.stdout


def test_unknown_layer_folder_fails(tmp_path):
    write(tmp_path, "include/gpucomm/core/ok.hpp", "#pragma once\n")
    write(tmp_path, "include/gpucomm/newlayer/x.hpp", '#pragma once\n#include "gpucomm/core/ok.hpp"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "'newlayer' is not a known layer" in r.stdout


def test_downward_include_passes(tmp_path):
    write(tmp_path, "include/gpucomm/core/error.hpp", "#pragma once\n")
    write(tmp_path, "include/gpucomm/base/handle.hpp", '#pragma once\n#include "gpucomm/core/error.hpp"\n')
    write(tmp_path, "src/runtime/x.cpp", '#include "gpucomm/base/handle.hpp"\n#include "core/host_wait.hpp"\n')
    write(tmp_path, "src/core/host_wait.hpp", "#pragma once\n")
    r = run(tmp_path)
    assert r.returncode == 0, r.stdout
