"""The drop-in corpus: real server code nobody here wrote, run unchanged on jetmcp and on its
own SDK, driven by the official SDK client, the transcripts diffed.

The corpus (downloaded pinned by ``scripts/dropin.sh`` into ``.cache/dropin``): the example
servers and snippets of the official SDK 1.30.0 and 2.3.0 and of fastmcp 2.14.7 and 4.2.3,
and MCP servers published on PyPI (time, git, fetch on mcp 2.x; calculator on mcp 1.x).
Each is served over stdio and over Streamable HTTP, by ``jetmcp run TARGET`` and by its own
framework (``sdk_run.py``), and ``drive.py`` (that environment's ``mcp.ClientSession``)
records initialize, every listing, and every call it can make up. The transcripts must be
equal once the differences documented in ``docs/migration.md`` are normalized away
(:func:`normalize`). A file its own SDK cannot serve here (a dependency that is not
installed, a server that needs the network or a display) is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "dropin"
SRC = CACHE / "src"
HERE = Path(__file__).resolve().parent
PYTHON = {"v2": Path(sys.executable), "v1": CACHE / "v1" / "bin" / "python"}
#: The whole corpus of one environment, driven start to end.
BATCH_TIMEOUT = 1200.0

pytestmark = pytest.mark.skipif(
    not (SRC.is_dir() and PYTHON["v1"].exists()),
    reason="the drop-in corpus is not set up: run bash scripts/dropin.sh",
)


@dataclass(frozen=True)
class Entry:
    env: str
    label: str
    target: str
    cwd: Path
    #: A program (a console script's ``main``) run with these arguments, rather than a
    #: server object: on its SDK it runs itself; jetmcp serves the server it starts.
    program: tuple[str, ...] | None = None

    def __str__(self) -> str:
        return self.label


#: Files of the example folders that are no servers, or that only their own hosting runs.
NOT_SERVERS = {
    "__init__.py",
    # Starlette/FastAPI apps mounting several servers, and OAuth/identity demos needing an
    # authorization server: served by the ASGI tests, not by jetmcp run.
    "streamable_http_basic_mounting.py",
    "streamable_http_host_mounting.py",
    "streamable_http_multiple_servers.py",
    "streamable_http_path_config.py",
    "streamable_starlette_mount.py",
    "oauth_server.py",
    "identity_assertion_server.py",
    # Proxies to other processes or the network.
    "in_memory_proxy_example.py",
    "run_with_tracing.py",
    # A JSON-schema helper, no server.
    "json_schema_example.py",
}


def _files(env: str, folder: str, prefix: str) -> list[Entry]:
    base = SRC / folder
    if not base.is_dir():
        return []
    return [
        Entry(env, f"{prefix}/{path.name}", path.name, base)
        for path in sorted(base.glob("*.py"))
        if path.name not in NOT_SERVERS
    ]


def corpus() -> list[Entry]:
    entries: list[Entry] = []
    entries += _files("v2", "mcp-2.3.0/examples/snippets/servers", "mcp2-snippets")
    entries += _files("v2", "mcp-2.3.0/examples/snippets/servers/lowlevel", "mcp2-lowlevel")
    entries += _files("v2", "mcp-2.3.0/examples/mcpserver", "mcp2-examples")
    entries += _files("v2", "fastmcp-4.2.3/examples", "fastmcp4")
    entries += _files("v1", "mcp-1.30.0/examples/snippets/servers", "mcp1-snippets")
    entries += _files("v1", "mcp-1.30.0/examples/snippets/servers/lowlevel", "mcp1-lowlevel")
    entries += _files("v1", "mcp-1.30.0/examples/fastmcp", "mcp1-fastmcp")
    entries += _files("v1", "fastmcp-2.14.7/examples", "fastmcp2")
    work = CACHE / "work"
    entries += [
        Entry("v2", "pypi/mcp-server-time", "mcp_server_time.server:create_server('UTC')", work),
        Entry("v2", "pypi/mcp-server-git", "mcp_server_git.server:create_server(None)", work),
        Entry("v2", "pypi/mcp-server-fetch", "mcp_server_fetch.server:create_server()", work),
        Entry("v1", "pypi/mcp-server-calculator", "mcp_server_calculator.calculator:mcp", work),
        Entry("v1", "pypi/code-index-mcp", "code_index_mcp.server:mcp", work),
        # Console scripts, unchanged: each builds its server in main() and runs it.
        Entry(
            "v2",
            "pypi/mcp-server-time (console script)",
            "mcp_server_time:main",
            work,
            ("--local-timezone", "UTC"),
        ),
        Entry(
            "v1",
            "pypi/mcp-server-sqlite (console script)",
            "mcp_server_sqlite:main",
            work,
            ("--db-path", str(work / "corpus.sqlite")),
        ),
        Entry(
            "v2",
            "pypi/excel-mcp-server (console script)",
            "excel_mcp.cli:main",
            work,
            ("stdio", "--allow-dir", str(work / "sheets")),
        ),
        # Ours, as console scripts: low-level servers run with InitializationOptions that
        # carry instructions, with no logging handler (setLevel: -32601); FastMCP and
        # MCPServer imported only inside main() (captured by the import hook).
        *(
            Entry(env, f"jetmcp/{name}", f"servers.{name}:main", HERE, args)
            for env, name, args in (
                ("v1", "lowlevel_v1", ()),
                ("v2", "lowlevel_v2", ()),
                ("v1", "lazy_v1", ("--greeting", "Hello")),
                ("v2", "lazy_v2", ("--greeting", "Hello")),
            )
        ),
        # Ours: a FastMCP 1.x and an MCPServer 2.x file whose lifted tools return every
        # kind of value.
        Entry("v1", "jetmcp/lifted_v1.py", "lifted_v1.py", HERE / "servers"),
        Entry("v2", "jetmcp/lifted_v2.py", "lifted_v2.py", HERE / "servers"),
        Entry(
            "v2",
            "mcp2-everything-server",
            "mcp_everything_server/server.py",
            SRC / "mcp-2.3.0/examples/servers/everything-server",
        ),
    ]
    return entries


#: The entries also served over Streamable HTTP: one or more of every family (examples,
#: snippets, low-level, fastmcp, published servers). Every entry is served over stdio; HTTP
#: runs the same adapter behind another transport, so a subset keeps the leg short.
HTTP_ENTRIES = {
    "mcp2-snippets/basic_tool.py",
    "mcp2-snippets/sampling.py",
    "mcp2-snippets/elicitation.py",
    "mcp2-snippets/notifications.py",
    "mcp2-snippets/lifespan_example.py",
    "mcp2-lowlevel/basic.py",
    "mcp2-examples/weather_structured.py",
    "fastmcp4/echo.py",
    "fastmcp4/tool_result_echo.py",
    "mcp1-snippets/basic_tool.py",
    "mcp1-snippets/sampling.py",
    "mcp1-snippets/tool_progress.py",
    "mcp1-lowlevel/basic.py",
    "mcp1-fastmcp/complex_inputs.py",
    "fastmcp2/echo.py",
    "pypi/mcp-server-time",
    "pypi/mcp-server-git",
    "pypi/mcp-server-fetch",
    "pypi/mcp-server-calculator",
    "pypi/code-index-mcp",
    "jetmcp/lifted_v1.py",
    "jetmcp/lifted_v2.py",
    "mcp2-everything-server",
}


def _sides(entry: Entry, transport: str) -> dict[str, list[str]]:
    python = str(PYTHON[entry.env])
    sdk_run = str(HERE / "sdk_run.py")
    if entry.program is not None:
        return {
            "sdk": [python, sdk_run, entry.target, "program", *entry.program],
            "jetmcp": [
                *(python, "-m", "jetmcp", "run", entry.target, "--transport", "stdio"),
                *("--", *entry.program),
            ],
        }
    if transport == "stdio":
        return {
            "sdk": [python, sdk_run, entry.target, "stdio"],
            "jetmcp": [python, "-m", "jetmcp", "run", entry.target, "--transport", "stdio"],
        }
    return {
        "sdk": [python, sdk_run, entry.target, "http", "{port}"],
        "jetmcp": [
            python,
            "-m",
            "jetmcp",
            "run",
            "--transport",
            "http",
            entry.target,
            "--port",
            "{port}",
        ],
    }


def _key(entry: Entry, transport: str) -> str:
    return f"{entry.label}|{transport}"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # This checkout's jetmcp in both environments: the v1 one finds a checkout through the
    # .pth file scripts/dropin.sh wrote, which names the checkout that set the cache up.
    env["PYTHONPATH"] = str(ROOT / "python")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run_batches(folder: Path, cases: list[tuple[Entry, str]]) -> dict[str, Any]:
    """Every transcript of ``cases``, from one batch driver per environment (both at once):
    each process imports its SDK client once and drives its entries in turn."""
    (CACHE / "work" / "sheets").mkdir(parents=True, exist_ok=True)
    running = []
    for env in ("v1", "v2"):
        spec = [
            {
                "key": _key(entry, transport),
                "cwd": str(entry.cwd),
                "transport": transport,
                "sides": _sides(entry, transport),
            }
            for entry, transport in cases
            if entry.env == env
        ]
        if not spec:
            continue
        (folder / f"{env}.json").write_text(json.dumps(spec))
        with (folder / f"{env}.out").open("wb") as out, (folder / f"{env}.err").open("wb") as err:
            proc = subprocess.Popen(
                [str(PYTHON[env]), str(HERE / "drive.py"), "batch", str(folder / f"{env}.json")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=_env(),
            )
        running.append((proc, env))
    found: dict[str, Any] = {}
    for proc, env in running:
        try:
            proc.wait(timeout=BATCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.returncode != 0:
            err = (folder / f"{env}.err").read_text(errors="replace")[-4000:]
            raise AssertionError(f"the {env} batch driver failed:\n{err}")
        found.update(json.loads((folder / f"{env}.out").read_text()))
    return found


#: Values made afresh on every run: UUIDs, and timestamps.
_VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:?\d{2}|Z)?"), "<time>"),
    # A measured duration (fastmcp's tool_result_echo example reports its own).
    (re.compile(r'("execution_time_ms": )[0-9.e-]+'), r'\1"<ms>"'),
    # The repr of an object a tool returned (its address).
    (re.compile(r" at 0x[0-9a-f]+>"), " at 0x?>"),
]


def normalize(transcript: dict[str, Any], transport: str = "stdio") -> dict[str, Any]:
    """The transcript without what legitimately differs from run to run. Over HTTP the
    messages of one call arrive on two streams (the POST's own, and the session's GET
    stream for what names no request), whose interleaving no server controls: there the
    events of each call are compared as a set, on stdio in order."""
    text = json.dumps(transcript, sort_keys=True)
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    out: dict[str, Any] = json.loads(text)
    if transport == "http":
        for answer in (out.get("calls") or {}).values():
            if isinstance(answer, dict) and "events" in answer:
                answer["events"].sort(key=lambda e: json.dumps(e, sort_keys=True))
    return out


def _last_error(text: str) -> str:
    """The line of a traceback that names the exception."""
    lines = [line.strip(" |") for line in text.strip().splitlines()]
    named = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Exit)\b", line)]
    return (named or lines or ["(no output)"])[-1][:200]


CORPUS = corpus()
CASES = [(entry, "stdio") for entry in CORPUS] + [
    (entry, "http") for entry in CORPUS if entry.label in HTTP_ENTRIES and entry.program is None
]


@pytest.fixture(scope="session")
def transcripts(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    # Only the cases this session runs (``-k`` picks some): each is a server started twice.
    selected = {
        item.callspec.id
        for item in request.session.items
        if isinstance(item, pytest.Function) and hasattr(item, "callspec")
    }
    cases = [case for case in CASES if _key(*case) in selected] or CASES
    return _run_batches(tmp_path_factory.mktemp("dropin"), cases)


@pytest.mark.parametrize(("entry", "transport"), CASES, ids=[_key(e, t) for e, t in CASES])
def test_same_answers_as_its_own_sdk(
    entry: Entry, transport: str, transcripts: dict[str, Any]
) -> None:
    sides = transcripts[_key(entry, transport)]
    sdk, jet = sides["sdk"], sides["jetmcp"]
    if "unserved" in sdk:
        pytest.skip(f"its own SDK cannot serve it here: {_last_error(sdk['unserved'])}")
    assert "unserved" not in jet, f"jetmcp could not serve {entry.label}:\n{jet['unserved']}"
    assert normalize(jet, transport) == normalize(sdk, transport)
