"""The real OpenVINO engine (CPU plugin) as a test oracle for ndpool, on NCX numpy input.

Single-case functions (each compiles, or reuses from a cache, a one-node model):

``maxpool1(x, attrs)`` -> values                        MaxPool-1 (oneDNN pooling primitive on CPU)
``maxpool8(x, attrs, index_element_type=, axis=)``      MaxPool-8 -> (values, indices)
``maxpool14(x, attrs, index_element_type=, axis=)``     MaxPool-14 -> (values, indices); knows ``ceil_torch``
``maxpool8_values(x, attrs)`` / ``maxpool14_values``    MaxPool-8/14 with the indices output unused (oneDNN)
``adaptive_maxpool8(x, output_size)``                   AdaptiveMaxPool-8 -> (values, i32 indices)
``maxpool_shape(shape, attrs, version=)``               OpenVINO's shape inference of MaxPool-1/8/14 (no run)
``adaptive_maxpool_shape(shape, output_size)``          OpenVINO's shape inference of AdaptiveMaxPool-8

Batches, for thousands of cases: compiling a model costs 35-100 ms whatever its size and a run ~1 ms, so
``Node`` descriptions are packed into one model (one Parameter and one pooling node each) by
``compile_batch(nodes)`` (``lru_cache``d) and run with ``run_batch(compiled, xs)``, one input array per node.
A node's input shape is either dynamic (``(-1,) * ndim``: one compiled model serves every input shape) or
static. ``attrs`` uses ndpool's keyword names (``kernel``, ``strides``, ``pads_begin``, ``pads_end``,
``dilations``, ``rounding_type``, ``auto_pad``) with one entry per spatial axis, as ``tests/cases.py`` makes.
Every model is compiled with ``INFERENCE_PRECISION_HINT=f32``: this CPU's default is bf16, which rounds f32.

What the engine accepts and does (OpenVINO 2026.4, CPU plugin, found by running it; test_vs_openvino.py)
------------------------------------------------------------------------------------------------------
* Data types: f32, f16, bf16, f64, i8, u8, i32, i64 everywhere, except MaxPool-8/14 with the indices output
  connected: no bf16 (see next point).
* MaxPool-8/14 with indices do not run oneDNN: the CPU pooling node supports one output, so the plugin falls
  back to OpenVINO's reference implementation ("evaluate() is not implemented" for bf16). Indices i32 or i64;
  ``axis`` in ``[-rank, rank)``. With only the values output used, MaxPool-8/14 run oneDNN like MaxPool-1.
* Precision: f64 is computed in f32 (values are rounded to f32, +-inf come back as +-3.4028235e38) and i64 in
  i32 (an i64 empty window gives int32's minimum; -2**31 ties with the start value). On the oneDNN paths
  (MaxPool-1, MaxPool-8/14 values only, AdaptiveMaxPool-8) i32 and i64 go through f32: integers beyond 2**24
  come back rounded. ndpool reproduces none of this (SEMANTICS.md): callers keep such inputs out.
* bf16 on oneDNN: the value of a window with no tap above ``lowest`` depends on the primitive oneDNN picks:
  ``ref_any_bf16`` gives 0xFF7F (SEMANTICS.md's ``lowest``), ``jit_avx512_bf16`` usually gives 0xFF80 (-inf,
  f32's lowest rounded to nearest); which one runs depends on kernel, channels and static/dynamic shape.
* A spatial size of 0: MaxPool-8/14 (reference) give ``lowest`` with index 0; the oneDNN paths return
  uninitialized memory (garbage): do not compare them there. N = 0 or C = 0 is rejected by shape inference
  ("Batch size is zero", "Channel count is zero").
* ``P < dk`` is rejected by shape inference ("Kernel after dilation has size ... larger than the data shape
  after padding"), as ndpool does; so are zero strides / dilations / kernel, and negative pads.
* ``ceil_torch`` (MaxPool-14 only): OpenVINO does not drop the last window when ``I + pads_begin == 0``
  (a spatial size of 0 and no begin pad); SEMANTICS.md's rule does, so the shapes differ by one there.
* Dynamic-shape bugs: (1) the reference MaxPool-8/14 (the path with indices) ignores ``same_upper`` /
  ``same_lower`` pads on a dynamic input shape (it pools as if the pads were 0 and the output were the same_*
  size); (2) with ``ceil_torch`` the output's lower bound is inferred at ``I = 0`` with the quirk above, so an
  input whose true output is smaller fails at run time ("Can not clone with new dims", e.g. kernel 1,
  stride 3, pads (0, 3), I = 1: bound 2, output 1). Static shapes are right. The single-case functions
  therefore compile those static; batch callers must give those nodes static shapes
  (``needs_static_shape``).
* AdaptiveMaxPool-8: the CPU plugin accepts only ``index_element_type="i32"`` ("CPU plugin does not support
  i64 for use with oneDNN"). Shape inference accepts ``In = 0`` with ``Out > 0`` (ndpool rejects it) and
  gives a dynamic dimension for a negative ``output_size`` entry (ndpool rejects it); ``Out = 0`` runs.
* bf16 tensors: the Python API exposes bf16 buffers as float16 arrays; this module moves the bits, so callers
  pass and get ``ml_dtypes.bfloat16`` arrays.
"""

