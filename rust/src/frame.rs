//! Framing: one pass over a JSON-RPC body that validates it as JSON and classifies each message.
//!
//! Pure Rust (no pyo3). The result holds byte spans into the body, never copies of it. The
//! scanner is iterative with an explicit depth limit, so hostile nesting is refused at
//! `max_depth` without recursion.

use std::borrow::Cow;

use jiter::{Jiter, JiterError, JiterErrorType, JsonErrorType, Peek};

use crate::id::{classify_number, IdClass};

/// Nesting allowed by default: the batch array counts as one level, an entry object as another.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// Entries allowed in one batch by default.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// What a whole body turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    Single = 1,
    Batch = 2,
    ParseError = 3,
    EmptyBatch = 4,
    BatchTooLarge = 5,
}

/// What one message of a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EntryKind {
    Request = 1,
    Notification = 2,
    Response = 3,
    Invalid = 4,
}

/// A half-open byte range `[start, end)` of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// The bytes of `body` this span covers (empty if it does not fit, which cannot happen for
    /// spans made by [`decode`] on the same body).
    #[inline]
    pub fn of<'b>(&self, body: &'b [u8]) -> &'b [u8] {
        body.get(self.start..self.end).unwrap_or_default()
    }
}

/// One message of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// The whole entry value.
    pub span: Span,
    pub id_class: IdClass,
    /// The id lexeme, when it can be echoed (a string or a safe integer, in an entry without
    /// duplicate members).
    pub id: Option<Span>,
    /// The `method` string lexeme (quotes included), when it is a string.
    pub method: Option<Span>,
    /// Whether that lexeme has escapes (it must be decoded, not just unquoted).
    pub method_escaped: bool,
    /// The `params` value, when present (whatever its type).
    pub params: Option<Span>,
    /// The `result` value, or the `error` value when `is_error`.
    pub result: Option<Span>,
    pub is_error: bool,
    /// Why the entry is invalid.
    pub reason: Option<&'static str>,
}

impl Entry {
    /// The decoded `method` string, borrowed from `body` unless it has escapes.
    pub fn method_str<'b>(&self, body: &'b [u8]) -> Option<Cow<'b, str>> {
        let lexeme = self.method?.of(body);
        if self.method_escaped {
            let mut jiter = Jiter::new(lexeme);
            jiter.next_str().ok().map(|s| Cow::Owned(s.to_owned()))
        } else {
            let inner = lexeme.get(1..lexeme.len().saturating_sub(1))?;
            std::str::from_utf8(inner).ok().map(Cow::Borrowed)
        }
    }

    fn invalid_value(span: Span) -> Entry {
        Entry {
            kind: EntryKind::Invalid,
            span,
            id_class: IdClass::Absent,
            id: None,
            method: None,
            method_escaped: false,
            params: None,
            result: None,
            is_error: false,
            reason: Some("request must be a JSON object"),
        }
    }
}

/// What [`decode`] found in one body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    pub entries: Vec<Entry>,
    pub error: Option<String>,
}

impl Frame {
    fn error(kind: FrameKind, message: String) -> Frame {
        Frame {
            kind,
            entries: Vec::new(),
            error: Some(message),
        }
    }
}

/// Frame one JSON-RPC body. Never panics; every problem is described by the result.
pub fn decode(body: &[u8], max_depth: usize, max_batch: usize) -> Frame {
    if let Err(e) = std::str::from_utf8(body) {
        return Frame::error(
            FrameKind::ParseError,
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        );
    }
    let mut scanner = Scanner {
        body,
        jiter: Jiter::new(body),
        max_depth,
        stack: Vec::new(),
    };
    match scanner.frame(max_batch) {
        Ok(frame) => frame,
        Err(e) => Frame::error(FrameKind::ParseError, e.message()),
    }
}

enum ScanError {
    Json(JiterError),
    TooDeep { limit: usize },
}

impl From<JiterError> for ScanError {
    #[inline]
    fn from(e: JiterError) -> Self {
        ScanError::Json(e)
    }
}

impl ScanError {
    fn message(&self) -> String {
        match self {
            ScanError::Json(e) => format!("invalid JSON at byte {}: {}", e.index, e.error_type),
            ScanError::TooDeep { limit } => format!("nesting depth exceeds {limit}"),
        }
    }
}

