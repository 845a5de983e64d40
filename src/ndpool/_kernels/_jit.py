"""The one way ndpool's kernels are compiled."""

from __future__ import annotations

from numba import njit

# Cached on disk, releasing the GIL (``_launch`` runs them on threads), and without numba's
# reference counting: with it, every array handed to an inlined helper inside a hot loop cost an
# atomic incref/decref pair, 60% of the NCX stem's time. So kernels allocate nothing; their
# scratch comes in as arguments.
kernel = njit(cache=True, nogil=True, _nrt=False)  # type: ignore[call-overload]
