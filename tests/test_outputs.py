"""Outputs over kept memory (ndpool._kernels._outputs): reused once dropped, never while anything refers to them."""

from __future__ import annotations

import gc
import os
import re
import threading

import numpy as np
import pytest

import ndpool
from ndpool import _dispatch
from ndpool._kernels import _jit, _outputs

pytestmark = pytest.mark.skipif(_dispatch.backend_name() != "numba", reason="kept outputs are the numba path's")


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every array of 64 bytes or more from kept blocks, the pool emptied before and after."""
    monkeypatch.setattr(_outputs, "MIN_BYTES", 64)
    monkeypatch.delenv("NDPOOL_KEEP_MB", raising=False)
    _outputs.release()
    yield _outputs
    _outputs.release()


def _pool(x: np.ndarray, **kw):  # type: ignore[no-untyped-def]
    return ndpool.max_pool(x, kernel=3, strides=1, pads_begin=1, pads_end=1, data_format="NCX", **kw)


def test_a_dropped_output_is_reused_and_a_live_one_never(kept) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(1).standard_normal((2, 3, 40, 40), dtype=np.float32)
    first = _pool(x)
    address = first.__array_interface__["data"][0]
    del first
    second = _pool(x)
    assert second.__array_interface__["data"][0] == address  # the dropped output's memory again
    third = _pool(x + 1)
    assert not np.shares_memory(second, third)
    assert np.array_equal(third, second + 1)
    total, in_use = kept.kept_bytes()
    assert in_use == second.nbytes + third.nbytes and total > in_use  # (and the scratch, free again)


# How a caller may hold on to an output's memory, and how to read the output back through that hold.
HOLDS = {
    "view": (lambda a: a[:, 1:], lambda h, e: (h, e[:, 1:])),
    "view of a view": (lambda a: a[:, 1:].T[::2], lambda h, e: (h, e[:, 1:].T[::2])),
    "base": (lambda a: a.base, lambda h, e: (h[: e.nbytes].view(e.dtype).reshape(e.shape), e)),
    "memoryview": (memoryview, lambda h, e: (np.asarray(h), e)),
    "frombuffer": (lambda a: np.frombuffer(a, np.uint8), lambda h, e: (h.view(e.dtype).reshape(e.shape), e)),
    "list": (lambda a: [a[0]], lambda h, e: (h[0], e[0])),
}


@pytest.mark.parametrize("hold", list(HOLDS))
def test_whatever_refers_to_an_output_keeps_its_memory(kept, hold: str) -> None:  # type: ignore[no-untyped-def]
    make, read = HOLDS[hold]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 32, 32), dtype=np.float32)
    out = _pool(x)
    expected = out.copy()
    other = rng.standard_normal(x.shape, dtype=np.float32)
    other_expected = _pool(other).copy()
    holder = make(out)
    del out
    gc.collect()
    for _ in range(3):  # later calls of the same size must take other memory
        assert np.array_equal(_pool(other), other_expected)
    seen, wanted = read(holder, expected)
    assert np.array_equal(seen, wanted)


def test_indices_and_scratch_come_from_kept_blocks_and_stay_within_the_limit(kept, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NDPOOL_KEEP_MB", "1")
    x = np.random.default_rng(3).standard_normal((1, 8, 64, 64), dtype=np.float32)
    reference = ndpool.max_pool(x, kernel=13, strides=1, pads_begin=6, pads_end=6, data_format="NCX",
                                return_indices=True)
    alive = []
    for i in range(12):  # outputs held past the limit: the rest are plain arrays, none shared
        v, idx = ndpool.max_pool(x, kernel=13, strides=1, pads_begin=6, pads_end=6, data_format="NCX",
                                 return_indices=True)
        assert np.array_equal(v, reference[0]) and np.array_equal(idx, reference[1])
        alive.append((v, idx))
        total, _ = kept.kept_bytes()
        assert total <= 1 << 20
    arrays = [a for pair in alive for a in pair]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])


def test_keep_mb_zero_keeps_nothing(kept, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NDPOOL_KEEP_MB", "0")
    _pool(np.ones((1, 2, 30, 30), np.float32))
    assert kept.kept_bytes() == (0, 0)
    monkeypatch.setenv("NDPOOL_KEEP_MB", "lots")
    with pytest.raises(ValueError, match=r"NDPOOL_KEEP_MB must be a number of megabytes \(got 'lots'\)"):
        _pool(np.ones((1, 2, 30, 30), np.float32))


def test_a_long_mixed_sequence_of_calls_never_overwrites_a_live_output(kept, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Random calls of several sizes and kinds, some outputs kept and some dropped, a small limit:
    every kept output still holds what it held when it was returned."""
    monkeypatch.setenv("NDPOOL_KEEP_MB", "0.25")
    rng = np.random.default_rng(4)
    alive: list[tuple[np.ndarray, np.ndarray]] = []
    for step in range(120):
        shape = (1, int(rng.integers(1, 5)), int(rng.integers(8, 48)), int(rng.integers(8, 48)))
        x = rng.standard_normal(shape, dtype=np.float32)
        if step % 3 == 0:
            out = ndpool.adaptive_max_pool(x, [3, 5])[1]
        elif step % 3 == 1:
            out = ndpool.max_pool(x, kernel=5, strides=1, pads_begin=2, pads_end=2, data_format="NCX")
        else:
            out = ndpool.max_pool(np.moveaxis(x, 1, -1), kernel=2, strides=1, return_indices=True)[1]
        if rng.random() < 0.4:
            alive.append((out, out.copy()))
        if alive and rng.random() < 0.3:
            alive.pop(int(rng.integers(len(alive))))
        for a, copy in alive:
            assert np.array_equal(a, copy)


def test_threads_pooling_at_once_get_their_own_memory(kept) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((1, 2, 50, 50), dtype=np.float32) for _ in range(8)]
    expected = [_pool(x).copy() for x in inputs]
    failures: list[int] = []

    def work(i: int) -> None:
        for _ in range(20):
            if not np.array_equal(_pool(inputs[i]), expected[i]):
                failures.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_python_only_kernel_files_define_nothing_numba_compiles() -> None:
    """They are left out of the kernel caches' stamp (_jit.PYTHON_ONLY): a compiled function in
    one would load stale machine code after an edit."""
    compiled = re.compile(r"\bnjit\b|@kernel\b|\bintrinsic\b|\boverload\b|\bvectorize\b|@jit\b|\bgenerated_jit\b")
    for name in _jit.PYTHON_ONLY:
        path = os.path.join(_jit._KERNELS_DIR, name)
        assert os.path.exists(path), name
        with open(path) as f:
            assert not compiled.search(f.read()), name
