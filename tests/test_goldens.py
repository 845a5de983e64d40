"""Goldens: the spec documents' examples (specs/000-004) and small hand-computed cases.

Every expected value below was worked out by hand from the formulas in the spec text and SEMANTICS.md
(the working is in the comments), never taken from ndpool's own output.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndpool
from conftest import bits


def f32(a):
    return np.array(a, dtype=np.float32)


# ----------------------------------------------------------------------------------------------------------
# 000/001: AdaptiveMaxPool-8, the XML example: input 1x3x32x32, output_size [16, 16] -> 1x3x16x16 (both ports)
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("output_size", [[16, 16], np.array([16, 16], np.int32), np.array([16, 16], np.int64)])
def test_adaptive_spec_example_shapes(output_size):
    assert ndpool.adaptive_max_pool_output_shape((1, 3, 32, 32), output_size) == (1, 3, 16, 16)
    x = np.random.default_rng(0).permutation(3 * 32 * 32).astype(np.float32).reshape(1, 3, 32, 32)
    values, indices = ndpool.adaptive_max_pool(x, output_size)
    assert values.shape == indices.shape == (1, 3, 16, 16)
    assert values.dtype == np.float32 and indices.dtype == np.int64
    # 32 -> 16: bin i is [2i, 2i+2) on both axes (start = 2i, end = ceil((i+1)*32/16) = 2i+2): 2x2 blocks.
    blocks = x.reshape(1, 3, 16, 2, 16, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 3, 16, 16, 4)
    np.testing.assert_array_equal(values, blocks.max(-1))
    arg = blocks.argmax(-1)  # distinct values: unique argmax
    oh, ow = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    expected = (2 * oh + arg // 2) * 32 + (2 * ow + arg % 2)  # per-(n, c) plane flat index
    np.testing.assert_array_equal(indices, expected)
    assert indices.max() < 32 * 32  # SEMANTICS known error 1: not [0, N*C*H*W)


def test_adaptive_spec_example_via_get_op_with_output_type_alias():
    op = ndpool.get_op("openvino:AdaptiveMaxPool-8")
    x = np.zeros((1, 3, 32, 32), np.float32)
    values, indices = op(x, np.array([16, 16], np.int64), output_type="i64")
    assert values.shape == indices.shape == (1, 3, 16, 16)
    assert indices.dtype == np.int64
    _, indices32 = op(x, np.array([16, 16], np.int32), output_type="i32")
    assert indices32.dtype == np.int32
    # all ties: each bin's first element: (2*oh)*32 + 2*ow
    oh, ow = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(indices32[0, 1], 64 * oh + 2 * ow)


def test_adaptive_readme_formula_example():
    # In=5, Out=3: start = 0, 1, 3; end = ceil(5/3)=2, ceil(10/3)=4, 5 -> [0,2), [1,4), [3,5) (overlapping)
    x = f32([[[1, 3, 2, 5, 4]]])
    values, indices = ndpool.adaptive_max_pool(x, [3])
    np.testing.assert_array_equal(values, f32([[[3, 5, 5]]]))
    np.testing.assert_array_equal(indices, [[[1, 3, 3]]])


# ----------------------------------------------------------------------------------------------------------
# 002: dst(n,c,oh,ow) = max src(n, c, oh*SH + kh*d - PH_L, ow*SW + kw*d - PW_L), taps in range only
# ----------------------------------------------------------------------------------------------------------


def test_002_formula_2d_with_dilation_stride_and_pads():
    # 5x5 plane, x[h, w] = 10*h + w (max of a window = its bottom-right in-range tap).
    x = (10 * np.arange(5)[:, None] + np.arange(5)[None, :]).astype(np.float32).reshape(1, 1, 5, 5)
    # k=2, d=2 (taps 0 and 2), s=2, pb=1, pe=0: P=6, dk=3, out=(6-3)//2+1=2.
    # oh=0 rows {-1, 1} -> 1; oh=1 rows {1, 3}; same for columns.
    v, i = ndpool.max_pool(x, kernel=2, strides=2, dilations=2, pads_begin=1, pads_end=0, data_format="NCX",
                           return_indices=True)
    np.testing.assert_array_equal(v[0, 0], f32([[11, 13], [31, 33]]))
    np.testing.assert_array_equal(i[0, 0], [[6, 8], [16, 18]])


def test_002_formula_nxc_default():
    # oneDNN Graph's data_format default is NXC: (N, H, W, C); channel c holds x + 100*c
    plane = (10 * np.arange(3)[:, None] + np.arange(4)[None, :]).astype(np.float32)
    x = np.stack([plane, plane + 100], axis=-1)[None]  # (1, 3, 4, 2)
    v = ndpool.max_pool(x, kernel=[2, 2], strides=[1, 2])
    assert v.shape == (1, 2, 2, 2)
    # windows rows {0,1},{1,2}; columns {0,1},{2,3} -> bottom-right
    np.testing.assert_array_equal(v[..., 0], f32([[[11, 13], [21, 23]]]))
    np.testing.assert_array_equal(v[..., 1], f32([[[111, 113], [121, 123]]]))


# ----------------------------------------------------------------------------------------------------------
# 004: attribute examples
# ----------------------------------------------------------------------------------------------------------


def test_004_strides_4_2_1_over_depth_height_width():
    # strides "4,2,1": 4 over depth, 2 over height, 1 over width. kernel 1: picks x[4a, 2b, c].
    x = np.arange(8 * 4 * 3, dtype=np.float32).reshape(1, 1, 8, 4, 3)
    op = ndpool.get_op("onednn:MaxPool-1")
    (v,) = op(np.moveaxis(x, 1, -1), kernel="1,1,1", strides="4,2,1", pads_begin="0,0,0", pads_end="0,0,0")
    assert v.shape == (1, 2, 2, 3, 1)  # NXC: depth 8/4, height 4/2, width 3/1
    np.testing.assert_array_equal(v[..., 0], x[:, 0, ::4, ::2, :])


def test_004_pads_begin_1_2_top_and_left():
    # pads_begin "1,2": 1 row on top, 2 columns on the left. kernel 1, stride 1: the first row and the
    # first two columns of the output are windows wholly in the padding.
    x = f32(np.arange(1, 7).reshape(1, 1, 2, 3))
    v, i = ndpool.max_pool(x, kernel=1, strides=1, pads_begin=[1, 2], pads_end=[0, 0], data_format="NCX",
                           return_indices=True)
    assert v.shape == (1, 1, 3, 5)
    ninf = -np.inf
    np.testing.assert_array_equal(v[0, 0], f32([[ninf] * 5, [ninf, ninf, 1, 2, 3], [ninf, ninf, 4, 5, 6]]))
    np.testing.assert_array_equal(i[0, 0], [[-1] * 5, [-1, -1, 0, 1, 2], [-1, -1, 3, 4, 5]])


def test_004_kernel_2_3_is_height_2_width_3():
    x = f32(np.arange(12).reshape(1, 1, 3, 4))
    v = ndpool.max_pool(x, kernel=(2, 3), strides=1, data_format="NCX")
    assert v.shape == (1, 1, 2, 2)
    # window (oh, ow) covers rows oh..oh+1, columns ow..ow+2: max at (oh+1, ow+2) = 4*(oh+1) + ow + 2
    np.testing.assert_array_equal(v[0, 0], f32([[6, 7], [10, 11]]))


def test_004_dilation_2_2_skips_neighbours():
    # "dilation 2,2: elements adjacent with distance 1": taps at 0 and 2.
    x = f32([[[[0, 9, 1], [9, 9, 9], [2, 9, 3]]]])
    v, i = ndpool.max_pool(x, kernel=2, strides=1, dilations=(2, 2), data_format="NCX", return_indices=True)
    np.testing.assert_array_equal(v, f32([[[[3]]]]))
    np.testing.assert_array_equal(i, [[[[8]]]])


def test_004_data_format_ncx_and_nxc_agree():
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 6)).astype(np.float32)
    ncx = ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX")
    nxc = ndpool.max_pool(np.moveaxis(x, 1, -1), kernel=2, strides=2, data_format="NXC")
    np.testing.assert_array_equal(np.moveaxis(nxc, -1, 1), ncx)


# ----------------------------------------------------------------------------------------------------------
# README examples, re-derived by hand
# ----------------------------------------------------------------------------------------------------------


def test_readme_ceil_example():
    # 4x4 arange, k=3, s=2, pads 1/1, ceil: P=6, ceil((6-3)/2)+1 = 3. Rows of window o: 2o-1..2o+1 (in range).
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    v, i = ndpool.max_pool(x, kernel=3, strides=2, pads_begin=1, pads_end=1, rounding_type="ceil",
                           return_indices=True, index_element_type="i32")
    np.testing.assert_array_equal(i[..., 0], np.array([[[5, 7, 7], [13, 15, 15], [13, 15, 15]]], np.int32))
    assert i.dtype == np.int32
    np.testing.assert_array_equal(v[..., 0], i[..., 0].astype(np.float32))


def test_output_shape_resnet_stem():
    # 112, k=3, s=2, same_upper: total = (56-1)*2 + 3 - 112 = 1, out = (113-3)//2 + 1 = 56
    assert ndpool.max_pool_output_shape((32, 112, 112, 64), kernel=3, strides=2, auto_pad="same_upper") == (
        32, 56, 56, 64)
    assert ndpool.max_pool_output_shape((32, 112, 112, 64), kernel=3, strides=2, pads_begin=1, pads_end=1) == (
        32, 56, 56, 64)


def test_max_pool_8_axis_readme():
    op = ndpool.get_op("openvino:MaxPool-8")
    values, indices = op(np.ones((1, 2, 4), np.float32), kernel="2", strides="2", pads_begin="0", pads_end="0",
                         dilations="1", axis="0")
    # ties: first tap. Plane c starts at global index 4c; windows start at 0, 2.
    np.testing.assert_array_equal(indices, [[[0, 2], [4, 6]]])
    assert bits(values).tolist() == bits(np.ones((1, 2, 2), np.float32)).tolist()
