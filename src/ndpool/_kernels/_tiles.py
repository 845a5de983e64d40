"""NCX MaxPool on pairs along w: kernel = stride, 2 along w, no pads or dilation, the pairs of a
row cover it (k2s2 on even widths, AdaptiveMaxPool's 2x2 bins), and rows of at least MIN_ROW outputs.

Then the rows of a plane follow each other in memory and so do the pairs of every row: tap b of
pair t of any row is at ``2*t + b`` from the plane's first row, one run over a whole band of rows.
Two passes per band of output rows, each vectorized:

- w pass: each pair folded into its maximum and the pair's winning tap (hv, hb), over the band's
  rows in one run (loads at the literal stride 2, which LLVM splits into even and odd elements);
- h pass: the k_h rows of pairs of each output row folded in row order, an output at a time in
  registers, written once, the index rebuilt from the row, the pair and the tap.

With indices and 2x2 windows there is one pass instead: each output's four taps read from the input
and folded at once, FUSED_LANES outputs a run (_fused_run), or rows of up to PAIR_LANES outputs two
rows a run (_fused_row_pair, values only too); the passes are left for planes where a short row's run
would write past the job or read past the input array.

Folding each row's pairs first and then the rows keeps the first-maximum rule exactly (ties keep
the earlier row, then the earlier pair: row-major order), +0/-0 included, as long as no NaN is
read and nothing needs to start at ``lowest``. So the w pass looks for NaNs: a plane with any is
pooled again by the exact loop (pool_width_inner), and so is every output row under openvino's
preset with a result not above ``lowest``. Both are rare outside of tests.

Side by side on two threads against pool_planes: k2s2 on 1x256x256x256 3.59 -> 2.73 ms, with i64
indices 10.5 -> 9.4; 32x64x112x112 with i64 indices 15.9 -> 14.5. (Wider windows took their w taps
one by one, scalar: k4s4 three times pool_planes' time.) Short rows are scalar loops, whose index
selects must stay conditional moves (see _jit: LLVM made them branches, mispredicted on every other
tap): then k2s2 on one thread, i64 indices / values, against the loops before: 32x512x14x14 3.0 /
1.6 ms against 5.3 / 3.6 (pool_plane_lanes), 16x64x28x28 0.54 / 0.26 against 0.93 / 0.63, 8x64x56x56
0.60 / 0.35 against 1.66 / 1.00 (pool_planes), 32x512x10x10 3.2 / 2.0 against 3.6 / 2.4; on rows of
four outputs and fewer the per-plane setup lost (32x512x8x8 2.1 / 1.7 against 1.6 / 1.4). Those
short rows with indices then took a 16-lane h pass (2026-12-03, each version compiled in one process,
alternated, min of 4 rounds; one / two threads): AdaptiveMaxPool 32x512x14x14 -> 7x7 i64 2.78 ->
1.32 / 2.33 -> 1.24 ms, f16 0.45x, bf16 0.43-0.67x; k2s2 16x64x28x28 0.38-0.63x, 32x512x10x10 0.53-0.60x;
and then the fused pass (see FUSED_LANES). Values only, the
w pass stores no winning taps (int64 selects and stores it did not need; kernel_ab, one / two threads):
k2s2 on 1x256x256x256 9.27 -> 6.2 / 5.88 -> 4.21 ms, in f16 0.40x / 0.77x, 3x2 windows 0.85x. With
indices the taps are int32 (they were int64): k2s2 on 1x256x256x256 0.85x / 0.86x, AdaptiveMaxPool
32x512x14x14 -> 7x7 i64 0.95x / 0.88x.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._channel_blocks import _stack_slots
from ._jit import kernel, pure
from ._keys import as_key, is_keyed
from ._loops import _index_params, _rules
from ._stores import store_fence, stream_run, streams_out
from ._width_inner import pool_width_inner, width_inner_scratch

# hv and hb elements a band holds at most: its output rows' pairs (in L1 with their input lines).
BAND_PAIRS = 1 << 12
# Outputs a row at least (the launcher's condition; measured above).
MIN_ROW = 5


@njit(inline="always")
def _band_pairs(k_h, out_w):  # type: ignore[no-untyped-def]
    """(output rows a band, hv and hb elements a thread's scratch holds: the band's rows of pairs; the
    kernel's and tiles_scratch's one count)."""
    band = max(1, BAND_PAIRS // (k_h * out_w))
    return band, band * k_h * out_w


@njit(inline="always")
def _w_pairs(flat, at, count, hv, hb, keyed, want_idx):  # type: ignore[no-untyped-def]
    """hv[t], hb[t] = the greater of flat[at + 2*t] and flat[at + 2*t + 1] (the first if equal) and
    which (``want_idx``: a literal at the call site), for t < count; whether either was NaN."""
    nan = False  # (a boolean: an integer count halved the vector width elsewhere)
    for t in range(count):
        a, b = flat[np.uint64(at + 2 * t)], flat[np.uint64(at + 2 * t + 1)]
        ka, kb = as_key(a), as_key(b)
        nan = nan | (ka != ka) | (kb != kb)
        take = kb > ka
        hv[np.uint64(t)] = b if take else a
        if want_idx:
            hb[np.uint64(t)] = 1 if take else 0
    return nan


@njit(inline="always")
def _h_row(hv, hb, g0, k_h, out_w, o, oi, ob, row_index, st_h, st_w, want_idx):  # type: ignore[no-untyped-def]
    """Output row ``ob`` from the k_h rows of pairs at hv[g0:], folded in row order (a pair wins only
    if greater: row-major ties), each output kept in registers and written once; its index rebuilt
    from the winning row, pair and tap. (Written row by row, with a read-modify-write per later row
    and the index test inside, 14x14 -> 7x7 with i64 indices took 6.8 ms on one thread.)"""
    if want_idx:
        for j in range(out_w):
            g = g0 + j
            m, code = hv[np.uint64(g)], hb[np.uint64(g)]  # code: row * 2 + tap
            km = as_key(m)
            for a in range(1, k_h):
                g += out_w
                v, b = hv[np.uint64(g)], hb[np.uint64(g)]  # (both loaded: a conditional load is a branch)
                kv = as_key(v)
                take = kv > km
                m, km = (v, kv) if take else (m, km)
                code = a * 2 + b if take else code
            o[np.uint64(ob + j)] = m
            oi[np.uint64(ob + j)] = row_index + (code >> 1) * st_h + (2 * j + (code & 1)) * st_w
    else:
        for j in range(out_w):
            g = g0 + j
            m = hv[np.uint64(g)]
            km = as_key(m)
            for a in range(1, k_h):
                g += out_w
                v = hv[np.uint64(g)]
                kv = as_key(v)
                m, km = (v, kv) if kv > km else (m, km)
            o[np.uint64(ob + j)] = m


@njit(inline="always")
def _h_rows(hv, hb, rows, k_h, out_w, o, oi, plane_out, oh0, base, st_h, st_w, want_idx):  # type: ignore[no-untyped-def]
    """_h_row for the band's output rows oh0 .. oh0 + rows of the plane whose outputs start at plane_out."""
    for r in range(rows):
        oh = oh0 + r
        _h_row(hv, hb, r * k_h * out_w, k_h, out_w, o, oi, plane_out + oh * out_w, base + oh * k_h * st_h, st_h,
               st_w, want_idx)


