"""The real OpenVINO engine (CPU plugin) as a test oracle for ndpool, on NCX numpy input.

Functions
---------
``maxpool1(x, attrs)`` -> values                       MaxPool-1 (oneDNN pooling primitive on CPU)
``maxpool8(x, attrs, index_element_type=, axis=)``     MaxPool-8 -> (values, indices)
``maxpool14(x, attrs, index_element_type=, axis=)``    MaxPool-14 -> (values, indices); also ``ceil_torch``
``maxpool8_values(x, attrs)`` / ``maxpool14_values``   MaxPool-8/14 with the indices output unused
``adaptive_maxpool8(x, output_size)``                  AdaptiveMaxPool-8 -> (values, i32 indices)
``maxpool_shape(shape, attrs, version=)``              OpenVINO's shape inference of MaxPool-1/8/14 (no run)
``adaptive_maxpool_shape(shape, output_size)``         OpenVINO's shape inference of AdaptiveMaxPool-8

``attrs`` uses ndpool's keyword names (``kernel``, ``strides``, ``pads_begin``, ``pads_end``, ``dilations``,
``rounding_type``, ``auto_pad``), one entry per spatial axis, as ``tests/cases.py`` produces them.

Models are built with a dynamic input shape of the right rank and compiled once per (op, dtype, rank, attributes)
(``functools.lru_cache``): compiling costs ~35 ms, a run ~0.5 ms, so callers should run several inputs per
attribute set. ``dynamic=False`` compiles for the exact static shape instead (to cross-check the dynamic path).
Every model is compiled with ``INFERENCE_PRECISION_HINT=f32``: this CPU's default is bf16, which would round
f32 data.

What the engine accepts (OpenVINO 2026.4, CPU plugin; found by running it, see test_vs_openvino.py)
-----------------------------------------------------------------------------------------------------
* MaxPool-1: f32, f16, bf16, f64, i8, u8, i32, i64 data. Runs the oneDNN pooling primitive. f64 is computed in
  f32 and i64 in i32 (the plugin converts them): values that do not survive the round trip come back changed
  (ndpool does not reproduce that, SEMANTICS.md). No dilations attribute (it is MaxPool-8's).
* MaxPool-8 / MaxPool-14 with the indices output connected: the CPU plugin's pooling node supports only one
  output, so these run OpenVINO's reference implementation ("fallback on ngraph reference"): f32, f16, f64,
  i8, u8, i32, i64 data, **not bf16** ("evaluate() is not implemented"); indices i32 or i64.
  With only the values output used they run the oneDNN primitive like MaxPool-1 (bf16 accepted there).
* AdaptiveMaxPool-8: every data type above, but the CPU plugin accepts only ``index_element_type="i32"``
  ("CPU plugin does not support i64 for use with oneDNN").
* ``rounding_type="ceil_torch"`` exists only in MaxPool-14. ``auto_pad`` spellings: explicit, same_upper,
  same_lower, valid (ndpool's "none" maps to explicit).
* bf16 tensors: the Python API exposes bf16 buffers as float16 arrays; this module moves the bits, so callers
  pass and get ``ml_dtypes.bfloat16`` arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import openvino as ov

try:  # the opsets moved out of openvino.runtime in 2025
    from openvino import opset1, opset8, opset14
except ImportError:  # pragma: no cover - older releases
    from openvino.runtime import opset1, opset8, opset14  # type: ignore[no-redef]

__all__ = [
    "OV_VERSION",
    "CONFIG",
    "ov_type",
    "maxpool1",
    "maxpool8",
    "maxpool14",
    "maxpool8_values",
    "maxpool14_values",
    "adaptive_maxpool8",
    "maxpool_shape",
    "adaptive_maxpool_shape",
]

OV_VERSION = ov.get_version()
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
_BF16 = np.dtype(ml_dtypes.bfloat16)

_TYPES = {
    "float32": ov.Type.f32,
    "float16": ov.Type.f16,
    "bfloat16": ov.Type.bf16,
    "float64": ov.Type.f64,
    "int8": ov.Type.i8,
    "uint8": ov.Type.u8,
    "int32": ov.Type.i32,
    "int64": ov.Type.i64,
}


@functools.cache
def _core() -> ov.Core:
    return ov.Core()


def ov_type(dtype: Any) -> ov.Type:
    """OpenVINO element type of a numpy dtype (``ml_dtypes.bfloat16`` -> bf16)."""
    return _TYPES[np.dtype(dtype).name]


def _pad_type(auto_pad: str) -> str:
    a = str(auto_pad).lower()
    return "explicit" if a in ("none", "explicit", "notset") else a


def _key(attrs: dict) -> tuple:
    """Hashable, normalized attribute key."""
    return (
        tuple(int(v) for v in attrs["kernel"]),
        tuple(int(v) for v in attrs["strides"]),
        tuple(int(v) for v in attrs["pads_begin"]),
        tuple(int(v) for v in attrs["pads_end"]),
        tuple(int(v) for v in attrs.get("dilations", (1,) * len(attrs["kernel"]))),
        str(attrs.get("rounding_type", "floor")),
        _pad_type(attrs.get("auto_pad", "none")),
    )


def _maxpool_node(param: Any, key: tuple, version: int, index_element_type: str, axis: int) -> Any:
    kernel, strides, pb, pe, dil, rounding, auto_pad = key
    if version == 1:
        if any(d != 1 for d in dil):
            raise ValueError("MaxPool-1 has no dilations")
        return opset1.max_pool(param, list(strides), list(pb), list(pe), list(kernel), rounding, auto_pad)
    ops = opset8 if version == 8 else opset14
    return ops.max_pool(
        param, list(strides), list(dil), list(pb), list(pe), list(kernel), rounding, auto_pad,
        index_element_type, axis,
    )


@functools.lru_cache(maxsize=4096)
def _compiled_maxpool(
    dtype: str, shape: tuple, key: tuple, version: int, index_element_type: str, axis: int, outputs: int
) -> Any:
    """``shape`` is a rank-long tuple of -1 (dynamic) or the static NCX shape."""
    param = opset1.parameter(ov.PartialShape(list(shape)), _TYPES[dtype])
    node = _maxpool_node(param, key, version, index_element_type, axis)
    outs = node.outputs()[:outputs]
    return _core().compile_model(ov.Model(outs, [param]), "CPU", CONFIG)


@functools.lru_cache(maxsize=4096)
def _compiled_adaptive(dtype: str, shape: tuple, output_size: tuple, index_element_type: str) -> Any:
    param = opset1.parameter(ov.PartialShape(list(shape)), _TYPES[dtype])
    size = opset1.constant(np.array(output_size, dtype=np.int64))
    node = opset8.adaptive_max_pool(param, size, index_element_type)
    return _core().compile_model(ov.Model(node.outputs(), [param]), "CPU", CONFIG)


def _to_tensor(x: np.ndarray) -> ov.Tensor:
    x = np.ascontiguousarray(x)
    if x.dtype == _BF16:
        t = ov.Tensor(ov.Type.bf16, ov.Shape(list(x.shape)))
        t.data.view(np.uint16)[...] = x.view(np.uint16)
        return t
    return ov.Tensor(x, shared_memory=False)


def _from_output(a: np.ndarray, want: np.dtype | None) -> np.ndarray:
    a = np.array(a, copy=True)
    if want == _BF16:
        return a.view(np.uint16).view(_BF16)
    return a


def _run(compiled: Any, x: np.ndarray) -> list[np.ndarray]:
    req = compiled.create_infer_request()
    req.infer([_to_tensor(x)])
    outs = []
    for i, port in enumerate(compiled.outputs):
        data = req.get_output_tensor(i).data
        outs.append(_from_output(data, x.dtype if i == 0 else None))
    return outs


def _shape_arg(x: np.ndarray, dynamic: bool) -> tuple:
    return (-1,) * x.ndim if dynamic else tuple(int(s) for s in x.shape)


def maxpool1(x: np.ndarray, attrs: dict, *, dynamic: bool = True) -> np.ndarray:
    """MaxPool-1 values (``attrs['dilations']`` must be all 1)."""
    c = _compiled_maxpool(x.dtype.name, _shape_arg(x, dynamic), _key(attrs), 1, "i64", 0, 1)
    return _run(c, x)[0]


def _maxpool_idx(version: int, x: np.ndarray, attrs: dict, index_element_type: str, axis: int, dynamic: bool):
    c = _compiled_maxpool(x.dtype.name, _shape_arg(x, dynamic), _key(attrs), version, index_element_type, axis, 2)
    v, i = _run(c, x)
    return v, i


def maxpool8(
    x: np.ndarray, attrs: dict, *, index_element_type: str = "i64", axis: int = 0, dynamic: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool-8 values and indices (reference implementation on CPU; no bf16)."""
    return _maxpool_idx(8, x, attrs, index_element_type, axis, dynamic)


