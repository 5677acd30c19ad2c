//! The scanner's tests: a table of cases for every grammar edge and JSON-RPC rule, and the
//! scanner held to jiter (the reference for what is JSON) on mutated bodies.

use jiter::Jiter;

use super::*;
use crate::cursor::Cursor;
use crate::id::IdClass;
use crate::mutate::Mutator;

fn single(body: &str) -> Entry {
    let f = decode(body.as_bytes(), DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
    assert_eq!(f.kind, FrameKind::Single, "{body}: {:?}", f.error);
    assert_eq!(f.entries.len(), 1);
    f.entries.into_iter().next().unwrap()
}

fn raw_id<'b>(body: &'b str, e: &Entry) -> Option<&'b str> {
    e.id.map(|s| std::str::from_utf8(s.of(body.as_bytes())).unwrap())
}

fn parse_error(body: &[u8]) -> String {
    let f = decode(body, DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
    assert_eq!(
        f.kind,
        FrameKind::ParseError,
        "{:?}",
        String::from_utf8_lossy(body)
    );
    assert!(f.entries.is_empty());
    f.error.unwrap()
}

#[test]
fn request_id_forms() {
    use EntryKind::*;
    use IdClass::*;
    // (id lexeme, class, kind, raw id kept)
    let cases: &[(&str, IdClass, EntryKind, bool)] = &[
        (r#""abc""#, String, Request, true),
        (r#""""#, String, Request, true),
        (r#""x\u00e9y""#, String, Request, true),
        (r#""a\"b\\c\n""#, String, Request, true),
        (r#""\ud83d\ude00""#, String, Request, true),
        ("\"\u{e9}\u{1F600}\"", String, Request, true),
        ("0", Int, Request, true),
        ("-0", Int, Request, true),
        ("7", Int, Request, true),
        ("9007199254740991", Int, Request, true),
        ("-9007199254740991", Int, Request, true),
        ("9007199254740992", UnsafeNumber, Invalid, false),
        ("-9007199254740992", UnsafeNumber, Invalid, false),
        (
            "123456789012345678901234567890",
            UnsafeNumber,
            Invalid,
            false,
        ),
        ("1.5", UnsafeNumber, Invalid, false),
        ("1.0", UnsafeNumber, Invalid, false),
        ("1e3", UnsafeNumber, Invalid, false),
        ("1E2", UnsafeNumber, Invalid, false),
        ("1e400", UnsafeNumber, Invalid, false),
        ("-0.0", UnsafeNumber, Invalid, false),
        ("null", Null, Invalid, false),
        ("true", Other, Invalid, false),
        ("false", Other, Invalid, false),
        ("{}", Other, Invalid, false),
        ("[]", Other, Invalid, false),
        (r#"{"a":[1,{"b":null}]}"#, Other, Invalid, false),
    ];
    for &(lexeme, class, kind, kept) in cases {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{lexeme},"method":"m"}}"#);
        let e = single(&body);
        assert_eq!(e.id_class, class, "{body}");
        assert_eq!(e.kind, kind, "{body}");
        assert_eq!(e.method_str(body.as_bytes()).as_deref(), Some("m"));
        if kept {
            assert_eq!(raw_id(&body, &e), Some(lexeme), "{body}");
            assert_eq!(e.reason, None);
        } else {
            assert_eq!(raw_id(&body, &e), None, "{body}");
            assert!(e.reason.unwrap().contains("\"id\""), "{body}");
        }
    }
    let huge = "9".repeat(400);
    let body = format!(r#"{{"jsonrpc":"2.0","id":{huge},"method":"m"}}"#);
    assert_eq!(single(&body).id_class, UnsafeNumber);
}

#[test]
fn huge_integer_past_jiter_limit_is_parse_error() {
    // jiter refuses integers longer than 4300 digits (as Python's int() does).
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{},"method":"m"}}"#,
        "9".repeat(5000)
    );
    parse_error(body.as_bytes());
}

#[test]
fn notification_and_absent_id() {
    let e = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(e.kind, EntryKind::Notification);
    assert_eq!(e.id_class, IdClass::Absent);
    assert_eq!(e.id, None);
    assert_eq!(e.params, None);
}

#[test]
fn whitespace_everywhere() {
    let body = " \t\r\n{ \"jsonrpc\" :\n\"2.0\" , \"id\"\t:\r 12 ,\"method\" : \"m\" , \"params\" : [ 1 , 2 ] } \n";
    let e = single(body);
    assert_eq!(e.kind, EntryKind::Request);
    assert_eq!(raw_id(body, &e), Some("12"));
    assert_eq!(e.params.unwrap().of(body.as_bytes()), b"[ 1 , 2 ]");
    assert_eq!(
        e.span.of(body.as_bytes()).first().copied(),
        Some(b'{'),
        "span starts at the object"
    );
    assert_eq!(e.span.of(body.as_bytes()).last().copied(), Some(b'}'));
}

#[test]
fn escapes_in_keys_and_method() {
    let body = r#"{"json\u0072pc":"2\u002e0","\u0069d":1,"method":"tools\/call\u00e9"}"#;
    let e = single(body);
    assert_eq!(e.kind, EntryKind::Request);
    assert_eq!(
        e.method_str(body.as_bytes()).as_deref(),
        Some("tools/call\u{e9}")
    );
    assert_eq!(raw_id(body, &e), Some("1"));
}

#[test]
fn duplicates() {
    for member in ["jsonrpc", "id", "method", "params", "result", "error"] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{}},"result":1,"error":{{}},"{member}":null}}"#
        );
        let e = single(&body);
        assert_eq!(e.kind, EntryKind::Invalid, "{body}");
        assert_eq!(e.id, None, "{body}");
        assert_eq!(e.reason.unwrap(), format!("duplicate member \"{member}\""));
    }
    // Escaped duplicate is still a duplicate.
    let e = single(r#"{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"m"}"#);
    assert_eq!(e.reason, Some("duplicate member \"id\""));
    assert_eq!(e.id, None);
    // Unknown keys may repeat.
    let e = single(r#"{"jsonrpc":"2.0","id":1,"x":1,"x":2,"method":"m"}"#);
    assert_eq!(e.kind, EntryKind::Request);
}

#[test]
fn invalid_entries() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        (r#"{"id":1,"method":"m"}"#, Some("1"), "jsonrpc"),
        (r#"{"jsonrpc":"2.1","id":1,"method":"m"}"#, Some("1"), "2.0"),
        (
            r#"{"jsonrpc":2.0,"id":"a","method":"m"}"#,
            Some("\"a\""),
            "2.0",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            Some("1"),
            "method",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            Some("1"),
            "method",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":5}"#,
            Some("1"),
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#,
            Some("1"),
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            Some("1"),
            "params",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, Some("1"), "method"),
        (r#"{"jsonrpc":"2.0"}"#, None, "method"),
        (r#"{}"#, None, "jsonrpc"),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            Some("1"),
            "both",
        ),
        (r#"{"jsonrpc":"2.0","result":1}"#, None, "id"),
        (r#"{"jsonrpc":"2.0","id":null,"result":1}"#, None, "id"),
        (r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#, None, "id"),
        (r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#, None, "id"),
    ];
    for &(body, id, needle) in cases {
        let e = single(body);
        assert_eq!(e.kind, EntryKind::Invalid, "{body}");
        assert_eq!(raw_id(body, &e), id, "{body}");
        let reason = e.reason.unwrap();
        assert!(reason.contains(needle), "{body}: {reason}");
    }
}

#[test]
fn non_object_entries() {
    for body in ["1", "\"x\"", "null", "true", "[[]]", "[1,\"a\",null]"] {
        let f = decode(body.as_bytes(), DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
        assert!(!f.entries.is_empty(), "{body}");
        for e in &f.entries {
            assert_eq!(e.kind, EntryKind::Invalid);
            assert_eq!(e.reason, Some("request must be a JSON object"));
            assert_eq!(e.id, None);
        }
    }
    let f = decode(b"[1, {\"a\":[2]}]", DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
    assert_eq!(f.kind, FrameKind::Batch);
    assert_eq!(f.entries[0].span.of(b"[1, {\"a\":[2]}]"), b"1");
    assert_eq!(f.entries[1].span.of(b"[1, {\"a\":[2]}]"), b"{\"a\":[2]}");
}

#[test]
fn responses() {
    let body = r#"{"jsonrpc":"2.0","id":"r1","result":{"ok":true}}"#;
    let e = single(body);
    assert_eq!(e.kind, EntryKind::Response);
    assert!(!e.is_error);
    assert_eq!(e.result.unwrap().of(body.as_bytes()), br#"{"ok":true}"#);
    assert_eq!(raw_id(body, &e), Some("\"r1\""));

    let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#;
    let e = single(body);
    assert_eq!(e.kind, EntryKind::Response);
    assert!(e.is_error);
    assert_eq!(e.id, None);
    assert_eq!(e.id_class, IdClass::Null);

    let body = r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#;
    let e = single(body);
    assert_eq!(e.kind, EntryKind::Response);
    assert!(e.is_error);
    assert_eq!(raw_id(body, &e), Some("3"));
    assert_eq!(
        e.result.unwrap().of(body.as_bytes()),
        br#"{"code":1,"message":"m"}"#
    );
}

#[test]
fn batches() {
    let f = decode(b"[]", 100, 256);
    assert_eq!(f.kind, FrameKind::EmptyBatch);
    assert!(f.entries.is_empty());
    let f = decode(b" [ \n ] ", 100, 256);
    assert_eq!(f.kind, FrameKind::EmptyBatch);

    let one = r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
    for n in [1usize, 2, 3] {
        let body = format!("[{}]", vec![one; n].join(","));
        let f = decode(body.as_bytes(), 100, 3);
        assert_eq!(f.kind, FrameKind::Batch);
        assert_eq!(f.entries.len(), n);
    }
    let body = format!("[{}]", [one; 4].join(","));
    let f = decode(body.as_bytes(), 100, 3);
    assert_eq!(f.kind, FrameKind::BatchTooLarge);
    assert!(f.entries.is_empty());
    assert!(f.error.unwrap().contains('3'));
    // A parse error past the limit is still a parse error.
    let body = format!("[{},x]", [one; 4].join(","));
    assert_eq!(decode(body.as_bytes(), 100, 3).kind, FrameKind::ParseError);

    let body = format!("[{}]", vec![one; 257].join(","));
    let f = decode(body.as_bytes(), DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
    assert_eq!(f.kind, FrameKind::BatchTooLarge);
    assert!(f.error.unwrap().contains("256"));
    let body = format!("[{}]", vec![one; 256].join(","));
    let f = decode(body.as_bytes(), DEFAULT_MAX_DEPTH, DEFAULT_MAX_BATCH);
    assert_eq!(f.kind, FrameKind::Batch);
    assert_eq!(f.entries.len(), 256);
}

#[test]
fn parse_errors() {
    let cases: &[&[u8]] = &[
        b"",
        b"   ",
        b"{",
        b"[",
        b"{\"jsonrpc\":\"2.0\",}",
        b"[1,]",
        b"{} {}",
        b"{}x",
        b"nul",
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"01",
        b"1.",
        b".5",
        b"-",
        b"+1",
        b"{'a':1}",
        b"{\"a\" 1}",
        b"{1:2}",
        b"\"\\x\"",
        b"\"\\ud800\"",
        b"\"\\udc00\"",
        b"\"a\x01b\"",
        b"\xef\xbb\xbf{}",
        b"\xff",
        b"{\"a\":\"\xc3\"}",
        b"\xed\xa0\x80",
        b"[1] /* */",
    ];
    for body in cases {
        let msg = parse_error(body);
        assert!(!msg.is_empty());
    }
    assert!(parse_error(b"\xff").contains("UTF-8"));
    let msg = parse_error(br#"{"jsonrpc":"2.0","method":"ab"#);
    assert!(msg.starts_with("invalid JSON at byte "), "{msg}");
    assert!(msg.contains("EOF while parsing a string"), "{msg}");
}

#[test]
fn depth_limit() {
    // Single entry: the object is level 1, params level 2, and so on.
    let nest = |levels: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let body = nest(99);
    let f = decode(body.as_bytes(), 100, 256);
    assert_eq!(f.kind, FrameKind::Single, "{:?}", f.error);
    let body = nest(100);
    let f = decode(body.as_bytes(), 100, 256);
    assert_eq!(f.kind, FrameKind::ParseError);
    assert_eq!(f.error.as_deref(), Some("nesting depth exceeds 100"));
    // The same at any position: inside an unknown member and in a batch.
    let f = decode(
        format!("[{{\"x\":{}1{}}}]", "[".repeat(98), "]".repeat(98)).as_bytes(),
        100,
        256,
    );
    assert_eq!(f.kind, FrameKind::Batch, "{:?}", f.error);
    let f = decode(
        format!("[{{\"x\":{}1{}}}]", "[".repeat(99), "]".repeat(99)).as_bytes(),
        100,
        256,
    );
    assert_eq!(f.kind, FrameKind::ParseError);
    // Exactly max_depth bare arrays.
    let f = decode(
        format!("{}{}", "[".repeat(100), "]".repeat(100)).as_bytes(),
        100,
        256,
    );
    assert_eq!(f.kind, FrameKind::Batch);
    let f = decode(
        format!("{}{}", "[".repeat(101), "]".repeat(101)).as_bytes(),
        100,
        256,
    );
    assert_eq!(f.kind, FrameKind::ParseError);
    // Objects count too.
    let f = decode("{\"a\":".repeat(101).as_bytes(), 100, 256);
    assert_eq!(f.error.as_deref(), Some("nesting depth exceeds 100"));
    // Truncated input that is over the limit reports the depth, whichever skip ran.
    for max_depth in [10, 100, 180, 250] {
        for levels in [max_depth + 1, 199, 201, 300] {
            if levels <= max_depth {
                continue;
            }
            let body = "[".repeat(levels);
            let f = decode(body.as_bytes(), max_depth, 256);
            assert_eq!(
                f.error,
                Some(format!("nesting depth exceeds {max_depth}")),
                "{levels} levels, limit {max_depth}"
            );
            let body = format!(
                r#"{{"jsonrpc":"2.0","params":{}"#,
                "{\"a\":[".repeat(levels)
            );
            let f = decode(body.as_bytes(), max_depth, 256);
            assert_eq!(
                f.error,
                Some(format!("nesting depth exceeds {max_depth}")),
                "{levels} levels, limit {max_depth}"
            );
        }
    }
    // Complete values exactly at and over the limit, for limits either side of jiter's.
    for max_depth in [1usize, 2, 50, 149, 150, 151, 199, 200, 201, 260] {
        let ok = format!("{}1{}", "[".repeat(max_depth), "]".repeat(max_depth));
        assert_eq!(decode(ok.as_bytes(), max_depth, 256).kind, FrameKind::Batch);
        let over = format!("[{ok}]");
        assert_eq!(
            decode(over.as_bytes(), max_depth, 256).error,
            Some(format!("nesting depth exceeds {max_depth}"))
        );
        // Strings full of brackets do not count.
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"m","params":["{}",{{"k":"{}"}}]}}"#,
            "[{".repeat(300),
            "]}".repeat(300)
        );
        let want = if max_depth >= 3 {
            FrameKind::Single
        } else {
            FrameKind::ParseError
        };
        assert_eq!(decode(body.as_bytes(), max_depth, 256).kind, want);
    }
    // A million open brackets fail fast.
    let deep = "[".repeat(1_000_000);
    let t = std::time::Instant::now();
    let f = decode(deep.as_bytes(), 100, 256);
    assert_eq!(f.kind, FrameKind::ParseError);
    assert!(t.elapsed().as_secs() < 1);
    let deep = "{\"a\":[".repeat(500_000);
    assert_eq!(
        decode(deep.as_bytes(), 100, 256).kind,
        FrameKind::ParseError
    );
    // A higher limit is honoured beyond jiter's own default of 200.
    let body = format!("{}{}", "[".repeat(300), "]".repeat(300));
    assert_eq!(decode(body.as_bytes(), 300, 256).kind, FrameKind::Batch);
    assert_eq!(
        decode(body.as_bytes(), 299, 256).kind,
        FrameKind::ParseError
    );
}

#[test]
fn truncation_at_every_offset() {
    let bodies = [
        r#"{"jsonrpc":"2.0","id":"a\"b\u00e9","method":"tools/call","params":{"name":"add","arguments":{"a":1.5e3,"b":[true,false,null,-0]}}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":"\ud83d\ude00","result":{"x":"é"}}]"#,
    ];
    for body in bodies {
        let b = body.as_bytes();
        let full = decode(b, 100, 256);
        assert!(matches!(full.kind, FrameKind::Single | FrameKind::Batch));
        for cut in 0..b.len() {
            let f = decode(&b[..cut], 100, 256);
            assert_eq!(f.kind, FrameKind::ParseError, "cut at {cut}");
            assert!(f.error.is_some());
        }
    }
}

#[test]
fn spans_are_exact() {
    let body = r#"[ {"jsonrpc":"2.0","id":"x","method":"m","params":{"a":[1,2]}} , {"jsonrpc":"2.0","method":"n","params":[]} ]"#;
    let f = decode(body.as_bytes(), 100, 256);
    assert_eq!(f.kind, FrameKind::Batch);
    let b = body.as_bytes();
    assert_eq!(
        f.entries[0].span.of(b),
        br#"{"jsonrpc":"2.0","id":"x","method":"m","params":{"a":[1,2]}}"#
    );
    assert_eq!(f.entries[0].params.unwrap().of(b), br#"{"a":[1,2]}"#);
    assert_eq!(f.entries[1].kind, EntryKind::Notification);
    assert_eq!(f.entries[1].params.unwrap().of(b), b"[]");
}

#[test]
fn never_panics_on_junk() {
    // A cheap deterministic fuzz: every 1- and 2-byte body, and mutations of a request.
    for a in 0..=255u8 {
        let _ = decode(&[a], 100, 256);
        for b in 0..=255u8 {
            let _ = decode(&[a, b], 100, 256);
        }
    }
    let base = br#"{"jsonrpc":"2.0","id":[{"k":"v"}],"method":"m","params":{"a":[1,{"b":null}]}}"#;
    let mut seed: u32 = 12345;
    for _ in 0..20_000 {
        let mut v = base.to_vec();
        for _ in 0..3 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let pos = (seed as usize >> 8) % v.len();
            let byte = (seed >> 3) as u8;
            v[pos] = byte;
        }
        let f = decode(&v, 4, 2);
        for e in &f.entries {
            let _ = e.span.of(&v);
            let _ = e.method_str(&v);
        }
        // One grammar: with limits out of the way, decode accepts exactly what jiter does.
        let f = decode(&v, 100, 256);
        assert_eq!(
            f.kind == FrameKind::ParseError,
            !jiter_accepts(&v),
            "{:?}: {:?}",
            String::from_utf8_lossy(&v),
            f.error
        );
    }
}

fn jiter_accepts(body: &[u8]) -> bool {
    let mut jiter = Jiter::new(body);
    std::str::from_utf8(body).is_ok() && jiter.next_skip().is_ok() && jiter.finish().is_ok()
}

#[test]
fn grammar_matches_jiter_under_mutation() {
    // The scanner is hand-written; jiter is the reference for what is JSON. Bodies rich in
    // the tricky parts (escapes, surrogates, numbers, literals, whitespace, nesting) are
    // mutated by replacing, inserting and deleting bytes drawn from JSON's own alphabet.
    let bases: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","id":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","method":"m","params":{"x":[-0.5e+10,1E-2,0,-0,123,true,false,null]}}"#,
        br#" [ {"jsonrpc" : "2.0" , "id" : 9007199254740991 , "result" : { } } , [ ] , "s" , 1.0 ] "#,
        b"{\"a\":[[[[{\"b\":\"\\u12AB\\uDBFF\\uDFFF\"}]]]],\"c\":\"\xc3\xa9\xe2\x82\xac\"}",
        b"[1e400,-1.25E+300,0.0001,\"\\ud800x\",\"\\udc00\"]",
    ];
    let alphabet: &[u8] = b"{}[]:,\"\\/ \t\n\r0123456789-+.eEubfnrtlsaxDdcC\x00\x1f\x7f\xc3\xa9";
    let mut mutator = Mutator::new(0x1234_5678);
    for base in bases {
        assert!(
            jiter_accepts(base) || base.starts_with(b"[1e400"),
            "{:?}",
            String::from_utf8_lossy(base)
        );
        for _ in 0..30_000 {
            let v = mutator.mutated(base, 1, alphabet);
            let f = decode(&v, 100, 256);
            assert_eq!(
                f.kind == FrameKind::ParseError,
                !jiter_accepts(&v),
                "{:?}: {:?}",
                String::from_utf8_lossy(&v),
                f.error
            );
            if matches!(f.kind, FrameKind::Single | FrameKind::Batch) {
                same_spans_as_the_cursor(&v, &f);
            }
        }
    }
}

/// The lenient cursor, walking what the scan accepted, finds the same values.
fn same_spans_as_the_cursor(body: &[u8], f: &Frame) {
    let mut cur = Cursor::new(body);
    let spans: Vec<Span> = if f.kind == FrameKind::Batch {
        let mut spans = Vec::new();
        let mut more = cur.array_open().unwrap();
        while more {
            spans.push(cur.skip().unwrap());
            more = cur.array_next().unwrap();
        }
        spans
    } else {
        vec![cur.skip().unwrap()]
    };
    assert_eq!(cur.peek(), None);
    let want: Vec<Span> = f.entries.iter().map(|e| e.span).collect();
    assert_eq!(spans, want, "{:?}", String::from_utf8_lossy(body));
    for e in &f.entries {
        if let Some(params) = e.params {
            let mut cur = Cursor {
                data: body,
                pos: params.start,
            };
            assert_eq!(cur.skip(), Some(params));
        }
    }
}

#[test]
fn same_grammar_as_jiter() {
    let cases: &[&[u8]] = &[
        b"1",
        b"-0",
        b"1e400",
        b"1E+2",
        b"1e",
        b"-",
        b"0x1",
        b"1.e3",
        b"\"\\u00e9\"",
        b"\"\\ud83d\\ude00\"",
        b"\"\\ud83d\"",
        b"\"\\ude00\"",
        b"\"\\u12\"",
        b"\"\t\"",
        b"\"\x7f\"",
        b"[1,2",
        b"{\"a\":1,}",
        b"[1 2]",
        b"tru",
        b"true false",
        b" \n\r\t[]\n",
        b"\x0c[]",
        b"[]\x00",
    ];
    for body in cases {
        let f = decode(body, 100, 256);
        assert_eq!(
            f.kind == FrameKind::ParseError,
            !jiter_accepts(body),
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
    let long_int = format!("[{}]", "7".repeat(4300));
    assert_ne!(
        decode(long_int.as_bytes(), 100, 256).kind,
        FrameKind::ParseError
    );
    let too_long_int = format!("[{}]", "7".repeat(4301));
    assert_eq!(
        decode(too_long_int.as_bytes(), 100, 256).kind,
        FrameKind::ParseError
    );
    assert!(!jiter_accepts(too_long_int.as_bytes()));
}
