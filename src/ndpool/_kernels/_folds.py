"""MaxPool on NCX data one axis at a time: every input row folded along w, those rows along h, then d.

For windows three taps wide along w at stride 1 or 2 on short rows (the stem's 3x3 s2, the 3-D
3x3x3 s2, 3x3 s1): an output costs 3 + k_h + k_d operations instead of 3 * k_h * k_d, and the plane is
not copied into stride phases first (about half of pool_planes' time). Folding the innermost axis
first keeps the first-maximum rule with the associative later-wins rule of pool_separable (see
there), and so do its preset fix-ups at the end, shared with it.

Where input rows follow each other in memory every sw*out_w elements (the stem, the 3-D workload),
the w pass is one long loop over all the plane's rows; outputs whose window crosses a row's end get
wrong values there and are redone one by one (the border columns), as are the rows' own borders.

NaN: a chunk of w taps, or a plane's w results, without any NaN folds by the plain rule (later wins
if greater), which is then every preset's rule: 5 mask operations fewer per tap.

Values of 2-D planes are folded rows first instead where the plane holds no NaN and no -0
(_rows_first: the stem's kernel in 0.53-0.70x the time on one thread, 0.59-0.66x on two); a plane
with either folds as above.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel, pure
from ._keys import as_key, nan_free
from ._loops import _index_params, _rules
from ._prefetch import LINE, prefetch_read, prefetch_write, row_share
from ._rows_first import MAX_OUT_W as ROWS_FIRST_MAX_W
from ._rows_first import rows_first_plane
from ._separable import _finish_plane, _later_wins
from ._stores import store_fence, stream_run, streams_out

# Outputs per chunk of the w pass: the chunk's taps are laid out in L1 first.
CHUNK = 512
# The w pass requests its input this many chunks ahead, past the run's end too: the last chunks
# request the start of the next plane (2 and 4 measured alike). Only where the h passes did not
# request the plane (below): requested twice, the stem took 1.02-1.04x the time.
AHEAD = 4


@kernel  # compiled once per element type, shared by the call sites
def _fold_w3(src, at, step, dst, dsti, d0, count, f0, f_step, f_gap, tmp, want_idx, nan_takes, hold,
             nan_bottom, ahead):  # type: ignore[no-untyped-def]
    """dst[d0 + t] = the later-wins fold of src[at + t*step + j] for j = 0, 1, 2 (step 1 or 2: unit-
    stride input, the only kind _launch._folds_pay sends here), with indices f0 + t*f_step + j*f_gap,
    for t < count; ``tmp`` is 2*CHUNK + 2 elements of scratch in dst. ``ahead``: request the input
    AHEAD chunks on.

    A chunk's taps are first copied to ``tmp`` so that each tap is a unit-stride load there: at
    stride 2 as the even and odd elements (interleaved loads vectorize; strided ones became gathers,
    the whole pass 1.5x slower than pool_planes), at stride 1 as they are. The copy also looks for
    NaNs (returned: whether any tap was NaN)."""
    seen = False
    for c0 in range(0, count, CHUNK):
        n = min(CHUNK, count - c0)
        base = at + c0 * step
        nan = False  # (a boolean: an int64 count halved the loop's vector width)
        if ahead:
            for e in range(base + AHEAD * CHUNK * step, base + (AHEAD + 1) * CHUNK * step, LINE // src.itemsize):
                prefetch_read(src, np.uint64(e))
        if step == 2:  # taps 0, 1, 2 of output t: even t, odd t, even t + 1
            a0, a1, a2 = tmp, tmp + CHUNK + 1, tmp + 1
            for t in range(n):
                e, o = src[np.uint64(base + 2 * t)], src[np.uint64(base + 2 * t + 1)]
                dst[np.uint64(a0 + t)], dst[np.uint64(a1 + t)] = e, o
                ke, ko = as_key(e), as_key(o)
                nan = nan | (ke != ke) | (ko != ko)
            last = src[np.uint64(base + 2 * n)]
            dst[np.uint64(a0 + n)] = last
        else:  # stride 1: the chunk's n + 2 inputs as they are
            a0, a1, a2 = tmp, tmp + 1, tmp + 2
            for t in range(n + 1):
                v = src[np.uint64(base + t)]
                dst[np.uint64(a0 + t)] = v
                kv = as_key(v)
                nan = nan | (kv != kv)
            last = src[np.uint64(base + n + 1)]
            dst[np.uint64(a0 + n + 1)] = last
        kl = as_key(last)
        f = f0 + c0 * f_step
        if nan_free(src) or not (nan or kl != kl):  # the plain rule is the preset's
            _fold3(dst, dsti, a0, a1, a2, d0 + c0, n, f, f_step, f_gap, want_idx, False, False, False)
        else:
            seen = True
            _fold3(dst, dsti, a0, a1, a2, d0 + c0, n, f, f_step, f_gap, want_idx, nan_takes, hold, nan_bottom)
    return seen


@njit(inline="always")
def _fold3(buf, bufi, a0, a1, a2, o, n, f, f_step, f_gap, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """buf[o + t] = the fold of buf[a0 + t], buf[a1 + t], buf[a2 + t] (taps 0, 1, 2), t < n."""
    # One loop per case: a loop-invariant test left inside a loop was if-converted, not hoisted.
    if want_idx:
        # Index arithmetic in the slots' type (int32: plane-relative indices), the first tap's index
        # as a running sum: int64 halved the vector width, and f + t*f_step became a vector multiply.
        fi, fs = bufi.dtype.type(f), bufi.dtype.type(f_step)
        g1, g2 = bufi.dtype.type(f_gap), bufi.dtype.type(2 * f_gap)  # (selected, not multiplied)
        g0 = bufi.dtype.type(0)
        for t in range(n):
            m, v = buf[np.uint64(a0 + t)], buf[np.uint64(a1 + t)]
            m, g = (v, g1) if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else (m, g0)
            v = buf[np.uint64(a2 + t)]
            m, g = (v, g2) if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else (m, g)
            buf[np.uint64(o + t)] = m
            bufi[np.uint64(o + t)] = fi + g
            fi += fs
    else:
        for t in range(n):
            m, v = buf[np.uint64(a0 + t)], buf[np.uint64(a1 + t)]
            m = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m
            v = buf[np.uint64(a2 + t)]
            buf[np.uint64(o + t)] = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m


@kernel
def _fold_rows(val, vali, at, at_step, gap, k, dst, dsti, d0, di0, d_step, count, n_rows, never, clean, want_idx,
               nan_takes, hold, nan_bottom, src, src_next, src_len, dst_next, dst_len, dst_idx):  # type: ignore[no-untyped-def]
    """For rows r < n_rows: dst[d0 + r*d_step + t] = the fold of val[at + r*at_step + j*gap + t]
    over taps j < k (``never`` if k = 0), indices carried from vali into dsti[di0 + r*d_step + t],
    for t < count. ``clean``: those taps hold no NaN. Three taps in the first pass, two in each
    later one (a tap past the last is the last again: folded twice, a tap changes nothing). Many
    rows per call: a call per output row of the stem (15 arguments on the stack) was 8% of its time.

    Each row also requests its share of src[src_next:src_next + src_len] and, for writing, of
    dst[dst_next:dst_next + dst_len] (and dst_idx): the next plane's input and output (zero lengths:
    none). A row at a time: a call's worth at once before each call, or a call per row, was slower
    (so was a general share helper with a division per row: 16.7 against 15.8 ms on the stem)."""
    if nan_free(val) or clean:
        nan_takes, hold, nan_bottom = False, False, False
    plain = not (nan_takes or hold or nan_bottom)
    line = LINE // src.itemsize
    src_row, dst_row = row_share(src_len, n_rows, line), row_share(dst_len, n_rows, line)
    for r in range(n_rows):
        for e in range(r * src_row, min((r + 1) * src_row, src_len), line):
            prefetch_read(src, np.uint64(src_next + e))
        for e in range(r * dst_row, min((r + 1) * dst_row, dst_len), line):
            prefetch_write(dst, np.uint64(dst_next + e))
            if want_idx:  # the indices' lines (int64: more of them than the values')
                for j in range(0, line, LINE // dst_idx.itemsize):
                    prefetch_write(dst_idx, np.uint64(dst_next + e + j))
        a0, o, oi = at + r * at_step, d0 + r * d_step, di0 + r * d_step
        if k <= 0:
            for t in range(count):
                dst[np.uint64(o + t)] = never
            continue
        ja = 1
        while ja < k or ja == 1:
            jb = min(ja + 1, k - 1)
            a, b = a0 + min(ja, k - 1) * gap, a0 + jb * gap
            # The running maxima start from tap 0 in the first pass, then from dst itself. The seed
            # is the same array as val or dst at each call site: six arrays that might overlap
            # needed more overlap checks than LLVM makes, and the loop with indices stayed scalar.
            if ja == 1 and plain:
                _fold_pass(val, vali, a0, a0, val, vali, a, b, dst, dsti, o, oi, count, want_idx, False, False, False)
            elif ja == 1:
                _fold_pass(val, vali, a0, a0, val, vali, a, b, dst, dsti, o, oi, count, want_idx, nan_takes, hold,
                           nan_bottom)
            elif plain:
                _fold_pass(dst, dsti, o, oi, val, vali, a, b, dst, dsti, o, oi, count, want_idx, False, False, False)
            else:
                _fold_pass(dst, dsti, o, oi, val, vali, a, b, dst, dsti, o, oi, count, want_idx, nan_takes, hold,
                           nan_bottom)
            ja = max(jb + 1, 2)


@njit(inline="always")
def _fold_pass(seed, seedi, s0, si0, val, vali, a, b, dst, dsti, d0, di0, count, want_idx, nan_takes, hold,  # type: ignore[no-untyped-def]
               nan_bottom):
    """dst[d0 + t] = the fold of seed[s0 + t], val[a + t], val[b + t], indices carried (from
    seedi[si0 + t] and vali, into dsti[di0 + t])."""
    if want_idx:
        # Indices are loaded whether they win or not: a load under the condition became a scalar loop.
        for t in range(count):
            m, mi = seed[np.uint64(s0 + t)], seedi[np.uint64(si0 + t)]
            v, vi = val[np.uint64(a + t)], vali[np.uint64(a + t)]
            m, mi = (v, vi) if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else (m, mi)
            v, vi = val[np.uint64(b + t)], vali[np.uint64(b + t)]
            take = _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom)
            dst[np.uint64(d0 + t)], dsti[np.uint64(di0 + t)] = (v, vi) if take else (m, mi)
    else:
        for t in range(count):
            m = seed[np.uint64(s0 + t)]
            v = val[np.uint64(a + t)]
            m = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m
            v = val[np.uint64(b + t)]
            dst[np.uint64(d0 + t)] = v if _later_wins(as_key(v), as_key(m), nan_takes, hold, nan_bottom) else m


@njit(inline="always")
def _fold_column(flat, plane, xs_d, xs_h, xs_w, in_d, in_h, st_d, st_h, st_w, s0, first, end, dw, dst, dsti, ow,
                 out_w, never, want_idx, nan_takes, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """dst[r*out_w + ow] for every input row r = d*in_h + h of the plane: the fold of the w taps
    [first, end) of one (border) output column (``never`` if none); returns whether a tap was NaN.

    A column at a time, its rows in the inner loop: each row's fold is a select, no branch, and the
    window's bounds are read once (a call per row and column had cost the NCX stem 0.8 us a plane,
    15% of the kernel's time on two threads)."""
    nan = False
    for d in range(in_d):
        for h in range(in_h):
            o = np.uint64((d * in_h + h) * out_w + ow)
            if first >= end:
                dst[o] = never
                if want_idx:
                    dsti[o] = 0
                continue
            at = plane + d * xs_d + h * xs_h
            f0 = d * st_d + h * st_h
            pos = s0 + first * dw
            m, mi = flat[np.uint64(at + pos * xs_w)], f0 + pos * st_w
            km = as_key(m)
            nan |= km != km
            for j in range(first + 1, end):
                pos = s0 + j * dw
                v = flat[np.uint64(at + pos * xs_w)]
                kv = as_key(v)
                nan |= kv != kv
                take = _later_wins(kv, as_key(m), nan_takes, hold, nan_bottom)
                m, mi = (v, f0 + pos * st_w) if take else (m, mi)
            dst[o] = m
            if want_idx:
                dsti[o] = mi
    return nan


