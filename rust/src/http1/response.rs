//! Writing message heads and bodies: status lines, caller fields (checked, so a caller bug can
//! never split a message), and the framing fields this module owns (Content-Length,
//! Transfer-Encoding, Connection).

use super::{is_field_value_byte, is_token_byte, reason_phrase, Refusal, Version};

/// The interim response a client that sent `Expect: 100-continue` waits for.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
/// The end of a chunked body (the last chunk, no trailers).
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Why a message could not be written: always a bug of the caller, never of the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// No request is waiting for a response (or a response is already being streamed).
    NoRequest,
    /// Stream data or a stream end with no stream started.
    NoStream,
    /// A status outside 200..=999 for a final response (1xx are written by the connection).
    Status(u16),
    /// A field name that is not a token.
    FieldName(Vec<u8>),
    /// A field value with CR, LF, NUL or another control byte.
    FieldValue(Vec<u8>),
    /// A framing field the connection writes itself (Content-Length, Transfer-Encoding,
    /// Connection): passing one would contradict the framing.
    FramingField(Vec<u8>),
    /// A body on a response that cannot have one (204, 304).
    BodyNotAllowed(u16),
    /// A request while another is outstanding (client side).
    Busy,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            WriteError::NoRequest => f.write_str("no request is waiting for a response"),
            WriteError::NoStream => f.write_str("no response stream is open"),
            WriteError::Status(s) => write!(f, "status {s} is not a final response status"),
            WriteError::FieldName(n) => write!(f, "invalid header name {:?}", text(n)),
            WriteError::FieldValue(n) => {
                write!(
                    f,
                    "invalid byte (CR, LF, NUL or control) in the value of {:?}",
                    text(n)
                )
            }
            WriteError::FramingField(n) => write!(
                f,
                "header {:?} is written by the connection (framing), not by the caller",
                text(n)
            ),
            WriteError::BodyNotAllowed(s) => write!(f, "a {s} response has no body"),
            WriteError::Busy => f.write_str("a request is already outstanding"),
        }
    }
}

impl std::error::Error for WriteError {}

/// Whether `name` is one of the framing fields the connection writes.
pub(crate) fn is_framing_field(name: &[u8]) -> bool {
    match name.len() {
        10 => name.eq_ignore_ascii_case(b"connection"),
        14 => name.eq_ignore_ascii_case(b"content-length"),
        17 => name.eq_ignore_ascii_case(b"transfer-encoding"),
        _ => false,
    }
}

/// Appends `name: value\r\n` for each caller field, refusing what could break the framing.
pub fn write_fields(out: &mut Vec<u8>, fields: &[(&[u8], &[u8])]) -> Result<(), WriteError> {
    for &(name, value) in fields {
        if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
            return Err(WriteError::FieldName(name.to_vec()));
        }
        if !value.iter().all(|&b| is_field_value_byte(b)) {
            return Err(WriteError::FieldValue(name.to_vec()));
        }
        if is_framing_field(name) {
            return Err(WriteError::FramingField(name.to_vec()));
        }
        out.reserve(name.len() + value.len() + 4);
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    Ok(())
}

/// Header fields checked once and kept as the bytes they are written as, for a response
/// that carries the same fields every time (a JSON reply, an SSE stream's head).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldBlock(Vec<u8>);

impl FieldBlock {
    /// Checks `fields` as [`write_fields`] does and keeps their bytes.
    pub fn new(fields: &[(&[u8], &[u8])]) -> Result<Self, WriteError> {
        let mut bytes = Vec::new();
        write_fields(&mut bytes, fields)?;
        Ok(FieldBlock(bytes))
    }

    /// The field lines, each ending in CRLF.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Appends a status line (always HTTP/1.1: RFC 9110 6.2, a server sends its own version).
pub fn write_status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// `Content-Length: n`.
    Length(u64),
    /// No framing field: the response has no body by its status (204, 304).
    None,
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// No framing field: the body ends when the connection closes (an HTTP/1.0 stream).
    UntilClose,
}

