"""The deep-learning communication models of section 4.5 of Klenk's thesis (docs/REFERENCES.md).

1. Measured speedups (Table 4.3, data-parallel AlexNet on Kepler K80 GPUs): with a single-GPU
   time per batch T1 and, on n GPUs, computation C_n and communication M_n per batch,
       speedup without communication = T1 / C_n,   speedup with communication = T1 / (C_n + M_n)
   (no overlap of computation and communication). The table does not print T1; by default it is
   taken as the mean of speedup_without_n x C_n over the table's columns (about 1318 ms).

2. Analytic efficiency (§4.5.3 of the thesis): batch N, per-sample work F, GPU rate P, link bandwidth B,
   weights W, activations A (4-byte floats), n GPUs:
       t_serial = N F / P,   t_parallel = t_serial / n + t_comm
       data parallel:  fully connected t_comm = 4 W / B,        ring 4 (n-1) W / B
       model parallel: fully connected t_comm = 4 N A / (n B),  ring 4 N (n-1) A / (n B)
       efficiency p = t_serial / (n t_parallel)
"""
from __future__ import annotations

from dataclasses import dataclass

# Klenk's thesis, Table 4.3 (published values, rounded as printed).
TABLE_4_3 = {
    "gpus": [2, 4, 8],
    "effective_batch": [64, 32, 16],
    "communication_ms": [61.0, 183.0, 427.0],
    "computation_ms": [760.0, 488.0, 355.0],
    "computation_over_communication": [12.48, 2.66, 0.83],
    "speedup_without_communication": [1.73, 2.70, 3.72],
    "speedup_with_communication": [1.60, 1.97, 1.69],
}

# Klenk's thesis, Table 4.4: parameters (weights), neurons (activations), FLOPs per sample.
NETS = {
    "AlexNet": (60e6, 0.7e6, 0.72e9),
    "VGG-16": (138e6, 14e6, 15.3e9),
    "GoogLeNet": (6.8e6, 4.5e6, 1.5e9),
    "ResNet-152": (26e6, 20e6, 11.3e9),
}


@dataclass
class SpeedupRow:
    gpus: int
    computation_ms: float
    communication_ms: float
    ratio: float
    speedup_without: float
    speedup_with: float


def default_single_gpu_ms() -> float:
    t = TABLE_4_3
    vals = [s * c for s, c in zip(t["speedup_without_communication"], t["computation_ms"])]
    return sum(vals) / len(vals)


def speedups(gpus: list[int], computation_ms: list[float], communication_ms: list[float],
             single_gpu_ms: float) -> list[SpeedupRow]:
    if not (len(gpus) == len(computation_ms) == len(communication_ms)):
        raise ValueError("arguments --gpus, --computation-ms and --communication-ms need the same number of values")
    if single_gpu_ms <= 0:
        raise ValueError("argument --single-gpu-ms must be positive")
    rows = []
    for n, c, m in zip(gpus, computation_ms, communication_ms):
        if c <= 0 or m < 0:
            raise ValueError(f"computation must be > 0 and communication >= 0 (got {c} and {m} ms for {n} GPUs)")
        rows.append(SpeedupRow(n, c, m, c / m if m else float("inf"), single_gpu_ms / c, single_gpu_ms / (c + m)))
    return rows


def efficiency(weights: float, activations: float, flops: float, gpus: int, parallelism: str, topology: str,
               batch: int = 512, gpu_flops: float = 9.3e12, bandwidth: float = 80e9) -> float:
    t_serial = batch * flops / gpu_flops
    if parallelism == "data":
        t_comm = 4 * weights / bandwidth * (1 if topology == "fc" else gpus - 1)
    elif parallelism == "model":
        t_comm = 4 * batch * activations / (gpus * bandwidth) * (1 if topology == "fc" else gpus - 1)
    else:
        raise ValueError(f"parallelism must be 'data' or 'model', not {parallelism!r}")
    if topology not in ("fc", "ring"):
        raise ValueError(f"topology must be 'fc' or 'ring', not {topology!r}")
    return t_serial / (gpus * (t_serial / gpus + t_comm))
