"""NXC data with many unit-stride channels: each window folded a block of channels at a time.

``pool_channels_inner`` folds a window tap by tap into the output's channels in memory: every tap
loads and stores the running maxima and their int64 indices again. Here, per output and block of
LANES channels, the running maxima live on the stack (an ``alloca`` LLVM keeps in vector registers
across the taps), and the indices are int32 offsets from the window's first tap, added back once at
the end. AdaptiveMaxPool 8x64x100x100 -> 13x17 with i64 indices, one thread: 3.0 ms -> 0.9 ms.

The taps still arrive in row-major order and a tap replaces the maximum only when it wins (the
sequential fold, so the first-maximum rule holds); the fold's loop comes in one copy per NaN rule
with its flags constant, since the rule read at run time made it 2x slower. A channel count that is
not a multiple of LANES ends with a block that overlaps the one before (it writes the same values).

Needs at least LANES channels at unit stride and windows whose index offsets fit in int32 (planes of
fewer than 2**31 elements): ``_launch`` sends nothing else here.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel
from ._keys import as_key, bits_of_key, is_keyed, nan_free
from ._loops import _index_params, _row_windows, _rules, _seed_at
from ._prefetch import LINE, prefetch_read, requests_pay

# Channels per block. 32 f32 lanes are four AVX2 vectors; 16 was slower (LLVM unrolls a loop of 16
# into scalars before it vectorizes). 64 was 4-9% faster on 64 channels but would leave inputs of
# 32-63 channels (the 3-D workload's 32) to the slower loops, and a second width costs compile time.
LANES = 32


def _stack_slots(slots: int):  # type: ignore[no-untyped-def]
    """An intrinsic: a pointer to ``slots`` stack slots of its argument's type (uninitialized; freed on
    return: an ``alloca`` that LLVM can keep in registers, and that aliases no array)."""
    @intrinsic
    def stack_like(typingctx, value):  # type: ignore[no-untyped-def]
        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            return cgutils.alloca_once(builder, context.get_value_type(value), size=slots)
        return types.CPointer(value)(value), codegen
    return stack_like


_lanes_like = _stack_slots(LANES)  # a block's running maxima, values and indices


# Whole MaxPool windows of up to this many taps fold through a table of their taps' offsets (see
# _fold_taps); larger ones, clipped ones and AdaptiveMaxPool's bins walk the window's rows. Kernel
# alone, table against rows, the same compiled loop, alternated in one process (2026-12-03): NXC stem
# f32 0.98x the time on one thread, 0.90-0.98x on two; with i64 indices 0.90 / 0.89; 3-D k3s2p1 with
# i64 indices 0.89 / 0.90.
TABLE_TAPS = 64
_taps_like = _stack_slots(TABLE_TAPS)  # a window's tap offsets and relative indices


# Windows of at least this many taps request the next window's lines first (see pool_channel_blocks).
# From 64 to 32 for AdaptiveMaxPool 8x64x100x100 -> 13x17 NXC (bins of 48-63 taps), i64 indices, three
# runs each way, alternated: two threads 1.02-1.59 -> 0.87-0.93 ms, one thread 1.73-1.97 -> 1.37-1.79.
# (3-D k3s2, 27 taps, was slower requesting: see below.)
PREFETCH_TAPS = 32
# Only on inputs where _prefetch.requests_pay: on the 2-core Xeon those that stream from memory (2026-12-06;
# kernel alone, alternated, one / two threads, i64 indices: without requests AdaptiveMaxPool
# 8x64x100x100 -> 13x17 (20 MB) took 0.71x / 0.78x the time, 2x32x32x64x64 -> 5x7x9 (34 MB) 0.88x /
# 0.94x, while 16x64x224x224 -> 7x7 (205 MB, 32x32 bins) took 1.11x / 1.14x); on Zen 4 from 16 MB
# (there the requests paid on those two in L3, see _prefetch.REQUEST_BYTES).


@njit(inline="always")
def _prefetch_window(flat, x_n, window, xs_d, xs_h, xs_w, dd, dh, dw, n_chan, step):  # type: ignore[no-untyped-def]
    """Request the lines of every tap row of a window (its in-range taps, all channels)."""
    s_d, f_d, e_d, s_h, f_h, e_h, s_w, f_w, e_w = window
    if f_d >= e_d or f_h >= e_h or f_w >= e_w:
        return
    first_w = (s_w + f_w * dw) * xs_w
    span = (e_w - 1 - f_w) * dw * xs_w + n_chan  # elements from the row's first tap to its last channel
    for jd in range(f_d, e_d):
        for jh in range(f_h, e_h):
            at = x_n + (s_d + jd * dd) * xs_d + (s_h + jh * dh) * xs_h + first_w
            for e in range(0, span, step):
                prefetch_read(flat, np.uint64(at + e))


# The NaN rules of the folds below, as constants: each rule's loop spells its test its own way.
SPEC, TORCH, GREATER = 0, 1, 2  # a NaN wins and stays; wins; never wins


@njit(inline="always")
def _lane_wins(kv, km, rule, never):  # type: ignore[no-untyped-def]
    """_wins under ``rule``, spelled so that LLVM's SLP vectorizer keeps the LANES folds in vectors.

    LLVM reads ``kv > km ? kv : km`` (GREATER, where a NaN never wins) and torch's ``kv > km or
    kv != kv`` as max idioms, then leaves the lanes scalar, one at a time: the 3-D k3s2 NXC workload
    ran 2.3x the spec rule's time under openvino's rule, 1-D k5 NXC 2.4x under torch's (one thread,
    side by side). Torch's test is written here as the same truth table in other terms (``not kv <=
    km``, unless km alone is NaN), and GREATER's carries ``never``: a False that LLVM cannot see, so
    the select is no idiom (an ``and`` per vector). The spec rule's loop got about 5% slower with it
    (1-D k5 NXC 22.0 -> 23.3 ms, one thread; same test, LLVM's choice), the others 1.4-2.4x faster."""
    if rule == TORCH:
        return ~(kv <= km) & ~((km != km) & (kv == kv))
    if rule == GREATER:
        return (kv > km) | ((kv != kv) & never)
    return (kv > km) | ((kv != kv) & ~(km != km))


@njit(inline="always")
def _fold_tap(flat, a, mk, mv, mr, rel, want_idx, keyed, rule, never):  # type: ignore[no-untyped-def]
    """Tap flat[a + i] (relative index ``rel``) into lane i's running maximum, i < LANES."""
    for i in range(LANES):
        v = flat[np.uint64(a + i)]
        kv, km = as_key(v), mk[i]
        take = _lane_wins(kv, km, rule, never)
        mk[i] = kv if take else km
        if keyed:
            mv[i] = v if take else mv[i]
        if want_idx:
            mr[i] = rel if take else mr[i]


@njit(inline="always")
def _fold_window(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, rule, never):  # type: ignore[no-untyped-def]
    """Every tap of the window but the first (the maxima were seeded with it), in row-major order, for
    the block whose channel 0 is at ``x_c``. ``window``: (tap 0, first, end) per axis; ``steps``:
    input strides, dilations, index strides per axis, and the first tap's index."""
    s_d, f_d, e_d, s_h, f_h, e_h, s_w, f_w, e_w = window
    xs_d, xs_h, xs_w, dd, dh, dw, st_d, st_h, st_w, g0 = steps
    for jd in range(f_d, e_d):
        d = s_d + jd * dd
        for jh in range(f_h, e_h):
            h = s_h + jh * dh
            at = x_c + d * xs_d + h * xs_h
            g = d * st_d + h * st_h - g0
            j0 = f_w + 1 if jd == f_d and jh == f_h else f_w  # the seed tap is skipped
            for jw in range(j0, e_w):
                w = s_w + jw * dw
                _fold_tap(flat, at + w * xs_w, mk, mv, mr, np.int32(g + w * st_w), want_idx, keyed,
                          rule, never)


@njit(inline="always")
def _fold_by_rule(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, nan_takes, hold):  # type: ignore[no-untyped-def]
    """_fold_window with the NaN rule as a constant: one loop per rule."""
    if not nan_takes:  # (the d dilation is at least 1: a False from memory, see _lane_wins)
        _fold_window(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, GREATER, steps[3] < 1)
    elif hold:
        _fold_window(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, SPEC, False)
    else:
        _fold_window(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, TORCH, False)


@njit(inline="always")
def _fold_taps(flat, x_first, taps, toff, trel, mk, mv, mr, want_idx, keyed, rule, never):  # type: ignore[no-untyped-def]
    """_fold_window for a whole window: taps 1.. of the table, whose offsets and relative indices
    follow row-major order. One loop instead of a loop per tap row: on the 3x3 stem, each row's
    setup (its offsets, its bounds, a loop of three) had cost more than its taps."""
    for t in range(1, taps):
        _fold_tap(flat, x_first + toff[t], mk, mv, mr, trel[t], want_idx, keyed, rule, never)


@njit(inline="always")
def _fold_taps_by_rule(flat, x_first, taps, toff, trel, mk, mv, mr, want_idx, keyed, nan_takes, hold,
                       never):  # type: ignore[no-untyped-def]
    """_fold_taps with the NaN rule as a constant, as _fold_by_rule (``never``: a False from memory)."""
    if not nan_takes:
        _fold_taps(flat, x_first, taps, toff, trel, mk, mv, mr, want_idx, keyed, GREATER, never)
    elif hold:
        _fold_taps(flat, x_first, taps, toff, trel, mk, mv, mr, want_idx, keyed, SPEC, False)
    else:
        _fold_taps(flat, x_first, taps, toff, trel, mk, mv, mr, want_idx, keyed, TORCH, False)


@njit(inline="always")
def _fold_block(flat, x_c, window, steps, table, mk, mv, mr, want_idx, keyed, nan_takes, hold):  # type: ignore[no-untyped-def]
    """The block's taps after its seed: from the tap table for a whole window (``table``: the first
    tap, the table's size, offsets and relative indices, whether the window is whole, ``never``), else
    row by row."""
    first, taps, toff, trel, whole, never = table
    if whole:  # (the same taps in the same order)
        _fold_taps_by_rule(flat, first, taps, toff, trel, mk, mv, mr, want_idx, keyed, nan_takes, hold, never)
    else:
        _fold_by_rule(flat, x_c, window, steps, mk, mv, mr, want_idx, keyed, nan_takes, hold)


@njit(inline="always")
def _tap_table(p, xs_d, xs_h, xs_w, st_d, st_h, st_w, dd, dh, dw, toff, trel):  # type: ignore[no-untyped-def]
    """Fill the table of a whole MaxPool window's taps (input offsets and relative indices from its
    first tap, row-major); the number of taps, or 0 where the table does not apply (AdaptiveMaxPool's
    parameters stop before the kernel's, p[31:34], and windows over TABLE_TAPS taps)."""
    if p.size < 34 or p[31] * p[32] * p[33] > TABLE_TAPS:
        return 0
    t = 0
    for jd in range(p[31]):
        for jh in range(p[32]):
            for jw in range(p[33]):
                toff[t] = jd * dd * xs_d + jh * dh * xs_h + jw * dw * xs_w
                trel[t] = np.int32(jd * dd * st_d + jh * dh * st_h + jw * dw * st_w)
                t += 1
    return t


@njit(inline="always")
def _any_nan(mk):  # type: ignore[no-untyped-def]
    """Whether any of the LANES keys is NaN."""
    nan = False
    for i in range(LANES):
        nan = nan | (mk[i] != mk[i])
    return nan


@njit(inline="always")
def _seed_block(flat, a, mk, mv, mr, lowest, seed_lowest, lowest_rel):  # type: ignore[no-untyped-def]
    """Seed the LANES maxima with the first tap flat[a + i] (relative index 0). openvino starts at
    ``lowest`` (relative index ``lowest_rel``: the plane's first): the first tap folded onto it, so
    the fold skips it under every preset (a tap more per window: 1-D k5 NXC 15.8 ms against 13.2)."""
    kl = as_key(lowest)
    for i in range(LANES):
        v = flat[np.uint64(a + i)]
        kv = as_key(v)
        take = (kv > kl) | (not seed_lowest)  # (a NaN first tap never wins over lowest)
        mk[i] = kv if take else kl
        mv[i] = v if take else lowest
        mr[i] = np.int32(0) if take else lowest_rel


@kernel
def pool_channel_blocks(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, out_d, out_h, out_w, n_chan = out.shape
    want_idx, seed_lowest, nan_takes, hold = _rules(p)
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    first_valid = p[21] != 0
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_d, xs_h, xs_w = xst[0], xst[2], xst[3], xst[4]  # channels: unit stride
    o = out.reshape(-1)
    oi = idx.reshape(-1)
    keyed = is_keyed(flat)
    if nan_free(flat):
        nan_takes = False
    mk = _lanes_like(as_key(empty[0]))  # the running maxima's keys,
    mv = _lanes_like(empty[0])  # their values (16-bit types: the bits the keys stand for),
    mr = _lanes_like(np.int32(0))  # their indices, relative to the window's first tap
    lowest = empty[0]
    step = max(1, LINE // flat.itemsize)  # elements per cache line
    toff = _taps_like(np.int64(0))
    trel = _taps_like(np.int32(0))
    taps = _tap_table(p, xs_d, xs_h, xs_w, st_d, st_h, st_w, dd, dh, dw, toff, trel)
    k_d, k_h, k_w = (p[31], p[32], p[33]) if taps > 0 else (0, 0, 0)
    never = dd < 1  # (a False LLVM cannot see: see _lane_wins)
    # Requests only where the output rows' windows start at least half a window apart along h: windows
    # that overlap more find most of their lines in cache already (k7 s2 on 32x56x56x64, 26 MB, took
    # 1.14x the time requesting; AdaptiveMaxPool's bins overlap by a row at most).
    rows_apart = out_h < 2 or 2 * (win[1, 0, 1] - win[1, 0, 0]) >= win[1, 2, 0] * dh
    ask_ahead = requests_pay(flat) and rows_apart
    # Small 2-D MaxPool windows request the next output row's window rows, output by output: the
    # hardware's prefetchers alone kept one core at about 13 GB/s on the NXC stem with indices.
    # Kernel alone, alternated, one / two threads, from memory (--evict) / in a row (2026-12-07): the
    # stem with i64 indices 0.78-0.82x / 0.77-0.84x, i32 0.74x / 0.75x; 3x3 s3 on 16x56x56x128 0.46-0.72x /
    # 0.49-0.78x; 5x5 s2 (25 taps) 0.89-1.04x / 0.98-1.02x. The 3-D k3s2p1 workload (nine rows a window)
    # took 1.09-1.16x, the stem in f16 1.04-1.08x: both left without.
    # (Dense pixels only, for both kinds of requests: a row's lines between taps are requested too.)
    dense = dw == 1 and xs_w <= 2 * n_chan
    ask_rows = ask_ahead and dense and 0 < taps < PREFETCH_TAPS and k_d == 1 and flat.itemsize >= 4
    for row in range(row_lo, row_hi):
        n, s_d, f_d, e_d, s_h, f_h, e_h = _row_windows(row, out_d, out_h, win)
        base = n * off_n
        x_n = xoff + n * xs_n
        next_rows = ask_rows and row + 1 < row_hi
        n2, s_d2, f_d2, e_d2, s_h2, f_h2, e_h2 = n, s_d, f_d, e_d, s_h, f_h, e_h
        if next_rows:
            n2, s_d2, f_d2, e_d2, s_h2, f_h2, e_h2 = _row_windows(row + 1, out_d, out_h, win)
        x_n2 = xoff + n2 * xs_n
        for ow in range(out_w):
            if next_rows:  # this output's columns of the next output row's window
                _prefetch_window(flat, x_n2, (s_d2, f_d2, e_d2, s_h2, f_h2, e_h2, win[2, 0, ow], win[2, 1, ow],
                                              win[2, 2, ow]), xs_d, xs_h, xs_w, dd, dh, dw, n_chan, step)
            s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
            # Large windows (AdaptiveMaxPool's 32x32 bins) first request the next window's lines
            # along w: its tap rows are far apart, and each starts a stream the hardware's
            # prefetchers pick up late.
            if (ask_ahead and ow + 1 < out_w and dense
                    and (e_d - f_d) * (e_h - f_h) * (e_w - f_w) >= PREFETCH_TAPS):
                _prefetch_window(flat, x_n, (s_d, f_d, e_d, s_h, f_h, e_h, win[2, 0, ow + 1], win[2, 1, ow + 1],
                                             win[2, 2, ow + 1]), xs_d, xs_h, xs_w, dd, dh, dw, n_chan, step)
            ob = (row * out_w + ow) * n_chan
            if f_d >= e_d or f_h >= e_h or f_w >= e_w:  # an empty window
                _seed_at(empty, -1, o, ob, oi, n_chan, empty_idx + use_off * base, use_off * off_c,
                         want_idx)
                continue
            d0, h0, w0 = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
            first = x_n + d0 * xs_d + h0 * xs_h + w0 * xs_w  # the first tap, channel 0
            g0 = d0 * st_d + h0 * st_h + w0 * st_w
            window = (s_d, f_d, e_d, s_h, f_h, e_h, s_w, f_w, e_w)
            steps = (xs_d, xs_h, xs_w, dd, dh, dw, st_d, st_h, st_w, g0)
            whole = (f_d == 0 and e_d == k_d and f_h == 0 and e_h == k_h and f_w == 0 and e_w == k_w)
            for c0 in range(0, n_chan, LANES):
                c = min(c0, n_chan - LANES)  # the last block overlaps the one before
                carry = keyed and want_idx  # the bits beside their keys
                for _ in range(2):
                    _seed_block(flat, first + c, mk, mv, mr, lowest, seed_lowest, np.int32(-g0))
                    table = (first + c, taps, toff, trel, whole, never)
                    if want_idx:  # a constant in each loop: without indices, no index lanes
                        _fold_block(flat, x_n + c, window, steps, table, mk, mv, mr, True, keyed, nan_takes, hold)
                    elif carry:
                        _fold_block(flat, x_n + c, window, steps, table, mk, mv, mr, False, True, nan_takes, hold)
                    else:  # only the keys, written back as bits below (no 16-bit lanes beside them)
                        _fold_block(flat, x_n + c, window, steps, table, mk, mv, mr, False, False, nan_takes, hold)
                    if first_valid:  # openvino's AdaptiveMaxPool: a NaN first tap is the result
                        for i in range(LANES):
                            v = flat[np.uint64(first + c + i)]
                            kv = as_key(v)
                            nan = kv != kv
                            mk[i] = kv if nan else mk[i]
                            mv[i] = v if nan else mv[i]
                            mr[i] = np.int32(0) if nan else mr[i]
                    if carry or not keyed or not _any_nan(mk):
                        break
                    carry = True  # an f16 key quiets a signalling NaN: the block again, with its bits
                if carry:
                    for i in range(LANES):
                        o[np.uint64(ob + c + i)] = mv[i]
                else:  # every other key stands for its bits exactly (bits_of_key)
                    for i in range(LANES):
                        o[np.uint64(ob + c + i)] = bits_of_key(mk[i], lowest)
                if want_idx:
                    g = base + g0 + c * off_c
                    for i in range(LANES):
                        oi[np.uint64(ob + c + i)] = g + mr[i] + i * off_c


def channel_blocks_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_channel_blocks`` takes per thread: none (the stack)."""
    return 0, 0
