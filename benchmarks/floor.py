"""The memory floor of each workload: ``python benchmarks/floor.py [--filter S] [--repeat N]``.

What no engine can beat on this machine: the workload's input read once and its outputs' bytes written
once, each on two threads. A read is one vectorized pass over the input as the suite lays it out (an
int32 "any NaN" flag, so nothing is skipped); a write fills an array of the outputs' bytes, kept between
calls (no page faults), with the CPU's ordinary stores. Both are timed as in benchmarks/run.py (round-robin
minimum), and their sum is the floor printed beside each row: a pooling kernel reads and writes at once,
sharing the bandwidth. Compare it with run.py's figures for the same rows; where the fastest peer is
within 1.25x of the floor, 0.8x of that peer is out of reach for every engine.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite  # noqa: E402

THREADS = 2
_pool = ThreadPoolExecutor(max_workers=THREADS)


@njit(nogil=True, cache=True)
def _read(flat, lo, hi):  # type: ignore[no-untyped-def]
    nan = np.int32(0)
    for i in range(lo, hi):
        v = flat[np.uint64(i)]
        nan |= np.int32(v != v)
    return nan


@njit(nogil=True, cache=True)
def _write(out, lo, hi):  # type: ignore[no-untyped-def]
    for i in range(lo, hi):
        out[np.uint64(i)] = np.uint64(i)


def _split(fn, array: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    n = array.size
    jobs = [_pool.submit(fn, array, k * n // THREADS, (k + 1) * n // THREADS) for k in range(THREADS)]
    for job in jobs:
        job.result()


def runners(w: suite.Workload, data: np.ndarray) -> dict[str, Callable[[], None]]:
    """The floor's two timed parts for w, whose input (NCX order, as suite.make_input gives it) is ``data``:
    "read" its input in its layout, "write" its outputs' bytes, each on two threads (run.py --floor times
    them in the same rounds as the engines)."""
    out_bytes = suite.traffic_bytes(w, data) - data.nbytes
    x = np.ascontiguousarray(np.moveaxis(data, 1, -1) if w.layout == "NXC" else data).reshape(-1)
    # Read as f32 lanes whatever the type (f16/bf16 bits in pairs: still one pass over every byte).
    x = x.view(np.uint8)[: x.nbytes // 4 * 4].view(np.float32)
    out = np.zeros(max(1, out_bytes // 8), np.uint64)
    return {"read": lambda: _split(_read, x), "write": lambda: _split(_write, out)}


def floor_row(w: suite.Workload, repeat: int) -> dict[str, float]:
    """Milliseconds to read w's input (in its layout) and to write its outputs' bytes, each on two threads."""
    times = suite.time_round_robin(runners(w, suite.make_input(w)), repeat)
    return {"read_ms": times["read"] * 1e3, "write_ms": times["write"] * 1e3}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", metavar="SUBSTR", help="only workloads whose name contains SUBSTR")
    p.add_argument("--repeat", type=int, default=suite.DEFAULT_REPEAT, help="rounds, minimum kept")
    args = p.parse_args(argv)
    print(f"{'workload':45s} {'read ms':>8s} {'write ms':>9s} {'floor ms':>9s}")
    for w in suite.select(suite.WORKLOADS, args.filter):
        row = floor_row(w, args.repeat)
        print(f"{w.name:45s} {row['read_ms']:8.2f} {row['write_ms']:9.2f} {row['read_ms'] + row['write_ms']:9.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
