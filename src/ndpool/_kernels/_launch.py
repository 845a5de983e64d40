"""Prepare views and parameters for the compiled loops, allocate outputs, run them on threads.

No shape arithmetic here: window positions and ranges come from the geometry (``tap_bounds``,
``interior``); this module only lays them out as arrays for the kernels.

Specializations are kept few on purpose (cold compilation costs seconds each): every array is
typed with layout ``A`` whatever its strides, indices are int64 (or int32, for the float types and
the loops in ``NATIVE_I32``), and f16/bf16 travel as int16/uint16 bits. That is one compiled loop
per element type and kernel, and one more per float type for int32 indices.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, cast

import ml_dtypes
import numba
import numpy as np
from numba import types

from .. import _semantics as sem
from .._call_cache import CallCache
from .._geometry import INT32_MAX, AdaptiveGeometry, PoolGeometry, _Planes
from ._adaptive import adaptive_scratch, adaptive_width_inner
from ._channel_blocks import LANES, channel_blocks_scratch, pool_channel_blocks
from ._channel_runs import channel_runs_scratch, pool_channel_runs
from ._folds import folds_scratch, pool_folds
from ._jit import pure
from ._loops import channels_inner_scratch, pool_channels_inner
from ._outputs import empty as _empty
from ._outer_first import outer_first_ncx_scratch, outer_first_scratch, pool_outer_first, pool_outer_first_ncx
from ._plane_lanes import plane_lanes_blocks, plane_lanes_scratch, pool_plane_lanes
from ._planes import planes_fit, planes_scratch, pool_planes
from ._separable import pool_separable, separable_scratch
from ._separable_nxc import pool_separable_nxc, separable_nxc_scratch
from ._sliding import _quarter_level, _sliding_layout, pool_sliding, sliding_scratch
from ._threads import split
from ._tiles import MIN_ROW as TILES_MIN_ROW
from ._tiles import pool_tiles, tiles_scratch
from ._width_inner import pool_width_inner, width_inner_scratch

__all__ = ["adaptive_max_pool_numba", "max_pool_numba"]

# f16 and bf16 travel as their bit patterns; the kernels' keys tell them apart by the view type.
_STORAGE = {np.dtype(np.float16): np.dtype(np.int16), np.dtype(ml_dtypes.bfloat16): np.dtype(np.uint16)}
_NO_INDICES = np.zeros((1, 1, 1, 1, 1), np.int64)
# Output rows shorter than this are pooled a plane at a time (pool_planes).
_SHORT_ROW = 512
# Separable and plane scratch is a few planes per thread, the row loop's one plane of phase rows:
# larger planes take the row loops, splitting input rows again for each output row.
_SEPARABLE_MAX_PLANE = 1 << 22
# NXC with unit-stride channels: from this many, a block of channels per window with the maxima in
# registers (pool_channel_blocks); else, with up to _RUNS_MAX_CHANNELS, MaxPool takes a tap per run
# of outputs (pool_channel_runs), and the rest the per-output loop (pool_channels_inner). Side by side
# on two threads, blocks against the loops before: 3-D k3s2p1 with 32 channels 3.80 -> 2.55 ms
# (runs; with i64 indices 7.5 -> 3.5), the NXC stem 8.3 -> 6.5 (with indices 17.3 -> 12.8),
# AdaptiveMaxPool 8x64x100x100 -> 13x17 1.59 -> 1.05.
_BLOCKS_MIN_CHANNELS = LANES
# ... and windows of more taps than this: up to four, pool_channels_inner's one pass over all the
# channels was faster (AdaptiveMaxPool 32x512x14x14 -> 7x7, k2 s2, one thread: 1.28 against 1.48 ms).
_BLOCKS_MIN_TAPS = 4
# Runs were faster than the per-output loop up to 32 channels (one thread: C=16 1.4x and 3-D C=32
# 1.5x; C=48 1.2x slower; with indices even at C=32).
_RUNS_MAX_CHANNELS = 32
# AdaptiveMaxPool bins of up to this many taps that tile the input evenly run as MaxPool windows.
_EVEN_BINS_MAX_TAPS = 16
# NCX MaxPool on rows up to this wide (with stride 1 in every axis: the second), and AdaptiveMaxPool
# on any, with 16 planes within _LANES_MAX_BLOCK elements: pool_plane_lanes (planes as lanes). Measured
# side by side on 7x7 to 28x28 planes (k3 s1, k3 s2, k2 s2; 2 threads): 0.14-0.92x the time of
# pool_folds/pool_planes, except k3 s1 from 20x20 (1.6-2.1x). (A block then holds at least 32 planes:
# up to twice _LANES_MAX_BLOCK elements.) k2s2 on rows of _tiles.MIN_ROW outputs or more takes
# pool_tiles first (measured there).
_LANES_MAX_WIDTH = 31
_LANES_MAX_WIDTH_S1 = 16
_LANES_MAX_BLOCK = 1 << 18
# pool_sliding's ring of rows (every level's) per unit, in elements: 512 KB of f32.
_SLIDING_RING = 1 << 17
# pool_sliding's scratch per thread at most (elements): else the separable tables or direct loops.
_SLIDING_MAX_SCRATCH = 1 << 23
# 3-D NXC values: pool_outer_first's scratch (S and T) at most, in elements (1 MB of f32: half of L2),
# and more taps a window than this. Side by side on two threads, 2 x C x 32x64x64, against the loops
# before (pool_channel_runs, pool_channel_blocks): k3s2p1 with C = 4 0.46 ms against 1.78, 8 0.64
# against 1.13, 16 0.87 against 1.55, 32 1.54 against 1.77; with 64 channels (1.5 MB of scratch,
# before the bands below) 4.2 against 3.4, and k2s2 (8 taps) from 8 channels 0.60 against 0.53.
_OUTER_FIRST_MAX_SCRATCH = 1 << 18  # (S and a row of T, since T is folded a row at a time)
_OUTER_FIRST_MIN_TAPS = 8
# 2-D NXC values too (one d tap: the h pass reads the input itself). Side by side on two threads
# against the loops before (2026-12-04): the NXC stem 4.4-4.6 against 5.9-6.0 ms (pool_channel_blocks),
# f16 0.75x, bf16 0.51x (pool_channels_inner); k3s2p1 with 256 and 512 channels 0.58x; 3 to 31
# channels 0.28-0.75x (pool_channel_runs); k5s2p2 with 16 channels 0.52x. k2s2 (4 taps) was not
# faster: 0.92-1.52x.
# pool_outer_first's units are bands of output rows whose input rows (S) hold about this many elements
# (128 KB of f32), so that the next unit's d window, which shares slices with this one's, finds them
# in L2. 2x32x32x64x64 k3s2p1 NXC (7 output rows a band), kernel alone on two threads: whole slices
# 1.34 ms, bands 1.08-1.16 (2**14: 1.21, 2**16: 1.12); the call side by side with onnxruntime 1.9
# against 1.88 ms before, 1.49-1.70 against 1.56-1.82 after.
_OUTER_FIRST_BAND = 1 << 15
# 3-D (S is the d pass's result; 2-D's direct h pass has none, and the band only sizes its units) on
# the AMD machine, in one process alternated, 2**16 against 2**15 elements: 2x32x32x64x64,
# 2x64x32x64x64, 2x32x16x128x128 k3s2p1 and 2x16x16x64x64 k3s1p1, 0.87-0.97x the call's time on two
# threads, 0.90-0.94x on one; 2**17 0.77-0.86x there, but whole slices (2**17 on the first) had been
# 1.2x slower than 2**15 on the Intel machine, 2**16 equal. 2-D kept 2**15: the stem and 8x32x128x128
# k3s1p1 took 0.98-1.09x at 2**16 (2026-12-06).
_OUTER_FIRST_BAND_3D = 1 << 16
# The element types (as stored: f16 and bf16 as their bits) every kernel is compiled for: the spec's
# f32, f16 and bf16. f64 and the integer types get the three general loops only (GENERAL_KERNELS: one
# per layout and the adaptive bin-row loop; every geometry), the other loops' choices falling back to
# them: their large windows cost a tap per output, as in the reference. Each (kernel, type) costs
# 2-38 s of cold compilation; with every kernel for all eight types the suite's cold precompile took
# 9m27 on the two-core development machine on 2026-12-02. On 2026-12-03 (an AMD EPYC two-core
# machine) it took 7m04 with f64 and the integer types on six loops and int32 indices native in f16
# and bf16 too, about 1050 s of compilation: the loops dropped here were 150 s of it, the native int32
# of f16 and bf16 160 s. CI's budget for the whole suite, pip install included, is 10 minutes.
SPEC_STORAGE = frozenset({np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.uint16)})
GENERAL_KERNELS = frozenset({pool_width_inner, pool_channels_inner, adaptive_width_inner})


def compiled_for(kernel: Any, dtype: np.dtype[Any]) -> bool:
    """Whether ``kernel`` runs (and is precompiled) for elements of ``dtype`` (or of its storage type)."""
    return _STORAGE.get(dtype, dtype) in SPEC_STORAGE or kernel in GENERAL_KERNELS


# Below this many output elements a thread hand-off costs more than it saves.
_MIN_PARALLEL_OUTPUTS = 1 << 14
# Loops that also write int32 indices themselves, for f32: narrowing their int64 after the loop cost
# more than the loop (the NXC stem with i32 indices 20.4 ms, with i64 11.3; one more compilation per
# loop). pool_separable keeps int64 (its passes share one buffer type with the scratch), pool_sliding
# writes none; those, f16 and bf16 (about 80 s of cold compilation each with them native) and the
# integer types are narrowed after the loop.
NATIVE_I32 = frozenset({pool_channels_inner, pool_channel_runs, pool_channel_blocks, pool_width_inner, pool_planes,
                        pool_folds, pool_plane_lanes, pool_separable_nxc, adaptive_width_inner, pool_tiles})
NATIVE_I32_STORAGE = frozenset({np.dtype(np.float32)})

# Each kernel's per-thread scratch: (elements, int64s). The kernels are compiled without numba's
# reference counting (_nrt=False): with it, every array handed to an inlined helper in a hot loop
# cost an atomic incref/decref pair (60% of the NCX stem's time), so they allocate nothing and carve
# their buffers out of these two arrays.
_SCRATCH = {pool_channels_inner: channels_inner_scratch, pool_channel_runs: channel_runs_scratch,
            pool_channel_blocks: channel_blocks_scratch,
            pool_width_inner: width_inner_scratch,
            pool_planes: planes_scratch, pool_folds: folds_scratch, pool_plane_lanes: plane_lanes_scratch,
            pool_separable: separable_scratch, pool_separable_nxc: separable_nxc_scratch,
            pool_sliding: sliding_scratch, pool_outer_first: outer_first_scratch,
            pool_outer_first_ncx: outer_first_ncx_scratch, pool_tiles: tiles_scratch,
            adaptive_width_inner: adaptive_scratch}

Result = tuple[np.ndarray, np.ndarray | None]
Bounds = list[tuple[np.ndarray, np.ndarray, np.ndarray]]


def _plan_max_pool(x: np.ndarray, geom: PoolGeometry, preset: sem.Preset, index_dtype: np.dtype[Any] | None,
                   index_axis: int) -> _Plan:
    bounds = [geom.tap_bounds(axis) for axis in range(len(geom.in_size))]
    interior = geom.interior(len(geom.in_size) - 1)
    # Large windows on 1-D and 2-D data without indices: rows through doubling levels (pool_sliding).
    sliding = (index_dtype is None and len(geom.in_size) <= 2 and _sliding_pays(x, geom)
               and compiled_for(pool_sliding, x.dtype))
    separable = (sliding or _separable_pays(x, geom, bounds)) and compiled_for(_separable_loop(x, geom, sliding),
                                                                                 x.dtype)
    # Short rows (the stem's 56) cost more in loop setup than in work one at a time: whole planes.
    width_kernel = pool_planes if (geom.out_size[-1] < _SHORT_ROW
                                   and geom.plane_size <= _SEPARABLE_MAX_PLANE) else pool_width_inner
    if width_kernel is pool_planes and _folds_pay(x, geom):
        width_kernel = pool_folds
    # Narrow rows (stride 1 only the narrowest: more outputs per input there, each paying the
    # channels-inner loop's per-output cost; 3x3 s1 on 20x20 planes ran 1.6x slower as lanes).
    narrow = geom.in_size[-1] <= (_LANES_MAX_WIDTH if math.prod(geom.strides) > 1 else _LANES_MAX_WIDTH_S1)
    if not separable and narrow and _plane_lanes_pay(x, geom, bounds):
        width_kernel = pool_plane_lanes
    if sliding:
        width_kernel = pool_sliding
    if _tiles_pay(x, geom):  # (before any other choice: every element read once, nothing copied)
        sliding, separable, width_kernel = False, False, pool_tiles
    return _plan_run(x, geom, bounds, geom.dilations, geom.strides[-1], interior, preset, index_dtype,
                     index_axis, separable, width_kernel)


def _separable_loop(x: np.ndarray, geom: _Planes, sliding: bool) -> Any:
    """The loop that windows pooled separably take: pool_sliding (large windows without indices),
    pool_separable_nxc (1-D and 2-D NXC data, the channels as lanes) or pool_separable."""
    if sliding:
        return pool_sliding
    return pool_separable_nxc if _channels_adjacent(x, geom) and len(geom.in_size) <= 2 else pool_separable


def _tiles_pay(x: np.ndarray, geom: PoolGeometry) -> bool:
    """Whether NCX data goes to pool_tiles: 1-D or 2-D windows of two taps along w that tile each row
    (kernel = stride, no pads or dilation, in_w = 2 * out_w, every h window inside), rows of at least
    _tiles.MIN_ROW outputs, adjacent in memory with w at unit stride, one of the spec's types (see _tiles)."""
    if (_channels_adjacent(x, geom) or len(geom.in_size) > 2 or not compiled_for(pool_tiles, x.dtype)
            or geom.kernel != geom.strides or geom.kernel[-1] != 2 or any(d != 1 for d in geom.dilations)
            or any(geom.pads_begin) or any(geom.pads_end) or geom.out_size[-1] < TILES_MIN_ROW):
        return False
    in_w = geom.in_size[-1]
    rows_ok = len(geom.in_size) == 1 or (geom.in_size[0] >= geom.kernel[0] * geom.out_size[0]
                                         and x.strides[-2] == in_w * x.itemsize)
    return in_w == 2 * geom.out_size[-1] and x.strides[-1] == x.itemsize and rows_ok


