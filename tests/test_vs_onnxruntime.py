"""Differential tests: ndpool ``semantics="onnx"`` against onnxruntime's MaxPool with Indices, bit-exact.

* ``max_pool`` vs onnxruntime (opset 22, CPU, ``Indices`` requested) on every element type onnxruntime accepts
  (f32, f16, f64, i8, u8), 1-3 spatial axes, pads < kernel (onnxruntime's limit), ``ceil_torch`` = ONNX
  ``ceil_mode=1`` (``"ceil"`` only where it gives the same shape), auto_pad NOTSET / VALID / SAME_* (SAME_* with
  onnxruntime's own pads only where they equal SEMANTICS.md's, and always as explicit resolved pads).
  Indices are global (N and C counted), empty windows included. NXC data, ``return_indices=False``, ``i32``
  indices and explicit ``index_axis`` scopes are derived from the same onnxruntime result.
* Output shapes vs ONNX shape inference, on larger geometry and pads >= kernel.
* The oracle itself against a brute-force loop written from SEMANTICS.md's onnx rule.

Seeds: a fixed one and a varying one (``NDPOOL_TEST_SEED`` replays it); both are printed and are in every
failure message, with a bit-exact repro of the first failing cases.
"""

from __future__ import annotations

import math
import time
from typing import Any

import ml_dtypes
import numpy as np
import onnx.shape_inference
import pytest
from cases import (
    TallyReport,
    announce,
    case_rng,
    finish,
    strided_view,
    FailureReport,
    MaxPoolCase,
    bits,
    from_nxc,
    maxpool_output_spatial,
    random_maxpool_case,
    resolve_pads,
    run_seeds,
    to_nxc,
)
from oracle_onnxruntime import (
    ORT_MAXPOOL_DTYPES,
    onnx_inferred_shape,
    ort_max_pool,
    ort_same_pads,
)

import ndpool

FIXED_SEED, VARYING_SEED = run_seeds()
SEEDS = pytest.mark.parametrize("seed", [FIXED_SEED, VARYING_SEED], ids=["fixed", "varying"])

ORT_DTYPES = tuple(dt.name for dt in ORT_MAXPOOL_DTYPES)

N_MAXPOOL = 3000  # per seed
N_SHAPES = 1200  # per seed
N_BRUTE = 200  # per seed


