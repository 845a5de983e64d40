"""The compiled kernels against the NumPy reference, bit for bit, on a generated grid.

Every preset, dtype, layout, stride pattern (transposed, reversed, sliced, broadcast), rounding,
auto_pad, dilation, index scope and index type; inputs with NaN, -inf, ties and signed zeros; empty
windows from pads >= kernel. A fixed seed plus a varying one (printed; NDPOOL_TEST_SEED reproduces).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cases import run_seeds

import ndpool
from ndpool import _dispatch

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint8, np.int32, np.int64]
PRESETS = ["spec", "openvino", "onednn", "torch", "onnx"]
VARYING_SEED = run_seeds()[1]  # (conftest fixed it in NDPOOL_TEST_SEED for every worker)
SEEDS = [20261130, VARYING_SEED]
CASES_PER_SEED = 600


def _run(backend: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    old = os.environ.get("NDPOOL_BACKEND")
    os.environ["NDPOOL_BACKEND"] = backend
    try:
        return fn(*args, **kwargs)
    finally:
        if old is None:
            del os.environ["NDPOOL_BACKEND"]
        else:
            os.environ["NDPOOL_BACKEND"] = old


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Small integer values (many ties) with NaN, +-inf and signed zeros sprinkled in."""
    x = rng.integers(-3, 4, size=shape).astype(np.float64)
    if np.dtype(dtype).kind == "f" or dtype == ml_dtypes.bfloat16:
        special = rng.random(shape)
        x[special < 0.05] = np.nan
        x[(special >= 0.05) & (special < 0.1)] = -np.inf
        x[(special >= 0.1) & (special < 0.2)] = -0.0
        x[(special >= 0.2) & (special < 0.22)] = np.inf
    elif np.dtype(dtype) == np.uint8:
        x = np.abs(x)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x[rng.random(shape) < 0.05] = info.min  # collides with the empty-window value
    return x.astype(dtype)


def _sparse_nan_data(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Ties and -inf as in _data, but NaN only at two places: the first element (the first tap of the
    first windows) and one at random. Most rows, bands and planes then hold no NaN, and the loops
    skip their NaN work there (onnx's first-tap check, the NaN rules' passes); the others must not."""
    x = rng.integers(-3, 4, size=shape).astype(np.float64)
    x[rng.random(shape) < 0.05] = -np.inf
    flat = x.reshape(-1)
    if flat.size:
        flat[0] = np.nan
        flat[rng.integers(0, flat.size)] = np.nan
    return x.astype(dtype)


def _signalling(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """f16 data with its NaNs made signalling ones (quiet bit clear), of either sign and a few payloads,
    and a quiet one now and then."""
    bits = x.view(np.uint16).copy()
    nan = np.isnan(x)
    bits[nan] = rng.choice(np.array([0x7C01, 0x7D55, 0xFC01, 0xFDFF, 0x7E00], np.uint16), int(nan.sum()))
    return bits.view(np.float16)


def _layout(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """The same logical array in another memory layout."""
    kind = rng.integers(0, 5)
    if kind == 1:  # stored transposed
        return np.asfortranarray(x)
    if kind == 2:  # reversed spatial axis
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    if kind == 3:  # a strided slice of a larger array
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if kind == 4 and x.shape[0] > 1:  # broadcast over N: zero stride
        return np.broadcast_to(x[:1], x.shape)
    return x


def _dilated_extent(kernel: tuple[int, ...], dil: tuple[int, ...]) -> list[int]:
    """A dilated window's extent per axis, computed here apart from the geometry under test."""
    return [(k - 1) * d + 1 for k, d in zip(kernel, dil)]


def _pads_end_that_fit(kernel: tuple[int, ...], dil: tuple[int, ...], size: tuple[int, ...],
                       pads_b: tuple[int, ...], pads_e: tuple[int, ...]) -> tuple[int, ...]:
    """pads_end grown where the dilated window would not fit the padded input (P < dk is an error,
    tested elsewhere)."""
    dk = _dilated_extent(kernel, dil)
    return tuple(max(pe, e - i - pb) for pe, e, i, pb in zip(pads_e, dk, size, pads_b))


def _outputs(result: Any) -> tuple[Any, ...]:
    """An op's result as a tuple: (values,) or (values, indices)."""
    return result if isinstance(result, tuple) else (result,)


def _max_pool_case(rng: np.random.Generator, large: bool = False) -> tuple[np.ndarray, dict]:
    """A random case; ``large`` windows (5 to 16 taps per axis) reach the separable path."""
    nsp = int(rng.integers(1, 4))
    kernel = tuple(int(k) for k in rng.integers(5, 17, nsp) if large) or tuple(
        int(k) for k in rng.integers(1, 4, nsp))
    dil = tuple(int(d) for d in rng.integers(1, 3, nsp)) if rng.random() < 0.4 else (1,) * nsp
    strides = tuple(int(s) for s in rng.integers(1, 4, nsp))
    pads_b = tuple(int(p) for p in rng.integers(0, 4, nsp))
    pads_e = tuple(int(p) for p in rng.integers(0, 4, nsp))
    size = tuple(int(i) for i in rng.integers(1, (9 if nsp < 3 else 6) * (3 if large else 1), nsp))
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 6))
    pads_e = _pads_end_that_fit(kernel, dil, size, pads_b, pads_e)
    dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
    layout = "NXC" if rng.random() < 0.5 else "NCX"
    x = _data(rng, (n, c, *size), dtype)
    if layout == "NXC":
        x = np.moveaxis(x, 1, -1)
    attrs = dict(kernel=kernel, strides=strides, pads_begin=pads_b, pads_end=pads_e, dilations=dil,
                 rounding_type=str(rng.choice(["floor", "ceil", "ceil_torch"])),
                 auto_pad=str(rng.choice(["none", "none", "same_upper", "same_lower", "valid"])),
                 data_format=layout, semantics=str(rng.choice(PRESETS)),
                 return_indices=bool(rng.random() < 0.7),
                 index_element_type=str(rng.choice(["i32", "i64"])))
    if rng.random() < 0.3:
        attrs["index_axis"] = int(rng.integers(-x.ndim, x.ndim))
    return _layout(rng, x), attrs


def _dtypes_of(kernel: object, dtypes: list | None = None) -> list:  # type: ignore[type-arg]
    """Those of ``dtypes`` (default: all) that the launcher runs ``kernel`` for (``compiled_for``)."""
    from ndpool._kernels import _launch

    return [d for d in (DTYPES if dtypes is None else dtypes)
            if _launch.compiled_for(kernel, _launch._STORAGE.get(np.dtype(d), np.dtype(d)))]


def _chosen_kernels(monkeypatch: pytest.MonkeyPatch, signatures: list[tuple[object, np.dtype, np.dtype]] | None = None
                    ) -> list[object]:
    """A list that receives every kernel the launcher compiles or loads from now on (and ``signatures``,
    if given, each one's element and index storage types)."""
    from ndpool._kernels import _launch

    chosen: list[object] = []
    real = _launch._compiled

    def spy(kernel, dtype, index_dtype=np.dtype(np.int64)):  # type: ignore[no-untyped-def]
        chosen.append(kernel)
        if signatures is not None:
            signatures.append((kernel, np.dtype(dtype), np.dtype(index_dtype)))
        return real(kernel, dtype, index_dtype)

    monkeypatch.setattr(_launch, "_compiled", spy)
    return chosen


