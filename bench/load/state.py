"""Shared state under load (``run.py --state``): what keeping sessions in Redis costs a
request on a known session, what a second worker brings, and whether a churn of sessions
through Redis leaves anything behind.

Rows, each with a fresh ``jetmcp run jetmcp.demo:app``:

- ``memory`` and ``redis``: one worker pinned to the server core, wrk pinned to the load
  core, every request a tools/call of ``add`` on one initialized session (2025-11-25). The
  goal: ``redis`` within 0.8 of ``memory``. Redis itself runs unpinned (it is the machine's).
- ``redis-1w``/``redis-2w`` and ``stateless-1w``/``stateless-2w``: the server on every core,
  wrk pinned to the load core, so on a 2-core machine the second worker and the load
  generator share a core: read the ratio with that in mind.
- churn: N sessions opened (``initialize``) and closed (``DELETE``) through Redis by a
  Python client; Redis's keys under the run's prefix, its ``used_memory`` and the worker's
  RSS before and after.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from types import ModuleType
from typing import Any

import httpx
import redis
from bodies import SINGLE_PROTOCOL_VERSION, TOOLS_CALL
from proctree import descendants, largest_peak_rss_kib, rss_kib

CHURN_CONCURRENCY = 16


def _jetmcp(r: ModuleType) -> str:
    return str(r.ROOT / ".venv" / "bin" / "jetmcp")


def _initialize(port: int) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": SINGLE_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"content-type": "application/json", "accept": "application/json"}
    with httpx.Client(timeout=10) as client:
        resp = client.post(url, json=init, headers=headers)
        resp.raise_for_status()
        session = resp.headers["mcp-session-id"]
        done = client.post(
            url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={
                **headers,
                "mcp-session-id": session,
                "mcp-protocol-version": SINGLE_PROTOCOL_VERSION,
            },
        )
        done.raise_for_status()
    return session


def _redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _row(
    r: ModuleType,
    args: Any,
    name: str,
    extra: list[str],
    *,
    core: str,
    stateful: bool,
    rclient: redis.Redis,
) -> dict[str, Any]:
    port = r.free_port()
    cmd = [
        _jetmcp(r),
        "run",
        "--transport",
        "http",
        "jetmcp.demo:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    cmd += extra
    env = dict(r.os.environ, PYTHONUNBUFFERED="1")
    running = r.Running(cmd, r.TMP / f"state-{name}.log", env, args.nice, core=core)
    row: dict[str, Any] = {"name": name, "command": " ".join(cmd[1:]), "server_cores": core}
    try:
        if not r.preflight.wait_for_port(port, args.start_timeout, running.alive):
            row.update(status="start-failed", detail=running.log_tail())
            r.log(f"state {name}: FAILED TO START: {running.log_tail()}")
            return row
        time.sleep(0.5)  # every worker up
        headers: dict[str, str] = {}
        if stateful:
            headers["Mcp-Session-Id"] = _initialize(port)
        body = r.TMP / "body-state-call.json"
        body.write_bytes(TOOLS_CALL)
        url = f"http://127.0.0.1:{port}/mcp"
        if args.warmup > 0:
            r.run_wrk(url, body, SINGLE_PROTOCOL_VERSION, headers, args.warmup, args)
        # Measured again (``--retries``) when other processes used the machine meanwhile;
        # the least disturbed attempt is kept.
        attempts: list[tuple[float, dict[str, Any], Any, Any, float]] = []
        for _ in range(1 + args.retries):
            redis_before = _redis_cpu(rclient)
            before = r.cpuload.sample(running.proc.pid)
            res = r.run_wrk(url, body, SINGLE_PROTOCOL_VERSION, headers, args.duration, args)
            after = r.cpuload.sample(running.proc.pid)
            redis_cpu = _redis_cpu(rclient) - redis_before
            other = r.cpuload.foreign_cores(before, after)
            attempts.append((other, res, before, after, redis_cpu))
            if other <= r.cpuload.BUSY_CORES:
                break
            r.log(f"state {name}: disturbed (other processes used {other:.2f} cores), again")
        _, res, before, after, redis_cpu = min(attempts, key=lambda a: a[0])
        seconds = res["duration_us"] / 1e6
        good = res["requests"] - res["non2xx"] - res["rpc_errors"]
        errors = res["errors"]
        row.update(
            status="ok",
            requests=res["requests"],
            requests_per_s=good / seconds if seconds else 0.0,
            non_2xx=res["non2xx"],
            rpc_errors=res["rpc_errors"],
            socket_errors=errors["connect"] + errors["read"] + errors["write"] + errors["timeout"],
            latency_ms={k: v / 1000 for k, v in res["latency_us"].items()},
            server_cpu_us_per_request=(after.server - before.server) / res["requests"] * 1e6
            if res["requests"]
            else None,
            redis_cpu_us_per_request=redis_cpu / res["requests"] * 1e6 if res["requests"] else None,
            other_cpu_cores=r.cpuload.foreign_cores(before, after),
            attempts=len(attempts),
        )
        r.log(
            f"state {name}: {row['requests_per_s']:,.0f} req/s, p50 "
            f"{row['latency_ms']['p50']:.2f} ms, p99 {row['latency_ms']['p99']:.2f} ms, "
            f"non-2xx {res['non2xx']}, JSON-RPC errors {res['rpc_errors']}, socket errors "
            f"{row['socket_errors']}, Redis CPU {row['redis_cpu_us_per_request'] or 0:.1f} "
            "us/request"
        )
        return row
    finally:
        running.stop()


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, dict[bytes, bytes]]:
    """One request on a keep-alive connection; the status and the headers of its reply (the
    body, sized by Content-Length, is read and dropped)."""
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split(b" ", 2)[1])
    headers: dict[bytes, bytes] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get(b"content-length", b"0"))
    if length:
        await reader.readexactly(length)
    return status, headers


async def _churn_sessions(port: int, total: int) -> dict[str, int]:
    """``total`` sessions opened and closed by ``CHURN_CONCURRENCY`` keep-alive connections
    of a minimal HTTP/1.1 client (cheap enough that the server, not the client, is what is
    measured)."""
    body = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'
        + SINGLE_PROTOCOL_VERSION.encode()
        + b'","capabilities":{},"clientInfo":{"name":"churn","version":"0"}}}'
    )
    init = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    ) + body
    counts = {"opened": 0, "closed": 0, "failed": 0}
    left = iter(range(total))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in left:
                status, headers = await _exchange(reader, writer, init)
                session = headers.get(b"mcp-session-id")
                if status != 200 or session is None:
                    counts["failed"] += 1
                    continue
                counts["opened"] += 1
                delete = (
                    b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: "
                    + session
                    + b"\r\nContent-Length: 0\r\n\r\n"
                )
                status, _ = await _exchange(reader, writer, delete)
                counts["closed" if status == 204 else "failed"] += 1
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(CHURN_CONCURRENCY)))
    return counts


def _count(rclient: redis.Redis, prefix: str) -> int:
    return sum(
        1
        for key in rclient.scan_iter(match=prefix + "*", count=1000)
        if not key.decode().startswith(prefix + "w:") and key.decode() != prefix + "state-key"
    )


def _churn(r: ModuleType, args: Any, rclient: redis.Redis) -> dict[str, Any]:
    prefix = f"jetmcp-bench-{uuid.uuid4().hex[:8]}:"
    port = r.free_port()
    cmd = [
        _jetmcp(r),
        "run",
        "--transport",
        "http",
        "jetmcp.demo:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    cmd += ["--redis", args.redis_url, "--redis-prefix", prefix]
    env = dict(r.os.environ, PYTHONUNBUFFERED="1")
    out: dict[str, Any] = {"sessions": args.churn, "command": " ".join(cmd[1:])}
    memory_before = int(rclient.info("memory")["used_memory"])
    running = r.Running(cmd, r.TMP / "state-churn.log", env, args.nice)
    try:
        if not r.preflight.wait_for_port(port, args.start_timeout, running.alive):
            out.update(status="start-failed", detail=running.log_tail())
            return out
        warm = min(1000, args.churn)
        asyncio.run(_churn_sessions(port, warm))
        memory_warm = int(rclient.info("memory")["used_memory"])
        pid = running.proc.pid

        def worker_rss() -> int:
            return max((rss_kib(p) for p in descendants(pid)), default=0)

        rss_warm = worker_rss()
        r.log(f"state churn: {args.churn:,} sessions opened and closed through Redis")
        started = time.monotonic()
        counts = asyncio.run(_churn_sessions(port, args.churn))
        seconds = time.monotonic() - started
        time.sleep(1.0)
        keys_after = _count(rclient, prefix)
        memory_after = int(rclient.info("memory")["used_memory"])
        rss_after = worker_rss()
        out.update(
            status="ok",
            seconds=seconds,
            sessions_per_s=counts["opened"] / seconds if seconds else 0.0,
            **counts,
            keys_left=keys_after,
            redis_used_memory_before=memory_before,
            redis_used_memory_after_warmup=memory_warm,
            redis_used_memory_after=memory_after,
            worker_rss_kib_after_warmup=rss_warm,
            worker_rss_kib_after=rss_after,
            worker_peak_rss_kib=largest_peak_rss_kib(pid),
        )
        r.log(
            f"state churn: {counts['opened']:,} opened, {counts['closed']:,} closed, "
            f"{counts['failed']} failed in {seconds:.0f} s; keys left {keys_after}; Redis "
            f"used_memory {memory_before / 1024:.0f} -> {memory_after / 1024:.0f} KiB; worker "
            f"RSS {rss_warm / 1024:.1f} -> {rss_after / 1024:.1f} MiB"
        )
        return out
    finally:
        running.stop()
        found = list(rclient.scan_iter(match=prefix + "*", count=1000))
        if found:
            rclient.delete(*found)


def measure(args: Any, r: ModuleType) -> dict[str, Any]:
    rclient = redis.Redis.from_url(args.redis_url, socket_timeout=5)
    rclient.ping()
    prefix = f"jetmcp-bench-{uuid.uuid4().hex[:8]}:"
    shared = ["--redis", args.redis_url, "--redis-prefix", prefix]
    rows: list[dict[str, Any]] = []
    both = f"{r.SERVER_CORE},{r.LOAD_CORE}"
    plan: list[tuple[str, list[str], str, bool]] = [
        ("memory", ["--workers", "1"], r.SERVER_CORE, True),
        ("redis", ["--workers", "1", *shared], r.SERVER_CORE, True),
        ("redis-1w", ["--workers", "1", *shared], both, True),
        ("redis-2w", ["--workers", "2", *shared], both, True),
        ("stateless-1w", ["--workers", "1", "--stateless"], both, False),
        ("stateless-2w", ["--workers", "2", "--stateless"], both, False),
    ]
    try:
        for name, extra, core, stateful in plan:
            r.log(f"== state: {name}")
            rows.append(_row(r, args, name, extra, core=core, stateful=stateful, rclient=rclient))
        churn = _churn(r, args, rclient) if args.churn > 0 else None
    finally:
        found = list(rclient.scan_iter(match=prefix + "*", count=1000))
        if found:
            rclient.delete(*found)
        rclient.close()
    by = {row["name"]: row.get("requests_per_s") for row in rows}

    def ratio(a: str, b: str) -> float | None:
        x, y = by.get(a), by.get(b)
        return x / y if x and y else None

    cpu = {row["name"]: row.get("server_cpu_us_per_request") for row in rows}
    memory_cpu, redis_cpu = cpu.get("memory"), cpu.get("redis")

    return {
        "rows": rows,
        "churn": churn,
        "redis_url": args.redis_url,
        "cpus": r.os.cpu_count(),
        "ratios": {
            "redis_vs_memory": ratio("redis", "memory"),
            # The same in CPU per request (memory's over Redis's): it moves far less than
            # req/s when other processes take turns on the server's core.
            "redis_vs_memory_cpu": memory_cpu / redis_cpu if memory_cpu and redis_cpu else None,
            "redis_2w_vs_1w": ratio("redis-2w", "redis-1w"),
            "stateless_2w_vs_1w": ratio("stateless-2w", "stateless-1w"),
        },
    }
