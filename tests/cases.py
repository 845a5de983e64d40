"""Random case generators shared by the differential tests (OpenVINO, torch, onnxruntime).

Every generator takes a ``numpy.random.Generator`` and keyword constraints, and returns a small frozen
dataclass holding NCX input data and the ndpool keyword attributes. Only cases that ndpool accepts are
generated (``P >= dk`` on every axis after auto_pad, see SEMANTICS.md); ``maxpool_case_is_valid`` tells
which hand-built cases are. Engine-specific limits are expressed with the constraint keywords or with
``accept=``, a predicate that rejects a drawn case (it is redrawn).

The API is stable; other test modules import it::

    from cases import random_maxpool_case, random_adaptive_case, run_seeds, FailureReport

>>> rng = np.random.default_rng(0)
>>> c = random_maxpool_case(rng, ranks=(2,), dtypes=("float32",))
>>> c.x.ndim, sorted(c.attrs)
(4, ['auto_pad', 'dilations', 'kernel', 'pads_begin', 'pads_end', 'rounding_type', 'strides'])
>>> maxpool_case_is_valid(c.x.shape, c.attrs)
True
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "ALL_DTYPES",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "ROUNDING_TYPES",
    "AUTO_PADS",
    "MaxPoolCase",
    "AdaptiveCase",
    "FailureReport",
    "as_dtype",
    "bits",
    "resolve_pads",
    "maxpool_output_spatial",
    "maxpool_case_is_valid",
    "adaptive_bins",
    "random_data",
    "random_maxpool_case",
    "random_adaptive_case",
    "run_seeds",
    "to_nxc",
    "from_nxc",
]

FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
INT_DTYPES = ("int8", "uint8", "int32", "int64")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES
ROUNDING_TYPES = ("floor", "ceil", "ceil_torch")
AUTO_PADS = ("none", "explicit", "same_upper", "same_lower", "valid")


def as_dtype(name: Any) -> np.dtype:
    """``np.dtype`` that also knows ``"bfloat16"`` (ml_dtypes)."""
    if isinstance(name, str) and name in ("bfloat16", "bf16"):
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def bits(a: np.ndarray) -> np.ndarray:
    """The array's bit patterns as unsigned integers (for bit-exact comparison; NaN == NaN by payload)."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def to_nxc(x: np.ndarray) -> np.ndarray:
    """NCX -> NXC (channels last), contiguous."""
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


def from_nxc(x: np.ndarray) -> np.ndarray:
    """NXC -> NCX, contiguous."""
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


# ---------------------------------------------------------------------------------------------------------------
# Independent geometry (written from SEMANTICS.md; deliberately not imported from ndpool)
# ---------------------------------------------------------------------------------------------------------------


