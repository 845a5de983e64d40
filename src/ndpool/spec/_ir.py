"""Reading and running OpenVINO IR XML: one ``<layer>`` as in the spec documents, or a whole ``<net>``.

A whole model is a ``<net>`` with ``<layers>`` and ``<edges>`` (and a ``.bin`` beside the ``.xml`` for its
Const layers) made of Parameter, Const, MaxPool (opset1/8/14), AdaptiveMaxPool (opset8) and Result layers.
A lone ``<layer>`` (the AdaptiveMaxPool-8 document's example) is wrapped into a model: each data input
becomes a Parameter of the port's dims, and AdaptiveMaxPool's ``output_size``, which a single layer has no
Const for, is taken from its declared output dims.

Attributes are read as OpenVINO writes them (``strides="2, 2"``, ``auto_pad="explicit"``,
``index_element_type``, and the documents' ``output_type`` alias) and handed to the versioned spec ops
(:func:`ndpool.get_op`), which parse them. Shapes come from ndpool's shape inference only: every declared
port dim is checked against it before anything runs.

The spec documents elide attributes with ``...`` (``<layer ... type="AdaptiveMaxPool" ... >``); such
placeholders inside a tag are dropped before parsing, so the documents' text reads as it is.
``version="onednn"`` on a MaxPool layer is ndpool's spelling for oneDNN Graph's MaxPool (MaxPool-1 with
``data_format``), which has no IR of its own.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from .._attributes import parse_index_type
from .._errors import PoolingError
from .._geometry import AdaptiveGeometry, PoolGeometry
from .._ops import adaptive_max_pool_geometry_for, max_pool_geometry_for
from .._semantics import PLANE_SCOPE, preset_for
from ._registry import SpecOp, _parse_axis, get_op

__all__ = [
    "BUILTIN_EXAMPLES",
    "IRError",
    "IRExample",
    "IRModel",
    "IRRun",
    "Layer",
    "LayerRun",
    "Port",
    "max_pool_keywords",
    "parse_ir",
    "read_ir",
    "run_ir",
    "spec_op_geometry",
]

DYNAMIC = -1  # a dim the IR leaves open (``-1``, ``?`` or a range ``1..10``)

ELEMENT_TYPES: dict[str, np.dtype[Any]] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
# Port precisions as the serializer writes them (FP32, I64, ...), mapped to element type names.
_PRECISIONS = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "fp64": "f64", "i8": "i8", "u8": "u8",
               "i32": "i32", "i64": "i64"}
SUPPORTED_TYPES = ("Parameter", "Const", "MaxPool", "AdaptiveMaxPool", "Result")


class IRError(PoolingError):
    """An IR file that cannot be read or run: malformed XML (with its line), a missing ``.bin``, an
    unsupported layer, port dims that disagree with ndpool's shape inference, a wrong input."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.detail = message
        self.source = source
        self.line = line
        super().__init__("IR", None, message)

    def _message(self) -> str:
        where = ":".join(str(p) for p in (self.source, self.line) if p)
        return f"{where}: {self.detail}" if where else self.detail


# --- the model ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Port:
    """A layer's input or output port: its id, declared dims (-1 where dynamic) and element type."""

    id: int
    dims: tuple[int, ...]
    element_type: str | None
    names: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Layer:
    id: str
    name: str
    type: str
    version: str | None
    data: Mapping[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    line: int
    value: np.ndarray | None = field(default=None, compare=False)  # an inline Const (single-layer files)

    def describe(self) -> str:
        return f"layer '{self.name}' (id {self.id}, {self.type})"


@dataclass(frozen=True)
class Edge:
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int
    line: int


@dataclass(frozen=True)
class IRModel:
    """A parsed IR file. ``single_layer``: the file held one ``<layer>``, wrapped into this model."""

    source: str
    name: str
    layers: tuple[Layer, ...]
    edges: tuple[Edge, ...]
    weights: bytes | None = field(default=None, repr=False)
    weights_path: str | None = None
    single_layer: bool = False

    def parameters(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.type == "Parameter"]


@dataclass(frozen=True)
class LayerRun:
    """One pooling layer as run: its spec op, the semantics used, its input shapes and outputs."""

    layer: Layer
    op: str
    semantics: str
    input_shapes: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[str, np.ndarray], ...]  # (the spec's output name, array)


