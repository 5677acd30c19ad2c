//! The Python face of [`crate::http1`]: `Http1Connection` (a server's side of a connection),
//! `Http1Request`, `Http1ClientConnection`, `Http1Response` and `Http1Error`.
//!
//! Built for a protocol callback on the event loop: `feed` takes the received bytes and gives
//! back the next complete request (a Rust value the extension's own code can read without
//! Python), the writers give back the bytes to write. Nothing here touches a socket.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use smallvec::SmallVec;

use crate::http1::client::{ClientConnection, ClientEvent, Response};
use crate::http1::response::{self, FieldBlock, WriteError};
use crate::http1::server::{Request, ServerConnection};
use crate::http1::{Limits, Refusal, Version};
use crate::py_headers::{from_fields, PyHeaders};

pyo3::create_exception!(
    _wire,
    Http1Error,
    PyValueError,
    "A peer's bad HTTP/1.1 framing. `status`: the status to answer with (None: close without \
     an answer); `reason`: why; `response`: the bytes to write before closing."
);

pub(crate) fn refusal_error(py: Python<'_>, refusal: &Refusal) -> PyErr {
    let err = Http1Error::new_err(refusal.reason);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory.
    let _ = value.setattr("status", refusal.status);
    let _ = value.setattr("reason", refusal.reason);
    let _ = value.setattr("response", PyBytes::new(py, &response::refusal(refusal)));
    err
}

pub(crate) fn write_error(e: &WriteError) -> PyErr {
    match e {
        WriteError::NoRequest | WriteError::NoStream | WriteError::Busy => {
            PyRuntimeError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

type FieldList<'a> = SmallVec<[(&'a [u8], &'a [u8]); 8]>;

/// Borrows `(name, value)` pairs of bytes from a list or tuple of 2-tuples.
fn fields_of<'py>(headers: &Bound<'py, PyAny>) -> PyResult<SmallVec<[Bound<'py, PyAny>; 16]>> {
    let mut held = SmallVec::new();
    for item in headers.try_iter()? {
        let item = item?;
        let pair = item
            .cast::<PyTuple>()
            .map_err(|_| PyValueError::new_err("headers must be (name, value) tuples of bytes"))?;
        if pair.len() != 2 {
            return Err(PyValueError::new_err(
                "headers must be (name, value) tuples of bytes",
            ));
        }
        held.push(pair.get_item(0)?);
        held.push(pair.get_item(1)?);
    }
    Ok(held)
}

fn slices<'a>(held: &'a [Bound<'_, PyAny>]) -> PyResult<FieldList<'a>> {
    let mut out = FieldList::new();
    for pair in held.chunks(2) {
        let name = pair[0]
            .cast::<PyBytes>()
            .map_err(|_| PyValueError::new_err("header names and values must be bytes"))?;
        let value = pair[1]
            .cast::<PyBytes>()
            .map_err(|_| PyValueError::new_err("header names and values must be bytes"))?;
        out.push((name.as_bytes(), value.as_bytes()));
    }
    Ok(out)
}

fn limits(
    max_line: usize,
    max_head: usize,
    max_headers: usize,
    max_body: u64,
    max_chunk_line: usize,
    max_trailers: usize,
    max_buffer: usize,
) -> Limits {
    Limits {
        max_line,
        max_head,
        max_headers,
        max_body,
        max_chunk_line,
        max_trailers,
        max_buffer,
    }
}

fn version_bytes(v: Version) -> &'static [u8] {
    match v {
        Version::Http10 => b"1.0",
        Version::Http11 => b"1.1",
    }
}

/// Response header fields checked once, for responses that carry the same ones each time.
#[pyclass(frozen, module = "jetmcp._wire", name = "Http1Fields")]
pub struct PyFields {
    block: FieldBlock,
}

#[pymethods]
impl PyFields {
    #[new]
    fn new(headers: &Bound<'_, PyAny>) -> PyResult<Self> {
        let held = fields_of(headers)?;
        let fields = slices(&held)?;
        let block = FieldBlock::new(&fields).map_err(|e| write_error(&e))?;
        Ok(PyFields { block })
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.block.as_bytes())
    }
}

/// A verdict key: the first value of each header of `names`, each followed by NUL, with
/// 0x01 in place of an absent header's value. Field values hold no NUL and no 0x01 (the
/// parser refuses control bytes), so the key is unambiguous.
pub(crate) fn gate_key<N: AsRef<[u8]>>(request: &Request, names: &[N]) -> SmallVec<[u8; 256]> {
    let mut key: SmallVec<[u8; 256]> = SmallVec::new();
    for name in names {
        match request.header(name.as_ref()) {
            Some(value) => key.extend_from_slice(value),
            None => key.push(1),
        }
        key.push(0);
    }
    key
}

/// [`gate_key`] of a POST whose target is exactly `path`, else None.
pub(crate) fn lane_key<N: AsRef<[u8]>>(
    request: &Request,
    path: &[u8],
    names: &[N],
) -> Option<SmallVec<[u8; 256]>> {
    if request.method() != b"POST" || request.target() != path {
        return None;
    }
    Some(gate_key(request, names))
}

fn byte_names<'py>(names: &Bound<'py, PyTuple>) -> PyResult<SmallVec<[Bound<'py, PyBytes>; 8]>> {
    names
        .iter()
        .map(|name| {
            name.cast_into::<PyBytes>()
                .map_err(|_| PyValueError::new_err("header names must be bytes"))
        })
        .collect()
}

