//! Pure-Rust JSON writing: string escaping, numbers and the JSON-RPC envelopes.
//!
//! Everything appends to one `Vec<u8>`; the Python layer (`py_encode`) walks objects into it and
//! copies the result into a `bytes` once.

use std::convert::Infallible;

use crate::cursor::plain_end;

/// Start of every envelope, up to the id value.
pub const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
/// Start of a notification, up to the method value.
pub const NOTIFICATION_HEAD: &[u8] = br#"{"jsonrpc":"2.0","method":"#;
/// After the id: a result's member, up to its value.
pub const RESULT_KEY: &[u8] = br#","result":"#;
/// After the id: an error's member and its code's, up to the code.
pub const ERROR_CODE_KEY: &[u8] = br#","error":{"code":"#;
/// After an error's code: its message member, up to the string.
pub const MESSAGE_KEY: &[u8] = br#","message":"#;
/// After an error's message: its data member, up to the value.
pub const DATA_KEY: &[u8] = br#","data":"#;
/// After a request's id: its method member, up to the string.
pub const METHOD_KEY: &[u8] = br#","method":"#;
/// After the method: the params member, up to the value.
pub const PARAMS_KEY: &[u8] = br#","params":"#;

/// For each byte: 0 when it is written as is, else the letter after the backslash (`u` for the
/// `\u00XX` form).
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

#[inline]
fn push_escape(buf: &mut Vec<u8>, byte: u8, esc: u8) {
    if esc == b'u' {
        buf.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(byte >> 4) as usize],
            HEX[(byte & 0xf) as usize],
        ]);
    } else {
        buf.extend_from_slice(&[b'\\', esc]);
    }
}

/// Write `s` (UTF-8 text) as a JSON string: quoted, `"` `\` and control characters escaped,
/// everything else (non-ASCII included) as is.
#[inline]
pub fn write_str(buf: &mut Vec<u8>, s: &str) {
    write_str_bytes(buf, s.as_bytes());
}

/// [`write_str`] on bytes already known to be UTF-8.
#[inline]
pub fn write_str_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    match find_escape(s) {
        // The usual case: nothing to escape.
        None => {
            buf.reserve(s.len() + 2);
            buf.push(b'"');
            buf.extend_from_slice(s);
            buf.push(b'"');
        }
        Some(first) => write_str_escaped(buf, s, first),
    }
}

/// The index of the first byte of `s` that needs escaping: the bytes that end a string's
/// plain run when reading are exactly those.
#[inline]
fn find_escape(s: &[u8]) -> Option<usize> {
    let i = plain_end(s, 0);
    (i < s.len()).then_some(i)
}

/// The slow path of [`write_str_bytes`]: `s[first]` is the first byte to escape.
#[inline(never)]
fn write_str_escaped(buf: &mut Vec<u8>, s: &[u8], first: usize) {
    buf.reserve(s.len() + 8);
    buf.push(b'"');
    let mut start = 0;
    let mut i = first;
    while let Some(&byte) = s.get(i) {
        let esc = ESCAPE[byte as usize];
        if esc != 0 {
            buf.extend_from_slice(&s[start..i]);
            push_escape(buf, byte, esc);
            start = i + 1;
            i += 1;
        } else {
            i = plain_end(s, i);
        }
    }
    buf.extend_from_slice(&s[start..]);
    buf.push(b'"');
}

