"""Hand-made MPI traces in the text form dumpi2ascii prints, for regression tests of the trace
toolkit: each rank file is a list of calls (name, start and stop in microseconds, argument lines)."""
from __future__ import annotations

from pathlib import Path

WORLD = "MPI_Comm comm=2 (MPI_COMM_WORLD)"


def _stamp(us: float) -> str:
    return f"{1000 + us * 1e-6:.9f}"


def call(name: str, t0_us: float, t1_us: float, *args: str) -> str:
    lines = [f"{name} entering at walltime {_stamp(t0_us)}, cputime 0.000000000 seconds in thread 0."]
    lines += list(args)
    lines.append(f"{name} returning at walltime {_stamp(t1_us)}, cputime 0.000000000 seconds in thread 0.")
    return "\n".join(lines) + "\n"


def init(t: float = 0) -> str:
    return call("MPI_Init", t, t + 1, "int argc=1", 'string argv[1]=["prog"]')


def finalize(t: float) -> str:
    return call("MPI_Finalize", t, t + 1)


def send(t: float, dest: int, count: int = 2, tag: int = 5) -> str:
    return call("MPI_Send", t, t + 1, f"int count={count}", "MPI_Datatype datatype=9 (MPI_INT)", f"int dest={dest}",
                f"int tag={tag}", WORLD)


def irecv(t: float, source: int, request: int, count: int = 2, tag: int = 5) -> str:
    return call("MPI_Irecv", t, t + 1, f"int count={count}", "MPI_Datatype datatype=9 (MPI_INT)",
                f"int source={source}", f"int tag={tag}", WORLD, f"MPI_Request request=[{request}]")


def wait(t: float, request: int, source: int, cancelled: int = 0, tag: int = 5, nbytes: int = 8) -> str:
    return call("MPI_Wait", t, t + 1, f"MPI_Request request=[{request}]",
                f"MPI_Status status=[{{bytes={nbytes}, cancelled={cancelled}, source={source}, tag={tag}, error=0}}]")


def write_run(folder: Path, ranks: list[list[str]], prefix: str = "run") -> Path:
    """Writes <folder>/<prefix>-NNNN.txt, one per rank; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for r, calls in enumerate(ranks):
        (folder / f"{prefix}-{r:04d}.txt").write_text("".join(calls))
    return folder


def ping(folder: Path, prefix: str = "run", sizes: tuple[int, ...] = (2,)) -> Path:
    """A two-rank run: rank 0 sends one message of each count in `sizes` to rank 1."""
    r0 = [init()] + [send(10 + 10 * k, 1, count=c, tag=k) for k, c in enumerate(sizes)] + [finalize(1000)]
    r1 = [init()]
    for k, c in enumerate(sizes):
        r1 += [irecv(5 + 10 * k, 0, 100 + k, count=c, tag=k), wait(15 + 10 * k, 100 + k, 0, tag=k, nbytes=4 * c)]
    r1.append(finalize(1000))
    return write_run(folder, [r0, r1], prefix)
