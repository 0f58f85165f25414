"""Bootstrap under other launchers' variables, across real processes: torchrun-style
(MASTER_ADDR/MASTER_PORT), Slurm-style single-node jobs (file rendezvous) and an explicit
GPUCOMM_BOOTSTRAP_ADDR."""
from __future__ import annotations

import os
import socket
import subprocess
import uuid


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(pe_program, n, per_rank_env, base_env, timeout=60):
    procs = []
    for r in range(n):
        env = dict(base_env)
        env.update({"GPUCOMM_DEVICE": "host"})
        env.update(per_rank_env(r))
        procs.append(subprocess.Popen([pe_program, "bootstrap"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        outs.append((p.returncode, o, e))
    return outs


def test_torchrun_style_variables(pe_program, gpucomm_env):
    port = _free_port() - 1  # gpucomm's store uses MASTER_PORT + 1
    outs = _spawn(pe_program, 4, lambda r: {"RANK": str(r), "WORLD_SIZE": "4", "LOCAL_RANK": str(r),
                                             "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1",
                                             "MASTER_PORT": str(port)}, gpucomm_env)
    for r, (rc, o, e) in enumerate(outs):
        assert rc == 0, e
        assert f"PE OK rank {r} of 4" in o


def test_slurm_style_single_node_uses_a_file_rendezvous(pe_program, gpucomm_env, tmp_path):
    job = uuid.uuid4().hex[:8]
    outs = _spawn(pe_program, 3, lambda r: {"SLURM_PROCID": str(r), "SLURM_NTASKS": "3", "SLURM_LOCALID": str(r),
                                             "SLURM_NNODES": "1", "SLURM_JOB_ID": job, "SLURM_STEP_ID": "0",
                                             "GPUCOMM_BOOTSTRAP_DIR": str(tmp_path)}, gpucomm_env)
    for r, (rc, o, e) in enumerate(outs):
        assert rc == 0, e
    assert not list(tmp_path.iterdir()), "the rendezvous file must be removed once everyone joined"


def test_explicit_store_address(pe_program, gpucomm_env):
    port = _free_port()
    outs = _spawn(pe_program, 2, lambda r: {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": "2",
                                             "GPUCOMM_BOOTSTRAP_ADDR": f"127.0.0.1:{port}"}, gpucomm_env)
    for rc, o, e in outs:
        assert rc == 0, e


def test_multinode_without_an_address_is_a_clear_error(pe_program, gpucomm_env):
    outs = _spawn(pe_program, 1, lambda r: {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
                                             "OMPI_COMM_WORLD_LOCAL_SIZE": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
                  gpucomm_env, timeout=30)
    rc, o, e = outs[0]
    assert rc != 0
    assert "GPUCOMM_BOOTSTRAP_ADDR" in e
