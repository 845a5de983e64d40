"""MaxPool values on 3-D (and 2-D NXC) data one axis at a time, outermost first: every pass a run of
plain maxima.

pool_channel_blocks folds each window's taps in row-major order under the preset's NaN rule: 27 taps
per output for a 3x3x3 window, each a compare and select per lane. Here a unit is one output d slice
(n, od) of every channel:

- d pass: the input slices of the d window folded into S (in_h x in_w x C);
- h pass: S's rows (in_w x C, unit stride) of each output row's window folded into T, one row at a time;
- w pass: T's pixels (C, unit stride) folded into the output row;

3 + 3 + 3 operations per output, each a run of unit-stride "greater wins" maxima that LLVM keeps in
vectors (a max instruction), over scratch that stays in L2.

2-D NXC data is the case of one d tap: the h pass folds the input rows themselves into T (no S to copy
them into), CHUNK bytes of a row at a time, and after each chunk requests a share of the lines that the
next output row reads and this one did not. A core that stops loading to compute leaves its line fills
idle (see _prefetch); the requests keep them busy. The NXC stem (32x64x112x112 k3s2p1), the call on
two threads against pool_channel_blocks: 4.4-4.6 ms against 5.9-6.0, f16 0.75x, bf16 (then
pool_channels_inner) 0.51x; 5-31 channels against pool_channel_runs 0.38-0.75x (2026-12-04).

Outermost first, and "greater wins" whatever the preset, give the window's maximum but not the
first-maximum rule: equal values with other bits (+0 and -0) keep the first in another order, and a
NaN is not handled as the presets say. Every other result is the window's maximum, which has one bit
pattern whatever the order, under every preset (openvino's start at ``lowest`` is a floor applied
after). So the d pass looks for NaNs in what it reads: a unit with any is pooled again by the
exact loop (pool_channel_blocks, or pool_channels_inner below 32 channels), and so is every output
row with a zero result whose window holds a -0 (_order_counts). Both are rare outside of tests (the
tests' data is full of them).

On NCX data (``pool_outer_first_ncx``) a unit is one output d slice of one plane, S and T are a
slice's rows (T one output row at a time, between never-winning margins), the w pass folds T at
the w stride, every output alike (at stride 2 from T split into its even and odd elements, so that
every tap is a unit-stride run: kernel_ab on 2x32x32x64x64 k3s2p1, one / two threads, 0.80x / 0.82x,
f16 0.87x / 0.85x), and the exact loop is pool_width_inner.

Values only (indices need the order), windows never empty, channels (NXC) or w (NCX) at unit stride:
``_launch`` sends nothing else here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._channel_blocks import LANES, pool_channel_blocks
from ._jit import kernel, pure
from ._keys import as_key, is_keyed, nan_free
from ._loops import _rules, channels_inner_scratch, pool_channels_inner
from ._prefetch import LINE, prefetch_read
from ._separable_nxc import _floor
from ._stores import store_fence, stream_run, streams_out
from ._width_inner import pool_width_inner, width_inner_scratch


@njit(inline="always")
def _greater(v, m, keyed):  # type: ignore[no-untyped-def]
    """v if it is greater than m, else m (16-bit floats: compared by their keys, kept as bits)."""
    if keyed:
        return v if as_key(v) > as_key(m) else m
    return v if v > m else m


@njit(inline="always")
def _fold3(src, a, b, c, stride, dst, d0, count, first, check, keyed):  # type: ignore[no-untyped-def]
    """dst[d0 + i] = the greatest of src[a + i*stride], src[b + i*stride], src[c + i*stride] (and
    dst[d0 + i] unless ``first``), for i < count; with ``check``, whether any src value was NaN. Fewer
    taps repeat one: a maximum taken again changes nothing. Three runs a pass: a load and store of dst
    per three taps. (Callers pass ``stride`` as a literal: 1, or 2 for the NCX w pass, whose loads LLVM
    then splits into even and odd elements in registers.)"""
    nan = False  # (a boolean: an integer count halved the loop's vector width in _folds)
    for i in range(count):
        va = src[np.uint64(a + i * stride)]
        vb = src[np.uint64(b + i * stride)]
        vc = src[np.uint64(c + i * stride)]
        m = _greater(vc, _greater(vb, va, keyed), keyed)
        if not first:
            m = _greater(m, dst[np.uint64(d0 + i)], keyed)
        dst[np.uint64(d0 + i)] = m
        if check:
            ka, kb, kc = as_key(va), as_key(vb), as_key(vc)
            nan = nan | (ka != ka) | (kb != kb) | (kc != kc)
    return nan


@njit(inline="always")
def _fold_taps(src, at, step, t0, t1, dst, d0, count, check, keyed, stride=1):  # type: ignore[no-untyped-def]
    """dst[d0 + i] = the greatest of src[at + t*step + i*stride] over taps t in [t0, t1), three a pass."""
    nan = False
    for t in range(t0, t1, 3):
        a = at + t * step
        b = a + step if t + 1 < t1 else a
        c = a + 2 * step if t + 2 < t1 else b
        if t == t0:
            nan |= _fold3(src, a, b, c, stride, dst, d0, count, True, check, keyed)
        else:
            nan |= _fold3(src, a, b, c, stride, dst, d0, count, False, check, keyed)
    return nan


@njit(inline="always")
def _d_pass(flat, at_d, step_d, f_d, e_d, s_buf, rows, xs_row, cols, xs_col, run, check, keyed):  # type: ignore[no-untyped-def]
    """S = the d window's slices (tap t at flat[at_d + t*step_d]) folded, read as rows x cols runs of
    ``run`` elements (input strides xs_row, xs_col; adjacent in S); whether a NaN was read."""
    nan = False
    for r in range(rows):
        for c in range(cols):
            nan |= _fold_taps(flat, at_d + r * xs_row + c * xs_col, step_d, f_d, e_d, s_buf, (r * cols + c) * run,
                              run, check, keyed)
    return nan


@njit(inline="always")
def _h_row(s_buf, h0, win, oh, dh, row_len, t_row, t0, keyed):  # type: ignore[no-untyped-def]
    """T: S's rows (``row_len`` elements, S's first being input row h0) of output row oh's h window
    folded into t_row[t0:]. One row at a time, so T stays in L1 for the w pass (all of T first: 3-D
    k3s2p1 NXC 1.52 -> 1.35 ms, NCX 4.35 -> 2.41 on one thread with the NCX w pass's margins)."""
    s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
    _fold_taps(s_buf, (s_h - h0) * row_len, dh * row_len, f_h, e_h, t_row, t0, row_len, False, keyed)


@njit(inline="always")
def _split_pairs(src, dst, half):  # type: ignore[no-untyped-def]
    """dst[i] = src[2*i], dst[half + i] = src[2*i + 1] for i < half: a row split into its even and odd
    elements (adjacent pairs loaded, split in registers). A run of its own: folded and split in one
    loop (three rows of pairs, two runs of stores), LLVM left the h pass scalar."""
    for i in range(half):
        dst[np.uint64(i)] = src[np.uint64(2 * i)]
        dst[np.uint64(half + i)] = src[np.uint64(2 * i + 1)]


@njit(inline="always")
def _w_pass_phases(t_ph, half, off, dw, k_w, o, ob, count, keyed):  # type: ignore[no-untyped-def]
    """o[ob + j] = the greatest of T[2*j + off + jw*dw] over the taps jw, T split into its even and odd
    elements (T[t] at t_ph[t // 2], or t_ph[half + t // 2] for an odd t), for j < count: three taps a
    pass, each a unit-stride run (at the literal stride 2 from T itself, LLVM left the w pass scalar:
    30% of the call on 2x32x32x64x64 k3s2p1)."""
    for jw in range(0, k_w, 3):
        pa = off + jw * dw
        pb = pa + dw if jw + 1 < k_w else pa
        pc = pa + 2 * dw if jw + 2 < k_w else pb
        a, b, c = (pa & 1) * half + (pa >> 1), (pb & 1) * half + (pb >> 1), (pc & 1) * half + (pc >> 1)
        _fold3(t_ph, a, b, c, 1, o, ob, count, jw == 0, False, keyed)


@njit(inline="always")
def _window_negative_zero(flat, at, win, od, oh, ow, dd, dh, dw, xs_d, xs_h, xs_w):  # type: ignore[no-untyped-def]
    """Whether the window of output (od, oh, ow) holds a -0 (position (0, 0, 0) of its plane, or of its
    channel, at flat[at])."""
    one = np.float32(1)
    for jd in range(win[0, 1, od], win[0, 2, od]):
        for jh in range(win[1, 1, oh], win[1, 2, oh]):
            for jw in range(win[2, 1, ow], win[2, 2, ow]):
                d, h, w = win[0, 0, od] + jd * dd, win[1, 0, oh] + jh * dh, win[2, 0, ow] + jw * dw
                k = as_key(flat[np.uint64(at + d * xs_d + h * xs_h + w * xs_w)])
                if k == 0 and math.copysign(one, k) < 0:
                    return True
    return False


@njit(inline="always")
def _order_counts(flat, o, ob, out_w, lanes, at, win, od, oh, dd, dh, dw, xs_d, xs_h, xs_w):  # type: ignore[no-untyped-def]
    """Whether the outer-first order may have given other bits than row-major order somewhere in an
    output row that read no NaN (o[ob + ow*lanes + c]: NXC with the channels c as lanes at unit
    stride, NCX with one lane): at a zero result whose window holds a -0. Outputs are tested a pixel
    (its lanes) at a time, and windows only of zero results: after a ReLU, half the stem's input is
    +0 and nearly every output row has a zero result (pooling those rows again, or testing their
    rows' inputs for -0, took the NXC stem 5.7 -> 8.7 and 7.5 ms). First one test over the whole row
    (vectorized; with one lane the per-pixel test is a scalar one per output)."""
    if not _again(o, ob, out_w * lanes):
        return False
    for ow in range(out_w):
        if _again(o, ob + ow * lanes, lanes):
            for c in range(lanes):
                if (as_key(o[np.uint64(ob + ow * lanes + c)]) == 0
                        and _window_negative_zero(flat, at + c, win, od, oh, ow, dd, dh, dw, xs_d, xs_h, xs_w)):
                    return True
    return False


@njit(inline="always")
def _again(o, at, count):  # type: ignore[no-untyped-def]
    """Whether some output of o[at:at + count] is a zero (of either sign), where the order counts."""
    again = False
    for i in range(count):
        again = again | (as_key(o[np.uint64(at + i)]) == 0)
    return again


@njit(inline="always")
def _rows_read(win, dh, oh0, oh1):  # type: ignore[no-untyped-def]
    """The input rows [lo, hi) that output rows [oh0, oh1) read (their windows are never empty). Every
    row's, not the first's and the last's: with the dilation past the stride, a window's first or last
    tap in the pads moves its first or last row read past a neighbour's (kernel 2 dilated by 3 at
    stride 1 on 6 rows, pads 2 and 1: output row 0 reads row 1 alone, row 2 reads rows 0 and 3)."""
    lo, hi = win[1, 0, oh0] + win[1, 1, oh0] * dh, 0
    for oh in range(oh0, oh1):
        lo = min(lo, win[1, 0, oh] + win[1, 1, oh] * dh)
        hi = max(hi, win[1, 0, oh] + (win[1, 2, oh] - 1) * dh + 1)
    return lo, hi


# The direct h pass (one d tap) folds a row in chunks of this many bytes, requesting a share of the next
# output row's input lines after each. Kernel alone on the NXC stem (f32), one / two threads: chunks of
# 2048 bytes 9.2-9.4 / 5.1-5.3 ms, 1024 7.4-8.1 / 3.8-4.5, 512 7.5-7.7 / 4.3-5.1, 256 7.1-7.6 / 3.9-4.3,
# 128 9.1 / 4.9-7.5; 256 bytes without the requests 10.7 / 5.7-6.9.
CHUNK = 256


@njit(inline="always")
def _row_direct(flat, at, xs_h, win, oh, dh, dw, row_len, out_w, n_chan, t_row, dst, d0, check, keyed, ahead_at,
                ahead_lines):  # type: ignore[no-untyped-def]
    """dst[d0:d0 + out_w * n_chan]: output row oh, its h window folded straight from the input into T
    (tap 0's row at flat[at], rows xs_h apart, each ``row_len`` adjacent elements) a chunk at a time,
    each output folded from T as soon as its columns are there; ``ahead_lines`` lines from
    flat[ahead_at] requested a share per chunk. Whether a NaN was read.

    Loads and computing interleaved (the w pass of output ow runs while later columns' lines are on
    their way): with all of T folded first, the w pass loaded nothing from memory and the cores waited
    on it apart. Both this and the streamed stores: the NXC stem from memory 0.87x on one thread, 0.85x
    on two (kernel_ab --evict; 8.1 -> 7.1 ms, 6.5 -> 5.6 ms)."""
    s_h, f_h, e_h = win[1, 0, oh], win[1, 1, oh], win[1, 2, oh]
    chunk = CHUNK // flat.itemsize
    chunks = (row_len + chunk - 1) // chunk
    share = (ahead_lines + chunks - 1) // chunks
    line = LINE // flat.itemsize
    nan = False
    done, k = 0, 0  # T's elements folded, chunks folded
    for ow in range(out_w):
        need = (win[2, 0, ow] + (win[2, 2, ow] - 1) * dw + 1) * n_chan  # (windows are never empty here)
        while done < need:
            for e in range(k * share, min((k + 1) * share, ahead_lines)):
                prefetch_read(flat, np.uint64(ahead_at + e * line))
            count = min(chunk, row_len - done)
            nan |= _fold_taps(flat, at + s_h * xs_h + done, dh * xs_h, f_h, e_h, t_row, done, count, check, keyed)
            done += count
            k += 1
        _w_output(t_row, win, dw, ow, n_chan, dst, d0, keyed)
    for e in range(k * share, ahead_lines):  # (the shares of columns no output reads)
        prefetch_read(flat, np.uint64(ahead_at + e * line))
    return nan


@njit(inline="always")
def _band_unit(unit, bands, band, out_d):  # type: ignore[no-untyped-def]
    """(n, first output row, od) of pool_outer_first's unit (n, band of output rows, od), od fastest."""
    n, rest = unit // (bands * out_d), unit % (bands * out_d)
    return n, (rest // out_d) * band, rest % out_d


@njit(inline="always")
def _ahead(unit, oh, oh1, row_hi, bands, band, out_d, win, dd, dh, xoff, xs_n, xs_d, xs_h, row_len, flat):  # type: ignore[no-untyped-def]
    """(where, lines) of the input rows that the job's next output row reads and this one did not:
    the next row of this unit's band, else the next unit's first (rows that are adjacent and undilated
    only; none after the job's last unit)."""
    if dh != 1 or xs_h != row_len:
        return 0, 0
    n, _, od = _band_unit(unit, bands, band, out_d)
    nxt = oh + 1
    if nxt >= oh1:
        if unit + 1 >= row_hi:
            return 0, 0
        n_next, nxt, od_next = _band_unit(unit + 1, bands, band, out_d)
        same = n_next == n and od_next == od and nxt == oh + 1  # (2-D: the next band of the image)
        n, od = n_next, od_next
    else:
        same = True
    lo, hi = _rows_read(win, dh, nxt, nxt + 1)
    if same:  # rows this output row read are in cache
        lo = max(lo, _rows_read(win, dh, oh, oh + 1)[1])
    at = xoff + n * xs_n + (win[0, 0, od] + win[0, 1, od] * dd) * xs_d + lo * xs_h
    line = LINE // flat.itemsize
    return at, (max(0, hi - lo) * row_len + line - 1) // line


@kernel
def pool_outer_first(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, out_d, out_h, out_w, n_chan = out.shape
    _, seed_lowest, _, _ = _rules(p)
    in_w, band = p[17], p[35]
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_d, xs_h, xs_w = xst[0], xst[2], xst[3], xst[4]  # channels: unit stride
    o = out.reshape(-1)
    keyed = is_keyed(flat)
    floats = not nan_free(flat)  # integers: every result exact as it is
    lowest = empty[0]
    row_len = in_w * n_chan  # a row of S and T
    dense = xs_w == n_chan  # an input row's pixels adjacent: one run
    s_rows = band_input_rows(p)
    s_buf = work[:s_rows * row_len]
    t_row = work[s_rows * row_len:(s_rows + 1) * row_len]  # one output row's h window folded: in L1
    pixel_out = out_w * n_chan
    o_row = work[(s_rows + 1) * row_len:(s_rows + 1) * row_len + pixel_out]  # an output row, streamed out
    inner_work = work[(s_rows + 1) * row_len + pixel_out:]
    bands = (out_h + band - 1) // band
    # An input read from memory: each output row is made in o_row, checked there, and streamed out past
    # the caches (no read of the output's lines before they are written; see _stores).
    stream = streams_out(flat)
    # Units (n, band of output rows, od), od fastest: the d window's slices overlap from one unit
    # to the next, and a band's rows of them are still in L2 (whole slices of 64x64 pixels of 32
    # channels were not: every input line was read 1.5 times from L3).
    for unit in range(row_lo, row_hi):
        n, oh0, od = _band_unit(unit, bands, band, out_d)
        oh1 = min(oh0 + band, out_h)
        h0, h1 = _rows_read(win, dh, oh0, oh1)
        s_d, f_d, e_d = win[0, 0, od], win[0, 1, od], win[0, 2, od]
        at_d = xoff + n * xs_n + s_d * xs_d + h0 * xs_h
        # One d tap (2-D pooling) on dense rows: the h pass reads the input itself, with no S to copy
        # it into, and requests the next output row's lines as it goes.
        direct = e_d - f_d == 1 and dense
        nan = False
        if direct:
            at_d += f_d * dd * xs_d - h0 * xs_h  # (tap 0 of the h window is at row s_h)
        elif dense:
            nan = _d_pass(flat, at_d, dd * xs_d, f_d, e_d, s_buf, h1 - h0, xs_h, 1, 0, row_len, floats, keyed)
        else:
            nan = _d_pass(flat, at_d, dd * xs_d, f_d, e_d, s_buf, h1 - h0, xs_h, in_w, xs_w, n_chan, floats, keyed)
        row0 = (n * out_d + od) * out_h  # output row oh0's number is row0 + oh0
        for oh in range(oh0, oh1):
            o_at = (row0 + oh) * pixel_out
            if not direct:
                _h_row(s_buf, h0, win, oh, dh, row_len, t_row, 0, keyed)
                _w_pass(t_row, win, dw, out_w, n_chan, o, o_at, keyed)
                continue
            ahead_at, ahead_lines = _ahead(unit, oh, oh1, row_hi, bands, band, out_d, win, dd, dh, xoff, xs_n, xs_d,
                                           xs_h, row_len, flat)
            if not stream:
                nan |= _row_direct(flat, at_d, xs_h, win, oh, dh, dw, row_len, out_w, n_chan, t_row, o, o_at, floats,
                                   keyed, ahead_at, ahead_lines)
                continue
            row_nan = _row_direct(flat, at_d, xs_h, win, oh, dh, dw, row_len, out_w, n_chan, t_row, o_row, 0, floats,
                                  keyed, ahead_at, ahead_lines)
            if seed_lowest:  # openvino starts at lowest: a floor
                _floor(o_row, 0, pixel_out, lowest)
            # Pooled again where the order mattered (as below, a row at a time, before it is stored).
            if floats and (row_nan or _order_counts(flat, o_row, 0, out_w, n_chan, xoff + n * xs_n, win, od, oh,
                                                    dd, dh, dw, xs_d, xs_h, xs_w)):
                _pool_exact(flat, xoff, xst, out, idx, win, dil, p, empty, row0 + oh, n_chan, inner_work, iwork)
            else:
                stream_run(o_row, 0, o, o_at, pixel_out)
        if stream and direct:
            continue
        if seed_lowest:  # openvino starts at lowest: a floor
            _floor(o, (row0 + oh0) * pixel_out, (oh1 - oh0) * pixel_out, lowest)
        # Pooled again where the order mattered: the whole unit after a NaN, else rows with a zero result
        # whose window holds a -0 (first one test for zeros over the unit's outputs, adjacent: a test
        # per row stayed short loops).
        if not floats or not (nan or _again(o, (row0 + oh0) * pixel_out, (oh1 - oh0) * pixel_out)):
            continue
        for oh in range(oh0, oh1):
            if nan or _order_counts(flat, o, (row0 + oh) * pixel_out, out_w, n_chan, xoff + n * xs_n, win, od, oh,
                                    dd, dh, dw, xs_d, xs_h, xs_w):
                _pool_exact(flat, xoff, xst, out, idx, win, dil, p, empty, row0 + oh, n_chan, inner_work, iwork)
    if stream:
        store_fence()  # (before the caller reads the output)


@njit(inline="always")
def _w_pass(t_row, win, dw, out_w, n_chan, dst, d0, keyed):  # type: ignore[no-untyped-def]
    """dst[d0:d0 + out_w * n_chan]: T's pixels of each output's w window folded."""
    for ow in range(out_w):
        _w_output(t_row, win, dw, ow, n_chan, dst, d0, keyed)


@njit(inline="always")
def _w_output(t_row, win, dw, ow, n_chan, dst, d0, keyed):  # type: ignore[no-untyped-def]
    """dst[d0 + ow * n_chan:][:n_chan]: T's pixels of output ow's w window folded."""
    s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
    _fold_taps(t_row, s_w * n_chan, dw * n_chan, f_w, e_w, dst, d0 + ow * n_chan, n_chan, False, keyed)


@njit(inline="always")
def _pool_exact(flat, xoff, xst, out, idx, win, dil, p, empty, row, n_chan, inner_work, iwork):  # type: ignore[no-untyped-def]
    """Output row ``row`` pooled by the exact loop (row-major order, the preset's NaN rule)."""
    if n_chan >= LANES:
        pool_channel_blocks(flat, xoff, xst, out, idx, win, dil, p, empty, row, row + 1, inner_work, iwork)
    else:
        pool_channels_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row, row + 1, inner_work, iwork)


@njit(inline="always")
def band_input_rows(p):  # type: ignore[no-untyped-def]
    """The most input rows a band of p[35] output rows reads (S's rows in pool_outer_first)."""
    band, in_h, s_h, k_h, d_h = p[35], p[16], p[23], p[32], p[40]
    return min(in_h, (band - 1) * s_h + (k_h - 1) * d_h + 1)


@njit(inline="always")
def _t_layout(p, in_w, out_w):  # type: ignore[no-untyped-def]
    """(before, half): T's margin before the row, and half its length rounded up (its odd elements'
    start once split; T and its split halves take 2 * half elements each)."""
    before, after = _w_margins(p, in_w, out_w)
    return before, (before + in_w + after + 1) // 2


@njit(inline="always")
def _w_margins(p, in_w, out_w):  # type: ignore[no-untyped-def]
    """(before, after): the never-winning elements a row needs on either side so that every w tap of
    every window lies in it (p: the launcher's parameters; the first window starts at p[38])."""
    first, k_w, sw, dw = p[38], p[33], p[11], p[41]
    last = first + (out_w - 1) * sw + (k_w - 1) * dw
    return max(0, -first), max(0, last - (in_w - 1))


@njit(inline="always")
def _unit_window(unit, out_d, n_chan, win, xoff, xs_n, xs_c, xs_d):  # type: ignore[no-untyped-def]
    """(od, where tap 0 of its d window starts in its plane, the window's first and end taps) of
    pool_outer_first_ncx's unit (n, c, od)."""
    plane_no, od = unit // out_d, unit % out_d
    n, c = plane_no // n_chan, plane_no % n_chan
    return od, xoff + n * xs_n + c * xs_c + win[0, 0, od] * xs_d, win[0, 1, od], win[0, 2, od]


# Slices of fewer lines are not requested ahead: a plane's rows are then few and short, and the requests'
# loop per output row cost more than they saved (kernel_ab, 8x16x16x32x32 k3s2p1 NCX 1.33x / 1.36x the
# time on one / two threads, 4x32x8x24x24 1.16x / 1.27x).
AHEAD_MIN_LINES = 128


@njit(inline="always")
def _next_window(unit, row_hi, out_d, n_chan, win, xoff, xs_n, xs_c, xs_d, dd, dense, slice_lines, out_h):  # type: ignore[no-untyped-def]
    """(where the next unit's first d slice starts, its slices, lines to request per output row) for
    pool_outer_first_ncx; no slices after the job's last unit, where a slice's rows are apart, or for
    small slices."""
    if unit + 1 >= row_hi or not dense or slice_lines < AHEAD_MIN_LINES:
        return 0, 0, 0
    od, at_d, f_d, e_d = _unit_window(unit + 1, out_d, n_chan, win, xoff, xs_n, xs_c, xs_d)
    # All but its first slice: with overlapping windows (k3 at d stride 2) that one is this unit's last,
    # in cache, and requesting it too made the kernel slower than no requests (1.09-1.10x); without it,
    # kernel_ab on 2x32x32x64x64 k3s2p1 NCX, one / two threads: 0.86-0.90x / 0.88-0.90x (f16 1.01x /
    # 0.85x, 4x16x16x112x112 0.87x / 0.86x), 2026-12-04.
    first = f_d + 1 if od > 0 else f_d
    slices = max(0, e_d - first)
    return at_d + first * dd * xs_d, slices, (slices * slice_lines + out_h - 1) // out_h


@njit(inline="always")
def _request_share(flat, at, slice_step, slice_lines, line, lo, hi):  # type: ignore[no-untyped-def]
    """Requests lines lo..hi of the slices from flat[at] on (slice_lines lines each, slice_step
    elements apart). One division, not one per line: with a division per line the requests took
    a quarter of the kernel's samples (perf, 2x32x32x64x64 k3s2p1 NCX, one thread)."""
    if lo >= hi:
        return
    s, k = lo // slice_lines, lo % slice_lines
    for _ in range(hi - lo):
        prefetch_read(flat, np.uint64(at + s * slice_step + k * line))
        k += 1
        if k == slice_lines:
            s, k = s + 1, 0


@kernel
def pool_outer_first_ncx(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    n_img, n_chan, out_d, out_h, out_w = out.shape
    _, seed_lowest, _, _ = _rules(p)
    in_h, in_w, sw, k_w = p[16], p[17], p[11], p[33]
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_c, xs_d, xs_h = xst[0], xst[1], xst[2], xst[3]  # w: unit stride
    o = out.reshape(-1)
    keyed = is_keyed(flat)
    floats = not nan_free(flat)
    lowest = empty[0]
    dense = xs_h == in_w  # a slice's rows adjacent: one run
    before, half = _t_layout(p, in_w, out_w)
    off = p[38] + before  # output 0's first tap in T
    s_buf = work[:in_h * in_w]
    # T: one output row's h window folded (in L1), between margins that no tap wins against, so that
    # the w pass folds every output alike, three taps a pass (before: all of T, then the borders one
    # by one and a pass per tap at a run-time stride). 2x32x32x64x64 k3s2p1, kernel alone: one
    # thread 4.35 -> 2.41 ms, two 2.51 -> 1.43.
    t_row = work[in_h * in_w:in_h * in_w + 2 * half]
    t_ph = work[in_h * in_w + 2 * half:in_h * in_w + 4 * half]  # w stride 2: T's even, then odd elements
    inner_work = work[in_h * in_w + 4 * half:]
    for t in range(2 * half):  # the margins (and one past T when its length is odd)
        if t < before or t >= before + in_w:
            t_row[t] = empty[1]
    unit_out = out_h * out_w
    line = LINE // flat.itemsize
    slice_lines = (in_h * in_w + line - 1) // line
    for unit in range(row_lo, row_hi):  # (n, c, od)
        od, at_d, f_d, e_d = _unit_window(unit, out_d, n_chan, win, xoff, xs_n, xs_c, xs_d)
        # The next unit's d window, requested a share per output row while this unit's h and w passes
        # run in L1 (they leave the memory idle otherwise): its first slice's start, the slices, the
        # lines each output row requests.
        ahead_at, ahead_slices, ahead_share = _next_window(unit, row_hi, out_d, n_chan, win, xoff, xs_n, xs_c, xs_d,
                                                           dd, dense, slice_lines, out_h)
        if dense:
            nan = _d_pass(flat, at_d, dd * xs_d, f_d, e_d, s_buf, 1, 0, 1, 0, in_h * in_w, floats, keyed)
        else:
            nan = _d_pass(flat, at_d, dd * xs_d, f_d, e_d, s_buf, in_h, xs_h, 1, 0, in_w, floats, keyed)
        ub = unit * unit_out
        for oh in range(out_h):
            _request_share(flat, ahead_at, dd * xs_d, slice_lines, line, oh * ahead_share,
                           min((oh + 1) * ahead_share, ahead_slices * slice_lines))
            _h_row(s_buf, 0, win, oh, dh, in_w, t_row, before, keyed)
            if sw == 2:
                _split_pairs(t_row, t_ph, half)
                _w_pass_phases(t_ph, half, off, dw, k_w, o, ub + oh * out_w, out_w, keyed)
            else:
                _fold_taps(t_row, off, dw, 0, k_w, o, ub + oh * out_w, out_w, False, keyed, sw)
        if seed_lowest:  # openvino starts at lowest: a floor
            _floor(o, ub, unit_out, lowest)
        # Pooled again where the order mattered (see pool_outer_first): first one test over the unit.
        if not floats or not (nan or _again(o, ub, unit_out)):
            continue
        plane = at_d - win[0, 0, od] * xs_d
        for oh in range(out_h):
            if nan or _order_counts(flat, o, ub + oh * out_w, out_w, 1, plane, win, od, oh, dd, dh, dw, xs_d, xs_h,
                                    1):
                row = unit * out_h + oh
                pool_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row, row + 1, inner_work, iwork)


def outer_first_ncx_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_outer_first_ncx`` takes per thread: S, a row of T with
    its margins (rounded up to even) and its even and odd halves, and pool_width_inner's own."""
    in_h, in_w = in5[3], in5[4]
    _, half = pure(_t_layout)(p, in_w, out5[4])
    inner = width_inner_scratch(p, in5, out5)
    return in_h * in_w + 4 * half + inner[0], inner[1]


def outer_first_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_outer_first`` takes per thread: S and T, and the exact
    loops' own (pool_channels_inner's: pool_channel_blocks takes none)."""
    in_w, n_chan = in5[4], out5[4]
    inner = channels_inner_scratch(p, in5, out5)
    return (pure(band_input_rows)(p) + 1) * in_w * n_chan + out5[3] * n_chan + inner[0], inner[1]
