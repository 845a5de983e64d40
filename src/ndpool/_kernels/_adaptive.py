"""AdaptiveMaxPool with the width axis adjacent in memory (NCX): bins are read row by row, vectorized.

Per output row (n, c, od, oh), a first pass folds the bin's input rows into one running maximum per
input column, in row order (vectorized along w, ties keep the earlier row); a second pass reduces each
output's columns. Column results come from different rows, so that second fold compares indices: the
smaller flat index (earlier in row-major order) wins a tie, and for torch's rule the larger one wins
between NaNs. The result is the sequential fold's, bit for bit, at about one vectorized read per input
element (the per-output sequential loop was scalar and 3-5x slower than torch).

openvino's rule (start at the first tap, take v > m) is not associative; it is computed as "NaN never
wins" and then the bin's first tap is checked: a NaN there is the result.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel
from ._keys import as_key


@njit(inline="always")
def _better(kv, iv, km, im, nan_top, nan_last, nan_bottom):  # type: ignore[no-untyped-def]
    """Whether (kv, iv) replaces (km, im) whatever their order of arrival."""
    vn, mn = kv != kv, km != km
    both_nan = vn & mn
    return ((kv > km) | (nan_top & vn & ~mn) | (nan_bottom & mn & ~vn) | ((kv == km) & (iv < im))
            | (both_nan & ((nan_last & (iv > im)) | (~nan_last & (iv < im)))))


@njit(inline="always")
def _fold_row(src, col, col_idx, fb, st_w, nan_top, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Fold one input row into the running column maxima (a later row wins only when better)."""
    for w in range(col.shape[0]):
        v, m = src[w], col[w]
        kv, km = as_key(v), as_key(m)
        take = ((kv > km) | (nan_top & (kv != kv) & ~(hold & (km != km)))
                | (nan_bottom & (km != km) & (kv == kv)))
        col[w] = v if take else m
        col_idx[w] = fb + w * st_w if take else col_idx[w]


@kernel
def adaptive_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    nan_top, hold = p[2] != 0, p[3] != 0
    nan_last = nan_top and not hold
    nan_bottom = not nan_top
    first_valid = p[21] != 0
    off_n, off_c, st_d, st_h, st_w = p[4], p[5], p[6], p[7], p[8]
    in_w = p[14]
    col = work[:in_w]
    col_idx = iwork[:in_w]
    scratch = work[in_w:2 * in_w]
    for row in range(row_lo, row_hi):
        n = row // (n_chan * out_d * out_h)
        c = (row // (out_d * out_h)) % n_chan
        od = (row // out_h) % out_d
        oh = row % out_h
        s_d, e_d = win[0, 0, od], win[0, 2, od]
        s_h, e_h = win[1, 0, oh], win[1, 2, oh]
        base = n * off_n + c * off_c
        plane = xoff + n * xst[0] + c * xst[1]
        for jd in range(e_d):
            d = s_d + jd
            for jh in range(e_h):
                h = s_h + jh
                at = plane + d * xst[2] + h * xst[3]
                fb = d * st_d + h * st_h
                if jd == 0 and jh == 0:
                    for w in range(in_w):
                        col[w] = flat[at + w * xst[4]]
                        col_idx[w] = fb + w * st_w
                    continue
                if xst[4] == 1:  # a unit-stride slice vectorizes; a strided read does not
                    _fold_row(flat[at:at + in_w], col, col_idx, fb, st_w, nan_top, hold, nan_bottom)
                else:
                    for w in range(in_w):
                        scratch[w] = flat[at + w * xst[4]]
                    _fold_row(scratch, col, col_idx, fb, st_w, nan_top, hold, nan_bottom)
        o = out[n, c, od, oh]
        oi = idx[n, c, od, oh]
        for ow in range(out_w):
            s_w, e_w = win[2, 0, ow], win[2, 2, ow]
            m, mi = col[s_w], col_idx[s_w]
            for w in range(s_w + 1, s_w + e_w):
                v, iv = col[w], col_idx[w]
                if _better(as_key(v), iv, as_key(m), mi, nan_top, nan_last, nan_bottom):
                    m, mi = v, iv
            if first_valid:  # openvino: a NaN first tap is the result
                first = flat[plane + s_d * xst[2] + s_h * xst[3] + s_w * xst[4]]
                kf = as_key(first)
                if kf != kf:
                    m, mi = first, s_d * st_d + s_h * st_h + s_w * st_w
            o[ow] = m
            oi[ow] = base + mi


def adaptive_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``adaptive_width_inner`` takes per thread: column maxima."""
    return 2 * in5[4], in5[4]
