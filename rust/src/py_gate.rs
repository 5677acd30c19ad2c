//! `Gate`: the HTTP transport's check of a usual POST, in one call over Granian's scope.
//!
//! The transport (`McpHttpApp._usual`) judges a POST's headers in Python: Host, Origin,
//! Content-Type, Accept, Content-Length and `MCP-Protocol-Version`. Most requests of a
//! deployment carry the same few of those values, so the verdict on them is learned: once
//! Python finds a request usual it tells the gate (`learn`) the accept flags and revision it
//! found for those values, and `admit` gives the same verdict for the next request that
//! carries them, reading each header as the general path does (`get_all("host")`, `get` of
//! the others). The checks that vary per request (how many Host values, `:authority`,
//! whether an Origin came, the body's length) are made here every time. Nothing here calls jetmcp's own Python, and nothing here judges a value Python has
//! not judged first: a request `admit` does not know goes to Python.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::py_plan::read_pairs;

/// Stands for an absent header in a key (a readable value is visible ASCII).
const ABSENT: char = '\u{1}';

/// What Python found for one set of header values: the accept flags, and the revision
/// (None: a 2026-07-28 one, whose routing headers `admit` reads too).
struct Verdict {
    accept: u8,
    revision: Py<PyAny>,
    modern: bool,
}

/// Learned verdicts on the header values of usual POSTs (see the module docs).
#[pyclass(module = "jetmcp._wire", name = "Gate")]
pub struct Gate {
    max_body: u64,
    capacity: usize,
    known: HashMap<String, Verdict, ahash::RandomState>,
}

/// The key of a verdict: the values it depends on, each once.
fn key_of(host: &str, content_type: Option<&str>, accept: Option<&str>, version: &str) -> String {
    let mut key = String::with_capacity(
        host.len()
            + content_type.map_or(1, str::len)
            + accept.map_or(1, str::len)
            + version.len()
            + 3,
    );
    for part in [Some(host), content_type, accept, Some(version)] {
        match part {
            Some(value) => key.push_str(value),
            None => key.push(ABSENT),
        }
        key.push('\0');
    }
    key
}

/// A `Content-Length` within `limit`: plain ASCII digits only (any other spelling, which
/// Python's `int` may still read, is left to Python).
fn length_within(value: &str, limit: u64) -> bool {
    !value.is_empty()
        && value.len() <= 19
        && value.bytes().all(|b| b.is_ascii_digit())
        && value.parse::<u64>().is_ok_and(|n| n <= limit)
}

#[pymethods]
impl Gate {
    /// A gate for bodies of at most `max_body` bytes that keeps at most `capacity` verdicts
    /// (when full it forgets them all and learns again).
    #[new]
    #[pyo3(signature = (max_body, capacity = 256))]
    fn new(max_body: u64, capacity: usize) -> Self {
        Gate {
            max_body,
            capacity,
            known: HashMap::default(),
        }
    }

    /// `(accept, revision, routing)` for a POST whose header values were learned and whose
    /// per-request checks pass (`routing`: the routing headers of a 2026-07-28 one, whose
    /// revision is None), else None.
    fn admit<'py>(&self, scope: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.known.is_empty() {
            return Ok(None);
        }
        let py = scope.py();
        let headers = scope.getattr(intern!(py, "headers"))?;
        // The values the general path reads, read the same way: every readable Host, and
        // the first value of the others (None when absent or when Granian cannot read it).
        let hosts = headers.call_method1(intern!(py, "get_all"), (intern!(py, "host"),))?;
        if hosts.len()? != 1 {
            return Ok(None);
        }
        let host = hosts.get_item(0)?;
        let host = host.cast::<PyString>()?.to_str()?;
        let authority = scope.getattr(intern!(py, "authority"))?;
        if !authority.is_none() && authority.cast::<PyString>()?.to_str()? != host {
            return Ok(None);
        }
        if headers.contains(intern!(py, "origin"))? {
            return Ok(None);
        }
        let get = |name: &Bound<'py, PyString>| -> PyResult<Option<Bound<'py, PyString>>> {
            let value = headers.call_method1(intern!(py, "get"), (name,))?;
            if value.is_none() {
                return Ok(None);
            }
            Ok(Some(value.cast_into::<PyString>()?))
        };
        let (Some(length), Some(version)) = (
            get(intern!(py, "content-length"))?,
            get(intern!(py, "mcp-protocol-version"))?,
        ) else {
            return Ok(None);
        };
        if !length_within(length.to_str()?, self.max_body) {
            return Ok(None);
        }
        let content_type = get(intern!(py, "content-type"))?;
        let accept = get(intern!(py, "accept"))?;
        let key = key_of(
            host,
            content_type.as_ref().map(|v| v.to_str()).transpose()?,
            accept.as_ref().map(|v| v.to_str()).transpose()?,
            version.to_str()?,
        );
        let Some(verdict) = self.known.get(&key) else {
            return Ok(None);
        };
        let routing = if verdict.modern {
            let items = headers.call_method0(intern!(py, "items"))?;
            Bound::new(py, read_pairs(&items, false)?)?.into_any()
        } else {
            py.None().into_bound(py)
        };
        let out = (verdict.accept, verdict.revision.bind(py).clone(), routing);
        Ok(Some(out.into_pyobject(py)?))
    }

    /// Remember what Python found for a usual POST with these header values: its accept
    /// flags and its revision (None: a 2026-07-28 request).
    #[pyo3(signature = (host, content_type, accept, version, flags, revision))]
    fn learn(
        &mut self,
        host: &str,
        content_type: Option<&str>,
        accept: Option<&str>,
        version: &str,
        flags: u8,
        revision: Bound<'_, PyAny>,
    ) {
        if self.known.len() >= self.capacity {
            self.known.clear();
        }
        let modern = revision.is_none();
        self.known.insert(
            key_of(host, content_type, accept, version),
            Verdict {
                accept: flags,
                revision: revision.unbind(),
                modern,
            },
        );
    }

    /// How many verdicts are kept.
    fn __len__(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_plain_digits_within_the_limit() {
        assert!(length_within("0", 10));
        assert!(length_within("10", 10));
        assert!(!length_within("11", 10));
        for odd in [
            "",
            " 1",
            "+1",
            "1_0",
            "-1",
            "1.0",
            "١",
            "99999999999999999999",
        ] {
            assert!(!length_within(odd, u64::MAX), "{odd:?}");
        }
    }

    #[test]
    fn keys_tell_absent_from_empty() {
        assert_ne!(
            key_of("h", None, Some("a"), "v"),
            key_of("h", Some(""), Some("a"), "v")
        );
        assert_ne!(
            key_of("h", Some("a"), None, "v"),
            key_of("h", None, Some("a"), "v")
        );
    }
}
