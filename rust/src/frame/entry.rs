//! What framing gives: the [`Frame`] of a body and the [`Entry`] of each of its messages,
//! as byte spans into the body, with the parts of a `tools/call`'s `params` the scan
//! recorded on the way ([`CallParts`], [`Meta`]).

use std::borrow::Cow;

use crate::cursor::{unescape, Span};
use crate::id::IdClass;

/// What a whole body turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// One JSON object (or one non-array value, which is an invalid entry).
    Single = 1,
    /// A non-empty JSON array of at most `max_batch` entries.
    Batch = 2,
    /// Not UTF-8, not JSON, or nested past `max_depth`: answered with -32700.
    ParseError = 3,
    /// `[]`: answered with one -32600.
    EmptyBatch = 4,
    /// An array of more than `max_batch` entries (all validated, none kept): one -32600.
    BatchTooLarge = 5,
}

/// What one message of a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EntryKind {
    /// A method and an id that can be echoed (a string or a safe integer).
    Request = 1,
    /// A method and no `id` member.
    Notification = 2,
    /// `result` or `error` and no method, with an id that can be echoed (or a null one,
    /// for an error).
    Response = 3,
    /// Anything else: answered with -32600 for this entry alone (`reason` says why).
    Invalid = 4,
}

/// One message of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What the message is.
    pub kind: EntryKind,
    /// The whole entry value.
    pub span: Span,
    /// How the `id` member was written (absent included).
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
    /// Whether a response carries `error` rather than `result`.
    pub is_error: bool,
    /// Why the entry is invalid.
    pub reason: Option<&'static str>,
    /// What `params` holds when it has the shape of a plannable `tools/call` (whatever the
    /// method: planning checks that), recorded by the validating scan.
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
    /// The whole `_meta` object.
    pub span: Span,
    /// Whether a key is written with escapes (it could spell any name).
    pub escaped_key: bool,
    /// How many protocol version members there are (saturating at 255).
    pub versions: u8,
    /// The last protocol version member's value.
    pub version: Option<Span>,
    /// How many client capabilities members there are (saturating at 255).
    pub capabilities: u8,
    /// Whether every client capabilities member is an object.
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

/// The `_meta` key of a 2026-07-28 request's protocol version.
pub const META_PROTOCOL_VERSION: &[u8] = b"io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a 2026-07-28 request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &[u8] = b"io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of a 2026-07-28 request's log level.
pub const META_LOG_LEVEL: &[u8] = b"io.modelcontextprotocol/logLevel";
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

    /// A message that is not a JSON object (its whole value is `span`).
    pub(super) fn invalid_value(span: Span) -> Entry {
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

/// What framing found in one body (`decode` makes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// What the whole body is.
    pub kind: FrameKind,
    /// Its messages in order: one for `Single`, each for `Batch`, none otherwise.
    pub entries: Vec<Entry>,
    /// What went wrong, for `ParseError` and `BatchTooLarge`.
    pub error: Option<String>,
}

impl Frame {
    /// A body that gives no entries: `kind` says why, `message` says what went wrong.
    pub(super) fn error(kind: FrameKind, message: String) -> Frame {
        Frame {
            kind,
            entries: Vec::new(),
            error: Some(message),
        }
    }
}