def _compare(
    report: FailureReport,
    seed: int,
    index: int,
    what: str,
    case: Any,
    got: tuple[np.ndarray, np.ndarray | None],
    want: tuple[np.ndarray, np.ndarray],
) -> bool:
    """Values bit-exact (NaN included), indices exact. Records one failure and returns False on a difference."""
    gv, gi = got
    wv, wi = want
    problems = []
    if gv.shape != wv.shape:
        problems.append(f"value shape {gv.shape} != {wv.shape}")
    elif gv.dtype != wv.dtype:
        problems.append(f"value dtype {gv.dtype} != {wv.dtype}")
    elif not np.array_equal(bits(gv), bits(wv)):
        bad = np.argwhere(bits(gv) != bits(wv))
        problems.append(f"values differ at {len(bad)} position(s), first {tuple(bad[0])}")
    if gi is not None and not problems:
        if gi.shape != wi.shape:
            problems.append(f"index shape {gi.shape} != {wi.shape}")
        else:
            diff = gi.astype(np.int64) != wi.astype(np.int64)
            if diff.any():
                bad = np.argwhere(diff)
                problems.append(f"indices differ at {len(bad)} position(s), first {tuple(bad[0])}")
    if problems:
        if gv.shape == wv.shape and gv.dtype == wv.dtype == np.float16 and (gi is None or np.array_equal(gi, wi)):
            differ = bits(gv) != bits(wv)
            if np.isneginf(wv[differ]).all() and (gv[differ] == np.finfo(np.float16).min).all():
                what += " (only f16 empty windows, onnxruntime -inf vs ndpool -65504)"
        detail = "; ".join(problems)
        with np.printoptions(threshold=400, linewidth=160):
            detail += f"\ngot values:\n{gv!r}\nexpected values:\n{wv!r}"
            if gi is not None:
                detail += f"\ngot indices:\n{gi!r}\nexpected indices:\n{wi!r}"
        report.add(seed=seed, index=index, what=what, case=case, details=detail)
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Case drawing (wrappers over cases.py for onnxruntime's limits)
# ---------------------------------------------------------------------------------------------------------------


def _ort_accepts(case: MaxPoolCase) -> bool:
    """``ceil`` only where it equals ``ceil_torch`` (ONNX ceil_mode); C > 0 (onnxruntime: only N may be 0)."""
    a = case.attrs
    if a["rounding_type"] == "ceil":
        spatial = case.x.shape[2:]
        if maxpool_output_spatial(spatial, a) != maxpool_output_spatial(spatial, {**a, "rounding_type": "ceil_torch"}):
            return False
    return case.x.shape[1] > 0


def draw_maxpool_case(rng: np.random.Generator, *, max_elements: int | None = None) -> MaxPoolCase:
    kind = rng.random()
    common: dict[str, Any] = {"dtypes": ORT_DTYPES, "pads_lt_kernel": True, "accept": _ort_accepts}
    if max_elements is not None:
        return random_maxpool_case(rng, max_elements=max_elements, **common)
    if kind < 0.62:
        return random_maxpool_case(rng, **common)
    if kind < 0.70:  # tiny inputs, wide dilations: windows without an in-range tap
        return random_maxpool_case(rng, max_size=3, max_kernel=3, max_dilation=5, **common)
    if kind < 0.78:
        return random_maxpool_case(rng, min_batch=0, max_batch=1, max_size=3, **common)
    if kind < 0.88:  # windows of >= 25 taps (ndpool's separable sparse-table path)
        rank = int(rng.integers(1, 4))
        return random_maxpool_case(
            rng, ranks=(rank,), max_size=48, max_kernel=(40, 12, 6)[rank - 1], max_stride=5, max_pad=39,
            max_elements=12000, max_tries=20000, **{**common, "accept": _large_window},
        )
    if kind < 0.90:  # >= 2**14 outputs (ndpool splits the work over threads)
        return random_maxpool_case(
            rng, ranks=(2,), min_size=92, max_size=128, max_kernel=3, max_stride=1, max_dilation=2,
            max_pad=2, min_channels=2, max_channels=4, max_elements=140000, **common,
        )
    return random_maxpool_case(
        rng, max_size=40, max_kernel=7, max_stride=4, max_pad=6, max_batch=2, max_channels=4,
        max_elements=24000, **common,
    )


def _large_window(case: MaxPoolCase) -> bool:
    return _ort_accepts(case) and math.prod(case.attrs["kernel"]) >= 25


def ort_attrs(case: MaxPoolCase, *, explicit: bool) -> dict[str, Any]:
    """onnxruntime keyword arguments; ``explicit`` passes the resolved pads with auto_pad NOTSET."""
    a = case.attrs
    auto = a["auto_pad"].lower()
    kw: dict[str, Any] = {
        "kernel": a["kernel"], "strides": a["strides"], "dilations": a["dilations"], "ceil_mode": a["rounding_type"] != "floor"
    }
    if explicit or auto in ("none", "explicit"):
        pb, pe = case.pads
        kw.update(pads_begin=pb, pads_end=pe, auto_pad="NOTSET")
    else:
        kw.update(auto_pad=auto.upper())
    return kw


def ort_pads_agree(case: MaxPoolCase) -> bool:
    """onnxruntime's SAME_* pads (dilation ignored, unclamped) equal SEMANTICS.md's for this case."""
    a = case.attrs
    auto = a["auto_pad"].lower()
    if not auto.startswith("same"):
        return True
    ort = ort_same_pads(case.x.shape[2:], a["kernel"], a["strides"], upper=auto == "same_upper")
    return ort == case.pads


def scoped_indices(global_idx: np.ndarray, shape: tuple[int, ...], index_axis: int) -> np.ndarray:
    """Global (N and C counted) indices moved to the scope of ``index_axis`` in {0, 1, 2} (NCX axes):
    subtract the offset of the part of the plane index outside the scope (also right for empty windows)."""
    n, c = shape[:2]
    plane = math.prod(shape[2:])
    nn = np.arange(n).reshape((n, 1) + (1,) * (global_idx.ndim - 2))
    cc = np.arange(c).reshape((1, c) + (1,) * (global_idx.ndim - 2))
    if index_axis == 0:
        return global_idx
    if index_axis == 1:
        return global_idx - nn * c * plane
    return global_idx - (nn * c + cc) * plane


# ---------------------------------------------------------------------------------------------------------------
# MaxPool
# ---------------------------------------------------------------------------------------------------------------


KNOWN_F16_EMPTY = "f16 empty windows: onnxruntime -inf, SEMANTICS.md -65504 (ndpool)"


def _known_f16_empty_windows(want: tuple[np.ndarray, np.ndarray], x: np.ndarray,
                             stats: dict[str, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """The one disagreement SEMANTICS.md does not explain, stated and counted rather than hidden.

    SEMANTICS.md gives an empty window "the type's lowest" under the onnx preset: -65504 for f16.
    onnxruntime 1.32 gives -inf there (float32's lowest rounded to f16, as it computes f16 in f32);
    for every other type it does give the type's lowest. ndpool follows SEMANTICS.md (normative), so
    onnxruntime's -inf at empty windows (index < 0) is mapped to -65504 before the bit-exact compare;
    everything else about those cases, the indices included, must still agree.
    """
    if x.dtype != np.float16:
        return want
    values = want[0].copy()
    hit = (scoped_indices(want[1], x.shape, 2) < 0) & np.isneginf(values)
    if hit.any():
        values[hit] = np.float16(-65504)
        if stats is not None:
            stats[KNOWN_F16_EMPTY] = stats.get(KNOWN_F16_EMPTY, 0) + 1
    return values, want[1]


def check_maxpool_case(
    report: FailureReport, seed: int, index: int, case: MaxPoolCase, rng: np.random.Generator,
    stats: dict[str, int] | None = None,
) -> None:
    x, a = case.x, case.attrs
    ndim = x.ndim
    try:
        want = ort_max_pool(x, **ort_attrs(case, explicit=True))
    except Exception as e:  # noqa: BLE001
        report.add(seed=seed, index=index, what=f"onnxruntime rejected a case ndpool must accept: {e}", case=case)
        return
    want = _known_f16_empty_windows(want, x, stats)
    auto = a["auto_pad"].lower()
    if auto not in ("none", "explicit") and ort_pads_agree(case):
        try:
            want_auto = _known_f16_empty_windows(ort_max_pool(x, **ort_attrs(case, explicit=False)), x, None)
        except Exception as e:  # noqa: BLE001
            report.add(seed=seed, index=index, what=f"onnxruntime rejected auto_pad={auto}: {e}", case=case)
            return
        if not _compare(report, seed, index, f"onnxruntime auto_pad={auto} vs its explicit pads", case, want_auto, want):
            return
        if stats is not None and auto != "valid":
            stats["SAME_* run by onnxruntime"] = stats.get("SAME_* run by onnxruntime", 0) + 1
    ies = str(rng.choice(["i64", "i32"]))
    kw = dict(a, return_indices=True, index_element_type=ies, semantics="onnx")
    # an explicit index_axis: 0 == the default (global); 1 drops N; 2 (first spatial axis) is per plane
    axis = int(rng.choice([0, 1, 2]))
    axis_arg = axis - ndim if rng.random() < 0.5 else axis
    try:
        shape = ndpool.max_pool_output_shape(x.shape, **a, data_format="NCX")
        got = ndpool.max_pool(x, data_format="NCX", **kw)
        got_nxc = ndpool.max_pool(to_nxc(x), data_format="NXC", **kw)
        got_only_v = ndpool.max_pool(x, data_format="NCX", **dict(kw, return_indices=False))
        view = strided_view(x, rng)
        got_view = ndpool.max_pool(view, data_format="NCX", **kw)
        got_axis = ndpool.max_pool(x, data_format="NCX", **dict(kw, index_element_type="i64", index_axis=axis_arg))
    except Exception as e:  # noqa: BLE001 - any exception is a disagreement to report
        report.add(seed=seed, index=index, what=f"ndpool raised {type(e).__name__}: {e}", case=case)
        return
    if tuple(shape) != want[0].shape:
        report.add(seed=seed, index=index, what=f"max_pool_output_shape {shape} != onnxruntime {want[0].shape}", case=case)
        return
    want_idx_dtype = np.dtype(np.int64 if ies == "i64" else np.int32)
    if got[1].dtype != want_idx_dtype or got_nxc[1].dtype != want_idx_dtype:
        report.add(seed=seed, index=index, what=f"index dtype {got[1].dtype}/{got_nxc[1].dtype} != {want_idx_dtype}", case=case)
        return
    if stats is not None:
        empty = bool((scoped_indices(want[1], x.shape, 2) < 0).any())
        stats["with empty windows"] = stats.get("with empty windows", 0) + int(empty)
        if x.dtype.kind not in "iu" and np.isnan(want[0]).any():
            stats["with NaN outputs"] = stats.get("with NaN outputs", 0) + 1
    ok = _compare(report, seed, index, "NCX vs onnxruntime", case, got, want)
    ok = ok and _compare(
        report, seed, index, "NXC (transposed back) vs onnxruntime", case, (from_nxc(got_nxc[0]), from_nxc(got_nxc[1])), want
    )
    ok = ok and _compare(report, seed, index, "return_indices=False vs onnxruntime", case, (got_only_v, None), want)
    ok = ok and _compare(report, seed, index, f"NCX strided view {view.strides} vs onnxruntime", case, got_view, want)
    ok and _compare(
        report, seed, index, f"index_axis={axis_arg} vs onnxruntime's global indices rescoped", case,
        got_axis, (want[0], scoped_indices(want[1], x.shape, axis)),
    )


@SEEDS
def test_max_pool_vs_onnxruntime(seed: int) -> None:
    announce("max_pool vs onnxruntime", seed)
    started = time.perf_counter()
    report = TallyReport(f"max_pool vs onnxruntime (seed={seed})")
    counts: dict[str, int] = {}
    stats: dict[str, int] = {}
    for index in range(N_MAXPOOL):
        rng = case_rng(seed, index)
        case = draw_maxpool_case(rng)
        key = f"{case.x.dtype.name}/r{case.rank}/{case.attrs['rounding_type']}/{case.attrs['auto_pad']}"
        counts[key] = counts.get(key, 0) + 1
        report.cases += 1
        check_maxpool_case(report, seed, index, case, rng, stats)
    dtypes = {k.split("/")[0] for k in counts}
    print(f"  {len(counts)} (dtype, rank, rounding, auto_pad) combinations; dtypes {sorted(dtypes)}; cases {stats}")
    finish(report, seed, started)


# ---------------------------------------------------------------------------------------------------------------
# Shapes vs ONNX shape inference (larger geometry, pads >= kernel allowed, every auto_pad)
# ---------------------------------------------------------------------------------------------------------------


@SEEDS
def test_max_pool_output_shape_vs_onnx_shape_inference(seed: int) -> None:
    announce("max_pool_output_shape vs ONNX shape inference", seed)
    started = time.perf_counter()
    report = TallyReport(f"max_pool_output_shape vs onnx shape inference (seed={seed})")
    rejected = 0
    for index in range(N_SHAPES):
        rng = case_rng(seed, index)
        rank = int(rng.integers(1, 4))
        big = rng.random() < 0.5
        spatial = tuple(int(v) for v in rng.integers(1, 300 if big else 12, size=rank))
        kernel = tuple(int(v) for v in rng.integers(1, 12 if big else 5, size=rank))
        strides = tuple(int(v) for v in rng.integers(1, 9 if big else 4, size=rank))
        dil = tuple(int(v) if rng.random() < 0.5 else 1 for v in rng.integers(1, 6 if big else 4, size=rank))
        pb = tuple(int(v) for v in rng.integers(0, 8 if big else 5, size=rank))
        pe = tuple(int(v) for v in rng.integers(0, 8 if big else 5, size=rank))
        rounding = str(rng.choice(["floor", "ceil_torch", "ceil"]))
        auto = str(rng.choice(["none", "explicit", "same_upper", "same_lower", "valid"]))
        attrs = {"kernel": kernel, "strides": strides, "dilations": dil, "pads_begin": pb, "pads_end": pe,
                     "rounding_type": rounding, "auto_pad": auto}
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) + spatial
        expect = maxpool_output_spatial(spatial, attrs)
        if rounding == "ceil" and expect != maxpool_output_spatial(spatial, {**attrs, "rounding_type": "ceil_torch"}):
            rounding = attrs["rounding_type"] = "ceil_torch"  # ONNX has no "ceil" without the drop rule
            expect = maxpool_output_spatial(spatial, attrs)
        report.cases += 1
        what = f"{shape} {attrs}"
        try:
            got = tuple(ndpool.max_pool_output_shape(shape, **attrs, data_format="NCX"))
        except ndpool.PoolingError as e:
            if expect is not None:
                report.add(seed=seed, index=index, what=f"ndpool rejected {what}: {e}")
            else:
                rejected += 1
            continue
        if expect is None:
            report.add(seed=seed, index=index, what=f"ndpool accepted P < dk: {what} -> {got}")
            continue
        if got != shape[:2] + expect:
            report.add(seed=seed, index=index, what=f"{what}: ndpool {got} != SEMANTICS.md {shape[:2] + expect}")
            continue
        ort_kw = {"kernel": kernel, "strides": strides, "dilations": dil, "ceil_mode": rounding != "floor"}
        if auto in ("none", "explicit"):
            ort_kw.update(pads_begin=pb, pads_end=pe, auto_pad="NOTSET")
        else:
            ort_kw.update(auto_pad=auto.upper())
        try:
            want, want_i = onnx_inferred_shape(shape, np.float32, **ort_kw)
        except (onnx.shape_inference.InferenceError, ValueError) as e:
            report.add(seed=seed, index=index, what=f"ONNX shape inference rejected {what} (ndpool: {got}): {e}")
            continue
        if got != want or want_i != want:
            report.add(seed=seed, index=index, what=f"{what}: ndpool {got} != ONNX shape inference {want} / {want_i}")
    print(f"  {rejected} geometries rejected by ndpool as P < dk (checked against SEMANTICS.md, not ONNX)")
    finish(report, seed, started)


# ---------------------------------------------------------------------------------------------------------------
# The oracle against SEMANTICS.md's onnx rule (independent of ndpool)
# ---------------------------------------------------------------------------------------------------------------


def _lowest(dtype: np.dtype) -> Any:
    """onnxruntime's empty-window value, as observed: the type's lowest, except float16 where it is -inf
    (float32's lowest cast to float16). SEMANTICS.md's table says "the type's lowest" for every type."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype == np.float16:
        return -np.inf
    return ml_dtypes.finfo(dtype).min


def brute_onnx_max_pool(case: MaxPoolCase) -> tuple[np.ndarray, np.ndarray]:
    """Straight from SEMANTICS.md: "first valid" (start at the first in-range tap, take ``v > m`` in row-major
    window order), global indices; an empty window gives the type's lowest (float16: -inf, see ``_lowest``) and
    the plane offset plus the flat index of spatial position (-1, ..., -1)."""
    x, a = case.x, case.attrs
    spatial = x.shape[2:]
    out_spatial = maxpool_output_spatial(spatial, a)
    assert out_spatial is not None
    pb, _ = resolve_pads(spatial, a)
    n, c = x.shape[:2]
    plane = math.prod(spatial)
    flat = x.reshape(n, c, -1)
    offset = (np.arange(n)[:, None] * c + np.arange(c)[None, :]) * plane
    before_plane = -sum(math.prod(spatial[ax + 1:]) for ax in range(len(spatial)))  # flat(-1, ..., -1)
    values = np.empty((n, c) + out_spatial, x.dtype)
    indices = np.empty((n, c) + out_spatial, np.int64)
    for o in np.ndindex(*out_spatial):
        taps = []
        for j in np.ndindex(*a["kernel"]):
            pos = [oa * s - b + ja * d for oa, ja, s, b, d in zip(o, j, a["strides"], pb, a["dilations"])]
            if all(0 <= p < i for p, i in zip(pos, spatial)):
                taps.append(int(np.ravel_multi_index(pos, spatial)))
        if not taps:
            m = np.full((n, c), _lowest(x.dtype), x.dtype)
            idx = offset + before_plane
        else:
            m = flat[:, :, taps[0]].copy()
            idx = np.full((n, c), taps[0], np.int64)
            for t in taps[1:]:
                v = flat[:, :, t]
                with np.errstate(invalid="ignore"):
                    take = v > m
                m = np.where(take, v, m)
                idx = np.where(take, t, idx)
            idx = idx + offset
        values[(slice(None), slice(None)) + o] = m
        indices[(slice(None), slice(None)) + o] = idx
    return values, indices


@SEEDS
def test_onnxruntime_oracle_matches_semantics(seed: int) -> None:
    """onnxruntime follows SEMANTICS.md's onnx rule (so a disagreement with ndpool is ndpool's)."""
    announce("onnxruntime oracle vs SEMANTICS.md brute force", seed)
    started = time.perf_counter()
    report = TallyReport(f"onnxruntime vs brute force (seed={seed})")
    for index in range(N_BRUTE):
        rng = case_rng(seed, index)
        case = draw_maxpool_case(rng, max_elements=600)
        report.cases += 1
        want = brute_onnx_max_pool(case)
        got = ort_max_pool(case.x, **ort_attrs(case, explicit=True))
        _compare(report, seed, index, "onnxruntime vs brute force", case, got, want)
    finish(report, seed, started)
