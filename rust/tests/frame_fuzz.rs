//! Differential fuzzing of the framing scanner against a reference parser, as jiter does.
//!
//! Every generated body goes through [`frame::decode`] and through serde_json (with
//! `arbitrary_precision`, so no number is out of range, and `raw_value`, so each value is seen
//! as the exact bytes it occupies). The verdicts must agree:
//!
//! * a body serde_json refuses (not UTF-8, not JSON, a lone surrogate escape...) is a
//!   `ParseError`;
//! * a body it accepts is accepted, except where jetmcp documents a stricter rule of its own:
//!   nesting deeper than `max_depth` and an integer part longer than 4,300 digits are parse
//!   errors, and more than `max_batch` entries is `BatchTooLarge`;
//! * an accepted body has the same entries, and each entry's kind, id class, id, `method`,
//!   `params`, `result`/`error` spans and reason are what the JSON-RPC rules of `frame.rs`
//!   say of the members serde_json sees (duplicate members, unsafe numeric ids, escapes in
//!   keys and in `jsonrpc`/`method` included).
//!
//! Inputs: valid JSON-RPC messages and batches, mutated (byte flips, truncation, insertion of
//! structural characters and escapes, splices that repeat members, deep nesting, huge and odd
//! numbers, BOMs, whitespace), messages generated member by member, and random bytes. Only the
//! public scanning API is used, so the harness outlives any rewrite of the scanner's insides.
//!
//! The run is deterministic. `JETMCP_FUZZ_ITERS` sets the number of bodies (default below),
//! `JETMCP_FUZZ_SEED` the seed; a failure prints both and the body.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use jetmcp_wire::frame::{self, EntryKind, Frame, FrameKind, Span};
use jetmcp_wire::id::{IdClass, MAX_SAFE_INTEGER};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

/// Bodies per run of the CI suite (a few seconds in the test profile).
const DEFAULT_ITERS: u64 = 30_000;
const DEFAULT_SEED: u64 = 0x6a65_746d_6370_2d31;
/// The longest integer part the scanner takes (jiter's limit, and Python's for `int(str)`).
const MAX_INT_DIGITS: usize = 4300;
/// serde_json's own nesting limit: it refuses 128 levels. The harness keeps `max_depth` below
/// it, so what serde_json refuses for depth the scanner must refuse too.
const SERDE_MAX_DEPTH: usize = 127;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an unsigned integer, not {v:?}")),
        Err(_) => default,
    }
}

// ------------------------------------------------------------------------------------ reference

/// An object's members in order, repeats kept (serde_json's `Map` would keep only the last).
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// What one entry must come out as.
#[derive(Debug, PartialEq, Eq)]
struct Want {
    kind: EntryKind,
    span: Span,
    id_class: IdClass,
    id: Option<Span>,
    method: Option<Span>,
    method_text: Option<String>,
    params: Option<Span>,
    result: Option<Span>,
    is_error: bool,
    reason: Option<&'static str>,
}

/// What the whole body must come out as.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    ParseError,
    EmptyBatch,
    BatchTooLarge,
    Single(Want),
    Batch(Vec<Want>),
}

impl Verdict {
    fn name(&self) -> &'static str {
        match self {
            Verdict::ParseError => "ParseError",
            Verdict::EmptyBatch => "EmptyBatch",
            Verdict::BatchTooLarge => "BatchTooLarge",
            Verdict::Single(_) => "Single",
            Verdict::Batch(_) => "Batch",
        }
    }
}

fn span_of(body: &str, raw: &RawValue) -> Span {
    let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
    Span {
        start,
        end: start + raw.get().len(),
    }
}

/// Two facts of a text serde_json accepted, read from the text itself (serde_json's `Map`
/// keeps one value per key, so a repeated key's earlier values are not in the `Value`): how
/// deep its containers nest (the outermost counting as 1), and whether some number's integer
/// part is longer than the scanner takes.
fn nesting_and_long_integer(text: &str) -> (usize, bool) {
    let b = text.as_bytes();
    let (mut depth, mut deepest, mut long) = (0usize, 0usize, false);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                i += 1;
            }
            b']' | b'}' => {
                depth -= 1;
                i += 1;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                long |= i - start > MAX_INT_DIGITS;
                // The fraction's and exponent's digits are not the integer part.
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    (deepest, long)
}

