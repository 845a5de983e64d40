"""NCX data: pool_width_inner, the loop along the width (the axis adjacent in memory).

Per output row, each tap (jd, jh, jw) is ONE contiguous update over the outputs it is in range
for, borders included, so no output takes a per-output path. Every output is first seeded with its
own first in-range tap; taps then arrive in row-major order (the seed tap again changes nothing),
which is the sequential fold. For a w stride sw > 1 each input row is split once into sw phase
rows (phase[r][i] = row[i*sw + r]) and kept for the plane (rows are shared by neighbouring output
rows), so every tap is a unit-stride load. Rows are (n, c, od, oh). (Slicing rows and a per-output
border path made the stem's 56-wide rows 3x slower than this.)

Without indices, at stride 1 on a unit-stride w, the outputs whose windows have all their w taps
(the run every tap shares) go in blocks of LANES instead, each block's window folded in registers
(pool_channel_blocks' fold, lanes along w), the tap passes only over the borders either side: the
passes load and store the running maxima once per pair of taps (1-D k5 on 8x128x16384, two
threads, side by side: 21.7 ms -> 13.7 ms).
"""

from __future__ import annotations

import numpy as np

from ._channel_blocks import LANES, _fold_by_rule, _lanes_like, _seed_block
from ._jit import kernel
from ._keys import as_key, is_keyed, nan_free
from ._loops import (
    _index_params,
    _row_windows,
    _rules,
    _seed_at,
    _split_row,
    _tap_runs,
    _update_at,
    _update_pair_at,
)


@kernel
def pool_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest, nan_takes, hold = _rules(p)
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    sw, in_d, in_h, in_w, k_w, keep_rows = p[11], p[15], p[16], p[17], p[33], p[34] != 0
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    o = out.reshape(-1)
    oi = idx.reshape(-1)
    lowest = empty[0]
    tap_lo, tap_hi = iwork[:k_w], iwork[k_w:2 * k_w]
    lo, hi, w_empty = _tap_runs(win, out_w, tap_lo, tap_hi)
    direct = sw == 1 and xs_w == 1  # taps read the input itself
    # Values in blocks along w where the shared run holds one at least.
    blocks = direct and hi - lo >= LANES and not want_idx
    # Typed zero and one: literals in _row_taps' arguments compiled it once more per literal (4 copies).
    zero, one = np.int64(0), np.int64(1)
    plen = (in_w + sw - 1) // sw
    row_len = min(sw, in_w) * plen  # phases past the row's end would be empty
    # Phase rows of the current plane (keep_rows), or of one input row at a time.
    buf = work
    split_for = iwork[2 * k_w:2 * k_w + (in_d * in_h if keep_rows else 1)]
    split_for[:] = -1
    for row in range(row_lo, row_hi):
        plane_no, s_d, f_d, e_d, s_h, f_h, e_h = _row_windows(row, out_d, out_h, win)
        n, c = plane_no // n_chan, plane_no % n_chan
        base = n * off_n + c * off_c
        plane = xoff + n * xs_n + c * xs_c
        ob = row * out_w
        if f_d >= e_d or f_h >= e_h:  # every window of the row is empty
            _seed_at(empty, -1, o, ob, oi, out_w, empty_idx + use_off * base, 0, want_idx)
            continue
        # The tap passes: over the whole row, or with blocks only over the borders either side.
        for part in range(2):
            if blocks:  # the borders either side of the blocks
                t0, t1 = (zero, lo) if part == 0 else (hi, out_w)
            else:  # the whole row, once
                t0, t1 = (zero, out_w) if part == 0 else (zero, zero)
            if t0 >= t1:
                continue
            if seed_lowest:
                _seed_at(empty, -1, o, ob + t0, oi, t1 - t0, base, 0, want_idx)
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    at = plane + d * xs_d + h * xs_h
                    fb = base + d * st_d + h * st_h
                    slot = 0
                    if not direct:
                        key = d * in_h + h if keep_rows else 0
                        slot = key * row_len
                        if split_for[key] != plane_no or not keep_rows:
                            _split_row(flat, at, xs_w, in_w, sw, plen, buf, slot)
                            split_for[key] = plane_no
                    seed = jd == f_d and jh == f_h and not seed_lowest
                    # One source array per call site (see pool_channels_inner).
                    if direct:
                        _row_taps(flat, at, zero, one, flat, at, xs_w, win, dw, k_w, tap_lo, tap_hi, lo, hi, o, oi, ob,
                                  t0, t1, fb, st_w, seed, want_idx, nan_takes, hold)
                    else:
                        _row_taps(buf, slot, plen, sw, flat, at, xs_w, win, dw, k_w, tap_lo, tap_hi, lo, hi, o,
                                  oi, ob, t0, t1, fb, st_w, seed, want_idx, nan_takes, hold)
        if blocks:
            _row_blocks(flat, plane, s_d, f_d, e_d, s_h, f_h, e_h, win[2, 0, 0], k_w, lo, hi, xst, dil, o, ob,
                        lowest, seed_lowest, nan_takes, hold)
        if w_empty:  # outputs whose window has no tap along w
            for ow in range(out_w):
                if win[2, 1, ow] >= win[2, 2, ow]:
                    o[ob + ow] = lowest
                    if want_idx:
                        oi[ob + ow] = empty_idx + use_off * base


