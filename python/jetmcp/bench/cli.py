"""The ``jetmcp bench`` command: its flags, ``--processes``, the report files, thresholds,
and ``jetmcp bench compare``."""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from jetmcp.bench.compare import Threshold, check_thresholds, compare, parse_threshold
from jetmcp.bench.messages import split_headers
from jetmcp.bench.recorder import Recorder, histogram_from
from jetmcp.bench.report import Report, Step, curve, render_csv, render_text
from jetmcp.bench.runner import BenchOptions, check, run_bench
from jetmcp.bench.scenario import ScenarioError, load
from jetmcp.bench.schedule import best, parse_ramp

#: Flags a child of ``--processes`` does not get (the parent writes the reports).
_PARENT_ONLY = {"--json", "--csv", "--report", "--threshold", "--processes"}
#: Hidden flag: run as child ``I`` of ``N`` and print the raw recorders as JSON.
_CHILD = "--child-of"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return number


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {value!r}") from None
    if not number > 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"must be a number above 0, not {value}")
    return number


def _non_negative(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {value!r}") from None
    if not number >= 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return number


class _MixAction(argparse.Action):
    """``--tool``/``--method`` add a message to the mix; ``--args``/``--params`` fill in the
    one added last, ``--weight`` sets how often it is sent."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        mix: list[tuple[str, dict[str, Any]]] = getattr(namespace, "mix", None) or []
        weights: list[int] = getattr(namespace, "weights", None) or []
        namespace.mix = mix
        namespace.weights = weights
        if self.dest in ("tool", "method"):
            if self.dest == "tool":
                mix.append(("tools/call", {"name": values, "arguments": {}}))
            else:
                mix.append((values, {}))
            weights.append(1)
            return
        if not mix:
            parser.error(f"{option_string} must follow --tool or --method")
        if self.dest == "weight":
            try:
                weights[-1] = _positive_int(values)
            except argparse.ArgumentTypeError as exc:
                parser.error(f"--weight {exc}")
            return
        try:
            value = json.loads(values)
        except ValueError as exc:
            parser.error(f"{option_string}: not JSON: {exc}")
        if not isinstance(value, dict):
            parser.error(f"{option_string}: must be a JSON object")
        method, params = mix[-1]
        if self.dest == "args":
            if method != "tools/call":
                parser.error("--args must follow --tool (use --params after --method)")
            params["arguments"] = value
        else:
            params.update(value)


def parser() -> argparse.ArgumentParser:
    bench = _Parser(
        prog="jetmcp bench",
        description="Load-test any MCP server (Streamable HTTP or stdio) and report "
        "throughput, latency percentiles (HDR histograms) and errors by kind. Closed loop "
        "by default (--connections, one request in flight each); --rate for an open model "
        "with latency counted from each request's scheduled time; --ramp and --find-max to "
        "step the rate; --scenario for virtual users. The mix is built from --tool/--args "
        "and --method/--params, in order (default: tools/list). "
        "`jetmcp bench compare A.json B.json` compares two --json reports.",
    )
    target = bench.add_mutually_exclusive_group(required=True)
    target.add_argument("url", nargs="?", help="the Streamable HTTP endpoint, e.g. .../mcp")
    target.add_argument("--stdio", metavar="CMD", help="a server command to run over stdio")
    bench.add_argument(
        "--transport",
        choices=("http", "stdio"),
        help="say which the target is (checked against URL/--stdio)",
    )
    bench.add_argument(
        "--connections",
        "-c",
        type=_positive_int,
        default=8,
        help="closed loop: concurrent connections (stdio: server processes), one request in "
        "flight each; open model: connections opened at the start (8)",
    )
    bench.add_argument(
        "--max-connections",
        type=_positive_int,
        default=256,
        help="open model: most connections opened when all are busy; past it a due request "
        "waits for one, its latency still counted from its scheduled time (256)",
    )
    amount = bench.add_mutually_exclusive_group()
    amount.add_argument("--duration", "-d", type=_positive, default=10.0, help="seconds (10)")
    amount.add_argument("--requests", "-n", type=_positive_int, help="total requests (bodies)")
    bench.add_argument("--tool", action=_MixAction, help="call this tool (repeatable)")
    bench.add_argument("--args", action=_MixAction, help="JSON arguments of the last --tool")
    bench.add_argument("--method", action=_MixAction, help="send this method (repeatable)")
    bench.add_argument("--params", action=_MixAction, help="JSON params of the last --method")
    bench.add_argument(
        "--weight", action=_MixAction, help="how often the last --tool/--method is sent (1)"
    )
    bench.add_argument("--batch", type=_positive_int, default=1, help="requests per batch")
    bench.add_argument("--revision", help="force an MCP revision (default: negotiated)")
    bench.add_argument("--timeout", type=_positive, default=30.0, help="seconds per exchange")
    bench.add_argument(
        "--header", "-H", action="append", default=[], help="extra HTTP header 'Name: value'"
    )
    load = bench.add_argument_group("open model")
    load.add_argument("--rate", type=_positive, help="requests per second, sent on schedule")
    load.add_argument(
        "--ramp", metavar="START:STOP:STEP", help="step the rate from START to STOP by STEP"
    )
    load.add_argument(
        "--step-duration",
        type=_positive,
        help="seconds per rate of --ramp (5) or --find-max (3)",
    )
    load.add_argument(
        "--find-max",
        action="store_true",
        help="find the highest rate whose p99 and errors stay within --slo-p99/--max-errors",
    )
    load.add_argument(
        "--slo-p99", type=_positive, default=100.0, metavar="MS", help="p99 a rate must keep (100)"
    )
    load.add_argument(
        "--max-errors",
        type=_non_negative,
        default=1.0,
        metavar="PCT",
        help="failed requests a rate may have, in percent (1)",
    )
    load.add_argument(
        "--late-ms",
        type=_non_negative,
        default=2.0,
        help="a request sent this much after its time with a connection free counts as the "
        "generator falling behind (2)",
    )
    users = bench.add_argument_group("scenario")
    users.add_argument("--scenario", metavar="FILE", help="virtual users' steps (JSON or YAML)")
    users.add_argument("--users", type=_positive_int, help="virtual users (overrides the file)")
    out = bench.add_argument_group("reports")
    out.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the JSON report to FILE ('-' or no FILE: stdout, as the old flag did)",
    )
    out.add_argument("--csv", metavar="FILE", help="write the figures as CSV ('-': stdout)")
    out.add_argument("--report", metavar="FILE.html", help="write a self-contained HTML report")
    out.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="EXPR",
        help="fail (exit 1) unless EXPR holds, e.g. 'p99<20ms', 'errors<0.1%%' (repeatable)",
    )
    out.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    bench.add_argument(
        "--processes",
        type=_positive_int,
        default=1,
        help="generator processes sharing the load, merged into one report (1)",
    )
    bench.add_argument(
        "--driver",
        choices=("auto", "python", "rust"),
        default="auto",
        help="the load loop: rust (in the extension, no Python per request; plain HTTP "
        "mixes, --rate, --ramp, --find-max), python (asyncio; stdio, scenarios, https), or "
        "auto: rust when the run allows it (auto)",
    )
    bench.add_argument(_CHILD, help=argparse.SUPPRESS)
    return bench


def compare_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="jetmcp bench compare",
        description="Compare two `jetmcp bench --json` reports (A the baseline): print the "
        "change of each figure, exit 1 when B is worse than A beyond --tolerance.",
    )
    p.add_argument("base", metavar="A.json")
    p.add_argument("new", metavar="B.json")
    p.add_argument(
        "--tolerance",
        type=_non_negative,
        default=5.0,
        metavar="PCT",
        help="how much worse a figure may get before it is a regression, in percent (5)",
    )
    return p


def _read_json(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SystemExit(f"jetmcp bench compare: cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise SystemExit(f"jetmcp bench compare: {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or "latency_ms" not in data:
        raise SystemExit(f"jetmcp bench compare: {path} is not a jetmcp bench --json report")
    return data


def compare_main(argv: Sequence[str]) -> int:
    ns = compare_parser().parse_args(list(argv))
    base, new = _read_json(ns.base), _read_json(ns.new)
    lines, regressions = compare(base, new, ns.tolerance)
    print(f"A {ns.base}\nB {ns.new}")
    print("\n".join(lines))
    for line in regressions:
        print(f"regression: {line}")
    return 1 if regressions else 0


def options_of(ns: argparse.Namespace, bench: argparse.ArgumentParser) -> BenchOptions:
    if ns.transport == "http" and ns.url is None:
        bench.error("--transport http needs a URL")
    if ns.transport == "stdio" and ns.stdio is None:
        bench.error("--transport stdio needs --stdio CMD")
    try:
        headers = split_headers(ns.header)
        ramp = parse_ramp(ns.ramp) if ns.ramp else None
        scenario = load(ns.scenario) if ns.scenario else None
    except (ValueError, ScenarioError) as exc:
        bench.error(str(exc))
    if ns.users is not None and scenario is None:
        from jetmcp.bench.scenario import parse

        # --users without a file: each user initializes, then sends the mix.
        steps: list[dict[str, Any]] = [{"initialize": {}}]
        mix = getattr(ns, "mix", None) or [("tools/list", {})]
        weights = getattr(ns, "weights", None) or [1] * len(mix)
        for (method, params), weight in zip(mix, weights, strict=False):
            if method == "tools/call":
                steps.append(
                    {
                        "call": params["name"],
                        "arguments": params.get("arguments", {}),
                        "weight": weight,
                    }
                )
            else:
                steps.append({"request": method, "params": params})
        if not any("call" in s for s in steps):
            bench.error("--users without --scenario needs a --tool to call")
        scenario = parse({"users": ns.users, "steps": steps})
    return BenchOptions(
        url=ns.url,
        stdio=ns.stdio,
        connections=ns.connections,
        duration=ns.duration,
        requests=ns.requests,
        mix=getattr(ns, "mix", None) or [],
        weights=getattr(ns, "weights", None) or [],
        batch=ns.batch,
        revision=ns.revision,
        timeout=ns.timeout,
        headers=headers,
        rate=ns.rate,
        max_connections=ns.max_connections,
        ramp=ramp,
        step_duration=ns.step_duration,
        find_max=ns.find_max,
        slo_p99_ms=ns.slo_p99,
        max_errors_pct=ns.max_errors,
        scenario=scenario,
        users=ns.users,
        late_ms=ns.late_ms,
        processes=ns.processes,
        driver=ns.driver,
    )


def _share(options: BenchOptions, index: int, count: int) -> None:
    """This child's part of the load: connections, rate, requests and users split."""

    def part(total: int) -> int:
        return total // count + (1 if index < total % count else 0)

    options.connections = max(1, part(options.connections))
    options.max_connections = max(options.connections, part(options.max_connections))
    if options.requests is not None:
        options.requests = max(1, part(options.requests))
    if options.rate is not None:
        options.rate /= count
    if options.ramp is not None:
        start, stop, step = options.ramp
        options.ramp = (start / count, stop / count, step / count)
    if options.scenario is not None:
        options.scenario.users = max(1, part(options.scenario.users))
        options.users = options.scenario.users


def _write(path: str, text: str) -> None:
    if path == "-":
        # The event loop may leave stdout non-blocking (it shares the file description
        # with a pipe): a report past the pipe's 64 KiB would then be cut short.
        # Written to the descriptor in a loop that waits whenever the pipe is full, so the
        # report arrives whole whatever mode the descriptor is in.
        sys.stdout.flush()
        fd = sys.stdout.fileno()
        view = memoryview((text if text.endswith("\n") else text + "\n").encode())
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                select.select([], [fd], [])
        return
    Path(path).write_text(text, encoding="utf-8")


def _curves(data: dict[str, Any]) -> dict[str, list[list[float]]]:
    curves = {"all": data["percentiles_ms"]}
    hists = data.get("histograms", {})
    if len(data["methods"]) > 1:
        for label in data["methods"]:
            if label in hists:
                curves[label] = curve(histogram_from(hists[label]))
    return curves


def child_args(argv: Sequence[str], json_file: str | None) -> list[str]:
    """The arguments of a child of ``--processes``: the parent's, less what only the parent
    does (writing reports, judging thresholds, spawning)."""
    args: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        i += 1
        if name not in _PARENT_ONLY:
            args.append(arg)
            continue
        if "=" in arg:
            continue
        if name != "--json":
            i += 1  # the flag's value
        elif (i < len(argv) and argv[i] == json_file and json_file != "-") or (
            i < len(argv) and argv[i] == "-"
        ):
            i += 1
    return args


def _run_children(args: list[str], count: int) -> list[dict[str, Any]]:
    """``count`` generator processes, each with its share; their raw results."""
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "jetmcp", "bench", *args, "-q", _CHILD, f"{i}/{count}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=os.environ.copy(),
        )
        for i in range(count)
    ]
    results = []
    failures = []
    for child in children:
        out, err = child.communicate()
        if child.returncode != 0 or not out.strip():
            lines = err.decode("utf-8", "replace").strip().splitlines()
            failures.append(lines[-1] if lines else f"exit status {child.returncode}")
            continue
        results.append(json.loads(out))
    if failures:
        raise SystemExit(f"jetmcp bench: a generator process failed: {failures[0]}")
    return results


