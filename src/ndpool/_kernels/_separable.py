"""Large windows: separable passes per axis, a cost per output that does not grow with the kernel
size (w along each row through sparse tables of maxima; h and d, vectorized across a strip of
lanes, by van Herk/Gil-Werman running maxima when taps are adjacent, else through tables).

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
level t is one contiguous, vectorized pass over the (positions x lanes) array.
Cost per plane: O(plane * log2(k)) per axis (O(plane) by running maxima), against O(plane * k) for
the direct loop. (Running maxima along a row are a serial chain, one element at a time: the w pass
keeps its tables, which vectorize along the row.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel, pure
from ._keys import as_key, nan_free
from ._loops import _index_params, _rules


@njit(inline="always")
def _later_wins(kv, km, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    return ((kv > km) | (nan_takes & (kv != kv) & ~(hold & (km != km)))
            | (nan_bottom & (km != km) & (kv == kv)))


# Lanes per strip of the h and d passes: (levels) x (positions) x STRIP values and indices in L2.
STRIP = 64
# Lanes per strip of van Herk/Gil-Werman (two arrays of positions x lanes): wider strips, fewer calls.
STRIP_RUNNING = 256


@njit(inline="always")
def _strip_size(n, lanes, top):  # type: ignore[no-untyped-def]
    """Scratch of a strip pass over (n positions x lanes): a sparse table or the running maxima."""
    return n * max((top + 1) * min(STRIP, lanes), 2 * min(STRIP_RUNNING, lanes))


@njit(inline="always")
def _levels(val, idx, base, n, lanes, dil, top, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Fill levels 1..top of the table at ``base`` (level t at base + t*n*lanes) from level 0."""
    size = n * lanes
    for t in range(top):
        shift = (1 << t) * dil * lanes
        _combine_run(val, idx, base + t * size, shift, 1, val, idx, base + (t + 1) * size,
                     max(size - shift, 0), want_idx, nan_takes, hold, nan_bottom)


