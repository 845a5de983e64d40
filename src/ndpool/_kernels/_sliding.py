"""Large windows without indices (1-D and 2-D, NCX and NXC): rows streamed through doubling levels.

pool_separable builds whole-plane tables and makes a pass over scratch per level and per axis; on
the k13 SPP plane that was 3-4 GB/s. Here each input row is read once and the rest stays in L1/L2
(units: a band of output rows by a strip of output columns, so the ring below fits in L2):

- w: the row is copied between margins of a value no tap loses to (``never``), so every window has
  all its k taps and no bounds are checked (rows adjacent in memory: their first levels are read
  straight from the input instead, margin taps as ``never``: _direct_level), then folded by doubling,
  level t+1 at position i being
  fold(level t at i, level t at i + 2**t*d): vectorized passes over one row, up to the level t
  with 4 * 2**t >= k. A window is the fold of four level-t values from its start (the last ones
  overlapping: the fold is idempotent). Against doubling up to two halves, one pass fewer (NCX
  SPP 2.9 -> 2.7 ms).
- h: the row's w results enter a ring of the last rows of every level (here up to two halves:
  in four, NXC SPP was 15% slower); when a row arrives, each level gains the row whose taps end
  there. An output row is folded from two rows of one level as soon as its last tap has arrived
  (fewer taps at a border: a lower level).

Output rows are folded into the scratch and streamed out past the caches (_stores: no read of the
output lines, no eviction of the input), and the plain folds are loops here, not calls (a call per
row pushed each array argument as seven words): kernel_ab against 694ce32, k13 and k15 SPP f32 in
both layouts, one thread 0.69-0.80x, two 0.89-1.09x (2026-12-05).

The fold is pool_separable's later-wins rule (w first, then h: row-major order), with the NaN terms
only where a row holds a NaN (a flag per row and level); ties keep the earlier tap. A margin value
can win only where every tap ties with it or is a NaN under a rule that puts NaN at the bottom; the
presets' fix-ups (openvino's start at ``lowest``, onnx's first tap, empty windows) settle both, as
after pool_separable. Without indices only: a margin's index would be wrong.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel, pure
from ._keys import as_key
from ._loops import _rules
from ._prefetch import LINE, prefetch_read, prefetch_write
from ._separable import _combine_run, _later_wins, _level_of
from ._separable_nxc import _finish_band, _floor
from ._stores import STREAMING, store_fence, stream_run

# Input rows requested ahead of the one being folded.
AHEAD = 4


@njit(inline="always")
def _fold2(src, iwork, a, b, dst, o, count, nan, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """dst[o + i] = the later-wins fold of src[a + i] (earlier) and src[b + i] (later): pool_separable's
    _combine_run, with the NaN terms only where the rows hold a NaN (``iwork``: its unused indices).
    Without, a loop of plain maxima here: the call's arguments (each array seven words, pushed) cost
    about a tenth of the k13 SPP kernel's time."""
    if nan:
        _combine_run(src, iwork, a, b - a, 1, dst, iwork, o, count, False, nan_takes, hold, nan_bottom)
    else:
        for i in range(count):
            e, later = src[np.uint64(a + i)], src[np.uint64(b + i)]
            dst[np.uint64(o + i)] = later if as_key(later) > as_key(e) else e


