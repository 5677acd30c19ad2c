//! Which `tools/call` requests the extension may run by itself: the rules that need no
//! Python. A request is planned only when the Python dispatcher's general path would call
//! the tool with the same arguments and shape its result the same way; everything else (and
//! everything this module is not sure of) is left to that path, which then produces the
//! exact reply or error. The arguments themselves are checked against the tool's parameters
//! by `py_plan`, which builds them.
//!
//! * The message: a request whose `method` is written `"tools/call"` and whose `params`
//!   hold exactly `name` (a string without escapes), `arguments` (an object) and, optionally,
//!   `_meta` (an object), keys written without escapes, none repeated ([`read_call`]). The
//!   framing scan records those parts (and what `_meta` holds) while it validates `params`,
//!   so planning walks no part of the body a second time but the `arguments` it builds.
//! * At a legacy revision a plain tool cannot see `_meta` (it sends no notifications, so a
//!   `progressToken` changes nothing), but a `_meta` naming a protocol version makes a stdio
//!   request a 2026-07-28 one: such a `_meta` is left to Python ([`legacy_meta`]).
//! * At 2026-07-28 `_meta` must pass `modern.check_meta` and `modern.check_version`: a
//!   protocol version string among those served and a client capabilities object
//!   ([`modern_version`]).
//! * Over HTTP at 2026-07-28 the routing headers must agree with the body as
//!   `modern.check_headers` finds for a tool without `x-mcp-header` properties
//!   ([`Headers::agree`]).

use std::borrow::Cow;

use crate::cursor::{unescape, Cursor, Span};
use crate::frame::{Entry, EntryKind};

/// The one method planned, as its lexeme stands in the body.
pub const TOOLS_CALL: &[u8] = b"\"tools/call\"";
pub use crate::frame::{Meta, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION};

/// The parts of a `tools/call` request, as spans of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The id lexeme.
    pub raw_id: Span,
    /// The tool name's bytes (a string's content, without escapes).
    pub name: Span,
    /// The `arguments` object.
    pub arguments: Span,
    /// The `_meta` object, when present.
    pub meta: Option<Meta>,
}

/// The call `entry` (framed from `body`) makes, when it has the shape of a plannable
/// `tools/call` (see the module's description): a request whose method is written
/// `"tools/call"` and whose `params` the framing scan found of that shape
/// ([`crate::frame::CallParts`]); None otherwise.
pub fn read_call(body: &[u8], entry: &Entry) -> Option<Call> {
    let (EntryKind::Request, Some(raw_id), Some(parts)) = (entry.kind, entry.id, entry.call) else {
        return None;
    };
    if entry.method?.of(body) != TOOLS_CALL {
        return None;
    }
    Some(Call {
        raw_id,
        name: parts.name,
        arguments: parts.arguments,
        meta: parts.meta,
    })
}

/// The `arguments` of a `tools/call` request, whatever else its `params` hold: the span of
/// its value (of any type) when `params` is an object whose keys are written without
/// escapes and that holds `arguments` exactly once.
pub fn arguments(body: &[u8], entry: &Entry) -> Option<Span> {
    if entry.kind != EntryKind::Request || entry.method?.of(body) != TOOLS_CALL {
        return None;
    }
    let params = entry.params?;
    let mut found = None;
    let mut members = Members::new(params.of(body));
    for (key, escaped, value) in members.by_ref() {
        if escaped {
            return None;
        }
        if key.of(params.of(body)) == b"arguments" {
            if found.is_some() {
                return None;
            }
            found = Some(Span {
                start: params.start + value.start,
                end: params.start + value.end,
            });
        }
    }
    members.finished().then_some(found?)
}

/// The members of an object (at its `{`, valid JSON), each as (key content, whether the key
/// has escapes, value) spans, in order.
pub struct Members<'a> {
    cur: Cursor<'a>,
    /// Whether a member follows; None once the object is done or unreadable.
    more: Option<bool>,
}

impl<'a> Members<'a> {
    /// The members of the object at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        let mut cur = Cursor::new(data);
        let more = cur.object_open();
        Members { cur, more }
    }

    /// Whether every member was read (false for what is not an object).
    pub fn finished(&self) -> bool {
        self.more == Some(false)
    }
}

