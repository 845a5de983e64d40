"""The launcher's threads: a call's parts run at once, one per thread (numba's thread count).

The calling thread runs the first part itself. The others go to a crew of worker threads that, once
they have worked, poll for the next job for a while without the GIL (``_handoff``) before they sleep:
a worker asleep takes a wake-up to start (about 20 us on this VM), and so does a caller asleep on its
result. Calls back to back (a model's layers, a benchmark's burst) find the workers polling. A crew
serves one call at a time; a call that finds it busy (calls from several threads at once, dask's
tasks) runs its parts on a ``ThreadPoolExecutor`` as before. A process forked from one with a crew
makes its own (threads do not survive a fork).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import _handoff

# Loads a caller makes after publishing a job, before it takes the GIL back: about 5 us here, time for
# a polling worker to take the GIL, unpack its part and enter its kernel (with fewer, the caller often
# took the GIL back first and the worker slept on it: 24-28 us a no-op call, against 6-7).
PUBLISH_POLLS = 30_000
# Loads a worker makes polling for the next job before it sleeps: a few milliseconds here, longer than
# the Python between two calls, short enough not to hold a core long after the last one.
IDLE_POLLS = 10_000_000

_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}
_crews: dict[tuple[int, int], _Crew] = {}


def split(job: Callable[[int, int], None], count: int, threads: int) -> None:
    """``job(lo, hi)`` over [0, count) in even parts, one per thread: with the crew, the first on the
    calling thread; when the crew is busy, all on the executor's threads."""
    parts = split_parts(count, threads)
    if len(parts) <= 1:
        job(0, count)
        return
    crew = _crew(len(parts) - 1)
    if crew.lock.acquire(blocking=False):
        try:
            crew.run(job, parts)
        finally:
            crew.lock.release()
        return
    on_pool(job, parts)


def split_parts(count: int, threads: int) -> list[tuple[int, int]]:
    """[0, count) in even parts (lo, hi), at most ``threads`` of them (none when count is 0)."""
    if count <= 0:
        return []
    step = math.ceil(count / max(1, min(threads, count)))
    return [(lo, min(lo + step, count)) for lo in range(0, count, step)]


def on_pool(job: Callable[[int, int], None], parts: list[tuple[int, int]]) -> None:
    """Every part on a ``ThreadPoolExecutor``'s threads (one per part), waited for."""
    futures = [_pool(len(parts)).submit(job, lo, hi) for lo, hi in parts]
    for f in futures:
        f.result()


def warm() -> None:
    """Compile (or load) the crew's compiled half (``_handoff``) before the first call needs it."""
    _handoff.warm(_flags(1))


def _flags(workers: int) -> np.ndarray:
    """A crew's flags: the job number's slot, then each worker's "done" slot, a cache line apart."""
    return np.zeros(_handoff.done_slot(workers) + 1, np.int64)


def _pool(threads: int) -> ThreadPoolExecutor:
    with _lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="ndpool")
        return _pools[threads]


def _crew(workers: int) -> _Crew:
    key = (os.getpid(), workers)
    with _lock:
        if key not in _crews:
            _crews[key] = _Crew(workers)
        return _crews[key]


class _Crew:
    """Worker threads that run all parts of a job but the caller's (see the module's docstring)."""

    def __init__(self, workers: int) -> None:
        self.lock = threading.Lock()  # one call at a time
        self.flags = _flags(workers)
        _handoff.warm(self.flags)
        self.number = 0  # the last job's
        self.parts: list[tuple[int, int]] = []
        self.job: Callable[[int, int], None] | None = None
        self.errors: list[BaseException | None] = [None] * workers
        self.wake = threading.Condition()
        self.asleep = 0  # workers waiting on wake
        for k in range(workers):
            threading.Thread(target=self._work, args=(k,), name=f"ndpool-crew-{k}", daemon=True).start()

    def run(self, job: Callable[[int, int], None], parts: list[tuple[int, int]]) -> None:
        """parts[0] on this thread, parts[1 + k] on worker k; the first error raised, once all are done."""
        self.job, self.parts = job, parts
        self.errors = [None] * (len(parts) - 1)
        self.number += 1
        _handoff.publish(self.flags, _handoff.JOB, self.number, PUBLISH_POLLS)
        with self.wake:
            if self.asleep:
                self.wake.notify_all()
        try:
            job(*parts[0])
        finally:
            for k in range(len(parts) - 1):
                _handoff.poll(self.flags, _handoff.done_slot(k), self.number, -1)
            # (the job holds the call's outputs, and an error its frames: the crew keeps neither, so that
            # an output's memory is free for the next call once the caller lets go of it; see _outputs)
            errors, self.errors = self.errors, []
            self.job, self.parts = None, []
        for error in errors:
            if error is not None:
                raise error

    def _work(self, k: int) -> None:
        number = 1
        waiting = not _handoff.poll(self.flags, _handoff.JOB, number, IDLE_POLLS)
        while True:
            if waiting:
                with self.wake:
                    self.asleep += 1
                    while self.flags[_handoff.JOB] < number:
                        self.wake.wait()
                    self.asleep -= 1
            job, (lo, hi) = self.job, self.parts[1 + k]
            try:
                assert job is not None
                job(lo, hi)
            except BaseException as error:  # (raised on the caller's thread)
                self.errors[k] = error
            job = None  # (see run)
            waiting = not _handoff.post_then_poll(self.flags, _handoff.done_slot(k), number, _handoff.JOB,
                                                  number + 1, IDLE_POLLS)
            number += 1

