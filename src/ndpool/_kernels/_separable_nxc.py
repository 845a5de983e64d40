"""Large windows on NXC data (1-D and 2-D pooling): pool_separable's passes with the channels as lanes.

pool_separable gathers a block of channels' planes into scratch and scatters their results back:
two transposing copies, 44% of the k13 SPP time on NXC data. Here nothing is transposed. A unit of
work is a band of output rows of one image; each input row the band needs is copied (C channels
per position, contiguous) and folded along w through a sparse table whose lanes are the channels,
then the band's rows are folded along h with the lanes a whole row of (w, channel) values, straight
into the channels-last output. The same later-wins rule and preset fix-ups as pool_separable (see
there), with each channel's own plane offset in its indices.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel, pure
from ._keys import as_key
from ._loops import _index_params, _rules
from ._separable import (
    _levels,
    _query_row,
    _strip_pass,
    _strip_size,
)


@kernel
def pool_separable_nxc(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, _, out_h, out_w, n_chan = out.shape
    in_h, in_w = p[16], p[17]
    top_h, top_w = p[19], p[20]
    want_idx, _, nan_takes, hold = _rules(p)
    nan_bottom = not nan_takes
    off_n, off_c, _, st_h, st_w, _, _ = _index_params(p)
    sw, w_lo, w_hi = p[24], p[29], p[30]
    k_h, k_w = p[32], p[33]
    band = p[35]
    dh, dw = dil[1], dil[2]
    xs_n, xs_c, xs_h, xs_w = xst[0], xst[1], xst[3], xst[4]
    never = empty[1]
    o_all = out.reshape(-1)
    oi_all = idx.reshape(-1)
    n_bands = (out_h + band - 1) // band
    row = in_w * n_chan  # one input row's (position, channel) values
    lanes_h = out_w * n_chan  # one output row's
    # Scratch: the w table of one input row (level 0 is the row's copy), the band's w results, the
    # h pass's table, and (int64s) the band's h windows relative to its first input row.
    wb = (top_w + 1) * row
    rows_most = _band_input_rows(band, p[23], k_h, dh)
    th = wb + rows_most * lanes_h
    rel = th + _strip_size(rows_most, lanes_h, top_h)
    for unit in range(row_lo, row_hi):
        n = unit // n_bands
        oh0 = (unit % n_bands) * band
        oh1 = min(oh0 + band, out_h)
        # The band's input rows: from its first window's first tap to its last window's last.
        h_first, h_last = in_h, -1
        for oh in range(oh0, oh1):
            f, e = win[1, 1, oh], win[1, 2, oh]
            if f < e:
                h_first = min(h_first, win[1, 0, oh] + f * dh)
                h_last = max(h_last, win[1, 0, oh] + (e - 1) * dh)
        for h in range(h_first, h_last + 1):
            _w_pass(flat, xoff + n * xs_n + h * xs_h, xs_w, xs_c, in_w, n_chan, work, iwork,
                    n * off_n + h * st_h, st_w, off_c, top_w, dw, sw, k_w, w_lo, w_hi, win,
                    wb + (h - h_first) * lanes_h, out_w, never, want_idx, nan_takes, hold, nan_bottom)
        for o in range(oh1 - oh0):
            iwork[rel + o] = win[1, 0, oh0 + o] - h_first
        if h_last >= h_first:
            _strip_pass(work, iwork, wb, h_last - h_first + 1, lanes_h, th, dh, top_h, k_h,
                        iwork[rel:rel + oh1 - oh0], win[1, 1, oh0:oh1], win[1, 2, oh0:oh1], oh1 - oh0,
                        o_all, oi_all, (n * out_h + oh0) * lanes_h, want_idx, nan_takes, hold, nan_bottom)
        _finish_band(o_all, oi_all, flat, xoff + n * xs_n, xs_h, xs_w, xs_c, n, oh0, oh1, 0, out_w, out_h, out_w,
                     n_chan, win, dil, p, empty, p[1] != 0, True, p[21] != 0)


@njit(inline="always")
def _w_pass(flat, at, xs_w, xs_c, in_w, n_chan, work, iwork, fb, st_w, off_c, top_w, dw, sw, k_w, w_lo, w_hi,
            win, o0, out_w, never, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Input row ``at`` (index ``fb`` at w = 0, channel 0) folded along w into out_w x C values at
    ``o0`` of work: copied, its table built with the channels as lanes, then queried (at stride 1
    the outputs with all k_w taps are one run of (position, channel) lanes)."""
    for w in range(in_w):
        for c in range(n_chan):
            work[np.uint64(w * n_chan + c)] = flat[np.uint64(at + w * xs_w + c * xs_c)]
    if want_idx:
        for w in range(in_w):
            for c in range(n_chan):
                iwork[np.uint64(w * n_chan + c)] = fb + w * st_w + c * off_c
    _levels(work, iwork, 0, in_w, n_chan, dw, top_w, want_idx, nan_takes, hold, nan_bottom)
    _query_row(work, iwork, in_w, n_chan, dw, sw, win[2, 0], win[2, 1], win[2, 2], out_w, w_lo, w_hi, k_w, work,
               iwork, o0, want_idx, nan_takes, hold, nan_bottom)
    for ow in range(out_w):  # no tap along w: a value nothing loses to (the fix-ups set the output)
        if win[2, 1, ow] >= win[2, 2, ow]:
            for c in range(n_chan):
                work[np.uint64(o0 + ow * n_chan + c)] = never


