//! Calls of plain tools, answered inside the extension.
//!
//! A `tools/call` whose tool is a synchronous function of `str`/`int`/`float`/`bool`
//! parameters (no Context, no `**kwargs`) needs no Python of jetmcp's own: the arguments are
//! read from the body, checked, passed to the function, and a primitive return value is
//! written as the reply. A tool whose parameters are a pydantic model's fields (where that
//! model reads JSON as it reads the objects built from it) needs none either: its
//! `arguments` bytes go to the model's `validate_json` (what it refuses, the general path
//! answers, nothing having run), and a value of exactly its declared return model is
//! written from one call of the model's own serializer: its JSON as the structured content
//! and, indented as pydantic indents it, as the text (what Python's shaping writes with two).
//! Everything else about the request goes exactly as the Python path would take it:
//!
//! * whatever the rules of [`crate::plan`] are not sure of (another method, other members
//!   in `params`, an argument of another type than the parameter's, a missing one, a
//!   repeated key) is left to the Python dispatcher untouched, before anything ran;
//! * argument values are built by the same builder as `Entry.params()` and held to the same
//!   exact-type rule as the Python check of plain arguments, so a value that would go through
//!   pydantic there goes to Python here;
//! * a return value other than an `int`/`str`/`bool` the tool's output allows, and every
//!   exception of the function, go back to Python to be shaped or turned into an error by
//!   the same code as the Python path.
//!
//! This module holds the tool table (`Routes`, `ToolRoute`), the planning of one entry
//! against it (its route found, its arguments read and checked) and the call; how a return
//! value is written is `py_result`'s. The way in is `Routes.plan` and the `Plans` it gives
//! (`py_plan`, which also holds `Routes`' Python methods: `plan` and `answer` make `Plans`).
//! It never calls jetmcp's own Python: only the tool functions (and pydantic-core's).

use std::collections::HashMap;
use std::ptr;

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use smallvec::SmallVec;

use crate::cursor::{Cursor, Span};
use crate::frame::Entry;
use crate::plan::{self, Era, Headers};
use crate::py_build::build;
use crate::py_result::{declined, DataOut, DataOutArgs, ModelOut, ModelOutArgs, PrimitiveOut};

/// The type of a plain parameter, or of a primitive return value: exactly one of these.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    /// A pydantic model, read by its own validator (`ToolRoute.models`): no plain value is
    /// one.
    Model,
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
            Kind::Model => false,
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
    /// Return types written here: which of int, str, bool and float.
    primitives: PrimitiveOut,
    /// Whether the result carries `structuredContent` (where the revision has it).
    structured: bool,
    /// Whether the arguments may be passed by position (a plain function whose parameters
    /// are all positional-or-keyword, in this order): the same binding, found faster.
    positional: bool,
    /// Whether calls at 2026-07-28 may be planned (the tool cannot become a task there, and
    /// its input schema has no `x-mcp-header` property for the headers to be checked against).
    modern: bool,
    /// The keyword the tool takes its context object by, if any: a call of it is planned
    /// but run only with the context its caller makes (`Plans.run(i, context)`).
    context: Option<Py<PyString>>,
    /// The keyword names of a call by keyword with the context last.
    kwnames_ctx: Option<Py<PyTuple>>,
    /// The context's keyword alone (a positional call with the context by keyword).
    ctx_kwname: Option<Py<PyTuple>>,
    /// Whether Python reads the arguments and calls the tool (they are not all plain): the
    /// extension only plans its calls, for the caller to run (`Plans.arguments`).
    python_call: bool,
    /// Whether the coroutine an `async` function gives back may take its first step here
    /// when the caller allows it (no timeout wraps the tool's awaiting).
    step: bool,
    /// For a tool whose parameters are the fields of a pydantic model: the model's
    /// `validate_json`, given the `arguments` span at run time. The values of `names` are
    /// read from the model it gives; a call whose arguments it refuses runs nothing (the
    /// general path answers it).
    validate: Option<Py<PyAny>>,
    /// With `validate`, for a tool whose parameters are each plain (read as a plain route
    /// reads them) or a pydantic model: per parameter, the model's own `validate_json`
    /// (None for a plain one), given that argument's span at run time, in signature order;
    /// no model is made of the whole arguments. Empty: the whole arguments go to `validate`.
    models: Vec<Option<Py<PyAny>>>,
    /// How a return value of exactly the declared model is written here.
    model_out: Option<ModelOut>,
    /// How a return value of exactly `dict`, `list` or None is written here.
    data_out: Option<DataOut>,
    /// A promoted synchronous tool's watch: a call (returning or raising) that takes over
    /// `slow_ns` nanoseconds is reported to `on_slow(nanoseconds)` once it is done; None
    /// for a call that is not timed.
    on_slow: Option<Py<PyAny>>,
    slow_ns: u64,
}

