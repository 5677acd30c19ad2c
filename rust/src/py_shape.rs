//! `Shape`: what the results of planned calls look like at one revision (structured
//! content or not; at 2026-07-28 the server info that completes them and the protocol
//! versions a request may name), and how `Plans.run_context` makes the `Context` of a call
//! it runs ([`CONTEXT_SLOTS`]).

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::frame::{self, FrameKind};
use crate::plan::Era;

/// The slots of `jetmcp.server.context.Context` the extension sets, in this order, on a
/// Context it makes as `object.__new__(Context)` does (no `__init__` runs; see
/// [`Contexts::make`]): `_made` (None), `_plan` (the plans, the frame, the exchange, the
/// revision), `_server` (the server) and `_state` (None). Python reads it as
/// `_wire.CONTEXT_SLOTS`; a test holds it to `Context.__slots__`.
pub const CONTEXT_SLOTS: [&str; 4] = ["_made", "_plan", "_server", "_state"];

/// What results look like at one revision. Built once per revision by the dispatcher.
#[pyclass(frozen, module = "jetmcp._wire", name = "Shape")]
pub struct Shape {
    /// Whether results carry `structuredContent` (the revision's `structured_output`).
    pub(crate) structured: bool,
    /// The server info JSON of a 2026-07-28 shape (results are completed with it).
    pub(crate) server_info: Option<Box<[u8]>>,
    /// The protocol versions a 2026-07-28 request's `_meta` may name.
    pub(crate) versions: Vec<Box<[u8]>>,
    /// `versions` as the interned strings `Plans.version` hands back (no string is made
    /// per request, and a lookup by one finds its hash already computed).
    pub(crate) version_strs: Vec<Py<PyString>>,
    /// How `Plans.run_context` makes the Context of a planned call (None: it runs none).
    pub(crate) contexts: Option<Contexts>,
}

/// `Shape`'s `context` argument, as given: see [`Contexts`].
type ContextArgs = (Py<PyAny>, Py<PyType>, Vec<Py<PyAny>>);

/// What `Shape(context=...)` gives: the server, the `Context` class, and the revision
/// object of each of the shape's versions (in the same order).
pub(crate) struct Contexts {
    server: Py<PyAny>,
    context: Py<PyType>,
    /// The revision object of each of the shape's versions, in the same order.
    pub(crate) revisions: Vec<Py<PyAny>>,
    /// [`CONTEXT_SLOTS`] as interned strings, made once with the shape.
    slots: [Py<PyString>; 4],
}

impl Contexts {
    /// A Context made as `object.__new__(Context)` makes it (no `__init__` runs), each of
    /// [`CONTEXT_SLOTS`] set: `plan` (the plans, the frame, the exchange, the revision) is
    /// `_plan`'s value.
    pub(crate) fn make<'py>(
        &self,
        py: Python<'py>,
        plan: Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let context_type = self.context.bind(py);
        let context = context_type.call_method1(intern!(py, "__new__"), (context_type,))?;
        let [made, plan_slot, server, state] = &self.slots;
        context.setattr(made.bind(py), py.None())?;
        context.setattr(plan_slot.bind(py), plan)?;
        context.setattr(server.bind(py), self.server.bind(py))?;
        context.setattr(state.bind(py), py.None())?;
        Ok(context)
    }
}

impl Shape {
    /// The index in `versions` of the version a `_meta` names, written as `lexeme` (a JSON
    /// string): None when it is written with escapes, or is none of them.
    pub(crate) fn version_index(&self, lexeme: &[u8]) -> Option<usize> {
        let content = lexeme.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        self.versions.iter().position(|v| **v == *content)
    }

    /// The era whose rules a call is planned under: 2026-07-28 when `server_info` is given.
    pub(crate) fn era(&self) -> Era<'_> {
        if self.server_info.is_some() {
            Era::Modern {
                versions: &self.versions,
            }
        } else {
            Era::Legacy
        }
    }
}

#[pymethods]
impl Shape {
    /// `context`, for a 2026-07-28 shape: `(server, Context, revisions)`, `revisions`
    /// holding the revision object of each of `versions`: how `Plans.run_context` makes
    /// the Context of a call it runs. It makes it as `object.__new__(Context)` does (no
    /// `__init__` runs) and sets its slots, [`CONTEXT_SLOTS`]: the contract with
    /// `jetmcp.server.context.Context`.
    #[new]
    #[pyo3(signature = (structured, server_info = None, versions = Vec::new(), context = None))]
    fn new(
        py: Python<'_>,
        structured: bool,
        server_info: Option<&[u8]>,
        versions: Vec<String>,
        context: Option<ContextArgs>,
    ) -> PyResult<Self> {
        let contexts = match context {
            Some((server, context, revisions)) => {
                if server_info.is_none() || revisions.len() != versions.len() {
                    return Err(PyValueError::new_err(
                        "context is for a 2026-07-28 shape, with one revision per version",
                    ));
                }
                Some(Contexts {
                    server,
                    context,
                    revisions,
                    slots: CONTEXT_SLOTS.map(|name| PyString::intern(py, name).unbind()),
                })
            }
            None => None,
        };
        if let Some(info) = server_info {
            let frame = frame::decode(info, frame::DEFAULT_MAX_DEPTH, 1);
            let is_object = info
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|&b| b == b'{');
            if frame.kind != FrameKind::Single || !is_object {
                return Err(PyValueError::new_err(
                    "server_info must be the JSON text of an object",
                ));
            }
        } else if !versions.is_empty() {
            return Err(PyValueError::new_err(
                "versions are those of a 2026-07-28 shape: give its server_info too",
            ));
        }
        Ok(Shape {
            structured,
            server_info: server_info.map(Box::from),
            version_strs: versions
                .iter()
                .map(|v| PyString::intern(py, v).unbind())
                .collect(),
            versions: versions
                .into_iter()
                .map(|v| v.into_bytes().into_boxed_slice())
                .collect(),
            contexts,
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(c) = &self.contexts {
            visit.call(&c.server)?;
            visit.call(&c.context)?;
            for revision in &c.revisions {
                visit.call(revision)?;
            }
        }
        Ok(())
    }

    /// Whether results carry `structuredContent` (the revision's `structured_output`).
    #[getter]
    fn structured(&self) -> bool {
        self.structured
    }

    /// Whether this is a 2026-07-28 shape (`server_info` given).
    #[getter]
    fn modern(&self) -> bool {
        self.server_info.is_some()
    }

    #[getter]
    fn server_info<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.server_info.as_deref().map(|b| PyBytes::new(py, b))
    }

    #[getter]
    fn versions(&self) -> Vec<String> {
        self.versions
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect()
    }

    fn __repr__(&self) -> String {
        if self.server_info.is_some() {
            format!(
                "<Shape 2026-07-28 structured={} versions={:?}>",
                self.structured,
                self.versions()
            )
        } else {
            format!("<Shape legacy structured={}>", self.structured)
        }
    }
}
