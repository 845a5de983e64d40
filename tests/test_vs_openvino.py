"""Differential tests: ndpool against the real OpenVINO engine (CPU plugin), bit-exact, values and indices.

What is compared (every comparison runs on a fixed seed and on a varying one, both printed and put in every
failure message; ``NDPOOL_TEST_SEED=<seed>`` replays a varying run):

* preset ``openvino`` (and ``onednn``, same rules) with indices vs MaxPool-8 and MaxPool-14 (values + indices,
  ``axis`` <-> ``index_axis``, i32/i64 indices; MaxPool-14 adds ``ceil_torch``). These run OpenVINO's
  reference implementation on CPU.
* presets ``onednn`` and ``openvino`` vs MaxPool-1 (the oneDNN primitive) and vs MaxPool-14 with the indices
  output unused (oneDNN too, with dilations and ``ceil_torch``).
* preset ``openvino`` vs AdaptiveMaxPool-8 (i32 indices, the only kind the CPU plugin runs).
* ``max_pool_output_shape`` / ``adaptive_max_pool_output_shape`` vs OpenVINO's shape inference, and that ndpool
  raises ``PoolingError`` wherever OpenVINO's shape inference rejects a configuration.

Half of the configurations run ndpool on NXC data (``data_format="NXC"``, input transposed, result transposed
back); every result must equal the NCX engine output bit for bit (NaN payloads and signs included: the engine
keeps them).

Inputs are kept where the engine computes what SEMANTICS.md specifies (see ``_sanitize`` and
oracle_openvino's docstring for the engine's precision bugs): f64 data is rounded to f32 and +-inf become
+-f32max, i64 data stays within ``(-2**31, 2**31)``, and on the oneDNN paths i32/i64 data within ``+-2**24``.
Two engine outputs are mapped before comparing: an i64 empty window is int32's minimum in OpenVINO (ndpool:
int64's), and on oneDNN a bf16 window with no tap above ``lowest`` may be -inf (0xFF80) instead of 0xFF7F,
depending on the oneDNN primitive chosen (counted and printed). Not compared: bf16 on the indices paths (the
engine rejects it), N = 0 or C = 0 (rejected by the engine), a spatial size of 0 on the oneDNN paths (the
engine returns uninitialized memory) and ``ceil_torch`` shapes where ``I + pads_begin == 0`` (the engine
keeps a window SEMANTICS.md drops; ``test_ceil_torch_empty_axis_follows_semantics`` pins ndpool's result).

Each disagreement is reported with the seed, the case number, a bit-exact repro (``case.repro()``), both
outputs and which side an independent brute force of the preset's rules (``_witness_*``) agrees with.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cases import (
    FLOAT_DTYPES,
    INT_DTYPES,
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

import ndpool
import oracle_openvino as ov_oracle

FIXED_SEED, VARYING_SEED = run_seeds()
SEEDS = {"fixed": FIXED_SEED, "varying": VARYING_SEED}
print(f"test_vs_openvino: OpenVINO {ov_oracle.OV_VERSION}; seeds fixed={FIXED_SEED} varying={VARYING_SEED} "
      f"(replay the varying one with NDPOOL_TEST_SEED={VARYING_SEED})")

BF16 = np.dtype(ml_dtypes.bfloat16)
NO_BF16 = tuple(d for d in FLOAT_DTYPES + INT_DTYPES if d != "bfloat16")
ALL = FLOAT_DTYPES + INT_DTYPES
GROUP = 24  # pooling nodes per compiled OpenVINO model (compiling costs the same for 1 or 24)
STATIC_FRACTION = 0.15  # configurations compiled for a static input shape (the rest: dynamic)
SPECIALS = ("nan", "-nan", "-inf", "+inf", "-0", "+0", "lowest", "f32_lowest", "max")

I32_MIN, I64_MIN = np.iinfo(np.int32).min, np.iinfo(np.int64).min
F32_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------------------------------------------------------
# Inputs the engine computes right
# ---------------------------------------------------------------------------------------------------------------


def _sanitize(x: np.ndarray, *, onednn: bool) -> np.ndarray:
    """Keep data where OpenVINO's CPU plugin is exact (its f64->f32 and i64->i32 / i32->f32 conversions)."""
    if x.dtype == np.float64:
        y = x.copy()
        with np.errstate(invalid="ignore"):
            y[np.isinf(y) | (np.abs(y) > F32_MAX)] = np.copysign(F32_MAX, y[np.isinf(y) | (np.abs(y) > F32_MAX)])
        with np.errstate(over="ignore"):
            return y.astype(np.float32).astype(np.float64)
    if x.dtype in (np.int32, np.int64) and onednn:
        return np.clip(x, -(2**24), 2**24).astype(x.dtype)
    if x.dtype == np.int64:
        return np.clip(x, I32_MIN + 1, np.iinfo(np.int32).max)
    return x


