"""gpucomm.messaging.Partitioned from Python on 1, 2 and 3 host-memory PEs under ``gpucomm run`` (numpy
arrays and symmetric arrays): a ring of partitioned sends with different partition counts on both
sides, partitions marked ready in random order by pready, pready_range and pready_list, parrived,
several rounds, every byte checked; bad arguments and calls out of order raise InvalidArgumentError
naming what is wrong; the Messenger closes its Partitioned objects first."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os
    import random

    import numpy as np
    import gpucomm

    M = gpucomm.messaging
    seed = int(os.environ.get("GPUCOMM_TEST_SEED", "0")) or random.randrange(1 << 30)
    with gpucomm.Runtime() as rt:
        me, n = rt.rank, rt.size
        rng = random.Random(seed * 1000 + me)
        right, left = (me + 1) % n, (me - 1) % n
        with M.Messenger(rt) as m:
            part = M.Partitioned(m)  # closed by the Messenger's close, before it
            w = m.world()
            total = 8 * 6 * 5
            sym = np.from_dlpack(rt.zeros((total,), "uint8"))
            for label, inbox in (("numpy", np.zeros(total, dtype=np.uint8)), ("symmetric", sym)):
                out = np.zeros(total, dtype=np.uint8)
                s = part.psend_init(w, out, 8, right, 4)          # 8 partitions of 30 bytes
                r = part.precv_init(w, inbox, 6, left, 4)         # 6 of 40: the same total
                assert (s.kind, s.partitions, s.partition_bytes) == ("send", 8, 30), (s.kind, s.partitions)
                assert r.kind == "recv" and r.staged == (label == "numpy"), (label, r.staged)
                for rnd in range(1, 4):
                    out[:] = (np.arange(total) * 7 + me * 31 + rnd) % 251
                    inbox[:] = 0
                    r.start()
                    s.start()
                    assert s.active and s.round == rnd
                    order = list(range(8))
                    rng.shuffle(order)
                    s.pready(order[0])
                    s.pready_list(order[1:4])
                    for i in order[4:]:
                        s.pready_range(i, i)
                    for j in range(6):
                        while not r.parrived(j):
                            part.progress()
                        want = (np.arange(40 * j, 40 * (j + 1)) * 7 + left * 31 + rnd) % 251
                        assert (inbox[40 * j:40 * (j + 1)] == want).all(), (label, rnd, j, seed)
                    s.wait()
                    while not r.test():
                        pass
                    assert not r.active and r.parrived(5)
                s.free()
                r.free()
            part.progress()
            assert part.pool_in_use == 64, part.pool_in_use  # the block announcements arrive in

            # Bad arguments and calls out of order name what is wrong.
            s = part.psend_init(w, np.zeros(64, dtype=np.uint8), 4, right, 9)
            r = part.precv_init(w, np.zeros(64, dtype=np.uint8), 2, left, 9)
            for call, want in ((lambda: part.psend_init(w, np.zeros(10, dtype=np.uint8), 3, right, 1), "partitions"),
                               (lambda: part.psend_init(w, np.zeros(8, dtype=np.uint8), 2, n, 1), "dest"),
                               (lambda: part.precv_init(w, np.zeros(8, dtype=np.uint8), 2, M.ANY_SOURCE, 1), "source"),
                               (lambda: s.pready(0), "not active"),
                               (lambda: r.pready(0), "receive request"),
                               (lambda: r.parrived(0), "never started")):
                try:
                    call()
                except gpucomm.InvalidArgumentError as exc:
                    assert isinstance(exc, ValueError) and want in str(exc), (want, str(exc))
                else:
                    raise AssertionError("no error for " + want)
            r.start()
            s.start()
            for call, want in ((lambda: s.pready(4), "partition"), (lambda: s.start(), "still active"),
                               (lambda: s.free(), "still active")):
                try:
                    call()
                except gpucomm.InvalidArgumentError as exc:
                    assert want in str(exc), (want, str(exc))
                else:
                    raise AssertionError("no error for " + want)
            s.pready_range(0, 3)
            s.wait()
            r.wait()
            rt.barrier_all()
        # The Messenger closed its Partitioned object first: the requests now raise.
        try:
            s.start()
        except ValueError as exc:
            assert "closed" in str(exc), str(exc)
        else:
            raise AssertionError("a request of a closed Partitioned object worked")
    print(f"PY OK rank {me}")
""")


def run_script(gpucomm_env, tmp_path, np_: int):
    script = tmp_path / "partitioned_script.py"
    script.write_text(SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_HEAP_SIZE="32M", GPUCOMM_TIMEOUT="60")
    return subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                          env=env, capture_output=True, text=True, timeout=300)


def test_partitioned_on_host_pes(gpucomm_env, tmp_path):
    for np_ in (1, 2, 3):
        r = run_script(gpucomm_env, tmp_path, np_)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.count("PY OK") == np_, r.stdout + r.stderr
