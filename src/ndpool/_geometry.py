"""Shape inference: the only place with shape arithmetic.

``PoolGeometry`` and ``AdaptiveGeometry`` are resolved once from the input shape and the normalized
attributes. The reference, the compiled kernels, the command line and the dask path all take a
geometry and never recompute a size, a pad or a window bound themselves.

Notation per spatial axis (SEMANTICS.md): ``I`` input size, ``k`` kernel, ``s`` stride, ``d`` dilation,
``dk = (k-1)*d + 1``, ``pb``/``pe`` begin/end pads, ``P = I + pb + pe``. Tap ``j`` of output ``o`` reads
input position ``o*s - pb + j*d``; taps outside ``[0, I)`` are skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._attributes import MaxPoolAttributes
from ._errors import PoolingError

__all__ = [
    "AdaptiveGeometry",
    "PoolGeometry",
    "adaptive_geometry",
    "max_pool_geometry",
    "to_ncx_shape",
]

INT32_MAX = 2**31 - 1


def to_ncx_shape(shape: tuple[int, ...], data_format: str) -> tuple[int, ...]:
    """The logical (N, C, *X) shape of a tensor stored in ``data_format``."""
    if data_format == "NXC":
        return (shape[0], shape[-1], *shape[1:-1])
    return tuple(shape)


def _from_ncx_shape(shape: tuple[int, ...], data_format: str) -> tuple[int, ...]:
    if data_format == "NXC":
        return (shape[0], *shape[2:], shape[1])
    return tuple(shape)


def _plane_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a (n, c) plane of spatial shape ``size``."""
    strides = [1] * len(size)
    for i in range(len(size) - 2, -1, -1):
        strides[i] = strides[i + 1] * size[i + 1]
    return tuple(strides)


@dataclass(frozen=True)
class _Planes:
    """What both ops share: the batch and channel counts, the layouts, and index scopes."""

    input_shape: tuple[int, ...]
    data_format: str
    batch: int
    channels: int
    in_size: tuple[int, ...]
    out_size: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.input_shape)

    @property
    def ncx_output_shape(self) -> tuple[int, ...]:
        return (self.batch, self.channels, *self.out_size)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The output shape in the input's layout."""
        return _from_ncx_shape(self.ncx_output_shape, self.data_format)

    @property
    def plane_size(self) -> int:
        return math.prod(self.in_size)

    @property
    def plane_strides(self) -> tuple[int, ...]:
        return _plane_strides(self.in_size)

    def scope_modulus(self, index_axis: int) -> int:
        """``prod(shape[a:])`` of the NCX input shape: indices are ``global_flat % modulus``."""
        return math.prod((self.batch, self.channels, *self.in_size)[index_axis:])

    def plane_offsets(self, index_axis: int) -> np.ndarray:
        """(N, C) int64 array: each plane's first element's index in the scope of ``index_axis``."""
        n = np.arange(self.batch, dtype=np.int64)[:, None]
        c = np.arange(self.channels, dtype=np.int64)[None, :]
        if index_axis == 0:
            return (n * self.channels + c) * self.plane_size
        if index_axis == 1:
            return np.broadcast_to(c * self.plane_size, (self.batch, self.channels)).copy()
        return np.zeros((self.batch, self.channels), np.int64)

    def scope_axis_strides(self, index_axis: int) -> tuple[int, ...]:
        """The plane strides with those of spatial axes outside the scope set to 0."""
        first = max(index_axis - 2, 0)
        return tuple(0 if i < first else st for i, st in enumerate(self.plane_strides))

    def _largest_index(self, index_axis: int, last_taps: tuple[int, ...] | None) -> int:
        """The largest index any window can report (-1 when no window reports one)."""
        if self.batch * self.channels == 0 or math.prod(self.out_size) == 0:
            return -1
        planes = {0: self.batch * self.channels, 1: self.channels}.get(index_axis, 1)
        offset = (planes - 1) * self.plane_size
        if last_taps is None:  # every window is empty: only the plane offsets are reported
            return offset
        strides = self.scope_axis_strides(index_axis)
        return offset + sum(p * st for p, st in zip(last_taps, strides, strict=True))

    def check_index_type(self, op: str, index_dtype: np.dtype, index_axis: int) -> None:
        """Raise if an index the call can report does not fit ``index_dtype`` (from geometry only)."""
        if index_dtype == np.int32:
            largest = self._largest_index(index_axis, self.last_taps)
            if largest > INT32_MAX:
                raise PoolingError(op, "index_element_type",
                                   "i32 cannot hold the largest index this call can report",
                                   f"i32 with largest index {largest}")

    @property
    def last_taps(self) -> tuple[int, ...] | None:
        raise NotImplementedError


