//! `Headers`: the MCP routing headers of one HTTP request at 2026-07-28, read once from a
//! header map or `(name, value)` pairs, for the extension's planning (`plan::Headers`) and
//! for Python's general path alike; and [`Pairs`], the reader `Gate` feeds header by header.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::plan::Headers;

/// The MCP routing headers of one HTTP request at 2026-07-28: the one type both the
/// extension and Python's general path read them from.
#[pyclass(frozen, module = "jetmcp._wire", name = "Headers")]
pub struct PyHeaders {
    inner: Headers,
    /// Each `Mcp-Param-<Name>` by its lower-cased `<Name>`, as sent (the last of repeats).
    param_values: Vec<(String, Py<PyAny>)>,
    /// The names of the MCP headers sent more than once, as spelled.
    repeated_names: Vec<Py<PyString>>,
}

/// The routing headers read so far, header by header ([`Found::take`]), until
/// [`Found::finish`] makes the `Headers` of them.
#[derive(Default)]
struct Found {
    protocol_version: Option<String>,
    method: Option<String>,
    name: Option<String>,
    param_values: Vec<(String, Py<PyAny>)>,
    repeated_names: Vec<Py<PyString>>,
}

impl Found {
    /// One MCP header (`lower` starts with `mcp-`): its last value; `repeated` when it came
    /// more than once (then `spelled` makes its name).
    fn take(
        &mut self,
        lower: &str,
        spelled: impl FnOnce() -> Py<PyString>,
        value: Value<'_, '_>,
        repeated: bool,
    ) -> PyResult<()> {
        if repeated {
            self.repeated_names.push(spelled());
        }
        match lower {
            "mcp-protocol-version" => self.protocol_version = Some(value.text()?),
            "mcp-method" => self.method = Some(value.text()?),
            "mcp-name" => self.name = Some(value.text()?),
            _ => {
                if let Some(param) = lower.strip_prefix("mcp-param-") {
                    let value = value.object();
                    match self.param_values.iter_mut().find(|(k, _)| k == param) {
                        Some(slot) => slot.1 = value,
                        None => self.param_values.push((param.to_owned(), value)),
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> PyHeaders {
        PyHeaders {
            inner: Headers {
                protocol_version: self.protocol_version,
                method: self.method,
                name: self.name,
                params: !self.param_values.is_empty(),
                repeated: !self.repeated_names.is_empty(),
            },
            param_values: self.param_values,
            repeated_names: self.repeated_names,
        }
    }
}

/// One header's value: a Python object (from a header map), or the text of a raw field
/// line, made a Python string only when it is kept as one (an `Mcp-Param-*` value): the
/// three routing headers are read as text, with no Python object made.
enum Value<'a, 'py> {
    Object(&'a Bound<'py, PyAny>),
    Text(Python<'py>, &'a str),
}

impl Value<'_, '_> {
    fn text(&self) -> PyResult<String> {
        match self {
            Value::Object(value) => value.extract(),
            Value::Text(_, text) => Ok((*text).to_owned()),
        }
    }

    fn object(&self) -> Py<PyAny> {
        match self {
            Value::Object(value) => (*value).clone().unbind(),
            Value::Text(py, text) => PyString::new(*py, text).into_any().unbind(),
        }
    }
}

/// Reads the MCP headers among `(name, value)` pairs, one pair at a time ([`Pairs::take`]),
/// until [`Pairs::finish`] makes the `Headers` of them: the last value of each name, and
/// each name sent more than once named once in `repeated`.
#[derive(Default)]
pub(crate) struct Pairs {
    found: Found,
    /// Whether each of the three routing headers was seen, and then whether it is already
    /// named as repeated (no allocation for the usual request).
    usual: [(bool, bool); 3],
    /// Every other MCP name seen, and the same.
    seen: Vec<(String, bool)>,
}

impl Pairs {
    /// One pair whose name, lower-case, is `name` (spelled `key`); pairs not named `mcp-*`
    /// are passed over.
    pub(crate) fn take(
        &mut self,
        name: &str,
        key: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let Some(repeated) = self.mark(name) else {
            return Ok(());
        };
        let spelled = || key.clone().unbind();
        self.found
            .take(name, spelled, Value::Object(value), repeated)
    }

    /// [`Pairs::take`] for a raw field line whose name, lower-case, is `name` and whose
    /// value reads as `text`: a Python string is made only of what is kept as one (an
    /// `Mcp-Param-*` value, the name of a repeated header).
    fn take_text(&mut self, py: Python<'_>, name: &str, text: &str) -> PyResult<()> {
        let Some(repeated) = self.mark(name) else {
            return Ok(());
        };
        let spelled = || PyString::new(py, name).unbind();
        self.found
            .take(name, spelled, Value::Text(py, text), repeated)
    }

    /// Notes that `name` (lower-case) was seen: None when it is not an MCP name, else
    /// whether it is to be named as repeated now (its second time, not a later one).
    fn mark(&mut self, name: &str) -> Option<bool> {
        if !name.starts_with("mcp-") {
            return None;
        }
        let slot = match name {
            "mcp-protocol-version" => Some(0),
            "mcp-method" => Some(1),
            "mcp-name" => Some(2),
            _ => None,
        };
        let (was_seen, named) = match slot {
            Some(i) => {
                let (was_seen, named) = &mut self.usual[i];
                (std::mem::replace(was_seen, true), named)
            }
            None => match self.seen.iter().position(|(n, _)| n == name) {
                Some(i) => (true, &mut self.seen[i].1),
                None => {
                    self.seen.push((name.to_owned(), false));
                    let last = self.seen.len() - 1;
                    (false, &mut self.seen[last].1)
                }
            },
        };
        Some(was_seen && !std::mem::replace(named, true))
    }

    /// The `Headers` of every pair taken.
    pub(crate) fn finish(self) -> PyHeaders {
        self.found.finish()
    }
}

/// The MCP headers among `(name, value)` pairs, in order ([`Pairs`]). `lower`: names are
/// lower-cased first (Python's `str.lower`); else they are lower-case already.
pub(crate) fn read_pairs(items: &Bound<'_, PyAny>, lower: bool) -> PyResult<PyHeaders> {
    let py = items.py();
    let mut pairs = Pairs::default();
    for item in items.try_iter()? {
        let (key, value): (Bound<'_, PyString>, Bound<'_, PyAny>) = item?.extract()?;
        let lowered;
        let spelled = if lower {
            lowered = key.call_method0(intern!(py, "lower"))?;
            lowered.cast::<PyString>()?.to_cow()?
        } else {
            key.to_cow()?
        };
        pairs.take(&spelled, &key, &value)?;
    }
    Ok(pairs.finish())
}

/// Whether a header value reads as the native engine's `RequestHeaders` (and Granian)
/// read one: visible ASCII, spaces and tabs only.
fn readable(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// The MCP headers among raw `(name, value)` field lines, as [`PyHeaders::from_map`] reads
/// them from the native engine's `RequestHeaders`: names lower-cased (they are tokens,
/// ASCII), a value outside visible ASCII left out; no Python string for any other header.
pub(crate) fn from_fields<'a>(
    py: Python<'_>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> PyResult<PyHeaders> {
    let mut pairs = Pairs::default();
    for (name, value) in fields {
        if name.len() < 4 || !name[..4].eq_ignore_ascii_case(b"mcp-") || !readable(value) {
            continue;
        }
        // A readable value is ASCII: it is its own str.
        let text = std::str::from_utf8(value).unwrap_or_default();
        // The usual name is lower-cased on the stack, with no allocation.
        let mut buf = [0u8; 32];
        if name.len() <= buf.len() && name.is_ascii() {
            let lower = &mut buf[..name.len()];
            lower.copy_from_slice(name);
            lower.make_ascii_lowercase();
            let lower = std::str::from_utf8(lower).unwrap_or_default();
            pairs.take_text(py, lower, text)?;
        } else {
            let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
            pairs.take_text(py, &lower, text)?;
        }
    }
    Ok(pairs.finish())
}

#[pymethods]
impl PyHeaders {
    #[new]
    #[pyo3(signature = (protocol_version = None, method = None, name = None, params = None, repeated = Vec::new()))]
    fn new(
        protocol_version: Option<String>,
        method: Option<String>,
        name: Option<String>,
        params: Option<&Bound<'_, PyDict>>,
        repeated: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Self> {
        let mut param_values = Vec::new();
        if let Some(params) = params {
            for (key, value) in params.iter() {
                param_values.push((key.extract::<String>()?, value.unbind()));
            }
        }
        Ok(Found {
            protocol_version,
            method,
            name,
            param_values,
            repeated_names: repeated.into_iter().map(Bound::unbind).collect(),
        }
        .finish())
    }

    /// The MCP headers of a header map whose names are lower-case and whose `items()`
    /// lists every readable value, repeats included (Granian's, or the ASGI adapter's): a
    /// value Granian cannot read is left out, so a name with none is as if absent.
    #[staticmethod]
    fn from_map(map: &Bound<'_, PyAny>) -> PyResult<Self> {
        let items = map.call_method0(intern!(map.py(), "items"))?;
        read_pairs(&items, false)
    }

    /// The MCP headers of `(name, value)` pairs, names in any case (lower-cased as Python's
    /// `str.lower` does).
    #[staticmethod]
    fn from_items(items: &Bound<'_, PyAny>) -> PyResult<Self> {
        read_pairs(items, true)
    }

    #[getter]
    fn protocol_version(&self) -> Option<String> {
        self.inner.protocol_version.clone()
    }

    #[getter]
    fn method(&self) -> Option<String> {
        self.inner.method.clone()
    }

    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.name.clone()
    }

    /// Each `Mcp-Param-<Name>` value by its lower-cased `<Name>` (a new dict).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (key, value) in &self.param_values {
            out.set_item(key, value.bind(py))?;
        }
        Ok(out)
    }

    /// The MCP headers sent more than once (each a mismatch), as spelled.
    #[getter]
    fn repeated<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.repeated_names.iter().map(|n| n.bind(py)))
    }

    /// Whether a header naming one request (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) is
    /// present.
    #[getter]
    fn routes(&self) -> bool {
        self.inner.routes()
    }

    fn __repr__(&self) -> String {
        format!(
            "<Headers version={:?} method={:?} name={:?} params={} repeated={}>",
            self.inner.protocol_version,
            self.inner.method,
            self.inner.name,
            self.param_values.len(),
            self.repeated_names.len()
        )
    }
}

impl PyHeaders {
    /// What planning reads of these headers.
    #[inline]
    pub(crate) fn routing(&self) -> &Headers {
        &self.inner
    }
}