def _folds_pay(x: np.ndarray, geom: PoolGeometry) -> bool:
    """Whether pool_folds beats pool_planes on NCX data: windows three taps wide, adjacent, at
    stride 1 or 2 along a unit-stride w (measured side by side on one thread: stem 25.7 -> 21.5 ms,
    with i64 indices 49 -> 41; 3x3 s1 3.7 -> 2.7). Other strides and dilations would read w
    through gathers, and k2 s2 planes need no phase margins: there pool_planes was faster. f16 and
    bf16 fold too since pool_folds requests its next plane's lines (stem, two threads: f16 13.7 ->
    11.4 ms, bf16 8.7 -> 6.1; before that they were 1.4x slower folded). Its indices within a plane
    are int32: planes of fewer than 2**31 elements."""
    return (not _channels_adjacent(x, geom) and x.strides[-1] == x.itemsize and geom.plane_size <= INT32_MAX
            and geom.kernel[-1] == 3 and geom.dilations[-1] == 1 and geom.strides[-1] in (1, 2)
            and compiled_for(pool_folds, x.dtype))


def max_pool_numba(x: np.ndarray, geom: PoolGeometry, preset: sem.Preset,
                   index_dtype: np.dtype[Any] | None, index_axis: int) -> Result:
    return _execute(_plan_for(_plan_max_pool, x, geom, preset, index_dtype, index_axis), x)


