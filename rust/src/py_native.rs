//! The native engine's read path in the extension: `Http1Protocol`, the base of the engine's
//! `asyncio.Protocol` (`jetmcp.transports.native.connection.HttpConnection`), whose
//! `data_received` is Rust, and `NativeLane`, the server's answer to one complete request.
//!
//! uvloop calls a protocol's `data_received` through the bound method it looked up once; with
//! this base that method is the extension's, so a usual POST (a tool call the extension plans
//! and answers) runs from the socket's bytes to the written reply with no Python frame of the
//! engine's own: feed the state machine, judge the request (its method, target and gate
//! headers, looked up in the server's verdicts), decode its body, ask the dispatcher, frame
//! the reply, write it, and go on as the connection must (the next pipelined request, a
//! close, a `100 Continue`, reading resumed or paused). What the extension does not finish
//! goes on in the server's Python at the point where the Python path would be
//! (`_usual`, `_hot`, `_eager_rest`, `_general`, `_judge`, the connection's `serve` and
//! `refuse`), so there is one path, split between the two languages, not two.
//!
//! The connection's state that Python reads and sets (`conn`, `transport`, `busy`, `gone`,
//! `write_paused`, `read_paused`, `served`) lives here, behind attributes of the same names.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use pyo3::PyTraverseError;

use crate::frame::FrameKind;
use crate::http1::response::FieldBlock;
use crate::http1::Refusal;
use crate::py_frame::{decode, PyFrame};
use crate::py_headers::from_fields;
use crate::py_http::{lane_key, refusal_error, PyConnection, PyRequest};
use crate::py_plan::{Outcome, Plans};

/// What the server answers a request with, fixed when it starts (see the module docs).
#[pyclass(frozen, module = "jetmcp._wire", name = "NativeLane")]
pub struct NativeLane {
    /// The `NativeServer`: its `draining` flag and the Python rest of a request's path.
    server: Py<PyAny>,
    /// The app whose usual POST is answered here (None: every request goes through the
    /// server's general path).
    app: Option<Py<PyAny>>,
    /// That app's `dispatcher.answer`.
    dispatch: Option<Py<PyAny>>,
    /// The MCP endpoint's path, as the request target must name it exactly.
    path: Vec<u8>,
    /// The header names a usual POST's verdict depends on, in key order.
    gate: Vec<Vec<u8>>,
    /// The verdicts judged so far (the server's `_judge`), by key; at most `max_verdicts`.
    verdicts: Mutex<HashMap<Vec<u8>, Py<PyAny>, ahash::RandomState>>,
    max_verdicts: usize,
    /// Set by `drain()`: every response from then on closes its connection.
    draining: AtomicBool,
    stateless: bool,
    max_depth: usize,
    max_batch: usize,
    /// The loop an `async` tool's task runs on.
    task_loop: Py<PyAny>,
    /// The revision a request with no revision in its verdict speaks (2026-07-28).
    modern: Py<PyAny>,
    /// `content-type: application/json`, checked once.
    json: FieldBlock,
    /// The request body limit each connection's state machine keeps.
    max_body: u64,
}

