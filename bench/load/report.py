"""Ratios, goal checks and the three outputs (markdown, JSON, PNG) of a benchmark run."""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bodies import BATCH_SIZE, REQUEST_SHAPES
from cpuload import BUSY_CORES

Log = Callable[[str], None]
#: The multiplication sign (spelled as an escape: ruff flags the literal as ambiguous).
X = "\u00d7"

WORKLOAD_TITLES = {
    "call": "tools/call (single)",
    "list": "tools/list (single)",
    "batch": f"batch of {BATCH_SIZE} tools/call (protocol 2025-03-26)",
    "stdio": "stdio, pipelined tools/call",
    "ctx": "tools/call of a Context tool (the SDK's file only)",
    "published": "tools/call of a published server's tool (mcp-server-time only)",
    "published-fastmcp": "tools/call of a published FastMCP server's plain tool "
    "(code-index-mcp only)",
    "published-fastmcp-ctx": "tools/call of a published FastMCP server's Context tool "
    "(code-index-mcp only)",
    **{key: w.title for key, w in REQUEST_SHAPES.items()},
}


def machine() -> dict[str, Any]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
    }


# -- ratios and goals -----------------------------------------------------------------------


def _row(results: dict[str, Any], server: str, workload: str) -> dict[str, Any] | None:
    row = results["servers"].get(server, {}).get("workloads", {}).get(workload)
    return row if row and row.get("status") == "ok" else None


def choose_reference(results: dict[str, Any]) -> tuple[str | None, str]:
    """jetmcp when it has numbers, else the Granian RSGI ceiling (and why)."""
    if any(_row(results, "jetmcp", w) for w in results["settings"]["workloads"]):
        return "jetmcp", "ratios are to jetmcp from this run (jetmcp = 1.00)"
    jet = results["servers"].get("jetmcp")
    why = "was not selected" if jet is None else f"has no numbers ({jet.get('status', '?')})"
    if any(_row(results, "granian-rsgi", w) for w in results["settings"]["workloads"]):
        return "granian-rsgi", (
            f"jetmcp {why}: ratios are to the Granian RSGI ceiling instead (ceiling = 1.00)"
        )
    return None, f"jetmcp {why} and the Granian RSGI ceiling has no numbers: no ratios"


def add_ratios(results: dict[str, Any]) -> None:
    ref, _ = choose_reference(results)
    for server in results["servers"].values():
        for workload, row in server.get("workloads", {}).items():
            base = _row(results, ref, workload) if ref else None
            if row.get("status") != "ok" or base is None:
                continue
            row["ratio"] = {
                "requests_per_s": _div(row["requests_per_s"], base["requests_per_s"]),
                "p50": _div(row["latency_ms"]["p50"], base["latency_ms"]["p50"]),
                "p99": _div(row["latency_ms"]["p99"], base["latency_ms"]["p99"]),
                "rss": _div(row.get("rss_kib", 0), base.get("rss_kib", 0)),
            }


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


#: The workloads the first goals (against the peers, and the drop-in rows) are judged on.
_CLASSIC = (
    "call",
    "list",
    "batch",
    "ctx",
    "published",
    "published-fastmcp",
    "published-fastmcp-ctx",
    "stdio",
)


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The benchmark's targets, each PASS / FAIL / N/A with the numbers behind it: the first
    ones when their workloads ran, then the request shapes' (:func:`shape_goals`)."""
    ran = results["settings"]["workloads"]
    out = _classic_goals(results) if any(w in ran for w in _CLASSIC) else []
    return [*out, *shape_goals(results)]