/// A complete request handed out by `Http1Connection.feed`.
#[pyclass(frozen, freelist = 64, module = "jetmcp._wire", name = "Http1Request")]
pub struct PyRequest {
    pub(crate) request: Request,
}

#[pymethods]
impl PyRequest {
    #[getter]
    fn method<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.request.method())
    }

    #[getter]
    fn target<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.request.target())
    }

    #[getter]
    fn http_version<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, version_bytes(self.request.version()))
    }

    #[getter]
    fn keep_alive(&self) -> bool {
        self.request.keep_alive()
    }

    #[getter]
    fn expects_continue(&self) -> bool {
        self.request.expects_continue()
    }

    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.request.body())
    }

    fn header<'py>(&self, py: Python<'py>, name: &[u8]) -> Option<Bound<'py, PyBytes>> {
        self.request.header(name).map(|v| PyBytes::new(py, v))
    }

    fn header_all<'py>(&self, py: Python<'py>, name: &[u8]) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.request.header_all(name).map(|v| PyBytes::new(py, v)),
        )
    }

    fn header_key<'py>(
        &self,
        py: Python<'py>,
        names: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let names = byte_names(names)?;
        Ok(PyBytes::new(py, &gate_key(&self.request, &names)))
    }

    /// `header_key(names)` of a POST to `path` exactly, else None: the native engine's
    /// first look at a request (is it the usual POST, and which verdict does it need) in
    /// one call, with no bytes made for the method or target.
    fn lane_key<'py>(
        &self,
        py: Python<'py>,
        path: &[u8],
        names: &Bound<'py, PyTuple>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let names = byte_names(names)?;
        Ok(lane_key(&self.request, path, &names).map(|key| PyBytes::new(py, &key)))
    }

    /// The MCP routing headers (`Headers.from_map` over the engine's header map, read
    /// from the parsed bytes: only `Mcp-*` lines become Python strings).
    fn routing(&self, py: Python<'_>) -> PyResult<PyHeaders> {
        from_fields(py, self.request.header_items())
    }

    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.request
                .header_items()
                .map(|(n, v)| (PyBytes::new(py, n), PyBytes::new(py, v))),
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "<Http1Request {} {} HTTP/{}>",
            String::from_utf8_lossy(self.request.method()),
            String::from_utf8_lossy(self.request.target()),
            String::from_utf8_lossy(version_bytes(self.request.version()))
        )
    }
}

/// A server's side of one HTTP/1.1 connection.
#[pyclass(module = "jetmcp._wire", name = "Http1Connection")]
pub struct PyConnection {
    pub(crate) conn: ServerConnection,
    out: Vec<u8>,
}

impl PyConnection {
    /// A state machine with the default limits and a request body of at most `max_body`
    /// bytes.
    pub(crate) fn with_max_body(max_body: u64) -> Self {
        let limits = Limits {
            max_body,
            ..Limits::default()
        };
        PyConnection {
            conn: ServerConnection::new(limits),
            out: Vec::new(),
        }
    }