/// Append `v` in decimal (JSON's form of an integer).
#[inline]
pub fn write_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Append `v` in decimal (JSON's form of an integer).
#[inline]
pub fn write_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Shortest text that reads back to the same double, as pydantic writes it (ryu's digits, a
/// positive exponent signed: `1e+16`, `1e-7`); `null` for NaN and the infinities.
#[inline]
pub fn write_f64(buf: &mut Vec<u8>, v: f64) {
    if !v.is_finite() {
        buf.extend_from_slice(b"null");
    } else if v.fract() == 0.0 && v.abs() < INTEGRAL_BELOW {
        // A whole number ryu writes as its digits and ".0": written so without ryu's digit
        // loop (which strips the trailing zeros of 17 digits one by one).
        if v == 0.0 {
            buf.extend_from_slice(if v.is_sign_negative() {
                b"-0.0"
            } else {
                b"0.0"
            });
        } else {
            // Exact: |v| < 1e16 < 2^63.
            write_i64(buf, v as i64);
            buf.extend_from_slice(b".0");
        }
    } else {
        let mut text = ryu::Buffer::new();
        let text = text.format_finite(v).as_bytes();
        // ryu writes a positive exponent bare (`1e16`); pydantic, Python's `repr` and
        // `json.dumps` write it signed (`1e+16`), and so does this encoder: a model's
        // structured content reads the same whether pydantic or this encoder wrote it.
        match text.iter().position(|&b| b == b'e') {
            Some(e) if text.get(e + 1) != Some(&b'-') => {
                buf.extend_from_slice(&text[..=e]);
                buf.push(b'+');
                buf.extend_from_slice(&text[e + 1..]);
            }
            _ => buf.extend_from_slice(text),
        }
    }
}

/// Below this, ryu writes a whole double as an integer with ".0" (from 1e16 on, with an
/// exponent).
const INTEGRAL_BELOW: f64 = 1e16;

/// Append `true` or `false`.
#[inline]
pub fn write_bool(buf: &mut Vec<u8>, v: bool) {
    buf.extend_from_slice(if v { b"true" } else { b"false" });
}

/// Append `null`.
#[inline]
pub fn write_null(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"null");
}

/// A cheap sanity check of a raw id before it is spliced into a reply: a string lexeme
/// (`"` ... `"`), an integer or number lexeme, or `null`. It does not re-validate the string's
/// content; ids from `decode` are valid by construction.
pub fn check_raw_id(raw: &[u8]) -> Result<(), &'static str> {
    match raw {
        [b'"', .., b'"'] if raw.len() >= 2 => Ok(()),
        b"null" => Ok(()),
        [b'-' | b'0'..=b'9', ..]
            if raw
                .iter()
                .all(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) =>
        {
            Ok(())
        }
        _ => Err("raw_id must be a JSON string or number lexeme, as Entry.raw_id gives"),
    }
}

/// `{"jsonrpc":"2.0","id":<raw_id or null>`
#[inline]
pub fn write_head(buf: &mut Vec<u8>, raw_id: Option<&[u8]>) {
    buf.extend_from_slice(HEAD);
    buf.extend_from_slice(raw_id.unwrap_or(b"null"));
}

// Every envelope is written by one of the functions below, whoever calls it: the Python
// encoders pass a closure that writes a Python value, the tool runner plain bytes. A
// closure's error stops the writing and is handed back (the buffer is then partly written).

/// `{"jsonrpc":"2.0","id":<raw_id>,"result":<what result writes>}`
#[inline]
pub fn write_result<E>(
    buf: &mut Vec<u8>,
    raw_id: &[u8],
    result: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    write_head(buf, Some(raw_id));
    buf.extend_from_slice(RESULT_KEY);
    result(buf)?;
    buf.push(b'}');
    Ok(())
}

/// A JSON-RPC error reply: `"id":null` when `raw_id` is None, `data` only when given.
pub fn write_error<E>(
    buf: &mut Vec<u8>,
    raw_id: Option<&[u8]>,
    code: i64,
    message: &str,
    data: Option<impl FnOnce(&mut Vec<u8>) -> Result<(), E>>,
) -> Result<(), E> {
    write_head(buf, raw_id);
    buf.extend_from_slice(ERROR_CODE_KEY);
    write_i64(buf, code);
    buf.extend_from_slice(MESSAGE_KEY);
    write_str(buf, message);
    if let Some(data) = data {
        buf.extend_from_slice(DATA_KEY);
        data(buf)?;
    }
    buf.extend_from_slice(b"}}");
    Ok(())
}

/// A JSON-RPC request, `params` only when given.
pub fn write_request<E>(
    buf: &mut Vec<u8>,
    raw_id: &[u8],
    method: &str,
    params: Option<impl FnOnce(&mut Vec<u8>) -> Result<(), E>>,
) -> Result<(), E> {
    write_head(buf, Some(raw_id));
    buf.extend_from_slice(METHOD_KEY);
    write_str(buf, method);
    if let Some(params) = params {
        buf.extend_from_slice(PARAMS_KEY);
        params(buf)?;
    }
    buf.push(b'}');
    Ok(())
}