def resolve_pads(spatial: Sequence[int], attrs: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Begin and end pads per axis after ``auto_pad``."""
    auto = str(attrs.get("auto_pad", "none")).lower()
    rank = len(spatial)
    if auto in ("none", "explicit"):
        return tuple(attrs["pads_begin"]), tuple(attrs["pads_end"])
    if auto == "valid":
        return (0,) * rank, (0,) * rank
    pb, pe = [], []
    for i, s, k, d in zip(spatial, attrs["strides"], attrs["kernel"], attrs["dilations"], strict=True):
        dk = (k - 1) * d + 1
        total = max(0, (-(-i // s) - 1) * s + dk - i)
        b = total // 2 if auto == "same_upper" else total - total // 2
        pb.append(b)
        pe.append(total - b)
    return tuple(pb), tuple(pe)


def maxpool_output_spatial(spatial: Sequence[int], attrs: dict) -> tuple[int, ...] | None:
    """Output spatial sizes per SEMANTICS.md, or None where ndpool must reject the case (``P < dk``)."""
    pb, pe = resolve_pads(spatial, attrs)
    rounding = attrs.get("rounding_type", "floor")
    out = []
    for i, k, s, d, b, e in zip(spatial, attrs["kernel"], attrs["strides"], attrs["dilations"], pb, pe, strict=True):
        dk = (k - 1) * d + 1
        p = i + b + e
        if p < dk:
            return None
        if rounding == "floor":
            o = (p - dk) // s + 1
        else:
            o = -(-(p - dk) // s) + 1
            if rounding == "ceil_torch" and (o - 1) * s >= i + b:
                o -= 1
        out.append(o)
    return tuple(out)


def maxpool_case_is_valid(shape: Sequence[int], attrs: dict) -> bool:
    """True when ndpool accepts this NCX shape and attribute set (``P >= dk`` on every axis)."""
    return maxpool_output_spatial(tuple(shape)[2:], attrs) is not None


def adaptive_bins(size_in: int, size_out: int) -> list[tuple[int, int]]:
    """AdaptiveMaxPool-8 bins ``[start, end)`` along one axis."""
    return [((i * size_in) // size_out, ((i + 1) * size_in + size_out - 1) // size_out) for i in range(size_out)]


# ---------------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------------


def _array_repro(x: np.ndarray) -> str:
    dt = "ml_dtypes.bfloat16" if x.dtype == as_dtype("bfloat16") else f"np.{x.dtype.name}"
    hexs = np.ascontiguousarray(x).tobytes().hex()
    return f"np.frombuffer(bytes.fromhex({hexs!r}), dtype={dt}).reshape({tuple(x.shape)!r})"


def _readable(x: np.ndarray) -> str:
    shown = x.astype(np.float64) if x.dtype == as_dtype("bfloat16") else x
    with np.printoptions(threshold=200, linewidth=160):
        return repr(shown)


@dataclasses.dataclass(frozen=True, eq=False)
class MaxPoolCase:
    """One MaxPool case: ``x`` in NCX layout and ``attrs`` keyword arguments of ``ndpool.max_pool``.

    ``attrs`` always holds ``kernel``, ``strides``, ``dilations``, ``pads_begin``, ``pads_end`` (tuples, one entry
    per spatial axis; the pads are the given ones, which ``auto_pad`` other than none/explicit ignores),
    ``rounding_type`` and ``auto_pad``.
    """

    x: np.ndarray
    attrs: dict

    @property
    def rank(self) -> int:
        return self.x.ndim - 2

    @property
    def pads(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Pads after auto_pad."""
        return resolve_pads(self.x.shape[2:], self.attrs)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Expected NCX output shape (independent geometry)."""
        sp = maxpool_output_spatial(self.x.shape[2:], self.attrs)
        assert sp is not None
        return tuple(self.x.shape[:2]) + sp

    def describe(self) -> str:
        return f"x{tuple(self.x.shape)} {self.x.dtype.name} attrs={self.attrs!r}"

    def repro(self) -> str:
        """Python source that rebuilds the case bit-exactly."""
        return f"x = {_array_repro(self.x)}\nattrs = {self.attrs!r}\n# x = {_readable(self.x)}"


@dataclasses.dataclass(frozen=True, eq=False)
class AdaptiveCase:
    """One AdaptiveMaxPool-8 case: ``x`` in NCX layout and ``output_size`` (one entry per spatial axis)."""

    x: np.ndarray
    output_size: tuple[int, ...]

    @property
    def rank(self) -> int:
        return self.x.ndim - 2

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[:2]) + tuple(self.output_size)

    def describe(self) -> str:
        return f"x{tuple(self.x.shape)} {self.x.dtype.name} output_size={self.output_size!r}"

    def repro(self) -> str:
        return f"x = {_array_repro(self.x)}\noutput_size = {self.output_size!r}\n# x = {_readable(self.x)}"


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------

_SPECIAL_NAMES = ("nan", "-nan", "-inf", "+inf", "-0", "+0", "lowest", "f32_lowest", "max")


def _special_values(dtype: np.dtype, specials: Sequence[str]) -> np.ndarray:
    """The requested special values that exist in ``dtype``, as an array of that dtype."""
    if dtype.kind == "f" or dtype == as_dtype("bfloat16"):
        fi = ml_dtypes.finfo(dtype)
        table = {
            "nan": np.nan,
            "-nan": -np.nan,
            "-inf": -np.inf,
            "+inf": np.inf,
            "-0": -0.0,
            "+0": 0.0,
            "lowest": fi.min,
            "f32_lowest": np.float32(np.finfo(np.float32).min),
            "max": fi.max,
        }
        names = [name for name in specials if name in table]
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.array([table[name] for name in names], dtype=np.float64).astype(dtype)
        b = bits(arr).copy()
        sign_bit = 1 << (8 * dtype.itemsize - 1)
        for j, name in enumerate(names):
            if name == "-nan":  # casts may drop a NaN's sign: set it explicitly
                b[j] |= b.dtype.type(sign_bit)
            elif name == "nan":
                b[j] &= b.dtype.type(~sign_bit & ((1 << (8 * dtype.itemsize)) - 1))
        return b.view(dtype)
    ii = np.iinfo(dtype)
    vals: list[int] = []
    for name in specials:
        if name in ("lowest", "f32_lowest", "-inf"):
            vals.append(ii.min)
        elif name in ("max", "+inf"):
            vals.append(ii.max)
        elif name in ("-0", "+0"):
            vals.append(0)
    return np.array(vals, dtype=dtype)


def random_data(
    rng: np.random.Generator,
    shape: Sequence[int],
    dtype: Any = "float32",
    *,
    specials: Sequence[str] = _SPECIAL_NAMES,
    special_prob: float | None = None,
    int_range: tuple[int, int] | None = None,
) -> np.ndarray:
    """Random data with frequent ties and, for floats, NaN / -NaN / +-inf / signed zeros / extreme values.

    One of several value modes is drawn per call: small integers (ties everywhere), normal values, a constant
    array, or all-extreme values; special values are then sprinkled with probability ``special_prob`` per
    element (itself random when None). ``int_range`` bounds the small-integer mode (default ``(-3, 3)``,
    ``(0, 6)`` for unsigned types). Pass ``specials=()`` for plain data.
    """
    dt = as_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    size = math.prod(shape)
    is_float = dt.kind == "f" or dt == as_dtype("bfloat16")
    lo, hi = int_range if int_range is not None else ((0, 6) if dt.kind == "u" else (-3, 3))
    mode = rng.choice(["small", "small", "small", "wide", "const", "extreme"])
    if mode == "small":
        base = rng.integers(lo, hi + 1, size=size).astype(np.float64)
    elif mode == "wide":
        if is_float:
            base = rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4)
        else:
            ii = np.iinfo(dt)
            base = rng.integers(ii.min, ii.max, size=size, endpoint=True).astype(np.float64)
    elif mode == "const":
        base = np.full(size, float(rng.integers(lo, hi + 1)))
    else:
        base = np.zeros(size)
    if is_float:
        with np.errstate(over="ignore"):
            x = base.astype(dt)
    else:
        if mode == "wide":
            ii = np.iinfo(dt)
            x = rng.integers(ii.min, ii.max, size=size, endpoint=True, dtype=dt)
        else:
            x = base.astype(dt)
    sv = _special_values(dt, [s for s in specials if s in _SPECIAL_NAMES])
    if mode == "extreme" and sv.size:
        x = sv[rng.integers(0, sv.size, size=size)]
    elif sv.size and size:
        p = special_prob if special_prob is not None else float(rng.choice([0.0, 0.0, 0.05, 0.2, 0.5]))
        mask = rng.random(size) < p
        if mask.any():
            x = x.copy()
            x[mask] = sv[rng.integers(0, sv.size, size=int(mask.sum()))]
    return np.ascontiguousarray(x.reshape(shape))


# ---------------------------------------------------------------------------------------------------------------
# Case generators
# ---------------------------------------------------------------------------------------------------------------


def _small_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An int in [lo, hi] biased towards lo (geometric-ish): small geometry is where the edge cases are."""
    if hi <= lo:
        return lo
    if rng.random() < 0.5:
        return int(rng.integers(lo, min(hi, lo + 2) + 1))
    return int(rng.integers(lo, hi + 1))


def random_maxpool_case(
    rng: np.random.Generator,
    *,
    ranks: Sequence[int] = (1, 2, 3),
    dtypes: Sequence[str] = ALL_DTYPES,
    rounding_types: Sequence[str] = ROUNDING_TYPES,
    allow_auto_pad: bool = True,
    auto_pads: Sequence[str] = AUTO_PADS,
    max_size: int = 9,
    min_size: int = 1,
    max_batch: int = 2,
    max_channels: int = 3,
    min_batch: int = 1,
    min_channels: int = 1,
    max_kernel: int = 4,
    max_stride: int = 3,
    max_dilation: int = 3,
    max_pad: int = 4,
    symmetric_pads: bool = False,
    pads_lt_kernel: bool = False,
    pads_le_half_kernel: bool = False,
    max_elements: int = 4096,
    specials: Sequence[str] = _SPECIAL_NAMES,
    accept: Callable[[MaxPoolCase], bool] | None = None,
    max_tries: int = 1000,
    attrs: dict | None = None,
    shape: Sequence[int] | None = None,
) -> MaxPoolCase:
    """Draw a MaxPool case that ndpool accepts and that satisfies the constraints.

    Parameters
    ----------
    ranks : numbers of spatial axes to draw from (1, 2, 3).
    dtypes : dtype names (``"bfloat16"`` is ml_dtypes').
    rounding_types, auto_pads : values to draw from; ``allow_auto_pad=False`` forces ``"none"``.
    max_size, min_size : spatial extent per axis (``min_size=0`` allows empty spatial axes).
    max_batch, max_channels, min_batch, min_channels : N and C ranges (0 gives empty outputs).
    max_kernel, max_stride, max_dilation : upper bounds (all >= 1).
    max_pad : upper bound of each explicit pad (may exceed the kernel unless restricted).
    symmetric_pads : ``pads_begin == pads_end``.
    pads_lt_kernel : every explicit pad < kernel (onnxruntime's rule).
    pads_le_half_kernel : every explicit pad <= kernel // 2 (torch's rule; applies to resolved pads, so
        same_* cases that break it are redrawn).
    max_elements : bound on the input's element count.
    specials : special values to sprinkle into float data (see ``random_data``); ``()`` for none.
    accept : extra predicate; a case it rejects is redrawn.
    attrs : keep these attributes (a previous case's) and draw only the input; ``ranks`` is then ignored and
        only validity and ``accept`` are checked (not the pad constraints, which same_* pads could break).
    shape : keep this NCX input shape (with ``attrs``: draw only new data).
    """
    ranks = tuple(ranks)
    rounding_types = tuple(rounding_types)
    auto_choices = tuple(a for a in auto_pads) if allow_auto_pad else ("none",)
    if not auto_choices:
        auto_choices = ("none",)
    for _ in range(max_tries):
        rank = len(attrs["kernel"]) if attrs is not None else int(rng.choice(ranks))
        if shape is not None:
            n, c, *spatial = (int(v) for v in shape)
            rank = len(spatial)
        else:
            spatial = [_small_int(rng, min_size, max_size) for _ in range(rank)]
            n = _small_int(rng, min_batch, max_batch)
            c = _small_int(rng, min_channels, max_channels)
            if n * c * math.prod(spatial) > max_elements:
                continue
        if attrs is not None:
            kernel, given = list(attrs["kernel"]), dict(attrs)
            shape_ = (n, c, *spatial)
            if not maxpool_case_is_valid(shape_, given):
                if shape is not None:
                    raise ValueError("random_maxpool_case: the given shape and attrs are invalid together")
                continue
            case = MaxPoolCase(x=random_data(rng, shape_, str(rng.choice(tuple(dtypes))), specials=specials),
                               attrs=given)
            if accept is not None and not accept(case):
                continue
            return case
        kernel = [_small_int(rng, 1, max_kernel) for _ in range(rank)]
        strides = [_small_int(rng, 1, max_stride) for _ in range(rank)]
        dil = [1 if rng.random() < 0.5 else _small_int(rng, 1, max_dilation) for _ in range(rank)]
        limits = []
        for k in kernel:
            lim = max_pad
            if pads_lt_kernel:
                lim = min(lim, k - 1)
            if pads_le_half_kernel:
                lim = min(lim, k // 2)
            limits.append(max(lim, 0))
        pb = [0 if rng.random() < 0.3 else _small_int(rng, 0, lim) for lim in limits]
        pe = list(pb) if symmetric_pads else [0 if rng.random() < 0.3 else _small_int(rng, 0, lim) for lim in limits]
        drawn = {
            "kernel": tuple(kernel),
            "strides": tuple(strides),
            "dilations": tuple(dil),
            "pads_begin": tuple(pb),
            "pads_end": tuple(pe),
            "rounding_type": str(rng.choice(rounding_types)),
            "auto_pad": str(rng.choice(auto_choices)),
        }
        shape_ = (n, c, *spatial)
        if not maxpool_case_is_valid(shape_, drawn):
            continue
        rb, re_ = resolve_pads(spatial, drawn)
        if symmetric_pads and rb != re_:
            continue
        if pads_lt_kernel and any(p >= k for p, k in zip(rb + re_, kernel + kernel)):
            continue
        if pads_le_half_kernel and any(p > k // 2 for p, k in zip(rb + re_, kernel + kernel)):
            continue
        dtype = str(rng.choice(tuple(dtypes)))
        x = random_data(rng, shape_, dtype, specials=specials)
        case = MaxPoolCase(x=x, attrs=drawn)
        if accept is not None and not accept(case):
            continue
        return case
    raise RuntimeError("random_maxpool_case: constraints too tight, no case found")


def random_adaptive_case(
    rng: np.random.Generator,
    *,
    ranks: Sequence[int] = (1, 2, 3),
    dtypes: Sequence[str] = ALL_DTYPES,
    max_size: int = 10,
    min_size: int = 1,
    max_out: int = 6,
    min_out: int = 1,
    allow_out_gt_in: bool = True,
    max_batch: int = 2,
    max_channels: int = 3,
    min_batch: int = 1,
    min_channels: int = 1,
    max_elements: int = 4096,
    specials: Sequence[str] = _SPECIAL_NAMES,
    accept: Callable[[AdaptiveCase], bool] | None = None,
    max_tries: int = 1000,
    output_size: Sequence[int] | None = None,
    shape: Sequence[int] | None = None,
) -> AdaptiveCase:
    """Draw an AdaptiveMaxPool-8 case (``min_out=0`` allows empty outputs; ``In = 0`` only with ``Out = 0``).

    ``output_size`` / ``shape`` keep those and draw the rest (``ranks`` is then ignored).
    """
    for _ in range(max_tries):
        rank = int(rng.choice(tuple(ranks))) if output_size is None else len(output_size)
        if shape is not None:
            n, c, *spatial = (int(v) for v in shape)
            rank = len(spatial)
        else:
            spatial = [_small_int(rng, min_size, max_size) for _ in range(rank)]
            n = _small_int(rng, min_batch, max_batch)
            c = _small_int(rng, min_channels, max_channels)
            if n * c * math.prod(spatial) > max_elements:
                continue
        if output_size is not None:
            if any(i == 0 and o > 0 for i, o in zip(spatial, output_size, strict=True)):
                continue
            case = AdaptiveCase(x=random_data(rng, (n, c, *spatial), str(rng.choice(tuple(dtypes))),
                                              specials=specials), output_size=tuple(int(o) for o in output_size))
            if accept is not None and not accept(case):
                continue
            return case
        out = []
        for i in spatial:
            hi = max_out if allow_out_gt_in else min(max_out, i)
            if hi < min_out:
                break
            o = int(rng.integers(min_out, hi + 1))
            if i == 0 and o > 0:
                break
            out.append(o)
        if len(out) != rank:
            continue
        dtype = str(rng.choice(tuple(dtypes)))
        x = random_data(rng, (n, c, *spatial), dtype, specials=specials)
        case = AdaptiveCase(x=x, output_size=tuple(out))
        if accept is not None and not accept(case):
            continue
        return case
    raise RuntimeError("random_adaptive_case: constraints too tight, no case found")


# ---------------------------------------------------------------------------------------------------------------
# Seeds and failure reports
# ---------------------------------------------------------------------------------------------------------------

FIXED_SEED = 20260430


def run_seeds(env_var: str = "NDPOOL_TEST_SEED") -> tuple[int, int]:
    """``(fixed_seed, varying_seed)``. The varying seed is ``$NDPOOL_TEST_SEED`` when set, else fresh entropy.

    Print it (the test modules do) so that a failure can be replayed with ``NDPOOL_TEST_SEED=<seed>``.
    """
    env = os.environ.get(env_var)
    if env:
        varying = int(env, 0)
    else:
        varying = int.from_bytes(os.urandom(4), "little") ^ (time.time_ns() & 0xFFFFFFFF)
    return FIXED_SEED, varying


class FailureReport:
    """Collects disagreements; keeps the first ``keep`` with a full repro and counts the rest.

    ``report.add(seed=..., index=..., what=..., case=..., details=...)`` then ``assert report.ok, report.text()``.
    """

    def __init__(self, name: str, keep: int = 5) -> None:
        self.name = name
        self.keep = keep
        self.count = 0
        self.cases = 0
        self.entries: list[str] = []

    @property
    def ok(self) -> bool:
        return self.count == 0

    def add(self, *, seed: int, index: int, what: str, case: Any = None, details: str = "") -> None:
        self.count += 1
        if len(self.entries) < self.keep:
            body = f"[{self.name}] seed={seed} case#{index}: {what}"
            if case is not None:
                body += f"\n  {case.describe()}\n" + "\n".join("  " + ln for ln in case.repro().splitlines())
            if details:
                body += "\n" + "\n".join("  " + ln for ln in details.splitlines())
            self.entries.append(body)

    def text(self) -> str:
        head = f"{self.name}: {self.count} disagreement(s) in {self.cases} case(s)"
        return head + "\n" + "\n\n".join(self.entries)


# Shared by the differential test files (test_vs_*.py).


class TallyReport(FailureReport):
    """FailureReport that also tallies every disagreement by kind and dtype, so that a frequent kind cannot hide
    a rarer one behind the first few repros."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.kinds: dict[str, int] = {}

    def add(self, *, seed: int, index: int, what: str, case: Any = None, details: str = "") -> None:
        key = what.split(":")[0][:100] + (f" [{case.x.dtype.name}]" if case is not None else "")
        self.kinds[key] = self.kinds.get(key, 0) + 1
        super().add(seed=seed, index=index, what=what, case=case, details=details)

    def text(self) -> str:
        tally = "\n".join(f"  {n:5d} x {k}" for k, n in sorted(self.kinds.items(), key=lambda kv: -kv[1]))
        return super().text() + "\n\nall disagreements by kind:\n" + tally


def announce(name: str, seed: int) -> None:
    print(f"{name}: seed={seed} (fixed={FIXED_SEED}; replay this run with NDPOOL_TEST_SEED={seed})")


def case_rng(seed: int, index: int) -> np.random.Generator:
    """Each case has its own stream, so (seed, index) replays one case."""
    return np.random.default_rng([seed, index])


def finish(report: FailureReport, seed: int, started: float) -> None:
    print(f"{report.name}: {report.cases} cases, seed={seed}, {time.perf_counter() - started:.1f} s")
    assert report.ok, f"seed={seed} (replay: NDPOOL_TEST_SEED={seed})\n" + report.text()


def strided_view(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``x`` as a non-contiguous view (channels-last memory, reversed rows, or every other element)."""
    kind = int(rng.integers(3))
    if kind == 0:
        return np.moveaxis(to_nxc(x), -1, 1)
    if kind == 1:
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    return big[..., ::2]
