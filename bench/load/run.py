"""Side-by-side load benchmark: every MCP server, one after another, same load, one report.

    .venv/bin/python bench/load/run.py [--only jetmcp,mcp-sdk] [--duration 10] ...

Starts each server pinned to core 0, checks with a plain HTTP request that it answers
tools/call correctly, drives it with wrk (pinned to core 1) for every workload, measures the
peak RSS of its process tree, stops it, and moves on. Writes bench/results/latest.{md,json,png}.
See bench/load/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cpuload
import peers
import preflight
import report
from bodies import (
    BATCH_CALL,
    BATCH_PROTOCOL_VERSION,
    BATCH_SIZE,
    CONTEXT_CALL,
    FASTMCP_CONTEXT_CALL,
    FASTMCP_PACKAGE,
    FASTMCP_PLAIN_CALL,
    PUBLISHED_CALL,
    PUBLISHED_PACKAGE,
    REQUEST_SHAPES,
    SINGLE_PROTOCOL_VERSION,
    TOOLS_CALL,
    TOOLS_LIST,
    Workload,
)
from proctree import (
    descendants,
    largest_peak_rss_kib,
    rss_kib,
    session_members,
    tree_peak_rss_kib,
    tree_rss_kib,
)

LOAD = peers.LOAD
ROOT = peers.ROOT
TMP = ROOT / "bench" / "results" / "tmp"
SERVER_CORE = "0"
LOAD_CORE = "1"

#: workload key -> (title, body, MCP-Protocol-Version, JSON-RPC entries per HTTP request)
HTTP_WORKLOADS: dict[str, tuple[str, bytes, str, int]] = {
    "call": ("tools/call (single)", TOOLS_CALL, SINGLE_PROTOCOL_VERSION, 1),
    "list": ("tools/list (single)", TOOLS_LIST, SINGLE_PROTOCOL_VERSION, 1),
    "batch": (
        f"batch of {BATCH_SIZE} tools/call @ {BATCH_PROTOCOL_VERSION}",
        BATCH_CALL,
        BATCH_PROTOCOL_VERSION,
        BATCH_SIZE,
    ),
    "ctx": ("tools/call of a Context tool", CONTEXT_CALL, SINGLE_PROTOCOL_VERSION, 1),
    "published": (
        f"tools/call of a published server's tool ({PUBLISHED_PACKAGE}: get_current_time)",
        PUBLISHED_CALL,
        SINGLE_PROTOCOL_VERSION,
        1,
    ),
    "published-fastmcp": (
        f"tools/call of a published FastMCP server's plain tool ({FASTMCP_PACKAGE}: "
        "check_temp_directory)",
        FASTMCP_PLAIN_CALL,
        SINGLE_PROTOCOL_VERSION,
        1,
    ),
    "published-fastmcp-ctx": (
        f"tools/call of a published FastMCP server's Context tool ({FASTMCP_PACKAGE}: "
        "get_settings_info)",
        FASTMCP_CONTEXT_CALL,
        SINGLE_PROTOCOL_VERSION,
        1,
    ),
}
#: The workloads only the published servers' rows run, by their ``peers.Server.probe``
#: (every other workload is for the servers whose probe is ``add``).
PROBE_OF_WORKLOAD = {
    "published": "published",
    "published-fastmcp": "published-fastmcp",
    "published-fastmcp-ctx": "published-fastmcp",
}
#: The servers that have the Context tool of the "ctx" workload (the SDK's file, on its SDK
#: and on jetmcp); the others skip it.
CONTEXT_SERVERS = frozenset({"mcp-sdk-installed", "mcp-sdk", "jetmcp-sdk-unchanged"})
#: The request-shape workloads (bodies.REQUEST_SHAPES) run on a server's ``variants``
#: (peers.Server): ``bench`` (stateless, the tools add, scale and add_log) or ``stateful``
#: (``session``).
SHAPE_VARIANT = {key: "stateful" if w.session else "bench" for key, w in REQUEST_SHAPES.items()}
ALL_WORKLOADS = (*HTTP_WORKLOADS, *REQUEST_SHAPES, "stdio")
#: What a bare run measures (the request shapes are picked with --workloads request-shapes).
DEFAULT_WORKLOADS = (*HTTP_WORKLOADS, "stdio")
_ALIASES = {"tools/call": "call", "tools/list": "list", "batch10": "batch"}
_GROUPS = {"request-shapes": tuple(REQUEST_SHAPES), "all": ALL_WORKLOADS}
#: Former spellings that scripts may still use: old -> current (each use warns).
_RENAMED_GROUPS = {"issue11": "request-shapes"}
_RENAMED_OPTIONS = {"--issue11-pairs": "--shape-rounds"}
#: Which peer group (installed together) each peer server belongs to.
PEER_GROUPS = {
    "mcp-sdk": "python",
    "mcp-sdk-installed": "python",
    "fastmcp": "python",
    "fastmcp-installed": "python",
    "ts-sdk": "node",
    "published-installed": "python",
    "published-fastmcp-installed": "dropin",
    "jetmcp-published-fastmcp": "dropin",
}

_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:6.1f}s] {msg}", flush=True)


def pinned(core: str, nice: int) -> list[str]:
    """Command prefix: run on ``core`` only, at niceness ``nice`` (0 = leave it alone)."""
    prefix = ["nice", "-n", str(nice)] if nice else []
    return [*prefix, "taskset", "-c", core]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Running:
    """A server process (its own session, pinned to the server core) and its log file."""

    def __init__(
        self,
        cmd: list[str],
        log_path: Path,
        env: dict[str, str],
        nice: int,
        core: str = SERVER_CORE,
    ) -> None:
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("wb")
        self.proc = subprocess.Popen(
            [*pinned(core, nice), *cmd],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        return tree_peak_rss_kib(self.proc.pid)

    def worker_rss_kib(self) -> int:
        """The peak RSS of the tree's largest process (the worker, for granian)."""
        return largest_peak_rss_kib(self.proc.pid)

    def log_tail(self, lines: int = 8) -> str:
        self._log.flush()
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """SIGTERM the server's process group (only ours: it has its own session), then KILL."""
        for sig, wait in ((signal.SIGTERM, 8.0), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(wait)
        # Workers that outlived their parent are still in the server's own session (its id is
        # the pid we started): make sure they go too, and touch nothing else.
        if session_members(self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def run_wrk(
    url: str,
    body_file: Path,
    version: str,
    headers: dict[str, str],
    seconds: float,
    args: argparse.Namespace,
) -> dict[str, Any]:
    env = dict(os.environ)
    env["BENCH_BODY_FILE"] = str(body_file)
    env["BENCH_PROTOCOL_VERSION"] = version
    env["BENCH_SESSION_ID"] = headers.get("Mcp-Session-Id", "")
    env["BENCH_AUTHORIZATION"] = headers.get("Authorization", "")
    # Every header (the two above included) also goes in a file of "Name: value" lines.
    headers_file = TMP / f"headers-{os.getpid()}.txt"
    headers_file.write_text("".join(f"{name}: {value}\n" for name, value in headers.items()))
    env["BENCH_HEADERS_FILE"] = str(headers_file)
    cmd = [
        *pinned(LOAD_CORE, args.nice),
        "wrk",
        "-t1",
        f"-c{args.connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(LOAD / "wrk_post.lua"),
        url,
    ]
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line[len("BENCH_JSON ") :])
            return result
    raise RuntimeError(f"wrk printed no summary (exit {done.returncode}): {done.stderr[-400:]}")


def _find_session(port: int) -> tuple[preflight.Endpoint | None, str]:
    """A stateful server's endpoint with a session opened on it (the first path that takes
    initialize and hands out an Mcp-Session-Id)."""
    why = ""
    for path in preflight.CANDIDATE_PATHS:
        endpoint, why = preflight.open_session(port, path)
        if endpoint is not None:
            return endpoint, ""
    return None, why


def measure_http(
    server: peers.Server, workloads: list[str], args: argparse.Namespace, variant: str = ""
) -> dict[str, Any]:
    """Start ``server`` (its ``variant``'s command, else the plain one), check it, and load
    it with each of ``workloads`` in turn."""
    out: dict[str, Any] = {"workloads": {}}
    port = free_port()
    env = dict(os.environ, BENCH_TS_PEERS=str(peers.PEERS_NODE), PYTHONUNBUFFERED="1")
    command = server.variants[variant] if variant else server.http
    log_name = f"{server.key}-http{'-' + variant if variant else ''}.log"
    running = Running(command(port), TMP / log_name, env, args.nice)
    if variant:
        out["command"] = shlex.join(command(port)).replace(f"{ROOT}/", "")
    try:
        if not preflight.wait_for_port(port, args.start_timeout, running.alive):
            why = "exited" if not running.alive() else f"not listening after {args.start_timeout}s"
            out["status"] = "start-failed"
            out["detail"] = f"{why}; log tail: {running.log_tail() or '(empty)'}"
            log(f"{server.key}: FAILED TO START ({why}), skipping it")
            return out
        log(
            f"{server.key}: listening on :{port}{' (' + variant + ')' if variant else ''}, "
            "pre-flight ..."
        )
        if variant == "stateful" and server.role != "ceiling":
            endpoint, why = _find_session(port)
        else:
            endpoint, why = preflight.check_call(port, server.probe)
        if endpoint is None:
            out["status"] = "preflight-failed"
            out["detail"] = f"{'session' if variant == 'stateful' else 'tools/call'} check "
            out["detail"] += f"failed: {why}"
            log(f"{server.key}: PRE-FLIGHT FAILED: {why}")
            return out
        out["status"] = "ok"
        out["path"] = endpoint.path
        out["notes"] = endpoint.notes
        batch_ok, batch_answer = False, ""
        if not variant and server.probe == "add":
            batch_ok, batch_answer = preflight.check_batch(endpoint)
            out["batch_answer"] = batch_answer
            out["batch_accepted"] = batch_ok
            log(f"{server.key}: tools/call ok at {endpoint.path}; batch: {batch_answer}")
        url = f"http://127.0.0.1:{port}{endpoint.path}"
        for key in workloads:
            spec: Workload | None = REQUEST_SHAPES.get(key)
            headers = dict(endpoint.headers)
            if spec is not None:
                title, body, version, entries = spec.title, spec.body, "", spec.entries
                headers.update(spec.headers)
            else:
                title, body, version, entries = HTTP_WORKLOADS[key]
            if key == "ctx" and server.key not in CONTEXT_SERVERS:
                continue
            # The published servers' rows run their tools' calls only, and only they do.
            if PROBE_OF_WORKLOAD.get(key, "add") != server.probe:
                continue
            row: dict[str, Any] = {"title": title}
            out["workloads"][key] = row
            if spec is not None:
                verdict = preflight.check_workload(endpoint, spec)
                row.update(reply_bytes=verdict.size, same_bytes_as_ceiling=verdict.same_bytes)
                if verdict.status != "ok":
                    status = "refused" if verdict.status == "refused" else "preflight-failed"
                    row.update(status=status, detail=verdict.detail)
                    log(f"{server.key}: {title}: {status.upper()}: {verdict.detail}")
                    continue
                log(f"{server.key}: {title}: pre-flight ok ({verdict.detail})")
            if key in preflight.CALL_CHECKS:
                problem = preflight.check_body(endpoint, *preflight.CALL_CHECKS[key])
                if problem:
                    row.update(status="preflight-failed", detail=problem)
                    log(f"{server.key}: {title}: PRE-FLIGHT FAILED: {problem}")
                    continue
            if key == "list":
                problem = preflight.check_list(endpoint)
                if problem:
                    row.update(status="preflight-failed", detail=problem)
                    log(f"{server.key}: {title}: PRE-FLIGHT FAILED: {problem}")
                    continue
            if key == "batch" and not batch_ok:
                row.update(status="refused", detail=batch_answer)
                log(f"{server.key}: {title}: refused ({batch_answer})")
                continue
            body_file = TMP / f"body-{key}.json"
            body_file.write_bytes(body)
            try:
                if args.warmup > 0:
                    log(f"{server.key}: {title}: warm-up {args.warmup:g}s")
                    run_wrk(url, body_file, version, headers, args.warmup, args)
                attempts: list[tuple[float, dict[str, Any]]] = []
                for attempt in range(1 + args.retries):
                    log(f"{server.key}: {title}: measuring {args.duration:g}s")
                    before = cpuload.sample(running.proc.pid)
                    res = run_wrk(url, body_file, version, headers, args.duration, args)
                    after_sample = cpuload.sample(running.proc.pid)
                    other = cpuload.foreign_cores(before, after_sample)
                    res["server_cpu_s"] = after_sample.server - before.server
                    attempts.append((other, res))
                    if other <= cpuload.BUSY_CORES:
                        break
                    if attempt < args.retries:
                        log(
                            f"{server.key}: {title}: disturbed (other processes used "
                            f"{other:.2f} cores), measuring again"
                        )
                other_cpu, res = min(attempts, key=lambda a: a[0])
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                row.update(status="error", detail=str(exc))
                log(f"{server.key}: {title}: ERROR {exc}")
                continue
            seconds = res["duration_us"] / 1e6
            errors = res["errors"]
            good = res["requests"] - res["non2xx"] - res["rpc_errors"]
            rps = good / seconds if seconds else 0.0
            socket_errors = errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]
            row.update(
                status="ok",
                requests=res["requests"],
                seconds=seconds,
                requests_per_s=rps,
                entries_per_s=rps * entries,
                non_2xx=res["non2xx"],
                rpc_errors=res["rpc_errors"],
                socket_errors=socket_errors,
                latency_ms={k: v / 1000 for k, v in res["latency_us"].items()},
                # CPU the server's processes used per request answered: unlike req/s it
                # hardly moves when other processes take turns on the server's core.
                cpu_us_per_request=res["server_cpu_s"] / res["requests"] * 1e6
                if res["requests"]
                else None,
                rss_kib=running.rss_kib(),
                rss_worker_kib=running.worker_rss_kib(),
                other_cpu_cores=other_cpu,
                attempts=len(attempts),
                wrk=res,
            )
            # The server must still be answering correctly after being loaded.
            if spec is not None:
                again = preflight.check_workload(endpoint, spec)
                if again.status != "ok":
                    row["post_check"] = f"FAILED after load: {again.detail}"
            else:
                after, why_after = preflight.check_call(port, server.probe)
                if after is None:
                    row["post_check"] = f"FAILED after load: {why_after}"
            lat = row["latency_ms"]
            log(
                f"{server.key}: {title}: {rps:,.0f} req/s, {rps * entries:,.0f} entries/s, "
                f"p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, "
                f"non-2xx {res['non2xx']}, JSON-RPC errors {res['rpc_errors']}, "
                f"socket errors {socket_errors}, "
                f"server CPU {row['cpu_us_per_request'] or 0:.1f} us/request, "
                f"other processes' CPU {other_cpu:.2f} cores"
                + (f", {row['post_check']}" if "post_check" in row else "")
            )
            if not running.alive():
                out["detail"] = f"server died during {title}: {running.log_tail()}"
                log(f"{server.key}: server died: {running.log_tail()}")
                break
        out["rss_kib"] = running.rss_kib()
        out["rss_worker_kib"] = running.worker_rss_kib()
        return out
    finally:
        running.stop()


