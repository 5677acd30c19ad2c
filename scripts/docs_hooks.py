"""MkDocs hooks (see mkdocs.yml): pages that join the nav when they exist, and the benchmark
chart served from where the benchmark writes it.

Pages written alongside other work (security, deployment, migration) are listed here rather
than in mkdocs.yml, so the site builds, strictly, whether or not they have landed yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent

#: (title, page), inserted after "Running and configuration" in this order when present.
OPTIONAL_PAGES = (
    ("Deployment", "deployment.md"),
    ("Security", "security.md"),
    ("Migrating from the SDK", "migration.md"),
)
AFTER = "configuration.md"

#: Files generated into the site from elsewhere in the repository: site path -> source.
GENERATED = {"img/bench-latest.png": ROOT / "bench" / "results" / "latest.png"}


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    nav: list[Any] = config.nav or []
    pages = [next(iter(entry.values())) if isinstance(entry, dict) else entry for entry in nav]
    at = pages.index(AFTER) + 1 if AFTER in pages else len(nav)
    docs = Path(config.docs_dir)
    for title, page in OPTIONAL_PAGES:
        if page not in pages and (docs / page).is_file():
            nav.insert(at, {title: page})
            at += 1
    config.nav = nav
    return config


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    for site_path, source in GENERATED.items():
        files.append(File.generated(config, site_path, abs_src_path=str(source)))
    return files
