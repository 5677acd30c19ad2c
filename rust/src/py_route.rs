//! Calls of plain tools, answered inside the extension.
//!
//! A `tools/call` whose tool is a synchronous function of `str`/`int`/`float`/`bool`
//! parameters (no Context, no `**kwargs`) needs no Python of jetmcp's own: the arguments are
//! read from the body, checked, passed to the function, and a primitive return value is
//! written as the reply, all in one call from the dispatcher. Everything else about the
//! request goes exactly as the Python path would take it:
//!
//! * whatever this module is not sure of (another method, extra members in `params` such as
//!   `_meta` or `task`, an argument of another type than the parameter's, a missing one, a
//!   repeated key) is left to the Python dispatcher untouched, before anything ran;
//! * argument values are built by the same builder as `Entry.params()` and held to the same
//!   exact-type rule as the Python check of plain arguments, so a value that would go through
//!   pydantic there goes to Python here;
//! * a return value other than an `int`/`str`/`bool` the tool's output allows, and every
//!   exception of the function, go back to Python (`on_python`) to be shaped or turned into
//!   an error by the same code as the Python path.
//!
//! Entries are run in request order; in a batch, an entry left to Python is run by the
//! `fallback` callable at its place in the order, so side effects keep the order they had.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::ptr;

use pyo3::exceptions::{PyException, PyKeyError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use smallvec::SmallVec;

use crate::encode;
use crate::frame::{Entry, EntryKind};
use crate::py_build::build;
use crate::py_frame::PyFrame;

/// The one method this module answers.
const TOOLS_CALL: &[u8] = b"\"tools/call\"";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
}

impl Kind {
    /// Whether `value`'s type is exactly this kind (subclasses are not: the Python check is
    /// `type(value) is kind`).
    fn holds(self, value: &Bound<'_, PyAny>) -> bool {
        let tp = value.get_type_ptr();
        // The builtin type objects' addresses are only compared.
        match self {
            Kind::Str => tp == ptr::addr_of_mut!(ffi::PyUnicode_Type),
            Kind::Int => tp == ptr::addr_of_mut!(ffi::PyLong_Type),
            Kind::Float => tp == ptr::addr_of_mut!(ffi::PyFloat_Type),
            Kind::Bool => tp == ptr::addr_of_mut!(ffi::PyBool_Type),
        }
    }

    fn of(tp: &Bound<'_, PyType>) -> PyResult<Kind> {
        let py = tp.py();
        if tp.is(py.get_type::<PyString>()) {
            Ok(Kind::Str)
        } else if tp.is(py.get_type::<PyBool>()) {
            Ok(Kind::Bool)
        } else if tp.is(py.get_type::<PyInt>()) {
            Ok(Kind::Int)
        } else if tp.is(py.get_type::<PyFloat>()) {
            Ok(Kind::Float)
        } else {
            Err(PyValueError::new_err(format!(
                "a routed parameter must be str, int, float or bool, not {}",
                tp.name()?
            )))
        }
    }
}

/// How one tool is called from the extension. Built by the tool when it registers.
#[pyclass(frozen, module = "jetmcp._wire", name = "ToolRoute")]
pub struct ToolRoute {
    /// The tool object, handed back to `on_python`.
    tool: Py<PyAny>,
    func: Py<PyAny>,
    /// Parameter names in signature order, and the same as a keyword-names tuple.
    names: Vec<String>,
    kwnames: Py<PyTuple>,
    kinds: Vec<Kind>,
    /// Whether each parameter also takes None (`int | None`).
    nullable: Vec<bool>,
    /// The default of each parameter; None when it is required.
    defaults: Vec<Option<Py<PyAny>>>,
    /// Return types written here: which of int, str and bool.
    fast_int: bool,
    fast_str: bool,
    fast_bool: bool,
    /// Whether the result carries `structuredContent` (where the revision has it).
    structured: bool,
    /// Whether the arguments may be passed by position (a plain function whose parameters
    /// are all positional-or-keyword, in this order): the same binding, found faster.
    positional: bool,
}