impl Iterator for Members<'_> {
    type Item = (Span, bool, Span);

    fn next(&mut self) -> Option<Self::Item> {
        if self.more != Some(true) {
            return None;
        }
        self.more = None;
        let (key, escaped) = self.cur.key()?;
        let value = self.cur.skip()?;
        self.more = Some(self.cur.object_next()?);
        Some((key, escaped, value))
    }
}

/// Whether a call's `_meta` may be planned at a legacy revision: every key written without
/// escapes, none naming a protocol version.
pub fn legacy_meta(meta: &Meta) -> bool {
    !meta.escaped_key && meta.versions == 0
}

/// The protocol version a call's `_meta` names, when it passes `modern.check_meta`: every
/// key written without escapes, the protocol version exactly once and a string, the client
/// capabilities exactly once and an object (`clientInfo` and anything else are not looked
/// at). The version is the string's decoded text.
pub fn modern_version<'b>(body: &'b [u8], meta: &Meta) -> Option<Cow<'b, [u8]>> {
    if meta.escaped_key
        || meta.versions != 1
        || meta.capabilities != 1
        || !meta.capabilities_objects
    {
        return None;
    }
    string_text(meta.version?.of(body))
}

/// The text a JSON string lexeme (`"` ... `"`, valid) stands for: its content, decoded when
/// it has escapes (None when they decode to no text).
#[inline(always)]
pub fn string_text(lexeme: &[u8]) -> Option<Cow<'_, [u8]>> {
    let content = lexeme.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !content.contains(&b'\\') {
        return Some(Cow::Borrowed(content));
    }
    let mut text = Vec::with_capacity(content.len());
    unescape(content, &mut text)?;
    Some(Cow::Owned(text))
}

/// Which era's rules apply.
#[derive(Debug, Clone, Copy)]
pub enum Era<'a> {
    /// The revisions before 2026-07-28 (2024-11-05 to 2025-11-25).
    Legacy,
    /// 2026-07-28, with the protocol versions `_meta` may name.
    Modern {
        /// The protocol versions served, as their strings' bytes.
        versions: &'a [Box<[u8]>],
    },
}

/// Whether `call` (framed from `body`) may be planned under `era`'s rules and agrees with
/// the routing `headers` (2026-07-28 over HTTP; `in_batch` for an entry of an array).
pub fn admits(
    body: &[u8],
    call: &Call,
    era: Era<'_>,
    headers: Option<&Headers>,
    in_batch: bool,
) -> bool {
    match era {
        Era::Legacy => call.meta.as_ref().is_none_or(legacy_meta),
        Era::Modern { versions } => {
            let Some(version) = call.meta.and_then(|meta| modern_version(body, &meta)) else {
                return false;
            };
            if !versions.iter().any(|v| **v == *version) {
                return false;
            }
            headers.is_none_or(|h| h.agree(&version, call.name.of(body), in_batch))
        }
    }
}

/// The MCP routing headers of one HTTP request (2026-07-28), as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    /// `MCP-Protocol-Version`, when sent.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`, when sent.
    pub method: Option<String>,
    /// `Mcp-Name`, when sent.
    pub name: Option<String>,
    /// Whether any `Mcp-Param-*` header was sent.
    pub params: bool,
    /// Whether any MCP header was sent more than once (always a mismatch).
    pub repeated: bool,
}

/// Start and end of a routing header value in base64 form.
const SENTINEL_HEAD: &[u8] = b"=?base64?";
const SENTINEL_TAIL: &[u8] = b"?=";

impl Headers {
    /// Whether a header that names one request is present (`Mcp-Method`, `Mcp-Name`,
    /// `Mcp-Param-*`): an array carrying one is refused whole.
    pub fn routes(&self) -> bool {
        self.method.is_some() || self.name.is_some() || self.params
    }

    /// Whether these headers agree with a `tools/call` whose `_meta` names `version` and
    /// whose tool is `name`, as `modern.check_headers` finds for a tool without
    /// `x-mcp-header` properties (those ignore `Mcp-Param-*`). An array's entry
    /// (`in_batch`) is held to the protocol version alone, and only when no header naming
    /// one request came along. A value Python might read differently from this (one with
    /// control or non-ASCII characters, a base64 form not written canonically) never
    /// agrees: the request is left to Python.
    pub fn agree(&self, version: &[u8], name: &[u8], in_batch: bool) -> bool {
        if self.repeated {
            return false;
        }
        if let Some(header) = &self.protocol_version {
            if trimmed(header) != Some(version) {
                return false;
            }
        }
        if in_batch {
            return !self.routes();
        }
        let method_agrees = self
            .method
            .as_deref()
            .is_some_and(|m| trimmed(m) == Some(&TOOLS_CALL[1..TOOLS_CALL.len() - 1]));
        method_agrees && self.name.as_deref().is_some_and(|h| name_agrees(h, name))
    }
}

