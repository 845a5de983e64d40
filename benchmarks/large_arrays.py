"""ndpool on a zarr array larger than a worker's memory, against ``dask.array.coarsen(np.max, ...)``.

    python benchmarks/large_arrays.py                      # 4 GB f32 on disk, 2 workers x 1 GB (manual)
    python benchmarks/large_arrays.py --size 64MB          # a quick run of every step

Writes a random f32 cube (chunks of ``--chunk``^3) to a temporary zarr store, starts a LocalCluster
(``--workers`` processes, one thread each, ``--worker-memory`` each), then times four jobs, each
reading the cube from disk and writing its result to disk:

- ``read+write floor``: the same reads and writes as pooling by 2 without computing (``x[::2, ::2,
  ::2]``), the time the cluster and the disk need anyway;
- ``pool``: ``ndpool.max_pool`` 2x2x2, stride 2; ``coarsen``: ``da.coarsen(np.max, ...)`` by 2 on the
  same chunks;
- ``pyramid``: ``ndpool.pyramid`` with ``--levels`` levels (level 0 copied, each level from the last);
  ``coarsen pyramid``: the same writes and reads with coarsen for the pooling.

For each: wall time, throughput (input GB / s), the peak RSS of the busiest worker (VmHWM, reset
before the job; it includes the ~200 MB of an idle worker) and worker restarts (a worker killed for
memory comes back under a new pid). The temporary data is deleted at the end, also on error or ^C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).upper() not in UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4GB, 512MB)")
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=parse_bytes, default=parse_bytes("4GB"),
                   help="input size (an f32 cube of whole chunks, the nearest); default 4GB (1024^3)")
    p.add_argument("--chunk", type=int, default=128, help="chunk edge (default 128: 8 MiB chunks)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-memory", type=parse_bytes, default=parse_bytes("1GB"))
    p.add_argument("--levels", type=int, default=4, help="pyramid levels, level 0 included")
    p.add_argument("--codec", choices=["none", "zstd"], default="none",
                   help="zarr compression of every array (default none: random floats do not compress, "
                        "and zstd would dominate the times)")
    p.add_argument("--tmp", help="directory for the temporary zarr stores (default: the system's)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return p.parse_args(argv)


# --- Worker probes (run in the workers through client.run) -------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak() -> int:
    """Reset this process's peak RSS (VmHWM) to its current RSS; return the pid."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return os.getpid()


def _peak_rss() -> tuple[int, int]:
    return os.getpid(), _status_kb("VmHWM") * 1024


def _warm_up() -> str:
    """Load the compiled kernels for the benchmark's dtype before anything is timed."""
    import ndpool
    from ndpool._dispatch import backend_name

    ndpool.max_pool(np.zeros((1, 1, 4, 4, 4), np.float32), kernel=2, strides=2, data_format="NCX")
    return backend_name()


# --- Jobs ----------------------------------------------------------------------------------------


def ndpool_pool(source: Any, out: Path, codec: dict[str, Any]) -> None:
    import dask.array as da

    import ndpool

    x = da.from_zarr(source)
    y = ndpool.max_pool(x[None, None], kernel=2, strides=2, data_format="NCX")[0, 0]
    da.to_zarr(y, str(out), zarr_format=3, **codec)


def subsample(source: Any, out: Path, codec: dict[str, Any]) -> None:
    """The floor: the same reads and writes as pooling by 2, and no computing (every 2nd element)."""
    import dask.array as da

    da.to_zarr(da.from_zarr(source)[::2, ::2, ::2], str(out), zarr_format=3, **codec)


def coarsen_pool(source: Any, out: Path, codec: dict[str, Any]) -> None:
    import dask.array as da

    x = da.from_zarr(source)
    y = da.coarsen(np.max, x, {0: 2, 1: 2, 2: 2})
    da.to_zarr(y, str(out), zarr_format=3, **codec)


def ndpool_pyramid(source: Any, out: Path, levels: int, codec: dict[str, Any]) -> None:
    import ndpool

    ndpool.pyramid(source, levels, store=out, zarr_array_kwargs=codec)


