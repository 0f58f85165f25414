"""Element types the C++ collectives do not take natively, for gpucomm.collectives.

The C++ side reduces float8, float16, bfloat16, float32, float64, int32, int64, uint32 and uint64.
Here the others are carried on those:

- moving bytes (broadcast, allgather, alltoall, alltoallv and what is built on them): 2-, 4- and
  8-byte elements travel as a native type of the same size (a view, no copy); 16-byte elements
  (complex128) as two uint64; 1-byte elements (int8, uint8, bool) as a widened 2-byte copy (twice
  the bytes, and a copy in and out);
- reducing: int8, uint8, int16 and uint16 widen to uint32 for sum, prod and the bitwise operations
  (the result narrowed back wraps modulo 2^bits exactly as the native type would) and to int32
  for min and max; bool widens to 0/1 in uint32 with sum = or (max), prod = and (min), as numpy's
  add and multiply on bool arrays; complex sums as pairs of floats.

Every helper works on numpy, cupy and torch arrays alike.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

NATIVE = {"float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64", "int32", "int64", "uint32",
          "uint64"}
SMALL_INTS = {"int8", "uint8", "int16", "uint16"}
COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}
REDUCTIONS = ("sum", "prod", "min", "max", "band", "bor", "bxor")
BITWISE = ("band", "bor", "bxor")
# bool reduced as 0/1 words: or is max, and is min; the bitwise operations act on 0/1 as on bool.
BOOL_AS = {"sum": "max", "prod": "min", "min": "min", "max": "max", "band": "band", "bor": "bor", "bxor": "bxor"}
# The native type of each element size that carries bytes (1-byte elements widen to 2 bytes).
CARRIER = {2: "float16", 4: "uint32", 8: "uint64", 16: "uint64"}


def module_of(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def dtype_name(x: Any) -> str:
    """'int8', 'bool', 'complex64', ... for numpy, cupy and torch arrays alike."""
    return str(getattr(x, "dtype", "?")).replace("torch.", "")


def is_native(x: Any) -> bool:
    return dtype_name(x) in NATIVE


def itemsize(x: Any) -> int:
    if module_of(x) == "torch":
        return int(x.element_size())
    return int(x.dtype.itemsize)


def _xp(x: Any) -> Any:
    mod = module_of(x)
    if mod == "torch":
        import torch
        return torch
    if mod == "cupy":
        import cupy
        return cupy
    import numpy
    return numpy


def _torch_dtype(name: str) -> Any:
    import torch
    return getattr(torch, name)


def flat(x: Any) -> Any:
    """A 1-D view of a C-contiguous array."""
    return x.reshape(-1)


def view(x: Any, name: str) -> Any:
    """x's bytes as `name` (1-D)."""
    x = flat(x)
    return x.view(_torch_dtype(name)) if module_of(x) == "torch" else x.view(name)


def astype(x: Any, name: str) -> Any:
    """A converted copy (integer narrowing wraps, as a C cast)."""
    return x.to(_torch_dtype(name)) if module_of(x) == "torch" else x.astype(name)


def copy_into(dst: Any, src: Any) -> None:
    """dst's elements (in C order) from the 1-D `src`."""
    if module_of(dst) == "torch":
        dst.reshape(-1).copy_(src.reshape(-1))
    else:
        dst.reshape(-1)[...] = src.reshape(-1)


def empty_as(x: Any, n: int, name: Optional[str] = None) -> Any:
    """A new 1-D array of n elements of x's dtype (or `name`) on x's device."""
    xp = _xp(x)
    if module_of(x) == "torch":
        return xp.empty(n, dtype=_torch_dtype(name) if name else x.dtype, device=x.device)
    return xp.empty(n, dtype=name or x.dtype)


def is_floating(x: Any) -> bool:
    return dtype_name(x) in NATIVE and dtype_name(x).startswith(("float", "bfloat"))


def _unsupported(call: str, x: Any) -> Exception:
    return TypeError(f"gpucomm: Collectives.{call}: unsupported dtype {dtype_name(x)} (elements of 1, 2, 4, 8 or "
                     "16 bytes move; reductions take floats, integers, bool and complex)")


# ---- moving bytes -------------------------------------------------------------------------------------------


