"""Install the peer servers into ``bench/.peers/`` (idempotent) and describe every server.

Peers never go into the project's venv: the Python ones get their own venv
(``bench/.peers/py``), the TypeScript SDK its own npm folder (``bench/.peers/node``).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bodies import FASTMCP_TARGET, PUBLISHED_TARGET

LOAD = Path(__file__).resolve().parent
ROOT = LOAD.parents[1]
PEERS = ROOT / "bench" / ".peers"
PEERS_PY = PEERS / "py"
PEERS_NODE = PEERS / "node"
#: The project's venv: jetmcp, granian and the runner itself live there.
MAIN_BIN = Path(sys.executable).parent

#: mcp 2.3.0 and fastmcp 4.2.3 resolve together (fastmcp 4.2.3 pulls mcp 2.3.0), so they
#: share one venv. uvicorn[standard] brings uvloop + httptools, uvicorn's fastest setup, for
#: the "tuned" rows (logs at WARNING); the "as installed" rows force what the packages alone
#: give (plain uvicorn: the asyncio loop and h11, default logging), as their users get it
#: from `pip install mcp`.
#: mcp-server-time is the published server of the drop-in rows (bodies.PUBLISHED_PACKAGE),
#: pinned as in requirements/dropin-v2.txt (which puts it in the project venv for jetmcp).
PY_REQUIREMENTS = (
    "mcp==2.3.0",
    "fastmcp==4.2.3",
    "uvicorn[standard]",
    "mcp-server-time==2026.10.19",
)
#: The drop-in corpus's mcp 1.x venv (``scripts/dropin.sh`` makes it from
#: requirements/dropin-v1.txt, with jetmcp from this checkout on its path): the published
#: FastMCP server (bodies.FASTMCP_PACKAGE) runs from it, on its SDK and on jetmcp.
DROPIN_V1_PY = ROOT / ".cache" / "dropin" / "v1" / "bin" / "python"
TS_SDK_VERSION = "1.32.2"
NPM_PACKAGES = (f"@modelcontextprotocol/sdk@{TS_SDK_VERSION}", "zod@4")
_PY_MARKER = PEERS_PY / ".bench-requirements"

Log = Callable[[str], None]
Role = Literal["peer", "jetmcp", "ceiling"]


@dataclass(frozen=True)
class Server:
    """One server under test: how to start it over HTTP and (if it has one) over stdio."""

    key: str
    label: str
    role: Role
    http: Callable[[int], list[str]]
    stdio: list[str] | None
    #: Why it cannot run at all (a missing binary), or None.
    missing: Callable[[], str | None]
    how: str
    #: The tools/call the pre-flight check makes (preflight.PROBES): ``add(1, 2)``, or the
    #: published server's ``get_current_time`` (the only workload its rows run).
    probe: str = "add"
    #: Other ways to start it over HTTP, for the request-shape workloads: ``bench`` (stateless,
    #: with the tools add, scale and add_log) and ``stateful`` (sessions). A server without
    #: them does not run those workloads.
    variants: dict[str, Callable[[int], list[str]]] = field(default_factory=dict)
    #: Whether it serves the workloads outside the request shapes (call, list, batch ...) at all.
    base: bool = True


def _peer_python() -> Path:
    return PEERS_PY / "bin" / "python"


def _run(cmd: list[str], log: Log, cwd: Path | None = None) -> None:
    log("  $ " + " ".join(cmd))
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise RuntimeError(f"{cmd[0]} failed ({done.returncode}):\n" + "\n".join(tail))


def _py_peers_ok() -> bool:
    python = _peer_python()
    if not python.exists() or not _PY_MARKER.exists():
        return False
    if _PY_MARKER.read_text().split("\n") != list(PY_REQUIREMENTS):
        return False
    probe = "import mcp.server.mcpserver, fastmcp, uvicorn, uvloop, httptools, mcp_server_time"
    return (
        subprocess.run([str(python), "-c", probe], capture_output=True, check=False).returncode == 0
    )


def _ts_peer_version() -> str | None:
    manifest = PEERS_NODE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    try:
        version = json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return str(version)


def _ts_peers_ok() -> bool:
    zod = PEERS_NODE / "node_modules" / "zod" / "package.json"
    return _ts_peer_version() == TS_SDK_VERSION and zod.exists()


def _dropin_ok() -> bool:
    probe = [str(DROPIN_V1_PY), "-c", "import code_index_mcp, uvicorn, jetmcp._wire"]
    return (
        DROPIN_V1_PY.exists()
        and subprocess.run(probe, capture_output=True, check=False).returncode == 0
    )


def install_peers(
    log: Log, want_python: bool, want_node: bool, want_dropin: bool = False
) -> dict[str, str]:
    """Install what is missing; returns ``{peer group: error}`` for groups that failed."""
    failures: dict[str, str] = {}
    if want_dropin and not _dropin_ok():
        log("installing the drop-in corpus's environments (scripts/dropin.sh) ...")
        try:
            _run(["bash", str(ROOT / "scripts" / "dropin.sh")], log, ROOT)
        except RuntimeError as exc:
            failures["dropin"] = str(exc)
    if want_python and not _py_peers_ok():
        log(f"installing Python peers into {PEERS_PY.relative_to(ROOT)} ...")
        try:
            if not _peer_python().exists():
                _run([sys.executable, "-m", "venv", str(PEERS_PY)], log)
            _run([str(_peer_python()), "-m", "pip", "install", "-q", *PY_REQUIREMENTS], log)
            _PY_MARKER.write_text("\n".join(PY_REQUIREMENTS))
        except RuntimeError as exc:
            failures["python"] = str(exc)
    if want_node and not _ts_peers_ok():
        log(f"installing the TypeScript SDK into {PEERS_NODE.relative_to(ROOT)} ...")
        try:
            if shutil.which("npm") is None:
                raise RuntimeError("npm is not on PATH (install Node.js 20 and npm)")
            PEERS_NODE.mkdir(parents=True, exist_ok=True)
            manifest = PEERS_NODE / "package.json"
            if not manifest.exists():
                manifest.write_text('{"name": "jetmcp-bench-peers", "private": true}\n')
            _run(["npm", "install", "--no-audit", "--no-fund", *NPM_PACKAGES], log, PEERS_NODE)
        except RuntimeError as exc:
            failures["node"] = str(exc)
    return failures


def ensure_matplotlib(log: Log, allow_install: bool) -> bool:
    """matplotlib (the project's ``bench`` extra) for the PNG; installed into this venv."""
    probe = [sys.executable, "-c", "import matplotlib"]
    if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return True
    if not allow_install:
        log("matplotlib is missing and --skip-install was given: no PNG chart")
        return False
    log(f"NOTE: installing matplotlib (the `bench` extra) into {sys.prefix} for the chart")
    try:
        _run([sys.executable, "-m", "pip", "install", "-q", "matplotlib>=3.8"], log)
    except RuntimeError as exc:
        log(f"could not install matplotlib, no PNG chart: {exc}")
        return False
    return True


def versions() -> dict[str, str]:
    """Versions of everything measured, as installed right now."""
    found: dict[str, str] = {}
    python = _peer_python()
    if python.exists():
        code = (
            "import importlib.metadata as m, json\n"
            "out = {}\n"
            "for p in ('mcp', 'fastmcp', 'uvicorn', 'uvloop', 'httptools', 'starlette',\n"
            "          'mcp-server-time'):\n"
            "    try: out[p] = m.version(p)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))"
        )
        done = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            for name, version in json.loads(done.stdout).items():
                found[f"{name} (peers venv)" if name not in ("mcp", "fastmcp") else name] = version
    if DROPIN_V1_PY.exists():
        code = (
            "import importlib.metadata as m\nprint(m.version('mcp'), m.version('code-index-mcp'))"
        )
        done = subprocess.run(
            [str(DROPIN_V1_PY), "-c", code], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            mcp1, code_index = done.stdout.split()
            found["mcp (drop-in 1.x venv)"] = mcp1
            found["code-index-mcp (drop-in 1.x venv)"] = code_index
    ts = _ts_peer_version()
    if ts:
        found["@modelcontextprotocol/sdk"] = ts
    node = shutil.which("node")
    if node:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
        found["node"] = out.stdout.strip()
    from importlib import metadata

    for name in ("jetmcp", "granian", "uvloop"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    found["python"] = sys.version.split()[0]
    wrk = shutil.which("wrk")
    if wrk:
        out = subprocess.run([wrk, "-v"], capture_output=True, text=True, check=False)
        first = (out.stdout + out.stderr).strip().splitlines()
        found["wrk"] = first[0].split(" [")[0].removeprefix("wrk ") if first else "?"
    return found


def _need(path: Path, hint: str) -> Callable[[], str | None]:
    return lambda: None if path.exists() else f"{path.relative_to(ROOT)} not found ({hint})"


def _need_module(module: str, hint: str) -> Callable[[], str | None]:
    """Whether ``module`` imports in the project venv (where ``jetmcp run`` runs)."""
    import importlib.util

    return lambda: None if importlib.util.find_spec(module) else f"no {module} here ({hint})"


def _need_dropin() -> str | None:
    if _dropin_ok():
        return None
    return f"{DROPIN_V1_PY.relative_to(ROOT)} cannot import code_index_mcp (bash scripts/dropin.sh)"


def _need_node() -> str | None:
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not _ts_peers_ok():
        return f"@modelcontextprotocol/sdk {TS_SDK_VERSION} not installed in bench/.peers/node"
    return None


def servers() -> list[Server]:
    """Every server, in the order they run."""
    py = str(_peer_python())
    jetmcp = MAIN_BIN / "jetmcp"
    granian = MAIN_BIN / "granian"
    host = "127.0.0.1"

    def granian_cmd(interface: str, app: str) -> Callable[[int], list[str]]:
        return lambda port: [
            str(granian),
            "--interface",
            interface,
            "--http",
            "1",
            "--no-ws",
            "--loop",
            "uvloop",
            "--workers",
            "1",
            "--log-level",
            "warning",
            "--host",
            host,
            "--port",
            str(port),
            "--working-dir",
            str(LOAD),
            app,
        ]

    peer_hint = "run without --skip-install to install the peers"

    def peer_variants(script: str, *flags: str) -> dict[str, Callable[[int], list[str]]]:
        """The request-shape variants of a Python peer file (``flags``: ``--as-installed`` or
        none)."""

        def cmd(extra: str) -> Callable[[int], list[str]]:
            return lambda port: [py, str(LOAD / script), "http", *flags, extra, "--port", str(port)]

        return {"bench": cmd("--bench-tools"), "stateful": cmd("--stateful")}

    def jetmcp_cmd(
        app: str, *extra: str, launcher: tuple[str, ...] = (str(jetmcp),)
    ) -> Callable[[int], list[str]]:
        """``jetmcp run APP`` over HTTP, one worker (``launcher``: how jetmcp is started)."""
        return lambda port: [
            *launcher,
            "run",
            app,
            "--transport",
            "http",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            "1",
            *extra,
        ]

    def published_cmd(python: str, package: str | None = None) -> Callable[[int], list[str]]:
        """A published package on its own SDK as installed (``published_server.py``)."""
        chosen = ("--package", package) if package is not None else ()
        return lambda port: [
            python,
            str(LOAD / "published_server.py"),
            "http",
            *chosen,
            "--as-installed",
            "--port",
            str(port),
        ]

    bench_app = str(LOAD / "jetmcp_server.py") + ":app"
    rsgi = granian_cmd("rsgi", "ceiling:rsgi_app")
    floor = granian_cmd("rsgi", "floor:rsgi_app")

    def uvloop_floor(port: int) -> list[str]:
        script = str(LOAD / "uvloop_floor.py")
        return [sys.executable, script, "--host", host, "--port", str(port)]

    return [
        Server(
            key="mcp-sdk-installed",
            label="mcp SDK (MCPServer), as installed",
            role="peer",
            http=lambda port: [
                py,
                str(LOAD / "mcp_sdk_server.py"),
                "http",
                "--as-installed",
                "--port",
                str(port),
            ],
            stdio=None,
            missing=_need(_peer_python(), peer_hint),
            how="streamable_http_app(stateless_http=True, json_response=True) on uvicorn as "
            "`pip install mcp` gives it: asyncio loop, h11, default logging (the SDK's INFO, "
            "uvicorn's access log)",
            variants=peer_variants("mcp_sdk_server.py", "--as-installed"),
        ),
        Server(
            key="mcp-sdk",
            label="mcp SDK (MCPServer), tuned",
            role="peer",
            http=lambda port: [py, str(LOAD / "mcp_sdk_server.py"), "http", "--port", str(port)],
            stdio=[py, str(LOAD / "mcp_sdk_server.py"), "stdio"],
            missing=_need(_peer_python(), peer_hint),
            how="streamable_http_app(stateless_http=True, json_response=True) on uvicorn "
            "tuned: uvloop, httptools (from uvicorn[standard]), log level WARNING, no access log",
            variants=peer_variants("mcp_sdk_server.py"),
        ),
        Server(
            key="fastmcp-installed",
            label="FastMCP, as installed",
            role="peer",
            http=lambda port: [
                py,
                str(LOAD / "fastmcp_server.py"),
                "http",
                "--as-installed",
                "--port",
                str(port),
            ],
            stdio=None,
            missing=_need(_peer_python(), peer_hint),
            how="http_app(stateless_http=True, json_response=True) on uvicorn as "
            "`pip install fastmcp` gives it: asyncio loop, h11, default logging",
            variants=peer_variants("fastmcp_server.py", "--as-installed"),
        ),
        Server(
            key="fastmcp",
            label="FastMCP, tuned",
            role="peer",
            http=lambda port: [py, str(LOAD / "fastmcp_server.py"), "http", "--port", str(port)],
            stdio=[py, str(LOAD / "fastmcp_server.py"), "stdio"],
            missing=_need(_peer_python(), peer_hint),
            how="http_app(stateless_http=True, json_response=True) on uvicorn tuned: uvloop, "
            "httptools (from uvicorn[standard]), log level WARNING, no access log",
            variants=peer_variants("fastmcp_server.py"),
        ),
        Server(
            key="ts-sdk",
            label="TypeScript SDK",
            role="peer",
            http=lambda port: [
                "node",
                str(LOAD / "ts_sdk_server.cjs"),
                "http",
                "--port",
                str(port),
            ],
            stdio=["node", str(LOAD / "ts_sdk_server.cjs"), "stdio"],
            missing=_need_node,
            how="McpServer + StreamableHTTPServerTransport per request "
            "(sessionIdGenerator undefined, enableJsonResponse) on node:http",
        ),
        Server(
            key="jetmcp",
            label="jetmcp (1 worker)",
            role="jetmcp",
            http=jetmcp_cmd("jetmcp.demo:app", "--stateless"),
            stdio=[str(jetmcp), "run", "jetmcp.demo:app", "--transport", "stdio"],
            missing=_need(jetmcp, "install jetmcp into the project venv"),
            how="jetmcp run jetmcp.demo:app --transport http --workers 1 --stateless "
            "(the native engine)",
            variants={
                "bench": jetmcp_cmd(bench_app, "--stateless"),
                "stateful": jetmcp_cmd(bench_app),
            },
        ),
        Server(
            key="jetmcp-sdk-unchanged",
            label="mcp SDK server, unchanged, on jetmcp",
            role="jetmcp",
            http=jetmcp_cmd(str(LOAD / "mcp_sdk_server.py") + ":app", "--stateless"),
            stdio=None,
            missing=_need(jetmcp, "install jetmcp into the project venv"),
            how="jetmcp run bench/load/mcp_sdk_server.py:app --workers 1 --stateless: the "
            "MCPServer file the SDK rows serve, adapted as it is (mcp 2.3.0 from the project "
            "venv); add is lifted to jetmcp's fast path, add_ctx runs through the SDK's Tool",
        ),
        Server(
            key="published-installed",
            label="mcp-server-time (published), on its own SDK as installed",
            role="peer",
            http=published_cmd(py),
            stdio=None,
            missing=_need(_peer_python(), peer_hint),
            how="mcp-server-time 2026.10.19 from PyPI (an MCPServer built by "
            "create_server('UTC')), streamable_http_app(stateless_http=True, "
            "json_response=True) on uvicorn as `pip install` gives it: asyncio loop, h11, "
            "default logging",
            probe="published",
        ),
        Server(
            key="jetmcp-published",
            label="mcp-server-time (published), unchanged, on jetmcp",
            role="jetmcp",
            http=jetmcp_cmd(PUBLISHED_TARGET, "--stateless"),
            stdio=None,
            missing=_need_module(
                "mcp_server_time", "bash scripts/dropin.sh installs requirements/dropin-v2.txt"
            ),
            how=f'jetmcp run "{PUBLISHED_TARGET}" --workers 1 --stateless: the package as '
            "installed in the project venv; get_current_time (an Annotated parameter, a pydantic "
            "model returned, a server with middleware of its own) runs through the SDK's own "
            "Tool, not lifted",
            probe="published",
        ),
        Server(
            key="published-fastmcp-installed",
            label="code-index-mcp (published FastMCP), on its own SDK as installed",
            role="peer",
            http=published_cmd(str(DROPIN_V1_PY), "code-index-mcp"),
            stdio=None,
            missing=_need_dropin,
            how="code-index-mcp 2.17.1 from PyPI (the module-level FastMCP of mcp 1.30.0, with "
            "a lifespan), settings stateless_http and json_response, streamable_http_app() on "
            "uvicorn as `pip install` gives it: asyncio loop, h11, default logging",
            probe="published-fastmcp",
        ),
        Server(
            key="jetmcp-published-fastmcp",
            label="code-index-mcp (published FastMCP), unchanged, on jetmcp",
            role="jetmcp",
            http=jetmcp_cmd(
                FASTMCP_TARGET, "--stateless", launcher=(str(DROPIN_V1_PY), "-m", "jetmcp")
            ),
            stdio=None,
            missing=_need_dropin,
            how=f"jetmcp run {FASTMCP_TARGET} --workers 1 --stateless, from the same mcp 1.30.0 "
            "venv: check_temp_directory is lifted to a jetmcp tool, get_settings_info (a "
            "Context tool) runs through the SDK's own Tool with a real SDK Context",
            probe="published-fastmcp",
        ),
        Server(
            key="granian-rsgi",
            label="ceiling: Granian RSGI",
            role="ceiling",
            http=rsgi,
            stdio=None,
            missing=_need(granian, "granian is a jetmcp dependency"),
            how="granian --interface rsgi --http 1 --no-ws --loop uvloop --workers 1, "
            "canned reply, no MCP",
            variants={"bench": rsgi, "stateful": rsgi},
        ),
        Server(
            key="granian-rsgi-floor",
            label="floor: ceiling + the spec's header checks + the tool's own work",
            role="ceiling",
            http=floor,
            stdio=None,
            missing=_need(granian, "granian is a jetmcp dependency"),
            how="the ceiling's Granian RSGI command serving floor:rsgi_app: the canned reply "
            "after reading what the spec makes every server check (method, path, Origin, "
            "MCP-Protocol-Version, at 2026-07-28 Mcp-Method and Mcp-Name) and running the tool's "
            "own function (and pydantic validating and writing its models), no JSON-RPC, no "
            "MCP: the most any MCP server on Granian can reach here",
            variants={"bench": floor, "stateful": floor},
            base=False,
        ),
        Server(
            key="uvloop-floor",
            label="floor: uvloop asyncio.Protocol",
            role="ceiling",
            http=uvloop_floor,
            stdio=None,
            missing=_need_module("uvloop", "uvloop is a jetmcp dependency"),
            how="bench/load/uvloop_floor.py: an asyncio.Protocol on uvloop framing requests in "
            "plain Python, canned reply, no MCP (what the socket and the loop cost)",
            variants={"bench": uvloop_floor, "stateful": uvloop_floor},
            base=False,
        ),
        Server(
            key="jetmcp-granian",
            label="jetmcp on Granian (1 worker)",
            role="jetmcp",
            http=jetmcp_cmd("jetmcp.demo:app", "--stateless", "--server", "granian"),
            stdio=None,
            missing=_need(jetmcp, "install jetmcp into the project venv"),
            how="jetmcp run jetmcp.demo:app --transport http --workers 1 --stateless "
            "--server granian",
            variants={
                "bench": jetmcp_cmd(bench_app, "--stateless", "--server", "granian"),
                "stateful": jetmcp_cmd(bench_app, "--server", "granian"),
            },
        ),
        Server(
            key="granian-asgi",
            label="ceiling: Granian ASGI",
            role="ceiling",
            http=granian_cmd("asgi", "ceiling:asgi_app"),
            stdio=None,
            missing=_need(granian, "granian is a jetmcp dependency"),
            how="granian --interface asgi --http 1 --no-ws --loop uvloop --workers 1, "
            "canned reply, no MCP",
        ),
    ]