def _classic_goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def rps(server: str, workload: str = "call") -> float | None:
        row = _row(results, server, workload)
        return float(row["requests_per_s"]) if row else None

    def add(
        name: str,
        value: float | None,
        target: float,
        unit: str,
        detail: str,
        rows: tuple[tuple[str, str], ...] = (),
        info: bool = False,
    ) -> None:
        if value is None:
            if not info:
                out.append({"goal": name, "status": "N/A", "detail": detail or "missing numbers"})
            return
        ok = value >= target if unit != "max" else value <= target
        busy = [
            f"{server} {workload}"
            for server, workload in rows
            if float((_row(results, server, workload) or {}).get("other_cpu_cores") or 0.0)
            > BUSY_CORES
        ]
        if busy:
            detail += f" (⚠ disturbed by other load: {', '.join(busy)})"
        if info:
            detail += f" ({'above' if ok else 'below'} the target; for reference only)"
        out.append(
            {
                "goal": name,
                "status": "INFO" if info else ("PASS" if ok else "FAIL"),
                "value": value,
                "detail": detail,
                "disturbed": bool(busy),
            }
        )

    # Drop-in: a server unchanged on jetmcp against the same server on its own SDK
    # as installed, on the same body: (goal, jetmcp row, SDK row, workload, reference only).
    # - the SDK's own file, for the plain tool and the Context tool;
    # - mcp-server-time (published, an SDK 2.x MCPServer), for reference: it has no Context
    #   tool, and middleware of its own (which lists every tool on each call) keeps every call
    #   on the SDK's whole path;
    # - code-index-mcp (published, FastMCP of the SDK 1.x), whose tools take a Context: its
    #   plain tool and its Context tool.
    # Then the adapted plain tool against the same tool written for jetmcp (the demo's add).
    unchanged = (
        (
            "mcp SDK server unchanged on jetmcp >= 10x its own SDK as installed (plain tool)",
            "jetmcp-sdk-unchanged",
            "mcp-sdk-installed",
            "call",
            False,
        ),
        (
            "mcp SDK server unchanged on jetmcp >= 10x its own SDK as installed (Context tool)",
            "jetmcp-sdk-unchanged",
            "mcp-sdk-installed",
            "ctx",
            False,
        ),
        (
            "published server (mcp-server-time: an MCPServer with middleware of its own, every "
            "call on the SDK's path) unchanged on jetmcp, against its own SDK as installed",
            "jetmcp-published",
            "published-installed",
            "published",
            True,
        ),
        (
            "published FastMCP server (code-index-mcp) unchanged on jetmcp >= 10x its own SDK "
            "as installed (plain tool)",
            "jetmcp-published-fastmcp",
            "published-fastmcp-installed",
            "published-fastmcp",
            False,
        ),
        (
            "published FastMCP server (code-index-mcp) unchanged on jetmcp >= 10x its own SDK "
            "as installed (Context tool)",
            "jetmcp-published-fastmcp",
            "published-fastmcp-installed",
            "published-fastmcp-ctx",
            False,
        ),
    )
    for name, on_jetmcp, on_sdk, workload, reference in unchanged:
        adapted = rps(on_jetmcp, workload)
        own = rps(on_sdk, workload)
        add(
            name,
            _ratio(adapted, own),
            10.0,
            "x",
            _fmt_pair(adapted, own, "on jetmcp", "on its SDK"),
            ((on_jetmcp, workload), (on_sdk, workload)),
            info=reference,
        )
    adapted = rps("jetmcp-sdk-unchanged")
    native = rps("jetmcp")
    add(
        "adapted plain tool >= 0.9 of the same tool written natively for jetmcp",
        _ratio(adapted, native),
        0.9,
        "x",
        _fmt_pair(adapted, native, "adapted", "native", as_pct=True),
        (("jetmcp-sdk-unchanged", "call"), ("jetmcp", "call")),
    )

    jet = rps("jetmcp")
    ceiling = rps("granian-rsgi")
    detail = _fmt_pair(jet, ceiling, "jetmcp", "ceiling", as_pct=True)
    jet_cpu = _cpu(results, "jetmcp")
    ceiling_cpu = _cpu(results, "granian-rsgi")
    if jet_cpu and ceiling_cpu:
        detail += (
            f"; by server CPU per request (steadier on a shared machine): jetmcp "
            f"{jet_cpu:.1f} µs vs ceiling {ceiling_cpu:.1f} µs = {ceiling_cpu / jet_cpu:.0%}"
        )
    # The main pass's pair and the interleaved pairs (``--pairs``): judged on the median.
    ratios = [_ratio(jet, ceiling), *(p["ratio"] for p in results.get("pairs", []))]
    known = [r for r in ratios if r is not None]
    median = _median(ratios)
    if len(known) > 1 and median is not None:
        paired = ", ".join(known_fmt(r) for r in ratios[1:])
        detail = (
            f"median of {len(known)} ratios {median:.0%} (main pass {known_fmt(ratios[0])}; "
            f"pairs measured back to back: {paired}). Main pass: {detail}"
        )
    add(
        "jetmcp tools/call ≥ 80% of the Granian RSGI ceiling",
        median,
        0.80,
        "min",
        detail,
        (("jetmcp", "call"), ("granian-rsgi", "call")),
    )
    # The ratios to the Python peers are judged against them as `pip install` gives them
    # (uvicorn on asyncio + h11); the tuned rows (uvloop + httptools) follow for reference.
    for key, label, target, info in (
        ("mcp-sdk-installed", "mcp SDK (as installed)", 25, False),
        ("mcp-sdk", "mcp SDK (tuned)", 25, True),
        ("fastmcp-installed", "FastMCP (as installed)", 30, False),
        ("fastmcp", "FastMCP (tuned)", 30, True),
        ("ts-sdk", "TS SDK", 15, False),
    ):
        peer = rps(key)
        add(
            f"jetmcp tools/call ≥ {target}{X} {label}",
            _ratio(jet, peer),
            target,
            "min",
            _fmt_pair(jet, peer, "jetmcp", label),
            (("jetmcp", "call"), (key, "call")),
            info=info,
        )
    batch = _row(results, "jetmcp", "batch")
    batch_entries = float(batch["entries_per_s"]) if batch else None
    add(
        f"jetmcp batch-of-{BATCH_SIZE} entries/s ≥ 7{X} jetmcp single tools/call req/s",
        _ratio(batch_entries, jet),
        7,
        "min",
        _fmt_pair(batch_entries, jet, "batch entries/s", "single req/s"),
        (("jetmcp", "call"), ("jetmcp", "batch")),
    )
    call = _row(results, "jetmcp", "call")
    p50 = call["latency_ms"]["p50"] if call else None
    p99 = call["latency_ms"]["p99"] if call else None
    detail = f"p99 {p99:.2f} ms / p50 {p50:.2f} ms = {p99 / p50:.1f}{X}" if p50 and p99 else ""
    ceiling_call = _row(results, "granian-rsgi", "call")
    if detail and ceiling_call:
        c50, c99 = ceiling_call["latency_ms"]["p50"], ceiling_call["latency_ms"]["p99"]
        detail += (
            f"; the Granian RSGI ceiling itself: p99 {c99:.2f} ms / p50 {c50:.2f} ms = "
            f"{c99 / c50:.1f}{X}"
        )
    add(
        f"jetmcp tools/call p99 ≤ 3{X} p50",
        _ratio(p99, p50),
        3,
        "max",
        detail,
        (("jetmcp", "call"), ("granian-rsgi", "call")),
    )
    servers = results["servers"]
    jet_srv = servers.get("jetmcp", {})
    jet_rss = jet_srv.get("rss_kib")
    jet_worker = jet_srv.get("rss_worker_kib")
    sdk = [
        (servers[k]["label"], servers[k]["rss_kib"])
        for k in ("mcp-sdk-installed", "mcp-sdk")
        if servers.get(k, {}).get("rss_kib")
    ]
    if jet_rss and sdk:
        sdk_label, sdk_rss = min(sdk, key=lambda item: item[1])
        detail = (
            f"jetmcp {jet_rss / 1024:.1f} MiB (main process + worker; the worker alone "
            f"{(jet_worker or 0) / 1024:.1f} MiB) vs {sdk_label} {sdk_rss / 1024:.1f} MiB "
            f"(the lower SDK row: " + ", ".join(f"{lab} {r / 1024:.1f}" for lab, r in sdk) + ")"
        )
        status = "PASS" if jet_rss < sdk_rss else "FAIL"
    else:
        detail, status, sdk_rss = "missing numbers", "N/A", None
    out.append(
        {
            "goal": "jetmcp peak RSS < mcp SDK's (HTTP, after all workloads)",
            "status": status,
            "value": _ratio(jet_rss, sdk_rss),
            "detail": detail,
        }
    )
    soak = results.get("soak")
    if soak is not None:
        flat = soak.get("flat")
        out.append(
            {
                "goal": f"jetmcp RSS flat over a {soak['target_requests']:,}-request soak "
                f"(≤ {SOAK_FLAT_MIB:g} MiB above the level after warm-up)",
                "status": "N/A" if flat is None else ("PASS" if flat else "FAIL"),
                "value": soak.get("growth_kib"),
                "detail": soak.get("verdict") or soak.get("detail") or soak.get("status", "?"),
            }
        )
    overhead = results.get("overhead")
    if overhead:
        medians = overhead.get("median_cpu_ratio", {})
        for name, target, what in (
            ("auth", 0.85, "JWT verified per request, cached JWKS"),
            ("metrics", 0.95, "--metrics-port"),
        ):
            ratio = medians.get(name)
            out.append(
                {
                    "goal": f"tools/call with {name} on ({what}) ≥ {target:.0%} of it off",
                    "status": "N/A" if ratio is None else ("PASS" if ratio >= target else "FAIL"),
                    "value": ratio,
                    "detail": f"median ratio {known_fmt(ratio)} (plain's CPU per request over "
                    f"this one's) over {len(overhead.get('rounds', []))} rounds measured back "
                    f"to back; by req/s {known_fmt(overhead['median_ratio'].get(name))}",
                }
            )
    return out