/// A header value as Python's `str.strip()` leaves it, when the value is printable ASCII
/// once spaces and tabs are trimmed from its ends (there the two trims agree); else None.
fn trimmed(value: &str) -> Option<&[u8]> {
    let bytes = value.as_bytes();
    let start = bytes.iter().position(|&b| b != b' ' && b != b'\t')?;
    let end = bytes.iter().rposition(|&b| b != b' ' && b != b'\t')? + 1;
    let inner = bytes.get(start..end)?;
    inner
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b))
        .then_some(inner)
}

/// Whether an `Mcp-Name` value stands for `name` as `modern.decode_value` reads it: the
/// name itself, or its canonical `=?base64?...?=` form.
fn name_agrees(header: &str, name: &[u8]) -> bool {
    // An empty value trims to nothing, as Python's does: it names the empty string.
    let value = if header.bytes().all(|b| b == b' ' || b == b'\t') {
        &b""[..]
    } else {
        match trimmed(header) {
            Some(v) => v,
            None => return false,
        }
    };
    let sentinel = value.len() >= SENTINEL_HEAD.len() + SENTINEL_TAIL.len()
        && value.starts_with(SENTINEL_HEAD)
        && value.ends_with(SENTINEL_TAIL);
    if !sentinel {
        return value == name;
    }
    let encoded = &value[SENTINEL_HEAD.len()..value.len() - SENTINEL_TAIL.len()];
    encoded == base64(name).as_slice()
}

