"""ndpool benchmark suite: the workloads, the runner and the table.

Importable (``WORKLOADS``, ``run_suite``, ``format_table``, ``measure_rss``) so that ``ndpool bench`` can call it;
``benchmarks/run.py`` is the command-line front end.

Method: every engine runs the same logical data in one process with 2 threads. Each candidate gets one untimed
warm-up call, then the candidates are timed round-robin (so slow drift of a noisy machine hits all of them alike),
BURST calls in a row per turn, and the minimum is kept. A peer is timed on every layout it takes natively and
reported on its fastest.
The roofline is a memory copy of as many bytes as the op reads and writes, timed in the same rounds.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

# The sibling module must import whether this file is run, imported from benchmarks/, or loaded by path.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import _peers  # noqa: E402

DEFAULT_REPEAT = 5  # rounds
QUICK_REPEAT = 2
# Calls in a row per candidate and round. A call right after another engine's ran slower: the engines' worker
# threads spin for a while after returning (onnxruntime's by default, OpenVINO's TBB arena, torch's OpenMP) and
# take the cores the next engine needs, and its data was evicted from the caches. ndpool on the k13 SPP workload:
# 3.8 ms in a row, 6.5 ms on the call right after an OpenVINO call (benchmarks run side by side, 2 threads); the
# peers suffered alike after one another. With one call per turn no sample was ever undisturbed.
BURST = 3
# ... and for fast calls, more of them in a row: a burst goes on until it has lasted this long (at most
# BURST_MAX calls). Three calls of a millisecond gave each engine two undisturbed samples a round, and the
# same engine's minimum moved 1.3x between two rows of one run; every candidate gets the same rule.
BURST_MIN_S = 0.02
BURST_MAX = 40
# A call slower than this is not repeated: its warm-up time is its figure. OpenVINO's MaxPool-8 with indices takes
# a minute per call on the SPP workloads; repeating it would make the suite hours long for a figure that is
# 1000x off the others anyway.
SLOW_S = 1.0


@dataclass(frozen=True)
class Workload:
    name: str
    op: str  # "max_pool" or "adaptive_max_pool"
    shape: tuple[int, ...]  # logical N, C, spatial... (NCX order whatever the layout)
    dtype: str = "f32"  # "f32", "f16", "bf16"
    layout: str = "NXC"  # ndpool's data_format
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()  # the same at begin and end
    output_size: tuple[int, ...] = ()
    indices: str | None = None  # None (values only), "i64" or "i32"


def _pool(family: str, shape: tuple[int, ...], k: int, s: int, p: int, dtype: str = "f32",
          indices: str | None = None) -> list[Workload]:
    """One MaxPool geometry (the same on every spatial axis) in both layouts."""
    rank = len(shape) - 2
    return [
        Workload(f"{family} {dtype} {layout}" + (f" idx-{indices}" if indices else ""), "max_pool", shape,
                 dtype, layout, kernel=(k,) * rank, strides=(s,) * rank, pads=(p,) * rank, indices=indices)
        for layout in ("NXC", "NCX")
    ]


def _adaptive(shape: tuple[int, ...], size: tuple[int, ...], indices: str, layout: str) -> Workload:
    name = f"adaptive {'x'.join(map(str, shape))}->{'x'.join(map(str, size))} {layout} idx-{indices}"
    return Workload(name, "adaptive_max_pool", shape, layout=layout, output_size=size, indices=indices)


STEM = (32, 64, 112, 112)
SPP = (1, 16, 512, 512)
WORKLOADS: list[Workload] = [
    # 1. ResNet stem
    *(w for dt in ("f32", "f16", "bf16") for w in _pool("stem-k3s2p1", STEM, 3, 2, 1, dtype=dt)),
    # 2. non-overlapping windows
    *_pool("k2s2", (1, 256, 256, 256), 2, 2, 0),
    # 3. 3-D
    *_pool("3d-k3s2p1", (2, 32, 32, 64, 64), 3, 2, 1),
    # 4. 1-D
    *_pool("1d-k5s1p2", (8, 128, 16384), 5, 1, 2),
    # 5. large windows (YOLO SPP)
    *_pool("spp-k13s1p6", SPP, 13, 1, 6),
    *_pool("spp-k15s1p7", SPP, 15, 1, 7),
    # 6. with indices
    *(w for it in ("i64", "i32") for w in _pool("stem-k3s2p1", STEM, 3, 2, 1, indices=it)),
    *(w for it in ("i64", "i32") for w in _pool("spp-k13s1p6", SPP, 13, 1, 6, indices=it)),
    *(w for it in ("i64", "i32") for w in _pool("spp-k15s1p7", SPP, 15, 1, 7, indices=it)),
    # 7. AdaptiveMaxPool: torch has only i64 indices, OpenVINO's CPU plugin only i32, so both;
    # ndpool in both layouts, as the MaxPool rows (torch is fastest channels-last here).
    *(_adaptive(shape, size, it, layout) for shape, size in [
        ((32, 512, 14, 14), (7, 7)),
        ((16, 64, 224, 224), (7, 7)),
        ((8, 64, 100, 100), (13, 17)),
        ((2, 32, 32, 64, 64), (5, 7, 9)),
    ] for it in ("i64", "i32") for layout in ("NXC", "NCX")),
]
RSS_WORKLOAD = "stem-k3s2p1 f32 NXC"


def _shrink(w: Workload) -> Workload:
    """A tiny version of a workload for --quick: same geometry, N=1, at most 8 channels, spatial axes / 8
    (but at least two windows wide, and no smaller than the adaptive output)."""
    floor = [2 * k for k in w.kernel] or list(w.output_size)
    spatial = [max(n // 8, f) for n, f in zip(w.shape[2:], floor, strict=True)]
    return replace(w, shape=(1, min(w.shape[1], 8), *spatial))


def quick_workloads() -> list[Workload]:
    return [_shrink(w) for w in WORKLOADS]


def select(workloads: Iterable[Workload], substr: str | None) -> list[Workload]:
    return [w for w in workloads if not substr or substr in w.name]


# --- data -----------------------------------------------------------------------------------------------------

_base_cache: dict[tuple[int, ...], np.ndarray] = {}


def make_input(w: Workload) -> np.ndarray:
    """Deterministic N(0, 1) data in logical NCX order, in the workload's dtype (the same for every engine)."""
    if w.shape not in _base_cache:
        _base_cache.clear()  # keep one base array alive: the largest is 200 MB
        _base_cache[w.shape] = np.random.default_rng(0).standard_normal(w.shape, dtype=np.float32)
    base = _base_cache[w.shape]
    if w.dtype == "f32":
        return base
    if w.dtype == "f16":
        return base.astype(np.float16)
    import ml_dtypes

    return base.astype(ml_dtypes.bfloat16)