#[pymethods]
impl ToolRoute {
    /// `params`: (name, type, default, whether None is allowed) in signature order,
    /// `required` standing for "no default"; `fast_types`: the return types (of int, str,
    /// bool) that may be written without Python; `structured`: whether such a result
    /// carries `structuredContent`; `positional`: pass the arguments by position.
    #[new]
    #[pyo3(signature = (tool, func, params, required, fast_types, structured, positional = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tool: Py<PyAny>,
        func: Py<PyAny>,
        params: Vec<(String, Bound<'_, PyType>, Bound<'_, PyAny>, bool)>,
        required: Bound<'_, PyAny>,
        fast_types: Vec<Bound<'_, PyType>>,
        structured: bool,
        positional: bool,
    ) -> PyResult<Self> {
        let mut names = Vec::with_capacity(params.len());
        let mut kinds = Vec::with_capacity(params.len());
        let mut nullable = Vec::with_capacity(params.len());
        let mut defaults = Vec::with_capacity(params.len());
        for (name, tp, default, none_ok) in &params {
            names.push(name.clone());
            kinds.push(Kind::of(tp)?);
            nullable.push(*none_ok);
            defaults.push(if default.is(&required) {
                None
            } else {
                Some(default.clone().unbind())
            });
        }
        let kwnames = PyTuple::new(py, names.iter().map(|n| PyString::intern(py, n)))?.unbind();
        let mut route = ToolRoute {
            tool,
            func,
            names,
            kwnames,
            kinds,
            nullable,
            defaults,
            fast_int: false,
            fast_str: false,
            fast_bool: false,
            structured,
            positional,
        };
        for tp in &fast_types {
            match Kind::of(tp)? {
                Kind::Int => route.fast_int = true,
                Kind::Str => route.fast_str = true,
                Kind::Bool => route.fast_bool = true,
                Kind::Float => {}
            }
        }
        Ok(route)
    }

    /// The parameter names, in signature order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// Whether the function is called with positional arguments.
    #[getter]
    fn positional(&self) -> bool {
        self.positional
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool)?;
        visit.call(&self.func)?;
        for default in &self.defaults {
            visit.call(default)?;
        }
        Ok(())
    }
}

/// The tools the extension may call, by name: a mapping the server keeps up to date as
/// tools come and go, looked up by the name's bytes as they stand in the request.
#[pyclass(module = "jetmcp._wire", name = "Routes")]
#[derive(Default)]
pub struct Routes {
    map: HashMap<Box<[u8]>, Py<ToolRoute>, ahash::RandomState>,
    /// Counts changes, so a lookup remembered within one batch is known to be current.
    generation: u64,
}

impl Routes {
    fn get(&self, py: Python<'_>, name: &[u8]) -> Option<Py<ToolRoute>> {
        self.map.get(name).map(|r| r.clone_ref(py))
    }
}

#[pymethods]
impl Routes {
    #[new]
    fn new() -> Self {
        Routes::default()
    }

    fn __setitem__(&mut self, name: &str, route: Py<ToolRoute>) {
        self.generation += 1;
        self.map.insert(name.as_bytes().into(), route);
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<ToolRoute>> {
        self.get(py, name.as_bytes())
            .ok_or_else(|| PyKeyError::new_err(name.to_owned()))
    }

    fn __delitem__(&mut self, name: &str) -> PyResult<()> {
        self.generation += 1;
        match self.map.remove(name.as_bytes()) {
            Some(_) => Ok(()),
            None => Err(PyKeyError::new_err(name.to_owned())),
        }
    }

    fn __contains__(&self, name: &str) -> bool {
        self.map.contains_key(name.as_bytes())
    }

    fn __len__(&self) -> usize {
        self.map.len()
    }

    /// Remove the route of `name`, if any; the route, or None.
    fn pop(&mut self, name: &str) -> Option<Py<ToolRoute>> {
        self.generation += 1;
        self.map.remove(name.as_bytes())
    }

    fn clear(&mut self) {
        self.generation += 1;
        self.map.clear();
    }

    /// The names, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .map
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        names.sort();
        names
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for route in self.map.values() {
            visit.call(route)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.map.clear();
    }
}

/// What a request comes to once its arguments are read: its raw id, the route and the
/// arguments for each parameter, in order.
struct Plan<'b, 'py> {
    raw_id: &'b [u8],
    route: Bound<'py, ToolRoute>,
    args: Args<'py>,
}

/// One value per parameter, in signature order (few enough to live on the stack).
type Args<'py> = SmallVec<[Bound<'py, PyAny>; 8]>;