@njit(inline="always")
def _fold4(src, a, b, c, d, step, dst, o, count, nan, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """dst[o + i] = the later-wins fold of src[x + i*step] for x = a, b, c, d (earliest first): plain
    maxima at stride 1 here, in the caller's loop (a call per row: see _fold2), the rest by _fold4_rows."""
    if step == 1 and not nan:
        _fold4_plain(src, a, b, c, d, 1, dst, o, count)
    else:
        _fold4_rows(src, a, b, c, d, step, dst, o, count, nan, nan_takes, hold, nan_bottom)


@kernel  # compiled once and called per row
def _fold4_rows(src, a, b, c, d, step, dst, o, count, nan, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """_fold4 as one compiled loop shared by its call sites."""
    # Without NaN, plain loops at stride 1, 2 (constants) or any: the rule's loop runs a scalar
    # chain per output (k5 s2 on 128x128 NCX planes: 7.1 ms, with these 1.6).
    if not nan:
        if step == 1:
            _fold4_plain(src, a, b, c, d, 1, dst, o, count)
        elif step == 2:
            _fold4_plain(src, a, b, c, d, 2, dst, o, count)
        else:
            _fold4_plain(src, a, b, c, d, step, dst, o, count)
    else:
        nan_takes, nan_bottom = nan & nan_takes, nan & nan_bottom
        for i in range(count):
            j = i * step
            m, v = src[np.uint64(a + j)], src[np.uint64(b + j)]
            m = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m
            v = src[np.uint64(c + j)]
            m = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m
            v = src[np.uint64(d + j)]
            dst[np.uint64(o + i)] = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m


@njit(inline="always")
def _fold4_plain(src, a, b, c, d, step, dst, o, count):  # type: ignore[no-untyped-def]
    for i in range(count):
        j = i * step
        m, v = src[np.uint64(a + j)], src[np.uint64(b + j)]
        m = v if as_key(v) > as_key(m) else m
        v = src[np.uint64(c + j)]
        m = v if as_key(v) > as_key(m) else m
        v = src[np.uint64(d + j)]
        dst[np.uint64(o + i)] = v if as_key(v) > as_key(m) else m


@njit(inline="always")
def _quarter_level(c):  # type: ignore[no-untyped-def]
    """The level t whose folds of 2**t taps cover c taps in four: 2**t * 4 >= c, t as low as can be."""
    t = 0
    while (4 << t) < c:
        t += 1
    return t


@njit(inline="always")
def _quarters(c, t):  # type: ignore[no-untyped-def]
    """Offsets (in taps) of the four level-t folds covering c taps: j * 2**t, the last ones at c - 2**t."""
    last = c - (1 << t)
    return 0, min(1 << t, last), min(2 << t, last), last


@njit(inline="always")
def _sliding_layout(in_h, sw, k_h, k_w, dh, dw, strip, lanes):  # type: ignore[no-untyped-def]
    """(longest padded row, ring rows, levels of h, scratch elements) of a unit of pool_sliding:
    two padded rows of a strip's taps (the w levels ping-pong), then levels x ring rows of a
    strip's outputs (strip x lanes values). The kernel, its scratch size and the launcher's
    choice of units all take them from here."""
    padded = (strip - 1) * sw + (k_w - 1) * dw + 1
    # A row leaves the ring once no later output needs it: (k_h - 1)*dh + 1 rows back, and dh
    # more because with dilation an output's last tap can precede the previous output's.
    ring = min(in_h, (k_h - 1) * dh + 1 + dh)
    top_h = _level_of(k_h)
    return padded, ring, top_h, 2 * padded * lanes + (top_h + 1) * ring * strip * lanes


@njit(inline="always")
def _layout_of(p, lanes):  # type: ignore[no-untyped-def]
    """_sliding_layout from the parameter vector (p[43]: the strip)."""
    return _sliding_layout(p[16], p[24], p[32], p[33], p[40], p[41], p[43], lanes)


@kernel
def pool_sliding(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    channels_last = p[42] != 0
    if channels_last:  # lanes: a position's channels; a unit of work is a band of one image's rows
        n_chan, out_h, out_w = out.shape[4], out.shape[2], out.shape[3]
        lanes = n_chan
    else:  # a band of one plane's rows
        n_chan, out_h, out_w = out.shape[1], out.shape[3], out.shape[4]
        lanes = 1
    in_w = p[17]
    _, seed_lowest, nan_takes, hold = _rules(p)
    nan_bottom = not nan_takes
    sw, k_w = p[24], p[33]
    dh, dw = dil[1], dil[2]
    band, strip = p[35], p[43]  # output rows and columns per unit
    n_bands = (out_h + band - 1) // band
    n_strips = (out_w + strip - 1) // strip
    never = empty[1]
    xs_n, xs_c, xs_h, xs_w = xst[0], xst[1], xst[3], xst[4]
    padded, ring, top_h, _ = _layout_of(p, lanes)
    top_w = _quarter_level(k_w)
    span_w = (k_w - 1) * dw + 1
    ring0 = 2 * padded * lanes
    ring_row = strip * lanes
    o_all = out.reshape(-1)
    for unit in range(row_lo, row_hi):
        plane = unit // (n_bands * n_strips)  # NCX: n * C + c; NXC: n
        oh0 = (unit // n_strips % n_bands) * band
        oh1 = min(oh0 + band, out_h)
        ow0 = (unit % n_strips) * strip
        ow1 = min(ow0 + strip, out_w)
        lanes_out = (ow1 - ow0) * lanes  # one output row of the unit
        # The strip's taps along w, margins included: from its first window's tap 0 to its last's last.
        w0, w1 = win[2, 0, ow0], win[2, 0, ow1 - 1] + span_w
        if channels_last:
            at_plane = xoff + plane * xs_n
        else:
            at_plane = xoff + (plane // n_chan) * xs_n + (plane % n_chan) * xs_c
        o_unit = plane * out_h * out_w * lanes + ow0 * lanes
        # The band's input rows: from its first window's first tap to its last window's last.
        h_first, h_last = p[16], -1
        any_empty = False  # some window of the unit without a tap
        for oh in range(oh0, oh1):
            f, e = win[1, 1, oh], win[1, 2, oh]
            if f < e:
                h_first = min(h_first, win[1, 0, oh] + f * dh)
                h_last = max(h_last, win[1, 0, oh] + (e - 1) * dh)
            else:
                any_empty = True
        for ow in range(ow0, ow1):
            any_empty = any_empty or win[2, 1, ow] >= win[2, 2, ow]
        band_nan = False  # whether a row of the unit holds a NaN (onnx's first taps need one)
        oh = oh0  # the next output row to fold
        c0 = min(max(w0, 0), w1)  # the positions of [w0, w1) in the row (none: an empty range)
        c1 = max(min(w1, in_w), c0)
        contiguous = lanes == 1 and xs_w == 1 or xs_c == 1 and xs_w == lanes
        line = LINE // flat.itemsize
        for r in range(h_first, h_last + 1):
            slot = (r - h_first) % ring
            # Ask for the input row AHEAD rows on, and the output row after the next: the row's
            # passes run in L1 and would leave the line fills idle.
            if contiguous and r + AHEAD <= h_last:
                a = at_plane + (r + AHEAD) * xs_h + c0 * lanes
                for e in range(a, a + (c1 - c0) * lanes, line):
                    prefetch_read(flat, np.uint64(e))
            if oh + 1 < oh1 and not STREAMING:
                a = o_unit + (oh + 1) * out_w * lanes
                for e in range(a, a + lanes_out, line):
                    prefetch_write(o_all, np.uint64(e))
            nan = _w_pass(flat, at_plane + r * xs_h, contiguous, xs_w, xs_c, c0, c1, lanes, w0, w1, work, iwork,
                          top_w, k_w, dw, sw, ow1 - ow0, ring0 + slot * ring_row, never, nan_takes, hold, nan_bottom)
            iwork[slot] = nan
            band_nan |= nan
            for t in range(1, top_h + 1):  # level t gains the row whose 2**t taps end at r
                j = r - ((1 << t) - 1) * dh
                if j < h_first:
                    break
                a = (j - h_first) % ring
                b = (j + (1 << (t - 1)) * dh - h_first) % ring
                nan_ab = iwork[(t - 1) * ring + a] | iwork[(t - 1) * ring + b]
                at = ring0 + (t - 1) * ring * ring_row
                _fold2(work, iwork, at + a * ring_row, at + b * ring_row, work, ring0 + (t * ring + a) * ring_row,
                       lanes_out, nan_ab != 0, nan_takes, hold, nan_bottom)
                iwork[t * ring + a] = nan_ab
            while oh < oh1:  # output rows whose last tap has arrived
                f, e = win[1, 1, oh], win[1, 2, oh]
                lo = win[1, 0, oh] + f * dh
                if f < e and lo + (e - f - 1) * dh > r:
                    break
                if f < e:
                    t = _level_of(e - f)
                    at = ring0 + t * ring * ring_row
                    a, b = (lo - h_first) % ring, (lo + (e - f - (1 << t)) * dh - h_first) % ring
                    nan_ab = iwork[t * ring + a] | iwork[t * ring + b]
                    # Folded into the free start of the scratch (the w pass's rows), then streamed out.
                    _fold2(work, iwork, at + a * ring_row, at + b * ring_row, work, 0, lanes_out, nan_ab != 0,
                           nan_takes, hold, nan_bottom)
                    if seed_lowest:  # openvino's start at lowest
                        _floor(work, 0, lanes_out, empty[0])
                    stream_run(work, 0, o_all, o_unit + oh * out_w * lanes, lanes_out)
                oh += 1
        store_fence()  # (before this job's own reads below, and the caller's)
        first_valid = p[21] != 0 and band_nan
        if any_empty or first_valid:
            _finish_band(o_all, idx.reshape(-1), flat, at_plane, xs_h, xs_w, xs_c, plane, oh0, oh1, ow0, ow1, out_h,
                         out_w, lanes, win, dil, p, empty, False, any_empty, first_valid)


@njit(inline="always")
def _w_pass(flat, at, contiguous, xs_w, xs_c, c0, c1, lanes, w0, w1, work, iwork, top_w, k_w, dw, sw, n_out, o,  # type: ignore[no-untyped-def]
            never, nan_takes, hold, nan_bottom):
    """Positions w0..w1 of input row ``at`` (never outside the row: c0..c1 are in it) folded along
    w into n_out x lanes values at ``o`` of work; whether the row's positions hold a NaN."""
    row_len = (w1 - w0) * lanes
    body, tail = (c0 - w0) * lanes, (c1 - w0) * lanes
    # Contiguous rows: the first levels straight from the input (see _direct_level), unless it
    # holds a NaN, whose rules the copy and its passes below apply.
    direct = min(top_w, 2)
    if contiguous and direct > 0:
        shift = dw * lanes
        count = row_len - ((1 << direct) - 1) * shift
        if direct == 1:
            nan = _direct_level(flat, at + w0 * lanes, body, tail, count, shift, 2, work, 0, never)
        else:
            nan = _direct_level(flat, at + w0 * lanes, body, tail, count, shift, 4, work, 0, never)
        if not nan:
            _levels_and_windows(work, iwork, direct, top_w, k_w, dw, sw, lanes, row_len, n_out, o, False, nan_takes,
                                hold, nan_bottom)
            return False
    for i in range(body):
        work[np.uint64(i)] = never
    nan = False
    if contiguous:
        a = at + c0 * lanes
        for i in range(tail - body):
            v = flat[np.uint64(a + i)]
            work[np.uint64(body + i)] = v
            k = as_key(v)
            nan |= k != k
    else:
        for w in range(c0, c1):
            for c in range(lanes):
                v = flat[np.uint64(at + w * xs_w + c * xs_c)]
                work[np.uint64((w - w0) * lanes + c)] = v
                k = as_key(v)
                nan |= k != k
    for i in range(tail, row_len):
        work[np.uint64(i)] = never
    _levels_and_windows(work, iwork, 0, top_w, k_w, dw, sw, lanes, row_len, n_out, o, nan, nan_takes, hold,
                        nan_bottom)
    return nan


@njit(inline="always")
def _levels_and_windows(work, iwork, t0, top_w, k_w, dw, sw, lanes, row_len, n_out, o, nan, nan_takes, hold,  # type: ignore[no-untyped-def]
                        nan_bottom):
    """From level t0 of the row (at 0 in work), the levels up to top_w by doubling (level t+1 where
    level t is not: 0 and row_len, in turn), then each window of the row as the fold of four values of
    level top_w from its start, into n_out x lanes values at ``o``."""
    src, other = 0, row_len
    for t in range(t0, top_w):
        shift = (1 << t) * dw * lanes
        _fold2(work, iwork, src, src + shift, work, other, row_len - shift, nan, nan_takes, hold, nan_bottom)
        src, other = other, src
    q0, q1, q2, q3 = _quarters(k_w, top_w)
    b, c, d = src + q1 * dw * lanes, src + q2 * dw * lanes, src + q3 * dw * lanes
    if sw == 1 or lanes == 1:  # one run (lanes == 1: stride sw through the row)
        _fold4(work, src, b, c, d, sw, work, o, n_out * lanes, nan, nan_takes, hold, nan_bottom)
    else:
        for ow in range(n_out):
            e = ow * sw * lanes
            _fold4(work, src + e, b + e, c + e, d + e, 1, work, o + ow * lanes, lanes, nan, nan_takes, hold,
                   nan_bottom)


@njit(inline="always")
def _tap_or_never(flat, a0, p, body, tail, never):  # type: ignore[no-untyped-def]
    """Row position p: flat[a0 + p] inside the row's positions [body, tail), ``never`` in its margins."""
    return flat[np.uint64(a0 + p)] if body <= p < tail else never


@njit(inline="always")
def _direct_level(flat, a0, body, tail, count, shift, taps, work, o, never):  # type: ignore[no-untyped-def]
    """work[o + i] = the greater-wins fold of row positions i, i + shift, ... (``taps`` of them: 2 or 4, a
    literal), for i < count, read from the input (position p at flat[a0 + p], margins ``never``);
    whether a NaN was read. The copy of the row between margins and the passes of the levels below
    this one took a load and a store per position each; without them (kernel_ab, one / two threads,
    2026-12-04) k13 SPP NCX 0.89x / 0.88x the kernel's time, NXC 0.97x / 0.95x, k15 NCX 0.91x / 0.97x,
    NXC 1.04x / 0.98x."""
    span = (taps - 1) * shift
    lo = min(max(body, 0), count)  # windows with every tap in the row: [lo, hi)
    hi = max(min(tail - span, count), lo)
    nan = False
    for i in range(lo, hi):  # (no margin test: a loop LLVM keeps in vectors)
        work[np.uint64(o + i)], nan_i = _window_taps(flat, a0, i, shift, taps, body, tail, never, False)
        nan |= nan_i
    for i in range(lo):  # the windows with a tap in the margins
        work[np.uint64(o + i)], nan_i = _window_taps(flat, a0, i, shift, taps, body, tail, never, True)
        nan |= nan_i
    for i in range(hi, count):
        work[np.uint64(o + i)], nan_i = _window_taps(flat, a0, i, shift, taps, body, tail, never, True)
        nan |= nan_i
    return nan


@njit(inline="always")
def _window_taps(flat, a0, i, shift, taps, body, tail, never, margins):  # type: ignore[no-untyped-def]
    """(the greater-wins fold of row positions i, i + shift, ... (``taps`` of them), whether one was NaN)
    for _direct_level; with ``margins`` (a literal), positions outside [body, tail) read as ``never``."""
    m = _tap_or_never(flat, a0, i, body, tail, never) if margins else flat[np.uint64(a0 + i)]
    km = as_key(m)
    nan = km != km
    for j in range(1, taps):
        p = i + j * shift
        v = _tap_or_never(flat, a0, p, body, tail, never) if margins else flat[np.uint64(a0 + p)]
        kv = as_key(v)
        nan |= kv != kv
        m, km = (v, kv) if kv > km else (m, km)
    return m, nan


def sliding_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_sliding`` takes per thread (see _sliding_layout)."""
    channels_last = int(p[42]) != 0
    lanes = out5[4] if channels_last else 1
    _, ring, top_h, elements = pure(_layout_of)([int(v) for v in p], lanes)
    return int(elements), int((top_h + 1) * ring)