#[pymethods]
impl ToolRoute {
    /// `params`: (name, type, default, whether None is allowed) in signature order,
    /// `required` standing for "no default"; `fast_types`: the return types (of int, str,
    /// bool, float) that may be written without Python; `structured`: whether such a result
    /// carries `structuredContent`; `positional`: pass the arguments by position; `modern`:
    /// calls at 2026-07-28 may be planned; `context`: the keyword the tool takes a context
    /// object by (its calls then run only with one, given by the caller).
    #[new]
    /// `models` (with `validate`): per parameter of `params`, the model validator's
    /// `validate_json` of a model parameter (its type in `params` is the model), None for a
    /// plain one.
    #[pyo3(signature = (tool, func, params, required, fast_types, structured, positional = false, modern = false, context = None, python_call = false, step = false, validate = None, fields = Vec::new(), model_out = None, data_out = None, slow_ns = 0, on_slow = None, models = Vec::new()))]
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
        modern: bool,
        context: Option<String>,
        python_call: bool,
        step: bool,
        validate: Option<Py<PyAny>>,
        fields: Vec<String>,
        model_out: Option<ModelOutArgs<'_>>,
        data_out: Option<DataOutArgs<'_>>,
        slow_ns: u64,
        on_slow: Option<Py<PyAny>>,
        models: Vec<Option<Py<PyAny>>>,
    ) -> PyResult<Self> {
        if python_call && !params.is_empty() {
            return Err(PyValueError::new_err(
                "a route whose calls Python makes reads no parameters: give none",
            ));
        }
        if !models.is_empty()
            && (validate.is_none() || models.len() != params.len() || !fields.is_empty())
        {
            return Err(PyValueError::new_err(
                "models go with validate, one per parameter of params, and no fields",
            ));
        }
        if validate.is_some() && (python_call || (!params.is_empty() && models.is_empty())) {
            return Err(PyValueError::new_err(
                "a route that validates its arguments with a model takes its fields, not \
                 params (unless it reads model parameters by their own models), and is not \
                 python_call",
            ));
        }
        if validate.is_none() && !fields.is_empty() {
            return Err(PyValueError::new_err("fields are given with validate"));
        }
        let model_out = model_out.map(ModelOut::new).transpose()?;
        let data_out = data_out.map(DataOut::new).transpose()?;
        let mut names = Vec::with_capacity(params.len() + fields.len());
        names.extend(fields);
        let mut kinds = Vec::with_capacity(params.len());
        let mut nullable = Vec::with_capacity(params.len());
        let mut defaults = Vec::with_capacity(params.len());
        for (i, (name, tp, default, none_ok)) in params.iter().enumerate() {
            names.push(name.clone());
            kinds.push(match models.get(i) {
                Some(Some(_)) => Kind::Model,
                _ => Kind::of(tp)?,
            });
            nullable.push(*none_ok);
            defaults.push(if default.is(&required) {
                None
            } else {
                Some(default.clone().unbind())
            });
        }
        let kwnames = PyTuple::new(py, names.iter().map(|n| PyString::intern(py, n)))?.unbind();
        if context.as_ref().is_some_and(|c| names.contains(c)) {
            return Err(PyValueError::new_err(
                "the context keyword must not also be a parameter",
            ));
        }
        let context = context.map(|c| PyString::intern(py, &c).unbind());
        let kwnames_ctx = match &context {
            Some(c) => {
                let mut all: Vec<Bound<'_, PyString>> =
                    names.iter().map(|n| PyString::intern(py, n)).collect();
                all.push(c.bind(py).clone());
                Some(PyTuple::new(py, all)?.unbind())
            }
            None => None,
        };
        let ctx_kwname = match &context {
            Some(c) => Some(PyTuple::new(py, [c.bind(py)])?.unbind()),
            None => None,
        };
        let mut route = ToolRoute {
            tool,
            func,
            names,
            kwnames,
            kinds,
            nullable,
            defaults,
            primitives: PrimitiveOut::default(),
            structured,
            positional,
            modern,
            context,
            kwnames_ctx,
            ctx_kwname,
            python_call,
            step,
            validate,
            models,
            model_out,
            data_out,
            on_slow,
            slow_ns,
        };
        for tp in &fast_types {
            match Kind::of(tp)? {
                Kind::Int => route.primitives.int = true,
                Kind::Str => route.primitives.str = true,
                Kind::Bool => route.primitives.bool = true,
                Kind::Float => route.primitives.float = true,
                Kind::Model => {}
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

    /// Whether calls at 2026-07-28 may be planned.
    #[getter]
    fn modern(&self) -> bool {
        self.modern
    }

    /// Whether Python reads the arguments and makes the call (`Plans.arguments`).
    #[getter]
    fn python_call(&self) -> bool {
        self.python_call
    }

    /// The keyword the tool takes a context object by (None: it takes none).
    #[getter]
    fn context(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.context.as_ref().map(|c| c.clone_ref(py))
    }

    /// The tool object given to the constructor.
    #[getter]
    fn tool(&self, py: Python<'_>) -> Py<PyAny> {
        self.tool.clone_ref(py)
    }

    /// The nanoseconds over which a call is reported to `on_slow`; None when calls are not
    /// timed.
    #[getter(slow_ns)]
    fn slow_ns_py(&self) -> Option<u64> {
        self.on_slow.as_ref().map(|_| self.slow_ns)
    }

    /// Whether the arguments are validated with a model's `validate_json` (`validate`).
    #[getter(validates)]
    fn validates_py(&self) -> bool {
        self.validate.is_some()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tool)?;
        visit.call(&self.func)?;
        if let Some(on_slow) = &self.on_slow {
            visit.call(on_slow)?;
        }
        for default in &self.defaults {
            visit.call(default)?;
        }
        if let Some(v) = &self.validate {
            visit.call(v)?;
        }
        for model in self.models.iter().flatten() {
            visit.call(model)?;
        }
        if let Some(out) = &self.model_out {
            out.traverse(&visit)?;
        }
        if let Some(out) = &self.data_out {
            out.traverse(&visit)?;
        }
        Ok(())
    }
}

impl ToolRoute {
    /// Whether a call is planned but left to the caller to run: with a context object it
    /// makes, or entirely (Python reads the arguments and calls the tool).
    pub(crate) fn deferred(&self) -> bool {
        self.context.is_some() || self.python_call
    }

    /// Whether the extension calls the tool with a context object its caller makes (not
    /// one Python calls itself).
    pub(crate) fn takes_context(&self) -> bool {
        self.context.is_some() && !self.python_call
    }

    /// Whether the coroutine of a call may take its first step in the extension.
    pub(crate) fn steps(&self) -> bool {
        self.step
    }

    /// Whether the arguments are read by the model's `validate_json` at run time.
    pub(crate) fn validates(&self) -> bool {
        self.validate.is_some()
    }

    /// Which primitive return values are written here.
    #[inline(always)]
    pub(crate) fn primitives(&self) -> &PrimitiveOut {
        &self.primitives
    }

    /// How a return value of exactly the declared model is written here, if it is.
    #[inline(always)]
    pub(crate) fn model_out(&self) -> Option<&ModelOut> {
        self.model_out.as_ref()
    }

    /// How a return value of exactly `dict`, `list` or None is written here, if it is.
    #[inline(always)]
    pub(crate) fn data_out(&self) -> Option<&DataOut> {
        self.data_out.as_ref()
    }

    /// Whether primitive results carry `structuredContent` where the revision has it
    /// (`revision_structured`).
    #[inline(always)]
    pub(crate) fn structured(&self, revision_structured: bool) -> bool {
        revision_structured && self.structured
    }

    /// The tool object given to the constructor.
    pub(crate) fn tool_of<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.tool.bind(py).clone()
    }
}

