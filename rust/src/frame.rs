//! Framing: one pass over a JSON-RPC body that validates it as JSON and classifies each message.
//!
//! Pure Rust (no pyo3). The result holds byte spans into the body, never copies of it. The
//! scanner is iterative with an explicit depth limit, so hostile nesting is refused at
//! `max_depth` without recursion. In the same pass it records the parts of a `params` object
//! that planning a `tools/call` needs ([`CallParts`]: `name`, `arguments`, what `_meta` holds).

use std::borrow::Cow;

use jiter::JsonErrorType;

pub use crate::cursor::Span;
use crate::cursor::{plain_end, unescape, Cursor};
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
    /// What `params` holds when it has the shape of a plannable `tools/call` (whatever the
    /// method: [`crate::plan::read_call`] checks that), recorded by the validating scan.
    pub call: Option<CallParts>,
}

/// The parts of a `params` object that holds exactly `name` (a string without escapes),
/// `arguments` (an object) and, optionally, `_meta` (an object), its keys written without
/// escapes and none repeated: the shape of a `tools/call` the extension may plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallParts {
    /// The tool name's bytes (the string's content).
    pub name: Span,
    /// The `arguments` object.
    pub arguments: Span,
    /// The `_meta` object, when present.
    pub meta: Option<Meta>,
}

/// What a call's `_meta` object holds, as far as planning cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub span: Span,
    /// Whether a key is written with escapes (it could spell any name).
    pub escaped_key: bool,
    /// How many protocol version members there are, and the last one's value.
    pub versions: u8,
    pub version: Option<Span>,
    /// How many client capabilities members there are, and whether each is an object.
    pub capabilities: u8,
    pub capabilities_objects: bool,
    /// The last log level member's value (the one a built dict keeps).
    pub log_level: Option<Span>,
}

impl Meta {
    /// Nothing read yet of the object that starts at `start`.
    pub fn empty(start: usize) -> Meta {
        Meta {
            span: Span { start, end: start },
            escaped_key: false,
            versions: 0,
            version: None,
            capabilities: 0,
            capabilities_objects: true,
            log_level: None,
        }
    }
}

/// The `_meta` keys of a 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &[u8] = b"io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &[u8] = b"io.modelcontextprotocol/clientCapabilities";
pub const META_LOG_LEVEL: &[u8] = b"io.modelcontextprotocol/logLevel";

/// The `_meta` keys every 2026-07-28 request carries, each with its quotes and colon as a
/// compact writer puts them: recognised by one compare instead of a scan.
const KNOWN_META_KEYS: [&[u8]; 3] = [
    b"\"io.modelcontextprotocol/protocolVersion\":",
    b"\"io.modelcontextprotocol/clientCapabilities\":",
    b"\"io.modelcontextprotocol/clientInfo\":",
];

impl Entry {
    /// The decoded `method` string, borrowed from `body` unless it has escapes.
    pub fn method_str<'b>(&self, body: &'b [u8]) -> Option<Cow<'b, str>> {
        let lexeme = self.method?.of(body);
        let inner = lexeme.get(1..lexeme.len().saturating_sub(1))?;
        if self.method_escaped {
            let mut text = Vec::with_capacity(inner.len());
            unescape(inner, &mut text)?;
            String::from_utf8(text).ok().map(Cow::Owned)
        } else {
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
            call: None,
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
        cur: Cursor::new(body),
        max_depth,
        stack: Vec::new(),
    };
    match scanner.frame(max_batch) {
        Ok(frame) => frame,
        Err(e) => Frame::error(FrameKind::ParseError, e.message()),
    }
}

enum ScanError {
    /// Not JSON: what was wrong (jiter's error kinds and wording) and where.
    Syntax {
        kind: JsonErrorType,
        index: usize,
    },
    TooDeep {
        limit: usize,
    },
}

impl ScanError {
    fn message(&self) -> String {
        match self {
            ScanError::Syntax { kind, index } => format!("invalid JSON at byte {index}: {kind}"),
            ScanError::TooDeep { limit } => format!("nesting depth exceeds {limit}"),
        }
    }
}

type Scan<T> = Result<T, ScanError>;

