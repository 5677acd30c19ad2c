"""``jetmcp bench`` reports against a real server: errors by kind, per-message figures,
``--json FILE``/``--csv``/``--report`` (the HTML page drawn by headless Chromium, its plots
checked in the screenshot's pixels), ``--threshold``, ``compare`` and ``--processes``."""

from __future__ import annotations

import csv
import io
import json
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.bench_support import ADD, bench, bench_json, serve_http
from harness.servers import ServerProcess

FAIL = ["--tool", "fail", "--args", '{"reason": "no"}']
UNKNOWN = ["--tool", "no_such_tool"]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    yield from serve_http()


def test_errors_by_kind_and_per_message(server: ServerProcess) -> None:
    data = bench_json(server.url, "-n", "30", "-c", "1", *ADD, *FAIL, *UNKNOWN, status=1)
    methods = data["methods"]
    assert set(methods) == {"tools/call add", "tools/call fail", "tools/call no_such_tool"}
    assert [methods[k]["count"] for k in sorted(methods)] == [10, 10, 10]
    assert methods["tools/call add"]["errors"] == 0
    assert methods["tools/call fail"]["errors_by_kind"] == {"isError": 10}
    # At 2026-07-28 the refusal also sets the HTTP status (counted as its own kind).
    kinds = methods["tools/call no_such_tool"]["errors_by_kind"]
    assert [k for k in kinds if k.startswith("jsonrpc -326")] and set(kinds.values()) == {10}
    assert data["errors"]["tool"] == 10 and data["errors"]["jsonrpc"] == 10
    assert data["failed"] == 20 and data["errors_pct"] == pytest.approx(66.6667, abs=0.01)
    for m in methods.values():
        lat = m["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]


def test_json_file_csv_and_the_old_flag(server: ServerProcess, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    table = tmp_path / "run.csv"
    done = bench(
        server.url, "-q", "-n", "50", "-c", "2", *ADD, "--json", str(out), "--csv", str(table)
    )
    assert done.returncode == 0, done.stderr
    assert "requests" in done.stdout  # the text report still goes to stdout
    data = json.loads(out.read_text())
    assert data["requests"] == 50 and data["mode"] == "closed"
    assert sum(n for _, n in data["histograms"]["total"]) == 50
    rows = list(csv.reader(io.StringIO(table.read_text())))
    assert rows[0][:3] == ["message", "count", "errors"]
    assert rows[1][:3] == ["all", "50", "0"] and rows[2][:2] == ["tools/call add", "50"]
    # The flag as it always was: --json alone prints the JSON report (and nothing else).
    old = bench(server.url, "-q", "-n", "5", *ADD, "--json")
    assert old.returncode == 0 and json.loads(old.stdout)["requests"] == 5


def test_thresholds_fail_the_run_with_the_line(server: ServerProcess) -> None:
    done = bench(
        server.url, "-q", "-n", "40", *ADD, "--threshold", "p99<60s",
        "--threshold", "errors<0.1%", "--threshold", "p50[tools/call add]<1us",
    )  # fmt: skip
    assert done.returncode == 1
    assert "threshold 'p50[tools/call add]<1us' failed: measured" in done.stderr
    assert "p99<60s" not in done.stderr and "errors<0.1%" not in done.stderr
    ok = bench(
        server.url, "-q", "-n", "40", *ADD, "--threshold", "p99<60s", "--threshold", "errors<=0%"
    )
    assert ok.returncode == 0, ok.stderr
    bad = bench(server.url, "-n", "4", *ADD, "--threshold", "p99<20%")
    assert bad.returncode == 2 and "a latency takes us, ms or s" in bad.stderr


def test_compare_flags_regressions(server: ServerProcess, tmp_path: Path) -> None:
    base = bench_json(server.url, "-n", "40", "-c", "1", *ADD)
    worse = dict(base, requests_per_s=base["requests_per_s"] / 2)
    worse["latency_ms"] = {k: v * 3 + 1 for k, v in base["latency_ms"].items()}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(base))
    b.write_text(json.dumps(worse))
    same = bench("compare", str(a), str(a))
    assert same.returncode == 0 and "regression:" not in same.stdout
    done = bench("compare", str(a), str(b), "--tolerance", "10")
    assert done.returncode == 1
    assert "regression: requests/s" in done.stdout and "regression: p99 ms" in done.stdout
    assert bench("compare", str(a), str(tmp_path / "none.json")).returncode != 0


def test_processes_merge_into_one_report(server: ServerProcess) -> None:
    data = bench_json(server.url, "--processes", "2", "-n", "60", "-c", "4", *ADD)
    assert data["processes"] == 2 and data["requests"] == 60 and data["entries"] == 60
    assert sum(n for _, n in data["histograms"]["total"]) == 60
    opened = bench_json(server.url, "--processes", "2", "--rate", "100", "-d", "1", *ADD)
    assert opened["schedule"]["rate"] == 100.0 and opened["schedule"]["sent"] == 100


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Rows of RGB(A) bytes of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, channels, rows


def _count_color(rows: list[bytes], channels: int, rgb: tuple[int, int, int]) -> int:
    n = 0
    for row in rows:
        for x in range(0, len(row), channels):
            if (
                abs(row[x] - rgb[0]) < 24
                and abs(row[x + 1] - rgb[1]) < 24
                and abs(row[x + 2] - rgb[2]) < 24
            ):
                n += 1
    return n


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (scripts/dev.sh installs it)")
def test_html_report_draws_its_plots(server: ServerProcess, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = bench(
        server.url, "-q", "--ramp", "40:80:40", "--step-duration", "0.8", *ADD, *FAIL,
        "--report", str(page),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    # Nothing to fetch: no script, no stylesheet or image by address.
    assert "<script" not in text and "src=" not in text and "href=" not in text
    assert text.count("<svg") == 4  # percentiles, throughput, latency over time, p99 by rate
    shot = tmp_path / "shot.png"
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
            "--window-size=900,2600", f"--screenshot={shot}", page.as_uri(),
        ],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    _, channels, rows = _png_pixels(shot.read_bytes())
    # The first two series colours are drawn as lines 2.5 px wide in every plot: many
    # pixels of each. A page whose plots did not draw has only the legend swatches.
    blue = _count_color(rows, channels, (0x00, 0x72, 0xB2))
    orange = _count_color(rows, channels, (0xD5, 0x5E, 0x00))
    assert blue > 1500, blue
    assert orange > 600, orange
