"""MaxPool and AdaptiveMaxPool on dask arrays: lazy, block by block, bit-identical to in-memory.

The path is the in-memory one, run once per output block: normalize attributes -> resolve the global
geometry (once, here, from the whole shape) -> plan the output blocks from the input chunks -> per
block, read exactly the input its windows touch (its *slab*) -> run the in-memory backend on the slab
with a *sub-geometry* cut from the global one -> turn slab-local indices into global ones.

Why it is exact. Along each spatial axis, output position ``o`` is owned by the input chunk that holds
its window start ``o*s - pb`` (clipped into the input), so consecutive outputs form one block per
chunk. A block's slab is ``[a, b)``: from the smallest first in-range tap to the largest last in-range
tap of its windows (``PoolGeometry.tap_bounds``, ``AdaptiveGeometry.bins``). It lies in the owning
chunk plus the halo its windows really need, which may come from the next chunks; batch and channel
chunks pass through unchanged and nothing is rechunked. The sub-geometry places the same windows on
the slab: MaxPool keeps kernel, strides and dilations and takes ``pads_begin = a - start(o0)`` and
``pads_end`` such that floor rounding yields exactly the block's outputs; AdaptiveMaxPool keeps the
block's global bins, shifted by ``-a``. Every window thus sees the same in-range taps in the same
row-major order as in the whole array, so values, ties, the sign of zero and the NaN rules are the
in-memory ones, and a window is empty on the slab exactly when it is empty globally.

Indices are computed on the slab per plane, then moved to global positions and put in the call's
index scope by the formula of ``_reference._scoped_indices``: plane offsets and scope modulus from the
global geometry, and the preset's empty-window index. A window that took no tap is recognized by its
slab index where that is negative (-1, or onnx's position (-1, ..., -1)); under the plane-first index
(the ``openvino``/``onednn`` ignore-NaN rule, which takes only taps above the empty value) by its value.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

try:
    from dask.task_spec import Task, TaskRef
except ImportError:  # older dask releases have them in the private module only
    from dask._task_spec import Task, TaskRef

from . import _dispatch
from . import _semantics as sem
from ._attributes import (
    parse_index_type,
    parse_input_shape,
)
from ._dtypes import NARROW_FLOATS, as_array
from ._errors import PoolingError
from ._geometry import AdaptiveGeometry, PoolGeometry, _Planes
from ._ops import _from_ncx, _to_ncx, adaptive_max_pool_geometry_for, resolve_max_pool
from ._semantics import PLANE_SCOPE, preset_for

__all__ = ["dask_adaptive_max_pool", "dask_max_pool"]

IntOrInts = int | Sequence[int] | str
_LOCAL_INDEX = np.dtype(np.int64)


def dask_max_pool(data: da.Array, /, *, kernel: IntOrInts, strides: IntOrInts,
                  pads_begin: IntOrInts = 0, pads_end: IntOrInts = 0, dilations: IntOrInts = 1,
                  rounding_type: str = "floor", auto_pad: str = "none", data_format: str = "NXC",
                  return_indices: bool = False, index_element_type: str = "i64",
                  index_axis: int | None = None, semantics: str = "spec",
                  _op: str = "MaxPool") -> da.Array | tuple[da.Array, da.Array]:
    """``ndpool.max_pool`` of a dask array: a lazy dask array, equal bit for bit to the in-memory result.

    Takes exactly the attributes of :func:`ndpool.max_pool` (which calls this for dask input) and
    raises the same :class:`ndpool.PoolingError`, at call time, before anything is computed.

    Output chunks: batch and channel chunks are the input's; along a spatial axis there is one output
    block per input chunk that holds window starts (``o*s - pb``, clipped into the input), so the
    output chunks follow the input chunks divided by the stride. The input is never rechunked.

    Memory: a task holds its *slab* -- the input its windows read: its own input chunk plus, per
    spatial axis, at most ``dk - 1 = (k-1)*d`` elements of halo from the following chunks -- once as
    the pieces it is cut from and once assembled (not when it lies in one chunk), and its output.
    With ``S = n_chunk * c_chunk * prod(chunk_x + dk_x - 1) * itemsize`` (the largest slab) and ``O``
    the outputs of the block, a task's peak is at most ``2*S + O*itemsize`` bytes, and with indices
    ``2*S + O*(itemsize + 25 + index itemsize)`` (the int64 slab indices, their conversion to global
    ones in place with one int64 temporary and a mask, and the cast). That is the compiled kernels'
    path; the NumPy reference backend adds a few output-sized temporaries.

    Examples
    --------
    >>> import dask.array as da, numpy as np, ndpool
    >>> x = da.from_array(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), chunks=(1, 1, 3, 3))
    >>> y = ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX")
    >>> y.chunks
    ((1,), (1,), (2,), (2,))
    >>> y.compute()[0, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    # Validation errors carry the input shape (resolve_max_pool adds it).
    call = resolve_max_pool(
        _check_input(_op, data), op=_op, kernel=kernel, strides=strides, pads_begin=pads_begin,
        pads_end=pads_end, dilations=dilations, rounding_type=rounding_type, auto_pad=auto_pad,
        data_format=data_format, return_indices=return_indices,
        index_element_type=index_element_type, index_axis=index_axis, semantics=semantics)
    return _pool(data, call.geom, call.preset, call.index_dtype, call.index_axis, "max_pool")


def dask_adaptive_max_pool(data: da.Array, /, output_size: Any, *, index_element_type: str = "i64",
                           data_format: str = "NCX", semantics: str = "spec",
                           _op: str = "AdaptiveMaxPool") -> tuple[da.Array, da.Array]:
    """``ndpool.adaptive_max_pool`` of a dask array: lazy (values, indices), equal to the in-memory result.

    A bin that crosses chunk boundaries is reduced whole, in one task, from a slab that holds it:
    along each spatial axis the bins are grouped by the input chunk holding their start, and a group's
    slab runs from its first bin's start to its last bin's end (its chunk plus at most one bin length
    of halo). Indices are global per (n, c) plane, with the first-maximum rule of the in-memory op.

    Memory: per task, at most ``2*S + O*(itemsize + 25 + index itemsize)`` bytes for ``O`` outputs
    (as for :func:`dask_max_pool`), with the slab ``S <= n_chunk * c_chunk * prod(chunk_x + bin_x - 1)
    * itemsize`` and ``bin_x <= ceil(In/Out) + 1`` the longest bin on axis x.

    Examples
    --------
    >>> import dask.array as da, numpy as np, ndpool
    >>> x = da.from_array(np.array([[[1., 3., 2., 5., 4.]]], dtype=np.float32), chunks=2)
    >>> values, indices = ndpool.adaptive_max_pool(x, [3])
    >>> values.compute(), indices.compute()
    (array([[[3., 5., 5.]]], dtype=float32), array([[[1, 3, 3]]]))
    """
    shape: tuple[int, ...] = ()
    try:
        shape = _check_input(_op, data)
        geom = adaptive_max_pool_geometry_for(shape, output_size, data_format=data_format, op=_op)
        preset = preset_for(_op, semantics)
        index_dtype = parse_index_type(_op, index_element_type)
        geom.check_index_type(_op, index_dtype, PLANE_SCOPE)
    except PoolingError as exc:
        raise exc.with_input_shape(shape) if shape else exc
    result = _pool(data, geom, preset, index_dtype, PLANE_SCOPE, "adaptive_max_pool")
    assert isinstance(result, tuple)
    return result


def _check_input(op: str, data: da.Array) -> tuple[int, ...]:
    """The input shape, after the in-memory checks of rank and dtype, and known chunk sizes."""
    if any(math.isnan(c) for chunks in data.chunks for c in chunks):
        raise PoolingError(op, "data", "must have known chunk sizes (call compute_chunk_sizes() first)",
                           data.chunks)
    shape = parse_input_shape(op, data.shape)
    as_array(op, data._meta)  # the element type check of the in-memory path, on the zero-size meta
    return shape


# --- Planning: output blocks and their slabs, per spatial axis ---------------------------------------


@dataclass(frozen=True)
class _AxisBlock:
    """One output block along one spatial axis: outputs ``[o0, o1)`` read input ``[a, b)``."""

    o0: int
    o1: int
    a: int
    b: int
    # The windows on the slab: MaxPool (pads_begin, pads_end); AdaptiveMaxPool (starts, ends).
    windows: tuple[Any, Any]
    # The input chunks the slab spans: (chunk, first, end, whole chunk?), first/end within the chunk.
    pieces: tuple[tuple[int, int, int, bool], ...]


def _window_reads(geom: _Planes, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per output on ``axis``: window start, first and one-past-last in-range input positions, and
    whether the window reads any input."""
    if isinstance(geom, PoolGeometry):
        start, first, end = geom.tap_bounds(axis)
        d = geom.dilations[axis]
        return start, start + first * d, start + (end - 1) * d + 1, end > first
    assert isinstance(geom, AdaptiveGeometry)
    start, end = geom.bins(axis)
    return start, start, end, end > start


def _axis_blocks(geom: _Planes, axis: int, chunks: tuple[int, ...]) -> list[_AxisBlock]:
    """Split an output axis into blocks, one per input chunk that holds window starts."""
    start, lo, hi, reads = _window_reads(geom, axis)
    edges = np.cumsum((0, *chunks))
    size = int(edges[-1])
    if start.size == 0:
        return [_AxisBlock(0, 0, 0, 0, _slab_windows(geom, axis, start, 0, 0, 0, 0), ())]
    # Window starts grow with o, so each chunk owns a contiguous run of outputs. Windows that start in
    # the padding belong to the first or last chunk; a window that reads nothing to the nearest one.
    owner = np.searchsorted(edges[1:], np.clip(start, 0, max(size - 1, 0)), side="right")
    cuts = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), start.size]
    blocks = []
    for o0, o1 in itertools.pairwise(cuts):
        sel = reads[o0:o1]
        # A block whose windows all read nothing on this axis has an empty slab.
        a, b = (int(lo[o0:o1][sel].min()), int(hi[o0:o1][sel].max())) if sel.any() else (0, 0)
        pieces = tuple((k, first, end, first == 0 and end == chunks[k])
                       for k in range(int(np.searchsorted(edges, a, side="right")) - 1, len(chunks))
                       if a < b and max(a, edges[k]) < min(b, edges[k + 1])
                       for first, end in [(max(a, int(edges[k])) - int(edges[k]),
                                           min(b, int(edges[k + 1])) - int(edges[k]))])
        blocks.append(_AxisBlock(o0, o1, a, b, _slab_windows(geom, axis, start, o0, o1, a, b), pieces))
    return blocks


def _slab_windows(geom: _Planes, axis: int, start: np.ndarray, o0: int, o1: int, a: int,
                  b: int) -> tuple[Any, Any]:
    """The windows of outputs ``[o0, o1)`` placed on the slab ``[a, b)``, as the sub-geometry takes them."""
    if isinstance(geom, PoolGeometry):
        s, dk = geom.strides[axis], geom.extent[axis]
        # A slab that reads nothing keeps its windows wholly in the end padding (all empty).
        pads_begin = a - int(start[o0]) if b > a else 0
        # Floor rounding then yields exactly o1 - o0 windows: P' = (n-1)*s + dk.
        return pads_begin, (o1 - o0 - 1) * s + dk - (b - a) - pads_begin
    assert isinstance(geom, AdaptiveGeometry)
    starts, ends = geom.bins(axis)
    return tuple((starts[o0:o1] - a).tolist()), tuple((ends[o0:o1] - a).tolist())


def _sub_geometry(geom: _Planes, blocks: Sequence[_AxisBlock], slab_shape: tuple[int, ...],
                  batch: int, channels: int) -> _Planes:
    """The global geometry restricted to one block: the same windows, placed on its slab."""
    in_size = tuple(blk.b - blk.a for blk in blocks)
    out_size = tuple(blk.o1 - blk.o0 for blk in blocks)
    first, second = (tuple(blk.windows[i] for blk in blocks) for i in (0, 1))
    if isinstance(geom, PoolGeometry):
        return dataclasses.replace(geom, input_shape=slab_shape, batch=batch, channels=channels,
                                   in_size=in_size, out_size=out_size, pads_begin=first, pads_end=second)
    return _BlockBins(input_shape=slab_shape, data_format=geom.data_format, batch=batch,
                      channels=channels, in_size=in_size, out_size=out_size, starts=first, ends=second)


@dataclass(frozen=True)
class _BlockBins(AdaptiveGeometry):
    """AdaptiveMaxPool bins of one block, given explicitly (relative to its slab).

    Bins are not a function of a slab's size and a bin count (they are of the whole axis), so a
    block's geometry carries them; both backends read bins through ``bins()`` only.
    """

    starts: tuple[tuple[int, ...], ...]
    ends: tuple[tuple[int, ...], ...]

    def bins(self, axis: int) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.starts[axis], np.int64), np.array(self.ends[axis], np.int64)


# --- The graph ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """What every block of one call shares."""

    geom: _Planes  # the global geometry
    preset: sem.Preset
    index_dtype: np.dtype[Any] | None
    index_axis: int


@dataclass(frozen=True)
class _Block:
    """One output block: its sub-geometry, slab and where it sits in the whole."""

    geom: _Planes
    slab_shape: tuple[int, ...]  # in the data's layout
    grid: tuple[int, ...]  # pieces per spatial axis, assembled in row-major order
    dtype: np.dtype[Any]
    origin: tuple[int, ...]  # the slab's first input position, per spatial axis
    offsets: np.ndarray | None  # (n, c) plane offsets of the block's planes in the index scope


def _layout_axes(ndim: int, data_format: str) -> tuple[int, int, list[int]]:
    """The array axes of N, C and the spatial axes."""
    if data_format == "NXC":
        return 0, ndim - 1, list(range(1, ndim - 1))
    return 0, 1, list(range(2, ndim))


def _pool(data: da.Array, geom: _Planes, preset: sem.Preset, index_dtype: np.dtype[Any] | None,
          index_axis: int, kind: str) -> da.Array | tuple[da.Array, da.Array]:
    ndim = data.ndim
    n_axis, c_axis, spatial = _layout_axes(ndim, geom.data_format)
    edges = [np.cumsum((0, *chunks)).tolist() for chunks in data.chunks]
    plans = [_axis_blocks(geom, i, data.chunks[ax]) for i, ax in enumerate(spatial)]
    out_chunks: list[tuple[int, ...]] = [()] * ndim
    out_chunks[n_axis], out_chunks[c_axis] = data.chunks[n_axis], data.chunks[c_axis]
    for ax, plan in zip(spatial, plans, strict=True):
        out_chunks[ax] = tuple(blk.o1 - blk.o0 for blk in plan)

    token = tokenize(data.name, geom, preset, index_dtype, index_axis)
    name, piece_name = f"{kind}-{token}", f"{kind}-halo-{token}"
    # The plane-first empty index is told from a real index by the value (see the module docstring),
    # which only the ignore-NaN rule makes possible; every preset that has that index has that rule.
    assert preset.empty_index != sem.PLANE_FIRST or preset.nan_rule == sem.IGNORE
    job = _Job(geom, preset, index_dtype, index_axis)
    offsets = geom.plane_offsets(index_axis) if index_dtype is not None else None
    dsk: dict[Any, Any] = {}
    block_keys: list[tuple[Any, ...]] = []
    pieces: dict[tuple[Any, ...], Any] = {}  # (input block, slices) -> key, shared between blocks

    chunks = data.chunks

    def piece(in_index: tuple[int, ...], bounds: tuple[tuple[int, int], ...]) -> Any:
        """The key of a part of input block ``in_index``, a task that cuts it out."""
        if (in_index, bounds) not in pieces:
            key = (piece_name, len(pieces))
            pieces[in_index, bounds] = key
            whole = math.prod(chunks[ax][i] for ax, i in enumerate(in_index))
            dsk[key] = Task(key, _cut, TaskRef((data.name, *in_index)),
                            tuple(slice(lo, hi) for lo, hi in bounds),
                            2 * math.prod(hi - lo for lo, hi in bounds) < whole)
        return pieces[in_index, bounds]

    for (bn, nsize), (bc, csize) in itertools.product(enumerate(data.chunks[n_axis]),
                                                      enumerate(data.chunks[c_axis])):
        n0, c0 = edges[n_axis][bn], edges[c_axis][bc]
        block_offsets = None if offsets is None else offsets[n0:n0 + nsize, c0:c0 + csize].copy()
        for combo in itertools.product(*(enumerate(plan) for plan in plans)):
            blocks = [blk for _, blk in combo]
            slab_shape = [0] * ndim
            slab_shape[n_axis], slab_shape[c_axis] = nsize, csize
            for ax, blk in zip(spatial, blocks, strict=True):
                slab_shape[ax] = blk.b - blk.a
            refs = []
            for parts in itertools.product(*(blk.pieces for blk in blocks)):
                in_index: list[int] = [0] * ndim
                bounds: list[tuple[int, int]] = [(0, 0)] * ndim
                in_index[n_axis], in_index[c_axis] = bn, bc
                bounds[n_axis], bounds[c_axis] = (0, nsize), (0, csize)
                for ax, (k, first, end, _) in zip(spatial, parts, strict=True):
                    in_index[ax], bounds[ax] = k, (first, end)
                whole = all(part[3] for part in parts)  # then the input block itself, no task
                refs.append(TaskRef((data.name, *in_index) if whole
                                    else piece(tuple(in_index), tuple(bounds))))
            sub = _sub_geometry(geom, blocks, tuple(slab_shape), nsize, csize)
            block = _Block(sub, tuple(slab_shape), tuple(len(blk.pieces) for blk in blocks), data.dtype,
                           tuple(blk.a for blk in blocks), block_offsets)
            out_index = [0] * ndim
            out_index[n_axis], out_index[c_axis] = bn, bc
            for ax, (j, _) in zip(spatial, combo, strict=True):
                out_index[ax] = j
            key = (name, *out_index)
            dsk[key] = Task(key, _pool_block, job, block, *refs)
            block_keys.append(key)

    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[data])  # type: ignore[list-item]
    if index_dtype is None:
        return _array(graph, name, tuple(out_chunks), data.dtype)
    # Each task returns (values, indices): two arrays, each a getitem layer over the tasks' tuples.
    pairs = _array(graph, name, tuple(out_chunks), data.dtype)
    outputs = []
    for i, (part, dtype) in enumerate((("values", data.dtype), ("indices", index_dtype))):
        part_name = f"{kind}-{part}-{token}"
        layer: dict[Any, Any] = {
            (part_name, *key[1:]): Task((part_name, *key[1:]), operator.getitem, TaskRef(key), i)
            for key in block_keys}
        part_graph = HighLevelGraph.from_collections(part_name, layer,
                                                     dependencies=[pairs])  # type: ignore[list-item]
        outputs.append(_array(part_graph, part_name, tuple(out_chunks), dtype))
    return outputs[0], outputs[1]


def _array(graph: HighLevelGraph, name: str, chunks: tuple[tuple[int, ...], ...],
           dtype: np.dtype[Any]) -> da.Array:
    meta = np.empty((0,) * len(chunks), dtype)
    return da.Array(graph, name, chunks, meta=meta)  # type: ignore[no-untyped-call]


# --- Tasks -------------------------------------------------------------------------------------------


def _cut(block: np.ndarray, index: tuple[slice, ...], copy: bool) -> np.ndarray:
    """A piece of an input block. A small piece (a halo) is copied, so that it alone travels to
    another worker and the whole block can be freed; a large one stays a view."""
    piece = block[index]
    return np.array(piece, copy=True) if copy else piece


def _assemble(block: _Block, job: _Job, pieces: tuple[np.ndarray, ...]) -> np.ndarray:
    """The slab: the pieces (row-major over the spatial grid) joined, in one allocation."""
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:  # the slab is empty along some spatial axis
        return np.empty(block.slab_shape, block.dtype)
    it = iter(pieces)

    def nest(depth: int) -> Any:
        if depth == len(block.grid):
            leaf = next(it)
            return [leaf] if job.geom.data_format == "NXC" else leaf  # C is the innermost axis
        return [nest(depth + 1) for _ in range(block.grid[depth])]

    spatial = nest(0)
    return np.block([spatial] if job.geom.data_format == "NXC" else [[spatial]])


def _pool_block(job: _Job, block: _Block, *pieces: np.ndarray) -> Any:
    """Pool one block's slab with its sub-geometry; indices become global, in the call's scope."""
    slab = _assemble(block, job, pieces)
    x = _to_ncx(slab, job.geom.data_format)
    index_dtype = _LOCAL_INDEX if job.index_dtype is not None else None
    if isinstance(block.geom, PoolGeometry):
        values, local = _dispatch.run_max_pool(x, block.geom, job.preset, index_dtype, PLANE_SCOPE)
    else:
        assert isinstance(block.geom, AdaptiveGeometry) and index_dtype is not None
        values, local = _dispatch.run_adaptive_max_pool(x, block.geom, job.preset, index_dtype,
                                                        PLANE_SCOPE)
    if job.index_dtype is None:
        return _from_ncx(values, job.geom.data_format)
    assert local is not None
    indices = _global_indices(job, block, local, _took_a_tap(job.preset, values, local))
    return (_from_ncx(values, job.geom.data_format),
            _from_ncx(indices.astype(job.index_dtype, copy=False), job.geom.data_format))


def _took_a_tap(preset: sem.Preset, values: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Where a window took a tap, from its slab-local per-plane index or, under the plane-first
    empty index (ignore-NaN rule: a tap is taken only if above the empty value), from its value."""
    if preset.empty_index != sem.PLANE_FIRST:
        return local >= 0
    empty = np.array(preset.empty_value_for(values.dtype), values.dtype)
    if values.dtype in NARROW_FLOATS:  # compare f16 and bf16 after an exact widening
        values, empty = values.astype(np.float32), empty.astype(np.float32)
    taken: np.ndarray = values != empty
    return taken


def _global_indices(job: _Job, block: _Block, local: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """Slab-local per-plane flat indices (NCX) -> global indices in the scope of ``job.index_axis``,
    with the preset's empty-window index where no tap was ``taken`` (as ``_scoped_indices``).

    Works in place on ``local`` (which it consumes) and one int64 array, plus one temporary per axis.
    """
    geom = job.geom
    rem = local
    np.copyto(rem, 0, where=~taken)
    flat = np.zeros_like(rem)
    for size, origin, stride in reversed(list(zip(block.geom.in_size, block.origin, geom.plane_strides,
                                                  strict=True))):
        size = max(size, 1)  # an empty slab axis: no window took a tap, rem is 0
        position = rem % size
        position += origin
        position *= stride
        flat += position
        rem //= size
    del position, rem
    assert block.offsets is not None
    offsets = block.offsets.reshape(block.offsets.shape + (1,) * len(geom.in_size))
    flat += offsets
    flat %= max(geom.scope_modulus(job.index_axis), 1)
    if job.preset.empty_index == sem.MINUS_ONE:
        empty: Any = np.int64(-1)
    elif job.preset.empty_index == sem.PLANE_FIRST:
        empty = offsets
    else:  # BEFORE_PLANE: the flat index of spatial position (-1, ..., -1), in the scope
        empty = offsets - sum(geom.scope_axis_strides(job.index_axis))
    np.copyto(flat, np.broadcast_to(empty, flat.shape), where=~taken)
    return flat