/// A JSON-RPC notification, `params` only when given.
pub fn write_notification<E>(
    buf: &mut Vec<u8>,
    method: &str,
    params: Option<impl FnOnce(&mut Vec<u8>) -> Result<(), E>>,
) -> Result<(), E> {
    buf.extend_from_slice(NOTIFICATION_HEAD);
    write_str(buf, method);
    if let Some(params) = params {
        buf.extend_from_slice(PARAMS_KEY);
        params(buf)?;
    }
    buf.push(b'}');
    Ok(())
}

/// The key of the server's identity in a 2026-07-28 result's `_meta`.
pub const META_SERVER_INFO: &[u8] = b"io.modelcontextprotocol/serverInfo";
/// The member that says a 2026-07-28 result is complete.
pub const RESULT_TYPE_COMPLETE: &[u8] = br#""resultType":"complete""#;
/// The key of a result's `_meta` member, with its colon.
pub const META_KEY: &[u8] = br#""_meta":"#;
/// A completed result's `_meta` value up to the server info value (the rest of `_meta`, if
/// any, and its closing brace follow).
pub const SERVER_META_OPEN: &[u8] = br#"{"io.modelcontextprotocol/serverInfo":"#;

/// `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":<server_info>}`:
/// the members that complete a 2026-07-28 result that has neither, written before its
/// closing brace, as the dispatcher's completion appends them (`resultType` first).
#[inline]
pub fn write_completion(buf: &mut Vec<u8>, server_info: &[u8]) {
    buf.push(b',');
    buf.extend_from_slice(RESULT_TYPE_COMPLETE);
    buf.push(b',');
    buf.extend_from_slice(META_KEY);
    buf.extend_from_slice(SERVER_META_OPEN);
    buf.extend_from_slice(server_info);
    buf.push(b'}');
}

/// A return value a tool result carries as text (and as `structuredContent.result`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Primitive<'a> {
    /// An `int` of 64 bits: its digits.
    Int(i64),
    /// A `bool`: `true` or `false`.
    Bool(bool),
    /// A `str`: the text itself (escaped where it is JSON).
    Str(&'a str),
    /// Finite: its text is the number as JSON (and pydantic) writes it.
    Float(f64),
}

/// The start of a tool result whose one content block is text: the text's JSON string follows.
const TEXT_HEAD: &[u8] = br#","result":{"content":[{"type":"text","text":"#;
/// The member that ends a tool result that is not an error.
const NOT_AN_ERROR: &[u8] = br#","isError":false"#;

/// The whole reply to a `tools/call` whose tool returned `value`, as the Python shaping
/// builds it: `{"content":[{"type":"text","text":<text>}],` then, when `structured`,
/// `"structuredContent":{"result":<value>},`, then `"isError":false`, and the 2026-07-28
/// completion when `server_info` is given.
#[inline(always)]
pub fn write_text_result(
    buf: &mut Vec<u8>,
    raw_id: &[u8],
    value: Primitive<'_>,
    structured: bool,
    server_info: Option<&[u8]>,
) {
    const STRUCTURED: &[u8] = br#"}],"structuredContent":{"result":"#;
    let info_len = server_info.map_or(0, |i| i.len() + 96);
    buf.reserve(HEAD.len() + raw_id.len() + 112 + info_len);
    write_head(buf, Some(raw_id));
    buf.extend_from_slice(TEXT_HEAD);
    // The text, as a JSON string; the value as JSON is the same bytes (a str) or the same
    // without the quotes (an int's digits, a float's lexeme, true or false).
    let start = buf.len();
    let quoted = match value {
        Primitive::Int(v) => {
            buf.push(b'"');
            buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            buf.push(b'"');
            false
        }
        Primitive::Bool(v) => {
            buf.extend_from_slice(if v { b"\"true\"" } else { b"\"false\"" });
            false
        }
        Primitive::Float(v) => {
            buf.push(b'"');
            write_f64(buf, v);
            buf.push(b'"');
            false
        }
        Primitive::Str(s) => {
            write_str(buf, s);
            true
        }
    };
    let end = buf.len();
    if structured {
        buf.extend_from_slice(STRUCTURED);
        if quoted {
            buf.extend_from_within(start..end);
        } else {
            buf.extend_from_within(start + 1..end - 1);
        }
        buf.push(b'}');
        buf.extend_from_slice(NOT_AN_ERROR);
    } else {
        buf.extend_from_slice(&STRUCTURED[..2]);
        buf.extend_from_slice(NOT_AN_ERROR);
    }
    if let Some(info) = server_info {
        write_completion(buf, info);
    }
    buf.extend_from_slice(b"}}");
}

