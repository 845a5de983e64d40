"""The public surface: names, signatures, py.typed, result types, versioned spec ops."""

from __future__ import annotations

import importlib.resources
import inspect
import math

import numpy as np
import pytest

import ndpool

PUBLIC = {"PoolingError", "adaptive_max_pool", "adaptive_max_pool_output_shape", "get_op", "list_ops",
          "max_pool", "max_pool_output_shape", "pyramid"}  # pyramid: the dask/OME-Zarr section (52cdbd5)
SPEC_OPS = ["onednn:MaxPool-1", "openvino:AdaptiveMaxPool-8", "openvino:MaxPool-1", "openvino:MaxPool-14",
            "openvino:MaxPool-8"]
K = inspect.Parameter.KEYWORD_ONLY
PO = inspect.Parameter.POSITIONAL_ONLY
PK = inspect.Parameter.POSITIONAL_OR_KEYWORD
REQ = inspect.Parameter.empty

MAX_POOL_ATTRS = [("kernel", REQ), ("strides", REQ), ("pads_begin", 0), ("pads_end", 0), ("dilations", 1),
                  ("rounding_type", "floor"), ("auto_pad", "none"), ("data_format", "NXC"),
                  ("return_indices", False), ("index_element_type", "i64"), ("index_axis", None),
                  ("semantics", "spec")]


def test_all_is_exact():
    assert set(ndpool.__all__) == PUBLIC
    assert len(ndpool.__all__) == len(PUBLIC)
    for name in PUBLIC:
        assert getattr(ndpool, name) is not None
    public_attrs = {n for n in dir(ndpool) if not n.startswith("_")} - {"spec", "cli"}
    assert PUBLIC <= public_attrs


def test_py_typed_ships():
    assert importlib.resources.files("ndpool").joinpath("py.typed").is_file()


def _public_params(fn):
    return [p for p in inspect.signature(fn).parameters.values() if not p.name.startswith("_")]


@pytest.mark.parametrize("fn, first", [(ndpool.max_pool, "data"), (ndpool.max_pool_output_shape, "input_shape")])
def test_max_pool_signatures(fn, first):
    params = _public_params(fn)
    assert params[0].name == first and params[0].kind == PO
    assert [(p.name, p.default) for p in params[1:]] == MAX_POOL_ATTRS
    assert all(p.kind == K for p in params[1:])
    for p in params:
        assert p.annotation is not inspect.Parameter.empty, p.name
    assert inspect.signature(fn).return_annotation is not inspect.Signature.empty


def test_adaptive_signatures():
    params = _public_params(ndpool.adaptive_max_pool)
    assert [(p.name, p.kind) for p in params] == [("data", PO), ("output_size", PK), ("index_element_type", K),
                                                   ("data_format", K), ("semantics", K)]
    assert [p.default for p in params[2:]] == ["i64", "NCX", "spec"]
    params = _public_params(ndpool.adaptive_max_pool_output_shape)
    assert [(p.name, p.kind) for p in params] == [("input_shape", PO), ("output_size", PK), ("data_format", K)]
    assert params[2].default == "NCX"


