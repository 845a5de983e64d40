"""The versioned ops of the specifications, with their attribute names, defaults and outputs.

Each op takes its inputs positionally and its attributes by the spec's names, as Python values or as
the strings an IR file holds (``strides="2,2"``), and returns a tuple of the op's outputs. The default
semantics is the engine's preset; ``semantics=`` overrides it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import PoolingError
from .._ops import adaptive_max_pool, max_pool

__all__ = ["SpecOp", "get_op", "list_ops"]

REQUIRED = object()  # marks an attribute without a default


@dataclass(frozen=True)
class SpecOp:
    """A versioned op: ``op(*inputs, **attributes) -> tuple of outputs``."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: Mapping[str, Any]
    semantics: str
    rounding_types: tuple[str, ...] = ("floor", "ceil")
    aliases: Mapping[str, str] = field(default_factory=dict)
    run: Callable[..., tuple[np.ndarray, ...]] | None = None

    def __call__(self, *inputs: Any, **attributes: Any) -> tuple[np.ndarray, ...]:
        if len(inputs) != len(self.inputs):
            raise PoolingError(self.name, "inputs",
                               f"takes {len(self.inputs)} input(s): {', '.join(self.inputs)}", len(inputs))
        semantics = attributes.pop("semantics", self.semantics)
        attrs = self.resolve_attributes(attributes)
        assert self.run is not None
        return self.run(self, *inputs, semantics=semantics, **attrs)

    def resolve_attributes(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Spec attribute names -> values, with defaults filled and required ones checked."""
        resolved: dict[str, Any] = {}
        for key, value in given.items():
            name = self.aliases.get(key, key)
            if name not in self.attributes:
                raise PoolingError(self.name, key, f"is not an attribute of {self.name} "
                                   f"(valid: {', '.join(self.attributes)})", value)
            resolved[name] = value
        for name, default in self.attributes.items():
            if name not in resolved:
                if default is REQUIRED:
                    raise PoolingError(self.name, name, "is a required attribute", None)
                resolved[name] = default
        rounding = resolved.get("rounding_type")
        if isinstance(rounding, str) and rounding.strip().lower() not in self.rounding_types:
            raise PoolingError(self.name, "rounding_type",
                               f"must be one of {', '.join(self.rounding_types)}", rounding)
        return resolved


def _parse_axis(op: str, value: Any) -> Any:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise PoolingError(op, "axis", "must be an integer", value) from None
    return value


def _run_max_pool(spec: SpecOp, data: Any, *, semantics: str, **attrs: Any) -> tuple[np.ndarray, ...]:
    with_indices = len(spec.outputs) == 2
    result = max_pool(
        data, kernel=attrs["kernel"], strides=attrs["strides"], pads_begin=attrs["pads_begin"],
        pads_end=attrs["pads_end"], dilations=attrs.get("dilations", 1),
        rounding_type=attrs["rounding_type"], auto_pad=attrs["auto_pad"],
        data_format=attrs.get("data_format", "NCX"), return_indices=with_indices,
        index_element_type=attrs.get("index_element_type", "i64"),
        index_axis=_parse_axis(spec.name, attrs["axis"]) if with_indices else None,
        semantics=semantics, _op=spec.name)
    return tuple(result) if with_indices else (result,)


def _run_adaptive(spec: SpecOp, data: Any, output_size: Any, *, semantics: str,
                  **attrs: Any) -> tuple[np.ndarray, ...]:
    return adaptive_max_pool(data, output_size, index_element_type=attrs["index_element_type"],
                             semantics=semantics, _op=spec.name)


_POOL = {"strides": REQUIRED, "pads_begin": REQUIRED, "pads_end": REQUIRED, "kernel": REQUIRED}

_OPS = {
    op.name: op
    for op in (
        SpecOp("onednn:MaxPool-1", ("src",), ("dst",),
               {**_POOL, "dilations": 1, "rounding_type": "floor", "auto_pad": "none",
                "data_format": "NXC"}, "onednn", run=_run_max_pool),
        SpecOp("openvino:MaxPool-1", ("data",), ("output",),
               {**_POOL, "rounding_type": "floor", "auto_pad": "explicit"}, "openvino",
               run=_run_max_pool),
        SpecOp("openvino:MaxPool-8", ("data",), ("output", "indices"),
               {**_POOL, "dilations": REQUIRED, "rounding_type": "floor", "auto_pad": "explicit",
                "index_element_type": "i64", "axis": 0}, "openvino", run=_run_max_pool),
        SpecOp("openvino:MaxPool-14", ("data",), ("output", "indices"),
               {**_POOL, "dilations": REQUIRED, "rounding_type": "floor", "auto_pad": "explicit",
                "index_element_type": "i64", "axis": 0}, "openvino",
               rounding_types=("floor", "ceil", "ceil_torch"), run=_run_max_pool),
        SpecOp("openvino:AdaptiveMaxPool-8", ("data", "output_size"), ("output", "indices"),
               {"index_element_type": "i64"}, "openvino",
               aliases={"output_type": "index_element_type"}, run=_run_adaptive),
    )
}


def list_ops() -> list[str]:
    """The names of the versioned spec ops ``get_op`` knows.

    Examples
    --------
    >>> import ndpool
    >>> "openvino:MaxPool-8" in ndpool.list_ops()
    True
    """
    return sorted(_OPS)


def get_op(name: str) -> SpecOp:
    """The versioned spec op called ``name`` (e.g. ``"openvino:MaxPool-8"``).

    Examples
    --------
    >>> import numpy as np, ndpool
    >>> op = ndpool.get_op("openvino:MaxPool-8")
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    >>> values, indices = op(x, kernel="2", strides="2", pads_begin="0", pads_end="0", dilations="1")
    >>> indices   # MaxPool-8's axis=0: counted over N and C too
    array([[[1, 3],
            [5, 7]]])
    """
    if not isinstance(name, str) or name not in _OPS:
        raise PoolingError("get_op", "name", f"must be one of {', '.join(sorted(_OPS))}", name)
    return _OPS[name]
