"""The report of a load run: a JSON-able dict, its text form and its CSV form.

The dict keeps the keys ``jetmcp bench --json`` has always printed (``requests_per_s``,
``entries_per_s``, ``latency_ms`` with ``p50``/``p99``/``p99.9``/``max``/``mean``,
``errors``) and adds per-message figures (``methods``), errors by kind, the timeline,
the schedule (open model), the steps of a ramp, ``max_rate`` (``--find-max``) and the
histograms themselves (``histograms``: populated buckets in microseconds, so two reports
can be compared or merged exactly).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from jetmcp import _wire
from jetmcp.bench.recorder import Recorder, histogram_from

#: The percentiles every latency summary has, by the name the report gives them.
PERCENTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999))


def latency_ms(hist: _wire.Histogram) -> dict[str, float]:
    """A latency summary in milliseconds (microsecond precision)."""
    out = {name: round(hist.value_at_quantile(q) / 1000.0, 3) for name, q in PERCENTILES}
    out["max"] = round(hist.max / 1000.0, 3)
    out["mean"] = round(hist.mean / 1000.0, 3)
    out["min"] = round(hist.min / 1000.0, 3)
    out["stdev"] = round(hist.stdev / 1000.0, 3)
    return out


def curve(hist: _wire.Histogram) -> list[list[float]]:
    """``[percentile, ms]`` points for a percentile plot."""
    return [[round(q * 100.0, 5), round(v / 1000.0, 3)] for q, v in hist.percentiles(5)]


@dataclass
class Step:
    """One rate of a ramp or of ``--find-max``: what it asked, what it got."""

    rate: float
    seconds: float
    rec: Recorder
    held: bool | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        rec = self.rec
        total = rec.total()
        done = rec.requests + rec.errors["transport"]
        # Replies over the time they took to come: the step's own, or longer when the last
        # replies came after it (a server that fell behind the rate answers its backlog
        # late, and did not keep up with it however loose the latency objective).
        took = max(self.seconds, (rec.ended_ns - rec.started_ns) / 1e9)
        return {
            "rate": round(self.rate, 1),
            "achieved_rate": round(rec.sent / self.seconds, 1) if self.seconds else 0.0,
            "replies_per_s": round(rec.requests / took, 1) if took else 0.0,
            "requests": rec.requests,
            "failed": rec.failures,
            "errors_pct": round(100.0 * rec.failures / done, 3) if done else 0.0,
            "late": rec.late,
            "latency_ms": latency_ms(total),
            "held": self.held,
            "why": self.why,
        }


@dataclass
class Report:
    """Everything a run produced; :meth:`to_dict` is the JSON report."""

    target: str
    transport: str
    revision: str
    connections: int
    batch: int
    wire_batches: bool
    mix: list[str]
    mode: str
    rec: Recorder
    rate: float | None = None
    duration: float | None = None
    steps: list[Step] = field(default_factory=list)
    max_rate: float | None = None
    processes: int = 1
    users: int | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return max(0.0, (self.rec.ended_ns - self.rec.started_ns) / 1e9)

    def to_dict(self) -> dict[str, Any]:
        rec = self.rec
        seconds = self.seconds or 1e-9
        total = rec.total()
        kinds: dict[str, int] = {}
        methods: dict[str, Any] = {}
        for i, label in enumerate(rec.labels):
            hist = rec.hists[i]
            if not rec.replies[i] and not rec.failed[i]:
                continue
            own = {kind: n for (li, kind), n in sorted(rec.kinds.items()) if li == i}
            methods[label] = {
                "count": rec.replies[i],
                "errors": rec.failed[i],
                "errors_by_kind": own,
                "latency_ms": latency_ms(hist),
            }
            for kind, n in own.items():
                kinds[kind] = kinds.get(kind, 0) + n
        done = rec.requests + rec.errors["transport"]
        data: dict[str, Any] = {
            "target": self.target,
            "transport": self.transport,
            "revision": self.revision,
            "connections": self.connections,
            "batch": self.batch,
            "wire_batches": self.wire_batches,
            "mix": self.mix,
            "mode": self.mode,
            "processes": self.processes,
            "seconds": round(self.seconds, 3),
            "requests": rec.requests,
            "entries": rec.entries,
            "requests_per_s": round(rec.requests / seconds, 1),
            "entries_per_s": round(rec.entries / seconds, 1),
            "latency_ms": latency_ms(total),
            "errors": dict(rec.errors),
            "failed": rec.failures,
            "errors_pct": round(100.0 * rec.failures / done, 4) if done else 0.0,
            "errors_by_kind": dict(sorted(kinds.items())),
            "methods": methods,
            "timeline": [
                {
                    "second": sec,
                    "requests": s.requests,
                    "errors": s.errors,
                    "p50_ms": round(s.hist.value_at_quantile(0.5) / 1000.0, 3),
                    "p99_ms": round(s.hist.value_at_quantile(0.99) / 1000.0, 3),
                    "max_ms": round(s.hist.max / 1000.0, 3),
                }
                for sec, s in sorted(rec.seconds.items())
            ],
            "percentiles_ms": curve(total),
            "histograms": {
                "unit": "us",
                "total": total.counts(),
                **{label: rec.hists[i].counts() for i, label in enumerate(rec.labels)},
            },
        }
        if self.users is not None:
            data["users"] = self.users
        if (rec.open_model and self.mode in ("open", "scenario")) or self.rate is not None:
            service = rec.total_service()
            window = self.duration or seconds
            data["schedule"] = {
                "rate": self.rate,
                "achieved_rate": round(rec.sent / window, 2) if window else 0.0,
                "sent": rec.sent,
                "late": rec.late,
                "max_behind_ms": round(rec.max_behind_us / 1000.0, 3),
                "lag_ms": latency_ms(rec.lag),
                "waited_for_connection": rec.waited,
                "service_latency_ms": latency_ms(service) if service is not None else None,
            }
        if self.steps:
            data["steps"] = [step.to_dict() for step in self.steps]
        if self.mode == "find-max":
            data["max_rate"] = self.max_rate
        if self.notes:
            data["notes"] = list(self.notes)
        data.update(self.extra)
        return data

    # ------------------------------------------------------------------ text

    def text(self) -> str:
        return render_text(self.to_dict())


def render_text(d: dict[str, Any]) -> str:
    lat = d["latency_ms"]
    head = (
        f"  {d['transport']}, revision {d['revision']}, {d['connections']} connections"
        + (f", {d['processes']} processes" if d.get("processes", 1) > 1 else "")
        + (f", {d['users']} users" if d.get("users") else "")
        + f", {d['mode']}"
    )
    if d["batch"] > 1:
        head += f", batch {d['batch']} ({'one array' if d['wire_batches'] else 'single requests'})"
    errors = "  ".join(f"{k} {v}" for k, v in d["errors"].items())
    lines = [
        f"jetmcp bench {d['target']}",
        head,
        f"  mix        {', '.join(d['mix'])}",
        f"  requests   {d['requests']:>10}   {d['requests_per_s']:>12.1f}/s",
        f"  entries    {d['entries']:>10}   {d['entries_per_s']:>12.1f}/s",
        f"  latency    p50 {lat['p50']:.3f} ms   p90 {lat['p90']:.3f} ms   "
        f"p99 {lat['p99']:.3f} ms   p99.9 {lat['p99.9']:.3f} ms   max {lat['max']:.3f} ms",
        f"  errors     {errors}   ({d['errors_pct']:.3f}% of requests failed)",
        f"  duration   {d['seconds']:.2f} s",
    ]
    if d["errors_by_kind"]:
        lines.append(
            "  by kind    " + "  ".join(f"{k}: {v}" for k, v in d["errors_by_kind"].items())
        )
    schedule = d.get("schedule")
    if schedule:
        lines.append(
            f"  schedule   target {schedule['rate']}/s, sent {schedule['achieved_rate']}/s; "
            f"{schedule['waited_for_connection']} waited for a connection"
        )
        if schedule["late"]:
            lines.append(
                f"  WARNING    the generator fell behind its schedule: {schedule['late']} "
                f"requests sent late, up to {schedule['max_behind_ms']:.3f} ms behind "
                "(more --processes, or a lower --rate)"
            )
        service = schedule.get("service_latency_ms")
        if service:
            lines.append(
                f"  service    p50 {service['p50']:.3f} ms   p99 {service['p99']:.3f} ms   "
                f"max {service['max']:.3f} ms (from the send, not the schedule)"
            )
    if len(d["methods"]) > 1 or (d["methods"] and d.get("users")):
        lines.append("  per message")
        width = max(len(k) for k in d["methods"])
        for label, m in d["methods"].items():
            ml = m["latency_ms"]
            lines.append(
                f"    {label:<{width}}  {m['count']:>9}  err {m['errors']:>6}  "
                f"p50 {ml['p50']:.3f}  p99 {ml['p99']:.3f}  p99.9 {ml['p99.9']:.3f}  "
                f"max {ml['max']:.3f} ms"
            )
    if d.get("steps"):
        lines.append("  steps      rate/s     sent/s     p50 ms     p99 ms   errors%  held")
        for s in d["steps"]:
            held = {True: "yes", False: "no", None: "-"}[s["held"]]
            lines.append(
                f"           {s['rate']:>8.1f} {s['achieved_rate']:>10.1f} "
                f"{s['latency_ms']['p50']:>10.3f} {s['latency_ms']['p99']:>10.3f} "
                f"{s['errors_pct']:>9.3f}  {held} {s['why']}".rstrip()
            )
    if "max_rate" in d:
        value = d["max_rate"]
        lines.append(
            f"  max rate   {value:.1f}/s" if value is not None else "  max rate   none held"
        )
    for note in d.get("notes", []):
        lines.append(f"  note       {note}")
    return "\n".join(lines)


def render_csv(d: dict[str, Any]) -> str:
    """One row per message kind and one for all of them; then the timeline and the
    steps, each under its own header row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "message",
            "count",
            "errors",
            "p50_ms",
            "p90_ms",
            "p99_ms",
            "p99.9_ms",
            "max_ms",
            "mean_ms",
        ]
    )
    rows = [("all", d["requests"], d["failed"], d["latency_ms"])]
    rows += [(k, m["count"], m["errors"], m["latency_ms"]) for k, m in d["methods"].items()]
    for label, count, errors, lat in rows:
        writer.writerow(
            [
                label,
                count,
                errors,
                lat["p50"],
                lat["p90"],
                lat["p99"],
                lat["p99.9"],
                lat["max"],
                lat["mean"],
            ]
        )
    writer.writerow([])
    writer.writerow(["second", "requests", "errors", "p50_ms", "p99_ms", "max_ms"])
    for t in d["timeline"]:
        writer.writerow(
            [t["second"], t["requests"], t["errors"], t["p50_ms"], t["p99_ms"], t["max_ms"]]
        )
    if d.get("steps"):
        writer.writerow([])
        writer.writerow(["rate", "achieved_rate", "requests", "errors_pct", "p50_ms", "p99_ms"])
        for s in d["steps"]:
            writer.writerow(
                [
                    s["rate"],
                    s["achieved_rate"],
                    s["requests"],
                    s["errors_pct"],
                    s["latency_ms"]["p50"],
                    s["latency_ms"]["p99"],
                ]
            )
    return out.getvalue()


def total_of(d: dict[str, Any]) -> _wire.Histogram:
    """The whole run's histogram, rebuilt from a JSON report."""
    return histogram_from(d.get("histograms", {}).get("total", []))