@kernel  # one compiled loop nest shared by every call site (inlined, it tripled compile time)
def _combine_run(val, idx, a, gap, step, out, outi, o, count, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """out[o + i] = the later-wins fold of val[a + i*step] (earlier) and val[a + i*step + gap]
    (later), for i < count."""
    # The rule's flags are read at run time: a loop per rule (constants) was up to 30% faster but,
    # inlined at every call site, doubled the kernel's compile time. Integers have one rule.
    # (pool_sliding passes its rules only for rows that hold a NaN: without, the plain loop.)
    if nan_free(val) or not (nan_takes or nan_bottom):
        _combine_rule(val, idx, a, gap, step, out, outi, o, count, want_idx, False, False, False)
    else:
        _combine_rule(val, idx, a, gap, step, out, outi, o, count, want_idx, nan_takes, hold, nan_bottom)


@njit(inline="always")
def _combine_rule(val, idx, a, gap, step, out, outi, o, count, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    if want_idx:
        for i in range(count):
            x, y, k = np.uint64(a + i * step), np.uint64(a + i * step + gap), np.uint64(o + i)
            e, later = val[x], val[y]
            ie, ilater = idx[x], idx[y]  # (both loaded: a conditional load is a branch, mispredicted)
            take = _later_wins(as_key(later), as_key(e), nan_takes, hold, nan_bottom)
            out[k] = later if take else e
            outi[k] = ilater if take else ie
    else:
        for i in range(count):
            x, y = np.uint64(a + i * step), np.uint64(a + i * step + gap)
            e, later = val[x], val[y]
            out[np.uint64(o + i)] = later if _later_wins(as_key(later), as_key(e), nan_takes, hold,
                                                         nan_bottom) else e


@njit(inline="always")
def _level_of(c):  # type: ignore[no-untyped-def]
    """The table level t with 2**t <= c < 2**(t+1)."""
    t = 0
    while (2 << t) <= c:
        t += 1
    return t


@kernel  # compiled once and called (a loop of calls itself: inlining saved nothing)
def _query(val, idx, base, n, lanes, dil, start, first, end, o_lo, o_hi, out, outi, o0, o_stride, want_idx,
           nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """out[o0 + o*o_stride + i] = the fold over window o's in-range taps, for each lane i and
    o_lo <= o < o_hi (windows with none are skipped)."""
    size = n * lanes
    for o in range(o_lo, o_hi):
        c = end[o] - first[o]
        if c <= 0:
            continue
        t = _level_of(c)
        p0 = start[o] + first[o] * dil
        a = base + t * size + p0 * lanes
        b = base + t * size + (p0 + (c - (1 << t)) * dil) * lanes
        _combine_run(val, idx, a, b - a, 1, out, outi, o0 + o * o_stride, lanes, want_idx, nan_takes,
                     hold, nan_bottom)


@njit(inline="always")
def _query_row(val, idx, n, lanes, dil, stride, start, first, end, n_out, lo, hi, k, out, outi, o0, want_idx,
               nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """The w pass's query of a row's table (positions x lanes at val[0:], outputs at o0 with
    ``lanes`` values each): outputs [lo, hi) have all k taps, hence one level and two reads at a
    fixed distance, one vectorized run when they are consecutive in memory (one lane, or stride 1).
    The others one by one."""
    run = hi > lo and (lanes == 1 or stride == 1)
    lo, hi = (lo, hi) if run else (n_out, n_out)
    _query(val, idx, 0, n, lanes, dil, start, first, end, 0, lo, out, outi, o0, lanes, want_idx, nan_takes, hold,
           nan_bottom)
    if run:
        t = _level_of(k)
        _combine_run(val, idx, (t * n + start[lo]) * lanes, (k - (1 << t)) * dil * lanes, stride, out, outi,
                     o0 + lo * lanes, (hi - lo) * lanes, want_idx, nan_takes, hold, nan_bottom)
    _query(val, idx, 0, n, lanes, dil, start, first, end, hi, n_out, out, outi, o0, lanes, want_idx, nan_takes,
           hold, nan_bottom)


@kernel  # compiled once and called: inlined at its four call sites it took 8 s more to compile
def _strip_pass(val, idx, src, n, lanes, tab, dil, top, k, start, first, end, n_out, out, outi, o0,
                want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Reduce (n positions x lanes) at ``src`` along the positions into (n_out x lanes) at ``o0``
    of ``out``, STRIP lanes at a time: by van Herk/Gil-Werman's running maxima for windows of k >= 4
    adjacent taps, otherwise through a sparse table at ``tab``."""
    if dil == 1 and top >= 2:
        for c0 in range(0, lanes, STRIP_RUNNING):
            cs = min(STRIP_RUNNING, lanes - c0)
            _running_pass(val, idx, src + c0, lanes, n, cs, tab, k, start, first, end, n_out, out, outi,
                          o0 + c0, lanes, want_idx, nan_takes, hold, nan_bottom)
        return
    for c0 in range(0, lanes, STRIP):
        cs = min(STRIP, lanes - c0)
        for pos in range(n):
            a, b = src + pos * lanes + c0, tab + pos * cs
            for i in range(cs):
                val[np.uint64(b + i)] = val[np.uint64(a + i)]
            if want_idx:
                for i in range(cs):
                    idx[np.uint64(b + i)] = idx[np.uint64(a + i)]
        _levels(val, idx, tab, n, cs, dil, top, want_idx, nan_takes, hold, nan_bottom)
        _query(val, idx, tab, n, cs, dil, start, first, end, 0, n_out, out, outi, o0 + c0, lanes, want_idx,
               nan_takes, hold, nan_bottom)


@njit(inline="always")
def _running_pass(val, idx, src, pstride, n, cs, tab, k, start, first, end, n_out, out, outi, o0, o_stride,
                  want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Van Herk/Gil-Werman over positions in blocks of k (k >= every window's tap count, taps
    adjacent): g = the running fold from each block's start, h = the running fold to its end
    (built backwards: the later-wins rule is associative, so the grouping does not matter). A
    window [lo, hi) spanning two blocks is combine(h[lo], g[hi - 1]). A MaxPool window has k taps
    unless 0 or n clips it, so one inside a single block starts at the block's start (g[hi - 1])
    or ends at its end or at n (h[lo]). Three passes whatever k, against a copy, log2(k) table
    levels and a query. Position p of lane i is val[src + p*pstride + i]."""
    g, h = tab, tab + n * cs
    for p in range(n):
        a = src + p * pstride
        if p % k == 0:  # a block starts: g = x (a tap folded with itself is itself)
            _combine_run(val, idx, a, 0, 1, val, idx, g + p * cs, cs, want_idx, nan_takes, hold, nan_bottom)
        else:
            e = g + (p - 1) * cs
            _combine_run(val, idx, e, a - e, 1, val, idx, g + p * cs, cs, want_idx, nan_takes, hold, nan_bottom)
    for p in range(n - 1, -1, -1):
        a = src + p * pstride
        if p % k == k - 1 or p == n - 1:
            _combine_run(val, idx, a, 0, 1, val, idx, h + p * cs, cs, want_idx, nan_takes, hold, nan_bottom)
        else:
            _combine_run(val, idx, a, h + (p + 1) * cs - a, 1, val, idx, h + p * cs, cs, want_idx, nan_takes, hold,
                         nan_bottom)
    for o in range(n_out):
        lo, hi = start[o] + first[o], start[o] + end[o]
        at = o0 + o * o_stride
        if hi <= lo:
            continue
        if lo // k != (hi - 1) // k:
            a = h + lo * cs
            _combine_run(val, idx, a, g + (hi - 1) * cs - a, 1, out, outi, at, cs, want_idx, nan_takes, hold,
                         nan_bottom)
        elif lo % k == 0:
            _combine_run(val, idx, g + (hi - 1) * cs, 0, 1, out, outi, at, cs, want_idx, nan_takes, hold, nan_bottom)
        else:  # inside one block, not from its start: the window ends at n (see above)
            _combine_run(val, idx, h + lo * cs, 0, 1, out, outi, at, cs, want_idx, nan_takes, hold, nan_bottom)


# Units of work: (n, block of channels). With channels adjacent in memory (NXC), a block's planes
# are first gathered into scratch together, so each input line is fetched once per block rather
# than once per channel (SPP on NXC: 26 -> 11 ms); otherwise planes are read in place.
@kernel
def pool_separable(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    n_chan, out_d, out_h, out_w = _out_dims(out, p)
    in_d, in_h, in_w = p[15], p[16], p[17]
    block = p[35]
    n_blocks = (n_chan + block - 1) // block
    plane_in = in_d * in_h * in_w
    # Scratch: the tables, the unit's result planes (channels-last outputs), the gathered planes.
    total = out_d * out_h * out_w
    channels_last = p[42] != 0
    res = _tables_size(p, out_d, out_h, out_w)
    tb = res + (block * total if channels_last else 0)
    want_idx = _rules(p)[0]
    for unit in range(row_lo, row_hi):
        n = unit // n_blocks
        c0 = (unit % n_blocks) * block
        count = min(block, n_chan - c0)
        at0 = xoff + n * xst[0] + c0 * xst[1]
        if block == 1:
            _separable_plane(flat, at0, xst[2], xst[3], xst[4], n, c0, out, idx, win, dil, p, empty, work,
                             iwork, res)
            _scatter_channels(work, iwork, res, total, count, out, idx, n, c0, channels_last, want_idx)
            continue
        xs_c, xs_w = xst[1], xst[4]  # locals: reloaded after every store otherwise
        for d in range(in_d):
            for h in range(in_h):
                at = at0 + d * xst[2] + h * xst[3]
                to = tb + (d * in_h + h) * in_w
                for i in range(count):
                    for w in range(in_w):
                        work[np.uint64(to + i * plane_in + w)] = flat[np.uint64(at + w * xs_w + i * xs_c)]
        for i in range(count):
            _separable_plane(work, tb + i * plane_in, in_h * in_w, in_w, 1, n, c0 + i, out, idx, win, dil,
                             p, empty, work, iwork, res + i * total)
        _scatter_channels(work, iwork, res, total, count, out, idx, n, c0, channels_last, want_idx)


@njit(inline="always")
def _scatter_channels(work, iwork, res, total, count, out, idx, n, c0, channels_last, want_idx):  # type: ignore[no-untyped-def]
    """A channels-last output takes the unit's ``count`` result planes (at ``res`` in scratch), a
    pixel's channels at a time: each output line is written once per unit, not once per channel."""
    if not channels_last:
        return
    n_chan = out.shape[4]
    o = out.reshape(-1)
    oi = idx.reshape(-1)
    for k in range(total):
        at = (n * total + k) * n_chan + c0
        for i in range(count):
            o[np.uint64(at + i)] = work[np.uint64(res + i * total + k)]
    if want_idx:
        for k in range(total):
            at = (n * total + k) * n_chan + c0
            for i in range(count):
                oi[np.uint64(at + i)] = iwork[np.uint64(res + i * total + k)]


@njit(inline="always")
def _out_dims(out, p):  # type: ignore[no-untyped-def]
    """(channels, out_d, out_h, out_w) of the output, channels-last (p[42]) or not."""
    if p[42] != 0:
        return out.shape[4], out.shape[1], out.shape[2], out.shape[3]
    return out.shape[1], out.shape[2], out.shape[3], out.shape[4]


@njit(inline="always")
def _tables_size(p, out_d, out_h, out_w):  # type: ignore[no-untyped-def]
    """Scratch of one plane's passes (see _separable_plane); the same formula as separable_scratch."""
    in_d, in_h, in_w, top_d, top_h, top_w = p[15], p[16], p[17], p[18], p[19], p[20]
    one_d = in_d == 1 and out_d == 1
    return ((top_w + 1) * in_w + in_h * out_w + (0 if one_d else in_d * out_h * out_w)
            + _strip_size(in_h, out_w, top_h) + (0 if one_d else _strip_size(in_d, out_h * out_w, top_d)))


@kernel
def _separable_plane(src, at_plane, xs_d, xs_h, xs_w, n, c, out, idx, win, dil, p, empty, work, iwork, res):  # type: ignore[no-untyped-def]
    """Pool plane (n, c), read from ``src`` at ``at_plane`` with element strides xs_*; a channels-last
    output's plane is left in scratch at ``res``."""
    n_chan, out_d, out_h, out_w = _out_dims(out, p)
    channels_last = p[42] != 0
    in_d, in_h, in_w = p[15], p[16], p[17]
    top_d, top_h, top_w = p[18], p[19], p[20]
    want_idx, _, nan_takes, hold = _rules(p)
    nan_bottom = not nan_takes
    sw, w_lo, w_hi = p[24], p[29], p[30]
    k_d, k_h, k_w = p[31], p[32], p[33]
    any_empty = False  # some output window lacks in-range taps on some axis
    for axis in range(3):
        for o_ in range((out_d, out_h, out_w)[axis]):
            any_empty = any_empty or win[axis, 1, o_] >= win[axis, 2, o_]
    off_n, off_c, st_d, st_h, st_w, _, _ = _index_params(p)
    dd, dh, dw = dil[0], dil[1], dil[2]
    total = out_d * out_h * out_w
    # Results go straight into an NCX output's plane; for a channels-last output, into scratch
    # (pool_separable scatters them).
    o_all = work if channels_last else out.reshape(-1)
    oi_all = iwork if channels_last else idx.reshape(-1)
    # Scratch (values in work, indices at the same offsets in iwork): the w table of one row, the
    # w pass's output for one d slice (h pass input), the h pass's output (d pass input), and the
    # h and d strip tables. With one d position the h pass writes the output plane directly.
    one_d = in_d == 1 and out_d == 1
    hb = (top_w + 1) * in_w
    db = hb + in_h * out_w
    th = db + (0 if one_d else in_d * out_h * out_w)
    td = th + _strip_size(in_h, out_w, top_h)
    base = n * off_n + c * off_c
    ob = res if channels_last else (n * n_chan + c) * total
    for d in range(in_d):
        for h in range(in_h):
            at = at_plane + d * xs_d + h * xs_h
            for w in range(in_w):
                work[w] = src[np.uint64(at + w * xs_w)]
            if want_idx:
                fb = d * st_d + h * st_h
                for w in range(in_w):
                    iwork[w] = fb + w * st_w
            _levels(work, iwork, 0, in_w, 1, dw, top_w, want_idx, nan_takes, hold, nan_bottom)
            _query_row(work, iwork, in_w, 1, dw, sw, win[2, 0], win[2, 1], win[2, 2], out_w, w_lo, w_hi,
                       k_w, work, iwork, hb + h * out_w, want_idx, nan_takes, hold, nan_bottom)
        if one_d:
            _strip_pass(work, iwork, hb, in_h, out_w, th, dh, top_h, k_h, win[1, 0], win[1, 1], win[1, 2],
                        out_h, o_all, oi_all, ob, want_idx, nan_takes, hold, nan_bottom)
        else:
            _strip_pass(work, iwork, hb, in_h, out_w, th, dh, top_h, k_h, win[1, 0], win[1, 1], win[1, 2],
                        out_h, work, iwork, db + d * out_h * out_w, want_idx, nan_takes, hold, nan_bottom)
    if not one_d:
        _strip_pass(work, iwork, db, in_d, out_h * out_w, td, dd, top_d, k_d, win[0, 0], win[0, 1],
                    win[0, 2], out_d, o_all, oi_all, ob, want_idx, nan_takes, hold, nan_bottom)
    o = o_all[ob:ob + total]
    oi = oi_all[ob:ob + total] if want_idx else oi_all
    _finish_plane(o, oi, src, at_plane, xs_d, xs_h, xs_w, win, dil, out_d, out_h, out_w, p, empty, base, any_empty,
                  p[21] != 0, oi)


@kernel  # called once per plane; shared by pool_separable and pool_folds
def _finish_plane(o, oi, src, at_plane, xs_d, xs_h, xs_w, win, dil, out_d, out_h, out_w, p, empty, base, any_empty,  # type: ignore[no-untyped-def]
                  first_valid, rel):
    """A plane's outputs ``o`` (indices ``rel`` relative to the plane: ``oi`` itself, or narrower
    slots) folded by the later-wins rule become the preset's: its start, the onnx first tap, the
    plane's index offset (``oi`` = ``rel`` + the offset), empty windows. The plane is read from ``src``
    at ``at_plane`` for the first taps. ``first_valid``: onnx's rule, where some tap may be NaN (a
    caller that knows none is passes False: the check is a loop per output)."""
    want_idx, seed_lowest, _, _ = _rules(p)
    _, _, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    dd, dh, dw = dil[0], dil[1], dil[2]
    lowest = empty[0]
    total = out_d * out_h * out_w
    # The presets' starts and empty windows. Whole-plane passes where possible: a per-output
    # loop here cost more than the tables themselves.
    if seed_lowest:  # openvino: a result not above ``lowest`` gives lowest and the plane's first
        for k in range(total):
            keep = as_key(o[k]) > as_key(lowest)
            o[k] = o[k] if keep else lowest
            if want_idx:
                rel[k] = rel[k] if keep else 0
    if first_valid:  # onnx: a NaN first tap is the result (empty windows have none)
        for od in range(out_d):
            d = win[0, 0, od] + win[0, 1, od] * dd
            for oh in range(out_h):
                h = win[1, 0, oh] + win[1, 1, oh] * dh
                for ow in range(out_w):
                    if (win[0, 1, od] >= win[0, 2, od] or win[1, 1, oh] >= win[1, 2, oh]
                            or win[2, 1, ow] >= win[2, 2, ow]):
                        continue
                    w = win[2, 0, ow] + win[2, 1, ow] * dw
                    v = src[np.uint64(at_plane + d * xs_d + h * xs_h + w * xs_w)]
                    kv = as_key(v)
                    if kv != kv:
                        k = (od * out_h + oh) * out_w + ow
                        o[k] = v
                        if want_idx:
                            rel[k] = d * st_d + h * st_h + w * st_w
    if want_idx:
        for k in range(total):
            oi[k] = rel[k] + base
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
    """(elements, int64s) of scratch ``pool_separable`` takes per thread (see its layout)."""
    _, _, out_d, out_h, out_w = out5
    channels_last = int(p[42]) != 0
    if channels_last:
        _, out_d, out_h, out_w, _ = out5
    block = int(p[35])
    tables = int(pure(_tables_size)([int(v) for v in p], out_d, out_h, out_w))
    results = block * out_d * out_h * out_w if channels_last else 0
    gathered = block * int(np.prod(p[15:18])) if block > 1 else 0
    return tables + results + gathered, tables + results