/// Standard base64 with padding (RFC 4648 section 4), the form a canonical encoder writes.
fn base64(bytes: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode, FrameKind};
    use crate::mutate::Mutator;

    const PV: &str = "io.modelcontextprotocol/protocolVersion";
    const CC: &str = "io.modelcontextprotocol/clientCapabilities";

    fn call_of(params: &str) -> (String, Option<Call>) {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{params}}}"#);
        let frame = decode(body.as_bytes(), 100, 256);
        assert_eq!(frame.kind, FrameKind::Single, "{body}");
        let call = read_call(body.as_bytes(), &frame.entries[0]);
        (body, call)
    }

    #[test]
    fn calls_that_read() {
        // (params, name, arguments, _meta)
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            (
                r#"{"name":"add","arguments":{"a":1}}"#,
                "add",
                r#"{"a":1}"#,
                None,
            ),
            (
                r#"{ "arguments" : { } , "name" : "x y" }"#,
                "x y",
                "{ }",
                None,
            ),
            (
                r#"{"name":"é","arguments":{"s":"\""},"_meta":{"progressToken":1}}"#,
                "é",
                r#"{"s":"\""}"#,
                Some(r#"{"progressToken":1}"#),
            ),
            (
                r#"{"_meta":{},"name":"","arguments":{"k":[1,{"x":"}"}]}}"#,
                "",
                r#"{"k":[1,{"x":"}"}]}"#,
                Some("{}"),
            ),
        ];
        for &(params, name, arguments, meta) in cases {
            let (body, call) = call_of(params);
            let call = call.unwrap_or_else(|| panic!("{params}"));
            let b = body.as_bytes();
            assert_eq!(call.raw_id.of(b), b"\"r1\"");
            assert_eq!(call.name.of(b), name.as_bytes(), "{params}");
            assert_eq!(call.arguments.of(b), arguments.as_bytes(), "{params}");
            assert_eq!(
                call.meta.map(|m| m.span.of(b)),
                meta.map(str::as_bytes),
                "{params}"
            );
        }
    }

    #[test]
    fn calls_that_do_not_read() {
        for params in [
            r#"{"name":"add"}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":"add","arguments":null}"#,
            r#"{"name":"add","arguments":[1]}"#,
            r#"{"name":3,"arguments":{}}"#,
            r#"{"name":"a\u0064d","arguments":{}}"#,
            r#"{"n\u0061me":"add","arguments":{}}"#,
            r#"{"name":"add","name":"add","arguments":{}}"#,
            r#"{"name":"add","arguments":{},"arguments":{}}"#,
            r#"{"name":"add","arguments":{},"_meta":{},"_meta":{}}"#,
            r#"{"name":"add","arguments":{},"_meta":null}"#,
            r#"{"name":"add","arguments":{},"_meta":[]}"#,
            r#"{"name":"add","arguments":{},"task":{}}"#,
            r#"{"name":"add","arguments":{},"other":1}"#,
            "[]",
            r#"["add",{}]"#,
        ] {
            assert_eq!(call_of(params).1, None, "{params}");
        }
        // Other methods, notifications, invalid entries, responses.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"name":"a","arguments":{}}}"#,
        ] {
            let frame = decode(body.as_bytes(), 100, 256);
            assert_eq!(
                read_call(body.as_bytes(), &frame.entries[0]),
                None,
                "{body}"
            );
        }
    }

    #[test]
    fn raw_arguments() {
        // (params, arguments)
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"name":"a","arguments":{"x":1}}"#, Some(r#"{"x":1}"#)),
            (r#"{"arguments" : [1, 2] , "task":{}}"#, Some("[1, 2]")),
            (
                r#"{"name":"a","arguments":null,"_meta":{"k\n":1}}"#,
                Some("null"),
            ),
            (r#"{"name":"a"}"#, None),
            (r#"{"n\u0061me":"a","arguments":{}}"#, None),
            (r#"{"arguments":{},"arguments":{}}"#, None),
            ("[1]", None),
        ];
        for &(params, want) in cases {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            let frame = decode(body.as_bytes(), 100, 256);
            let got = arguments(body.as_bytes(), &frame.entries[0]);
            assert_eq!(
                got.map(|s| s.of(body.as_bytes())),
                want.map(str::as_bytes),
                "{params}"
            );
        }
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{}}}"#;
        let frame = decode(body, 100, 256);
        assert_eq!(arguments(body, &frame.entries[0]), None);
    }

    #[test]
    fn members_in_order() {
        let data = br#"{ "a" : 1 , "b\n" : {"c":[]} }"#;
        let mut members = Members::new(data);
        let got: Vec<(&[u8], bool, &[u8])> = members
            .by_ref()
            .map(|(k, e, v)| (k.of(data), e, v.of(data)))
            .collect();
        assert_eq!(
            got,
            [
                (&b"a"[..], false, &b"1"[..]),
                (b"b\\n", true, br#"{"c":[]}"#)
            ]
        );
        assert!(members.finished());
        let mut empty = Members::new(b"{}");
        assert_eq!(empty.next(), None);
        assert!(empty.finished());
        for data in [&b"[1]"[..], b"", b"{\"a\":1", b"{\"a\" 1}"] {
            let mut members = Members::new(data);
            while members.next().is_some() {}
            assert!(!members.finished(), "{data:?}");
        }
    }

    /// The parts of a plannable call found the long way, as a second walk over the already
    /// framed body with the lenient cursor (how they were read before the framing scan
    /// recorded them): the reference [`read_call`] is held to.
    fn walked_call(body: &[u8], entry: &Entry) -> Option<Call> {
        let (EntryKind::Request, Some(raw_id)) = (entry.kind, entry.id) else {
            return None;
        };
        if entry.method?.of(body) != TOOLS_CALL {
            return None;
        }
        let params = entry.params?;
        let data = body.get(..params.end)?;
        let mut cur = Cursor {
            data,
            pos: params.start,
        };
        let (mut name, mut arguments, mut meta) = (None, None, None);
        let mut more = cur.object_open()?;
        while more {
            let (key, escaped) = cur.key()?;
            let first = cur.peek()?;
            match key.of(body) {
                _ if escaped => return None,
                b"name" if name.is_none() && first == b'"' => match cur.string()? {
                    (content, false) => name = Some(content),
                    _ => return None,
                },
                b"arguments" if arguments.is_none() && first == b'{' => {
                    arguments = Some(cur.skip()?)
                }
                b"_meta" if meta.is_none() && first == b'{' => meta = Some(walked_meta(&mut cur)?),
                _ => return None,
            }
            more = cur.object_next()?;
        }
        Some(Call {
            raw_id,
            name: name?,
            arguments: arguments?,
            meta,
        })
    }

    fn walked_meta(cur: &mut Cursor<'_>) -> Option<Meta> {
        cur.peek()?;
        let mut meta = Meta::empty(cur.pos);
        let mut more = cur.object_open()?;
        while more {
            let (key, escaped) = cur.key()?;
            meta.escaped_key |= escaped;
            let value = cur.skip()?;
            match key.of(cur.data) {
                META_PROTOCOL_VERSION => {
                    meta.versions = meta.versions.saturating_add(1);
                    meta.version = Some(value);
                }
                META_CLIENT_CAPABILITIES => {
                    meta.capabilities = meta.capabilities.saturating_add(1);
                    meta.capabilities_objects &= value.of(cur.data).first() == Some(&b'{');
                }
                META_LOG_LEVEL => meta.log_level = Some(value),
                _ => {}
            }
            more = cur.object_next()?;
        }
        meta.span.end = cur.pos;
        Some(meta)
    }

    #[test]
    fn the_framing_scan_records_what_a_second_walk_finds() {
        // Calls rich in what the rules look at (repeated, escaped and misplaced members,
        // `_meta` keys compact and spaced, values of every type), single and in arrays,
        // mutated by replacing, inserting and deleting bytes; wherever the body frames, the
        // parts recorded by the scan are what the separate walk reads.
        let bases: &[String] = &[
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"add","arguments":{{"a":1,"b":[2,{{"c":"}}"}}]}},"_meta":{{"{PV}":"2026-07-28","{CC}":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"n","version":"0"}},"io.modelcontextprotocol/logLevel":"info"}}}}}}"#
            ),
            format!(
                r#"[{{"method":"tools/call","id":"x","jsonrpc":"2.0","params":{{ "_meta" : {{ "{PV}" : "v" , "{CC}" : [] , "{PV}" : 1 }} , "arguments" : {{ }} , "name" : "a" }}}},{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"t","arguments":{{}},"task":{{}}}}}}]"#
            ),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"x":null},"name":"n","_meta":{"progressToken":"p","io.modelcontextprotocol\/logLevel":"debug"}}}"#.to_string(),
        ];
        let alphabet: &[u8] = b"{}[]:,\" \\nu0123456789amet_\"";
        let mut mutator = Mutator::new(0x9e37_79b9);
        let (mut framed, mut read) = (0usize, 0usize);
        for base in bases {
            for round in 0..20_000u64 {
                let v = mutator.mutated(base.as_bytes(), round.min(1), alphabet);
                let frame = decode(&v, 100, 256);
                for entry in &frame.entries {
                    framed += 1;
                    let want = walked_call(&v, entry);
                    read += usize::from(want.is_some());
                    assert_eq!(
                        read_call(&v, entry),
                        want,
                        "{:?}",
                        String::from_utf8_lossy(&v)
                    );
                }
            }
        }
        // The mutations keep plenty of bodies framing, and of calls reading.
        assert!(framed > 10_000 && read > 5_000, "{framed} {read}");
    }

    /// The `_meta` of a `tools/call` carrying `json` as framed, with the body its spans are in.
    fn meta_of(json: &str) -> (String, Meta) {
        let (body, call) = call_of(&format!(
            r#"{{"name":"t","arguments":{{}},"_meta":{json}}}"#
        ));
        let meta = call
            .and_then(|c| c.meta)
            .unwrap_or_else(|| panic!("{json}"));
        assert_eq!(meta.span.of(body.as_bytes()), json.trim().as_bytes());
        (body, meta)
    }

    #[test]
    fn legacy_meta_rule() {
        let cases: &[(String, bool)] = &[
            ("{}".into(), true),
            (r#"{"progressToken":"t","other":[1]}"#.into(), true),
            (format!(r#"{{"{CC}":{{}}}}"#), true),
            // Names a protocol version: stdio serves it at 2026-07-28.
            (format!(r#"{{"{PV}":"2026-07-28"}}"#), false),
            (format!(r#"{{"{PV}":1}}"#), false),
            // An escaped key could spell it.
            (r#"{"progress\u0054oken":1}"#.into(), false),
        ];
        for (meta, want) in cases {
            assert_eq!(legacy_meta(&meta_of(meta).1), *want, "{meta}");
        }
    }

    #[test]
    fn modern_meta_rule() {
        let cases: &[(String, Option<&str>)] = &[
            (
                format!(r#"{{"{PV}":"2026-07-28","{CC}":{{}}}}"#),
                Some("2026-07-28"),
            ),
            (
                format!(
                    r#"{{"{CC}":{{"x":1}},"{PV}":"v","io.modelcontextprotocol/clientInfo":5,"z":null}}"#
                ),
                Some("v"),
            ),
            (
                format!(r#"{{ "{PV}" : "2026\u002d07-28" , "{CC}" : {{ }} }}"#),
                Some("2026-07-28"),
            ),
            (format!(r#"{{"{PV}":"2026-07-28"}}"#), None),
            (format!(r#"{{"{CC}":{{}}}}"#), None),
            (format!(r#"{{"{PV}":7,"{CC}":{{}}}}"#), None),
            (format!(r#"{{"{PV}":"2026-07-28","{CC}":[]}}"#), None),
            (format!(r#"{{"{PV}":"2026-07-28","{CC}":null}}"#), None),
            (format!(r#"{{"{PV}":"a","{PV}":"a","{CC}":{{}}}}"#), None),
            (format!(r#"{{"{PV}":"a","{CC}":{{}},"{CC}":{{}}}}"#), None),
            (format!(r#"{{"{PV}":"a","{CC}":{{}},"x\u0041":1}}"#), None),
        ];
        for (meta, want) in cases {
            let (body, m) = meta_of(meta);
            let got = modern_version(body.as_bytes(), &m);
            assert_eq!(got.as_deref(), want.map(str::as_bytes), "{meta}");
        }
    }

    #[test]
    fn log_level_is_the_last_member_as_a_dict_keeps_it() {
        let ll = std::str::from_utf8(META_LOG_LEVEL).unwrap();
        let cases: &[(String, Option<&str>)] = &[
            (format!(r#"{{"{PV}":"2026-07-28","{CC}":{{}}}}"#), None),
            (format!(r#"{{"{ll}":"debug"}}"#), Some(r#""debug""#)),
            (
                format!(r#"{{ "{ll}" : "info" , "{PV}":"v","{ll}":null }}"#),
                Some("null"),
            ),
            (
                format!(r#"{{"{ll}":{{"a":[1]}},"x":1}}"#),
                Some(r#"{"a":[1]}"#),
            ),
            // Another key (an escaped one is read as written: the plan refuses it).
            (
                format!(r#"{{"{ll}x":"debug","io.modelcontextprotocol\/logLevel":1}}"#),
                None,
            ),
        ];
        for (meta, want) in cases {
            let (body, m) = meta_of(meta);
            let got = m.log_level.map(|span| span.of(body.as_bytes()));
            assert_eq!(got, want.map(str::as_bytes), "{meta}");
        }
    }

    fn headers(version: Option<&str>, method: Option<&str>, name: Option<&str>) -> Headers {
        Headers {
            protocol_version: version.map(str::to_owned),
            method: method.map(str::to_owned),
            name: name.map(str::to_owned),
            params: false,
            repeated: false,
        }
    }

    #[test]
    fn headers_agree_as_check_headers_does() {
        let v = b"2026-07-28";
        let tc = Some("tools/call");
        // (headers, tool name, agrees as a single request)
        let cases: Vec<(Headers, &[u8], bool)> = vec![
            (headers(Some("2026-07-28"), tc, Some("add")), b"add", true),
            (headers(None, tc, Some("add")), b"add", true),
            (
                headers(Some(" 2026-07-28\t"), Some("  tools/call "), Some("\tadd ")),
                b"add",
                true,
            ),
            (headers(Some("2025-06-18"), tc, Some("add")), b"add", false),
            // Python's strip() would trim a vertical tab; left to Python all the same.
            (
                headers(Some("2026-07-28\u{0b}"), tc, Some("add")),
                b"add",
                false,
            ),
            (headers(Some(""), tc, Some("add")), b"add", false),
            (
                headers(Some("2026-07-28"), None, Some("add")),
                b"add",
                false,
            ),
            (
                headers(Some("2026-07-28"), Some("tools/list"), Some("add")),
                b"add",
                false,
            ),
            (
                headers(Some("2026-07-28"), Some("Tools/call"), Some("add")),
                b"add",
                false,
            ),
            (headers(Some("2026-07-28"), tc, None), b"add", false),
            (headers(Some("2026-07-28"), tc, Some("Add")), b"add", false),
            (headers(Some("2026-07-28"), tc, Some("add2")), b"add", false),
            (headers(None, tc, Some("=?base64?YWRk?=")), b"add", true),
            (
                headers(None, tc, Some(" =?base64?w6k=?= ")),
                "é".as_bytes(),
                true,
            ),
            (
                headers(None, tc, Some("=?base64?YWRk?=")),
                b"=?base64?YWRk?=",
                false,
            ),
            (headers(None, tc, Some("=?base64?YWRk=?=")), b"add", false),
            (headers(None, tc, Some("=?base64??=")), b"", true),
            (headers(None, tc, Some("")), b"", true),
            (headers(None, tc, Some("  ")), b"", true),
            (headers(None, tc, Some("é")), "é".as_bytes(), false),
            (
                headers(None, tc, Some("a\u{7f}")),
                "a\u{7f}".as_bytes(),
                false,
            ),
            (headers(None, tc, Some("=?base64?")), b"=?base64?", true),
        ];
        for (h, name, want) in &cases {
            assert_eq!(
                h.agree(v, name, false),
                *want,
                "{h:?} {:?}",
                String::from_utf8_lossy(name)
            );
        }
        // Sent twice: never.
        let mut twice = headers(Some("2026-07-28"), tc, Some("add"));
        twice.repeated = true;
        assert!(!twice.agree(v, b"add", false));
        assert!(!twice.agree(v, b"add", true));
        // Mcp-Param-* headers do not matter to a tool without x-mcp-header properties.
        let mut param = headers(None, tc, Some("add"));
        param.params = true;
        assert!(param.agree(v, b"add", false));
        // An array's entry: the protocol version alone, and no header naming one request.
        assert!(headers(None, None, None).agree(v, b"add", true));
        assert!(headers(Some("2026-07-28"), None, None).agree(v, b"x", true));
        assert!(!headers(Some("2025-11-25"), None, None).agree(v, b"x", true));
        assert!(!headers(None, tc, None).agree(v, b"x", true));
        assert!(!headers(None, None, Some("x")).agree(v, b"x", true));
        assert!(!param.agree(v, b"add", true));
    }

    #[test]
    fn base64_vectors() {
        // RFC 4648, section 10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded.as_bytes());
        }
        assert_eq!(base64(&[0xfb, 0xff]), b"+/8=");
    }

    #[test]
    fn admits_by_era() {
        let versions: Vec<Box<[u8]>> = vec![Box::from(&b"2026-07-28"[..])];
        let modern = Era::Modern {
            versions: &versions,
        };
        let with_meta = |meta: &str| format!(r#"{{"name":"t","arguments":{{}},"_meta":{meta}}}"#);
        let good = with_meta(&format!(r#"{{"{PV}":"2026-07-28","{CC}":{{}}}}"#));
        let other = with_meta(&format!(r#"{{"{PV}":"2099-01-01","{CC}":{{}}}}"#));
        let legacy_meta = with_meta(r#"{"progressToken":3}"#);
        let bare = r#"{"name":"t","arguments":{}}"#.to_owned();
        let h = headers(Some("2026-07-28"), Some("tools/call"), Some("t"));
        let wrong = headers(Some("2026-07-28"), Some("tools/call"), Some("u"));
        // (params, era, headers, admitted)
        let cases: Vec<(&String, Era<'_>, Option<&Headers>, bool)> = vec![
            (&bare, Era::Legacy, None, true),
            (&legacy_meta, Era::Legacy, None, true),
            (&good, Era::Legacy, None, false),
            (&bare, modern, None, false),
            (&legacy_meta, modern, None, false),
            (&good, modern, None, true),
            (&other, modern, None, false),
            (&good, modern, Some(&h), true),
            (&good, modern, Some(&wrong), false),
        ];
        for (params, era, headers, want) in cases {
            let (body, call) = call_of(params);
            let got = admits(body.as_bytes(), &call.unwrap(), era, headers, false);
            assert_eq!(got, want, "{params} {era:?} {headers:?}");
        }
    }
}