def traffic_bytes(w: Workload, x: np.ndarray) -> int:
    """Bytes the op must read and write: input, values, and indices if asked for."""
    if w.op == "max_pool":  # floor rounding and equal pads, as every workload here has
        out_spatial = [(n + 2 * p - k) // s + 1 for n, k, s, p in zip(w.shape[2:], w.kernel, w.strides, w.pads,
                                                                        strict=True)]
    else:
        out_spatial = list(w.output_size)
    n_out = w.shape[0] * w.shape[1] * int(np.prod(out_spatial))
    index_bytes = {None: 0, "i32": 4, "i64": 8}[w.indices]
    return x.nbytes + n_out * (x.itemsize + index_bytes)


# --- roofline -------------------------------------------------------------------------------------------------

_copy_pool = ThreadPoolExecutor(max_workers=1)


def copy_runners(nbytes: int) -> dict[str, Callable[[], Any]]:
    """np.copyto moving `nbytes` in total (nbytes/2 read, nbytes/2 written), on one thread and split over two.

    NumPy's copy is single-threaded; it releases the GIL, so two threads each copying half use both cores.
    """
    half = nbytes // 2
    src = np.ones(half, dtype=np.uint8)
    dst = np.zeros(half, dtype=np.uint8)  # touched now, so no page faults are timed
    mid = half // 2

    def copy2() -> None:
        other = _copy_pool.submit(np.copyto, dst[:mid], src[:mid])
        np.copyto(dst[mid:], src[mid:])
        other.result()

    return {"copy1": lambda: np.copyto(dst, src), "copy2": copy2}


