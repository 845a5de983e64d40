"""One kernel module of a git revision against the working tree's, in one process:
``python benchmarks/kernel_ab.py MODULE [--base REV] [--filter S] [--case CALL] [--rounds N] [--evict]``.

On this shared machine two processes, or two runs, can differ by 1.5x for the same code, and editing a
kernel recompiles every kernel (the disk cache's stamp is the whole package). So a change to one loop is
measured here instead: MODULE (``_tiles``, ``_channel_blocks``, ...) is loaded twice, as it is at REV
(default ``HEAD``) and as it is in the working tree, and both versions of the kernel a plan runs are
compiled in this process with the kernels' flags (nogil, no reference counting; not cached). For each
case, ndpool makes its plan as usual; then each version's loop alone (outputs made beforehand, the
launcher's threads and units) is timed, the versions alternated over ``--rounds`` rounds of a burst of
calls each, on one thread and on two, and the minima are printed with their ratio. Repeated calls find
their input in L3; ``--evict`` times each call after writing 1 GB, from memory as in benchmarks/run.py
(there the NCX stem's kernel took 7.6 ms on two threads against 4.8 ms in a row). Both versions'
outputs must agree bit for bit.

Cases: the suite's workloads (``suite.WORKLOADS``, ``--filter`` on their names) whose plan runs a kernel
of MODULE, or ``--case`` calls such as ``"max_pool((16, 64, 28, 28), kernel=2, strides=2,
data_format='NCX', return_indices=True)"`` (the shape is the input's own, in its layout; N(0, 1) f32
unless ``dtype=`` names another: ``float16``, ``bfloat16``, ...). Only MODULE differs between the two
versions: what it imports from the other kernel modules is the working tree's in both.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite

REPO = Path(__file__).resolve().parent.parent
KERNELS = "src/ndpool/_kernels"
BURST = 20  # calls per turn; a version's minimum over its turns is kept


def load_version(module: str, source: str, tag: str) -> Any:
    """MODULE's source as a module of its own (``tag`` in its name), its relative imports made absolute."""
    source = source.replace("from .", "from ndpool._kernels.")
    folder = tempfile.mkdtemp(prefix="ndpool-ab-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / f"{module.lstrip('_')}_{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def capture_plan(call: Callable[[], Any]) -> tuple[Any, np.ndarray]:
    """The plan and input of the kernel run that ``call`` makes."""
    from ndpool._kernels import _launch

    seen: dict[str, Any] = {}
    real = _launch._execute

    def spy(plan: Any, x: np.ndarray) -> Any:
        seen["plan"], seen["x"] = plan, x
        return real(plan, x)

    _launch._execute = spy
    try:
        call()
    finally:
        _launch._execute = real
    return seen["plan"], seen["x"]


def compile_kernel(func: Any, plan: Any) -> Any:
    """``func`` (a kernel's Python function) compiled as ndpool compiles it for ``plan``, without the cache."""
    import numba

    from ndpool._kernels import _jit  # noqa: F401  (its LLVM option: conditional moves stay)
    from ndpool._kernels._launch import kernel_signature

    sig = kernel_signature(plan.storage, plan.index_storage)
    dispatcher = numba.njit(nogil=True, _nrt=False)(func)
    dispatcher.compile(sig)
    return dispatcher.overloads[sig].entry_point


def runner(entry: Any, scratch: Callable[..., tuple[int, int]], plan: Any, x: np.ndarray) -> Callable[[], Any]:
    """A call of ``entry`` on the plan, into outputs of its own."""
    from ndpool._kernels import _launch

    out5 = np.empty(plan.out_shape, plan.storage)
    idx5 = np.empty(plan.out_shape, plan.index_storage) if plan.index_dtype is not None else _launch._NO_INDICES
    x5 = _launch._as_5d(x.view(plan.storage) if plan.storage != x.dtype else x)
    flat, offset, strides = _launch._flat_view(x5)
    units = scratch(plan.consts[2], x5.shape, plan.out_shape)

    def run() -> tuple[np.ndarray, np.ndarray]:
        _launch._launch(entry, (flat, offset, strides, out5, idx5, *plan.consts), plan.rows, out5.size, units,
                        plan.storage)
        return out5, idx5

    return run


# Bytes written between evicted calls: more than this machine's L3 (lscpu here: 480 MiB, 2 cores' share).
EVICT_BYTES = 1 << 30


def time_evicted(runners: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Minimum seconds per runner, each call timed after an untimed write of EVICT_BYTES (alternated,
    ``rounds`` x 5 calls each)."""
    import time

    junk = np.empty(EVICT_BYTES // 8)
    samples: dict[str, list[float]] = {key: [] for key in runners}
    for _ in range(rounds * 5):
        for key, fn in runners.items():
            junk.fill(1.0)
            t0 = time.perf_counter()
            fn()
            samples[key].append(time.perf_counter() - t0)
    return {key: min(ts) for key, ts in samples.items()}


def parse_case(text: str) -> tuple[str, Callable[[], Any]]:
    """``op(shape, **attributes)`` as a call of ndpool on N(0, 1) data of that shape."""
    import ml_dtypes

    import ndpool

    node = ast.parse(text, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("max_pool", "adaptive_max_pool") and len(node.args) >= 1):
        raise SystemExit(f"--case: expected max_pool(shape, ...) or adaptive_max_pool(shape, size, ...), got {text!r}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    dtype = kwargs.pop("dtype", "float32")
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = np.random.default_rng(0).standard_normal(tuple(args[0])).astype(dtype)
    op = getattr(ndpool, node.func.id)
    return text, lambda: op(x, *args[1:], **kwargs)


def suite_cases(substr: str | None) -> list[tuple[str, Callable[[], Any]]]:
    import _peers

    cases = []
    for w in suite.select(suite.WORKLOADS, substr):
        cases.append((w.name, _peers.ndpool_candidate(w, suite.make_input(w)).run))
    return cases


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="a kernel module of src/ndpool/_kernels, e.g. _tiles")
    p.add_argument("--base", default="HEAD", help="the git revision to compare against (default HEAD)")
    p.add_argument("--filter", metavar="SUBSTR", help="the suite's workloads whose name contains SUBSTR")
    p.add_argument("--case", action="append", default=[], help="a call to time instead of the suite's workloads")
    p.add_argument("--rounds", type=int, default=4, help="turns of each version per thread count (default 4)")
    p.add_argument("--evict", action="store_true",
                   help="before each timed call, write a buffer larger than the caches (untimed): the input then "
                        "comes from memory, as in benchmarks/run.py, where the other engines' calls evict it")
    p.add_argument("--ablation", action="store_true",
                   help="outputs may differ (the working tree has a part of the loop removed, to time what it "
                        "cost): say so and time them anyway")
    args = p.parse_args(argv)

    import numba

    from ndpool._kernels import _launch

    module = args.module.removesuffix(".py")
    rel = f"{KERNELS}/{module}.py"
    try:
        base_source = subprocess.run(["git", "show", f"{args.base}:{rel}"], cwd=REPO, check=True, text=True,
                                     capture_output=True).stdout
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"git show {args.base}:{rel}: {e.stderr.strip()}") from None
    versions = {args.base: load_version(module, base_source, "base"),
                "tree": load_version(module, (REPO / rel).read_text(), "tree")}
    current = importlib.import_module(f"ndpool._kernels.{module}")
    cases = [parse_case(c) for c in args.case] or suite_cases(args.filter)
    threads = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
    print(f"{rel}: {args.base} against the working tree; minimum of at least {BURST} calls per turn "
          f"(the suite's round-robin), {args.rounds} turns each")
    for name, call in cases:
        plan, x = capture_plan(call)
        kernel_name = plan.kernel.py_func.__name__ if plan.kernel is not None else None
        if kernel_name is None or getattr(current, kernel_name, None) is not plan.kernel:
            if args.case:
                print(f"{name}: runs {kernel_name}, not a kernel of {module}")
            continue
        scratch_name = _launch._SCRATCH[plan.kernel].__name__
        runs = {}
        for tag, mod in versions.items():
            if not hasattr(mod, kernel_name):
                raise SystemExit(f"{kernel_name} is not in {module} at {tag}")
            scratch = getattr(mod, scratch_name, None) or _launch._SCRATCH[plan.kernel]
            runs[tag] = runner(compile_kernel(getattr(mod, kernel_name).py_func, plan), scratch, plan, x)
        results = [run() for run in runs.values()]
        for a, b in zip(*results, strict=True):
            if not np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)):
                if not args.ablation:
                    raise SystemExit(f"{name}: the two versions' outputs differ")
                print(f"{name}: the two versions' outputs differ (--ablation: timed anyway)")
                break
        cells = []
        before = numba.get_num_threads()
        try:
            for n in threads:
                numba.set_num_threads(n)
                best = (time_evicted(runs, args.rounds) if args.evict
                        else suite.time_round_robin(runs, args.rounds, burst=BURST))  # (versions alternated)
                old, new = (seconds * 1e3 for seconds in best.values())
                cells.append(f"{n} thread{'s' if n > 1 else ''} {old:.3g} -> {new:.3g} ms ({new / old:.2f}x)")
        finally:
            numba.set_num_threads(before)
        print(f"{name} [{kernel_name}]: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
