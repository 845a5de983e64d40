"""Large windows: separable passes over sparse tables of maxima, a cost per output that does not
grow with the kernel size.

Row-major order is lexicographic, so reducing the innermost axis first (w, then h, then d) keeps the
first-maximum rule, provided each pass combines an *earlier* and a *later* partial result with a
rule that is associative. For every preset it is "the later one wins if":
    key(later) > key(earlier)
    or (nan_takes and isnan(later) and not (hold and isnan(earlier)))     spec (hold), torch
    or (nan_bottom and isnan(earlier) and not isnan(later))               openvino, onnx
that is, a max under a total order where ties go to the earlier element (for torch, NaNs to the
later one). Two presets need a last step: openvino starts at ``lowest`` (a result not above it gives
``lowest`` and the plane's first index), and onnx starts at the first tap (a NaN there wins).

Per axis, level t of the table holds, at position p, the fold of the taps p, p+d, ..., p+(2**t-1)*d.
A window of c in-range taps starting at p0 is combine(level_t[p0], level_t[p0 + (c - 2**t)*d]) with
2**t <= c < 2**(t+1): two overlapping halves (the combine is idempotent). Building level t+1 from
level t is one contiguous, vectorized pass over the whole (positions x lanes) array.
Cost per plane: O(plane * log2(k)) per axis, against O(plane * k) for the direct loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel
from ._keys import as_key
from ._loops import _gather


@njit(inline="always")
def _later_wins(kv, km, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    return ((kv > km) | (nan_takes & (kv != kv) & ~(hold & (km != km)))
            | (nan_bottom & (km != km) & (kv == kv)))


@njit(inline="always")
def _levels(val, idx, n, lanes, dil, top, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Fill levels 1..top of the table in place; level 0 (val[0], idx[0]) holds the data."""
    for t in range(top):
        shift = (1 << t) * dil * lanes
        src, srci, dst, dsti = val[t], idx[t], val[t + 1], idx[t + 1]
        count = n * lanes - shift
        if want_idx:
            for i in range(max(count, 0)):
                e, later = src[i], src[i + shift]
                take = _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom)
                dst[i] = later if take else e
                dsti[i] = srci[i + shift] if take else srci[i]
        else:
            for i in range(max(count, 0)):
                e, later = src[i], src[i + shift]
                dst[i] = later if _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom) else e


@njit(inline="always")
def _query(val, idx, lanes, dil, start, first, end, n_out, out, outi, want_idx, nan_takes, hold,
           nan_bottom):  # type: ignore[no-untyped-def]
    """out[o, :] = the fold over the in-range taps of window o (windows with none are skipped)."""
    if lanes == 1:  # the w pass: one value per window, no row slices (they cost more than the fold)
        for o in range(n_out):
            c = end[o] - first[o]
            if c <= 0:
                continue
            t = 0
            while (2 << t) <= c:
                t += 1
            a = start[o] + first[o] * dil
            b = a + (c - (1 << t)) * dil
            e, later = val[t, a], val[t, b]
            take = _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom)
            out[o] = later if take else e
            if want_idx:
                outi[o] = idx[t, b] if take else idx[t, a]
        return
    for o in range(n_out):
        c = end[o] - first[o]
        if c <= 0:
            continue
        t = 0
        while (2 << t) <= c:
            t += 1
        p0 = start[o] + first[o] * dil
        a = p0 * lanes
        b = (p0 + (c - (1 << t)) * dil) * lanes
        lv, li = val[t], idx[t]
        dst = out[o * lanes:(o + 1) * lanes]
        dsti = outi[o * lanes:(o + 1) * lanes]
        if want_idx:
            for i in range(lanes):
                e, later = lv[a + i], lv[b + i]
                take = _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom)
                dst[i] = later if take else e
                dsti[i] = li[b + i] if take else li[a + i]
        else:
            for i in range(lanes):
                e, later = lv[a + i], lv[b + i]
                dst[i] = later if _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom) else e