# With indices and 2x2 windows, each output's four taps are folded at once from the input, FUSED_LANES
# outputs a run (the two passes' int32 taps and their selects and stores were most of the time). A run
# covers FUSED_LANES adjacent outputs of a row; on a row of fewer, it goes on into the outputs after
# the row, which must be later outputs of the same job (written again then) and read input within the
# array (see pool_tiles). Kernel alone, one thread, each version compiled in one process, alternated
# (2026-12-04, against the w pass and a 16-lane h pass): AdaptiveMaxPool 32x512x14x14 -> 7x7
# i64 0.76-0.78x, bf16 0.81x, f16 1.02x; k2s2 with i64 indices 32x512x10x10 0.77x, 16x64x28x28 0.70x,
# 1x256x256x256 0.80-0.82x (f16, bf16 0.49-0.52x), 8x64x56x56 0.37-0.58x, 4x64x34x34 0.81-1.01x.
# Values only it took twice the time of the two passes (measured the same way): they keep theirs,
# but on rows of up to PAIR_LANES outputs (below).
FUSED_LANES = 16
_fused_like = _stack_slots(FUSED_LANES)  # a run's results, in stack slots: they alias no array


@njit(inline="always")
def _fold4(flat, at, in_w, st_h, st_w):  # type: ignore[no-untyped-def]
    """The greatest of the 2x2 window at flat[at] (its taps in row-major order, the first if equal),
    its offset in the index (0, st_w, st_h or both) and whether any tap was NaN."""
    a = flat[np.uint64(at)]
    b = flat[np.uint64(at + 1)]
    c = flat[np.uint64(at + in_w)]
    d = flat[np.uint64(at + in_w + 1)]
    ka, kb, kc, kd = as_key(a), as_key(b), as_key(c), as_key(d)
    nan = (ka != ka) | (kb != kb) | (kc != kc) | (kd != kd)
    # The winner's index offset selected with it (a tap code turned into an offset after the
    # selects took 1.15-1.4x the time: shifts and 64-bit multiplies per lane).
    m, km, off = (b, kb, st_w) if kb > ka else (a, ka, 0)
    m, km, off = (c, kc, st_h) if kc > km else (m, km, off)
    m, off = (d, st_h + st_w) if kd > km else (m, off)
    return m, off, nan