def measure_soak(server: peers.Server, args: argparse.Namespace) -> dict[str, Any]:
    """A fresh server answers ``--soak`` tools/call requests in wrk runs of ``--soak-chunk``
    seconds; the RSS of its process tree (and of its largest process) is read between runs."""
    out: dict[str, Any] = {"target_requests": args.soak, "chunk_s": args.soak_chunk}
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    running = Running(server.http(port), TMP / f"{server.key}-soak.log", env, args.nice)
    try:
        if not preflight.wait_for_port(port, args.start_timeout, running.alive):
            out.update(status="start-failed", detail=running.log_tail() or "(empty log)")
            log(f"{server.key}: soak: FAILED TO START")
            return out
        endpoint, why = preflight.check_call(port)
        if endpoint is None:
            out.update(status="preflight-failed", detail=why)
            log(f"{server.key}: soak: PRE-FLIGHT FAILED: {why}")
            return out
        url = f"http://127.0.0.1:{port}{endpoint.path}"
        body_file = TMP / "body-soak.json"
        body_file.write_bytes(TOOLS_CALL)

        def point(requests: int, seconds: float) -> dict[str, Any]:
            pid = running.proc.pid
            return {
                "requests": requests,
                "seconds": round(seconds, 2),
                "rss_kib": tree_rss_kib(pid),
                "worker_rss_kib": max((rss_kib(p) for p in descendants(pid)), default=0),
                "peak_rss_kib": tree_peak_rss_kib(pid),
            }

        samples = [point(0, 0.0)]
        total = errors = 0
        started = time.monotonic()
        before = cpuload.sample(running.proc.pid)
        log(f"{server.key}: soak: {args.soak:,} tools/call in {args.soak_chunk:g}s wrk runs")
        while total < args.soak and running.alive():
            res = run_wrk(
                url, body_file, SINGLE_PROTOCOL_VERSION, endpoint.headers, args.soak_chunk, args
            )
            total += res["requests"]
            errs = res["errors"]
            errors += res["non2xx"] + res["rpc_errors"]
            errors += errs["connect"] + errs["read"] + errs["write"] + errs["timeout"]
            samples.append(point(total, time.monotonic() - started))
            last = samples[-1]
            log(
                f"{server.key}: soak: {total:,} requests, RSS {last['rss_kib'] / 1024:.1f} MiB "
                f"(largest process {last['worker_rss_kib'] / 1024:.1f} MiB), errors {errors}"
            )
        other = cpuload.foreign_cores(before, cpuload.sample(running.proc.pid))
        after, why_after = preflight.check_call(port)
        out.update(
            status="ok" if running.alive() else "died",
            requests=total,
            errors=errors,
            seconds=time.monotonic() - started,
            samples=samples,
            other_cpu_cores=other,
            post_check="" if after is not None else f"FAILED after load: {why_after}",
        )
        out.update(soak_verdict(samples, args.soak))
        log(f"{server.key}: soak: {out['verdict']}")
        return out
    finally:
        running.stop()


