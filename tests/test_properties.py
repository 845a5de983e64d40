"""Property tests (hypothesis): invariants that hold for every valid call.

Cases are drawn as geometry plus a seed for the data (small pools of values: many ties, NaN, +-inf, signed
zeros), and are made valid by construction (pads_end grows until P >= dk), so nothing is filtered away.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpool
from conftest import (
    ADAPTIVE_PRESETS,
    ALL_DTYPES,
    PRESETS,
    Rejected,
    bits,
    brute_max_pool,
    from_nxc,
    lowest_of,
    out_size,
    random_data,
    resolve_pads,
    to_nxc,
)

SETTINGS = settings(deadline=None, max_examples=100, database=None, derandomize=True)
NCX = {"data_format": "NCX"}
EMPTY_KIND = {"spec": "neg_inf", "torch": "neg_inf", "openvino": "f32_lowest", "onednn": "f32_lowest",
              "onnx": "type_lowest"}


@st.composite
def maxpool_cases(draw, max_batch=2):
    nsp = draw(st.integers(1, 3))
    top = {1: 7, 2: 5, 3: 4}[nsp]
    size = draw(st.lists(st.integers(0, top), min_size=nsp, max_size=nsp))
    kernel = draw(st.lists(st.integers(1, 3), min_size=nsp, max_size=nsp))
    strides = draw(st.lists(st.integers(1, 3), min_size=nsp, max_size=nsp))
    dilations = draw(st.lists(st.integers(1, 2), min_size=nsp, max_size=nsp))
    pb = draw(st.lists(st.integers(0, 3), min_size=nsp, max_size=nsp))
    pe = draw(st.lists(st.integers(0, 3), min_size=nsp, max_size=nsp))
    rounding = draw(st.sampled_from(["floor", "ceil", "ceil_torch"]))
    auto_pad = draw(st.sampled_from(["none", "explicit", "same_upper", "same_lower", "valid"]))
    rpb, rpe = resolve_pads(size, kernel, strides, dilations, pb, pe, auto_pad)
    if any(i + b + e < (k - 1) * d + 1 for i, b, e, k, d in zip(size, rpb, rpe, kernel, dilations)):
        auto_pad = "none"  # make it valid: grow the end pads
        pe = [max(e, (k - 1) * d + 1 - i - b) for i, b, e, k, d in zip(size, pb, pe, kernel, dilations)]
    n = draw(st.integers(0 if max_batch else 1, max(max_batch, 1)))
    c = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    x = random_data(np.random.default_rng(seed), (n, c, *size), dtype)
    attrs = dict(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb, pads_end=pe,
                 rounding_type=rounding, auto_pad=auto_pad)
    return x, attrs


def window_has_taps(x_shape, attrs):
    """Boolean (out spatial shape) array: does the window have an in-range tap? (independent geometry)"""
    size = x_shape[2:]
    pb, pe = resolve_pads(size, attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads_begin"],
                          attrs["pads_end"], attrs["auto_pad"])
    per_axis = []
    for i, k, s, d, b, e in zip(size, attrs["kernel"], attrs["strides"], attrs["dilations"], pb, pe):
        o = out_size(i, k, s, d, b, e, attrs["rounding_type"])
        per_axis.append(np.array([any(0 <= q * s - b + j * d < i for j in range(k)) for q in range(o)], bool))
    grid = np.ones((), bool)
    for a in per_axis:
        grid = np.multiply.outer(grid, a)
    return grid.astype(bool)


def expected_shape(x_shape, attrs):
    size = x_shape[2:]
    pb, pe = resolve_pads(size, attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["pads_begin"],
                          attrs["pads_end"], attrs["auto_pad"])
    return (*x_shape[:2], *[out_size(i, k, s, d, b, e, attrs["rounding_type"]) for i, k, s, d, b, e in
                            zip(size, attrs["kernel"], attrs["strides"], attrs["dilations"], pb, pe)])


# ---------------------------------------------------------------------------------------------- properties


@SETTINGS
@given(case=maxpool_cases(), semantics=st.sampled_from(PRESETS))
def test_indices_point_at_values(case, semantics):
    x, attrs = case
    v, i = ndpool.max_pool(x, return_indices=True, semantics=semantics, index_axis=2, **attrs, **NCX)
    n, c = x.shape[:2]
    flat_x = x.reshape(n, c, math.prod(x.shape[2:]))
    has = np.broadcast_to(window_has_taps(x.shape, attrs), v.shape)
    lowest = np.array([lowest_of(x.dtype, EMPTY_KIND[semantics])], dtype=x.dtype)
    if flat_x.shape[2] == 0:
        assert not has.any()
    else:
        safe = np.where(i < 0, 0, i).reshape(n, c, math.prod(i.shape[2:]))
        picked = np.take_along_axis(flat_x, safe, axis=2).reshape(v.shape)
        same = bits(picked) == bits(v)
        if semantics in ("openvino", "onednn"):
            # a window with no tap above `lowest` (NaN, -inf, lowest itself) gives lowest at the plane's start
            same |= (bits(v) == bits(lowest)[0]) & (i == 0)
        assert same[has].all()
        assert ((i >= 0) & (i < flat_x.shape[2]))[has].all()
    # empty windows: the preset's value and index
    assert (bits(v)[~has] == bits(lowest)[0]).all()
    plane_strides = [math.prod(x.shape[2 + a + 1:]) for a in range(x.ndim - 2)]
    empty_index = {"spec": -1, "torch": -1, "openvino": 0, "onednn": 0, "onnx": -sum(plane_strides)}[semantics]
    assert (i[~has] == empty_index).all()


@SETTINGS
@given(case=maxpool_cases(), semantics=st.sampled_from(PRESETS), data=st.data())
def test_nxc_equals_transposed_ncx(case, semantics, data):
    x, attrs = case
    index_axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    v, i = ndpool.max_pool(x, return_indices=True, semantics=semantics, index_axis=index_axis, **attrs, **NCX)
    vn, i_n = ndpool.max_pool(to_nxc(x), return_indices=True, semantics=semantics, index_axis=index_axis, **attrs)
    assert bits(from_nxc(vn)).tolist() == bits(v).tolist()
    assert from_nxc(i_n).tolist() == i.tolist()


def _layout_variants(draw, x):
    """Views equal to ``x`` with other strides: transposed storage, reversed, stepped slices, broadcast."""
    kind = draw(st.sampled_from(["transposed", "reversed", "stepped", "broadcast", "fortran"]))
    if kind == "transposed":
        perm = draw(st.permutations(range(x.ndim)))
        inv = np.argsort(perm)
        return np.ascontiguousarray(x.transpose(perm)).transpose(inv)
    if kind == "reversed":
        axes = tuple(a for a in range(x.ndim) if draw(st.booleans()))
        return np.ascontiguousarray(np.flip(x, axes)).__getitem__(
            tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(x.ndim)))
    if kind == "stepped":
        steps = [draw(st.integers(1, 3)) for _ in range(x.ndim)]
        big = np.zeros([max(s * n, 1) for s, n in zip(steps, x.shape)], x.dtype)
        view = big[tuple(slice(0, s * n, s) for s, n in zip(steps, x.shape))]
        view[...] = x
        return view
    if kind == "fortran":
        return np.asfortranarray(x)
    # broadcast: keep one slice along an axis and broadcast it back (the data changes: all slices equal)
    axis = draw(st.integers(0, x.ndim - 1))
    one = np.take(x, [0], axis=axis) if x.shape[axis] else x
    return np.broadcast_to(one, x.shape)


@SETTINGS
@given(case=maxpool_cases(), semantics=st.sampled_from(PRESETS), data=st.data())
def test_any_input_layout_equals_contiguous_copy(case, semantics, data):
    x, attrs = case
    view = _layout_variants(data.draw, x)
    fmt = data.draw(st.sampled_from(["NCX", "NXC"]))
    if fmt == "NXC":
        view = np.moveaxis(view, 1, -1)  # still a view: channels last, strided
    contiguous = np.ascontiguousarray(view)
    assert bits(contiguous).tolist() == bits(np.array(view)).tolist()
    kw = dict(return_indices=True, semantics=semantics, data_format=fmt, **attrs)
    v, i = ndpool.max_pool(view, **kw)
    ev, ei = ndpool.max_pool(contiguous, **kw)
    assert bits(v).tolist() == bits(ev).tolist()
    assert i.tolist() == ei.tolist()
    out = data.draw(st.lists(st.integers(0, 5), min_size=x.ndim - 2, max_size=x.ndim - 2))
    out = [o if s else 0 for o, s in zip(out, x.shape[2:])]
    for sem in ADAPTIVE_PRESETS:
        va, ia = ndpool.adaptive_max_pool(view, out, semantics=sem, data_format=fmt)
        ea, eia = ndpool.adaptive_max_pool(contiguous, out, semantics=sem, data_format=fmt)
        assert bits(va).tolist() == bits(ea).tolist() and ia.tolist() == eia.tolist()


@SETTINGS
@given(size=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data(),
       auto_pad=st.sampled_from(["same_upper", "same_lower", "SAME_UPPER"]))
def test_same_with_stride_1_keeps_shape(size, data, auto_pad):
    nsp = len(size)
    kernel = data.draw(st.lists(st.integers(1, 5), min_size=nsp, max_size=nsp))
    dilations = data.draw(st.lists(st.integers(1, 3), min_size=nsp, max_size=nsp))
    rounding = data.draw(st.sampled_from(["floor", "ceil", "ceil_torch"]))
    shape = (2, *size, 3)
    got = ndpool.max_pool_output_shape(shape, kernel=kernel, strides=1, dilations=dilations, auto_pad=auto_pad,
                                       rounding_type=rounding, pads_begin=7, pads_end=0)
    assert got == shape
    x = np.zeros(shape, np.float32)
    assert ndpool.max_pool(x, kernel=kernel, strides=1, dilations=dilations, auto_pad=auto_pad).shape == shape
    # stride s: ceil(I / s) per axis
    strides = data.draw(st.lists(st.integers(1, 4), min_size=nsp, max_size=nsp))
    got = ndpool.max_pool_output_shape(shape, kernel=kernel, strides=strides, dilations=dilations,
                                       auto_pad=auto_pad)
    assert got == (2, *[-(-i // s) for i, s in zip(size, strides)], 3)


@SETTINGS
@given(case=maxpool_cases(), semantics=st.sampled_from(PRESETS))
def test_every_value_is_an_input_element_or_the_empty_value(case, semantics):
    x, attrs = case
    v = ndpool.max_pool(x, semantics=semantics, **attrs, **NCX)
    assert v.dtype == x.dtype
    empty = bits(np.array([lowest_of(x.dtype, EMPTY_KIND[semantics])], x.dtype))
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):  # from its own plane
            allowed = np.concatenate([bits(x[n, c]).ravel(), empty])
            assert np.isin(bits(v[n, c]).ravel(), allowed).all()


@SETTINGS
@given(case=maxpool_cases(), semantics=st.sampled_from(PRESETS), data=st.data())
def test_output_shape_matches_helper_and_independent_geometry(case, semantics, data):
    x, attrs = case
    fmt = data.draw(st.sampled_from(["NCX", "NXC"]))
    xx = x if fmt == "NCX" else to_nxc(x)
    v, i = ndpool.max_pool(xx, return_indices=True, semantics=semantics, data_format=fmt, **attrs)
    helper = ndpool.max_pool_output_shape(xx.shape, data_format=fmt, return_indices=True, semantics=semantics,
                                          **attrs)
    expected = expected_shape(x.shape, attrs)
    if fmt == "NXC":
        expected = (expected[0], *expected[2:], expected[1])
    assert v.shape == i.shape == helper == expected


@SETTINGS
@given(case=maxpool_cases(max_batch=1), semantics=st.sampled_from(PRESETS))
def test_matches_brute_force(case, semantics):
    x, attrs = case
    try:
        ev, ei = brute_max_pool(x, semantics=semantics, **attrs)
    except Rejected:  # pragma: no cover - cases are valid by construction
        pytest.fail("generated an invalid case")
    v, i = ndpool.max_pool(x, return_indices=True, semantics=semantics, **attrs, **NCX)
    assert bits(v).tolist() == bits(ev).tolist()
    assert i.tolist() == ei.tolist()


# ---------------------------------------------------------------------------------------------- adaptive


@st.composite
def adaptive_cases(draw):
    nsp = draw(st.integers(1, 3))
    size = draw(st.lists(st.integers(0, 6 if nsp < 3 else 4), min_size=nsp, max_size=nsp))
    out = [draw(st.integers(0, 8 if nsp < 3 else 4)) if s else 0 for s in size]
    dtype = draw(st.sampled_from(ALL_DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    x = random_data(np.random.default_rng(seed), (draw(st.integers(0, 2)), draw(st.integers(1, 3)), *size), dtype)
    as_array = draw(st.sampled_from([None, np.int32, np.int64]))
    return x, (np.array(out, as_array) if as_array else out)


@SETTINGS
@given(case=adaptive_cases(), semantics=st.sampled_from(ADAPTIVE_PRESETS), fmt=st.sampled_from(["NCX", "NXC"]))
def test_adaptive_invariants(case, semantics, fmt):
    x, out = case
    xx = x if fmt == "NCX" else to_nxc(x)
    v, i = ndpool.adaptive_max_pool(xx, out, semantics=semantics, data_format=fmt)
    helper = ndpool.adaptive_max_pool_output_shape(xx.shape, out, data_format=fmt)
    expected = (*x.shape[:2], *[int(o) for o in out])
    if fmt == "NXC":
        v, i = from_nxc(v), from_nxc(i)
        expected_nxc = (expected[0], *expected[2:], expected[1])
        assert helper == expected_nxc
    else:
        assert helper == expected
    assert v.shape == i.shape == expected and v.dtype == x.dtype and i.dtype == np.int64
    if v.size:
        n, c = x.shape[:2]
        flat = x.reshape(n, c, math.prod(x.shape[2:]))
        assert ((i >= 0) & (i < flat.shape[2])).all()
        picked = np.take_along_axis(flat, i.reshape(n, c, math.prod(i.shape[2:])), axis=2).reshape(v.shape)
        assert bits(picked).tolist() == bits(v).tolist()