def _poison_new_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fill every output and scratch array the launcher makes with 0x7B bytes (f32 1.3e36, f16 61280, a
    large integer: a value that wins), so that a loop reading memory it never wrote fails every time, not
    only when what was there before happens to win."""
    from ndpool._kernels import _launch

    real = _launch._empty

    def poisoned(shape, dtype):  # type: ignore[no-untyped-def]
        a = real(shape, dtype)
        a.view(np.uint8).reshape(-1).fill(0x7B)
        return a

    monkeypatch.setattr(_launch, "_empty", poisoned)


def _values_match(x: np.ndarray, attrs: dict, what: str) -> np.ndarray | None:
    """max_pool(x, **attrs) without indices by the compiled kernels, checked bit for bit against the
    reference (``what`` names the case on failure); None where both reject the case."""
    try:
        expected = _run("numpy", ndpool.max_pool, x, **attrs)
    except ndpool.PoolingError:
        return None
    got = _run("numba", ndpool.max_pool, x, **attrs)
    assert np.array_equal(_bits(expected), _bits(got)), f"{what}: {x.dtype} {x.shape} strides {x.strides} {attrs}"
    return got


def test_numba_backend_is_the_default() -> None:
    assert _dispatch.backend_name() == "numba"


@pytest.mark.parametrize("large", [False, True], ids=["small-windows", "large-windows"])
@pytest.mark.parametrize("seed", SEEDS)
def test_max_pool_kernels_match_reference(seed: int, large: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    _poison_new_memory(monkeypatch)
    rng = np.random.default_rng(seed + large)
    checked = 0
    for case in range(CASES_PER_SEED // (4 if large else 1)):
        x, attrs = _max_pool_case(rng, large)
        try:
            expected = _run("numpy", ndpool.max_pool, x, **attrs)
        except ndpool.PoolingError:
            continue  # e.g. auto_pad="valid" with P < dk: rejected the same way by both paths
        got = _run("numba", ndpool.max_pool, x, **attrs)
        for e, g in zip(_outputs(expected), _outputs(got), strict=True):
            assert e.dtype == g.dtype and e.shape == g.shape
            assert np.array_equal(_bits(e), _bits(g)), (
                f"seed {seed} case {case}: {x.dtype} {x.shape} strides {x.strides} {attrs}")
        checked += 1
    assert checked > CASES_PER_SEED // (8 if large else 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_adaptive_kernels_match_reference(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _poison_new_memory(monkeypatch)
    rng = np.random.default_rng(seed + 1)
    for case in range(CASES_PER_SEED // 3):
        nsp = int(rng.integers(1, 4))
        size = tuple(int(i) for i in rng.integers(1, 10 if nsp < 3 else 6, nsp))
        out = tuple(int(rng.integers(0, 2 * i + 2)) for i in size)
        dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
        layout = "NXC" if rng.random() < 0.5 else "NCX"
        x = _data(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 5)), *size), dtype)
        if layout == "NXC":
            x = np.moveaxis(x, 1, -1)
        x = _layout(rng, x)
        attrs = dict(data_format=layout, semantics=str(rng.choice(["spec", "openvino", "torch"])),
                     index_element_type=str(rng.choice(["i32", "i64"])))
        expected = _run("numpy", ndpool.adaptive_max_pool, x, out, **attrs)
        got = _run("numba", ndpool.adaptive_max_pool, x, out, **attrs)
        for e, g in zip(expected, got, strict=True):
            assert e.dtype == g.dtype and e.shape == g.shape
            assert np.array_equal(_bits(e), _bits(g)), (
                f"seed {seed} case {case}: {x.dtype} {x.shape} strides {x.strides} {out} {attrs}")


@pytest.mark.parametrize("preset", ["spec", "openvino", "torch"])
def test_adaptive_even_bins_run_as_max_pool(preset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bins that tile the input evenly take the MaxPool loops (checked) and give the bin loop's
    result bit for bit (against the reference), on every dtype, both layouts, both index types."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(11)
    for shape, out in [((2, 3, 8, 6), (4, 3)), ((1, 40, 6, 4), (3, 2)), ((1, 2, 4, 6, 9), (2, 3, 3))]:
        for dtype in DTYPES:
            x = _data(rng, shape, dtype)
            for layout in ("NCX", "NXC"):
                arr = np.ascontiguousarray(np.moveaxis(x, 1, -1)) if layout == "NXC" else x
                for index_type in ("i32", "i64"):
                    attrs = dict(data_format=layout, semantics=preset, index_element_type=index_type)
                    expected = _run("numpy", ndpool.adaptive_max_pool, arr, out, **attrs)
                    got = _run("numba", ndpool.adaptive_max_pool, arr, out, **attrs)
                    for e, g in zip(expected, got, strict=True):
                        assert np.array_equal(_bits(e), _bits(g)), (shape, out, dtype, layout, index_type)
    # (pool_width_inner: f64 and the integer types' NCX loop, see _launch.GENERAL_KERNELS)
    assert chosen and all(k in (_launch.pool_planes, _launch.pool_channels_inner, _launch.pool_channel_runs,
                                _launch.pool_channel_blocks, _launch.pool_plane_lanes, _launch.pool_width_inner)
                          for k in chosen), chosen


@pytest.mark.parametrize("preset", ["spec", "openvino", "torch"])
def test_plane_lanes_on_views_and_adaptive_bins(preset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_plane_lanes (checked) on planes not evenly spaced (a channel slice, N broadcast, reversed
    channels) and on uneven AdaptiveMaxPool bins, every index scope, bit for bit against the reference.
    (The random grid has too few planes to reach it.)"""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(12)
    for dtype in _dtypes_of(_launch.pool_plane_lanes):  # (the others: test_other_types_run_only_their_kernels)
        base = _data(rng, (3, 50, 6, 9), dtype)
        views = {"channel slice": base[:, ::2], "broadcast N": np.broadcast_to(base[:1, :30], (3, 30, 6, 9)),
                 "reversed channels": base[:, ::-1], "contiguous": base}
        for name, x in views.items():
            calls = [(ndpool.adaptive_max_pool, (x, (4, 5)), {}),
                     (ndpool.adaptive_max_pool, (x[..., 0], (4,)), {}),  # 1-D
                     (ndpool.adaptive_max_pool, (x[:, :20].reshape(3, 20, 3, 2, 9), (2, 2, 4)), {})] + [
                (ndpool.max_pool, (x,), dict(kernel=(2, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(0, 1),
                                             return_indices=True, index_axis=index_axis))
                for index_axis in (0, 1, 2)] + [
                (ndpool.max_pool, (x[..., 0],), dict(kernel=3, strides=2, pads_begin=1, pads_end=1,
                                                     return_indices=True)),  # 1-D
                (ndpool.max_pool, (x[:, :20].reshape(3, 20, 3, 2, 9),),  # 3-D
                 dict(kernel=(2, 2, 3), strides=(1, 1, 2), pads_begin=(0, 1, 1), pads_end=(1, 0, 1),
                      return_indices=True))]
            for fn, args, attrs in calls:
                chosen.clear()
                attrs = dict(attrs, data_format="NCX", semantics=preset, index_element_type="i64")
                expected = _run("numpy", fn, *args, **attrs)
                got = _run("numba", fn, *args, **attrs)
                assert chosen == [_launch.pool_plane_lanes], (name, fn, chosen)
                for e, g in zip(expected, got, strict=True):
                    assert np.array_equal(_bits(e), _bits(g)), (dtype, name, attrs, fn)


@pytest.mark.parametrize("seed", SEEDS)
def test_adaptive_blocks_on_many_channels_and_wide_rows(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """AdaptiveMaxPool by blocks of 32 lanes: NXC data with 32 to 70 channels (pool_channel_blocks, its
    last block overlapping) and NCX rows 32 to 80 wide (adaptive_width_inner's column blocks), also
    on views: strided channels and reversed rows take the other loops. Bit for bit, every dtype."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(seed + 3)
    for case in range(40):
        nsp = int(rng.integers(1, 4))
        layout = "NXC" if case % 2 else "NCX"
        size = [int(i) for i in rng.integers(1, 7, nsp)]
        if layout == "NCX":
            size[-1] = int(rng.integers(32, 81))
        channels = int(rng.integers(32, 71)) if layout == "NXC" else int(rng.integers(1, 4))
        # (every type in either layout; on NXC data mostly the spec's, the types pool_channel_blocks runs)
        dtype = DTYPES[case // 4 % 3] if case % 4 != 3 else DTYPES[case // 2 % len(DTYPES)]
        x = _data(rng, (int(rng.integers(1, 3)), channels, *size), dtype)
        if layout == "NXC":
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        if case % 5 == 4:  # strided channels (NXC), reversed rows (NCX)
            x = x[..., ::-1] if layout == "NCX" else x[..., ::2]
        out = tuple(int(rng.integers(1, 2 * i + 2)) for i in size)
        attrs = dict(data_format=layout, semantics=str(rng.choice(["spec", "openvino", "torch"])),
                     index_element_type=str(rng.choice(["i32", "i64"])))
        expected = _run("numpy", ndpool.adaptive_max_pool, x, out, **attrs)
        got = _run("numba", ndpool.adaptive_max_pool, x, out, **attrs)
        for e, g in zip(expected, got, strict=True):
            assert np.array_equal(_bits(e), _bits(g)), (
                f"seed {seed} case {case}: {x.dtype} {x.shape} strides {x.strides} {out} {attrs}")
    # (and one case each that surely takes the two loops: the random ones above reach them on most seeds)
    for x, out in ((np.ascontiguousarray(np.moveaxis(_data(rng, (1, 40, 6, 7), np.float32), 1, -1)), (2, 3)),
                   (_data(rng, (1, 2, 5, 70), np.float16), (2, 9))):
        layout = "NXC" if x.shape[-1] == 40 else "NCX"
        for e, g in zip(_run("numpy", ndpool.adaptive_max_pool, x, out, data_format=layout),
                        _run("numba", ndpool.adaptive_max_pool, x, out, data_format=layout), strict=True):
            assert np.array_equal(_bits(e), _bits(g)), (x.shape, out)
    assert _launch.pool_channel_blocks in chosen and _launch.adaptive_width_inner in chosen, chosen


@pytest.mark.parametrize("seed", SEEDS)
def test_adaptive_column_maxima_without_nan(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """adaptive_width_inner orders NaN-free column maxima by value, then by index: columns whose
    maxima tie (small integers, +0 and -0) come from different rows, so the earlier flat index must
    win, not the earlier column. Planes as _bin_rows_pay sends there (rows of 64 and more, 4 KB
    planes); a NaN in some rows only, which the other rows of the plane must not see."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(seed + 11)
    for case in range(24):
        shape = (1, 2, int(rng.integers(3, 20)), int(rng.integers(64, 140))) if case % 3 else (1, 3, 32, 32)
        dtype = DTYPES[case % 3]
        x = rng.integers(-2, 3, size=shape).astype(np.float64)
        x[rng.random(shape) < 0.2] = -0.0
        if case % 4 == 1:
            x[0, 0, int(rng.integers(shape[2])), int(rng.integers(shape[3]))] = np.nan
        x = x.astype(dtype)
        out = (int(rng.integers(1, shape[2] + 1)), int(rng.integers(1, 40)))
        attrs = dict(data_format="NCX", semantics=str(rng.choice(["spec", "openvino", "torch"])),
                     index_element_type=str(rng.choice(["i32", "i64"])))
        expected = _run("numpy", ndpool.adaptive_max_pool, x, out, **attrs)
        got = _run("numba", ndpool.adaptive_max_pool, x, out, **attrs)
        for e, g in zip(expected, got, strict=True):
            assert np.array_equal(_bits(e), _bits(g)), f"seed {seed} case {case}: {x.dtype} {shape} {out} {attrs}"
    assert _launch.adaptive_width_inner in chosen and _launch.pool_plane_lanes not in chosen, chosen


def test_separable_nxc_one_channel_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """NXC planes too large to gather in blocks are pooled a channel at a time, written channels-last."""
    from ndpool._kernels import _launch

    monkeypatch.setattr(_launch, "_gather_block", lambda geom: 1)
    rng = np.random.default_rng(5)
    shape, attrs = LOOP_CASES["pool_separable (channel blocks)"]
    for dtype in (np.float32, np.float16):
        x = np.ascontiguousarray(np.moveaxis(_data(rng, shape, dtype), 1, -1))
        for preset in PRESETS:
            call = dict(attrs, data_format="NXC", semantics=preset, return_indices=True)
            for e, g in zip(_run("numpy", ndpool.max_pool, x, **call), _run("numba", ndpool.max_pool, x, **call),
                            strict=True):
                assert np.array_equal(_bits(e), _bits(g)), (dtype, preset)


def test_seed_is_reported() -> None:
    print(f"test_kernels varying seed: NDPOOL_TEST_SEED={VARYING_SEED}")
    assert SEEDS[1] == VARYING_SEED


def test_without_numba_the_reference_runs_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    x = np.arange(24, dtype=np.float32).reshape(1, 2, 12)
    expected = _run("numba", ndpool.max_pool, x, kernel=3, strides=2, data_format="NCX")
    monkeypatch.setitem(sys.modules, "numba", None)  # "import numba" now fails
    for name in [m for m in sys.modules if m.startswith("ndpool._kernels")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(_dispatch, "_broken", [])
    _dispatch._numba_kernels.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="numba kernels unavailable"):
            first = ndpool.max_pool(x, kernel=3, strides=2, data_format="NCX")
        assert _dispatch.backend_name() == "numpy"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once, not at every call
            second = ndpool.max_pool(x, kernel=3, strides=2, data_format="NCX")
    finally:
        _dispatch._numba_kernels.cache_clear()
    assert np.array_equal(first, expected) and np.array_equal(second, expected)


def test_backend_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NDPOOL_BACKEND", "numpy")
    assert _dispatch.backend_name() == "numpy"
    monkeypatch.setenv("NDPOOL_BACKEND", "NUMBA")
    assert _dispatch.backend_name() == "numba"
    monkeypatch.setenv("NDPOOL_BACKEND", "cuda")
    with pytest.raises(ValueError, match="NDPOOL_BACKEND must be one of numba, numpy"):
        _dispatch.backend_name()


def test_threads_follow_numba_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work is split over numba.get_num_threads() threads (NUMBA_NUM_THREADS, set_num_threads)."""
    import numba

    from ndpool._kernels import _launch

    seen: list[int] = []
    real_split = _launch.split
    monkeypatch.setattr(_launch, "split", lambda job, count, threads: seen.append(threads) or real_split(job, count,
                                                                                                       threads))
    x = np.random.default_rng(0).standard_normal((2, 8, 128, 128)).astype(np.float32)
    old = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            ndpool.max_pool(x, kernel=3, strides=1, data_format="NCX")
    finally:
        numba.set_num_threads(old)
    assert seen == [1, min(2, numba.config.NUMBA_NUM_THREADS)]


def test_short_tile_rows_write_only_their_jobs_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_tiles folds short rows with indices 16 outputs at a time and lets the lanes past a row land on
    the next rows (written again later): never past its job's last row. Jobs run here last first, one
    after the other, so a job that wrote into the next job's outputs would leave its values there."""
    import numba

    from ndpool._kernels import _launch, _threads

    jobs: list[int] = []

    def last_first(job: Any, count: int, threads: int) -> None:
        """The launcher's split, its jobs run one after the other, the last first."""
        jobs.append(threads)
        for lo, hi in reversed(_threads.split_parts(count, threads)):
            job(lo, hi)

    monkeypatch.setattr(_launch, "split", last_first)
    monkeypatch.setattr(_launch, "_MIN_PARALLEL_OUTPUTS", 0)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)
    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(11)
    # out_w 7, 5, 15, 6 (rows in pairs, the last alone), 8 and 5 (even rows: pairs only)
    for shape in [(3, 5, 14, 14), (1, 7, 10, 10), (2, 3, 8, 30), (1, 4, 15, 12), (2, 3, 12, 16), (1, 5, 8, 10)]:
        for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
            x = _data(rng, shape, dtype)
            x[np.isnan(x.astype(np.float32))] = 2.5  # (a plane with a NaN is pooled again by another loop)
            x[0, -1, 0, 0] = np.nan  # ... all but this one
            for preset in ("spec", "openvino"):
                for index_type in ("i64", "i32", None):  # (None: values only, fused too on rows of up to 8)
                    call = dict(kernel=2, strides=2, data_format="NCX", semantics=preset,
                                return_indices=index_type is not None, index_element_type=index_type or "i64")
                    expected = _run("numpy", ndpool.max_pool, x, **call)
                    got = _run("numba", ndpool.max_pool, x, **call)
                    for e, g in zip(_outputs(expected), _outputs(got), strict=True):
                        assert np.array_equal(_bits(e), _bits(g)), (shape, dtype, preset, index_type)
    assert chosen and set(chosen) == {_launch.pool_tiles} and set(jobs) == {3}, (chosen, jobs)


def test_fused_tile_runs_on_views_read_only_the_array(monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_tiles' fused runs (with indices; values only on rows of up to 8 outputs): on a row shorter than
    the run, the lanes past it read on into the input after the row. On views read in place whose planes
    do not follow each other upwards in memory (channels reversed, images broadcast), the plane at the
    array's end is not the job's last: its runs would read past the array, and it must take the two
    passes; every result as the reference's, on rows shorter and longer than a run (out_w 7, 5, 17, 40, 8
    on an even number of rows) and both tails."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    rng = np.random.default_rng(12)
    for shape in [(2, 5, 14, 14), (1, 6, 10, 10), (1, 3, 6, 34), (2, 2, 4, 80), (2, 3, 12, 16)]:
        for dtype in (np.float32, ml_dtypes.bfloat16):
            base = _data(rng, shape, dtype)
            base[np.isnan(base.astype(np.float32))] = -1.5
            views = {
                "channels reversed": base[:, ::-1],
                "both reversed": base[::-1, ::-1],
                "images broadcast": np.broadcast_to(base[:1], shape),
                "last planes of a buffer": base.reshape(-1)[shape[2] * shape[3]:].reshape(
                    1, shape[0] * shape[1] - 1, shape[2], shape[3]),
            }
            for name, x in views.items():
                for preset, indices in (("spec", True), ("torch", True), ("spec", False)):
                    call = dict(kernel=2, strides=2, data_format="NCX", semantics=preset, return_indices=indices)
                    expected = _run("numpy", ndpool.max_pool, x, **call)
                    got = _run("numba", ndpool.max_pool, x, **call)
                    for e, g in zip(_outputs(expected), _outputs(got), strict=True):
                        assert np.array_equal(_bits(e), _bits(g)), (shape, dtype, name, preset, indices)
    assert chosen and set(chosen) == {_launch.pool_tiles}, chosen


def test_fused_tile_runs_stay_inside_the_array(tmp_path: Path) -> None:
    """The views above, with numba's bounds checks compiled in (a new process, its own cache): a fused
    run that read past the array would raise IndexError there. Without the kernel's read test it did."""
    import subprocess
    import sys

    script = """
import numpy as np, ndpool
rng = np.random.default_rng(1)
for shape in [(2, 5, 14, 14), (1, 6, 10, 10), (1, 3, 6, 34), (2, 3, 12, 16), (1, 4, 8, 10)]:
    base = rng.standard_normal(shape).astype(np.float32)
    for x in (base[:, ::-1], base[::-1, ::-1], np.broadcast_to(base[:1], shape), base):
        ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX", return_indices=True)
        ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX")
print("done")
"""
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path), NDPOOL_BACKEND="numba")
    run = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr[-2000:]


