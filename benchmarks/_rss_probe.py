"""Child process for suite.measure_rss: peak RSS growth of ndpool.max_pool on one workload.

Run in a fresh interpreter so that nothing the parent allocated hides or inflates the figure. The peak (VmHWM)
is reset through /proc/self/clear_refs right before each call, so the growth is the call's
own: its outputs plus any scratch memory. The first call includes numba compilation (or loading its disk cache).
Prints one JSON line.
"""

import gc
import json
import sys

import suite
import _peers


def status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # 5 = reset the peak RSS to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def call_growth_mb(run) -> tuple[float, int]:
    gc.collect()
    before = status_kb("VmRSS")
    reset_peak()
    result = run()
    # Not ru_maxrss: it also keeps the peak of the image this process replaced at exec (a fork of the parent,
    # hundreds of MB with the engines loaded), which the reset does not clear. VmHWM is this image's own peak.
    peak = status_kb("VmHWM")
    out_bytes = sum(a.nbytes for a in (result if isinstance(result, tuple) else (result,)))
    return (peak - before) / 1024, out_bytes


def main() -> None:
    name, quick = sys.argv[1], "--quick" in sys.argv
    workloads = suite.quick_workloads() if quick else suite.WORKLOADS
    w = next(w for w in workloads if w.name == name)
    _peers.set_ndpool_threads()
    x = suite.make_input(w)
    input_mb = x.nbytes / 2**20
    cand = _peers.ndpool_candidate(w, x)  # converts to the workload's layout
    del x
    suite._base_cache.clear()
    import ndpool  # noqa: F401 - imported before measuring: import cost is not the call's

    first_mb, out_bytes = call_growth_mb(cand.run)
    # Without a resettable peak, a second call cannot be told apart from the first one's high-water mark.
    warm_mb = call_growth_mb(cand.run)[0] if reset_peak() else None
    print(json.dumps({
        "workload": w.name, "shape": "x".join(map(str, w.shape)), "first_mb": first_mb, "warm_mb": warm_mb,
        "input_mb": input_mb, "output_mb": out_bytes / 2**20,
    }))


if __name__ == "__main__":
    main()