/// `compact` (JSON as pydantic's `to_json` writes it, no whitespace) indented as pydantic's
/// `to_json(..., indent=2)` writes the same value ([`write_indented`]), or None when it is
/// not JSON that takes (`Infinity` or `NaN`, which a model's config may ask for).
pub fn indented(compact: &[u8]) -> Option<Vec<u8>> {
    let mut text = Vec::with_capacity(compact.len() * 2 + 16);
    write_indented(&mut text, compact).then_some(text)
}

/// The whole reply to a `tools/call` whose tool returned data (a model, a dict, a list,
/// None): `{"content":[` and a text block `{"type":"text","text":<text>}` for each of
/// `texts` (UTF-8: a model's or dict's JSON [`indented`], a string item's own text...),
/// `],`, then, when `structured` is given (compact JSON), `"structuredContent":<structured>,`,
/// then `"isError":false`, and the 2026-07-28 completion when `server_info` is given.
pub fn write_json_result<T: AsRef<[u8]>>(
    buf: &mut Vec<u8>,
    raw_id: &[u8],
    texts: &[T],
    structured: Option<&[u8]>,
    server_info: Option<&[u8]>,
) {
    const CONTENT: &[u8] = br#","result":{"content":["#;
    const BLOCK: &[u8] = br#"{"type":"text","text":"#;
    const STRUCTURED: &[u8] = br#","structuredContent":"#;
    let size = texts
        .iter()
        .map(|t| t.as_ref().len() * 2 + BLOCK.len() + 2)
        .sum::<usize>()
        + structured.map_or(0, <[u8]>::len);
    buf.reserve(HEAD.len() + raw_id.len() + 96 + size);
    write_head(buf, Some(raw_id));
    buf.extend_from_slice(CONTENT);
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(BLOCK);
        write_str_bytes(buf, text.as_ref());
        buf.push(b'}');
    }
    buf.push(b']');
    if let Some(json) = structured {
        buf.extend_from_slice(STRUCTURED);
        buf.extend_from_slice(json);
    }
    buf.extend_from_slice(NOT_AN_ERROR);
    if let Some(info) = server_info {
        write_completion(buf, info);
    }
    buf.extend_from_slice(b"}}");
}

/// Compact JSON (no whitespace between tokens, as pydantic's `to_json` writes it) written
/// again as pydantic's `to_json(..., indent=2)` writes the same value (serde_json's pretty
/// formatter): each member and element on a line of its own, indented two spaces a level,
/// `": "` after a key, `{}` and `[]` when empty. Strings are copied as they are. False
/// when `compact` is not such JSON: whitespace or a bare `Infinity`/`NaN` outside a string,
/// an unclosed string, unbalanced brackets (what was written is then of no use).
pub fn write_indented(out: &mut Vec<u8>, compact: &[u8]) -> bool {
    fn line(out: &mut Vec<u8>, depth: usize) {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    }
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = compact.get(i) {
        match b {
            b'"' => {
                let start = i;
                i += 1;
                loop {
                    match compact.get(i) {
                        Some(b'"') => break,
                        Some(b'\\') => i += 2,
                        Some(_) => i += 1,
                        None => return false,
                    }
                }
                out.extend_from_slice(&compact[start..=i]);
            }
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                out.push(b);
                if compact.get(i + 1) == Some(&close) {
                    out.push(close);
                    i += 1;
                } else {
                    depth += 1;
                    line(out, depth);
                }
            }
            b'}' | b']' => {
                let Some(up) = depth.checked_sub(1) else {
                    return false;
                };
                depth = up;
                line(out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b',');
                line(out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b'I' | b'N' | b' ' | b'\t' | b'\n' | b'\r' => return false,
            _ => out.push(b),
        }
        i += 1;
    }
    depth == 0
}

/// A closure that writes bytes as they are (for the byte-level envelope helpers).
#[inline]
fn verbatim(bytes: &[u8]) -> impl FnOnce(&mut Vec<u8>) -> Result<(), Infallible> + '_ {
    move |buf| {
        buf.extend_from_slice(bytes);
        Ok(())
    }
}

/// A whole result reply around an already encoded `result`.
pub fn result_reply(raw_id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut buf =
        Vec::with_capacity(HEAD.len() + raw_id.len() + RESULT_KEY.len() + result.len() + 1);
    let Ok(()) = write_result(&mut buf, raw_id, verbatim(result));
    buf
}

