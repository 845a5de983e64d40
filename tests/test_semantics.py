"""One or more hand-checked cases for each rule of docs/SEMANTICS.md, plus a cross-check against the
independent pure-Python brute force in conftest.py on random small cases.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

import ndpool
from conftest import (
    ADAPTIVE_PRESETS,
    ALL_DTYPES,
    BF16,
    FLOAT_DTYPES,
    INT_DTYPES,
    PRESETS,
    Rejected,
    bits,
    brute_adaptive,
    brute_max_pool,
    from_nxc,
    random_data,
    to_nxc,
)

NCX = {"data_format": "NCX"}
INF = math.inf
NAN = math.nan


def f32(a):
    return np.array(a, dtype=np.float32)


def row(values, dtype=np.float32):
    """A (1, 1, W) NCX tensor."""
    return np.array(values, dtype=dtype).reshape(1, 1, -1)


def pool1d(values, dtype=np.float32, **kw):
    kw.setdefault("strides", 1)
    v, i = ndpool.max_pool(row(values, dtype), return_indices=True, **NCX, **kw)
    return v[0, 0], i[0, 0]


# ---------------------------------------------------------------------------------------------- pads, dilation


def test_pads_are_skipped_not_zero():
    # all-negative input: zero padding would give 0 at the borders
    v, i = pool1d([-5, -3, -4], kernel=3, pads_begin=1, pads_end=1)
    np.testing.assert_array_equal(v, f32([-3, -3, -3]))
    np.testing.assert_array_equal(i, [1, 1, 1])


def test_pads_skipped_2d_all_negative():
    x = -1 - np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)  # [[-1,-2],[-3,-4]]
    v, i = ndpool.max_pool(x, kernel=2, strides=1, pads_begin=1, pads_end=1, return_indices=True, **NCX)
    # windows: rows {o-1, o}, cols {o-1, o}
    np.testing.assert_array_equal(v[0, 0], f32([[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]]))
    np.testing.assert_array_equal(i[0, 0], [[0, 0, 1], [0, 0, 1], [2, 2, 3]])


def test_dilation_tap_step_is_d():
    # k=2, d=3: taps at o and o+3 (002's kh*(DH+1) would be o and o+4)
    x = [1, 0, 0, 5, 9, 0, 0]
    v, i = pool1d(x, kernel=2, dilations=3)
    assert v.shape == (4,)  # (7 - 4)//1 + 1
    np.testing.assert_array_equal(v, f32([5, 9, 0, 5]))
    np.testing.assert_array_equal(i, [3, 4, 2, 3])  # o=2: taps 2 (0) and 5 (0): tie -> first


def test_dilation_one_is_none():
    v, _ = pool1d([1, 5, 2], kernel=2, dilations=1)
    np.testing.assert_array_equal(v, f32([5, 5]))


# ---------------------------------------------------------------------------------------------- rounding


@pytest.mark.parametrize("rounding, expected", [("floor", 2), ("ceil", 3), ("ceil_torch", 2)])
def test_rounding_last_window_wholly_in_padding(rounding, expected):
    # I=4, k=2, s=3, pe=2: P=6, (P-dk)/s = 4/3 -> floor 2, ceil 3; window 2 starts at 6 >= I+pb=4:
    # ceil keeps it (empty), ceil_torch drops it.
    v, i = pool1d([1, 2, 3, 4], kernel=2, strides=3, pads_end=2, rounding_type=rounding)
    assert v.shape == (expected,)
    np.testing.assert_array_equal(v[:2], f32([2, 4]))
    np.testing.assert_array_equal(i[:2], [1, 3])
    if rounding == "ceil":
        assert v[2] == -np.inf and i[2] == -1
    assert ndpool.max_pool_output_shape((1, 1, 4), kernel=2, strides=3, pads_end=2, rounding_type=rounding,
                                        **NCX) == (1, 1, expected)


@pytest.mark.parametrize("rounding, expected", [("floor", [2, 4]), ("ceil", [2, 4, 5]), ("ceil_torch", [2, 4, 5])])
def test_rounding_partial_last_window(rounding, expected):
    # I=5, k=2, s=2: (5-2)/2 = 1.5: floor 2, ceil 3; window 2 starts at 4 < 5: ceil_torch keeps it
    v, i = pool1d([1, 2, 3, 4, 5], kernel=2, strides=2, rounding_type=rounding)
    np.testing.assert_array_equal(v, f32(expected))
    np.testing.assert_array_equal(i, [1, 3, 4][: len(expected)])


def test_floor_window_wholly_in_padding_is_kept():
    # I=4, k=1, s=2, pe=1: P=5, floor (5-1)//2+1 = 3; window 2 reads position 4 = pad: empty
    v, i = pool1d([1, 2, 3, 4], kernel=1, strides=2, pads_end=1)
    np.testing.assert_array_equal(v, f32([1, 3, -np.inf]))
    np.testing.assert_array_equal(i, [0, 2, -1])
    v, _ = pool1d([1, 2, 3, 4], kernel=1, strides=2, pads_end=1, rounding_type="ceil_torch")
    np.testing.assert_array_equal(v, f32([1, 3]))  # (3-1)*2 = 4 >= I + pb = 4: dropped


def test_ceil_applies_after_auto_pad():
    # same_upper, I=5, k=2, s=2: total = (3-1)*2+2-5 = 1 -> pb=0, pe=1, P=6, (6-2)/2 = 2 exactly: 3 either way
    assert ndpool.max_pool_output_shape((1, 1, 5), kernel=2, strides=2, auto_pad="same_upper",
                                        rounding_type="ceil", **NCX) == (1, 1, 3)
    # valid, I=5, k=2, s=2: (5-2)/2 = 1.5 -> ceil 3 (partial window at 4), floor 2
    assert ndpool.max_pool_output_shape((1, 1, 5), kernel=2, strides=2, auto_pad="valid",
                                        rounding_type="ceil", **NCX) == (1, 1, 3)
    assert ndpool.max_pool_output_shape((1, 1, 5), kernel=2, strides=2, auto_pad="valid", **NCX) == (1, 1, 2)


# ---------------------------------------------------------------------------------------------- auto_pad


def test_same_upper_and_lower_odd_total():
    # I=5, k=2, s=1: total = 4 + 2 - 5 = 1; upper: pb=0, pe=1; lower: pb=1, pe=0
    x = [1, 5, 2, 4, 3]
    v, i = pool1d(x, kernel=2, auto_pad="same_upper")
    np.testing.assert_array_equal(v, f32([5, 5, 4, 4, 3]))
    np.testing.assert_array_equal(i, [1, 1, 3, 3, 4])
    v, i = pool1d(x, kernel=2, auto_pad="same_lower")
    np.testing.assert_array_equal(v, f32([1, 5, 5, 4, 4]))
    np.testing.assert_array_equal(i, [0, 1, 1, 3, 3])


def test_same_total_counts_dilation():
    # I=6, k=2, d=3: dk=4, total = 5 + 4 - 6 = 3 (onnxruntime's dilation-blind total would be 1)
    x = [3, 1, 4, 1, 5, 9]
    # same_upper: pb=1, pe=2, taps o-1 and o+2
    v, i = pool1d(x, kernel=2, dilations=3, auto_pad="same_upper")
    np.testing.assert_array_equal(v, f32([4, 3, 5, 9, 1, 5]))
    np.testing.assert_array_equal(i, [2, 0, 4, 5, 3, 4])
    # same_lower: pb=2, pe=1, taps o-2 and o+1
    v, i = pool1d(x, kernel=2, dilations=3, auto_pad="same_lower")
    np.testing.assert_array_equal(v, f32([1, 4, 3, 5, 9, 1]))
    np.testing.assert_array_equal(i, [1, 2, 0, 4, 5, 3])


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower"])
def test_same_stride_1_keeps_shape_stride_2_does_not(auto_pad):
    for size in range(1, 9):
        for k in (1, 2, 3):
            for d in (1, 2):
                shape = ndpool.max_pool_output_shape((1, 1, size), kernel=k, strides=1, dilations=d,
                                                     auto_pad=auto_pad, **NCX)
                assert shape == (1, 1, size)
    # stride 2: ceil(I/s), not I. I=5, k=3: total = 2*2+3-5 = 2, out = (7-3)//2+1 = 3
    assert ndpool.max_pool_output_shape((1, 1, 5), kernel=3, strides=2, auto_pad=auto_pad, **NCX) == (1, 1, 3)
    assert ndpool.max_pool_output_shape((1, 7, 6, 1), kernel=3, strides=(2, 3), auto_pad=auto_pad) == (1, 4, 2, 1)


def test_same_total_clamped_at_zero():
    # I=7, k=1, s=3: (3-1)*3 + 1 - 7 = 0; I=8, k=1, s=4: (2-1)*4 + 1 - 8 = -3 -> 0 (no negative pads)
    v, i = pool1d(list(range(8)), kernel=1, strides=4, auto_pad="same_lower")
    np.testing.assert_array_equal(v, f32([0, 4]))


def test_auto_pad_ignores_given_pads():
    x = [1, 5, 2, 4, 3]
    base = pool1d(x, kernel=2, auto_pad="same_upper")
    given = pool1d(x, kernel=2, auto_pad="same_upper", pads_begin=3, pads_end=4)
    np.testing.assert_array_equal(base[1], given[1])
    v, _ = pool1d(x, kernel=2, strides=2, auto_pad="valid", pads_begin=3, pads_end=3)
    np.testing.assert_array_equal(v, f32([5, 4]))  # valid: pads 0, floor (5-2)//2+1 = 2


@pytest.mark.parametrize("spelling", ["explicit", "EXPLICIT", "None", " none "])
def test_explicit_is_none(spelling):
    a = pool1d([1, 5, 2, 4, 3], kernel=3, strides=2, pads_begin=1, pads_end=1, auto_pad=spelling)
    np.testing.assert_array_equal(a[0], f32([5, 5, 4]))
    np.testing.assert_array_equal(a[1], [1, 1, 3])


def test_strings_are_case_insensitive():
    x = row([1, 5, 2, 4, 3])
    ref = ndpool.max_pool(x, kernel=2, strides=2, rounding_type="ceil", auto_pad="valid", data_format="NCX",
                          return_indices=True, index_element_type="i32", semantics="torch")
    got = ndpool.max_pool(x, kernel=2, strides=2, rounding_type="CEIL", auto_pad="Valid", data_format="ncx",
                          return_indices=True, index_element_type="I32", semantics="TORCH")
    np.testing.assert_array_equal(ref[0], got[0])
    np.testing.assert_array_equal(ref[1], got[1])
    assert got[1].dtype == np.int32 and got[0].shape == (1, 1, 3)
    assert ndpool.max_pool_output_shape((1, 1, 5), kernel=2, strides=2, rounding_type="Ceil_Torch",
                                        auto_pad="SAME_UPPER", data_format="NcX") == (1, 1, 3)
    v, i = ndpool.adaptive_max_pool(x, [2], index_element_type="I32", semantics="OpenVINO", data_format="ncx")
    assert i.dtype == np.int32


# ---------------------------------------------------------------------------------------------- P < dk, pads, sizes


def test_p_less_than_dk_is_an_error_at_the_boundary():
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        ndpool.max_pool(row([1, 2]), kernel=3, strides=1, **NCX)
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        ndpool.max_pool(row([1, 2, 3, 4]), kernel=3, strides=1, dilations=2, **NCX)  # dk = 5 > 4
    # P == dk is fine
    v, _ = pool1d([1, 2], kernel=3, pads_begin=1)
    np.testing.assert_array_equal(v, f32([2]))
    v, _ = pool1d([1, 2, 3, 4, 5], kernel=3, dilations=2)
    np.testing.assert_array_equal(v, f32([5]))


def test_p_less_than_dk_under_every_preset_and_rounding():
    for semantics in PRESETS:
        for rounding in ("floor", "ceil", "ceil_torch"):
            with pytest.raises(ndpool.PoolingError):
                ndpool.max_pool(row([1, 2]), kernel=3, strides=2, rounding_type=rounding, semantics=semantics,
                                **NCX)


def test_pads_larger_than_kernel_allowed():
    # k=1, pads 2/2 on I=2: P=6, out 6; windows 0, 1, 4, 5 are empty
    v, i = pool1d([7, 8], kernel=1, pads_begin=2, pads_end=2)
    np.testing.assert_array_equal(v, f32([-INF, -INF, 7, 8, -INF, -INF]))
    np.testing.assert_array_equal(i, [-1, -1, 0, 1, -1, -1])


def test_spatial_size_zero():
    x = np.zeros((1, 1, 0), np.float32)
    with pytest.raises(ndpool.PoolingError):
        ndpool.max_pool(x, kernel=1, strides=1, **NCX)  # P = 0 < dk = 1
    v, i = ndpool.max_pool(x, kernel=2, strides=1, pads_begin=1, pads_end=2, return_indices=True, **NCX)
    # P = 3, out = 2, every window empty
    np.testing.assert_array_equal(v, f32([[[-INF, -INF]]]))
    np.testing.assert_array_equal(i, [[[-1, -1]]])
    x2 = np.zeros((2, 3, 0, 4), np.int8)
    v, i = ndpool.max_pool(x2, kernel=1, strides=1, pads_end=(1, 0), return_indices=True, **NCX)
    assert v.shape == (2, 3, 1, 4) and v.dtype == np.int8
    assert (v == -128).all() and (i == -1).all()


@pytest.mark.parametrize("shape, out", [((0, 3, 4, 4), (0, 3, 2, 2)), ((2, 0, 4, 4), (2, 0, 2, 2)),
                                        ((0, 0, 5), (0, 0, 2))])
@pytest.mark.parametrize("semantics", PRESETS)
def test_empty_batch_or_channels(shape, out, semantics):
    x = np.zeros(shape, np.float32)
    v, i = ndpool.max_pool(x, kernel=2, strides=2, return_indices=True, semantics=semantics, **NCX)
    assert v.shape == i.shape == out and v.dtype == np.float32 and i.dtype == np.int64
    vn, i_n = ndpool.max_pool(to_nxc(x), kernel=2, strides=2, return_indices=True, semantics=semantics)
    assert vn.shape == i_n.shape == to_nxc(np.zeros(out)).shape


def test_adaptive_empty_batch():
    v, i = ndpool.adaptive_max_pool(np.zeros((0, 2, 4), np.float32), [3])
    assert v.shape == i.shape == (0, 2, 3)


# ---------------------------------------------------------------------------------------------- ties, zeros


def test_ties_first_in_row_major_window_order():
    v, i = pool1d([1, 3, 3, 2], kernel=4)
    assert i[0] == 1
    # (0,1) and (1,0) tie: row-major first is (0,1) -> flat 1 (a column-first pass would say 2)
    x = f32([[[[0, 5], [5, 0]]]])
    for semantics in PRESETS:
        _, i = ndpool.max_pool(x, kernel=2, strides=1, return_indices=True, semantics=semantics, index_axis=2, **NCX)
        assert i[0, 0, 0, 0] == 1, semantics
    x3 = np.zeros((1, 1, 2, 2, 2), np.float32)
    x3[0, 0, 1, 0, 0] = x3[0, 0, 0, 1, 1] = x3[0, 0, 1, 1, 0] = 4
    _, i = ndpool.max_pool(x3, kernel=2, strides=1, return_indices=True, **NCX)
    assert i.ravel().tolist() == [3]  # (0,1,1) = 3 precedes (1,0,0) = 4 and (1,1,0) = 6


@pytest.mark.parametrize("semantics", PRESETS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_signed_zero_first_ones_sign(semantics, dtype):
    for first, second in ((-0.0, 0.0), (0.0, -0.0)):
        x = row([first, second, -1.0], dtype)
        v, i = ndpool.max_pool(x, kernel=3, strides=1, return_indices=True, semantics=semantics, index_axis=2, **NCX)
        assert bits(v).ravel().tolist() == bits(np.array([first], dtype)).tolist()
        assert i.ravel().tolist() == [0]
        # the same in 2D: first in row-major order, not column-first
        x2 = np.array([[first, -1.0], [second, -1.0]], dtype).reshape(1, 1, 2, 2)
        x2t = np.array([[-1.0, second], [first, -1.0]], dtype).reshape(1, 1, 2, 2)  # (0,1) precedes (1,0)
        v2 = ndpool.max_pool(x2, kernel=2, strides=1, semantics=semantics, **NCX)
        v2t, i2t = ndpool.max_pool(x2t, kernel=2, strides=1, semantics=semantics, return_indices=True,
                                   index_axis=2, **NCX)
        assert bits(v2).ravel().tolist() == bits(np.array([first], dtype)).tolist()
        assert bits(v2t).ravel().tolist() == bits(np.array([second], dtype)).tolist()
        assert i2t.ravel().tolist() == [1]


@pytest.mark.parametrize("semantics", ADAPTIVE_PRESETS)
def test_signed_zero_adaptive(semantics):
    for first, second in ((-0.0, 0.0), (0.0, -0.0)):
        v, i = ndpool.adaptive_max_pool(row([first, second]), [1], semantics=semantics)
        assert np.signbit(v.ravel()[0]) == np.signbit(first) and i.ravel()[0] == 0


# ---------------------------------------------------------------------------------------------- NaN


NAN_CASES = [
    # x, {preset: (value, index)}
    ([1, NAN, 5, NAN, 2], {"spec": (NAN, 1), "torch": (NAN, 3), "openvino": (5, 2), "onednn": (5, 2),
                           "onnx": (5, 2)}),
    ([NAN, 1, 5], {"spec": (NAN, 0), "torch": (NAN, 0), "openvino": (5, 2), "onednn": (5, 2), "onnx": (NAN, 0)}),
    ([NAN, 1, NAN], {"spec": (NAN, 0), "torch": (NAN, 2), "openvino": (1, 1), "onednn": (1, 1), "onnx": (NAN, 0)}),
    ([2, 7, NAN], {"spec": (NAN, 2), "torch": (NAN, 2), "openvino": (7, 1), "onednn": (7, 1), "onnx": (7, 1)}),
    ([-INF, NAN, INF], {"spec": (NAN, 1), "torch": (NAN, 1), "openvino": (INF, 2), "onednn": (INF, 2),
                        "onnx": (INF, 2)}),
]


@pytest.mark.parametrize("semantics", PRESETS)
@pytest.mark.parametrize("x, expected", NAN_CASES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nan_rules_per_preset(semantics, x, expected, dtype):
    v, i = ndpool.max_pool(row(x, dtype), kernel=len(x), strides=1, return_indices=True, semantics=semantics, **NCX)
    value, index = expected[semantics]
    got = float(v.ravel()[0])
    if math.isnan(value):
        assert math.isnan(got)
    else:
        assert got == value
    assert i.ravel().tolist() == [index]  # one plane: every scope gives the plane flat index


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nan_spec_keeps_the_first_nans_bits(dtype):
    # two NaNs with different payloads: the output is bit-identical to the first
    if dtype == np.float32:
        a = np.array([0x7FC00001, 0x7FC00002], np.uint32).view(np.float32)
    elif dtype == np.float64:
        a = np.array([0x7FF8000000000001, 0x7FF8000000000002], np.uint64).view(np.float64)
    elif dtype == BF16:
        a = np.array([0x7FC1, 0x7FC2], np.uint16).view(dtype)
    else:
        a = np.array([0x7E01, 0x7E02], np.uint16).view(dtype)
    assert np.isnan(a.astype(np.float32)).all()
    x = np.concatenate([np.array([1], dtype), a, np.array([3], dtype)]).reshape(1, 1, 4)
    v, i = ndpool.max_pool(x, kernel=4, strides=1, return_indices=True, **NCX)
    assert bits(v).ravel().tolist() == bits(a[:1]).tolist() and i.ravel().tolist() == [1]
    v, i = ndpool.max_pool(x, kernel=4, strides=1, return_indices=True, semantics="torch", **NCX)
    assert bits(v).ravel().tolist() == bits(a[1:]).tolist() and i.ravel().tolist() == [2]


def test_all_nan_window_openvino_is_lowest_plane_first():
    x = np.full((1, 2, 3), np.nan, np.float32)
    v, i = ndpool.max_pool(x, kernel=3, strides=1, return_indices=True, semantics="openvino", **NCX)
    assert (v == np.finfo(np.float32).min).all()
    np.testing.assert_array_equal(i, [[[0], [3]]])  # axis 0 scope: plane offsets 0 and 3


@pytest.mark.parametrize("semantics", ["openvino", "onednn"])
def test_openvino_taps_equal_to_lowest_give_plane_first(semantics):
    # every tap <= lowest (-inf, lowest itself): value lowest, index the plane's first element
    x = np.array([[[5, 5, 5], [-np.inf, np.finfo(np.float32).min, -np.inf]]], np.float32)
    v, i = ndpool.max_pool(x, kernel=2, strides=1, pads_begin=1, return_indices=True, semantics=semantics, **NCX)
    np.testing.assert_array_equal(v[0, 1], f32([np.finfo(np.float32).min] * 3))
    np.testing.assert_array_equal(i[0, 1], [3, 3, 3])
    np.testing.assert_array_equal(v[0, 0], f32([5, 5, 5]))
    np.testing.assert_array_equal(i[0, 0], [0, 0, 1])  # pad skipped, then first tap; ties keep the first


def test_spec_torch_all_neg_inf_window_reports_first_in_range_tap():
    x = row([-INF, -INF, -INF])
    for semantics in ("spec", "torch", "onnx"):
        v, i = ndpool.max_pool(x, kernel=2, strides=1, pads_begin=1, return_indices=True, semantics=semantics,
                               index_axis=2, **NCX)
        assert (v == -np.inf).all()
        np.testing.assert_array_equal(i[0, 0], [0, 0, 1])


# ---------------------------------------------------------------------------------------------- empty windows


def _empty_window(dtype, semantics, nsp=1, n=1, c=1, index_axis=None):
    """Output position 0 is an empty window (k=1, pb=1 on every axis); returns its values and indices."""
    shape = (n, c) + (3,) * nsp
    x = np.ones(shape, dtype)
    v, i = ndpool.max_pool(x, kernel=1, strides=1, pads_begin=1, return_indices=True, semantics=semantics,
                           index_axis=index_axis, **NCX)
    return v[(..., *([0] * nsp))], i[(..., *([0] * nsp))]


EMPTY_VALUE_BITS = {
    # dtype: {preset: value} (floats compared by bits)
    np.dtype(np.float32): {"spec": -np.inf, "torch": -np.inf, "openvino": np.finfo(np.float32).min,
                           "onednn": np.finfo(np.float32).min, "onnx": np.finfo(np.float32).min},
    np.dtype(np.float16): {"spec": -np.inf, "torch": -np.inf, "openvino": -np.inf, "onednn": -np.inf,
                           "onnx": -65504.0},
    np.dtype(np.float64): {"spec": -np.inf, "torch": -np.inf, "openvino": -3.4028234663852886e38,
                           "onednn": -3.4028234663852886e38, "onnx": -1.7976931348623157e308},
}


@pytest.mark.parametrize("semantics", PRESETS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_empty_window_value(dtype, semantics):
    v, _ = _empty_window(dtype, semantics)
    got = bits(v.astype(dtype)).ravel()[0]
    if dtype == BF16:
        expected = {"spec": 0xFF80, "torch": 0xFF80, "openvino": 0xFF7F, "onednn": 0xFF7F, "onnx": 0xFF7F}[semantics]
    elif dtype.kind in "iu":
        expected = bits(np.array([np.iinfo(dtype).min], dtype))[0]  # i8 -128, u8 0, i32/i64 min (not i32's)
    else:
        expected = bits(np.array([EMPTY_VALUE_BITS[dtype][semantics]], dtype))[0]
    assert got == expected, (hex(int(got)), hex(int(expected)))
    assert v.dtype == dtype


def test_empty_window_value_spot_checks():
    v, _ = _empty_window(np.dtype(np.float16), "onnx")
    assert float(v.ravel()[0]) == -65504.0
    v, _ = _empty_window(np.dtype(np.int64), "openvino")
    assert int(v.ravel()[0]) == -(2**63)
    v, _ = _empty_window(np.dtype(np.uint8), "openvino")
    assert int(v.ravel()[0]) == 0
    v, _ = _empty_window(BF16, "openvino")
    assert float(v.ravel()[0]) == -3.3895313892515355e38


@pytest.mark.parametrize("nsp, W, onnx_index", [(1, 3, -1), (2, 3, -4), (3, 3, -13)])
def test_empty_window_index_per_preset(nsp, W, onnx_index):
    # 3 per axis: plane = 3**nsp; (n, c) = (1, 1) of N=2, C=2 -> global plane number 3
    plane = 3**nsp
    for semantics, expected in [("spec", -1), ("torch", -1), ("openvino", 3 * plane), ("onednn", 3 * plane),
                                ("onnx", 3 * plane + onnx_index)]:
        _, i = _empty_window(np.dtype(np.float32), semantics, nsp=nsp, n=2, c=2)
        assert int(i[1, 1]) == expected, semantics
        assert int(i[0, 0]) == (-1 if semantics in ("spec", "torch") else expected - 3 * plane)


def test_empty_window_index_with_explicit_axis():
    # openvino with index_axis=1: plane offset counted over C only: c * plane
    _, i = _empty_window(np.dtype(np.float32), "openvino", nsp=2, n=2, c=2, index_axis=1)
    np.testing.assert_array_equal(i, [[0, 9], [0, 9]])
    _, i = _empty_window(np.dtype(np.float32), "openvino", nsp=2, n=2, c=2, index_axis=2)
    np.testing.assert_array_equal(i, [[0, 0], [0, 0]])
    _, i = _empty_window(np.dtype(np.float32), "spec", nsp=2, n=2, c=2, index_axis=0)
    np.testing.assert_array_equal(i, [[-1, -1], [-1, -1]])


# ---------------------------------------------------------------------------------------------- index_axis, NXC


def _global_flat_case():
    # NCX (2, 2, 2, 3) with distinct values; kernel 1: index of output element == its global flat index % modulus
    return np.arange(24, dtype=np.float32).reshape(2, 2, 2, 3)


@pytest.mark.parametrize("axis, modulus", [(0, 24), (1, 12), (2, 6), (3, 3), (-1, 3), (-2, 6), (-3, 12), (-4, 24)])
def test_index_axis_rule(axis, modulus):
    x = _global_flat_case()
    _, i = ndpool.max_pool(x, kernel=1, strides=1, return_indices=True, index_axis=axis, **NCX)
    np.testing.assert_array_equal(i, np.arange(24).reshape(x.shape) % modulus)
    # NXC: indices computed on the logical NCX view, laid out as NXC
    _, i_nxc = ndpool.max_pool(to_nxc(x), kernel=1, strides=1, return_indices=True, index_axis=axis)
    np.testing.assert_array_equal(from_nxc(i_nxc), np.arange(24).reshape(x.shape) % modulus)


def test_index_axis_default_per_preset():
    x = _global_flat_case()
    glob = np.arange(24).reshape(x.shape)
    for semantics, modulus in [("spec", 6), ("torch", 6), ("openvino", 24), ("onednn", 24), ("onnx", 24)]:
        _, i = ndpool.max_pool(x, kernel=1, strides=1, return_indices=True, semantics=semantics, **NCX)
        np.testing.assert_array_equal(i, glob % modulus, err_msg=semantics)


@pytest.mark.parametrize("axis", [4, -5, 100])
def test_index_axis_out_of_range(axis):
    with pytest.raises(ndpool.PoolingError, match="index_axis"):
        ndpool.max_pool(_global_flat_case(), kernel=1, strides=1, return_indices=True, index_axis=axis, **NCX)


def test_nxc_indices_use_logical_ncx_plane():
    # NXC (1, H=2, W=2, C=2): channel 1's max at (h=1, w=0): plane index 2, not a storage offset
    x = np.zeros((1, 2, 2, 2), np.float32)
    x[0, 1, 0, 1] = 9
    x[0, 0, 1, 0] = 9
    _, i = ndpool.max_pool(x, kernel=2, strides=2, return_indices=True)
    assert i.shape == (1, 1, 1, 2)
    assert i[0, 0, 0].tolist() == [1, 2]


# ---------------------------------------------------------------------------------------------- i32 index overflow


def test_i32_overflow_decided_from_geometry():
    big = np.broadcast_to(np.float32(0), (1, 1, 50000, 50000))  # 2.5e9 elements, nothing materialized
    # kernel 2, dilation 49999, stride 50000: one window with taps at the four corners; last index 2.5e9 - 1
    kw = dict(kernel=2, strides=50000, dilations=49999, return_indices=True, **NCX)
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool(big, index_element_type="i32", **kw)
    v, i = ndpool.max_pool(big, index_element_type="i64", **kw)
    assert v.shape == (1, 1, 1, 1) and i.dtype == np.int64 and i.ravel().tolist() == [0]  # all zeros: first tap
    # data decides nothing: column 49999 is the maximum, so the reported index is 49999 (fits i32) but the
    # window could report 2.5e9 - 1: still an error in i32
    cols = np.broadcast_to(np.arange(50000, dtype=np.float32), (1, 1, 50000, 50000))
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool(cols, index_element_type="i32", **kw)
    v, i = ndpool.max_pool(cols, index_element_type="i64", **kw)
    assert v.ravel().tolist() == [49999.0] and i.ravel().tolist() == [49999]  # (0, 49999) before (49999, 49999)


def test_i32_fits_when_only_small_indices_are_reachable():
    big = np.broadcast_to(np.arange(50000, dtype=np.float32), (1, 1, 50000, 50000))
    # kernel 1, stride 50000: reads only (0, 0): largest index 0
    v, i = ndpool.max_pool(big, kernel=1, strides=50000, return_indices=True, index_element_type="i32", **NCX)
    assert i.dtype == np.int32 and i.ravel().tolist() == [0] and v.ravel().tolist() == [0.0]
    # pads make rows up to 42949 of the first column reachable: 42949*50000 = 2147450000 < 2**31 - 1
    v, i = ndpool.max_pool(big[:, :, :42950, :], kernel=1, strides=(42949, 50000), return_indices=True,
                           index_element_type="i32", **NCX)
    assert i.ravel().tolist() == [0, 42949 * 50000]
    with pytest.raises(ndpool.PoolingError, match="i32"):  # row 42950: 2147500000 > 2**31 - 1
        ndpool.max_pool(big[:, :, :42951, :], kernel=1, strides=(42950, 50000), return_indices=True,
                        index_element_type="i32", **NCX)


def test_i32_check_follows_index_scope():
    shape = (46341, 46341, 1)  # N*C = 2147488281 > 2**31 - 1 planes of one element
    kw = dict(kernel=1, strides=1, data_format="NCX", return_indices=True, index_element_type="i32")
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool_output_shape(shape, index_axis=0, **kw)
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool_output_shape(shape, semantics="openvino", **kw)  # default scope counts N and C
    assert ndpool.max_pool_output_shape(shape, **kw) == shape  # spec: per plane, index 0
    assert ndpool.max_pool_output_shape(shape, index_axis=1, **kw) == shape  # c < 46341
    # without indices there is no check
    assert ndpool.max_pool_output_shape(shape, kernel=1, strides=1, data_format="NCX", index_element_type="i32",
                                        index_axis=0) == shape
    # the check happens before computation: a broadcast input with i32 and the global scope
    x = np.broadcast_to(np.float32(1), shape)
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool(x, semantics="onnx", **kw)


def test_i32_check_with_inner_scope_counts_only_scope_axes():
    # index_axis=3 on (1, 1, 50000, 50000): index = w, at most 49999: fits; index_axis=2: up to 2.5e9 - 1
    kw = dict(kernel=1, strides=1, data_format="NCX", return_indices=True, index_element_type="i32")
    shape = (1, 1, 50000, 50000)
    assert ndpool.max_pool_output_shape(shape, index_axis=3, **kw) == shape
    assert ndpool.max_pool_output_shape(shape, index_axis=-1, **kw) == shape
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool_output_shape(shape, index_axis=2, **kw)
    # the largest index is the last *in-range* tap (small outputs only: geometry, no data)
    one = dict(data_format="NCX", return_indices=True, index_element_type="i32")
    # I = 2**31, taps at 0 and 2**31 - 1: fits exactly
    assert ndpool.max_pool_output_shape((1, 1, 2**31), kernel=2, dilations=2**31 - 1, strides=2**32,
                                        **one) == (1, 1, 1)
    # I = 2**31 + 1, taps at 0 and 2**31: does not fit
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.max_pool_output_shape((1, 1, 2**31 + 1), kernel=2, dilations=2**31, strides=2**32, **one)
    # I = 2**31, pe = 1, taps at 0 and 2**31 (a pad): the largest in-range tap is 0: fits
    assert ndpool.max_pool_output_shape((1, 1, 2**31), kernel=2, dilations=2**31, strides=2**32, pads_end=1,
                                        **one) == (1, 1, 1)
    # I = 2**31, pb = 1: taps at -1 (a pad) and 2**31 - 1: fits
    assert ndpool.max_pool_output_shape((1, 1, 2**31), kernel=2, dilations=2**31, strides=2**32, pads_begin=1,
                                        **one) == (1, 1, 1)


def test_adaptive_i32_overflow():
    big = np.broadcast_to(np.float32(0), (1, 1, 50000, 50000))
    with pytest.raises(ndpool.PoolingError, match="i32"):
        ndpool.adaptive_max_pool(big, [1, 1], index_element_type="i32")
    assert ndpool.adaptive_max_pool_output_shape(big.shape, [1, 1]) == (1, 1, 1, 1)


# ---------------------------------------------------------------------------------------------- AdaptiveMaxPool


def test_adaptive_out_greater_than_in_repeats():
    # In=2, Out=5: start = i*2//5 = 0,0,0,1,1; end = ((i+1)*2+4)//5 = 1,1,2,2,2
    v, i = ndpool.adaptive_max_pool(row([7, 9]), [5])
    np.testing.assert_array_equal(v, row([7, 7, 9, 9, 9]))
    np.testing.assert_array_equal(i, [[[0, 0, 1, 1, 1]]])
    v, i = ndpool.adaptive_max_pool(row([9, 7]), [5])
    np.testing.assert_array_equal(v, row([9, 9, 9, 7, 7]))


def test_adaptive_overlapping_bins_2d():
    # H: In=3, Out=2: [0,2), [1,3); W: In=4, Out=3: start 0,1,2; end ceil(4/3)=2, ceil(8/3)=3, 4
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)[..., ::-1].copy()  # rows [3,2,1,0], [7,6,5,4], ...
    v, i = ndpool.adaptive_max_pool(x, np.array([2, 3], np.int64))
    # bin (a, b): rows up to end_h-1 (largest value at the largest row), columns from start_w (leftmost)
    np.testing.assert_array_equal(v[0, 0], f32([[7, 6, 5], [11, 10, 9]]))
    np.testing.assert_array_equal(i[0, 0], [[4, 5, 6], [8, 9, 10]])


def test_adaptive_out_zero_and_in_zero():
    v, i = ndpool.adaptive_max_pool(row([1, 2, 3]), [0])
    assert v.shape == i.shape == (1, 1, 0)
    v, i = ndpool.adaptive_max_pool(np.zeros((1, 1, 0, 4), np.float32), [0, 2])
    assert v.shape == (1, 1, 0, 2)
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(np.zeros((1, 1, 0, 4), np.float32), [1, 2])
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(row([1, 2, 3]), [-1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_adaptive_output_size_int_arrays(dtype):
    v, i = ndpool.adaptive_max_pool(row([1, 3, 2, 5, 4]), np.array([2], dtype))
    # In=5, Out=2: [0,3), [2,5)
    np.testing.assert_array_equal(v, row([3, 5]))
    np.testing.assert_array_equal(i, [[[1, 3]]])


@pytest.mark.parametrize("x, expected", [
    ([NAN, 1, 5], {"spec": (NAN, 0), "torch": (NAN, 0), "openvino": (NAN, 0)}),
    ([1, NAN, 5], {"spec": (NAN, 1), "torch": (NAN, 1), "openvino": (5, 2)}),
    ([1, NAN, 5, NAN], {"spec": (NAN, 1), "torch": (NAN, 3), "openvino": (5, 2)}),
    ([NAN, NAN, 5], {"spec": (NAN, 0), "torch": (NAN, 1), "openvino": (NAN, 0)}),
])
@pytest.mark.parametrize("semantics", ADAPTIVE_PRESETS)
def test_adaptive_nan_presets(x, expected, semantics):
    v, i = ndpool.adaptive_max_pool(row(x), [1], semantics=semantics)
    value, index = expected[semantics]
    assert (math.isnan(v.ravel()[0]) if math.isnan(value) else v.ravel()[0] == value)
    assert i.ravel().tolist() == [index]


def test_adaptive_nxc_extension():
    x = np.random.default_rng(3).standard_normal((2, 3, 5, 4)).astype(np.float32)
    v, i = ndpool.adaptive_max_pool(x, [2, 3])
    vn, i_n = ndpool.adaptive_max_pool(to_nxc(x), [2, 3], data_format="NXC")
    np.testing.assert_array_equal(from_nxc(vn), v)
    np.testing.assert_array_equal(from_nxc(i_n), i)
    assert i.max() < 20


# ---------------------------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_every_dtype_matches_brute_force_and_is_bit_identical(dtype):
    rng = np.random.default_rng(7)
    x = random_data(rng, (2, 3, 5, 4), dtype)
    for semantics in PRESETS:
        v, i = ndpool.max_pool(x, kernel=(2, 3), strides=(2, 1), pads_begin=(1, 0), pads_end=(1, 2),
                               rounding_type="ceil", return_indices=True, semantics=semantics, **NCX)
        ev, ei = brute_max_pool(x, (2, 3), (2, 1), (1, 0), (1, 2), rounding_type="ceil", semantics=semantics)
        assert v.dtype == x.dtype, semantics
        assert bits(v).tolist() == bits(ev).tolist(), semantics
        np.testing.assert_array_equal(i, ei, err_msg=semantics)
    for semantics in ADAPTIVE_PRESETS:
        v, i = ndpool.adaptive_max_pool(x, [3, 3], semantics=semantics)
        ev, ei = brute_adaptive(x, [3, 3], semantics)
        assert v.dtype == x.dtype
        assert bits(v).tolist() == bits(ev).tolist(), semantics
        np.testing.assert_array_equal(i, ei, err_msg=semantics)
        assert np.isin(bits(v), bits(x)).all()


def test_integer_extremes_not_rounded():
    x = row([2**63 - 1, 2**63 - 2, -(2**63)], np.int64)
    v, i = pool1d(x.ravel().tolist(), np.int64, kernel=2)
    assert v.tolist() == [2**63 - 1, 2**63 - 2] and v.dtype == np.int64
    v, _ = pool1d([1.1, 1.0], np.float64, kernel=2)
    assert v.tolist() == [1.1]  # not 1.10000002 (no f32 round trip)
    v, _ = pool1d([16777217, 16777216], np.int32, kernel=2)
    assert v.tolist() == [16777217]


def test_bf16_is_ml_dtypes():
    x = row([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    v, _ = pool1d(x.ravel().tolist(), ml_dtypes.bfloat16, kernel=2)
    assert v.dtype == np.dtype(ml_dtypes.bfloat16)
    assert [float(e) for e in v] == [1.5, 3.25]


# ---------------------------------------------------------------------------------------------- torch input


def test_torch_tensor_input_via_array_protocol():
    t = torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4)
    v, i = ndpool.max_pool(t, kernel=2, strides=2, return_indices=True, **NCX)
    assert type(v) is np.ndarray and type(i) is np.ndarray
    # window (0, 0) over rows 0-1, columns 0-1 -> bottom-right: 5 in plane 0, 17 in plane 1
    np.testing.assert_array_equal(v, f32([[[[5, 7]], [[17, 19]]]]))
    np.testing.assert_array_equal(i, [[[[5, 7]], [[5, 7]]]])
    vt = ndpool.max_pool(t.transpose(2, 3), kernel=2, strides=2, **NCX)  # non-contiguous tensor
    np.testing.assert_array_equal(vt, ndpool.max_pool(t.numpy().transpose(0, 1, 3, 2).copy(), kernel=2,
                                                      strides=2, **NCX))
    va, ia = ndpool.adaptive_max_pool(t, torch.tensor([1, 2]))
    np.testing.assert_array_equal(va, f32([[[[9, 11]], [[21, 23]]]]))


class _DLPackOnly:
    """Only the DLPack protocol (no __array__)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kw):
        return self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.uint8, torch.int64])
