"""Shared helpers for the foundation tests: a pure-Python brute force written from docs/SEMANTICS.md.

Nothing here imports ndpool: the brute force is an independent reading of the rules (per-element loops,
Python floats and ints), so tests can cross-check ndpool against it. Import with ``from conftest import ...``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64))
INT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64))
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES
PRESETS = ("spec", "openvino", "onednn", "torch", "onnx")
ADAPTIVE_PRESETS = ("spec", "openvino", "torch")

F32_LOWEST = -3.4028234663852886e38  # float32's lowest, exactly


class Rejected(Exception):
    """The brute force's own 'ndpool must raise here' signal (P < dk)."""


def bits(a: Any) -> np.ndarray:
    """Bit patterns as unsigned ints: compares values bit for bit (signed zeros, NaN payloads)."""
    a = np.ascontiguousarray(np.asarray(a))
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def to_nxc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


def from_nxc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


def _tuple(v: Any, n: int) -> tuple[int, ...]:
    return (int(v),) * n if isinstance(v, int) else tuple(int(e) for e in v)


def resolve_pads(size: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                 pads_begin: Sequence[int], pads_end: Sequence[int], auto_pad: str) -> tuple[list[int], list[int]]:
    auto = auto_pad.lower()
    if auto in ("none", "explicit"):
        return list(pads_begin), list(pads_end)
    if auto == "valid":
        return [0] * len(size), [0] * len(size)
    pb, pe = [], []
    for i, k, s, d in zip(size, kernel, strides, dilations):
        dk = (k - 1) * d + 1
        total = max(0, (math.ceil(i / s) - 1) * s + dk - i)
        b = total // 2 if auto == "same_upper" else total - total // 2
        pb.append(b)
        pe.append(total - b)
    return pb, pe


def out_size(i: int, k: int, s: int, d: int, pb: int, pe: int, rounding: str) -> int:
    dk = (k - 1) * d + 1
    p = i + pb + pe
    if p < dk:
        raise Rejected(f"P={p} < dk={dk}")
    if rounding == "floor":
        return (p - dk) // s + 1
    o = math.ceil((p - dk) / s) + 1
    if rounding == "ceil_torch" and (o - 1) * s >= i + pb:
        o -= 1
    return o


def lowest_of(dtype: np.dtype, kind: str) -> Any:
    """The empty-window value: kind 'neg_inf' (spec, torch), 'f32_lowest' (openvino, onednn), 'type_lowest' (onnx)."""
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).min)
    if kind == "neg_inf":
        return -math.inf
    if kind == "type_lowest":
        return float(ml_dtypes.finfo(dtype).min)
    # float32's lowest cast to the type; bf16 truncates (0xFF7F), f16 overflows to -inf.
    if dtype == BF16:
        return float(np.array([0xFF7F], np.uint16).view(BF16)[0])
    if dtype == np.float16:
        return -math.inf
    return F32_LOWEST


def _py(v: Any) -> Any:
    return int(v) if isinstance(v, (np.integer, int)) else float(v)


def _reduce(taps: list[tuple[Any, int]], preset: str) -> tuple[Any, int] | None:
    """(value, plane flat index) of one window under a preset's rule; None for 'no tap taken'."""
    if preset in ("openvino_ignore",):
        best, idx = None, None
        for v, i in taps:
            if not (isinstance(v, float) and math.isnan(v)) and (best is None or v > best):
                best, idx = v, i
        return None if best is None else (best, idx)
    best, idx = None, None
    for v, i in taps:
        vnan = isinstance(v, float) and math.isnan(v)
        if best is None:
            best, idx = v, i
            continue
        bnan = isinstance(best, float) and math.isnan(best)
        if preset == "spec":
            take = not bnan and (vnan or v > best)
        elif preset == "torch":
            take = vnan or v > best
        else:  # first valid: onnx, openvino adaptive
            take = v > best
        if take:
            best, idx = v, i
    return None if best is None else (best, idx)