#: RSS growth after warm-up that still counts as flat.
SOAK_FLAT_KIB = 1024


def soak_verdict(samples: list[dict[str, Any]], target: int) -> dict[str, Any]:
    """Growth of the tree's RSS after warm-up (the first sample at or past 10% of the
    requests), and the least-squares slope over the samples after it."""
    warm_at = next(
        (i for i, p in enumerate(samples) if i > 0 and p["requests"] >= target / 10), None
    )
    if warm_at is None or warm_at >= len(samples) - 1:
        return {"flat": None, "verdict": "too few samples after warm-up to judge"}
    tail = samples[warm_at:]
    base = tail[0]["rss_kib"]
    growth = max(p["rss_kib"] for p in tail) - base
    end_growth = tail[-1]["rss_kib"] - base
    xs = [p["requests"] / 1e5 for p in tail]
    ys = [float(p["rss_kib"]) for p in tail]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    flat = growth <= SOAK_FLAT_KIB
    verdict = (
        f"RSS after warm-up ({tail[0]['requests']:,} requests) {base / 1024:.1f} MiB; "
        f"highest later {growth / 1024:+.2f} MiB, at the end {end_growth / 1024:+.2f} MiB; "
        f"slope {slope:+.1f} KiB per 100k requests"
    )
    return {
        "flat": flat,
        "warm_index": warm_at,
        "growth_kib": growth,
        "end_growth_kib": end_growth,
        "slope_kib_per_100k": slope,
        "verdict": verdict,
    }


