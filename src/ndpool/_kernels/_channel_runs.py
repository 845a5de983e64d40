"""MaxPool on NXC data (channels adjacent in memory): each tap as one update of a run of outputs.

``pool_channels_inner`` takes its taps output by output: one short loop call per (output, tap),
which with 32 channels (the 3-D workload) costs more than the work. Here, per output row
(n, od, oh) and tap (jd, jh, jw), the outputs [a, b) the tap is in range for are updated by ONE call:
b - a runs of C contiguous channels, the input pixels sw*C apart. This is ``pool_width_inner``'s
order with a pixel's channels as the lanes: each output is first seeded with its own first in-range
tap, then takes the taps in row-major order (the seed tap again changes nothing), so the first-maximum
rule holds. Long rows go in chunks whose values and indices stay in L1.

Needs unit-stride channels and MaxPool's regular windows (tap 0 of output ow at ow*sw + s0);
AdaptiveMaxPool bins and strided channels take ``pool_channels_inner``.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from ._loops import (
    _index_params,
    _row_windows,
    _rules,
    _seed_at,
    _tap_runs,
    _update_lanes_at,
    _update_two_lanes_at,
)

# Output elements (pixels x channels) per pass of the taps.
CHUNK_ELEMENTS = 2048


@kernel
def pool_channel_runs(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, out_d, out_h, out_w, n_chan = out.shape
    want_idx, seed_lowest, nan_takes, hold = _rules(p)
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    sw, k_w = p[11], p[33]
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_d, xs_h, xs_w = xst[0], xst[2], xst[3], xst[4]  # channels: unit stride
    o = out.reshape(-1)
    oi = idx.reshape(-1)
    tap_lo, tap_hi = iwork[:k_w], iwork[k_w:2 * k_w]
    lo, hi, w_empty = _tap_runs(win, out_w, tap_lo, tap_hi)
    s0 = win[2, 0, 0]  # tap 0 of output ow sits at ow*sw + s0
    chunk = max(1, CHUNK_ELEMENTS // max(n_chan, 1))
    for row in range(row_lo, row_hi):
        n, s_d, f_d, e_d, s_h, f_h, e_h = _row_windows(row, out_d, out_h, win)
        base = n * off_n
        x_n = xoff + n * xs_n
        ob = row * out_w * n_chan
        if f_d >= e_d or f_h >= e_h:  # every window of the row is empty
            for ow in range(out_w):
                _seed_at(empty, -1, o, ob + ow * n_chan, oi, n_chan, empty_idx + use_off * base,
                         use_off * off_c, want_idx)
            continue
        if seed_lowest:  # openvino: lowest, with the plane's first index
            for ow in range(out_w):
                _seed_at(empty, -1, o, ob + ow * n_chan, oi, n_chan, base, off_c, want_idx)
        for c_lo in range(0, out_w, chunk):
            c_hi = min(c_lo + chunk, out_w)
            run_lo, run_hi = max(lo, c_lo), min(hi, c_hi)
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    at = x_n + d * xs_d + h * xs_h
                    fb = base + d * st_d + h * st_h
                    if jd == f_d and jh == f_h and not seed_lowest:
                        for ow in range(c_lo, c_hi):  # each output's own first in-range tap
                            f_w, e_w = win[2, 1, ow], win[2, 2, ow]
                            if f_w < e_w:
                                w = win[2, 0, ow] + f_w * dw
                                _seed_at(flat, at + w * xs_w, o, ob + ow * n_chan, oi, n_chan, fb + w * st_w,
                                         off_c, want_idx)
                    # The run all taps share, two taps per pass; then each tap's own ends.
                    if run_lo < run_hi:
                        w = run_lo * sw + s0
                        for jw in range(0, k_w - 1, 2):
                            _update_two_lanes_at(flat, at + (w + jw * dw) * xs_w, dw * xs_w, sw * xs_w, o,
                                                 ob + run_lo * n_chan, n_chan, oi, run_hi - run_lo, n_chan,
                                                 fb + (w + jw * dw) * st_w, dw * st_w, sw * st_w, off_c, want_idx,
                                                 nan_takes, hold)
                        if k_w % 2:
                            jw = k_w - 1
                            _update_lanes_at(flat, at + (w + jw * dw) * xs_w, sw * xs_w, o, ob + run_lo * n_chan,
                                             n_chan, oi, run_hi - run_lo, n_chan, fb + (w + jw * dw) * st_w,
                                             sw * st_w, off_c, want_idx, nan_takes, hold)
                    for jw in range(k_w):
                        shift = s0 + jw * dw
                        for a, b in ((max(tap_lo[jw], c_lo), min(lo, tap_hi[jw], c_hi)),  # before the run
                                     (max(hi, tap_lo[jw], c_lo), min(tap_hi[jw], c_hi))):  # after it
                            if a < b:
                                w = a * sw + shift
                                _update_lanes_at(flat, at + w * xs_w, sw * xs_w, o, ob + a * n_chan, n_chan, oi,
                                                 b - a, n_chan, fb + w * st_w, sw * st_w, off_c, want_idx,
                                                 nan_takes, hold)
        if w_empty:  # outputs whose window has no tap along w
            for ow in range(out_w):
                if win[2, 1, ow] >= win[2, 2, ow]:
                    _seed_at(empty, -1, o, ob + ow * n_chan, oi, n_chan, empty_idx + use_off * base,
                             use_off * off_c, want_idx)


def channel_runs_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_channel_runs`` takes per thread: the taps' output runs."""
    return 0, 2 * int(p[33])
