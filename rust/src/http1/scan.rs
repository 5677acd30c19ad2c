//! Finding the end of a head (or a trailer section) as its bytes arrive, in one pass over
//! each byte, checking line and section sizes on the way.
//!
//! The verdict depends only on the bytes, never on how they were split between reads: each
//! check is made at a line's end or on the bytes seen so far, and every size violation has the
//! same status (431). A head is parsed only once its end is found, so a syntax error is never
//! judged on part of a head.

use super::Refusal;

pub(crate) const TOO_LARGE: Refusal = Refusal::new(431, "request header fields too large");

/// Where a section scan stands.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SectionScan {
    /// Bytes of the section examined so far.
    pos: usize,
    /// Where the current line starts.
    line_start: usize,
    /// Whether a non-empty line has been seen (empty lines before the first one are skipped
    /// when the section is a head: RFC 9112 2.2).
    seen_line: bool,
}

/// What a scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scanned {
    /// The section is not complete yet.
    Partial,
    /// The section ends after this many bytes (its blank line included).
    End(usize),
}

impl SectionScan {
    /// Scans the bytes of `section` not seen before. `skip_leading`: empty lines before the
    /// first line are part of the section but do not end it (a head); otherwise the first
    /// empty line ends it (a trailer section, which may be empty).
    pub(crate) fn scan(
        &mut self,
        section: &[u8],
        max_line: usize,
        max_total: usize,
        skip_leading: bool,
    ) -> Result<Scanned, Refusal> {
        while let Some(off) = memchr::memchr(b'\n', &section[self.pos..]) {
            let nl = self.pos + off;
            let mut end = nl;
            if end > self.line_start && section[end - 1] == b'\r' {
                end -= 1;
            }
            let len = end - self.line_start;
            if len > max_line {
                return Err(TOO_LARGE);
            }
            self.pos = nl + 1;
            self.line_start = nl + 1;
            if self.pos > max_total {
                return Err(TOO_LARGE);
            }
            if len == 0 {
                if self.seen_line || !skip_leading {
                    return Ok(Scanned::End(self.pos));
                }
            } else {
                self.seen_line = true;
            }
        }
        self.pos = section.len();
        let mut partial = section.len() - self.line_start;
        if section.last() == Some(&b'\r') && partial > 0 {
            partial -= 1;
        }
        if partial > max_line || section.len() > max_total {
            return Err(TOO_LARGE);
        }
        Ok(Scanned::Partial)
    }

    /// Whether any bytes have been scanned (a head has begun).
    pub(crate) fn started(&self) -> bool {
        self.pos > 0
    }
}

/// The same verdict as scanning `section` from its start, for a section already known to end
/// at `len` (used when the whole head came at once and was parsed before being scanned).
pub(crate) fn check_complete(
    section: &[u8],
    len: usize,
    max_line: usize,
    max_total: usize,
    skip_leading: bool,
) -> Result<(), Refusal> {
    // No line can be longer than the section, and the section is within max_total.
    if len <= max_line && len <= max_total {
        return Ok(());
    }
    match SectionScan::default().scan(&section[..len], max_line, max_total, skip_leading)? {
        Scanned::End(n) if n == len => Ok(()),
        // The parser and the scanner disagree on where the section ends: refuse rather than
        // guess which one framed it.
        _ => Err(Refusal::new(400, "malformed head")),
    }
}