def adaptive_max_pool_numba(x: np.ndarray, geom: AdaptiveGeometry, preset: sem.Preset,
                            index_dtype: np.dtype[Any], index_axis: int) -> Result:
    return _execute(_plan_for(_plan_adaptive, x, geom, preset, index_dtype, index_axis), x)


@dataclass(frozen=True)
class _Plan:
    """What a call runs, decided from everything but its data: the kernel, its constant arguments
    (windows, dilations, parameters, empty-window values), its units of work and scratch, and the
    outputs' shape and layout. Deciding took about 140 us a call (numpy calls on small arrays),
    most of the time of a call on a small input."""

    storage: np.dtype[Any]
    order: tuple[int, ...]
    out_shape: tuple[int, ...]
    index_dtype: np.dtype[Any] | None
    index_storage: np.dtype[Any]  # what the kernel writes: int64, or the int32 asked for (NATIVE_I32)
    geom: _Planes
    kernel: Any  # None: an empty output, nothing to run
    consts: tuple[np.ndarray, ...]
    rows: int
    scratch: tuple[int, int]


# Plans of recent calls, by everything a plan depends on. A few dozen: a model's layers, a test's cases.
_PLANS_KEPT = 64
_plans = CallCache(_PLANS_KEPT)


def forget_plans() -> None:
    """Drop the kept plans (tests that swap this module's decisions call it first)."""
    _plans.clear()


