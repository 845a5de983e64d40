"""Benchmark ndpool against the installed peer engines: ``python benchmarks/run.py [--quick] [--filter S]``.

A thin front end over suite.py; see README.md in this directory for what the columns mean.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite  # noqa: E402
import targets  # noqa: E402


def log(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the results."""
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=None,
                   help=f"rounds of {suite.BURST} timed calls per engine, minimum kept "
                        f"(default {suite.DEFAULT_REPEAT}, "
                        f"{suite.QUICK_REPEAT} with --quick)")
    p.add_argument("--filter", metavar="SUBSTR", help="only workloads whose name contains SUBSTR")
    p.add_argument("--quick", action="store_true", help="tiny shapes: a smoke run of every code path")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    p.add_argument("--rss", action="store_true", help="only measure ndpool's peak RSS growth on the stem workload")
    p.add_argument("--no-rss", action="store_true", help="skip the peak RSS measurement")
    p.add_argument("--floor", action="store_true",
                   help="also time each workload's memory floor (floor.py) in the same rounds: the targets "
                        "below the table then mark the rows whose fastest peer is at that floor")
    p.add_argument("--keep-freed-memory", action="store_true",
                   help="glibc keeps freed memory for later allocations, so no engine's new output faults its "
                        "pages in (ndpool keeps its outputs' memory itself); see suite.keep_freed_memory")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.keep_freed_memory and not suite.keep_freed_memory():
        log("--keep-freed-memory: glibc's mallopt is not available here")
        return 2
    env = suite.environment() | {"keep_freed_memory": args.keep_freed_memory}
    print(suite.format_environment(env))
    rows = []
    if not args.rss:
        repeat = args.repeat or (suite.QUICK_REPEAT if args.quick else suite.DEFAULT_REPEAT)
        rows = suite.run_suite(repeat, args.filter, quick=args.quick, progress=log,
                               on_row=lambda row: log("    " + suite.summary(row)), floor=args.floor)
        print(suite.format_table(rows))
    # The RSS figure belongs to the stem workload: measured with --rss, or when that row was run.
    stem_ran = any(r["workload"] == suite.RSS_WORKLOAD and r["ndpool_ms"] is not None for r in rows)
    rss = None
    if args.rss or (stem_ran and not args.no_rss):
        rss = suite.measure_rss(quick=args.quick)
        print(suite.format_rss(rss))
    if rows and not args.quick:  # (--quick's tiny shapes say nothing of the targets)
        print(targets.format_targets(rows, rss))
    if args.json:
        env |= {"python": platform.python_version(), "machine": platform.machine()}
        Path(args.json).write_text(json.dumps({"environment": env, "rows": rows, "rss": rss}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
