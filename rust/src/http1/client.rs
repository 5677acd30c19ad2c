//! A client's side of one HTTP/1.1 connection: request bytes out; response bytes in, yielded
//! whole, or (a streamed request) as a head, then body data as it arrives, then its end.
//!
//! One request is outstanding at a time. Interim (1xx) responses are skipped. A response body
//! is delimited as RFC 9112 6.3 says: none for HEAD, 204 and 304; chunked; Content-Length;
//! otherwise until the server closes ([`ClientConnection::feed_eof`]). A malformed response is
//! an error and the connection is closed: it is final, like the server's refusals.

use std::mem::MaybeUninit;

use super::chunked::ChunkedDecoder;
use super::fields::Fields;
use super::response::{self, WriteError};
use super::scan::{check_complete, Scanned, SectionScan};
use super::{list_items, trim_ows, Limits, Refusal, Version, MAX_HEADERS_CAP};

/// A response: its head's bytes followed by its body (decoded; empty for a streamed one,
/// whose body comes as [`ClientEvent::Data`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    data: Vec<u8>,
    status: u16,
    version: Version,
    fields: Fields,
    body_start: usize,
    keep_alive: bool,
}

impl Response {
    /// The status code (a final one: interim 1xx responses are skipped).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The HTTP version of the status line.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields.first(&self.data, name)
    }

    /// Every value of header `name` (any case), in order.
    pub fn header_all<'a>(&'a self, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.fields.all(&self.data, name)
    }

    /// Every field line as (name, value), in order.
    pub fn header_items(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter(&self.data)
    }

    /// The body (a whole response's).
    pub fn body(&self) -> &[u8] {
        &self.data[self.body_start..]
    }

    /// Whether the connection can carry another request after this response.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }
}

/// What [`ClientConnection::next_event`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// A whole response (a request written with `stream = false`).
    Response(Response),
    /// The head of a streamed response; its body follows as `Data`, then `End`.
    Head(Response),
    /// Body data of a streamed response, decoded, as it arrived.
    Data(Vec<u8>),
    /// The end of a streamed response.
    End,
}

#[derive(Debug)]
enum Framing {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    head_method: bool,
    stream: bool,
}

// One state per connection: boxing the large variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum State {
    Idle,
    Head(Pending, SectionScan),
    /// A whole response's body (`response`), or a streamed one's (`response` None: its
    /// head has been yielded).
    Body {
        response: Option<Response>,
        framing: Framing,
        stream_data: Vec<u8>,
        keep_alive: bool,
    },
    Closed,
}

/// A client's side of one connection (see the module docs).
#[derive(Debug)]
pub struct ClientConnection {
    limits: Limits,
    buf: Vec<u8>,
    start: usize,
    state: State,
    eof: bool,
}

const BAD_RESPONSE: Refusal = Refusal {
    status: None,
    reason: "malformed response head",
};

fn error(reason: &'static str) -> Refusal {
    Refusal {
        status: None,
        reason,
    }
}

impl ClientConnection {
    /// A connection with no request written yet, holding its peer to `limits`.
    pub fn new(limits: Limits) -> Self {
        ClientConnection {
            limits: limits.normalized(),
            buf: Vec::new(),
            start: 0,
            state: State::Idle,
            eof: false,
        }
    }