class Wires:
    """The arrays one call moves, each as its native carrier; `factor` carrier elements per element.
    The same array asked for twice gets the same carrier (so an in-place call stays in place)."""

    def __init__(self, call: str):
        self.call = call
        self.factor = 1
        self._made: dict[int, tuple[Any, Any, bool]] = {}

    def of(self, x: Any) -> Any:
        if id(x) in self._made:
            return self._made[id(x)][1]
        wire, copied = self._carry(x)
        self._made[id(x)] = (x, wire, copied)
        return wire

    def _carry(self, x: Any) -> tuple[Any, bool]:
        if is_native(x):
            return x, False
        size = itemsize(x)
        if size == 1:  # no native 1-byte type outside float8: widen to 2 bytes
            return view(astype(view(x, "uint8"), "int16"), "float16"), True
        if size not in CARRIER:
            raise _unsupported(self.call, x)
        self.factor = 2 if size == 16 else 1
        return view(x, CARRIER[size]), False

    def write_back(self, x: Any) -> None:
        """Puts the carrier's result into `x` where the carrier was a copy."""
        entry = self._made.get(id(x))
        if entry is None or not entry[2]:
            return
        narrowed = astype(view(entry[1], "int16"), "uint8")
        copy_into(view(x, "uint8"), narrowed)


def same_dtype(call: str, send: Any, recv: Any) -> None:
    if dtype_name(send) != dtype_name(recv):
        raise TypeError(f"gpucomm: {call}: send and recv differ in dtype ({dtype_name(send)}, {dtype_name(recv)})")


# ---- reducing -----------------------------------------------------------------------------------------------


def canonical_op(op: str) -> str:
    return "avg" if op == "average" else op


def check_reduction(call: str, op: str, x: Any, invalid: Callable[[str, str, str], Exception]) -> None:
    """Raises, naming the operation and the type, for a pair that has no exact meaning here:
    avg on integers and bool, min, max and the bitwise operations on complex, the bitwise operations
    on floats, unknown operations and types."""
    name = dtype_name(x)
    if op not in REDUCTIONS and op != "avg":
        raise invalid(call, "op", f"unknown reduction '{op}' (sum, prod, min, max, avg, band, bor, bxor)")
    if name not in NATIVE | SMALL_INTS | set(COMPLEX_PARTS) | {"bool"}:
        raise _unsupported(call, x)
    if op == "avg" and not (is_floating(x) or name in COMPLEX_PARTS):
        raise invalid(call, "op", f"'avg' needs a floating or complex type, got {name}")
    if name in COMPLEX_PARTS and op not in ("sum", "prod", "avg"):
        raise invalid(call, "op", f"'{op}' is not defined on {name} (complex takes sum, prod and avg)")
    if op in BITWISE and (is_floating(x) or name in COMPLEX_PARTS):
        raise invalid(call, "op", f"'{op}' takes integer types only, got {name}")


def widening(x: Any, op: str) -> tuple[str, str]:
    """(the native type, the native operation) a small integer or bool reduces as."""
    if dtype_name(x) == "bool":
        return "uint32", BOOL_AS[op]
    signed = dtype_name(x).startswith("int")
    return ("int32" if signed and op in ("min", "max") else "uint32"), op


def widen(x: Any, name: str) -> Any:
    """x as `name`, 1-D: a sign- or zero-extending copy (bool: 0/1)."""
    if module_of(x) == "torch" and name == "uint32":
        return _widen_torch_u32(flat(x))
    return astype(flat(x), name)


def _widen_torch_u32(x: Any) -> Any:
    import torch
    wide = x.to(torch.int32)  # sign-extended: the bits of the uint32 conversion
    return wide.view(torch.uint32) if hasattr(torch, "uint32") else wide


def narrow_into(dst: Any, wide: Any) -> None:
    """dst from the widened result: integers wrap modulo 2^bits, bool is nonzero."""
    name = dtype_name(dst)
    if module_of(wide) == "torch" and dtype_name(wide) == "uint32":
        wide = wide.view(_torch_dtype("int32"))
    if name == "bool":
        copy_into(dst, wide != 0)
    else:
        copy_into(dst, astype(wide, name))


def complex_parts(x: Any) -> Any:
    """A complex array as a 1-D array of its float parts (a view)."""
    return view(x, COMPLEX_PARTS[dtype_name(x)])


def combine(acc: Any, b: Any, op: str) -> Any:
    """acc `op` b elementwise in the arrays' own type (numpy/cupy/torch semantics: integers wrap,
    bool add is or and multiply is and)."""
    if op == "sum":
        return acc + b
    if op == "prod":
        return acc * b
    if op == "min":
        return _xp(acc).minimum(acc, b)
    if op == "max":
        return _xp(acc).maximum(acc, b)
    if op == "band":
        return acc & b
    if op == "bor":
        return acc | b
    return acc ^ b


def fold(blocks: list, op: str, n_for_avg: int) -> Any:
    """blocks[0] op blocks[1] op ... left to right (rank order); avg: the sum divided by n_for_avg."""
    acc = blocks[0].clone() if module_of(blocks[0]) == "torch" else blocks[0].copy()
    for b in blocks[1:]:
        acc = combine(acc, b, "sum" if op == "avg" else op)
    if op == "avg":
        acc = acc / n_for_avg
    return acc
