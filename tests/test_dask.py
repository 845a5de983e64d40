# Needs the optional extra (pyproject.toml):
#   dask = ["dask[array]>=2025.2", "distributed>=2025.2", "zarr>=3.0.8"]
# and, for the tests only, "ome-zarr>=0.12" (its reader checks the pyramid's OME-Zarr layout).
"""ndpool on dask arrays: chunk invariance against the in-memory result, values and indices.

The property tests draw shapes, chunkings (uneven, smaller than the window, not aligned to the stride,
one chunk, empty chunks), attributes, presets, layouts and dtypes, and compare the dask result bit for
bit with ``ndpool.max_pool`` / ``ndpool.adaptive_max_pool`` on the same NumPy array. They run on the
NumPy reference backend (no JIT cost per drawn dtype); a grid test repeats the comparison on the
default backend for every dtype, preset and layout, and one test runs on a two-process LocalCluster.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import dask
import dask.array as da
import numpy as np
import pytest
from cases import ALL_DTYPES, as_dtype, bits, random_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndpool
from ndpool._dask import _Block, _pool_block

PRESETS = ("spec", "openvino", "onednn", "torch", "onnx")
ADAPTIVE_PRESETS = ("spec", "openvino", "torch")


@pytest.fixture
def numpy_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NDPOOL_BACKEND", "numpy")


# The fixture only sets an environment variable that every drawn example wants set: not resetting it
# between examples is what we mean.
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                          HealthCheck.function_scoped_fixture])


def _same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(bits(g), bits(w))


def _chunks(draw: st.DrawFn, size: int) -> tuple[int, ...]:
    """A random partition of ``size``: uneven pieces, sometimes an empty one, sometimes one chunk."""
    if size == 0 or draw(st.booleans()):
        return (size,) if draw(st.booleans()) or size == 0 else (1,) * size
    cuts = sorted(draw(st.lists(st.integers(0, size), min_size=1, max_size=4)))
    return tuple(b - a for a, b in zip([0, *cuts], [*cuts, size], strict=True))


@st.composite
def maxpool_cases(draw: st.DrawFn) -> tuple[np.ndarray, tuple[tuple[int, ...], ...], dict]:
    nsp = draw(st.integers(1, 3))
    size = [draw(st.integers(0 if nsp == 1 else 1, 11 if nsp < 3 else 6)) for _ in range(nsp)]
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    fmt = draw(st.sampled_from(["NCX", "NXC"]))
    shape = (n, c, *size) if fmt == "NCX" else (n, *size, c)
    def per_axis(lo: int, hi: int) -> list[int]:
        return [draw(st.integers(lo, hi)) for _ in size]

    attrs = {
        "kernel": per_axis(1, 4), "strides": per_axis(1, 4), "dilations": per_axis(1, 3),
        "pads_begin": per_axis(0, 3), "pads_end": per_axis(0, 3),
        "rounding_type": draw(st.sampled_from(["floor", "ceil", "ceil_torch"])),
        "auto_pad": draw(st.sampled_from(["none", "none", "same_upper", "same_lower", "valid"])),
        "data_format": fmt, "return_indices": draw(st.booleans()),
        "index_element_type": draw(st.sampled_from(["i64", "i32"])),
        "semantics": draw(st.sampled_from(PRESETS)),
        "index_axis": draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))}
    dtype = as_dtype(draw(st.sampled_from(ALL_DTYPES)))
    x = random_data(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    return x, tuple(_chunks(draw, s) for s in shape), attrs


@settings(PROPERTY, max_examples=150)
@given(case=maxpool_cases())
def test_max_pool_chunk_invariance(numpy_backend: None, case: tuple) -> None:
    x, chunks, attrs = case
    try:
        want = ndpool.max_pool(x, **attrs)
    except ndpool.PoolingError as exc:  # the dask path rejects the same input the same way, eagerly
        with pytest.raises(ndpool.PoolingError) as info:
            ndpool.max_pool(da.from_array(x, chunks=chunks), **attrs)
        assert str(info.value) == str(exc)
        return
    got = ndpool.max_pool(da.from_array(x, chunks=chunks), **attrs)
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    assert all(isinstance(g, da.Array) for g in got_t)
    _same(dask.compute(*got_t, scheduler="sync"), want_t)


@st.composite
def adaptive_cases(draw: st.DrawFn) -> tuple[np.ndarray, tuple[tuple[int, ...], ...], list[int], dict]:
    nsp = draw(st.integers(1, 3))
    size = [draw(st.integers(0 if nsp == 1 else 1, 12 if nsp < 3 else 6)) for _ in range(nsp)]
    out = [draw(st.integers(0 if s == 0 else 1, 2 * s + 1)) if s else 0 for s in size]
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    fmt = draw(st.sampled_from(["NCX", "NXC"]))
    shape = (n, c, *size) if fmt == "NCX" else (n, *size, c)
    attrs = {"data_format": fmt, "semantics": draw(st.sampled_from(ADAPTIVE_PRESETS)),
                 "index_element_type": draw(st.sampled_from(["i64", "i32"]))}
    dtype = as_dtype(draw(st.sampled_from(ALL_DTYPES)))
    x = random_data(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    return x, tuple(_chunks(draw, s) for s in shape), out, attrs


@settings(PROPERTY, max_examples=100)
@given(case=adaptive_cases())
def test_adaptive_max_pool_chunk_invariance(numpy_backend: None, case: tuple) -> None:
    x, chunks, out, attrs = case
    want = ndpool.adaptive_max_pool(x, out, **attrs)
    got = ndpool.adaptive_max_pool(da.from_array(x, chunks=chunks), out, **attrs)
    _same(dask.compute(*got, scheduler="sync"), want)


# Chunkings of a (2, 3, 13, 10) NCX array: uneven; smaller than the window; not aligned to the stride;
# one chunk; batch and channel split.
GRID_CHUNKS = [((1, 1), (2, 1), (5, 4, 4), (3, 7)), ((2,), (3,), (1,) * 13, (2,) * 5),
               ((2,), (3,), (13,), (10,)), ((1, 1), (1, 1, 1), (6, 7), (10,))]


def _layout(x: np.ndarray, chunks: tuple, fmt: str) -> tuple[np.ndarray, tuple]:
    """NCX data and chunks in ``fmt``."""
    if fmt == "NCX":
        return x, chunks
    return np.moveaxis(x, 1, -1), (chunks[0], *chunks[2:], chunks[1])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_preset_layout(dtype: str) -> None:
    """The default backend (the compiled kernels when present) behind the dask path."""
    rng = np.random.default_rng(sum(map(ord, dtype)))
    x = random_data(rng, (2, 3, 13, 10), as_dtype(dtype))
    for chunks, fmt, preset in zip(GRID_CHUNKS * 3, ["NCX", "NXC"] * 6, PRESETS * 3, strict=False):
        data, dchunks = _layout(x, chunks, fmt)
        attrs = {"kernel": 3, "strides": 2, "pads_begin": (1, 0), "pads_end": (1, 2),
                 "dilations": (1, 2), "rounding_type": "ceil", "data_format": fmt,
                 "return_indices": True, "semantics": preset}
        got = ndpool.max_pool(da.from_array(data, chunks=dchunks), **attrs)
        _same(dask.compute(*got), ndpool.max_pool(data, **attrs))
    for chunks, fmt, preset in zip(GRID_CHUNKS, ["NCX", "NXC"] * 2, ADAPTIVE_PRESETS * 2, strict=False):
        data, dchunks = _layout(x, chunks, fmt)
        got = ndpool.adaptive_max_pool(da.from_array(data, chunks=dchunks), [5, 7], data_format=fmt,
                                       semantics=preset, index_element_type="i32")
        _same(dask.compute(*got), ndpool.adaptive_max_pool(data, [5, 7], data_format=fmt,
                                                           semantics=preset, index_element_type="i32"))


def _blocks(arr: da.Array) -> list[_Block]:
    """The blocks of the pooling tasks in ``arr``'s graph."""
    return [task.args[1] for layer in arr.__dask_graph__().layers.values() for task in layer.values()
            if getattr(task, "func", None) is _pool_block]