@kernel
def pool_folds(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, _, nan_takes, hold = _rules(p)
    nan_bottom = not nan_takes
    off_n, off_c, st_d, st_h, st_w, _, _ = _index_params(p)
    in_d, in_h, in_w = p[15], p[16], p[17]
    sd, sh, sw = p[22], p[23], p[24]
    d_lo, d_hi, h_lo, h_hi, w_lo, w_hi = p[25], p[26], p[27], p[28], p[29], p[30]
    # Rows and slabs with all their taps: the interior (an empty one starts past the end).
    d_lo = d_lo if d_hi > d_lo else out_d
    h_lo = h_lo if h_hi > h_lo else out_h
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    never = empty[1]
    o_all = out.reshape(-1)
    oi_all = idx.reshape(-1)
    # Every pass carries indices relative to the plane (below 2**31: _launch._folds_pay) in int32
    # slots: as wide as f32 values, so a vector of values has its indices in one register (int64
    # ones halved the vector width). The last pass's go to slots at ib, which _finish_plane widens
    # into the output as it adds the plane's offset.
    iw = iwork.view(np.int32)
    plane_out = out_d * out_h * out_w
    rows = in_d * in_h
    # Scratch: the w pass's rows (rows x out_w), then (3-D) the h pass's results (in_d x out_h x out_w).
    # With one d position the h pass writes the output plane's values itself (its indices: at ib).
    one_d = in_d == 1 and out_d == 1
    hb, tb, pb, _, ib, wb, _ = _scratch_layout(in_d, in_h, out_d, out_h, out_w)  # tb: _fold_w3's chunk of taps
    # An input read from memory: the last pass writes the plane's values to scratch at pb, where they
    # are finished (the indices widened to scratch at int32 slot wb, in the output's index type), and
    # both are streamed out past the caches (no read of the output's lines first).
    stream = streams_out(flat)
    o_to = work if stream else o_all  # where the last pass writes the values
    iv = iwork.view(oi_all.dtype)
    qb = wb * 4 // oi_all.itemsize  # (wb even: an int64 boundary)
    slab = out_h * out_w
    any_empty = False  # some output window lacks in-range taps on some axis
    for axis in range(3):
        for o_ in range((out_d, out_h, out_w)[axis]):
            any_empty = any_empty or win[axis, 1, o_] >= win[axis, 2, o_]
    # Border columns: every column when no output has all its w taps in range.
    lo_end, hi_start = (w_lo, w_hi) if w_hi > w_lo else (out_w, out_w)
    s0w = win[2, 0, 0]
    # The w pass as one loop over all rows: rows (and their indices) follow each other every sw*out_w.
    long_w = (hi_start > lo_end and xs_h == sw * out_w * xs_w and (in_d == 1 or xs_d == in_h * xs_h)
              and (not want_idx or (st_h == sw * out_w * st_w and (in_d == 1 or st_d == in_h * st_h))))
    # While this plane folds, the next one's lines are requested: its input (if compact) by the stem's
    # h pass or by the 3-D h pass a d position's share at a time, its output by the pass writing it.
    span = (in_d - 1) * xs_d + (in_h - 1) * xs_h + in_w * xs_w
    compact = min(xs_d, xs_h, xs_w) >= 0 and span <= rows * in_w + in_w
    # Values of 2-D planes: rows first where the plane allows (see _rows_first), else the w pass first.
    # (w at unit stride and windows of three adjacent taps: all that _launch._folds_pay sends here.)
    rows_first = not want_idx and one_d and out_w <= ROWS_FIRST_MAX_W
    none = np.int64(0)  # no lines (a literal 0 argument would compile _fold_rows once more)
    for plane_no in range(row_lo, row_hi):
        n = plane_no // n_chan
        c = plane_no % n_chan
        plane = xoff + n * xs_n + c * xs_c
        ob = plane_no * plane_out
        base = n * off_n + c * off_c
        last = plane_no + 1 == row_hi
        # The plane after the next is requested: the next one's lines arrived late (side by side,
        # kernel alone: the stem 0.94-0.95x, f16 and bf16 alike, with i64 indices 0.94-0.97x).
        ahead_no = plane_no + 2 if plane_no + 2 < row_hi else plane_no + 1
        next_in = xoff + (ahead_no // n_chan) * xs_n + (ahead_no % n_chan) * xs_c
        in_len = 0 if last or not compact else span
        requested = compact and plane_no >= row_lo + 2  # (by the plane two before)
        out_len = 0 if last or stream else plane_out
        o_at = pb if stream else ob
        done = rows_first and rows_first_plane(flat, plane, xs_h, in_w, win, dh, sw, out_h, out_w, never,
                                               o_to, o_at, next_in, in_len, ob + plane_out, out_len)
        clean = done
        if not done:
            nan_long = False
            if long_w:
                count = (rows - 1) * out_w + hi_start - lo_end
                pos = s0w + lo_end * sw
                nan_long = _fold_w3(flat, plane + pos * xs_w, sw * xs_w, work, iw, lo_end, count, pos * st_w,
                                    sw * st_w, st_w, tb, want_idx, nan_takes, hold, nan_bottom, not requested)
            nan = False  # some w tap was NaN: then the h and d passes need the preset's rule
            if not long_w and hi_start > lo_end:
                pos = s0w + lo_end * sw
                for d in range(in_d):
                    for h in range(in_h):
                        r = d * in_h + h
                        at = plane + d * xs_d + h * xs_h
                        fr = d * st_d + h * st_h
                        nan |= _fold_w3(flat, at + pos * xs_w, sw * xs_w, work, iw, r * out_w + lo_end,
                                        hi_start - lo_end, fr + pos * st_w, sw * st_w, st_w, tb, want_idx, nan_takes, hold,
                                        nan_bottom, not requested)
            # The border columns, after the w pass (whose long loop ran over them too).
            for ow in range(out_w):
                if lo_end <= ow < hi_start:
                    continue
                nan |= _fold_column(flat, plane, xs_d, xs_h, xs_w, in_d, in_h, st_d, st_h, st_w, win[2, 0, ow],
                                    win[2, 1, ow], win[2, 2, ow], dw, work, iw, ow, out_w, never, want_idx, nan_takes,
                                    hold, nan_bottom)
            clean = not (nan or nan_long)
            # h pass: per d position, each output row folds its in-range input rows; rows with all
            # k_h taps in one call.
            for d in range(in_d):
                r_at = d * in_h * out_w
                oh = 0
                while oh < out_h:
                    n_rows = h_hi - oh if oh == h_lo else 1
                    first, end = win[1, 1, oh], win[1, 2, oh]
                    at = r_at + (win[1, 0, oh] + first * dh) * out_w
                    if one_d:
                        ahead = n_rows > 1  # the interior rows' call
                        _fold_rows(work, iw, at, sh * out_w, dh * out_w, end - first, o_to, iw, o_at + oh * out_w,
                                   ib + oh * out_w, out_w, out_w, n_rows, never, clean, want_idx, nan_takes, hold,
                                   nan_bottom, flat, next_in, in_len if ahead else 0, ob + plane_out,
                                   out_len if ahead else 0, oi_all)
                    else:
                        # 3-D: the next volume's input is requested here, a d position's share at a time.
                        lo, hi = (in_len * d // in_d, in_len * (d + 1) // in_d) if n_rows > 1 else (0, 0)
                        _fold_rows(work, iw, at, sh * out_w, dh * out_w, end - first, work, iw,
                                   hb + d * slab + oh * out_w, hb + d * slab + oh * out_w, out_w, out_w, n_rows, never,
                                   clean, want_idx, nan_takes, hold, nan_bottom, flat, next_in + lo, hi - lo, none, none,
                                   iw)
                    oh += n_rows
            if not one_d:  # d pass: each output slab folds its in-range h results, inner ones in one call
                od = 0
                while od < out_d:
                    n_rows = d_hi - od if od == d_lo else 1
                    first, end = win[0, 1, od], win[0, 2, od]
                    at = hb + (win[0, 0, od] + first * dd) * slab
                    ahead = n_rows > 1
                    _fold_rows(work, iw, at, sd * slab, dd * slab, end - first, o_to, iw, o_at + od * slab,
                               ib + od * slab, slab, slab, n_rows, never, clean, want_idx, nan_takes, hold, nan_bottom,
                               flat, none, none, ob + plane_out, out_len if ahead else 0, oi_all)
                    od += n_rows
        o = o_to[o_at:o_at + plane_out]
        oi = oi_all
        if want_idx:
            oi = iv[qb:qb + plane_out] if stream else oi_all[ob:ob + plane_out]
        # (onnx's first-tap check only where a tap was NaN: per output it cost the NCX stem 50%.)
        _finish_plane(o, oi, flat, plane, xs_d, xs_h, xs_w, win, dil, out_d, out_h, out_w, p, empty, base,
                      any_empty, p[21] != 0 and not clean, iw[ib:ib + plane_out])
        if stream:
            stream_run(work, pb, o_all, ob, plane_out)
            if want_idx:
                stream_run(iv, qb, oi_all, ob, plane_out)
    if stream:
        store_fence()  # (before the caller reads the output)


@njit(inline="always")
def _scratch_layout(in_d, in_h, out_d, out_h, out_w):  # type: ignore[no-untyped-def]
    """pool_folds' scratch: where the h results, _fold_w3's chunk and the streamed output plane start,
    and where it ends (the w pass's rows come first; with one d position the h pass writes the output
    values itself); then in the int32 index slots, where the last pass's indices start (after those
    beside the w and h results), where the streamed plane's widened indices start (at an int64
    boundary; int64 at most: two slots each) and where they end."""
    hb = in_d * in_h * out_w
    tb = hb + (0 if in_d == 1 and out_d == 1 else in_d * out_h * out_w)
    pb = tb + 2 * CHUNK + 2
    plane = out_d * out_h * out_w
    wb = (tb + plane + 1) // 2 * 2
    return hb, tb, pb, pb + plane, tb, wb, wb + 2 * plane


def folds_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_folds`` takes per thread (int32 indices beside the w and
    h results, then the output plane's, then the streamed plane's widened ones)."""
    _, _, _, end, _, _, index_end = pure(_scratch_layout)(in5[2], in5[3], out5[2], out5[3], out5[4])
    return end, index_end // 2 if int(p[0]) else 1  # (int32 slots, two per int64)