# -- request shapes -------------------------------------------------------------------------

#: The peers the request shapes' ratios are judged against (as `pip install` gives them); the tuned
#: rows are reported beside them for reference.
SHAPE_PEERS = (
    ("mcp-sdk-installed", "mcp SDK (as installed)", False),
    ("fastmcp-installed", "FastMCP (as installed)", False),
    ("mcp-sdk", "mcp SDK (tuned)", True),
    ("fastmcp", "FastMCP (tuned)", True),
)
#: The request shapes' targets.
CEILING_TARGET = 0.85
BATCH_TARGET = 8.0
TAIL_TARGET = 3.0
PEER_TARGET = 15.0


def _disturbed(results: dict[str, Any], rows: list[tuple[str, str]]) -> list[str]:
    return [
        f"{server} {workload}"
        for server, workload in rows
        if float((_row(results, server, workload) or {}).get("other_cpu_cores") or 0.0) > BUSY_CORES
    ]


def _goal(
    results: dict[str, Any],
    name: str,
    value: float | None,
    ok: bool | None,
    detail: str,
    rows: list[tuple[str, str]],
    info: bool = False,
) -> dict[str, Any]:
    """One goal line: N/A without a value, INFO for reference rows, else PASS / FAIL (with
    the rows it rests on that other load disturbed)."""
    if value is None or ok is None:
        return {"goal": name, "status": "N/A", "detail": detail or "missing numbers"}
    busy = _disturbed(results, rows)
    if busy:
        detail += f" (⚠ disturbed by other load: {', '.join(busy)})"
    status = "INFO" if info else ("PASS" if ok else "FAIL")
    if info:
        detail += f" ({'meets' if ok else 'misses'} the target; for reference only)"
    return {
        "goal": name,
        "status": status,
        "value": value,
        "detail": detail,
        "disturbed": bool(busy),
    }


def _why_not(results: dict[str, Any], server: str, workload: str) -> str:
    """Why ``server`` has no numbers for ``workload``: its row's status and detail."""
    srv = results["servers"].get(server)
    if srv is None:
        return "not run"
    row = srv.get("workloads", {}).get(workload)
    if row is None:
        return "not run"
    detail = str(row.get("detail") or "")
    return f"{row.get('status', '?')}" + (f" ({detail})" if detail else "")


FLOOR = "granian-rsgi-floor"


