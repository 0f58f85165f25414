"""The Python API on GPU PEs with torch; run by test_python_api.py under ``gpucomm run -n 2`` (the
PEs share the GPU on a 1-GPU machine). Checks that blocking calls see what torch queued before
them, and that stream-ordered calls run in order with torch's work on torch's current stream:
a long torch kernel (torch.cuda._sleep) runs before the data is computed, so a call on another
stream would move stale data. Each rank prints ``PY GPU OK rank R`` at the end."""
from __future__ import annotations

import sys

import numpy as np
import torch

import gpucomm

SLEEP_CYCLES = 200_000_000  # about 0.1 s of one SM: long enough for an unordered copy to run first


def sleep_on_current_stream() -> None:
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(SLEEP_CYCLES)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def blocking_calls(rt, dev) -> None:
    me, n = rt.rank, rt.size
    right, left = (me + 1) % n, (me - 1) % n
    inbox = torch.from_dlpack(rt.zeros((4, 1024), "float32"))
    sig = torch.from_dlpack(rt.zeros(1, "uint64"))
    check(inbox.is_cuda and inbox.device.index == rt.device_id, f"symmetric tensor on {inbox.device}")
    rt.barrier_all()
    for r in range(4):
        x = torch.arange(1024, device=dev, dtype=torch.float32)
        sleep_on_current_stream()
        y = x * 2 + 100 * me + r  # queued behind the sleep: put_signal must wait for it
        rt.put_signal(inbox[r], y, sig, 1, "add", right)
        rt.signal_wait_until(sig, "ge", r + 1)
        want = torch.arange(1024, device=dev, dtype=torch.float32) * 2 + 100 * left + r
        check(torch.equal(inbox[r], want), f"round {r}: inbox holds {inbox[r][:4].tolist()}..., want {want[:4].tolist()}...")
    rt.barrier_all()
    # p/g/atomics on device words, and a peer view written with torch.
    words = torch.from_dlpack(rt.zeros(2, "int64"))
    rt.barrier_all()
    rt.atomic_add(words[0:1], 3, 0)
    rt.p(words[1:2], 40 + me, right)
    rt.barrier_all()
    check(rt.atomic_fetch(words[0:1], 0) == 3 * n, "atomic_add on device words")
    check(int(words[1]) == 40 + left and rt.g(words[1:2], right) == 40 + me, "p/g on device words")
    view = rt.peer_view(inbox, right)
    check(isinstance(view, torch.Tensor) and view.is_cuda and view.shape == inbox.shape, f"peer_view gave {type(view)}")
    rt.barrier_all()
    view[0].fill_(float(me))
    torch.cuda.synchronize(dev)
    rt.barrier_all()
    check(bool((inbox[0] == float(left)).all()), "a store through peer_view did not land")
    rt.barrier_all()


def stream_ordered_on_torch_stream(rt, dev) -> None:
    me, n = rt.rank, rt.size
    right, left = (me + 1) % n, (me - 1) % n
    dst = torch.from_dlpack(rt.zeros(1 << 16, "float32"))
    back = torch.from_dlpack(rt.zeros(1 << 16, "float32"))
    sig = torch.from_dlpack(rt.zeros(1, "uint64"))
    rt.barrier_all()
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        for r in range(1, 4):
            x = torch.arange(1 << 16, device=dev, dtype=torch.float32)
            sleep_on_current_stream()
            y = x + 1000 * me + r                                        # torch work before the put
            rt.put_signal_on_stream(dst, y, sig, r, "set", right)        # on s: after y
            rt.wait_until_on_stream(sig, "ge", r)                        # on s: before z
            z = dst * 1                                                  # torch work after the wait
            s.synchronize()
            want = torch.arange(1 << 16, device=dev, dtype=torch.float32) + 1000 * left + r
            check(torch.equal(z, want), f"round {r}: got {z[:3].tolist()}..., want {want[:3].tolist()}...")
            rt.barrier_on_stream(stream=torch.cuda.current_stream(dev))  # nobody overwrites dst early
            s.synchronize()
        # get_on_stream and signal_on_stream, with the stream given explicitly (object and handle).
        rt.get_on_stream(back, dst, right, stream=s)
        rt.signal_on_stream(sig, 100, "add", right, stream=s.cuda_stream)
        rt.wait_until_on_stream(sig, "ge", 103, stream=s)
        s.synchronize()
    want = torch.arange(1 << 16, device=dev, dtype=torch.float32) + 1000 * me + 3  # what right received from me
    check(torch.equal(back, want), "get_on_stream read the wrong data")
    rt.check_device()
    try:
        rt.put_on_stream(dst, np.zeros(1 << 16, np.float32), right)
        raise AssertionError("a host array was accepted by put_on_stream")
    except ValueError as exc:
        check("host memory" in str(exc), str(exc))
    check(rt.stream > 0, "Runtime.stream")
    rt.barrier_all()


def main() -> None:
    with gpucomm.Runtime() as rt:
        check(rt.pe_kind == "gpu", rt.pe_kind)
        dev = torch.device("cuda", rt.device_id)
        torch.cuda.set_device(dev)
        blocking_calls(rt, dev)
        stream_ordered_on_torch_stream(rt, dev)
        print(f"PY GPU OK rank {rt.rank}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
