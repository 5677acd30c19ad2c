//! HTTP/1.1 message framing, sans-IO: bytes in, requests (or responses) out; replies in,
//! bytes out. Nothing here owns a socket, a clock or a thread, so every framing rule is a
//! unit test and the machine can be fed one byte at a time.
//!
//! * [`server::ServerConnection`]: a server's side of one connection. It yields complete
//!   requests in order (head parsed by `httparse`, body decoded from Content-Length or
//!   chunked framing), refuses bad framing with a final [`Refusal`] (RFC 9112), and writes
//!   responses ([`response`]) with Content-Length, chunked, or close-delimited bodies.
//! * [`client::ClientConnection`]: a client's side: request bytes out, responses in, whole or
//!   streamed as their body arrives.
//!
//! Every limit is a field of [`Limits`], each with a safe default.

pub mod chunked;
pub mod client;
pub mod fields;
pub mod response;
mod scan;
pub mod server;

pub use fields::Fields;

/// The bounds a connection holds its peer to. Each is checked before the bytes it bounds are
/// kept, so a connection never buffers more than these allow (see [`server::ServerConnection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest line of a head (the request or status line, one header field line, one
    /// trailer line), without its line ending. Over it: 431.
    pub max_line: usize,
    /// The longest head (request line, header fields and the blank line ending them, with any
    /// empty lines before the request line). Over it: 431.
    pub max_head: usize,
    /// The most header fields in a head, and the most trailer fields. Over it: 431.
    pub max_headers: usize,
    /// The largest body (after chunked decoding). A declared Content-Length over it is
    /// refused before any of the body is read; a chunk that would pass it, before its data.
    /// Over it: 413.
    pub max_body: u64,
    /// The longest chunk-size line (the size and its extensions, without the line ending).
    /// Over it: 400.
    pub max_chunk_line: usize,
    /// The longest trailer section (its lines and the blank line ending it). Over it: 431.
    pub max_trailers: usize,
    /// How many bytes of pipelined input a server connection holds while the response to an
    /// earlier request is being written: past it, the caller should stop reading
    /// ([`server::ServerConnection::wants_pause`]).
    pub max_buffer: usize,
}

/// The most header fields [`Limits::max_headers`] can allow (a fixed array on the stack holds
/// them while `httparse` reads a head).
pub const MAX_HEADERS_CAP: usize = 256;
/// The largest [`Limits::max_head`] and [`Limits::max_line`] can be (1 GiB).
pub const MAX_HEAD_CAP: usize = 1 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line: 8 * 1024,
            max_head: 32 * 1024,
            max_headers: 100,
            max_body: 4 * 1024 * 1024,
            max_chunk_line: 1024,
            max_trailers: 8 * 1024,
            max_buffer: 256 * 1024,
        }
    }
}

impl Limits {
    /// The same limits with `max_headers` capped at [`MAX_HEADERS_CAP`], heads and lines at
    /// [`MAX_HEAD_CAP`] (field positions are 32-bit), and every size at least 1, so no
    /// setting can make a connection unusable or unbounded.
    pub fn normalized(mut self) -> Self {
        self.max_headers = self.max_headers.clamp(1, MAX_HEADERS_CAP);
        self.max_line = self.max_line.clamp(1, MAX_HEAD_CAP);
        self.max_head = self.max_head.clamp(1, MAX_HEAD_CAP);
        self.max_chunk_line = self.max_chunk_line.max(1);
        self.max_trailers = self.max_trailers.max(1);
        self.max_buffer = self.max_buffer.max(1);
        self
    }
}

/// HTTP/1.0 or HTTP/1.1, the only versions `httparse` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Version {
    /// `HTTP/1.0`: no keep-alive unless asked, no chunked framing.
    Http10 = 0,
    /// `HTTP/1.1`.
    Http11 = 1,
}

/// Where a server connection is, for the caller's timeouts and flow control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Between requests: nothing of the next one has come (the keep-alive idle timeout).
    Idle = 0,
    /// Part of a request head has come (the header timeout).
    Head = 1,
    /// The head is read, the body is not complete (the body timeout).
    Body = 2,
    /// A request was handed out and its response is not finished: input is held, not parsed.
    Responding = 3,
    /// Nothing more is read: after a refusal, or after a response that closes.
    Closed = 4,
}

/// Why a peer's message was refused: the status to answer with (None: close without an
/// answer, as for an HTTP/2 preface) and a short reason. A refusal is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The status to answer with; None: close without an answer.
    pub status: Option<u16>,
    /// Why, in a few words (the answer's plain-text body).
    pub reason: &'static str,
}

impl Refusal {
    pub(crate) const fn new(status: u16, reason: &'static str) -> Self {
        Refusal {
            status: Some(status),
            reason,
        }
    }
}

/// The reason phrase written for `status` (empty for a status without a registered one,
/// which RFC 9112 allows).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

const fn token_member(b: u8) -> bool {
    matches!(b,
        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9'
        | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+'
        | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// RFC 9110 5.5: visible ASCII, obs-text, space and tab; never CR, LF, NUL or another control.
const fn field_value_member(b: u8) -> bool {
    b == b'\t' || (b >= b' ' && b <= b'~') || b >= 0x80
}

/// 256-entry membership tables (one load per byte on the write path), built at compile time.
const fn byte_table(field_value: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = if field_value {
            field_value_member(i as u8)
        } else {
            token_member(i as u8)
        };
        i += 1;
    }
    table
}

const TOKEN_BYTES: [bool; 256] = byte_table(false);
const FIELD_VALUE_BYTES: [bool; 256] = byte_table(true);

/// Whether `b` may appear in a token (a method, a header name, a transfer coding).
pub(crate) fn is_token_byte(b: u8) -> bool {
    TOKEN_BYTES[b as usize]
}

/// Whether `b` may appear in a field value.
pub(crate) fn is_field_value_byte(b: u8) -> bool {
    FIELD_VALUE_BYTES[b as usize]
}

/// Strips optional whitespace (space, tab) from both ends.
pub(crate) fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The elements of a comma-separated field value, each trimmed, empty ones skipped
/// (RFC 9110 5.6.1: a recipient accepts empty list elements).
pub(crate) fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|item| !item.is_empty())
}
