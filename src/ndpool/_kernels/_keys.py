"""Comparison keys for the compiled kernels.

Kernels read f16 and bf16 as their raw 16-bit patterns (int16 and uint16 views: numba has no
arithmetic on either type) and compare the exact f32 value the bits stand for, so every output is
a copy of input bits (max pooling never rounds) while NaN, +0/-0 and infinities compare as IEEE
floats. Other types compare natively.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

# 2**112 rebias an f16 exponent (bias 15) to f32's (bias 127); exact for normals and subnormals.
_F16_REBIAS = np.float32(2.0**112)


def as_key(value):  # type: ignore[no-untyped-def]
    """The value a kernel compares (pure-Python stand-in; the compiled versions are below)."""
    raise NotImplementedError("as_key is only callable from compiled code")


@overload(as_key)
def _as_key(value):  # type: ignore[no-untyped-def]
    if value == types.uint16:  # bf16 bits: the top half of an f32
        def bf16_key(value):  # type: ignore[no-untyped-def]
            return np.uint32(np.uint32(value) << np.uint32(16)).view(np.float32)
        return bf16_key
    if value == types.int16:  # f16 bits
        def f16_key(value):  # type: ignore[no-untyped-def]
            h = np.uint32(np.uint16(value))
            mag = np.uint32((h & np.uint32(0x7FFF)) << np.uint32(13))
            scaled = np.float32(mag.view(np.float32) * _F16_REBIAS).view(np.uint32)
            special = np.uint32(mag | np.uint32(0x7F800000))  # inf and NaN keep their payload
            # Branch-free select (inf/NaN exponent ? special : scaled) keeps the loops vectorizable.
            is_special = np.uint32((h & np.uint32(0x7C00)) == np.uint32(0x7C00))
            bits = np.uint32(scaled ^ ((scaled ^ special) & (np.uint32(0) - is_special)))
            sign = np.uint32((h & np.uint32(0x8000)) << np.uint32(16))
            return np.uint32(bits | sign).view(np.float32)
        return f16_key
    return lambda value: value  # native types compare as they are


def nan_free(values):  # type: ignore[no-untyped-def]
    """Whether an array's element type has no NaN (pure-Python stand-in; compiled below)."""
    raise NotImplementedError("nan_free is only callable from compiled code")


@overload(nan_free)
def _nan_free(values):  # type: ignore[no-untyped-def]
    # A constant per element type: the kernels' per-NaN-rule loops collapse to one for integers
    # (int16/uint16 are f16/bf16 bits here and keep them), which cuts their compile time.
    free = isinstance(values.dtype, types.Integer) and values.dtype.bitwidth != 16
    return (lambda values: True) if free else (lambda values: False)


def is_keyed(values):  # type: ignore[no-untyped-def]
    """Whether an array holds 16-bit float bits, whose keys differ from the values (pure-Python
    stand-in; compiled below)."""
    raise NotImplementedError("is_keyed is only callable from compiled code")


@overload(is_keyed)
def _is_keyed(values):  # type: ignore[no-untyped-def]
    # A constant per element type, like nan_free: the kernels keep the bits beside the keys only then.
    keyed = values.dtype in (types.int16, types.uint16)
    return (lambda values: True) if keyed else (lambda values: False)