# --- timing ---------------------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def time_round_robin(runners: dict[str, Callable[[], Any]], repeat: int, burst: int = BURST) -> dict[str, float]:
    """Minimum seconds per runner over `repeat` rounds of `burst` calls in a row each (more for fast calls, up
    to BURST_MIN_S in a row); GC off while timing."""
    samples: dict[str, list[float]] = {key: [] for key in runners}
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            for key, fn in runners.items():
                spent, calls = 0.0, 0
                while calls < burst or (spent < BURST_MIN_S and calls < BURST_MAX):
                    t = _timed(fn)[0]
                    samples[key].append(t)
                    spent, calls = spent + t, calls + 1
    finally:
        gc.enable()
    return {key: min(ts) for key, ts in samples.items()}


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact comparison (max pooling never rounds); works for bf16 too."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)))


# --- one workload ---------------------------------------------------------------------------------------------


def ndpool_available() -> str | None:
    """None if ndpool's ops can be called, else why not."""
    try:
        import ndpool

        ndpool.max_pool  # noqa: B018 - the module may exist before its ops do
        ndpool.adaptive_max_pool  # noqa: B018
    except (ImportError, AttributeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Make glibc keep freed memory for the process's next allocations (as
    ``MALLOC_MMAP_THRESHOLD_=67108864 MALLOC_TRIM_THRESHOLD_=1073741824`` would): blocks under 64 MB
    from the heap, which is not given back to the OS below 1 GB. Then an engine's new output reuses
    pages that are already mapped instead of faulting every page in, as ndpool's kept outputs do
    (``ndpool._kernels._outputs``). Torch's channels-last k2s2 on 1x256x256x256: 20 ms a call by
    default, 1.5 ms so. Whether glibc gives it this anyway depends on the process's past frees (its
    mmap threshold rises after one): one full run found torch at 1.85 ms there, the others at
    11.7-13.0. Returns whether glibc accepted both settings (False elsewhere)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 64 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))


