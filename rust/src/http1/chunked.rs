//! The chunked transfer coding (RFC 9112 7.1), decoded as it arrives: requests and responses
//! share it. Chunk extensions and trailer fields are read within their limits and dropped.
//!
//! Strict where framing is at stake: the size is 1*HEXDIG (no sign, no `0x`, at most 16
//! significant digits), its line and the one after each chunk's data end in CRLF. Lenient
//! only as h11 is: whitespace before the line ending or before `;`.

use super::scan::{Scanned, SectionScan};
use super::{is_field_value_byte, Limits, Refusal};

const BAD_SIZE: Refusal = Refusal::new(400, "invalid chunk size line");
const BAD_END: Refusal = Refusal::new(400, "chunk data not followed by CRLF");
const LONG_LINE: Refusal = Refusal::new(400, "chunk size line too long");
const TOO_LARGE: Refusal = Refusal::new(413, "body too large");
const BAD_TRAILER: Refusal = Refusal::new(400, "invalid trailer field");

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Reading a chunk-size line; `searched` bytes of it hold no LF.
    Size {
        searched: usize,
    },
    /// Copying chunk data.
    Data {
        remaining: u64,
    },
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    Trailers(SectionScan),
    Done,
}

/// The decoding state of one chunked body.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    step: Step,
    /// Body bytes decoded so far.
    total: u64,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            step: Step::Size { searched: 0 },
            total: 0,
        }
    }
}

/// Reads a chunk-size line (without its CRLF): the size, once it is known to be well formed.
fn chunk_size(line: &[u8]) -> Result<u64, Refusal> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(BAD_SIZE);
    }
    let significant = line[..digits].iter().skip_while(|&&b| b == b'0').count();
    if significant > 16 {
        return Err(Refusal::new(400, "chunk size overflows"));
    }
    let mut size = 0u64;
    for &b in &line[..digits] {
        size = (size << 4) | u64::from((b as char).to_digit(16).unwrap_or(0));
    }
    let mut rest = &line[digits..];
    while let [b' ' | b'\t', tail @ ..] = rest {
        rest = tail;
    }
    match rest {
        [] => Ok(size),
        // Extensions are dropped unread; they must still be field-value bytes.
        [b';', ext @ ..] if ext.iter().all(|&b| is_field_value_byte(b)) => Ok(size),
        _ => Err(BAD_SIZE),
    }
}

impl ChunkedDecoder {
    /// Whether the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        matches!(self.step, Step::Done)
    }

    /// Decodes what it can of `input` into `out`. Returns how many bytes of `input` it used;
    /// the rest (after the end of the body) belongs to the next message.
    pub fn decode(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limits: &Limits,
    ) -> Result<usize, Refusal> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match &mut self.step {
                Step::Size { searched } => {
                    let Some(off) = memchr::memchr(b'\n', &rest[*searched..]) else {
                        *searched = rest.len();
                        // The line so far, less a CR that may be its ending.
                        let mut len = rest.len();
                        if rest.last() == Some(&b'\r') {
                            len -= 1;
                        }
                        if len > limits.max_chunk_line {
                            return Err(LONG_LINE);
                        }
                        return Ok(used);
                    };
                    let nl = *searched + off;
                    if nl == 0 || rest[nl - 1] != b'\r' {
                        // A bare LF: refuse, as h11 does, rather than guess at the framing.
                        if nl > limits.max_chunk_line {
                            return Err(LONG_LINE);
                        }
                        return Err(BAD_SIZE);
                    }
                    let line = &rest[..nl - 1];
                    if line.len() > limits.max_chunk_line {
                        return Err(LONG_LINE);
                    }
                    let size = chunk_size(line)?;
                    used += nl + 1;
                    if size > limits.max_body.saturating_sub(self.total) {
                        return Err(TOO_LARGE);
                    }
                    self.total += size;
                    self.step = if size == 0 {
                        Step::Trailers(SectionScan::default())
                    } else {
                        Step::Data { remaining: size }
                    };
                }
                Step::Data { remaining } => {
                    if rest.is_empty() {
                        return Ok(used);
                    }
                    let take = (*remaining).min(rest.len() as u64) as usize;
                    out.extend_from_slice(&rest[..take]);
                    used += take;
                    *remaining -= take as u64;
                    if *remaining == 0 {
                        self.step = Step::DataEnd;
                    }
                }
                Step::DataEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        used += 2;
                        self.step = Step::Size { searched: 0 };
                    }
                    [] | [b'\r'] => return Ok(used),
                    _ => return Err(BAD_END),
                },
                Step::Trailers(scan) => {
                    match scan.scan(rest, limits.max_line, limits.max_trailers, false)? {
                        Scanned::Partial => return Ok(used),
                        Scanned::End(len) => {
                            check_trailers(&rest[..len], limits.max_headers)?;
                            used += len;
                            self.step = Step::Done;
                            return Ok(used);
                        }
                    }
                }
                Step::Done => return Ok(used),
            }
        }
    }
}

