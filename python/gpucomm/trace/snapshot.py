"""Reader and writer of gpucomm queue-snapshot files (format: docs/TRACES.md and
include/gpucomm/trace/queue_snapshot.hpp)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAGIC = b"GCQSNAP1"
VERSION = 1
ANY = -1
_SNAP = struct.Struct("<iIdII")
_ENV = struct.Struct("<iiiIq")


@dataclass
class Envelope:
    comm: int
    source: int
    tag: int
    bytes: int = -1


@dataclass
class Snapshot:
    rank: int
    time_s: float
    umq: list[Envelope] = field(default_factory=list)
    prq: list[Envelope] = field(default_factory=list)
    reason: int = 1


def read(path: str) -> list[Snapshot]:
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError(f"{path}: byte offset 0: not a gpucomm queue snapshot file")
    version, count = struct.unpack_from("<II", data, 8)
    if version != VERSION:
        raise ValueError(f"{path}: byte offset 8: unsupported snapshot version {version}")
    pos, out = 16, []
    for _ in range(count):
        if pos + _SNAP.size > len(data):
            raise ValueError(f"{path}: byte offset {pos}: file ends inside a snapshot (truncated)")
        rank, reason, t, nu, np_ = _SNAP.unpack_from(data, pos)
        pos += _SNAP.size
        if pos + (nu + np_) * _ENV.size > len(data):
            raise ValueError(f"{path}: byte offset {pos}: queue lengths exceed the file (truncated)")
        envs = []
        for _ in range(nu + np_):
            c, s, tag, _flags, b = _ENV.unpack_from(data, pos)
            pos += _ENV.size
            envs.append(Envelope(c, s, tag, b))
        out.append(Snapshot(rank, t, envs[:nu], envs[nu:], reason))
    if pos != len(data):
        raise ValueError(f"{path}: byte offset {pos}: trailing bytes after the last snapshot")
    return out


def write(path: str, snapshots: list[Snapshot]) -> None:
    parts = [MAGIC, struct.pack("<II", VERSION, len(snapshots))]
    for s in snapshots:
        parts.append(_SNAP.pack(s.rank, s.reason, s.time_s, len(s.umq), len(s.prq)))
        for e in [*s.umq, *s.prq]:
            parts.append(_ENV.pack(e.comm, e.source, e.tag, 0, e.bytes))
    with open(path, "wb") as f:
        f.write(b"".join(parts))