@njit(inline="always")
def _band_input_rows(band, stride_h, k_h, dil_h):  # type: ignore[no-untyped-def]
    """The most input rows a band of ``band`` output rows reads (the kernel's and its scratch's)."""
    return (band - 1) * stride_h + (k_h - 1) * dil_h + 1


@njit(inline="always")
def _floor(o, at, count, lowest):  # type: ignore[no-untyped-def]
    """openvino's start at ``lowest``: a result not above it (a NaN too) becomes it. pool_sliding
    applies it per output row as it writes it: over the unit's rows afterwards, NCX SPP under
    openvino's preset took 1.1-1.4x the spec preset's time."""
    kl = as_key(lowest)
    for k in range(at, at + count):
        v = o[np.uint64(k)]
        o[np.uint64(k)] = v if as_key(v) > kl else lowest


@njit(inline="always")
def _finish_band(o, oi, flat, at_n, xs_h, xs_w, xs_c, n, oh0, oh1, ow0, ow1, out_h, out_w, n_chan, win, dil, p, empty,  # type: ignore[no-untyped-def]
                 floor, any_empty, first_valid):
    """The band's outputs (rows oh0..oh1, columns ow0..ow1) folded by the later-wins rule become the
    preset's (as _finish_plane, with each channel's plane offset in its indices, which the passes
    carried already). ``floor``: openvino's start at ``lowest`` still to apply; ``any_empty``: whether
    some window of the band has no tap; ``first_valid``: onnx's rule, where a first tap may be NaN
    (the caller knows when none is)."""
    want_idx = _rules(p)[0]
    off_n, off_c, _, st_h, st_w, empty_idx, use_off = _index_params(p)
    dh, dw = dil[1], dil[2]
    lowest = empty[0]
    for oh in range(oh0, oh1):
        row = (n * out_h + oh) * out_w * n_chan
        # openvino: a result not above ``lowest`` gives lowest and the plane's first index. Over the
        # row at once (empty windows are set below): per output it cost more than the sliding
        # passes themselves (NCX SPP under openvino's rule 10.3 ms against 4.4).
        if floor and want_idx:
            for ow in range(ow0, ow1):
                for c in range(n_chan):
                    k = row + ow * n_chan + c
                    keep = as_key(o[k]) > as_key(lowest)
                    o[k] = o[k] if keep else lowest
                    oi[k] = oi[k] if keep else n * off_n + c * off_c
        elif floor:
            _floor(o, row + ow0 * n_chan, (ow1 - ow0) * n_chan, lowest)
        if not (any_empty or first_valid):
            continue
        empty_h = win[1, 1, oh] >= win[1, 2, oh]
        h = win[1, 0, oh] + win[1, 1, oh] * dh
        for ow in range(ow0, ow1):
            k0 = row + ow * n_chan
            if empty_h or win[2, 1, ow] >= win[2, 2, ow]:
                for c in range(n_chan):
                    o[k0 + c] = lowest
                    if want_idx:
                        oi[k0 + c] = empty_idx + use_off * (n * off_n + c * off_c)
                continue
            if first_valid:  # onnx: a NaN first tap is the result
                w = win[2, 0, ow] + win[2, 1, ow] * dw
                for c in range(n_chan):
                    v = flat[np.uint64(at_n + h * xs_h + w * xs_w + c * xs_c)]
                    kv = as_key(v)
                    if kv != kv:
                        o[k0 + c] = v
                        if want_idx:
                            oi[k0 + c] = n * off_n + c * off_c + h * st_h + w * st_w


def separable_nxc_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_separable_nxc`` takes per thread (see its layout)."""
    in_w, n_chan, out_w = in5[4], in5[1], out5[3]  # the output is channels-last: (N, 1, H, W, C)
    top_h, top_w, band, k_h, dh = (int(v) for v in (p[19], p[20], p[35], p[32], p[40]))
    rows_most = int(pure(_band_input_rows)(band, int(p[23]), k_h, dh))
    lanes_h = out_w * n_chan
    elements = ((top_w + 1) * in_w * n_chan + rows_most * lanes_h
                + int(pure(_strip_size)(rows_most, lanes_h, top_h)))
    return elements, elements + band