def _merge(results: list[dict[str, Any]]) -> Report:
    first = results[0]
    meta = first["meta"]
    rec = Recorder.from_raw(first["rec"])
    for other in results[1:]:
        rec.merge_raw(other["rec"])
    report = Report(**{**meta, "rec": rec, "processes": len(results)})
    step_count = max(len(r["steps"]) for r in results)
    for i in range(step_count):
        parts = [r["steps"][i] for r in results if i < len(r["steps"])]
        step_rec = Recorder.from_raw(parts[0]["rec"])
        for part in parts[1:]:
            step_rec.merge_raw(part["rec"])
        step = Step(
            sum(p["rate"] for p in parts),
            parts[0]["seconds"],
            step_rec,
            all(p["held"] for p in parts) if parts[0]["held"] is not None else None,
            "; ".join(p["why"] for p in parts if p["why"]),
        )
        report.steps.append(step)
    if report.mode == "find-max":
        report.max_rate = best(report.steps)
    if meta.get("rate") is not None:
        report.rate = sum(r["meta"]["rate"] for r in results)
    return report


def _raw(report: Report) -> dict[str, Any]:
    meta = {
        "target": report.target,
        "transport": report.transport,
        "revision": report.revision,
        "connections": report.connections,
        "batch": report.batch,
        "wire_batches": report.wire_batches,
        "mix": report.mix,
        "mode": report.mode,
        "rate": report.rate,
        "duration": report.duration,
        "users": report.users,
        "notes": report.notes,
        "extra": report.extra,
    }
    return {
        "meta": meta,
        "rec": report.rec.to_raw(),
        "steps": [
            {
                "rate": s.rate,
                "seconds": s.seconds,
                "held": s.held,
                "why": s.why,
                "rec": s.rec.to_raw(),
            }
            for s in report.steps
        ],
    }


