"""PyTorch's max_pool{1,2,3}d / adaptive_max_pool{1,2,3}d (CPU, with indices) as a test oracle.

Input and output are NumPy arrays in NCX layout; ``channels_last=True`` runs torch on a channels_last
(2-D) / channels_last_3d (3-D) tensor, which takes a different CPU kernel but must give the same results.
bfloat16 (``ml_dtypes.bfloat16``) crosses the boundary bit-exactly as a uint16 view.

Facts about torch 2.13 (CPU) learned by running it:

* ``max_pool*d(return_indices=True)`` accepts f32, f64, f16, bf16, i8, u8, i32, i64;
  ``adaptive_max_pool*d`` accepts only the float types.
* NaN rule: take ``v > m or isnan(v)`` (a NaN wins, the last NaN's index is reported).
* ``padding`` must be <= kernel // 2 (not the dilated kernel); ``ceil_mode`` drops a last window that would start
  in the end padding (ndpool's ``ceil_torch``). Torch accepts some cases with ``P < dk`` in ceil mode.
* A window without an in-range tap (possible with dilation) gives -inf (int: the type's minimum), but its index
  is undefined (torch reports the clamped window start, possibly out of the plane).
* channels_last integer max pooling (2-D and 3-D, C > 1) rejects planes with more elements than the signed
  integer type of the element size can hold (i8 and u8: 127; "Expected input_depth * input_height *
  input_width <= std::numeric_limits<integer_t>::max()"). See :func:`channels_last_supported`.
* The channels_last_3d kernel drops the depth term from the index of a window whose in-range taps all equal the
  start value (-inf, or the integer minimum): it reports ``h*W + w`` of the first tap instead of
  ``d*H*W + h*W + w``. The NCX kernels and channels_last 2-D report the first tap correctly.
* 1-D max pooling with indices is the 2-D kernel on a unit axis; there is no channels_last 1-D.
* bfloat16 NaN outputs are canonicalized to 0x7FC0 (torch computes bf16 in float32 and rounds back): a -NaN or
  a NaN payload is lost, so the output is not bit-identical to the input element its index points at.
  f16, f32 and f64 keep the NaN's bits. :func:`restore_nan_bits` undoes this for comparisons.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import ml_dtypes
import numpy as np
import torch
import torch.nn.functional as F

BF16 = np.dtype(ml_dtypes.bfloat16)

#: Element types accepted by torch (checked by running it).
TORCH_MAXPOOL_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t)
    for t in (np.float32, np.float64, np.float16, BF16, np.int8, np.uint8, np.int32, np.int64)
)
TORCH_ADAPTIVE_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in (np.float32, np.float64, np.float16, BF16)
)


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch single-threaded: deterministic, and on a busy 2-core machine a multi-threaded call on a tiny
    tensor costs ~10 ms of OpenMP spinning instead of ~10 us. The global setting is restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.set_num_threads(before)


def to_torch(x: np.ndarray, *, channels_last: bool = False) -> torch.Tensor:
    """NCX NumPy array -> torch tensor, bit-exact (bf16 through a uint16 view)."""
    x = np.ascontiguousarray(x)
    if x.dtype == BF16:
        t = torch.from_numpy(x.view(np.uint16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(x)
    if channels_last:
        if x.ndim == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        elif x.ndim == 5:
            t = t.contiguous(memory_format=torch.channels_last_3d)
        else:
            raise ValueError("channels_last needs 2 or 3 spatial axes")
    return t


def from_torch(t: torch.Tensor) -> np.ndarray:
    """torch tensor (any memory format) -> C-contiguous NumPy array in logical (NCX) order, bit-exact."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy().view(BF16).copy()
    return t.numpy().copy()


def _tuple(v: int | Sequence[int], n: int) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(e) for e in v)
    if len(t) != n:
        raise ValueError(f"expected {n} entries, got {t}")
    return t


def channels_last_supported(x: np.ndarray) -> bool:
    """False where torch's channels_last integer max pooling rejects the plane size (see the module notes)."""
    if x.dtype.kind not in "iu":
        return True
    return int(np.prod(x.shape[2:])) <= np.iinfo(np.dtype(f"i{x.dtype.itemsize}")).max


def torch_max_pool(
    x: np.ndarray,
    *,
    kernel: int | Sequence[int],
    strides: int | Sequence[int],
    padding: int | Sequence[int] = 0,
    dilations: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    channels_last: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """torch.nn.functional.max_pool{n}d(..., return_indices=True) on NCX ``x``: (values, int64 indices).

    ``padding`` is symmetric (torch has no other), at most kernel // 2. Errors from torch propagate.
    """
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"rank {x.ndim} not supported")
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    with _single_thread():
        v, i = fn(
            to_torch(x, channels_last=channels_last),
            kernel_size=_tuple(kernel, n),
            stride=_tuple(strides, n),
            padding=_tuple(padding, n),
            dilation=_tuple(dilations, n),
            ceil_mode=bool(ceil_mode),
            return_indices=True,
        )
    return from_torch(v), from_torch(i)


def torch_adaptive_max_pool(
    x: np.ndarray, output_size: int | Sequence[int], *, channels_last: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """torch.nn.functional.adaptive_max_pool{n}d(..., return_indices=True) on NCX ``x``."""
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"rank {x.ndim} not supported")
    fn = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[n - 1]
    with _single_thread():
        v, i = fn(
            to_torch(x, channels_last=channels_last),
            output_size=_tuple(output_size, n),
            return_indices=True,
        )
    return from_torch(v), from_torch(i)


def torch_max_pool_output_shape(
    input_shape: Sequence[int],
    *,
    kernel: int | Sequence[int],
    strides: int | Sequence[int],
    padding: int | Sequence[int] = 0,
    dilations: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """The output shape torch gives (run on a meta tensor, so no data is touched)."""
    n = len(input_shape) - 2
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    with _single_thread():
        v, _ = fn(
            torch.empty(tuple(input_shape), device="meta"),
            kernel_size=_tuple(kernel, n),
            stride=_tuple(strides, n),
            padding=_tuple(padding, n),
            dilation=_tuple(dilations, n),
            ceil_mode=bool(ceil_mode),
            return_indices=True,
        )
    return tuple(v.shape)


def restore_nan_bits(x: np.ndarray, values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Where torch output a NaN, the NaN input element its (per-plane) index points at, bit-exact.

    Undoes torch's bf16 NaN canonicalization (see the module notes); other values are returned unchanged.
    """
    if values.dtype.kind in "iu" or values.size == 0:
        return values
    nan = np.isnan(values)
    if not nan.any():
        return values
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    idx = indices.reshape(n, c, -1)
    picked = np.take_along_axis(flat, np.clip(idx, 0, max(flat.shape[2] - 1, 0)), axis=2).reshape(values.shape)
    return np.where(nan, picked, values)
