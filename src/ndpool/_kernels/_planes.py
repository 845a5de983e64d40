"""MaxPool on NCX data, one (n, c) plane at a time, for rows too short to sweep one at a time.

With the stem's 56-wide rows a row kernel runs about a million short loops (9 per output row), and
their setup dominates. Here each plane is split once into stride phases (phase (rd, rh, rw) holds
x[i*sd + rd, j*sh + rh, k*sw + rw]); then a tap is a constant shift in one phase, and EVERY output
takes the tap in ONE contiguous loop over the outputs laid out with the phases' row strides.

Each phase has margins around it, wide enough for every tap of every output, that hold a value no
tap can win with (-inf, or the integer minimum: never greater, never NaN). So border outputs need
no path of their own: a tap out of range for them reads the margin and changes nothing. Only their
seed differs: every output starts from its own first in-range tap (the few whose first tap is not
tap 0 are listed once per call), or from ``lowest`` (openvino), and empty windows from the empty
value. Taps then come in row-major order (the seed tap again changes nothing), so the first-maximum
rule holds as in _loops. (Border rows and columns by runs and one window at a time were 35% of the
3-D workload.)

When the phases' rows are as long as the output rows (no margins, as in k2 s2), the loop runs on the
output itself; otherwise on a scratch block copied out at the end. While the taps run, index slots
hold the number of the winning tap (a constant per loop: vectorizes); at the end each becomes the
index of the output's window origin plus that tap's offset.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._jit import kernel, pure
from ._loops import _index_params, _rules, _seed_at, _split_row, _update_pair_at

# Index slots that are not tap numbers: the plane's first element (openvino's start), an empty window.
_SLOT_PLANE_FIRST = -1
_SLOT_EMPTY = -2


@njit(inline="always")
def _axis_layout(size, out, stride, s0, k, dil):  # type: ignore[no-untyped-def]
    """(left margin, length with margins) of one axis's phases: output o's tap j reads phase
    position o + (s0 + j*dil) // stride + margin."""
    big = (size + stride - 1) // stride
    q_lo, q_hi = s0 // stride, (s0 + (k - 1) * dil) // stride
    margin = max(0, -q_lo)
    return margin, max(big + margin, out + q_hi + margin)


@njit(inline="always")
def _phase_layout(p, out_d, out_h, out_w):  # type: ignore[no-untyped-def]
    """The phases' layout: left margins and lengths per axis, elements per phase, the span of the
    outputs laid out with the phases' strides, and whether that layout is the output's own."""
    m_d, len_d = _axis_layout(p[15], out_d, p[22], p[36], p[31], p[39])
    m_h, len_h = _axis_layout(p[16], out_h, p[23], p[37], p[32], p[40])
    m_w, len_w = _axis_layout(p[17], out_w, p[24], p[38], p[33], p[41])
    span = ((out_d - 1) * len_h + (out_h - 1)) * len_w + out_w
    in_place = len_w == out_w and (out_d == 1 or len_h == out_h)
    # Phases per axis: an axis shorter than its stride has fewer (taps into the others read nothing).
    ph_d, ph_h, ph_w = min(p[22], p[15]), min(p[23], p[16]), min(p[24], p[17])
    return m_d, m_h, m_w, len_d, len_h, len_w, len_d * len_h * len_w, span, in_place, ph_d, ph_h, ph_w