@njit(inline="always")
def _fused_run(flat, at, in_w, o, oi, ob, row_index, st_h, st_w, rv, ri, want_idx):  # type: ignore[no-untyped-def]
    """o[ob + j], oi[ob + j] = the greatest of the 2x2 window at flat[at + 2*j] and its index (if
    ``want_idx``, a literal), for j < FUSED_LANES; whether any tap was NaN. The results go to the stack first, so that LLVM loads
    every lane before it stores any (stored in the loop, the lanes stayed scalar: the loads waited for
    the scalar stores before them)."""
    nan = False
    for j in range(FUSED_LANES):
        m, off, n = _fold4(flat, at + 2 * j, in_w, st_h, st_w)
        nan |= n
        rv[j] = m
        ri[j] = row_index + 2 * j * st_w + off
    _store_run(rv, ri, 0, o, oi, ob, FUSED_LANES, want_idx)
    return nan


@njit(inline="always")
def _store_run(rv, ri, r0, o, oi, ob, lanes, want_idx):  # type: ignore[no-untyped-def]
    """o[ob:ob + lanes] = rv[r0:r0 + lanes], and the indices from ri if ``want_idx`` (a literal)."""
    for j in range(lanes):
        o[np.uint64(ob + j)] = rv[r0 + j]
    if want_idx:
        for j in range(lanes):
            oi[np.uint64(ob + j)] = ri[r0 + j]


# Rows of up to PAIR_LANES outputs go two at a time: one loop of PAIR_LANES lanes whose every
# iteration folds a lane of both rows. (A loop of eight lanes and one row is unrolled whole before
# LLVM's vectorizer sees it, and stays scalar: 1.9x _fused_run's time; 16 lanes on a row of 7
# compute 9 lanes for nothing.) Against _fused_run on every row, 14x14 -> 7x7 planes with i64
# indices, the loop alone on one thread: 0.63x in L2, 0.85x from L3. kernel_ab (2026-12-06, one / two
# threads): AdaptiveMaxPool 32x512x14x14 -> 7x7 i64 0.75x / 0.79x, i32 0.74x / 0.82x, f16 0.71x /
# 0.80x; k2s2 with i64 indices on 32x512x10x10 0.70x / 0.76x. Values only, against the two passes:
# k2s2 on 32x512x14x14 0.28x / 0.34x (f16 0.34x / 0.39x), on 32x512x10x10 0.33x / 0.39x.
PAIR_LANES = 8