/// The id class of a raw id value, by the rule of `id.rs`: an integer lexeme within
/// +/-(2**53-1) is `Int`, any other number `UnsafeNumber`.
fn id_class(raw: &RawValue) -> IdClass {
    let text = raw.get();
    match text.as_bytes()[0] {
        b'"' => IdClass::String,
        b'n' => IdClass::Null,
        b'-' | b'0'..=b'9' => {
            let n: serde_json::Number = serde_json::from_str(text).expect("a number");
            let safe = n.as_i64().map(|v| v.unsigned_abs() <= MAX_SAFE_INTEGER);
            // arbitrary_precision: `as_i64` parses the lexeme, so "1.0" and "1e2" are None.
            if safe == Some(true) && !text.contains(['.', 'e', 'E']) {
                IdClass::Int
            } else {
                IdClass::UnsafeNumber
            }
        }
        _ => IdClass::Other,
    }
}

fn decoded_string(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

fn duplicate_reason(key: &str) -> &'static str {
    match key {
        "jsonrpc" => "duplicate member \"jsonrpc\"",
        "id" => "duplicate member \"id\"",
        "method" => "duplicate member \"method\"",
        "params" => "duplicate member \"params\"",
        "result" => "duplicate member \"result\"",
        _ => "duplicate member \"error\"",
    }
}

const KNOWN: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The JSON-RPC reading of one entry (a value serde_json accepted), written from the rules
/// documented in `frame.rs`: the last of repeated members counts, and a repeated known member
/// makes the entry invalid and drops its id.
fn want_entry(body: &str, raw: &RawValue) -> Want {
    let span = span_of(body, raw);
    let mut want = Want {
        kind: EntryKind::Invalid,
        span,
        id_class: IdClass::Absent,
        id: None,
        method: None,
        method_text: None,
        params: None,
        result: None,
        is_error: false,
        reason: Some("request must be a JSON object"),
    };
    if !raw.get().starts_with('{') {
        return want;
    }
    let Members(members) = serde_json::from_str(raw.get()).expect("an object");
    let mut seen: Vec<&str> = Vec::new();
    let mut duplicate: Option<&str> = None;
    let last = |name: &str| -> Option<&RawValue> {
        members
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    };
    for (k, _) in &members {
        if let Some(known) = KNOWN.iter().find(|n| **n == k.as_str()) {
            if seen.contains(known) {
                duplicate = duplicate.or(Some(known));
            }
            seen.push(known);
        }
    }
    let jsonrpc = last("jsonrpc");
    let id = last("id");
    let method = last("method");
    let params = last("params");
    let result = last("result");
    let error = last("error");

    want.id_class = id.map_or(IdClass::Absent, id_class);
    let method_is_string = method.is_some_and(|m| m.get().starts_with('"'));
    if method_is_string {
        let m = method.unwrap();
        want.method = Some(span_of(body, m));
        want.method_text = decoded_string(m);
    }
    want.params = params.map(|p| span_of(body, p));
    let echoable = matches!(want.id_class, IdClass::String | IdClass::Int);
    if echoable {
        want.id = id.map(|i| span_of(body, i));
    }

    let reason = if let Some(key) = duplicate {
        want.id = None;
        duplicate_reason(key)
    } else if jsonrpc.is_none() {
        "missing \"jsonrpc\" member"
    } else if jsonrpc.and_then(decoded_string).as_deref() != Some("2.0") {
        "\"jsonrpc\" must be exactly \"2.0\""
    } else if method.is_some() && !method_is_string {
        "\"method\" must be a string"
    } else if params.is_some_and(|p| !p.get().starts_with(['{', '['])) {
        "\"params\" must be an object or an array"
    } else if method_is_string {
        match want.id_class {
            IdClass::Absent => {
                want.kind = EntryKind::Notification;
                want.reason = None;
                return want;
            }
            IdClass::String | IdClass::Int => {
                want.kind = EntryKind::Request;
                want.reason = None;
                return want;
            }
            IdClass::Null => "\"id\" must be a string or an integer, not null",
            IdClass::UnsafeNumber => "\"id\" must be a string or an integer within +/-(2**53-1)",
            IdClass::Other => "\"id\" must be a string or an integer",
        }
    } else {
        match (result, error) {
            (Some(_), Some(_)) => "response has both \"result\" and \"error\"",
            (None, None) => "missing \"method\" member",
            (r, e) => {
                let is_error = e.is_some();
                if echoable || (is_error && want.id_class == IdClass::Null) {
                    want.kind = EntryKind::Response;
                    want.is_error = is_error;
                    want.result = r.or(e).map(|v| span_of(body, v));
                    want.reason = None;
                    return want;
                }
                match want.id_class {
                    IdClass::Absent => "response has no \"id\" member",
                    IdClass::Null => "a result response must have a non-null \"id\"",
                    _ => "response \"id\" must be a string or an integer",
                }
            }
        }
    };
    want.reason = Some(reason);
    want
}