def extension_path() -> Path | None:
    found = sorted((ROOT / "python" / "jetmcp").glob("_wire*.so"))
    return found[0] if found else None


def extension_stamp() -> str:
    """mtime and size of the jetmcp extension file: changes when anyone rebuilds it."""
    path = extension_path()
    if path is None:
        return "missing"
    st = path.stat()
    return f"{st.st_mtime_ns}:{st.st_size}"


def wire_build() -> str:
    """``jetmcp._wire.BUILD`` as a fresh interpreter of the project venv loads it."""
    code = "from jetmcp import _wire; print(getattr(_wire, 'BUILD', 'unknown (no _wire.BUILD)'))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    if done.returncode != 0:
        return f"not importable: {done.stderr.strip().splitlines()[-1:]}"
    return done.stdout.strip()


def build_release() -> dict[str, Any]:
    """Build the extension with the release profile into this venv (``maturin develop``)."""
    maturin = peers.MAIN_BIN / "maturin"
    cmd = [str(maturin), "develop", "--release", "-q"]
    log("building the jetmcp extension (release profile): " + " ".join(cmd[1:]))
    env = dict(os.environ, VIRTUAL_ENV=sys.prefix)
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    info: dict[str, Any] = {"command": "maturin develop --release", "built": done.returncode == 0}
    if done.returncode != 0:
        info["error"] = (done.stdout + done.stderr).strip().splitlines()[-5:]
        log(f"BUILD FAILED, measuring whatever is installed: {info['error']}")
    else:
        log(f"built in {time.monotonic() - started:.0f}s")
    return info


def measure_stdio(server: peers.Server, args: argparse.Namespace) -> dict[str, Any]:
    """The stdio workload, measured again (up to ``--retries``) when other load disturbed it."""
    attempts: list[dict[str, Any]] = []
    for attempt in range(1 + args.retries):
        row = _stdio_once(server, args)
        attempts.append(row)
        other = float(row.get("other_cpu_cores", 0.0))
        if row["status"] != "ok" or other <= cpuload.BUSY_CORES:
            break
        if attempt < args.retries:
            log(f"{server.key}: stdio: disturbed ({other:.2f} cores of other load), again")
    ok = [r for r in attempts if r["status"] == "ok"]
    best = min(ok, key=lambda r: float(r["other_cpu_cores"])) if ok else attempts[-1]
    best["attempts"] = len(attempts)
    return best