def _median(values: list[float | None]) -> float | None:
    """The median of the known values (None when there is none)."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _rounds(results: dict[str, Any], key: str, field: str) -> list[float | None]:
    """``field`` (ratio or floor_ratio) of each back-to-back round of ``key``
    (``--shape-rounds``)."""
    return [r.get(field) for r in results.get("shape_rounds", {}).get(key, [])]


def _floor_share(results: dict[str, Any], key: str) -> float | None:
    """The floor's req/s over the ceiling's on ``key`` (bench/load/floor.py): the most any
    server that runs the workload's tool can reach (the median with the back-to-back
    rounds), or None when it was not measured."""
    floor, ceiling = _row(results, FLOOR, key), _row(results, "granian-rsgi", key)
    main = _ratio(
        float(floor["requests_per_s"]) if floor else None,
        float(ceiling["requests_per_s"]) if ceiling else None,
    )
    return _median([main, *_rounds(results, key, "floor_ratio")])


def _beyond_reach(results: dict[str, Any], peer: str, keys: list[str]) -> list[str]:
    """The workloads on which ``PEER_TARGET`` times ``peer``'s rate exceeds what a server on
    Granian can answer here: the ceiling's rate, or the floor's (the ceiling plus the tool's
    own work) where the floor ran and is lower."""
    out = []
    for key in keys:
        other, ceiling = _row(results, peer, key), _row(results, "granian-rsgi", key)
        if not (other and ceiling):
            continue
        need = PEER_TARGET * float(other["entries_per_s"])
        reach, what = float(ceiling["entries_per_s"]), "ceiling"
        floor = _row(results, FLOOR, key)
        if floor and float(floor["entries_per_s"]) < reach:
            reach, what = float(floor["entries_per_s"]), "floor"
        if need > reach:
            out.append(f"`{key}` ({need:,.0f} vs the {what}'s {reach:,.0f})")
    return out


def shape_goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Request shapes: every single-request workload >= 0.85 of the Granian RSGI ceiling (same run,
    same reply bytes); batch-2026 entries/s >= 8x single call-2026 req/s; p99 <= 3x p50;
    jetmcp >= 15x each peer as installed, on every workload the peer serves."""
    ran = [w for w in results["settings"]["workloads"] if w in REQUEST_SHAPES]
    if not ran:
        return []
    out: list[dict[str, Any]] = []
    for key in ran:
        if REQUEST_SHAPES[key].entries != 1:
            continue
        jet, ceiling = _row(results, "jetmcp", key), _row(results, "granian-rsgi", key)
        a = float(jet["requests_per_s"]) if jet else None
        b = float(ceiling["requests_per_s"]) if ceiling else None
        detail = _fmt_pair(a, b, "jetmcp", "ceiling", as_pct=True)
        if jet is None:
            detail = f"jetmcp: {_why_not(results, 'jetmcp', key)}"
        elif ceiling is None:
            detail = f"ceiling: {_why_not(results, 'granian-rsgi', key)}"
        ja, cb = _cpu(results, "jetmcp", key), _cpu(results, "granian-rsgi", key)
        if ja and cb:
            detail += f"; by server CPU per request: {cb / ja:.0%} ({ja:.1f} vs {cb:.1f} µs)"
        ratio = _ratio(a, b)
        rounds = _rounds(results, key, "ratio")
        if rounds:
            ratio = _median([ratio, *rounds])
            detail = (
                f"median {known_fmt(ratio)} of the main pass and {len(rounds)} rounds measured "
                f"back to back ({', '.join(known_fmt(r) for r in rounds)}). Main pass: {detail}"
            )
        floor = _floor_share(results, key)
        if floor is not None:
            detail += (
                f"; the floor (ceiling + the spec's header checks + the tool's own work) "
                f"is at {floor:.0%}"
            )
            if floor < CEILING_TARGET:
                detail += ": no server doing this tool's work reaches the target here"
        out.append(
            _goal(
                results,
                f"`{key}`: jetmcp ≥ {CEILING_TARGET:.0%} of the Granian RSGI ceiling",
                ratio,
                None if ratio is None else ratio >= CEILING_TARGET,
                detail,
                [("jetmcp", key), ("granian-rsgi", key)],
            )
        )
    if "batch-2026" in ran:
        batch = _row(results, "jetmcp", "batch-2026")
        single = _row(results, "jetmcp", "call-2026")
        entries = float(batch["entries_per_s"]) if batch else None
        rps = float(single["requests_per_s"]) if single else None
        ratio = _ratio(entries, rps)
        detail = _fmt_pair(entries, rps, "batch-2026 entries/s", "call-2026 req/s")
        if batch is None:
            detail = f"batch-2026: {_why_not(results, 'jetmcp', 'batch-2026')}"
        elif single is None:
            detail = "call-2026 was not measured (add it to --workloads)"
        out.append(
            _goal(
                results,
                f"`batch-2026`: jetmcp entries/s ≥ {BATCH_TARGET:g}{X} its single `call-2026` "
                "req/s",
                ratio,
                None if ratio is None else ratio >= BATCH_TARGET,
                detail,
                [("jetmcp", "batch-2026"), ("jetmcp", "call-2026")],
            )
        )
    tails: list[tuple[str, float]] = []
    for key in ran:
        row = _row(results, "jetmcp", key)
        if row and row["latency_ms"]["p50"]:
            tails.append((key, row["latency_ms"]["p99"] / row["latency_ms"]["p50"]))
    worst = max((t for _, t in tails), default=None)
    out.append(
        _goal(
            results,
            f"jetmcp p99 ≤ {TAIL_TARGET:g}{X} p50 on every request-shape workload",
            worst,
            None if worst is None else worst <= TAIL_TARGET,
            ", ".join(f"`{k}` {t:.1f}{X}" for k, t in tails) or "no jetmcp numbers",
            [("jetmcp", k) for k, _ in tails],
        )
    )
    for peer, label, info in SHAPE_PEERS:
        if peer not in results["servers"]:
            continue
        ratios: list[tuple[str, float]] = []
        missing: list[str] = []
        for key in ran:
            jet, other = _row(results, "jetmcp", key), _row(results, peer, key)
            if jet and other and other["entries_per_s"]:
                ratios.append((key, float(jet["entries_per_s"]) / float(other["entries_per_s"])))
            elif jet:
                missing.append(f"`{key}` {_why_not(results, peer, key).split(' (')[0]}")
        lowest = min((r for _, r in ratios), default=None)
        detail = ", ".join(f"`{k}` {r:.1f}{X}" for k, r in ratios) or "no ratio"
        if missing:
            detail += "; no numbers (not counted): " + ", ".join(missing)
        above = _beyond_reach(results, peer, [k for k, _ in ratios])
        if above:
            detail += (
                f"; {PEER_TARGET:g}{X} the peer is above the ceiling, or the floor where the "
                "tool's own work takes more (no server on Granian doing it reaches that here), "
                "on " + ", ".join(above)
            )
        out.append(
            _goal(
                results,
                f"jetmcp ≥ {PEER_TARGET:g}{X} {label} on every request-shape workload it serves "
                "(lowest ratio)",
                lowest,
                None if lowest is None else lowest >= PEER_TARGET,
                detail,
                [(s, k) for k, _ in ratios for s in ("jetmcp", peer)],
                info=info,
            )
        )
    return out