/// What `decode(body, max_depth, max_batch)` must answer, by serde_json and jetmcp's rules.
fn reference(body: &[u8], max_depth: usize, max_batch: usize) -> Verdict {
    assert!(max_depth < SERDE_MAX_DEPTH);
    let Ok(text) = std::str::from_utf8(body) else {
        return Verdict::ParseError;
    };
    if serde_json::from_str::<Value>(text).is_err() {
        return Verdict::ParseError;
    }
    let (deepest, long_integer) = nesting_and_long_integer(text);
    if deepest > max_depth || long_integer {
        return Verdict::ParseError;
    }
    let top: &RawValue = serde_json::from_str(text).expect("accepted as a Value");
    if top.get().starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(top.get()).expect("an array");
        if items.is_empty() {
            Verdict::EmptyBatch
        } else if items.len() > max_batch {
            Verdict::BatchTooLarge
        } else {
            Verdict::Batch(items.iter().map(|r| want_entry(text, r)).collect())
        }
    } else {
        Verdict::Single(want_entry(text, top))
    }
}

/// The scanner's answer in the reference's terms (and its own invariants checked).
fn observed(body: &[u8], frame: &Frame) -> Verdict {
    let got = |e: &frame::Entry| Want {
        kind: e.kind,
        span: e.span,
        id_class: e.id_class,
        id: e.id,
        method: e.method,
        method_text: e.method_str(body).map(Cow::into_owned),
        params: e.params,
        result: e.result,
        is_error: e.is_error,
        reason: e.reason,
    };
    match frame.kind {
        FrameKind::ParseError | FrameKind::BatchTooLarge => {
            assert!(frame.entries.is_empty(), "{:?} with entries", frame.kind);
            assert!(
                frame.error.as_deref().is_some_and(|m| !m.is_empty()),
                "{:?} without a message",
                frame.kind
            );
            if frame.kind == FrameKind::ParseError {
                Verdict::ParseError
            } else {
                Verdict::BatchTooLarge
            }
        }
        FrameKind::EmptyBatch => {
            assert!(frame.entries.is_empty() && frame.error.is_none());
            Verdict::EmptyBatch
        }
        FrameKind::Single => {
            assert!(frame.error.is_none());
            assert_eq!(frame.entries.len(), 1);
            Verdict::Single(got(&frame.entries[0]))
        }
        FrameKind::Batch => {
            assert!(frame.error.is_none());
            Verdict::Batch(frame.entries.iter().map(got).collect())
        }
    }
}

// ------------------------------------------------------------------------------------ inputs