def test_dlpack_only_input(dtype):
    t = torch.tensor([[[1, 4, 2, 3]]], dtype=dtype)
    v, i = ndpool.max_pool(_DLPackOnly(t), kernel=2, strides=2, return_indices=True, **NCX)
    assert type(v) is np.ndarray
    assert v.dtype == t.numpy().dtype
    assert v.ravel().tolist() == [4, 3] and i.ravel().tolist() == [1, 3]


# ---------------------------------------------------------------------------------------------- brute-force grid


def _random_case(rng):
    nsp = int(rng.integers(1, 4))
    size = [int(s) for s in rng.integers(0 if nsp == 1 else 1, 6 if nsp < 3 else 4, nsp)]
    kernel = [int(k) for k in rng.integers(1, 4, nsp)]
    strides = [int(k) for k in rng.integers(1, 4, nsp)]
    dilations = [int(k) for k in rng.integers(1, 3, nsp)]
    pb = [int(k) for k in rng.integers(0, 4, nsp)]
    pe = [int(k) for k in rng.integers(0, 4, nsp)]
    rounding = str(rng.choice(["floor", "ceil", "ceil_torch"]))
    auto_pad = str(rng.choice(["none", "explicit", "same_upper", "same_lower", "valid"]))
    dtype = ALL_DTYPES[int(rng.integers(0, len(ALL_DTYPES)))]
    x = random_data(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *size), dtype)
    return x, dict(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb, pads_end=pe,
                   rounding_type=rounding, auto_pad=auto_pad)


