"""Instructions per call of every ``bench/inproc.py`` case, counted by callgrind.

Each case runs twice under ``valgrind --tool=callgrind`` (``--loop CASE --count`` low and
high); the difference of the two totals over the difference of the counts is what one call
costs, start-up and imports cancelled out. Counts of instructions, not seconds: the same build
and inputs give the same figure whatever else the machine does, so a change that should cost
nothing can be held to it.

    .venv/bin/python bench/instructions.py --json before.json            # every case
    .venv/bin/python bench/instructions.py call i-pydantic --json now.json
    .venv/bin/python bench/instructions.py --compare before.json now.json --tolerance 2
    .venv/bin/python bench/instructions.py --together --json now.json     # one valgrind run

``--together`` counts every case in one callgrind run instead of two per case: the start-up
(imports, the cases built, about 1.7 billion instructions, nearly all of a run's time under
callgrind) is paid once. Each case makes ``low`` calls, then ``high - low`` calls between
two dumps (callgrind's ``--dump-before`` on ``os.getppid``, which no case calls), so the
calls counted are the same ones as in the two-run way, made after the cases before them.

Build the release extension first (``maturin develop --release``): a debug build counts
something else. ``PYTHONHASHSEED=0`` is set for every run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPROC = HERE / "inproc.py"
_TOTAL = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.M)


def case_names() -> list[str]:
    """Every case ``bench/inproc.py`` knows, in its order."""
    code = "import sys; sys.argv=['inproc']; import inproc; print('\\n'.join(inproc.CASES))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        check=True,
        capture_output=True,
    )
    return out.stdout.decode().split()


def total(case: str, count: int) -> int:
    """Instructions of one whole run of ``inproc.py --loop case --count count``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(INPROC),
                "--loop",
                case,
                "--count",
                str(count),
            ],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            check=True,
            capture_output=True,
        )
        found = _TOTAL.search(out.read_bytes())
        if found is None:
            raise RuntimeError(f"no total in callgrind's output for {case}")
        return int(found.group(1))


def per_call(case: str, low: int, high: int) -> float:
    """Instructions per call of ``case``: two runs, subtracted."""
    return (total(case, high) - total(case, low)) / (high - low)


def together(cases: list[str], low: int, high: int, keep: str | None) -> dict[str, float]:
    """Instructions per call of each of ``cases``, all counted in one callgrind run.

    ``os.getppid()`` marks a dump: dump 1 is the start-up, dump 2 two marks back to back
    (what a mark itself costs), then two dumps per case (its first ``low`` calls, then its
    next ``high - low``). ``keep``: a folder to copy the counted dumps to, one per case
    (``CASE.out``, for ``callgrind_annotate``)."""
    code = (
        "import os, sys\n"
        "sys.argv = ['inproc']\n"
        "import inproc\n"
        "def count(mark, fn, n):\n"  # locals, as in inproc.py's --loop
        "    for _ in range(n):\n"
        "        fn()\n"
        "    mark()\n"
        "def main(mark):\n"
        "    mark(); mark()\n"
        f"    for name in {cases!r}:\n"
        "        fn = inproc.CASES[name][0]\n"
        f"        count(mark, fn, {low})\n"
        f"        count(mark, fn, {high - low})\n"
        "main(os.getppid)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--dump-before=os_getppid",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                code,
            ],
            cwd=HERE,
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(HERE)},
            check=True,
            capture_output=True,
        )

        def dump(n: int) -> int:
            found = _TOTAL.search((Path(tmp) / f"callgrind.out.{n}").read_bytes())
            if found is None:
                raise RuntimeError(f"no total in callgrind's dump {n}")
            return int(found.group(1))

        if keep is not None:
            Path(keep).mkdir(parents=True, exist_ok=True)
            for i, name in enumerate(cases):
                shutil.copy(Path(tmp) / f"callgrind.out.{4 + 2 * i}", Path(keep) / f"{name}.out")
        marks = dump(2)
        return {name: (dump(4 + 2 * i) - marks) / (high - low) for i, name in enumerate(cases)}


def compare(before: dict[str, float], after: dict[str, float], tolerance: float) -> int:
    """Print each case's change; 1 when one moved by more than ``tolerance`` percent."""
    worst = 0
    for name in before:
        if name not in after:
            print(f"{name:18s} {before[name]:>10,.0f}  (missing now)")
            worst = 1
            continue
        change = 100.0 * (after[name] - before[name]) / before[name]
        flag = "" if abs(change) <= tolerance else "  <-- beyond tolerance"
        print(f"{name:18s} {before[name]:>10,.0f} -> {after[name]:>10,.0f}  {change:+6.2f}%{flag}")
        if flag:
            worst = 1
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="cases to count (default: every case)")
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=1200)
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at once")
    parser.add_argument("--json", metavar="FILE", help="write {case: instructions} to FILE")
    parser.add_argument(
        "--together", action="store_true", help="every case in one callgrind run (see above)"
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="with --together: keep each case's dump in DIR"
    )
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--tolerance", type=float, default=2.0, help="percent (--compare)")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        return compare(before["per_call"], after["per_call"], args.tolerance)
    cases = args.cases or case_names()
    if args.together:
        counted = together(cases, args.low, args.high, args.keep)
    else:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            counts = pool.map(lambda c: per_call(c, args.low, args.high), cases)
            counted = dict(zip(cases, counts, strict=True))
    for name, value in counted.items():
        print(f"{name:18s} {value:>10,.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"per_call": counted}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
