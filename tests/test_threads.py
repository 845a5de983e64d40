"""The launcher's threads (``ndpool._kernels._threads``): every part of a call runs once, on its own
thread, errors reach the caller, and neither concurrent callers, sleeping workers nor a fork lose a
part or hang."""

from __future__ import annotations

import gc
import multiprocessing
import threading
import weakref
from typing import Any

import numpy as np
import pytest

from ndpool._kernels import _threads


class _Parts:
    """A job that records which thread ran each part and marks the elements it covered."""

    def __init__(self, count: int) -> None:
        self.hits = np.zeros(count, np.int64)
        self.threads: dict[tuple[int, int], int] = {}
        self.lock = threading.Lock()

    def __call__(self, lo: int, hi: int) -> None:
        with self.lock:
            self.threads[(lo, hi)] = threading.get_ident()
        self.hits[lo:hi] += 1


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_every_part_runs_once_each_on_its_own_thread(threads: int) -> None:
    """Parts are even, cover [0, count) once, and run on as many threads, the first on the caller's."""
    for count in (threads, 7, 1000):
        job = _Parts(count)
        _threads.split(job, count, threads)
        assert np.array_equal(job.hits, np.ones(count, np.int64)), (threads, count)
        assert len(job.threads) == min(threads, count), job.threads
        assert len(set(job.threads.values())) == len(job.threads), job.threads
        assert job.threads[min(job.threads)] == threading.get_ident()


def test_one_thread_runs_on_the_caller() -> None:
    job = _Parts(10)
    _threads.split(job, 10, 1)
    assert job.threads == {(0, 10): threading.get_ident()}


def test_a_workers_error_reaches_the_caller_and_the_crew_goes_on() -> None:
    def job(lo: int, hi: int) -> None:
        if lo > 0:
            raise ZeroDivisionError(f"part {lo}")

    with pytest.raises(ZeroDivisionError, match="part 5"):
        _threads.split(job, 10, 2)
    again = _Parts(10)
    _threads.split(again, 10, 2)
    assert np.array_equal(again.hits, np.ones(10, np.int64))


def test_the_callers_error_waits_for_the_workers() -> None:
    """The caller's part raising: the workers' parts are finished before the error leaves split."""
    done = []

    def job(lo: int, hi: int) -> None:
        if lo == 0:
            raise KeyError("first")
        threading.Event().wait(0.05)
        done.append(lo)

    with pytest.raises(KeyError):
        _threads.split(job, 10, 2)
    assert done == [5]


def test_concurrent_callers_each_get_all_their_parts() -> None:
    """Calls from several threads at once (one has the crew, the others the executor)."""
    results: list[bool] = []

    def caller() -> None:
        for _ in range(200):
            job = _Parts(64)
            _threads.split(job, 64, 2)
            results.append(bool(np.array_equal(job.hits, np.ones(64, np.int64))))

    callers = [threading.Thread(target=caller) for _ in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in callers), "a caller hung"
    assert len(results) == 800 and all(results)


def test_sleeping_workers_are_woken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers that polled their fill and went to sleep take the next job (a new crew that polls little)."""
    monkeypatch.setattr(_threads, "IDLE_POLLS", 10)
    monkeypatch.setattr(_threads, "_crews", {})
    for _ in range(20):
        job = _Parts(8)
        _threads.split(job, 8, 3)
        assert np.array_equal(job.hits, np.ones(8, np.int64))
        threading.Event().wait(0.002)
    crew = next(iter(_threads._crews.values()))
    threading.Event().wait(0.05)
    assert crew.asleep == 2  # (both workers sleeping between the calls)


def _split_in_child(queue: Any) -> None:
    job = _Parts(16)
    _threads.split(job, 16, 2)
    queue.put(job.hits.tolist())


def test_a_forked_child_splits_with_its_own_crew() -> None:
    """After a fork (threads do not survive it) the child makes its own crew instead of waiting on the
    parent's."""
    _threads.split(_Parts(16), 16, 2)  # the parent's crew exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_split_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung")
    assert queue.get(timeout=5) == [1] * 16


def test_the_crew_keeps_no_reference_to_a_job_or_its_error() -> None:
    """A call's job (whose closure holds its outputs) and a part's error are let go once split returns:
    kept, they held the last call's outputs, whose memory the next call could then not reuse (the
    stem's warm call grew the RSS by its 24.5 MB of outputs)."""
    job = _Parts(32)
    seen = weakref.ref(job)
    _threads.split(job, 32, 2)
    del job
    gc.collect()
    assert seen() is None

    class Failing:
        def __call__(self, lo: int, hi: int) -> None:
            if lo > 0:
                raise ValueError("part")

    failing = Failing()
    gone = weakref.ref(failing)
    with pytest.raises(ValueError):
        _threads.split(failing, 32, 2)
    del failing
    gc.collect()
    assert gone() is None
