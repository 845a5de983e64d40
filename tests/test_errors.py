"""Every error branch raises ``ndpool.PoolingError`` (a ``ValueError``) with a message naming the attribute."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ndpool

X1 = np.zeros((1, 1, 5), np.float32)          # NCX, 1 spatial axis
X2 = np.zeros((1, 2, 5, 5), np.float32)       # NCX, 2 spatial axes
X55 = np.zeros((1, 5, 5), np.float32)         # 1 spatial axis of 5 in NCX and in NXC
NCX = {"data_format": "NCX"}
OK = dict(kernel=2, strides=1)


def pool(x=X2, **kw):
    args = {**OK, **NCX, **kw}
    return ndpool.max_pool(x, **args)


def test_pooling_error_is_a_value_error():
    assert issubclass(ndpool.PoolingError, ValueError)
    with pytest.raises(ValueError):
        pool(strides=0)


def test_message_names_op_attribute_and_value():
    with pytest.raises(ndpool.PoolingError, match=r"MaxPool: 'strides' .*\(2, 0\)") as info:
        pool(strides=(2, 0))
    assert info.value.attribute == "strides"
    assert "input shape (1, 2, 5, 5)" in str(info.value)


# ---------------------------------------------------------------------------------------------- rank, lengths


@pytest.mark.parametrize("shape", [(5,), (1, 5), (1, 1, 1, 1, 1, 5), ()])
def test_wrong_rank(shape):
    with pytest.raises(ndpool.PoolingError, match="rank"):
        ndpool.max_pool(np.zeros(shape, np.float32), kernel=1, strides=1)
    with pytest.raises(ndpool.PoolingError, match="rank"):
        ndpool.adaptive_max_pool(np.zeros(shape, np.float32), [1])
    with pytest.raises(ndpool.PoolingError, match="rank"):
        ndpool.max_pool_output_shape(shape, kernel=1, strides=1)
    with pytest.raises(ndpool.PoolingError, match="rank"):
        ndpool.adaptive_max_pool_output_shape(shape, [1])


@pytest.mark.parametrize("name", ["kernel", "strides", "pads_begin", "pads_end", "dilations"])
@pytest.mark.parametrize("value", [[1], [1, 1, 1], [], [[1, 1]], "1,1,1", "1"])
def test_wrong_list_length(name, value):
    with pytest.raises(ndpool.PoolingError, match=name):
        pool(**{name: value})
    with pytest.raises(ndpool.PoolingError, match=name):
        ndpool.max_pool_output_shape(X2.shape, **{**OK, **NCX, name: value})


@pytest.mark.parametrize("name", ["pads_begin", "pads_end"])
@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower", "valid"])
def test_wrong_pads_length_even_where_auto_pad_ignores_them(name, auto_pad):
    with pytest.raises(ndpool.PoolingError, match=name):
        pool(**{name: [0, 0, 0]}, auto_pad=auto_pad)
    with pytest.raises(ndpool.PoolingError, match=name):
        pool(**{name: 1.5}, auto_pad=auto_pad)


@pytest.mark.parametrize("name", ["kernel", "strides", "dilations"])
@pytest.mark.parametrize("value", [0, -1, (1, 0), [0, 2], "0,1"])
def test_not_positive(name, value):
    with pytest.raises(ndpool.PoolingError, match=f"'{name}' must be positive"):
        pool(**{name: value})


@pytest.mark.parametrize("name", ["pads_begin", "pads_end"])
@pytest.mark.parametrize("value", [-1, (0, -1), "-1,0"])
@pytest.mark.parametrize("auto_pad", ["none", "same_upper", "same_lower", "valid"])
def test_negative_pads_even_where_auto_pad_ignores_them(name, value, auto_pad):
    with pytest.raises(ndpool.PoolingError, match=f"'{name}' must be non-negative"):
        pool(**{name: value}, auto_pad=auto_pad)


@pytest.mark.parametrize("name", ["kernel", "strides", "pads_begin", "pads_end", "dilations"])
@pytest.mark.parametrize("value", [2.5, 2.0, True, (1, True), "a,b", "1.5,2", None, {"a": 1}, (1.0, 1.0),
                                   np.array([1.0, 1.0]), object()])
def test_non_integer_attributes(name, value):
    with pytest.raises(ndpool.PoolingError, match=name):
        pool(**{name: value})


def test_integer_like_attributes_accepted():
    # NumPy integers and int arrays are integers
    a = pool(kernel=np.int64(2), strides=np.array([1, 1], np.int32), pads_begin=(np.int8(0), 0))
    assert a.shape == (1, 2, 4, 4)


@pytest.mark.parametrize("rounding, ok", [("floor", True), ("ceil", True), ("ceil_torch", True)])
def test_p_less_than_dk(rounding, ok):
    with pytest.raises(ndpool.PoolingError, match=r"'kernel' .*P"):
        pool(kernel=6, rounding_type=rounding)
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        pool(kernel=3, dilations=3, rounding_type=rounding)  # dk = 7 > 5
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        ndpool.max_pool_output_shape((1, 1, 5), kernel=4, dilations=2, strides=1, **NCX)
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        pool(x=np.zeros((1, 1, 0), np.float32), kernel=1)  # I = 0 and no pads


# ---------------------------------------------------------------------------------------------- strings


@pytest.mark.parametrize("name, value", [
    ("rounding_type", "round"), ("rounding_type", "ceil-torch"), ("rounding_type", 1), ("rounding_type", None),
    ("auto_pad", "same"), ("auto_pad", "SAME-UPPER"), ("auto_pad", 0),
    ("data_format", "NHWC"), ("data_format", "nchw"), ("data_format", None),
    ("semantics", "pytorch"), ("semantics", "ov"), ("semantics", None),
    ("index_element_type", "i16"), ("index_element_type", "u32"), ("index_element_type", np.float32),
    ("index_element_type", "int"), ("index_element_type", None),
])
def test_unknown_strings(name, value):
    with pytest.raises(ndpool.PoolingError, match=name):
        pool(**{name: value}, return_indices=True)


@pytest.mark.parametrize("name, value", [
    ("data_format", "NHWC"), ("semantics", "onnx"), ("semantics", "onednn"), ("semantics", "xyz"),
    ("index_element_type", "i8"),
])
def test_adaptive_unknown_strings(name, value):
    with pytest.raises(ndpool.PoolingError, match=name):
        ndpool.adaptive_max_pool(X2, [2, 2], **{name: value})


def test_adaptive_output_shape_bad_data_format():
    with pytest.raises(ndpool.PoolingError, match="data_format"):
        ndpool.adaptive_max_pool_output_shape((1, 1, 4), [2], data_format="NWC")


@pytest.mark.parametrize("value", [1, 0, "True", None, np.array([True]), 1.0])
def test_return_indices_not_a_bool(value):
    with pytest.raises(ndpool.PoolingError, match="return_indices"):
        pool(return_indices=value)


def test_return_indices_numpy_bool_accepted():
    v, i = pool(return_indices=np.bool_(True))
    assert i.dtype == np.int64


@pytest.mark.parametrize("axis", [4, -5, 1.0, "0", True, 2**70])
def test_index_axis_invalid(axis):
    with pytest.raises(ndpool.PoolingError, match="index_axis"):
        pool(return_indices=True, index_axis=axis)
    with pytest.raises(ndpool.PoolingError, match="index_axis"):
        ndpool.max_pool_output_shape(X2.shape, **OK, **NCX, return_indices=True, index_axis=axis)


# ---------------------------------------------------------------------------------------------- output_size


@pytest.mark.parametrize("output_size", [[2], [2, 2, 2], [], np.array([[2, 2]]), "2"])
def test_output_size_wrong_length(output_size):
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(X2, output_size)
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool_output_shape(X2.shape, output_size)


@pytest.mark.parametrize("output_size", [[-1, 2], np.array([2, -3], np.int32), -1])
def test_output_size_negative(output_size):
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(X2, output_size)


@pytest.mark.parametrize("output_size", [[2.0, 2.0], [2.5, 2], np.array([2.0, 2.0]), np.array([2, 2], np.float32),
                                         [True, 1], np.array([1, 1], bool), None, 2.0, [None, 1], ["a", "b"],
                                         object()])
def test_output_size_not_integers(output_size):
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(X2, output_size)


def test_output_size_with_zero_input():
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool(np.zeros((1, 1, 0, 3), np.float32), [1, 1])
    with pytest.raises(ndpool.PoolingError, match="output_size"):
        ndpool.adaptive_max_pool_output_shape((1, 1, 3, 0), [1, 1])


# ---------------------------------------------------------------------------------------------- dtypes


UNSUPPORTED = [np.complex64, np.complex128, np.bool_, object, np.int16, np.uint16, np.uint32, np.uint64,
               "U3", "S3", "datetime64[s]"]
if np.dtype(np.longdouble).itemsize > 8:
    UNSUPPORTED.append(np.longdouble)


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=str)
def test_unsupported_dtypes(dtype):
    x = np.zeros((1, 1, 4), dtype)
    with pytest.raises(ndpool.PoolingError, match="dtype"):
        ndpool.max_pool(x, kernel=2, strides=2)
    with pytest.raises(ndpool.PoolingError, match="dtype"):
        ndpool.adaptive_max_pool(x, [2])


def test_unsupported_ml_dtypes_and_lists():
    import ml_dtypes

    with pytest.raises(ndpool.PoolingError, match="dtype"):
        ndpool.max_pool(np.zeros((1, 1, 4), ml_dtypes.float8_e4m3fn), kernel=2, strides=2)
    with pytest.raises(ndpool.PoolingError, match="data"):
        ndpool.max_pool([[[1, 2], [3]]], kernel=1, strides=1)  # ragged
    with pytest.raises(ndpool.PoolingError, match="data"):
        ndpool.max_pool("abc", kernel=1, strides=1)
    with pytest.raises(ndpool.PoolingError, match="data"):
        ndpool.max_pool(None, kernel=1, strides=1)


# ---------------------------------------------------------------------------------------------- index overflow


def test_index_overflow():
    big = np.broadcast_to(np.float32(0), (1, 1, 50000, 50000))
    with pytest.raises(ndpool.PoolingError, match="index_element_type"):
        ndpool.max_pool(big, kernel=2, strides=50000, dilations=49999, return_indices=True,
                        index_element_type="i32", **NCX)
    with pytest.raises(ndpool.PoolingError, match="index_element_type"):
        ndpool.max_pool_output_shape(big.shape, kernel=1, strides=1, return_indices=True,
                                     index_element_type="i32", **NCX)
    with pytest.raises(ndpool.PoolingError, match="index_element_type"):
        ndpool.adaptive_max_pool(big, [1, 1], index_element_type="i32")
    with pytest.raises(ndpool.PoolingError, match="index_element_type"):
        ndpool.get_op("openvino:MaxPool-8")(big, kernel="2,2", strides="50000,50000", pads_begin="0,0",
                                             pads_end="0,0", dilations="49999,49999", index_element_type="i32")


# ---------------------------------------------------------------------------------------------- spec ops


@pytest.mark.parametrize("name", ["MaxPool-8", "openvino:MaxPool-2", "onednn:MaxPool-8", "", None, 8,
                                  "openvino:maxpool-8", "openvino:AdaptiveAvgPool-8"])
def test_get_op_unknown(name):
    with pytest.raises(ndpool.PoolingError, match="name"):
        ndpool.get_op(name)


SPEC_REQUIRED = {
    "onednn:MaxPool-1": ("kernel", "strides", "pads_begin", "pads_end"),
    "openvino:MaxPool-1": ("kernel", "strides", "pads_begin", "pads_end"),
    "openvino:MaxPool-8": ("kernel", "strides", "pads_begin", "pads_end", "dilations"),
    "openvino:MaxPool-14": ("kernel", "strides", "pads_begin", "pads_end", "dilations"),
}


@pytest.mark.parametrize("op_name", sorted(SPEC_REQUIRED))
def test_spec_missing_required(op_name):
    full = {"kernel": "2", "strides": "1", "pads_begin": "0", "pads_end": "0", "dilations": "1"}
    full = {k: v for k, v in full.items() if k in SPEC_REQUIRED[op_name]}
    op = ndpool.get_op(op_name)
    assert op(X55, **full)[0].shape  # complete: works
    for missing in SPEC_REQUIRED[op_name]:
        attrs = {k: v for k, v in full.items() if k != missing}
        with pytest.raises(ndpool.PoolingError, match=f"'{missing}' is a required"):
            op(X55, **attrs)


@pytest.mark.parametrize("op_name, attr", [
    ("onednn:MaxPool-1", "axis"), ("onednn:MaxPool-1", "index_element_type"), ("openvino:MaxPool-1", "dilations"),
    ("openvino:MaxPool-1", "data_format"), ("openvino:MaxPool-8", "padding"), ("openvino:MaxPool-8", "output_type"),
    ("openvino:AdaptiveMaxPool-8", "kernel"), ("openvino:MaxPool-14", "return_indices"),
])
def test_spec_unknown_attribute(op_name, attr):
    op = ndpool.get_op(op_name)
    inputs = (X55, [2]) if "Adaptive" in op_name else (X55,)
    base = {} if "Adaptive" in op_name else {k: v for k, v in {"kernel": "2", "strides": "1", "pads_begin": "0",
                                                                    "pads_end": "0", "dilations": "1"}.items()
                                              if k in SPEC_REQUIRED[op_name]}
    with pytest.raises(ndpool.PoolingError, match=attr):
        op(*inputs, **base, **{attr: "1"})


@pytest.mark.parametrize("value", ["2.5", "a,b", "", "2;2"])
def test_spec_non_integer_ir_strings(value):
    op = ndpool.get_op("openvino:MaxPool-8")
    with pytest.raises(ndpool.PoolingError, match="kernel"):
        op(X1, kernel=value, strides="1", pads_begin="0", pads_end="0", dilations="1")


@pytest.mark.parametrize("axis", ["a", "1.5", "3", "-4", 2.5])
def test_spec_bad_axis(axis):
    op = ndpool.get_op("openvino:MaxPool-8")
    with pytest.raises(ndpool.PoolingError, match="axis"):
        op(X1, kernel="2", strides="1", pads_begin="0", pads_end="0", dilations="1", axis=axis)


def test_spec_rounding_types():
    kw = dict(kernel="2", strides="2", pads_begin="0", pads_end="0", dilations="1")
    for name in ("openvino:MaxPool-8", "openvino:MaxPool-1", "onednn:MaxPool-1"):
        op = ndpool.get_op(name)
        attrs = {k: v for k, v in kw.items() if k in SPEC_REQUIRED[name]}
        with pytest.raises(ndpool.PoolingError, match="rounding_type"):
            op(X55, rounding_type="ceil_torch", **attrs)
    (v, i) = ndpool.get_op("openvino:MaxPool-14")(X1, rounding_type="ceil_torch", **kw)
    assert v.shape == (1, 1, 3)  # I=5, k=2, s=2: ceil 3, last window starts at 4 < 5: kept


def test_spec_wrong_input_count():
    with pytest.raises(ndpool.PoolingError, match="input"):
        ndpool.get_op("openvino:AdaptiveMaxPool-8")(X1)
    with pytest.raises(ndpool.PoolingError, match="input"):
        ndpool.get_op("openvino:MaxPool-1")(X1, X1, kernel="2", strides="1", pads_begin="0", pads_end="0")


def test_spec_adaptive_bad_semantics():
    with pytest.raises(ndpool.PoolingError, match="semantics"):
        ndpool.get_op("openvino:AdaptiveMaxPool-8")(X1, [2], semantics="onnx")


# ---------------------------------------------------------------------------------------------- fuzz


BAD_VALUES = [None, -1, 0, 1, 2, 2.5, True, "x", "1,a", [], [1, 2, 3], [[1]], {"k": 1}, object(), 1j,
              np.array([1.5]), np.float32(2), "same_upper", "NXC", b"2"]
ATTRS = ["kernel", "strides", "pads_begin", "pads_end", "dilations", "rounding_type", "auto_pad", "data_format",
         "return_indices", "index_element_type", "index_axis", "semantics"]


def test_fuzz_only_pooling_error_escapes():
    rng = np.random.default_rng(0)
    errors = 0
    for trial in range(400):
        kw = dict(kernel=1, strides=1)
        for name in rng.choice(ATTRS, size=int(rng.integers(1, 4)), replace=False):
            kw[str(name)] = BAD_VALUES[int(rng.integers(0, len(BAD_VALUES)))]
        x = np.zeros(tuple(int(s) for s in rng.integers(0, 4, int(rng.integers(2, 7)))), np.float32)
        for fn in (lambda: ndpool.max_pool(x, **kw), lambda: ndpool.max_pool_output_shape(x.shape, **kw)):
            try:
                fn()
            except ndpool.PoolingError:
                errors += 1
            except Exception as exc:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{type(exc).__name__}: {exc} escaped for shape {x.shape} and {kw}")
    assert errors > 100


def test_fuzz_adaptive_only_pooling_error_escapes():
    sizes = [None, -1, 0, 1, 2.5, True, "x", [], [1], [1, 1], [1, 1, 1], [-1, 1], [1.0, 1], np.array([1.5]),
             np.array([2], np.int8), np.array([[1, 1]]), {"a": 1}, object(), (1, 2), 1j]
    errors = 0
    for shape in [(1, 1, 3), (2, 1, 3, 4), (1, 1, 0, 2), (3,), (1, 1, 2, 2, 2)]:
        x = np.zeros(shape, np.float32)
        for size, fmt, sem, it in itertools.product(sizes, ["NCX", "nxc", "bad"], ["spec", "onnx"], ["i32", "x"]):
            for fn in (lambda: ndpool.adaptive_max_pool(x, size, data_format=fmt, semantics=sem,
                                                        index_element_type=it),
                       lambda: ndpool.adaptive_max_pool_output_shape(x.shape, size, data_format=fmt)):
                try:
                    fn()
                except ndpool.PoolingError:
                    errors += 1
                except Exception as exc:  # pragma: no cover
                    pytest.fail(f"{type(exc).__name__}: {exc} escaped for {shape} {size!r} {fmt} {sem} {it}")
    assert errors > 100


@pytest.mark.parametrize("strides", [2**63, 2**64, 10**30])
def test_huge_strides_give_a_result_or_a_pooling_error(strides):
    # Attributes above 2**40 are rejected (window arithmetic is int64), by the shape helper and the
    # op alike; 2**40 itself works: I=5, k=1 gives one window at 0.
    x = np.array([[[4.0, 1.0, 9.0, 2.0, 3.0]]], np.float32)
    with pytest.raises(ndpool.PoolingError, match=r"'strides' must be at most 2\*\*40"):
        ndpool.max_pool_output_shape(x.shape, kernel=1, strides=strides, **NCX)
    with pytest.raises(ndpool.PoolingError, match=r"'strides' must be at most 2\*\*40"):
        ndpool.max_pool(x, kernel=1, strides=strides, return_indices=True, **NCX)
    assert ndpool.max_pool_output_shape(x.shape, kernel=1, strides=2**40, **NCX) == (1, 1, 1)
    v, i = ndpool.max_pool(x, kernel=1, strides=2**40, return_indices=True, **NCX)
    assert v.tolist() == [[[4.0]]] and i.tolist() == [[[0]]]


@pytest.mark.parametrize("bad_shape", [(1, -1, 3), (1, 2.0, 3), None, 5, (1, 1, "3"), (1, True, 3)])
def test_output_shape_helpers_bad_input_shape(bad_shape):
    with pytest.raises(ndpool.PoolingError):
        ndpool.max_pool_output_shape(bad_shape, kernel=1, strides=1)
    with pytest.raises(ndpool.PoolingError):
        ndpool.adaptive_max_pool_output_shape(bad_shape, [1])
