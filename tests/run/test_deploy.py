"""deploy/: the Dockerfile and the Kubernetes example, checked as far as this machine can
run them. The command lines they give ``jetmcp run`` are started for real (port changed to
a free one, Redis to the test Redis) and probed; the manifests are parsed and held to the
server's own constants; ``docker build`` runs only where a Docker daemon answers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from harness.redis_support import REDIS_URL, drop_keys, new_prefix
from harness.servers import ROOT, free_port, jetmcp_command, server_env, stop_process
from jetmcp.transports.health import LIVENESS_PATH, READINESS_PATH

DEPLOY = Path(ROOT) / "deploy"
#: What ``jetmcp run`` allows a worker stuck past the grace before killing it (run/cli.py).
KILL_AFTER_GRACE = 5


def dockerfile_lines() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def instruction(name: str) -> list[str]:
    """The JSON-array (exec form) argument of the last ``name`` instruction."""
    found = [line for line in dockerfile_lines() if line.split(" ", 1)[0] == name]
    assert found, f"no {name} in deploy/Dockerfile"
    value = json.loads(found[-1].split(" ", 1)[1])
    assert isinstance(value, list)
    return [str(v) for v in value]


def manifests() -> list[dict[str, Any]]:
    with (DEPLOY / "kubernetes.yaml").open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def named(kind: str, name: str) -> dict[str, Any]:
    return next(d for d in manifests() if (d["kind"], d["metadata"]["name"]) == (kind, name))


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def with_flag(args: list[str], name: str, value: str) -> list[str]:
    out = list(args)
    out[out.index(name) + 1] = value
    return out


class Served:
    """``jetmcp run *args`` as a real process, up once ``/healthz`` answers."""

    def __init__(self, args: list[str], port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [*jetmcp_command(), "run", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=server_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, self.proc.communicate()[1].decode()
            try:
                if httpx.get(self.base + LIVENESS_PATH, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the deploy command line did not come up"
            time.sleep(0.1)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base + path, timeout=5)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def log(self) -> str:
        """What the server wrote to stderr (once it has exited): the reason of a status 1."""
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


@pytest.fixture
def prefix() -> Iterator[str]:
    name = new_prefix()
    yield name
    drop_keys(name)


def test_the_image_command_line_serves_and_drains() -> None:
    entry, cmd = instruction("ENTRYPOINT"), instruction("CMD")
    assert entry == ["jetmcp", "run"]
    assert flag(cmd, "--transport") == "http" and flag(cmd, "--host") == "0.0.0.0"
    exposed = [line.split()[1] for line in dockerfile_lines() if line.startswith("EXPOSE ")]
    assert exposed == [flag(cmd, "--port")]
    port = free_port()
    served = Served(with_flag(cmd, "--port", str(port)), port)
    try:
        assert served.get(LIVENESS_PATH).json() == {"status": "ok"}
        assert served.get(READINESS_PATH).json() == {"status": "ready"}
        # The HEALTHCHECK probes the same path on the same port.
        check = next(line for line in dockerfile_lines() if line.startswith("HEALTHCHECK"))
        assert f"127.0.0.1:{flag(cmd, '--port')}{LIVENESS_PATH}" in check
        assert served.terminate() == 0, served.log()
    finally:
        stop_process(served.proc)


def test_the_image_runs_as_a_non_root_user_from_a_built_wheel() -> None:
    lines = dockerfile_lines()
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) == 2 and stages[0].endswith(" AS build")
    assert any("maturin build" in line for line in lines)
    user = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user and not user[-1].startswith(("0", "root"))
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (Path(ROOT) / source).exists(), f"the Dockerfile copies {source}: missing"


def test_the_kubernetes_example_matches_the_server(prefix: str) -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in manifests())
    assert kinds == [
        ("Deployment", "jetmcp"),
        ("Deployment", "redis"),
        ("Service", "jetmcp"),
        ("Service", "redis"),
    ]
    deployment = named("Deployment", "jetmcp")
    spec = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] >= 2
    assert spec["securityContext"]["runAsNonRoot"] is True
    (container,) = spec["containers"]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["mcp"] == int(flag(args, "--port"))
    assert container["livenessProbe"]["httpGet"] == {"path": LIVENESS_PATH, "port": "mcp"}
    assert container["readinessProbe"]["httpGet"] == {"path": READINESS_PATH, "port": "mcp"}
    grace = float(flag(args, "--shutdown-grace-seconds"))
    assert spec["terminationGracePeriodSeconds"] >= grace + KILL_AFTER_GRACE
    redis_service = next(
        d for d in manifests() if d["kind"] == "Service" and d["metadata"]["name"] == "redis"
    )
    assert flag(args, "--redis") == f"redis://redis:{redis_service['spec']['ports'][0]['port']}/0"
    # The container's command line, run here: the image's entrypoint plus these args, with
    # this machine's port and Redis.
    port = free_port()
    local = with_flag(with_flag(args, "--port", str(port)), "--redis", REDIS_URL)
    served = Served([*local, "--redis-prefix", prefix], port)
    try:
        assert served.get(READINESS_PATH).json() == {"status": "ready"}
        assert served.terminate() == 0, served.log()
    finally:
        stop_process(served.proc)


def _docker_usable() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "docker is not installed"
    probe = subprocess.run([docker, "info"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return "the Docker daemon is not usable here: " + probe.stderr.decode()[-200:].strip()
    return None


@pytest.mark.skipif(os.environ.get("JETMCP_TEST_DOCKER") != "1", reason="set JETMCP_TEST_DOCKER=1")
def test_docker_build() -> None:
    why = _docker_usable()
    if why is not None:
        pytest.skip(why)
    subprocess.run(
        ["docker", "build", "-f", "deploy/Dockerfile", "-t", "jetmcp-test", "."],
        cwd=ROOT,
        check=True,
        timeout=3600,
    )