# ---------------------------------------------------------------------------------------------------------------
# Independent brute force of the presets' rules (triage only: says which side a disagreement is on)
# ---------------------------------------------------------------------------------------------------------------


def _ov_lowest(dtype: np.dtype) -> Any:
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype == BF16:
        return np.uint16(0xFF7F).view(BF16)
    with np.errstate(over="ignore"):
        return dtype.type(np.float32(np.finfo(np.float32).min))


def _gather(x: np.ndarray, taps: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per axis ``taps[a]`` is (out, k) input positions, -1 outside; returns values (N, C, out..., T) and the
    spatial flat index per (out..., T), -1 outside."""
    spatial, r = x.shape[2:], len(taps)
    outs, ks = [t.shape[0] for t in taps], [t.shape[1] for t in taps]
    flat = np.zeros(tuple(outs) + tuple(ks), dtype=np.int64)
    valid = np.ones(tuple(outs) + tuple(ks), dtype=bool)
    for a, t in enumerate(taps):
        shp = [1] * (2 * r)
        shp[a], shp[r + a] = outs[a], ks[a]
        tt = t.reshape(shp)
        valid = valid & (tt >= 0)
        flat = flat * spatial[a] + np.maximum(tt, 0)
    flat = flat.reshape(tuple(outs) + (-1,))
    valid = valid.reshape(flat.shape)
    nc = (int(x.shape[0]), int(x.shape[1]))
    xs = x.reshape(nc + (-1,))
    vals = xs[:, :, flat] if xs.shape[2] else np.zeros(nc + tuple(flat.shape), dtype=x.dtype)
    return vals, np.where(valid, flat, -1)


def _witness_maxpool(x: np.ndarray, attrs: dict, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """openvino/onednn preset: start at lowest, take v > m (NaN never wins); no winner -> the plane's first."""
    spatial = x.shape[2:]
    pb, _ = resolve_pads(spatial, attrs)
    outsp = maxpool_output_spatial(spatial, attrs)
    assert outsp is not None
    taps = []
    for i, k, s, d, b, o in zip(spatial, attrs["kernel"], attrs["strides"], attrs["dilations"], pb, outsp):
        pos = np.arange(o)[:, None] * s - b + np.arange(k)[None, :] * d
        pos[(pos < 0) | (pos >= i)] = -1
        taps.append(pos)
    vals, flat = _gather(x, taps)
    m = np.full(vals.shape[:-1], _ov_lowest(x.dtype), dtype=x.dtype)
    idx = np.zeros(vals.shape[:-1], dtype=np.int64)
    for t in range(flat.shape[-1]):
        with np.errstate(invalid="ignore"):
            take = (flat[..., t] >= 0) & (vals[..., t] > m)
        m = np.where(take, vals[..., t], m)
        idx = np.where(take, flat[..., t], idx)
    n, c = x.shape[:2]
    plane = ((np.arange(n)[:, None] * c + np.arange(c)[None, :]) * math.prod(spatial)).reshape((n, c) + (1,) * len(spatial))
    scope = math.prod(x.shape[axis % x.ndim:])
    return m, (idx + plane) % scope if scope else idx + plane


def _witness_adaptive(x: np.ndarray, output_size: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """openvino AdaptiveMaxPool-8: start at the first tap, take v > m; per-plane indices."""
    taps = []
    for i, o in zip(x.shape[2:], output_size):
        bins = adaptive_bins(i, o)
        pos = np.full((o, max([e - s for s, e in bins], default=1)), -1, dtype=np.int64)
        for j, (s, e) in enumerate(bins):
            pos[j, : e - s] = np.arange(s, e)
        taps.append(pos)
    vals, flat = _gather(x, taps)
    m = vals[..., 0].copy()
    idx = np.broadcast_to(flat[..., 0], m.shape).copy()
    for t in range(1, flat.shape[-1]):
        with np.errstate(invalid="ignore"):
            take = (flat[..., t] >= 0) & (vals[..., t] > m)
        m = np.where(take, vals[..., t], m)
        idx = np.where(take, flat[..., t], idx)
    return m, idx


# ---------------------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.cases = 0
        self.compared_elements = 0
        self.bf16_minus_inf = 0  # oneDNN bf16 -inf where ndpool gives 0xFF7F
        self.t0 = time.perf_counter()


def _map_engine(ov_v: np.ndarray, nd_v: np.ndarray, *, onednn: bool, stats: Stats) -> np.ndarray:
    """Undo the documented engine differences (module docstring) on the engine's values."""
    if ov_v.dtype == np.int64:
        # i64 computed in i32: an empty window is int32's minimum (data never holds it after _sanitize)
        return np.where((ov_v == I32_MIN) & (nd_v == I64_MIN), I64_MIN, ov_v)
    if onednn and ov_v.dtype == BF16 and nd_v.shape == ov_v.shape:
        ob, nb = bits(ov_v), bits(nd_v)
        hit = (ob == 0xFF80) & (nb == 0xFF7F)
        stats.bf16_minus_inf += int(hit.sum())
        return np.where(hit, nb, ob).view(BF16)
    return ov_v


def _differences(nd: tuple, ov: tuple, *, onednn: bool, stats: Stats) -> list[str]:
    """Problems between ndpool's (values, indices|None) and the engine's, empty when bit-identical."""
    probs = []
    (nv, ni), (ov_v, oi) = nd, ov
    if nv.shape != ov_v.shape or nv.dtype != ov_v.dtype:
        return [f"values shape/dtype: ndpool {nv.shape} {nv.dtype}, engine {ov_v.shape} {ov_v.dtype}"]
    ov_v = _map_engine(ov_v, nv, onednn=onednn, stats=stats)
    bad = bits(nv) != bits(ov_v)
    if bad.any():
        probs.append(f"values differ at {int(bad.sum())} of {bad.size} positions, first at "
                     f"{tuple(int(i) for i in np.argwhere(bad)[0])}")
    if oi is not None and ni is not None:
        if ni.shape != oi.shape or ni.dtype != oi.dtype:
            probs.append(f"indices shape/dtype: ndpool {ni.shape} {ni.dtype}, engine {oi.shape} {oi.dtype}")
        else:
            badi = ni != oi
            if badi.any():
                probs.append(f"indices differ at {int(badi.sum())} of {badi.size} positions, first at "
                             f"{tuple(int(i) for i in np.argwhere(badi)[0])}")
    stats.compared_elements += nv.size
    return probs


def _show(name: str, pair: tuple) -> str:
    v, i = pair
    shown = v.astype(np.float64) if v.dtype == BF16 else v
    with np.printoptions(threshold=120, linewidth=150):
        s = f"{name} values={shown!r}"
        if i is not None:
            s += f"\n{name} indices={i!r}"
    return s


def _record(report: FailureReport, seed: int, index: int, case: Any, call: str, probs: list[str],
            nd: tuple | None, ov: tuple, witness: tuple | None) -> None:
    details = [f"ndpool call: {call}", *probs]
    if nd is not None:
        details.append(_show("ndpool", nd))
    details.append(_show("openvino", ov))
    if witness is not None and nd is not None:
        agree_nd = np.array_equal(bits(witness[0]), bits(nd[0])) and (
            nd[1] is None or np.array_equal(witness[1], nd[1]))
        agree_ov = np.array_equal(bits(witness[0]), bits(ov[0])) and (
            ov[1] is None or np.array_equal(witness[1], ov[1]))
        details.append(f"brute force of the preset's rules agrees with: ndpool={agree_nd} openvino={agree_ov}")
    report.add(seed=seed, index=index, what="; ".join(probs[:1]) or "mismatch", case=case,
               details="\n".join(details))


def _call_ndpool(fn: Callable[..., Any], x: np.ndarray, nxc: bool, **kw: Any) -> tuple:
    """Run ndpool on NCX data, or on its NXC transpose with the result transposed back."""
    if nxc:
        out = fn(to_nxc(x), data_format="NXC", **kw)
    else:
        out = fn(x, data_format="NCX", **kw)
    if not isinstance(out, tuple):
        out = (out, None)
    v, i = out
    if nxc:
        v = from_nxc(v)
        i = None if i is None else from_nxc(i)
    return v, i


# ---------------------------------------------------------------------------------------------------------------
# The batched MaxPool driver
# ---------------------------------------------------------------------------------------------------------------


def _maxpool_run(
    label: str,
    seed: int,
    *,
    version: int,
    with_indices: bool,
    n_configs: int,
    inputs_per_config: int,
    case_kw: dict,
    zero_size_fraction: float = 0.0,
) -> None:
    """Draw ``n_configs`` configurations, ``inputs_per_config`` inputs each, run them batched through OpenVINO
    and ndpool, and fail with a report listing the first disagreements."""
    rng = np.random.default_rng([seed, version, int(with_indices)])
    onednn = not with_indices
    report = FailureReport(label)
    stats = Stats()
    rounding = case_kw.pop("rounding_types")
    ceil_torch_quirk = _ceil_torch_quirk if version == 14 else None
    configs = []
    for _ in range(n_configs):
        zero = rng.random() < zero_size_fraction
        draw_kw = dict(case_kw, rounding_types=rounding, min_size=0 if zero else 1, specials=SPECIALS)
        first = random_maxpool_case(rng, accept=ceil_torch_quirk, **draw_kw)
        dtype = first.x.dtype.name
        static = ov_oracle.needs_static_shape(first.attrs, with_indices=with_indices) or (
            rng.random() < STATIC_FRACTION)
        inputs = [first] + [
            random_maxpool_case(rng, attrs=first.attrs, shape=first.x.shape if static else None,
                                dtypes=(dtype,), accept=ceil_torch_quirk,
                                **{k: v for k, v in draw_kw.items() if k not in ("dtypes", "ranks")})
            for _ in range(inputs_per_config - 1)
        ]
        inputs = [MaxPoolCase(x=_sanitize(c.x, onednn=onednn), attrs=c.attrs) for c in inputs]
        index_axis = None if rng.random() < 0.3 else int(rng.integers(-first.x.ndim, first.x.ndim))
        if zero and index_axis is not None and index_axis % first.x.ndim != 0:
            index_axis = None  # the engine dies (SIGFPE) on `% prod(shape[axis:])` == 0 for 0 < axis
        iet = str(rng.choice(["i32", "i64"]))
        node = ov_oracle.maxpool_node(dtype, first.x.shape if static else first.x.ndim, first.attrs,
                                      version=version, with_indices=with_indices, index_element_type=iet,
                                      axis=0 if index_axis is None else index_axis)
        configs.append((node, inputs, index_axis, iet, bool(rng.random() < 0.5)))

    for g0 in range(0, len(configs), GROUP):
        group = configs[g0:g0 + GROUP]
        compiled = ov_oracle.compile_batch(tuple(c[0] for c in group))
        for k in range(inputs_per_config):
            outs = ov_oracle.run_batch(compiled, [c[1][k].x for c in group])
            for j, ((node, inputs, index_axis, iet, nxc), ov_out) in enumerate(zip(group, outs, strict=True)):
                case = inputs[k]
                index = (g0 + j) * inputs_per_config + k
                presets = ("openvino", "onednn")
                for p, preset in enumerate(presets):
                    indices = with_indices or p == 1  # oneDNN paths: values-only call, then one with indices
                    kw: dict[str, Any] = dict(case.attrs, semantics=preset)
                    if indices:
                        kw.update(return_indices=True, index_element_type=iet, index_axis=index_axis)
                    call = (f"ndpool.max_pool(x{' (NXC transposed)' if nxc else ''}, **attrs, "
                            f"{', '.join(f'{a}={kw[a]!r}' for a in kw if a not in case.attrs)})")
                    try:
                        nd_out = _call_ndpool(ndpool.max_pool, case.x, nxc, **kw)
                    except Exception:
                        report.add(seed=seed, index=index, what="ndpool raised", case=case,
                                   details=f"ndpool call: {call}\n{traceback.format_exc(limit=3)}")
                        continue
                    if not with_indices:
                        nd_out = (nd_out[0], None)  # type: ignore[assignment]
                    probs = _differences(nd_out, ov_out, onednn=onednn, stats=stats)
                    if probs:
                        wv, wi = _witness_maxpool(case.x, case.attrs, node.axis)
                        witness = (wv, wi if with_indices else None)
                        _record(report, seed, index, case, call, probs, nd_out, ov_out, witness)
                stats.cases += 1
    report.cases = stats.cases
    print(f"{label} seed={seed}: {stats.cases} cases ({n_configs} configurations), {stats.compared_elements} "
          f"output elements, {stats.bf16_minus_inf} oneDNN bf16 -inf for 0xFF7F, "
          f"{time.perf_counter() - stats.t0:.1f} s")
    assert report.ok, report.text()


def _ceil_torch_quirk(case: MaxPoolCase) -> bool:
    """False for the configurations where OpenVINO's ceil_torch keeps a window SEMANTICS.md drops."""
    if case.attrs["rounding_type"] != "ceil_torch":
        return True
    pb, _ = case.pads
    return all(i + b > 0 for i, b in zip(case.x.shape[2:], pb))


# ---------------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------------

SEED_PARAMS = pytest.mark.parametrize("seed_name", list(SEEDS))


@SEED_PARAMS
def test_maxpool8_indices(seed_name: str) -> None:
    """Presets openvino/onednn with indices vs MaxPool-8 (reference path): floor/ceil, every auto_pad,
    dilations, pads beyond the kernel, spatial size 0, axis, i32/i64, NaN/-inf/ties/signed zeros."""
    _maxpool_run("MaxPool-8 values+indices", SEEDS[seed_name], version=8, with_indices=True, n_configs=144,
                 inputs_per_config=5, zero_size_fraction=0.08,
                 case_kw=dict(dtypes=NO_BF16, rounding_types=("floor", "ceil")))


@SEED_PARAMS
def test_maxpool14_indices(seed_name: str) -> None:
    """As MaxPool-8, plus ceil_torch (MaxPool-14)."""
    _maxpool_run("MaxPool-14 values+indices", SEEDS[seed_name], version=14, with_indices=True, n_configs=144,
                 inputs_per_config=5, zero_size_fraction=0.08,
                 case_kw=dict(dtypes=NO_BF16, rounding_types=("floor", "ceil", "ceil_torch")))


@SEED_PARAMS
def test_maxpool1_onednn(seed_name: str) -> None:
    """Presets onednn and openvino vs MaxPool-1 (the oneDNN primitive), every dtype including bf16."""
    _maxpool_run("MaxPool-1 (oneDNN)", SEEDS[seed_name], version=1, with_indices=False, n_configs=144,
                 inputs_per_config=5,
                 case_kw=dict(dtypes=ALL, rounding_types=("floor", "ceil"), max_dilation=1))


@SEED_PARAMS
def test_maxpool14_values_onednn(seed_name: str) -> None:
    """Presets onednn and openvino vs MaxPool-14 with its indices unused (oneDNN): dilations, ceil_torch, bf16."""
    _maxpool_run("MaxPool-14 values only (oneDNN)", SEEDS[seed_name], version=14, with_indices=False,
                 n_configs=120, inputs_per_config=5,
                 case_kw=dict(dtypes=ALL, rounding_types=("floor", "ceil", "ceil_torch")))


@SEED_PARAMS
def test_adaptive_max_pool(seed_name: str) -> None:
    """Preset openvino vs AdaptiveMaxPool-8 (i32 indices), every dtype, Out > In, Out = 0, NXC."""
    seed = SEEDS[seed_name]
    rng = np.random.default_rng([seed, 8, 8])
    report = FailureReport("AdaptiveMaxPool-8")
    stats = Stats()
    n_configs, inputs_per_config = 144, 5
    configs = []
    for _ in range(n_configs):
        min_out = 0 if rng.random() < 0.08 else 1
        first = random_adaptive_case(rng, dtypes=ALL, min_out=min_out, specials=SPECIALS)
        static = rng.random() < STATIC_FRACTION
        inputs = [first] + [
            random_adaptive_case(rng, output_size=first.output_size, shape=first.x.shape if static else None,
                                 dtypes=(first.x.dtype.name,), specials=SPECIALS)
            for _ in range(inputs_per_config - 1)
        ]
        inputs = [AdaptiveCase(x=_sanitize(c.x, onednn=True), output_size=c.output_size) for c in inputs]
        node = ov_oracle.adaptive_node(first.x.dtype, first.x.shape if static else first.x.ndim, first.output_size)
        configs.append((node, inputs, bool(rng.random() < 0.5)))
    for g0 in range(0, n_configs, GROUP):
        group = configs[g0:g0 + GROUP]
        compiled = ov_oracle.compile_batch(tuple(c[0] for c in group))
        for k in range(inputs_per_config):
            outs = ov_oracle.run_batch(compiled, [c[1][k].x for c in group])
            for j, ((_node, inputs, nxc), ov_out) in enumerate(zip(group, outs, strict=True)):
                case = inputs[k]
                index = (g0 + j) * inputs_per_config + k
                call = (f"ndpool.adaptive_max_pool(x{' (NXC transposed)' if nxc else ''}, {case.output_size!r}, "
                        f"index_element_type='i32', semantics='openvino')")
                try:
                    nd_out = _call_ndpool(ndpool.adaptive_max_pool, case.x, nxc, output_size=case.output_size,
                                          index_element_type="i32", semantics="openvino")
                except Exception:
                    report.add(seed=seed, index=index, what="ndpool raised", case=case,
                               details=f"ndpool call: {call}\n{traceback.format_exc(limit=3)}")
                    continue
                probs = _differences(nd_out, ov_out, onednn=True, stats=stats)
                if probs:
                    _record(report, seed, index, case, call, probs, nd_out, ov_out,
                            _witness_adaptive(case.x, case.output_size))
                stats.cases += 1
    report.cases = stats.cases
    print(f"AdaptiveMaxPool-8 seed={seed}: {stats.cases} cases, {stats.compared_elements} output elements, "
          f"{time.perf_counter() - stats.t0:.1f} s")
    assert report.ok, report.text()


def _raw_maxpool_config(rng: np.random.Generator) -> tuple[tuple[int, ...], dict[str, Any]]:
    """Any configuration, valid or not (P < dk), spatial sizes from 0, N and C from 1."""
    r = int(rng.integers(1, 4))
    draw = lambda lo, hi: tuple(int(v) for v in rng.integers(lo, hi + 1, r))  # noqa: E731
    attrs: dict[str, Any] = dict(kernel=draw(1, 5), strides=draw(1, 3), dilations=draw(1, 3), pads_begin=draw(0, 5),
                 pads_end=draw(0, 5), rounding_type=str(rng.choice(["floor", "ceil", "ceil_torch"])),
                 auto_pad=str(rng.choice(["none", "explicit", "same_upper", "same_lower", "valid"])))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + draw(0, 9)
    return shape, attrs


@SEED_PARAMS
def test_max_pool_output_shape(seed_name: str) -> None:
    """ndpool.max_pool_output_shape == OpenVINO shape inference (MaxPool-8, -14, and -1 without dilations);
    where OpenVINO rejects (P < dk), ndpool's max_pool_output_shape and max_pool raise PoolingError."""
    seed = SEEDS[seed_name]
    rng = np.random.default_rng([seed, 99])
    report = FailureReport("MaxPool output shape")
    n = rejected = quirks = 0
    t0 = time.perf_counter()
    for index in range(1500):
        shape, attrs = _raw_maxpool_config(rng)
        versions = [14] if attrs["rounding_type"] == "ceil_torch" else [8, 14]
        if attrs["rounding_type"] != "ceil_torch" and all(d == 1 for d in attrs["dilations"]):
            versions.append(1)
        nxc = bool(rng.random() < 0.5)
        what = f"shape={shape} attrs={attrs!r} nxc={nxc}"
        try:
            nd = ndpool.max_pool_output_shape(shape if not nxc else (shape[0], *shape[2:], shape[1]),
                                              **attrs, data_format="NXC" if nxc else "NCX")
            if nxc:
                nd = (nd[0], nd[-1], *nd[1:-1])
            nd_err = None
        except ndpool.PoolingError as e:
            nd, nd_err = None, e
        except Exception as e:  # a wrong exception type is a disagreement too
            report.add(seed=seed, index=index, what=f"{what}: ndpool raised {type(e).__name__}: {e}")
            continue
        for version in versions:
            n += 1
            try:
                ov = ov_oracle.maxpool_shape(shape, attrs, version=version)
            except Exception as e:
                rejected += 1
                if nd_err is None:
                    report.add(seed=seed, index=index, what=f"{what}: MaxPool-{version} rejects "
                               f"({str(e).splitlines()[-1][:150]}) but ndpool gives {nd}")
                continue
            quirk = attrs["rounding_type"] == "ceil_torch" and any(
                i + b == 0 for i, b in zip(shape[2:], resolve_pads(shape[2:], attrs)[0], strict=True))
            if nd_err is not None:
                report.add(seed=seed, index=index, what=f"{what}: MaxPool-{version} gives {ov} but ndpool "
                           f"raised {nd_err}")
            elif nd is None or tuple(nd) != tuple(ov):
                if quirk:
                    quirks += 1
                else:
                    report.add(seed=seed, index=index, what=f"{what}: MaxPool-{version} gives {ov}, ndpool {nd}")
        if nd_err is not None and index % 4 == 0:
            # the op itself must reject too, under every preset
            preset = str(rng.choice(["spec", "openvino", "onednn", "torch", "onnx"]))
            try:
                ndpool.max_pool(np.zeros(shape, np.float32), **attrs, data_format="NCX", semantics=preset)
                report.add(seed=seed, index=index, what=f"{what}: max_pool(semantics={preset!r}) did not raise")
            except ndpool.PoolingError:
                pass
            except Exception as e:
                report.add(seed=seed, index=index, what=f"{what}: max_pool raised {type(e).__name__}: {e}")
    report.cases = n
    print(f"MaxPool output shape seed={seed}: {n} comparisons, {rejected} rejected by both, {quirks} ceil_torch "
          f"I+pb=0 differences (engine quirk), {time.perf_counter() - t0:.1f} s")
    assert report.ok, report.text()


@SEED_PARAMS
def test_adaptive_max_pool_output_shape(seed_name: str) -> None:
    """adaptive_max_pool_output_shape == OpenVINO's; ndpool raises where SEMANTICS.md says (In = 0 with Out > 0,
    Out < 0) although OpenVINO's shape inference accepts those."""
    seed = SEEDS[seed_name]
    rng = np.random.default_rng([seed, 98])
    report = FailureReport("AdaptiveMaxPool output shape")
    for index in range(600):
        r = int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(v) for v in rng.integers(0, 9, r))
        out = tuple(int(v) for v in rng.integers(-1 if rng.random() < 0.1 else 0, 12, r))
        nxc = bool(rng.random() < 0.5)
        what = f"shape={shape} output_size={out} nxc={nxc}"
        must_raise = any(o < 0 for o in out) or any(i == 0 and o > 0 for i, o in zip(shape[2:], out))
        try:
            nd = ndpool.adaptive_max_pool_output_shape(
                (shape[0], *shape[2:], shape[1]) if nxc else shape, out, data_format="NXC" if nxc else "NCX")
            if nxc:
                nd = (nd[0], nd[-1], *nd[1:-1])
        except ndpool.PoolingError as e:
            if not must_raise:
                report.add(seed=seed, index=index, what=f"{what}: ndpool raised {e}")
            continue
        except Exception as e:
            report.add(seed=seed, index=index, what=f"{what}: ndpool raised {type(e).__name__}: {e}")
            continue
        if must_raise:
            report.add(seed=seed, index=index, what=f"{what}: ndpool gives {nd}, expected PoolingError")
            continue
        ov = ov_oracle.adaptive_maxpool_shape(shape, out)
        if tuple(nd) != tuple(ov):
            report.add(seed=seed, index=index, what=f"{what}: OpenVINO gives {ov}, ndpool {nd}")
    report.cases = 600
    assert report.ok, report.text()


def test_ceil_torch_empty_axis_follows_semantics() -> None:
    """Where OpenVINO's ceil_torch keeps a window (I + pads_begin == 0), ndpool follows SEMANTICS.md."""
    attrs: dict[str, Any] = dict(kernel=(1,), strides=(1,), pads_begin=(0,), pads_end=(2,),
                                 rounding_type="ceil_torch")
    # P = 2, dk = 1: ceil gives 2 windows; ceil_torch drops the last as (2 - 1)*1 >= I + pb = 0
    assert ov_oracle.maxpool_shape((1, 1, 0), attrs, version=14) == (1, 1, 2)  # the engine keeps it
    assert ndpool.max_pool_output_shape((1, 1, 0), **attrs, data_format="NCX") == (1, 1, 1)
    attrs["pads_end"] = (1,)
    assert ov_oracle.maxpool_shape((1, 1, 0), attrs, version=14) == (1, 1, 1)
    assert ndpool.max_pool_output_shape((1, 1, 0), **attrs, data_format="NCX") == (1, 1, 0)
    # with a begin pad the engine drops it like SEMANTICS.md: P = 2, 2 windows, (2 - 1)*1 >= 0 + 1 -> 1
    attrs.update(pads_begin=(1,), pads_end=(1,))
    assert ov_oracle.maxpool_shape((1, 1, 0), attrs, version=14) == (1, 1, 1)
    assert ndpool.max_pool_output_shape((1, 1, 0), **attrs, data_format="NCX") == (1, 1, 1)


def test_engine_is_the_one_documented() -> None:
    """The quirks above were learnt on OpenVINO 2026.4; a different engine may need them re-checked."""
    x = np.array([[[1.0, np.nan, -np.inf], [2.0, -np.inf, 5.0]]], dtype=np.float32)
    attrs: dict[str, Any] = dict(kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(1,))
    low = np.finfo(np.float32).min
    v, i = ov_oracle.maxpool8(x, attrs, axis=0)  # NaN never wins; no winner -> lowest and the plane's first
    assert bits(v).tolist() == bits(np.array([[[1.0, low, low], [2.0, 5.0, 5.0]]], np.float32)).tolist()
    assert i.tolist() == [[[0, 0, 0], [3, 5, 5]]]
    nd = ndpool.max_pool(x, **attrs, data_format="NCX", semantics="openvino", return_indices=True)
    assert bits(nd[0]).tolist() == bits(v).tolist() and nd[1].tolist() == i.tolist()
    assert ov_oracle.OV_VERSION.startswith("2026."), ov_oracle.OV_VERSION


def test_index_axis_range_matches_maxpool8_axis() -> None:
    """MaxPool-8 accepts ``axis`` in [-rank, rank) and rejects the rest; ndpool's ``index_axis`` likewise."""
    attrs: dict[str, Any] = dict(kernel=1, strides=1)
    for ndim in (3, 4, 5):
        x = np.arange(2 * 3 * 2 ** (ndim - 2), dtype=np.float32).reshape((2, 3) + (2,) * (ndim - 2))
        for axis in range(-ndim - 2, ndim + 2):
            ov_attrs = {k: (v,) * (ndim - 2) for k, v in dict(attrs, pads_begin=0, pads_end=0).items()}
            try:
                ov_oracle.maxpool_shape(x.shape, ov_attrs, version=8, axis=axis)
                ov_ok = True
            except Exception:
                ov_ok = False
            assert ov_ok == (-ndim <= axis < ndim), (ndim, axis)
            if ov_ok:
                _, ov_i = ov_oracle.maxpool8(x, ov_attrs, axis=axis)
                _, nd_i = ndpool.max_pool(x, **attrs, data_format="NCX", semantics="openvino",
                                          return_indices=True, index_axis=axis)
                assert np.array_equal(nd_i, ov_i), (ndim, axis, nd_i, ov_i)
            else:
                with pytest.raises(ndpool.PoolingError):
                    ndpool.max_pool(x, **attrs, data_format="NCX", semantics="openvino", return_indices=True,
                                    index_axis=axis)
