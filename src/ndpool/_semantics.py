"""The engine presets as frozen data (SEMANTICS.md, "Engine presets").

A preset changes only values and indices, never shapes or errors. It is three choices:
the NaN rule (how a tap is compared with the running maximum), the empty-window value and index,
and the default scope of the indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from ._errors import PoolingError

__all__ = ["Preset", "preset_for", "MAX_POOL_PRESETS", "ADAPTIVE_PRESETS"]

# NaN rules. The integer codes are what the compiled kernels receive.
PROPAGATE_FIRST = 0  # spec: a NaN wins and stays; the first NaN's index
PROPAGATE_LAST = 1   # torch: take v > m or isnan(v); the last NaN's index
IGNORE = 2           # openvino/onednn: start at `lowest`, take v > m; NaN never wins
FIRST_VALID = 3      # onnx, openvino AdaptiveMaxPool: start at the first tap, take v > m

# Empty-window index rules.
MINUS_ONE = 0        # -1
PLANE_FIRST = 1      # the plane's first element (its offset in the index scope)
BEFORE_PLANE = 2     # offset + flat index of spatial position (-1, ..., -1) (onnxruntime)

PLANE_SCOPE = 2      # index_axis 2 == flat index within the (n, c) plane


@dataclass(frozen=True)
class Preset:
    """What an engine does where the specification leaves room."""

    name: str
    nan_rule: int
    empty_value: str  # "neg_inf" (int: min), "f32_lowest" (saturated), "type_lowest"
    empty_index: int
    index_axis: int  # default scope: 0 counts N and C, 2 is per plane

    def empty_value_for(self, dtype: np.dtype[Any]) -> Any:
        """The value of a window with no in-range tap (or, under IGNORE, no tap above it)."""
        return empty_value(self.empty_value, dtype)


def empty_value(kind: str, dtype: np.dtype[Any]) -> Any:
    if dtype.kind in "iu":
        # Every rule saturates to the type's minimum for integers (u8: 0).
        return np.iinfo(dtype).min
    if kind == "neg_inf":
        return dtype.type(-np.inf)
    if kind == "type_lowest":
        return ml_dtypes.finfo(dtype).min if dtype == ml_dtypes.bfloat16 else np.finfo(dtype).min
    # f32_lowest: float32's lowest cast to the type. OpenVINO truncates for bf16 (0xFF7F, not -inf);
    # f16 overflows to -inf; f64 keeps the f32 value.
    lowest32 = np.float32(np.finfo(np.float32).min)
    if dtype == ml_dtypes.bfloat16:
        return np.array([lowest32.view(np.uint32) >> 16], np.uint16).view(ml_dtypes.bfloat16)[0]
    with np.errstate(over="ignore"):
        return dtype.type(lowest32)


MAX_POOL_PRESETS = {
    "spec": Preset("spec", PROPAGATE_FIRST, "neg_inf", MINUS_ONE, PLANE_SCOPE),
    "openvino": Preset("openvino", IGNORE, "f32_lowest", PLANE_FIRST, 0),
    "onednn": Preset("onednn", IGNORE, "f32_lowest", PLANE_FIRST, 0),
    "torch": Preset("torch", PROPAGATE_LAST, "neg_inf", MINUS_ONE, PLANE_SCOPE),
    "onnx": Preset("onnx", FIRST_VALID, "type_lowest", BEFORE_PLANE, 0),
}

# Only the engines that have AdaptiveMaxPool. Its bins are never empty when the output is not.
ADAPTIVE_PRESETS = {
    "spec": MAX_POOL_PRESETS["spec"],
    "openvino": Preset("openvino", FIRST_VALID, "neg_inf", MINUS_ONE, PLANE_SCOPE),
    "torch": MAX_POOL_PRESETS["torch"],
}


def preset_for(op: str, name: Any) -> Preset:
    """The preset called ``name`` (case-insensitive) for ``op``."""
    # ``op`` may be a versioned name such as "openvino:AdaptiveMaxPool-8".
    table = ADAPTIVE_PRESETS if "AdaptiveMaxPool" in op else MAX_POOL_PRESETS
    if isinstance(name, Preset) and table.get(name.name) == name:
        return name
    if isinstance(name, str) and name.strip().lower() in table:
        return table[name.strip().lower()]
    raise PoolingError(op, "semantics", f"must be one of {', '.join(table)}", name)