    /// Whether a request can be written (no response is outstanding, the connection is open).
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    /// Whether the connection can carry no more requests.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Writes a request into `out`: the request line, the caller's fields (Host among them),
    /// and, when `body` is given, `Content-Length` and the body. `stream`: yield the response
    /// as it arrives instead of whole.
    pub fn write_request(
        &mut self,
        method: &[u8],
        target: &[u8],
        fields: &[(&[u8], &[u8])],
        body: Option<&[u8]>,
        stream: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        if !self.is_idle() {
            return Err(WriteError::Busy);
        }
        if method.is_empty() || !method.iter().all(|&b| super::is_token_byte(b)) {
            return Err(WriteError::FieldName(method.to_vec()));
        }
        if target.is_empty() || !target.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
            return Err(WriteError::FieldValue(target.to_vec()));
        }
        let mark = out.len();
        out.reserve(64 + method.len() + target.len() + body.map_or(0, <[u8]>::len));
        out.extend_from_slice(method);
        out.push(b' ');
        out.extend_from_slice(target);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        if let Err(e) = response::write_fields(out, fields) {
            out.truncate(mark);
            return Err(e);
        }
        if let Some(body) = body {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(body);
        } else {
            out.extend_from_slice(b"\r\n");
        }
        self.state = State::Head(
            Pending {
                head_method: method == b"HEAD",
                stream,
            },
            SectionScan::default(),
        );
        Ok(())
    }

    fn fail(&mut self, e: Refusal) -> Refusal {
        self.state = State::Closed;
        self.buf = Vec::new();
        self.start = 0;
        e
    }

    /// Takes received bytes (call [`ClientConnection::next_event`] after it).
    pub fn feed(&mut self, data: &[u8]) {
        if matches!(self.state, State::Closed) {
            return;
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The server closed its side: a close-delimited body ends; any other incomplete response
    /// is an error.
    pub fn feed_eof(&mut self) {
        self.eof = true;
    }

    /// The next event from the bytes fed so far, if one is complete.
    pub fn next_event(&mut self) -> Result<Option<ClientEvent>, Refusal> {
        loop {
            match &mut self.state {
                State::Idle => {
                    if self.start < self.buf.len() {
                        return Err(self.fail(error("data received with no request outstanding")));
                    }
                    return Ok(None);
                }
                State::Closed => return Ok(None),
                State::Head(pending, scan) => {
                    let pending = *pending;
                    let input = &self.buf[self.start..];
                    let l = self.limits;
                    let parsed = if !scan.started() {
                        match parse_head(input, &l) {
                            Ok(Some(p)) => match check_complete(
                                input,
                                p.0.body_start,
                                l.max_line,
                                l.max_head,
                                true,
                            ) {
                                Ok(()) => Some(p),
                                Err(r) => return Err(self.fail(r)),
                            },
                            Ok(None) | Err(_) => None,
                        }
                    } else {
                        None
                    };
                    let parsed = match parsed {
                        Some(p) => p,
                        None => match scan.scan(input, l.max_line, l.max_head, true) {
                            Err(r) => return Err(self.fail(r)),
                            Ok(Scanned::Partial) => {
                                if self.eof {
                                    return Err(
                                        self.fail(error("connection closed before a response"))
                                    );
                                }
                                return Ok(None);
                            }
                            Ok(Scanned::End(len)) => match parse_head(&input[..len], &l) {
                                Ok(Some(p)) => p,
                                Ok(None) => return Err(self.fail(BAD_RESPONSE)),
                                Err(r) => return Err(self.fail(r)),
                            },
                        },
                    };
                    let (mut response, framing) = parsed;
                    self.start += response.body_start;
                    if (100..200).contains(&response.status) {
                        if response.status == 101 {
                            return Err(self.fail(error("the server switched protocols")));
                        }
                        self.state = State::Head(pending, SectionScan::default());
                        continue;
                    }
                    let framing = match framing {
                        _ if pending.head_method
                            || response.status == 204
                            || response.status == 304 =>
                        {
                            Framing::Length(0)
                        }
                        Framing::Length(n) if n > l.max_body && !pending.stream => {
                            return Err(self.fail(error("response body too large")));
                        }
                        other => other,
                    };
                    if matches!(framing, Framing::UntilClose) {
                        response.keep_alive = false;
                    }
                    let keep_alive = response.keep_alive;
                    if pending.stream {
                        self.state = State::Body {
                            response: None,
                            framing,
                            stream_data: Vec::new(),
                            keep_alive,
                        };
                        return Ok(Some(ClientEvent::Head(response)));
                    }
                    self.state = State::Body {
                        response: Some(response),
                        framing,
                        stream_data: Vec::new(),
                        keep_alive,
                    };
                }
                State::Body {
                    response,
                    framing,
                    stream_data,
                    keep_alive,
                } => {
                    let input = &self.buf[self.start..];
                    let whole = response.is_some();
                    let body_start = response.as_ref().map_or(0, |r| r.body_start as u64);
                    let out = match response {
                        Some(r) => &mut r.data,
                        None => stream_data,
                    };
                    let limits = if whole {
                        self.limits
                    } else {
                        // A stream (SSE) may outlast any body limit; each event is bounded by
                        // what one read brings.
                        Limits {
                            max_body: u64::MAX,
                            ..self.limits
                        }
                    };
                    let done = match framing {
                        Framing::Length(remaining) => {
                            let take = (*remaining).min(input.len() as u64) as usize;
                            out.extend_from_slice(&input[..take]);
                            self.start += take;
                            *remaining -= take as u64;
                            if *remaining > 0 && self.eof {
                                return Err(self.fail(error("connection closed mid-body")));
                            }
                            *remaining == 0
                        }
                        Framing::Chunked(decoder) => {
                            match decoder.decode(input, out, &limits) {
                                Ok(used) => self.start += used,
                                Err(r) => {
                                    return Err(self.fail(error(r.reason)));
                                }
                            }
                            if !decoder.is_done() && self.eof {
                                return Err(self.fail(error("connection closed mid-body")));
                            }
                            decoder.is_done()
                        }
                        Framing::UntilClose => {
                            if whole
                                && (out.len() + input.len()) as u64 > limits.max_body + body_start
                            {
                                return Err(self.fail(error("response body too large")));
                            }
                            out.extend_from_slice(input);
                            self.start += input.len();
                            self.eof
                        }
                    };
                    if response.is_none() && !stream_data.is_empty() {
                        return Ok(Some(ClientEvent::Data(std::mem::take(stream_data))));
                    }
                    if !done {
                        return Ok(None);
                    }
                    let keep_alive = *keep_alive;
                    let whole = response.take();
                    if keep_alive {
                        self.state = State::Idle;
                        self.buf.drain(..self.start);
                        self.start = 0;
                    } else {
                        self.state = State::Closed;
                        self.buf = Vec::new();
                        self.start = 0;
                    }
                    return Ok(Some(match whole {
                        Some(r) => ClientEvent::Response(r),
                        None => ClientEvent::End,
                    }));
                }
            }
        }
    }
}

/// Parses a response head at the start of `input`. Ok(None): not complete.
fn parse_head(input: &[u8], limits: &Limits) -> Result<Option<(Response, Framing)>, Refusal> {
    let mut storage = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_CAP];
    let mut head = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut head,
        input,
        &mut storage[..limits.max_headers],
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(error("too many response headers")),
        Err(_) => return Err(BAD_RESPONSE),
    };
    let version = if head.version == Some(1) {
        Version::Http11
    } else {
        Version::Http10
    };
    let status = head.code.unwrap_or_default();
    let mut fields = Fields::with_capacity(head.headers.len());
    let mut length: Option<u64> = None;
    let mut codings = 0usize;
    let mut chunked_last = false;
    let mut close = false;
    let mut keep_alive_token = false;
    for field in head.headers.iter() {
        let name = field.name.as_bytes();
        let value = field.value;
        fields.push(input, name, value);
        match name.len() {
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in list_items(value) {
                    close |= token.eq_ignore_ascii_case(b"close");
                    keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                for item in value.split(|&b| b == b',').map(trim_ows) {
                    if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                        return Err(error("invalid Content-Length in response"));
                    }
                    let n = item.iter().fold(0u64, |n, &d| {
                        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    });
                    if length.is_some_and(|seen| seen != n) {
                        return Err(error("conflicting Content-Length in response"));
                    }
                    length = Some(n);
                }
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                for coding in list_items(value) {
                    codings += 1;
                    chunked_last = coding.eq_ignore_ascii_case(b"chunked");
                }
            }
            _ => {}
        }
    }
    let framing = if codings > 0 {
        // jetmcp never asks for a coding (no TE field), so chunked alone is all it reads.
        if !(codings == 1 && chunked_last) {
            return Err(error("unsupported transfer coding in response"));
        }
        Framing::Chunked(ChunkedDecoder::default())
    } else {
        match length {
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    let keep_alive = match version {
        Version::Http11 => !close,
        Version::Http10 => keep_alive_token && !close,
    };
    let expected = match framing {
        Framing::Length(n) => (n as usize).min(input.len() - len),
        _ => input.len() - len,
    };
    let mut data = Vec::with_capacity(len + expected);
    data.extend_from_slice(&input[..len]);
    Ok(Some((
        Response {
            data,
            status,
            version,
            fields,
            body_start: len,
            keep_alive,
        },
        framing,
    )))
}
