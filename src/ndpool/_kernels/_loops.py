"""The compiled loops. Private: inputs are validated, views and parameters prepared by ``_launch``.

Both kernels see 3 spatial axes (1-D and 2-D pooling come with unit axes) and describe each axis's
windows by ``win[axis, 0|1|2, o]`` = (position of tap 0, first in-range tap, end of in-range taps),
plus a dilation: one description for MaxPool and AdaptiveMaxPool bins alike. Every output visits its
taps in row-major order, so the first-maximum rule holds by construction.

The input arrives as a flat, C-typed buffer with an offset and element strides for the logical
(N, C, D, H, W) axes, whatever its real layout (transposed, reversed, broadcast): one compiled
specialization per element type. Rows that are unit-stride in memory are sliced straight out of the
buffer; others are gathered into a small scratch row first. Either way the update loops run over
contiguous, zero-based rows, which LLVM vectorizes (strided, signed-offset or 'A'-typed loads did
not: measured 3x slower).

The update of a running maximum ``m`` by a tap ``v`` is one rule for every preset:
    take = key(v) > key(m)  or  (nan_takes and isnan(v) and not (hold and isnan(m)))
spec: nan_takes, hold (first NaN stays); torch: nan_takes (last NaN); openvino/onnx: neither.
Presets that start at the first tap (all but openvino's MaxPool) seed ``m`` with it; openvino seeds
``lowest`` and the plane's first index.

Parameters ``p`` (int64): want_idx, seed_lowest, nan_takes, hold, index offset per n, per c,
index strides of d, h, w, empty-window index constant, whether it adds the plane offset,
the w stride and the interior output range [lo, hi) (``pool_width_inner``).

Each kernel handles output rows ``[row_lo, row_hi)`` and releases the GIL; ``_launch`` splits the
rows over threads. (``parallel=True`` gave the same speed but doubled cold compilation to ~10 s per
specialization.) Indices are always written as int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._keys import as_key


@njit(inline="always")
def _wins(kv, km, nan_takes, hold):  # type: ignore[no-untyped-def]
    return (kv > km) | (nan_takes & (kv != kv) & ~(hold & (km != km)))


@njit(inline="always")
def _gather(flat, start, count, stride, dst):  # type: ignore[no-untyped-def]
    # Unsigned positions (always in the buffer): a signed index costs a wraparound check per load.
    for i in range(count):
        dst[i] = flat[np.uint64(start + i * stride)]


@njit(inline="always")
def _update(src, dst, dsti, f, step, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    """dst[i] <- src[i] where the tap wins; its index is ``f + i*step``."""
    if want_idx:
        for i in range(dst.shape[0]):
            v, m = src[i], dst[i]
            take = _wins(as_key(v), as_key(m), nan_takes, hold)
            dst[i] = v if take else m
            dsti[i] = f + i * step if take else dsti[i]
    else:
        for i in range(dst.shape[0]):
            v, m = src[i], dst[i]
            dst[i] = v if _wins(as_key(v), as_key(m), nan_takes, hold) else m


@njit(inline="always")
def _seed(src, dst, dsti, f, step, want_idx):  # type: ignore[no-untyped-def]
    """Start every running maximum at a tap's row ``src``, or at one value (empty windows,
    openvino's ``lowest``); its index is ``f + i*step``."""
    dst[:] = src
    if want_idx:
        for i in range(dst.shape[0]):
            dsti[i] = f + i * step


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


# Channels innermost (NXC, or any input whose channel stride is the smallest): every tap is one row
# of C values and the update vectorizes across channels. Rows are (n, od, oh).
@njit(cache=True, nogil=True)
def pool_channels_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi):  # type: ignore[no-untyped-def]
    _, out_d, out_h, out_w, n_chan = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    scratch = np.empty(n_chan, flat.dtype)
    unit_c = xst[1] == 1
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
                _seed(lowest, o, oi, empty_idx + use_off * base, use_off * off_c, want_idx)
                continue
            if seed_lowest:
                _seed(lowest, o, oi, base, off_c, want_idx)
            else:
                d, h, w = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
                at = xoff + n * xst[0] + d * xst[2] + h * xst[3] + w * xst[4]
                _gather(flat, at, n_chan, xst[1], scratch)
                _seed(scratch, o, oi, base + d * st_d + h * st_h + w * st_w, off_c, want_idx)
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    for jw in range(f_w, e_w):
                        w = s_w + jw * dw
                        at = xoff + n * xst[0] + d * xst[2] + h * xst[3] + w * xst[4]
                        f = base + d * st_d + h * st_h + w * st_w
                        # Two call sites, each with one source array: a source that is either the
                        # buffer or the scratch row does not vectorize (measured 3.5x slower).
                        if unit_c:
                            _update(flat[at:at + n_chan], o, oi, f, off_c, want_idx, nan_takes, hold)
                        else:
                            _gather(flat, at, n_chan, xst[1], scratch)
                            _update(scratch, o, oi, f, off_c, want_idx, nan_takes, hold)


