"""onnxruntime's MaxPool (with its ``Indices`` output) as a test oracle, and ONNX shape inference.

Facts about onnxruntime 1.32 (CPU execution provider) learned by running it:

* Element types accepted by ``MaxPool`` (opset 22): float32, float16, float64, int8, uint8.
  bfloat16 is declared by the ONNX schema but has no CPU kernel (``NOT_IMPLEMENTED``); int32 and int64 are
  rejected by the schema (``INVALID_GRAPH``).
* The ``Indices`` output is always requested here: without it onnxruntime runs a different kernel whose NaN
  rule differs. With it, the rule is "first valid": start at the window's first in-range tap, take ``v > m``.
  Indices are global (N and C counted), row-major (``storage_order=0``).
* A window without an in-range tap (possible with dilation even when ``pads < kernel``) gives the type's lowest
  value (f32 -3.4028235e38, f64 -1.7976931348623157e308, i8 -128, u8 0) except float16, where it is **-inf**
  (not -65504), and the index ``plane_offset + flat(-1, ..., -1)``.
* Pads must be < kernel (``Pad should be smaller than kernel``); only N may be 0 (C = 0 is rejected). Cases with
  ``P < dk`` are accepted (the output size truncates toward zero), ndpool rejects them.
* ``auto_pad=SAME_*`` pads are computed without dilation and without clamping at 0
  (``total = (ceil(I/s) - 1)*s + k - I``); they agree with ndpool only where that equals the dilation-aware,
  clamped rule. See :func:`ort_same_pads`.
* ``ceil_mode=1`` drops a last window that would start in the end padding (ndpool's ``ceil_torch``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OPSET = 22
IR_VERSION = 10

#: Element types onnxruntime's CPU MaxPool accepts (checked by running it).
ORT_MAXPOOL_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int8, np.uint8)
)

_ELEM = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(ml_dtypes.bfloat16): TensorProto.BFLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
}

_AUTO_PAD = {
    "none": "NOTSET",
    "explicit": "NOTSET",
    "notset": "NOTSET",
    "same_upper": "SAME_UPPER",
    "same_lower": "SAME_LOWER",
    "valid": "VALID",
}


def _tuple(v: int | Sequence[int], n: int) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(e) for e in v)
    if len(t) != n:
        raise ValueError(f"expected {n} entries, got {t}")
    return t


def _model(
    rank: int,
    elem: int,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: int,
    auto_pad: str,
    shape: tuple[int, ...] | None,
) -> onnx.ModelProto:
    dims: list[int | None] = list(shape) if shape is not None else [None] * rank
    x = helper.make_tensor_value_info("x", elem, dims)
    y = helper.make_tensor_value_info("y", elem, None)
    i = helper.make_tensor_value_info("i", TensorProto.INT64, None)
    attrs: dict[str, object] = {
        "kernel_shape": list(kernel),
        "strides": list(strides),
        "dilations": list(dilations),
        "ceil_mode": ceil_mode,
        "auto_pad": auto_pad,
    }
    if auto_pad == "NOTSET":
        attrs["pads"] = list(pads)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph([node], "maxpool", [x], [y, i])
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )


def _normalize(
    rank: int,
    kernel: int | Sequence[int],
    strides: int | Sequence[int],
    pads_begin: int | Sequence[int],
    pads_end: int | Sequence[int],
    dilations: int | Sequence[int],
    ceil_mode: bool | int,
    auto_pad: str,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], int, str]:
    n = rank - 2
    k = _tuple(kernel, n)
    s = _tuple(strides, n)
    pads = _tuple(pads_begin, n) + _tuple(pads_end, n)
    d = _tuple(dilations, n)
    return k, s, pads, d, int(bool(ceil_mode)), _AUTO_PAD[auto_pad.lower()]


@functools.lru_cache(maxsize=4096)
def _session(
    rank: int,
    elem: int,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    pads: tuple[int, ...],
    dilations: tuple[int, ...],
    ceil_mode: int,
    auto_pad: str,
) -> ort.InferenceSession:
    model = _model(rank, elem, kernel, strides, pads, dilations, ceil_mode, auto_pad, None)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), sess_options=opts, providers=["CPUExecutionProvider"]
    )


def ort_max_pool(
    x: np.ndarray,
    *,
    kernel: int | Sequence[int],
    strides: int | Sequence[int] = 1,
    pads_begin: int | Sequence[int] = 0,
    pads_end: int | Sequence[int] = 0,
    dilations: int | Sequence[int] = 1,
    ceil_mode: bool | int = False,
    auto_pad: str = "NOTSET",
) -> tuple[np.ndarray, np.ndarray]:
    """Run onnxruntime MaxPool (with Indices) on NCX ``x``; return (values, int64 global indices).

    ``auto_pad`` takes the ONNX spellings or ndpool's (``none``/``explicit`` = NOTSET); ``pads_*`` are used
    only with NOTSET. Errors from onnxruntime propagate.
    """
    x = np.ascontiguousarray(x)
    k, s, pads, d, c, ap = _normalize(
        x.ndim, kernel, strides, pads_begin, pads_end, dilations, ceil_mode, auto_pad
    )
    sess = _session(x.ndim, _ELEM[x.dtype], k, s, pads, d, c, ap)
    values, indices = sess.run(None, {"x": x})
    return values, indices


def ort_same_pads(
    input_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int], upper: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pads onnxruntime uses for SAME_UPPER/SAME_LOWER: dilation ignored, not clamped at 0.

    Mirrors ``PoolAttributes::ComputeSizePadDilations``: ``total = (ceil(I/s) - 1)*s + k - I``; the head pad
    is ``total/2`` (upper) or ``(total + 1)/2`` (lower), C++ division truncating toward zero.
    """
    pb, pe = [], []
    for i, k, s in zip(input_spatial, kernel, strides, strict=True):
        total = (-(-i // s) - 1) * s + k - i
        num = total if upper else total + 1
        b = abs(num) // 2 * (1 if num >= 0 else -1)
        pb.append(b)
        pe.append(total - b)
    return tuple(pb), tuple(pe)


def onnx_inferred_shape(
    input_shape: Sequence[int],
    dtype: np.dtype | type = np.float32,
    *,
    kernel: int | Sequence[int],
    strides: int | Sequence[int] = 1,
    pads_begin: int | Sequence[int] = 0,
    pads_end: int | Sequence[int] = 0,
    dilations: int | Sequence[int] = 1,
    ceil_mode: bool | int = False,
    auto_pad: str = "NOTSET",
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """ONNX shape inference (strict mode) of MaxPool's (values, indices) shapes for ``input_shape`` (NCX).

    Raises ``onnx.shape_inference.InferenceError`` where ONNX rejects the case, ``ValueError`` where it
    infers no static shape.
    """
    shape = tuple(int(v) for v in input_shape)
    k, s, pads, d, c, ap = _normalize(
        len(shape), kernel, strides, pads_begin, pads_end, dilations, ceil_mode, auto_pad
    )
    model = _model(len(shape), _ELEM[np.dtype(dtype)], k, s, pads, d, c, ap, shape)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    out: dict[str, tuple[int, ...]] = {}
    for vi in inferred.graph.output:
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            raise ValueError(f"no inferred shape for {vi.name}")
        dims = []
        for dim in t.shape.dim:
            if not dim.HasField("dim_value"):
                raise ValueError(f"no static dim for {vi.name}: {t.shape}")
            dims.append(dim.dim_value)
        out[vi.name] = tuple(dims)
    return out["y"], out["i"]