/// The tools the extension may call, by name: a mapping the server keeps up to date as
/// tools come and go, looked up by the name's bytes as they stand in the request. Its
/// Python methods are in `py_plan` (one `#[pymethods]` block per class; `plan` and
/// `answer` make `Plans`), on top of the table operations here.
#[pyclass(module = "jetmcp._wire", name = "Routes")]
#[derive(Default)]
pub struct Routes {
    map: HashMap<Box<[u8]>, Py<ToolRoute>, ahash::RandomState>,
    /// Counts changes, so a lookup made earlier is known to be current.
    generation: u64,
}

impl Routes {
    /// The route of the tool named `name` (its bytes), if any.
    pub(crate) fn get(&self, py: Python<'_>, name: &[u8]) -> Option<Py<ToolRoute>> {
        self.map.get(name).map(|r| r.clone_ref(py))
    }

    /// Map `name` to `route` (a change).
    pub(crate) fn insert(&mut self, name: &str, route: Py<ToolRoute>) {
        self.generation += 1;
        self.map.insert(name.as_bytes().into(), route);
    }

    /// Unmap `name` (a change, whether it was mapped or not): its route, if it had one.
    pub(crate) fn remove(&mut self, name: &str) -> Option<Py<ToolRoute>> {
        self.generation += 1;
        self.map.remove(name.as_bytes())
    }