/// Appends the framing and connection fields and the blank line that end a head.
/// `keep_alive`: whether the connection stays open after this response; `version`: the
/// request's (an HTTP/1.0 client needs `Connection: keep-alive` to keep it open).
pub fn finish_head(out: &mut Vec<u8>, framing: BodyFraming, keep_alive: bool, version: Version) {
    match framing {
        BodyFraming::Length(n) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        BodyFraming::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        BodyFraming::None | BodyFraming::UntilClose => {}
    }
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    } else if version == Version::Http10 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends one chunk of a chunked body (nothing for empty data: an empty chunk would end it).
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut size = [0u8; 16];
    let mut n = data.len();
    let mut i = size.len();
    loop {
        i -= 1;
        size[i] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.reserve(data.len() + 20);
    out.extend_from_slice(&size[i..]);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The whole answer to a refused request: its status, the reason as a plain-text body, and
/// `Connection: close` (the connection reads nothing more). Empty for a refusal that closes
/// without an answer.
pub fn refusal(refusal: &Refusal) -> Vec<u8> {
    let Some(status) = refusal.status else {
        return Vec::new();
    };
    simple(status, refusal.reason.as_bytes())
}

/// A complete response with a plain-text body that closes the connection: for refusals, and
/// for the caller's own (a timeout's 408, an overload's 503).
pub fn simple(status: u16, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + text.len());
    write_status_line(&mut out, status);
    out.extend_from_slice(b"content-type: text/plain; charset=utf-8\r\n");
    finish_head(
        &mut out,
        BodyFraming::Length(text.len() as u64),
        false,
        Version::Http11,
    );
    out.extend_from_slice(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        write_chunk(&mut out, b"");
        write_chunk(&mut out, b"hello");
        write_chunk(&mut out, &[b'x'; 26]);
        let mut want = b"5\r\nhello\r\n1a\r\n".to_vec();
        want.extend_from_slice(&[b'x'; 26]);
        want.extend_from_slice(b"\r\n");
        assert_eq!(out, want);
    }

    #[test]
    fn fields_refused() {
        let mut out = Vec::new();
        let bad: &[(&[u8], &[u8], WriteError)] = &[
            (
                b"x",
                b"a\r\nInjected: 1",
                WriteError::FieldValue(b"x".to_vec()),
            ),
            (b"x", b"a\nb", WriteError::FieldValue(b"x".to_vec())),
            (b"x", b"a\0b", WriteError::FieldValue(b"x".to_vec())),
            (b"x", b"a\x7fb", WriteError::FieldValue(b"x".to_vec())),
            (b"x y", b"1", WriteError::FieldName(b"x y".to_vec())),
            (b"x:", b"1", WriteError::FieldName(b"x:".to_vec())),
            (b"", b"1", WriteError::FieldName(Vec::new())),
            (
                b"Content-Length",
                b"1",
                WriteError::FramingField(b"Content-Length".to_vec()),
            ),
            (
                b"transfer-encoding",
                b"chunked",
                WriteError::FramingField(b"transfer-encoding".to_vec()),
            ),
            (
                b"CONNECTION",
                b"close",
                WriteError::FramingField(b"CONNECTION".to_vec()),
            ),
        ];
        for (name, value, err) in bad {
            assert_eq!(write_fields(&mut out, &[(name, value)]), Err(err.clone()));
        }
        assert!(out.is_empty());
        write_fields(&mut out, &[(b"x-ok", b"a\tb \x80")]).unwrap();
        assert_eq!(out, b"x-ok: a\tb \x80\r\n");
    }

    #[test]
    fn refusals() {
        let bytes = refusal(&Refusal::new(431, "too large"));
        assert_eq!(
            bytes,
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 9\r\nconnection: close\r\n\r\ntoo large"
        );
        assert!(refusal(&Refusal {
            status: None,
            reason: "x"
        })
        .is_empty());
    }
}
