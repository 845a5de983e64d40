"""Compiled numba kernels (private). Import fails cleanly if numba is missing."""

from ._launch import adaptive_max_pool_numba, max_pool_numba

__all__ = ["adaptive_max_pool_numba", "max_pool_numba"]
