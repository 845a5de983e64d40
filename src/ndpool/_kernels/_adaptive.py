"""AdaptiveMaxPool with the width axis adjacent in memory (NCX): bins are read row by row, vectorized.

Per output row (n, c, od, oh), a first pass folds the bin's input rows into one running maximum per
input column, in row order (vectorized along w, ties keep the earlier row); a second pass reduces each
output's columns. Column results come from different rows, so that second fold compares indices: the
smaller flat index (earlier in row-major order) wins a tie, and for torch's rule the larger one wins
between NaNs. The result is the sequential fold's, bit for bit, at about one vectorized read per input
element (the per-output sequential loop was scalar and 3-5x slower than torch). Where no column
maximum is a NaN, the second pass orders by value and then index instead of the rules' full
ordering, through doubling levels: 8x64x100x100 -> 13x17 on one thread 8.7 -> 3.9 ms. Bins of up to
WHOLE_MAX_ROWS input rows fold whole rows, one after the other, the winning rows kept as int32 offsets
(kernel_ab, one / two threads: 8x64x100x100 -> 13x17 0.60x / 0.64x, 16x64x64x64 -> 7x9 0.90x / 0.79x,
8x64x200x200 -> 25x25 0.87x / 0.86x). Taller bins on rows of at least ``LANES`` elements fold ``LANES``
columns at a time over all the bin's rows, their maxima in registers (as ``_channel_blocks`` does with
channels): there the whole rows lost (bins of 16 rows on 200x200 planes 1.26-1.49x the time, of 70 rows
on 3-D 64x64 slices 1.6-1.8x), since the blocks load and store their maxima once per bin row, not once
per input row.

openvino's rule (start at the first tap, take v > m) is not associative; it is computed as "NaN never
wins" and then the bin's first tap is checked: a NaN there is the result.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._channel_blocks import LANES, _lanes_like
from ._jit import kernel
from ._keys import as_key, is_keyed
from ._prefetch import LINE, prefetch_read, prefetch_read_l1, requests_pay
from ._separable import _level_of

# Bins of at most this many input rows fold whole rows (see above; 16 lost on 200x200 planes).
WHOLE_MAX_ROWS = 12


@njit(inline="always")
def _better(kv, iv, km, im, nan_top, nan_last, nan_bottom):  # type: ignore[no-untyped-def]
    """Whether (kv, iv) replaces (km, im) whatever their order of arrival."""
    vn, mn = kv != kv, km != km
    both_nan = vn & mn
    return ((kv > km) | (nan_top & vn & ~mn) | (nan_bottom & mn & ~vn) | ((kv == km) & (iv < im))
            | (both_nan & ((nan_last & (iv > im)) | (~nan_last & (iv < im)))))


@njit(inline="always")
def _kept(v, iv, m, mi, nan_top, nan_last, nan_bottom):  # type: ignore[no-untyped-def]
    """(v, iv) if it is _better than (m, mi), else (m, mi)."""
    better = _better(as_key(v), iv, as_key(m), mi, nan_top, nan_last, nan_bottom)
    return (v if better else m), (iv if better else mi)


@njit(inline="always")
def _row_wins(kv, km, nan_top, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Whether a later row's key ``kv`` replaces a column's ``km`` (see the module's NaN rules)."""
    return ((kv > km) | (nan_top & (kv != kv) & ~(hold & (km != km)))
            | (nan_bottom & (km != km) & (kv == kv)))


@njit(inline="always")
def _fold_row(src, col, col_idx, fb, st_w, nan_top, hold, nan_bottom):  # type: ignore[no-untyped-def]
    """Fold one input row into the running column maxima (a later row wins only when better)."""
    for w in range(col.shape[0]):
        v, m, mi = src[w], col[w], col_idx[w]  # (mi loaded either way: a conditional load is a branch)
        take = _row_wins(as_key(v), as_key(m), nan_top, hold, nan_bottom)
        col[w] = v if take else m
        col_idx[w] = fb + w * st_w if take else mi


