//! The validating scan: one pass over a JSON-RPC body that checks it is JSON (jiter's
//! grammar and limits) and classifies each message, iterative with an explicit depth limit,
//! so hostile nesting is refused at `max_depth` without recursion. In the same pass it
//! records the parts of a `params` object that planning a `tools/call` needs.

use jiter::JsonErrorType;

use crate::cursor::{plain_end, unescape, Cursor, Span};
use crate::frame::entry::{
    CallParts, Entry, EntryKind, Frame, FrameKind, Meta, META_CLIENT_CAPABILITIES, META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
};
use crate::id::{classify_number, IdClass};

/// The `_meta` keys every 2026-07-28 request carries, each with its quotes and colon as a
/// compact writer puts them: recognised by one compare instead of a scan.
const KNOWN_META_KEYS: [&[u8]; 3] = [
    b"\"io.modelcontextprotocol/protocolVersion\":",
    b"\"io.modelcontextprotocol/clientCapabilities\":",
    b"\"io.modelcontextprotocol/clientInfo\":",
];

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