from __future__ import annotations

import dataclasses
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
    "Node",
    "maxpool_node",
    "adaptive_node",
    "compile_batch",
    "needs_static_shape",
    "run_batch",
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


def _pad_type(auto_pad: str) -> str:
    a = str(auto_pad).lower()
    return "explicit" if a in ("none", "explicit", "notset") else a


def _key(attrs: dict) -> tuple:
    """Hashable, normalized MaxPool attributes."""
    return (
        tuple(int(v) for v in attrs["kernel"]),
        tuple(int(v) for v in attrs["strides"]),
        tuple(int(v) for v in attrs["pads_begin"]),
        tuple(int(v) for v in attrs["pads_end"]),
        tuple(int(v) for v in attrs.get("dilations", (1,) * len(attrs["kernel"]))),
        str(attrs.get("rounding_type", "floor")),
        _pad_type(attrs.get("auto_pad", "none")),
    )


@dataclasses.dataclass(frozen=True)
class Node:
    """One pooling node of a batch model (hashable; build it with ``maxpool_node`` / ``adaptive_node``)."""

    op: str  # "MaxPool-1", "MaxPool-8", "MaxPool-14", "AdaptiveMaxPool-8"
    dtype: str  # numpy dtype name ("bfloat16" for ml_dtypes')
    shape: tuple[int, ...]  # static NCX input shape, or -1 entries for dynamic dimensions
    key: tuple = ()  # MaxPool attributes (_key)
    output_size: tuple[int, ...] = ()  # AdaptiveMaxPool-8
    index_element_type: str = "i64"
    axis: int = 0
    with_indices: bool = True


def maxpool_node(
    dtype: Any,
    shape_or_rank: Sequence[int] | int,
    attrs: dict,
    *,
    version: int,
    with_indices: bool = True,
    index_element_type: str = "i64",
    axis: int = 0,
) -> Node:
    """A MaxPool-``version`` node; an int ``shape_or_rank`` (the input's ndim) means a dynamic shape."""
    shape = (-1,) * shape_or_rank if isinstance(shape_or_rank, int) else tuple(int(s) for s in shape_or_rank)
    if version == 1:
        with_indices = False
    return Node(f"MaxPool-{version}", np.dtype(dtype).name, shape, _key(attrs), (), index_element_type, int(axis),
                with_indices)


