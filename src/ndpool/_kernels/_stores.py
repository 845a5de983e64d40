"""Streaming stores: output lines written to memory past the caches (``stream_run``, ``store_fence``).

A store to a line that is not in cache fetches the line first (a read of every output byte), and the
output then evicts the input from the caches. Where a kernel makes its output a row at a time in L1
and the row is not read again, its whole aligned lines go out with non-temporal stores (vmovntps on
x86): no read, no eviction. The k13 SPP image (16 MB in, 16 MB out), a prototype of pool_sliding's
loop on one thread: 5.4 -> 3.0 ms.

Non-temporal stores are weakly ordered: a job ends with ``store_fence`` (sfence) before another
thread, or the caller, may read what it wrote. Elsewhere than on x86 both are plain stores.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ._prefetch import LINE, element_pointer, streamed

STREAMING = platform.machine().lower() in ("x86_64", "amd64")


@intrinsic
def _stream_line(typingctx, dst, d0, src, s0):  # type: ignore[no-untyped-def]
    """dst[d0:d0 + n] = src[s0:s0 + n], n elements making one LINE, dst[d0] at a line's start: one
    vector store, non-temporal on x86."""
    sig = types.void(dst, types.uint64, src, types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        element = context.get_data_type(dst.dtype)
        vector = ir.VectorType(element, LINE // context.get_abi_sizeof(element))
        to = element_pointer(context, builder, dst, args[0], args[1])
        at = element_pointer(context, builder, src, args[2], args[3])
        value = builder.load(builder.bitcast(at, vector.as_pointer()), align=1)
        store = builder.store(value, builder.bitcast(to, vector.as_pointer()), align=LINE)
        if STREAMING:
            store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _address(typingctx, arr, i):  # type: ignore[no-untyped-def]
    """The address of arr[i], as an integer."""
    sig = types.uint64(arr, types.uint64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.ptrtoint(element_pointer(context, builder, arr, args[0], args[1]), ir.IntType(64))

    return sig, codegen


@intrinsic
def store_fence(typingctx):  # type: ignore[no-untyped-def]
    """Orders the streaming stores before every later store (sfence on x86; nothing elsewhere)."""
    sig = types.void()

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        if STREAMING:
            fn = builder.module.declare_intrinsic("llvm.x86.sse.sfence", fnty=ir.FunctionType(ir.VoidType(), []))
            builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always")
def streams_out(flat):  # type: ignore[no-untyped-def]
    """Whether a kernel reading ``flat`` streams its output past the caches: an input read from
    memory (_prefetch.streamed), on x86."""
    return STREAMING and streamed(flat)


@njit(inline="always")
def stream_run(src, s0, dst, d0, count):  # type: ignore[no-untyped-def]
    """dst[d0:d0 + count] = src[s0:s0 + count]: dst's whole lines streamed, the partial ones at either
    end stored as usual (src and dst of one type)."""
    size = dst.itemsize
    per_line = LINE // size
    misaligned = _address(dst, np.uint64(d0)) % LINE
    head = count if misaligned % size else min(count, (LINE - misaligned) % LINE // size)
    for i in range(head):
        dst[np.uint64(d0 + i)] = src[np.uint64(s0 + i)]
    i = head
    while i + per_line <= count:
        _stream_line(dst, np.uint64(d0 + i), src, np.uint64(s0 + i))
        i += per_line
    for j in range(i, count):
        dst[np.uint64(d0 + j)] = src[np.uint64(s0 + j)]