@njit(inline="always")
def _fold_row_rel(flat, at, count, col, rel, r, nan_top, hold):  # type: ignore[no-untyped-def]
    """_fold_row of the unit-stride row flat[at:at + count], a winning row's offset ``r`` (within the
    bin, int32) kept in rel: half the bytes of an index per column, so twice the lanes a vector."""
    for w in range(count):
        v, m, mr = flat[np.uint64(at + w)], col[w], rel[w]  # (mr loaded either way: a conditional load is a branch)
        take = _row_wins(as_key(v), as_key(m), nan_top, hold, not nan_top)
        col[w] = v if take else m
        rel[w] = r if take else mr


@njit(inline="always")
def _fold_bin_rows(flat, at, count, bin_rows, col, rel, nan_top, hold):  # type: ignore[no-untyped-def]
    """The bin's rows (as in _fold_rows) folded whole, row after row, into col and rel (offsets
    within the bin, int32)."""
    xs_d, xs_h, s_d, e_d, s_h, e_h, st_d, st_h = bin_rows
    for w in range(count):
        col[w] = flat[np.uint64(at + w)]
        rel[w] = np.int32(0)
    for d in range(s_d, e_d):
        for h in range(s_h, e_h):
            if d == s_d and h == s_h:
                continue
            r = np.int32((d - s_d) * st_d + (h - s_h) * st_h)
            _fold_row_rel(flat, at + (d - s_d) * xs_d + (h - s_h) * xs_h, count, col, rel, r, nan_top, hold)


@njit(inline="always")
def _fold3_sticky(flat, a, b, c, count, col, rel, ra, rb, rc, first, last, st_w):  # type: ignore[no-untyped-def]
    """The unit-stride rows flat[a:], flat[b:], flat[c:] (offsets ra, rb, rc within the bin) folded in
    that order into col and rel by "greater wins", except that a NaN always wins and then stays (so a
    column holds a NaN exactly when one of its rows does; then its offset means nothing). ``first``:
    row a seeds them. ``last``: each column's own offset (w * st_w) is added to its row's as it is
    stored (a pass of its own over the row cost more). A row given again changes nothing."""
    for w in range(count):
        va, vb, vc = flat[np.uint64(a + w)], flat[np.uint64(b + w)], flat[np.uint64(c + w)]
        if first:
            m, mr = va, ra
        else:
            m, mr = col[w], rel[w]
            m, mr = _sticky(va, ra, m, mr)
        m, mr = _sticky(vb, rb, m, mr)
        m, mr = _sticky(vc, rc, m, mr)
        col[w] = m
        rel[w] = mr + np.int32(w * st_w) if last else mr


@njit(inline="always")
def _sticky(v, r, m, mr):  # type: ignore[no-untyped-def]
    """(v, r) if v is greater than m or a NaN, else (m, mr): a NaN m is kept, since nothing is greater."""
    kv = as_key(v)
    return (v, r) if (kv > as_key(m)) | (kv != kv) else (m, mr)


@njit(inline="always")
def _row_after(jd, jh, nh):  # type: ignore[no-untyped-def]
    """The bin row after (jd, jh) (relative d and h, nh rows of h a d)."""
    return (jd, jh + 1) if jh + 1 < nh else (jd + 1, 0)


