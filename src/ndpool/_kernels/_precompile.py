"""Compile the kernels for every element type ahead of use, in parallel processes.

A cold numba cache costs 2-19 s per (kernel, element type, index type). ``python -m
ndpool._kernels._precompile`` compiles them all, one worker process per core taking the next
compilation as it finishes the last (the test suite starts with it). The workers may compile helpers
that several kernels call at the same time: the kernels' cache files are saved under a lock
(``_jit._LockedCacheFile``), so every entry lands whatever the order. Without that lock (no
``fcntl``) or with one core, everything compiles in this process.
"""

from __future__ import annotations

import multiprocessing
import os

import numpy as np

from . import _threads
from ._adaptive import adaptive_width_inner
from ._channel_blocks import pool_channel_blocks
from ._channel_runs import pool_channel_runs
from ._folds import pool_folds
from ._jit import CONCURRENT_SAVES
from ._launch import _STORAGE, NATIVE_I32, NATIVE_I32_STORAGE, _compiled, compiled_for
from ._loops import pool_channels_inner
from ._outer_first import pool_outer_first, pool_outer_first_ncx
from ._plane_lanes import pool_plane_lanes
from ._planes import pool_planes
from ._separable import pool_separable
from ._separable_nxc import pool_separable_nxc
from ._sliding import pool_sliding
from ._tiles import pool_tiles
from ._width_inner import pool_width_inner

# Every kernel the launcher can choose, the slowest to compile first (measured cold on 2026-12-02,
# f32: pool_separable 18 s, the outer-first loops 13, ..., pool_tiles 2), so that the last compilations
# handed out are short ones and the workers finish together.
KERNELS = (pool_separable, pool_outer_first, pool_outer_first_ncx, pool_width_inner, pool_folds, pool_channel_blocks,
           pool_planes, pool_sliding, pool_channels_inner, pool_separable_nxc, pool_plane_lanes, pool_channel_runs,
           adaptive_width_inner, pool_tiles)
STORAGE_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64)) + tuple(
    _STORAGE.values())
_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)


def compilations() -> list[tuple[int, str, str]]:
    """Every (kernel's number in KERNELS, element type, index type) the launcher can run, in KERNELS' order."""
    return [(k, dtype.str, index.str) for k, kernel in enumerate(KERNELS) for dtype in STORAGE_TYPES
            if compiled_for(kernel, dtype)
            for index in ((_I64, _I32) if kernel in NATIVE_I32 and dtype in NATIVE_I32_STORAGE else (_I64,))]


def compile_one(task: tuple[int, str, str]) -> None:
    """Compile (or load from the cache) one of ``compilations()``."""
    k, dtype, index = task
    _compiled(KERNELS[k], np.dtype(dtype), np.dtype(index))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def compile_all() -> None:
    """Every compilation, on one worker process per core."""
    _threads.warm()  # (the launcher's flags: seconds, here)
    tasks = compilations()
    workers = min(_cores(), len(tasks))
    if workers < 2 or not CONCURRENT_SAVES:
        for task in tasks:
            compile_one(task)
        return
    # (spawn: fresh interpreters, numba's compiler is not fork-safe once it has run)
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for _ in pool.imap_unordered(compile_one, tasks, chunksize=1):
            pass


if __name__ == "__main__":
    compile_all()
