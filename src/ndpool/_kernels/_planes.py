"""MaxPool on NCX data, one (n, c) plane at a time, for rows too short to vectorize well.

The row kernel (``pool_width_inner``) sweeps each output row once per tap: with the stem's 56-wide
rows that is a million short vector loops, and their setup cost dominated. Here each plane is split
once into stride phases (phase (rd, rh, rw) holds x[i*sd + rd, j*sh + rh, k*sw + rw]); then a tap is a
constant shift in one phase, and every output of the interior block (windows wholly inside the input)
takes the tap in ONE contiguous loop over the block laid out with the phase's row strides. Positions
of that layout that fall outside the block are computed and discarded. Border outputs take the
per-output path. Taps are visited in row-major order, so the first-maximum rule holds as in _loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._keys import as_key
from ._loops import _one_window, _wins


@njit(cache=True, nogil=True)
def pool_planes(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    in_d, in_h, in_w = p[15], p[16], p[17]
    sd, sh, sw = p[22], p[23], p[24]
    d_lo, d_hi, h_lo, h_hi, w_lo, w_hi = p[25], p[26], p[27], p[28], p[29], p[30]
    k_d, k_h, k_w = p[31], p[32], p[33]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    # ph_* phases per axis; each phase holds big_d x big_h x big_w elements.
    ph_d, ph_h, ph_w = min(sd, in_d), min(sh, in_h), min(sw, in_w)
    big_d, big_h, big_w = (in_d + sd - 1) // sd, (in_h + sh - 1) // sh, (in_w + sw - 1) // sw
    phase = np.empty((ph_d * ph_h * ph_w, big_d * big_h * big_w), flat.dtype)
    bd, bh, bw = d_hi - d_lo, h_hi - h_lo, w_hi - w_lo
    block = bd > 0 and bh > 0 and bw > 0
    span = ((bd - 1) * big_h + (bh - 1)) * big_w + bw if block else 0
    acc = np.empty(max(span, 1), flat.dtype)
    acc_idx = np.empty(max(span, 1) if want_idx else 1, np.int64)
    # Per block position, the index part that depends on the output: o*s*st per axis.
    block_base = np.empty(max(span, 1) if want_idx else 1, np.int64)
    if want_idx:
        for j in range(span):
            od = d_lo + j // (big_h * big_w)
            oh = h_lo + (j // big_w) % big_h
            ow = w_lo + j % big_w
            block_base[j] = od * sd * st_d + oh * sh * st_h + ow * sw * st_w
    s0_d, s0_h, s0_w = win[0, 0, 0], win[1, 0, 0], win[2, 0, 0]  # window start of output 0
    for plane_no in range(row_lo, row_hi):
        n = plane_no // n_chan
        c = plane_no % n_chan
        plane = xoff + n * xst[0] + c * xst[1]
        base = n * off_n + c * off_c
        o = out[n, c]
        oi = idx[n, c] if want_idx else idx[0, 0]
        if block:
            # Split the plane into its phases (each input element copied once).
            for d in range(in_d):
                for h in range(in_h):
                    at = plane + d * xst[2] + h * xst[3]
                    row_at = ((d // sd) * big_h + h // sh) * big_w
                    first_phase = ((d % sd) * ph_h + h % sh) * ph_w
                    for rw in range(ph_w):
                        dst = phase[first_phase + rw]
                        for k in range((in_w - rw + sw - 1) // sw):
                            dst[row_at + k] = flat[np.uint64(at + (k * sw + rw) * xst[4])]
            seeded = seed_lowest
            if seed_lowest:
                acc[:span] = lowest
                if want_idx:
                    acc_idx[:span] = 0
            for jd in range(k_d):
                pos_d = s0_d + jd * dd
                q_d, r_d = pos_d // sd, pos_d % sd
                for jh in range(k_h):
                    pos_h = s0_h + jh * dh
                    q_h, r_h = pos_h // sh, pos_h % sh
                    for jw in range(k_w):
                        pos_w = s0_w + jw * dw
                        q_w, r_w = pos_w // sw, pos_w % sw
                        src_plane = phase[(r_d * ph_h + r_h) * ph_w + r_w]
                        start = ((d_lo + q_d) * big_h + (h_lo + q_h)) * big_w + (w_lo + q_w)
                        src = src_plane[start:start + span]
                        tap = pos_d * st_d + pos_h * st_h + pos_w * st_w
                        if not seeded:
                            acc[:span] = src
                            if want_idx:
                                for j in range(span):
                                    acc_idx[j] = block_base[j] + tap
                            seeded = True
                            continue
                        if want_idx:
                            for j in range(span):
                                v, m = src[j], acc[j]
                                take = _wins(as_key(v), as_key(m), nan_takes, hold)
                                acc[j] = v if take else m
                                acc_idx[j] = block_base[j] + tap if take else acc_idx[j]
                        else:
                            for j in range(span):
                                v, m = src[j], acc[j]
                                acc[j] = v if _wins(as_key(v), as_key(m), nan_takes, hold) else m
            for i in range(bd):
                for k in range(bh):
                    at = (i * big_h + k) * big_w
                    o[d_lo + i, h_lo + k, w_lo:w_hi] = acc[at:at + bw]
                    if want_idx:
                        dsti = oi[d_lo + i, h_lo + k, w_lo:w_hi]
                        for j in range(bw):
                            dsti[j] = acc_idx[at + j] + base
        # Outputs outside the block, one by one.
        for od in range(out_d):
            in_block_d = d_lo <= od < d_hi
            for oh in range(out_h):
                in_block_h = in_block_d and h_lo <= oh < h_hi
                for ow in range(out_w):
                    if in_block_h and w_lo <= ow < w_hi:
                        continue
                    m, mi, has = _one_window(flat, plane, xst, win, dd, dh, dw, od, oh, ow, st_d, st_h,
                                             st_w, seed_lowest, lowest, nan_takes, hold)
                    o[od, oh, ow] = m
                    if want_idx:
                        oi[od, oh, ow] = mi + base if has else empty_idx + use_off * base
