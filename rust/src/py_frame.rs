//! The Python face of [`crate::frame`]: `decode`, `Frame` and `Entry`.

use std::sync::OnceLock;

use jiter::cached_py_string;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::frame::{self, Entry, EntryKind, FrameKind, Span};

/// Bodies at least this large are scanned with the GIL released.
const DETACH_THRESHOLD: usize = 64 * 1024;

/// One message of a frame. Built by `decode`; never constructed by hand.
///
/// Holds the body it was read from (no copy) and byte spans into it.
#[pyclass(frozen, freelist = 512, module = "jetmcp._wire", name = "Entry")]
pub struct PyEntry {
    body: Py<PyBytes>,
    entry: Entry,
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Request => "REQUEST",
        EntryKind::Notification => "NOTIFICATION",
        EntryKind::Response => "RESPONSE",
        EntryKind::Invalid => "INVALID",
    }
}

impl PyEntry {
    fn bytes_of<'py>(&self, py: Python<'py>, span: Span) -> Bound<'py, PyBytes> {
        PyBytes::new(py, span.of(self.body.as_bytes(py)))
    }

    fn parse_span<'py>(&self, py: Python<'py>, span: Option<Span>) -> PyResult<Bound<'py, PyAny>> {
        let Some(span) = span else {
            return Ok(py.None().into_bound(py));
        };
        crate::py_build::build(py, span.of(self.body.as_bytes(py)))
    }
}

#[pymethods]
impl PyEntry {
    /// REQUEST, NOTIFICATION, RESPONSE or INVALID.
    #[getter]
    fn kind(&self) -> u8 {
        self.entry.kind as u8
    }

    /// The `method` string, when it is one.
    #[getter]
    fn method<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        // Method names repeat: jiter's string cache hands back the same str (hash included).
        self.entry
            .method_str(self.body.as_bytes(py))
            .map(|m| cached_py_string(py, &m))
    }

    /// The id exactly as written, or None when absent or not to be trusted.
    #[getter]
    fn raw_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.entry.id.map(|span| self.bytes_of(py, span))
    }

    /// One of the ID_* constants.
    #[getter]
    fn id_class(&self) -> u8 {
        self.entry.id_class as u8
    }

    /// Why the entry is INVALID, else None.
    #[getter]
    fn reason(&self) -> Option<&'static str> {
        self.entry.reason
    }

    /// Whether a `params` member is present.
    #[getter]
    fn has_params(&self) -> bool {
        self.entry.params.is_some()
    }

    /// For a RESPONSE: whether it carries `error` rather than `result`.
    #[getter]
    fn is_error(&self) -> bool {
        self.entry.is_error
    }

    /// `params` built into Python objects from its span (None when absent).
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.parse_span(py, self.entry.params)
    }

    /// For a RESPONSE: `result` (or `error` when `is_error`) as Python objects.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.parse_span(py, self.entry.result)
    }

    /// For a `tools/call` request: the bytes of `params.arguments` as they stand in the
    /// body, when `params` is an object whose keys are written without escapes and that
    /// holds `arguments` once; else None.
    fn arguments_raw<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let body = self.body.as_bytes(py);
        let span = crate::plan::arguments(body, &self.entry)?;
        Some(PyBytes::new(py, span.of(body)))
    }

    /// The entry's own bytes, as they stood in the input.
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.bytes_of(py, self.entry.span)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let id = match self.entry.id {
            Some(span) => String::from_utf8_lossy(span.of(self.body.as_bytes(py))).into_owned(),
            None => "None".to_owned(),
        };
        let mut s = format!("<Entry {}", kind_name(self.entry.kind));
        if let Some(m) = self.entry.method_str(self.body.as_bytes(py)) {
            s.push_str(&format!(" method={m:?}"));
        }
        s.push_str(&format!(" id={id}"));
        if let Some(r) = self.entry.reason {
            s.push_str(&format!(" reason={r:?}"));
        }
        s.push('>');
        s
    }
}

