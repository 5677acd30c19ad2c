"""Judging reports: ``--threshold`` lines for CI, and ``jetmcp bench compare A B``.

A threshold is ``METRIC OP VALUE[UNIT]``: the metrics are the latency percentiles ``p50``,
``p90``, ``p99``, ``p99.9``, ``max`` and ``mean`` (units ``us``, ``ms`` (the default) or
``s``), ``errors`` (a share of the requests with ``%``, else a count), ``rps`` (replies per
second) and ``max_rate`` (``--find-max``); a metric may name one message kind in brackets,
as the report's ``methods`` do: ``p99[tools/call add]<20ms``. OP is ``<``, ``<=``, ``>`` or
``>=``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_THRESHOLD = re.compile(
    r"^\s*(?P<metric>p50|p90|p99\.9|p99|max|mean|errors|rps|max_rate)"
    r"(?:\[(?P<label>[^\]]+)\])?\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<value>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>us|ms|s|%)?\s*$"
)
_LATENCY = {"p50", "p90", "p99", "p99.9", "max", "mean"}
_SCALE_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, None: 1.0}


@dataclass
class Threshold:
    text: str
    metric: str
    label: str | None
    op: str
    value: float
    unit: str | None

    def measure(self, report: dict[str, Any]) -> float | None:
        """The report's figure for this metric (None: the report has none)."""
        scope: dict[str, Any] | None = report
        if self.label is not None:
            scope = report.get("methods", {}).get(self.label)
            if scope is None:
                return None
        assert scope is not None
        if self.metric in _LATENCY:
            return float(scope["latency_ms"][self.metric])
        if self.metric == "errors":
            if self.unit == "%":
                if self.label is None:
                    return float(report["errors_pct"])
                count = scope["count"] + 0
                return 100.0 * scope["errors"] / count if count else 0.0
            return float(scope["failed"] if self.label is None else scope["errors"])
        if self.metric == "rps":
            if self.label is None:
                return float(report["requests_per_s"])
            seconds = float(report.get("seconds") or 1e-9)
            return float(scope["count"]) / seconds
        value = report.get("max_rate")
        return None if value is None else float(value)

    def limit(self) -> float:
        if self.metric in _LATENCY:
            return self.value * _SCALE_MS[self.unit]
        return self.value

    def check(self, report: dict[str, Any]) -> str | None:
        """None when it holds, else the line to print."""
        measured = self.measure(report)
        if measured is None:
            return f"threshold {self.text!r} failed: the report has no such figure"
        limit = self.limit()
        ok = {
            "<": measured < limit,
            "<=": measured <= limit,
            ">": measured > limit,
            ">=": measured >= limit,
        }[self.op]
        if ok:
            return None
        unit = "ms" if self.metric in _LATENCY else ("%" if self.unit == "%" else "")
        return f"threshold {self.text!r} failed: measured {measured:g}{unit}"


def parse_threshold(text: str) -> Threshold:
    match = _THRESHOLD.match(text)
    if match is None:
        raise ValueError(
            f"--threshold {text!r}: want METRIC<VALUE, e.g. 'p99<20ms', 'errors<0.1%', "
            "'rps>=1000', 'p99[tools/call add]<=5ms'"
        )
    metric, unit = match["metric"], match["unit"]
    if metric in _LATENCY and unit == "%":
        raise ValueError(f"--threshold {text!r}: a latency takes us, ms or s")
    if metric not in _LATENCY and unit in ("us", "ms", "s"):
        raise ValueError(f"--threshold {text!r}: {metric} takes no time unit")
    return Threshold(text, metric, match["label"], match["op"], float(match["value"]), unit)


def check_thresholds(report: dict[str, Any], thresholds: list[Threshold]) -> list[str]:
    return [line for t in thresholds if (line := t.check(report)) is not None]


# --------------------------------------------------------------------------- compare

#: What compare looks at: (name, where, higher is better).
_FIGURES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("requests/s", ("requests_per_s",), True),
    ("entries/s", ("entries_per_s",), True),
    ("p50 ms", ("latency_ms", "p50"), False),
    ("p90 ms", ("latency_ms", "p90"), False),
    ("p99 ms", ("latency_ms", "p99"), False),
    ("p99.9 ms", ("latency_ms", "p99.9"), False),
    ("errors %", ("errors_pct",), False),
    ("max rate/s", ("max_rate",), True),
)


def _get(data: dict[str, Any], path: tuple[str, ...]) -> float | None:
    node: Any = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def compare(
    base: dict[str, Any], new: dict[str, Any], tolerance_pct: float
) -> tuple[list[str], list[str]]:
    """The table of deltas (lines) and the regressions beyond ``tolerance_pct``."""
    rows: list[tuple[str, str, str, str, str]] = [("", "A", "B", "change", "")]
    regressions: list[str] = []
    scopes: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("", base, new)]
    for label, m in base.get("methods", {}).items():
        other = new.get("methods", {}).get(label)
        if other is not None and len(base.get("methods", {})) > 1:
            scopes.append((f"[{label}] ", m, other))
    for prefix, a_scope, b_scope in scopes:
        for name, path, higher in _FIGURES:
            a = _get(a_scope, path)
            b = _get(b_scope, path)
            if a is None or b is None:
                continue
            change = (0.0 if b == 0 else float("inf")) if a == 0 else 100.0 * (b - a) / abs(a)
            worse = -change if higher else change
            if name == "errors %":
                # A share of requests: judged in points, not relative to a tiny base.
                worse = b - a
            flag = ""
            if worse > tolerance_pct and not (name.endswith("ms") and b - a < 0.001):
                flag = "REGRESSION"
                regressions.append(
                    f"{prefix}{name}: {a:g} -> {b:g} ({change:+.1f}%, tolerance {tolerance_pct:g}%)"
                )
            rows.append((f"{prefix}{name}", f"{a:g}", f"{b:g}", f"{change:+.1f}%", flag))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(r)
        ).rstrip()
        for r in rows
    ]
    return lines, regressions
