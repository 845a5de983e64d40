"""The issue's performance targets, checked on one run's rows: ``format_targets(rows, rss)``.

One line per target: held or missed, with the worst ratio and its row. A missed row whose fastest peer
ran within FLOOR_SLACK of the row's memory floor (``run.py --floor``: the input read once plus the
outputs written once, timed in the same rounds) is marked "floor-limited": there 0.8x of that peer is
out of reach for any engine on this machine, and the run says so instead of leaving it to be worked
out by hand from floor.py's separate figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A peer within this factor of the floor leaves no room for 0.8x of it (1 / 0.8).
FLOOR_SLACK = 1.25
EVERY_WORKLOAD = 0.8  # ndpool / fastest peer
LARGE_WINDOWS = 0.2  # the SPP rows, values only
LARGE_WINDOWS_INDICES = 0.5  # ... with indices, against the peers that return them
ROOFLINE = 0.5  # the NXC stem and the non-overlapping k2s2 pools: share of the copy roofline
NARROW_TYPES = 1.5  # f16 / bf16 time against ndpool's own f32 on the same workload and layout

Row = dict[str, Any]


def _floor_limited(row: Row) -> bool:
    """Whether the row's fastest peer ran within FLOOR_SLACK of its memory floor (known with --floor)."""
    floor, peer = row.get("floor_ms"), row["fastest_peer"]
    return floor is not None and peer is not None and row["peers"][peer]["ms"] <= FLOOR_SLACK * floor


def _worst(rows: list[Row], value: Callable[[Row], float | None], limit: float, higher_is_better: bool = False,
           percent: bool = False, against_peers: bool = True) -> str:
    """'held' or 'missed', then the worst row's figure; missed rows listed, and where the figure is a
    ratio to the fastest peer (``against_peers``), the floor-limited ones marked."""
    scored = [(v, r) for r in rows if (v := value(r)) is not None]
    if not scored:
        return "not measured (no such row in this run)"
    def fails(v: float) -> bool:
        return v < limit if higher_is_better else v > limit
    def figure(v: float) -> str:
        return f"{100 * v:.0f}%" if percent else f"{v:.2f}"
    worst_v, worst_r = (min if higher_is_better else max)(scored, key=lambda s: s[0])
    missed = [(v, r) for v, r in scored if fails(v)]
    if not missed:
        return f"held (worst {figure(worst_v)}, {worst_r['workload']})"
    parts = []
    for v, r in missed:
        parts.append(f"{r['workload']} {figure(v)}" + (" floor-limited" if against_peers and _floor_limited(r) else ""))
    return f"MISSED: {'; '.join(parts)}"


def _own_f32(rows: list[Row]) -> Callable[[Row], float | None]:
    """A row's ndpool time over ndpool's f32 time on the same workload and layout (f16 and bf16 rows: the
    f32 row is the one whose name has f32 in the place of their type)."""
    f32 = {r["workload"]: r["ndpool_ms"] for r in rows if r["dtype"] == "f32"}
    def ratio(r: Row) -> float | None:
        base = f32.get(r["workload"].replace(f" {r['dtype']} ", " f32 "))
        return r["ndpool_ms"] / base if base and r["ndpool_ms"] is not None else None
    return ratio


def check_targets(rows: list[Row], rss: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """(target, verdict) for each of the issue's targets, from one run's rows."""
    measured = [r for r in rows if r.get("ndpool_ms") is not None]
    ratio: Callable[[Row], float | None] = lambda r: r.get("ratio")  # noqa: E731
    large = [r for r in measured if r["workload"].startswith("spp-")]
    roof = [r for r in measured if r["dtype"] == "f32" and not r["indices"]
            and (r["workload"] == "stem-k3s2p1 f32 NXC" or r["workload"].startswith("k2s2 "))]
    narrow = [r for r in measured if r["dtype"] in ("f16", "bf16")]
    out = [
        (f"every workload <= {EVERY_WORKLOAD}x the fastest peer", _worst(measured, ratio, EVERY_WORKLOAD)),
        (f"large windows <= {LARGE_WINDOWS}x", _worst([r for r in large if not r["indices"]], ratio, LARGE_WINDOWS)),
        (f"large windows with indices <= {LARGE_WINDOWS_INDICES}x",
         _worst([r for r in large if r["indices"]], ratio, LARGE_WINDOWS_INDICES)),
        (f"NXC stem and k2s2 >= {100 * ROOFLINE:.0f}% of the roofline",
         _worst(roof, lambda r: r.get("roofline"), ROOFLINE, higher_is_better=True, percent=True, against_peers=False)),
        (f"f16 / bf16 <= {NARROW_TYPES}x ndpool's own f32",
         _worst(narrow, _own_f32(measured), NARROW_TYPES, against_peers=False)),
    ]
    if rss is not None and "error" not in rss and rss.get("warm_mb") is not None:
        held = rss["warm_mb"] <= rss["output_mb"]
        out.append(("warm call's peak RSS growth <= its outputs",
                    f"{'held' if held else 'MISSED'} ({rss['warm_mb']:.1f} MB; outputs {rss['output_mb']:.1f} MB)"))
    return out


def format_targets(rows: list[Row], rss: dict[str, Any] | None = None) -> str:
    checks = check_targets(rows, rss)
    width = max(len(t) for t, _ in checks)
    floors = any(r.get("floor_ms") is not None for r in rows)
    lines = ["targets (this run):", *(f"  {t.ljust(width)}  {v}" for t, v in checks)]
    if not floors:
        lines.append("  (no memory floors measured: run.py --floor marks the missed rows no engine could meet)")
    return "\n".join(lines)
