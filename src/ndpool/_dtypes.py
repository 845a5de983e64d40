"""The element types ndpool pools, and turning user data into a NumPy array without copying."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ._errors import PoolingError

__all__ = ["DTYPE_NAMES", "NARROW_FLOATS", "as_array", "dtype_name"]

DTYPE_NAMES: dict[np.dtype[Any], str] = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
}

# Compared after an exact widening to f32 (every f16 and bf16 value is an f32 value).
NARROW_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def dtype_name(dtype: np.dtype[Any]) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype))


def as_array(op: str, data: Any) -> np.ndarray:
    """``data`` as a NumPy array, read in place where possible (any strides, broadcast views).

    Takes NumPy arrays, anything with ``__array__`` or DLPack (a torch CPU tensor), and sequences.
    """
    if isinstance(data, np.ndarray):
        x = data
    else:
        try:
            if hasattr(data, "__dlpack__") and not hasattr(data, "__array__"):
                x = np.from_dlpack(data)
            else:
                x = np.asarray(data)
        except Exception as exc:  # any failure to convert is bad input, said plainly
            raise PoolingError(op, "data", f"must be an array NumPy can read ({exc})",
                               type(data).__name__) from None
    if x.dtype not in DTYPE_NAMES:
        raise PoolingError(op, "data", f"dtype must be one of {', '.join(DTYPE_NAMES.values())}",
                           str(x.dtype))
    return x
