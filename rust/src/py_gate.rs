//! `Gate`: the HTTP transport's check of a usual POST, in one call over Granian's scope.
//!
//! The transport (`McpHttpApp._usual`) judges a POST's headers in Python: Host, Origin,
//! Content-Type, Accept, Content-Length and `MCP-Protocol-Version`. Most requests of a
//! deployment carry the same few of those values, so the verdict on them is learned: once
//! Python finds a request usual it tells the gate (`learn`) the accept flags and revision it
//! found for those values, and `admit` gives the same verdict for the next request that
//! carries them, reading each header as the general path does (every readable Host, the
//! first readable value of the others: `jetmcp.transports._http.first`).
//!
//! Granian makes a new Python string for every name and value asked for, and a new header
//! map each time `scope.headers` is read (which `admit` hands back to the caller). A
//! 2026-07-28 request is read whole, from one `items()` call, because every `Mcp-*` name
//! counts; any other only by the names a verdict depends on (`get`, `get_all`), which costs
//! less the more other headers a client sends (measured with `bench/load/callgrind_live.py`:
//! 5,000 instructions per request fewer with a real client's ten headers). Granian's `get`
//! gives None when a header's first value cannot be read even if a later one can: such a
//! request goes to Python. The checks that vary per request (how many Host values,
//! `:authority`, whether an Origin came, the body's length) are made here every time.
//! Nothing here calls jetmcp's own Python, and nothing here judges a value Python has not
//! judged first: a request `admit` does not know goes to Python.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::py_headers::Pairs;

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
    /// The `MCP-Protocol-Version` values of the verdicts on 2026-07-28 requests.
    modern: Vec<String>,
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

/// What [`Gate::admit`] reads of a header map's readable `(name, value)` pairs: how many
/// Host values and the first, the first value of each other header it checks (the first
/// readable one, as `jetmcp.transports._http.first` reads it), and the MCP headers.
#[derive(Default)]
struct Read<'py> {
    hosts: usize,
    host: Option<Bound<'py, PyString>>,
    content_type: Option<Bound<'py, PyString>>,
    accept: Option<Bound<'py, PyString>>,
    length: Option<Bound<'py, PyString>>,
    pairs: Pairs,
}

impl<'py> Read<'py> {
    fn pair(&mut self, item: &Bound<'py, PyAny>) -> PyResult<()> {
        let item = item.cast::<PyTuple>()?;
        let key = item.get_item(0)?.cast_into::<PyString>()?;
        let value = item.get_item(1)?.cast_into::<PyString>()?;
        let name = key.to_str()?;
        let first = match name {
            "host" => {
                self.hosts += 1;
                &mut self.host
            }
            "content-type" => &mut self.content_type,
            "accept" => &mut self.accept,
            "content-length" => &mut self.length,
            _ => return self.pairs.take(name, &key, value.as_any()),
        };
        if first.is_none() {
            *first = Some(value);
        }
        Ok(())
    }
}

/// The header values a verdict depends on, read one way or the other.
struct Seen<'py> {
    host: Bound<'py, PyString>,
    content_type: Option<Bound<'py, PyString>>,
    accept: Option<Bound<'py, PyString>>,
    length: Bound<'py, PyString>,
    version: Bound<'py, PyString>,
    /// The MCP headers, when every pair was read.
    pairs: Option<Pairs>,
}

/// `name`'s first readable value, as `jetmcp.transports._http.first` reads it, from
/// Granian's `get` (`get`: the header map's bound method): `Some(Some(value))`,
/// `Some(None)` when the header is absent, and None when it came but its first value cannot
/// be read (`get` then gives None even if a later value is readable: Python judges that).
fn first_value<'py>(
    headers: &Bound<'py, PyAny>,
    get: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Option<Bound<'py, PyString>>>> {
    let value = get.call1((name,))?;
    if !value.is_none() {
        return Ok(Some(Some(value.cast_into::<PyString>()?)));
    }
    if headers.contains(name)? {
        return Ok(None);
    }
    Ok(Some(None))
}

/// Every readable pair, from one `items()` call (`version`: the version `get` read, which
/// is also the first readable one): None unless there is exactly one Host and a
/// Content-Length among them.
fn read_all<'py>(
    headers: &Bound<'py, PyAny>,
    version: Bound<'py, PyString>,
) -> PyResult<Option<Seen<'py>>> {
    let items = headers.call_method0(intern!(headers.py(), "items"))?;
    let mut read = Read::default();
    if let Ok(list) = items.cast::<PyList>() {
        for item in list.iter() {
            read.pair(&item)?;
        }
    } else {
        for item in items.try_iter()? {
            read.pair(&item?)?;
        }
    }
    let (1, Some(host), Some(length)) = (read.hosts, read.host, read.length) else {
        return Ok(None);
    };
    Ok(Some(Seen {
        host,
        content_type: read.content_type,
        accept: read.accept,
        length,
        version,
        pairs: Some(read.pairs),
    }))
}

