"""Comparison keys for the compiled kernels.

Kernels read f16 and bf16 as their raw 16-bit patterns (int16 and uint16 views: numba has no
arithmetic on either type) and compare the exact f32 value the bits stand for, so every output is
a copy of input bits (max pooling never rounds) while NaN, +0/-0 and infinities compare as IEEE
floats. Other types compare natively.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload


@intrinsic
def _half_to_f32(typingctx, bits):  # type: ignore[no-untyped-def]
    """f16 bits (an int16) widened to f32 by LLVM's ``fpext``: one vcvtph2ps per 16 lanes on x86 (F16C),
    exact for every value; a NaN stays NaN (a signalling one comes out quiet). The bit arithmetic it
    replaced (rebias by 2**112, infinities and NaN apart: a dozen operations a lane) made the NXC stem in
    f16 twice its f32 time in pool_channel_blocks (10.3 against 5.0 ms, side by side on two threads)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(bits), codegen


def as_key(value):  # type: ignore[no-untyped-def]
    """The value a kernel compares (pure-Python stand-in; the compiled versions are below)."""
    raise NotImplementedError("as_key is only callable from compiled code")


@overload(as_key)
def _as_key(value):  # type: ignore[no-untyped-def]
    if value == types.uint16:  # bf16 bits: the top half of an f32
        def bf16_key(value):  # type: ignore[no-untyped-def]
            return np.uint32(np.uint32(value) << np.uint32(16)).view(np.float32)
        return bf16_key
    if value == types.int16:  # f16 bits: the hardware's exact widening (vcvtph2ps, fcvt)
        def f16_key(value):  # type: ignore[no-untyped-def]
            return _half_to_f32(value)
        return f16_key
    return lambda value: value  # native types compare as they are


def bits_of_key(key, like):  # type: ignore[no-untyped-def]
    """The input bits (of ``like``'s type) whose key is ``key``: as_key's inverse, exact for every key but
    an f16 signalling NaN's (as_key quiets it: its caller must keep those bits itself). Pure-Python
    stand-in; compiled below."""
    raise NotImplementedError("bits_of_key is only callable from compiled code")


# 2**-112 takes an f32 exponent (bias 127) to f16's (bias 15): exact for f16 values, subnormals included.
_F16_UNBIAS = np.float32(2.0**-112)


@overload(bits_of_key)
def _bits_of_key(key, like):  # type: ignore[no-untyped-def]
    # A loop can then keep only the keys of its running maxima and write them back as bits at the end:
    # one select a tap fewer than carrying the bits beside the keys, and no 16-bit lanes blended under
    # masks of 32-bit compares (pool_channel_blocks on the f16 NXC stem, values only: 11.1 -> 4.3-5.1 ms
    # with the hardware key, side by side on two threads).
    if like == types.uint16:  # bf16: the top half of the f32
        def bf16_bits(key, like):  # type: ignore[no-untyped-def]
            return np.uint16(np.float32(key).view(np.uint32) >> np.uint32(16))
        return bf16_bits
    if like == types.int16:  # f16: f16_key backwards, NaN payloads and subnormals included
        def f16_bits(key, like):  # type: ignore[no-untyped-def]
            b = np.float32(key).view(np.uint32)
            sign = np.uint32((b >> np.uint32(16)) & np.uint32(0x8000))
            mag = np.float32(np.uint32(b & np.uint32(0x7FFFFFFF)).view(np.float32) * _F16_UNBIAS)
            finite = np.uint32(mag.view(np.uint32) >> np.uint32(13))
            special = np.uint32(np.uint32(0x7C00) | ((b >> np.uint32(13)) & np.uint32(0x3FF)))
            is_special = np.uint32((b & np.uint32(0x7F800000)) == np.uint32(0x7F800000))
            h = np.uint32(finite ^ ((finite ^ special) & (np.uint32(0) - is_special)))
            return np.uint16(h | sign).view(np.int16)
        return f16_bits
    return lambda key, like: key  # native types: the key is the value


def nan_free(values):  # type: ignore[no-untyped-def]
    """Whether an array's element type has no NaN (pure-Python stand-in; compiled below)."""
    raise NotImplementedError("nan_free is only callable from compiled code")