@dataclass(frozen=True)
class IRRun:
    """The result of :func:`run_ir`: the inputs used, each pooling layer's outputs, the model's outputs."""

    model: IRModel
    inputs: dict[str, np.ndarray]
    generated: tuple[str, ...]  # the Parameters that got deterministic generated data
    layers: tuple[LayerRun, ...]
    outputs: dict[str, np.ndarray]  # Result name (single layer: "<layer>.<output>") -> array


@dataclass(frozen=True)
class IRExample:
    name: str
    title: str
    xml: str


# --- reading --------------------------------------------------------------------------------------------------


@dataclass
class _Node:
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)
    text: str = ""

    def all(self, tag: str) -> list[_Node]:
        return [c for c in self.children if c.tag == tag]

    def one(self, tag: str) -> _Node | None:
        found = self.all(tag)
        return found[0] if found else None


_TAG = re.compile(r"<[^<>]*>")
_ELISION = re.compile(r"[ \t]+\.\.\.(?=[ \t\r\n/>])")


def _drop_elisions(text: str) -> str:
    """Remove the documents' ``...`` placeholders between a tag's attributes (same lines kept)."""
    return _TAG.sub(lambda m: _ELISION.sub("", m.group(0)), text)


def _parse_xml(text: str, source: str) -> _Node:
    parser = xml.parsers.expat.ParserCreate()
    stack: list[_Node] = []
    roots: list[_Node] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        node = _Node(tag, attrib, parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            stack[-1].text += data

    def no_entities(*args: Any) -> None:
        raise IRError("entity declarations are not allowed in IR XML", source=source,
                      line=parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.EntityDeclHandler = no_entities
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.ErrorString(exc.code)
        raise IRError(f"malformed XML: {reason} (column {exc.offset + 1})", source=source,
                      line=exc.lineno) from None
    return roots[0]


def read_ir(path: str | Path) -> IRModel:
    """Read an IR ``.xml`` file (a ``<net>`` with its ``.bin`` beside it, or a single ``<layer>``).

    See :func:`parse_ir` for an example.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IRError(f"cannot read the IR file: {exc}", source=str(path)) from None
    bin_path = path.with_suffix(".bin")
    weights = None
    if bin_path.is_file():
        try:
            weights = bin_path.read_bytes()
        except OSError as exc:
            raise IRError(f"cannot read the weights file: {exc}", source=str(bin_path)) from None
    return parse_ir(text, source=str(path), weights=weights, weights_path=str(bin_path))


def parse_ir(text: str, *, source: str = "<string>", weights: bytes | None = None,
             weights_path: str | None = None) -> IRModel:
    """Parse IR XML text: a ``<net>`` or a single ``<layer>``; ``weights`` is the ``.bin``'s content.

    Examples
    --------
    >>> import ndpool.spec as spec
    >>> model = spec.parse_ir(spec.BUILTIN_EXAMPLES[0].xml)   # the AdaptiveMaxPool-8 document's layer
    >>> run = spec.run_ir(model)                               # generated data of the declared shape
    >>> {name: a.shape for name, a in run.outputs.items()}
    {'AdaptiveMaxPool.output': (1, 3, 16, 16), 'AdaptiveMaxPool.indices': (1, 3, 16, 16)}
    """
    root = _parse_xml(_drop_elisions(text), source)
    if root.tag == "layer":
        return _wrap_single_layer(_read_layer(root, source, single=True), source)
    if root.tag != "net":
        raise IRError(f"expected a <net> or a <layer> element, got <{root.tag}>", source=source,
                      line=root.line)
    layers_node = root.one("layers")
    if layers_node is None:
        raise IRError("<net> has no <layers>", source=source, line=root.line)
    layers = tuple(_read_layer(node, source) for node in layers_node.all("layer"))
    edges_node = root.one("edges")
    edges = tuple(_read_edge(node, source) for node in (edges_node.all("edge") if edges_node else []))
    seen: set[str] = set()
    for layer in layers:
        if layer.id in seen:
            raise IRError(f"two layers have id {layer.id}", source=source, line=layer.line)
        seen.add(layer.id)
    return IRModel(source=source, name=root.attrib.get("name", ""), layers=layers, edges=edges,
                   weights=weights, weights_path=weights_path)


def _int(text: str, what: str, source: str, line: int) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise IRError(f"{what} must be an integer (got {text.strip()!r})", source=source, line=line) from None


def _dim(text: str, source: str, line: int) -> int:
    t = text.strip()
    if t in ("?", "-1") or ".." in t:
        return DYNAMIC
    value = _int(t, "a <dim>", source, line)
    if value < 0:
        raise IRError(f"a <dim> must be >= 0 or -1 (got {value})", source=source, line=line)
    return value


def _element_type(text: str | None, source: str, line: int) -> str | None:
    if text is None:
        return None
    t = text.strip().lower()
    name = _PRECISIONS.get(t, t)
    if name not in ELEMENT_TYPES:
        raise IRError(f"unsupported element type {text!r} (supported: {', '.join(ELEMENT_TYPES)})",
                      source=source, line=line)
    return name


def _read_port(node: _Node, source: str) -> Port:
    if "id" not in node.attrib:
        raise IRError("a <port> has no id", source=source, line=node.line)
    names = tuple(n.strip() for n in node.attrib.get("names", "").split(",") if n.strip())
    return Port(id=_int(node.attrib["id"], "a port id", source, node.line),
                dims=tuple(_dim(d.text, source, d.line) for d in node.all("dim")),
                element_type=_element_type(node.attrib.get("precision"), source, node.line),
                names=names, line=node.line)


def _read_layer(node: _Node, source: str, single: bool = False) -> Layer:
    if node.tag != "layer":
        raise IRError(f"expected <layer>, got <{node.tag}>", source=source, line=node.line)
    if "type" not in node.attrib:
        raise IRError("a <layer> has no type", source=source, line=node.line)
    if "id" not in node.attrib and not single:
        raise IRError("a <layer> has no id", source=source, line=node.line)
    layer_type = node.attrib["type"]
    layer_id = node.attrib.get("id", "0")
    data = node.one("data")
    inputs = tuple(_read_port(p, source) for group in node.all("input") for p in group.all("port"))
    outputs = tuple(_read_port(p, source) for group in node.all("output") for p in group.all("port"))
    return Layer(id=layer_id, name=node.attrib.get("name", layer_type if single else f"{layer_type}_{layer_id}"),
                 type=layer_type, version=node.attrib.get("version"),
                 data=dict(data.attrib) if data is not None else {}, inputs=inputs, outputs=outputs,
                 line=node.line)


def _read_edge(node: _Node, source: str) -> Edge:
    keys = ("from-layer", "from-port", "to-layer", "to-port")
    missing = [k for k in keys if k not in node.attrib]
    if missing:
        raise IRError(f"an <edge> lacks {', '.join(missing)}", source=source, line=node.line)
    a = node.attrib
    return Edge(a["from-layer"].strip(), _int(a["from-port"], "from-port", source, node.line),
                a["to-layer"].strip(), _int(a["to-port"], "to-port", source, node.line), node.line)


def _wrap_single_layer(layer: Layer, source: str) -> IRModel:
    """One layer -> a model: a Parameter per data input, Results for every output.

    AdaptiveMaxPool's ``output_size`` becomes an inline Const taken from the declared output dims.
    """
    spec = op_for_layer(layer, source)
    if spec is None:
        raise IRError(f"a single <layer> must be a pooling layer, got type '{layer.type}' "
                      f"(layer id {layer.id})", source=source, line=layer.line)
    if len(layer.inputs) != len(spec.inputs):
        raise IRError(f"{layer.describe()} declares {len(layer.inputs)} input port(s); {spec.name} takes "
                      f"{len(spec.inputs)} ({', '.join(spec.inputs)})", source=source, line=layer.line)
    layers: list[Layer] = []
    edges: list[Edge] = []
    for index, (port, input_name) in enumerate(zip(layer.inputs, spec.inputs, strict=True)):
        source_id = f"{layer.id}:{input_name}"
        if input_name == "output_size":
            if not layer.outputs or len(layer.outputs[0].dims) < 3 or DYNAMIC in layer.outputs[0].dims:
                raise IRError(f"{layer.describe()}: a single layer's output_size is taken from its first "
                              f"output port's dims, which must be static and of rank 3 to 5",
                              source=source, line=layer.line)
            value = np.array(layer.outputs[0].dims[2:], dtype=np.int64)
            const = Layer(id=source_id, name=input_name, type="Const", version="opset1",
                          data={"element_type": "i64", "shape": str(value.size)}, inputs=(),
                          outputs=(Port(0, value.shape, "i64", (), port.line),), line=layer.line, value=value)
            layers.append(const)
        else:
            dims = ",".join("?" if d == DYNAMIC else str(d) for d in port.dims)
            layers.append(Layer(id=source_id, name=input_name, type="Parameter", version="opset1",
                                data={"shape": dims, "element_type": port.element_type or "f32"}, inputs=(),
                                outputs=(Port(0, port.dims, port.element_type or "f32", (input_name,), port.line),),
                                line=port.line))
        edges.append(Edge(source_id, 0, layer.id, port.id, port.line))
    layers.append(layer)
    for port, output_name in zip(layer.outputs, spec.outputs):
        result_id = f"{layer.id}:{output_name}"
        layers.append(Layer(id=result_id, name=f"{layer.name}.{output_name}", type="Result", version="opset1",
                            data={}, inputs=(Port(0, port.dims, port.element_type, (), port.line),), outputs=(),
                            line=port.line))
        edges.append(Edge(layer.id, port.id, result_id, 0, port.line))
    return IRModel(source=source, name=layer.name, layers=tuple(layers), edges=tuple(edges), single_layer=True)


# --- ops ------------------------------------------------------------------------------------------------------

_OPSET = re.compile(r"opset(\d+)$")


def op_for_layer(layer: Layer, source: str) -> SpecOp | None:
    """The spec op a pooling layer runs (None for Parameter, Const and Result); IRError if unsupported."""
    if layer.type not in SUPPORTED_TYPES:
        raise IRError(f"unsupported layer type '{layer.type}' (layer id {layer.id}, '{layer.name}'); "
                      f"ndpool runs {', '.join(SUPPORTED_TYPES)}", source=source, line=layer.line)
    if layer.type in ("Parameter", "Const", "Result"):
        return None
    version = (layer.version or ("opset8" if layer.type == "AdaptiveMaxPool" else "opset1")).strip().lower()
    if layer.type == "MaxPool" and version == "onednn":
        return get_op("onednn:MaxPool-1")
    match = _OPSET.match(version)
    opset = int(match.group(1)) if match else 0
    if layer.type == "MaxPool" and opset >= 1:
        return get_op("openvino:MaxPool-" + ("1" if opset < 8 else "8" if opset < 14 else "14"))
    if layer.type == "AdaptiveMaxPool" and opset >= 8:
        return get_op("openvino:AdaptiveMaxPool-8")
    first = "opset8" if layer.type == "AdaptiveMaxPool" else "opset1"
    raise IRError(f"unsupported version '{layer.version}' of {layer.type} ({layer.describe()}); "
                  f"{layer.type} exists from {first} on" + ("" if layer.type == "AdaptiveMaxPool"
                                                            else ", or version=\"onednn\""),
                  source=source, line=layer.line)


def max_pool_keywords(spec: SpecOp, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """A MaxPool spec op's resolved attributes as :func:`ndpool.max_pool` keywords (without semantics)."""
    with_indices = len(spec.outputs) == 2
    return {
        "kernel": attributes["kernel"], "strides": attributes["strides"], "pads_begin": attributes["pads_begin"],
        "pads_end": attributes["pads_end"], "dilations": attributes.get("dilations", 1),
        "rounding_type": attributes["rounding_type"], "auto_pad": attributes["auto_pad"],
        "data_format": attributes.get("data_format", "NCX"), "return_indices": with_indices,
        "index_element_type": attributes.get("index_element_type", "i64"),
        "index_axis": _parse_axis(spec.name, attributes["axis"]) if with_indices else None,
    }


def spec_op_geometry(spec: SpecOp, input_shape: Sequence[int], attributes: Mapping[str, Any], *,
                     output_size: Any = None, semantics: str | None = None) -> PoolGeometry | AdaptiveGeometry:
    """ndpool's shape inference for a spec op: the resolved geometry (pads, output sizes), no data.

    ``attributes`` use the spec's names, as Python values or IR strings; ``output_size`` is
    AdaptiveMaxPool's second input. Raises :class:`ndpool.PoolingError` as running the op would.
    """
    chosen = spec.semantics if semantics is None else semantics
    attrs = spec.resolve_attributes(attributes)
    if "output_size" in spec.inputs:
        if output_size is None:
            raise PoolingError(spec.name, "output_size", "is a required input", None)
        geom = adaptive_max_pool_geometry_for(input_shape, output_size, op=spec.name)
        preset_for("AdaptiveMaxPool", chosen)  # validated against AdaptiveMaxPool's presets
        geom.check_index_type(spec.name, parse_index_type(spec.name, attrs["index_element_type"]), PLANE_SCOPE)
        return geom
    return max_pool_geometry_for(input_shape, op=spec.name, semantics=chosen, **max_pool_keywords(spec, attrs))


# --- running --------------------------------------------------------------------------------------------------


class _Graph:
    """A model's layers in graph order with each input port's source, validated."""

    def __init__(self, model: IRModel) -> None:
        self.model = model
        self.by_id = {layer.id: layer for layer in model.layers}
        self.ops = {layer.id: op_for_layer(layer, model.source) for layer in model.layers}
        self.source_of: dict[tuple[str, int], tuple[str, int]] = {}
        for edge in model.edges:
            self._add_edge(edge)
        for layer in model.layers:
            for port in layer.inputs:
                if (layer.id, port.id) not in self.source_of:
                    raise self.error(f"{layer.describe()} input port {port.id} is not connected", port.line)
        self.order = self._sorted()

    def error(self, message: str, line: int | None = None) -> IRError:
        return IRError(message, source=self.model.source, line=line)

    def _add_edge(self, edge: Edge) -> None:
        for layer_id, port_id, side in ((edge.from_layer, edge.from_port, "output"),
                                        (edge.to_layer, edge.to_port, "input")):
            layer = self.by_id.get(layer_id)
            if layer is None:
                raise self.error(f"an <edge> names layer id {layer_id}, which does not exist", edge.line)
            ports = layer.outputs if side == "output" else layer.inputs
            if all(p.id != port_id for p in ports):
                raise self.error(f"an <edge> names {side} port {port_id} of {layer.describe()}, which has no "
                                 f"such port", edge.line)
        key = (edge.to_layer, edge.to_port)
        if key in self.source_of:
            raise self.error(f"input port {edge.to_port} of {self.by_id[edge.to_layer].describe()} has two "
                             f"incoming edges", edge.line)
        self.source_of[key] = (edge.from_layer, edge.from_port)

    def _sorted(self) -> list[Layer]:
        """Kahn's algorithm; ties keep document order."""
        pending = {layer.id: {self.source_of[(layer.id, p.id)][0] for p in layer.inputs}
                   for layer in self.model.layers}
        order: list[Layer] = []
        done: set[str] = set()
        while len(order) < len(self.model.layers):
            ready = [layer for layer in self.model.layers if layer.id not in done and pending[layer.id] <= done]
            if not ready:
                stuck = next(layer for layer in self.model.layers if layer.id not in done)
                raise self.error(f"the graph has a cycle through {stuck.describe()}", stuck.line)
            order.append(ready[0])
            done.add(ready[0].id)
        return order


def _describe_dims(dims: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in dims) + "]"


def _dims_match(declared: Sequence[int], actual: Sequence[int]) -> bool:
    return len(declared) == len(actual) and all(d in (DYNAMIC, a) for d, a in zip(declared, actual))


def _const_value(graph: _Graph, layer: Layer) -> np.ndarray:
    if layer.value is not None:
        return layer.value
    model = graph.model
    etype = _element_type(layer.data.get("element_type"), model.source, layer.line)
    if etype is None:
        raise graph.error(f"{layer.describe()} has no element_type", layer.line)
    shape = _parse_shape(graph, layer, layer.data.get("shape", ""))
    if DYNAMIC in shape:
        raise graph.error(f"{layer.describe()} has a dynamic shape", layer.line)
    if model.weights is None:
        raise graph.error(f"missing weights file {model.weights_path or '(.bin)'}, needed by "
                          f"{layer.describe()}", layer.line)
    offset = _int(layer.data.get("offset", "0"), "offset", model.source, layer.line)
    dtype = ELEMENT_TYPES[etype]
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    declared = _int(layer.data.get("size", str(size)), "size", model.source, layer.line)
    if declared != size or offset < 0 or offset + size > len(model.weights):
        raise graph.error(f"{layer.describe()}: offset {offset} and size {declared} do not fit a "
                          f"{etype} tensor of shape {list(shape)} in {model.weights_path} "
                          f"({len(model.weights)} bytes)", layer.line)
    return np.frombuffer(model.weights, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)


def _parse_shape(graph: _Graph, layer: Layer, text: str) -> tuple[int, ...]:
    if not text.strip():
        return ()
    return tuple(_dim(part, graph.model.source, layer.line) for part in text.split(","))


def _parameter_type(graph: _Graph, layer: Layer) -> np.dtype[Any]:
    port = layer.outputs[0] if layer.outputs else None
    name = _element_type(layer.data.get("element_type"), graph.model.source, layer.line)
    name = name or (port.element_type if port else None) or "f32"
    return ELEMENT_TYPES[name]


def _parameter_dims(graph: _Graph, layer: Layer) -> tuple[int, ...]:
    if "shape" in layer.data:
        return _parse_shape(graph, layer, layer.data["shape"])
    if layer.outputs:
        return layer.outputs[0].dims
    raise graph.error(f"{layer.describe()} has no shape", layer.line)


def _generate(shape: tuple[int, ...], dtype: np.dtype[Any], rng: np.random.Generator) -> np.ndarray:
    """Deterministic data: N(0, 1) for floats, small integers for integer types."""
    if dtype.kind in "iu":
        low = max(-100, int(np.iinfo(dtype).min))
        return rng.integers(low, 101, size=shape).astype(dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def _bind_inputs(graph: _Graph, inputs: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """Each Parameter's data: given (by layer name or tensor name) or generated; checked against it."""
    parameters = graph.model.parameters()
    lookup: dict[str, Layer] = {}
    for layer in parameters:
        for key in (layer.name, *(layer.outputs[0].names if layer.outputs else ())):
            lookup.setdefault(key, layer)
    given: dict[str, np.ndarray] = {}
    for key, array in inputs.items():
        target = lookup.get(key)
        if target is None:
            names = ", ".join(p.name for p in parameters) or "none"
            raise graph.error(f"no Parameter named '{key}' (the model's Parameters: {names})")
        given[target.id] = np.asarray(array)
    rng = np.random.default_rng(0)
    bound: dict[str, np.ndarray] = {}
    generated: list[str] = []
    for layer in parameters:
        dims = _parameter_dims(graph, layer)
        dtype = _parameter_type(graph, layer)
        if layer.id in given:
            array = given[layer.id]
            if not _dims_match(dims, array.shape):
                raise graph.error(f"wrong input shape for Parameter '{layer.name}': got {list(array.shape)}, "
                                  f"the model declares {_describe_dims(dims)}", layer.line)
            if array.dtype != dtype:
                raise graph.error(f"wrong input element type for Parameter '{layer.name}': got "
                                  f"{array.dtype}, the model declares {dtype}", layer.line)
        else:
            if DYNAMIC in dims:
                raise graph.error(f"Parameter '{layer.name}' has dynamic dims {_describe_dims(dims)}: "
                                  f"give its data as an input", layer.line)
            array = _generate(dims, dtype, rng)
            generated.append(layer.name)
        bound[layer.id] = array
    return bound, tuple(generated)


def run_ir(model: IRModel, inputs: Mapping[str, Any] | None = None, *,
           semantics: str | None = None) -> IRRun:
    """Check every declared port dim against ndpool's shape inference, then run the layers in graph order.

    ``inputs`` maps Parameter names (layer or tensor names) to arrays; the others get deterministic
    generated data (N(0, 1), seed 0) of their declared shape. ``semantics`` overrides each op's default
    preset (the engine's: ``openvino``, or ``onednn`` for oneDNN Graph's MaxPool). Raises
    :class:`IRError` (a :class:`ndpool.PoolingError`) naming every layer and port whose dims disagree.
    """
    graph = _Graph(model)
    bound, generated = _bind_inputs(graph, inputs or {})
    constants = {layer.id: _const_value(graph, layer) for layer in model.layers if layer.type == "Const"}
    _check_shapes(graph, bound, constants, semantics)

    values: dict[tuple[str, int], np.ndarray] = {}
    runs: list[LayerRun] = []
    outputs: dict[str, np.ndarray] = {}
    for layer in graph.order:
        args = [values[graph.source_of[(layer.id, port.id)]] for port in layer.inputs]
        spec = graph.ops[layer.id]
        if layer.type == "Parameter":
            results: tuple[np.ndarray, ...] = (bound[layer.id],)
        elif layer.type == "Const":
            results = (constants[layer.id],)
        elif layer.type == "Result":
            outputs[layer.name] = args[0]
            continue
        else:
            assert spec is not None
            chosen = spec.semantics if semantics is None else semantics
            try:
                results = spec(*args, **layer.data, semantics=chosen)
            except PoolingError as exc:
                raise graph.error(f"{layer.describe()}: {exc}", layer.line) from None
            runs.append(LayerRun(layer, spec.name, chosen, tuple(a.shape for a in args),
                                 tuple(zip(spec.outputs, results))))
        for port, result in zip(layer.outputs, results):
            values[(layer.id, port.id)] = result
    params = {layer.name: bound[layer.id] for layer in model.parameters()}
    return IRRun(model, params, generated, tuple(runs), outputs)


def _check_shapes(graph: _Graph, bound: Mapping[str, np.ndarray], constants: Mapping[str, np.ndarray],
                  semantics: str | None) -> None:
    """Propagate ndpool's inferred shapes through the graph; raise listing every declared dim that differs."""
    shapes: dict[tuple[str, int], tuple[int, ...]] = {}
    known: dict[tuple[str, int], np.ndarray] = {}  # values known before running (Parameters, Consts)
    mismatches: list[str] = []

    def check(layer: Layer, side: str, port: Port, shape: tuple[int, ...]) -> None:
        if not _dims_match(port.dims, shape):
            mismatches.append(f"{layer.describe()} {side} port {port.id} (line {port.line}): declared "
                              f"{_describe_dims(port.dims)}, ndpool infers {list(shape)}")

    for layer in graph.order:
        sources = [graph.source_of[(layer.id, port.id)] for port in layer.inputs]
        incoming = [shapes[s] for s in sources]
        for port, shape in zip(layer.inputs, incoming):
            check(layer, "input", port, shape)
        spec = graph.ops[layer.id]
        if layer.type in ("Parameter", "Const"):
            array = bound[layer.id] if layer.type == "Parameter" else constants[layer.id]
            if len(layer.outputs) != 1:
                raise graph.error(f"{layer.describe()} must have one output port", layer.line)
            known[(layer.id, layer.outputs[0].id)] = array
            inferred: list[tuple[int, ...]] = [array.shape]
        elif layer.type == "Result":
            inferred = []
        else:
            assert spec is not None
            if len(layer.inputs) != len(spec.inputs):
                raise graph.error(f"{layer.describe()} has {len(layer.inputs)} input port(s); {spec.name} "
                                  f"takes {len(spec.inputs)} ({', '.join(spec.inputs)})", layer.line)
            if len(layer.outputs) != len(spec.outputs):
                raise graph.error(f"{layer.describe()} declares {len(layer.outputs)} output port(s); "
                                  f"{spec.name} has {len(spec.outputs)} ({', '.join(spec.outputs)})", layer.line)
            output_size = None
            if len(sources) > 1:
                if sources[1] not in known:
                    raise graph.error(f"{layer.describe()}: output_size must come from a Const or a "
                                      f"Parameter", layer.line)
                output_size = known[sources[1]]
            try:
                geom = spec_op_geometry(spec, incoming[0], layer.data, output_size=output_size,
                                        semantics=semantics)
            except PoolingError as exc:
                raise graph.error(f"{layer.describe()}: {exc}", layer.line) from None
            inferred = [geom.output_shape] * len(spec.outputs)
        for port, shape in zip(layer.outputs, inferred):
            check(layer, "output", port, shape)
            shapes[(layer.id, port.id)] = shape
    if mismatches:
        raise graph.error("declared port dims disagree with ndpool's shape inference:\n  "
                          + "\n  ".join(mismatches))


# --- the built-in examples ------------------------------------------------------------------------------------

# AdaptiveMaxPool-8 (000 and 001 hold the same example), verbatim: elided attributes and all.
_SPEC_ADAPTIVE = """\
<layer ... type="AdaptiveMaxPool" ... >
    <data output_type="i64"/>
    <input>
        <port id="0">
            <dim>1</dim>
            <dim>3</dim>
            <dim>32</dim>
            <dim>32</dim>
        </port>
    </input>
    <input>
        <port id="1">
            <dim>2</dim>
        </port>
    </input>
    <output>
        <port id="1">
            <dim>1</dim>
            <dim>3</dim>
            <dim>16</dim>
            <dim>16</dim>
        </port>
        <port id="2">
            <dim>1</dim>
            <dim>3</dim>
            <dim>16</dim>
            <dim>16</dim>
        </port>
    </output>
</layer>
"""

# oneDNN Graph MaxPool (002/004 have no XML; ndpool's version="onednn"): a 1x32x32x3 NXC input, 3x3 windows,
# strides 2, pads 1.
_SPEC_MAX_POOL = """\
<layer id="0" name="MaxPool" type="MaxPool" version="onednn">
    <data strides="2,2" pads_begin="1,1" pads_end="1,1" kernel="3,3" dilations="1,1"
          rounding_type="floor" auto_pad="none" data_format="NXC"/>
    <input>
        <port id="0" precision="FP32">
            <dim>1</dim>
            <dim>32</dim>
            <dim>32</dim>
            <dim>3</dim>
        </port>
    </input>
    <output>
        <port id="1" precision="FP32">
            <dim>1</dim>
            <dim>16</dim>
            <dim>16</dim>
            <dim>3</dim>
        </port>
    </output>
</layer>
"""

BUILTIN_EXAMPLES: tuple[IRExample, ...] = (
    IRExample("spec-adaptive-max-pool", "AdaptiveMaxPool-8, the example layer of the OpenVINO spec (000/001)",
              _SPEC_ADAPTIVE),
    IRExample("spec-max-pool", "MaxPool, oneDNN Graph (002/004), NXC, kernel 3, strides 2, pads 1",
              _SPEC_MAX_POOL),
)