/// The headers a verdict depends on, by name (`version` already read): None unless there
/// is exactly one readable Host, a Content-Length, and every header read is readable.
fn read_named<'py>(
    headers: &Bound<'py, PyAny>,
    get: &Bound<'py, PyAny>,
    version: Bound<'py, PyString>,
) -> PyResult<Option<Seen<'py>>> {
    let py = headers.py();
    let hosts = headers.call_method1(intern!(py, "get_all"), (intern!(py, "host"),))?;
    let hosts = hosts.cast_into::<PyList>()?;
    if hosts.len() != 1 {
        return Ok(None);
    }
    let host = hosts.get_item(0)?.cast_into::<PyString>()?;
    let Some(content_type) = first_value(headers, get, intern!(py, "content-type"))? else {
        return Ok(None);
    };
    let Some(accept) = first_value(headers, get, intern!(py, "accept"))? else {
        return Ok(None);
    };
    let Some(Some(length)) = first_value(headers, get, intern!(py, "content-length"))? else {
        return Ok(None);
    };
    Ok(Some(Seen {
        host,
        content_type,
        accept,
        length,
        version,
        pairs: None,
    }))
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
            modern: Vec::new(),
        }
    }

    /// `(accept, revision, routing, headers)` for a POST whose header values were learned
    /// and whose per-request checks pass (`routing`: the routing headers of a 2026-07-28
    /// one, whose revision is None; `headers`: the scope's header map, read once here, for
    /// the caller to read more of), else None.
    fn admit<'py>(&self, scope: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.known.is_empty() {
            return Ok(None);
        }
        let py = scope.py();
        // Granian makes a new header map each time `scope.headers` is read, and a new
        // string for each name and value asked for.
        let headers = scope.getattr(intern!(py, "headers"))?;
        let get = headers.getattr(intern!(py, "get"))?;
        let Some(Some(version)) = first_value(&headers, &get, intern!(py, "mcp-protocol-version"))?
        else {
            return Ok(None);
        };
        let modern = {
            let version = version.to_str()?;
            self.modern.iter().any(|m| m == version)
        };
        let seen = if modern {
            // A 2026-07-28 request: every `Mcp-*` name counts, so every pair is read, in one
            // `items()` call.
            match read_all(&headers, version)? {
                Some(seen) => seen,
                None => return Ok(None),
            }
        } else {
            // Any other: the five headers the verdict depends on, by name (cheaper than
            // every pair of a client that sends many others).
            match read_named(&headers, &get, version)? {
                Some(seen) => seen,
                None => return Ok(None),
            }
        };
        let Seen {
            host,
            content_type,
            accept,
            length,
            version,
            pairs,
        } = seen;
        let host = host.to_str()?;
        let authority = scope.getattr(intern!(py, "authority"))?;
        if !authority.is_none() && authority.cast::<PyString>()?.to_str()? != host {
            return Ok(None);
        }
        // Any Origin, even one whose value cannot be read (which `items` leaves out).
        if headers.contains(intern!(py, "origin"))? {
            return Ok(None);
        }
        if !length_within(length.to_str()?, self.max_body) {
            return Ok(None);
        }
        let key = key_of(
            host,
            content_type.as_ref().map(|v| v.to_str()).transpose()?,
            accept.as_ref().map(|v| v.to_str()).transpose()?,
            version.to_str()?,
        );
        let Some(verdict) = self.known.get(&key) else {
            return Ok(None);
        };
        let routing = match (verdict.modern, pairs) {
            (true, Some(pairs)) => Bound::new(py, pairs.finish())?.into_any(),
            (false, _) => py.None().into_bound(py),
            // Read by name, so its MCP headers are unknown: Python judges it.
            (true, None) => return Ok(None),
        };
        let out = (
            verdict.accept,
            verdict.revision.bind(py).clone(),
            routing,
            headers,
        );
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
            self.modern.clear();
        }
        let modern = revision.is_none();
        if modern && !self.modern.iter().any(|m| m == version) {
            self.modern.push(version.to_owned());
        }
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
