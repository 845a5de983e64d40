"""One pooling configuration under every preset and every installed engine, side by side.

The command line's ``ndpool shape`` and ``ndpool compare`` resolve their ``--op NAME ATTR=VALUE ...`` here
(:func:`resolve`), and ``compare`` runs it on ndpool's presets and on OpenVINO, onnxruntime and torch. The
engines are imported only inside their runners, so nothing here costs an engine import until a comparison
runs, and a missing engine is reported as absent. Each engine runs the configuration the way a converted
model would: its own attribute spellings and defaults (OpenVINO's ``axis=0`` index scope, onnxruntime's
global indices and its own ``SAME`` pads, torch's per-plane indices), on NCX data, where it accepts it;
otherwise its row says ``n/a`` and why.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._attributes import MaxPoolAttributes, normalize_max_pool_attributes, parse_index_type, parse_input_shape
from ._dtypes import DTYPE_NAMES, dtype_name
from ._errors import PoolingError
from ._geometry import AdaptiveGeometry, PoolGeometry
from ._ops import (
    adaptive_max_pool,
    adaptive_max_pool_geometry_for,
    max_pool,
    max_pool_geometry_for,
)
from ._semantics import ADAPTIVE_PRESETS, MAX_POOL_PRESETS, PLANE_SCOPE, preset_for
from .spec import get_op, list_ops
from .spec._ir import max_pool_keywords, spec_op_geometry

__all__ = ["Configuration", "Row", "compare", "format_comparison", "format_shape", "generate", "resolve"]

PLAIN_OPS = ("max_pool", "adaptive_max_pool")
ENGINES = ("OpenVINO", "onnxruntime", "torch")
ENGINE_PRESET = {"OpenVINO": "openvino", "onnxruntime": "onnx", "torch": "torch"}
_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}  # this CPU's default is bf16, which would round f32 data


class Unavailable(Exception):
    """An engine does not take this configuration (the message says why)."""


@dataclass(frozen=True)
class Configuration:
    """A resolved ``--op NAME ATTR=VALUE ...``: the geometry and how to run it on ndpool and the engines."""

    op: str  # as given: a get_op name, "max_pool" or "adaptive_max_pool"
    input_shape: tuple[int, ...]
    given: Mapping[str, Any]  # the attributes as given (for display)
    geometry: PoolGeometry | AdaptiveGeometry
    output_names: tuple[str, ...]
    semantics: str  # the preset given (or the op's default)
    presets: tuple[str, ...]
    run: Callable[[np.ndarray, str], tuple[np.ndarray, ...]]  # (data, preset) -> outputs
    pool: MaxPoolAttributes | None  # normalized MaxPool attributes (None for AdaptiveMaxPool)
    openvino_version: int  # MaxPool-1, -8 or -14 (8 for AdaptiveMaxPool-8)
    index_element_type: str

    @property
    def adaptive(self) -> bool:
        return self.pool is None

    @property
    def data_format(self) -> str:
        return self.geometry.data_format

    @property
    def with_indices(self) -> bool:
        return len(self.output_names) == 2


def _value(text: str) -> Any:
    """An ``ATTR=VALUE`` value: an int, a bool (``true``/``false``), else the string (``"2,2"``)."""
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    try:
        return int(t)
    except ValueError:
        return t


def parse_assignments(items: Sequence[str], op: str) -> dict[str, Any]:
    """``["kernel=3", "strides=2,2"]`` -> ``{"kernel": 3, "strides": "2,2"}``."""
    result: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise PoolingError(op, None, "attributes are given as ATTR=VALUE", item)
        result[name.strip()] = _value(value)
    return result


def _check_names(op: str, given: Mapping[str, Any], fn: Callable[..., Any]) -> None:
    """Every given name is a keyword of ``fn`` and every required one is given."""
    parameters = {name: p for name, p in inspect.signature(fn).parameters.items() if name not in ("data", "_op")}
    for name, value in given.items():
        if name not in parameters:
            raise PoolingError(op, name, f"is not an attribute of {op} (valid: {', '.join(parameters)})", value)
    for name, parameter in parameters.items():
        if parameter.default is inspect.Parameter.empty and name not in given:
            raise PoolingError(op, name, "is required", None)


def resolve(op: str, input_shape: Any, attributes: Mapping[str, Any]) -> Configuration:
    """Resolve ``op`` (a :func:`ndpool.get_op` name, ``max_pool`` or ``adaptive_max_pool``) on a shape.

    Attribute names are the op's: the spec's for a get_op name (IR strings welcome; ``output_size`` is
    AdaptiveMaxPool's second input), the keywords of :func:`ndpool.max_pool` or
    :func:`ndpool.adaptive_max_pool` otherwise. Raises :class:`ndpool.PoolingError`.
    """
    if op not in PLAIN_OPS and op not in list_ops():
        raise PoolingError("ndpool", "op", f"must be one of {', '.join(PLAIN_OPS + tuple(list_ops()))}", op)
    attrs = dict(attributes)
    shape: tuple[int, ...] = ()
    try:
        shape = parse_input_shape(op, input_shape)
        return _resolve(op, shape, attrs)
    except PoolingError as exc:
        raise exc.with_input_shape(shape) if shape else exc


def _resolve(op: str, shape: tuple[int, ...], attrs: dict[str, Any]) -> Configuration:
    given = dict(attrs)
    if op == "max_pool":
        _check_names(op, attrs, max_pool)
        semantics = attrs.pop("semantics", "spec")
        pool = normalize_max_pool_attributes(len(shape), semantics=semantics, **attrs)
        geom: PoolGeometry | AdaptiveGeometry = max_pool_geometry_for(shape, semantics=semantics, **attrs)
        names = ("output", "indices") if pool.return_indices else ("output",)

        def run_plain(x: np.ndarray, preset: str) -> tuple[np.ndarray, ...]:
            result = max_pool(x, semantics=preset, **attrs)
            return tuple(result) if pool.return_indices else (result,)

        version = 14 if pool.rounding_type == "ceil_torch" else 8
        return Configuration(op, shape, given, geom, names, semantics, tuple(MAX_POOL_PRESETS), run_plain, pool,
                             version, "i64" if pool.index_dtype == np.int64 else "i32")
    if op == "adaptive_max_pool":
        _check_names(op, attrs, adaptive_max_pool)
        semantics = attrs.pop("semantics", "spec")
        output_size = attrs.pop("output_size")
        preset_for("AdaptiveMaxPool", semantics)
        geom = adaptive_max_pool_geometry_for(shape, output_size, data_format=attrs.get("data_format", "NCX"))
        index_dtype = parse_index_type("AdaptiveMaxPool", attrs.get("index_element_type", "i64"))
        geom.check_index_type("AdaptiveMaxPool", index_dtype, PLANE_SCOPE)

        def run_adaptive(x: np.ndarray, preset: str) -> tuple[np.ndarray, ...]:
            return tuple(adaptive_max_pool(x, output_size, semantics=preset, **attrs))

        return Configuration(op, shape, given, geom, ("output", "indices"), semantics, tuple(ADAPTIVE_PRESETS),
                             run_adaptive, None, 8, "i64" if index_dtype == np.int64 else "i32")
    spec = get_op(op)
    semantics = attrs.pop("semantics", spec.semantics)
    output_size = attrs.pop("output_size", None) if "output_size" in spec.inputs else None
    geom = spec_op_geometry(spec, shape, attrs, output_size=output_size, semantics=semantics)
    resolved = spec.resolve_attributes(attrs)
    index_type = str(resolved.get("index_element_type", "i64")).strip().lower()

    def run_spec(x: np.ndarray, preset: str) -> tuple[np.ndarray, ...]:
        inputs = (x,) if output_size is None else (x, output_size)
        return spec(*inputs, semantics=preset, **attrs)

    if output_size is not None:
        return Configuration(op, shape, given, geom, spec.outputs, semantics, tuple(ADAPTIVE_PRESETS), run_spec,
                             None, 8, index_type)
    keywords = max_pool_keywords(spec, resolved)
    pool = normalize_max_pool_attributes(len(shape), op=spec.name, semantics=semantics, **keywords)
    version = int(spec.name.rsplit("-", 1)[1]) if spec.name.startswith("openvino:") else (
        14 if pool.rounding_type == "ceil_torch" else 8)
    return Configuration(op, shape, given, geom, spec.outputs, semantics, tuple(MAX_POOL_PRESETS), run_spec, pool,
                         version, index_type)


def format_shape(config: Configuration) -> str:
    """What ``ndpool shape`` prints: output shape(s), resolved pads, windows per spatial axis."""
    geom = config.geometry
    shown = " ".join(f"{k}={v}" for k, v in config.given.items())
    lines = [f"{config.op} on input shape {config.input_shape} ({geom.data_format})" + (f": {shown}" if shown else "")]
    for name in config.output_names:
        suffix = f" {config.index_element_type}" if name == "indices" else ""
        lines.append(f"  {name + ':':<20}{geom.output_shape}{suffix}")
    if isinstance(geom, PoolGeometry):
        lines.append(f"  {'pads_begin:':<20}{geom.pads_begin}")
        lines.append(f"  {'pads_end:':<20}{geom.pads_end}")
    else:
        lines.append(f"  {'pads:':<20}none (adaptive bins)")
    lines.append(f"  {'windows per axis:':<20}{geom.out_size} ({int(np.prod(geom.out_size))} per (n, c) plane)")
    return "\n".join(lines)


def generate(shape: Sequence[int], dtype: str) -> np.ndarray:
    """Deterministic data: N(0, 1) (seed 0) for floats, integers in [-100, 100] (clipped to the type)."""
    if dtype not in _DTYPES:
        raise PoolingError("ndpool", "dtype", f"must be one of {', '.join(_DTYPES)}", dtype)
    dt = _DTYPES[dtype]
    rng = np.random.default_rng(0)
    if dt.kind in "iu":
        return rng.integers(max(-100, int(np.iinfo(dt).min)), 101, size=tuple(shape)).astype(dt)
    return rng.standard_normal(tuple(shape), dtype=np.float32).astype(dt)


# --- engines --------------------------------------------------------------------------------------------------


def _to_ncx(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, -1, 1) if data_format == "NXC" else x)


def _from_ncx(y: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if data_format == "NXC" else y


def _run_openvino(config: Configuration, x: np.ndarray) -> tuple[np.ndarray, ...]:
    import openvino as ov
    from openvino import opset1, opset8, opset14

    bf16 = x.dtype.name == "bfloat16"
    types = {"float32": ov.Type.f32, "float16": ov.Type.f16, "bfloat16": ov.Type.bf16, "float64": ov.Type.f64,
             "int8": ov.Type.i8, "uint8": ov.Type.u8, "int32": ov.Type.i32, "int64": ov.Type.i64}
    param = opset1.parameter(list(x.shape), types[x.dtype.name])
    pool = config.pool
    if pool is None:
        size = opset1.constant(np.array(config.geometry.out_size, dtype=np.int64))
        node = opset8.adaptive_max_pool(param, size, "i32")  # the CPU plugin has no i64 indices
    else:
        auto_pad = "explicit" if pool.auto_pad == "none" else pool.auto_pad
        args = (list(pool.strides), list(pool.pads_begin), list(pool.pads_end), list(pool.kernel),
                pool.rounding_type, auto_pad)
        if config.openvino_version == 1:
            if any(d != 1 for d in pool.dilations):
                raise Unavailable("MaxPool-1 has no dilations")
            node = opset1.max_pool(param, *args)
        else:
            axis = 0 if pool.index_axis is None else pool.index_axis
            ops = opset14 if config.openvino_version == 14 else opset8
            node = ops.max_pool(param, list(pool.strides), list(pool.dilations), list(pool.pads_begin),
                                list(pool.pads_end), list(pool.kernel), pool.rounding_type, auto_pad,
                                config.index_element_type, axis)
    outputs = node.outputs()[:len(config.output_names)]
    compiled = ov.Core().compile_model(ov.Model(outputs, [param]), "CPU", OV_CONFIG)
    if bf16:
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(x.shape)))
        tensor.data.view(np.uint16)[...] = x.view(np.uint16)
    else:
        tensor = ov.Tensor(x, shared_memory=False)
    request = compiled.create_infer_request()
    request.infer([tensor])
    results = [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(outputs))]
    if bf16:
        results[0] = results[0].view(np.uint16).view(x.dtype)
    return tuple(results)


_ORT_ELEMENTS = {"float32": 1, "uint8": 2, "int8": 3, "float16": 10, "float64": 11}  # onnx.TensorProto codes


def _run_onnxruntime(config: Configuration, x: np.ndarray) -> tuple[np.ndarray, ...]:
    pool = config.pool
    if pool is None:
        raise Unavailable("ONNX has no AdaptiveMaxPool")
    if x.dtype.name not in _ORT_ELEMENTS:
        raise Unavailable(f"onnxruntime's MaxPool has no {dtype_name(x.dtype)} kernel")
    if importlib.util.find_spec("onnx") is None:
        raise Unavailable("the onnx package, needed to build the model, is not installed")
    import onnxruntime as ort
    from onnx import TensorProto, helper

    auto_pad = {"none": "NOTSET", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER",
                "valid": "VALID"}[pool.auto_pad]
    attrs: dict[str, Any] = {"kernel_shape": list(pool.kernel), "strides": list(pool.strides),
                             "dilations": list(pool.dilations), "ceil_mode": int(pool.rounding_type != "floor"),
                             "auto_pad": auto_pad}
    if auto_pad == "NOTSET":
        attrs["pads"] = list(pool.pads_begin) + list(pool.pads_end)
    elem = _ORT_ELEMENTS[x.dtype.name]
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)  # Indices always: it picks the kernel
    graph = helper.make_graph([node], "max_pool", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    values, indices = session.run(None, {"x": x})
    return (values, indices)[:len(config.output_names)]


def _run_torch(config: Configuration, x: np.ndarray) -> tuple[np.ndarray, ...]:
    import torch
    import torch.nn.functional as F

    n = x.ndim - 2
    bf16 = x.dtype.name == "bfloat16"
    t = torch.from_numpy(x.view(np.uint16).copy()).view(torch.bfloat16) if bf16 else torch.from_numpy(x.copy())
    geom = config.geometry
    with torch.no_grad():
        if isinstance(geom, AdaptiveGeometry):
            adaptive: Any = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[n - 1]
            values, indices = adaptive(t, output_size=geom.out_size, return_indices=True)
        else:
            pool = config.pool
            assert pool is not None
            if geom.pads_begin != geom.pads_end or any(p > k // 2 for p, k in zip(geom.pads_begin, geom.kernel)):
                raise Unavailable(f"torch takes only symmetric pads of at most kernel // 2 (pads_begin "
                                  f"{geom.pads_begin}, pads_end {geom.pads_end}, kernel {geom.kernel})")
            pool_fn: Any = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
            values, indices = pool_fn(t, kernel_size=geom.kernel, stride=geom.strides, padding=geom.pads_begin,
                                      dilation=geom.dilations, ceil_mode=pool.rounding_type != "floor",
                                      return_indices=True)
    out = values.contiguous()
    arr = out.view(torch.uint16).numpy().view(x.dtype).copy() if bf16 else out.numpy().copy()
    return (arr, indices.contiguous().numpy().copy())[:len(config.output_names)]


_RUNNERS = {"OpenVINO": ("openvino", _run_openvino), "onnxruntime": ("onnxruntime", _run_onnxruntime),
            "torch": ("torch", _run_torch)}


def _engine_version(module: str) -> str:
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# --- the comparison -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    runner: str
    outputs: tuple[np.ndarray, ...] | None
    note: str = ""  # why there are no outputs (absent, n/a)
    preset: str | None = None  # for an engine: the ndpool preset that models it


def compare(config: Configuration, x: np.ndarray) -> list[Row]:
    """Run ``x`` under every preset of the op and on every installed engine."""
    rows = [Row(f"ndpool {preset}", config.run(x, preset)) for preset in config.presets]
    x_ncx = _to_ncx(x, config.data_format)
    for engine in ENGINES:
        module, runner = _RUNNERS[engine]
        preset = ENGINE_PRESET[engine]
        if importlib.util.find_spec(module) is None:
            rows.append(Row(engine, None, "absent (not installed)"))
            continue
        label = f"{engine} {_engine_version(module)}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an engine's own warnings are not the user's business here
                outputs = runner(config, x_ncx)
        except Unavailable as exc:
            rows.append(Row(label, None, f"n/a ({exc})"))
            continue
        except Exception as exc:  # noqa: BLE001 - the engine rejects the configuration: say so, in its words
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            rows.append(Row(label, None, f"n/a (engine error: {first[:200]})"))
            continue
        rows.append(Row(label, tuple(_from_ncx(o, config.data_format) for o in outputs),
                        preset=preset if preset in config.presets else None))
    return rows


def _bits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality: bit for bit for floats (signed zeros count), any NaN equals any NaN."""
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":
        return np.asarray(a.astype(np.int64) == b.astype(np.int64))
    if a.dtype != b.dtype:
        a, b = a.astype(np.float64), b.astype(np.float64)
    width = np.dtype(f"u{a.dtype.itemsize}")
    same = np.ascontiguousarray(a).view(width) == np.ascontiguousarray(b).view(width)
    return np.asarray(same | (np.isnan(a) & np.isnan(b)))


@dataclass(frozen=True)
class _Diff:
    summary: str  # "same", "12 differ", "shape differs"
    detail: str  # the first disagreeing positions with both values ("" when same)


def _diff(a: np.ndarray, b: np.ndarray, limit: int = 3) -> _Diff:
    if a.shape != b.shape:
        return _Diff("shape differs", f"shape {a.shape} vs {b.shape}")
    equal = _bits_equal(a, b)
    count = int(equal.size - np.count_nonzero(equal))
    if count == 0:
        return _Diff("same", "")
    positions = np.argwhere(~equal)[:limit]
    shown = ", ".join(f"{tuple(int(i) for i in p)}: {_scalar(a[tuple(p)])} vs {_scalar(b[tuple(p)])}"
                      for p in positions)
    return _Diff(f"{count} differ", f"{count} of {equal.size} differ; first at {shown}")


def _scalar(v: Any) -> str:
    arr = np.asarray(v)
    if arr.dtype.kind in "iu":
        return str(int(arr))
    return repr(float(arr.astype(np.float64)))


def format_comparison(config: Configuration, x: np.ndarray, rows: list[Row], origin: str) -> str:
    """The side-by-side table: each runner's output shape, and where its values and indices disagree
    with the baseline (ndpool under the given semantics) and, for an engine, with the preset modelling it."""
    baseline_name = f"ndpool {config.semantics}"
    by_name = {row.runner: row for row in rows}
    baseline = by_name[baseline_name].outputs
    assert baseline is not None
    given = " ".join(f"{k}={v}" for k, v in config.given.items())
    lines = [f"{config.op} {given}".rstrip(),
             f"input {x.shape} {dtype_name(x.dtype)} ({config.data_format}), {origin}",
             f"baseline: {baseline_name}", ""]
    header = ["runner", "output shape", "values", "indices", "vs its preset"]
    table: list[list[str]] = []
    details: list[str] = []
    for row in rows:
        if row.outputs is None:
            table.append([row.runner, row.note])
            continue
        cells = [row.runner, str(row.outputs[0].shape)]
        for i, name in enumerate(("values", "indices")):
            if i >= len(config.output_names):
                cells.append("-")
            elif row.runner == baseline_name:
                cells.append("baseline")
            else:
                d = _diff(row.outputs[i], baseline[i])
                cells.append(d.summary)
                if d.summary == "shape differs" and i > 0:
                    continue  # said once, for the values
                if d.detail:
                    label = "" if d.summary == "shape differs" else f" {name}"
                    details.append(f"{row.runner}{label} vs {baseline_name}: {d.detail}")
        own = by_name.get(f"ndpool {row.preset}") if row.preset else None
        if own is None or own.outputs is None:
            cells.append("-")
        else:
            diffs = [_diff(mine, theirs) for mine, theirs in zip(row.outputs, own.outputs)]
            if diffs[0].summary == "shape differs":
                cells.append("shape differs")
                details.append(f"{row.runner} vs ndpool {row.preset}: {diffs[0].detail}")
            else:
                bad = [f"{name} {d.summary}" for name, d in zip(("values", "indices"), diffs) if d.summary != "same"]
                cells.append(f"= ndpool {row.preset}" if not bad else ", ".join(bad))
                details += [f"{row.runner} {name} vs ndpool {row.preset}: {d.detail}"
                            for name, d in zip(("values", "indices"), diffs) if d.detail]
        table.append(cells)
    full = [header] + [t for t in table if len(t) == len(header)]
    widths = [max(len(r[0]) for r in [header] + table)] + [max(len(r[i]) for r in full) for i in range(1, len(header))]
    for cells in [header] + table:
        if len(cells) == len(header):
            lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        else:
            lines.append(f"{cells[0].ljust(widths[0])}  {cells[1]}")
    if details:
        lines += ["", "disagreements (first positions, this runner's value vs the other's):"]
        lines += [f"  {d}" for d in details]
    if config.with_indices and not config.adaptive:
        lines += ["", ("index scopes: OpenVINO MaxPool-8/14 axis (default 0: N and C counted), onnxruntime "
                       "global, torch per (n, c) plane; ndpool's presets follow index_axis/axis, else their "
                       "engine's.")]
    return "\n".join(lines)