@kernel  # compiled once, called per output row (a call per block cost 1-D k5 NXC 30%)
def _row_blocks(flat, plane, s_d, f_d, e_d, s_h, f_h, e_h, s0, k_w, lo, hi, xst, dil, o, ob, lowest, seed_lowest,  # type: ignore[no-untyped-def]
                nan_takes, hold):
    """Values of the outputs [lo, hi) of output row ``ob`` (every w tap in range, w stride 1,
    unit-stride w), LANES at a time as in pool_channel_blocks, lanes along w: output ow's tap jw
    at ow + s0 + jw*dw. The last block overlaps the one before. Without indices only: the copies of
    the fold that track them cost 8 s more compilation per element type."""
    keyed = is_keyed(flat)
    if nan_free(flat):
        nan_takes = False
    mk = _lanes_like(as_key(lowest))  # the running maxima's keys, their values
    mv = _lanes_like(lowest)
    mr = _lanes_like(np.int32(0))  # (no indices: unused)
    xs_d, xs_h, dd, dh, dw = xst[2], xst[3], dil[0], dil[1], dil[2]
    # The fold's tuples typed as pool_channel_blocks' (int64 values, no literals: a literal is a type of
    # its own). The index strides and first index in ``steps`` go unused without indices.
    window = (s_d, f_d, e_d, s_h, f_h, e_h, s0, np.int64(0), k_w)
    steps = (xs_d, xs_h, np.int64(1), dd, dh, dw, xs_d, xs_h, np.int64(1), np.int64(0))
    at0 = plane + (s_d + f_d * dd) * xs_d + (s_h + f_h * dh) * xs_h + s0  # output 0's first tap
    for b0 in range(lo, hi, LANES):
        ow = min(b0, hi - LANES)
        _seed_block(flat, at0 + ow, mk, mv, mr, lowest, seed_lowest, np.int32(0))
        _fold_by_rule(flat, plane + ow, window, steps, mk, mv, mr, False, keyed, nan_takes, hold)
        if keyed:
            for i in range(LANES):
                o[np.uint64(ob + ow + i)] = mv[i]
        else:
            for i in range(LANES):
                o[np.uint64(ob + ow + i)] = mk[i]


@kernel  # compiled once, called per input row of an output row
def _row_taps(src, row, pstride, sw, flat, at, xs_w, win, dw, k_w, tap_lo, tap_hi, lo, hi, o, oi, ob, t0, t1, fb,
              st_w, seed, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    """Fold one input row into the outputs [t0, t1) of output row ``ob``: every w tap as runs along the row.

    The row's phase r starts at ``src[row + r*pstride]`` (sw == 1: the row itself); ``flat[at]``
    is its first element in the input, ``fb`` the index of w = 0. With ``seed``, each output first
    takes its own first in-range tap: outputs outside [lo, hi) one by one, the run [lo, hi) all
    taps share in its first pass of taps. Taps then update that run (two per pass) and, one at a
    time, their own ends: runs that started at different outputs made each load straddle the last
    tap's stores (failed store forwarding, 4x slower). A tap applied again changes nothing."""
    s0 = win[2, 0, 0]  # tap 0 of output ow sits at ow*sw + s0
    lo = max(lo, t0)  # the tile's share of the run (none: empty at lo)
    hi = max(min(hi, t1), lo)
    if seed:
        for ow in range(t0, t1):
            f_w, e_w = win[2, 1, ow], win[2, 2, ow]
            if (lo <= ow < hi) or f_w >= e_w:
                continue
            w = win[2, 0, ow] + f_w * dw
            o[ob + ow] = flat[np.uint64(at + w * xs_w)]
            if want_idx:
                oi[ob + ow] = fb + w * st_w
    # The run all taps share, two taps per pass (a lone last one paired with itself), the first pass
    # seeding with tap 0 when ``seed``: each pass loads and stores the running maxima once.
    if hi > lo:
        q, r = s0 // sw, s0 % sw
        sz, first_pair = (row + r * pstride + lo + q, 1) if seed else (-1, 0)
        if seed and k_w == 1:
            _seed_at(src, sz, o, ob + lo, oi, hi - lo, fb + (lo * sw + s0) * st_w, sw * st_w, want_idx)
        for ja in range(first_pair, k_w, 2):
            jb = min(ja + 1, k_w - 1)
            sa, sb = s0 + ja * dw, s0 + jb * dw
            _update_pair_at(src, row + (sa % sw) * pstride + lo + sa // sw, row + (sb % sw) * pstride + lo + sb // sw,
                            o, ob + lo, oi, hi - lo, fb + (lo * sw + sa) * st_w, fb + (lo * sw + sb) * st_w, sw * st_w,
                            want_idx, nan_takes, hold, sz, fb + (lo * sw + s0) * st_w)
            sz = -1
    # Each tap's own ends, one tap at a time.
    for jw in range(k_w):
        shift = s0 + jw * dw
        q, r = shift // sw, shift % sw
        for part in range(2):
            a, b = (tap_lo[jw], min(lo, tap_hi[jw])) if part == 0 else (max(hi, tap_lo[jw]), tap_hi[jw])
            a, b = max(a, t0), min(b, t1)
            if a < b:
                _update_at(src, row + r * pstride + a + q, o, ob + a, oi, b - a, fb + (a * sw + shift) * st_w,
                           sw * st_w, want_idx, nan_takes, hold)




def width_inner_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_width_inner`` takes per thread: the phase rows of a
    plane (or of one row), which plane each row was split for, and the taps' output runs."""
    sw, in_d, in_h, in_w, k_w, keep_rows = (int(v) for v in p[[11, 15, 16, 17, 33, 34]])
    rows = in_d * in_h if keep_rows else 1
    return rows * min(sw, in_w) * -(-in_w // sw), 2 * k_w + rows