/// A whole error reply, `data` already encoded when given.
pub fn error_reply(
    raw_id: Option<&[u8]>,
    code: i64,
    message: &str,
    data: Option<&[u8]>,
) -> Vec<u8> {
    let mut buf = Vec::with_capacity(96 + message.len() + data.map_or(0, <[u8]>::len));
    let Ok(()) = write_error(&mut buf, raw_id, code, message, data.map(verbatim));
    buf
}

/// A whole request, `params` already encoded when given.
pub fn request(raw_id: &[u8], method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let mut buf =
        Vec::with_capacity(64 + raw_id.len() + method.len() + params.map_or(0, <[u8]>::len));
    let Ok(()) = write_request(&mut buf, raw_id, method, params.map(verbatim));
    buf
}

/// A whole notification, `params` already encoded when given.
pub fn notification(method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(48 + method.len() + params.map_or(0, <[u8]>::len));
    let Ok(()) = write_notification(&mut buf, method, params.map(verbatim));
    buf
}

/// A batch reply written into one buffer as its replies are made.
pub struct BatchOut {
    buf: Vec<u8>,
    empty: bool,
}

impl BatchOut {
    /// An open batch (`[` written) with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity.max(2));
        buf.push(b'[');
        BatchOut { buf, empty: true }
    }

    /// The buffer to write the next reply into (after a `,` when one came before).
    #[inline]
    pub fn reply(&mut self) -> &mut Vec<u8> {
        if !self.empty {
            self.buf.push(b',');
        }
        self.empty = false;
        &mut self.buf
    }

    /// The bytes written so far (the replies of `start..end` ranges taken from [`Self::len`]).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// How many bytes are written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether no reply was written yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// The whole batch reply (`]` written).
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(b']');
        self.buf
    }
}

/// The exact size of [`write_batch`]'s output.
pub fn batch_len<'a>(replies: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let mut len = 2;
    let mut n = 0;
    for r in replies {
        len += r.len();
        n += 1;
    }
    len + n.max(1) - 1
}

/// `[` replies joined with `,` `]` into `out`, which must be exactly [`batch_len`] long.
/// Returns false (leaving `out` partly written) if the sizes do not match.
pub fn write_batch<'a>(out: &mut [u8], replies: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut pos = 0;
    let mut put = |bytes: &[u8], pos: &mut usize| -> bool {
        match out.get_mut(*pos..*pos + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                *pos += bytes.len();
                true
            }
            None => false,
        }
    };
    if !put(b"[", &mut pos) {
        return false;
    }
    for (i, r) in replies.into_iter().enumerate() {
        if (i > 0 && !put(b",", &mut pos)) || !put(r, &mut pos) {
            return false;
        }
    }
    put(b"]", &mut pos) && pos == out.len()
}