    /// Unmap every name (a change).
    pub(crate) fn clear(&mut self) {
        self.generation += 1;
        self.map.clear();
    }

    /// Whether `name` maps to a route.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name.as_bytes())
    }

    /// How many names map to a route.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The names that map to a route, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .map
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        names.sort();
        names
    }

    /// Visit the routes held, for the garbage collector.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for route in self.map.values() {
            visit.call(route)?;
        }
        Ok(())
    }

    /// Drop every route without counting a change (the garbage collector's clear).
    pub(crate) fn drop_routes(&mut self) {
        self.map.clear();
    }

    /// The change counter: equal counts mean the same table.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether `name` still maps to `route`.
    pub(crate) fn maps(&self, name: &[u8], route: &Py<ToolRoute>) -> bool {
        self.map.get(name).is_some_and(|r| r.is(route))
    }
}

/// One value per parameter, in signature order (few enough to live inline).
pub(crate) type Args = SmallVec<[Py<PyAny>; 4]>;

/// What a request comes to once its arguments are read: its raw id, the tool's name, the
/// route and the arguments for each parameter, in order. Spans are of the frame's body.
pub(crate) struct Plan {
    /// The request's id lexeme.
    pub raw_id: Span,
    /// The tool name's bytes.
    pub name: Span,
    /// The route the name mapped to when planned.
    pub route: Py<ToolRoute>,
    /// One value per parameter (none when the route's model or Python reads them).
    pub args: Args,
    /// The `_meta` object of `params`, when present.
    pub meta: Option<Span>,
    /// The protocol version string `_meta` names (its lexeme), when it names one.
    pub version: Option<Span>,
    /// The value of `_meta`'s log level member (the last one), when it has one.
    pub log_level: Option<Span>,
    /// The `arguments` object.
    pub arguments: Span,
}

impl Plan {
    /// Let go of the plan's references with the GIL at hand (a plain drop has to find out
    /// whether it is held).
    pub(crate) fn release(self, py: Python<'_>) {
        self.route.drop_ref(py);
        for arg in self.args {
            arg.drop_ref(py);
        }
    }
}

/// The last tool looked up in a body, with the [`Routes::generation`] it was found at: the
/// entries of a batch mostly call one tool.
pub(crate) type Memo<'b, 'py> = Option<(u64, &'b [u8], Bound<'py, ToolRoute>)>;

/// The rules an entry is planned under.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    /// The era of the revision served.
    pub era: Era<'a>,
    /// Whether `params` may hold `_meta` (not for the older entry points).
    pub meta: bool,
    /// The routing headers to agree with (2026-07-28 over HTTP).
    pub headers: Option<&'a Headers>,
    /// Whether the entry is one of an array.
    pub in_batch: bool,
}