impl NativeLane {
    fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// The verdict on a request whose gate key is `key`: the one kept, else the server's
    /// `_judge` of it (kept for the next ones while fewer than `max_verdicts` are).
    fn verdict<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        request: &Bound<'py, PyRequest>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(found) = self.kept().get(key) {
            return Ok(found.bind(py).clone());
        }
        // Judged with the lock let go: `_judge` is Python.
        let found = self
            .server
            .bind(py)
            .call_method1(intern!(py, "_judge"), (request,))?;
        let mut kept = self.kept();
        if kept.len() < self.max_verdicts {
            kept.insert(key.to_vec(), found.clone().unbind());
        }
        Ok(found)
    }

    fn kept(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Py<PyAny>, ahash::RandomState>> {
        // A panic while the map was held cannot leave it half-written (inserts are whole).
        self.verdicts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The server's Python for a request the extension does not go on with.
    fn rest<'py, A>(&self, py: Python<'py>, name: &Bound<'py, PyString>, args: A) -> PyResult<bool>
    where
        A: pyo3::call::PyCallArgs<'py>,
    {
        self.server.bind(py).call_method1(name, args)?.is_truthy()
    }

    /// Write a whole `200` JSON reply on `connection` (not when its client is gone).
    fn reply(
        &self,
        py: Python<'_>,
        protocol: &Bound<'_, Http1Protocol>,
        body: &[u8],
    ) -> PyResult<()> {
        let draining = self.is_draining();
        let (conn, transport, gone) = {
            let p = protocol.borrow();
            (
                p.conn.clone_ref(py),
                p.transport.as_ref().map(|t| t.clone_ref(py)),
                p.gone,
            )
        };
        let data = conn
            .bind(py)
            .borrow_mut()
            .respond_with(py, 200, &self.json, body, draining)?;
        if let (false, Some(transport)) = (gone, transport) {
            transport
                .bind(py)
                .call_method1(intern!(py, "write"), (data,))?;
        }
        Ok(())
    }
}

#[pymethods]
impl NativeLane {
    #[new]
    #[pyo3(signature = (
        server, app, dispatch, path, gate, stateless, max_depth, max_batch, task_loop, modern,
        max_body, max_verdicts,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        server: Py<PyAny>,
        app: Option<Py<PyAny>>,
        dispatch: Option<Py<PyAny>>,
        path: Vec<u8>,
        gate: Vec<Vec<u8>>,
        stateless: bool,
        max_depth: usize,
        max_batch: usize,
        task_loop: Py<PyAny>,
        modern: Py<PyAny>,
        max_body: u64,
        max_verdicts: usize,
    ) -> PyResult<Self> {
        let json = FieldBlock::new(&[(b"content-type", b"application/json")])
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(NativeLane {
            server,
            app,
            dispatch,
            path,
            gate,
            verdicts: Mutex::new(HashMap::default()),
            max_verdicts,
            draining: AtomicBool::new(false),
            stateless,
            max_depth,
            max_batch,
            task_loop,
            modern,
            json,
            max_body,
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.server)?;
        visit.call(&self.app)?;
        visit.call(&self.dispatch)?;
        // Not while another holder has the map: it is only ever held for a lookup or an
        // insert, never across Python.
        if let Ok(kept) = self.verdicts.try_lock() {
            for verdict in kept.values() {
                visit.call(verdict)?;
            }
        }
        visit.call(&self.task_loop)?;
        visit.call(&self.modern)?;
        Ok(())
    }

    /// Whether the server drains (`drain()` was called).
    #[getter]
    fn draining(&self) -> bool {
        self.is_draining()
    }

    /// From now on every response closes its connection.
    fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// How many verdicts are kept.
    #[getter]
    fn verdicts(&self) -> usize {
        self.kept().len()
    }

    /// Answer `request` on `connection` (an `Http1Protocol`): True when it was answered
    /// before this returns, False when a task finishes it (the connection's `later`).
    ///
    /// A usual POST with no session to look up (a 2026-07-28 one, or any on a stateless
    /// server) costs one look at the method, target and gate headers, one verdict lookup,
    /// the decode, the dispatcher's answer and the framed reply when the extension answers
    /// its single call at once; else it goes on in the server's Python from where it is.
    fn answer(
        &self,
        connection: &Bound<'_, Http1Protocol>,
        request: &Bound<'_, PyRequest>,
    ) -> PyResult<bool> {
        let py = connection.py();
        let (Some(app), Some(dispatch)) = (&self.app, &self.dispatch) else {
            return self.rest(py, intern!(py, "_general"), (connection, request));
        };
        let r = &request.get().request;
        let Some(key) = lane_key(r, &self.path, &self.gate) else {
            return self.rest(py, intern!(py, "_general"), (connection, request));
        };
        let verdict = self.verdict(py, &key, request)?;
        if verdict.is_none() {
            return self.rest(py, intern!(py, "_general"), (connection, request));
        }
        let revision = verdict.cast::<PyTuple>()?.get_item(1)?;
        let (revision, headers) = if revision.is_none() {
            let headers = Bound::new(py, from_fields(py, r.header_items())?)?;
            (self.modern.bind(py).clone(), Some(headers))
        } else if self.stateless {
            (revision, None)
        } else {
            return self.rest(
                py,
                intern!(py, "_usual"),
                (app, connection, request, verdict),
            );
        };
        let routing = match &headers {
            Some(h) => h.clone().into_any(),
            None => py.None().into_bound(py),
        };
        let body = PyBytes::new(py, r.body());
        let frame = decode(py, &body, self.max_depth, self.max_batch)?;
        let mut done = py.None().into_bound(py);
        let f: &PyFrame = frame.get();
        if f.kind == FrameKind::Single as u8 && !f.is_initialize(py) {
            done = dispatch.bind(py).call1((
                &frame,
                &revision,
                &routing,
                false,
                self.task_loop.bind(py),
            ))?;
            if let Ok(reply) = done.cast::<PyBytes>() {
                self.reply(py, connection, reply.as_bytes())?;
                return Ok(true);
            }
            if done.is_exact_instance_of::<Outcome>() || done.is_exact_instance_of::<Plans>() {
                return self.rest(
                    py,
                    intern!(py, "_eager_rest"),
                    (
                        app, connection, request, body, frame, revision, verdict, routing, done,
                    ),
                );
            }
        }
        self.rest(
            py,
            intern!(py, "_hot"),
            (app, connection, request, verdict, routing, frame, done),
        )
    }
}

/// The base of the native engine's connection protocol (see the module docs).
#[pyclass(subclass, module = "jetmcp._wire", name = "Http1Protocol")]
pub struct Http1Protocol {
    lane: Py<NativeLane>,
    /// The connection's HTTP/1.1 state machine.
    #[pyo3(get)]
    conn: Py<PyConnection>,
    /// The transport (None until `connection_made`).
    #[pyo3(get, set)]
    transport: Option<Py<PyAny>>,
    /// The request whose reply a task is making (None: none is out).
    #[pyo3(get, set)]
    busy: Option<Py<PyAny>>,
    /// Set once the client is gone.
    #[pyo3(get, set)]
    gone: bool,
    #[pyo3(get, set)]
    write_paused: bool,
    #[pyo3(get, set)]
    read_paused: bool,
    /// Requests handed out so far.
    #[pyo3(get, set)]
    served: u64,
}

impl Http1Protocol {
    /// Bad framing: the connection's `refuse` (its answer, then the close).
    fn refuse(slf: &Bound<'_, Self>, refusal: &Refusal) -> PyResult<()> {
        let py = slf.py();
        let err = refusal_error(py, refusal);
        slf.call_method1(intern!(py, "refuse"), (err.value(py),))?;
        Ok(())
    }

    fn transport<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        match &slf.borrow().transport {
            Some(t) => Ok(t.bind(slf.py()).clone()),
            None => Err(PyRuntimeError::new_err(
                "the connection has no transport yet",
            )),
        }
    }

    /// A `100 Continue` owed to the request being read, written now.
    fn interim(slf: &Bound<'_, Self>, conn: &Bound<'_, PyConnection>) -> PyResult<()> {
        let py = slf.py();
        let interim = conn.borrow_mut().take_continue(py);
        if let Some(interim) = interim {
            Self::transport(slf)?.call_method1(intern!(py, "write"), (interim,))?;
        }
        Ok(())
    }
}

