"""The public functions: normalize attributes -> resolve geometry -> run a backend -> wrap outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dispatch
from ._attributes import (
    DATA_FORMATS,
    normalize_max_pool_attributes,
    parse_enum,
    parse_index_type,
    parse_input_shape,
    parse_output_size,
)
from ._call_cache import CallCache, plain_key
from ._dtypes import as_array
from ._errors import PoolingError
from ._geometry import AdaptiveGeometry, PoolGeometry, adaptive_geometry, max_pool_geometry
from ._semantics import PLANE_SCOPE, Preset, preset_for

__all__ = ["adaptive_max_pool", "adaptive_max_pool_output_shape", "max_pool", "max_pool_output_shape"]

IntOrInts = int | Sequence[int] | str

# Resolved calls by their plain attributes (see _call_cache): MaxPool's, AdaptiveMaxPool's.
_max_pool_calls = CallCache()
_adaptive_calls = CallCache()


# (transpose, not np.moveaxis: its axis normalization took 2 us a call, three calls of a small pool's 38)
def _to_ncx(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose((0, x.ndim - 1, *range(1, x.ndim - 1))) if data_format == "NXC" else x


def _from_ncx(y: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(y.transpose((0, *range(2, y.ndim), 1))) if data_format == "NXC" else y


def _is_dask(data: Any) -> bool:
    return type(data).__module__.split(".")[0] == "dask"


def max_pool(data: Any, /, *, kernel: IntOrInts, strides: IntOrInts, pads_begin: IntOrInts = 0,
             pads_end: IntOrInts = 0, dilations: IntOrInts = 1, rounding_type: str = "floor",
             auto_pad: str = "none", data_format: str = "NXC", return_indices: bool = False,
             index_element_type: str = "i64", index_axis: int | None = None,
             semantics: str = "spec", _op: str = "MaxPool") -> Any:
    """Max pooling over 1-3 spatial axes (oneDNN Graph MaxPool, with OpenVINO's extensions).

    Parameters
    ----------
    data : array_like
        Rank 3, 4 or 5: ``(N, *X, C)`` for ``data_format="NXC"`` (the default), ``(N, C, *X)`` for
        ``"NCX"``. Any strides (transposed, reversed, broadcast) are read in place. Element types
        f32, f16, bf16 (``ml_dtypes.bfloat16``), f64, i8, u8, i32, i64.
    kernel, strides, dilations : int or sequence of int
        One entry per spatial axis (an int stands for all); all >= 1. ``dilations=1`` is none.
    pads_begin, pads_end : int or sequence of int
        Explicit pads (>= 0); padded taps are skipped, never win. Ignored (but validated) when
        ``auto_pad`` is ``same_upper``, ``same_lower`` or ``valid``.
    rounding_type : {"floor", "ceil", "ceil_torch"}
    auto_pad : {"none", "explicit", "same_upper", "same_lower", "valid"}
    data_format : {"NXC", "NCX"}
    return_indices : bool
        Also return the argmax indices (first maximum in row-major window order).
    index_element_type : {"i64", "i32"}
        An index that cannot fit i32 raises :class:`PoolingError` before any computation.
    index_axis : int, optional
        OpenVINO MaxPool-8 ``axis``: indices are ``global_flat_index % prod(shape[index_axis:])``
        (NCX shape). ``None``: the preset's default (per (n, c) plane for ``spec`` and ``torch``).
    semantics : {"spec", "openvino", "onednn", "torch", "onnx"}
        Reproduce an engine's NaN rule, empty-window value and index scope (SEMANTICS.md).

    Returns
    -------
    values : numpy.ndarray
        Same layout and element type as ``data``.
    indices : numpy.ndarray
        Only with ``return_indices=True``; same shape and layout as ``values``.

    Notes
    -----
    Per spatial axis, with ``dk = (k-1)*d + 1`` and ``P = I + pb + pe`` (an error if ``P < dk``):
    ``floor``: ``(P - dk) // s + 1``; ``ceil``: ``ceil((P - dk) / s) + 1``; ``ceil_torch``: as ``ceil``,
    less the last window if it starts at or after ``I + pb``. Cost: O(output * kernel) reads.

    Examples
    --------
    >>> import numpy as np, ndpool
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX")
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    >>> v, i = ndpool.max_pool(x, kernel=3, strides=2, pads_begin=1, data_format="NCX",
    ...                        return_indices=True)
    >>> i
    array([[[[ 5,  7],
             [13, 15]]]])
    """
    if _is_dask(data):
        from ._dask import dask_max_pool  # optional dependency, imported only when used

        return dask_max_pool(data, kernel=kernel, strides=strides, pads_begin=pads_begin,
                             pads_end=pads_end, dilations=dilations, rounding_type=rounding_type,
                             auto_pad=auto_pad, data_format=data_format,
                             return_indices=return_indices, index_element_type=index_element_type,
                             index_axis=index_axis, semantics=semantics)
    x = as_array(_op, data)
    call = resolve_max_pool(
        x.shape, op=_op, kernel=kernel, strides=strides, pads_begin=pads_begin,
        pads_end=pads_end, dilations=dilations, rounding_type=rounding_type, auto_pad=auto_pad,
        data_format=data_format, return_indices=return_indices,
        index_element_type=index_element_type, index_axis=index_axis, semantics=semantics)
    geom = call.geom
    values, indices = _dispatch.run_max_pool(_to_ncx(x, geom.data_format), geom, call.preset,
                                             call.index_dtype, call.index_axis)
    values = _from_ncx(values, geom.data_format)
    if indices is None:
        return values
    return values, _from_ncx(indices, geom.data_format)


def max_pool_output_shape(input_shape: Sequence[int], /, *, kernel: IntOrInts, strides: IntOrInts,
                          pads_begin: IntOrInts = 0, pads_end: IntOrInts = 0,
                          dilations: IntOrInts = 1, rounding_type: str = "floor",
                          auto_pad: str = "none", data_format: str = "NXC",
                          return_indices: bool = False, index_element_type: str = "i64",
                          index_axis: int | None = None, semantics: str = "spec") -> tuple[int, ...]:
    """The output shape ``max_pool`` gives for an input of ``input_shape`` (no data needed).

    Takes the same attributes as :func:`max_pool`, validates them the same way, and raises the
    same :class:`PoolingError` (including the i32 index check when ``return_indices`` is set).

    Examples
    --------
    >>> import ndpool
    >>> ndpool.max_pool_output_shape((32, 112, 112, 64), kernel=3, strides=2, pads_begin=1, pads_end=1)
    (32, 56, 56, 64)
    """
    return max_pool_geometry_for(
        input_shape, kernel=kernel, strides=strides, pads_begin=pads_begin, pads_end=pads_end,
        dilations=dilations, rounding_type=rounding_type, auto_pad=auto_pad,
        data_format=data_format, return_indices=return_indices,
        index_element_type=index_element_type, index_axis=index_axis,
        semantics=semantics).output_shape


def max_pool_geometry_for(input_shape: Sequence[int], /, *, op: str = "MaxPool",
                          **attributes: Any) -> PoolGeometry:
    """The resolved geometry (pads, output sizes, windows) of a MaxPool call, without data."""
    return resolve_max_pool(input_shape, op=op, **attributes).geom


@dataclass(frozen=True)
class MaxPoolCall:
    """A validated MaxPool call: what every backend (in memory, dask) runs."""

    geom: PoolGeometry
    preset: Preset
    index_dtype: np.dtype[Any] | None  # None: values only
    index_axis: int  # the scope actually used (the preset's default filled in)


def resolve_max_pool(input_shape: Sequence[int], /, *, op: str = "MaxPool",
                     **attributes: Any) -> MaxPoolCall:
    """Validate a MaxPool call and resolve its geometry, before any data is touched: attributes,
    shapes, and whether the indices fit their type. Errors carry the input shape."""
    # (Names and values in the call's order: another order is another key, never a wrong one.)
    key = plain_key(input_shape, op, *attributes, *attributes.values())
    call = _max_pool_calls.get(key)
    if call is not None:
        return call  # type: ignore[no-any-return]
    shape: tuple[int, ...] = ()
    try:
        shape = parse_input_shape(op, input_shape)
        attrs = normalize_max_pool_attributes(len(shape), op=op, **attributes)
        geom = max_pool_geometry(shape, attrs, op)
        axis = attrs.semantics.index_axis if attrs.index_axis is None else attrs.index_axis
        index_dtype = attrs.index_dtype if attrs.return_indices else None
        if index_dtype is not None:
            geom.check_index_type(op, index_dtype, axis)
        call = MaxPoolCall(geom, attrs.semantics, index_dtype, axis)
        _max_pool_calls.put(key, call)
        return call
    except PoolingError as exc:
        raise exc.with_input_shape(shape) if shape else exc


def adaptive_max_pool(data: Any, /, output_size: Any, *, index_element_type: str = "i64",
                      data_format: str = "NCX", semantics: str = "spec",
                      _op: str = "AdaptiveMaxPool") -> tuple[np.ndarray, np.ndarray]:
    """Adaptive max pooling (OpenVINO AdaptiveMaxPool-8): ``output_size`` bins per spatial axis.

    Parameters
    ----------
    data : array_like
        Rank 3, 4 or 5, ``(N, C, *X)`` (``data_format="NCX"``, the default) or ``(N, *X, C)``.
    output_size : sequence of int or 1-D int32/int64 array
        One entry per spatial axis, >= 0. ``Out > In`` repeats elements; ``Out = 0`` gives an empty
        output; ``In = 0`` with ``Out > 0`` is an error.
    index_element_type : {"i64", "i32"}
    data_format : {"NCX", "NXC"}
    semantics : {"spec", "openvino", "torch"}
        Only the engines that have the op.

    Returns
    -------
    values, indices : numpy.ndarray
        Indices are flat within each (n, c) plane, in ``[0, prod(X))``.

    Notes
    -----
    Bin ``i`` on an axis covers ``[i*In // Out, ((i+1)*In + Out - 1) // Out)``. Bins may overlap.

    Examples
    --------
    >>> import numpy as np, ndpool
    >>> x = np.array([[[1., 3., 2., 5., 4.]]], dtype=np.float32)
    >>> ndpool.adaptive_max_pool(x, [3])
    (array([[[3., 5., 5.]]], dtype=float32), array([[[1, 3, 3]]]))
    """
    shape: tuple[int, ...] = ()
    try:
        if _is_dask(data):
            from ._dask import dask_adaptive_max_pool  # optional dependency

            return dask_adaptive_max_pool(data, output_size, index_element_type=index_element_type,
                                          data_format=data_format, semantics=semantics)
        x = as_array(_op, data)
        key = plain_key(x.shape, output_size, data_format, semantics, index_element_type, _op)
        resolved = _adaptive_calls.get(key)
        if resolved is None:
            shape = parse_input_shape(_op, x.shape)
            geom = adaptive_max_pool_geometry_for(shape, output_size, data_format=data_format, op=_op)
            preset = preset_for(_op, semantics)
            index_dtype = parse_index_type(_op, index_element_type)
            geom.check_index_type(_op, index_dtype, PLANE_SCOPE)
            _adaptive_calls.put(key, (geom, preset, index_dtype))
        else:
            geom, preset, index_dtype = resolved
    except PoolingError as exc:
        raise exc.with_input_shape(shape) if shape else exc
    values, indices = _dispatch.run_adaptive_max_pool(_to_ncx(x, geom.data_format), geom, preset,
                                                      index_dtype, PLANE_SCOPE)
    assert indices is not None
    return _from_ncx(values, geom.data_format), _from_ncx(indices, geom.data_format)


def adaptive_max_pool_geometry_for(input_shape: Sequence[int], output_size: Any, *,
                                   data_format: str = "NCX",
                                   op: str = "AdaptiveMaxPool") -> AdaptiveGeometry:
    """The resolved bins of an AdaptiveMaxPool call, without data."""
    shape = parse_input_shape(op, input_shape)
    if not isinstance(output_size, (np.ndarray, list, tuple, str, int)) and hasattr(output_size, "__array__"):
        output_size = np.asarray(output_size)
    sizes = parse_output_size(op, output_size, len(shape) - 2)
    layout = parse_enum(op, "data_format", data_format, DATA_FORMATS)
    return adaptive_geometry(shape, sizes, layout, op)


def adaptive_max_pool_output_shape(input_shape: Sequence[int], /, output_size: Any, *,
                                   data_format: str = "NCX") -> tuple[int, ...]:
    """The output shape (of values and of indices) of ``adaptive_max_pool``.

    Examples
    --------
    >>> import ndpool
    >>> ndpool.adaptive_max_pool_output_shape((1, 3, 32, 32), [16, 16])
    (1, 3, 16, 16)
    """
    try:
        return adaptive_max_pool_geometry_for(input_shape, output_size,
                                              data_format=data_format).output_shape
    except PoolingError as exc:
        shape = tuple(input_shape) if isinstance(input_shape, (tuple, list)) else None
        raise exc.with_input_shape(shape) if shape else exc
