"""One NCX plane's values folded rows first: per output row, its window's input rows into a row
buffer, then the buffer along w (pool_folds' values-only path for 2-D planes).

pool_folds folds every input row along w first, as the first-maximum rule needs where taps tie
with different bits (+0 against -0, NaNs with different payloads: folding the outer axis first takes
the first of them in the wrong order). A plane without NaN and -0 has no such ties: any order of
folding gives the same bits. Folding h first then works on output rows only (the stem: 56 rows of
112 instead of 112 rows of 56 along w) and needs no border columns: the buffer's slots outside the
row hold a value no tap loses to (``never``). At stride 2 the buffer is kept as its even and odd
slots, written by a loop that reads each input row's pairs (interleaved loads vectorize), so that
the w fold loads its three taps at unit stride.

The rows are checked for NaN and -0 as they are folded (odd_bounds); a plane with either is left
to the caller (False), which folds it again w first.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._channel_blocks import _stack_slots
from ._jit import kernel, pure
from ._keys import as_key, odd_bounds, odd_found, odd_start
from ._prefetch import LINE, prefetch_read, prefetch_write, row_share


@njit(inline="always")
def _bigger(a, b):  # type: ignore[no-untyped-def]
    """The greater of a and b (their order does not matter: no NaN, no -0)."""
    return a if as_key(a) > as_key(b) else b


# Loops over a row's pairs run a multiple of this many iterations where the input allows (past the
# row's end: the next row's columns, folded into slots no output reads, their NaN or -0 sending the
# plane to the caller all the same): a vectorized loop's scalar remainder (the stem's rows of 56
# pairs: 8 of them) had cost more than its vector iterations (1.9 against 2.6 us a stem plane).
PAD = 32


@njit(inline="always")
def _check_run(src, at, n, low, high, high_u):  # type: ignore[no-untyped-def]
    """The odd_bounds of src[at:at + n] and of (low, high, high_u)."""
    for t in range(n):
        low, high, high_u = odd_bounds(src[np.uint64(at + t)], low, high, high_u)
    return low, high, high_u


@njit(inline="always")
def _fold_into(src, r0, r1, r2, seed, buf, at, n, low, high, high_u):  # type: ignore[no-untyped-def]
    """buf[at + t] = the greater of src[r + t] over rows r0, r1, r2 (and of buf's own value there if
    ``seed``: windows of more than three rows), t < n; returns the odd_bounds with rows r1 and r2's
    taps. A row given twice changes nothing."""
    for t in range(n):
        a, b, c = src[np.uint64(r0 + t)], src[np.uint64(r1 + t)], src[np.uint64(r2 + t)]
        low, high, high_u = odd_bounds(c, *odd_bounds(b, low, high, high_u))
        m = _bigger(b, a)
        m = _bigger(buf[np.uint64(at + t)], m) if seed else m
        buf[np.uint64(at + t)] = _bigger(c, m)
    return low, high, high_u


@njit(inline="always")
def _fold_pairs(src, r0, r1, r2, seed, buf, at_a, at_b, n, low, high, high_u):  # type: ignore[no-untyped-def]
    """Pairs of columns: buf[at_a + t] gets column 2t of rows r0, r1, r2 (offsets of the first column),
    buf[at_b + t] column 2t + 1, t < n (seeded with buf's values if ``seed``); returns the odd_bounds
    with rows r1 and r2's taps."""
    # One loop per case: the seed's loads under a loop-invariant test were not hoisted out.
    if seed:
        for t in range(n):
            a0, b0 = src[np.uint64(r0 + 2 * t)], src[np.uint64(r0 + 2 * t + 1)]
            a1, b1 = src[np.uint64(r1 + 2 * t)], src[np.uint64(r1 + 2 * t + 1)]
            a2, b2 = src[np.uint64(r2 + 2 * t)], src[np.uint64(r2 + 2 * t + 1)]
            low, high, high_u = odd_bounds(a1, *odd_bounds(b1, *odd_bounds(a2, *odd_bounds(b2, low, high, high_u))))
            a = _bigger(_bigger(a1, a0), buf[np.uint64(at_a + t)])
            b = _bigger(_bigger(b1, b0), buf[np.uint64(at_b + t)])
            buf[np.uint64(at_a + t)] = _bigger(a2, a)
            buf[np.uint64(at_b + t)] = _bigger(b2, b)
    else:
        for t in range(n):
            a0, b0 = src[np.uint64(r0 + 2 * t)], src[np.uint64(r0 + 2 * t + 1)]
            a1, b1 = src[np.uint64(r1 + 2 * t)], src[np.uint64(r1 + 2 * t + 1)]
            a2, b2 = src[np.uint64(r2 + 2 * t)], src[np.uint64(r2 + 2 * t + 1)]
            low, high, high_u = odd_bounds(a1, *odd_bounds(b1, *odd_bounds(a2, *odd_bounds(b2, low, high, high_u))))
            buf[np.uint64(at_a + t)] = _bigger(a2, _bigger(a1, a0))
            buf[np.uint64(at_b + t)] = _bigger(b2, _bigger(b1, b0))
    return low, high, high_u


@njit(inline="always")
def _fold_one(src, r0, r1, r2, seed, buf, at, low, high, high_u):  # type: ignore[no-untyped-def]
    """_fold_into for one slot, without a loop (the column a row's pairs leave over)."""
    a, b, c = src[np.uint64(r0)], src[np.uint64(r1)], src[np.uint64(r2)]
    m = _bigger(b, a)
    m = _bigger(buf[np.uint64(at)], m) if seed else m
    buf[np.uint64(at)] = _bigger(c, m)
    return odd_bounds(c, *odd_bounds(b, low, high, high_u))


@njit(inline="always")
def _part(out_w):  # type: ignore[no-untyped-def]
    """Slots of the even (or odd) part of a row's buffer: room for a loop rounded up to PAD iterations."""
    return (out_w + 1 + PAD) // PAD * PAD + PAD


# Output rows of at most this many outputs: the row buffer is on the stack (an alloca, which LLVM
# knows aliases no array: with the buffer in scratch, each loop's overlap checks against its three
# input rows, spilled, cost about as much as its vector iterations on the stem's rows).
MAX_OUT_W = 512
_row_slots = _stack_slots(2 * pure(_part)(MAX_OUT_W))


@njit(inline="always")
def _slot(b, sw, odd_at):  # type: ignore[no-untyped-def]
    """Where slot b of a row's buffer is: at stride 2 slot 2t at t, slot 2t + 1 at odd_at + t."""
    if sw != 2:
        return b
    return odd_at + b // 2 if b % 2 else b // 2


@kernel  # once per element type, called by pool_folds
def rows_first_plane(src, plane, xs_h, in_w, win, dh, sw, out_h, out_w, never, dst, d0, src_next, src_len, dst_next,
                     dst_len):  # type: ignore[no-untyped-def]
    """dst[d0 + oh*out_w + ow] = the greatest value of output (oh, ow)'s window in the plane at
    ``plane`` (rows xs_h apart, w at unit stride; h windows ``win[1]`` with dilation dh; w windows
    three adjacent taps at stride ``sw`` 1 or 2, the first at ``win[2, 0, 0]``; out_w <= MAX_OUT_W),
    ``never`` where an output has no row in range. Returns False, the outputs part-written, if the
    plane holds a NaN or -0 in the rows and columns the windows read.

    Each output row also requests its share of src[src_next:src_next + src_len] and, for writing, of
    dst[dst_next:dst_next + dst_len] (the next planes' lines, as pool_folds' passes do)."""
    buf = _row_slots(never)
    s0 = win[2, 0, 0]
    n_slots = sw * (out_w - 1) + 3  # slot b holds input column b + s0
    lo, hi = max(0, -s0), min(n_slots, in_w - s0)  # the slots of columns in range
    if hi <= lo:  # (no column in range: left to the caller)
        return False
    odd_at = _part(out_w)
    # At stride 2 the row's columns go by pairs from its first, as it lies in memory (a row that starts
    # on a cache line is read in whole lines: pairs that started one column on had the stem's loads
    # straddle lines); a last column left over folds alone.
    pairs = (hi - lo) // 2 if sw == 2 else 0
    padded = (pairs + PAD - 1) // PAD * PAD
    at_a, at_b = _slot(lo, sw, odd_at), _slot(lo + 1, sw, odd_at)  # a pair's first and second columns
    last_at = _slot(hi - 1, sw, odd_at)
    at_1, at_2 = _slot(1, sw, odd_at), _slot(2, sw, odd_at)  # the w fold's taps: slots sw*t + 1, sw*t + 2
    for b in range(lo):  # the slots left of the row (those right of it: after each row's pairs)
        buf[np.uint64(_slot(b, sw, odd_at))] = never
    line = LINE // src.itemsize
    src_row, dst_row = row_share(src_len, out_h, line), row_share(dst_len, out_h, line)
    # Rows above ``checked`` are in the bounds (windows move down); a plane's outputs are all written
    # before the bounds are looked at (the caller redoes a plane with NaN or -0).
    checked = 0
    low, high, high_u = odd_start(src)
    for oh in range(out_h):
        for e in range(oh * src_row, min((oh + 1) * src_row, src_len), line):
            prefetch_read(src, np.uint64(src_next + e))
        for e in range(oh * dst_row, min((oh + 1) * dst_row, dst_len), line):
            prefetch_write(dst, np.uint64(dst_next + e))
        o = d0 + oh * out_w
        first, end, h0 = win[1, 1, oh], win[1, 2, oh], win[1, 0, oh]
        if first >= end:
            for t in range(out_w):
                dst[np.uint64(o + t)] = never
            continue
        j = first
        while j < end:  # three rows a pass, later passes seeded with the buffer
            r0 = plane + (h0 + j * dh) * xs_h + lo + s0  # (column of slot lo)
            r1 = plane + (h0 + min(j + 1, end - 1) * dh) * xs_h + lo + s0
            r2 = plane + (h0 + min(j + 2, end - 1) * dh) * xs_h + lo + s0
            seed = j > first
            h = h0 + j * dh
            if h >= checked or dh != 1:  # (rows r1 and r2 are checked as they fold)
                low, high, high_u = _check_run(src, r0, hi - lo, low, high, high_u)
            checked = h0 + min(j + 2, end - 1) * dh + 1
            if sw == 2:
                n = padded if max(r0, r1, r2) + 2 * padded <= src.size else pairs
                low, high, high_u = _fold_pairs(src, r0, r1, r2, seed, buf, at_a, at_b, n, low, high, high_u)
                if (hi - lo) % 2:
                    c = hi - 1 - lo
                    low, high, high_u = _fold_one(src, r0 + c, r1 + c, r2 + c, seed, buf, last_at, low, high, high_u)
            else:
                low, high, high_u = _fold_into(src, r0, r1, r2, seed, buf, lo, hi - lo, low, high, high_u)
            j += 3
        for b in range(hi, n_slots):  # (rewritten: the padded pairs ran over them)
            buf[np.uint64(_slot(b, sw, odd_at))] = never
        for t in range(out_w):  # the w fold: taps at slots sw*t, sw*t + 1, sw*t + 2
            m = _bigger(buf[np.uint64(at_1 + t)], buf[np.uint64(t)])
            dst[np.uint64(o + t)] = _bigger(buf[np.uint64(at_2 + t)], m)
    return not odd_found(src, low, high, high_u)
