"""Differential tests: ndpool ``semantics="torch"`` against PyTorch (CPU), bit-exact, values and indices.

* ``max_pool`` vs ``torch.nn.functional.max_pool{1,2,3}d(return_indices=True)`` on NCX and channels_last
  tensors; ndpool on NCX and on NXC data (``data_format="NXC"``). ``rounding_type="ceil_torch"`` is torch's
  ``ceil_mode=True``; ``"ceil"`` is compared only where it gives the same shape. Pads are symmetric and at
  most kernel // 2 (torch's limit), after auto_pad. Torch's index of a window with no in-range tap is
  undefined: there only the value is compared, and ndpool must report -1 (SEMANTICS.md).
* ``adaptive_max_pool(semantics="torch")`` vs ``adaptive_max_pool{1,2,3}d`` (float types only in torch).
* Output shapes vs torch (meta tensors) on larger geometry.
* The oracle itself against a brute-force loop written from SEMANTICS.md's torch rule.

Seeds: a fixed one and a varying one (``NDPOOL_TEST_SEED`` replays it); both are printed and are in every
failure message, with a bit-exact repro of the first failing cases.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest
from cases import (
    TallyReport,
    announce,
    case_rng,
    finish,
    strided_view,
    ALL_DTYPES,
    FLOAT_DTYPES,
    AdaptiveCase,
    FailureReport,
    MaxPoolCase,
    adaptive_bins,
    bits,
    from_nxc,
    maxpool_output_spatial,
    random_adaptive_case,
    random_maxpool_case,
    resolve_pads,
    run_seeds,
    to_nxc,
)
from oracle_torch import (
    channels_last_supported,
    restore_nan_bits,
    torch_adaptive_max_pool,
    torch_max_pool,
    torch_max_pool_output_shape,
)

import ndpool

FIXED_SEED, VARYING_SEED = run_seeds()
SEEDS = pytest.mark.parametrize("seed", [FIXED_SEED, VARYING_SEED], ids=["fixed", "varying"])

N_MAXPOOL = 3000  # per seed
N_ADAPTIVE = 1500  # per seed
N_SHAPES = 1000  # per seed
N_BRUTE = 150  # per seed


# ---------------------------------------------------------------------------------------------------------------
# Case drawing (wrappers over cases.py for torch's limits)
# ---------------------------------------------------------------------------------------------------------------


def _torch_accepts(case: MaxPoolCase) -> bool:
    """``ceil`` only where it equals ``ceil_torch`` (torch's ceil_mode); no zero channels (torch rejects them)."""
    a = case.attrs
    if a["rounding_type"] == "ceil":
        spatial = case.x.shape[2:]
        if maxpool_output_spatial(spatial, a) != maxpool_output_spatial(spatial, {**a, "rounding_type": "ceil_torch"}):
            return False
    return case.x.shape[1] > 0


def draw_maxpool_case(rng: np.random.Generator, *, dtypes: Any = ALL_DTYPES) -> MaxPoolCase:
    kind = rng.random()
    common: dict[str, Any] = {
        "dtypes": dtypes, "symmetric_pads": True, "pads_le_half_kernel": True, "accept": _torch_accepts
    }
    if kind < 0.62:  # small: edge cases
        return random_maxpool_case(rng, **common)
    if kind < 0.70:  # tiny inputs, wide dilations: windows without an in-range tap
        return random_maxpool_case(rng, max_size=3, max_kernel=3, min_batch=1, max_dilation=5, **common)
    if kind < 0.78:  # empty batch / single elements
        return random_maxpool_case(rng, min_batch=0, max_batch=1, max_size=3, **common)
    if kind < 0.88:  # windows of >= 25 taps (ndpool's separable sparse-table path)
        rank = int(rng.integers(1, 4))
        return random_maxpool_case(
            rng, ranks=(rank,), max_size=48, max_kernel=(40, 12, 6)[rank - 1], max_stride=5, max_pad=20,
            max_elements=12000, max_tries=20000, **{**common, "accept": _large_window},
        )
    if kind < 0.90:  # >= 2**14 outputs (ndpool splits the work over threads)
        return random_maxpool_case(
            rng, ranks=(2,), min_size=92, max_size=128, max_kernel=3, max_stride=1, max_dilation=2,
            max_pad=1, min_channels=2, max_channels=4, max_elements=140000, **common,
        )
    # larger: interior fast paths, long rows
    return random_maxpool_case(
        rng, max_size=40, max_kernel=7, max_stride=4, max_pad=3, max_batch=2, max_channels=4,
        max_elements=24000, **common,
    )


def _large_window(case: MaxPoolCase) -> bool:
    return _torch_accepts(case) and math.prod(case.attrs["kernel"]) >= 25


def run_torch_max_pool(x: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """torch's result with its bf16 NaN canonicalization undone (oracle_torch notes; SEMANTICS.md keeps bits)."""
    v, i = torch_max_pool(x, **kw)
    return restore_nan_bits(x, v, i), i


def run_torch_adaptive(x: np.ndarray, out: tuple[int, ...], **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    v, i = torch_adaptive_max_pool(x, out, **kw)
    return restore_nan_bits(x, v, i), i


def torch_padding(case: MaxPoolCase) -> tuple[int, ...]:
    pb, pe = case.pads
    assert pb == pe, (pb, pe)
    return pb


def empty_window_mask(case: MaxPoolCase, out_spatial: tuple[int, ...]) -> np.ndarray:
    """True where an output window has no in-range tap (from SEMANTICS.md's tap formula)."""
    pb, _ = case.pads
    a = case.attrs
    mask = np.zeros(out_spatial, dtype=bool)
    for ax, (i, o, k, s, d, b) in enumerate(
        zip(case.x.shape[2:], out_spatial, a["kernel"], a["strides"], a["dilations"], pb, strict=True)
    ):
        taps = np.arange(o)[:, None] * s - b + np.arange(k)[None, :] * d
        empty_ax = ~((taps >= 0) & (taps < i)).any(axis=1)
        shape = [1] * len(out_spatial)
        shape[ax] = o
        mask |= empty_ax.reshape(shape)
    return mask


def _empty_value(dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        return np.array(np.iinfo(dtype).min, dtype)
    return np.array(-np.inf).astype(dtype)


def _compare(
    report: FailureReport,
    seed: int,
    index: int,
    what: str,
    case: Any,
    got: tuple[np.ndarray, np.ndarray | None],
    want: tuple[np.ndarray, np.ndarray],
    *,
    index_mask: np.ndarray | None = None,
) -> bool:
    """Bit-exact values; indices where ``index_mask`` (broadcast over N, C) is True. Records one failure."""
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
            m = np.ones(wi.shape, bool) if index_mask is None else np.broadcast_to(index_mask, wi.shape)
            diff = (gi.astype(np.int64) != wi.astype(np.int64)) & m
            if diff.any():
                bad = np.argwhere(diff)
                problems.append(f"indices differ at {len(bad)} position(s), first {tuple(bad[0])}")
    if problems:
        detail = "; ".join(problems)
        with np.printoptions(threshold=400, linewidth=160):
            detail += f"\ngot values:\n{gv!r}\nexpected values:\n{wv!r}"
            if gi is not None:
                detail += f"\ngot indices:\n{gi!r}\nexpected indices:\n{wi!r}"
        report.add(seed=seed, index=index, what=what, case=case, details=detail)
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# MaxPool
# ---------------------------------------------------------------------------------------------------------------


def check_maxpool_case(
    report: FailureReport, seed: int, index: int, case: MaxPoolCase, rng: np.random.Generator,
    stats: dict[str, int] | None = None,
) -> None:
    x, a = case.x, case.attrs
    rank = case.rank
    ceil_mode = a["rounding_type"] != "floor"
    pad = torch_padding(case)
    try:
        want = run_torch_max_pool(
            x, kernel=a["kernel"], strides=a["strides"], padding=pad, dilations=a["dilations"], ceil_mode=ceil_mode
        )
    except RuntimeError as e:
        report.add(seed=seed, index=index, what=f"torch rejected a case ndpool must accept: {e}", case=case)
        return
    out_spatial = want[0].shape[2:]
    nonempty = ~empty_window_mask(case, out_spatial)
    ies = str(rng.choice(["i64", "i32"]))
    kw = dict(a, return_indices=True, index_element_type=ies, semantics="torch")
    try:
        shape = ndpool.max_pool_output_shape(x.shape, **a, data_format="NCX")
        got_v, got_i = ndpool.max_pool(x, data_format="NCX", **kw)
        got_nxc_v, got_nxc_i = ndpool.max_pool(to_nxc(x), data_format="NXC", **kw)
        got_only_v = ndpool.max_pool(x, data_format="NCX", **dict(kw, return_indices=False))
        view = strided_view(x, rng)
        got_view = ndpool.max_pool(view, data_format="NCX", **kw)
    except Exception as e:  # noqa: BLE001 - any exception is a disagreement to report
        report.add(seed=seed, index=index, what=f"ndpool raised {type(e).__name__}: {e}", case=case)
        return
    if tuple(shape) != want[0].shape:
        report.add(seed=seed, index=index, what=f"max_pool_output_shape {shape} != torch {want[0].shape}", case=case)
        return
    want_idx_dtype = np.dtype(np.int64 if ies == "i64" else np.int32)
    if got_i.dtype != want_idx_dtype or got_nxc_i.dtype != want_idx_dtype:
        report.add(seed=seed, index=index, what=f"index dtype {got_i.dtype}/{got_nxc_i.dtype} != {want_idx_dtype}", case=case)
        return
    # torch leaves the index of an empty window undefined; ndpool's is -1 and its value -inf / the minimum
    want_i = np.where(nonempty, want[1], -1)
    want_v = want[0]
    ev = _empty_value(x.dtype)
    if not nonempty.all() and not np.array_equal(bits(want_v[..., ~nonempty]), bits(np.broadcast_to(ev, want_v[..., ~nonempty].shape))):
        report.add(seed=seed, index=index, what="torch's empty-window value is not -inf / the type's minimum", case=case)
        return
    if stats is not None:
        stats["with empty windows"] = stats.get("with empty windows", 0) + int(not nonempty.all())
        if x.dtype.kind not in "iu" and np.isnan(want_v).any():
            stats["with NaN outputs"] = stats.get("with NaN outputs", 0) + 1
    ok = _compare(report, seed, index, "NCX vs torch", case, (got_v, got_i), (want_v, want_i))
    ok = ok and _compare(
        report, seed, index, "NXC (transposed back) vs torch", case, (from_nxc(got_nxc_v), from_nxc(got_nxc_i)), (want_v, want_i)
    )
    ok = ok and _compare(report, seed, index, "return_indices=False vs torch", case, (got_only_v, None), (want_v, want_i))
    ok = ok and _compare(report, seed, index, f"NCX strided view {view.strides} vs torch", case, got_view, (want_v, want_i))
    if ok and rank >= 2 and x.size and channels_last_supported(x):
        try:
            cl = run_torch_max_pool(
                x, kernel=a["kernel"], strides=a["strides"], padding=pad, dilations=a["dilations"],
                ceil_mode=ceil_mode, channels_last=True,
            )
        except RuntimeError as e:
            report.add(seed=seed, index=index, what=f"torch channels_last rejected the case: {e}", case=case)
            return
        cl_i = np.where(nonempty, cl[1], -1)
        mask = None
        if rank == 3:
            # torch's channels_last_3d kernel drops the depth term from the index of a window whose taps all
            # equal the start value (-inf / the minimum): compare its indices elsewhere only
            mask = bits(got_v) != bits(np.broadcast_to(ev, got_v.shape))
        _compare(report, seed, index, "NCX vs torch channels_last", case, (got_v, got_i), (cl[0], cl_i), index_mask=mask)
        if stats is not None:
            stats["also vs channels_last"] = stats.get("also vs channels_last", 0) + 1


@SEEDS
def test_max_pool_vs_torch(seed: int) -> None:
    announce("max_pool vs torch", seed)
    started = time.perf_counter()
    report = TallyReport(f"max_pool vs torch (seed={seed})")
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
# AdaptiveMaxPool
# ---------------------------------------------------------------------------------------------------------------


def draw_adaptive_case(rng: np.random.Generator) -> AdaptiveCase:
    kind = rng.random()
    if kind < 0.7:
        return random_adaptive_case(rng, dtypes=FLOAT_DTYPES)
    if kind < 0.8:  # empty outputs (Out = 0, N = 0): torch accepts both
        return random_adaptive_case(rng, dtypes=FLOAT_DTYPES, min_out=0, max_out=3, min_batch=0, max_size=4)
    return random_adaptive_case(rng, dtypes=FLOAT_DTYPES, max_size=40, max_out=12, max_elements=24000)


@SEEDS
def test_adaptive_max_pool_vs_torch(seed: int) -> None:
    announce("adaptive_max_pool vs torch", seed)
    started = time.perf_counter()
    report = TallyReport(f"adaptive_max_pool vs torch (seed={seed})")
    for index in range(N_ADAPTIVE):
        rng = case_rng(seed, index)
        case = draw_adaptive_case(rng)
        report.cases += 1
        x, out = case.x, case.output_size
        try:
            want = run_torch_adaptive(x, out)
        except RuntimeError as e:
            report.add(seed=seed, index=index, what=f"torch rejected: {e}", case=case)
            continue
        ies = str(rng.choice(["i64", "i32"]))
        try:
            shape = ndpool.adaptive_max_pool_output_shape(x.shape, out, data_format="NCX")
            got = ndpool.adaptive_max_pool(x, out, index_element_type=ies, data_format="NCX", semantics="torch")
            got_nxc = ndpool.adaptive_max_pool(to_nxc(x), out, index_element_type=ies, data_format="NXC", semantics="torch")
        except Exception as e:  # noqa: BLE001
            report.add(seed=seed, index=index, what=f"ndpool raised {type(e).__name__}: {e}", case=case)
            continue
        if tuple(shape) != want[0].shape:
            report.add(seed=seed, index=index, what=f"adaptive_max_pool_output_shape {shape} != torch {want[0].shape}", case=case)
            continue
        if got[1].dtype != np.dtype(np.int64 if ies == "i64" else np.int32):
            report.add(seed=seed, index=index, what=f"index dtype {got[1].dtype} for {ies}", case=case)
            continue
        ok = _compare(report, seed, index, "NCX vs torch", case, got, want)
        ok = ok and _compare(report, seed, index, "NXC vs torch", case, (from_nxc(got_nxc[0]), from_nxc(got_nxc[1])), want)
        if ok and case.rank >= 2 and x.size:
            cl = run_torch_adaptive(x, out, channels_last=True)
            _compare(report, seed, index, "NCX vs torch channels_last", case, got, cl)
    finish(report, seed, started)


# ---------------------------------------------------------------------------------------------------------------
# Shapes on larger geometry (no data: torch on meta tensors)
# ---------------------------------------------------------------------------------------------------------------


@SEEDS
def test_max_pool_output_shape_vs_torch(seed: int) -> None:
    announce("max_pool_output_shape vs torch", seed)
    started = time.perf_counter()
    report = TallyReport(f"max_pool_output_shape vs torch (seed={seed})")
    for index in range(N_SHAPES):
        rng = case_rng(seed, index)
        rank = int(rng.integers(1, 4))
        spatial = tuple(int(v) for v in rng.integers(1, 300, size=rank))
        kernel = tuple(int(v) for v in rng.integers(1, 12, size=rank))
        strides = tuple(int(v) for v in rng.integers(1, 9, size=rank))
        dil = tuple(int(v) for v in rng.integers(1, 6, size=rank))
        pad = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        rounding = str(rng.choice(["floor", "ceil_torch"]))
        attrs = {"kernel": kernel, "strides": strides, "dilations": dil, "pads_begin": pad, "pads_end": pad, "rounding_type": rounding}
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) + spatial
        expect_ok = maxpool_output_spatial(spatial, {**attrs, "auto_pad": "none"}) is not None
        report.cases += 1
        try:
            got = ndpool.max_pool_output_shape(shape, **attrs, data_format="NCX")
        except ndpool.PoolingError as e:
            if expect_ok:
                report.add(seed=seed, index=index, what=f"ndpool rejected {shape} {attrs}: {e}")
            continue
        if not expect_ok:
            report.add(seed=seed, index=index, what=f"ndpool accepted P < dk: {shape} {attrs} -> {got}")
            continue
        try:
            want = torch_max_pool_output_shape(
                shape, kernel=kernel, strides=strides, padding=pad, dilations=dil, ceil_mode=rounding != "floor"
            )
        except RuntimeError as e:
            report.add(seed=seed, index=index, what=f"torch rejected {shape} {attrs} (ndpool: {got}): {e}")
            continue
        if tuple(got) != want:
            report.add(seed=seed, index=index, what=f"{shape} {attrs}: ndpool {tuple(got)} != torch {want}")
    finish(report, seed, started)


# ---------------------------------------------------------------------------------------------------------------
# The oracle against SEMANTICS.md's torch rule (independent of ndpool)
# ---------------------------------------------------------------------------------------------------------------


def brute_torch_max_pool(case: MaxPoolCase) -> tuple[np.ndarray, np.ndarray]:
    """Straight from SEMANTICS.md: start at -inf (int: min) with the first in-range tap's index, take
    ``v > m or isnan(v)`` in row-major window order; an empty window gives -inf (int: min) and -1."""
    x, a = case.x, case.attrs
    spatial = x.shape[2:]
    out_spatial = maxpool_output_spatial(spatial, a)
    assert out_spatial is not None
    pb, _ = resolve_pads(spatial, a)
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    values = np.empty((n, c) + out_spatial, x.dtype)
    indices = np.empty((n, c) + out_spatial, np.int64)
    start = _empty_value(x.dtype)
    is_float = x.dtype.kind not in "iu"
    for o in np.ndindex(*out_spatial):
        taps = []
        for j in np.ndindex(*a["kernel"]):
            pos = [oa * s - b + ja * d for oa, ja, s, b, d in zip(o, j, a["strides"], pb, a["dilations"])]
            if all(0 <= p < i for p, i in zip(pos, spatial)):
                taps.append(int(np.ravel_multi_index(pos, spatial)))
        m = np.broadcast_to(start, (n, c)).copy()
        idx = np.full((n, c), taps[0] if taps else -1, np.int64)
        for t in taps:
            v = flat[:, :, t]
            with np.errstate(invalid="ignore"):
                take = v > m
            if is_float:
                take |= np.isnan(v.astype(np.float64))
            m = np.where(take, v, m)
            idx = np.where(take, t, idx)
        values[(slice(None), slice(None)) + o] = m
        indices[(slice(None), slice(None)) + o] = idx
    return values, indices


@SEEDS
def test_torch_oracle_matches_semantics(seed: int) -> None:
    """torch follows SEMANTICS.md's torch rule (so a disagreement with ndpool is ndpool's, or a documented quirk)."""
    announce("torch oracle vs SEMANTICS.md brute force", seed)
    started = time.perf_counter()
    report = TallyReport(f"torch vs brute force (seed={seed})")
    for index in range(N_BRUTE):
        rng = case_rng(seed, index)
        case = random_maxpool_case(
            rng, symmetric_pads=True, pads_le_half_kernel=True, accept=_torch_accepts, max_elements=600
        )
        report.cases += 1
        a = case.attrs
        want_v, want_i = brute_torch_max_pool(case)
        got_v, got_i = run_torch_max_pool(
            case.x, kernel=a["kernel"], strides=a["strides"], padding=torch_padding(case),
            dilations=a["dilations"], ceil_mode=a["rounding_type"] != "floor",
        )
        _compare(report, seed, index, "torch vs brute force", case, (got_v, got_i), (want_v, want_i), index_mask=want_i >= 0)
    for index in range(N_BRUTE):
        rng = case_rng(seed, N_BRUTE + index)
        acase = random_adaptive_case(rng, dtypes=FLOAT_DTYPES, max_elements=600)
        report.cases += 1
        want = brute_adaptive(acase)
        got = run_torch_adaptive(acase.x, acase.output_size)
        _compare(report, seed, N_BRUTE + index, "torch adaptive vs brute force", acase, got, want)
    finish(report, seed, started)


def brute_adaptive(case: AdaptiveCase) -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveMaxPool-8 bins with torch's rule (as brute_torch_max_pool)."""
    x = case.x
    spatial = x.shape[2:]
    bins = [adaptive_bins(i, o) for i, o in zip(spatial, case.output_size)]
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    values = np.empty((n, c) + case.output_size, x.dtype)
    indices = np.empty((n, c) + case.output_size, np.int64)
    for o in np.ndindex(*case.output_size):
        ranges = [range(*bins[ax][oa]) for ax, oa in enumerate(o)]
        taps = [int(np.ravel_multi_index(p, spatial)) for p in _product(ranges)]
        m = np.broadcast_to(_empty_value(x.dtype), (n, c)).copy()
        idx = np.full((n, c), taps[0], np.int64)
        for t in taps:
            v = flat[:, :, t]
            with np.errstate(invalid="ignore"):
                take = (v > m) | np.isnan(v.astype(np.float64))
            m = np.where(take, v, m)
            idx = np.where(take, t, idx)
        values[(slice(None), slice(None)) + o] = m
        indices[(slice(None), slice(None)) + o] = idx
    return values, indices


def _product(ranges: list[range]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for r in ranges:
        out = [p + (v,) for p in out for v in r]
    return out