@pytest.mark.parametrize("seed", range(12))
def test_max_pool_matches_brute_force_random(seed):
    rng = np.random.default_rng(1000 + seed)
    checked = 0
    for _ in range(25):
        x, attrs = _random_case(rng)
        semantics = str(rng.choice(PRESETS))
        index_axis = None if rng.random() < 0.5 else int(rng.integers(-x.ndim, x.ndim))
        if semantics == "onnx" and index_axis is not None:
            index_axis = None  # onnx's empty-window index with an explicit scope: see the dedicated tests
        try:
            ev, ei = brute_max_pool(x, semantics=semantics, index_axis=index_axis, **attrs)
        except Rejected:
            with pytest.raises(ndpool.PoolingError):
                ndpool.max_pool(x, return_indices=True, semantics=semantics, index_axis=index_axis, **attrs, **NCX)
            continue
        v, i = ndpool.max_pool(x, return_indices=True, semantics=semantics, index_axis=index_axis, **attrs, **NCX)
        msg = f"{x.dtype} {x.shape} {attrs} {semantics} axis={index_axis}\n{x!r}"
        assert v.dtype == x.dtype and i.dtype == np.int64
        assert bits(v).tolist() == bits(ev).tolist(), msg
        np.testing.assert_array_equal(i, ei, err_msg=msg)
        vn, i_n = ndpool.max_pool(to_nxc(x), return_indices=True, semantics=semantics, index_axis=index_axis,
                                  **attrs)
        assert bits(from_nxc(vn)).tolist() == bits(ev).tolist(), msg
        np.testing.assert_array_equal(from_nxc(i_n), ei, err_msg=msg)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("seed", range(6))
def test_adaptive_matches_brute_force_random(seed):
    rng = np.random.default_rng(2000 + seed)
    for _ in range(20):
        nsp = int(rng.integers(1, 4))
        size = [int(s) for s in rng.integers(1, 7 if nsp < 3 else 4, nsp)]
        out = [int(o) for o in rng.integers(0, 8 if nsp < 3 else 4, nsp)]
        dtype = ALL_DTYPES[int(rng.integers(0, len(ALL_DTYPES)))]
        x = random_data(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *size), dtype)
        semantics = str(rng.choice(ADAPTIVE_PRESETS))
        ev, ei = brute_adaptive(x, out, semantics)
        v, i = ndpool.adaptive_max_pool(x, out, semantics=semantics)
        msg = f"{x.dtype} {x.shape} {out} {semantics}\n{x!r}"
        assert bits(v).tolist() == bits(ev).tolist(), msg
        np.testing.assert_array_equal(i, ei, err_msg=msg)
