//! One cursor over JSON text: where a value starts, where a string ends, how to step over a
//! value. Every reader in the crate moves through bytes with it, as jiter's decoders share
//! one parser:
//!
//! * the validating scan of `frame` adds the grammar checks around its steps;
//! * the builder of Python objects (`py_build`) and the reader of a planned call's
//!   `arguments` (`py_route`) read JSON that scan already validated (and the parts of the call
//!   it recorded on the way), with the lenient steps here, which find their way
//!   without re-checking the grammar but never read out of bounds (anything unexpected is
//!   `None`).
//!
//! The one test for the bytes that end a string's plain run (control characters, `"` and
//! `\`, which are also exactly the bytes a writer must escape: the encoder uses it too)
//! is [`plain_end`], and the one escape decoder is [`unescape`].

/// A half-open byte range `[start, end)` of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first byte's index.
    pub start: usize,
    /// The index just past the last byte (`start` for an empty span).
    pub end: usize,
}

impl Span {
    /// The bytes of `body` this span covers (empty if it does not fit, which cannot happen for
    /// spans made on the same body).
    #[inline]
    pub fn of<'b>(&self, body: &'b [u8]) -> &'b [u8] {
        body.get(self.start..self.end).unwrap_or_default()
    }
}

/// The bytes that end the plain run of a string: control characters, `"` and `\`.
static STOPS_STRING: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Whether `byte` ends the plain run of a string (and must be escaped when written).
#[inline(always)]
pub fn stops_string(byte: u8) -> bool {
    STOPS_STRING[byte as usize]
}

/// The bytes among 8 (little-endian) that are a control character, `"` or `\`, as the
/// high bit of each: exact for the lowest one, the only one [`plain_end`] reads (the borrow
/// tricks may also mark bytes above a true hit).
#[inline(always)]
fn word_stops(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    let q = w ^ (ONES * b'"' as u64);
    let quote = q.wrapping_sub(ONES) & !q;
    let b = w ^ (ONES * b'\\' as u64);
    let backslash = b.wrapping_sub(ONES) & !b;
    (control | quote | backslash) & HIGH
}

/// The index of the first byte at or after `i` that ends a string's plain run (see
/// [`stops_string`]), or `data.len()` when there is none: eight bytes at a time, then a
/// table lookup for each of the last few.
#[inline(always)]
pub fn plain_end(data: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = data.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let stops = word_stops(u64::from_le_bytes(word));
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = data.get(i) {
        if STOPS_STRING[c as usize] {
            return i;
        }
        i += 1;
    }
    i
}

/// A position in JSON text.
#[derive(Debug, Clone)]
pub struct Cursor<'b> {
    /// The whole text read.
    pub data: &'b [u8],
    /// The index of the next byte to read (`data.len()` at the end; never read past it).
    pub pos: usize,
}