/// The last tool looked up in a body, with the [`Routes::generation`] it was found at: the
/// entries of a batch mostly call one tool.
type Memo<'b, 'py> = Option<(u64, &'b [u8], Bound<'py, ToolRoute>)>;

/// The plan for `entry`, or None when the Python dispatcher must serve it. Runs no user code.
fn plan<'b, 'py>(
    py: Python<'py>,
    body: &'b [u8],
    entry: &Entry,
    routes: &Bound<'py, Routes>,
    memo: &mut Memo<'b, 'py>,
) -> PyResult<Option<Plan<'b, 'py>>> {
    let (EntryKind::Request, Some(id)) = (entry.kind, entry.id) else {
        return Ok(None);
    };
    match entry.method {
        Some(m) if m.of(body) == TOOLS_CALL => {}
        _ => return Ok(None),
    }
    let Some(params) = entry.params else {
        return Ok(None);
    };
    let data = params.of(body);
    let Some((name, args)) = read_params(data) else {
        return Ok(None);
    };
    let route = {
        // Borrowed only for the lookup: a tool may add or remove tools while it runs.
        let table = routes.borrow();
        match memo {
            Some((generation, last, route)) if *generation == table.generation && *last == name => {
                route.clone()
            }
            _ => {
                let Some(route) = table.get(py, name) else {
                    return Ok(None);
                };
                let route = route.into_bound(py);
                *memo = Some((table.generation, name, route.clone()));
                route
            }
        }
    };
    let values = read_arguments(py, route.get(), &data[args.0..args.1])?;
    Ok(values.map(|args| Plan {
        raw_id: id.of(body),
        route,
        args,
    }))
}

/// A reader over JSON the frame scanner has already validated: it only finds its way (no
/// grammar checks), and reads nothing it could misread: a key with escapes is reported as
/// such, and the caller leaves that request to Python. Every access is bounds-checked;
/// anything unexpected is `None`.
struct Walk<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Walk<'a> {
    fn new(data: &'a [u8]) -> Self {
        Walk { data, pos: 0 }
    }

    /// The next byte that is not whitespace (not consumed).
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.data.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// At an opening quote: the string's bytes when it has no escapes (else None); the
    /// string is consumed either way.
    #[inline]
    fn string(&mut self) -> Option<Option<&'a [u8]>> {
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            match *self.data.get(i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        Some(if escaped {
            None
        } else {
            self.data.get(start..i)
        })
    }

    /// Consume one value of any kind.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.data.get(self.pos)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while let Some(&b) = self.data.get(self.pos) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                Some(())
            }
        }
    }

    /// At `{`: consume it; whether a member follows.
    fn open_object(&mut self) -> Option<bool> {
        if self.peek()? != b'{' {
            return None;
        }
        self.pos += 1;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(false);
        }
        Some(true)
    }

    /// A member's key and its colon: the key's bytes, None for a key with escapes.
    fn key(&mut self) -> Option<Option<&'a [u8]>> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        if self.peek()? != b':' {
            return None;
        }
        self.pos += 1;
        Some(key)
    }

    /// After a member's value: whether another member follows (`,`) or the object ended.
    fn more(&mut self) -> Option<bool> {
        let b = self.peek()?;
        self.pos += 1;
        match b {
            b',' => Some(true),
            b'}' => Some(false),
            _ => None,
        }
    }

    /// The value about to be read, as a span: (start, end) after consuming it.
    fn value_span(&mut self) -> Option<(usize, usize)> {
        self.peek()?;
        let start = self.pos;
        self.skip()?;
        Some((start, self.pos))
    }
}