@dataclass(frozen=True)
class PoolGeometry(_Planes):
    """A MaxPool call's resolved geometry: pads after auto_pad, and the output size per axis."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]

    @property
    def extent(self) -> tuple[int, ...]:
        """``dk`` per axis: the span of a dilated window."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations, strict=True))

    def tap_bounds(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per output position ``o`` on ``axis``: window start ``o*s - pb`` and the in-range taps
        ``[first, end)`` (``first == end`` when the window has none on this axis)."""
        size, k, s, d = self.in_size[axis], self.kernel[axis], self.strides[axis], self.dilations[axis]
        start = np.arange(self.out_size[axis], dtype=np.int64) * s - self.pads_begin[axis]
        first = np.maximum(0, -(start // d))  # ceil(-start / d)
        end = np.minimum(k, np.floor_divide(size - 1 - start, d) + 1)
        return start, first, np.maximum(end, first)

    def interior(self, axis: int) -> tuple[int, int]:
        """The output range ``[lo, hi)`` whose windows lie wholly inside the input on ``axis``."""
        start, first, end = self.tap_bounds(axis)
        full = (first == 0) & (end == self.kernel[axis])
        where = np.flatnonzero(full)
        return (int(where[0]), int(where[-1]) + 1) if where.size else (0, 0)

    @cached_property
    def last_taps(self) -> tuple[int, ...] | None:
        """Per axis, the largest input position any window reads (None if no window reads any).

        From the formulas, in O(dilation) per axis: no array of the output's size (the i32 check
        runs before any allocation, for outputs of any size)."""
        result = []
        for axis in range(len(self.in_size)):
            size, k, s, d = self.in_size[axis], self.kernel[axis], self.strides[axis], self.dilations[axis]
            pb, out = self.pads_begin[axis], self.out_size[axis]
            # The last window that starts at or before I-1; later ones lie in the end padding.
            last = min(out - 1, (size - 1 + pb) // s) if size > 0 else -1
            # A window reaching past I-1 reads I-1 minus its start's residue mod d, so only the last
            # d / gcd(s, d) windows can hold the largest tap (earlier ones repeat their residues).
            period = d // math.gcd(s, d)
            best = -1
            for o in range(last, max(last - min(period, 1 << 20), -1), -1):
                start = o * s - pb
                j = min(k - 1, (size - 1 - start) // d)
                if j >= 0 and start + j * d >= 0:
                    best = max(best, start + j * d)
            if best < 0:
                return None
            result.append(best)
        return tuple(result)


@dataclass(frozen=True)
class AdaptiveGeometry(_Planes):
    """An AdaptiveMaxPool call's geometry: the bins per axis."""

    def bins(self, axis: int) -> tuple[np.ndarray, np.ndarray]:
        """Bin ``[start, end)`` per output position: ``start = i*In // Out``,
        ``end = ((i+1)*In + Out - 1) // Out`` in exact integer arithmetic."""
        size, out = self.in_size[axis], self.out_size[axis]
        i = np.arange(out, dtype=np.int64)
        return (i * size) // out, ((i + 1) * size + out - 1) // out

    def tap_bounds(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As ``PoolGeometry.tap_bounds`` with dilation 1: bin start, first tap 0, bin length."""
        start, end = self.bins(axis)
        return start, np.zeros_like(start), end - start

    @cached_property
    def last_taps(self) -> tuple[int, ...] | None:
        return tuple(size - 1 for size in self.in_size)

    def as_max_pool(self) -> PoolGeometry | None:
        """The same windows as MaxPool, when every axis's bins tile it evenly: bin o is
        [o*k, (o+1)*k) (k = In/Out for a whole input), i.e. MaxPool with kernel = strides = k, no pads,
        dilation 1, reading the same taps in the same order. None otherwise. Bins are read through
        ``bins()`` (a dask block's are its own), not inferred from the sizes."""
        kernel = []
        for axis in range(len(self.in_size)):
            start, end = self.bins(axis)
            k = int(end[0] - start[0]) if start.size else 0
            if k < 1 or not (np.array_equal(start, np.arange(start.size) * k) and np.all(end - start == k)):
                return None
            kernel.append(k)
        zeros = (0,) * len(kernel)
        return PoolGeometry(self.input_shape, self.data_format, self.batch, self.channels, self.in_size,
                            self.out_size, tuple(kernel), tuple(kernel), (1,) * len(kernel), zeros, zeros)


def _resolve_pads(attrs: MaxPoolAttributes, in_size: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if attrs.auto_pad == "none":
        return attrs.pads_begin, attrs.pads_end
    if attrs.auto_pad == "valid":
        zeros = (0,) * len(in_size)
        return zeros, zeros
    begin, end = [], []
    for size, k, s, d in zip(in_size, attrs.kernel, attrs.strides, attrs.dilations, strict=True):
        dk = (k - 1) * d + 1
        total = max(0, (-(-size // s) - 1) * s + dk - size)
        pb = total // 2 if attrs.auto_pad == "same_upper" else total - total // 2
        begin.append(pb)
        end.append(total - pb)
    return tuple(begin), tuple(end)


def _output_size(op: str, axis: int, size: int, pb: int, pe: int, k: int, s: int, d: int,
                 rounding: str) -> int:
    dk = (k - 1) * d + 1
    padded = size + pb + pe
    if padded < dk:
        raise PoolingError(op, "kernel",
                           f"window extent (k-1)*d+1 must not exceed the padded input size "
                           f"P = I + pb + pe on spatial axis {axis}",
                           f"dk={dk} > P={padded} (I={size}, pb={pb}, pe={pe}, k={k}, d={d})")
    if rounding == "floor":
        return (padded - dk) // s + 1
    out = -(-(padded - dk) // s) + 1
    if rounding == "ceil_torch" and (out - 1) * s >= size + pb:
        out -= 1  # the last window would start in the end padding (PyTorch, ONNX)
    return out


def max_pool_geometry(input_shape: tuple[int, ...], attrs: MaxPoolAttributes,
                      op: str = "MaxPool") -> PoolGeometry:
    """Resolve pads and output sizes for a MaxPool of ``input_shape`` (in ``attrs.data_format``)."""
    ncx = to_ncx_shape(input_shape, attrs.data_format)
    in_size = ncx[2:]
    pads_begin, pads_end = _resolve_pads(attrs, in_size)
    out_size = tuple(
        _output_size(op, axis, *dims, attrs.rounding_type)
        for axis, dims in enumerate(zip(in_size, pads_begin, pads_end, attrs.kernel, attrs.strides,
                                        attrs.dilations, strict=True)))
    return PoolGeometry(input_shape=tuple(input_shape), data_format=attrs.data_format,
                        batch=ncx[0], channels=ncx[1], in_size=in_size, out_size=out_size,
                        kernel=attrs.kernel, strides=attrs.strides, dilations=attrs.dilations,
                        pads_begin=pads_begin, pads_end=pads_end)


def adaptive_geometry(input_shape: tuple[int, ...], output_size: tuple[int, ...], data_format: str,
                      op: str = "AdaptiveMaxPool") -> AdaptiveGeometry:
    """Check ``output_size`` against the input and describe the bins."""
    ncx = to_ncx_shape(input_shape, data_format)
    for axis, (size, out) in enumerate(zip(ncx[2:], output_size, strict=True)):
        if size == 0 and out > 0:
            raise PoolingError(op, "output_size",
                               f"must be 0 on spatial axis {axis}, whose input size is 0", output_size)
    return AdaptiveGeometry(input_shape=tuple(input_shape), data_format=data_format, batch=ncx[0],
                            channels=ncx[1], in_size=ncx[2:], out_size=tuple(output_size))