@kernel
def pool_planes(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    _, n_chan, out_d, out_h, out_w = out.shape
    want_idx, seed_lowest, nan_takes, hold = _rules(p)
    off_n, off_c, st_d, st_h, st_w, empty_idx, use_off = _index_params(p)
    in_d, in_h, in_w = p[15], p[16], p[17]
    sd, sh, sw = p[22], p[23], p[24]
    k_d, k_h, k_w = p[31], p[32], p[33]
    dd, dh, dw = dil[0], dil[1], dil[2]
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    never_wins = empty[1]
    o_all = out.reshape(-1)
    oi_all = idx.reshape(-1)
    plane_out = out_d * out_h * out_w
    m_d, m_h, m_w, _, len_h, len_w, plen, span, in_place, ph_d, ph_h, ph_w = _phase_layout(p, out_d, out_h, out_w)
    n_phase = ph_d * ph_h * ph_w * plen
    phase = work[:n_phase]
    phase[:] = never_wins  # margins and short phases' ends; the splits rewrite only the rest
    acc_buf = work[n_phase:n_phase + (0 if in_place else span)]
    n_taps = k_d * k_h * k_w
    tap_start = iwork[:n_taps]  # where each tap reads output 0 in the phases
    tap_off = iwork[n_taps:2 * n_taps]  # each tap's index offset from the window's origin
    block_base = iwork[2 * n_taps:2 * n_taps + (span if want_idx else 0)]  # each output's origin index
    rest = 2 * n_taps + (span if want_idx else 0)
    acc_idx_buf = iwork[rest:rest + (0 if in_place or not want_idx else span)]
    rest += 0 if in_place or not want_idx else span
    # Outputs whose seed is not tap 0: (position in the span, first in-range tap or _SLOT_EMPTY).
    border_at = iwork[rest:rest + plane_out]
    border_tap = iwork[rest + plane_out:rest + 2 * plane_out]
    s0_d, s0_h, s0_w = p[36], p[37], p[38]
    t = 0
    for jd in range(k_d):
        pos_d = s0_d + jd * dd
        for jh in range(k_h):
            pos_h = s0_h + jh * dh
            for jw in range(k_w):
                pos_w = s0_w + jw * dw
                r_d, r_h, r_w = pos_d % sd, pos_h % sh, pos_w % sw
                tap_start[t] = ((((r_d * ph_h + r_h) * ph_w + r_w) * plen
                                 + ((pos_d // sd + m_d) * len_h + pos_h // sh + m_h) * len_w + pos_w // sw + m_w)
                                if r_d < ph_d and r_h < ph_h and r_w < ph_w else -1)  # -1: in range nowhere
                tap_off[t] = pos_d * st_d + pos_h * st_h + pos_w * st_w
                t += 1
    n_border = 0
    for od in range(out_d):
        f_d, e_d = win[0, 1, od], win[0, 2, od]
        for oh in range(out_h):
            f_h, e_h = win[1, 1, oh], win[1, 2, oh]
            for ow in range(out_w):
                f_w, e_w = win[2, 1, ow], win[2, 2, ow]
                j = (od * len_h + oh) * len_w + ow
                if want_idx:
                    block_base[j] = od * sd * st_d + oh * sh * st_h + ow * sw * st_w
                if f_d >= e_d or f_h >= e_h or f_w >= e_w:
                    border_at[n_border], border_tap[n_border] = j, _SLOT_EMPTY
                    n_border += 1
                elif f_d > 0 or f_h > 0 or f_w > 0:
                    border_at[n_border], border_tap[n_border] = j, (f_d * k_h + f_h) * k_w + f_w
                    n_border += 1
    for plane_no in range(row_lo, row_hi):
        n = plane_no // n_chan
        c = plane_no % n_chan
        plane = xoff + n * xs_n + c * xs_c
        base = n * off_n + c * off_c
        ob = plane_no * plane_out
        # Split the plane into its phases (each input element copied once). (Splitting a d slice
        # just before the outputs that need it, and running the taps a d slice at a time, measured
        # no faster on the 3-D workload.)
        for d in range(in_d):
            for h in range(in_h):
                first = ((d % sd) * ph_h + h % sh) * ph_w * plen
                row_at = ((d // sd + m_d) * len_h + h // sh + m_h) * len_w + m_w
                _split_row(flat, plane + d * xs_d + h * xs_h, xs_w, in_w, sw, plen, phase, first + row_at)
        # (One call per array pair: a phi of the output and the scratch block does not vectorize, and
        # int32 indices are not the int64 scratch's type.)
        if in_place:
            _plane_taps(phase, o_all, oi_all, ob, empty, span, tap_start, tap_off, block_base, border_at, border_tap,
                        n_border, base, empty_idx, use_off, want_idx, seed_lowest, nan_takes, hold)
        else:
            _plane_taps(phase, acc_buf, acc_idx_buf, 0, empty, span, tap_start, tap_off, block_base, border_at,
                        border_tap, n_border, base, empty_idx, use_off, want_idx, seed_lowest, nan_takes, hold)
        if not in_place:
            for od in range(out_d):
                for oh in range(out_h):
                    at = (od * len_h + oh) * len_w
                    to = ob + (od * out_h + oh) * out_w
                    _seed_at(acc_buf, at, o_all, to, oi_all, out_w, 0, 0, False)
                    if want_idx:
                        for j in range(out_w):
                            oi_all[to + j] = acc_idx_buf[at + j]


@kernel  # called once per plane, with the output itself or the scratch block
def _plane_taps(phase, acc, acc_idx, a0, empty, span, tap_start, tap_off, block_base, border_at, border_tap,  # type: ignore[no-untyped-def]
                n_border, base, empty_idx, use_off, want_idx, seed_lowest, nan_takes, hold):
    """Seed the span of outputs at ``acc[a0:]``, fold every tap into it from the phases, and turn
    the winning tap numbers into indices."""
    lowest = empty[0]
    n_taps = tap_start.shape[0]
    if seed_lowest:  # openvino: lowest, with the plane's first index
        _seed_at(empty, -1, acc, a0, acc_idx, span, _SLOT_PLANE_FIRST, 0, want_idx)
    else:
        # (A tap 0 in range nowhere seeds nothing real: then every output is in the border list.)
        _seed_at(phase, max(tap_start[0], 0), acc, a0, acc_idx, span, 0, 0, want_idx)
    for b in range(n_border):
        j, first_tap = a0 + border_at[b], border_tap[b]
        if first_tap == _SLOT_EMPTY:
            acc[j] = lowest
        elif not seed_lowest:
            acc[j] = phase[tap_start[first_tap] + border_at[b]]
        if want_idx and (first_tap == _SLOT_EMPTY or not seed_lowest):
            acc_idx[j] = first_tap
    # The taps in row-major order, two per pass (a lone last one is paired with itself: applied
    # again, a tap changes nothing). Taps in range nowhere are left out. Pairs halve the loads and
    # stores of the running maxima: with indices 10-15% faster (3-D, stem), values about even.
    # (Prefetching the next plane during the taps measured no faster: the split streams from L3
    # at the copy rate already.)
    ta = 0 if seed_lowest else 1
    while ta < n_taps:
        if tap_start[ta] < 0:
            ta += 1
            continue
        tb = ta + 1
        while tb < n_taps and tap_start[tb] < 0:
            tb += 1
        tb = ta if tb >= n_taps else tb
        _update_pair_at(phase, tap_start[ta], tap_start[tb], acc, a0, acc_idx, span, ta, tb, 0, want_idx,
                        nan_takes, hold)
        ta = max(ta, tb) + 1
    if want_idx:
        for j in range(span):
            k = np.uint64(a0 + j)
            slot = acc_idx[k]
            acc_idx[k] = base + (block_base[j] + tap_off[slot] if slot >= 0 else 0)
        for b in range(n_border):
            if border_tap[b] == _SLOT_EMPTY:
                acc_idx[a0 + border_at[b]] = empty_idx + use_off * base


def planes_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_planes`` takes per thread (see its layout)."""
    _, _, out_d, out_h, out_w = out5
    *_, plen, span, in_place, ph_d, ph_h, ph_w = pure(_phase_layout)([int(v) for v in p], out_d, out_h, out_w)
    n_taps = int(np.prod(p[31:34]))
    acc = 0 if in_place else span
    return ph_d * ph_h * ph_w * plen + acc, 2 * n_taps + 2 * span + 2 * out_d * out_h * out_w


def planes_fit(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> bool:
    """Whether the phases with their margins stay within a few planes (huge pads or dilations give
    margins as wide as the taps reach; then the row loop does without)."""
    plane = int(np.prod(in5[2:])) + int(np.prod(out5[2:]))
    elements, int64s = planes_scratch(p, in5, out5)
    return elements + int64s <= 4 * plane + (1 << 16)