@njit(inline="always")
def _fused_row_pair(flat, at, in_w, out_w, o, oi, ob, row_index, st_h, st_w, rv, ri, want_idx):  # type: ignore[no-untyped-def]
    """_fused_run for the two rows of outputs at ob and ob + out_w (out_w <= PAIR_LANES), their
    windows' first rows at flat[at] and flat[at + 2*in_w]. Each row's PAIR_LANES lanes are stored,
    the first row's before the second's: lanes past a row land on the next one's outputs, written
    again after."""
    nan = False
    for j in range(PAIR_LANES):
        m, off, n = _fold4(flat, at + 2 * j, in_w, st_h, st_w)
        rv[j] = m
        ri[j] = row_index + 2 * j * st_w + off
        m, off, n2 = _fold4(flat, at + 2 * in_w + 2 * j, in_w, st_h, st_w)
        rv[PAIR_LANES + j] = m
        ri[PAIR_LANES + j] = row_index + 2 * st_h + 2 * j * st_w + off
        nan |= n | n2
    _store_run(rv, ri, 0, o, oi, ob, PAIR_LANES, want_idx)
    _store_run(rv, ri, PAIR_LANES, o, oi, ob + out_w, PAIR_LANES, want_idx)
    return nan


@njit(inline="always")
def _fused_plane(flat, at, in_w, out_h, out_w, o, oi, plane_out, base, st_h, st_w, rv, ri, want_idx):  # type: ignore[no-untyped-def]
    """A plane's 2x2 windows (with indices if ``want_idx``, a literal) through the fused runs: rows of
    up to PAIR_LANES outputs two at a time (_fused_row_pair; an odd last row alone), a row of fewer
    than FUSED_LANES outputs in one run (its lanes past the row land on the outputs after it), a longer
    one in runs of FUSED_LANES, the last moved back to end with the row (its first outputs written
    twice, alike)."""
    nan = False
    paired = 0
    # (A pair of rows reads and writes no further than _fused_run on its second row: pool_tiles' test.)
    if out_w <= PAIR_LANES:
        paired = out_h - out_h % 2
        for oh in range(0, paired, 2):
            nan |= _fused_row_pair(flat, at + oh * 2 * in_w, in_w, out_w, o, oi, plane_out + oh * out_w,
                                   base + oh * 2 * st_h, st_h, st_w, rv, ri, want_idx)
    for oh in range(paired, out_h):
        row_at, ob, row_index = at + oh * 2 * in_w, plane_out + oh * out_w, base + oh * 2 * st_h
        if out_w < FUSED_LANES:
            nan |= _fused_run(flat, row_at, in_w, o, oi, ob, row_index, st_h, st_w, rv, ri, want_idx)
            continue
        for j0 in range(0, out_w, FUSED_LANES):
            j = min(j0, out_w - FUSED_LANES)
            nan |= _fused_run(flat, row_at + 2 * j, in_w, o, oi, ob + j, row_index + 2 * j * st_w, st_h, st_w, rv, ri,
                              want_idx)
    return nan


@njit(inline="always")
def _two_passes(flat, at, in_w, k_h, out_h, out_w, band, hv, hb, o, oi, plane_out, base, st_h, st_w, keyed,  # type: ignore[no-untyped-def]
                want_idx, o_band, stream):
    """A plane by the w pass and the h pass, a band of output rows at a time; whether a NaN was read
    (the passes stop at the band that read one: the plane is pooled again). ``stream`` (values only):
    each band's outputs are made in o_band and streamed out."""
    nan = False
    for oh0 in range(0, out_h, band):
        rows = min(band, out_h - oh0)
        # Values only: no winning taps (their selects and stores halved the pass's vectors).
        if want_idx:
            nan |= _w_pairs(flat, at + oh0 * k_h * in_w, rows * k_h * out_w, hv, hb, keyed, True)
        else:
            nan |= _w_pairs(flat, at + oh0 * k_h * in_w, rows * k_h * out_w, hv, hb, keyed, False)
        if nan:
            break
        # Each case its own loop over the rows, with what it can as constants: in one loop, cases cost
        # the others their vectors (1-D rows with indices 2.4x the time, values on 3x2 windows 1.3x).
        if stream:
            if k_h == 2:
                _h_rows(hv, hb, rows, 2, out_w, o_band, oi, -oh0 * out_w, oh0, base, st_h, st_w, False)
            else:
                _h_rows(hv, hb, rows, k_h, out_w, o_band, oi, -oh0 * out_w, oh0, base, st_h, st_w, False)
            stream_run(o_band, 0, o, plane_out + oh0 * out_w, rows * out_w)
        elif k_h == 2:
            _h_rows(hv, hb, rows, 2, out_w, o, oi, plane_out, oh0, base, st_h, st_w, want_idx)
        elif k_h == 1 and want_idx:
            _h_rows(hv, hb, rows, 1, out_w, o, oi, plane_out, oh0, base, st_h, st_w, True)
        else:
            _h_rows(hv, hb, rows, k_h, out_w, o, oi, plane_out, oh0, base, st_h, st_w, want_idx)
    return nan