def _shape_lines(results: dict[str, Any]) -> list[str]:
    """The request shapes' summary: per workload, jetmcp against the ceiling and each peer."""
    ran = [w for w in results["settings"]["workloads"] if w in REQUEST_SHAPES]
    if not ran:
        return []
    peers = [(k, lab) for k, lab, _ in SHAPE_PEERS if k in results["servers"]]
    lines = [
        "",
        "## Request shapes: jetmcp against the ceiling and the peers",
        "",
        "Every row from this run. The ceiling answers each workload's correct reply, byte "
        "for byte as jetmcp sends it (*reply bytes*: jetmcp's reply size, and = when it is "
        "exactly the ceiling's). Rates are entries/s (JSON-RPC messages answered per second: "
        f"{X} {BATCH_SIZE} req/s for the batch). A peer cell is its rate and jetmcp's multiple "
        "of it, or why it has none.",
        "",
        "| workload | jetmcp entries/s | p50 ms | p99 ms | p99/p50 | ceiling entries/s | "
        f"{X} ceiling | CPU {X} ceiling | floor {X} ceiling | reply bytes | "
        + " | ".join(lab for _, lab in peers)
        + " |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(peers),
    ]
    for key in ran:
        jet = _row(results, "jetmcp", key)
        ceiling = _row(results, "granian-rsgi", key)
        cells = [f"`{key}`"]
        if jet:
            lat = jet["latency_ms"]
            cells += [
                f"{jet['entries_per_s']:,.0f}",
                f"{lat['p50']:.2f}",
                f"{lat['p99']:.2f}",
                f"{lat['p99'] / lat['p50']:.1f}" if lat["p50"] else "—",
            ]
        else:
            cells += [_cell(_why_not(results, "jetmcp", key)), "", "", ""]
        cells.append(f"{ceiling['entries_per_s']:,.0f}" if ceiling else "—")
        ratio = _ratio(
            float(jet["entries_per_s"]) if jet else None,
            float(ceiling["entries_per_s"]) if ceiling else None,
        )
        rounds = _rounds(results, key, "ratio")
        cells.append(
            known_fmt(ratio)
            + (f" (median {known_fmt(_median([ratio, *rounds]))})" if rounds else "")
        )
        ja, cb = _cpu(results, "jetmcp", key), _cpu(results, "granian-rsgi", key)
        cells.append(known_fmt(cb / ja) if ja and cb else "n/a")
        cells.append(known_fmt(_floor_share(results, key)))
        raw = (results["servers"].get("jetmcp", {}).get("workloads", {}).get(key)) or {}
        size = raw.get("reply_bytes")
        same = " =" if raw.get("same_bytes_as_ceiling") else " ≠"
        cells.append(f"{size}{same}" if size else "—")
        for peer, _ in peers:
            other = _row(results, peer, key)
            if other and jet and other["entries_per_s"]:
                mult = float(jet["entries_per_s"]) / float(other["entries_per_s"])
                cells.append(f"{other['entries_per_s']:,.0f} ({mult:.1f}{X})")
            elif other:
                cells.append(f"{other['entries_per_s']:,.0f}")
            else:
                cells.append(_cell(_why_not(results, peer, key)))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "- `ctx-log` is sent at 2026-07-28 with `Accept: application/json, text/event-stream` "
        "and no `io.modelcontextprotocol/logLevel` in `_meta`: the tool awaits `ctx.info`, and "
        "a correct server sends no `notifications/message` (the pre-flight fails a reply that "
        "has one, and wrk counts any reply carrying one as an error).",
        f"- *{X} ceiling*: this run's main pass; with `--shape-rounds N`, the median of it and "
        "N rounds in which jetmcp, the ceiling and the floor ran back to back (a shared "
        "machine drifts by several percent within minutes). The floor's share is that median "
        "too.",
        "- *floor*: `bench/load/floor.py` on the ceiling's Granian: the same canned reply "
        "after it reads what the specification makes every Streamable HTTP server check "
        "(the method and path, whether an `Origin` came, `MCP-Protocol-Version`, and at "
        "2026-07-28 `Mcp-Method` and `Mcp-Name` against the body), through Granian's API, and "
        "the workload's own tool function runs (for `scale`, after pydantic validates its "
        "arguments' JSON and writes the returned model twice, as the text and the structured "
        "result), with no JSON-RPC and no MCP. Its share of the ceiling is the most any MCP "
        "server on Granian can reach on this machine. (Runs before 2026-12-04 22:19 had a "
        "floor without the header reads.)",
        "- `session`: the server started with sessions (jetmcp without `--stateless`, the "
        "peers with `stateless_http=False`), one `initialize` + `notifications/initialized` "
        "at 2025-11-25 before loading, its `Mcp-Session-Id` on every request.",
    ]
    return lines


#: Growth after warm-up that a soak still calls flat (bench/load/run.py SOAK_FLAT_KIB).
SOAK_FLAT_MIB = 1.0


def known_fmt(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.0%}"