@overload(nan_free)
def _nan_free(values):  # type: ignore[no-untyped-def]
    # A constant per element type: the kernels' per-NaN-rule loops collapse to one for integers
    # (int16/uint16 are f16/bf16 bits here and keep them), which cuts their compile time.
    free = isinstance(values.dtype, types.Integer) and values.dtype.bitwidth != 16
    return (lambda values: True) if free else (lambda values: False)


# NaN and -0, the values whose ties depend on the order of folding, found by three running bounds of
# a run's bits (no compare per value): -0's signed bits are the least there are, positive NaNs' lie
# above +inf's, negative NaNs' (unsigned) above -inf's. Per float type (f16 and bf16: their bits):
# its bits as signed and unsigned integers, and the bits of +inf and of -inf.
_BITS = {types.float32: (np.int32, np.uint32, 0x7F800000, 0xFF800000),
         types.float64: (np.int64, np.uint64, 0x7FF0000000000000, 0xFFF0000000000000),
         types.int16: (np.int16, np.uint16, 0x7C00, 0xFC00),
         types.uint16: (np.int16, np.uint16, 0x7F80, 0xFF80)}


def odd_start(values):  # type: ignore[no-untyped-def]
    """The bounds before any value of ``values``' type: (low, high, high_u), for odd_bounds (pure-Python
    stand-in; compiled below)."""
    raise NotImplementedError("odd_start is only callable from compiled code")


def odd_bounds(value, low, high, high_u):  # type: ignore[no-untyped-def]
    """The bounds with ``value`` (stand-in)."""
    raise NotImplementedError("odd_bounds is only callable from compiled code")


def odd_found(values, low, high, high_u):  # type: ignore[no-untyped-def]
    """Whether the values of these bounds held a NaN or -0 (stand-in)."""
    raise NotImplementedError("odd_found is only callable from compiled code")


@overload(odd_start)
def _odd_start(values):  # type: ignore[no-untyped-def]
    if values.dtype not in _BITS:  # integers: no bounds kept
        return lambda values: (np.int8(0), np.int8(0), np.uint8(0))
    signed, unsigned = _BITS[values.dtype][:2]
    low, high = np.iinfo(signed).max, np.iinfo(signed).min
    return lambda values: (signed(low), signed(high), unsigned(0))


@overload(odd_bounds)
def _odd_bounds(value, low, high, high_u):  # type: ignore[no-untyped-def]
    if value not in _BITS:
        return lambda value, low, high, high_u: (low, high, high_u)
    signed, unsigned = _BITS[value][:2]
    if isinstance(value, types.Float):
        as_float = np.float32 if value == types.float32 else np.float64

        def float_bounds(value, low, high, high_u):  # type: ignore[no-untyped-def]
            b = as_float(value).view(signed)
            return min(low, b), max(high, b), max(high_u, as_float(value).view(unsigned))
        return float_bounds

    def half_bounds(value, low, high, high_u):  # type: ignore[no-untyped-def]
        b = signed(value)
        return min(low, b), max(high, b), max(high_u, unsigned(value))
    return half_bounds


@overload(odd_found)
def _odd_found(values, low, high, high_u):  # type: ignore[no-untyped-def]
    if values.dtype not in _BITS:
        return lambda values, low, high, high_u: False
    signed, unsigned, pos_inf, neg_inf = _BITS[values.dtype]
    least = np.iinfo(signed).min
    return lambda values, low, high, high_u: (low == least) | (high > pos_inf) | (high_u > neg_inf)


def is_keyed(values):  # type: ignore[no-untyped-def]
    """Whether an array holds 16-bit float bits, whose keys differ from the values (pure-Python
    stand-in; compiled below)."""
    raise NotImplementedError("is_keyed is only callable from compiled code")


@overload(is_keyed)
def _is_keyed(values):  # type: ignore[no-untyped-def]
    # A constant per element type, like nan_free: the kernels keep the bits beside the keys only then.
    keyed = values.dtype in (types.int16, types.uint16)
    return (lambda values: True) if keyed else (lambda values: False)