def _plan_for(build: Any, x: np.ndarray, geom: _Planes, preset: sem.Preset, index_dtype: np.dtype[Any] | None,
              index_axis: int) -> _Plan:
    # The data's strides choose loops and its layout the outputs'; the thread count, the units.
    key = (build, x.shape, x.strides, x.dtype, geom, preset, index_dtype, index_axis, numba.get_num_threads())
    plan = _plans.get(key)
    if plan is None:
        plan = build(x, geom, preset, index_dtype, index_axis)
        _plans.put(key, plan)
    return plan  # type: ignore[no-any-return]


def _plan_adaptive(x: np.ndarray, geom: AdaptiveGeometry, preset: sem.Preset, index_dtype: np.dtype[Any],
                   index_axis: int) -> _Plan:
    even = _even_bins(geom)
    if even is not None:
        return _plan_max_pool(x, even, preset, index_dtype, index_axis)
    bounds = [geom.tap_bounds(axis) for axis in range(len(geom.in_size))]
    # NXC data: the channels-inner loop (vectorized across channels). NCX: small planes as lanes
    # of that loop, larger ones bins row by row (_adaptive). (Separable tables were 10x slower here:
    # bins barely overlap, so each element is read about once directly, against log2(bin) table
    # passes.)
    lanes = _plane_lanes_pay(x, geom, bounds) and not _bin_rows_pay(x, geom)
    width_kernel = pool_plane_lanes if lanes else adaptive_width_inner
    return _plan_run(x, geom, bounds, (1,) * len(geom.in_size), 1, (0, 0), preset, index_dtype,
                     index_axis, width_kernel=width_kernel)


def _plane_lanes_pay(x: np.ndarray, geom: _Planes, bounds: Bounds) -> bool:
    """Whether NCX data goes to pool_plane_lanes: planes small enough for a block of 16 in L2, at
    least 16 of them, and no empty window (its index would take a plane's offset there)."""
    return (not _channels_adjacent(x, geom) and geom.batch * geom.channels >= 16
            and geom.plane_size * 16 <= _LANES_MAX_BLOCK and _no_empty_window(bounds)
            and compiled_for(pool_plane_lanes, x.dtype))


def _bin_rows_pay(x: np.ndarray, geom: AdaptiveGeometry) -> bool:
    """Whether adaptive_width_inner beats pool_plane_lanes on NCX planes small enough for lanes: rows
    of 2 * LANES or more (its column blocks cover them without overlap), and planes of a multiple of
    4 KB, whose copy into lanes reads a block's planes at addresses that share L1 sets. Side by side,
    two threads, i64 indices, against lanes: 8x64x100x100 -> 13x17 0.82x the time, 16x64x64x64 ->
    7x9 0.33x, 4x64x128x128 -> 7x7 0.17x, 32x64x32x32 -> 5x5 0.41x; but 40x40 -> 7x7 1.4x, 48x48 ->
    5x7 1.06x, 31x31 -> 5x5 1.9x (one thread alike)."""
    return geom.in_size[-1] >= 2 * LANES or (geom.plane_size * x.itemsize) % 4096 == 0


def _even_bins(geom: AdaptiveGeometry) -> PoolGeometry | None:
    """AdaptiveMaxPool bins that tile the input evenly and are small, as MaxPool windows.

    MaxPool then reads the same taps in the same order, so its loops give the same values and indices
    under every preset (none starts at ``lowest``, and no bin is empty). Its plane loop vectorizes
    across a plane's outputs, where the bin-row loop pays per output row: 32x512x14x14 -> 7x7 NCX ran
    5x torch's time that way. Larger bins stay with the bin-row loop (the plane loop's phases would be
    k^2 short rows)."""
    pool = geom.as_max_pool()
    return pool if pool is not None and math.prod(pool.kernel) <= _EVEN_BINS_MAX_TAPS else None


def kernel_signature(dtype: np.dtype[Any], index_dtype: np.dtype[Any]) -> tuple[Any, ...]:
    """Every kernel's argument types for elements of ``dtype`` (as stored) and indices of ``index_dtype``."""
    elem, i64 = numba.from_dtype(dtype), types.int64
    return (types.Array(elem, 1, "C"), i64, types.Array(i64, 1, "C"), types.Array(elem, 5, "C"),
            types.Array(numba.from_dtype(index_dtype), 5, "C"), types.Array(i64, 3, "C"), types.Array(i64, 1, "C"),
            types.Array(i64, 1, "C"), types.Array(elem, 1, "C"), i64, i64, types.Array(elem, 1, "C"),
            types.Array(i64, 1, "C"))


@functools.cache
def _compiled(kernel: Any, dtype: np.dtype[Any], index_dtype: np.dtype[Any] = np.dtype(np.int64)) -> Any:
    """The kernel's entry point for ``dtype`` and indices of ``index_dtype`` (compiled once, cached on disk)."""
    sig = kernel_signature(dtype, index_dtype)
    kernel.compile(sig)
    return kernel.overloads[sig].entry_point


def _launch(entry: Any, args: tuple[Any, ...], rows: int, outputs: int, scratch: tuple[int, int],
            dtype: np.dtype[Any]) -> None:
    """Run ``entry`` over output rows, split evenly over numba's thread count (NUMBA_NUM_THREADS),
    each job with its own scratch."""
    def job(lo: int, hi: int) -> None:
        entry(*args, lo, hi, _empty(max(scratch[0], 1), dtype), _empty(max(scratch[1], 1), np.int64))

    _split(job, rows, outputs)


