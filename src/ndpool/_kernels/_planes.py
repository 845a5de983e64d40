"""MaxPool on NCX data, one (n, c) plane at a time, for rows too short to sweep one at a time.

With the stem's 56-wide rows a row kernel runs about a million short loops (9 per output row), and
their setup dominates. Here each plane is split once into stride phases (phase (rd, rh, rw) holds
x[i*sd + rd, j*sh + rh, k*sw + rw]); then a tap is a constant shift in one phase, and every output
of the interior block (windows wholly inside the input) takes the tap in ONE contiguous loop over
the block laid out with the phase's row strides. Positions of that layout that fall outside the
block are computed and overwritten later. When that layout is the output's own (the phase rows are
as long as the output rows, as in every "same"-padded stride-s pool of a multiple of s), the loop
runs on the output itself; otherwise on a scratch block copied out at the end. Outputs outside the
block (the borders) take the per-output path. Taps are visited in row-major order, so the
first-maximum rule holds as in _loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel
from ._keys import as_key
from ._loops import _row_taps, _seed_at, _split_row, _tap_runs, _update_at, _wins


@njit(inline="always")
def _one_window(flat, plane, xst, win, dd, dh, dw, od, oh, ow, st_d, st_h, st_w, seed_lowest, lowest,
                nan_takes, hold):  # type: ignore[no-untyped-def]
    """(value, plane index, has taps) of one output by the sequential rule."""
    s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
    s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
    s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
    if f_d >= e_d or f_h >= e_h or f_w >= e_w:
        return lowest, 0, False
    d, h, w = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
    m = flat[np.uint64(plane + d * xst[2] + h * xst[3] + w * xst[4])]
    mi = d * st_d + h * st_h + w * st_w
    if seed_lowest:
        m, mi = lowest, 0
    for jd in range(f_d, e_d):
        d = s_d + jd * dd
        for jh in range(f_h, e_h):
            h = s_h + jh * dh
            for jw in range(f_w, e_w):
                w = s_w + jw * dw
                v = flat[np.uint64(plane + d * xst[2] + h * xst[3] + w * xst[4])]
                take = _wins(as_key(v), as_key(m), nan_takes, hold)
                m = v if take else m
                mi = d * st_d + h * st_h + w * st_w if take else mi
    return m, mi, True


@kernel  # compiled once, called per border row
def _row_by_runs(phase, flat, plane, xst, win, dil, od, oh, o, oi, ro, out_w, base, sd, sh, sw, ph_h, ph_w,
                 big_h, big_w, phase_len, k_w, tap_lo, tap_hi, run_lo, run_hi, w_empty, st_d, st_h, st_w,
                 empty, empty_idx, use_off, want_idx, seed_lowest, nan_takes, hold):  # type: ignore[no-untyped-def]
    """Output row (od, oh) of the plane, written at ``ro``: each output seeded with its first
    in-range tap, then every tap over the run [run_lo, run_hi) all taps share and its own ends
    (``_loops._row_taps``, as the row loop does)."""
    dd, dh, dw = dil[0], dil[1], dil[2]
    s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
    s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
    if f_d >= e_d or f_h >= e_h:  # every window of the row is empty
        _seed_at(empty, -1, o, ro, oi, out_w, empty_idx + use_off * base, 0, want_idx)
        return
    if seed_lowest:
        _seed_at(empty, -1, o, ro, oi, out_w, base, 0, want_idx)
    for jd in range(f_d, e_d):
        d = s_d + jd * dd
        for jh in range(f_h, e_h):
            h = s_h + jh * dh
            row = ((d % sd) * ph_h + h % sh) * ph_w * phase_len + ((d // sd) * big_h + h // sh) * big_w
            fb = base + d * st_d + h * st_h
            _row_taps(phase, row, phase_len, sw, flat, plane + d * xst[2] + h * xst[3], xst[4], win, dw, k_w,
                      tap_lo, tap_hi, run_lo, run_hi, o, oi, ro, out_w, fb, st_w,
                      jd == f_d and jh == f_h and not seed_lowest, want_idx, nan_takes, hold)
    if w_empty:  # outputs whose window has no tap along w
        for ow in range(out_w):
            if win[2, 1, ow] >= win[2, 2, ow]:
                o[ro + ow] = empty[0]
                if want_idx:
                    oi[ro + ow] = empty_idx + use_off * base


@kernel
def pool_planes(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    in_d, in_h, in_w = p[15], p[16], p[17]
    sd, sh, sw = p[22], p[23], p[24]
    d_lo, d_hi, h_lo, h_hi, w_lo, w_hi = p[25], p[26], p[27], p[28], p[29], p[30]
    k_d, k_h, k_w = p[31], p[32], p[33]
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    lowest = empty[0]
    o_all = out.reshape(-1)
    oi_all = idx.reshape(-1)
    plane_out = out_d * out_h * out_w
    # ph_* phases per axis; each phase holds big_d x big_h x big_w elements.
    ph_d, ph_h, ph_w = min(sd, in_d), min(sh, in_h), min(sw, in_w)
    big_d, big_h, big_w = (in_d + sd - 1) // sd, (in_h + sh - 1) // sh, (in_w + sw - 1) // sw
    phase_len = big_d * big_h * big_w
    n_phase = ph_d * ph_h * ph_w * phase_len
    phase = work[:n_phase]
    bd, bh, bw = d_hi - d_lo, h_hi - h_lo, w_hi - w_lo
    block = bd > 0 and bh > 0 and bw > 0
    span = ((bd - 1) * big_h + (bh - 1)) * big_w + bw if block else 0
    # The block's layout is the output's own: run on the output, no copy.
    in_place = big_w == out_w and (bd == 1 or big_h == out_h)
    acc_buf = work[n_phase:n_phase + (0 if in_place else span)]
    # While the taps run, the block's index slots hold the number of the winning tap (a constant
    # per loop: vectorizes); at the end it becomes (index part of the position) + (tap's offset).
    n_taps = k_d * k_h * k_w
    block_base = iwork[:span if want_idx else 0]
    tap_off = iwork[span:span + n_taps]
    acc_idx_buf = iwork[span + n_taps:span + n_taps + (0 if in_place or not want_idx else span)]
    if want_idx:
        for j in range(span):  # the index part that depends on the output: o*s*st per axis
            od = d_lo + j // (big_h * big_w)
            oh = h_lo + (j // big_w) % big_h
            ow = w_lo + j % big_w
            block_base[j] = od * sd * st_d + oh * sh * st_h + ow * sw * st_w
    s0_d, s0_h, s0_w = win[0, 0, 0], win[1, 0, 0], win[2, 0, 0]  # window start of output 0
    # Rows outside the block: per w tap, the outputs [tap_lo, tap_hi) it is in range for, and the
    # run [run_lo, run_hi) every tap is.
    tap_lo = iwork[2 * span + n_taps:][:k_w]
    tap_hi = iwork[2 * span + n_taps + k_w:][:k_w]
    run_lo, run_hi, w_empty = _tap_runs(win, out_w, tap_lo, tap_hi)
    for plane_no in range(row_lo, row_hi):
        n = plane_no // n_chan
        c = plane_no % n_chan
        plane = xoff + n * xs_n + c * xs_c
        base = n * off_n + c * off_c
        ob = plane_no * plane_out
        if block:
            # Split the plane into its phases (each input element copied once).
            for d in range(in_d):
                for h in range(in_h):
                    at = plane + d * xs_d + h * xs_h
                    row_at = ((d // sd) * big_h + h // sh) * big_w
                    first = ((d % sd) * ph_h + h % sh) * ph_w * phase_len
                    _split_row(flat, at, xs_w, in_w, sw, phase_len, phase, first + row_at)
            if in_place:
                acc, acc_idx, a0 = o_all, oi_all, ob + (d_lo * out_h + h_lo) * out_w + w_lo
            else:
                acc, acc_idx, a0 = acc_buf, acc_idx_buf, 0
            if seed_lowest:  # its index: the plane's first element (tap slot -1)
                _seed_at(empty, -1, acc, a0, acc_idx, span, -1, 0, want_idx)
            t = 0
            for jd in range(k_d):
                pos_d = s0_d + jd * dd
                q_d, r_d = pos_d // sd, pos_d % sd
                for jh in range(k_h):
                    pos_h = s0_h + jh * dh
                    q_h, r_h = pos_h // sh, pos_h % sh
                    for jw in range(k_w):
                        pos_w = s0_w + jw * dw
                        q_w, r_w = pos_w // sw, pos_w % sw
                        start = (((r_d * ph_h + r_h) * ph_w + r_w) * phase_len
                                 + ((d_lo + q_d) * big_h + (h_lo + q_h)) * big_w + (w_lo + q_w))
                        tap_off[t] = pos_d * st_d + pos_h * st_h + pos_w * st_w
                        if t == 0 and not seed_lowest:
                            _seed_at(phase, start, acc, a0, acc_idx, span, 0, 0, want_idx)
                        elif in_place:  # one array per call site: a phi of two did not vectorize
                            _update_at(phase, start, o_all, a0, oi_all, span, t, 0, want_idx, nan_takes,
                                       hold)
                        else:
                            _update_at(phase, start, acc_buf, 0, acc_idx_buf, span, t, 0, want_idx,
                                       nan_takes, hold)
                        t += 1
            if want_idx:
                for j in range(span):
                    k = np.uint64(a0 + j)
                    slot = acc_idx[k]
                    acc_idx[k] = base + (block_base[j] + tap_off[slot] if slot >= 0 else 0)
            if not in_place:
                for i in range(bd):
                    for k in range(bh):
                        at = (i * big_h + k) * big_w
                        to = ob + ((d_lo + i) * out_h + h_lo + k) * out_w + w_lo
                        _seed_at(acc, at, o_all, to, oi_all, bw, 0, 0, False)
                        if want_idx:
                            for j in range(bw):
                                oi_all[to + j] = acc_idx[at + j]
        # Outputs outside the block. Whole rows outside it (with phases split): each tap as runs
        # along the row, as in _loops.pool_width_inner (3-D faces were 19 ms of scalar windows);
        # the ends of the block's rows and everything when there is no block: one by one.
        for od in range(out_d):
            in_block_d = d_lo <= od < d_hi
            for oh in range(out_h):
                in_block = in_block_d and h_lo <= oh < h_hi and w_lo < w_hi
                if block and not in_block:
                    _row_by_runs(phase, flat, plane, xst, win, dil, od, oh, o_all,
                                 oi_all, ob + (od * out_h + oh) * out_w, out_w, base, sd, sh, sw, ph_h, ph_w,
                                 big_h, big_w, phase_len, k_w, tap_lo, tap_hi, run_lo, run_hi, w_empty,
                                 st_d, st_h, st_w, empty, empty_idx, use_off, want_idx, seed_lowest,
                                 nan_takes, hold)
                    continue
                for part in range(2 if in_block else 1):
                    a, b = (0, out_w) if not in_block else ((0, w_lo) if part == 0 else (w_hi, out_w))
                    for ow in range(a, b):
                        m, mi, has = _one_window(flat, plane, xst, win, dd, dh, dw, od, oh, ow, st_d,
                                                 st_h, st_w, seed_lowest, lowest, nan_takes, hold)
                        k = ob + (od * out_h + oh) * out_w + ow
                        o_all[k] = m
                        if want_idx:
                            oi_all[k] = mi + base if has else empty_idx + use_off * base


def planes_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_planes`` takes per thread: the plane's phases, and the
    block's positions' index parts and (when it is not the output's layout) the block itself."""
    in_d, in_h, in_w = (int(v) for v in p[15:18])
    sd, sh, sw = (int(v) for v in p[22:25])
    d_lo, d_hi, h_lo, h_hi, w_lo, w_hi = (int(v) for v in p[25:31])
    _, _, _, out_h, out_w = out5
    big_d, big_h, big_w = -(-in_d // sd), -(-in_h // sh), -(-in_w // sw)
    phases = min(sd, in_d) * min(sh, in_h) * min(sw, in_w) * big_d * big_h * big_w
    bd, bh, bw = d_hi - d_lo, h_hi - h_lo, w_hi - w_lo
    span = ((bd - 1) * big_h + (bh - 1)) * big_w + bw if min(bd, bh, bw) > 0 else 0
    in_place = big_w == out_w and (bd == 1 or big_h == out_h)
    n_taps = int(np.prod(p[31:34]))
    return phases + (0 if in_place else span), 2 * span + n_taps + 2 * int(p[33])
