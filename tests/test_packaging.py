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

from conftest import ROOT, jetmcp_command

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
