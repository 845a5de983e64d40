"""Bounded caches of recent calls: their resolved attributes (``_ops``) and kernel plans (``_kernels._launch``).

A repeated call skips validating the same attributes again.

Validating and resolving a call's attributes and geometry took about half the time of a call on a small
input (1x8x14x14: 20 of 40 us). Only calls whose every attribute is a plain value are kept: a str, None,
a bool, an int, or a tuple or list of ints. Their key holds each value's type beside it, since Python
counts ``True == 1`` and ``(1, 2) == (True, 2)``: a key without types would let a rejected attribute
reuse an accepted one's result. Anything else (NumPy scalars and arrays, dtypes) is validated every time.
Errors are never kept: a failing call raises again on its next attempt.
"""

from __future__ import annotations

import threading
from typing import Any

from ._attributes import plain_ints

# Resolved calls kept, the oldest dropped first: a model's layers, a test's cases.
KEPT = 256


def plain_key(*values: Any) -> tuple[Any, ...] | None:
    """A key for ``values`` that tells their types apart, or None if one is not a plain value."""
    key: list[Any] = []
    for value in values:
        kind = type(value)
        if value is None or kind in (int, bool, str):
            key.append((kind, value))
        elif plain_ints(value):
            key.append((kind, tuple(value)))
        else:
            return None
    return tuple(key)


class CallCache:
    """A bounded mapping from keys to what recent calls resolved, the oldest dropped first, safe to share
    between threads. A key of None (not a plain call) is never kept."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._calls: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._calls)

    def values(self) -> list[Any]:
        """What is kept, the oldest first."""
        with self._lock:
            return list(self._calls.values())

    def get(self, key: tuple[Any, ...] | None) -> Any:
        return None if key is None else self._calls.get(key)

    def put(self, key: tuple[Any, ...] | None, call: Any) -> None:
        if key is None:
            return
        with self._lock:
            if len(self._calls) >= self._kept:
                self._calls.pop(next(iter(self._calls)), None)
            self._calls[key] = call

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