@njit(inline="always")
def _fold_bin_rows_sticky(flat, at, count, bin_rows, col, rel, st_w):  # type: ignore[no-untyped-def]
    """The bin's rows (as in _fold_bin_rows) folded by _fold3_sticky, three rows a pass: the columns
    loaded and stored once per three rows, and no NaN test per value (a loop that also reduced one
    to a flag ran its last 36 of 100 columns scalar: LLVM's vector loop took 64 a pass). The offsets
    in rel come out whole: the row's within the bin plus the column's, w * st_w."""
    xs_d, xs_h, s_d, e_d, s_h, e_h, st_d, st_h = bin_rows
    nh = e_h - s_h
    total = (e_d - s_d) * nh
    jd, jh = 0, 0  # the next row, relative to the bin's first
    for t in range(0, total, 3):
        a, ra = jd * xs_d + jh * xs_h, np.int32(jd * st_d + jh * st_h)
        b, rb, c, rc = a, ra, a, ra
        if t + 1 < total:
            jd, jh = _row_after(jd, jh, nh)
            b, rb = jd * xs_d + jh * xs_h, np.int32(jd * st_d + jh * st_h)
            c, rc = b, rb
        if t + 2 < total:
            jd, jh = _row_after(jd, jh, nh)
            c, rc = jd * xs_d + jh * xs_h, np.int32(jd * st_d + jh * st_h)
        jd, jh = _row_after(jd, jh, nh)
        # (each combination of the flags a loop of its own, without tests in it)
        if t == 0 and t + 3 >= total:
            _fold3_sticky(flat, at + a, at + b, at + c, count, col, rel, ra, rb, rc, True, True, st_w)
        elif t == 0:
            _fold3_sticky(flat, at + a, at + b, at + c, count, col, rel, ra, rb, rc, True, False, st_w)
        elif t + 3 >= total:
            _fold3_sticky(flat, at + a, at + b, at + c, count, col, rel, ra, rb, rc, False, True, st_w)
        else:
            _fold3_sticky(flat, at + a, at + b, at + c, count, col, rel, ra, rb, rc, False, False, st_w)


@njit(inline="always")
def _add_column_offsets(rel, count, st_w):  # type: ignore[no-untyped-def]
    """rel[w] (a row's offset within the bin) += column w's own offset, for w < count."""
    for w in range(count):
        rel[w] += np.int32(w * st_w)


@njit(inline="always")
def _no_nan(col, count):  # type: ignore[no-untyped-def]
    """Whether none of col[:count] is a NaN."""
    plain = True
    for w in range(count):
        k = as_key(col[w])
        plain &= k == k
    return plain


@njit(inline="always")
def _fold_rows(flat, at, bin_rows, mk, mv, mr, keyed, nan_top, hold):  # type: ignore[no-untyped-def]
    """Fold the bin's rows into LANES adjacent columns from flat[at] on (the bin's first row), in
    row order, the maxima in registers; indices relative to the first row's. ``bin_rows``: input
    strides of d and h, the bin's rows [s_d, e_d) x [s_h, e_h), index strides of d and h."""
    xs_d, xs_h, s_d, e_d, s_h, e_h, st_d, st_h = bin_rows
    for i in range(LANES):
        v = flat[np.uint64(at + i)]
        mk[i], mv[i], mr[i] = as_key(v), v, np.int32(0)
    for d in range(s_d, e_d):
        for h in range(s_h, e_h):
            a = at + (d - s_d) * xs_d + (h - s_h) * xs_h
            rel = np.int32((d - s_d) * st_d + (h - s_h) * st_h)
            for i in range(LANES):
                v = flat[np.uint64(a + i)]
                kv, km = as_key(v), mk[i]
                take = _row_wins(kv, km, nan_top, hold, not nan_top)
                mk[i] = kv if take else km
                if keyed:
                    mv[i] = v if take else mv[i]
                mr[i] = rel if take else mr[i]


@njit(inline="always")
def _plain_better(v, iv, m, mi):  # type: ignore[no-untyped-def]
    """The greater of (v, iv) and (m, mi), by value and then by the smaller index: a total order
    without NaNs, so folds of overlapping ranges in any order agree. A NaN wins and stays (the
    caller's sign that its columns were not NaN-free after all)."""
    kv, km = as_key(v), as_key(m)
    take = (kv > km) | ((kv == km) & (iv < mi)) | (kv != kv)
    return (v if take else m), (iv if take else mi)


@njit(inline="always")
def _level_at(t, in_w):  # type: ignore[no-untyped-def]
    """Where level t of the column maxima's values starts in the scratch: the columns themselves at
    0, the strided row's copy at in_w, then levels 1, 2, ... (so level t's indices are in_w before
    its values' offset, from t = 1: iwork[t * in_w])."""
    return 0 if t == 0 else (t + 1) * in_w