def adaptive_node(
    dtype: Any, shape_or_rank: Sequence[int] | int, output_size: Sequence[int], *, index_element_type: str = "i32"
) -> Node:
    """An AdaptiveMaxPool-8 node (``output_size`` is a constant input)."""
    shape = (-1,) * shape_or_rank if isinstance(shape_or_rank, int) else tuple(int(s) for s in shape_or_rank)
    return Node("AdaptiveMaxPool-8", np.dtype(dtype).name, shape, (), tuple(int(o) for o in output_size),
                index_element_type)


def _build(param: Any, node: Node) -> Any:
    if node.op == "AdaptiveMaxPool-8":
        size = opset1.constant(np.array(node.output_size, dtype=np.int64))
        return opset8.adaptive_max_pool(param, size, node.index_element_type)
    kernel, strides, pb, pe, dil, rounding, auto_pad = node.key
    if node.op == "MaxPool-1":
        if any(d != 1 for d in dil):
            raise ValueError("MaxPool-1 has no dilations")
        return opset1.max_pool(param, list(strides), list(pb), list(pe), list(kernel), rounding, auto_pad)
    ops = opset8 if node.op == "MaxPool-8" else opset14
    return ops.max_pool(param, list(strides), list(dil), list(pb), list(pe), list(kernel), rounding, auto_pad,
                        node.index_element_type, node.axis)


class Compiled:
    """A compiled batch model with its infer request and, per node, its output ports."""

    def __init__(self, nodes: tuple[Node, ...]) -> None:
        params: list[Any] = []
        outs: list[Any] = []
        self.slots: list[tuple[int, int]] = []
        for node in nodes:
            param = opset1.parameter(ov.PartialShape(list(node.shape)), _TYPES[node.dtype])
            n_out = 2 if (node.op == "AdaptiveMaxPool-8" or node.with_indices) else 1
            self.slots.append((len(outs), n_out))
            outs.extend(_build(param, node).outputs()[:n_out])
            params.append(param)
        self.nodes = nodes
        self.model = _core().compile_model(ov.Model(outs, params), "CPU", CONFIG)
        self.request = self.model.create_infer_request()


@functools.lru_cache(maxsize=512)
def compile_batch(nodes: tuple[Node, ...]) -> Compiled:
    """Compile (or fetch from the cache) one model holding every node, each with its own Parameter."""
    return Compiled(tuple(nodes))


def _to_tensor(x: np.ndarray) -> ov.Tensor:
    x = np.ascontiguousarray(x)
    if x.dtype == _BF16:
        t = ov.Tensor(ov.Type.bf16, ov.Shape(list(x.shape)))
        if x.size:
            t.data.view(np.uint16)[...] = x.view(np.uint16)
        return t
    return ov.Tensor(x, shared_memory=False)


