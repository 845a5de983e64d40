"""The compiled loops. Private: inputs are validated, views and parameters prepared by ``_launch``.

Both kernels see 3 spatial axes (1-D and 2-D pooling come with unit axes) and describe each axis's
windows by ``win[axis, 0|1|2, o]`` = (position of tap 0, first in-range tap, end of in-range taps),
plus a dilation: one description for MaxPool and AdaptiveMaxPool bins alike. Every output visits its
taps in row-major order, so the first-maximum rule holds by construction.

The input arrives as a flat, C-typed buffer with an offset and element strides for the logical
(N, C, D, H, W) axes, whatever its real layout (transposed, reversed, broadcast): one compiled
specialization per element type. Every load and store goes through an unsigned position into a
whole flat array (input, output, scratch): per-tap row slices, signed offsets and 'A'-typed views
all cost more than the short loops themselves, and only zero-based unit-stride loops vectorize.

The update of a running maximum ``m`` by a tap ``v`` is one rule for every preset:
    take = key(v) > key(m)  or  (nan_takes and isnan(v) and not (hold and isnan(m)))
spec: nan_takes, hold (first NaN stays); torch: nan_takes (last NaN); openvino/onnx: neither.
Presets that start at the first tap (all but openvino's MaxPool) seed ``m`` with it; openvino seeds
``lowest`` and the plane's first index.

Parameters ``p`` (int64, laid out by ``_launch._params``): [0:4] want_idx, seed_lowest, nan_takes,
hold; [4:11] index offset per n, per c, index strides of d, h, w, empty-window index constant,
whether it adds the plane offset; [11] w stride; [12:14] interior w outputs; [14] input width;
[15:18] input d, h, w; [18:21] sparse-table levels; [21] first_valid. MaxPool adds [22:25]
strides, [25:31] interior [lo, hi) per axis, [31:34] kernel, [34] whether a plane's phase rows
are kept, [35] channels gathered together (pool_separable) or output rows per band
(pool_separable_nxc), [36:39] tap 0's position for output 0 per axis, [39:42] dilations, [42]
whether the output is channels-last (pool_separable on NXC data).
``empty`` holds the empty-window value and a value no tap wins against.

Each kernel handles output rows ``[row_lo, row_hi)`` and releases the GIL; ``_launch`` splits the
rows over threads. (``parallel=True`` gave the same speed but doubled cold compilation to ~10 s per
specialization.) Kernels are compiled without reference counting (``_nrt=False``): scratch comes
in as ``work``/``iwork`` (sizes from the ``*_scratch`` functions). Indices are written as int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel
from ._keys import as_key, nan_free
from ._prefetch import LINE, prefetch_read
from ._stores import store_fence, stream_run, streams_out


@njit(inline="always")
def _rules(p):  # type: ignore[no-untyped-def]
    """(want_idx, seed_lowest, nan_takes, hold) from the parameter vector."""
    return p[0] != 0, p[1] != 0, p[2] != 0, p[3] != 0


@njit(inline="always")
def _index_params(p):  # type: ignore[no-untyped-def]
    """(index offset per n, per c, index strides of d, h, w, empty-window index, whether it adds the
    plane's offset) from the parameter vector."""
    return p[4], p[5], p[6], p[7], p[8], p[9], p[10]


@njit(inline="always")
def _row_windows(row, out_d, out_h, win):  # type: ignore[no-untyped-def]
    """For output row (n, od, oh) numbered ``row``: n and the d and h windows (tap 0, first, end)."""
    od, oh = (row // out_h) % out_d, row % out_h
    return (row // (out_d * out_h), win[0, 0, od], win[0, 1, od], win[0, 2, od],
            win[1, 0, oh], win[1, 1, oh], win[1, 2, oh])


@njit(inline="always")
def _wins(kv, km, nan_takes, hold):  # type: ignore[no-untyped-def]
    return (kv > km) | (nan_takes & (kv != kv) & ~(hold & (km != km)))


@njit(inline="always")
def _gather(flat, start, count, stride, dst):  # type: ignore[no-untyped-def]
    # Unsigned positions (always in the buffer): a signed index costs a wraparound check per load.
    for i in range(count):
        dst[i] = flat[np.uint64(start + i * stride)]


@njit(inline="always")
def _update_at(src, s0, dst, d0, dsti, count, f, step, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    """dst[d0 + i] <- src[s0 + i] for i < count where the tap wins; its index is ``f + i*step``.

    Offsets into whole flat arrays, read through unsigned positions: slicing a row per tap cost
    more than the short loop itself (NXC stem: 25 ms -> 13 ms on one thread)."""
    _update_lanes_at(src, s0, 0, dst, d0, 0, dsti, 1, count, f, 0, step, want_idx, nan_takes, hold)


@njit(inline="always")
def _update_lanes_at(src, s0, s_step, dst, d0, d_step, dsti, runs, lanes, f, f_step, step, want_idx, nan_takes,  # type: ignore[no-untyped-def]
                     hold):
    """``runs`` updates of ``lanes`` contiguous elements, in order: run r reads src[s0 + r*s_step + i]
    into dst[d0 + r*d_step + i], index ``f + r*f_step + i*step`` (d_step 0: r taps folded into one
    output). The NaN rule's flags are read at run time: a loop per rule with constant flags was up
    to 30% faster on these loops but, inlined at every call site, doubled cold compilation (the CI
    suite neared 10 minutes)."""
    # Integers: every NaN rule is the same loop. (Flags reassigned, not passed as literals: numba
    # compiles a call in a branch dead for the type too, and a literal is a type of its own.)
    if nan_free(src):
        nan_takes, hold = False, False
    _update_rule(src, s0, s_step, dst, d0, d_step, dsti, runs, lanes, f, f_step, step, want_idx, nan_takes, hold)


@kernel
def _update_two_lanes_at(src, s0, gap, s_step, dst, d0, d_step, dsti, runs, lanes, f, f_gap, f_step, step,  # type: ignore[no-untyped-def]
                         want_idx, nan_takes, hold):
    """``_update_lanes_at`` for two taps per pass, ``gap`` (index ``f_gap``) apart, in order: half the
    loads and stores of the running maxima."""
    if nan_free(src):
        nan_takes, hold = False, False
    for r in range(runs):
        a0, g = s0 + r * s_step, f + r * f_step
        _two_taps(src, a0, a0 + gap, g, g + f_gap, dst, d0 + r * d_step, dsti, lanes, step, want_idx, nan_takes, hold)


@njit(inline="always")
def _two_taps(src, a0, a1, g0, g1, dst, d0, dsti, lanes, step, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    """One pass over dst[d0 + i], i < lanes: tap src[a0 + i] (index g0 + i*step), then src[a1 + i]."""
    if want_idx:
        for i in range(lanes):
            b = np.uint64(d0 + i)
            m, mi = _take(src, a0, i, g0, step, dst[b], dsti[b], nan_takes, hold)
            dst[b], dsti[b] = _take(src, a1, i, g1, step, m, mi, nan_takes, hold)
    else:
        for i in range(lanes):
            b = np.uint64(d0 + i)
            m = _take_value(src, a0, i, dst[b], nan_takes, hold)
            dst[b] = _take_value(src, a1, i, m, nan_takes, hold)


@kernel  # one compiled loop shared by every call site (inlined, compile time tripled)
def _update_rule(src, s0, s_step, dst, d0, d_step, dsti, runs, lanes, f, f_step, step, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    r0 = 0
    if d_step == 0:  # taps folded into one output: two per pass over it, in order
        for r in range(0, runs - 1, 2):
            a0, g = s0 + r * s_step, f + r * f_step
            _two_taps(src, a0, a0 + s_step, g, g + f_step, dst, d0, dsti, lanes, step, want_idx, nan_takes, hold)
        r0 = runs - runs % 2
    for r in range(r0, runs):
        a0, b0, g = s0 + r * s_step, d0 + r * d_step, f + r * f_step
        if want_idx:
            for i in range(lanes):
                b = np.uint64(b0 + i)
                dst[b], dsti[b] = _take(src, a0, i, g, step, dst[b], dsti[b], nan_takes, hold)
        else:
            for i in range(lanes):
                b = np.uint64(b0 + i)
                dst[b] = _take_value(src, a0, i, dst[b], nan_takes, hold)


@njit(inline="always")
def _update_pair_at(src, sa, sb, dst, d0, dsti, count, fa, fb, step, want_idx, nan_takes, hold, sz=-1, fz=0):  # type: ignore[no-untyped-def]
    """Two taps in one pass: dst[d0 + i] takes src[sa + i] (index ``fa + i*step``) then src[sb + i]
    (index ``fb + i*step``) where each wins. Half the loads and stores of the running maxima of two
    passes. With ``sz >= 0`` the pass also seeds: it starts from src[sz + i] (index ``fz + i*step``),
    not from dst."""
    if nan_free(src):  # (see _update_lanes_at)
        nan_takes, hold = False, False
    _update_pair_rule(src, sa, sb, dst, d0, dsti, count, fa, fb, step, want_idx, nan_takes, hold, sz, fz)


@kernel
def _update_pair_rule(src, sa, sb, dst, d0, dsti, count, fa, fb, step, want_idx, nan_takes, hold, sz, fz):  # type: ignore[no-untyped-def]
    if sz < 0:
        _two_taps(src, sa, sb, fa, fb, dst, d0, dsti, count, step, want_idx, nan_takes, hold)
    elif want_idx:
        for i in range(count):
            m, mi = _take(src, sa, i, fa, step, src[np.uint64(sz + i)], fz + i * step, nan_takes, hold)
            dst[np.uint64(d0 + i)], dsti[np.uint64(d0 + i)] = _take(src, sb, i, fb, step, m, mi, nan_takes, hold)
    else:
        for i in range(count):
            m = _take_value(src, sa, i, src[np.uint64(sz + i)], nan_takes, hold)
            dst[np.uint64(d0 + i)] = _take_value(src, sb, i, m, nan_takes, hold)


@njit(inline="always")
def _seed_at(src, s0, dst, d0, dsti, count, f, step, want_idx):  # type: ignore[no-untyped-def]
    """``_seed`` on offsets into flat arrays; ``s0 < 0`` seeds the value ``src[0]`` everywhere."""
    if s0 < 0:
        value = src[0]
        for i in range(count):
            dst[np.uint64(d0 + i)] = value
    else:
        for i in range(count):
            dst[np.uint64(d0 + i)] = src[np.uint64(s0 + i)]
    if want_idx:
        for i in range(count):
            dsti[np.uint64(d0 + i)] = f + i * step


@kernel
def _fold4(src, pos, fidx, dst, d0, dsti, lanes, step, want_idx, nan_takes, hold):  # type: ignore[no-untyped-def]
    """dst[d0 + i] = the fold of taps src[pos[t] + i] (index fidx[t] + i*step), t = 0..3 in order,
    for i < lanes: a window of up to four taps (the last repeated: a tap again changes nothing) in
    one pass over the lanes, the output written once and never read."""
    if nan_free(src):
        nan_takes, hold = False, False
    a0, a1, a2, a3 = pos[0], pos[1], pos[2], pos[3]
    g0, g1, g2, g3 = fidx[0], fidx[1], fidx[2], fidx[3]
    if want_idx:
        # First by the plain "greater wins" rule, noting NaNs: the NaN rule's terms in the loop took
        # twice its instructions (AdaptiveMaxPool 14x14 -> 7x7 NXC with 512 channels). Without a NaN
        # the two rules agree; with one, the run is folded again by the preset's rule.
        if (_fold4_indexed(src, a0, a1, a2, a3, g0, g1, g2, g3, step, dst, dsti, d0, lanes, False, False)
                and (nan_takes or hold)):
            _fold4_indexed(src, a0, a1, a2, a3, g0, g1, g2, g3, step, dst, dsti, d0, lanes, nan_takes, hold)
    else:
        for i in range(lanes):
            m = src[np.uint64(a0 + i)]
            m = _take_value(src, a1, i, m, nan_takes, hold)
            m = _take_value(src, a2, i, m, nan_takes, hold)
            dst[np.uint64(d0 + i)] = _take_value(src, a3, i, m, nan_takes, hold)


@njit(inline="always")
def _fold4_indexed(src, a0, a1, a2, a3, g0, g1, g2, g3, step, dst, dsti, d0, lanes, nan_takes, hold):  # type: ignore[no-untyped-def]
    """_fold4's loop with indices under one rule; whether a tap was NaN."""
    nan = False
    for i in range(lanes):
        m, mi = src[np.uint64(a0 + i)], g0 + i * step
        nan |= _is_nan(src, a0, i)
        m, mi = _take(src, a1, i, g1, step, m, mi, nan_takes, hold)
        nan |= _is_nan(src, a1, i)
        m, mi = _take(src, a2, i, g2, step, m, mi, nan_takes, hold)
        nan |= _is_nan(src, a2, i)
        dst[np.uint64(d0 + i)], dsti[np.uint64(d0 + i)] = _take(src, a3, i, g3, step, m, mi, nan_takes, hold)
        nan |= _is_nan(src, a3, i)
    return nan


@njit(inline="always")
def _from_lowest(flat, taps, nt, o, ob, oi, n_chan, off_c, base, lowest, want_idx):  # type: ignore[no-untyped-def]
    """openvino's fold, which starts at ``lowest``, after _fold4's from tap 0 (``taps``: nt positions,
    then their indices): the two agree wherever the result is above lowest; the other channels (all
    taps at or below lowest, or a NaN tap 0, which held the result) are folded again from lowest, with
    the plane's first index. Seeding lowest and a pass per tap instead cost k2s2 NXC 1.3x."""
    kl = as_key(lowest)
    redo = False  # first a vectorized look (a branch per channel: k2s2 NXC 1.5x the time)
    for c in range(n_chan):
        redo |= not as_key(o[np.uint64(ob + c)]) > kl
    if not redo:
        return
    for c in range(n_chan):
        k = np.uint64(ob + c)
        if as_key(o[k]) > kl:
            continue
        m, mi = lowest, base + c * off_c
        for t in range(nt):
            v = flat[np.uint64(taps[t] + c)]
            if as_key(v) > as_key(m):
                m, mi = v, taps[4 + t] + c * off_c
        o[k] = m
        if want_idx:
            oi[k] = mi


@njit(inline="always")
def _take(src, a, i, g, step, m, mi, nan_takes, hold):  # type: ignore[no-untyped-def]
    """(m, mi) after tap src[a + i] (index g + i*step) arrives."""
    v = src[np.uint64(a + i)]
    return (v, g + i * step) if _wins(as_key(v), as_key(m), nan_takes, hold) else (m, mi)


@njit(inline="always")
def _is_nan(src, a, i):  # type: ignore[no-untyped-def]
    k = as_key(src[np.uint64(a + i)])
    return k != k


@njit(inline="always")
def _take_value(src, a, i, m, nan_takes, hold):  # type: ignore[no-untyped-def]
    v = src[np.uint64(a + i)]
    return v if _wins(as_key(v), as_key(m), nan_takes, hold) else m


# Windows of up to four taps request the input of the output this many positions on along the row,
# on rows of at least 4x as many outputs. One core streamed k2s2 NXC (1x256x256x256) at about
# 14 GB/s from the hardware's own prefetching; with these requests, kernel_ab on one / two threads:
# 0.73x / 0.86x the time (i64 indices 0.78x / 0.66x; f16 1.04-1.06x). Requesting the output lines
# too was 1.07x slower; on short rows (AdaptiveMaxPool 14x14 -> 7x7) the requests cost 1.11x and
# are skipped.
AHEAD_OUTPUTS = 8
# Streamed values of windows of up to four taps: outputs folded a chunk of this many elements at a time
# (32 KB of f32: in L1), a pass per row of taps.
STREAM_CHUNK = 1 << 13


@kernel
def pool_channels_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, out_d, out_h, out_w, n_chan = out.shape
    want_idx, seed_lowest, nan_takes, hold = _rules(p)
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    dd, dh, dw = dil[0], dil[1], dil[2]
    # Strides as locals: per tap the loop does little else, and reloading them from the array
    # after every store (LLVM cannot prove they do not alias ``out``) cost 30% on the stem.
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    o = out.reshape(-1)
    oi = idx.reshape(-1)
    scratch = work
    unit_c = xs_c == 1
    taps = iwork[:8]  # a small window's taps, then their indices
    line = LINE // flat.itemsize
    # How far the next output's taps lie along the input row (AdaptiveMaxPool: about).
    sw_step = (win[2, 0, 1] - win[2, 0, 0]) * xs_w if out_w > 1 else 0
    ahead = AHEAD_OUTPUTS * sw_step if out_w >= 4 * AHEAD_OUTPUTS else 0
    # Values of windows of up to four taps, read from memory: each output's channels are folded in
    # scratch and streamed out past the caches (no read of the output's lines before they are written;
    # k2s2 NXC on 1x256x256x256, kernel alone, one / two threads: 0.84-0.95x / 0.80x the time). Windows
    # of two or more rows of taps fold a chunk of outputs a row of taps at a time (_tap_row_passes).
    stream = streams_out(flat) and not want_idx
    chunk = max(1, STREAM_CHUNK // max(n_chan, 1))  # outputs a chunk of the tap-row passes below
    k_w_max = 0  # the most w taps of any window (the same on every row)
    for ow in range(out_w if stream else 0):
        k_w_max = max(k_w_max, win[2, 2, ow] - win[2, 1, ow])
    for row in range(row_lo, row_hi):
        n, s_d, f_d, e_d, s_h, f_h, e_h = _row_windows(row, out_d, out_h, win)
        base = n * off_n
        x_n = xoff + n * xs_n
        tap_rows = (e_d - f_d) * (e_h - f_h)
        if stream and unit_c and not seed_lowest and 2 <= tap_rows and tap_rows * k_w_max <= 4:
            # Streamed values of small windows: a chunk of outputs at a time, one pass per row of taps,
            # each reading its input row in order (a pass per output read its rows side by side), and
            # one streamed run a chunk instead of one an output. Kernel alone, alternated, one / two
            # threads, input from memory (--evict) / as in a row: k2s2 on 1x256x256x256 0.90-0.97x /
            # 0.89-0.97x, 32x112x112x64 (64 channels) 0.73x / 0.85x from memory, 0.68x / 0.71x in a
            # row; a single row of taps (1x2 windows) was 1.00-1.05x, and keeps the pass per output.
            for c0 in range(0, out_w, chunk):
                c1 = min(c0 + chunk, out_w)
                _tap_row_passes(flat, x_n, s_d, f_d, e_d, s_h, f_h, e_h, win, c0, c1, xs_d, xs_h, xs_w, dd, dh, dw,
                                n_chan, scratch, oi, empty, nan_takes, hold, ahead, line)
                stream_run(scratch, 0, o, (row * out_w + c0) * n_chan, (c1 - c0) * n_chan)
            continue
        for ow in range(out_w):
            s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
            ob = (row * out_w + ow) * n_chan
            if f_d >= e_d or f_h >= e_h or f_w >= e_w:  # an empty window
                _seed_at(empty, -1, o, ob, oi, n_chan, empty_idx + use_off * base, use_off * off_c,
                         want_idx)
                continue
            if unit_c and (e_d - f_d) * (e_h - f_h) * (e_w - f_w) <= 4:
                # Up to four taps (k2s2, AdaptiveMaxPool's 2x2 bins): one pass, the output written
                # once (a pass per row of taps read and wrote it three times: 14x14 -> 7x7 with
                # 512 channels 1.6x slower).
                nt = 0
                for jd in range(f_d, e_d):
                    d = s_d + jd * dd
                    for jh in range(f_h, e_h):
                        h = s_h + jh * dh
                        for jw in range(f_w, e_w):
                            w = s_w + jw * dw
                            taps[nt] = x_n + d * xs_d + h * xs_h + w * xs_w
                            taps[4 + nt] = base + d * st_d + h * st_h + w * st_w
                            nt += 1
                for t in range(nt, 4):
                    taps[t], taps[4 + t] = taps[nt - 1], taps[3 + nt]
                if ahead != 0:
                    for t in range(nt):
                        for e in range(0, n_chan, line):
                            prefetch_read(flat, np.uint64(taps[t] + ahead + e))
                if stream:
                    _fold4(flat, taps[:4], taps[4:], scratch, 0, oi, n_chan, off_c, False, nan_takes, hold)
                    if seed_lowest:
                        _from_lowest(flat, taps, nt, scratch, 0, oi, n_chan, off_c, base, empty[0], False)
                    stream_run(scratch, 0, o, ob, n_chan)
                    continue
                _fold4(flat, taps[:4], taps[4:], o, ob, oi, n_chan, off_c, want_idx, nan_takes, hold)
                if seed_lowest:
                    _from_lowest(flat, taps, nt, o, ob, oi, n_chan, off_c, base, empty[0], want_idx)
                continue
            if seed_lowest:
                _seed_at(empty, -1, o, ob, oi, n_chan, base, off_c, want_idx)
            else:
                d, h, w = s_d + f_d * dd, s_h + f_h * dh, s_w + f_w * dw
                at = x_n + d * xs_d + h * xs_h + w * xs_w
                f = base + d * st_d + h * st_h + w * st_w
                if unit_c:
                    _seed_at(flat, at, o, ob, oi, n_chan, f, off_c, want_idx)
                else:
                    _gather(flat, at, n_chan, xs_c, scratch)
                    _seed_at(scratch, 0, o, ob, oi, n_chan, f, off_c, want_idx)
            for jd in range(f_d, e_d):
                d = s_d + jd * dd
                for jh in range(f_h, e_h):
                    h = s_h + jh * dh
                    at_dh = x_n + d * xs_d + h * xs_h
                    f_dh = base + d * st_d + h * st_h
                    # The seed tap is skipped. With unit-stride channels the row's w taps are ONE
                    # call, folded in order into the output's channels (a call per tap cost more
                    # than the work with the stem's 64 channels).
                    j0 = f_w + 1 if not seed_lowest and jd == f_d and jh == f_h else f_w
                    w = s_w + j0 * dw
                    if unit_c:
                        _update_lanes_at(flat, at_dh + w * xs_w, dw * xs_w, o, ob, 0, oi, e_w - j0, n_chan,
                                         f_dh + w * st_w, dw * st_w, off_c, want_idx, nan_takes, hold)
                        continue
                    for jw in range(j0, e_w):  # strided channels: gathered per tap
                        w = s_w + jw * dw
                        _gather(flat, at_dh + w * xs_w, n_chan, xs_c, scratch)
                        _update_at(scratch, 0, o, ob, oi, n_chan, f_dh + w * st_w, off_c, want_idx, nan_takes, hold)
    if stream:
        store_fence()  # (before the caller reads the output)


@njit(inline="always")
def _tap_row_passes(flat, x_n, s_d, f_d, e_d, s_h, f_h, e_h, win, c0, c1, xs_d, xs_h, xs_w, dd, dh, dw, n_chan,  # type: ignore[no-untyped-def]
                    buf, no_idx, empty, nan_takes, hold, ahead, line):
    """buf[(ow - c0)*n_chan + c] = the values of outputs c0 <= ow < c1 of a row (channels unit-stride),
    their taps folded in row-major order as _fold4 does, a pass over the chunk per row of taps. An
    output without a w tap gets ``empty[0]``. (``no_idx``: an index array the values-only helpers
    never write.)"""
    if nan_free(flat):  # (as the other loops' helpers: integers have one rule)
        nan_takes, hold = False, False
    first = True
    for jd in range(f_d, e_d):
        d = s_d + jd * dd
        for jh in range(f_h, e_h):
            at = x_n + d * xs_d + (s_h + jh * dh) * xs_h
            for ow in range(c0, c1):
                s_w, f_w, e_w = win[2, 0, ow], win[2, 1, ow], win[2, 2, ow]
                b = (ow - c0) * n_chan
                if f_w >= e_w:
                    if first:
                        _seed_at(empty, -1, buf, b, no_idx, n_chan, 0, 0, False)
                    continue
                a = at + (s_w + f_w * dw) * xs_w
                if ahead != 0:
                    for e in range(0, ((e_w - f_w - 1) * dw * xs_w) + n_chan, line):
                        prefetch_read(flat, np.uint64(a + ahead + e))
                j0 = f_w
                if first:
                    _seed_at(flat, a, buf, b, no_idx, n_chan, 0, 0, False)
                    j0 += 1
                for jw in range(j0, e_w):
                    a = at + (s_w + jw * dw) * xs_w
                    for i in range(n_chan):
                        buf[np.uint64(b + i)] = _take_value(flat, a, i, buf[np.uint64(b + i)], nan_takes, hold)
            first = False


@njit(inline="always")
def _tap_runs(win, out_w, tap_lo, tap_hi):  # type: ignore[no-untyped-def]
    """Per w tap jw, the outputs [tap_lo[jw], tap_hi[jw]) it is in range for (a contiguous run);
    returns the run (lo, hi) every tap is in range for, and whether some output has no w tap."""
    tap_lo[:] = 0
    tap_hi[:] = 0
    w_empty = False
    for ow in range(out_w):
        f_w, e_w = win[2, 1, ow], win[2, 2, ow]
        w_empty = w_empty or f_w >= e_w
        for jw in range(f_w, e_w):
            if tap_hi[jw] == 0:
                tap_lo[jw] = ow
            tap_hi[jw] = ow + 1
    lo, hi = 0, out_w
    for jw in range(tap_lo.shape[0]):
        lo, hi = max(lo, tap_lo[jw]), min(hi, tap_hi[jw])
    # (Typed zeros: literal ones made each caller's helpers compile once more for that type.)
    return (lo, hi, w_empty) if lo < hi else (np.int64(0), np.int64(0), w_empty)


@njit(inline="always")
def _split_row(flat, at, xs_w, in_w, sw, plen, buf, slot):  # type: ignore[no-untyped-def]
    """buf[slot + r*plen + i] = row[i*sw + r]: the row's sw phases, each contiguous."""
    if sw == 2 and xs_w == 1:
        # A constant stride lets LLVM vectorize the split (interleaved loads).
        for i in range(in_w // 2):
            buf[np.uint64(slot + i)] = flat[np.uint64(at + 2 * i)]
            buf[np.uint64(slot + plen + i)] = flat[np.uint64(at + 2 * i + 1)]
        if in_w % 2:
            buf[np.uint64(slot + in_w // 2)] = flat[np.uint64(at + in_w - 1)]
    else:
        for r in range(min(sw, in_w)):
            for i in range((in_w - r + sw - 1) // sw):
                buf[np.uint64(slot + r * plen + i)] = flat[np.uint64(at + (i * sw + r) * xs_w)]


def channels_inner_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_channels_inner`` takes per thread: one gathered row or a
    chunk of streamed outputs, and a small window's taps with their indices."""
    return max(out5[4], STREAM_CHUNK), 8