# Width innermost (NCX): per output row, each tap (jd, jh, jw) sweeps the row's interior outputs
# (no bounds checks there); border outputs and bins take the per-output path. For a w stride
# sw > 1 each input row is first split into sw phase rows (phase[r][i] = row[i*sw + r]), so every
# tap is a contiguous load. Rows are (n, c, od, oh).
@njit(cache=True, nogil=True)
def pool_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    sw, lo, hi, in_w = p[11], p[12], p[13], p[14]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    n_out = hi - lo
    phases = min(sw, in_w)  # phases past the row's end would be empty
    phase = np.empty((phases, (in_w + sw - 1) // sw), flat.dtype)
    scratch = np.empty(max(n_out, 1), flat.dtype)
    unit_w = xst[4] == 1
    for row in range(row_lo, row_hi):
        n = row // (n_chan * out_d * out_h)
        c = (row // (out_d * out_h)) % n_chan
        od = (row // out_h) % out_d
        oh = row % out_h
        s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
        s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
        base = n * off_n + c * off_c
        plane = xoff + n * xst[0] + c * xst[1]
        o = out[n, c, od, oh]
        oi = idx[n, c, od, oh] if want_idx else idx[0, 0, 0, 0]
        rows_empty = f_d >= e_d or f_h >= e_h
        # Per-output path: borders, bins, and rows whose windows are empty.
        interior_rows = not rows_empty and n_out > 0
        for k in range(out_w - n_out if interior_rows else out_w):
            ow = k if not interior_rows or k < lo else k + n_out
            m, mi, has = _one_window(flat, plane, xst, win, dd, dh, dw, od, oh, ow, st_d, st_h, st_w,
                                     seed_lowest, lowest, nan_takes, hold)
            o[ow] = m
            if want_idx:
                oi[ow] = mi + base if has else empty_idx + use_off * base
        if not interior_rows:
            continue
        # Interior: every w tap is in range; tap jw of output ow reads w = ow*sw + s0 + jw*dw.
        s0 = win[2, 0, lo] - lo * sw
        k_w = win[2, 2, lo]
        dst = o[lo:hi]
        dsti = oi[lo:hi] if want_idx else oi
        step = sw * st_w
        if seed_lowest:
            _seed(lowest, dst, dsti, base, 0, want_idx)
        for jd in range(f_d, e_d):
            d = s_d + jd * dd
            for jh in range(f_h, e_h):
                h = s_h + jh * dh
                at = plane + d * xst[2] + h * xst[3]
                fb = base + d * st_d + h * st_h
                if sw == 2 and unit_w:
                    # A constant stride lets LLVM vectorize the split (interleaved loads).
                    even, odd = phase[0], phase[1 % phases]
                    rowv = flat[at:at + in_w]
                    for i in range(in_w // 2):
                        even[i] = rowv[2 * i]
                        odd[i] = rowv[2 * i + 1]
                    if in_w % 2:
                        even[in_w // 2] = flat[at + in_w - 1]
                elif sw > 1:
                    for r in range(phases):
                        count = (in_w - r + sw - 1) // sw
                        _gather(flat, at + r * xst[4], count, sw * xst[4], phase[r])
                for jw in range(k_w):
                    s = s0 + jw * dw
                    f = fb + (lo * sw + s) * st_w
                    seed = jd == f_d and jh == f_h and jw == 0 and not seed_lowest
                    # One source array per call site (see pool_channels_inner).
                    if sw > 1:
                        q = s // sw
                        src = phase[s % sw, lo + q:hi + q]
                        if seed:
                            _seed(src, dst, dsti, f, step, want_idx)
                        _update(src, dst, dsti, f, step, want_idx, nan_takes, hold)
                    elif unit_w:
                        start = at + lo + s
                        if seed:
                            _seed(flat[start:start + n_out], dst, dsti, f, step, want_idx)
                        _update(flat[start:start + n_out], dst, dsti, f, step, want_idx, nan_takes, hold)
                    else:
                        _gather(flat, at + (lo + s) * xst[4], n_out, xst[4], scratch)
                        if seed:
                            _seed(scratch, dst, dsti, f, step, want_idx)
                        _update(scratch, dst, dsti, f, step, want_idx, nan_takes, hold)