/// `params` holding exactly `name` (a string) and `arguments` (an object), keys written
/// without escapes: the name's bytes, and where the arguments object lies in `data`.
fn read_params(data: &[u8]) -> Option<(&[u8], (usize, usize))> {
    let mut w = Walk::new(data);
    let mut name: Option<&[u8]> = None;
    let mut args: Option<(usize, usize)> = None;
    let mut more = w.open_object()?;
    while more {
        match w.key()?? {
            b"name" if name.is_none() => {
                if w.peek()? != b'"' {
                    return None;
                }
                name = Some(w.string()??);
            }
            b"arguments" if args.is_none() => {
                if w.peek()? != b'{' {
                    return None;
                }
                args = Some(w.value_span()?);
            }
            _ => return None, // another member, or a repeated one
        }
        more = w.more()?;
    }
    Some((name?, args?))
}

/// The value for every parameter, or None when an argument is not exactly of its
/// parameter's type, is repeated, or a required one is missing (or a key has escapes).
/// Unknown keys are ignored, as the Python check ignores them.
fn read_arguments<'py>(
    py: Python<'py>,
    route: &ToolRoute,
    data: &[u8],
) -> PyResult<Option<Args<'py>>> {
    let n = route.names.len();
    let mut found: SmallVec<[Option<Bound<'py, PyAny>>; 8]> = SmallVec::new();
    found.resize(n, None);
    let mut w = Walk::new(data);
    let Some(mut more) = w.open_object() else {
        return Ok(None);
    };
    while more {
        let Some(Some(key)) = w.key() else {
            return Ok(None);
        };
        let Some((start, end)) = w.value_span() else {
            return Ok(None);
        };
        if let Some(i) = route.names.iter().position(|name| name.as_bytes() == key) {
            if found[i].is_some() {
                return Ok(None);
            }
            let Ok(value) = build(py, &data[start..end]) else {
                return Ok(None);
            };
            if !(route.kinds[i].holds(&value) || (route.nullable[i] && value.is_none())) {
                return Ok(None);
            }
            found[i] = Some(value);
        }
        let Some(m) = w.more() else {
            return Ok(None);
        };
        more = m;
    }
    let mut values = Args::with_capacity(n);
    for (slot, default) in found.into_iter().zip(&route.defaults) {
        match (slot, default) {
            (Some(value), _) => values.push(value),
            (None, Some(d)) => values.push(d.bind(py).clone()),
            (None, None) => return Ok(None),
        }
    }
    Ok(Some(values))
}

