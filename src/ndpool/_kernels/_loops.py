"""The compiled loops. Private: inputs are validated, views and parameters prepared by ``_launch``.

Both kernels see 3 spatial axes (1-D and 2-D pooling come with unit axes) and describe each axis's
windows by ``win[axis, 0|1|2, o]`` = (position of tap 0, first in-range tap, end of in-range taps),
plus a dilation: one description for MaxPool and AdaptiveMaxPool bins alike. Every output visits its
taps in row-major order, so the first-maximum rule holds by construction.

The update of a running maximum ``m`` by a tap ``v`` is one rule for every preset:
    take = key(v) > key(m)  or  (nan_takes and isnan(v) and not (hold and isnan(m)))
spec: nan_takes, hold (first NaN stays); torch: nan_takes (last NaN); openvino/onnx: neither.
Presets that start at the first tap (all but openvino's MaxPool) seed ``m`` with it; openvino seeds
``lowest`` and the plane's first index. Written as selects, so the inner loops vectorize.

Parameters ``p`` (int64): want_idx, seed_lowest, nan_takes, hold, index offset per n, per c,
index strides of d, h, w, empty-window index constant, whether it adds the plane offset,
then for ``pool_width_inner`` the w stride and the interior output range [lo, hi).

Each kernel handles output rows ``[row_lo, row_hi)`` and releases the GIL; ``_launch`` splits the
rows over threads. (``parallel=True`` gave the same speed but doubled cold compilation to ~10 s per
specialization.) Indices are always written as int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._keys import as_key


@njit
def _wins(kv, km, nan_takes, hold):  # type: ignore[no-untyped-def]
    return (kv > km) | (nan_takes & (kv != kv) & ~(hold & (km != km)))


# Channels innermost (NXC, or any input whose channel stride is the smallest): every tap is one
# unit-stride row of C values, and the update vectorizes across channels. Rows are (n, od, oh).
@njit(cache=True, nogil=True)
def pool_channels_inner(x, out, idx, win, dil, p, empty, row_lo, row_hi):  # type: ignore[no-untyped-def]
    n_chan = x.shape[4]
    _, out_d, out_h, out_w, _ = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    for row in range(row_lo, row_hi):
        n = row // (out_d * out_h)
        od = (row // out_h) % out_d
        oh = row % out_h
        s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
        s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
        base = n * off_n
        for ow in range(out_w):
            s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
            o = out[n, od, oh, ow]
            oi = idx[n, od, oh, ow] if want_idx else idx[0, 0, 0, 0]
            if f_d >= e_d or f_h >= e_h or f_w >= e_w:  # an empty window
                for c in range(n_chan):
                    o[c] = lowest
                if want_idx:
                    for c in range(n_chan):
                        oi[c] = empty_idx + use_off * (base + c * off_c)
                continue
            if seed_lowest:
                for c in range(n_chan):
                    o[c] = lowest
                if want_idx:
                    for c in range(n_chan):
                        oi[c] = base + c * off_c
            else:
                d, h, w = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
                first = x[n, d, h, w]
                for c in range(n_chan):
                    o[c] = first[c]
                if want_idx:
                    f0 = base + d * st_d + h * st_h + w * st_w
                    for c in range(n_chan):
                        oi[c] = f0 + c * off_c
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    for jw in range(f_w, e_w):
                        w = s_w + jw * dw
                        xs = x[n, d, h, w]
                        if want_idx:
                            f = base + d * st_d + h * st_h + w * st_w
                            for c in range(n_chan):
                                v, m = xs[c], o[c]
                                take = _wins(as_key(v), as_key(m), nan_takes, hold)
                                o[c] = v if take else m
                                oi[c] = f + c * off_c if take else oi[c]
                        else:
                            for c in range(n_chan):
                                v, m = xs[c], o[c]
                                o[c] = v if _wins(as_key(v), as_key(m), nan_takes, hold) else m


# Width innermost (NCX): per output row, each tap (jd, jh, jw) sweeps the row's interior outputs
# (no bounds checks there); border outputs and bins take the per-output path. Each input row is first
# split into ``sw`` phase rows (phase[r][i] = row[i*sw + r]) so that every tap is a unit-stride load
# from a contiguous buffer whatever the input's strides: strided or 'A'-typed loads do not vectorize
# (measured 3x slower). Rows are (n, c, od, oh).
@njit(cache=True, nogil=True)
def pool_width_inner(x, out, idx, win, dil, p, empty, row_lo, row_hi):  # type: ignore[no-untyped-def]
    n_chan, in_w = x.shape[1], x.shape[4]
    _, _, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    sw, lo, hi = p[11], p[12], p[13]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    phase = np.empty((sw, (in_w + sw - 1) // sw), x.dtype)
    for row in range(row_lo, row_hi):
        n = row // (n_chan * out_d * out_h)
        c = (row // (out_d * out_h)) % n_chan
        od = (row // out_h) % out_d
        oh = row % out_h
        s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
        s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
        base = n * off_n + c * off_c
        o = out[n, c, od, oh]
        oi = idx[n, c, od, oh] if want_idx else idx[0, 0, 0, 0]
        rows_empty = f_d >= e_d or f_h >= e_h
        # Per-output path: borders, bins, and rows whose windows are empty.
        for ow in range(out_w):
            if lo <= ow < hi and not rows_empty:
                continue
            s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
            if rows_empty or f_w >= e_w:
                o[ow] = lowest
                if want_idx:
                    oi[ow] = empty_idx + use_off * base
                continue
            if seed_lowest:
                m, mi = lowest, base
            else:
                d, h, w = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
                m, mi = x[n, c, d, h, w], base + d * st_d + h * st_h + w * st_w
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    xr = x[n, c, d, h]
                    fb = base + d * st_d + h * st_h
                    for jw in range(f_w, e_w):
                        w = s_w + jw * dw
                        v = xr[w]
                        take = _wins(as_key(v), as_key(m), nan_takes, hold)
                        m = v if take else m
                        mi = fb + w * st_w if take else mi
            o[ow] = m
            if want_idx:
                oi[ow] = mi
        if rows_empty or lo >= hi:
            continue
        # Interior: every w tap is in range; tap jw of output ow reads w = ow*sw + s0 + jw*dw.
        s0 = win[2, 0, lo] - lo * sw
        k_w = win[2, 2, lo]
        if seed_lowest:
            o[lo:hi] = lowest
            if want_idx:
                oi[lo:hi] = base
        for jd in range(f_d, e_d):
            d = s_d + jd * dd
            for jh in range(f_h, e_h):
                h = s_h + jh * dh
                xr = x[n, c, d, h]
                for r in range(sw):
                    ph = phase[r]
                    for i in range(ph.shape[0] if r < in_w % sw or in_w % sw == 0 else ph.shape[0] - 1):
                        ph[i] = xr[i * sw + r]
                fb = base + d * st_d + h * st_h
                first_row = jd == f_d and jh == f_h
                # Zero-based loops over slices: a signed, offset index (wraparound checks) keeps
                # LLVM from vectorizing (measured 3x).
                dst, n_out = o[lo:hi], hi - lo
                dsti = oi[lo:hi] if want_idx else oi
                for jw in range(k_w):
                    s = s0 + jw * dw
                    q = s // sw
                    src = phase[s % sw][lo + q: hi + q]
                    f = fb + (lo * sw + s) * st_w  # index of src[0]; src[i] is f + i*sw*st_w
                    step = sw * st_w
                    if first_row and jw == 0 and not seed_lowest:
                        dst[:] = src
                        if want_idx:
                            for i in range(n_out):
                                dsti[i] = f + i * step
                    if want_idx:
                        for i in range(n_out):
                            v, m = src[i], dst[i]
                            take = _wins(as_key(v), as_key(m), nan_takes, hold)
                            dst[i] = v if take else m
                            dsti[i] = f + i * step if take else dsti[i]
                    else:
                        for i in range(n_out):
                            v, m = src[i], dst[i]
                            dst[i] = v if _wins(as_key(v), as_key(m), nan_takes, hold) else m
