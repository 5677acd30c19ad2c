//! Framing: one pass over a JSON-RPC body that validates it as JSON and classifies each message.
//!
//! Pure Rust (no pyo3). The result holds byte spans into the body, never copies of it. The
//! scanner ([`decode`], in `scan.rs`) is iterative with an explicit depth limit, so hostile
//! nesting is refused at `max_depth` without recursion. In the same pass it records the parts
//! of a `params` object that planning a `tools/call` needs ([`CallParts`]: `name`,
//! `arguments`, what `_meta` holds). What it gives ([`Frame`], [`Entry`]) is in `entry.rs`;
//! its table-driven tests, held to jiter, are in `tests.rs`.

mod entry;
mod scan;
#[cfg(test)]
mod tests;

pub use crate::cursor::Span;
pub use entry::{
    CallParts, Entry, EntryKind, Frame, FrameKind, Meta, META_CLIENT_CAPABILITIES, META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
};
pub use scan::decode;

/// Nesting allowed by default: the batch array counts as one level, an entry object as another.
pub const DEFAULT_MAX_DEPTH: usize = 100;
/// Entries allowed in one batch by default.
pub const DEFAULT_MAX_BATCH: usize = 256;