/// Call the tool and append the reply to `out`. Returns an error only for what the Python
/// path would not catch either (an exception that is not an `Exception`).
fn run(
    py: Python<'_>,
    plan: Plan<'_, '_>,
    revision: &Bound<'_, PyAny>,
    structured: bool,
    on_python: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> PyResult<()> {
    let route = plan.route.get();
    let raw_id = plan.raw_id;
    let ptrs: SmallVec<[*mut ffi::PyObject; 8]> = plan.args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: `func` and `kwnames` are live objects owned by the route; `ptrs` holds one
    // borrowed reference per parameter (kept alive by `plan.args`), passed either all by
    // position (`nargsf` = their number, no keyword names) or all by keyword (`nargsf` 0,
    // one keyword name each). The result is a new reference or NULL with an exception.
    let result = unsafe {
        let r = if route.positional {
            ffi::PyObject_Vectorcall(
                route.func.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len(),
                ptr::null_mut(),
            )
        } else {
            ffi::PyObject_Vectorcall(
                route.func.as_ptr(),
                ptrs.as_ptr(),
                0,
                route.kwnames.as_ptr(),
            )
        };
        Bound::from_owned_ptr_or_err(py, r)
    };
    let (outcome, failed) = match result {
        Ok(value) => {
            if write_primitive(out, raw_id, route, &value, structured) {
                return Ok(());
            }
            (value, false)
        }
        Err(err) => {
            if !err.is_instance_of::<PyException>(py) {
                return Err(err); // KeyboardInterrupt, SystemExit, CancelledError: not ours
            }
            (err.into_value(py).into_bound(py).into_any(), true)
        }
    };
    let reply = on_python.call1((
        route.tool.bind(py),
        PyBytes::new(py, raw_id),
        revision,
        outcome,
        failed,
    ))?;
    out.extend_from_slice(reply.cast::<PyBytes>()?.as_bytes());
    Ok(())
}

/// Write the reply for an `int`, `str` or `bool` return value, as the Python shaping would
/// build and encode it; false (nothing written) for anything else.
fn write_primitive(
    out: &mut Vec<u8>,
    raw_id: &[u8],
    route: &ToolRoute,
    value: &Bound<'_, PyAny>,
    structured: bool,
) -> bool {
    let tp = value.get_type_ptr();
    let mut digits = itoa::Buffer::new();
    // The value as JSON; `quoted` when that is already a JSON string (a str), else the text
    // is the same characters in quotes (an int's digits, true or false).
    let mut escaped = Vec::new();
    let (json, quoted): (&[u8], bool) = if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
        if !route.fast_int {
            return false;
        }
        let mut overflow: c_int = 0;
        // SAFETY: `value` is an int, a valid argument; an error it sets is cleared here.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &mut overflow) };
        if overflow != 0 || (v == -1 && PyErr::take(value.py()).is_some()) {
            return false; // beyond 64 bits: Python writes it
        }
        (digits.format(v).as_bytes(), false)
    } else if tp == ptr::addr_of_mut!(ffi::PyBool_Type) {
        if !route.fast_bool {
            return false;
        }
        let word: &[u8] = if value.is_truthy().unwrap_or(false) {
            b"true"
        } else {
            b"false"
        };
        (word, false)
    } else if tp == ptr::addr_of_mut!(ffi::PyUnicode_Type) {
        if !route.fast_str {
            return false;
        }
        // A lone surrogate cannot be written: Python's path reports it.
        let Ok(s) = value
            .cast::<PyString>()
            .map_err(PyErr::from)
            .and_then(|s| s.to_str())
        else {
            return false;
        };
        encode::write_str(&mut escaped, s);
        (&escaped, true)
    } else {
        return false;
    };
    encode::write_head(out, Some(raw_id));
    out.extend_from_slice(encode::RESULT_KEY);
    out.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    if quoted {
        out.extend_from_slice(json);
    } else {
        out.push(b'"');
        out.extend_from_slice(json);
        out.push(b'"');
    }
    out.extend_from_slice(b"}]");
    if structured && route.structured {
        out.extend_from_slice(br#","structuredContent":{"result":"#);
        out.extend_from_slice(json);
        out.push(b'}');
    }
    out.extend_from_slice(br#","isError":false}}"#);
    true
}

/// The buffer of a batch reply, its `[` written (replies run a little longer than the
/// requests they answer).
fn batch_buffer(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() * 3 / 2 + 64);
    out.push(b'[');
    out
}

/// Where the next reply of a batch starts: after a `,` when one was written before it.
fn next_reply(out: &mut Vec<u8>, written: &mut bool) -> usize {
    if *written {
        out.push(b',');
    }
    *written = true;
    out.len()
}

/// For a single message: its reply when it is a call of a routed tool (answered here),
/// else None, and nothing was run. `structured` is the revision's `structured_output`;
/// `on_python(tool, raw_id, revision, outcome, failed)` gives the reply bytes for a
/// return value not written here (`failed` False) or an exception (`failed` True).
#[pyfunction]
pub fn route<'py>(
    py: Python<'py>,
    frame: &Bound<'py, PyFrame>,
    routes: &Bound<'py, Routes>,
    revision: &Bound<'py, PyAny>,
    structured: bool,
    on_python: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let frame = frame.get();
    let [entry] = frame.parsed() else {
        return Ok(None);
    };
    let body = frame.body(py).as_bytes();
    let Some(plan) = plan(py, body, entry, routes, &mut None)? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(128);
    run(py, plan, revision, structured, on_python, &mut out)?;
    Ok(Some(PyBytes::new(py, &out)))
}

