"""CPU time per request of the load generators: ``jetmcp bench`` (closed loop, and ``--rate``)
against wrk with bench/load/wrk_post.lua, against the same jetmcp server.

    .venv/bin/python bench/load/loadgen_cpu.py [--requests 60000] [--connections 32]

Wall throughput on a shared machine says little; the CPU a generator spends per request
(user + system, from ``getrusage`` of the finished child) does not depend on what else runs.
The server runs on core 0 and the generators on core 1 when ``taskset`` exists. Each line:
requests answered, CPU seconds, microseconds of CPU per request, and the ratio to wrk
(below 1.0 means cheaper than wrk: at equal CPU jetmcp bench would then send more).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import ADD, BODY, HERE, VERSION, Server, jetmcp


def _child_cpu(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``argv`` to its end; its CPU seconds (user + system) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} failed: {done.stderr[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60_000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--wrk-seconds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=5000, help="rate of the --rate line")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the least CPU counts")
    args = parser.parse_args()
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") else []
    server = Server(1, "0" if pin else None)
    rows = []
    try:
        import json

        # Start-up costs (interpreter, imports, connecting) are measured by a tiny run and
        # taken off, so the figure is the per-request cost of the loop itself.
        base = [*pin, *jetmcp(), "bench", server.url, *ADD, "-q", "--json", "-"]
        c = str(args.connections)
        for driver in ("rust", "python"):
            flag = ["--driver", driver]
            idle, _ = _child_cpu([*base, *flag, "-c", c, "-n", str(args.connections)])
            for name, extra in (
                ("closed loop", ["-c", c, "-n", str(args.requests)]),
                (
                    f"--rate {args.rate}",
                    ["-c", c, "--rate", str(args.rate), "-n", str(args.requests // 4)],
                ),
            ):
                cpu, out = min(_child_cpu([*base, *flag, *extra]) for _ in range(args.repeat))
                data = json.loads(out)
                n = data["requests"]
                rows.append((f"jetmcp bench {name}, {driver} driver", n, cpu - idle, None))
        if shutil.which("wrk"):
            with tempfile.TemporaryDirectory() as tmp:
                body = Path(tmp) / "body.json"
                body.write_bytes(BODY)
                env = dict(os.environ, BENCH_BODY_FILE=str(body), BENCH_PROTOCOL_VERSION=VERSION)
                runs = []
                for _ in range(args.repeat):
                    cpu, out = _child_cpu(
                        [*pin, "wrk", "-t1", f"-c{c}", f"-d{args.wrk_seconds}s",
                         "-s", str(HERE / "wrk_post.lua"), server.url],
                        env,
                    )  # fmt: skip
                    line = next(x for x in out.splitlines() if x.startswith("BENCH_JSON "))
                    w = json.loads(line[len("BENCH_JSON ") :])
                    runs.append((cpu / max(1, w["requests"]), cpu, w["requests"]))
            _, cpu, n = min(runs)
            rows.append(("wrk -t1 (wrk_post.lua)", n, cpu, None))
    finally:
        server.stop()
    wrk_us = next((cpu / n * 1e6 for name, n, cpu, _ in rows if name.startswith("wrk")), None)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  `{' '.join(sys.argv)}`")
    print("| generator | requests | CPU s | CPU us/request | vs wrk |")
    print("|---|---|---|---|---|")
    for name, n, cpu, _errors in rows:
        us = cpu / n * 1e6 if n else float("nan")
        ratio = f"{us / wrk_us:.2f}x" if wrk_us else "-"
        print(f"| {name} | {n:,} | {cpu:.2f} | {us:.1f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