impl<'b> Cursor<'b> {
    /// A cursor at the start of `data`.
    #[inline]
    pub fn new(data: &'b [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    /// The next byte that is not whitespace (the position is left on it), or None at the end.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.data.get(self.pos) {
            match b {
                b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                _ => return Some(b),
            }
        }
        None
    }

    /// The byte at the position (whitespace included).
    #[inline]
    pub fn byte(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// Whether the next byte that is not whitespace is `b`; consumed when it is.
    #[inline]
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Whether the bytes at the position start with `prefix`.
    #[inline]
    pub fn starts_with(&self, prefix: &[u8]) -> bool {
        self.data
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(prefix))
    }

    // ------------------------------------------------------------------ validated JSON

    /// At `"` of a valid string: consume it; the span of its content (quotes excluded) and
    /// whether it has escapes.
    #[inline]
    pub fn string(&mut self) -> Option<(Span, bool)> {
        let data = self.data;
        if data.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i = plain_end(data, i);
            match *data.get(i)? {
                b'"' => break,
                // The escaped byte cannot end the string; `\uXXXX` digits are plain.
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                // A control character: not in valid JSON; read as plain to stay lenient.
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        Some((Span { start, end: i }, escaped))
    }

    /// Consume one valid value of any kind; its span.
    pub fn skip(&mut self) -> Option<Span> {
        let start = match self.peek()? {
            b'"' => {
                let start = self.pos;
                self.string()?;
                return Some(Span {
                    start,
                    end: self.pos,
                });
            }
            b'{' | b'[' => self.pos,
            _ => {
                let start = self.pos;
                while let Some(&b) = self.data.get(self.pos) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                return (self.pos > start).then_some(Span {
                    start,
                    end: self.pos,
                });
            }
        };
        let mut depth = 0usize;
        loop {
            match *self.data.get(self.pos)? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.pos += 1;
                        return Some(Span {
                            start,
                            end: self.pos,
                        });
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// At `{` (after whitespace): consume it; whether a member follows.
    #[inline]
    pub fn object_open(&mut self) -> Option<bool> {
        if !self.eat(b'{') {
            return None;
        }
        Some(!self.eat(b'}'))
    }

    /// At `[` (after whitespace): consume it; whether a value follows.
    #[inline]
    pub fn array_open(&mut self) -> Option<bool> {
        if !self.eat(b'[') {
            return None;
        }
        Some(!self.eat(b']'))
    }

    /// A member's key and its colon: the key's content span and whether it has escapes.
    #[inline]
    pub fn key(&mut self) -> Option<(Span, bool)> {
        self.peek()?;
        let key = self.string()?;
        if !self.eat(b':') {
            return None;
        }
        Some(key)
    }

    /// After a member's value: true when another member follows (`,`), false when the
    /// object ended (`}`); both consumed.
    #[inline]
    pub fn object_next(&mut self) -> Option<bool> {
        self.next(b'}')
    }

    /// After an array's value: true when another value follows (`,`), false when the array
    /// ended (`]`); both consumed.
    #[inline]
    pub fn array_next(&mut self) -> Option<bool> {
        self.next(b']')
    }

    #[inline]
    fn next(&mut self, close: u8) -> Option<bool> {
        let b = self.peek()?;
        if b == b',' {
            self.pos += 1;
            Some(true)
        } else if b == close {
            self.pos += 1;
            Some(false)
        } else {
            None
        }
    }
}

/// The value of 4 hex digits at `data[at..]`.
#[inline]
fn hex4(data: &[u8], at: usize) -> Option<u32> {
    let digits = data.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = (v << 4) | (d as char).to_digit(16)?;
    }
    Some(v)
}

/// Append the UTF-8 text of a valid string's content (quotes excluded) to `out`, escapes
/// decoded. None (with `out` partly written) for an escape valid JSON cannot hold, such as a
/// lone surrogate.
pub fn unescape(content: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.reserve(content.len());
    let mut i = 0;
    while let Some(offset) = content.get(i..)?.iter().position(|&b| b == b'\\') {
        let at = i + offset;
        out.extend_from_slice(content.get(i..at)?);
        let (byte, next) = match *content.get(at + 1)? {
            b'"' => (b'"', at + 2),
            b'\\' => (b'\\', at + 2),
            b'/' => (b'/', at + 2),
            b'b' => (0x08, at + 2),
            b'f' => (0x0c, at + 2),
            b'n' => (b'\n', at + 2),
            b'r' => (b'\r', at + 2),
            b't' => (b'\t', at + 2),
            b'u' => {
                let (cp, next) = match hex4(content, at + 2)? {
                    hi @ 0xd800..=0xdbff => {
                        // A high surrogate must be followed by an escaped low one.
                        if content.get(at + 6..at + 8) != Some(b"\\u") {
                            return None;
                        }
                        match hex4(content, at + 8)? {
                            lo @ 0xdc00..=0xdfff => {
                                (0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00), at + 12)
                            }
                            _ => return None,
                        }
                    }
                    cp => (cp, at + 6),
                };
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(char::from_u32(cp)?.encode_utf8(&mut utf8).as_bytes());
                i = next;
                continue;
            }
            _ => return None,
        };
        out.push(byte);
        i = next;
    }
    out.extend_from_slice(content.get(i..)?);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::Mutator;
    use jiter::Jiter;

    #[test]
    fn plain_end_finds_every_stop_at_every_offset() {
        // Around the word size, a stop byte at every offset, and none at all, among plain
        // bytes of several kinds (ASCII, the first one past the controls, UTF-8 bytes).
        for (len, filler) in (0..48).flat_map(|len| [(len, b'x'), (len, 0x20), (len, 0xe9)]) {
            let plain = vec![filler; len];
            assert_eq!(plain_end(&plain, 0), len);
            for pos in 0..len {
                for stop in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                    let mut v = plain.clone();
                    v[pos] = stop;
                    for from in 0..=pos {
                        assert_eq!(plain_end(&v, from), pos, "len {len} pos {pos} from {from}");
                    }
                    assert_eq!(plain_end(&v, pos + 1), len);
                }
                // Of two stops, the first is found, whatever stands before and after it.
                for later in pos + 1..len {
                    let mut v = plain.clone();
                    v[pos] = 0x00;
                    v[later] = b'"';
                    assert_eq!(plain_end(&v, 0), pos, "len {len} pos {pos} later {later}");
                    v[pos] = b'\\';
                    v[later] = 0x01;
                    assert_eq!(plain_end(&v, 0), pos, "len {len} pos {pos} later {later}");
                }
                // Bytes just outside the set never stop a run.
                for plain_byte in [0x20, 0x21, 0x7f, 0x80, 0xff, b'#', b']'] {
                    let mut v = plain.clone();
                    v[pos] = plain_byte;
                    assert_eq!(plain_end(&v, 0), len);
                }
            }
        }
        for b in 0..=255u8 {
            assert_eq!(stops_string(b), b < 0x20 || b == b'"' || b == b'\\', "{b}");
        }
    }

    #[test]
    fn strings_of_valid_json() {
        // (lexeme, content, has escapes)
        let cases: &[(&str, &str, bool)] = &[
            (r#""""#, "", false),
            (r#""abc""#, "abc", false),
            (r#""a\"b""#, r#"a\"b"#, true),
            (r#""\\""#, r#"\\"#, true),
            (r#""\\\"""#, r#"\\\""#, true),
            (r#""x\u0022y""#, r#"x\u0022y"#, true),
            ("\"é€😀\"", "é€😀", false),
            (
                r#""a long string that runs past the table and into words\n""#,
                r#"a long string that runs past the table and into words\n"#,
                true,
            ),
        ];
        for &(lexeme, content, escaped) in cases {
            let body = format!("{lexeme} ,");
            let mut cur = Cursor::new(body.as_bytes());
            let (span, esc) = cur.string().unwrap();
            assert_eq!(span.of(body.as_bytes()), content.as_bytes(), "{lexeme}");
            assert_eq!(esc, escaped, "{lexeme}");
            assert_eq!(cur.pos, lexeme.len(), "{lexeme}");
            assert_eq!(cur.peek(), Some(b','));
        }
        // Not at a string, or unterminated: None, never a panic.
        for body in [&b"x"[..], b"", b"\"abc", b"\"ab\\"] {
            assert_eq!(Cursor::new(body).string(), None, "{body:?}");
        }
    }

    #[test]
    fn skip_gives_each_value_span() {
        let values = [
            "1",
            "-0.5e+3",
            "true",
            "null",
            r#""s\"]}""#,
            "[]",
            "{}",
            r#"[1,"]",{"a":[{}]},null]"#,
            r#"{ "k" : [ "}" , { } ] , "\"" : "\\" }"#,
        ];
        for v in values {
            for (before, after) in [("", ""), (" \n", " ,"), ("\t", "]"), ("", "}")] {
                let body = format!("{before}{v}{after}");
                let mut cur = Cursor::new(body.as_bytes());
                let span = cur.skip().unwrap();
                assert_eq!(span.of(body.as_bytes()), v.as_bytes(), "{body:?}");
                assert_eq!(cur.pos, before.len() + v.len());
            }
        }
        for body in [&b""[..], b"[1,2", b"{\"a\":", b"]"] {
            assert_eq!(Cursor::new(body).skip(), None, "{body:?}");
        }
    }

    #[test]
    fn objects_and_arrays_step_by_step() {
        let body = br#" { "a" : [ 1 , 2 ] , "b\n" : { } , "c" : [ ] } "#;
        let mut cur = Cursor::new(body);
        assert_eq!(cur.object_open(), Some(true));
        let mut keys = Vec::new();
        let mut more = true;
        while more {
            let (key, escaped) = cur.key().unwrap();
            keys.push((String::from_utf8(key.of(body).to_vec()).unwrap(), escaped));
            match cur.peek().unwrap() {
                b'[' => {
                    let mut items = 0;
                    let mut go = cur.array_open().unwrap();
                    while go {
                        cur.skip().unwrap();
                        items += 1;
                        go = cur.array_next().unwrap();
                    }
                    assert!(items == 2 || items == 0);
                }
                _ => {
                    cur.skip().unwrap();
                }
            }
            more = cur.object_next().unwrap();
        }
        assert_eq!(
            keys,
            [
                ("a".to_owned(), false),
                ("b\\n".to_owned(), true),
                ("c".to_owned(), false)
            ]
        );
        assert_eq!(cur.peek(), None);
        assert_eq!(Cursor::new(b"{}").object_open(), Some(false));
        assert_eq!(Cursor::new(b"[ ]").array_open(), Some(false));
        assert_eq!(Cursor::new(b"[1]").object_open(), None);
        assert_eq!(Cursor::new(b"{\"a\" 1}").key(), None);
        let mut cur = Cursor::new(b"1 x");
        cur.skip();
        assert_eq!(cur.object_next(), None);
    }

    fn unescaped(content: &[u8]) -> Option<Vec<u8>> {
        let mut out = b"kept:".to_vec();
        unescape(content, &mut out)?;
        assert!(out.starts_with(b"kept:"), "appends");
        Some(out.split_off(5))
    }

    #[test]
    fn unescape_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", Some("")),
            ("plain", Some("plain")),
            (r#"\"\\\/\b\f\n\r\t"#, Some("\"\\/\u{8}\u{c}\n\r\t")),
            (r"a\u00e9b", Some("aéb")),
            (r"\u20AC\u20ac", Some("€€")),
            (r"\ud83d\ude00!", Some("😀!")),
            (r"\uD83D\uDE00", Some("😀")),
            (r"x\u0000y", Some("x\u{0}y")),
            (r"\ud83d", None),
            (r"\ud83dx", None),
            (r"\ud83d\u0041", None),
            (r"\ude00", None),
            (r"\x", None),
            (r"\u12", None),
            (r"\u12g4", None),
            ("\\", None),
        ];
        for &(content, want) in cases {
            let got = unescaped(content.as_bytes());
            assert_eq!(
                got.as_deref(),
                want.map(str::as_bytes),
                "{content:?} -> {:?}",
                got.as_ref().map(|g| String::from_utf8_lossy(g))
            );
        }
    }

    #[test]
    fn unescape_agrees_with_jiter() {
        // Strings full of escapes, mutated: wherever jiter reads one, unescape gives the same
        // text.
        let base = br#"a\"b\\c\/d\be\ff\ng\rh\ti\u00e9j\ud83d\ude00k\u20ACl"#;
        let alphabet = b"\\\"/bfnrtu0123456789abcdefABCDEFdDxy ";
        let mut mutator = Mutator::new(0x9e37_79b9);
        for _ in 0..20_000 {
            let mut v = base.to_vec();
            for _ in 0..(1 + mutator.next() % 3) {
                let r = mutator.next();
                let pos = (r as usize >> 8) % v.len();
                v[pos] = alphabet[(r as usize >> 32) % alphabet.len()];
            }
            let mut lexeme = vec![b'"'];
            lexeme.extend_from_slice(&v);
            lexeme.push(b'"');
            let mut jiter = Jiter::new(&lexeme);
            let Ok(text) = jiter.next_str().map(str::to_owned) else {
                continue;
            };
            if jiter.finish().is_err() {
                continue; // an unescaped quote ended the string early
            }
            assert_eq!(
                unescaped(&v).as_deref(),
                Some(text.as_bytes()),
                "{:?}",
                String::from_utf8_lossy(&v)
            );
        }
    }
}
