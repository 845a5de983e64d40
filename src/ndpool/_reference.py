"""The NumPy reference: written straight from the formulas, and the oracle for every fast path.

One loop over the window taps in row-major order serves both ops: for each tap, every output's input
position is gathered at once (an output-sized array), compared with the running maximum under the
preset's NaN rule, and taken where it wins. Nothing input-sized is ever allocated (no padded copy, no
window view): a broadcast view of billions of elements is read in place. Cost: O(taps * output).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from . import _semantics as sem
from ._dtypes import NARROW_FLOATS
from ._geometry import AdaptiveGeometry, PoolGeometry, _Planes

__all__ = ["adaptive_max_pool_reference", "max_pool_reference"]

# Per axis, one (positions, valid) pair per tap: the input position each output reads at that tap.
AxisTaps = list[tuple[np.ndarray, np.ndarray]]


def max_pool_reference(x: np.ndarray, geom: PoolGeometry, preset: sem.Preset,
                       index_dtype: np.dtype[Any] | None, index_axis: int) -> tuple[np.ndarray, np.ndarray | None]:
    """MaxPool of ``x`` (logical NCX view, any strides); returns NCX values and indices."""
    taps: list[AxisTaps] = []
    for axis, (k, d) in enumerate(zip(geom.kernel, geom.dilations, strict=True)):
        start, first, end = geom.tap_bounds(axis)
        taps.append([(start + j * d, (j >= first) & (j < end)) for j in range(k)])
    return _reduce_windows(x, geom, taps, preset, index_dtype, index_axis)


def adaptive_max_pool_reference(x: np.ndarray, geom: AdaptiveGeometry, preset: sem.Preset,
                                index_dtype: np.dtype[Any], index_axis: int = sem.PLANE_SCOPE,
                                ) -> tuple[np.ndarray, np.ndarray | None]:
    """AdaptiveMaxPool of ``x`` (logical NCX view); returns NCX values and indices."""
    taps: list[AxisTaps] = []
    for axis in range(len(geom.in_size)):
        start, end = geom.bins(axis)
        longest = int((end - start).max()) if start.size else 0
        taps.append([(start + t, start + t < end) for t in range(longest)])
    return _reduce_windows(x, geom, taps, preset, index_dtype, index_axis)


def _key(a: np.ndarray) -> np.ndarray:
    """Values in a type where comparisons are native: f16 and bf16 widen exactly to f32."""
    return a.astype(np.float32) if a.dtype in NARROW_FLOATS else a


def _isnan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)


def _reduce_windows(x: np.ndarray, geom: _Planes, taps: list[AxisTaps], preset: sem.Preset,
                    index_dtype: np.dtype[Any] | None, index_axis: int) -> tuple[np.ndarray, np.ndarray | None]:
    nsp = len(taps)
    out_shape = geom.ncx_output_shape
    empty = preset.empty_value_for(x.dtype)
    best = np.full(out_shape, empty, dtype=x.dtype)
    flat = np.zeros(out_shape, np.int64)
    taken = np.zeros(out_shape, bool)
    strides = geom.plane_strides
    rule = preset.nan_rule

    def along(axis: int, a: np.ndarray) -> np.ndarray:
        # Shape an axis' per-output array to broadcast against the (N, C, *out) output.
        return a.reshape((1, 1) + tuple(-1 if i == axis else 1 for i in range(nsp)))

    if best.size:
        for combo in itertools.product(*taps):
            valid = np.ones((1, 1) + (1,) * nsp, bool)
            for axis, (_, ok) in enumerate(combo):
                valid = valid & along(axis, ok)
            if not valid.any():
                continue
            # Index arrays broadcast over the spatial output only; N and C are sliced whole.
            where = tuple(along(axis, np.clip(pos, 0, geom.in_size[axis] - 1))[0, 0]
                          for axis, (pos, _) in enumerate(combo))
            v = x[(slice(None), slice(None), *where)]
            kv, km = _key(v), _key(best)
            if rule == sem.IGNORE:
                take = kv > km
            elif rule == sem.FIRST_VALID:
                take = ~taken | (kv > km)
            elif rule == sem.PROPAGATE_LAST:
                take = ~taken | (kv > km) | _isnan(kv)
            else:  # PROPAGATE_FIRST: once a NaN is held nothing replaces it
                take = ~taken | (~_isnan(km) & ((kv > km) | _isnan(kv)))
            take &= valid
            np.copyto(best, v, where=take)
            if index_dtype is not None:
                np.copyto(flat, sum(w * st for w, st in zip(where, strides, strict=True)), where=take)
            taken |= take
    if rule != sem.IGNORE:
        np.copyto(best, empty, where=~taken)
    if index_dtype is None:
        return best, None
    return best, _scoped_indices(geom, preset, flat, taken, index_axis).astype(index_dtype)


def _scoped_indices(geom: _Planes, preset: sem.Preset, flat: np.ndarray, taken: np.ndarray,
                    index_axis: int) -> np.ndarray:
    """Per-plane flat indices -> indices in the scope of ``index_axis``, with the preset's empty index."""
    spatial = (1,) * len(geom.in_size)
    offsets = geom.plane_offsets(index_axis).reshape(geom.batch, geom.channels, *spatial)
    modulus = max(geom.scope_modulus(index_axis), 1)
    real = (offsets + flat) % modulus
    if preset.empty_index == sem.MINUS_ONE:
        empty = np.int64(-1)
    elif preset.empty_index == sem.PLANE_FIRST:
        empty = offsets
    else:  # BEFORE_PLANE: the flat index of spatial position (-1, ..., -1), in the scope
        empty = offsets - sum(geom.scope_axis_strides(index_axis))
    return np.where(taken, real, empty)
