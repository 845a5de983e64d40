"""The one way ndpool's kernels are compiled."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import types
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm
from numba import njit
from numba.core import caching

_KERNELS_DIR = os.path.dirname(os.path.abspath(__file__))

# LLVM's x86 pass that turns conditional moves inside loops back into branches guesses the branches
# predictable; a running maximum's "does this tap win" on real data is not, and every scalar loop that
# carries an index beside its value paid a mispredicted branch per tap or two (pool_tiles, k2s2 on
# 32x512x14x14 NCX with i64 indices, one thread: 6.8 ms with branches, 3.0 ms with cmov). The option changes only
# which instructions LLVM picks, never a result; it is process-wide, for what numba compiles after
# ndpool's import. (x86 only: elsewhere the option does not exist, and LLVM exits on an unknown one.)
if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86"):
    llvm.set_option("ndpool", "-x86-cmov-converter=false")

# numba's cache implementation base (``_CacheImpl`` before numba 0.61).
_CACHE_IMPL: Any = getattr(caching, "CacheImpl", None) or caching._CacheImpl


# Files of the package that numba never compiles (the launcher's Python): editing them leaves every
# kernel's machine code as it was, so they are not in the caches' stamp (a test checks that they
# define no compiled function).
PYTHON_ONLY = frozenset({"__init__.py", "_launch.py", "_outputs.py", "_precompile.py", "_threads.py"})


@functools.cache
def kernel_sources_digest() -> bytes:
    """A hash of every source file of the kernels package that numba compiles."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(_KERNELS_DIR)):
        if name.endswith(".py") and name not in PYTHON_ONLY:
            with open(os.path.join(_KERNELS_DIR, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.digest()


class _AllSourcesLocator:
    """numba's own cache locator for a kernel, with the whole package's sources as its stamp.

    numba stamps a cached function with its own file only, but a kernel's machine code includes the
    helpers it calls from other files (they are compiled into it): after an edit of a helper (or a
    ``git pull`` in an editable install) the caller's stale code would load, and its results would
    be wrong. Any change to any kernel source now recompiles every kernel.
    """

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        if os.path.dirname(os.path.abspath(py_file)) != _KERNELS_DIR:
            return None
        for locator_class in _CACHE_IMPL._locator_classes:
            if locator_class is cls:
                continue
            locator = locator_class.from_function(py_func, py_file)
            if locator is not None:
                locator.get_source_stamp = kernel_sources_digest  # shadows the class's method
                return locator
        return None


_CACHE_IMPL._locator_classes.insert(0, _AllSourcesLocator)

try:
    import fcntl
except ImportError:  # (Windows: no lock; the precompile then compiles in one process)
    fcntl = None  # type: ignore[assignment]

# Whether two processes may compile the same kernels into the cache at once (the precompile's workers).
CONCURRENT_SAVES = fcntl is not None


class _LockedCacheFile(caching.IndexDataCacheFile):
    """numba's index and data files of one cached function, each save under an exclusive lock.

    numba's save reads the function's index, numbers a data file for the new entry and writes both:
    two processes compiling signatures of one function at once (a helper every kernel calls, in the
    precompile's workers) could number theirs alike, and one's machine code would then be filed under
    the other's signature. Under the lock each save sees the other's entries.
    """

    def save(self, key: Any, data: Any) -> None:
        os.makedirs(self._cache_path, exist_ok=True)
        with open(self._index_path + ".lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                super().save(key, data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


# Cached on disk, releasing the GIL (``_launch`` runs them on threads), and without numba's
# reference counting: with it, every array handed to an inlined helper inside a hot loop cost an
# atomic incref/decref pair, 60% of the NCX stem's time. So kernels allocate nothing; their
# scratch comes in as arguments.
_cached_njit = njit(cache=True, nogil=True, _nrt=False)  # type: ignore[call-overload]


def kernel(func: Callable[..., Any]) -> Any:
    """``func`` compiled as a kernel (see above), its cache saved under a lock."""
    dispatcher = _cached_njit(func)
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if CONCURRENT_SAVES and type(cache_file) is caching.IndexDataCacheFile:
        cache_file.__class__ = _LockedCacheFile
    return dispatcher


@functools.cache
def pure(jitted: Any) -> Any:
    """The pure-Python version of a jitted helper, whose calls of other jitted helpers are their pure-Python
    versions too, for the launcher's layout arithmetic. ``py_func`` alone still calls the other helpers'
    dispatchers, and those compile on their first call (uncached: 0.9 s with numba's compiler starting up),
    which made the first call of a process 1.5-1.9 s with every kernel already in the cache."""
    func = jitted.py_func
    names = dict(func.__globals__)
    for name in func.__code__.co_names:
        value = names.get(name)
        if hasattr(value, "py_func") and hasattr(value, "overloads"):  # a numba dispatcher
            names[name] = pure(value)
    return types.FunctionType(func.__code__, names, func.__name__, func.__defaults__, func.__closure__)