def _split(job: Any, count: int, outputs: int) -> None:
    """``job(lo, hi)`` over [0, count) in even parts, one per thread (numba's thread count), or at once
    on the calling thread when ``outputs`` are too few to pay for the hand-off."""
    split(job, count, numba.get_num_threads() if outputs >= _MIN_PARALLEL_OUTPUTS else 1)


def _separable_pays(x: np.ndarray, geom: PoolGeometry, bounds: Bounds) -> bool:
    """Whether separable tables beat the direct loop: estimated element operations of each.

    Direct: every output visits every tap. Separable: each pass touches its input (the previous
    pass's output) once per table level, plus a query and a copy. Margins from side-by-side runs:
    1-D and 2-D NXC data (pool_separable_nxc, channels as lanes) won from k5 (C=16, 1.8x) and k7
    (C=64, 1.5x); 3-D NXC gathers channels' planes first (strided reads): ask for more.
    """
    if geom.plane_size > _SEPARABLE_MAX_PLANE:
        return False
    direct = math.prod(geom.out_size) * math.prod(geom.kernel)
    sizes = list(geom.in_size)
    separable = 0
    widest = _widest_taps(bounds)
    for axis in range(len(sizes) - 1, -1, -1):  # w first, then h, then d
        levels = widest[axis].bit_length()
        separable += math.prod(sizes) * (levels + 2)
        sizes[axis] = geom.out_size[axis]
    margin = (2 if len(geom.in_size) <= 2 else 8) if _channels_adjacent(x, geom) else 3
    return separable * margin < direct


