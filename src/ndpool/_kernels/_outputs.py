"""Outputs and scratch over recycled memory: large arrays without a page fault per page per call.

glibc serves an allocation above 32 MB with a fresh mmap, and the kernel zeroes each of its pages at
the first write: the 1-D k5 s1 workload (8x128x16384 f32, a 64 MB output) took 13.6 ms a call in a
fresh output and 8.5 ms in one written before, the NXC stem with i64 indices (a 51 MB index array)
11.4 against 7.8 (side by side, two threads; a 51 MB fill alone 6.7 against 2.2 ms). onnxruntime and
OpenVINO write their outputs into memory they keep between calls; so does ndpool, here.

A kept block is an owning uint8 array. Every array carved from it holds a reference to it, and so
does every view the caller makes of those (NumPy points a view's ``base`` at the array that owns the
memory), so a block is free exactly when nothing but this module refers to it: then its next output
is carved from it again. Blocks are kept up to ``NDPOOL_KEEP_MB`` megabytes in all (default 256; 0
turns this off); beyond that, outputs are plain ``np.empty`` arrays.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any

import numpy as np

# Smaller arrays come from glibc's heap, reused without faults: kept blocks would gain nothing.
MIN_BYTES = 1 << 20
_DEFAULT_KEEP_MB = 256

_blocks: list[np.ndarray] = []
_lock = threading.Lock()


def _refcounts(blocks: list[np.ndarray]) -> list[int]:
    return [sys.getrefcount(b) for b in blocks]


# A block's reference count in _refcounts when only the list refers to it (the list, the loop's
# variable, getrefcount's argument), measured rather than assumed.
_IDLE_REFS = _refcounts([np.empty(1, np.uint8)])[0]


def keep_limit() -> int:
    """Bytes of blocks kept at most (``NDPOOL_KEEP_MB``; 0 when refcounts are not CPython's)."""
    if not hasattr(sys, "getrefcount"):
        return 0
    raw = os.environ.get("NDPOOL_KEEP_MB", "").strip()
    try:
        megabytes = float(raw) if raw else _DEFAULT_KEEP_MB
    except ValueError:
        raise ValueError(f"NDPOOL_KEEP_MB must be a number of megabytes (got {raw!r})") from None
    return max(0, int(megabytes * (1 << 20)))


def empty(shape: tuple[int, ...] | int, dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array, carved from a free kept block when it is large."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape) if isinstance(shape, tuple) else (int(shape),)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    limit = keep_limit()
    if limit == 0:
        return np.empty(shape, dtype)
    with _lock:
        block = _take(nbytes, limit)
        if block is None:
            return np.empty(shape, dtype)
        # (carved under the lock: from here the output's reference marks the block as taken)
        return block[:nbytes].view(dtype).reshape(shape)


def _take(nbytes: int, limit: int) -> np.ndarray | None:
    """The smallest free block of nbytes to twice that (a larger one would sit idle under a small
    output), or a new one if the kept total allows it after dropping free blocks that do not fit."""
    refs = _refcounts(_blocks)
    free = [i for i, r in enumerate(refs) if r <= _IDLE_REFS]
    fits = [i for i in free if nbytes <= _blocks[i].nbytes <= 2 * nbytes]
    if fits:
        return _blocks[min(fits, key=lambda i: _blocks[i].nbytes)]
    if nbytes > limit:
        return None
    kept = sum(b.nbytes for b in _blocks)
    dropped = set()
    for i in sorted(free, key=lambda i: -_blocks[i].nbytes):  # the largest free ones first
        if kept + nbytes <= limit:
            break
        kept -= _blocks[i].nbytes
        dropped.add(i)
    _blocks[:] = [b for i, b in enumerate(_blocks) if i not in dropped]
    if kept + nbytes > limit:
        return None
    block = np.empty(nbytes, np.uint8)
    _blocks.append(block)
    return block


def kept_bytes() -> tuple[int, int]:
    """(bytes kept, bytes of those in use by live arrays)."""
    with _lock:
        refs = _refcounts(_blocks)
        return sum(b.nbytes for b in _blocks), sum(b.nbytes for b, r in zip(_blocks, refs) if r > _IDLE_REFS)


def release() -> None:
    """Drop every kept block (blocks still in use live on with their arrays, untracked)."""
    with _lock:
        _blocks.clear()