/// splitmix64: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Valid messages and batches the mutations start from.
const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#,
    r#"{"jsonrpc":"2.0","id":"r-7","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":9007199254740991,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}"#,
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
    r#"{"jsonrpc":"2.0","id":-0,"error":{"code":1,"message":"m","data":[null,true,false]}}"#,
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x","result":{}}]"#,
    r#"[1,"a",null,[],{},{"jsonrpc":"2.0","id":2,"method":"m","params":[1.5e3,-2E-2,0.0]}]"#,
    " \t[ {\"jsonrpc\" : \"2.0\" ,\n\"id\"\r: \"\\u00e9\\ud83d\\ude00\" , \"method\":\"tools\\/list\" } ]\n",
    r#"{"json\u0072pc":"2\u002e0","\u0069d":"a\"b\\c","method":"t\u00e9st","params":{"k":"\u0000\b\f\n\r\t"}}"#,
    r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
    r#"{"jsonrpc":"2.0","id":1.5,"method":"m","params":{"x":{"y":{"z":[[[["]}{["]]]]}}}}"#,
    r#"{"x":1,"jsonrpc":"2.0","x":2,"method":"m","id":123456789012345678901234567890}"#,
    "{\"jsonrpc\":\"2.0\",\"id\":\"\u{e9}\u{1F600}\",\"method\":\"\u{20ac}\",\"params\":[\"\u{10FFFF}\"]}",
    r#"[]"#,
    r#"{}"#,
    r#""jsonrpc""#,
    r#"-12.5e+7"#,
];

/// Bytes worth inserting: JSON's structure, escapes, number parts, literals' letters, and
/// bytes that are never JSON (control characters, a BOM's, invalid UTF-8).
const ALPHABET: &[u8] = b"{}[]:,\"\\/ \t\n\r0123456789-+.eEubfnrtlsaxDdcC\x00\x01\x08\x0b\x0c\x1f\x7f\x80\xbf\xc0\xc3\xa9\xed\xef\xbb\xf0\xf4\xf5\xff";

/// Whole lexemes worth splicing in at a random place.
const FRAGMENTS: &[&str] = &[
    "1e400",
    "-1e-400",
    "-0",
    "-0.0",
    "0.0e0",
    "9007199254740991",
    "9007199254740992",
    "-9007199254740991",
    "-9007199254740992",
    "18446744073709551616",
    "1E+2",
    "01",
    "1.",
    ".5",
    "NaN",
    "Infinity",
    "true",
    "false",
    "null",
    "nul",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud83d\\ude00\"",
    "\"\\ud800\\u0041\"",
    "\"\\u00\"",
    "\"\\x\"",
    "\"\\/\"",
    "\"\\u0000\"",
    "\"\t\"",
    "\"\u{7f}\"",
    "\"jsonrpc\":\"2.0\",",
    "\"id\":1,",
    "\"id\":null,",
    "\"id\":[1],",
    "\"method\":\"m\",",
    "\"method\":5,",
    "\"params\":{},",
    "\"params\":7,",
    "\"result\":1,",
    "\"error\":{},",
    "\"\\u0069d\":\"x\",",
    "\u{feff}",
    "\u{a0}",
    "\"]}[{\"",
    "[[[[[[[[",
    "]]]]]]]]",
    "{\"a\":{\"a\":{\"a\":",
    ",,",
    "::",
    "/* */",
];

/// A random value, valid JSON by construction (`budget` bounds its size).
fn gen_value(rng: &mut Rng, out: &mut String, budget: &mut usize, depth: usize) {
    *budget = budget.saturating_sub(1);
    let leaf = *budget == 0 || depth > 6;
    match rng.below(if leaf { 6 } else { 8 }) {
        0 => gen_string(rng, out),
        1 => out.push_str(rng.pick(&[
            "0",
            "-0",
            "7",
            "-42",
            "1.5",
            "1e3",
            "-2.5E-3",
            "9007199254740991",
            "9007199254740992",
            "-9007199254740993",
            "123456789012345678901234567890",
            "1e400",
            "0.000001",
        ])),
        2 => out.push_str(rng.pick(&["true", "false", "null"])),
        3 => {
            let n = rng.next() % 1_000_000;
            out.push_str(&n.to_string());
        }
        4 | 5 => gen_string(rng, out),
        6 => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                gen_value(rng, out, budget, depth + 1);
                ws(rng, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                let key = rng_key(rng);
                gen_key(rng, out, key);
                ws(rng, out);
                out.push(':');
                ws(rng, out);
                gen_value(rng, out, budget, depth + 1);
            }
            out.push('}');
        }
    }
}