def _sliding_pays(x: np.ndarray, geom: PoolGeometry) -> bool:
    """Whether pool_sliding beats the direct loops: estimated element operations of each.

    Direct: every output visits every tap. Sliding, per input row: a copy, the w levels and the
    query over the row's taps (margins included), the h levels and the output row over its
    outputs, each pass with a fixed cost (a call, about 64 elements' worth). The margin of 1.5
    from side-by-side runs (2 threads): 2-D k3 s1 on 128x128 planes NCX 0.99x / NXC 0.65x the
    direct time, k5 s1 0.32x / 0.38x, k5 s2 0.86x / 0.93x, k7 s2 0.58x / 0.56x; 1-D rows of 4096:
    k5 1.14x / 1.22x, k9 0.86x / 1.06x, k17 0.65x / 0.72x. Its scratch must stay bounded too.
    """
    if math.prod(geom.out_size) == 0:
        return False
    adjacent = _channels_adjacent(x, geom)
    lanes = geom.channels if adjacent else 1
    strip = _sliding_units(geom, adjacent)[1]
    padded, _, top_h, scratch = _sliding_layout_of(geom, strip, lanes)
    top_w = int(pure(_quarter_level)(geom.kernel[-1]))
    strips = -(-geom.out_size[-1] // strip)
    row = strips * ((padded * (top_w + 2) + strip * (top_h + 1)) * lanes + 64 * (top_w + top_h + 3))
    in_h = geom.in_size[-2] if len(geom.in_size) == 2 else 1
    sliding = geom.batch * (1 if adjacent else geom.channels) * in_h * row
    direct = math.prod(geom.out_size) * geom.batch * geom.channels * math.prod(geom.kernel)
    return sliding * 1.5 < direct and scratch <= _SLIDING_MAX_SCRATCH


def _sliding_layout_of(geom: PoolGeometry, strip: int, lanes: int) -> tuple[int, int, int, int]:
    """_sliding._sliding_layout for this geometry (1-D: one row, one tap along h)."""
    two_d = len(geom.in_size) == 2
    in_h, k_h, dh = (geom.in_size[-2], geom.kernel[-2], geom.dilations[-2]) if two_d else (1, 1, 1)
    sw, k_w, dw = geom.strides[-1], geom.kernel[-1], geom.dilations[-1]
    layout = pure(_sliding_layout)(in_h, sw, k_h, k_w, dh, dw, strip, lanes)
    return tuple(int(v) for v in layout)  # type: ignore[return-value]


def _gather_block(geom: _Planes) -> int:
    """Channels pool_separable gathers together on NXC data: up to 8, about 2**20 elements."""
    return max(1, min(geom.channels, 8, (1 << 20) // max(geom.plane_size, 1)))


def _band_rows(geom: PoolGeometry, bounds: Bounds) -> int:
    """Output rows per unit of pool_separable_nxc: its band's w results (input rows x out_w x C)
    stay within about 2**19 elements, 2 MB of f32 in L2 (the halo of k_h - 1 input rows is folded
    along w again by the next band)."""
    row = geom.out_size[-1] * geom.channels
    halo = geom.extent[-2] - 1 if len(geom.in_size) == 2 else 0
    stride = geom.strides[-2] if len(geom.in_size) == 2 else 1
    return max(1, ((1 << 19) // max(row, 1) - halo) // stride)


def _sliding_units(geom: PoolGeometry, adjacent: bool) -> tuple[int, int]:
    """(output rows, output columns) per unit of pool_sliding. Columns: the ring of a strip's rows
    (every level's) within about _SLIDING_RING elements, so it stays in L2 (the k13 SPP image on
    NXC data: 1.8 MB of ring for whole rows of 16 channels), but at least 4 windows wide (a strip
    folds the taps it shares with the next one again). Rows: whole planes (images, on NXC data)
    when there are enough units for every thread, else bands at least 4 windows tall."""
    lanes = geom.channels if adjacent else 1
    out_h = geom.out_size[-2] if len(geom.in_size) == 2 else 1
    out_w = geom.out_size[-1]
    extent_h = geom.extent[-2] if len(geom.in_size) == 2 else 1
    _, ring, top_h, _ = _sliding_layout_of(geom, 1, lanes)
    per_column = max((top_h + 1) * ring * lanes, 1)  # ring elements per output column
    strip = min(out_w, max(4 * geom.extent[-1], _SLIDING_RING // per_column))
    units = (geom.batch if adjacent else geom.batch * geom.channels) * -(-out_w // strip)
    wanted = -(-4 * numba.get_num_threads() // max(units, 1))
    bands = max(1, min(wanted, out_h // (4 * extent_h)))
    return -(-out_h // bands), strip


def _channels_adjacent(x: np.ndarray, geom: _Planes) -> bool:
    """Whether channels, not width, are adjacent in memory (NXC data): then loops run over C."""
    return geom.channels > 1 and abs(x.strides[1]) < abs(x.strides[-1])


def _as_5d(a: np.ndarray) -> np.ndarray:
    """(N, C, *X) -> (N, C, D, H, W) with unit axes in front: a view, never a copy."""
    return a[(slice(None), slice(None)) + (None,) * (5 - a.ndim)]  # (np.expand_dims: 3 us a call)


def _windows(bounds: Bounds) -> np.ndarray:
    """win[axis, (tap-0 position, first tap, end tap), o] over 3 axes, unit axes in front."""
    longest = max([1] + [start.size for start, _, _ in bounds])
    win = np.zeros((3, 3, longest), np.int64)
    win[:, 2, :] = 1  # a unit axis: one window with its single tap in range
    for axis, rows in enumerate(bounds, start=3 - len(bounds)):
        for row, values in enumerate(rows):
            win[axis, row, : values.size] = values
    return win


def _params(geom: _Planes, preset: sem.Preset, want_idx: bool, index_axis: int, stride_w: int,
            interior: tuple[int, int], in_shape: tuple[int, ...], bounds: Bounds) -> np.ndarray:
    pad = 3 - len(geom.in_size)
    strides = (0,) * pad + geom.scope_axis_strides(index_axis)
    off_n = geom.channels * geom.plane_size if index_axis == 0 else 0
    off_c = geom.plane_size if index_axis <= 1 else 0
    empty_const, use_off = {
        sem.MINUS_ONE: (-1, 0),
        sem.PLANE_FIRST: (0, 1),
        sem.BEFORE_PLANE: (-sum(strides), 1),
    }[preset.empty_index]
    return np.array([want_idx, preset.nan_rule == sem.IGNORE,
                     preset.nan_rule in (sem.PROPAGATE_FIRST, sem.PROPAGATE_LAST),
                     preset.nan_rule == sem.PROPAGATE_FIRST, off_n, off_c, *strides, empty_const,
                     use_off, stride_w, *interior, in_shape[4], *in_shape[2:],
                     *_table_levels(bounds), preset.nan_rule == sem.FIRST_VALID], np.int64)


def _no_empty_window(bounds: Bounds) -> bool:
    """Whether every window has an in-range tap on every axis."""
    return all(bool(np.all(first < end)) for _, first, end in bounds)


def _window_taps(bounds: Bounds) -> int:
    """The in-range taps of the largest window."""
    return math.prod(max(1, taps) for taps in _widest_taps(bounds))


def _widest_taps(bounds: Bounds) -> list[int]:
    """Per axis, the in-range taps of its widest window."""
    return [int(np.max(end - first, initial=1)) for _, first, end in bounds]


def _table_levels(bounds: Bounds) -> tuple[int, ...]:
    """Per axis (unit axes in front), the top sparse-table level the widest window needs."""
    tops = [max(0, taps.bit_length() - 1) for taps in _widest_taps(bounds)]
    return (0,) * (3 - len(bounds)) + tuple(tops)


def _execute(plan: _Plan, x: np.ndarray) -> Result:
    """Allocate the outputs and run the plan's kernel on ``x`` (read in place)."""
    storage = plan.storage
    out5 = _empty(plan.out_shape, storage)  # (large ones in memory kept from earlier calls: see _outputs)
    idx5 = _empty(plan.out_shape, plan.index_storage) if plan.index_dtype is not None else _NO_INDICES
    if plan.kernel is not None:
        flat, offset, strides = _flat_view(_as_5d(x.view(storage) if storage != x.dtype else x))
        entry = _compiled(plan.kernel, storage, idx5.dtype)
        _launch(entry, (flat, offset, strides, out5, idx5, *plan.consts), plan.rows, out5.size, plan.scratch, storage)
    values = _ncx5(out5.view(x.dtype) if storage != x.dtype else out5, plan.order, plan.geom)
    if plan.index_dtype is None:
        return values, None
    # Kernels outside NATIVE_I32 write int64; i32 is narrowed here (the geometry proved every index fits).
    indices = idx5 if idx5.dtype == plan.index_dtype else _narrowed(idx5, plan.index_dtype)
    return values, _ncx5(indices, plan.order, plan.geom)


def _narrowed(wide: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The C-contiguous ``wide`` cast to ``dtype`` (every value fits), split over the launcher's threads:
    NumPy's cast lets go of the GIL. (astype on one thread: 1.7 of the 17 ms of k13 s1 on 1x16x512x512
    NCX with i32 indices.)"""
    narrow = _empty(wide.shape, dtype)
    src, dst = wide.reshape(-1), narrow.reshape(-1)

    def part(lo: int, hi: int) -> None:
        np.copyto(dst[lo:hi], src[lo:hi], casting="unsafe")

    _split(part, src.size, src.size)
    return narrow


def _plan_run(x: np.ndarray, geom: _Planes, bounds: Bounds, dilations: tuple[int, ...], stride_w: int,
              interior: tuple[int, int], preset: sem.Preset, index_dtype: np.dtype[Any] | None,
              index_axis: int, separable: bool = False, width_kernel: Any = pool_width_inner) -> _Plan:
    storage = _STORAGE.get(x.dtype, x.dtype)
    x5 = _as_5d(x.view(storage) if storage != x.dtype else x)
    # Loop along whichever axis is adjacent in memory: channels (NXC) or width (NCX).
    adjacent = _channels_adjacent(x, geom)
    channels_inner = adjacent and not separable
    # Outputs in the input's layout: NXC results are returned channels-last, and a transposing copy
    # after the kernel was 12% of the large-window NXC time, on one thread.
    order = (0, 2, 3, 4, 1) if adjacent else (0, 1, 2, 3, 4)
    out_shape = tuple(((geom.batch, geom.channels) + (1,) * (3 - len(geom.out_size))
                       + geom.out_size)[axis] for axis in order)
    # Large windows without indices (1-D, 2-D): pool_sliding's units of output rows and columns. With
    # indices, on NXC data: 1-D and 2-D by bands of output rows with channels as lanes; 3-D gathers
    # this many channels' planes at a time (see pool_separable).
    sliding = separable and width_kernel is pool_sliding
    nxc_bands = separable and _separable_loop(x, geom, sliding) is pool_separable_nxc
    strip = 0
    if sliding:
        block, strip = _sliding_units(cast(PoolGeometry, geom), adjacent)  # (separable: MaxPool only)
    elif nxc_bands:
        block = _band_rows(cast(PoolGeometry, geom), bounds)
    else:
        block = _gather_block(geom) if separable and adjacent else 1
    strides = _flat_view(x5)[2]  # the element strides the kernel will read with
    # (After the separable loops, which take the block for themselves: see the kernel choice below.)
    outer_first = not separable and _outer_first_pays(geom, bounds, strides, index_dtype, adjacent, storage)
    if outer_first and adjacent:
        block = _outer_first_band(cast(PoolGeometry, geom))
    if math.prod(out_shape) == 0:
        return _Plan(storage, order, out_shape, index_dtype, np.dtype(np.int64), geom, None, (), 0, (0, 0))
    # The empty-window value, and a value no tap can win against (pool_planes' margins).
    empty = np.array([preset.empty_value_for(x.dtype), _never_wins(x.dtype)], x.dtype).view(storage)
    dil = np.array((1,) * (3 - len(dilations)) + tuple(dilations), np.int64)
    p = _params(geom, preset, index_dtype is not None, index_axis, stride_w, interior, x5.shape,
                bounds)
    if isinstance(geom, PoolGeometry):  # what the MaxPool loops need beyond the others
        pad = 3 - len(geom.in_size)
        inner = [(0, 1)] * pad + [geom.interior(axis) for axis in range(len(geom.in_size))]
        p = np.concatenate([p, np.array((1,) * pad + geom.strides, np.int64),
                            np.array([v for lo_hi in inner for v in lo_hi], np.int64),
                            np.array((1,) * pad + geom.kernel, np.int64),
                            np.array([geom.plane_size <= _SEPARABLE_MAX_PLANE, block], np.int64),
                            np.array((0,) * pad + tuple(int(start[0]) for start, _, _ in bounds), np.int64),
                            dil, np.array([order[-1] == 1, strip], np.int64)])
    planes = geom.batch * geom.channels  # units of work of the per-plane kernels
    if sliding:
        units = geom.batch if adjacent else planes
        out_w = out_shape[3 if adjacent else 4]
        kernel = pool_sliding
        rows = units * -(-out_shape[2 if adjacent else 3] // block) * -(-out_w // strip)
    elif nxc_bands:
        kernel, rows = pool_separable_nxc, geom.batch * -(-out_shape[2] // block)
    elif separable:
        kernel, rows = pool_separable, geom.batch * -(-geom.channels // block)
    elif outer_first:  # NXC: units of (n, band of output rows, od); NCX: (plane, od)
        kernel, rows = ((pool_outer_first, out_shape[0] * -(-out_shape[2] // block) * out_shape[1]) if adjacent
                        else (pool_outer_first_ncx, planes * out_shape[2]))
    elif channels_inner:
        # (Blocks keep indices as int32 offsets within a plane. bf16 without indices ran slower
        # in blocks, side by side on 2 threads: the NXC stem 6.5 -> 7.7 ms, 3-D k3s2 with 32
        # channels 3.1 -> 3.4, 5x5 s2 with 128 channels 1.7 -> 2.4; with indices faster.)
        blocks = (compiled_for(pool_channel_blocks, storage) and strides[1] == 1
                  and geom.channels >= _BLOCKS_MIN_CHANNELS and geom.plane_size <= INT32_MAX
                  and _window_taps(bounds) > _BLOCKS_MIN_TAPS
                  and (index_dtype is not None or x.dtype != ml_dtypes.bfloat16))
        runs = (compiled_for(pool_channel_runs, storage) and isinstance(geom, PoolGeometry) and strides[1] == 1
                and geom.channels <= _RUNS_MAX_CHANNELS and not blocks)
        kernel = pool_channel_blocks if blocks else pool_channel_runs if runs else pool_channels_inner
        rows = math.prod(out_shape[:3])
    elif width_kernel is pool_folds:
        kernel, rows = pool_folds, planes
    elif width_kernel is pool_tiles:
        kernel, rows = pool_tiles, planes
    elif width_kernel is pool_plane_lanes:
        kernel = pool_plane_lanes
        rows = plane_lanes_blocks(planes, geom.plane_size)
    elif (width_kernel is pool_planes and compiled_for(pool_planes, storage)
          and planes_fit(p, x5.shape, out_shape)):
        kernel, rows = pool_planes, planes
    else:
        kernel = pool_width_inner if width_kernel is pool_planes else width_kernel
        rows = math.prod(out_shape[:4])
    # (Each choice above asked compiled_for: any other kernel would compile in the middle of a call.)
    assert compiled_for(kernel, storage), (kernel, storage)
    scratch = _SCRATCH[kernel](p, x5.shape, out_shape)
    native = index_dtype == np.int32 and kernel in NATIVE_I32 and storage in NATIVE_I32_STORAGE
    return _Plan(storage, order, out_shape, index_dtype, np.dtype(np.int32 if native else np.int64), geom, kernel,
                 (_windows(bounds), dil, p, empty), rows, scratch)


def _outer_first_pays(geom: _Planes, bounds: Bounds, strides: np.ndarray, index_dtype: np.dtype[Any] | None,
                      adjacent: bool, storage: np.dtype[Any]) -> bool:
    """Whether 3-D values go to pool_outer_first (NXC: channels at unit stride; 2-D too) or
    pool_outer_first_ncx (NCX: w at unit stride, d stride 2 or more): the spec's types, no empty
    window, more than _OUTER_FIRST_MIN_TAPS taps a window, S (NXC: a band of one output row's input
    rows, NCX: a slice) and a row of T within _OUTER_FIRST_MAX_SCRATCH.

    NCX, side by side on two threads against the loops before: k3s2p1 on 2x32x32x64x64 2.22 against
    2.36 ms (pool_folds), on 2x64x16x16x16 0.33 against 0.71 (pool_plane_lanes); with d stride 1 the
    d pass reads each slice three times: k3s1p1 on 2x32x32x64x64 9.6 against 6.4 (pool_folds). On NXC
    data it was faster at d stride 1 too (the same k3s1p1 9.4 against 16.1, with 8 channels 2.1
    against 7.1). Since NXC units are bands of output rows, wider slices than 1 MB pay too (k3s2p1 on
    2x64x32x64x64 2.55 against 3.75 ms for pool_channel_blocks, 2x32x32x128x128 7.8 against 8.3)."""
    if (index_dtype is not None or not isinstance(geom, PoolGeometry)
            or len(geom.in_size) not in ((2, 3) if adjacent else (3,))
            or not compiled_for(pool_outer_first if adjacent else pool_outer_first_ncx, storage)):
        return False
    in_w = geom.in_size[-1]
    s_rows = geom.extent[-2] if adjacent else geom.in_size[-2]
    lanes = geom.channels if adjacent else 1
    return ((adjacent or geom.strides[0] >= 2) and strides[1 if adjacent else 4] == 1
            and _no_empty_window(bounds) and _window_taps(bounds) > _OUTER_FIRST_MIN_TAPS
            and (s_rows + 1) * in_w * lanes <= _OUTER_FIRST_MAX_SCRATCH)


def _outer_first_band(geom: PoolGeometry) -> int:
    """Output rows per unit of pool_outer_first: the input rows they read (S) within about
    _OUTER_FIRST_BAND (3-D: _OUTER_FIRST_BAND_3D) elements per slice, at least one row."""
    row = geom.in_size[-1] * geom.channels
    budget = _OUTER_FIRST_BAND_3D if len(geom.in_size) == 3 else _OUTER_FIRST_BAND
    budget_rows = budget // max(row, 1)
    return max(1, min(geom.out_size[-2], (budget_rows - geom.extent[-2]) // geom.strides[-2] + 1))


def _never_wins(dtype: np.dtype[Any]) -> Any:
    """-inf, or the integer minimum: under every NaN rule no tap is taken over it."""
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _flat_view(x5: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """A 1-D contiguous view of the memory ``x5`` spans, the offset of ``x5[0, 0, 0, 0, 0]`` in it,
    and element strides: the kernels read any layout (transposed, reversed, broadcast) in place."""
    itemsize = x5.itemsize
    if x5.size == 0:  # every window is empty: the kernels read nothing
        return np.zeros(1, x5.dtype), 0, np.zeros(5, np.int64)
    if any(st % itemsize for st in x5.strides):  # e.g. a field of a structured array
        x5 = np.ascontiguousarray(x5)  # the one case that is copied; NumPy cannot even view it flat
    strides = np.array([st // itemsize for st in x5.strides], np.int64)
    if x5.flags.c_contiguous:  # (the common case: as_strided below took 10 us of a small call)
        return x5.reshape(-1), 0, strides
    # A transposed contiguous array (NXC data seen as NCX): its axes in memory order are contiguous,
    # and with no stride negative element [0, 0, 0, 0, 0] comes first (as_strided: 4 us of 25).
    dense = x5.transpose(sorted(range(5), key=lambda axis: -x5.strides[axis]))
    if dense.flags.c_contiguous:
        return dense.reshape(-1), 0, strides
    # The lowest and highest elements the view can address.
    low = sum(int(st) * (dim - 1) for st, dim in zip(strides, x5.shape) if st < 0)
    high = sum(int(st) * (dim - 1) for st, dim in zip(strides, x5.shape) if st > 0)
    corner = x5[tuple(slice(dim - 1, dim) if st < 0 else slice(0, 1)
                      for st, dim in zip(strides, x5.shape))]
    flat = np.lib.stride_tricks.as_strided(corner, shape=(high - low + 1,), strides=(itemsize,))
    return flat, -low, strides


def _ncx5(a5: np.ndarray, order: tuple[int, ...], geom: _Planes) -> np.ndarray:
    """The logical (N, C, *X) view of a 5-D kernel-order output: unit axes dropped, never copied."""
    ncx = a5.transpose(tuple(order.index(axis) for axis in range(5)))
    return ncx[(slice(None), slice(None)) + (0,) * (3 - len(geom.out_size))]