/// The plan for `entry`, or None when the Python dispatcher must serve it. Runs no user code.
pub(crate) fn plan_entry<'b, 'py>(
    py: Python<'py>,
    body: &'b [u8],
    entry: &Entry,
    routes: &Bound<'py, Routes>,
    memo: &mut Memo<'b, 'py>,
    rules: Rules<'_>,
) -> PyResult<Option<Plan>> {
    let Some(call) = plan::read_call(body, entry) else {
        return Ok(None);
    };
    if call.meta.is_some() && !rules.meta {
        return Ok(None);
    }
    if !plan::admits(body, &call, rules.era, rules.headers, rules.in_batch) {
        return Ok(None);
    }
    let name = call.name.of(body);
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
    if matches!(rules.era, Era::Modern { .. }) && !route.get().modern {
        return Ok(None);
    }
    let values = if route.get().python_call || route.get().validate.is_some() {
        Some(Args::new())
    } else {
        read_arguments(py, route.get(), call.arguments.of(body))?
    };
    Ok(values.map(|args| Plan {
        raw_id: call.raw_id,
        name: call.name,
        route: route.unbind(),
        args,
        meta: call.meta.map(|m| m.span),
        version: call.meta.and_then(|m| m.version),
        log_level: call.meta.and_then(|m| m.log_level),
        arguments: call.arguments,
    }))
}

/// The value for every parameter, or None when an argument is not exactly of its
/// parameter's type, is repeated, or a required one is missing (or a key has escapes).
/// Unknown keys are ignored, as the Python check ignores them.
fn read_arguments(py: Python<'_>, route: &ToolRoute, data: &[u8]) -> PyResult<Option<Args>> {
    let Some(spans) = argument_spans(route, data) else {
        return Ok(None);
    };
    let mut values = Args::with_capacity(spans.len());
    for (i, (span, default)) in spans.into_iter().zip(&route.defaults).enumerate() {
        match (span, default) {
            (Some(span), _) => match plain_value(py, route, i, span.of(data)) {
                Some(value) => values.push(value.unbind()),
                None => return Ok(None),
            },
            (None, Some(d)) => values.push(d.clone_ref(py)),
            (None, None) => return Ok(None),
        }
    }
    Ok(Some(values))
}

/// Where each parameter's argument is in the `arguments` object `data`, in signature order
/// (None: not given), or None when `data` is not an object, or a key is repeated or has
/// escapes (the general path reads those). Unknown keys are ignored.
fn argument_spans(route: &ToolRoute, data: &[u8]) -> Option<SmallVec<[Option<Span>; 8]>> {
    let mut spans: SmallVec<[Option<Span>; 8]> = SmallVec::new();
    spans.resize(route.names.len(), None);
    let mut cur = Cursor::new(data);
    let mut more = cur.object_open()?;
    while more {
        let (key, false) = cur.key()? else {
            return None;
        };
        let value = cur.skip()?;
        let key = key.of(data);
        if let Some(i) = route.names.iter().position(|name| name.as_bytes() == key) {
            if spans[i].is_some() {
                return None;
            }
            spans[i] = Some(value);
        }
        more = cur.object_next()?;
    }
    Some(spans)
}

/// The value of plain parameter `i` from its argument's JSON `raw`, or None when it is not
/// exactly of the parameter's type (None where allowed; an integer for a float is read as
/// pydantic reads it).
fn plain_value<'py>(
    py: Python<'py>,
    route: &ToolRoute,
    i: usize,
    raw: &[u8],
) -> Option<Bound<'py, PyAny>> {
    let value = build(py, raw).ok()?;
    if route.kinds[i].holds(&value) || (route.nullable[i] && value.is_none()) {
        return Some(value);
    }
    if route.kinds[i] != Kind::Float || !Kind::Int.holds(&value) {
        return None;
    }
    // An integer for a float: pydantic reads it as `float(n)` (rounded to the nearest
    // double; past the doubles, refused: the general path says so).
    let v = value.extract::<f64>().ok()?;
    Some(PyFloat::new(py, v).into_any())
}

