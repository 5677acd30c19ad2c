//! JSON-RPC ids: which class a raw id lexeme falls in.
//!
//! The id of a request is echoed back byte for byte, so it is never converted to a number and
//! back. This module only decides whether a number lexeme is a "safe" integer, one that every
//! JSON peer (JavaScript included) reads without losing precision: no fraction, no exponent and
//! `|n| <= 2**53 - 1`.

/// The largest integer a double represents exactly along with all its neighbours.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// How an entry's `id` member was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum IdClass {
    /// No `id` member.
    Absent = 1,
    /// `"id": null`.
    Null = 2,
    /// A JSON string.
    String = 3,
    /// An integer lexeme with `|n| <= 2**53 - 1`.
    Int = 4,
    /// A fraction, an exponent, or an integer outside the safe range.
    UnsafeNumber = 5,
    /// An object, an array or a boolean.
    Other = 6,
}

impl IdClass {
    /// Whether an id of this class can be echoed back in a reply.
    #[inline]
    pub fn is_echoable(self) -> bool {
        matches!(self, IdClass::String | IdClass::Int)
    }

    /// A short name for messages.
    pub fn describe(self) -> &'static str {
        match self {
            IdClass::Absent => "absent",
            IdClass::Null => "null",
            IdClass::String => "a string",
            IdClass::Int => "an integer",
            IdClass::UnsafeNumber => "a fraction, an exponent or an integer beyond 2**53-1",
            IdClass::Other => "an object, an array or a boolean",
        }
    }
}

/// Classify a number lexeme that the JSON scanner already accepted.
///
/// Returns [`IdClass::Int`] for an integer lexeme within the safe range, else
/// [`IdClass::UnsafeNumber`]. Never panics, whatever the input.
pub fn classify_number(lexeme: &[u8]) -> IdClass {
    let digits = match lexeme.split_first() {
        Some((b'-', rest)) => rest,
        Some(_) => lexeme,
        None => return IdClass::UnsafeNumber,
    };
    // 2**53 - 1 = 9007199254740991 has 16 digits; a longer valid lexeme (no leading zeros) is
    // out of range, and one with `.`, `e` or `E` is not an integer.
    if digits.is_empty() || digits.len() > 16 {
        return IdClass::UnsafeNumber;
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return IdClass::UnsafeNumber;
        }
        // At most 16 digits: cannot overflow a u64.
        value = value * 10 + u64::from(b - b'0');
    }
    if value <= MAX_SAFE_INTEGER {
        IdClass::Int
    } else {
        IdClass::UnsafeNumber
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_classes() {
        let cases: &[(&str, IdClass)] = &[
            ("0", IdClass::Int),
            ("-0", IdClass::Int),
            ("1", IdClass::Int),
            ("42", IdClass::Int),
            ("-42", IdClass::Int),
            ("9007199254740991", IdClass::Int),
            ("-9007199254740991", IdClass::Int),
            ("9007199254740992", IdClass::UnsafeNumber),
            ("-9007199254740992", IdClass::UnsafeNumber),
            ("9999999999999999", IdClass::UnsafeNumber),
            ("10000000000000000", IdClass::UnsafeNumber),
            ("18446744073709551616", IdClass::UnsafeNumber),
            (&"9".repeat(400), IdClass::UnsafeNumber),
            ("1.5", IdClass::UnsafeNumber),
            ("1.0", IdClass::UnsafeNumber),
            ("1e3", IdClass::UnsafeNumber),
            ("1E2", IdClass::UnsafeNumber),
            ("1e400", IdClass::UnsafeNumber),
            ("-1e-3", IdClass::UnsafeNumber),
            ("", IdClass::UnsafeNumber),
            ("-", IdClass::UnsafeNumber),
        ];
        for (lexeme, want) in cases {
            assert_eq!(classify_number(lexeme.as_bytes()), *want, "{lexeme}");
        }
    }

    #[test]
    fn echoable() {
        assert!(IdClass::String.is_echoable());
        assert!(IdClass::Int.is_echoable());
        for c in [
            IdClass::Absent,
            IdClass::Null,
            IdClass::UnsafeNumber,
            IdClass::Other,
        ] {
            assert!(!c.is_echoable());
            assert!(!c.describe().is_empty());
        }
    }
}