def _stdio_once(server: peers.Server, args: argparse.Namespace) -> dict[str, Any]:
    assert server.stdio is not None
    log(f"{server.key}: stdio: {args.warmup:g}s warm-up + {args.duration:g}s pipelined tools/call")
    cmd = [
        *pinned(LOAD_CORE, args.nice),
        sys.executable,
        str(LOAD / "stdio_driver.py"),
        "--duration",
        str(args.duration),
        "--warmup",
        str(args.warmup),
        "--window",
        str(args.stdio_window),
        "--stderr-log",
        str(TMP / f"{server.key}-stdio.log"),
        "--",
        *pinned(SERVER_CORE, args.nice),
        *server.stdio,
    ]
    env = dict(os.environ, BENCH_TS_PEERS=str(peers.PEERS_NODE), PYTHONUNBUFFERED="1")
    before = cpuload.sample()
    try:
        done = subprocess.run(
            cmd,
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=args.warmup + args.duration + 150,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "detail": "stdio driver timed out"}
    other_cpu = cpuload.foreign_cores(before, cpuload.sample())
    lines = done.stdout.strip().splitlines()
    try:
        res: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"status": "error", "detail": f"driver exit {done.returncode}: {done.stderr[-300:]}"}
    if not res.get("ok"):
        detail = res.get("error", "?")
        log(f"{server.key}: stdio: FAILED: {detail}")
        return {"status": "error", "detail": detail, "rss_kib": res.get("rss_kib", 0)}
    lat = {k: v / 1000 for k, v in res["latency_us"].items()}
    row = {
        "status": "ok",
        "title": "stdio, pipelined tools/call",
        "requests": res["messages"],
        "seconds": res["seconds"],
        "requests_per_s": res["messages_per_s"],
        "entries_per_s": res["messages_per_s"],
        "latency_ms": lat,
        "non_2xx": res["errors"] + res["wrong"],
        "socket_errors": 0,
        "rss_kib": res["rss_kib"],
        "protocol_version": res.get("protocol_version"),
        "window": res.get("window"),
        "other_cpu_cores": other_cpu,
    }
    log(
        f"{server.key}: stdio: {res['messages_per_s']:,.0f} msg/s, p50 {lat['p50']:.1f} ms, "
        f"p99 {lat['p99']:.1f} ms, errors {res['errors']}, wrong {res['wrong']}, "
        f"other processes' CPU {other_cpu:.2f} cores"
    )
    return row


def _warn_renamed(old: str, new: str) -> None:
    print(f"warning: {old} is now {new}; the old spelling will be removed", file=sys.stderr)


