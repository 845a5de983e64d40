"""Adapters that run one workload on ndpool or on a peer engine.

Each adapter takes a workload and its input data (the logical NCX array, f32/f16/bf16) and returns
``Candidate``s: a zero-argument callable that runs the op once, plus a function that turns its result into NCX
values for the cross-check. A peer offers one candidate per memory layout it can natively take; the suite keeps the
fastest. Every engine is imported lazily, so a missing one only empties its column. Layout conversions and
session/model compilation happen here, outside the timed calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from suite import Workload

THREADS = 2


@dataclass
class Candidate:
    layout: str  # "NCX" (channels first) or "NXC" (channels last)
    run: Callable[[], Any]
    values_ncx: Callable[[Any], np.ndarray]  # result of run() -> values in NCX order, for the cross-check


class Unsupported(Exception):
    """The engine has no implementation for this workload (dtype, index type, op)."""


def to_nxc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


def from_nxc(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, -1, 1)


# --- ndpool -------------------------------------------------------------------------------------------------


def ndpool_candidate(w: Workload, x_ncx: np.ndarray, semantics: str = "spec") -> Candidate:
    """ndpool on the workload's own layout (the layout is part of what is being measured), under the
    preset ``semantics`` (ndpool's default: spec)."""
    import ndpool

    x = to_nxc(x_ncx) if w.layout == "NXC" else x_ncx
    if w.op == "max_pool":
        def run() -> Any:
            return ndpool.max_pool(
                x, kernel=w.kernel, strides=w.strides, pads_begin=w.pads, pads_end=w.pads,
                data_format=w.layout, return_indices=w.indices is not None,
                index_element_type=w.indices or "i64", semantics=semantics,
            )
    else:
        def run() -> Any:
            return ndpool.adaptive_max_pool(
                x, w.output_size, index_element_type=w.indices, data_format=w.layout, semantics=semantics
            )

    def values_ncx(result: Any) -> np.ndarray:
        values = result[0] if isinstance(result, tuple) else result
        return from_nxc(values) if w.layout == "NXC" else values

    return Candidate(w.layout, run, values_ncx)


def set_ndpool_threads() -> None:
    try:
        import numba
    except ImportError:
        return
    numba.set_num_threads(THREADS)


# --- onnxruntime --------------------------------------------------------------------------------------------


def onnxruntime_candidates(w: Workload, x_ncx: np.ndarray) -> list[Candidate]:
    """ONNX MaxPool, NCX only (the Indices output is always int64, flat over N, C and X)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    if w.op != "max_pool" or w.indices == "i32":
        raise Unsupported("onnxruntime: only MaxPool with int64 indices")
    elem = {"f32": onnx.TensorProto.FLOAT, "f16": onnx.TensorProto.FLOAT16,
            "bf16": onnx.TensorProto.BFLOAT16}[w.dtype]
    outputs = [helper.make_tensor_value_info("y", elem, None)]
    if w.indices:
        outputs.append(helper.make_tensor_value_info("i", onnx.TensorProto.INT64, None))
    node = helper.make_node("MaxPool", ["x"], [o.name for o in outputs], kernel_shape=list(w.kernel),
                            strides=list(w.strides), pads=list(w.pads) * 2)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", elem, x_ncx.shape)], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    # Its idle workers stop spinning: with spinning on they went on for 50 ms and more after its call
    # returned and slowed whichever engine ran next (ndpool's 3-D k3s2p1 NCX 1.5 -> 2.7 ms, call after
    # call, until the spinning stopped); onnxruntime's own calls were about 5% slower without it (1.6-1.7
    # -> 1.7-1.8 ms on that workload).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # NOT_IMPLEMENTED for the dtype
        raise Unsupported(f"onnxruntime: {str(e).splitlines()[0][:120]}") from e

    # IOBinding: the input is used in place and outputs stay OrtValues, so no copy is timed but the op's own.
    binding = session.io_binding()
    binding.bind_cpu_input("x", x_ncx)
    for o in outputs:
        binding.bind_output(o.name, "cpu")

    def run() -> Any:
        session.run_with_iobinding(binding)
        return binding.get_outputs()

    return [Candidate("NCX", run, lambda result: result[0].numpy())]


# --- OpenVINO -----------------------------------------------------------------------------------------------


def openvino_candidates(w: Workload, x_ncx: np.ndarray) -> list[Candidate]:
    """OpenVINO CPU, NCX input (the plugin picks its own blocked layout inside).

    An NXC input through PrePostProcessor only adds a transpose: measured 3x slower on the stem, so not offered.
    MaxPool-1 when no indices are asked for, MaxPool-8 with indices, AdaptiveMaxPool-8 (CPU: i32 indices only).
    """
    import openvino as ov
    import openvino.opset1 as opset1
    import openvino.opset8 as opset8

    if w.dtype == "bf16":
        raise Unsupported("openvino: no bf16 model inputs on CPU")
    elem = {"f32": ov.Type.f32, "f16": ov.Type.f16}[w.dtype]
    param = opset8.parameter(list(x_ncx.shape), elem)
    pads = list(w.pads)
    if w.op == "adaptive_max_pool":
        size = opset8.constant(np.array(w.output_size, dtype=np.int64))
        node = opset8.adaptive_max_pool(param, size, w.indices)
        outputs = [node.output(0), node.output(1)]
    elif w.indices:
        node = opset8.max_pool(param, list(w.strides), [1] * len(w.kernel), pads, pads, list(w.kernel),
                               "floor", "explicit", w.indices)
        outputs = [node.output(0), node.output(1)]
    else:
        node = opset1.max_pool(param, list(w.strides), pads, pads, list(w.kernel), "floor", "explicit")
        outputs = [node.output(0)]
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": THREADS}
    try:
        compiled = ov.Core().compile_model(ov.Model(outputs, [param]), "CPU", config)
    except Exception as e:  # e.g. AdaptiveMaxPool with i64 indices
        raise Unsupported(f"openvino: {str(e).splitlines()[-1][:120]}") from e
    request = compiled.create_infer_request()

    # share_inputs/outputs: no copies in or out, the same footing as the other engines.
    def run() -> Any:
        return request.infer({0: x_ncx}, share_inputs=True, share_outputs=True)

    return [Candidate("NCX", run, lambda result: np.asarray(result[0]))]


# --- torch --------------------------------------------------------------------------------------------------


def torch_candidates(w: Workload, x_ncx: np.ndarray) -> list[Candidate]:
    """torch.nn.functional on a contiguous tensor and on a channels_last one (for 1-D: a permuted NLC view)."""
    import torch
    import torch.nn.functional as F

    if w.indices == "i32":
        raise Unsupported("torch: indices are int64 only")
    torch.set_num_threads(THREADS)
    rank = len(w.shape) - 2
    ncx = to_torch(x_ncx)
    nxc = {1: lambda t: t.transpose(1, 2).contiguous().transpose(1, 2),
           2: lambda t: t.contiguous(memory_format=torch.channels_last),
           3: lambda t: t.contiguous(memory_format=torch.channels_last_3d)}[rank](ncx)

    if w.op == "max_pool":
        pool = getattr(F, f"max_pool{rank}d")

        def op(t: Any) -> Any:
            return pool(t, w.kernel, w.strides, w.pads, return_indices=w.indices is not None)
    else:
        pool = getattr(F, f"adaptive_max_pool{rank}d")

        def op(t: Any) -> Any:
            return pool(t, w.output_size, return_indices=True)

    def values_ncx(result: Any) -> np.ndarray:
        values = result[0] if isinstance(result, tuple) else result
        return from_torch(values.contiguous(), x_ncx.dtype)

    # inference_mode: no autograd bookkeeping, as a deployed model would run.
    def runner(t: Any) -> Callable[[], Any]:
        def run() -> Any:
            with torch.inference_mode():
                return op(t)
        return run

    return [Candidate("NCX", runner(ncx), values_ncx), Candidate("NXC", runner(nxc), values_ncx)]


def to_torch(x: np.ndarray) -> Any:
    import torch

    if x.dtype.name == "bfloat16":  # torch.from_numpy knows no ml_dtypes: go through the bit pattern
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


def from_torch(t: Any, dtype: np.dtype) -> np.ndarray:
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(dtype)
    return t.numpy()


PEERS: dict[str, Callable[[Workload, np.ndarray], list[Candidate]]] = {
    "onnxruntime": onnxruntime_candidates,
    "openvino": openvino_candidates,
    "torch": torch_candidates,
}