type Scan<T> = Result<T, ScanError>;

/// The members of a JSON-RPC message that matter; any other key is ignored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    Jsonrpc = 0,
    Id = 1,
    Method = 2,
    Params = 3,
    Result = 4,
    Error = 5,
    Other = 6,
}

impl Member {
    #[inline]
    fn of(key: Option<&str>) -> Option<Member> {
        key.map(|k| match k {
            "jsonrpc" => Member::Jsonrpc,
            "id" => Member::Id,
            "method" => Member::Method,
            "params" => Member::Params,
            "result" => Member::Result,
            "error" => Member::Error,
            _ => Member::Other,
        })
    }

    fn duplicate_reason(self) -> &'static str {
        match self {
            Member::Jsonrpc => "duplicate member \"jsonrpc\"",
            Member::Id => "duplicate member \"id\"",
            Member::Method => "duplicate member \"method\"",
            Member::Params => "duplicate member \"params\"",
            Member::Result => "duplicate member \"result\"",
            Member::Error => "duplicate member \"error\"",
            Member::Other => "duplicate member",
        }
    }
}

/// Up to this many nesting levels left, values are skipped with jiter's `known_skip` (which
/// refuses more than 200) and checked with [`nesting_exceeds`]; beyond, by hand.
const JITER_SKIP_LEVELS: usize = 150;