#[pymethods]
impl Http1Protocol {
    /// A connection of `server` (whose `native` is its `NativeLane`).
    #[new]
    fn new(server: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = server.py();
        let lane: Py<NativeLane> = server
            .getattr(intern!(py, "native"))?
            .cast_into::<NativeLane>()?
            .unbind();
        let max_body = lane.get().max_body;
        let conn = Py::new(py, PyConnection::with_max_body(max_body))?;
        Ok(Http1Protocol {
            lane,
            conn,
            transport: None,
            busy: None,
            gone: false,
            write_paused: false,
            read_paused: false,
            served: 0,
        })
    }

    /// The bytes a client sent: the requests they complete answered in order, as far as
    /// the connection may go on now (see the module docs).
    fn data_received(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<()> {
        let py = slf.py();
        let (conn, lane) = {
            let p = slf.borrow();
            (p.conn.clone_ref(py), p.lane.clone_ref(py))
        };
        let conn = conn.bind(py);
        let lane = lane.get();
        let got = conn.borrow_mut().conn.feed(data);
        match got {
            Err(refusal) => return Self::refuse(slf, &refusal),
            Ok(Some(request)) => {
                slf.borrow_mut().served += 1;
                let request = Bound::new(py, PyRequest { request })?;
                if lane.answer(slf, &request)? {
                    let (gone, write_paused) = {
                        let p = slf.borrow();
                        (p.gone, p.write_paused)
                    };
                    if !(gone || write_paused) {
                        let next = conn.borrow_mut().conn.next_request();
                        match next {
                            Err(refusal) => Self::refuse(slf, &refusal)?,
                            Ok(Some(request)) => {
                                let request = Bound::new(py, PyRequest { request })?;
                                slf.call_method1(intern!(py, "serve"), (request,))?;
                            }
                            Ok(None) => {
                                if conn.borrow().conn.is_closed() || lane.is_draining() {
                                    Self::transport(slf)?.call_method0(intern!(py, "close"))?;
                                } else {
                                    Self::interim(slf, conn)?;
                                    let resume = {
                                        let p = slf.borrow();
                                        p.read_paused
                                            && !p.write_paused
                                            && !conn.borrow().conn.wants_pause()
                                    };
                                    if resume {
                                        slf.borrow_mut().read_paused = false;
                                        Self::transport(slf)?
                                            .call_method0(intern!(py, "resume_reading"))?;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Ok(None) => {
                if slf.borrow().busy.is_none() {
                    Self::interim(slf, conn)?;
                }
            }
        }
        if conn.borrow().conn.wants_pause() && !slf.borrow().read_paused {
            slf.borrow_mut().read_paused = true;
            Self::transport(slf)?.call_method0(intern!(py, "pause_reading"))?;
        }
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.lane)?;
        visit.call(&self.conn)?;
        visit.call(&self.transport)?;
        visit.call(&self.busy)?;
        Ok(())
    }

    fn __clear__(&mut self) {
        self.transport = None;
        self.busy = None;
    }
}