def _overhead_lines(results: dict[str, Any]) -> list[str]:
    overhead = results.get("overhead")
    if not overhead:
        return []
    rounds = overhead["rounds"]
    names = list(rounds[0]) if rounds else []
    lines = [
        "",
        "## What auth, metrics and tracing cost (tools/call, jetmcp against itself)",
        "",
        f"{len(rounds)} rounds; each configuration a fresh `jetmcp run` (1 worker, "
        "--stateless), back to back, the order turned each round. auth: a JWT per request "
        "checked against the cached JWKS of a real authorization server on 127.0.0.1 "
        "(verified tokens kept, the default); auth-nocache: `--auth-cache-seconds 0`, the "
        "signature checked on every request; metrics: `--metrics-port`; otel: `--otel` with "
        "no SDK installed.",
        "",
        "| round | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for i, row in enumerate(rounds, 1):
        cells = []
        for name in names:
            rps = row[name].get("requests_per_s")
            cpu = row[name].get("cpu_us_per_request")
            cell = (
                f"{rps:,.0f} req/s, {cpu:.1f} µs" if rps and cpu else row[name].get("status", "?")
            )
            if row[name].get("cpu_ratio"):
                cell += f" ({row[name]['cpu_ratio']:.0%})"
            cells.append(cell)
        lines.append(f"| {i} | " + " | ".join(cells) + " |")
    medians = overhead.get("median_ratio", {})
    cpu = overhead.get("median_cpu_ratio", {})
    lines += [
        "",
        "Each cell: req/s, the server's CPU µs per request, and (in brackets) plain's CPU per "
        "request over this one: the rate this configuration sustains on a core of its own, "
        "relative to plain (req/s itself swings with other load on a shared machine).",
        "",
        "Median ratio to plain, by CPU per request: "
        + ", ".join(f"{n} {known_fmt(r)}" for n, r in cpu.items())
        + "; by req/s: "
        + ", ".join(f"{n} {known_fmt(r)}" for n, r in medians.items()),
    ]
    return lines


def _pairs_lines(results: dict[str, Any]) -> list[str]:
    pairs = results.get("pairs")
    if not pairs:
        return []
    lines = [
        "",
        "## tools/call against the ceiling, measured in pairs",
        "",
        f"After the main pass, {len(pairs)} more pairs: a fresh jetmcp, then a fresh Granian "
        f"RSGI ceiling, tools/call for {results['settings'].get('pair_duration_s', 5):g} s "
        "each, back to back. The 80% goal is judged on the median ratio of these pairs and "
        "the main pass's.",
        "",
        "| pair | jetmcp req/s | ceiling req/s | ratio | jetmcp CPU µs/req | ceiling CPU µs/req |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, p in enumerate(pairs, 1):
        j, c = p["jetmcp"], p["ceiling"]

        def num(v: Any, fmt: str) -> str:
            return format(v, fmt) if isinstance(v, (int, float)) else "—"

        lines.append(
            f"| {i} | {num(j.get('requests_per_s'), ',.0f')} | "
            f"{num(c.get('requests_per_s'), ',.0f')} | {known_fmt(p.get('ratio'))} | "
            f"{num(j.get('cpu_us_per_request'), '.1f')} | "
            f"{num(c.get('cpu_us_per_request'), '.1f')} |"
        )
    return lines


def _cpu(results: dict[str, Any], server: str, workload: str = "call") -> float | None:
    row = _row(results, server, workload)
    value = row.get("cpu_us_per_request") if row else None
    return float(value) if value else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _fmt_pair(a: float | None, b: float | None, na: str, nb: str, as_pct: bool = False) -> str:
    if a is None or not b:
        missing = [n for n, v in ((na, a), (nb, b)) if not v]
        return "no numbers for " + " and ".join(missing)
    ratio = f"{a / b:.0%}" if as_pct else f"{a / b:.1f}{X}"
    return f"{ratio}: {na} {a:,.0f} vs {nb} {b:,.0f}"


# -- markdown -------------------------------------------------------------------------------


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _mib(kib: int | None) -> str:
    return f"{kib / 1024:.1f}" if kib else "—"


def markdown(results: dict[str, Any]) -> str:
    _, ref_note = choose_reference(results)
    m = results["machine"]
    v = results["versions"]
    s = results["settings"]
    lines = [
        "# jetmcp side-by-side load benchmark",
        "",
        f"- **Date:** {results['date']}",
        f"- **Machine:** {m['nproc']} CPUs (nproc), {m['cpu_model']}, {m['memory_gib']} GiB, "
        f"Linux {m['kernel']}",
        f"- **Command:** `{results['command']}`",
        f"- **Load:** wrk {v.get('wrk', '?')}, 1 thread, {s['connections']} connections, "
        f"{s['warmup_s']:g} s warm-up + {s['duration_s']:g} s measured per workload; server "
        f"pinned to core {s['server_core']}, wrk and the stdio driver to core {s['load_core']}, "
        f"all at niceness {s.get('nice', 0)}; stdio window {s.get('stdio_window') or 'unlimited'}",
        "- **Versions:** " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- **jetmcp build:** {_build_line(results)}",
        f"- **Ratios:** {ref_note}. For req/s and entries/s higher is better; for p50, p99 "
        "and RSS lower is better.",
        f"- **Other load:** up to {_max_other(results):.2f} cores used by processes outside "
        "the benchmark during a measured run (the *other CPU* column; ⚠ above "
        f"{BUSY_CORES} cores: that row was disturbed, rerun on a quiet machine to trust it).",
        "",
        "## Servers",
        "",
        "| server | status | how it was run | batch of 10 @ 2025-03-26 answered | peak RSS HTTP "
        "(MiB) | largest process (MiB) | peak RSS stdio (MiB) |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for key, srv in results["servers"].items():
        status = srv.get("status", "?")
        if srv.get("detail"):
            status += f": {_cell(srv['detail'])}"
        for note in srv.get("notes", []):
            status += f" ({_cell(note)})"
        how = _cell(srv["how"])
        for variant, run in srv.get("variants", {}).items():
            # The request shapes' processes: how each was started, and how it went.
            how += f"; request shapes `{variant}`: `{_cell(run.get('command', '?'))}`"
            if run.get("status") != "ok":
                status += f"; {variant}: {run.get('status')} {_cell(run.get('detail', ''))}"
        lines.append(
            f"| {srv['label']} (`{key}`) | {status} | {how} | "
            f"{_cell(srv.get('batch_answer', '—'))} | {_mib(srv.get('rss_kib'))} | "
            f"{_mib(srv.get('rss_worker_kib'))} | {_mib(srv.get('stdio_rss_kib'))} |"
        )
    for workload in s["workloads"]:
        is_stdio = workload == "stdio"
        unit = "msg/s" if is_stdio else "req/s"
        lines += [
            "",
            f"## {WORKLOAD_TITLES[workload]}",
            "",
            f"| server | {unit} | entries/s | p50 ms | p99 ms | p99.9 ms | "
            + ("errors | " if is_stdio else "non-2xx | rpc err | sock err | CPU µs/req | ")
            + f"peak RSS MiB | {X} {unit} | {X} p50 | {X} p99 | {X} RSS | other CPU |",
            "|---|---:|---:|---:|---:|---:|---:|"
            + ("" if is_stdio else "---:|---:|---:|")
            + "---:|---:|---:|---:|---:|---:|",
        ]
        for srv in results["servers"].values():
            row = srv.get("workloads", {}).get(workload)
            if row is None:
                continue
            name = f"{srv['label']}"
            if row.get("status") != "ok":
                what = row.get("status", "?")
                cols = 11 if is_stdio else 14
                cells = [f"**{what}**: {_cell(row.get('detail', ''))}"] + [""] * (cols - 1)
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
                continue
            lat = row["latency_ms"]
            r = row.get("ratio", {})
            err_cols = [str(row["non_2xx"])]
            if not is_stdio:
                cpu = row.get("cpu_us_per_request")
                err_cols += [
                    str(row.get("rpc_errors", 0)),
                    str(row["socket_errors"]),
                    f"{cpu:.1f}" if cpu else "—",
                ]
            post = f" ⚠ {row['post_check']}" if row.get("post_check") else ""
            lines.append(
                "| "
                + " | ".join(
                    [
                        name + post,
                        f"{row['requests_per_s']:,.0f}",
                        f"{row['entries_per_s']:,.0f}",
                        f"{lat['p50']:.2f}",
                        f"{lat['p99']:.2f}",
                        f"{lat['p999']:.2f}",
                        *err_cols,
                        _mib(row.get("rss_kib")),
                        _x(r.get("requests_per_s")),
                        _x(r.get("p50")),
                        _x(r.get("p99")),
                        _x(r.get("rss")),
                        _other(row.get("other_cpu_cores")),
                    ]
                )
                + " |"
            )
    lines += _shape_lines(results)
    lines += _soak_lines(results)
    lines += _pairs_lines(results)
    lines += _state_lines(results)
    lines += _overhead_lines(results)
    lines += ["", "## Goal checks", ""]
    for g in results["goals"]:
        mark = {"PASS": "[x]", "FAIL": "[ ]", "N/A": "[ ]", "INFO": "   "}[g["status"]]
        lines.append(f"- {mark} **{g['status']}** — {g['goal']}: {g['detail']}")
    lines += [
        "",
        "## How to read this",
        "",
        "- req/s counts only 2xx replies without a JSON-RPC error; the others are the non-2xx "
        "and rpc err columns (counted in wrk's response() hook), connect/read/write/timeout "
        "errors the sock err column. stdio errors = error replies + wrong answers.",
        f"- entries/s = JSON-RPC messages answered per second (10 {X} req/s for a batch of 10).",
        "- Each HTTP server runs all its HTTP workloads in one process, in the order shown; "
        "peak RSS is VmHWM summed over the server's process tree (granian's main process and "
        "worker, node ...) read right after that workload, so it is cumulative.",
        "- The stdio driver writes requests as fast as the pipe takes them (at most "
        f"{results['settings'].get('stdio_window') or 'unlimited'} unanswered) while reading "
        "replies concurrently, so its latency is mostly time spent queued behind the requests "
        "before it (about window / throughput): compare msg/s first.",
        "- Pre-flight (plain Python HTTP) checked each server answers tools/call add(1, 2) "
        'with content text "3" before loading it, and again after each workload.',
        "- CPU µs/req is the CPU time (user + system) of the server's processes during the "
        "measured run divided by the requests answered: it includes the kernel's share of "
        "the loopback TCP work, and moves much less than req/s when other processes take "
        "turns on the server's core.",
        "- mcp SDK and FastMCP run twice: *as installed* (plain uvicorn: asyncio loop and h11, "
        "default logging: what `pip install mcp` / `pip install fastmcp` give) and *tuned* "
        "(uvloop and httptools from uvicorn[standard], logs at WARNING). The goal ratios are "
        "judged against the as-installed rows; the tuned ones are listed for reference.",
        "",
    ]
    return "\n".join(lines)


def _build_line(results: dict[str, Any]) -> str:
    build = results.get("build") or {}
    profile = build.get("profile", "?")
    how = (
        f"built by the runner with `{build['command']}`"
        if build.get("built")
        else "as installed in the venv (not rebuilt)"
    )
    line = f"`jetmcp._wire` {profile}, {how}"
    if build.get("error"):
        line += f" (the build FAILED: {_cell(' '.join(build['error']))})"
    if build.get("changed_during_run"):
        line += (
            " ⚠ the extension was rebuilt by another process while jetmcp was measured "
            f"(now {build['changed_during_run']})"
        )
    return line


def _soak_lines(results: dict[str, Any]) -> list[str]:
    soak = results.get("soak")
    if soak is None:
        return []
    lines = [
        "",
        f"## Soak: {soak['target_requests']:,} tools/call against one fresh jetmcp",
        "",
    ]
    if soak.get("status") != "ok":
        return [*lines, f"**{soak.get('status')}**: {_cell(soak.get('detail', ''))}"]
    lines += [
        f"{soak['requests']:,} requests in {soak['seconds']:.0f} s (wrk runs of "
        f"{soak['chunk_s']:g} s, {results['settings']['connections']} connections), "
        f"{soak['errors']} errors, other CPU {_other(soak.get('other_cpu_cores'))}"
        + (f", ⚠ {soak['post_check']}" if soak.get("post_check") else "")
        + f". {soak.get('verdict', '')}.",
        "",
        "| requests | seconds | RSS of the tree (MiB) | largest process (MiB) | peak RSS (MiB) |",
        "|---:|---:|---:|---:|---:|",
    ]
    warm = soak.get("warm_index")
    for i, p in enumerate(soak["samples"]):
        mark = " (warm)" if i == warm else ""
        lines.append(
            f"| {p['requests']:,}{mark} | {p['seconds']:.0f} | {p['rss_kib'] / 1024:.2f} | "
            f"{p['worker_rss_kib'] / 1024:.2f} | {p['peak_rss_kib'] / 1024:.2f} |"
        )
    return lines


def _state_lines(results: dict[str, Any]) -> list[str]:
    state = results.get("state")
    if not state:
        return []
    ratios = state.get("ratios", {})
    lines = [
        "",
        "## Shared state (`--state`): sessions in Redis, several workers",
        "",
        f"tools/call of `add` on one initialized session (2025-11-25) unless stateless; "
        f"Redis at `{state.get('redis_url')}` (unpinned), {state.get('cpus')} CPUs. `memory` "
        "and `redis`: the server pinned to the server core, wrk to the load core. The `-1w`/"
        "`-2w` rows: the server on every core and wrk pinned to the load core, so a second "
        "worker shares a core with the load generator on a 2-core machine.",
        "",
        "| row | req/s | p50 ms | p99 ms | server CPU µs/req | Redis CPU µs/req | errors | "
        "other CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in state.get("rows", []):
        if row.get("status") != "ok":
            lines.append(f"| {row['name']} | {row.get('status')} | | | | | | |")
            continue
        lat = row["latency_ms"]
        errors = row["non_2xx"] + row["rpc_errors"] + row["socket_errors"]
        lines.append(
            f"| {row['name']} | {row['requests_per_s']:,.0f} | {lat['p50']:.2f} | "
            f"{lat['p99']:.2f} | {row['server_cpu_us_per_request'] or 0:.1f} | "
            f"{row['redis_cpu_us_per_request'] or 0:.1f} | {errors} | "
            f"{_other(row.get('other_cpu_cores'))} |"
        )
    lines += [
        "",
        f"- redis ÷ memory (goal ≥ 0.80): {known_fmt(ratios.get('redis_vs_memory'))} in req/s, "
        f"{known_fmt(ratios.get('redis_vs_memory_cpu'))} in server CPU per request (memory's "
        "÷ Redis's)",
        f"- `--workers 2` ÷ `--workers 1` with Redis: {known_fmt(ratios.get('redis_2w_vs_1w'))};"
        f" stateless: {known_fmt(ratios.get('stateless_2w_vs_1w'))}",
    ]
    churn = state.get("churn")
    if churn and churn.get("status") == "ok":
        lines += [
            f"- churn: {churn['opened']:,} sessions opened and {churn['closed']:,} closed "
            f"({churn['failed']} failed) in {churn['seconds']:.0f} s "
            f"({churn['sessions_per_s']:,.0f}/s); keys left under the prefix: "
            f"{churn['keys_left']}; Redis `used_memory` "
            f"{churn['redis_used_memory_before'] / 1024:,.0f} KiB before the server, "
            f"{churn.get('redis_used_memory_after_warmup', 0) / 1024:,.0f} KiB after 1,000 "
            f"sessions, {churn['redis_used_memory_after'] / 1024:,.0f} KiB after all; worker RSS "
            f"{churn['worker_rss_kib_after_warmup'] / 1024:.1f} MiB after 1,000 sessions → "
            f"{churn['worker_rss_kib_after'] / 1024:.1f} MiB after all",
        ]
    elif churn:
        lines.append(f"- churn: **{churn.get('status')}** {_cell(str(churn.get('detail', '')))}")
    return lines


def _other(cores: float | None) -> str:
    if cores is None:
        return "—"
    return f"{cores:.2f}" + (" ⚠" if cores > BUSY_CORES else "")


def _max_other(results: dict[str, Any]) -> float:
    return max(
        (
            float(row.get("other_cpu_cores") or 0.0)
            for srv in results["servers"].values()
            for row in srv.get("workloads", {}).values()
        ),
        default=0.0,
    )


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# -- chart ----------------------------------------------------------------------------------


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = results["settings"]["workloads"]
    soak = results.get("soak") if (results.get("soak") or {}).get("status") == "ok" else None
    panels = len(workloads) + (1 if soak else 0)
    if panels == 0:
        return
    _, ref_note = choose_reference(results)
    fig, axes = plt.subplots(panels, 1, figsize=(10, 2.2 + 2.1 * panels))
    if panels == 1:
        axes = [axes]
    if soak:
        ax = axes[-1]
        xs = [p["requests"] for p in soak["samples"]]
        ax.plot(
            xs,
            [p["rss_kib"] / 1024 for p in soak["samples"]],
            "o-",
            color="#d9480f",
            label="process tree (main + worker)",
        )
        ax.plot(
            xs,
            [p["worker_rss_kib"] / 1024 for p in soak["samples"]],
            "s--",
            color="#e8590c",
            label="largest process (worker)",
        )
        ax.set_ylim(bottom=0)
        ax.set_xlabel("requests answered")
        ax.set_ylabel("RSS MiB")
        ax.set_title(f"jetmcp soak: RSS over {soak['requests']:,} tools/call", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.25)
    colors = {"jetmcp": "#d9480f", "ceiling": "#868e96", "peer": "#1c7ed6"}
    for ax, workload in zip(axes, workloads, strict=False):
        names: list[str] = []
        values: list[float] = []
        bar_colors: list[str] = []
        labels: list[str] = []
        for srv in results["servers"].values():
            row = srv.get("workloads", {}).get(workload)
            if row is None:
                continue
            names.append(srv["label"])
            bar_colors.append(colors[srv["role"]])
            if row.get("status") == "ok":
                values.append(float(row["entries_per_s"]))
                ratio = row.get("ratio", {}).get("requests_per_s")
                labels.append(
                    f" {row['entries_per_s']:,.0f}" + (f"  ({ratio:.2f}{X})" if ratio else "")
                )
            else:
                values.append(0.0)
                labels.append(f" {row.get('status')}")
        y = list(range(len(names)))[::-1]
        ax.barh(y, [max(val, 1e-9) for val in values], color=bar_colors)
        ax.set_yticks(y, names)
        ax.set_xscale("log")
        positive = [val for val in values if val > 0]
        if positive:
            ax.set_xlim(min(positive) / 3, max(positive) * 8)
        for yi, val, text in zip(y, values, labels, strict=True):
            ax.text(
                max(val, min(positive) / 3 if positive else 1), yi, text, va="center", fontsize=8
            )
        unit = "messages/s" if workload == "stdio" else "JSON-RPC entries/s"
        ax.set_title(f"{WORKLOAD_TITLES[workload]} — {unit} (log scale)", fontsize=10)
        ax.grid(axis="x", which="both", alpha=0.25)
    fig.suptitle(f"jetmcp side-by-side load benchmark, {results['date']}\n{ref_note}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- all of it ------------------------------------------------------------------------------


def finish(results: dict[str, Any], out_dir: Path, have_png: bool, log: Log) -> None:
    add_ratios(results)
    results["reference"] = choose_reference(results)[0]
    results["goals"] = goals(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    md = markdown(results)
    (out_dir / "latest.md").write_text(md)
    (out_dir / "latest.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    written = ["latest.md", "latest.json"]
    if have_png:
        try:
            chart(results, out_dir / "latest.png")
            written.append("latest.png")
        except Exception as exc:  # the numbers matter more than the picture
            log(f"chart failed: {exc!r}")
    print()
    print(md)
    log(f"wrote {', '.join(str(out_dir / w) for w in written)}")
