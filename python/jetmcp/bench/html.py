"""``--report FILE.html``: one self-contained page with the run's figures and plots.

Everything is inline (styles and SVG drawn here from the JSON report), so the page opens
offline and can be attached to a CI run. Plots: latency by percentile (all requests and
each message kind), throughput over time, latency over time, and for a ramp or
``--find-max`` the p99 at each rate.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

#: Series colours (a colour-blind-safe palette).
COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 34, 42

Series = tuple[str, Sequence[tuple[float, float]]]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10.0 ** math.floor(math.log10(value))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= m * exp:
            return m * exp
    return 10.0 * exp


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.3g}"
    return f"{value:.2g}"


def chart(
    title: str,
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    *,
    x_ticks: Sequence[tuple[float, str]] | None = None,
    points: bool = False,
) -> str:
    """An SVG line chart (inline); empty series draw an empty frame with a note."""
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x_ticks:
        x0 = min(x0, x_ticks[0][0])
        x1 = max(x1, x_ticks[-1][0])
    if x1 == x0:
        x1 = x0 + 1.0
    y1 = _nice_max(max(ys) if ys else 1.0)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return TOP + ph - (y / y1) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{html.escape(title)}">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i in range(5):
        y = y1 * i / 4
        py = sy(y)
        out.append(
            f'<line x1="{LEFT}" y1="{py:.1f}" x2="{WIDTH - RIGHT}" y2="{py:.1f}" stroke="#dddddd"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{py + 4:.1f}" font-size="11" text-anchor="end">'
            f"{_fmt(y)}</text>"
        )
    ticks = x_ticks or [(x0 + (x1 - x0) * i / 5, _fmt(x0 + (x1 - x0) * i / 5)) for i in range(6)]
    for x, text in ticks:
        px = sx(x)
        out.append(
            f'<line x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{TOP + ph}" stroke="#eeeeee"/>'
        )
        out.append(
            f'<text x="{px:.1f}" y="{TOP + ph + 16}" font-size="11" text-anchor="middle">'
            f"{html.escape(text)}</text>"
        )
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888888"/>'
    )
    out.append(
        f'<text x="{LEFT + pw / 2:.1f}" y="{HEIGHT - 6}" font-size="12" '
        f'text-anchor="middle">{html.escape(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{TOP + ph / 2:.1f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + ph / 2:.1f})">{html.escape(y_label)}</text>'
    )
    if not ys:
        out.append(
            f'<text x="{LEFT + pw / 2:.1f}" y="{TOP + ph / 2:.1f}" font-size="13" '
            'text-anchor="middle" fill="#888888">no data</text>'
        )
    for n, (name, pts) in enumerate(series):
        color = COLORS[n % len(COLORS)]
        if pts:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            out.append(
                f'<polyline class="series" points="{path}" fill="none" stroke="{color}" '
                'stroke-width="2.5"/>'
            )
            if points or len(pts) == 1:
                out.extend(
                    f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="{color}"/>'
                    for x, y in pts
                )
        lx = LEFT + 10 + (n % 3) * 220
        ly = TOP + 14 + (n // 3) * 16
        out.append(
            f'<rect x="{lx}" y="{ly - 9}" width="12" height="4" fill="{color}"/>'
            f'<text x="{lx + 16}" y="{ly - 4}" font-size="11">{html.escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def _nines(percentile: float) -> float:
    """The x position of a percentile on a plot that spreads the tail: 90% -> 1,
    99% -> 2, 99.9% -> 3."""
    rest = max(1e-5, 1.0 - percentile / 100.0)
    return -math.log10(rest)


def percentile_chart(report: dict[str, Any], curves: dict[str, list[list[float]]]) -> str:
    series: list[Series] = [
        (name, [(_nines(q), ms) for q, ms in points]) for name, points in curves.items()
    ]
    ticks = [(0.0, "0%"), (_nines(50), "50%"), (1.0, "90%"), (2.0, "99%"), (3.0, "99.9%")]
    ticks.append((4.0, "99.99%"))
    return chart("Latency by percentile", series, "percentile", "ms", x_ticks=ticks)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(report: dict[str, Any], curves: dict[str, list[list[float]]]) -> str:
    """The page. ``curves`` are ``[percentile, ms]`` points per series (``all`` first)."""
    r = report
    lat = r["latency_ms"]
    summary = _table(
        ["target", "transport", "revision", "mode", "requests", "req/s", "errors %"],
        [
            [
                r["target"],
                r["transport"],
                r["revision"],
                r["mode"],
                r["requests"],
                r["requests_per_s"],
                r["errors_pct"],
            ]
        ],
    )
    methods = _table(
        ["message", "count", "errors", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"],
        [
            [
                "all",
                r["requests"],
                r["failed"],
                *(lat[k] for k in ("p50", "p90", "p99", "p99.9", "max")),
            ]
        ]
        + [
            [
                label,
                m["count"],
                m["errors"],
                *(m["latency_ms"][k] for k in ("p50", "p90", "p99", "p99.9", "max")),
            ]
            for label, m in r["methods"].items()
        ],
    )
    kinds = (
        _table(["error kind", "count"], list(r["errors_by_kind"].items()))
        if r["errors_by_kind"]
        else "<p>No errors.</p>"
    )
    timeline = r["timeline"]
    throughput = chart(
        "Throughput over time",
        [
            ("replies/s", [(t["second"], t["requests"]) for t in timeline]),
            ("errors/s", [(t["second"], t["errors"]) for t in timeline]),
        ],
        "second of the run",
        "per second",
    )
    over_time = chart(
        "Latency over time",
        [
            ("p50", [(t["second"], t["p50_ms"]) for t in timeline]),
            ("p99", [(t["second"], t["p99_ms"]) for t in timeline]),
            ("max", [(t["second"], t["max_ms"]) for t in timeline]),
        ],
        "second of the run",
        "ms",
    )
    parts = [summary, percentile_chart(r, curves), methods, kinds, throughput, over_time]
    schedule = r.get("schedule")
    if schedule:
        parts.append(
            _table(
                ["target rate", "sent/s", "late", "max behind ms", "waited for a connection"],
                [
                    [
                        schedule["rate"],
                        schedule["achieved_rate"],
                        schedule["late"],
                        schedule["max_behind_ms"],
                        schedule["waited_for_connection"],
                    ]
                ],
            )
        )
    steps = r.get("steps")
    if steps:
        parts.append(
            chart(
                "p99 by rate",
                [("p99 ms", [(s["rate"], s["latency_ms"]["p99"]) for s in steps])],
                "requests/s asked",
                "ms",
                points=True,
            )
        )
        parts.append(
            _table(
                ["rate", "sent/s", "replies/s", "p50 ms", "p99 ms", "errors %", "held", "why"],
                [
                    [
                        s["rate"],
                        s["achieved_rate"],
                        s["replies_per_s"],
                        s["latency_ms"]["p50"],
                        s["latency_ms"]["p99"],
                        s["errors_pct"],
                        s["held"],
                        s["why"],
                    ]
                    for s in steps
                ],
            )
        )
    if "max_rate" in r:
        parts.append(f"<p><b>Highest rate that held:</b> {html.escape(str(r['max_rate']))}/s</p>")
    body = "\n".join(f"<section>{p}</section>" for p in parts)
    title = f"jetmcp bench {html.escape(r['target'])}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
section {{ margin-bottom: 12px; }}
</style></head>
<body><h1>{title}</h1>
{body}
</body></html>
"""