@njit(inline="always")
def _row_of(row, n_chan, out_d, out_h):  # type: ignore[no-untyped-def]
    """(n, c, od, oh) of output row ``row``."""
    return row // (n_chan * out_d * out_h), (row // (out_d * out_h)) % n_chan, (row // out_h) % out_d, row % out_h


@njit(inline="always")
def _bin_rows_of(n, c, od, oh, win, xoff, xst):  # type: ignore[no-untyped-def]
    """Output row (n, c, od, oh)'s plane offset and its bins' rows [s_d, s_d + e_d) x [s_h, s_h + e_h)."""
    return xoff + n * xst[0] + c * xst[1], win[0, 0, od], win[0, 2, od], win[1, 0, oh], win[1, 2, oh]


@njit(inline="always")
def _next_row(n, c, od, oh, n_chan, out_d, out_h):  # type: ignore[no-untyped-def]
    """(n, c, od, oh) of the output row after (n, c, od, oh), counted on rather than divided out: four
    64-bit divisions a row, and as many again for the next row's requests, were 6-7% of the kernel's
    time on 8x64x100x100 -> 13x17 NCX (kernel_ab, one and two threads, 2026-12-07)."""
    oh += 1
    if oh == out_h:
        oh, od = 0, od + 1
        if od == out_d:
            od, c = 0, c + 1
            if c == n_chan:
                c, n = 0, n + 1
    return n, c, od, oh


@njit(inline="always")
def _prefetch_columns(flat, plane, s_d, e_d, s_h, e_h, xs_d, xs_h, w0, count, step):  # type: ignore[no-untyped-def]
    """Request the lines of columns w0, w0 + step, ... below w0 + count (``step``: a line's elements) of
    every row of a bin row (the next one's)."""
    for d in range(s_d, s_d + e_d):
        for h in range(s_h, s_h + e_h):
            at = plane + d * xs_d + h * xs_h + w0
            for e in range(0, count, step):
                prefetch_read(flat, np.uint64(at + e))