#[cold]
fn syntax<T>(kind: JsonErrorType, index: usize) -> Scan<T> {
    Err(ScanError::Syntax { kind, index })
}

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
    fn of(key: &[u8]) -> Member {
        match key {
            b"jsonrpc" => Member::Jsonrpc,
            b"id" => Member::Id,
            b"method" => Member::Method,
            b"params" => Member::Params,
            b"result" => Member::Result,
            b"error" => Member::Error,
            _ => Member::Other,
        }
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

/// The longest integer part a number may have (jiter's limit, and Python's for int(str)).
const MAX_INT_DIGITS: usize = 4300;

const IN_ARRAY: bool = false;
const IN_OBJECT: bool = true;

/// A hand-written single-pass validator over the body (the grammar is jiter's: RFC 8259 JSON
/// with jiter's limits, which the tests check against jiter itself).
struct Scanner<'b> {
    cur: Cursor<'b>,
    max_depth: usize,
    /// Open containers of the value being skipped (reused between values).
    stack: Vec<bool>,
}

impl<'b> Scanner<'b> {
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

    /// The rest must be whitespace.
    fn finish(&mut self) -> Scan<()> {
        match self.cur.peek() {
            None => Ok(()),
            Some(_) => syntax(JsonErrorType::TrailingCharacters, self.cur.pos),
        }
    }

