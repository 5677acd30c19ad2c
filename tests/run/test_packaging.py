"""The package's identity: one version (pyproject.toml's) everywhere, and complete metadata.

The wheel itself is built, installed into a fresh environment and smoke-tested by
``scripts/smoke_wheel.py`` (run by the test command); these check the installed development
package the same way.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import entry_points, metadata
from typing import Any

from harness.servers import ROOT, jetmcp_command

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_version_comes_from_pyproject() -> None:
    import jetmcp

    assert jetmcp.__version__ == PROJECT["version"]
    for argv in ([*jetmcp_command(), "--version"], [sys.executable, "-m", "jetmcp", "--version"]):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"jetmcp {PROJECT['version']}\n"


def test_metadata_is_complete() -> None:
    meta = metadata("jetmcp")
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Repository", "Issues", "Changelog"} <= set(urls)
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    assert meta["Keywords"] and "mcp" in meta["Keywords"].split(",")
    assert meta["Description-Content-Type"].startswith("text/markdown")
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "jetmcp"]
    assert script.value == "jetmcp.run.cli:main"


def test_licence_and_changelog_name_this_version() -> None:
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "the jetmcp authors" in licence
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {PROJECT['version']}" in changelog


def _loaded_after(code: str) -> list[str]:
    """The jetmcp and pydantic modules a fresh interpreter holds after running ``code``."""
    wanted = "('jetmcp', 'pydantic')"
    probe = (
        f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {wanted}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    loaded: list[str] = eval(out.stdout)  # a list literal of module names
    return loaded


def test_importing_jetmcp_loads_only_its_base() -> None:
    # The root fills the runtime slot without loading what serves (jetmcp.run), the server
    # or pydantic.
    assert _loaded_after("import jetmcp") == ["jetmcp", "jetmcp.errors", "jetmcp.runtime"]


def test_a_server_reaches_what_serves_it_on_first_use() -> None:
    made = _loaded_after("from jetmcp import Server\nServer('probe')")
    assert "jetmcp.server.app" in made
    assert not [m for m in made if m.startswith(("jetmcp.run.", "jetmcp.transports"))]
    served = _loaded_after(
        "from jetmcp import Server\n"
        "from jetmcp.transports.asgi import McpAsgiApp\n"
        "assert type(Server('probe').streamable_http_app()) is McpAsgiApp"
    )
    assert "jetmcp.run.serving" in served


def test_an_http_app_with_auth_on_is_not_built_without_its_guard() -> None:
    from jetmcp import Server
    from jetmcp.transports.http import McpHttpApp

    class Anyone:
        async def verify_token(self, token: str) -> Any:
            return None

    guarded = Server("guarded", token_verifier=Anyone())
    try:
        McpHttpApp(guarded)
    except ValueError as exc:
        assert "make_app" in str(exc)
    else:
        raise AssertionError("built without its bearer guard")