def environment() -> dict[str, Any]:
    """What a reader needs to trust the figures: versions, ndpool's backend, how busy the machine was."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {}
    for dist in ("ndpool", "numpy", "numba", *_peers.PEERS):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = None
    try:
        from ndpool._dispatch import backend_name  # private, but the one place that knows

        backend = backend_name()
    except ImportError:
        backend = None
    return {"versions": versions, "ndpool_backend": backend, "threads": _peers.THREADS,
            "cpus": os.cpu_count(), "loadavg_1min": os.getloadavg()[0]}


def format_environment(env: dict[str, Any]) -> str:
    installed = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    line = (f"{installed}; ndpool backend {env['ndpool_backend']}; {env['threads']} threads each; "
            f"load average {env['loadavg_1min']:.1f} on {env['cpus']} CPUs")
    if env["loadavg_1min"] > 0.5:  # other processes share the cores: trust ratios within this run only
        line += " (busy machine: compare ratios within this run, not times across runs)"
    if env.get("keep_freed_memory"):
        line += "; glibc keeps freed memory (--keep-freed-memory)"
    return line


# Peers see the same logical workload in the NXC and NCX rows, so a slow call measured once serves both rows.
_slow_peer_seconds: dict[tuple[str, Workload], float] = {}


def run_workload(w: Workload, repeat: int, floor: bool = False) -> dict[str, Any]:
    """Time ndpool, every available peer and the copy roofline on one workload; one result row. With
    ``floor``, also the workload's memory floor (floor.py: its input read once, its outputs written once)
    in the same rounds."""
    x = make_input(w)
    nbytes = traffic_bytes(w, x)
    fields = asdict(w)
    row: dict[str, Any] = {"workload": fields.pop("name"), **fields, "bytes": nbytes, "ndpool_ms": None,
                           "first_call_ms": None, "peers": {}, "notes": []}
    runners: dict[str, Callable[[], Any]] = {}
    slow: dict[str, float] = {}  # runner key -> seconds of its only (warm-up) call
    reference = None  # ndpool's values in NCX order, to cross-check the peers

    if (why := ndpool_available()) is None:
        try:
            cand = _peers.ndpool_candidate(w, x)
            first_s, result = _timed(cand.run)
            row["first_call_ms"] = first_s * 1e3
            reference = cand.values_ncx(result)
            runners["ndpool"] = cand.run
            if first_s > SLOW_S:  # warm-up still compiles: one more call, and the slow rule on that
                again_s = _timed(cand.run)[0]
                if again_s > SLOW_S:
                    slow["ndpool"] = again_s
        except Exception as e:
            row["notes"].append(f"ndpool: {type(e).__name__}: {e}"[:200])
    else:
        row["notes"].append(f"ndpool not importable ({why})"[:200])

    for peer, build in _peers.PEERS.items():
        try:
            candidates = build(w, x)
        except ImportError:
            continue  # not installed: its column shows "-"
        except _peers.Unsupported as e:
            row["notes"].append(str(e))
            continue
        for cand in candidates:
            key = f"{peer}:{cand.layout}"
            logical = (key, replace(w, name="", layout=""))
            if logical in _slow_peer_seconds:
                slow[key] = _slow_peer_seconds[logical]
                continue
            try:
                warm_s, result = _timed(cand.run)
            except Exception as e:  # e.g. a dtype the kernel lacks
                row["notes"].append(f"{key}: {type(e).__name__}: {str(e).splitlines()[0]}"[:200])
                continue
            if reference is not None and not _same_values(cand.values_ncx(result), reference):
                row["notes"].append(f"VALUES DIFFER: ndpool vs {key}")
            del result
            if warm_s > SLOW_S:
                slow[key] = _slow_peer_seconds[logical] = warm_s
            else:
                runners[key] = cand.run

    runners.update(copy_runners(nbytes))
    if floor:
        import floor as floor_parts  # (imports this module: loaded here, not at the top)
        runners.update({f"floor_{k}": f for k, f in floor_parts.runners(w, x).items()})
    best = time_round_robin({k: f for k, f in runners.items() if k not in slow}, repeat) | slow
    del runners
    return _summarize(row, best, nbytes)


def _summarize(row: dict[str, Any], best: dict[str, float], nbytes: int) -> dict[str, Any]:
    """Turn the minimum times into the row's figures: per-peer best layout, ratio, GB/s, roofline share."""
    for key, seconds in best.items():
        peer, _, layout = key.partition(":")
        if not layout:
            continue
        entry = row["peers"].setdefault(peer, {"ms": None, "layout": None, "by_layout": {}})
        entry["by_layout"][layout] = seconds * 1e3
        if entry["ms"] is None or seconds * 1e3 < entry["ms"]:
            entry["ms"], entry["layout"] = seconds * 1e3, layout
    if "floor_read" in best:
        row["floor_ms"] = (best["floor_read"] + best["floor_write"]) * 1e3
    copy_s = min(best["copy1"], best["copy2"])
    row["copy_gbps"] = nbytes / copy_s / 1e9
    row["copy_threads"] = 1 if best["copy1"] <= best["copy2"] else 2
    fastest = min(row["peers"], key=lambda p: row["peers"][p]["ms"], default=None)
    row["fastest_peer"] = fastest
    if "ndpool" in best:
        row["ndpool_ms"] = best["ndpool"] * 1e3
        row["ndpool_gbps"] = nbytes / best["ndpool"] / 1e9
        row["roofline"] = copy_s / best["ndpool"]
        row["ratio"] = row["ndpool_ms"] / row["peers"][fastest]["ms"] if fastest else None
    return row