/// What calling a tool came to.
pub(crate) enum Called<'py> {
    Returned(Bound<'py, PyAny>),
    /// An `Exception` the function raised (the instance).
    Raised(Bound<'py, PyAny>),
    /// An `async` function's coroutine, stepped once: it suspended on the value it yielded.
    Suspended {
        coroutine: Bound<'py, PyAny>,
        yielded: Bound<'py, PyAny>,
    },
}

/// Whether `value` is exactly a coroutine (what an `async def` function gives back).
#[inline]
pub(crate) fn is_coroutine(value: &Bound<'_, PyAny>) -> bool {
    value.get_type_ptr() == ptr::addr_of_mut!(ffi::PyCoro_Type)
}

/// Take the first step of the coroutine `value`: what it returned, raised or yielded, as
/// the function's own outcome would be. Errs only for what the Python path would not catch
/// either (an exception that is not an `Exception`, as a question that ends an input round
/// is).
#[inline(never)]
pub(crate) fn step(value: Bound<'_, PyAny>) -> PyResult<Called<'_>> {
    let py = value.py();
    let mut out: *mut ffi::PyObject = ptr::null_mut();
    // SAFETY: `value` is a live coroutine, None a valid value to send; `out` receives a new
    // reference (the returned or yielded value) or stays NULL with an exception set.
    let sent = unsafe { ffi::PyIter_Send(value.as_ptr(), ffi::Py_None(), &mut out) };
    match sent {
        ffi::PySendResult::PYGEN_RETURN => {
            // SAFETY: a new reference to the returned value.
            Ok(Called::Returned(unsafe { Bound::from_owned_ptr(py, out) }))
        }
        ffi::PySendResult::PYGEN_NEXT => Ok(Called::Suspended {
            coroutine: value,
            // SAFETY: a new reference to the yielded value.
            yielded: unsafe { Bound::from_owned_ptr(py, out) },
        }),
        ffi::PySendResult::PYGEN_ERROR => raised(py, PyErr::fetch(py)),
    }
}

/// What the function raised: an `Exception` is its outcome (Python shapes it as the general
/// path does); anything else propagates, as it does on that path.
fn raised(py: Python<'_>, err: PyErr) -> PyResult<Called<'_>> {
    if err.is_instance_of::<PyException>(py) {
        Ok(Called::Raised(err.into_value(py).into_bound(py).into_any()))
    } else {
        Err(err)
    }
}

/// Call the tool with the planned arguments. Errs only for what the Python path would not
/// catch either (an exception that is not an `Exception`: KeyboardInterrupt, SystemExit,
/// CancelledError).
#[inline(always)]
pub(crate) fn call_tool<'py>(
    py: Python<'py>,
    route: &ToolRoute,
    args: &[Py<PyAny>],
    context: Option<&Bound<'py, PyAny>>,
) -> PyResult<Called<'py>> {
    if route.python_call {
        return Err(PyValueError::new_err(
            "Python calls this tool itself (ToolRoute.python_call)",
        ));
    }
    let mut ptrs: SmallVec<[*mut ffi::PyObject; 8]> = args.iter().map(|a| a.as_ptr()).collect();
    // The context goes last, by keyword; a tool that takes one runs only with one.
    let (kwnames, with_ctx) = match (&route.kwnames_ctx, &route.ctx_kwname, context) {
        (Some(all), Some(alone), Some(ctx)) => {
            ptrs.push(ctx.as_ptr());
            (if route.positional { alone } else { all }, true)
        }
        (None, None, None) => (&route.kwnames, false),
        (Some(_), _, None) => {
            return Err(PyValueError::new_err(
                "this tool takes a context: give it to Plans.run",
            ))
        }
        _ => {
            return Err(PyValueError::new_err(
                "this tool takes no context: give none",
            ))
        }
    };
    // SAFETY: `func` and the keyword-name tuples are live objects owned by the route;
    // `ptrs` holds one borrowed reference per parameter (kept alive by `args`), then the
    // context's (kept alive by `context`), passed either the parameters by position
    // (`nargsf` = their number) and the context by keyword, or all by keyword (`nargsf` 0,
    // one keyword name each). The result is a new reference or NULL with an exception.
    // A promoted synchronous tool is timed here, not by a Python wrapper: two reads of the
    // monotonic clock (vDSO), and Python entered again only for a slow call.
    let started = if route.on_slow.is_some() {
        clock_ns()
    } else {
        0
    };
    let result = unsafe {
        let r = if route.positional {
            ffi::PyObject_Vectorcall(
                route.func.as_ptr(),
                ptrs.as_ptr(),
                args.len(),
                if with_ctx {
                    kwnames.as_ptr()
                } else {
                    ptr::null_mut()
                },
            )
        } else {
            ffi::PyObject_Vectorcall(route.func.as_ptr(), ptrs.as_ptr(), 0, kwnames.as_ptr())
        };
        Bound::from_owned_ptr_or_err(py, r)
    };
    if let Some(on_slow) = &route.on_slow {
        let took = clock_ns().wrapping_sub(started);
        if took > route.slow_ns {
            report_slow(py, took, on_slow);
        }
    }
    match result {
        Ok(value) => Ok(Called::Returned(value)),
        Err(err) => raised(py, err),
    }
}

/// The monotonic clock in nanoseconds (from an arbitrary start), which times a promoted
/// synchronous call: `clock_gettime` (vDSO) and one multiply. `Instant::now` and
/// `Instant::elapsed` read the same clock but check and normalise a `Timespec` and a
/// `Duration` on the way: about 90 instructions more per timed call (two reads and a
/// difference; bench/results/layout_instructions.md).
#[cfg(unix)]
#[inline]
fn clock_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a timespec the call writes; CLOCK_MONOTONIC exists on every unix
    // (the call cannot fail with a valid clock and pointer).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}

/// The monotonic clock in nanoseconds since its first read (where `clock_gettime` is not).
#[cfg(not(unix))]
fn clock_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let took = START.get_or_init(std::time::Instant::now).elapsed();
    u64::try_from(took.as_nanos()).unwrap_or(u64::MAX)
}

