"""The SDK 1.x adapter's per-method request models agree with the SDK's whole union."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
V1 = ROOT / ".cache" / "dropin" / "v1" / "bin" / "python"


@pytest.mark.skipif(not V1.exists(), reason="the drop-in corpus's mcp 1.x venv is not set up")
def test_member_models_validate_as_the_union_does() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    done = subprocess.run(
        [str(V1), str(HERE / "request_models_check.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    # 17 methods in mcp 1.30.0's ClientRequest, 31 params each.
    assert lines == [str(17 * 31)], "\n".join(lines[:20])