    fn handed(
        &mut self,
        py: Python<'_>,
        got: Result<Option<Request>, Refusal>,
    ) -> PyResult<Option<Py<PyRequest>>> {
        match got {
            Ok(Some(request)) => Ok(Some(Py::new(py, PyRequest { request })?)),
            Ok(None) => Ok(None),
            Err(refusal) => Err(refusal_error(py, &refusal)),
        }
    }

    fn take_out<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = PyBytes::new(py, &self.out);
        self.out.clear();
        bytes
    }

    /// The whole response to the outstanding request, with header fields checked once
    /// (`respond` with an `Http1Fields`).
    pub(crate) fn respond_with<'py>(
        &mut self,
        py: Python<'py>,
        status: u16,
        block: &FieldBlock,
        body: &[u8],
        close: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.conn
            .respond_block(status, block, body, close, &mut self.out)
            .map_err(|e| write_error(&e))?;
        Ok(self.take_out(py))
    }
}

#[pymethods]
impl PyConnection {
    #[new]
    #[pyo3(signature = (
        *,
        max_line = Limits::default().max_line,
        max_head = Limits::default().max_head,
        max_headers = Limits::default().max_headers,
        max_body = Limits::default().max_body,
        max_chunk_line = Limits::default().max_chunk_line,
        max_trailers = Limits::default().max_trailers,
        max_buffer = Limits::default().max_buffer,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        max_line: usize,
        max_head: usize,
        max_headers: usize,
        max_body: u64,
        max_chunk_line: usize,
        max_trailers: usize,
        max_buffer: usize,
    ) -> Self {
        let l = limits(
            max_line,
            max_head,
            max_headers,
            max_body,
            max_chunk_line,
            max_trailers,
            max_buffer,
        );
        PyConnection {
            conn: ServerConnection::new(l),
            out: Vec::new(),
        }
    }

    fn feed(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<Option<Py<PyRequest>>> {
        let got = self.conn.feed(data);
        self.handed(py, got)
    }

    fn next_request(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyRequest>>> {
        let got = self.conn.next_request();
        self.handed(py, got)
    }

    #[getter]
    fn phase(&self) -> u8 {
        self.conn.phase() as u8
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.conn.buffered()
    }

    #[getter]
    fn wants_pause(&self) -> bool {
        self.conn.wants_pause()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.conn.is_closed()
    }

    pub(crate) fn take_continue<'py>(&mut self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.conn
            .take_continue()
            .then(|| PyBytes::new(py, response::CONTINUE))
    }

    #[pyo3(signature = (status, headers, body, close = false))]
    fn respond<'py>(
        &mut self,
        py: Python<'py>,
        status: u16,
        headers: &Bound<'py, PyAny>,
        body: &[u8],
        close: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if let Ok(block) = headers.cast::<PyFields>() {
            return self.respond_with(py, status, &block.get().block, body, close);
        }
        let held = fields_of(headers)?;
        let fields = slices(&held)?;
        self.conn
            .respond(status, &fields, body, close, &mut self.out)
            .map_err(|e| write_error(&e))?;
        Ok(self.take_out(py))
    }

    #[pyo3(signature = (status, headers, close = false))]
    fn start_stream<'py>(
        &mut self,
        py: Python<'py>,
        status: u16,
        headers: &Bound<'py, PyAny>,
        close: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let done = if let Ok(block) = headers.cast::<PyFields>() {
            self.conn
                .start_stream_block(status, &block.get().block, close, &mut self.out)
        } else {
            let held = fields_of(headers)?;
            let fields = slices(&held)?;
            self.conn
                .start_stream(status, &fields, close, &mut self.out)
        };
        done.map_err(|e| write_error(&e))?;
        Ok(self.take_out(py))
    }

    fn stream_data<'py>(&mut self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.conn
            .stream_data(data, &mut self.out)
            .map_err(|e| write_error(&e))?;
        Ok(self.take_out(py))
    }

    fn end_stream<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.conn
            .end_stream(&mut self.out)
            .map_err(|e| write_error(&e))?;
        Ok(self.take_out(py))
    }
}