/// For a batch whose entries are all calls of routed tools: call them in order and give
/// back the whole batch reply. None, and nothing was run, when any entry is something else
/// (the caller then serves the batch the general way). Arguments are as for [`route`].
#[pyfunction]
pub fn route_all<'py>(
    py: Python<'py>,
    frame: &Bound<'py, PyFrame>,
    routes: &Bound<'py, Routes>,
    revision: &Bound<'py, PyAny>,
    structured: bool,
    on_python: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let frame = frame.get();
    let body = frame.body(py).as_bytes();
    let entries = frame.parsed();
    if entries.is_empty() {
        return Ok(None);
    }
    // Every plan first: planning runs no user code, so giving up midway leaves no trace.
    let mut plans = Vec::with_capacity(entries.len());
    let mut memo: Memo<'_, 'py> = None;
    for entry in entries {
        match plan(py, body, entry, routes, &mut memo)? {
            Some(p) => plans.push(p),
            None => return Ok(None),
        }
    }
    let mut out = batch_buffer(body);
    let mut written = false;
    for p in plans {
        next_reply(&mut out, &mut written);
        run(py, p, revision, structured, on_python, &mut out)?;
    }
    out.push(b']');
    Ok(Some(PyBytes::new(py, &out)))
}

/// Every entry of a batch in order: calls of routed tools answered here, every other
/// entry given to `fallback(entry)`, which answers None (nothing owed), bytes, or
/// anything else for an entry still running. Gives back the whole batch reply, None when
/// nothing is owed, or, when some entry is still running, the list of the replies and
/// running entries in order for the caller to finish.
#[pyfunction]
pub fn route_batch<'py>(
    py: Python<'py>,
    frame: &Bound<'py, PyFrame>,
    routes: &Bound<'py, Routes>,
    revision: &Bound<'py, PyAny>,
    structured: bool,
    on_python: &Bound<'py, PyAny>,
    fallback: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let frame = frame.get();
    let body = frame.body(py).as_bytes();
    let mut out = batch_buffer(body);
    let mut memo: Memo<'_, 'py> = None;
    // Each reply's place in `out`, or an entry still running.
    let mut slots: Vec<Result<(usize, usize), Bound<'py, PyAny>>> = Vec::new();
    let mut running = false;
    let mut written = false;
    for (i, entry) in frame.parsed().iter().enumerate() {
        if let Some(plan) = plan(py, body, entry, routes, &mut memo)? {
            let start = next_reply(&mut out, &mut written);
            run(py, plan, revision, structured, on_python, &mut out)?;
            slots.push(Ok((start, out.len())));
            continue;
        }
        let item = frame.entry_list(py)?.get_item(i)?;
        let answer = fallback.call1((item,))?;
        if answer.is_none() {
            continue;
        }
        if let Ok(bytes) = answer.cast::<PyBytes>() {
            let start = next_reply(&mut out, &mut written);
            out.extend_from_slice(bytes.as_bytes());
            slots.push(Ok((start, out.len())));
        } else {
            running = true;
            slots.push(Err(answer));
        }
    }
    if running {
        let list = PyList::empty(py);
        for slot in slots {
            match slot {
                Ok((start, end)) => list.append(PyBytes::new(py, &out[start..end]))?,
                Err(pending) => list.append(pending)?,
            }
        }
        return Ok(Some(list.into_any()));
    }
    if slots.is_empty() {
        return Ok(None);
    }
    out.push(b']');
    Ok(Some(PyBytes::new(py, &out).into_any()))
}