def coarsen_pyramid(source: Any, out: Path, levels: int, codec: dict[str, Any]) -> None:
    """ndpool.pyramid's reads and writes, with coarsen pooling (sizes here are multiples of 2**levels)."""
    import dask.array as da
    import zarr

    group = zarr.open_group(out, mode="w-")
    x = da.from_zarr(source)
    chunks = source.chunks
    shapes = [tuple(s // 2**k for s in x.shape) for k in range(levels)]
    targets = [group.create_array(str(k), shape=shape, chunks=tuple(min(c, s) for c, s in zip(chunks, shape)),
                                  dtype=x.dtype, **codec) for k, shape in enumerate(shapes)]

    def down(level: Any, k: int) -> Any:
        return da.coarsen(np.max, level, {0: 2, 1: 2, 2: 2}).rechunk(targets[k].chunks)

    da.store([x, down(x, 1)], targets[:2], lock=False)
    for k in range(2, levels):
        da.store(down(da.from_zarr(targets[k - 1]), k), targets[k], lock=False)


# --- Harness -------------------------------------------------------------------------------------


@contextlib.contextmanager
def temporary_directory(parent: str | None) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ndpool-large-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def measure(client: Any, name: str, job: Callable[[], None], input_bytes: int) -> dict[str, Any]:
    pids_before = set(client.run(_reset_peak).values())
    start = time.perf_counter()
    job()
    seconds = time.perf_counter() - start
    peaks = client.run(_peak_rss)
    pids_after = {pid for pid, _ in peaks.values()}
    row = {"job": name, "seconds": round(seconds, 2), "GB/s": round(input_bytes / seconds / 1e9, 3),
           "peak worker RSS MB": round(max(rss for _, rss in peaks.values()) / 1e6),
           "restarts": len(pids_before - pids_after)}
    print(f"  {name:<17} {row['seconds']:8.2f} s {row['GB/s']:8.3f} GB/s "
          f"{row['peak worker RSS MB']:8d} MB peak {row['restarts']:3d} restarts", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A kill (SIGTERM) unwinds like ^C does, so the temporary data is removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    import dask.array as da
    import zarr
    from distributed import Client, LocalCluster

    c = args.chunk
    # A cube of whole chunks (so coarsen needs no trimming at any level): c is a multiple of 2**levels.
    if c % 2 ** (args.levels - 1):
        print(f"--chunk must be a multiple of {2 ** (args.levels - 1)}", file=sys.stderr)
        return 2
    edge = max(1, round((args.size / 4) ** (1 / 3) / c)) * c
    shape = (edge, edge, edge)
    input_bytes = math.prod(shape) * 4
    codec: dict[str, Any] = {"compressors": None} if args.codec == "none" else {}
    rows: list[dict[str, Any]] = []
    with temporary_directory(args.tmp) as tmp:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               memory_limit=args.worker_memory, dashboard_address=None,
                               local_directory=str(tmp / "dask-worker-space"))
        with cluster, Client(cluster) as client:
            backends = set(client.run(_warm_up).values())
            print(f"input {shape} f32 = {input_bytes / 1e9:.2f} GB in {c}^3 chunks ({args.codec}); "
                  f"{args.workers} workers x "
                  f"{args.worker_memory / 1e9:.2f} GB, 1 thread each; ndpool backend {', '.join(backends)}",
                  flush=True)
            source_path = tmp / "input.zarr"
            start = time.perf_counter()
            data = da.random.default_rng(0).random(shape, dtype=np.float32, chunks=c)
            da.to_zarr(data, str(source_path), zarr_format=3, **codec)
            source = zarr.open_array(source_path, mode="r")
            on_disk = sum(f.stat().st_size for f in source_path.rglob("*") if f.is_file())
            print(f"  wrote the input in {time.perf_counter() - start:.1f} s, {on_disk / 1e9:.2f} GB on disk",
                  flush=True)
            jobs: list[tuple[str, Callable[[], None]]] = [
                ("read+write floor", lambda: subsample(source, tmp / "floor.zarr", codec)),
                ("pool", lambda: ndpool_pool(source, tmp / "pool.zarr", codec)),
                ("coarsen", lambda: coarsen_pool(source, tmp / "coarsen.zarr", codec)),
                ("pyramid", lambda: ndpool_pyramid(source, tmp / "pyramid.zarr", args.levels, codec)),
                ("coarsen pyramid", lambda: coarsen_pyramid(source, tmp / "coarsen-pyramid.zarr",
                                                            args.levels, codec)),
            ]
            for name, job in jobs:
                rows.append(measure(client, name, job, input_bytes))
            # The two pyramids agree (random floats: no NaN, no signed-zero ties).
            for k in range(args.levels):
                a = da.from_zarr(str(tmp / "pyramid.zarr"), component=str(k))
                b = da.from_zarr(str(tmp / "coarsen-pyramid.zarr"), component=str(k))
                if not bool((a == b).all().compute()):
                    print(f"  MISMATCH at pyramid level {k}", file=sys.stderr)
                    return 1
            print("  pyramids equal at every level")
    speedups = {r["job"]: r["seconds"] for r in rows}
    print(f"ndpool / coarsen time: pool {speedups['pool'] / speedups['coarsen']:.2f}, "
          f"pyramid {speedups['pyramid'] / speedups['coarsen pyramid']:.2f} (below 1: ndpool faster)")
    if args.json:
        Path(args.json).write_text(json.dumps({"shape": shape, "chunk": c, "workers": args.workers,
                                               "worker_memory": args.worker_memory, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
