"""Software prefetches for the compiled kernels (LLVM's ``llvm.prefetch``; numba has none).

One core here reads about 8-11 GB/s from L3: its outstanding line fills set the pace, and a kernel
that stops loading to compute (a pass over its scratch) leaves them idle. Its output lines cost a
read too (a store to a line not in cache fetches it first). Asking for the next unit's input and
output lines while this unit computes keeps both streams going (side by side on one thread, the NCX
stem 17.5 -> 15.8 ms, 3x3 s1 on 56x56 planes 10.0 -> 8.3).
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# Bytes per cache line.
LINE = 64
# Inputs of at least this many bytes stream from memory; smaller ones are likely in L3 (a layer's input
# was the layer before's output; a benchmark's repeated calls), where the requests of whole windows
# ahead cost more than they saved (figures at the kernels that ask: _channel_blocks, _adaptive).
STREAMED_BYTES = 64 << 20


@njit(inline="always")
def _bytes(flat):  # type: ignore[no-untyped-def]
    return flat.size * flat.itemsize


@njit(inline="always")
def streamed(flat):  # type: ignore[no-untyped-def]
    """Whether the array ``flat`` is large enough to be read from memory rather than L3."""
    return _bytes(flat) >= STREAMED_BYTES


# Inputs of at least this many bytes have the next large window's (or bin row's) lines requested while
# one folds (_channel_blocks, _adaptive). On the 2-core Xeon that lost on inputs in L3 (figures at
# _channel_blocks.PREFETCH_TAPS), so only inputs from memory asked there. On the AMD EPYC (Zen 4) the
# requests paid in L3 as well (2026-12-07, kernel alone, alternated, one / two threads, i64 indices,
# over the variants of this gate tried that day): AdaptiveMaxPool 2x32x32x64x64 -> 5x7x9 (34 MB) NXC
# 0.61-0.81x / 0.62-0.84x the time, NCX 0.59-0.63x / 0.69-0.82x; 8x64x100x100 -> 13x17 NXC (20 MB)
# 0.73-0.99x / 0.73-0.98x. There they ask from 16 MB on: on smaller inputs (L2 and the near part of L3)
# they lost, AdaptiveMaxPool 4x64x40x40 -> 5x5 NXC (1.6 MB) 1.08x. (A constant of the host CPU, like
# the machine code numba caches for it; compared at run time: folded in as a constant, the
# channels-inner loop compiled otherwise, and the 1-D k5 workload, which never requests, took 1.6-1.7x
# the time.)
REQUEST_BYTES = 16 << 20 if llvm.get_host_cpu_name().startswith("znver") else STREAMED_BYTES


@njit(inline="always")
def requests_pay(flat):  # type: ignore[no-untyped-def]
    """Whether the lines of the next large window of ``flat`` are worth requesting ahead."""
    return _bytes(flat) >= REQUEST_BYTES


@njit(inline="always")
def row_share(length, rows, line):  # type: ignore[no-untyped-def]
    """Elements of a run of ``length`` that each of ``rows`` rows of a pass requests: whole lines, the
    last row's share cut at the run's end (none without rows)."""
    return (length // rows + line) // line * line if rows > 0 else 0


def element_pointer(context, builder, arrty, arr, index):  # type: ignore[no-untyped-def]
    """Codegen: the address of arr[index] (an array of numba type arrty; no bounds check)."""
    return builder.gep(context.make_array(arrty)(context, builder, arr).data, [index])


def _prefetch(rw: int, locality: int):  # type: ignore[no-untyped-def]
    @intrinsic
    def prefetch(typingctx, arr, i):  # type: ignore[no-untyped-def]
        sig = types.void(arr, types.uint64)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            # A hint: no bounds check, and an address outside the array is never read.
            at = element_pointer(context, builder, arr, args[0], args[1])
            ptr = builder.bitcast(at, ir.IntType(8).as_pointer())
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
            builder.call(fn, [ptr, ir.Constant(i32, rw), ir.Constant(i32, locality), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return sig, codegen

    return prefetch


# ``prefetch_read(arr, np.uint64(i))``: the line of arr[i] into L2 (prefetcht1);
# ``prefetch_read_l1``: into L1 (prefetcht0), for lines read within the next unit of work;
# ``prefetch_write``: into L1 for writing (prefetchw).
prefetch_read = _prefetch(0, 2)
prefetch_read_l1 = _prefetch(0, 3)
prefetch_write = _prefetch(1, 3)