/// What `decode` found in one body.
///
/// The entries stay Rust values until Python first asks for `entries`: a body whose requests
/// the extension answers itself (the plain tools of `py_route`) never builds an `Entry` object.
#[pyclass(frozen, module = "jetmcp._wire", name = "Frame")]
pub struct PyFrame {
    /// One of the FRAME_* constants.
    #[pyo3(get)]
    pub(crate) kind: u8,
    /// For FRAME_PARSE_ERROR and FRAME_BATCH_TOO_LARGE: what went wrong.
    #[pyo3(get)]
    error: Option<String>,
    body: Py<PyBytes>,
    parsed: Vec<Entry>,
    /// Built on first use ([`PyFrame::entry_list`]).
    entries: OnceLock<Py<PyList>>,
}

impl PyFrame {
    /// The body the frame was read from.
    pub(crate) fn body<'py>(&self, py: Python<'py>) -> &Bound<'py, PyBytes> {
        self.body.bind(py)
    }

    /// Whether the frame is one `initialize` request (told without building `entries`).
    pub(crate) fn is_initialize(&self, py: Python<'_>) -> bool {
        self.kind == FrameKind::Single as u8
            && self.parsed.first().is_some_and(|entry| {
                entry.kind == EntryKind::Request
                    && entry
                        .method_str(self.body.as_bytes(py))
                        .is_some_and(|m| m == "initialize")
            })
    }

    /// The entries as parsed, in order.
    pub(crate) fn parsed(&self) -> &[Entry] {
        &self.parsed
    }

    /// The `entries` list, built on first use.
    ///
    /// Not `PyOnceLock::get_or_try_init`, which lets go of the GIL around its lock (some 450
    /// instructions on every request Python reads the entries of): the list is built first,
    /// with the GIL held, and then stored unless another thread stored one meanwhile (building
    /// runs Python, so the GIL can pass to another thread that builds too). Every caller gets
    /// the first list stored. Storing runs no Python, so no thread waits on it for long.
    pub(crate) fn entry_list<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyList>> {
        if let Some(list) = self.entries.get() {
            return Ok(list.bind(py));
        }
        let list = PyList::empty(py);
        for entry in &self.parsed {
            let e = Bound::new(
                py,
                PyEntry {
                    body: self.body.clone_ref(py),
                    entry: entry.clone(),
                },
            )?;
            list.append(e)?;
        }
        let built = list.unbind();
        Ok(self.entries.get_or_init(|| built).bind(py))
    }
}

#[pymethods]
impl PyFrame {
    /// The messages: one for FRAME_SINGLE, each array element for FRAME_BATCH, else empty.
    #[getter]
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.entry_list(py).cloned()
    }

    /// Whether the frame is one `initialize` request (told without building `entries`).
    #[getter]
    fn initialize(&self, py: Python<'_>) -> bool {
        self.is_initialize(py)
    }

    fn __repr__(&self) -> String {
        let kind = match self.kind {
            k if k == FrameKind::Single as u8 => "SINGLE",
            k if k == FrameKind::Batch as u8 => "BATCH",
            k if k == FrameKind::ParseError as u8 => "PARSE_ERROR",
            k if k == FrameKind::EmptyBatch as u8 => "EMPTY_BATCH",
            _ => "BATCH_TOO_LARGE",
        };
        match &self.error {
            Some(e) => format!("<Frame {kind} error={e:?}>"),
            None => format!("<Frame {kind} entries={}>", self.parsed.len()),
        }
    }
}

/// Frame one JSON-RPC body. Never raises for bad input: bad input is described by the frame
/// and its entries. `max_depth` bounds nesting (deeper is a parse error); `max_batch` bounds
/// the entries of an array.
#[pyfunction]
#[pyo3(signature = (body, max_depth = frame::DEFAULT_MAX_DEPTH, max_batch = frame::DEFAULT_MAX_BATCH))]
pub fn decode<'py>(
    py: Python<'py>,
    body: &Bound<'py, PyBytes>,
    max_depth: usize,
    max_batch: usize,
) -> PyResult<Bound<'py, PyFrame>> {
    let data = body.as_bytes();
    let frame = if data.len() >= DETACH_THRESHOLD {
        py.detach(|| frame::decode(data, max_depth, max_batch))
    } else {
        frame::decode(data, max_depth, max_batch)
    };
    Bound::new(
        py,
        PyFrame {
            kind: frame.kind as u8,
            error: frame.error,
            body: body.clone().unbind(),
            parsed: frame.entries,
            entries: OnceLock::new(),
        },
    )
}
