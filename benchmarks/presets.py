"""ndpool under each preset against itself: ``python benchmarks/presets.py [--quick] [--filter S] [--repeat N]``.

A preset changes the NaN rule and the empty-window value and index; issue 3 asks that neither costs speed.
For every f32 workload of suite.py (values only, and with i64 indices where the workload has indices; the
i32 rows take the same loops), ndpool runs under each preset the op has, round-robin in one process on the
same data with 2 threads, minimum over ``--repeat`` rounds (suite.time_round_robin: a few calls in a row
each). Prints the ms per preset and the slowest preset's time over the fastest's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _peers
import suite

MAX_POOL = ("spec", "openvino", "onednn", "torch", "onnx")
ADAPTIVE = ("spec", "openvino", "torch")


def calls(w: suite.Workload, x_ncx: np.ndarray) -> dict[str, Any]:
    """One call per preset, as benchmarks/run.py calls ndpool (each on its own copy of the input in
    the workload's layout)."""
    presets = MAX_POOL if w.op == "max_pool" else ADAPTIVE
    return {sem: _peers.ndpool_candidate(w, x_ncx, semantics=sem).run for sem in presets}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=suite.DEFAULT_REPEAT)
    p.add_argument("--filter", metavar="SUBSTR", help="only workloads whose name contains SUBSTR")
    p.add_argument("--quick", action="store_true", help="tiny shapes: a smoke run")
    args = p.parse_args(argv)
    _peers.set_ndpool_threads()
    workloads = [w for w in suite.select(suite.quick_workloads() if args.quick else suite.WORKLOADS, args.filter)
                 if w.dtype == "f32" and w.indices != "i32"]
    print(f"{'workload':<42} " + " ".join(f"{s:>9}" for s in MAX_POOL) + "  slowest/fastest")
    for w in workloads:
        fs = calls(w, suite.make_input(w))
        for f in fs.values():
            f()  # compile or load, first touch
        best = suite.time_round_robin(fs, args.repeat)
        cells = " ".join(f"{best[s] * 1e3:9.2f}" if s in best else f"{'-':>9}" for s in MAX_POOL)
        print(f"{w.name:<42} {cells}  {max(best.values()) / min(best.values()):.2f}", flush=True)


if __name__ == "__main__":
    main()