def test_a_new_process_compiles_nothing_when_the_kernels_are_cached() -> None:
    """With every kernel in the disk cache (the session's precompile), a new process's first calls load them
    and compile nothing, not even a jitted layout helper the launcher runs in Python: one did, 0.9 s with
    numba's compiler starting up, and a first call took 1.5-1.9 s. The calls reach every layout helper."""
    import subprocess
    import sys

    script = """
import time
import numpy as np
import numba.core.compiler as compiler
import ndpool
compiled = []
real = compiler.compile_extra
compiler.compile_extra = lambda *a, **k: compiled.append(getattr(a[2], "__name__", "?")) or real(*a, **k)
rng = np.random.default_rng(0)
x2 = rng.standard_normal((1, 32, 30, 30), dtype=np.float32)
x3 = rng.standard_normal((1, 8, 9, 10, 11), dtype=np.float32)
t = time.perf_counter()
ndpool.max_pool(x2, kernel=3, strides=2, pads_begin=1, pads_end=1, data_format="NCX")  # folds, sliding's test
ndpool.max_pool(x2, kernel=2, strides=2, data_format="NCX")  # planes
first = time.perf_counter() - t
for layout in ("NCX", "NXC"):
    ndpool.max_pool(x2, kernel=13, strides=1, pads_begin=6, pads_end=6, data_format=layout)  # sliding
    ndpool.max_pool(x2, kernel=9, strides=1, pads_begin=4, pads_end=4, data_format=layout, return_indices=True)
ndpool.max_pool(x3, kernel=7, strides=1, pads_begin=3, pads_end=3, return_indices=True)  # 3-D separable
ndpool.adaptive_max_pool(x2, (7, 6))  # planes as lanes
ndpool.adaptive_max_pool(x2, (7, 6), index_element_type="i32")  # int32 indices written by the loops
ndpool.max_pool(x2, kernel=3, strides=2, pads_begin=1, pads_end=1, return_indices=True, index_element_type="i32")
print(compiled, f"{first:.2f}")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    compiled, first = done.stdout.rsplit(maxsplit=1)
    assert compiled == "[]", done.stdout
    print(f"first call of a new process: {first} s")


def test_plans_are_kept_per_everything_they_depend_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call's plan (its loop, units and constant arguments) is made once and reused by the same call
    on other data; the data's strides or type, the preset, the index type and the thread count each
    make another. Plans hold no reference to the data, and only the latest few are kept."""
    import gc
    import weakref

    import numba

    from ndpool._kernels import _launch

    built: list[object] = []
    real = _launch._plan_run
    monkeypatch.setattr(_launch, "_plan_run", lambda *a, **k: built.append(a[0].shape) or real(*a, **k))
    rng = np.random.default_rng(0)
    x = _data(rng, (2, 40, 9, 8), np.float32)
    call = dict(kernel=3, strides=2, pads_begin=1, pads_end=1, data_format="NCX")
    ndpool.max_pool(x, **call)
    y = _data(rng, x.shape, np.float32)
    assert np.array_equal(_bits(ndpool.max_pool(y, **call)), _bits(_run("numpy", ndpool.max_pool, y, **call)))
    assert len(built) == 1  # the kept plan, on other data
    variants = [(x[:, ::-1], call), (x.astype(np.float64), call), (x, dict(call, semantics="onnx")),
                (x, dict(call, return_indices=True)), (x, dict(call, return_indices=True, index_element_type="i32")),
                (_run("numpy", ndpool.adaptive_max_pool, x, (3, 4))[0], dict(call, kernel=2, pads_end=0))]
    for data, attrs in variants:
        before = len(built)
        got = ndpool.max_pool(data, **attrs)
        expected = _run("numpy", ndpool.max_pool, data, **attrs)
        for e, g in zip(_outputs(expected), _outputs(got), strict=True):
            assert np.array_equal(_bits(e), _bits(g)) and e.dtype == g.dtype, attrs
        assert len(built) == before + 1, attrs
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        ndpool.max_pool(x, **call)
    finally:
        numba.set_num_threads(old)
    assert len(built) == len(variants) + 2
    z = _data(rng, (1, 3, 50, 50), np.float32)
    gone = weakref.ref(z)
    ndpool.max_pool(z, **call)
    del z
    gc.collect()
    assert gone() is None
    for n in range(_launch._PLANS_KEPT + 8):
        ndpool.max_pool(x[:1, :1, : 3 + n % 6, : 3 + n // 6], **call)
    assert 0 < len(_launch._plans) <= _launch._PLANS_KEPT


# One case per loop shape, with the loop that must be chosen for it: the random grids above reach
# some loops only by chance (long rows, large windows), so each is pinned here on every preset and dtype.
LOOP_CASES = {
    "pool_separable": ((2, 3, 40, 37), dict(kernel=(15, 13), strides=(1, 1), pads_begin=(7, 9),
                                            pads_end=(7, 0), dilations=(1, 2))),
    # 3-D: running maxima along d (5 taps) and h (6), clipped by pads at both ends; w by tables.
    "pool_separable (3-D)": ((1, 2, 9, 12, 21), dict(kernel=(5, 6, 9), strides=(1, 2, 1), pads_begin=(2, 3, 4),
                                                     pads_end=(4, 1, 2), dilations=(1, 1, 2), rounding_type="ceil")),
    # 3-D NXC, 10 channels: gathered in blocks of 8, the last one partial.
    "pool_separable (channel blocks)": ((1, 10, 3, 20, 22), dict(kernel=(3, 15, 14), strides=(1, 1, 1),
                                                                 pads_begin=(1, 7, 3), pads_end=(1, 5, 6))),
    # 1-D and 2-D NXC: bands of output rows, channels as lanes. Bands of 4 rows here (patched below),
    # the last one partial; stride 1 takes a run of outputs per query, stride 2 a window at a time;
    # an empty window (pad past the kernel) and dilation.
    "pool_separable_nxc": ((2, 5, 30, 41), dict(kernel=(7, 9), strides=(1, 1), pads_begin=(3, 9),
                                                pads_end=(6, 2), dilations=(1, 1))),
    "pool_separable_nxc (strides)": ((1, 3, 27, 36), dict(kernel=(9, 11), strides=(1, 2), pads_begin=(2, 5),
                                                          pads_end=(3, 10), dilations=(2, 1), rounding_type="ceil")),
    "pool_separable_nxc (1-D)": ((2, 7, 50), dict(kernel=(15,), strides=(1,), pads_begin=(7,), pads_end=(7,))),
    # Large windows without indices (1-D and 2-D): rows through doubling levels. Units of 3 output rows
    # by 5 columns here (patched below): bands and strips with partial last ones, rows entering the
    # ring before the band's first window; dilation on both axes, stride 1 (one run per row).
    "pool_sliding": ((2, 3, 23, 29), dict(kernel=(6, 9), strides=(1, 1), pads_begin=(4, 2), pads_end=(2, 6),
                                          dilations=(2, 3))),
    # Strides (a window at a time along w on NXC data), ceil rounding, empty windows (pads past the
    # kernel: no tap on either axis) and a 1-D case.
    "pool_sliding (strides)": ((1, 4, 17, 40), dict(kernel=(5, 7), strides=(2, 3), pads_begin=(6, 1),
                                                    pads_end=(1, 9), rounding_type="ceil")),
    "pool_sliding (1-D)": ((2, 3, 61), dict(kernel=(16,), strides=(1,), pads_begin=(3,), pads_end=(12,))),
    # No input row at all: every window is empty, and the ring has no rows.
    "pool_sliding (no rows)": ((1, 3, 0, 16), dict(kernel=(3, 3), strides=(1, 1), pads_begin=(2, 2), pads_end=(2, 2))),
    "pool_width_inner": ((1, 2, 3, 700), dict(kernel=(2, 5), strides=(1, 1), pads_begin=(1, 4),
                                              pads_end=(1, 2), dilations=(1, 2))),
    # Stride 1 along a unit-stride w: the outputs with all their w taps in blocks of 32 folded in
    # registers, without indices (here 3-D, 521 of them: the last block overlaps), tap passes over the
    # borders; the input rows a window spans along d and h (dilated, an empty d window from a pad past
    # the kernel).
    "pool_width_inner (blocks)": ((1, 2, 4, 3, 530), dict(kernel=(2, 2, 6), strides=(2, 1, 1), pads_begin=(2, 0, 3),
                                                         pads_end=(1, 1, 5), dilations=(2, 1, 2),
                                                         rounding_type="ceil")),
    # A run of 30 outputs, shorter than a block: tap passes over the whole row.
    "pool_width_inner (short run)": ((2, 3, 520), dict(kernel=(3,), strides=(1,), pads_begin=(241,), pads_end=(241,),
                                                       dilations=(245,))),
    # One and two w taps: the seeding pass alone, and one pair.
    "pool_width_inner (one w tap)": ((1, 2, 3, 600), dict(kernel=(2, 1), strides=(1, 1), pads_begin=(1, 0),
                                                          pads_end=(0, 0))),
    "pool_width_inner (two w taps)": ((1, 2, 3, 600), dict(kernel=(1, 2), strides=(1, 1), pads_begin=(0, 1),
                                                           pads_end=(0, 1), dilations=(1, 3))),
    # Stride 2 on long rows: taps read the rows' phases (kept for the plane).
    "pool_width_inner (phases)": ((1, 2, 5, 1700), dict(kernel=(3, 4), strides=(2, 3), pads_begin=(1, 2),
                                                        pads_end=(1, 2), dilations=(1, 2))),
    # Short rows, but the taps reach 2**20 past them: planes would need margins that wide.
    "pool_width_inner (planes too wide)": ((1, 2, 4, 6), dict(kernel=(1, 2), strides=(1, 1), pads_begin=(0, 0),
                                                              pads_end=(0, 2**20), dilations=(1, 2**20))),
    # Ceil mode gives a window past the end; phase rows as long as output rows: pooled in place.
    "pool_planes": ((2, 3, 11, 13), dict(kernel=(3, 2), strides=(2, 2), pads_begin=(1, 0),
                                         pads_end=(1, 1), dilations=(1, 1), rounding_type="ceil")),
    # Three adjacent w taps at stride 2. Rows every 2*out_w elements:
    # the w pass is one loop over the plane (more than a _fold_w3 chunk), its border columns redone.
    "pool_folds": ((2, 3, 41, 30), dict(kernel=(3, 3), strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1))),
    # Stride 1, rows folded one by one (9 inputs, 8 outputs per row); borders on both sides.
    "pool_folds (rows)": ((1, 2, 7, 9), dict(kernel=(2, 3), strides=(1, 1), pads_begin=(0, 0),
                                             pads_end=(2, 0), dilations=(2, 1), rounding_type="ceil")),
    # Two border columns on each side (pads of 2 at stride 1), folded a column at a time down the rows
    # after the long w loop ran over them; and an empty w window (a pad of 3: no tap in range) beside a
    # border column of one tap, at stride 2.
    "pool_folds (wide borders)": ((2, 3, 9, 11), dict(kernel=(2, 3), strides=(1, 1), pads_begin=(1, 2),
                                                      pads_end=(0, 2))),
    "pool_folds (empty w window)": ((1, 2, 6, 12), dict(kernel=(3, 3), strides=(2, 2), pads_begin=(1, 3),
                                                        pads_end=(1, 3))),
    # 3-D: the h pass into scratch, then the d pass; empty d windows (pad past the kernel).
    "pool_folds (3-D)": ((1, 2, 5, 6, 8), dict(kernel=(2, 3, 3), strides=(2, 1, 2), pads_begin=(2, 1, 1),
                                               pads_end=(0, 0, 1), dilations=(2, 1, 1))),
    # Empty windows (pads past the kernel) and a window past the end: margins on both sides.
    "pool_planes (empty windows)": ((1, 2, 3, 5), dict(kernel=(2, 2), strides=(3, 2), pads_begin=(2, 0),
                                                       pads_end=(2, 3))),
    # 3-D with an axis shorter than its stride (phases with no element) and dilation.
    "pool_planes (short axis)": ((1, 2, 1, 4, 5), dict(kernel=(2, 3, 2), strides=(3, 2, 2), pads_begin=(1, 1, 0),
                                                       pads_end=(1, 1, 1), dilations=(1, 2, 1))),
    # 3-D, output rows shorter than the phase rows: pooled in a scratch block.
    "pool_planes (scratch)": ((1, 2, 6, 7, 9), dict(kernel=(2, 3, 2), strides=(2, 1, 3), pads_begin=(1, 0, 0),
                                                    pads_end=(0, 1, 0), dilations=(1, 2, 1))),
    # NCX small planes as the lanes of the channels-inner loop: 300 planes, a block of 256 then 44
    # (pool_channel_blocks on both); 270 planes: 256, then 14 (pool_channels_inner).
    "pool_plane_lanes (short last block)": ((2, 135, 5, 7), dict(kernel=(3, 2), strides=(2, 1), pads_begin=(1, 0),
                                                                 pads_end=(1, 1))),
    "pool_plane_lanes": ((2, 150, 5, 7), dict(kernel=(3, 2), strides=(2, 1), pads_begin=(1, 0), pads_end=(1, 1),
                                             dilations=(1, 2))),
    # NXC with many channels: a block of 32 at a time, 40 channels (the second block overlaps the
    # first); 3-D with 64, ceil rounding and empty windows (a pad past the kernel).
    "pool_channel_blocks": ((1, 40, 9, 8), dict(kernel=(3, 2), strides=(2, 1), pads_begin=(1, 0),
                                                pads_end=(2, 1), dilations=(2, 1))),
    "pool_channel_blocks (3-D)": ((2, 64, 4, 5, 6), dict(kernel=(2, 3, 2), strides=(2, 1, 2), pads_begin=(2, 1, 0),
                                                         pads_end=(0, 1, 1), dilations=(1, 2, 1),
                                                         rounding_type="ceil")),
    # NXC with channels at stride 2 (a view, made below): a tap per output.
    "pool_channels_inner": ((1, 40, 9, 8), dict(kernel=(3, 2), strides=(2, 1), pads_begin=(1, 0),
                                                pads_end=(2, 1), dilations=(2, 1))),
    # Windows of one to four taps on the borders and of six inside (a pass per row of taps, two taps per
    # pass then one). (Its pass of four taps needs unit-stride channels: reached through
    # "pool_plane_lanes (short last block)", AdaptiveMaxPool with few channels and the case after the next.)
    "pool_channels_inner (small windows)": ((1, 40, 5, 9), dict(kernel=(2, 3), strides=(1, 2), pads_begin=(1, 1),
                                                                pads_end=(1, 1))),
    # Unit-stride channels, windows of up to four taps (k2s2, pads giving border windows of one and two
    # taps) on rows of 36 outputs: one pass a window, requesting the input 8 outputs on.
    "pool_channels_inner (four taps, long rows)": ((1, 40, 4, 70), dict(kernel=2, strides=2, pads_begin=(0, 1),
                                                                        pads_end=(1, 1))),
    # ... and rows of 216 outputs, streamed (as from memory) in two chunks of _tap_row_passes (204 and 12);
    # 3-D: two rows of taps (along d) a window, one in the last window (the pad past the input).
    "pool_channels_inner (four taps, chunks)": ((1, 40, 4, 430), dict(kernel=2, strides=2, pads_begin=(0, 1),
                                                                      pads_end=(1, 1))),
    "pool_channels_inner (four taps, 3-D)": ((1, 40, 3, 2, 430), dict(kernel=(2, 1, 2), strides=(2, 1, 2),
                                                                      pads_begin=(0, 0, 1), pads_end=(1, 0, 1))),
    # NXC with few channels: a tap per run of outputs; a pad past the kernel gives empty windows;
    # rows longer than a chunk (_channel_runs.CHUNK_ELEMENTS // 5 outputs).
    "pool_channel_runs": ((2, 5, 9, 900), dict(kernel=(3, 2), strides=(2, 1), pads_begin=(1, 0),
                                               pads_end=(2, 3), dilations=(2, 1))),
    # 3-D NXC values, outermost axis first: 40 channels (pooled again by pool_channel_blocks where a NaN
    # or a zero result was), ceil rounding, dilation along h, four d taps (a pass of three, then one);
    # 5 channels (again by pool_channels_inner); pixels not adjacent (a channel slice): a run per pixel.
    "pool_outer_first": ((2, 40, 9, 7, 8), dict(kernel=(4, 3, 2), strides=(2, 2, 1), pads_begin=(1, 1, 0),
                                                pads_end=(2, 2, 1), dilations=(1, 2, 1), rounding_type="ceil")),
    "pool_outer_first (few channels)": ((1, 5, 6, 9, 7), dict(kernel=(3, 3, 3), strides=(2, 2, 2),
                                                              pads_begin=(1, 1, 1), pads_end=(1, 1, 1))),
    "pool_outer_first (sliced pixels)": ((1, 6, 5, 6, 7), dict(kernel=(2, 3, 2), strides=(1, 2, 2),
                                                               pads_begin=(0, 1, 1), pads_end=(1, 1, 0))),
    # 2-D NXC values (one d tap): the h pass reads the input itself, rows of 71 x 40 elements in chunks,
    # requesting the next output row's rows (in the band or the next band, of this image or the next);
    # dilated along h (no requests); pixels not adjacent: S is the rows' copy, as in 3-D.
    "pool_outer_first (2-D)": ((2, 40, 11, 71), dict(kernel=(3, 4), strides=(2, 3), pads_begin=(1, 2),
                                                     pads_end=(1, 2), rounding_type="ceil")),
    "pool_outer_first (2-D, dilated)": ((1, 33, 12, 9), dict(kernel=(3, 3), strides=(1, 2), pads_begin=(2, 1),
                                                            pads_end=(2, 1), dilations=(2, 1))),
    "pool_outer_first (2-D, sliced pixels)": ((1, 6, 7, 8), dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
    # The same on NCX data (pool_width_inner pools again): borders on every axis and stride 2 along w (the
    # interior outputs tap by tap at the stride), ceil rounding; dilated w taps at w stride 1; rows not
    # adjacent (a slice of wider rows, made below): a run per row.
    "pool_outer_first_ncx": ((2, 3, 9, 7, 20), dict(kernel=(3, 3, 3), strides=(2, 2, 2), pads_begin=(1, 1, 1),
                                                    pads_end=(1, 1, 1), rounding_type="ceil")),
    "pool_outer_first_ncx (dilated w)": ((1, 2, 5, 6, 17), dict(kernel=(2, 2, 3), strides=(2, 2, 1),
                                                                pads_begin=(0, 1, 2), pads_end=(1, 0, 2),
                                                                dilations=(1, 1, 2))),
    "pool_outer_first_ncx (sliced rows)": ((1, 2, 4, 5, 9), dict(kernel=(2, 3, 3), strides=(2, 1, 2),
                                                                 pads_begin=(0, 1, 1), pads_end=(1, 1, 1))),
    # w stride 2 (T split into even and odd elements): four dilated w taps (a pass of three, then one),
    # an odd margin of three before the row, an odd width.
    "pool_outer_first_ncx (w stride 2, dilated)": ((1, 2, 5, 6, 19), dict(kernel=(2, 3, 4), strides=(2, 2, 2),
                                                                        pads_begin=(0, 1, 3), pads_end=(1, 0, 3),
                                                                        dilations=(1, 1, 2))),
    # NCX pairs along w: two bands of output rows (the last of two rows) and an input row past the last
    # window; three rows of pairs a window; 1-D; planes not adjacent (every second channel of a copy,
    # made below); the shortest rows it takes (AdaptiveMaxPool's 2x2 bins on small planes), with indices
    # folded 16 outputs at a time, in one band of rows and in two.
    "pool_tiles": ((1, 2, 121, 70), dict(kernel=2, strides=2)),
    "pool_tiles (short rows)": ((2, 5, 15, 10), dict(kernel=2, strides=2)),
    "pool_tiles (short rows, two bands)": ((1, 2, 830, 10), dict(kernel=2, strides=2)),
    "pool_tiles (3 rows)": ((2, 3, 9, 64), dict(kernel=(3, 2), strides=(3, 2))),
    "pool_tiles (1-D)": ((2, 3, 128), dict(kernel=2, strides=2)),
    "pool_tiles (sliced channels)": ((1, 3, 4, 66), dict(kernel=2, strides=2)),
    # Three w taps: one pair per pass over the shared run, then the third alone; 3-D.
    "pool_channel_runs (3 w taps)": ((1, 6, 5, 7, 40), dict(kernel=(2, 3, 3), strides=(1, 2, 2), pads_begin=(1, 1, 1),
                                                            pads_end=(0, 1, 1))),
}


@pytest.mark.parametrize("loop", sorted(LOOP_CASES))
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("data", ["mixed", "sparse NaN", "f16 signalling NaN"])
def test_each_loop_matches_reference(loop: str, preset: str, data: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop is really chosen (checked), and exact on every dtype, in both layouts where it runs;
    on sparse NaNs, on every float type; on f16 with signalling NaNs of either sign (the f16 keys quiet
    them, the outputs must keep their bits)."""
    from ndpool._kernels import _launch

    signatures: list[tuple[object, np.dtype, np.dtype]] = []
    chosen = _chosen_kernels(monkeypatch, signatures)
    _poison_new_memory(monkeypatch)
    shape, attrs = LOOP_CASES[loop]
    name = loop.split()[0]
    if name.startswith("pool_channel") or name in ("pool_separable_nxc", "pool_outer_first"):
        layouts = ["NXC"]
    else:  # (2-D NXC data with large windows takes pool_separable_nxc; 3-D stays with pool_separable)
        both = name == "pool_sliding" or (name == "pool_separable" and len(shape) == 5)
        layouts = ["NCX", "NXC"] if both else ["NCX"]
    # pool_sliding (without indices only) is pinned here whether or not it pays, and kept from the
    # cases of the other loops (their values-only runs would take it where it pays).
    values_only = ("pool_sliding", "pool_outer_first", "pool_outer_first_ncx")
    indices = [None] if name in values_only else ["i64", "i32", None]
    monkeypatch.setattr(_launch, "_sliding_pays", lambda x, geom: name == "pool_sliding")
    real_tiles = _launch._tiles_pay  # (pool_tiles only where pinned: the other NCX loops' cases keep theirs)
    monkeypatch.setattr(_launch, "_tiles_pay", lambda *args: name == "pool_tiles" and real_tiles(*args))
    real_outer_first = _launch._outer_first_pays  # (and the outer-first loops likewise, where they can run)
    monkeypatch.setattr(_launch, "_outer_first_pays",
                        lambda *args: name.startswith("pool_outer_first") and real_outer_first(*args))
    if name == "pool_separable_nxc":  # bands of 4 output rows: several per image, the last partial
        monkeypatch.setattr(_launch, "_band_rows", lambda geom, bounds: 4)
    if name == "pool_outer_first":  # bands of 2 output rows: several per d slice, the last partial
        monkeypatch.setattr(_launch, "_outer_first_band", lambda geom: 2)
    if name == "pool_sliding":  # units of 3 output rows by 5 columns
        monkeypatch.setattr(_launch, "_sliding_units", lambda geom, adjacent: (3, 5))
    rng = np.random.default_rng(7)
    for layout in layouts:
        # (sparse NaNs: the float types; only the types the loop runs for: see test_other_types_run_only_their_kernels)
        types = {"mixed": DTYPES, "sparse NaN": DTYPES[:4], "f16 signalling NaN": [np.float16]}[data]
        for dtype in _dtypes_of(getattr(_launch, name), types):
            x = _sparse_nan_data(rng, shape, dtype) if data == "sparse NaN" else _data(rng, shape, dtype)
            if data == "f16 signalling NaN":
                x = _signalling(rng, x)
            if layout == "NXC":
                x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
            if name == "pool_channels_inner" and "four taps" not in loop:  # every second channel of a copy
                x = np.repeat(x, 2, axis=-1)[..., ::2]
            if loop.startswith("pool_outer_first") and "sliced pixels" in loop:  # the first half of each pixel
                x = np.concatenate((x, x), axis=-1)[..., : x.shape[-1]]
            if loop == "pool_tiles (sliced channels)":  # every second channel of a copy
                x = np.repeat(x, 2, axis=1)[:, ::2]
            if loop == "pool_outer_first_ncx (sliced rows)":  # the first half of each wider row
                x = np.concatenate((x, x), axis=-1)[..., : x.shape[-1]]
            call = dict(attrs, data_format=layout, semantics=preset, return_indices=True)
            # pool_folds, pool_tiles and pool_channels_inner's windows of up to four taps also as from
            # memory (images 64 MB apart): their outputs are made in scratch and streamed out.
            streams = name in ("pool_folds", "pool_tiles") or "four taps" in loop
            for index_type, far in itertools.product(indices, (False, True) if streams else (False,)):
                want_indices = index_type is not None
                call["return_indices"] = want_indices
                call["index_element_type"] = index_type or "i64"
                xc = _far_apart(x) if far else x
                expected = _run("numpy", ndpool.max_pool, xc, **call)
                before = len(chosen)
                got = _run("numba", ndpool.max_pool, xc, **call)
                for e, g in zip(_outputs(expected), _outputs(got), strict=True):
                    assert e.dtype == g.dtype and np.array_equal(_bits(e), _bits(g)), (
                        loop, dtype, preset, layout, index_type, far)
                if name == "pool_channel_blocks" and dtype is ml_dtypes.bfloat16 and not want_indices:
                    # (bf16 without indices was faster in the other loops: checked, then set aside)
                    assert _launch.pool_channel_blocks not in chosen[before:], loop
                    del chosen[before:]
    assert chosen and all(kernel is getattr(_launch, name) for kernel in chosen), (loop, chosen)
    # The loops that write int32 indices themselves did so, for f32, f16 and bf16 (their storage types).
    native = {dtype for kernel, dtype, index in signatures if index == np.int32}
    if getattr(_launch, name) in _launch.NATIVE_I32:
        ran = {_launch._STORAGE.get(np.dtype(d), np.dtype(d)) for d in types}
        assert native == set(_launch.NATIVE_I32_STORAGE) & ran, (loop, native)
    else:
        assert not native, (loop, native)


@pytest.mark.parametrize("seed", SEEDS)
def test_sliding_on_any_window_and_unit(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_sliding forced on random cases without indices (small and large windows, every preset,
    dtype and layout), in random units of a few output rows and columns: bands and strips that
    start or end in the pads, or hold only empty windows."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    _poison_new_memory(monkeypatch)
    rng = np.random.default_rng(seed + 2)
    monkeypatch.setattr(_launch, "_sliding_pays", lambda x, geom: True)
    units = [(1, 1)]
    monkeypatch.setattr(_launch, "_sliding_units", lambda geom, adjacent: units[0])
    checked = 0
    for case in range(150):
        x, attrs = _max_pool_case(rng, large=bool(rng.random() < 0.5))
        attrs["return_indices"] = False
        units[0] = (int(rng.integers(1, 5)), int(rng.integers(1, 7)))
        _launch.forget_plans()  # (a kept plan would keep its units)
        got = _values_match(x, attrs, f"seed {seed} case {case} units {units[0]}")
        if got is None:
            continue
        checked += x.ndim <= 4 and got.size > 0
    assert checked > 50
    assert _launch.pool_sliding in chosen


def _outer_first_case(rng: np.random.Generator, data: Any = None) -> tuple[np.ndarray, dict]:
    """A random values-only case for the outer-first loops: dilations past the strides, pads up to a
    window's extent (windows whose first or last taps fall in them), up to 40 channels; NXC mostly (3-D,
    or 2-D: the direct h pass), NCX 3-D with d stride 2 or 3 (pool_outer_first_ncx's), now and then in
    another memory layout. ``data(rng, shape, dtype)`` makes the values (default: _data)."""
    nxc = rng.random() < 0.7
    axes = 2 if nxc and rng.random() < 0.4 else 3
    kernel = tuple(int(k) for k in rng.integers(1, 4, axes))
    dil = tuple(int(d) for d in rng.integers(1, 4, axes))
    strides = tuple(int(s) for s in rng.integers(1, 4, axes))
    if not nxc:
        strides = (int(rng.integers(2, 4)),) + strides[1:]
    dk = _dilated_extent(kernel, dil)
    pads_b = tuple(int(rng.integers(0, e)) for e in dk)
    pads_e = tuple(int(rng.integers(0, e)) for e in dk)
    size = (int(rng.integers(1, 7)), int(rng.integers(1, 10)), int(rng.integers(1, 10)))[3 - axes:]
    pads_e = _pads_end_that_fit(kernel, dil, size, pads_b, pads_e)
    types = DTYPES[:3] if rng.random() < 0.8 else DTYPES  # (mostly the spec's: the loops run only those)
    x = (data or _data)(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 41)), *size),
                        types[int(rng.integers(0, len(types)))])
    if nxc:
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    if rng.random() < 0.2:
        x = _layout(rng, x)
    attrs = dict(kernel=kernel, strides=strides, pads_begin=pads_b, pads_end=pads_e, dilations=dil,
                 rounding_type=str(rng.choice(["floor", "ceil", "ceil_torch"])),
                 auto_pad=str(rng.choice(["none", "none", "none", "same_upper", "same_lower"])),
                 data_format="NXC" if nxc else "NCX", semantics=str(rng.choice(PRESETS)))
    return x, attrs


def _far_apart(x: np.ndarray) -> np.ndarray:
    """x's images (two at least: x's one twice, the second flipped) STREAMED_BYTES apart in one buffer,
    so that the loops take x as read from memory (_prefetch.streamed: the extent of its elements) at the
    cost of two images."""
    from ndpool._kernels._prefetch import STREAMED_BYTES

    if x.shape[0] == 1:
        x = np.concatenate([x, x[:, ::-1]])
    image = x[0].size
    gap = max(image, -(-STREAMED_BYTES // (x.itemsize * (x.shape[0] - 1))))
    buf = np.empty(gap * (x.shape[0] - 1) + image, x.dtype)  # (pages never written are never backed)
    inner = np.empty(x.shape[1:], x.dtype).strides
    far = np.lib.stride_tricks.as_strided(buf, shape=x.shape, strides=(gap * x.itemsize, *inner))
    far[...] = x
    return far


def _outer_first_sweep(seed: int, data: Any, cases: int, monkeypatch: pytest.MonkeyPatch,
                       far: bool = False, need: dict[tuple[Any, int], int] | None = None) -> dict[tuple[Any, int], int]:
    """Random cases (_outer_first_case with ``data``; ``far``: its images far apart, _far_apart) where
    the outer-first loops can run (any number of taps), NXC in random bands of output rows, each exact
    against the reference; how many each loop pooled, by the input's number of axes (4: 2-D, 5: 3-D).
    ``need``: counts to reach; past ``cases``, more cases (up to four times as many) until they are
    reached, so that a varying seed's unlucky draw does not fail the caller's count."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    _poison_new_memory(monkeypatch)
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(_launch, "_OUTER_FIRST_MIN_TAPS", 0)
    band = [1]
    monkeypatch.setattr(_launch, "_outer_first_band", lambda geom: band[0])
    checked = {(k, ndim): 0 for k in (_launch.pool_outer_first, _launch.pool_outer_first_ncx) for ndim in (4, 5)}
    for case in range(4 * cases):
        if case >= cases and all(checked[k] >= n for k, n in (need or {}).items()):
            break
        x, attrs = _outer_first_case(rng, data)
        if far:
            x = _far_apart(x)
        band[0] = int(rng.integers(1, 5))
        _launch.forget_plans()  # (a kept plan would keep its band)
        before = len(chosen)
        if _values_match(x, attrs, f"seed {seed} case {case} band {band[0]}") is None:
            continue
        for k in set(chosen[before:]) & {k for k, _ in checked}:
            checked[k, x.ndim] += 1
    return checked


@pytest.mark.parametrize("seed", SEEDS)
def test_outer_first_on_any_window_and_band(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_outer_first and pool_outer_first_ncx on random 2-D and 3-D cases wherever they can run, NXC
    in random bands: a band's rows read are not always those of its first and last windows."""
    from ndpool._kernels import _launch

    need = {(_launch.pool_outer_first, 5): 61, (_launch.pool_outer_first, 4): 61, (_launch.pool_outer_first_ncx, 5): 46}
    checked = _outer_first_sweep(seed + 3, None, 600, monkeypatch, need=need)
    assert all(checked[k] >= n for k, n in need.items()), checked


def _zero_maxima(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
    """-2, -1 and zeros, no NaN: many windows' maximum is a zero. Their signs: half of them -0, or (one
    case in three) all +0."""
    x = rng.integers(-2, 1, size=shape).astype(np.float64)
    if rng.random() < 2 / 3:
        x[(x == 0) & (rng.random(shape) < 0.5)] = -0.0
    return x.astype(dtype)


@pytest.mark.parametrize("seed", SEEDS)
def test_outer_first_zero_results_keep_the_first_zero(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outer-first loops fold in another order than row-major, so a zero result can be the wrong
    zero where a window holds +0 and -0: such output rows are pooled again, and only those whose
    windows hold a -0 (all +0, any order gives +0). Random 2-D and 3-D cases without NaN (a NaN pools
    the whole unit again) whose maxima are often zeros."""
    checked = _outer_first_sweep(seed + 11, _zero_maxima, 400, monkeypatch)
    assert sum(checked.values()) > 150, checked


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("data", [None, _zero_maxima], ids=["any", "zero-maxima"])
def test_outer_first_streams_rows_from_memory_exactly(data: Any, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input read from memory (here two images 64 MB apart): pool_outer_first's 2-D rows are made in
    scratch, checked there (NaN, -0 against +0, openvino's floor) and streamed out, or pooled again by
    the exact loop straight into the output. Random cases, exact against the reference."""
    from ndpool._kernels import _launch

    need = {(_launch.pool_outer_first, 4): 16}
    checked = _outer_first_sweep(seed + 17, data, 150, monkeypatch, far=True, need=need)
    assert checked[_launch.pool_outer_first, 4] >= 16, checked


def _force_loop(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the launcher take ``loop`` wherever it can run, whatever it would cost."""
    from ndpool._kernels import _launch

    if loop == "separable":  # pool_separable, and pool_separable_nxc on 1-D and 2-D NXC data
        monkeypatch.setattr(_launch, "_separable_pays", lambda x, geom, bounds: True)
        monkeypatch.setattr(_launch, "_band_rows", lambda geom, bounds: 3)  # (NXC: several bands, the last partial)
    elif loop == "pool_plane_lanes":
        real = _launch._plane_lanes_pay
        monkeypatch.setattr(_launch, "_LANES_MAX_WIDTH", 1 << 20)
        monkeypatch.setattr(_launch, "_LANES_MAX_WIDTH_S1", 1 << 20)
        monkeypatch.setattr(_launch, "_plane_lanes_pay", lambda x, geom, bounds: (
            not _launch._channels_adjacent(x, geom) and _launch._no_empty_window(bounds)
            and _launch.compiled_for(_launch.pool_plane_lanes, x.dtype)) or real(x, geom, bounds))
        monkeypatch.setattr(_launch, "_bin_rows_pay", lambda x, geom: False)
    elif loop == "pool_channel_blocks":  # (at least LANES channels: the test makes them)
        monkeypatch.setattr(_launch, "_BLOCKS_MIN_TAPS", 0)
    elif loop == "pool_channel_runs":
        monkeypatch.setattr(_launch, "_BLOCKS_MIN_CHANNELS", 1 << 20)
        monkeypatch.setattr(_launch, "_RUNS_MAX_CHANNELS", 1 << 20)
    elif loop == "adaptive_width_inner":
        monkeypatch.setattr(_launch, "_bin_rows_pay", lambda x, geom: True)
    # (Never the cost-chosen loops that would take the case first.)
    monkeypatch.setattr(_launch, "_sliding_pays", lambda x, geom: False)
    monkeypatch.setattr(_launch, "_OUTER_FIRST_MIN_TAPS", 1 << 20)


FORCED_LOOPS = {"separable": ("pool_separable", "pool_separable_nxc"), "pool_plane_lanes": ("pool_plane_lanes",),
                "pool_channel_blocks": ("pool_channel_blocks",), "pool_channel_runs": ("pool_channel_runs",),
                "adaptive_width_inner": ("adaptive_width_inner",)}


def _forced_case(rng: np.random.Generator, loop: str) -> tuple[Any, np.ndarray, dict]:
    """(op, x, attributes): a random case for test_every_loop_on_random_windows's ``loop``."""
    from ndpool._kernels import _launch

    x, attrs = _max_pool_case(rng, large=bool(rng.random() < 0.2))
    if rng.random() < 0.5:  # dilated past the stride: windows whose first or last taps skip rows
        attrs["dilations"] = tuple(int(d) for d in rng.integers(1, 4, x.ndim - 2))
    if loop.startswith("pool_channel") and rng.random() < 0.7:  # mostly channels at unit stride
        if attrs["data_format"] == "NCX":
            x, attrs["data_format"] = np.moveaxis(x, 1, -1), "NXC"
        x = np.ascontiguousarray(x)
    nxc = attrs["data_format"] == "NXC"
    if loop == "pool_channel_blocks":  # at least a block, the last partial or not
        reps = -(-_launch._BLOCKS_MIN_CHANNELS // x.shape[-1 if nxc else 1]) + int(rng.integers(0, 2))
        x = np.concatenate([x] * reps, axis=-1 if nxc else 1)
    elif rng.random() < 0.3:  # more channels: the per-plane loops' blocks, the last partial
        x = np.concatenate([x] * int(rng.integers(2, 9)), axis=-1 if nxc else 1)
    if loop in ("adaptive_width_inner", "pool_plane_lanes") and rng.random() < 0.5:
        spatial = x.shape[1:-1] if nxc else x.shape[2:]
        call = dict(output_size=[int(rng.integers(1, i + 3)) for i in spatial], data_format=attrs["data_format"],
                    semantics=attrs["semantics"], index_element_type=attrs["index_element_type"])
        return ndpool.adaptive_max_pool, x, call
    return ndpool.max_pool, x, attrs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loop", sorted(FORCED_LOOPS))
def test_every_loop_on_random_windows(loop: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each loop that the launcher takes by its cost, forced on random cases wherever it can run: any
    window, dilated up to three (past the stride), pads, empty windows, every preset, dtype, layout and
    index type, many channels (the per-plane and per-channel loops' blocks, partial ones)."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    _poison_new_memory(monkeypatch)
    _force_loop(loop, monkeypatch)
    _launch.forget_plans()
    rng = np.random.default_rng([seed, sorted(FORCED_LOOPS).index(loop)])
    wanted = [getattr(_launch, name) for name in FORCED_LOOPS[loop]]
    checked = 0
    for case in range(300):
        fn, x, call = _forced_case(rng, loop)
        try:
            expected = _run("numpy", fn, x, **call)
        except ndpool.PoolingError:
            continue
        before = len(chosen)
        got = _run("numba", fn, x, **call)
        for e, g in zip(_outputs(expected), _outputs(got), strict=True):
            assert e.dtype == g.dtype and np.array_equal(_bits(e), _bits(g)), (
                f"{loop} seed {seed} case {case}: {x.dtype} {x.shape} strides {x.strides} {call} -> "
                f"{chosen[before:]}")
        checked += any(k in wanted for k in chosen[before:])
    assert checked > 20, (loop, checked)  # (60 seeds: 32-73 at least, by the loop)


def test_3d_bands_go_only_to_the_outer_first_loop() -> None:
    """pool_outer_first's band of output rows (its p[35]) is decided only when it runs: 3-D NXC windows
    large enough for the separable loop keep that loop's block of channels gathered together."""
    from ndpool._kernels import _launch

    rng = np.random.default_rng(5)
    for shape, kernel, strides, want in (((1, 24, 24, 20, 16), 7, 1, _launch.pool_separable),
                                         ((1, 18, 20, 16, 16), 3, 2, _launch.pool_outer_first)):
        x = rng.standard_normal(shape).astype(np.float32)
        got = ndpool.max_pool(x, kernel=kernel, strides=strides, pads_begin=kernel // 2, pads_end=kernel // 2)
        plan = list(_launch._plans.values())[-1]
        geom = plan.geom
        block = plan.consts[2][35]
        assert plan.kernel is want
        assert block == (_launch._gather_block(geom) if want is _launch.pool_separable
                         else _launch._outer_first_band(geom))
        expected = _run("numpy", ndpool.max_pool, x, kernel=kernel, strides=strides, pads_begin=kernel // 2,
                        pads_end=kernel // 2)
        assert np.array_equal(_bits(got), _bits(expected))


def test_precompile_covers_every_kernel_once() -> None:
    """`python -m ndpool._kernels._precompile` (run at session start) compiles every kernel the launcher
    can choose, once, for every element type it runs it for: one left out would compile during the tests."""
    from ndpool._kernels import _launch, _precompile

    kernels = _precompile.KERNELS
    assert len({id(k) for k in kernels}) == len(kernels)
    assert {id(k) for k in kernels} == {id(k) for k in _launch._SCRATCH}
    assert {np.dtype(t) for t in _precompile.STORAGE_TYPES} == {np.dtype(t) for t in (
        np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.int16, np.uint16)}
    tasks = _precompile.compilations()
    assert len(set(tasks)) == len(tasks)
    for k, kernel in enumerate(kernels):
        for dtype in _precompile.STORAGE_TYPES:
            want = _launch.compiled_for(kernel, dtype)
            assert ((k, dtype.str, "<i8") in tasks) == want, (kernel, dtype)
            native = want and kernel in _launch.NATIVE_I32 and dtype in _launch.NATIVE_I32_STORAGE
            assert ((k, dtype.str, "<i4") in tasks) == native, (kernel, dtype)
    # The spec's types take every kernel; the others at least one loop per layout and the adaptive one.
    assert all(_launch.compiled_for(k, np.dtype(t)) for k in kernels for t in (np.float32, np.int16, np.uint16))
    for t in (np.float64, np.int8, np.uint8, np.int32, np.int64):
        assert {k for k in kernels if _launch.compiled_for(k, np.dtype(t))} == _launch.GENERAL_KERNELS


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64])
def test_other_types_run_only_their_kernels(dtype) -> None:  # type: ignore[no-untyped-def]
    """Geometries that send f32 to each specialized loop send f64 and the integer types to a general
    one (the only ones compiled for them), with the reference's results bit for bit."""
    from ndpool._kernels import _launch

    rng = np.random.default_rng(7)
    cases = [  # (shape NCX, layout, attributes): folds, lanes, tiles, blocks, runs, separable, outer-first,
        # sliding, separable NXC, planes
        ((2, 3, 12, 20), "NCX", dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
        ((2, 16, 14, 14), "NCX", dict(kernel=2, strides=2)),
        ((1, 2, 8, 64), "NCX", dict(kernel=2, strides=2)),
        ((1, 40, 9, 9), "NXC", dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
        ((1, 8, 9, 9), "NXC", dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
        ((1, 2, 20, 22), "NCX", dict(kernel=9, strides=1, pads_begin=4, pads_end=4, return_indices=True)),
        ((1, 2, 12, 12, 12), "NCX", dict(kernel=5, strides=1, pads_begin=2, pads_end=2, return_indices=True)),
        ((1, 4, 9, 10, 11), "NXC", dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
        ((1, 3, 9, 10, 11), "NCX", dict(kernel=3, strides=2, pads_begin=1, pads_end=1)),
        ((1, 2, 20, 22), "NCX", dict(kernel=9, strides=1, pads_begin=4, pads_end=4)),
        ((1, 3, 20, 22), "NXC", dict(kernel=9, strides=1, pads_begin=4, pads_end=4, return_indices=True)),
        ((1, 2, 12, 40), "NCX", dict(kernel=4, strides=3, pads_begin=1, pads_end=1)),
    ]
    chosen = set()
    for shape, layout, attrs in cases:
        x = _data(rng, shape, dtype)
        if layout == "NXC":
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        for call in (ndpool.max_pool, ndpool.adaptive_max_pool):
            kwargs = dict(attrs, data_format=layout) if call is ndpool.max_pool else dict(data_format=layout)
            args = (x,) if call is ndpool.max_pool else (x, [max(1, n // 3) for n in shape[2:]])
            _launch.forget_plans()
            got = call(*args, **kwargs)
            plan = list(_launch._plans.values())[-1]
            chosen.add(plan.kernel)
            want = _run("numpy", call, *args, **kwargs)
            for g, w in zip(_outputs(got), _outputs(want)):
                if g is not None:
                    assert np.array_equal(_bits(g), _bits(w)), (shape, layout, attrs)
    if np.dtype(dtype) == np.float32:  # the cases reach every specialized loop
        assert chosen >= set(_launch._SCRATCH) - _launch.GENERAL_KERNELS, chosen
    else:
        assert chosen <= _launch.GENERAL_KERNELS, chosen


def test_the_precompile_lost_no_cache_entry() -> None:
    """The session's precompile ran its compilations on one worker per core, saving helpers that several
    kernels call from several processes at once: a new process finds every one of them in the cache
    (an entry lost to a race would compile here)."""
    import subprocess
    import sys

    script = """
import numba.core.compiler as compiler
from ndpool._kernels import _precompile
compiled = []
real = compiler.compile_extra
compiler.compile_extra = lambda *a, **k: compiled.append(getattr(a[2], "__name__", "?")) or real(*a, **k)
tasks = _precompile.compilations()
for task in tasks:
    _precompile.compile_one(task)
print(len(tasks), sorted(set(compiled)))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600)
    count, names = done.stdout.split(" ", 1)
    assert int(count) >= 60 and names.strip() == "[]", done.stdout  # (67 on 2026-12-03)


def test_kernel_caches_are_stamped_with_every_kernel_source(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A kernel's cached machine code includes the helpers it calls from other files, so its cache
    stamp covers every source of the kernels package: editing any of them (or pulling a new version
    into an editable install) recompiles, never loads stale code."""
    import shutil

    from ndpool._kernels import _jit, _precompile

    cached = list(_precompile.KERNELS)
    assert cached and all(k._cache._impl.locator.get_source_stamp() == _jit.kernel_sources_digest() for k in cached)
    # The digest changes with any one file: here a copy of the package with one helper edited.
    copy = tmp_path / "kernels"
    shutil.copytree(_jit._KERNELS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(_jit, "_KERNELS_DIR", str(copy))
    assert _jit.kernel_sources_digest.__wrapped__() == _jit.kernel_sources_digest()
    (copy / "_keys.py").write_text((copy / "_keys.py").read_text() + "\n# edited\n")
    assert _jit.kernel_sources_digest.__wrapped__() != _jit.kernel_sources_digest()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8])
def test_contiguous_inputs_with_odd_unit_axis_strides(dtype) -> None:  # type: ignore[no-untyped-def]
    """C-contiguous inputs are handed to the kernels as their own flat buffer (no strided view): a unit
    axis may carry any stride there (NumPy ignores it; here odd, negative and huge ones), and the
    results must still be the reference's, bit for bit, in both layouts."""
    rng = np.random.default_rng(3)
    base = _data(rng, (1, 3, 6, 7), dtype)
    item = base.itemsize
    odd = [np.lib.stride_tricks.as_strided(base, strides=(s,) + base.strides[1:]) for s in (item + 1, -item, 1 << 40)]
    nxc = np.ascontiguousarray(np.moveaxis(base, 1, -1))
    odd_nxc = [np.lib.stride_tricks.as_strided(nxc, strides=(item + 3,) + nxc.strides[1:])]
    chan = _data(rng, (2, 1, 5, 6), dtype)
    odd_chan = [np.lib.stride_tricks.as_strided(chan, strides=(chan.strides[0], 7) + chan.strides[2:])]
    for views, layout in ((odd, "NCX"), (odd_nxc, "NXC"), (odd_chan, "NCX")):
        for x in views:
            assert x.flags.c_contiguous
            calls = [(ndpool.max_pool, (x,), dict(kernel=3, strides=2, pads_begin=1, pads_end=1, data_format=layout,
                                                   return_indices=True)),
                     (ndpool.adaptive_max_pool, (x, [4, 3]), dict(data_format=layout))]
            for fn, args, kwargs in calls:
                want = _run("numpy", fn, *args, **kwargs)
                got = _run("numba", fn, *args, **kwargs)
                for w, g in zip(want, got, strict=True):
                    assert w.dtype == g.dtype and np.array_equal(_bits(w), _bits(g)), (x.strides, layout, fn)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint16, np.float64])
def test_streamed_runs_copy_every_element_whatever_the_alignment(dtype) -> None:  # type: ignore[no-untyped-def]
    """_stores.stream_run (whole output lines stored non-temporally, the partial lines at either end as
    usual) copies exactly its run, at every start and length around a line, and nothing around it."""
    from numba import njit

    from ndpool._kernels._stores import store_fence, stream_run

    @njit
    def copy(src, s0, dst, d0, count):  # type: ignore[no-untyped-def]
        stream_run(src, s0, dst, d0, count)
        store_fence()

    per_line = 64 // np.dtype(dtype).itemsize
    src = np.arange(1, 4 * per_line + 1).astype(dtype)
    for d0 in range(per_line + 1):
        for count in (0, 1, per_line - 1, per_line, per_line + 1, 2 * per_line + 3):
            for s0 in (0, 3):
                dst = np.zeros(4 * per_line + 8, dtype)
                copy(src, s0, dst, d0, count)
                want = np.zeros_like(dst)
                want[d0:d0 + count] = src[s0:s0 + count]
                assert np.array_equal(dst, want), (d0, count, s0)


def test_flat_views_address_every_element_of_any_layout() -> None:
    """_launch._flat_view: the kernels' (flat buffer, offset, element strides) of a 5-D view reach
    each of its elements, for every axis order of a contiguous array (the transposed ones take a
    shortcut that is valid only without negative or gapped strides), and for reversed, sliced,
    broadcast and odd unit-axis views, which must not take it."""
    import itertools

    from ndpool._kernels._launch import _flat_view

    base = np.arange(2 * 3 * 1 * 4 * 5, dtype=np.float32).reshape(2, 3, 1, 4, 5)
    views = [base.transpose(order) for order in itertools.permutations(range(5))]
    views += [base[:, ::-1], base.transpose(0, 4, 1, 2, 3)[:, ::2], base.transpose(0, 4, 1, 2, 3)[:, :, :, ::-1],
              np.broadcast_to(base[:1], base.shape).transpose(0, 4, 1, 2, 3),
              np.lib.stride_tricks.as_strided(base.transpose(0, 4, 1, 2, 3), strides=(240, 4, 80, -(1 << 40), 20))]
    for view in views:
        flat, offset, strides = _flat_view(view)
        at = offset + (strides[:, None] * np.indices(view.shape).reshape(5, -1)).sum(axis=0)
        assert at.min() >= 0 and at.max() < flat.size, view.strides
        assert np.array_equal(flat[at], view.reshape(-1)), view.strides


def _rows_first_case(rng: np.random.Generator, dtype: Any, data: str) -> tuple[np.ndarray, dict]:
    """A random 2-D NCX case pool_folds takes (three adjacent w taps at stride 1 or 2), values only:
    any h window (1-5 taps, strides 1-3, dilation 1-2), pads on either side, either rounding; rows
    read in place from a wider copy one time in three. ``data``: "clean" (ties, -inf, no NaN or -0),
    "zeros" (_zero_maxima: +0 against -0) or "nan" (_sparse_nan_data)."""
    k_h, s_h, d_h = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    s_w = int(rng.integers(1, 3))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(d_h * (k_h - 1) + 1, 24)),
             int(rng.integers(3, 80)))
    if data == "zeros":
        x = _zero_maxima(rng, shape, dtype)
    elif data == "nan":
        x = _sparse_nan_data(rng, shape, dtype)
    else:
        x = rng.integers(-3, 4, size=shape).astype(np.float64)
        x[rng.random(shape) < 0.05] = -np.inf
        x = x.astype(dtype)
    if rng.random() < 1 / 3:  # rows of a wider array (xs_h > in_w)
        wide = np.zeros(shape[:3] + (shape[3] + 5,), x.dtype)
        wide[..., 2:2 + shape[3]] = x
        x = wide[..., 2:2 + shape[3]]
    pads_begin = (int(rng.integers(0, (d_h * (k_h - 1) + 2) // 2 + 1)), int(rng.integers(0, 2)))
    pads_end = (int(rng.integers(0, (d_h * (k_h - 1) + 2) // 2 + 1)), int(rng.integers(0, 2)))
    attrs = dict(kernel=(k_h, 3), strides=(s_h, s_w), dilations=(d_h, 1), pads_begin=pads_begin, pads_end=pads_end,
                 rounding_type=str(rng.choice(["floor", "ceil"])), data_format="NCX",
                 semantics=str(rng.choice(PRESETS)))
    return x, attrs


@pytest.mark.parametrize("seed", SEEDS)
def test_rows_first_folds_exactly(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_folds' values of 2-D planes go rows first (_rows_first) where a plane holds no NaN and no -0,
    else w first as with indices: random cases of every type it runs for, with clean planes, planes
    whose maxima are often +0 against -0, and planes with a NaN; some as from memory (_far_apart: the
    outputs streamed). Exact against the reference."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    _poison_new_memory(monkeypatch)
    monkeypatch.setattr(_launch, "_plane_lanes_pay", lambda *args: False)  # (narrow rows: pool_folds too)
    monkeypatch.setattr(_launch, "_separable_pays", lambda *args: False)
    rng = np.random.default_rng(seed + 23)
    checked = 0
    for case in range(240):
        dtype = _dtypes_of(_launch.pool_folds)[case % len(_dtypes_of(_launch.pool_folds))]
        data = ("clean", "zeros", "nan")[case // 8 % 3]
        x, attrs = _rows_first_case(rng, dtype, data)
        if case % 16 == 15:
            x = _far_apart(x)
        before = len(chosen)
        if _values_match(x, attrs, f"seed {seed} case {case} {data}") is not None:
            checked += _launch.pool_folds in chosen[before:]
    assert checked > 150, checked


def _folds_plan(x: np.ndarray, **attrs: Any) -> Any:
    """The plan ndpool makes for max_pool(x, **attrs) (it must run pool_folds)."""
    from ndpool._kernels import _launch

    seen = {}
    real = _launch._execute

    def spy(plan, xx):  # type: ignore[no-untyped-def]
        seen["plan"] = plan
        return real(plan, xx)

    _launch._execute = spy
    try:
        _run("numba", ndpool.max_pool, x, **attrs)
    finally:
        _launch._execute = real
    assert seen["plan"].kernel is _launch.pool_folds
    return seen["plan"]


def test_rows_first_plane_leaves_planes_with_nan_or_negative_zero() -> None:
    """rows_first_plane itself, on one plane: a plane without NaN and -0 is pooled (True, the reference's
    values) at stride 2 and 1, a NaN or a -0 at any place a window reads sends it back (False), whether it
    is in a window's first row (checked apart) or another, and at either end of a row; integers have
    neither. Every type pool_folds runs for."""
    from ndpool._kernels import _launch
    from ndpool._kernels._rows_first import rows_first_plane

    rng = np.random.default_rng(5)
    dtypes = _dtypes_of(_launch.pool_folds)
    assert {np.float32, np.float16, ml_dtypes.bfloat16} <= set(dtypes)
    for dtype, s_w, (in_h, in_w) in itertools.product(dtypes, (2, 1), ((9, 23), (12, 112))):
        floats = np.dtype(dtype).kind == "f" or dtype == ml_dtypes.bfloat16
        attrs = dict(kernel=(3, 3), strides=(2, s_w), pads_begin=(1, 1), pads_end=(1, 1), data_format="NCX")
        x = rng.integers(-3, 4, size=(1, 1, in_h, in_w)).astype(dtype)
        plan = _folds_plan(x, **attrs)
        win, dil, _, empty = plan.consts
        storage = _launch._STORAGE.get(np.dtype(dtype), np.dtype(dtype))
        out_h, out_w = plan.out_shape[-2:]
        expected = _run("numpy", ndpool.max_pool, x, **attrs).reshape(-1)

        def pool(x: np.ndarray) -> tuple[bool, np.ndarray]:
            out = np.full(out_h * out_w, 7, storage)
            ok = rows_first_plane(x.reshape(-1).view(storage), 0, in_w, in_w, win, dil[1], s_w, out_h, out_w,
                                  empty[1], out, 0, 0, 0, 0, 0)
            return bool(ok), out

        ok, out = pool(x)
        assert ok and np.array_equal(_bits(out), _bits(expected.view(storage))), (dtype, s_w, in_h, in_w)
        if not floats:
            continue
        for h, w in ((0, 0), (1, in_w - 1), (in_h - 1, 0), (in_h // 2, in_w // 2), (2, 1)):
            for odd in (np.nan, -0.0):
                y = x.copy()
                y[0, 0, h, w] = odd
                assert pool(y)[0] is False, (dtype, s_w, in_h, in_w, h, w, odd)


def test_odd_bounds_find_every_nan_and_negative_zero() -> None:
    """_keys.odd_bounds/odd_found (how _rows_first finds the values whose ties depend on the order of
    folding), per float type as the kernels store it: each NaN (either sign, quiet or signalling, the
    least and the greatest payload) and -0 found, alone or among ordinary values; +0, the infinities
    and the extreme finite values not."""
    import numba

    from ndpool._kernels._keys import odd_bounds, odd_found, odd_start

    @numba.njit
    def found(values):  # type: ignore[no-untyped-def]
        low, high, high_u = odd_start(values)
        for v in values:
            low, high, high_u = odd_bounds(v, low, high, high_u)
        return odd_found(values, low, high, high_u)

    for dtype, bits, storage in ((np.float32, np.uint32, np.float32), (np.float64, np.uint64, np.float64),
                                 (np.float16, np.uint16, np.int16), (ml_dtypes.bfloat16, np.uint16, np.uint16)):
        info = ml_dtypes.finfo(dtype)
        width = 8 * np.dtype(bits).itemsize
        sign, exponent = 1 << (width - 1), int(np.array(np.inf, dtype).view(bits))
        top = sign - 1  # exponent and mantissa all ones
        plain = np.array([0.0, np.inf, -np.inf, info.max, -info.max, info.smallest_subnormal,
                          -info.smallest_subnormal, 1.0, -1.0], dtype)
        odd = [np.array(b, bits).view(dtype) for b in (sign, exponent + 1, top, sign | (exponent + 1), sign | top,
                                                       exponent | (1 << (info.nmant - 1)))]
        assert not found(plain.view(storage)), dtype
        for v in odd:
            for at in (0, 4, len(plain)):
                values = np.insert(plain, at, v)
                assert found(values.view(storage)), (dtype, hex(int(np.array(v).view(bits))), at)
    assert not found(np.array([-3, 0, 5], np.int8))  # integers: neither


@pytest.mark.parametrize("layout", ["NXC", "NCX"])
@pytest.mark.parametrize("size", [[3, 5], [5, 7]])
def test_requests_ahead_keep_adaptive_bins_exact(layout: str, size: list[int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """AdaptiveMaxPool with the next bin's (NXC) or bin row's (NCX) lines requested ahead: the input's
    images far apart (_far_apart: past _prefetch.REQUEST_BYTES on any host), bins of 14 rows and 13
    columns (NCX: in column blocks) or 8 rows and 9-10 columns (NCX: rows folded whole); values and
    indices exact against the reference under every preset, with NaN, ties and signed zeros. And the
    requests never ask on fewer inputs than those streamed from memory."""
    from ndpool._kernels import _launch, _prefetch

    assert _prefetch.REQUEST_BYTES <= _prefetch.STREAMED_BYTES
    chosen = _chosen_kernels(monkeypatch)
    x = _data(np.random.default_rng(37), (1, 32, 40, 64), np.float32)
    if layout == "NXC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    x = _far_apart(x)
    for semantics in ("spec", "openvino", "torch"):
        kw = dict(data_format=layout, semantics=semantics, index_element_type="i64")
        want_v, want_i = _run("numpy", ndpool.adaptive_max_pool, x, size, **kw)
        got_v, got_i = _run("numba", ndpool.adaptive_max_pool, x, size, **kw)
        assert np.array_equal(_bits(want_v), _bits(got_v)), (layout, semantics)
        assert np.array_equal(want_i, got_i), (layout, semantics)
    assert (_launch.pool_channel_blocks if layout == "NXC" else _launch.adaptive_width_inner) in chosen, chosen


@pytest.mark.parametrize("window", [dict(kernel=3, strides=2, pads_begin=1, pads_end=1),
                                    dict(kernel=(3, 2), strides=(3, 2), pads_begin=(0, 1), pads_end=(2, 0))])
def test_requests_of_next_rows_keep_channel_blocks_exact(window: dict[str, Any],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_channel_blocks on 2-D NXC data with indices, its images far apart (_far_apart: requests pay
    on any host), so that each output requests the next output row's window rows: the stem's 3x3 s2
    windows and 3x2 s3x2 ones with pads, border windows included; values and i64 and i32 indices exact
    against the reference under every preset, with NaN, ties and signed zeros, split over threads
    (the next row of a thread's last row is another thread's)."""
    from ndpool._kernels import _launch

    chosen = _chosen_kernels(monkeypatch)
    x = _data(np.random.default_rng(41), (2, 40, 13, 17), np.float32)
    x = _far_apart(np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    for semantics, index in itertools.product(PRESETS, ("i64", "i32")):
        kw = dict(window, data_format="NXC", semantics=semantics, return_indices=True, index_element_type=index)
        want = _run("numpy", ndpool.max_pool, x, **kw)
        got = _run("numba", ndpool.max_pool, x, **kw)
        for e, g in zip(_outputs(want), _outputs(got), strict=True):
            assert e.dtype == g.dtype and np.array_equal(_bits(e), _bits(g)), (window, semantics, index)
    assert chosen and all(k is _launch.pool_channel_blocks for k in chosen), chosen
