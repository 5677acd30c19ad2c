"""Where the requests' instructions went: the per-function difference between the two runs
``callgrind_live.py --keep DIR`` leaves (the second answered 1,000 requests more), divided by
1,000, so each row is instructions per request.

    .venv/bin/python bench/load/callgrind_live.py --server jetmcp --workload pydantic \\
        --keep /tmp/cg-pyd
    .venv/bin/python bench/load/callgrind_diff.py /tmp/cg-pyd            # self cost
    .venv/bin/python bench/load/callgrind_diff.py /tmp/cg-pyd --inclusive  # with callees

Only the worker process (the largest difference) is read. Self cost adds up to the total;
inclusive rows overlap (a caller includes its callees). Read it with ``callgrind_annotate``'s
own caveats: CPython's evaluation loop is one function, so Python-level work shows as
``_PyEval_EvalFrameDefault`` and the C functions it calls.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

STEP = 1000
_ROW = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(?:\*\s+)?(.+?)\s*$")


def _worker_files(run: Path) -> Path:
    """The callgrind file of the process that executed the most instructions in ``run``."""
    best: tuple[int, Path] | None = None
    for out in run.glob("callgrind.*"):
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                total = int(line.split()[1])
                if best is None or total > best[0]:
                    best = (total, out)
                break
    if best is None:
        raise SystemExit(f"no callgrind output in {run}")
    return best[1]


def costs(out: Path, inclusive: bool) -> dict[str, int]:
    """Instructions per function of one callgrind file, as ``callgrind_annotate`` counts them."""
    text = subprocess.run(
        [
            "callgrind_annotate",
            "--threshold=100",
            "--auto=no",
            "--show-percs=no",
            f"--inclusive={'yes' if inclusive else 'no'}",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, int] = {}
    body = text.split("file:function", 1)[-1] if "file:function" in text else text
    for line in body.splitlines():
        match = _ROW.match(line)
        if match is None or ":" not in match.group(2):
            continue
        name = match.group(2)
        found[name] = found.get(name, 0) + int(match.group(1).replace(",", ""))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keep", type=Path, help="the --keep directory of callgrind_live.py")
    parser.add_argument("--inclusive", action="store_true", help="with callees' instructions")
    parser.add_argument("--top", type=int, default=60, help="rows to print")
    args = parser.parse_args()
    runs = sorted(
        (p for p in args.keep.iterdir() if p.is_dir()),
        key=lambda p: int(p.name.rsplit("-", 1)[1]),
    )
    if len(runs) != 2:
        raise SystemExit(f"{args.keep} should hold two runs, not {len(runs)}")
    before = costs(_worker_files(runs[0]), args.inclusive)
    after = costs(_worker_files(runs[1]), args.inclusive)
    diff = {
        name: (after.get(name, 0) - before.get(name, 0)) / STEP
        for name in before.keys() | after.keys()
    }
    rows = sorted(diff.items(), key=lambda kv: -abs(kv[1]))
    total = sum(diff.values()) if not args.inclusive else None
    for name, per in rows[: args.top]:
        print(f"{per:>10,.0f}  {name[:150]}")
    if total is not None:
        print(f"{total:>10,.0f}  total (self costs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