/// A complete plain-text response that closes the connection (a timeout's 408, an
/// overload's 503).
#[pyfunction]
pub fn http1_simple_response<'py>(
    py: Python<'py>,
    status: u16,
    text: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    if !(200..=999).contains(&status) {
        return Err(PyValueError::new_err(format!(
            "status {status} is not a final response status"
        )));
    }
    Ok(PyBytes::new(py, &response::simple(status, text)))
}

/// A response read by `Http1ClientConnection`.
#[pyclass(frozen, freelist = 16, module = "jetmcp._wire", name = "Http1Response")]
pub struct PyResponse {
    response: Response,
    complete: bool,
}

#[pymethods]
impl PyResponse {
    #[getter]
    fn status(&self) -> u16 {
        self.response.status()
    }

    #[getter]
    fn http_version<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, version_bytes(self.response.version()))
    }

    #[getter]
    fn keep_alive(&self) -> bool {
        self.response.keep_alive()
    }

    #[getter]
    fn complete(&self) -> bool {
        self.complete
    }

    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.response.body())
    }

    fn header<'py>(&self, py: Python<'py>, name: &[u8]) -> Option<Bound<'py, PyBytes>> {
        self.response.header(name).map(|v| PyBytes::new(py, v))
    }

    fn header_all<'py>(&self, py: Python<'py>, name: &[u8]) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.response.header_all(name).map(|v| PyBytes::new(py, v)),
        )
    }

    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.response
                .header_items()
                .map(|(n, v)| (PyBytes::new(py, n), PyBytes::new(py, v))),
        )
    }

    fn __repr__(&self) -> String {
        format!("<Http1Response {}>", self.response.status())
    }
}

/// A client's side of one HTTP/1.1 connection.
#[pyclass(module = "jetmcp._wire", name = "Http1ClientConnection")]
pub struct PyClientConnection {
    conn: ClientConnection,
}

#[pymethods]
impl PyClientConnection {
    #[new]
    #[pyo3(signature = (
        *,
        max_line = Limits::default().max_line,
        max_head = Limits::default().max_head,
        max_headers = Limits::default().max_headers,
        max_body = Limits::default().max_body,
        max_chunk_line = Limits::default().max_chunk_line,
        max_trailers = Limits::default().max_trailers,
    ))]
    fn new(
        max_line: usize,
        max_head: usize,
        max_headers: usize,
        max_body: u64,
        max_chunk_line: usize,
        max_trailers: usize,
    ) -> Self {
        let l = limits(
            max_line,
            max_head,
            max_headers,
            max_body,
            max_chunk_line,
            max_trailers,
            0,
        );
        PyClientConnection {
            conn: ClientConnection::new(l),
        }
    }

    #[getter]
    fn idle(&self) -> bool {
        self.conn.is_idle()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.conn.is_closed()
    }

    #[pyo3(signature = (method, target, headers, body = None, stream = false))]
    fn request<'py>(
        &mut self,
        py: Python<'py>,
        method: &[u8],
        target: &[u8],
        headers: &Bound<'py, PyAny>,
        body: Option<&[u8]>,
        stream: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let held = fields_of(headers)?;
        let fields = slices(&held)?;
        let mut out = Vec::new();
        self.conn
            .write_request(method, target, &fields, body, stream, &mut out)
            .map_err(|e| write_error(&e))?;
        Ok(PyBytes::new(py, &out))
    }

    /// Takes received bytes (b"" for the server's end of stream) and returns what completed.
    fn feed<'py>(&mut self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
        if data.is_empty() {
            self.conn.feed_eof();
        } else {
            self.conn.feed(data);
        }
        let events = PyList::empty(py);
        loop {
            match self.conn.next_event() {
                Ok(None) => return Ok(events),
                Ok(Some(event)) => {
                    let item: Bound<'py, PyAny> = match event {
                        ClientEvent::Response(response) => Bound::new(
                            py,
                            PyResponse {
                                response,
                                complete: true,
                            },
                        )?
                        .into_any(),
                        ClientEvent::Head(response) => Bound::new(
                            py,
                            PyResponse {
                                response,
                                complete: false,
                            },
                        )?
                        .into_any(),
                        ClientEvent::Data(data) => PyBytes::new(py, &data).into_any(),
                        ClientEvent::End => PyBytes::new(py, b"").into_any(),
                    };
                    events.append(item)?;
                }
                Err(refusal) => return Err(refusal_error(py, &refusal)),
            }
        }
    }
}