/// Replies joined into one JSON array.
pub fn batch(replies: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0u8; batch_len(replies.iter().copied())];
    let ok = write_batch(&mut out, replies.iter().copied());
    debug_assert!(ok);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> String {
        let mut buf = Vec::new();
        write_str(&mut buf, text);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn escaping_table() {
        let cases: &[(&str, &str)] = &[
            ("", r#""""#),
            ("abc", r#""abc""#),
            ("a\"b", r#""a\"b""#),
            ("a\\b", r#""a\\b""#),
            ("\n\r\t\u{8}\u{c}", r#""\n\r\t\b\f""#),
            ("\u{0}\u{1}\u{1f}", r#""\u0000\u0001\u001f""#),
            ("\u{7f}", "\"\u{7f}\""),
            ("/", r#""/""#),
            ("é€😀", "\"é€😀\""),
            ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),
            ("0123456789abcdef\"", r#""0123456789abcdef\"""#),
            ("01234567\n01234567", r#""01234567\n01234567""#),
            ("\"\"\"\"\"\"\"\"\"", r#""\"\"\"\"\"\"\"\"\"""#),
            (
                "a very long string without anything to escape at all, ok",
                "\"a very long string without anything to escape at all, ok\"",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(s(input), *want, "{input:?}");
        }
    }

    #[test]
    fn escaping_every_position() {
        // An escapable byte at every offset of strings around the word size.
        for len in 0..20 {
            for pos in 0..len {
                for special in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
                    let mut text: Vec<char> = std::iter::repeat_n('x', len).collect();
                    text[pos] = special;
                    let text: String = text.into_iter().collect();
                    let out = s(&text);
                    let mut want = String::from("\"");
                    for c in text.chars() {
                        match c {
                            '"' => want.push_str("\\\""),
                            '\\' => want.push_str("\\\\"),
                            '\n' => want.push_str("\\n"),
                            c if (c as u32) < 0x20 => {
                                want.push_str(&format!("\\u{:04x}", c as u32))
                            }
                            c => want.push(c),
                        }
                    }
                    want.push('"');
                    assert_eq!(out, want);
                }
            }
        }
        // Every control character.
        for c in 0u8..0x20 {
            let out = s(&(c as char).to_string());
            assert!(out.starts_with("\"\\"), "{c}: {out}");
        }
    }

    /// The whole-number shortcut of `write_f64` writes what ryu writes: every power of two
    /// and of ten in and around its range, their neighbours, and a spread of others.
    #[test]
    fn whole_doubles_as_ryu_writes_them() {
        // ryu's text with a positive exponent signed, as `write_f64` documents.
        let ryu = |v: f64| {
            let text = ryu::Buffer::new().format_finite(v).to_owned();
            if text.contains("e-") {
                text
            } else {
                text.replacen('e', "e+", 1)
            }
        };
        let mine = |v: f64| {
            let mut buf = Vec::new();
            write_f64(&mut buf, v);
            String::from_utf8(buf).unwrap()
        };
        let mut values = vec![0.0, -0.0, 1e16, -1e16, 9_999_999_999_999_998.0];
        for e in 0..=64 {
            let p = 2f64.powi(e);
            values.extend([p, p - 1.0, p + 1.0, p * 3.0]);
        }
        for e in 0..=17 {
            let p = 10f64.powi(e);
            values.extend([p, p - 1.0, p + 1.0, p * 7.0, p * 9.5]);
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            // xorshift: whole numbers of every size up to 2^60, and halves, below and over.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x >> (x % 60)) as f64;
            values.extend([v, -v, v + 0.5]);
        }
        for v in values {
            for v in [v, -v] {
                assert_eq!(mine(v), ryu(v), "{v:?}");
            }
        }
    }

    #[test]
    fn numbers() {
        let mut buf = Vec::new();
        write_i64(&mut buf, i64::MIN);
        buf.push(b' ');
        write_u64(&mut buf, u64::MAX);
        buf.push(b' ');
        for f in [0.0, -0.0, 1.0, 1.5, 1e16, 1e-7, 0.1, f64::MAX] {
            write_f64(&mut buf, f);
            buf.push(b' ');
        }
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            write_f64(&mut buf, f);
            buf.push(b' ');
        }
        write_bool(&mut buf, true);
        write_bool(&mut buf, false);
        write_null(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "-9223372036854775808 18446744073709551615 0.0 -0.0 1.0 1.5 1e+16 1e-7 0.1 \
             1.7976931348623157e+308 null null null truefalsenull"
        );
    }

    #[test]
    fn envelopes() {
        assert_eq!(
            result_reply(b"\"x\\u00e9\"", b"{}"),
            br#"{"jsonrpc":"2.0","id":"x\u00e9","result":{}}"#
        );
        assert_eq!(
            error_reply(None, -32700, "Parse error", None),
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
        );
        assert_eq!(
            error_reply(Some(b"7"), -32602, "bad \"x\"", Some(b"[1]")),
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad \"x\"","data":[1]}}"#
        );
        assert_eq!(
            request(b"1", "tools/call", Some(b"{}")),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#
        );
        assert_eq!(
            request(b"-0", "ping", None),
            br#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#
        );
        assert_eq!(
            notification("notifications/progress", Some(b"{\"p\":1}")),
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}"#
        );
        assert_eq!(
            notification("x", None),
            br#"{"jsonrpc":"2.0","method":"x"}"#
        );
    }

    #[test]
    fn batches() {
        assert_eq!(batch(&[]), b"[]");
        assert_eq!(batch(&[b"{}"]), b"[{}]");
        assert_eq!(batch(&[b"{}", b"1", b"\"a\""]), b"[{},1,\"a\"]");
        let mut small = [0u8; 3];
        assert!(!write_batch(&mut small, [&b"{}"[..], b"{}"]));
    }

    #[test]
    fn raw_id_check() {
        for ok in [&b"1"[..], b"-0", b"\"\"", b"\"a\\\"b\"", b"null", b"1.5e3"] {
            assert!(check_raw_id(ok).is_ok(), "{ok:?}");
        }
        for bad in [&b""[..], b"\"", b"x", b"1,2", b"{}", b"1}", b"true"] {
            assert!(check_raw_id(bad).is_err(), "{bad:?}");
        }
    }

    const INFO: &[u8] = br#"{"name":"srv","version":"1"}"#;

    fn text_result(value: Primitive<'_>, structured: bool, info: Option<&[u8]>) -> String {
        let mut buf = b"[".to_vec();
        write_text_result(&mut buf, b"7", value, structured, info);
        String::from_utf8(buf.split_off(1)).unwrap()
    }

    #[test]
    fn tool_text_results() {
        let c = r#""resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}"#;
        // (value, structured, completed, reply)
        let cases: Vec<(Primitive<'_>, bool, bool, String)> = vec![
            (
                Primitive::Int(-42),
                false,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"-42"}],"isError":false}}"#.into(),
            ),
            (
                Primitive::Int(i64::MAX),
                true,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"9223372036854775807"}],"structuredContent":{"result":9223372036854775807},"isError":false}}"#.into(),
            ),
            (
                Primitive::Bool(true),
                true,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"true"}],"structuredContent":{"result":true},"isError":false}}"#.into(),
            ),
            (
                Primitive::Str("a\"b\n😀"),
                true,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"b\n😀"}],"structuredContent":{"result":"a\"b\n😀"},"isError":false}}"#.into(),
            ),
            (
                Primitive::Bool(false),
                false,
                true,
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"false"}}],"isError":false,{c}}}}}"#),
            ),
            (
                Primitive::Str(""),
                true,
                true,
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":""}}],"structuredContent":{{"result":""}},"isError":false,{c}}}}}"#),
            ),
            (
                Primitive::Float(1e16),
                true,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"1e+16"}],"structuredContent":{"result":1e+16},"isError":false}}"#.into(),
            ),
            (
                Primitive::Float(-0.0),
                false,
                false,
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"-0.0"}],"isError":false}}"#.into(),
            ),
            (
                Primitive::Float(1e-5),
                true,
                true,
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"0.00001"}}],"structuredContent":{{"result":0.00001}},"isError":false,{c}}}}}"#),
            ),
        ];
        for (value, structured, completed, want) in cases {
            let info = completed.then_some(INFO);
            assert_eq!(text_result(value, structured, info), want, "{value:?}");
        }
    }

    #[test]
    fn tool_json_results() {
        let result = |compact: &[u8], structured: Option<&[u8]>, info: Option<&[u8]>, id: &[u8]| {
            let mut buf = Vec::new();
            write_json_result(
                &mut buf,
                id,
                &[&indented(compact).unwrap()],
                structured,
                info,
            );
            String::from_utf8(buf).unwrap()
        };
        assert_eq!(
            result(br#"{"x":3.0}"#, Some(br#"{"x":3.0}"#), None, b"7"),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\n  \"x\": 3.0\n}"}],"structuredContent":{"x":3.0},"isError":false}}"#
        );
        assert_eq!(
            result(b"{}", None, Some(INFO), b"\"a\""),
            r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"{}"}],"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}}}"#
        );
        // Text and structured content of their own (a dict's text, its validated dump).
        assert_eq!(
            result(
                br#"{"a":[1,{"b":"\u0000"}],"c":{}}"#,
                Some(br#"{"a":[1]}"#),
                None,
                b"2"
            ),
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\n  \"a\": [\n    1,\n    {\n      \"b\": \"\\u0000\"\n    }\n  ],\n  \"c\": {}\n}"}],"structuredContent":{"a":[1]},"isError":false}}"#
        );
        // Several blocks, or none.
        let mut buf = Vec::new();
        write_json_result(&mut buf, b"3", &[b"a\n", b"{}", "é".as_bytes()], None, None);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\n"},{"type":"text","text":"{}"},{"type":"text","text":"é"}],"isError":false}}"#
        );
        let mut buf = Vec::new();
        write_json_result::<&[u8]>(&mut buf, b"4", &[], Some(br#"{"result":null}"#), Some(INFO));
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"structuredContent":{"result":null},"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}}}"#
        );
        // What JSON has no place for is not indented.
        assert_eq!(indented(br#"{"x":Infinity}"#), None);
        assert_eq!(indented(br#"[NaN]"#), None);
    }

    /// `write_indented` against texts pydantic's `to_json(value, indent=2)` wrote (pydantic
    /// 2.x); the Python differential tests compare it with pydantic on generated models.
    #[test]
    fn indented_as_pydantic_writes_it() {
        let indent = |compact: &str| {
            let mut out = Vec::new();
            write_indented(&mut out, compact.as_bytes()).then(|| String::from_utf8(out).unwrap())
        };
        let cases = [
            (r#"{"x":1.0}"#, "{\n  \"x\": 1.0\n}"),
            (
                r#"{"a":[],"b":{},"c":[1,{"d":[]}]}"#,
                "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": []\n    }\n  ]\n}",
            ),
            ("[]", "[]"),
            ("{}", "{}"),
            ("3", "3"),
            (r#""a""#, r#""a""#),
            (r#"[null,true,false,-1e+16]"#, "[\n  null,\n  true,\n  false,\n  -1e+16\n]"),
            // Structural characters and escapes inside strings are copied as they are.
            (
                r#"{"k,:{[":"v\"}],\\","\\":"\u0000é"}"#,
                "{\n  \"k,:{[\": \"v\\\"}],\\\\\",\n  \"\\\\\": \"\\u0000é\"\n}",
            ),
        ];
        for (compact, want) in cases {
            assert_eq!(indent(compact).as_deref(), Some(want), "{compact}");
        }
        for refused in [
            r#"{"x":Infinity}"#,
            r#"{"x":-Infinity}"#,
            "[NaN]",
            r#"{"x": 1}"#,
            "[1\n]",
            r#"{"x":"a"#,
            r#"{"x":"a\"}"#,
            "[1]]",
            "[[1]",
            "{",
        ] {
            assert_eq!(indent(refused), None, "{refused}");
        }
    }

    #[test]
    fn completion_members() {
        let mut buf = br#"{"content":[]"#.to_vec();
        write_completion(&mut buf, INFO);
        buf.push(b'}');
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}}}"#
        );
        assert_eq!(
            &SERVER_META_OPEN[2..SERVER_META_OPEN.len() - 2],
            META_SERVER_INFO
        );
    }

    #[test]
    fn envelope_writers_stop_at_an_error() {
        let mut buf = Vec::new();
        let err = write_result(&mut buf, b"1", |b| {
            b.extend_from_slice(b"{\"a\":");
            Err("no")
        });
        assert_eq!(err, Err("no"));
        assert_eq!(buf, br#"{"jsonrpc":"2.0","id":1,"result":{"a":"#);
        let mut buf = Vec::new();
        let failing = Some(|_: &mut Vec<u8>| Err(7));
        assert_eq!(write_error(&mut buf, None, 1, "m", failing), Err(7));
        assert_eq!(
            write_request(&mut Vec::new(), b"1", "m", Some(|_: &mut Vec<u8>| Err(1))),
            Err(1)
        );
        assert_eq!(
            write_notification(&mut Vec::new(), "m", Some(|_: &mut Vec<u8>| Err(2))),
            Err(2)
        );
        // And they write what the byte helpers write.
        let mut buf = Vec::new();
        let Ok(()) = write_error(
            &mut buf,
            Some(b"\"x\""),
            -32601,
            "Method not found: x",
            None::<fn(&mut Vec<u8>) -> Result<(), Infallible>>,
        );
        assert_eq!(
            buf,
            error_reply(Some(b"\"x\""), -32601, "Method not found: x", None)
        );
    }

    #[test]
    fn batch_out_joins_as_batch_does() {
        for n in 0..4 {
            let replies: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("{{\"r\":{i}}}").into_bytes())
                .collect();
            let mut out = BatchOut::with_capacity(0);
            assert!(out.is_empty());
            let mut places = Vec::new();
            for r in &replies {
                let buf = out.reply();
                let start = buf.len();
                buf.extend_from_slice(r);
                places.push((start, out.len()));
            }
            for (r, (start, end)) in replies.iter().zip(&places) {
                assert_eq!(&out.bytes()[*start..*end], r.as_slice());
            }
            let refs: Vec<&[u8]> = replies.iter().map(Vec::as_slice).collect();
            assert_eq!(out.finish(), batch(&refs));
        }
    }
}
