"""Checks that keep the package's layout as docs/contributing.md draws it.

- No import cycle between the modules of python/jetmcp, counting imports inside functions
  (grimp's graph, the one import-linter checks the layers with) and not those under
  ``if TYPE_CHECKING:``. The layers themselves are import-linter's contract
  (``[tool.importlinter]`` in pyproject.toml, ``lint-imports``).
- Size caps: a Python module of the package at most 900 lines, a Rust file (rust/src,
  rust/tests) at most 1,300. The files over a cap when the caps came in are listed in
  ``OVERSIZED`` with the size they had: such a file may shrink, never grow, and leaves the
  list once it is under the cap.

Run as ``python scripts/check_layout.py`` from anywhere; exit status 1 and one line per
finding when something is off.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "jetmcp"
PYTHON_CAP = 900
RUST_CAP = 1300
#: Files over their cap, and the most lines each may have (its size when the caps came in).
OVERSIZED: dict[str, int] = {}


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import one another (strongly connected components of
    more than one module), each sorted, found with Tarjan's algorithm."""
    edges = {
        module: sorted(graph.find_modules_directly_imported_by(module) - {module})
        for module in graph.modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        # Iterative, so a deep import chain cannot hit the recursion limit.
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = edges.get(node, [])
            if i < len(successors):
                work.append((node, i + 1))
                succ = successors[i]
                if succ not in index:
                    work.append((succ, 0))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def oversized() -> list[str]:
    """One line per file over its cap, or grown past its size in :data:`OVERSIZED`."""
    problems: list[str] = []
    files = [(p, PYTHON_CAP) for p in sorted((ROOT / "python" / PACKAGE).rglob("*.py"))]
    for folder in ("rust/src", "rust/tests"):
        files += [(p, RUST_CAP) for p in sorted((ROOT / folder).rglob("*.rs"))]
    seen: set[str] = set()
    for path, cap in files:
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        allowed = OVERSIZED.get(name)
        if allowed is not None:
            seen.add(name)
            if lines > allowed:
                problems.append(f"{name}: {lines} lines; it may not grow past {allowed}")
            elif lines <= cap:
                problems.append(
                    f"{name}: {lines} lines, under the cap of {cap}: take it off OVERSIZED"
                )
        elif lines > cap:
            problems.append(f"{name}: {lines} lines, over the cap of {cap}")
    for name in sorted(set(OVERSIZED) - seen):
        problems.append(f"{name}: listed in OVERSIZED but not found: take it off")
    return problems


def main() -> int:
    sys.path.insert(0, str(ROOT / "python"))
    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)
    problems = [f"import cycle: {' <-> '.join(group)}" for group in cycles(graph)]
    problems += oversized()
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"layout ok: {len(graph.modules)} modules, no import cycle, every file within its cap")
    return 0


if __name__ == "__main__":
    sys.exit(main())