    /// A string at `"`: returns the span of its content (quotes excluded) and whether it has
    /// escapes. Validates escapes and refuses control characters, as jiter does.
    #[inline]
    fn string(&mut self) -> Scan<(Span, bool)> {
        let body = self.cur.data;
        let start = self.cur.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i = plain_end(body, i);
            match body.get(i) {
                Some(b'"') => {
                    self.cur.pos = i + 1;
                    return Ok((Span { start, end: i }, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    i = self.escape(i + 1)?;
                }
                Some(&c) if c < 0x20 => {
                    return syntax(JsonErrorType::ControlCharacterWhileParsingString, i)
                }
                Some(_) => i += 1,
                None => return syntax(JsonErrorType::EofWhileParsingString, i),
            }
        }
    }

    /// The escape whose letter is at `i` (just after a backslash); returns the index after it.
    #[cold]
    fn escape(&self, i: usize) -> Scan<usize> {
        let body = self.cur.data;
        match body.get(i) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 1),
            Some(b'u') => {
                let (n, after) = self.hex4(i)?;
                match n {
                    0xDC00..=0xDFFF => {
                        syntax(JsonErrorType::LoneLeadingSurrogateInHexEscape, after - 1)
                    }
                    0xD800..=0xDBFF => match body.get(after..after + 2) {
                        Some(b"\\u") => {
                            let (low, end) = self.hex4(after + 1)?;
                            if (0xDC00..=0xDFFF).contains(&low) {
                                Ok(end)
                            } else {
                                syntax(JsonErrorType::LoneLeadingSurrogateInHexEscape, end - 1)
                            }
                        }
                        Some(s) if s.starts_with(b"\\") => {
                            syntax(JsonErrorType::UnexpectedEndOfHexEscape, after + 1)
                        }
                        Some(_) => syntax(JsonErrorType::UnexpectedEndOfHexEscape, after),
                        None => match body.get(after) {
                            Some(b'\\') | None => {
                                syntax(JsonErrorType::EofWhileParsingString, body.len())
                            }
                            Some(_) => syntax(JsonErrorType::UnexpectedEndOfHexEscape, after),
                        },
                    },
                    _ => Ok(after),
                }
            }
            Some(_) => syntax(JsonErrorType::InvalidEscape, i),
            None => syntax(JsonErrorType::EofWhileParsingString, i),
        }
    }

    /// The 4 hex digits after the `u` at `u`: their value and the index after them.
    fn hex4(&self, u: usize) -> Scan<(u32, usize)> {
        let Some(digits) = self.cur.data.get(u + 1..u + 5) else {
            return syntax(JsonErrorType::EofWhileParsingString, self.cur.data.len());
        };
        let mut n = 0u32;
        for (k, &d) in digits.iter().enumerate() {
            let Some(v) = (d as char).to_digit(16) else {
                return syntax(JsonErrorType::InvalidEscape, u + 1 + k);
            };
            n = (n << 4) | v;
        }
        Ok((n, u + 5))
    }

    /// A number at `-` or a digit: returns its span.
    #[inline]
    fn number(&mut self) -> Scan<Span> {
        let body = self.cur.data;
        let start = self.cur.pos;
        let mut i = start;
        if body.get(i) == Some(&b'-') {
            i += 1;
        }
        match body.get(i) {
            Some(b'0') => {
                i += 1;
                // A leading zero is the whole integer part.
                if let Some(b'0'..=b'9') = body.get(i) {
                    return syntax(JsonErrorType::InvalidNumber, i);
                }
            }
            Some(b'1'..=b'9') => {
                let digits = i;
                i += 1;
                while let Some(b'0'..=b'9') = body.get(i) {
                    i += 1;
                }
                if i - digits > MAX_INT_DIGITS {
                    return syntax(JsonErrorType::NumberOutOfRange, digits + MAX_INT_DIGITS + 1);
                }
            }
            Some(_) => return syntax(JsonErrorType::InvalidNumber, i),
            None => return syntax(JsonErrorType::EofWhileParsingValue, i),
        }
        if body.get(i) == Some(&b'.') {
            i += 1;
            match body.get(i) {
                Some(b'0'..=b'9') => i += 1,
                Some(_) => return syntax(JsonErrorType::InvalidNumber, i),
                None => return syntax(JsonErrorType::EofWhileParsingValue, i),
            }
            while let Some(b'0'..=b'9') = body.get(i) {
                i += 1;
            }
        }
        if let Some(b'e' | b'E') = body.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = body.get(i) {
                i += 1;
            }
            match body.get(i) {
                Some(b'0'..=b'9') => i += 1,
                Some(_) => return syntax(JsonErrorType::InvalidNumber, i),
                None => return syntax(JsonErrorType::EofWhileParsingValue, i),
            }
            while let Some(b'0'..=b'9') = body.get(i) {
                i += 1;
            }
        }
        self.cur.pos = i;
        Ok(Span { start, end: i })
    }

    /// `true`, `false` or `null` at its first letter.
    fn literal(&mut self, word: &'static [u8]) -> Scan<()> {
        let end = self.cur.pos + word.len();
        match self.cur.data.get(self.cur.pos..end) {
            Some(w) if w == word => {
                self.cur.pos = end;
                Ok(())
            }
            _ => {
                // Find where it went wrong, as jiter reports it.
                for (k, &want) in word.iter().enumerate() {
                    match self.cur.data.get(self.cur.pos + k) {
                        Some(&got) if got == want => {}
                        Some(_) => {
                            return syntax(JsonErrorType::ExpectedSomeIdent, self.cur.pos + k)
                        }
                        None => {
                            return syntax(JsonErrorType::EofWhileParsingValue, self.cur.pos + k)
                        }
                    }
                }
                syntax(JsonErrorType::ExpectedSomeIdent, self.cur.pos)
            }
        }
    }

    /// After a value inside an array: `,` (true: another value follows) or `]` (false).
    #[inline]
    fn array_step(&mut self) -> Scan<bool> {
        match self.cur.peek() {
            Some(b',') => {
                self.cur.pos += 1;
                match self.cur.peek() {
                    Some(b']') => syntax(JsonErrorType::TrailingComma, self.cur.pos),
                    Some(_) => Ok(true),
                    None => syntax(JsonErrorType::EofWhileParsingValue, self.cur.pos),
                }
            }
            Some(b']') => {
                self.cur.pos += 1;
                Ok(false)
            }
            Some(_) => syntax(JsonErrorType::ExpectedListCommaOrEnd, self.cur.pos),
            None => syntax(JsonErrorType::EofWhileParsingList, self.cur.pos),
        }
    }

    /// After `{`: the first key (its span and whether it has escapes), or None for `{}`.
    #[inline]
    fn object_first(&mut self) -> Scan<Option<(Span, bool)>> {
        self.first_member(Self::key)
    }

    /// At `{`: `read_key` at the first `"`, or None for `{}`.
    #[inline]
    fn first_member<T>(&mut self, read_key: impl FnOnce(&mut Self) -> Scan<T>) -> Scan<Option<T>> {
        self.cur.pos += 1; // '{'
        match self.cur.peek() {
            Some(b'}') => {
                self.cur.pos += 1;
                Ok(None)
            }
            Some(b'"') => read_key(self).map(Some),
            Some(_) => syntax(JsonErrorType::KeyMustBeAString, self.cur.pos),
            None => syntax(JsonErrorType::EofWhileParsingObject, self.cur.pos),
        }
    }

    /// After a member's value: the next key, or None at `}`.
    #[inline]
    fn object_step(&mut self) -> Scan<Option<(Span, bool)>> {
        self.next_member(Self::key)
    }

    /// After a member's value: `read_key` at the next `"`, or None at `}`.
    #[inline]
    fn next_member<T>(&mut self, read_key: impl FnOnce(&mut Self) -> Scan<T>) -> Scan<Option<T>> {
        match self.cur.peek() {
            Some(b',') => {
                self.cur.pos += 1;
                match self.cur.peek() {
                    Some(b'"') => read_key(self).map(Some),
                    Some(b'}') => syntax(JsonErrorType::TrailingComma, self.cur.pos),
                    Some(_) => syntax(JsonErrorType::KeyMustBeAString, self.cur.pos),
                    None => syntax(JsonErrorType::EofWhileParsingValue, self.cur.pos),
                }
            }
            Some(b'}') => {
                self.cur.pos += 1;
                Ok(None)
            }
            Some(_) => syntax(JsonErrorType::ExpectedObjectCommaOrEnd, self.cur.pos),
            None => syntax(JsonErrorType::EofWhileParsingObject, self.cur.pos),
        }
    }

    /// A key at `"` and the colon after it.
    #[inline]
    fn key(&mut self) -> Scan<(Span, bool)> {
        let key = self.string()?;
        match self.cur.peek() {
            Some(b':') => {
                self.cur.pos += 1;
                Ok(key)
            }
            Some(_) => syntax(JsonErrorType::ExpectedColon, self.cur.pos),
            None => syntax(JsonErrorType::EofWhileParsingObject, self.cur.pos),
        }
    }

    /// A key at `"` (and its colon) in a message object: the member it names. Compact
    /// `"jsonrpc":`-style keys are recognized by a byte compare; anything else goes through
    /// [`Self::key`] (the same result, the long way).
    #[inline]
    fn member_key(&mut self) -> Scan<Member> {
        let rest = self.cur.data.get(self.cur.pos..).unwrap_or_default();
        let known = match rest.get(1) {
            Some(b'j') if rest.starts_with(b"\"jsonrpc\":") => Some((Member::Jsonrpc, 10)),
            Some(b'i') if rest.starts_with(b"\"id\":") => Some((Member::Id, 5)),
            Some(b'm') if rest.starts_with(b"\"method\":") => Some((Member::Method, 9)),
            Some(b'p') if rest.starts_with(b"\"params\":") => Some((Member::Params, 9)),
            Some(b'r') if rest.starts_with(b"\"result\":") => Some((Member::Result, 9)),
            Some(b'e') if rest.starts_with(b"\"error\":") => Some((Member::Error, 8)),
            _ => None,
        };
        if let Some((member, len)) = known {
            self.cur.pos += len;
            return Ok(member);
        }
        let key = self.key()?;
        Ok(self.member(key))
    }

    /// [`Self::object_first`] for a message object: the first member, or None for `{}`.
    #[inline]
    fn entry_first(&mut self) -> Scan<Option<Member>> {
        self.first_member(Self::member_key)
    }

    /// A key of `_meta` at `"` (and its colon): one of [`KNOWN_META_KEYS`] written
    /// compactly is recognised by a byte compare; anything else goes through [`Self::key`].
    #[inline]
    fn meta_key(&mut self) -> Scan<(Span, bool)> {
        let rest = self.cur.data.get(self.cur.pos..).unwrap_or_default();
        if let Some(key) = KNOWN_META_KEYS.into_iter().find(|k| rest.starts_with(k)) {
            let start = self.cur.pos + 1;
            self.cur.pos += key.len();
            return Ok((
                Span {
                    start,
                    end: start + key.len() - 3,
                },
                false,
            ));
        }
        self.key()
    }

    /// A `params` object at `{`, nested in `depth` containers, validated; its parts when it
    /// has the shape of a plannable `tools/call` ([`CallParts`]).
    fn params(&mut self, depth: usize) -> Scan<Option<CallParts>> {
        let level = depth + 1;
        self.open(level)?;
        let mut name: Option<Span> = None;
        let mut arguments: Option<Span> = None;
        let mut meta: Option<Meta> = None;
        let mut shaped = true;
        let mut key = self.object_first()?;
        while let Some((k, escaped)) = key {
            let first = self.value_start()?;
            let data = self.cur.data;
            let known = if shaped && !escaped { k.of(data) } else { b"" };
            match known {
                b"name" if name.is_none() && first == b'"' => {
                    let (content, escaped) = self.string()?;
                    name = Some(content);
                    shaped = !escaped;
                }
                b"arguments" if arguments.is_none() && first == b'{' => {
                    arguments = Some(self.value_span(first, level)?);
                }
                b"_meta" if meta.is_none() && first == b'{' => meta = Some(self.meta(level)?),
                _ => {
                    // Another member, a repeated one, or one of another type.
                    shaped = false;
                    self.skip(first, level)?;
                }
            }
            key = self.object_step()?;
        }
        Ok(match (shaped, name, arguments) {
            (true, Some(name), Some(arguments)) => Some(CallParts {
                name,
                arguments,
                meta,
            }),
            _ => None,
        })
    }

    /// A `_meta` object at `{`, nested in `depth` containers, validated and read.
    fn meta(&mut self, depth: usize) -> Scan<Meta> {
        let level = depth + 1;
        self.open(level)?;
        let mut meta = Meta::empty(self.cur.pos);
        let mut key = self.first_member(Self::meta_key)?;
        while let Some((k, escaped)) = key {
            meta.escaped_key |= escaped;
            let first = self.value_start()?;
            let value = self.value_span(first, level)?;
            match k.of(self.cur.data) {
                META_PROTOCOL_VERSION => {
                    meta.versions = meta.versions.saturating_add(1);
                    meta.version = Some(value);
                }
                META_CLIENT_CAPABILITIES => {
                    meta.capabilities = meta.capabilities.saturating_add(1);
                    meta.capabilities_objects &= first == b'{';
                }
                META_LOG_LEVEL => meta.log_level = Some(value),
                _ => {}
            }
            key = self.next_member(Self::meta_key)?;
        }
        meta.span.end = self.cur.pos;
        Ok(meta)
    }

    /// [`Self::object_step`] for a message object: the next member, or None at `}`.
    #[inline]
    fn entry_step(&mut self) -> Scan<Option<Member>> {
        self.next_member(Self::member_key)
    }

    /// The next value must start here (after whitespace): its first byte.
    #[inline]
    fn value_start(&mut self) -> Scan<u8> {
        match self.cur.peek() {
            Some(b) => Ok(b),
            None => syntax(JsonErrorType::EofWhileParsingValue, self.cur.pos),
        }
    }

    fn frame(&mut self, max_batch: usize) -> Scan<Frame> {
        let first = self.value_start()?;
        if first == b'[' {
            self.open(1)?;
            self.cur.pos += 1;
            // A guess from the size: a message rarely takes less than 48 bytes.
            let mut entries = Vec::with_capacity(max_batch.min(self.cur.data.len() / 48 + 1));
            let mut count: usize = 0;
            let mut more = match self.cur.peek() {
                Some(b']') => {
                    self.cur.pos += 1;
                    false
                }
                Some(_) => true,
                None => return syntax(JsonErrorType::EofWhileParsingList, self.cur.pos),
            };
            while more {
                let first = self.value_start()?;
                count += 1;
                if count <= max_batch {
                    entries.push(self.element(first, 1)?);
                } else {
                    // Over the limit: still validate the rest, but build nothing.
                    self.skip(first, 1)?;
                }
                more = self.array_step()?;
            }
            self.finish()?;
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
            let entry = self.element(first, 0)?;
            self.finish()?;
            Ok(Frame {
                kind: FrameKind::Single,
                entries: vec![entry],
                error: None,
            })
        }
    }

    /// One message starting with `first`, nested in `depth` containers.
    fn element(&mut self, first: u8, depth: usize) -> Scan<Entry> {
        if first == b'{' {
            self.entry(depth)
        } else {
            let start = self.cur.pos;
            self.skip(first, depth)?;
            Ok(Entry::invalid_value(Span {
                start,
                end: self.cur.pos,
            }))
        }
    }

    /// Consume a value starting here with `first`, returning its span.
    #[inline]
    fn value_span(&mut self, first: u8, depth: usize) -> Scan<Span> {
        let start = self.cur.pos;
        self.skip(first, depth)?;
        Ok(Span {
            start,
            end: self.cur.pos,
        })
    }

    /// The decoded text of a string lexeme with escapes (rare: keys and `jsonrpc` values).
    #[cold]
    fn unescape(&self, span: Span) -> Option<String> {
        let mut text = Vec::with_capacity(span.end - span.start);
        unescape(span.of(self.cur.data), &mut text)?;
        String::from_utf8(text).ok()
    }

    /// The member a key names (escapes decoded, so `"jsonr\u0070c"` is `jsonrpc`).
    #[inline]
    fn member(&self, key: (Span, bool)) -> Member {
        let (span, escaped) = key;
        if escaped {
            self.unescape(span)
                .map_or(Member::Other, |k| Member::of(k.as_bytes()))
        } else {
            Member::of(span.of(self.cur.data))
        }
    }

    /// An object message at `{`, nested in `depth` containers.
    fn entry(&mut self, depth: usize) -> Scan<Entry> {
        let start = self.cur.pos;
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
        let mut call: Option<CallParts> = None;
        let mut result: Option<Span> = None;
        let mut error: Option<Span> = None;

        let mut member = self.entry_first()?;
        while let Some(m) = member {
            let first = self.value_start()?;
            if m != Member::Other {
                let bit = 1u8 << (m as u8);
                if seen & bit != 0 && duplicate.is_none() {
                    duplicate = Some(m);
                }
                seen |= bit;
            }
            match m {
                Member::Jsonrpc => {
                    if self.cur.data.get(self.cur.pos..self.cur.pos + 5) == Some(b"\"2.0\"") {
                        self.cur.pos += 5;
                        jsonrpc_ok = true;
                    } else if first == b'"' {
                        let (span, escaped) = self.string()?;
                        jsonrpc_ok = if escaped {
                            self.unescape(span).as_deref() == Some("2.0")
                        } else {
                            span.of(self.cur.data) == b"2.0"
                        };
                    } else {
                        jsonrpc_ok = false;
                        self.skip(first, inner)?;
                    }
                }
                Member::Id => {
                    let vstart = self.cur.pos;
                    id_class = match first {
                        b'"' => {
                            self.string()?;
                            IdClass::String
                        }
                        b'n' => {
                            self.literal(b"null")?;
                            IdClass::Null
                        }
                        b'-' | b'0'..=b'9' => classify_number(self.number()?.of(self.cur.data)),
                        _ => {
                            self.skip(first, inner)?;
                            IdClass::Other
                        }
                    };
                    id = Some(Span {
                        start: vstart,
                        end: self.cur.pos,
                    });
                }
                Member::Method => {
                    if first == b'"' {
                        let vstart = self.cur.pos;
                        method_escaped = self.string()?.1;
                        method = Some(Span {
                            start: vstart,
                            end: self.cur.pos,
                        });
                        method_bad = false;
                    } else {
                        method = None;
                        method_bad = true;
                        self.skip(first, inner)?;
                    }
                }
                Member::Params => {
                    params_bad = !(first == b'{' || first == b'[');
                    let vstart = self.cur.pos;
                    call = if first == b'{' {
                        self.params(inner)?
                    } else {
                        self.skip(first, inner)?;
                        None
                    };
                    params = Some(Span {
                        start: vstart,
                        end: self.cur.pos,
                    });
                }
                Member::Result => result = Some(self.value_span(first, inner)?),
                Member::Error => error = Some(self.value_span(first, inner)?),
                Member::Other => self.skip(first, inner)?,
            }
            member = self.entry_step()?;
        }
        let span = Span {
            start,
            end: self.cur.pos,
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
            call,
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

    /// Consume (and validate) the value starting here with `first`, nested in `depth`
    /// containers; containers are tracked on `self.stack`, bounded by `max_depth`.
    fn skip(&mut self, mut first: u8, depth: usize) -> Scan<()> {
        self.stack.clear();
        loop {
            match first {
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => {
                    self.number()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'[' => {
                    self.open(depth + self.stack.len() + 1)?;
                    self.cur.pos += 1;
                    match self.cur.peek() {
                        Some(b']') => self.cur.pos += 1,
                        Some(b) => {
                            self.stack.push(IN_ARRAY);
                            first = b;
                            continue;
                        }
                        None => return syntax(JsonErrorType::EofWhileParsingList, self.cur.pos),
                    }
                }
                b'{' => {
                    self.open(depth + self.stack.len() + 1)?;
                    if self.object_first()?.is_some() {
                        self.stack.push(IN_OBJECT);
                        first = self.value_start()?;
                        continue;
                    }
                }
                _ => return syntax(JsonErrorType::ExpectedSomeValue, self.cur.pos),
            }
            // The value is done: step the innermost open container.
            first = loop {
                match self.stack.last() {
                    None => return Ok(()),
                    Some(&IN_ARRAY) => {
                        if self.array_step()? {
                            break self.value_start()?;
                        }
                    }
                    Some(_) => {
                        if self.object_step()?.is_some() {
                            break self.value_start()?;
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
    use crate::mutate::Mutator;
    use jiter::Jiter;

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
        let alphabet: &[u8] =
            b"{}[]:,\"\\/ \t\n\r0123456789-+.eEubfnrtlsaxDdcC\x00\x1f\x7f\xc3\xa9";
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
}
