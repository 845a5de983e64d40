"""NCX data with small planes: a block of planes transposed so that the planes are the lanes.

On 14x14 planes (AdaptiveMaxPool 14x14 -> 7x7, 512 channels) every row loop pays its setup for a
handful of outputs, and no loop along w is long enough to vectorize. Here a block of planes is
copied into scratch with the planes adjacent (as NXC data with the block's planes for channels), the
channels-inner loop pools it there, vectorized across the planes, and the block's outputs are copied
back into the NCX output. The copies stay in L1/L2; the input is read once.

The inner loop sees one image whose channels are the block's planes, so it computes indices within
a plane; each plane's own offset (n * off_n + c * off_c) is added when copying back. That is right
for every output only where no window is empty (an empty window's index is a preset's constant):
the dispatch (``_launch``) sends no such geometry here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._channel_blocks import LANES, pool_channel_blocks
from ._jit import kernel, pure
from ._loops import channels_inner_scratch, pool_channels_inner

# Elements of one block's input copy (256 KB of f32): within L2 with its outputs beside it.
BLOCK_ELEMENTS = 1 << 16
# Lanes (planes) per block: at least a block of pool_channel_blocks (on 100x100 planes, two threads,
# 16 lanes through pool_channels_inner took 3.1 ms, 32 through blocks 1.9); up to 256 (on 14x14
# planes, one thread, 64 lanes took 5.5 ms, 128 4.6, 256 4.3: the inner loop pays per output,
# whatever its lanes).
MIN_LANES, MAX_LANES = 32, 256


@njit(inline="always")
def lanes_for(plane_in):  # type: ignore[no-untyped-def]
    """Planes per block: as many as BLOCK_ELEMENTS of input holds, a multiple of 16, within the bounds."""
    lanes = BLOCK_ELEMENTS // max(plane_in, 1) // 16 * 16
    return max(MIN_LANES, min(MAX_LANES, lanes))


@kernel
def pool_plane_lanes(flat, xoff, xst, out, idx, win, dil, p, empty, row_lo, row_hi, work, iwork):  # type: ignore[no-untyped-def]
    n_img, n_chan, out_d, out_h, out_w = out.shape
    in_d, in_h, in_w = p[15], p[16], p[17]
    want_idx = p[0] != 0
    off_n, off_c = p[4], p[5]
    xs_n, xs_c, xs_d, xs_h, xs_w = xst[0], xst[1], xst[2], xst[3], xst[4]
    plane_in, plane_out = in_d * in_h * in_w, out_d * out_h * out_w
    lanes = lanes_for(plane_in)
    planes = n_img * n_chan
    o_all, oi_all = out.reshape(-1), idx.reshape(-1)
    # Scratch: the block's input, its values; its indices, the inner loop's strides and parameters.
    blk_in, blk_out = work[:plane_in * lanes], work[plane_in * lanes:(plane_in + plane_out) * lanes]
    inner_work = work[(plane_in + plane_out) * lanes:]
    blk_idx = iwork[:plane_out * lanes]
    ist = iwork[plane_out * lanes:plane_out * lanes + 5]
    ip = iwork[plane_out * lanes + 5:plane_out * lanes + 5 + p.shape[0]]
    lane_at = iwork[plane_out * lanes + 5 + p.shape[0]:(plane_out + 1) * lanes + 5 + p.shape[0]]
    inner_iwork = iwork[(plane_out + 1) * lanes + 5 + p.shape[0]:]
    for i in range(p.shape[0]):
        ip[i] = p[i]
    ip[4], ip[5] = 0, 0  # indices within the plane: offsets are added on the way out
    uniform = xs_n == n_chan * xs_c  # the planes of all images evenly spaced
    zero = np.int64(0)
    for block in range(row_lo, row_hi):
        p0 = block * lanes
        nl = min(lanes, planes - p0)
        ist[0], ist[1], ist[2], ist[3], ist[4] = 0, 1, in_h * in_w * nl, in_w * nl, nl
        for lane in range(nl):
            lane_at[lane] = xoff + ((p0 + lane) // n_chan) * xs_n + ((p0 + lane) % n_chan) * xs_c
        # Lanes innermost: the stores are contiguous, the loads gathered (the other order scattered
        # the stores, slower).
        for d in range(in_d):
            for h in range(in_h):
                for w in range(in_w):
                    at, to = d * xs_d + h * xs_h + w * xs_w, ((d * in_h + h) * in_w + w) * nl
                    if uniform:  # planes evenly spaced: a strided load
                        a0 = lane_at[0] + at
                        for lane in range(nl):
                            blk_in[np.uint64(to + lane)] = flat[np.uint64(a0 + lane * xs_c)]
                    else:
                        for lane in range(nl):
                            blk_in[np.uint64(to + lane)] = flat[np.uint64(lane_at[lane] + at)]
        o5 = blk_out[:plane_out * nl].reshape((1, out_d, out_h, out_w, nl))
        # (The block's indices are int64 scratch even without indices: one type whatever the output's.)
        i5 = blk_idx[:plane_out * nl].reshape((1, out_d, out_h, out_w, nl))
        # (zero: an int64, not the literal 0, so that the calls take the kernels' own compiled
        # versions; a literal compiled them again, 10 s per element type)
        if nl >= LANES:  # a block of lanes at a time, in registers (the last block may be short)
            pool_channel_blocks(blk_in, zero, ist, o5, i5, win, dil, ip, empty, zero, out_d * out_h, inner_work,
                                inner_iwork)
        else:
            pool_channels_inner(blk_in, zero, ist, o5, i5, win, dil, ip, empty, zero, out_d * out_h, inner_work,
                                inner_iwork)
        for lane in range(nl):
            dst = (p0 + lane) * plane_out
            for q in range(plane_out):
                o_all[np.uint64(dst + q)] = blk_out[np.uint64(q * nl + lane)]
            if want_idx:
                n, c = (p0 + lane) // n_chan, (p0 + lane) % n_chan
                offset = n * off_n + c * off_c
                for q in range(plane_out):
                    oi_all[np.uint64(dst + q)] = blk_idx[np.uint64(q * nl + lane)] + offset


def plane_lanes_blocks(planes: int, plane_in: int) -> int:
    """Blocks of planes ``pool_plane_lanes`` works in (its units of work)."""
    return -(-planes // pure(lanes_for)(plane_in))


def plane_lanes_scratch(p: np.ndarray, in5: tuple[int, ...], out5: tuple[int, ...]) -> tuple[int, int]:
    """(elements, int64s) of scratch ``pool_plane_lanes`` takes per thread: a block's input and
    outputs, and the inner loop's own scratch for a block's lanes."""
    plane_in, plane_out = in5[2] * in5[3] * in5[4], out5[2] * out5[3] * out5[4]
    lanes = pure(lanes_for)(plane_in)
    inner = channels_inner_scratch(p, in5, out5[:4] + (lanes,))
    return (plane_in + plane_out) * lanes + inner[0], (plane_out + 1) * lanes + 5 + p.size + inner[1]
