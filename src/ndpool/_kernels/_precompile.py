"""Compile the kernels for every element type ahead of use, in parallel processes.

A cold numba cache costs seconds per (kernel, element type), about six minutes for all of them on one
core. ``python -m ndpool._kernels._precompile`` compiles them all in as many processes as there are
cores (the test suite starts with it). Kernels are grouped so that no compiled function is built by two
processes: each process then writes its own entries to the on-disk cache.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ._adaptive import adaptive_width_inner
from ._channel_blocks import pool_channel_blocks
from ._channel_runs import pool_channel_runs
from ._folds import pool_folds
from ._launch import _STORAGE, FLOAT_STORAGE, NATIVE_I32, NATIVE_I32_STORAGE, _compiled
from ._loops import pool_channels_inner
from ._outer_first import pool_outer_first, pool_outer_first_ncx
from ._plane_lanes import pool_plane_lanes
from ._planes import pool_planes
from ._separable import pool_separable
from ._separable_nxc import pool_separable_nxc
from ._sliding import pool_sliding
from ._tiles import pool_tiles
from ._width_inner import pool_width_inner

# Kernels that call the same compiled helpers stay in one group (separable ones share the tables
# and fix-ups; the row loops share _loops' update runs, pool_plane_lanes and pool_outer_first call
# pool_channels_inner and pool_channel_blocks, pool_outer_first_ncx and pool_tiles pool_width_inner).
# adaptive_width_inner calls none: it evens out the compile times.
GROUPS = ((pool_separable, pool_separable_nxc, pool_folds, pool_sliding, adaptive_width_inner),
          (pool_planes, pool_width_inner, pool_channels_inner, pool_channel_runs, pool_channel_blocks,
           pool_plane_lanes, pool_outer_first, pool_outer_first_ncx, pool_tiles))
STORAGE_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)) + tuple(
    _STORAGE.values())


def compile_group(group: int) -> None:
    """Compile (or load from the cache) every kernel of ``GROUPS[group]`` for every element type (and
    int32 indices where the kernel writes them itself)."""
    for kernel in GROUPS[group]:
        for dtype in STORAGE_TYPES:
            if kernel in (pool_outer_first, pool_outer_first_ncx, pool_tiles) and dtype not in FLOAT_STORAGE:
                continue  # (the launcher sends them float types only)
            _compiled(kernel, dtype)
            if kernel in NATIVE_I32 and dtype in NATIVE_I32_STORAGE:
                _compiled(kernel, dtype, np.dtype(np.int32))


def compile_all() -> None:
    """Every group in its own process, or one after the other on a single core."""
    if (os.cpu_count() or 1) < 2:
        for group in range(len(GROUPS)):
            compile_group(group)
        return
    procs = [subprocess.Popen([sys.executable, "-m", "ndpool._kernels._precompile", str(group)])
             for group in range(len(GROUPS))]
    for proc in procs:
        proc.wait()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        compile_group(int(sys.argv[1]))
    else:
        compile_all()