/// Checks a complete trailer section (its blank line included): well-formed field lines,
/// at most `max_fields` of them. Their values are dropped.
fn check_trailers(section: &[u8], max_fields: usize) -> Result<(), Refusal> {
    let mut storage = [httparse::EMPTY_HEADER; super::MAX_HEADERS_CAP];
    match httparse::parse_headers(section, &mut storage[..max_fields]) {
        Ok(httparse::Status::Complete((n, _))) if n == section.len() => Ok(()),
        Err(httparse::Error::TooManyHeaders) => Err(super::scan::TOO_LARGE),
        _ => Err(BAD_TRAILER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Result<(Vec<u8>, usize, bool), Refusal> {
        let mut d = ChunkedDecoder::default();
        let mut out = Vec::new();
        let used = d.decode(input, &mut out, &Limits::default())?;
        Ok((out, used, d.is_done()))
    }

    #[test]
    fn sizes() {
        let cases: &[(&[u8], Result<u64, Refusal>)] = &[
            (b"0", Ok(0)),
            (b"a", Ok(10)),
            (b"A", Ok(10)),
            (b"00000000000000000000ff", Ok(255)),
            (b"ffffffffffffffff", Ok(u64::MAX)),
            (
                b"1ffffffffffffffff",
                Err(Refusal::new(400, "chunk size overflows")),
            ),
            (b"5 ", Ok(5)),
            (b"5 ;a=b", Ok(5)),
            (b"5;a=\"x y\"", Ok(5)),
            (b"0x5", Err(BAD_SIZE)),
            (b"+5", Err(BAD_SIZE)),
            (b"-5", Err(BAD_SIZE)),
            (b" 5", Err(BAD_SIZE)),
            (b"", Err(BAD_SIZE)),
            (b"5 5", Err(BAD_SIZE)),
            (b"5;\x00", Err(BAD_SIZE)),
            (b"g", Err(BAD_SIZE)),
        ];
        for (line, want) in cases {
            assert_eq!(
                chunk_size(line),
                *want,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn bodies() {
        assert_eq!(
            decode_all(b"5\r\nhello\r\n0\r\n\r\nNEXT"),
            Ok((b"hello".to_vec(), 15, true))
        );
        assert_eq!(
            decode_all(b"2;ext=1\r\nhi\r\n1\r\n!\r\n0\r\nTrailer: x\r\n\r\n"),
            Ok((b"hi!".to_vec(), 36, true))
        );
        assert_eq!(decode_all(b"5\r\nhelloXX"), Err(BAD_END));
        assert_eq!(decode_all(b"5\nhello\r\n0\r\n\r\n"), Err(BAD_SIZE));
        assert_eq!(decode_all(b"0\r\nBad Trailer\r\n\r\n"), Err(BAD_TRAILER));
        assert_eq!(decode_all(b"0\r\n \r\n\r\n"), Err(BAD_TRAILER));
        assert_eq!(decode_all(b"500001\r\n"), Err(TOO_LARGE));
        assert_eq!(decode_all(b"3\r\nabc"), Ok((b"abc".to_vec(), 6, false)));
    }
}