fn rng_key(rng: &mut Rng) -> &'static str {
    rng.pick(&[
        "a",
        "b",
        "name",
        "arguments",
        "jsonrpc",
        "id",
        "method",
        "params",
        "",
        "k\u{e9}",
    ])
}

/// Whitespace, usually none.
fn ws(rng: &mut Rng, out: &mut String) {
    if rng.chance(4) {
        for _ in 0..=rng.below(3) {
            out.push(rng.pick(&[' ', '\t', '\n', '\r']));
        }
    }
}

/// A string lexeme, with escapes of every kind now and then.
fn gen_string(rng: &mut Rng, out: &mut String) {
    out.push('"');
    for _ in 0..rng.below(6) {
        match rng.below(12) {
            0 => {
                out.push_str(rng.pick(&["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]))
            }
            1 => out.push_str(rng.pick(&["\\u0041", "\\u00e9", "\\uFFFF", "\\u0000", "\\u001f"])),
            2 => out.push_str("\\ud83d\\ude00"),
            3 => out.push(rng.pick(&['\u{e9}', '\u{20ac}', '\u{1F600}', '\u{7f}', '\u{10FFFF}'])),
            4 => out.push(rng.pick(&['[', ']', '{', '}', ',', ':'])),
            _ => out.push(rng.pick(&['a', 'b', 'z', '0', ' ', '-'])),
        }
    }
    out.push('"');
}

/// A key: sometimes with its letters escaped (the scanner must still know `"\u0069d"` is id).
fn gen_key(rng: &mut Rng, out: &mut String, key: &str) {
    out.push('"');
    for c in key.chars() {
        if rng.chance(6) {
            out.push_str(&format!("\\u{:04x}", c as u32 & 0xffff));
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

/// A JSON-RPC-like object, member by member: mostly the right members with the right types,
/// sometimes missing, repeated, escaped or of the wrong type.
fn gen_message(rng: &mut Rng, out: &mut String) {
    let mut members: Vec<&str> = Vec::new();
    if !rng.chance(10) {
        members.push("jsonrpc");
    }
    match rng.below(4) {
        0 => members.extend(["id", "method", "params"]),
        1 => members.extend(["method", "params"]),
        2 => members.extend(["id", "result"]),
        _ => members.extend(["id", "error"]),
    }
    for _ in 0..rng.below(3) {
        members.push(rng.pick(&KNOWN));
    }
    if rng.chance(3) {
        members.push("other");
    }
    for i in (1..members.len()).rev() {
        if rng.chance(3) {
            let j = rng.below(i + 1);
            members.swap(i, j);
        }
    }
    out.push('{');
    for (i, name) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        ws(rng, out);
        gen_key(rng, out, name);
        ws(rng, out);
        out.push(':');
        ws(rng, out);
        let wrong = rng.chance(8);
        let mut budget = 12;
        match *name {
            "jsonrpc" if !wrong => {
                out.push_str(rng.pick(&["\"2.0\"", "\"2.0\"", "\"2\\u002e0\"", "\"2.1\"", "2.0"]))
            }
            "id" if !wrong => out.push_str(rng.pick(&[
                "1",
                "0",
                "-0",
                "\"a\"",
                "\"\"",
                "\"\\u00e9\"",
                "null",
                "1.5",
                "1e2",
                "9007199254740991",
                "-9007199254740991",
                "9007199254740992",
                "[1]",
                "{}",
                "true",
            ])),
            "method" if !wrong => gen_string(rng, out),
            "params" | "result" | "error" if !wrong && rng.chance(2) => {
                out.push('{');
                ws(rng, out);
                gen_key(rng, out, "name");
                out.push(':');
                gen_string(rng, out);
                out.push('}');
            }
            _ => gen_value(rng, out, &mut budget, 1),
        }
        ws(rng, out);
    }
    out.push('}');
}

fn gen_body(rng: &mut Rng) -> String {
    let mut out = String::new();
    ws(rng, &mut out);
    if rng.chance(3) {
        out.push('[');
        let n = rng.below(6);
        for i in 0..n {
            if i > 0 {
                out.push(',');
            }
            ws(rng, &mut out);
            if rng.chance(6) {
                let mut budget = 6;
                gen_value(rng, &mut out, &mut budget, 1);
            } else {
                gen_message(rng, &mut out);
            }
        }
        out.push(']');
    } else {
        gen_message(rng, &mut out);
    }
    ws(rng, &mut out);
    out
}

/// `levels` containers around `inner` (arrays, objects, or both alternating).
fn nest(rng: &mut Rng, inner: &str, levels: usize) -> String {
    let mut open = String::new();
    let mut close = String::new();
    let style = rng.below(3);
    for i in 0..levels {
        if style == 0 || (style == 2 && i % 2 == 0) {
            open.push('[');
            close.insert(0, ']');
        } else {
            open.push_str("{\"k\":");
            close.insert(0, '}');
        }
    }
    format!("{open}{inner}{close}")
}

/// A number lexeme: sign, integer part (up to past the 4,300-digit limit), fraction,
/// exponent, each part now and then malformed (`01`, `1.`, `.5`, `1e`, `1e+-2`, `1e.5`).
fn number_ish(rng: &mut Rng) -> String {
    let mut n = String::new();
    if rng.chance(3) {
        n.push_str(rng.pick(&["-", "-", "+", "--"]));
    }
    match rng.below(12) {
        0 => {}
        1 => n.push_str("00"),
        2 => n.push_str("01"),
        3 => n.push_str(&"9".repeat(rng.pick(&[16usize, 17, 4299, 4300, 4301]))),
        4 => n.push_str(rng.pick(&[
            "9007199254740991",
            "9007199254740992",
            "18446744073709551616",
        ])),
        5..=7 => n.push('0'),
        _ => n.push_str(&(1 + rng.next() % 99_999).to_string()),
    }
    if rng.chance(3) {
        n.push('.');
        n.push_str(rng.pick(&["", "0", "5", "25", "000", "."]));
    }
    if rng.chance(3) {
        n.push(rng.pick(&['e', 'E']));
        n.push_str(rng.pick(&["", "", "+", "-", ".", "+-"]));
        n.push_str(rng.pick(&["", "0", "3", "400", "99999"]));
    }
    n
}

/// Insert, delete or replace a byte (drawn from `bytes`) `offset` or `offset + 1` bytes after
/// a random occurrence of one of `marks`.
fn edit_near(rng: &mut Rng, v: &mut Vec<u8>, marks: &[u8], bytes: &[u8], offset: usize) {
    let found: Vec<usize> = v
        .iter()
        .enumerate()
        .filter(|(_, b)| marks.contains(b))
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() {
        return;
    }
    let at = (rng.pick(&found) + offset + rng.below(2)).min(v.len());
    let byte = rng.pick(bytes);
    match rng.below(3) {
        0 => v.insert(at, byte),
        1 if at < v.len() => {
            v.remove(at);
        }
        _ if at < v.len() => v[at] = byte,
        _ => v.push(byte),
    }
}

/// One edit of `v`.
fn mutate(rng: &mut Rng, v: &mut Vec<u8>, max_depth: usize) {
    let pos = rng.below(v.len() + 1);
    match rng.below(14) {
        // Most edits that matter sit next to structure (a `,` before `}`, a lost `:`), in a
        // number (a sign after an exponent, a second dot) or in an escape (a non-hex digit):
        // edit right there.
        11 => edit_near(rng, v, b"{}[],:\"", b"{}[],:\" ", 0),
        12 => edit_near(rng, v, b"0123456789", b"0123456789.eE+- ,]}", 1),
        13 => {
            let offset = 1 + rng.below(5);
            edit_near(rng, v, b"\\", b"u\"\\/bfnrtxgG0aAfFdD8 ", offset);
        }
        0 if pos < v.len() => v[pos] ^= 1 << rng.below(8),
        1 if pos < v.len() => v[pos] = rng.next() as u8,
        2 => v.insert(pos, rng.pick(ALPHABET)),
        3 if pos < v.len() => {
            v.remove(pos);
        }
        4 => v.truncate(pos),
        5 => {
            let frag = rng.pick(FRAGMENTS).as_bytes();
            v.splice(pos..pos, frag.iter().copied());
        }
        6 if !v.is_empty() => {
            // Repeat a stretch of the body elsewhere: duplicate members, doubled values.
            let a = rng.below(v.len());
            let b = (a + 1 + rng.below(40)).min(v.len());
            let piece = v[a..b].to_vec();
            v.splice(pos..pos, piece);
        }
        7 => {
            // Wrap a value near the depth limit: one side of it or the other.
            let levels = max_depth.saturating_sub(2) + rng.below(5);
            let inner = if rng.chance(2) { "1" } else { "{\"a\":[]}" };
            let deep = nest(rng, inner, levels);
            v.splice(pos..pos, deep.into_bytes());
        }
        8 => {
            // A number lexeme put together from the grammar's parts, each sometimes wrong,
            // in place of a number of the body (or anywhere).
            let n = number_ish(rng).into_bytes();
            let numbers: Vec<usize> = (0..v.len()).filter(|&i| v[i].is_ascii_digit()).collect();
            if numbers.is_empty() || rng.chance(4) {
                v.splice(pos..pos, n);
            } else {
                let at = rng.pick(&numbers);
                let start = (0..at)
                    .rev()
                    .find(|&i| !b"-0123456789".contains(&v[i]))
                    .map_or(0, |i| i + 1);
                let end = (at..v.len())
                    .find(|&i| !b"0123456789.eE+-".contains(&v[i]))
                    .unwrap_or(v.len());
                v.splice(start..end, n);
            }
        }
        9 => {
            let bytes: &[u8] = rng.pick(&[
                b"\xef\xbb\xbf" as &[u8],
                b" ",
                b"\t\n\r ",
                b"\x0c",
                b"\x0b",
                b"\xc2\xa0",
            ]);
            v.splice(pos..pos, bytes.iter().copied());
        }
        _ => {
            let mut s = String::new();
            let mut budget = 8;
            gen_value(rng, &mut s, &mut budget, 1);
            v.splice(pos..pos, s.into_bytes());
        }
    }
}

/// The next body and the limits it is decoded with.
fn input(rng: &mut Rng) -> (Vec<u8>, usize, usize) {
    let (max_depth, max_batch) = if rng.chance(4) {
        (1 + rng.below(10), rng.below(5))
    } else {
        (frame::DEFAULT_MAX_DEPTH, frame::DEFAULT_MAX_BATCH)
    };
    let mut body = match rng.below(10) {
        0 => {
            let n = rng.below(48);
            (0..n).map(|_| rng.next() as u8).collect()
        }
        1..=3 => gen_body(rng).into_bytes(),
        4 => {
            // A batch over the limit, or just under it.
            let one = rng.pick(SEEDS);
            let n = max_batch + rng.below(3);
            format!("[{}]", vec![one; n.max(1)].join(",")).into_bytes()
        }
        _ => rng.pick(SEEDS).as_bytes().to_vec(),
    };
    let edits = if rng.chance(3) { 0 } else { 1 + rng.below(3) };
    for _ in 0..edits {
        mutate(rng, &mut body, max_depth);
    }
    (body, max_depth, max_batch)
}

// ------------------------------------------------------------------------------------ the run

/// Decode `body` and hold it to the reference; the reference's verdict.
fn check(body: &[u8], max_depth: usize, max_batch: usize, context: &dyn Fn() -> String) -> Verdict {
    let frame = frame::decode(body, max_depth, max_batch);
    let got = observed(body, &frame);
    let want = reference(body, max_depth, max_batch);
    if got != want {
        panic!(
            "{}\nbody ({} bytes, max_depth {max_depth}, max_batch {max_batch}): {:?}\n\
             scanner error: {:?}\n\nscanner:   {got:?}\nreference: {want:?}",
            context(),
            body.len(),
            String::from_utf8_lossy(body),
            frame.error,
        );
    }
    want
}

#[test]
fn scanner_agrees_with_serde_json() {
    let iters = env_u64("JETMCP_FUZZ_ITERS", DEFAULT_ITERS);
    let seed = env_u64("JETMCP_FUZZ_SEED", DEFAULT_SEED);
    let mut rng = Rng(seed);
    // How often each outcome came up: the generators must reach all of them, or the
    // comparison says little.
    let mut frames: BTreeMap<&str, u64> = BTreeMap::new();
    let mut entries: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..iters {
        let (body, max_depth, max_batch) = input(&mut rng);
        let want = check(&body, max_depth, max_batch, &|| {
            format!("body {i} of JETMCP_FUZZ_SEED={seed}")
        });
        let listed: &[Want] = match &want {
            Verdict::Single(e) => std::slice::from_ref(e),
            Verdict::Batch(es) => es,
            _ => &[],
        };
        *frames.entry(want.name()).or_default() += 1;
        for e in listed {
            *entries
                .entry(format!("{:?} {}", e.kind, e.reason.unwrap_or("")))
                .or_default() += 1;
        }
    }
    println!("frames: {frames:#?}\nentries: {entries:#?}");
    if iters >= DEFAULT_ITERS {
        assert_eq!(frames.len(), 5, "{frames:?}");
        // Request, Notification, Response, and each of the 19 reasons an entry is invalid for.
        assert_eq!(entries.len(), 3 + 19, "{entries:#?}");
    }
}

#[test]
fn every_seed_is_accepted_as_written() {
    for seed in SEEDS {
        let want = reference(seed.as_bytes(), frame::DEFAULT_MAX_DEPTH, 256);
        assert_ne!(want, Verdict::ParseError, "{seed}");
        check(seed.as_bytes(), frame::DEFAULT_MAX_DEPTH, 256, &|| {
            format!("seed {seed}")
        });
    }
}

#[test]
fn each_truncation_and_each_byte_of_the_seeds() {
    // Exhaustive where it is cheap: every prefix, and every single-byte deletion.
    for seed in SEEDS {
        let b = seed.as_bytes();
        for cut in 0..b.len() {
            check(&b[..cut], 100, 256, &|| format!("{seed} cut at {cut}"));
            let mut v = b.to_vec();
            v.remove(cut);
            check(&v, 100, 256, &|| format!("{seed} without byte {cut}"));
        }
    }
}

#[test]
fn limits_at_their_edges() {
    // The rules jetmcp adds to JSON's, exactly at and one past each limit, in each place a
    // value can stand: the reference must agree on every one.
    let mut rng = Rng(DEFAULT_SEED);
    let places = |value: &str| {
        [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":[{value}]}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{value},"method":"m"}}"#),
            format!(r#"{{"jsonrpc":"2.0","x":{value},"result":{{}},"id":"a"}}"#),
            format!(r#"[{{"jsonrpc":"2.0","method":"m"}},{value}]"#),
            value.to_owned(),
        ]
    };
    for max_depth in [1usize, 2, 3, 10, 99, 100, 101, 126] {
        for levels in max_depth.saturating_sub(3)..=max_depth + 1 {
            for _ in 0..3 {
                let deep = nest(&mut rng, "1", levels);
                for body in places(&deep) {
                    check(body.as_bytes(), max_depth, 256, &|| {
                        format!("{levels} levels")
                    });
                }
            }
        }
    }
    for digits in [4299usize, 4300, 4301] {
        let n = "7".repeat(digits);
        for value in [
            n.clone(),
            format!("-{n}"),
            format!("{n}.5"),
            format!("{n}e-3"),
        ] {
            for body in places(&value) {
                check(body.as_bytes(), 100, 256, &|| format!("{digits} digits"));
            }
        }
    }
    for max_batch in [0usize, 1, 2, 255, 256, 257] {
        for n in max_batch.saturating_sub(1)..=max_batch + 1 {
            let one = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
            let body = format!("[{}]", vec![one; n].join(","));
            check(body.as_bytes(), 100, max_batch, &|| format!("{n} entries"));
        }
    }
}