class _Renamed(argparse.Action):
    """An option's former spelling: it sets the current option, and warns."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        _warn_renamed(option_string or "?", self.new)
        setattr(namespace, self.dest, values)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    keys = [s.key for s in peers.servers()]
    parser = argparse.ArgumentParser(
        description="Side-by-side MCP server load benchmark (see bench/load/README.md)."
    )
    parser.add_argument("--only", default="", help=f"comma list of servers: {','.join(keys)}")
    parser.add_argument(
        "--workloads",
        default=",".join(DEFAULT_WORKLOADS),
        help=f"comma list of workloads: {','.join(ALL_WORKLOADS)}; request-shapes: the "
        f"{len(REQUEST_SHAPES)} from {next(iter(REQUEST_SHAPES))} to {[*REQUEST_SHAPES][-1]}; "
        f"all: every one (default {','.join(DEFAULT_WORKLOADS)}; none: only --soak)",
    )
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds (10)")
    parser.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds (3)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument(
        "--stdio-window",
        type=int,
        default=512,
        help="stdio: most requests in flight (512; 0 = as many as the pipe takes)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=-10 if os.geteuid() == 0 else 0,
        help="niceness of servers, wrk and the stdio driver (-10 as root, else 0): on a "
        "shared machine it keeps other work from skewing the numbers; 0 = leave it alone",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=1,
        help="measure a workload again (1) when other processes used more than "
        f"{cpuload.BUSY_CORES} cores meanwhile; the least disturbed attempt is kept",
    )
    parser.add_argument("--skip-install", action="store_true", help="never install peers")
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="measure the jetmcp extension as installed (default: `maturin develop --release` "
        "first, so the numbers are the release build's)",
    )
    parser.add_argument(
        "--soak",
        type=int,
        default=0,
        metavar="N",
        help="also serve N tools/call requests with a fresh jetmcp, reading its RSS between "
        "wrk runs (0: no soak)",
    )
    parser.add_argument(
        "--soak-chunk", type=float, default=5.0, help="seconds per wrk run of the soak (5)"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        metavar="N",
        help="after the main pass, measure tools/call N more times on a fresh jetmcp and a "
        "fresh Granian RSGI ceiling, one right after the other; the 80%% goal is judged on "
        "the median ratio of all pairs (3; 0: main pass only)",
    )
    parser.add_argument(
        "--shape-rounds",
        type=int,
        default=0,
        metavar="N",
        help="after the main pass, measure each single-request request-shape workload N more "
        "times on a fresh jetmcp, the ceiling and the floor, one right after the other; the "
        "85%% goals are then judged on the median ratio (0: main pass only)",
    )
    for old, new in _RENAMED_OPTIONS.items():
        parser.add_argument(
            old,
            dest=new.removeprefix("--").replace("-", "_"),
            type=int,
            default=argparse.SUPPRESS,
            action=_Renamed,
            new=new,
            help=argparse.SUPPRESS,
        )
    parser.add_argument(
        "--pair-duration", type=float, default=5.0, help="measured seconds per paired run (5)"
    )
    parser.add_argument(
        "--state",
        action="store_true",
        help="also measure shared state: stateful tools/call with sessions in memory and in "
        "Redis, --workers 2 against --workers 1, and a churn of --churn sessions (see "
        "bench/load/README.md)",
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("JETMCP_REDIS_URL") or "redis://127.0.0.1:6379/0",
        help="the Redis of --state (a key prefix of its own is used and removed)",
    )
    parser.add_argument(
        "--churn",
        type=int,
        default=100_000,
        metavar="N",
        help="--state: sessions opened and closed through Redis (100000; 0: none)",
    )
    parser.add_argument(
        "--overhead",
        type=int,
        default=0,
        metavar="N",
        help="measure tools/call on fresh jetmcp processes with each of "
        f"{', '.join(OVERHEAD_VARIANTS)} in turn, N rounds, and judge the auth and metrics "
        "goals on the median ratio to plain (0: not)",
    )
    parser.add_argument("--start-timeout", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    only = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = sorted(set(only) - set(keys))
    if unknown:
        parser.error(f"unknown server(s) {', '.join(unknown)}; known: {', '.join(keys)}")
    args.only = only or keys
    wanted = [_ALIASES.get(w.strip(), w.strip()) for w in args.workloads.split(",") if w.strip()]
    for old in sorted(set(wanted) & set(_RENAMED_GROUPS)):
        _warn_renamed(f"--workloads {old}", f"--workloads {_RENAMED_GROUPS[old]}")
    wanted = [_RENAMED_GROUPS.get(w, w) for w in wanted]
    wanted = [one for w in wanted for one in _GROUPS.get(w, (w,))]
    if wanted == ["none"]:
        wanted = []
    bad = sorted(set(wanted) - set(ALL_WORKLOADS))
    if bad:
        parser.error(f"unknown workload(s) {', '.join(bad)}; known: {', '.join(ALL_WORKLOADS)}")
    args.workloads = [w for w in ALL_WORKLOADS if w in wanted]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    http_workloads = [w for w in args.workloads if w in HTTP_WORKLOADS or w in REQUEST_SHAPES]
    missing_tools = [
        t
        for t in ("taskset", *(["wrk"] if http_workloads or args.soak or args.overhead else []))
        if not shutil.which(t)
    ]
    if missing_tools:
        print(
            f"missing: {', '.join(missing_tools)}. Install with:\n"
            "    apt-get update && apt-get install -y wrk util-linux",
            file=sys.stderr,
        )
        return 2
    if (os.cpu_count() or 1) < 2:
        log("WARNING: fewer than 2 CPUs: server and wrk will share a core")
    TMP.mkdir(parents=True, exist_ok=True)
    selected = [s for s in peers.servers() if s.key in args.only]

    install_failures: dict[str, str] = {}
    if not args.skip_install:
        install_failures = peers.install_peers(
            log,
            want_python=any(PEER_GROUPS.get(s.key) == "python" for s in selected),
            want_node=any(PEER_GROUPS.get(s.key) == "node" for s in selected),
            want_dropin=any(PEER_GROUPS.get(s.key) == "dropin" for s in selected),
        )
        for group, why in install_failures.items():
            log(f"could not install the {group} peers: {why}")
    have_png = peers.ensure_matplotlib(log, allow_install=not args.skip_install)

    # Measure the release build: the venv may hold the quick `ci` build of the test suite.
    wants_jetmcp = any(s.key == "jetmcp" for s in selected)
    build: dict[str, Any] = {"command": None, "built": False}
    if wants_jetmcp and not args.no_build:
        build = build_release()
    build["profile"] = wire_build()
    build["stamp"] = extension_stamp()
    log(f"jetmcp extension build: {build['profile']}")
    if wants_jetmcp and not build["profile"].startswith("release"):
        log("WARNING: jetmcp's extension is not a release build: its numbers are not comparable")

    command = shlex.join(["python", _rel(Path(sys.argv[0])), *sys.argv[1:]])
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": command,
        "machine": report.machine(),
        "versions": peers.versions(),
        "settings": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "connections": args.connections,
            "stdio_window": args.stdio_window,
            "nice": args.nice,
            "retries": args.retries,
            "wrk_threads": 1,
            "server_core": SERVER_CORE,
            "load_core": LOAD_CORE,
            "workloads": args.workloads,
            "soak_requests": args.soak,
            "pairs": args.pairs,
            "pair_duration_s": args.pair_duration,
            "single_protocol_version": SINGLE_PROTOCOL_VERSION,
            "batch_protocol_version": BATCH_PROTOCOL_VERSION,
        },
        "install_failures": install_failures,
        "build": build,
        "servers": {},
    }
    for server in selected:
        entry: dict[str, Any] = {"label": server.label, "role": server.role, "how": server.how}
        results["servers"][server.key] = entry
        reason: str | None = server.missing()
        peer_group = PEER_GROUPS.get(server.key)
        if reason and peer_group in install_failures:
            reason = f"{reason}; install failed: {install_failures[peer_group or '']}"
        if reason:
            entry.update(status="skipped", detail=reason, workloads={})
            log(f"{server.key}: SKIPPED: {reason}")
            continue
        log(f"== {server.label} ({server.key})")
        base = [w for w in http_workloads if w in HTTP_WORKLOADS] if server.base else []
        if base:
            entry.update(measure_http(server, base, args))
        for variant in ("bench", "stateful"):
            picked = [w for w in http_workloads if SHAPE_VARIANT.get(w) == variant]
            if picked and variant in server.variants:
                _merge_variant(entry, variant, picked, measure_http(server, picked, args, variant))
        if "status" not in entry:
            entry.update(status="ok", workloads={})
        if "stdio" in args.workloads and server.stdio is not None:
            stdio_row = measure_stdio(server, args)
            entry["workloads"]["stdio"] = stdio_row
            entry["stdio_rss_kib"] = stdio_row.get("rss_kib", 0)
            if (
                entry["status"] in ("start-failed", "preflight-failed")
                and stdio_row["status"] == "ok"
            ):
                entry["http_status"] = entry["status"]
                entry["status"] = "partial"
        if server.key == "jetmcp" and args.soak > 0:
            results["soak"] = measure_soak(server, args)
        if server.key == "jetmcp":
            # Someone may rebuild the venv's extension meanwhile (the test suite builds `ci`).
            stamp = extension_stamp()
            if stamp != build["stamp"]:
                build["changed_during_run"] = wire_build()
                log(
                    "WARNING: the jetmcp extension was rebuilt while it was measured; now: "
                    f"{build['changed_during_run']}"
                )

    if args.pairs > 0 and "call" in http_workloads:
        results["pairs"] = measure_pairs(selected, args)
    round_shapes = [
        w for w in http_workloads if w in REQUEST_SHAPES and REQUEST_SHAPES[w].entries == 1
    ]
    if args.shape_rounds > 0 and round_shapes:
        results["shape_rounds"] = measure_shape_rounds(selected, round_shapes, args)
    if args.overhead > 0:
        results["overhead"] = measure_overhead(args)

    if args.state:
        import state

        results["state"] = state.measure(args, sys.modules[__name__])

    report.finish(results, args.out, have_png, log)
    return 0


def _merge_variant(
    entry: dict[str, Any], variant: str, picked: list[str], out: dict[str, Any]
) -> None:
    """Fold the result of a server's ``variant`` process into its entry: its rows (or, when
    it never got to them, each picked workload marked with why), and how it ran."""
    rows: dict[str, Any] = out.get("workloads", {})
    if out.get("status") != "ok":
        for key in picked:
            rows.setdefault(
                key,
                {
                    "title": REQUEST_SHAPES[key].title,
                    "status": out.get("status", "?"),
                    "detail": out.get("detail", ""),
                },
            )
    entry.setdefault("workloads", {}).update(rows)
    entry.setdefault("variants", {})[variant] = {
        k: out[k]
        for k in ("status", "detail", "command", "path", "notes", "rss_kib", "rss_worker_kib")
        if k in out
    }
    if "status" not in entry:
        entry["status"] = out.get("status", "?")
        if out.get("detail"):
            entry["detail"] = out["detail"]


def measure_pairs(selected: list[peers.Server], args: argparse.Namespace) -> list[dict[str, Any]]:
    """tools/call on jetmcp and on the ceiling, each in a fresh process, one right after the
    other, ``args.pairs`` times. A shared machine drifts over a run of several minutes, and
    each process start lands differently in memory; pairs measured back to back compare the
    two under the same conditions, and their median is robust to one unlucky pair."""
    by_key = {s.key: s for s in selected}
    jet, ceiling = by_key.get("jetmcp"), by_key.get("granian-rsgi")
    if jet is None or ceiling is None or jet.missing() or ceiling.missing():
        return []
    short = argparse.Namespace(**{**vars(args), "duration": args.pair_duration})
    pairs: list[dict[str, Any]] = []
    for i in range(args.pairs):
        log(f"== pair {i + 1}/{args.pairs}: jetmcp, then the Granian RSGI ceiling")
        pair: dict[str, Any] = {}
        for key, server in (("jetmcp", jet), ("ceiling", ceiling)):
            row = measure_http(server, ["call"], short).get("workloads", {}).get("call", {})
            pair[key] = {
                k: row.get(k)
                for k in ("status", "requests_per_s", "cpu_us_per_request", "other_cpu_cores")
            }
        a, b = pair["jetmcp"].get("requests_per_s"), pair["ceiling"].get("requests_per_s")
        pair["ratio"] = a / b if a and b else None
        if pair["ratio"] is not None:
            log(f"pair {i + 1}: jetmcp {a:,.0f} vs ceiling {b:,.0f} req/s = {pair['ratio']:.0%}")
        pairs.append(pair)
    return pairs


#: The servers of a request-shape round (``--shape-rounds``), in the order they run.
ROUND_SERVERS = ("jetmcp", "granian-rsgi", "granian-rsgi-floor")


def measure_shape_rounds(
    selected: list[peers.Server], workloads: list[str], args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """Each request-shape workload on jetmcp, the ceiling and the floor, each in a fresh
    process, one right after the other, ``args.shape_rounds`` rounds: as :func:`measure_pairs`
    does for tools/call, so each workload's share of the ceiling is judged on rounds measured
    under the same conditions."""
    by_key = {s.key: s for s in selected}
    servers = [by_key[k] for k in ROUND_SERVERS if k in by_key and not by_key[k].missing()]
    if "jetmcp" not in {s.key for s in servers} or "granian-rsgi" not in {s.key for s in servers}:
        return {}
    short = argparse.Namespace(**{**vars(args), "duration": args.pair_duration})
    out: dict[str, list[dict[str, Any]]] = {}
    for key in workloads:
        variant = SHAPE_VARIANT[key]
        rounds = out.setdefault(key, [])
        for i in range(args.shape_rounds):
            log(f"== {key}: round {i + 1}/{args.shape_rounds}: jetmcp, ceiling, floor")
            this: dict[str, Any] = {}
            for server in servers:
                row = measure_http(server, [key], short, variant).get("workloads", {}).get(key, {})
                this[server.key] = {
                    k: row.get(k)
                    for k in ("status", "requests_per_s", "cpu_us_per_request", "other_cpu_cores")
                }
            jet = this["jetmcp"].get("requests_per_s")
            ceiling = this["granian-rsgi"].get("requests_per_s")
            this["ratio"] = jet / ceiling if jet and ceiling else None
            floor = (this.get("granian-rsgi-floor") or {}).get("requests_per_s")
            this["floor_ratio"] = floor / ceiling if floor and ceiling else None
            if this["ratio"] is not None:
                log(f"{key} round {i + 1}: jetmcp {this['ratio']:.0%} of the ceiling")
            rounds.append(this)
    return out


#: jetmcp configurations the ``--overhead`` runs compare with plain ``jetmcp run``: the
#: extra flags of each (``{issuer}``, ``{jwks}`` and ``{metrics_port}`` filled in per run).
OVERHEAD_VARIANTS: dict[str, list[str]] = {
    "plain": [],
    # JWT checked on every request against the cached JWKS (verified tokens kept: default).
    "auth": ["--auth-issuer", "{issuer}", "--auth-jwks-url", "{jwks}"],
    "metrics": ["--metrics-port", "{metrics_port}"],
    # For reference: the signature checked on every request (no verified-token cache), and
    # spans on (a no-op tracer: no SDK installed), which takes the fast path away.
    "auth-nocache": [
        "--auth-issuer",
        "{issuer}",
        "--auth-jwks-url",
        "{jwks}",
        "--auth-cache-seconds",
        "0",
    ],
    "otel": ["--otel"],
}


def measure_overhead(args: argparse.Namespace) -> dict[str, Any]:
    """tools/call on jetmcp with each of :data:`OVERHEAD_VARIANTS`, each in a fresh process,
    one right after the other (the order turned each round, so drift favours none),
    ``args.overhead`` rounds. A real authorization server (tests/harness/oauth_server.py) runs in
    this process for the auth variants; wrk sends a token it signed."""
    sys.path.insert(0, str(ROOT / "tests"))
    from harness.oauth_server import AuthorizationServer

    jetmcp = peers.MAIN_BIN / "jetmcp"
    names = list(OVERHEAD_VARIANTS)
    rounds: list[dict[str, Any]] = []
    body_file = TMP / "body-call.json"
    body_file.write_bytes(TOOLS_CALL)
    with AuthorizationServer() as auth:
        for i in range(args.overhead):
            order = names[i % len(names) :] + names[: i % len(names)]
            log(f"== overhead round {i + 1}/{args.overhead}: {', '.join(order)}")
            row: dict[str, Any] = {}
            for name in order:
                row[name] = _overhead_run(jetmcp, name, auth, body_file, args)
            base = row["plain"].get("requests_per_s")
            base_cpu = row["plain"].get("cpu_us_per_request")
            for name in names[1:]:
                rps = row[name].get("requests_per_s")
                cpu = row[name].get("cpu_us_per_request")
                row[name]["ratio"] = rps / base if rps and base else None
                # The rate the CPU cost allows, against plain's: the goals are judged on it.
                row[name]["cpu_ratio"] = base_cpu / cpu if cpu and base_cpu else None
            log(
                f"overhead round {i + 1}: "
                + ", ".join(
                    f"{n} {row[n].get('requests_per_s') or 0:,.0f} req/s "
                    f"{row[n].get('cpu_us_per_request') or 0:.1f} us/req"
                    + (f" (rate {row[n]['ratio']:.0%})" if row[n].get("ratio") else "")
                    + (f" (cpu {row[n]['cpu_ratio']:.0%})" if row[n].get("cpu_ratio") else "")
                    for n in names
                )
            )
            rounds.append(row)
    medians: dict[str, float | None] = {}
    cpu_medians: dict[str, float | None] = {}
    for name in names[1:]:
        medians[name] = _median([r[name].get("ratio") for r in rounds])
        cpu_medians[name] = _median([r[name].get("cpu_ratio") for r in rounds])
    return {"rounds": rounds, "median_ratio": medians, "median_cpu_ratio": cpu_medians}


def _median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None


def _overhead_run(
    jetmcp: Path, name: str, auth: Any, body_file: Path, args: argparse.Namespace
) -> dict[str, Any]:
    port = free_port()
    fill = {
        "issuer": auth.issuer,
        "jwks": auth.jwks_url,
        "metrics_port": str(free_port()),
    }
    extra = [a.format(**fill) for a in OVERHEAD_VARIANTS[name]]
    cmd = [
        str(jetmcp),
        "run",
        "jetmcp.demo:app",
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--stateless",
        *extra,
    ]
    url = f"http://127.0.0.1:{port}/mcp"
    headers: dict[str, str] = {}
    if name.startswith("auth"):
        headers["Authorization"] = f"Bearer {auth.mint(url, lifetime=3600)}"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    running = Running(cmd, TMP / f"overhead-{name}.log", env, args.nice)
    try:
        if not preflight.wait_for_port(port, args.start_timeout, running.alive):
            return {"status": "start-failed", "detail": running.log_tail()}
        if args.warmup > 0:
            run_wrk(url, body_file, SINGLE_PROTOCOL_VERSION, headers, args.warmup, args)
        before = cpuload.sample(running.proc.pid)
        res = run_wrk(url, body_file, SINGLE_PROTOCOL_VERSION, headers, args.pair_duration, args)
        after = cpuload.sample(running.proc.pid)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return {"status": "error", "detail": str(exc)}
    finally:
        running.stop()
    seconds = res["duration_us"] / 1e6
    good = res["requests"] - res["non2xx"] - res["rpc_errors"]
    if good <= 0:
        return {"status": "error", "detail": f"no good replies: {res}"}
    return {
        "status": "ok",
        "requests_per_s": good / seconds if seconds else 0.0,
        # The server's CPU per request: what its rate would be on a core of its own, and much
        # steadier than req/s when other processes take turns on that core.
        "cpu_us_per_request": (after.server - before.server) / res["requests"] * 1e6,
        "other_cpu_cores": cpuload.foreign_cores(before, after),
        "non_2xx": res["non2xx"],
        "rpc_errors": res["rpc_errors"],
        "p99_ms": res["latency_us"]["p99"] / 1000,
    }


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
