"""What handing the parts of a call to other threads costs: ``python benchmarks/handoff.py [--calls N]``.

The job is a no-op on a few elements, so that only the round trip counts. Printed, in microseconds a
call (minimum of five runs), the job split over numba's thread count:

- ``executor``: every part submitted to a ``ThreadPoolExecutor`` and waited for (what the launcher did
  before its crew, and still does for a call that finds the crew busy): each part waits for a sleeping
  thread to wake, and the caller for its own wake-up;
- ``crew``: ``_threads.split``, the caller running the first part and the crew's polling workers the
  others (see ``ndpool._kernels._threads``);
- ``inline``: the whole job on the calling thread.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import njit

from ndpool._kernels import _threads


@njit(nogil=True)
def _job(a, lo, hi):  # type: ignore[no-untyped-def]
    for i in range(lo, hi):
        a[i] += 1.0


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def measure(calls: int) -> dict[str, float]:
    """Microseconds a call of each way (see the module's docstring); each run's job checked whole."""
    a = np.zeros(16)
    threads = numba.get_num_threads()
    parts = _threads.split_parts(a.size, threads)
    runs = {"executor": lambda: _threads.on_pool(lambda lo, hi: _job(a, lo, hi), parts),
            "crew": lambda: _threads.split(lambda lo, hi: _job(a, lo, hi), a.size, threads),
            "inline": lambda: _job(a, 0, a.size)}
    figures = {}
    for name, run in runs.items():
        before = a.copy()
        run()
        if not np.array_equal(a, before + 1):
            raise AssertionError(f"{name}: the job did not reach every element")
        figures[name] = per_call_us(run, calls)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls a run (five runs, minimum kept)")
    args = parser.parse_args(argv)
    print(f"{numba.get_num_threads()} threads")
    for name, us in measure(args.calls).items():
        print(f"{name:9s} {us:7.1f} us a call")


if __name__ == "__main__":
    main()