def test_only_the_needed_halo_crosses_chunks() -> None:
    """Output chunks follow the input's; a block reads its chunk plus at most dk - 1 per axis."""
    x = da.zeros((2, 3, 40, 30), dtype=np.float32, chunks=((1, 1), (2, 1), (9, 16, 15), (10, 10, 10)))
    y = ndpool.max_pool(x, kernel=(3, 2), strides=(2, 3), dilations=(2, 1), pads_begin=1,
                        data_format="NCX")
    assert y.chunks[:2] == x.chunks[:2]  # batch and channel chunks pass straight through
    assert len(y.chunks[2]) == 3 and len(y.chunks[3]) == 3
    assert not any(name.startswith("rechunk") for name in y.__dask_graph__().layers)
    blocks = _blocks(y)
    assert len(blocks) == math.prod(map(len, y.chunks))
    for block in blocks:
        for axis, (slab, dk) in enumerate(zip(block.geom.in_size, (5, 2), strict=True)):
            assert slab <= max(x.chunks[2 + axis]) + dk - 1
    # Adaptive bins: a block reads its chunk plus less than one bin (at most ceil(In/Out) + 1 long).
    values, _ = ndpool.adaptive_max_pool(x, [7, 9])
    blocks = _blocks(values)
    assert len(blocks) == math.prod(map(len, values.chunks))
    for block in blocks:
        for axis, (slab, out) in enumerate(zip(block.geom.in_size, (7, 9), strict=True)):
            assert slab <= max(x.chunks[2 + axis]) + math.ceil(x.shape[2 + axis] / out)