/// Report a timed call that took `took` nanoseconds, over its route's `slow_ns`, to
/// `on_slow`. Called with no exception pending (the tool's own is held in its `PyErr`); what `on_slow` raises is
/// written as unraisable, never the caller's outcome.
#[cold]
#[inline(never)]
fn report_slow(py: Python<'_>, took: u64, on_slow: &Py<PyAny>) {
    if let Err(err) = on_slow.bind(py).call1((took,)) {
        err.write_unraisable(py, Some(on_slow.bind(py)));
    }
}

/// The arguments of a call of a route that validates them with a model (`validate`): the
/// value of each field from the model `validate_json` makes of the `arguments` span, in
/// signature order, as Python's general path takes them (`dict(model.__dict__)`). None when
/// the route does not validate, or the model refuses the arguments (or raises anything
/// else that is an `Exception`): nothing of the tool ran, and the general path answers the
/// call (its retry of JSON-encoded strings included). Errs only for what is not an
/// `Exception`, as the general path would.
pub(crate) fn model_args(py: Python<'_>, route: &ToolRoute, data: &[u8]) -> PyResult<Option<Args>> {
    let Some(validate) = &route.validate else {
        return Ok(None);
    };
    if !route.models.is_empty() {
        return parameter_args(py, route, data);
    }
    let model = match validate.bind(py).call1((PyBytes::new(py, data),)) {
        Ok(model) => model,
        Err(err) => return declined(py, err),
    };
    let fields = match model.getattr(pyo3::intern!(py, "__dict__")) {
        Ok(fields) => fields,
        Err(err) => return declined(py, err),
    };
    let Ok(fields) = fields.cast_into::<PyDict>() else {
        return Ok(None);
    };
    let mut args = Args::with_capacity(route.names.len());
    for name in route.kwnames.bind(py).iter() {
        match fields.get_item(&name) {
            Ok(Some(value)) => args.push(value.unbind()),
            Ok(None) => return Ok(None),
            Err(err) => return declined(py, err),
        }
    }
    Ok(Some(args))
}

/// [`model_args`] for a route that reads each model parameter by its own model
/// (`ToolRoute.models`) and each plain one as a plain route does: the same values in
/// signature order, model parameters validated in that order (as the whole model validates
/// its fields), with no model made of the whole arguments. None, nothing of the tool run,
/// where the whole model could answer otherwise or refuse: a key repeated or escaped, a
/// plain argument not exactly of its type, a model refusing its argument, a required one
/// missing (the general path answers the call).
fn parameter_args(py: Python<'_>, route: &ToolRoute, data: &[u8]) -> PyResult<Option<Args>> {
    let Some(spans) = argument_spans(route, data) else {
        return Ok(None);
    };
    let mut args = Args::with_capacity(spans.len());
    for (i, span) in spans.into_iter().enumerate() {
        let Some(span) = span else {
            match &route.defaults[i] {
                Some(default) => args.push(default.clone_ref(py)),
                None => return Ok(None),
            }
            continue;
        };
        let raw = span.of(data);
        match &route.models[i] {
            Some(validate) => match validate.bind(py).call1((PyBytes::new(py, raw),)) {
                Ok(value) => args.push(value.unbind()),
                Err(err) => return declined(py, err),
            },
            None => match plain_value(py, route, i, raw) {
                Some(value) => args.push(value.unbind()),
                None => return Ok(None),
            },
        }
    }
    Ok(Some(args))
}