def run_suite(repeat: int = DEFAULT_REPEAT, filter: str | None = None, *, quick: bool = False,
              progress: Callable[[str], None] | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None, floor: bool = False) -> list[dict[str, Any]]:
    """Run the selected workloads (all, or those whose name contains `filter`); one dict per workload.

    `progress` is called once as each workload starts ("[i/n] name shape"); `on_row` with each finished row.
    `floor`: each row's memory floor too (run_workload).
    """
    _peers.set_ndpool_threads()
    workloads = select(quick_workloads() if quick else WORKLOADS, filter)
    rows = []
    for i, w in enumerate(workloads, 1):
        if progress:
            progress(f"[{i}/{len(workloads)}] {w.name} {'x'.join(map(str, w.shape))}")
        rows.append(run_workload(w, repeat, floor))
        if on_row:
            on_row(rows[-1])
    _base_cache.clear()
    _slow_peer_seconds.clear()
    return rows


def summary(row: dict[str, Any]) -> str:
    """One line per finished workload, so a long run shows its results as it goes."""
    best = row["fastest_peer"]
    peer = f"{best} {_ms(row['peers'][best]['ms'])} ms {row['peers'][best]['layout']}" if best else "no peer"
    ratio = "" if row.get("ratio") is None else f", ratio {row['ratio']:.2f}"
    return f"ndpool {_ms(row['ndpool_ms'])} ms, fastest peer {peer}{ratio}"


# --- peak RSS -------------------------------------------------------------------------------------------------


def measure_rss(quick: bool = False) -> dict[str, Any]:
    """Peak RSS growth of one ndpool call on the stem workload, measured in a fresh process (see _rss_probe.py)."""
    probe = Path(__file__).resolve().with_name("_rss_probe.py")
    cmd = [sys.executable, str(probe), RSS_WORKLOAD] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def format_rss(rss: dict[str, Any]) -> str:
    if "error" in rss:
        return f"ndpool peak RSS growth: not measured ({rss['error']})"
    warm = "n/a" if rss["warm_mb"] is None else f"{rss['warm_mb']:.1f} MB"
    return (f"ndpool peak RSS growth on {rss['workload']} ({rss['shape']}): first call {rss['first_mb']:.1f} MB, "
            f"warm call {warm}; input {rss['input_mb']:.1f} MB, outputs {rss['output_mb']:.1f} MB")


# --- table ----------------------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def format_table(rows: list[dict[str, Any]]) -> str:
    """Plain-text table, one line per workload; peers show time and the layout they were fastest on."""
    peer_names = list(_peers.PEERS)
    floors = any(r.get("floor_ms") is not None for r in rows)
    header = ["workload", "ndpool ms", "first call ms", *(f"{p} ms" for p in peer_names), "ndpool/best",
              "ndpool GB/s", "roofline", *(["floor ms"] if floors else [])]
    lines = []
    for r in rows:
        peers = []
        for p in peer_names:
            entry = r["peers"].get(p)
            peers.append("-" if not entry else f"{_ms(entry['ms'])} {entry['layout']}")
        lines.append([
            r["workload"],
            _ms(r["ndpool_ms"]),
            _ms(r["first_call_ms"]),
            *peers,
            "-" if r.get("ratio") is None else f"{r['ratio']:.2f}",
            "-" if r["ndpool_ms"] is None else f"{r['ndpool_gbps']:.1f}",
            "-" if r["ndpool_ms"] is None else f"{100 * r['roofline']:.0f}%",
            *([_ms(r.get("floor_ms"))] if floors else []),
        ])
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines, strict=True)]
    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(wd) if i == 0 else c.rjust(wd) for i, (c, wd) in enumerate(zip(cells, widths)))
    out = [fmt(header), "  ".join("-" * wd for wd in widths), *(fmt(line) for line in lines)]
    if rows:
        copy = [r["copy_gbps"] for r in rows]
        out.append(f"roofline = np.copyto of the same bytes (best of 1 and 2 threads): "
                   f"{min(copy):.1f}-{max(copy):.1f} GB/s")
    # Peers' "unsupported" notes are what "-" already says; show only what concerns ndpool, once each.
    notes = dict.fromkeys(n if "not importable" in n else f"{r['workload']}: {n}"
                          for r in rows for n in r["notes"] if "ndpool" in n)
    if notes:
        out += ["", "notes:", *(f"  {n}" for n in notes)]
    return "\n".join(out)