def maxpool14(
    x: np.ndarray, attrs: dict, *, index_element_type: str = "i64", axis: int = 0, dynamic: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool-14 values and indices (reference implementation on CPU; no bf16; knows ``ceil_torch``)."""
    return _maxpool_idx(14, x, attrs, index_element_type, axis, dynamic)


def maxpool8_values(x: np.ndarray, attrs: dict, *, dynamic: bool = True) -> np.ndarray:
    """MaxPool-8 with only its values output used (oneDNN primitive on CPU)."""
    c = _compiled_maxpool(x.dtype.name, _shape_arg(x, dynamic), _key(attrs), 8, "i64", 0, 1)
    return _run(c, x)[0]


def maxpool14_values(x: np.ndarray, attrs: dict, *, dynamic: bool = True) -> np.ndarray:
    """MaxPool-14 with only its values output used (oneDNN primitive on CPU)."""
    c = _compiled_maxpool(x.dtype.name, _shape_arg(x, dynamic), _key(attrs), 14, "i64", 0, 1)
    return _run(c, x)[0]


def adaptive_maxpool8(
    x: np.ndarray, output_size: Sequence[int], *, index_element_type: str = "i32", dynamic: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveMaxPool-8 values and indices (the CPU plugin accepts only i32 indices)."""
    c = _compiled_adaptive(
        x.dtype.name, _shape_arg(x, dynamic), tuple(int(o) for o in output_size), index_element_type
    )
    v, i = _run(c, x)
    return v, i


def _static_shape(node: Any) -> tuple[int, ...]:
    ps = node.get_output_partial_shape(0)
    return tuple(int(d.get_length()) if d.is_static else -1 for d in ps)


def maxpool_shape(
    shape: Sequence[int], attrs: dict, *, version: int = 8, dtype: str = "float32"
) -> tuple[int, ...]:
    """OpenVINO's inferred output shape of MaxPool-``version`` for a static NCX input shape.

    Raises whatever OpenVINO raises when it rejects the configuration (``RuntimeError`` / ``ov`` exceptions).
    """
    param = opset1.parameter(ov.PartialShape([int(s) for s in shape]), _TYPES[dtype])
    return _static_shape(_maxpool_node(param, _key(attrs), version, "i64", 0))


def adaptive_maxpool_shape(shape: Sequence[int], output_size: Sequence[int], *, dtype: str = "float32") -> tuple:
    """OpenVINO's inferred output shape of AdaptiveMaxPool-8 (``output_size`` as a constant input)."""
    param = opset1.parameter(ov.PartialShape([int(s) for s in shape]), _TYPES[dtype])
    size = opset1.constant(np.array([int(o) for o in output_size], dtype=np.int64))
    return _static_shape(opset8.adaptive_max_pool(param, size, "i32"))