@kernel
def pool_tiles(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    n_img, n_chan, _, out_h, out_w = out.shape
    want_idx, seed_lowest, _, _ = _rules(p)
    off_n, off_c, _, st_h, st_w, _, _ = _index_params(p)
    k_h, in_w = p[32], p[17]
    xs_n, xs_c = xst[0], xst[1]  # rows adjacent, w at unit stride: checked by the launcher
    o, oi = out.reshape(-1), idx.reshape(-1)
    keyed = is_keyed(flat)
    kl = as_key(empty[0])
    band, pairs = _band_pairs(k_h, out_w)
    hv = work[:pairs]
    taps = (pairs + 1) // 2  # int64s holding the pairs' int32 taps (int64 taps halved the w pass's vectors)
    hb = iwork[:taps].view(np.int32)
    o_band = work[pairs:pairs + band * out_w]
    inner_work = work[pairs + band * out_w:]
    inner_iwork = iwork[taps:]
    # Values of an input read from memory: each band's output rows are made in o_band and streamed out
    # past the caches (no read of the output's lines before they are written; see _stores). Not under
    # openvino's preset, whose test below reads the results back. k2s2 NCX on 1x256x256x256, kernel
    # alone, one / two threads: 0.90-0.93x / 0.91-0.97x the time.
    stream = streams_out(flat) and not want_idx and not seed_lowest
    fused = k_h == 2 and (want_idx or out_w <= PAIR_LANES)  # (values only: the passes on longer rows)
    job_end = row_hi * out_h * out_w  # a fused run writes up to here, no further
    rv = _fused_like(empty[0])
    ri = _fused_like(oi[0])  # (of the indices' own type: int32 slots stored as int32, not narrowed then)
    for plane in range(row_lo, row_hi):  # (n, c)
        n, c = plane // n_chan, plane % n_chan
        at = xoff + n * xs_n + c * xs_c
        base = n * off_n + c * off_c
        plane_out = plane * out_h * out_w
        # Fused, unless a short row's run would write past the job or read past the array (lanes past
        # the row read at most where their own outputs' windows are, or the array's end: the test).
        if fused and (out_w >= FUSED_LANES or (plane_out + (out_h - 1) * out_w + FUSED_LANES <= job_end
                                                and at + (2 * out_h - 1) * in_w + 2 * FUSED_LANES <= flat.size)):
            if want_idx:
                nan = _fused_plane(flat, at, in_w, out_h, out_w, o, oi, plane_out, base, st_h, st_w, rv, ri, True)
            else:
                nan = _fused_plane(flat, at, in_w, out_h, out_w, o, oi, plane_out, base, st_h, st_w, rv, ri, False)
        else:
            nan = _two_passes(flat, at, in_w, k_h, out_h, out_w, band, hv, hb, o, oi, plane_out, base, st_h, st_w,
                              keyed, want_idx, o_band, stream)
            if nan and stream:
                store_fence()  # (the streamed rows before the same rows pooled again below)
        for oh in range(out_h):  # pooled again where the order or the start mattered
            again = nan
            if seed_lowest and not nan:  # openvino starts at lowest: results not above it
                for j in range(out_w):
                    again = again | (not as_key(o[np.uint64(plane_out + oh * out_w + j)]) > kl)
            if again:
                row = plane * out_h + oh
                pool_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row, row + 1, inner_work,
                                 inner_iwork)
    if stream:
        store_fence()  # (before the caller reads the output)


def tiles_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_tiles`` takes per thread: a band's pairs (hv, and hb as
    int32 in half as many int64s), its output rows (o_band), and pool_width_inner's own."""
    band, pairs = pure(_band_pairs)(int(p[32]), out5[4])
    inner = width_inner_scratch(p, in5, out5)
    return pairs + band * out5[4] + inner[0], (pairs + 1) // 2 + inner[1]