def brute_max_pool(x: np.ndarray, kernel: Any, strides: Any, pads_begin: Any = 0, pads_end: Any = 0,
                   dilations: Any = 1, rounding_type: str = "floor", auto_pad: str = "none",
                   semantics: str = "spec", index_axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool of NCX ``x`` per SEMANTICS.md, element by element. Raises ``Rejected`` where ndpool must raise."""
    n_sp = x.ndim - 2
    N, C, *size = x.shape
    kernel, strides, dilations = _tuple(kernel, n_sp), _tuple(strides, n_sp), _tuple(dilations, n_sp)
    pb, pe = resolve_pads(size, kernel, strides, dilations, _tuple(pads_begin, n_sp), _tuple(pads_end, n_sp),
                          auto_pad)
    outs = [out_size(i, k, s, d, b, e, rounding_type.lower())
            for i, k, s, d, b, e in zip(size, kernel, strides, dilations, pb, pe)]
    plane = math.prod(size)
    pstrides = [math.prod(size[a + 1:]) for a in range(n_sp)]
    full_shape = [N, C, *size]
    preset = semantics.lower()
    if index_axis is None:
        index_axis = 0 if preset in ("openvino", "onednn", "onnx") else 2
    index_axis %= x.ndim
    modulus = math.prod(full_shape[index_axis:])
    empty_kind = {"spec": "neg_inf", "torch": "neg_inf", "openvino": "f32_lowest", "onednn": "f32_lowest",
                  "onnx": "type_lowest"}[preset]
    empty_value = lowest_of(x.dtype, empty_kind)
    values = np.empty((N, C, *outs), x.dtype)
    indices = np.empty((N, C, *outs), np.int64)
    for n, c in itertools.product(range(N), range(C)):
        offset = ((n * C + c) * plane) % modulus if modulus else 0
        for o in itertools.product(*[range(m) for m in outs]):
            taps = []
            for j in itertools.product(*[range(k) for k in kernel]):
                pos = [oo * s - b + jj * d for oo, s, b, jj, d in zip(o, strides, pb, j, dilations)]
                if all(0 <= p < i for p, i in zip(pos, size)):
                    flat = sum(p * st for p, st in zip(pos, pstrides))
                    taps.append((_py(x[(n, c, *pos)]), flat))
            if preset in ("openvino", "onednn"):
                # ignore NaN: start at `lowest`, take v > m
                kept = [(v, i) for v, i in taps if not (isinstance(v, float) and math.isnan(v)) and v > empty_value]
                got = _reduce(kept, "openvino_ignore") if kept else None
            else:
                got = _reduce(taps, preset)
            if got is None:
                values[(n, c, *o)] = empty_value
                if preset in ("spec", "torch"):
                    indices[(n, c, *o)] = -1
                elif preset == "onnx":
                    # plane offset + flat index of spatial position (-1, ..., -1), in the scope
                    first = max(index_axis - 2, 0)
                    indices[(n, c, *o)] = offset - sum(pstrides[first:])
                else:
                    indices[(n, c, *o)] = offset
            else:
                _, flat = got
                pos = np.unravel_index(flat, size) if size else ()
                values[(n, c, *o)] = x[(n, c, *[int(p) for p in pos])]  # bit-exact copy of the element
                indices[(n, c, *o)] = ((n * C + c) * plane + flat) % modulus
    return values, indices


def adaptive_bins(i: int, o: int) -> list[tuple[int, int]]:
    return [((b * i) // o, ((b + 1) * i + o - 1) // o) for b in range(o)]


def brute_adaptive(x: np.ndarray, output_size: Sequence[int], semantics: str = "spec") -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveMaxPool-8 of NCX ``x`` per SEMANTICS.md (per-plane indices)."""
    N, C, *size = x.shape
    if any(o < 0 for o in output_size) or any(i == 0 and o > 0 for i, o in zip(size, output_size)):
        raise Rejected("bad output_size")
    preset = {"spec": "spec", "torch": "torch", "openvino": "first_valid"}[semantics]
    bins = [adaptive_bins(i, o) for i, o in zip(size, output_size)]
    pstrides = [math.prod(size[a + 1:]) for a in range(len(size))]
    values = np.empty((N, C, *output_size), x.dtype)
    indices = np.empty((N, C, *output_size), np.int64)
    for n, c in itertools.product(range(N), range(C)):
        for o in itertools.product(*[range(m) for m in output_size]):
            ranges = [range(*bins[a][o[a]]) for a in range(len(size))]
            taps = [(_py(x[(n, c, *pos)]), sum(p * st for p, st in zip(pos, pstrides)))
                    for pos in itertools.product(*ranges)]
            got = _reduce(taps, preset)
            assert got is not None  # bins are never empty
            flat = got[1]
            pos = np.unravel_index(flat, size)
            values[(n, c, *o)] = x[(n, c, *[int(p) for p in pos])]
            indices[(n, c, *o)] = flat
    return values, indices


def random_data(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype, special: bool = True) -> np.ndarray:
    """Small values with many ties; floats also get NaN, +-inf and signed zeros when ``special``."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.min + 1, 0, 1, 2, 3, 5, info.max], dtype=np.int64)
        return pool[rng.integers(0, len(pool), size=shape)].astype(dtype)
    pool = [-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 7.0]
    if special:
        pool += [math.nan, math.inf, -math.inf]
    return np.array(pool, np.float64)[rng.integers(0, len(pool), size=shape)].astype(dtype)


@pytest.fixture(autouse=True)
def _no_kept_plans() -> None:
    """ndpool keeps the plans of recent calls (which loop, its units of work): a test that swaps the
    launcher's decisions (monkeypatch) must not meet a plan made before it. Every test starts without."""
    try:
        from ndpool._kernels import _launch
    except ImportError:  # (numba missing: no plans)
        return
    _launch.forget_plans()


def pytest_configure(config: Any) -> None:
    """Fix the run's varying seed before collection: the suite runs in pytest-xdist workers (``-n`` in
    pyproject's addopts), each collecting the tests again, and seeds are part of test ids, so every
    worker must draw the same one. Workers inherit the environment of the process that starts them."""
    import os

    from cases import run_seeds

    os.environ["NDPOOL_TEST_SEED"] = str(run_seeds()[1])  # (the variable itself when set)


def pytest_report_header(config: Any) -> str:
    import os

    return f"ndpool varying seed: NDPOOL_TEST_SEED={os.environ['NDPOOL_TEST_SEED']} replays this run"


def pytest_sessionstart(session: Any) -> None:
    """Compile ndpool's kernels for every element type first, in one process per group of kernels
    (a subprocess: this module itself imports no ndpool). On a cold numba cache that halves the
    compile time on two cores; on a warm one each process only loads the cache. Only the controlling
    process does it: xdist starts its workers after this hook, so they find the cache filled."""
    import os
    import subprocess
    import sys

    if hasattr(session.config, "workerinput") or os.environ.get("NDPOOL_TEST_PRECOMPILE") == "0":
        return  # (a developer rerunning a few tests after a kernel edit compiles only what they call)
    subprocess.run([sys.executable, "-m", "ndpool._kernels._precompile"], check=False)