def main(argv: Sequence[str]) -> int:
    """``jetmcp bench ARGS``: exit 0, or 1 when a request failed or a threshold broke (2 for
    bad arguments)."""
    argv = list(argv)
    if argv[:1] == ["compare"]:
        return compare_main(argv[1:])
    bench = parser()
    ns = bench.parse_args(argv)
    options = options_of(ns, bench)
    try:
        thresholds: list[Threshold] = [parse_threshold(t) for t in ns.threshold]
    except ValueError as exc:
        bench.error(str(exc))
    try:
        check(options)
    except ValueError as exc:
        bench.error(str(exc))
    if options.processes > 1 and options.find_max and options.ramp is None:
        bench.error("--find-max searches from one process: give --ramp to step with several")
    import uvloop

    if ns.child_of is not None:
        index, _, count = ns.child_of.partition("/")
        _share(options, int(index), int(count))
        options.processes = 1
        report = _execute(uvloop, options, True)
        _write("-", json.dumps(_raw(report)))
        return 0
    if options.processes > 1:
        report = _merge(_run_children(child_args(argv, ns.json), options.processes))
        report.connections = options.connections
    else:
        report = _execute(uvloop, options, ns.quiet)
    data = report.to_dict()
    if ns.json is not None:
        _write(ns.json, json.dumps(data, indent=2))
    if ns.csv is not None:
        _write(ns.csv, render_csv(data))
    if ns.report is not None:
        from jetmcp.bench.html import render

        _write(ns.report, render(data, _curves(data)))
    if ns.json != "-" and ns.csv != "-":
        _write("-", render_text(data))
    failed = check_thresholds(data, thresholds)
    for line in failed:
        print(line, file=sys.stderr)
    if failed:
        return 1
    if thresholds or report.mode in ("ramp", "find-max"):
        return 0 if report.mode != "find-max" or report.max_rate is not None else 1
    return 1 if any(report.rec.errors.values()) or report.rec.requests == 0 else 0


def _execute(uvloop: Any, options: BenchOptions, quiet: bool) -> Report:
    try:
        report: Report = uvloop.run(run_bench(options, None if quiet else sys.stderr))
    except (OSError, ValueError, RuntimeError) as exc:
        raise SystemExit(f"jetmcp bench: {exc}") from None
    return report