/// Whether the valid JSON `value` nests deeper than `levels` containers.
///
/// Fast path: a value cannot nest deeper than it has `[` and `{` bytes, strings included, and
/// counting them is a vectorized loop. Only a value with more brackets than `levels` gets the
/// exact, string-aware walk.
fn nesting_exceeds(value: &[u8], levels: usize) -> bool {
    if value.len() <= levels {
        return false;
    }
    let brackets = value.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if brackets <= levels {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = value.get(i) {
        match b {
            b'"' => {
                i += 1;
                while let Some(&c) = value.get(i) {
                    match c {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > levels {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

const IN_ARRAY: bool = false;
const IN_OBJECT: bool = true;

struct Scanner<'j> {
    body: &'j [u8],
    jiter: Jiter<'j>,
    max_depth: usize,
    /// Open containers of the value being skipped (reused between values).
    stack: Vec<bool>,
}

impl<'j> Scanner<'j> {
    /// A container is about to be opened at nesting level `depth` (1 for the outermost).
    #[inline]
    fn open(&self, depth: usize) -> Scan<()> {
        if depth > self.max_depth {
            Err(ScanError::TooDeep {
                limit: self.max_depth,
            })
        } else {
            Ok(())
        }
    }

    fn frame(&mut self, max_batch: usize) -> Scan<Frame> {
        let peek = self.jiter.peek()?;
        if peek == Peek::Array {
            self.open(1)?;
            // A guess from the size: a message rarely takes less than 48 bytes.
            let mut entries = Vec::with_capacity(max_batch.min(self.body.len() / 48 + 1));
            let mut count: usize = 0;
            let mut next = self.jiter.known_array()?;
            while let Some(peek) = next {
                count += 1;
                if count <= max_batch {
                    entries.push(self.element(peek, 1)?);
                } else {
                    // Over the limit: still validate the rest, but build nothing.
                    self.skip(peek, 1)?;
                }
                next = self.jiter.array_step()?;
            }
            self.jiter.finish()?;
            Ok(if count == 0 {
                Frame {
                    kind: FrameKind::EmptyBatch,
                    entries,
                    error: None,
                }
            } else if count > max_batch {
                Frame::error(
                    FrameKind::BatchTooLarge,
                    format!("batch of {count} entries exceeds the limit of {max_batch}"),
                )
            } else {
                Frame {
                    kind: FrameKind::Batch,
                    entries,
                    error: None,
                }
            })
        } else {
            let entry = self.element(peek, 0)?;
            self.jiter.finish()?;
            Ok(Frame {
                kind: FrameKind::Single,
                entries: vec![entry],
                error: None,
            })
        }
    }

    /// One message, nested in `depth` containers.
    fn element(&mut self, peek: Peek, depth: usize) -> Scan<Entry> {
        if peek == Peek::Object {
            self.entry(depth)
        } else {
            let start = self.jiter.current_index();
            self.skip(peek, depth)?;
            let end = self.jiter.current_index();
            Ok(Entry::invalid_value(Span { start, end }))
        }
    }

    /// Consume a value known to start here, returning its span.
    #[inline]
    fn value_span(&mut self, peek: Peek, depth: usize) -> Scan<Span> {
        let start = self.jiter.current_index();
        self.skip(peek, depth)?;
        Ok(Span {
            start,
            end: self.jiter.current_index(),
        })
    }

    /// An object message at `{`, nested in `depth` containers.
    fn entry(&mut self, depth: usize) -> Scan<Entry> {
        let start = self.jiter.current_index();
        let inner = depth + 1;
        self.open(inner)?;

        let mut seen: u8 = 0;
        let mut duplicate: Option<Member> = None;
        let mut jsonrpc_ok = false;
        let mut id_class = IdClass::Absent;
        let mut id: Option<Span> = None;
        let mut method: Option<Span> = None;
        let mut method_escaped = false;
        let mut method_bad = false;
        let mut params: Option<Span> = None;
        let mut params_bad = false;
        let mut result: Option<Span> = None;
        let mut error: Option<Span> = None;

        let mut member = Member::of(self.jiter.known_object()?);
        while let Some(m) = member {
            let peek = self.jiter.peek()?;
            if m != Member::Other {
                let bit = 1u8 << (m as u8);
                if seen & bit != 0 && duplicate.is_none() {
                    duplicate = Some(m);
                }
                seen |= bit;
            }
            match m {
                Member::Jsonrpc => {
                    if peek == Peek::String {
                        jsonrpc_ok = self.jiter.known_str()? == "2.0";
                    } else {
                        jsonrpc_ok = false;
                        self.skip(peek, inner)?;
                    }
                }
                Member::Id => {
                    let vstart = self.jiter.current_index();
                    id_class = match peek {
                        Peek::String => {
                            self.jiter.known_bytes()?;
                            IdClass::String
                        }
                        Peek::Null => {
                            self.jiter.known_null()?;
                            IdClass::Null
                        }
                        Peek::True | Peek::False => {
                            self.jiter.known_bool(peek)?;
                            IdClass::Other
                        }
                        Peek::Array | Peek::Object => {
                            self.skip(peek, inner)?;
                            IdClass::Other
                        }
                        _ => classify_number(self.jiter.known_number_bytes(peek)?),
                    };
                    id = Some(Span {
                        start: vstart,
                        end: self.jiter.current_index(),
                    });
                }
                Member::Method => {
                    if peek == Peek::String {
                        let vstart = self.jiter.current_index();
                        method_escaped = self.jiter.known_bytes()?.contains(&b'\\');
                        method = Some(Span {
                            start: vstart,
                            end: self.jiter.current_index(),
                        });
                        method_bad = false;
                    } else {
                        method = None;
                        method_bad = true;
                        self.skip(peek, inner)?;
                    }
                }
                Member::Params => {
                    params_bad = !(peek == Peek::Object || peek == Peek::Array);
                    params = Some(self.value_span(peek, inner)?);
                }
                Member::Result => result = Some(self.value_span(peek, inner)?),
                Member::Error => error = Some(self.value_span(peek, inner)?),
                Member::Other => self.skip(peek, inner)?,
            }
            member = Member::of(self.jiter.next_key()?);
        }
        let span = Span {
            start,
            end: self.jiter.current_index(),
        };

        let echo_id = if id_class.is_echoable() { id } else { None };
        let mut entry = Entry {
            kind: EntryKind::Invalid,
            span,
            id_class,
            id: echo_id,
            method,
            method_escaped,
            params,
            result: None,
            is_error: false,
            reason: None,
        };
        let reason: &'static str = if let Some(m) = duplicate {
            entry.id = None;
            m.duplicate_reason()
        } else if seen & (1 << Member::Jsonrpc as u8) == 0 {
            "missing \"jsonrpc\" member"
        } else if !jsonrpc_ok {
            "\"jsonrpc\" must be exactly \"2.0\""
        } else if method_bad {
            "\"method\" must be a string"
        } else if params_bad {
            "\"params\" must be an object or an array"
        } else if entry.method.is_some() {
            match id_class {
                IdClass::Absent => {
                    entry.kind = EntryKind::Notification;
                    return Ok(entry);
                }
                IdClass::String | IdClass::Int => {
                    entry.kind = EntryKind::Request;
                    return Ok(entry);
                }
                IdClass::Null => "\"id\" must be a string or an integer, not null",
                IdClass::UnsafeNumber => {
                    "\"id\" must be a string or an integer within +/-(2**53-1)"
                }
                IdClass::Other => "\"id\" must be a string or an integer",
            }
        } else {
            match (result, error) {
                (Some(_), Some(_)) => "response has both \"result\" and \"error\"",
                (None, None) => "missing \"method\" member",
                (r, e) => {
                    let is_error = e.is_some();
                    if id_class.is_echoable() || (is_error && id_class == IdClass::Null) {
                        entry.kind = EntryKind::Response;
                        entry.is_error = is_error;
                        entry.result = r.or(e);
                        return Ok(entry);
                    }
                    match id_class {
                        IdClass::Absent => "response has no \"id\" member",
                        IdClass::Null => "a result response must have a non-null \"id\"",
                        _ => "response \"id\" must be a string or an integer",
                    }
                }
            }
        };
        entry.reason = Some(reason);
        Ok(entry)
    }

    /// Consume (and validate) the value starting with `peek`, nested in `depth` containers.
    #[inline]
    fn skip(&mut self, peek: Peek, depth: usize) -> Scan<()> {
        let levels = self.max_depth.saturating_sub(depth);
        if levels > JITER_SKIP_LEVELS || !(peek == Peek::Array || peek == Peek::Object) {
            return self.skip_iterative(peek, depth);
        }
        // jiter's own skip is the fastest, but its nesting limit is fixed (about 200 levels):
        // anything it refuses for depth is over our limit too, and what it accepts is checked
        // against `levels` afterwards, cheaply.
        let start = self.jiter.current_index();
        match self.jiter.known_skip(peek) {
            Ok(()) => {}
            Err(e) => {
                // Report nesting over the limit before the error, as the iterative walk would.
                let before = self.body.get(start..e.index).unwrap_or_default();
                let too_deep = e.error_type
                    == JiterErrorType::JsonError(JsonErrorType::RecursionLimitExceeded)
                    || nesting_exceeds(before, levels);
                return Err(if too_deep {
                    self.too_deep()
                } else {
                    ScanError::Json(e)
                });
            }
        }
        let value = self.jiter.slice_to_current(start);
        if nesting_exceeds(value, levels) {
            Err(self.too_deep())
        } else {
            Ok(())
        }
    }

    fn too_deep(&self) -> ScanError {
        ScanError::TooDeep {
            limit: self.max_depth,
        }
    }

    /// [`Self::skip`] by hand: containers are tracked on `self.stack`, bounded by `max_depth`.
    fn skip_iterative(&mut self, mut peek: Peek, depth: usize) -> Scan<()> {
        self.stack.clear();
        loop {
            match peek {
                Peek::Array => {
                    self.open(depth + self.stack.len() + 1)?;
                    if let Some(first) = self.jiter.known_array()? {
                        self.stack.push(IN_ARRAY);
                        peek = first;
                        continue;
                    }
                }
                Peek::Object => {
                    self.open(depth + self.stack.len() + 1)?;
                    if self.jiter.next_object_bytes()?.is_some() {
                        self.stack.push(IN_OBJECT);
                        peek = self.jiter.peek()?;
                        continue;
                    }
                }
                Peek::String => {
                    self.jiter.known_bytes()?;
                }
                Peek::Null => self.jiter.known_null()?,
                Peek::True | Peek::False => {
                    self.jiter.known_bool(peek)?;
                }
                _ => {
                    self.jiter.known_number_bytes(peek)?;
                }
            }
            // The value is done: step the innermost open container.
            peek = loop {
                match self.stack.last() {
                    None => return Ok(()),
                    Some(&IN_ARRAY) => {
                        if let Some(next) = self.jiter.array_step()? {
                            break next;
                        }
                    }
                    Some(_) => {
                        if self.jiter.next_key_bytes()?.is_some() {
                            break self.jiter.peek()?;
                        }
                    }
                }
                self.stack.pop();
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let base =
            br#"{"jsonrpc":"2.0","id":[{"k":"v"}],"method":"m","params":{"a":[1,{"b":null}]}}"#;
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
}
