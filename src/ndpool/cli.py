"""The ``ndpool`` command line: a thin layer over the public API. ``main(argv) -> exit status``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from . import adaptive_max_pool, max_pool


def _examples() -> int:
    """Pool the spec documents' example layers on deterministic data and print a summary."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    values, indices = adaptive_max_pool(x, [16, 16], semantics="openvino")
    print(f"AdaptiveMaxPool-8 (spec 000 example): input {x.shape} -> values {values.shape}, "
          f"indices {indices.shape} {indices.dtype}")
    print(f"  values[0, 0, 0, :4] = {values[0, 0, 0, :4]}, indices[0, 0, 0, :4] = {indices[0, 0, 0, :4]}")
    nxc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    pooled = max_pool(nxc, kernel=3, strides=2, pads_begin=1, pads_end=1)
    print(f"MaxPool (oneDNN Graph, NXC): input {nxc.shape} k3 s2 p1 -> {pooled.shape}")
    print(f"  values[0, 0, :4, 0] = {pooled[0, 0, :4, 0]}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args == ["run"]:
        return _examples()
    print(f"ndpool: unknown arguments {args}", file=sys.stderr)
    return 2
