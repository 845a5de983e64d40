"""Parsing and normalizing attributes, once, at the entry.

Everything a user or an IR file can hand us (ints, sequences, NumPy arrays, ``"2,2"`` strings, enum
spellings in any case) becomes plain tuples of ints and canonical lower-case strings here. Below this
layer nothing is optional and nothing is re-checked.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import PoolingError
from ._semantics import Preset, preset_for

__all__ = [
    "MaxPoolAttributes",
    "normalize_max_pool_attributes",
    "parse_enum",
    "parse_index_type",
    "parse_input_shape",
    "parse_int_list",
    "parse_output_size",
]

ROUNDING_TYPES = {"floor": "floor", "ceil": "ceil", "ceil_torch": "ceil_torch"}
AUTO_PADS = {
    "none": "none",
    "explicit": "none",
    "notset": "none",
    "same_upper": "same_upper",
    "same_lower": "same_lower",
    "valid": "valid",
}
DATA_FORMATS = {"nxc": "NXC", "ncx": "NCX"}
# Window arithmetic runs in int64; this bound keeps every intermediate far from overflow.
ATTRIBUTE_LIMIT = 2**40

INDEX_TYPES = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
               "int32": np.dtype(np.int32), "int64": np.dtype(np.int64)}


def _is_int(value: Any) -> bool:
    # (A plain int first: the abstract-class check cost a fifth of a small call's time.)
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)))


def plain_ints(value: Any) -> bool:
    """Whether ``value`` is a tuple or list of plain ints (no bool, no NumPy scalar): the common
    spelling of a per-axis attribute, checked without NumPy."""
    return type(value) in (tuple, list) and all(type(v) is int for v in value)


def parse_enum(op: str, name: str, value: Any, choices: Mapping[str, str]) -> str:
    """Return the canonical spelling of a case-insensitive string attribute."""
    if isinstance(value, str) and value.strip().lower() in choices:
        return choices[value.strip().lower()]
    valid = ", ".join(choices)
    raise PoolingError(op, name, f"must be one of {valid}", value)


def parse_int_list(op: str, name: str, value: Any, n: int, minimum: int) -> tuple[int, ...]:
    """An int (for every spatial axis), a sequence of ``n`` ints, or an IR string ``"2,2"``."""
    rule = "must be positive integers" if minimum >= 1 else "must be non-negative integers"
    items: list[Any]
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")] if value.strip() else []
        try:
            items = [int(p) for p in parts]
        except ValueError:
            raise PoolingError(op, name, f"{rule}, as a comma-separated list", value) from None
    elif _is_int(value):
        items = [value] * n
    elif plain_ints(value):
        items = list(value)  # (the common case, without the object array below)
    elif isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
        if arr.ndim != 1:
            raise PoolingError(op, name, f"{rule}, one per spatial axis", _show(value))
        items = list(arr.tolist() if isinstance(arr, np.ndarray) and arr.dtype != object else arr)
    else:
        raise PoolingError(op, name, f"{rule}: an int or a sequence of {n}", _show(value))
    if not all(_is_int(v) for v in items):
        raise PoolingError(op, name, rule, _show(value))
    if len(items) != n:
        raise PoolingError(op, name, f"must have one entry per spatial axis ({n})", _show(value))
    result = tuple(int(v) for v in items)
    if any(v < minimum for v in result):
        raise PoolingError(op, name, rule, result)
    if any(v > ATTRIBUTE_LIMIT for v in result):
        raise PoolingError(op, name, "must be at most 2**40", result)
    return result


def parse_index_type(op: str, value: Any) -> np.dtype[Any]:
    """``"i32"`` / ``"i64"`` (any case), or the NumPy int32 / int64 dtype."""
    if isinstance(value, str) and value.strip().lower() in INDEX_TYPES:
        return INDEX_TYPES[value.strip().lower()]
    try:
        dt = np.dtype(value) if not isinstance(value, str) else None
    except TypeError:
        dt = None
    if dt is not None and dt in (np.dtype(np.int32), np.dtype(np.int64)):
        return dt
    raise PoolingError(op, "index_element_type", "must be one of i32, i64", value)


def parse_input_shape(op: str, shape: Any) -> tuple[int, ...]:
    """An input shape: 3 to 5 non-negative ints (N, C and 1-3 spatial axes)."""
    if isinstance(shape, str):
        shape = parse_int_list(op, "input_shape", shape, len(shape.split(",")), 0)
    try:
        dims = tuple(shape)
    except TypeError:
        raise PoolingError(op, "input_shape", "must be a sequence of ints", shape) from None
    if not all(_is_int(d) and d >= 0 for d in dims):
        raise PoolingError(op, "input_shape", "must be non-negative integers", dims)
    if not 3 <= len(dims) <= 5:
        raise PoolingError(op, "data", "must have rank 3, 4 or 5 (N, C and 1-3 spatial axes)",
                           tuple(int(d) for d in dims))
    return tuple(int(d) for d in dims)


def parse_output_size(op: str, value: Any, n: int) -> tuple[int, ...]:
    """AdaptiveMaxPool's ``output_size``: one non-negative int per spatial axis (an int: all axes)."""
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iu":
        raise PoolingError(op, "output_size", "must be an int32 or int64 tensor", _show(value))
    return parse_int_list(op, "output_size", value, n, 0)


def _show(value: Any) -> Any:
    """A short form of a value for an error message (large arrays are summarized)."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


@dataclass(frozen=True)
class MaxPoolAttributes:
    """MaxPool attributes after normalization: tuples of ints and canonical strings."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    dilations: tuple[int, ...]
    rounding_type: str
    auto_pad: str
    data_format: str
    return_indices: bool
    index_dtype: np.dtype[Any]
    index_axis: int | None
    semantics: Preset


def normalize_max_pool_attributes(rank: int, *, kernel: Any, strides: Any, pads_begin: Any = 0,
                                  pads_end: Any = 0, dilations: Any = 1,
                                  rounding_type: Any = "floor", auto_pad: Any = "none",
                                  data_format: Any = "NXC", return_indices: Any = False,
                                  index_element_type: Any = "i64", index_axis: Any = None,
                                  semantics: Any = "spec", op: str = "MaxPool") -> MaxPoolAttributes:
    """Check and normalize every MaxPool attribute for an input of the given rank."""
    n = rank - 2
    if not isinstance(return_indices, (bool, np.bool_)):
        raise PoolingError(op, "return_indices", "must be a bool", return_indices)
    if index_axis is not None:
        if not _is_int(index_axis) or not -rank <= index_axis < rank:
            raise PoolingError(op, "index_axis", f"must be an int in [{-rank}, {rank})", index_axis)
        index_axis = int(index_axis) % rank
    return MaxPoolAttributes(
        kernel=parse_int_list(op, "kernel", kernel, n, 1),
        strides=parse_int_list(op, "strides", strides, n, 1),
        # Given pads are validated even where auto_pad then ignores them.
        pads_begin=parse_int_list(op, "pads_begin", pads_begin, n, 0),
        pads_end=parse_int_list(op, "pads_end", pads_end, n, 0),
        dilations=parse_int_list(op, "dilations", dilations, n, 1),
        rounding_type=parse_enum(op, "rounding_type", rounding_type, ROUNDING_TYPES),
        auto_pad=parse_enum(op, "auto_pad", auto_pad, AUTO_PADS),
        data_format=parse_enum(op, "data_format", data_format, DATA_FORMATS),
        return_indices=bool(return_indices),
        index_dtype=parse_index_type(op, index_element_type),
        index_axis=index_axis,
        semantics=preset_for(op, semantics),
    )
