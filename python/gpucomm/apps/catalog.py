"""The catalog of the suite, as the ``gpucomm-apps catalog`` program prints it, and the checks of a
command line against it (unknown application, model or size: a UsageError listing the valid ones)."""
from __future__ import annotations

import dataclasses
import json
import subprocess

from gpucomm._tools import find_tool

_K, _M = 1024, 1024 * 1024


class UsageError(ValueError):
    """A bad application, model or size on the command line (exit code 2)."""


@dataclasses.dataclass
class App:
    name: str
    summary: str
    done: bool
    size_unit: str
    min_size: int
    max_size: int
    default_sizes: list[int]
    sweep: list[int]
    models: list[dict]
    power_of_two: bool = False
    warmup: int = 5  # steps when none are given (gpucomm-apps catalog): run and compare
    iters: int = 50
    quick_warmup: int = 2  # with --quick
    quick_iters: int = 10

    def steps(self, quick: bool) -> dict[str, int]:
        """The application's default warm-up and timed steps (`--quick`: fewer)."""
        if quick:
            return {"warmup": self.quick_warmup, "iters": self.quick_iters}
        return {"warmup": self.warmup, "iters": self.iters}

    def models_done(self, kind: str) -> list[str]:
        """The models this application has on `kind` ("host" or "gpu") PEs."""
        return [m["model"] for m in self.models if m[kind] == "done"]

    def check_models(self, names: list[str], kind: str) -> list[str]:
        where = "GPU PEs" if kind == "gpu" else "host-memory PEs"
        valid = ", ".join(self.models_done(kind)) or "none (it needs GPU PEs)"
        by_name = {m["model"]: m for m in self.models}
        for name in names:
            m = by_name.get(name)
            if m is None:
                raise UsageError(f"--model: unknown model '{name}' of {self.name}; valid models on {where}: {valid}")
            if m[kind] != "done":
                note = m[f"{kind}_note"]
                raise UsageError(f"--model: {self.name} has no model '{name}' on {where} ({m[kind]}"
                                 f"{': ' + note if note else ''}); valid models: {valid}")
        return names

    def valid_sizes(self) -> str:
        kind = "powers of two" if self.power_of_two else "integers"
        return (f"valid sizes of {self.name}: {kind} from {size_text(self.min_size)} to {size_text(self.max_size)} "
                f"{self.size_unit} with an optional K (x1024) or M (x1048576) suffix, e.g. 128 or 256K, "
                f"or 'sweep' ({','.join(size_text(s) for s in self.sweep)})")

    def parse_sizes(self, text: str) -> list[int]:
        if text == "sweep":
            return list(self.sweep)
        return [self.parse_size(t) for t in text.split(",")]

    def parse_size(self, text: str) -> int:
        mult, digits = 1, text
        if digits[-1:] in ("K", "k"):
            mult, digits = _K, digits[:-1]
        elif digits[-1:] in ("M", "m"):
            mult, digits = _M, digits[:-1]
        if not digits.isdigit():
            raise UsageError(f"--size: '{text}' is not a size; {self.valid_sizes()}")
        v = int(digits) * mult
        if not self.min_size <= v <= self.max_size:
            raise UsageError(f"--size: '{text}' is out of range; {self.valid_sizes()}")
        if self.power_of_two and v & (v - 1):
            raise UsageError(f"--size: '{text}' is not a power of two; {self.valid_sizes()}")
        return v


def size_text(n: int) -> str:
    if n >= _M and n % _M == 0:
        return f"{n // _M}M"
    if n >= _K and n % _K == 0:
        return f"{n // _K}K"
    return str(n)


def load() -> list[App]:
    """Every application of the suite, finished or planned."""
    out = subprocess.run([str(find_tool("gpucomm-apps")), "catalog"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    fields = {f.name for f in dataclasses.fields(App)}
    return [App(**{k: v for k, v in a.items() if k in fields}) for a in json.loads(out)["apps"]]


def find(apps: list[App], name: str) -> App:
    done = ", ".join(a.name for a in apps if a.done)
    for a in apps:
        if a.name == name:
            if not a.done:
                raise UsageError(f"APP: {name} is planned, not written yet; valid applications: {done}")
            return a
    raise UsageError(f"APP: unknown application '{name}'; valid applications: {done}")