def run_batch(compiled: Compiled, xs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Run once with one input per node; returns ``(values, indices or None)`` per node (copies)."""
    req = compiled.request
    req.infer([_to_tensor(x) for x in xs])
    res = []
    for node, x, (first, n_out) in zip(compiled.nodes, xs, compiled.slots, strict=True):
        v = np.array(req.get_output_tensor(first).data, copy=True)
        if node.dtype == "bfloat16":
            v = v.view(np.uint16).view(_BF16)
        i = np.array(req.get_output_tensor(first + 1).data, copy=True) if n_out == 2 else None
        res.append((v, i))
    return res


# ---------------------------------------------------------------------------------------------------------------
# Single cases
# ---------------------------------------------------------------------------------------------------------------


def _one(node: Node, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    return run_batch(compile_batch((node,)), [x])[0]


def needs_static_shape(attrs: dict, *, with_indices: bool) -> bool:
    """True where a dynamic input shape hits an engine bug (module docstring): ceil_torch, and same_* pads on
    the path with indices."""
    key = _key(attrs)
    return key[-2] == "ceil_torch" or (with_indices and key[-1] in ("same_upper", "same_lower"))


def _shape_for(x: np.ndarray, dynamic: bool | None, attrs: dict, indices: bool) -> Sequence[int] | int:
    if dynamic is None:
        dynamic = not needs_static_shape(attrs, with_indices=indices)
    return x.ndim if dynamic else x.shape


def maxpool1(x: np.ndarray, attrs: dict, *, dynamic: bool | None = None) -> np.ndarray:
    """MaxPool-1 values (``attrs['dilations']`` must be all 1)."""
    return _one(maxpool_node(x.dtype, _shape_for(x, dynamic, attrs, False), attrs, version=1), x)[0]


def maxpool8(
    x: np.ndarray, attrs: dict, *, index_element_type: str = "i64", axis: int = 0, dynamic: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool-8 values and indices (OpenVINO's reference implementation on CPU; no bf16)."""
    node = maxpool_node(x.dtype, _shape_for(x, dynamic, attrs, True), attrs, version=8,
                        index_element_type=index_element_type, axis=axis)
    return _one(node, x)  # type: ignore[return-value]


def maxpool14(
    x: np.ndarray, attrs: dict, *, index_element_type: str = "i64", axis: int = 0, dynamic: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool-14 values and indices (reference implementation on CPU; no bf16; knows ``ceil_torch``)."""
    node = maxpool_node(x.dtype, _shape_for(x, dynamic, attrs, True), attrs, version=14,
                        index_element_type=index_element_type, axis=axis)
    return _one(node, x)  # type: ignore[return-value]


def maxpool8_values(x: np.ndarray, attrs: dict, *, dynamic: bool | None = None) -> np.ndarray:
    """MaxPool-8 with only its values output used (oneDNN primitive on CPU)."""
    node = maxpool_node(x.dtype, _shape_for(x, dynamic, attrs, False), attrs, version=8, with_indices=False)
    return _one(node, x)[0]


def maxpool14_values(x: np.ndarray, attrs: dict, *, dynamic: bool | None = None) -> np.ndarray:
    """MaxPool-14 with only its values output used (oneDNN primitive on CPU)."""
    node = maxpool_node(x.dtype, _shape_for(x, dynamic, attrs, False), attrs, version=14, with_indices=False)
    return _one(node, x)[0]


def adaptive_maxpool8(
    x: np.ndarray, output_size: Sequence[int], *, index_element_type: str = "i32", dynamic: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveMaxPool-8 values and indices (the CPU plugin accepts only i32 indices)."""
    node = adaptive_node(x.dtype, x.ndim if dynamic else x.shape, output_size,
                         index_element_type=index_element_type)
    return _one(node, x)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------------------
# Shape inference
# ---------------------------------------------------------------------------------------------------------------


def _static_shape(node: Any) -> tuple[int, ...]:
    ps = node.get_output_partial_shape(0)
    return tuple(int(d.get_length()) if d.is_static else -1 for d in ps)


def maxpool_shape(
    shape: Sequence[int], attrs: dict, *, version: int = 8, dtype: str = "float32", axis: int = 0
) -> tuple[int, ...]:
    """OpenVINO's inferred output shape of MaxPool-``version`` for a static NCX input shape (no compile).

    Raises what OpenVINO raises (an ``ov`` exception, a ``RuntimeError``) when it rejects the configuration
    (``axis``, MaxPool-8/14's, is validated too).
    """
    param = opset1.parameter(ov.PartialShape([int(s) for s in shape]), _TYPES[dtype])
    node = maxpool_node(dtype, tuple(shape), attrs, version=version, axis=axis)
    return _static_shape(_build(param, node))


def adaptive_maxpool_shape(shape: Sequence[int], output_size: Sequence[int], *, dtype: str = "float32") -> tuple:
    """OpenVINO's inferred output shape of AdaptiveMaxPool-8; -1 marks a dynamic dimension."""
    param = opset1.parameter(ov.PartialShape([int(s) for s in shape]), _TYPES[dtype])
    return _static_shape(_build(param, adaptive_node(dtype, tuple(shape), output_size)))