# One (n, c) plane per row of work. Scratch per call: the tables of the three passes.
@kernel
def pool_separable(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    in_d, in_h, in_w = p[15], p[16], p[17]
    top_d, top_h, top_w = p[18], p[19], p[20]
    want_idx, seed_lowest = p[0] != 0, p[1] != 0
    nan_takes, hold = p[2] != 0, p[3] != 0
    nan_bottom = not nan_takes
    first_valid = p[21] != 0
    any_empty = False  # some output window lacks in-range taps on some axis
    for axis in range(3):
        for o_ in range((out_d, out_h, out_w)[axis]):
            any_empty = any_empty or win[axis, 1, o_] >= win[axis, 2, o_]
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = p[4], p[5], p[6], p[7], p[8], p[9], p[10]
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    # Pass w: one input row at a time. Pass h: all rows of one d slice, lanes = out_w.
    # Pass d: all slices, lanes = out_h * out_w.
    n_w, n_h, n_d = (top_w + 1) * in_w, (top_h + 1) * in_h * out_w, (top_d + 1) * in_d * out_h * out_w
    tw_val = work[:n_w].reshape((top_w + 1, in_w))
    tw_idx = iwork[:n_w].reshape((top_w + 1, in_w))
    th_val = work[n_w:n_w + n_h].reshape((top_h + 1, in_h * out_w))
    th_idx = iwork[n_w:n_w + n_h].reshape((top_h + 1, in_h * out_w))
    td_val = work[n_w + n_h:n_w + n_h + n_d].reshape((top_d + 1, in_d * out_h * out_w))
    td_idx = iwork[n_w + n_h:n_w + n_h + n_d].reshape((top_d + 1, in_d * out_h * out_w))
    for plane in range(row_lo, row_hi):
        n = plane // n_chan
        c = plane % n_chan
        at_plane = xoff + n * xst[0] + c * xst[1]
        base = n * off_n + c * off_c
        for d in range(in_d):
            for h in range(in_h):
                at = at_plane + d * xst[2] + h * xst[3]
                row = tw_val[0]
                _gather(flat, at, in_w, xst[4], row)
                if want_idx:
                    fb = d * st_d + h * st_h
                    for w in range(in_w):
                        tw_idx[0, w] = fb + w * st_w
                _levels(tw_val, tw_idx, in_w, 1, dw, top_w, want_idx, nan_takes, hold, nan_bottom)
                _query(tw_val, tw_idx, 1, dw, win[2, 0], win[2, 1], win[2, 2], out_w,
                       th_val[0, h * out_w:(h + 1) * out_w], th_idx[0, h * out_w:(h + 1) * out_w],
                       want_idx, nan_takes, hold, nan_bottom)
            _levels(th_val, th_idx, in_h, out_w, dh, top_h, want_idx, nan_takes, hold, nan_bottom)
            lanes = out_h * out_w
            _query(th_val, th_idx, out_w, dh, win[1, 0], win[1, 1], win[1, 2], out_h,
                   td_val[0, d * lanes:(d + 1) * lanes], td_idx[0, d * lanes:(d + 1) * lanes],
                   want_idx, nan_takes, hold, nan_bottom)
        _levels(td_val, td_idx, in_d, out_h * out_w, dd, top_d, want_idx, nan_takes, hold, nan_bottom)
        o = out[n, c].reshape(out_d * out_h * out_w)
        oi = idx[n, c].reshape(out_d * out_h * out_w) if want_idx else idx[0, 0, 0, 0]
        _query(td_val, td_idx, out_h * out_w, dd, win[0, 0], win[0, 1], win[0, 2], out_d, o, oi,
               want_idx, nan_takes, hold, nan_bottom)
        # The presets' starts and empty windows. Whole-plane passes where possible: a per-output
        # loop here cost more than the tables themselves.
        total = out_d * out_h * out_w
        if seed_lowest:  # openvino: a result not above ``lowest`` gives lowest and the plane's first
            for k in range(total):
                keep = as_key(o[k]) > as_key(lowest)
                o[k] = o[k] if keep else lowest
                if want_idx:
                    oi[k] = oi[k] if keep else 0
        if first_valid:  # onnx: a NaN first tap is the result
            for od in range(out_d):
                d = win[0, 0, od] + win[0, 1, od] * dd
                for oh in range(out_h):
                    h = win[1, 0, oh] + win[1, 1, oh] * dh
                    for ow in range(out_w):
                        w = win[2, 0, ow] + win[2, 1, ow] * dw
                        v = flat[np.uint64(at_plane + d * xst[2] + h * xst[3] + w * xst[4])]
                        kv = as_key(v)
                        if kv != kv:
                            k = (od * out_h + oh) * out_w + ow
                            o[k] = v
                            if want_idx:
                                oi[k] = d * st_d + h * st_h + w * st_w
        if want_idx:
            for k in range(total):
                oi[k] += base
        if any_empty:  # outputs whose window has no in-range tap on some axis
            for od in range(out_d):
                empty_d = win[0, 1, od] >= win[0, 2, od]
                for oh in range(out_h):
                    empty_h = empty_d or win[1, 1, oh] >= win[1, 2, oh]
                    for ow in range(out_w):
                        if empty_h or win[2, 1, ow] >= win[2, 2, ow]:
                            k = (od * out_h + oh) * out_w + ow
                            o[k] = lowest
                            if want_idx:
                                oi[k] = empty_idx + use_off * base


def separable_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_separable`` takes per thread: the three passes' tables."""
    in_d, in_h, in_w, top_d, top_h, top_w = (int(v) for v in p[15:21])
    _, _, _, out_h, out_w = out5
    n = (top_w + 1) * in_w + (top_h + 1) * in_h * out_w + (top_d + 1) * in_d * out_h * out_w
    return n, n