def test_lazy_and_chunk_layout() -> None:
    x = da.ones((1, 50, 40, 2), dtype=np.uint8, chunks=(1, 20, 15, 1))
    y, idx = ndpool.max_pool(x, kernel=2, strides=2, return_indices=True, index_element_type="i32")
    assert y.chunks == ((1,), (10, 10, 5), (8, 7, 5), (1, 1)) and idx.dtype == np.int32
    assert y.dtype == np.uint8


def test_errors_are_raised_eagerly() -> None:
    x = da.zeros((1, 2, 8, 8), dtype=np.float32, chunks=4)
    with pytest.raises(ndpool.PoolingError, match=r"MaxPool: 'strides' must be positive integers .*"
                                                  r"\[input shape \(1, 2, 8, 8\)\]"):
        ndpool.max_pool(x, kernel=2, strides=0)
    with pytest.raises(ndpool.PoolingError, match="'kernel' window extent"):
        ndpool.max_pool(x, kernel=9, strides=1, data_format="NCX")
    with pytest.raises(ndpool.PoolingError, match="'data' dtype must be one of"):
        ndpool.max_pool(x.astype(np.uint16), kernel=2, strides=2)
    with pytest.raises(ndpool.PoolingError, match="'data' must have rank 3, 4 or 5"):
        ndpool.max_pool(x[0, 0], kernel=2, strides=2)
    with pytest.raises(ndpool.PoolingError, match="'data' must have known chunk sizes"):
        ndpool.max_pool(x[x[:, :1, :1, :1].ravel() > 0], kernel=1, strides=1)
    # The i32 check is decided from the geometry: a 2**32-element plane needs no data to fail.
    huge = da.zeros((1, 1, 2**16, 2**16), dtype=np.uint8, chunks=2**12)
    with pytest.raises(ndpool.PoolingError, match="i32 cannot hold the largest index"):
        ndpool.max_pool(huge, kernel=1, strides=1, data_format="NCX", return_indices=True,
                        index_element_type="i32")
    with pytest.raises(ndpool.PoolingError, match="AdaptiveMaxPool: 'output_size'"):
        ndpool.adaptive_max_pool(x, [-1, 2])
    with pytest.raises(ndpool.PoolingError, match="'semantics' must be one of spec, openvino, torch"):
        ndpool.adaptive_max_pool(x, [2, 2], semantics="onnx")


def test_dask_is_imported_only_when_given_a_dask_array() -> None:
    code = ("import sys, numpy as np, ndpool; ndpool.max_pool(np.ones((1, 4, 4, 1), np.float32), "
            "kernel=2, strides=2); ndpool.adaptive_max_pool(np.ones((1, 1, 4), np.float32), [2]); "
            "assert 'dask' not in sys.modules, 'dask imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env={"NDPOOL_BACKEND": "numpy"})


def test_local_cluster_two_processes(numpy_backend: None) -> None:
    """The graph runs unchanged on worker processes (tasks pickled, halos shipped between workers).

    The workers inherit ``NDPOOL_BACKEND=numpy``: what is tested is the graph, and loading the compiled
    kernels in two fresh processes would double the test's time.
    """
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(7)
    x = random_data(rng, (2, 3, 37, 29), np.float32)
    dx = da.from_array(x, chunks=((1, 1), (2, 1), (10, 13, 14), (8, 21)))
    attrs = {"kernel": 3, "strides": 2, "pads_begin": 1, "pads_end": 1, "data_format": "NCX",
             "return_indices": True, "semantics": "onnx"}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        # (The client's scheduler_info() is a snapshot that can predate the workers: on a loaded
        # machine it once listed none. Wait for both, then ask them for their process ids.)
        client.wait_for_workers(2, timeout=120)
        v, i = ndpool.max_pool(dx, **attrs)
        av, ai = ndpool.adaptive_max_pool(dx, [11, 6])
        got = client.compute([v, i, av, ai], sync=True)
        pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    _same(tuple(got), (*ndpool.max_pool(x, **attrs), *ndpool.adaptive_max_pool(x, [11, 6])))
