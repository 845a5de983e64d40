"""Flags that threads poll without the GIL: the compiled half of the launcher's spinning hand-off.

Handing a part of a call to a thread that sleeps (on a lock, a condition or the GIL) costs a wake-up:
on this 2-vCPU VM a ``ThreadPoolExecutor`` round trip of a no-op took 42 us, most of a small call
(AdaptiveMaxPool 32x512x14x14 -> 7x7 takes 0.24 ms). Here the launcher's workers wait by polling a
flag in compiled code, without the GIL, and the caller publishes a job from compiled code too, then
polls a few microseconds more before it takes the GIL back, so that the workers take it meanwhile,
unpack their parts and enter their (nogil) kernels; then nobody sleeps on the GIL either
(``benchmarks/handoff.py``: 6-7 us a call against the executor's 25-42).

The flags are int64 slots a cache line apart in one array; loads are atomic (acquire), so LLVM keeps
them in the polling loops, and stores atomic (release), so a worker that sees its job's number sees
the job's arguments, written before.
"""

from __future__ import annotations

from typing import Any

from numba import njit, types
from numba.extending import intrinsic

from ._jit import kernel
from ._prefetch import element_pointer

# Slots of the flags array: the job number all workers poll, then each worker's "done" number.
JOB = 0
SLOT = 8  # int64s a cache line


def done_slot(worker: int) -> int:
    """The flags slot where worker number ``worker`` (from 0) posts the number of the job it finished."""
    return SLOT * (worker + 1)


@intrinsic
def _load(typingctx, flags, i):  # type: ignore[no-untyped-def]
    """flags[i], an atomic acquire load."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.load_atomic(element_pointer(context, builder, sig.args[0], *args), "acquire", 8)
    return types.int64(flags, types.intp), codegen


@intrinsic
def _store(typingctx, flags, i, value):  # type: ignore[no-untyped-def]
    """flags[i] = value, an atomic release store."""
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        builder.store_atomic(args[2], element_pointer(context, builder, sig.args[0], args[0], args[1]), "release", 8)
        return context.get_dummy_value()
    return types.void(flags, types.intp, types.int64), codegen


@njit(inline="always")
def _until(flags, slot, value, polls):  # type: ignore[no-untyped-def]
    """Whether flags[slot] reached ``value`` (numbers only grow) within ``polls`` loads (-1: no limit)."""
    n = 0
    while _load(flags, slot) < value:
        if n == polls:
            return False
        n += 1
    return True


@kernel
def poll(flags, slot, value, polls):  # type: ignore[no-untyped-def]
    """See ``_until``."""
    return _until(flags, slot, value, polls)


@kernel
def publish(flags, slot, value, polls):  # type: ignore[no-untyped-def]
    """flags[slot] = value, then ``polls`` loads of it: time for the workers to take the GIL and enter
    their parts before the caller takes it back. Returns the loads' sum (so that they are kept)."""
    _store(flags, slot, value)
    seen = 0
    for _ in range(polls):
        seen += _load(flags, slot)
    return seen


@kernel
def post_then_poll(flags, slot, value, job, next_job, polls):  # type: ignore[no-untyped-def]
    """flags[slot] = value (a worker's "done"), then ``_until`` job number ``next_job``: the worker
    does not take the GIL between the two, when its caller may want it back."""
    _store(flags, slot, value)
    return _until(flags, job, next_job, polls)


def warm(flags: Any) -> None:
    """Compile (or load) the three for the flags array's type."""
    poll(flags, JOB, 0, 0)
    publish(flags, flags.size - 1, 0, 0)
    post_then_poll(flags, flags.size - 1, 0, JOB, 0, 0)