def test_attributes_are_keyword_only():
    x = np.zeros((1, 4, 1), np.float32)
    with pytest.raises(TypeError):
        ndpool.max_pool(x, 2, 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        ndpool.max_pool(data=x, kernel=2, strides=2)  # type: ignore[call-arg]


def test_results_are_numpy_arrays():
    for data in ([[[1.0, 2.0, 3.0, 4.0]]], np.arange(4, dtype=np.float32).reshape(1, 1, 4),
                 np.broadcast_to(np.float32(1), (1, 1, 4)), np.asfortranarray(np.ones((1, 1, 4)))):
        v = ndpool.max_pool(data, kernel=2, strides=2, data_format="NCX")
        assert type(v) is np.ndarray and v.shape == (1, 1, 2)
        v, i = ndpool.max_pool(data, kernel=2, strides=2, data_format="NCX", return_indices=True)
        assert type(v) is np.ndarray and type(i) is np.ndarray
        v, i = ndpool.adaptive_max_pool(data, [2])
        assert type(v) is np.ndarray and type(i) is np.ndarray
    assert ndpool.max_pool([[[1.0, 5.0, 2.0, 3.0]]], kernel=2, strides=2, data_format="NCX").tolist() == [[[5, 3]]]
    assert isinstance(ndpool.max_pool_output_shape((1, 4, 1), kernel=2, strides=2), tuple)
    shape = ndpool.adaptive_max_pool_output_shape(np.array([1, 1, 4]), np.array([2], np.int32))
    assert shape == (1, 1, 2) and all(type(d) is int for d in shape)


def test_results_do_not_depend_on_input_layout():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    views = [
        np.asfortranarray(base),
        np.ascontiguousarray(base.transpose(3, 2, 1, 0)).transpose(3, 2, 1, 0),
        np.ascontiguousarray(base[:, :, ::-1, ::-1])[:, :, ::-1, ::-1],
        np.repeat(base, 2, axis=3)[..., ::2],
    ]
    ref_v, ref_i = ndpool.max_pool(base, kernel=3, strides=2, pads_begin=1, data_format="NCX", return_indices=True)
    ref_a = ndpool.adaptive_max_pool(base, [4, 3])
    for view in views:
        np.testing.assert_array_equal(view, base)
        v, i = ndpool.max_pool(view, kernel=3, strides=2, pads_begin=1, data_format="NCX", return_indices=True)
        np.testing.assert_array_equal(v, ref_v)
        np.testing.assert_array_equal(i, ref_i)
        a = ndpool.adaptive_max_pool(view, [4, 3])
        np.testing.assert_array_equal(a[0], ref_a[0])
        np.testing.assert_array_equal(a[1], ref_a[1])


def test_inputs_not_modified():
    x = np.array([[[3.0, 1.0, 2.0]]], np.float32)
    x.setflags(write=False)
    ndpool.max_pool(x, kernel=2, strides=1, data_format="NCX", return_indices=True)
    ndpool.adaptive_max_pool(x, [2])
    assert x.tolist() == [[[3.0, 1.0, 2.0]]]


# ---------------------------------------------------------------------------------------------- spec ops


def test_list_ops():
    assert ndpool.list_ops() == SPEC_OPS


@pytest.mark.parametrize("name", SPEC_OPS)
def test_get_op_each(name):
    op = ndpool.get_op(name)
    assert callable(op)
    if "Adaptive" in name:
        x = np.array([[[1, 3, 2, 5, 4]]], np.float32)
        out = op(x, np.array([3], np.int64))
        assert len(out) == 2
        np.testing.assert_array_equal(out[0], [[[3, 5, 5]]])
        np.testing.assert_array_equal(out[1], [[[1, 3, 3]]])
        return
    attrs = dict(kernel="2", strides="2", pads_begin="0", pads_end="0")
    if name != "onednn:MaxPool-1" and name != "openvino:MaxPool-1":
        attrs["dilations"] = "1"
    x = np.array([[[1, 3, 2, 5, 4, 0]]], np.float32)  # (1, 1, 6)
    if name == "onednn:MaxPool-1":
        out = op(np.moveaxis(x, 1, -1), **attrs)  # NXC default (004)
        assert len(out) == 1 and out[0].shape == (1, 3, 1)
        np.testing.assert_array_equal(out[0][..., 0], [[3, 5, 4]])
        (ncx,) = op(x, data_format="NCX", **attrs)
        np.testing.assert_array_equal(ncx, [[[3, 5, 4]]])
    elif name == "openvino:MaxPool-1":
        out = op(x, **attrs)  # NCX, one output
        assert len(out) == 1
        np.testing.assert_array_equal(out[0], [[[3, 5, 4]]])
    else:
        out = op(x, **attrs)
        assert len(out) == 2
        np.testing.assert_array_equal(out[0], [[[3, 5, 4]]])
        np.testing.assert_array_equal(out[1], [[[1, 3, 4]]])
        assert out[1].dtype == np.int64


def test_spec_ops_accept_python_values_and_ir_strings():
    op = ndpool.get_op("openvino:MaxPool-8")
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    a = op(x, kernel="2,2", strides="2,2", pads_begin="0,0", pads_end="0,0", dilations="1,1",
           rounding_type="CEIL", auto_pad="explicit", index_element_type="i32", axis="0")
    b = op(x, kernel=(2, 2), strides=[2, 2], pads_begin=0, pads_end=0, dilations=1, rounding_type="ceil",
           index_element_type="i32", axis=0)
    for u, w in zip(a, b):
        np.testing.assert_array_equal(u, w)
    assert a[1].dtype == np.int32
    # axis=0: global flat index (distinct increasing values: bottom-right of each window)
    glob = np.arange(x.size).reshape(x.shape)
    np.testing.assert_array_equal(a[1], glob[:, :, 1::2, 1::2])
    (v, i) = op(x, kernel="2,2", strides="2,2", pads_begin="0,0", pads_end="0,0", dilations="1,1", axis="2")
    np.testing.assert_array_equal(i, (glob % 16)[:, :, 1::2, 1::2])
    (v, i) = op(x, kernel="2,2", strides="2,2", pads_begin="0,0", pads_end="0,0", dilations="1,1", axis="-3")
    np.testing.assert_array_equal(i, (glob % 48)[:, :, 1::2, 1::2])


def test_spec_op_presets_by_default():
    x = np.array([[[1, np.nan, 5]]], np.float32)
    kw = dict(kernel="3", strides="1", pads_begin="0", pads_end="0")
    (v,) = ndpool.get_op("onednn:MaxPool-1")(x, data_format="NCX", **kw)
    assert v.ravel().tolist() == [5.0]  # onednn ignores NaN
    (v,) = ndpool.get_op("openvino:MaxPool-1")(x, **kw)
    assert v.ravel().tolist() == [5.0]
    v, i = ndpool.get_op("openvino:MaxPool-14")(x, dilations="1", **kw)
    assert v.ravel().tolist() == [5.0] and i.ravel().tolist() == [2]
    v, i = ndpool.get_op("openvino:MaxPool-8")(x, dilations="1", semantics="spec", **kw)
    assert math.isnan(v.ravel()[0]) and i.ravel().tolist() == [1]
    # empty window, openvino preset: f32 lowest
    (v,) = ndpool.get_op("openvino:MaxPool-1")(np.ones((1, 1, 2), np.float32), kernel="1", strides="1",
                                               pads_begin="1", pads_end="0")
    assert v.ravel().tolist() == [float(np.finfo(np.float32).min), 1.0, 1.0]


def test_spec_adaptive_default_is_openvino_first_valid():
    # AdaptiveMaxPool-8 on OpenVINO: first valid (start at the first tap, take v > m): a first-tap NaN stays
    op = ndpool.get_op("openvino:AdaptiveMaxPool-8")
    v, i = op(np.array([[[np.nan, 1, 5]]], np.float32), np.array([1], np.int32))
    assert math.isnan(v.ravel()[0]) and i.ravel().tolist() == [0]
    v, i = op(np.array([[[1, np.nan, 5]]], np.float32), np.array([1], np.int32))
    assert v.ravel().tolist() == [5.0] and i.ravel().tolist() == [2]


def test_spec_ops_ceil_torch():
    kw = dict(kernel="2", strides="3", pads_begin="0", pads_end="2", dilations="1")
    x = np.array([[[1, 2, 3, 4]]], np.float32)
    v, i = ndpool.get_op("openvino:MaxPool-14")(x, rounding_type="ceil_torch", **kw)
    assert v.shape == (1, 1, 2)  # ceil 3, last window starts at 6 >= 4: dropped
    v, i = ndpool.get_op("openvino:MaxPool-14")(x, rounding_type="ceil", **kw)
    assert v.shape == (1, 1, 3)
    with pytest.raises(ndpool.PoolingError, match="rounding_type"):
        ndpool.get_op("openvino:MaxPool-8")(x, rounding_type="ceil_torch", **kw)


def test_resolved_calls_are_kept_by_typed_plain_keys():
    """A repeated call reuses its resolved attributes (see _call_cache), but never across types that
    Python counts equal (True == 1), never for an error, and never beyond the cache's bound."""
    from ndpool import _call_cache, _ops

    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    _ops._max_pool_calls.clear()
    first = ndpool.max_pool(x, kernel=(1, 2), strides=1, data_format="NCX")
    again = ndpool.max_pool(x, kernel=(1, 2), strides=1, data_format="NCX")
    assert len(_ops._max_pool_calls._calls) == 1
    np.testing.assert_array_equal(first, again)
    for bad in [(True, 2), [1, True], (1, 2.0)]:  # equal to (1, 2) as Python compares, yet rejected
        for _ in range(2):  # (an error is not kept: the second call fails the same way)
            with pytest.raises(ndpool.PoolingError, match="kernel"):
                ndpool.max_pool(x, kernel=bad, strides=1, data_format="NCX")
    for _ in range(2):
        with pytest.raises(ndpool.PoolingError, match="strides"):  # strides=1 is kept; True == 1
            ndpool.max_pool(x, kernel=(1, 2), strides=True, data_format="NCX")
    ndpool.max_pool(x, kernel=(1, 2), strides=1, data_format="NCX", return_indices=True)
    with pytest.raises(ndpool.PoolingError, match="return_indices"):  # 1 == True, kept just above
        ndpool.max_pool(x, kernel=(1, 2), strides=1, data_format="NCX", return_indices=1)
    # NumPy values are validated every time, not kept.
    ndpool.max_pool(x, kernel=np.array([1, 2]), strides=np.int64(1), data_format="NCX")
    assert len(_ops._max_pool_calls._calls) == 2
    _ops._adaptive_calls.clear()
    v1, i1 = ndpool.adaptive_max_pool(x, [2, 3])
    v2, i2 = ndpool.adaptive_max_pool(x, [2, 3])
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(i1, i2)
    assert len(_ops._adaptive_calls._calls) == 1
    for bad_size in ([True, 3], (2, -1)):
        for _ in range(2):
            with pytest.raises(ndpool.PoolingError, match="output_size"):
                ndpool.adaptive_max_pool(x, bad_size)
    for k in range(1, _call_cache.KEPT + 10):  # bounded: the oldest go first
        ndpool.max_pool_output_shape((1, 1, 1, k + 1), kernel=(1, 1), strides=1, data_format="NCX")
    assert len(_ops._max_pool_calls._calls) == _call_cache.KEPT