@kernel
def adaptive_width_inner(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    nan_top, hold = p[2] != 0, p[3] != 0
    nan_last = nan_top and not hold
    nan_bottom = not nan_top
    first_valid = p[21] != 0
    off_n, off_c, st_d, st_h, st_w = p[4], p[5], p[6], p[7], p[8]
    in_w = p[14]
    col = work[:in_w]
    col_idx = iwork[:in_w]
    scratch = work[in_w:2 * in_w]
    # Doubling levels of the column maxima (level t at w: the greater of columns w .. w + 2**t - 1),
    # up to the level whose two values cover the widest bin: see the plain fold below.
    widest = 1
    for ow in range(out_w):
        widest = max(widest, win[2, 2, ow])
    top = _level_of(widest)
    keyed = is_keyed(flat)
    # Rows at least LANES wide and unit-stride: LANES columns at a time with their maxima in
    # registers, indices as int32 offsets within the plane (the column arrays took a load and store
    # per tap; two threads, i64 indices: 16x64x224x224 -> 7x7 23.8 -> 20.1 ms, 2x32x32x64x64 ->
    # 5x7x9 4.35 -> 2.30).
    unit_rows = xst[4] == 1 and p[15] * p[16] * in_w < 2**31  # (and a plane's offsets fit int32)
    blocks = in_w >= LANES and unit_rows
    # Unit-stride rows: the columns' indices (and their levels) as int32, relative to the bins' first
    # tap (the int64 scratch viewed as int32: twice the slots the levels need).
    ci32 = iwork[:(1 + top) * in_w].view(np.int32)
    # Each bin's two lookups in the doubling levels, the same for every output row (per row, from the
    # bins' bounds: 8x64x100x100 -> 13x17 NCX 1.11-1.14x the kernel's time on one thread).
    lookups = iwork[(1 + top) * in_w:(1 + top) * in_w + 4 * out_w]
    _level_lookups(win, out_w, in_w, lookups)
    mk = _lanes_like(as_key(empty[0]))
    mv = _lanes_like(empty[0])
    mr = _lanes_like(np.int32(0))
    step = max(1, LINE // flat.itemsize)  # elements per cache line
    # Next bin rows are requested where _prefetch.requests_pay (the figures of both machines there; on
    # the Xeon 2x32x32x64x64 -> 5x7x9, 34 MB, in L3, took 0.79-0.82x the time without requests).
    ask_ahead = requests_pay(flat)
    asked = 0  # where the requests of runs of rows stopped (a flat offset)
    n, c, od, oh = _row_of(row_lo, n_chan, out_d, out_h)
    for row in range(row_lo, row_hi):
        if row > row_lo:
            n, c, od, oh = _next_row(n, c, od, oh, n_chan, out_d, out_h)
        plane, s_d, e_d, s_h, e_h = _bin_rows_of(n, c, od, oh, win, xoff, xst)
        base = n * off_n + c * off_c
        g0 = s_d * st_d + s_h * st_h
        whole = unit_rows and e_d * e_h <= WHOLE_MAX_ROWS
        bin_rows = (xst[2], xst[3], s_d, s_d + e_d, s_h, s_h + e_h, st_d, st_h)
        # While this bin row's blocks fold, the next one's lines are requested, a block's columns at
        # a time: the blocks read their rows column block by column block, which the hardware's
        # prefetchers did not follow (16x64x224x224 -> 7x7 NCX on one thread ran at 5.5 GB/s). Whole
        # rows request the next bin row's whole rows before they fold: read in memory order, they ran
        # at about 15 GB/s on one thread from L3 (a vectorized max over the input, 51).
        ahead = row + 1 < row_hi and ask_ahead and (blocks or whole)
        p_next, s_d2, e_d2, s_h2, e_h2 = plane, s_d, e_d, s_h, e_h
        if ahead:
            n2, c2, od2, oh2 = _next_row(n, c, od, oh, n_chan, out_d, out_h)
            p_next, s_d2, e_d2, s_h2, e_h2 = _bin_rows_of(n2, c2, od2, oh2, win, xoff, xst)
        for w0 in range(0, in_w if blocks and not whole else 0, LANES):
            w0 = min(w0, in_w - LANES)  # the last block overlaps the one before
            if ahead:
                _prefetch_columns(flat, p_next, s_d2, e_d2, s_h2, e_h2, xst[2], xst[3], w0, LANES, step)
            at = plane + s_d * xst[2] + s_h * xst[3] + w0
            if not nan_top:  # one loop per rule, its flags constant
                _fold_rows(flat, at, bin_rows, mk, mv, mr, keyed, False, False)
            elif hold:
                _fold_rows(flat, at, bin_rows, mk, mv, mr, keyed, True, True)
            else:
                _fold_rows(flat, at, bin_rows, mk, mv, mr, keyed, True, False)
            for i in range(LANES):
                ci32[w0 + i] = mr[i] + np.int32((w0 + i) * st_w)
            if keyed:
                for i in range(LANES):
                    col[w0 + i] = mv[i]
            else:
                for i in range(LANES):
                    col[w0 + i] = mk[i]
        # Unit-stride rows of short bins: the bin's input rows folded whole (reads in memory order; the
        # blocks above read a bin row column block by column block) into the column maxima and int32 row
        # offsets, the columns' own offsets added after. First by "greater wins" with NaNs sticky, three
        # rows a pass, and their bins as if no column were NaN, NaNs sticky there too: without a NaN
        # every rule gives that result; with one, some bin comes out NaN, and the row is made again, its
        # rows folded by the rule a row a pass. (Testing the columns or the rows for NaN instead, in a
        # loop of its own or in the fold's, cost more than it saved: LLVM's vector loop of a reduction
        # took 64 of the 100 columns a pass and left the rest scalar.)
        first_row = plane + s_d * xst[2] + s_h * xst[3]  # the bins' first row
        o, oi = out[n, c, od, oh], idx[n, c, od, oh]
        if whole:
            if ahead and e_d2 == 1 and xst[3] == in_w:
                # The next bin's rows are one run of memory, which overlaps this one's where bins
                # share rows: requested a line at a time from where the requests stopped, into L1
                # (the next bin row reads them; into L2 only, kernel alone, one / two threads:
                # 8x64x100x100 -> 13x17 1.04x / 1.03x the time in L3, 1.37x / 1.30x from memory,
                # 16x64x120x120 -> 10x10 1.56x / 1.47x).
                lo = p_next + s_d2 * xst[2] + s_h2 * xst[3]
                hi = lo + e_h2 * in_w
                asked = asked if lo <= asked <= hi else lo
                for e in range(asked, hi, step):
                    prefetch_read_l1(flat, np.uint64(e))
                    asked = e + step  # (counted on: a division after the loop cost 1.03-1.23x the kernel's time)
            elif ahead:
                # (through the last column's line, wherever the row starts in its first)
                _prefetch_columns(flat, p_next, s_d2, e_d2, s_h2, e_h2, xst[2], xst[3], 0, in_w + step - 1, step)
            _fold_bin_rows_sticky(flat, first_row, in_w, bin_rows, col, ci32, st_w)
            if not _bins_of_columns(col, ci32, work, in_w, top, win, out_w, o, oi, base + g0, flat, first_row, xst[4],
                                    st_w, first_valid, nan_top, nan_last, nan_bottom, lookups, True):
                continue
            if not nan_top:  # one loop per rule, its flags constant
                _fold_bin_rows(flat, first_row, in_w, bin_rows, col, ci32, False, False)
            elif hold:
                _fold_bin_rows(flat, first_row, in_w, bin_rows, col, ci32, True, True)
            else:
                _fold_bin_rows(flat, first_row, in_w, bin_rows, col, ci32, True, False)
            _add_column_offsets(ci32, in_w, st_w)
        for jd in range(0 if blocks or whole else e_d):
            d = s_d + jd
            for jh in range(e_h):
                h = s_h + jh
                at = plane + d * xst[2] + h * xst[3]
                fb = d * st_d + h * st_h - g0
                if jd == 0 and jh == 0:
                    for w in range(in_w):
                        col[w] = flat[at + w * xst[4]]
                        col_idx[w] = fb + w * st_w
                    continue
                if xst[4] == 1:  # a unit-stride slice vectorizes; a strided read does not
                    _fold_row(flat[at:at + in_w], col, col_idx, fb, st_w, nan_top, hold, nan_bottom)
                else:
                    for w in range(in_w):
                        scratch[w] = flat[at + w * xst[4]]
                    _fold_row(scratch, col, col_idx, fb, st_w, nan_top, hold, nan_bottom)
        plain = _no_nan(col, in_w)
        if blocks or whole:  # (int32 indices in ci32)
            _bins_of_columns(col, ci32, work, in_w, top, win, out_w, o, oi, base + g0, flat, first_row, xst[4], st_w,
                             first_valid, nan_top, nan_last, nan_bottom, lookups, plain)
        else:
            _bins_of_columns(col, col_idx, work, in_w, top, win, out_w, o, oi, base + g0, flat, first_row, xst[4],
                             st_w, first_valid, nan_top, nan_last, nan_bottom, lookups, plain)


@njit(inline="always")
def _level_lookups(win, out_w, in_w, lookups):  # type: ignore[no-untyped-def]
    """lookups[4*ow:4*ow + 4] = where bin ow's two values (a, b) and their indices (ai, bi) are in the
    doubling levels of _bins_of_columns: the level t with 2**t <= the bin's width < 2**(t+1), at the
    bin's first column and at its last 2**t (both the column itself for a bin of one column)."""
    for ow in range(out_w):
        s_w, e_w = win[2, 0, ow], win[2, 2, ow]
        t = _level_of(e_w)
        a, ai = s_w, s_w  # level 0: the columns, work[:in_w] and ci[:in_w]
        if t > 0:
            a = _level_at(t, in_w) + s_w
            ai = a - in_w
        shift = e_w - (1 << t) if t > 0 else 0
        lookups[4 * ow], lookups[4 * ow + 1], lookups[4 * ow + 2], lookups[4 * ow + 3] = a, a + shift, ai, ai + shift


@njit(inline="always")
def _bins_of_columns(col, ci, work, in_w, top, win, out_w, o, oi, g, flat, at, xs_w, st_w, first_valid, nan_top,
                     nan_last, nan_bottom, lookups, plain):  # type: ignore[no-untyped-def]
    """Each bin of an output row from its columns' maxima col and their indices ci (relative to the
    bins' first tap, whose index is ``g``): ``ci`` is int32 where the rows were folded whole or in
    blocks (planes whose offsets fit it), twice the lanes a vector of the doubling levels
    (8x64x100x100 -> 13x17 NCX, kernel_ab one / two threads: 0.93x / 0.92x the time), else int64.
    Level t of the doubling is at work[_level_at(t, in_w)] (values) and ci[t * in_w] (indices).
    ``plain``: no column is NaN, as far as the caller knows; returns whether a bin came out NaN then
    (the outputs written are not the rules': the caller makes the row again)."""
    # Column maxima without a NaN are ordered by value, then by index, a total order: each level of
    # doubling is one vectorized pass over the row, and a bin is the greater of two values of the
    # level that covers it (8x64x100x100 -> 13x17, one thread: the bins' sequential folds took 1.8
    # of the call's 4.2 ms).
    if plain:
        for t in range(1, top + 1):
            half = 1 << (t - 1)
            lo_v, lo_i, at_v, at_i = _level_at(t - 1, in_w), (t - 1) * in_w, _level_at(t, in_w), t * in_w
            for w in range(in_w - 2 * half + 1):
                m, mi = _plain_better(work[np.uint64(lo_v + w + half)], ci[np.uint64(lo_i + w + half)],
                                      work[np.uint64(lo_v + w)], ci[np.uint64(lo_i + w)])
                work[np.uint64(at_v + w)], ci[np.uint64(at_i + w)] = m, mi
    nan = False
    for ow in range(out_w):
        s_w, e_w = win[2, 0, ow], win[2, 2, ow]
        if plain:
            a, b, ai, bi = lookups[4 * ow], lookups[4 * ow + 1], lookups[4 * ow + 2], lookups[4 * ow + 3]
            m, mi = _plain_better(work[np.uint64(b)], ci[np.uint64(bi)], work[np.uint64(a)], ci[np.uint64(ai)])
            km = as_key(m)
            nan |= km != km
        else:
            m, mi = col[s_w], ci[s_w]
            # _better orders every pair whatever their arrival: two chains of columns (even and
            # odd offsets) run side by side, then meet.
            m2, mi2 = m, mi
            for w in range(s_w + 1, s_w + e_w - 1, 2):
                m, mi = _kept(col[w], ci[w], m, mi, nan_top, nan_last, nan_bottom)
                m2, mi2 = _kept(col[w + 1], ci[w + 1], m2, mi2, nan_top, nan_last, nan_bottom)
            if e_w % 2 == 0:  # the last column
                m2, mi2 = _kept(col[s_w + e_w - 1], ci[s_w + e_w - 1], m2, mi2, nan_top, nan_last, nan_bottom)
            m, mi = _kept(m2, mi2, m, mi, nan_top, nan_last, nan_bottom)
        if first_valid:  # openvino: a NaN first tap is the result
            first = flat[at + s_w * xs_w]
            kf = as_key(first)
            if kf != kf:
                m, mi = first, s_w * st_w
        o[ow] = m
        oi[ow] = g + mi
    return nan


def adaptive_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``adaptive_width_inner`` takes per thread: column maxima (and a
    strided row's copy), their doubling levels up to the widest bin (at most the row), and the bins'
    lookups in them."""
    in_w = in5[4]
    top = max(1, in_w).bit_length() - 1
    return (2 + top) * in_w, (1 + top) * in_w + 4 * out5[4]
