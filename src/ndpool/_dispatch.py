"""Backend choice, made in one place, lazily: the compiled numba kernels, else the NumPy reference.

``NDPOOL_BACKEND=numpy|numba`` forces one. Without numba (or if its kernels fail to build) ndpool
still works on the reference path and says so once in a warning.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._geometry import AdaptiveGeometry, PoolGeometry
from ._reference import adaptive_max_pool_reference, max_pool_reference
from ._semantics import Preset

__all__ = ["backend_name", "run_adaptive_max_pool", "run_max_pool"]

Result = tuple[np.ndarray, np.ndarray | None]
BACKENDS = ("numba", "numpy")


_broken: list[str] = []  # why the kernels were given up, once given up


def _give_up(reason: str) -> None:
    """Fall back to the reference for the rest of the process, saying so once."""
    if not _broken:
        _broken.append(reason)
        warnings.warn(f"ndpool: numba kernels unavailable ({reason}); using the NumPy reference",
                      RuntimeWarning, stacklevel=4)


@functools.cache
def _numba_kernels() -> tuple[Callable[..., Result], Callable[..., Result]] | None:
    try:
        from ._kernels import adaptive_max_pool_numba, max_pool_numba
    except Exception as exc:  # numba missing or broken: degrade, once, loudly
        _give_up(f"{type(exc).__name__}: {exc}")
        return None
    return max_pool_numba, adaptive_max_pool_numba


def _run(which: int, reference: Callable[..., Result], *args: Any) -> Result:
    kernels = _numba_kernels() if backend_name() == "numba" else None
    if kernels is None:
        return reference(*args)
    try:
        return kernels[which](*args)
    except Exception as exc:
        # Only a failure of numba itself (e.g. it cannot compile on this machine) degrades;
        # anything else is a bug and propagates.
        if not type(exc).__module__.startswith("numba"):
            raise
        _give_up(f"{type(exc).__name__}: {exc}")
        return reference(*args)


def backend_name() -> str:
    """The backend the next call will use: ``"numba"`` or ``"numpy"``."""
    forced = os.environ.get("NDPOOL_BACKEND", "").strip().lower()
    if forced and forced not in BACKENDS:
        raise ValueError(f"NDPOOL_BACKEND must be one of {', '.join(BACKENDS)} (got {forced!r})")
    if forced == "numpy" or _broken or _numba_kernels() is None:
        return "numpy"
    return "numba"


def run_max_pool(x: np.ndarray, geom: PoolGeometry, preset: Preset,
                 index_dtype: np.dtype[Any] | None, index_axis: int) -> Result:
    return _run(0, max_pool_reference, x, geom, preset, index_dtype, index_axis)


def run_adaptive_max_pool(x: np.ndarray, geom: AdaptiveGeometry, preset: Preset,
                          index_dtype: np.dtype[Any], index_axis: int) -> Result:
    return _run(1, adaptive_max_pool_reference, x, geom, preset, index_dtype, index_axis)
