//! Plans: the one-way way in for calls of plain tools.
//!
//! `Routes.plan(frame, shape, headers)` reads and checks every entry of a frame and runs
//! nothing; the `Plans` it gives run planned entries on demand, each giving either its
//! finished reply bytes or an `Outcome` (the tool's return value or exception) for Python to
//! shape. `Routes.answer` plans and runs a single message at once. Nothing here calls
//! jetmcp's own Python: only the tools' functions.
//!
//! Entries run in the order the caller asks for them. A tool may change the tool table
//! while it runs; an entry planned before that runs only if its name still maps to the
//! route it was planned with, or plans again against the table as it is (else it gives None
//! and runs nothing, for Python to serve it the general way), so every entry sees the tools
//! as they are when it runs, as on the general path.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyIndexError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use smallvec::SmallVec;

use crate::cursor::Span;
use crate::encode::{self, BatchOut};
use crate::frame::FrameKind;
use crate::plan::{self, Era};
use crate::py_build::build;
use crate::py_eager::{eager_step, FirstStep};
use crate::py_encode::encode_with;
use crate::py_frame::PyFrame;
use crate::py_headers::PyHeaders;
use crate::py_result::{data_json, model_json, primitive, Texts};
use crate::py_route::{
    call_tool, is_coroutine, model_args, plan_entry, step as step_coroutine, Called, Memo, Plan,
    Routes, Rules, ToolRoute,
};
use crate::py_shape::Shape;

// `Routes`' Python methods live here, above the table (`py_route`), because `plan` and
// `answer` make `Plans`; PyO3 takes one `#[pymethods]` block per class.
#[pymethods]
impl Routes {
    #[new]
    fn new() -> Self {
        Routes::default()
    }

    fn __setitem__(&mut self, name: &str, route: Py<ToolRoute>) {
        self.insert(name, route);
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<ToolRoute>> {
        self.get(py, name.as_bytes())
            .ok_or_else(|| PyKeyError::new_err(name.to_owned()))
    }

    fn __delitem__(&mut self, name: &str) -> PyResult<()> {
        match self.remove(name) {
            Some(_) => Ok(()),
            None => Err(PyKeyError::new_err(name.to_owned())),
        }
    }

    fn __contains__(&self, name: &str) -> bool {
        self.contains(name)
    }

    fn __len__(&self) -> usize {
        self.len()
    }

    /// Remove the route of `name`, if any; the route, or None.
    fn pop(&mut self, name: &str) -> Option<Py<ToolRoute>> {
        self.remove(name)
    }

    #[pyo3(name = "clear")]
    fn clear_py(&mut self) {
        self.clear();
    }

    /// The names, sorted.
    #[pyo3(name = "names")]
    fn names_py(&self) -> Vec<String> {
        self.names()
    }

    /// Read and check the `tools/call` requests of `frame` that a tool here can answer under
    /// `shape`'s rules (and `headers`, 2026-07-28 over HTTP); run nothing. None when no
    /// entry can be planned.
    #[pyo3(signature = (frame, shape, headers = None))]
    fn plan(
        slf: &Bound<'_, Self>,
        frame: &Bound<'_, PyFrame>,
        shape: &Bound<'_, Shape>,
        headers: Option<&Bound<'_, PyHeaders>>,
    ) -> PyResult<Option<Plans>> {
        plan_frame(slf, frame, shape, headers)
    }

    /// For a single message: plan its call and run it at once (one call instead of
    /// ``plan`` then ``Plans.run(0)``). Its reply, its :class:`Outcome`, or None when it
    /// does not plan: nothing ran. `step`: an `async` tool's coroutine takes its first step
    /// here (see `Plans.run`). `task_loop`: the coroutine runs instead as a task on that
    /// loop whose first step runs here (`eager_task`), when `may_step()` is true then; the
    /// outcome of a task that did not end in that step is `running`.
    #[pyo3(signature = (frame, shape, headers = None, step = false, task_loop = None, may_step = None))]
    fn answer<'py>(
        slf: &Bound<'py, Self>,
        frame: &Bound<'py, PyFrame>,
        shape: &Bound<'py, Shape>,
        headers: Option<&Bound<'py, PyHeaders>>,
        step: bool,
        task_loop: Option<&Bound<'py, PyAny>>,
        may_step: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let tasks = match (task_loop, may_step) {
            (Some(task_loop), Some(may_step)) => Some(Tasks {
                task_loop,
                may_step,
            }),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("task_loop and may_step go together")),
        };
        answer_single(slf, frame, shape, headers, step, tasks)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.traverse(&visit)
    }

    fn __clear__(&mut self) {
        self.drop_routes();
    }
}

/// A planned entry's call that the extension does not answer itself: a return value other
/// than a primitive it writes, or an exception, for Python to shape.
#[pyclass(frozen, module = "jetmcp._wire", name = "Outcome")]
pub struct Outcome {
    /// The entry's index in the frame.
    #[pyo3(get)]
    index: usize,
    /// The route the call was planned with (how its values are written).
    route: Py<ToolRoute>,
    /// The object given to the tool's `ToolRoute`.
    #[pyo3(get)]
    tool: Py<PyAny>,
    /// The request's id lexeme.
    #[pyo3(get)]
    raw_id: Py<PyBytes>,
    /// The return value (an `async` function's coroutine unless `stepped`), or the
    /// exception instance when `failed`.
    #[pyo3(get)]
    value: Py<PyAny>,
    #[pyo3(get)]
    failed: bool,
    /// Whether an `async` function's coroutine took its first step here: `value` is then
    /// what it returned or raised, unless it is `suspended`.
    #[pyo3(get)]
    stepped: bool,
    /// What the stepped coroutine (`value`) yielded when it suspended, else None.
    #[pyo3(get)]
    yielded: Option<Py<PyAny>>,
    /// Whether `value` is the task running the coroutine (`run`): its first step did not
    /// end the call (it suspended, or it was cancelled), and what is left is to await it.
    #[pyo3(get)]
    running: bool,
}

#[pymethods]
impl Outcome {
    /// Whether the stepped coroutine (`value`) suspended, on `yielded`.
    #[getter]
    fn suspended(&self) -> bool {
        self.yielded.is_some()
    }

    /// Take the first step of the coroutine this outcome holds (an `async` tool's, not
    /// stepped yet), as `Routes.answer(..., step=True)` takes it; the caller is the task
    /// that awaits the rest. The reply when the coroutine returned a value the extension
    /// writes (as a synchronous tool's value is written); else the outcome of the step
    /// (`stepped`: what it returned for Python to shape, what it raised, or `suspended`).
    /// Raises what the coroutine raised that is no `Exception`, as the Python path lets it.
    fn step<'py>(slf: &Bound<'py, Self>, shape: &Bound<'py, Shape>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let coroutine = this.value.bind(py).clone();
        if this.stepped || this.failed || !is_coroutine(&coroutine) {
            return Err(PyValueError::new_err(
                "this outcome holds no coroutine to step",
            ));
        }
        let mut yielded = None;
        let (value, failed) = match step_coroutine(coroutine)? {
            Called::Returned(value) => {
                let mut reply = None;
                let raw_id = this.raw_id.bind(py).as_bytes();
                // A value the extension cannot write (its model refuses to dump) is left to
                // Python, whose shaping says why as the general path does.
                let out = Out::Single(&mut reply);
                if let Ok(true) =
                    write_value(py, this.route.get(), shape.get(), raw_id, &value, out)
                {
                    if let Some(reply) = reply {
                        return Ok(reply.into_any());
                    }
                }
                (value, false)
            }
            Called::Raised(exc) => (exc, true),
            Called::Suspended {
                coroutine,
                yielded: first,
            } => {
                yielded = Some(first.unbind());
                (coroutine, false)
            }
        };
        let stepped = Outcome {
            index: this.index,
            route: this.route.clone_ref(py),
            tool: this.tool.clone_ref(py),
            raw_id: this.raw_id.clone_ref(py),
            value: value.unbind(),
            failed,
            stepped: true,
            yielded,
            running: false,
        };
        Ok(Bound::new(py, stepped)?.into_any())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<Outcome index={} raw_id={} {}={}>",
            self.index,
            self.raw_id.bind(py).repr()?,
            if self.failed { "raised" } else { "returned" },
            self.value.bind(py).repr()?
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.route)?;
        visit.call(&self.tool)?;
        visit.call(&self.value)?;
        if let Some(yielded) = &self.yielded {
            visit.call(yielded)?;
        }
        Ok(())
    }
}

enum Slot {
    Unplanned,
    Planned(Plan),
    /// Run (or running): what of its `_meta` a tool's context may still ask for.
    Ran(Kept),
}

/// The spans of a plan that outlive its run: a running tool's context reads its request's
/// `_meta` (`Plans.meta`, `Plans.log_level`) only if it needs it.
#[derive(Clone, Copy)]
struct Kept {
    meta: Option<Span>,
    log_level: Option<Span>,
}

impl Kept {
    fn of(plan: &Plan) -> Self {
        Kept {
            meta: plan.meta,
            log_level: plan.log_level,
        }
    }
}

/// One slot per entry (a single message's inline).
type Slots = SmallVec<[Slot; 1]>;

/// The plans for one frame, made by `Routes.plan`.
#[pyclass(frozen, module = "jetmcp._wire", name = "Plans")]
pub struct Plans {
    frame: Py<PyFrame>,
    routes: Py<Routes>,
    shape: Py<Shape>,
    headers: Option<Py<PyHeaders>>,
    /// `Routes.generation` when the plans were made.
    generation: u64,
    /// Never locked while a tool runs (a tool may use the plans).
    slots: Mutex<Slots>,
    complete: bool,
}

/// Plan the entries of `frame` (the body of `Routes.plan`).
pub(crate) fn plan_frame(
    routes: &Bound<'_, Routes>,
    frame: &Bound<'_, PyFrame>,
    shape: &Bound<'_, Shape>,
    headers: Option<&Bound<'_, PyHeaders>>,
) -> PyResult<Option<Plans>> {
    let py = routes.py();
    let f = frame.get();
    if !plannable_kind(f) {
        return Ok(None);
    }
    let entries = f.parsed();
    let body = f.body(py).as_bytes();
    let rules = rules(f, shape.get(), headers.map(Bound::get));
    let mut memo: Memo<'_, '_> = None;
    let mut slots = Slots::with_capacity(entries.len());
    let mut any = false;
    let mut complete = true;
    for entry in entries {
        match plan_entry(py, body, entry, routes, &mut memo, rules)? {
            // A call its caller runs (with a context, or by Python entirely) is planned for
            // single messages only (`Routes.answer`): in an array, Python serves it.
            Some(plan) if plan.route.get().deferred() => {
                plan.release(py);
                complete = false;
                slots.push(Slot::Unplanned);
            }
            Some(plan) => {
                any = true;
                slots.push(Slot::Planned(plan));
            }
            None => {
                complete = false;
                slots.push(Slot::Unplanned);
            }
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(Plans {
        frame: frame.clone().unbind(),
        routes: routes.clone().unbind(),
        shape: shape.clone().unbind(),
        headers: headers.map(|h| h.clone().unbind()),
        generation: routes.borrow().generation(),
        slots: Mutex::new(slots),
        complete,
    }))
}

/// Where `Routes.answer` runs an `async` tool's coroutine: as a task on `task_loop` whose
/// first step runs at once (`eager_task`), when `may_step()` says so.
#[derive(Clone, Copy)]
pub(crate) struct Tasks<'a, 'py> {
    task_loop: &'a Bound<'py, PyAny>,
    may_step: &'a Bound<'py, PyAny>,
}

/// A single message planned and run at once (the body of `Routes.answer`): its reply, its
/// outcome, or None when it does not plan (nothing ran).
pub(crate) fn answer_single<'py>(
    routes: &Bound<'py, Routes>,
    frame: &Bound<'py, PyFrame>,
    shape: &Bound<'py, Shape>,
    headers: Option<&Bound<'py, PyHeaders>>,
    step: bool,
    tasks: Option<Tasks<'_, 'py>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = routes.py();
    let f = frame.get();
    if f.kind != FrameKind::Single as u8 {
        return Ok(None);
    }
    let [entry] = f.parsed() else {
        return Ok(None);
    };
    let body = f.body(py).as_bytes();
    let shape_obj = shape;
    let shape = shape.get();
    let rules = rules(f, shape, headers.map(Bound::get));
    let Some(plan) = plan_entry(py, body, entry, routes, &mut None, rules)? else {
        return Ok(None);
    };
    if plan.route.get().deferred() {
        // Planned, not run: the caller runs it (`Plans.run(0, context)`, or the call Python
        // makes with `Plans.arguments(0)`).
        let generation = routes.borrow().generation();
        let plans = Plans {
            frame: frame.clone().unbind(),
            routes: routes.clone().unbind(),
            shape: shape_obj.clone().unbind(),
            headers: headers.map(|h| h.clone().unbind()),
            generation,
            slots: Mutex::new(SmallVec::from_iter([Slot::Planned(plan)])),
            complete: true,
        };
        return Ok(Some(Bound::new(py, plans)?.into_any()));
    }
    let mut reply = None;
    let ran = call_plan(
        py,
        body,
        shape,
        0,
        &plan,
        None,
        Stepping { step, tasks },
        Out::Single(&mut reply),
    );
    plan.release(py);
    Ok(match ran? {
        Ran::Written => reply.map(Bound::into_any),
        Ran::Outcome(outcome) => Some(outcome.into_any()),
        Ran::Stale | Ran::Declined => None,
    })
}

/// The rules the entries of `frame` are planned under.
fn rules<'a>(frame: &PyFrame, shape: &'a Shape, headers: Option<&'a PyHeaders>) -> Rules<'a> {
    let era = shape.era();
    Rules {
        era,
        meta: true,
        // The routing headers are a 2026-07-28 matter.
        headers: match era {
            Era::Modern { .. } => headers.map(PyHeaders::routing),
            Era::Legacy => None,
        },
        in_batch: frame.kind == FrameKind::Batch as u8,
    }
}

/// Where a run puts a finished reply.
enum Out<'a, 'py> {
    /// A single reply, as `bytes`.
    Single(&'a mut Option<Bound<'py, PyBytes>>),
    /// The next reply of a batch.
    Batch(&'a mut BatchOut),
}

/// What running one entry came to.
enum Ran<'py> {
    /// The reply is written.
    Written,
    Outcome(Bound<'py, Outcome>),
    /// The tools changed under the plan and the entry no longer plans: nothing ran.
    Stale,
    /// The route's model refused the arguments: nothing of the tool ran.
    Declined,
}

/// How an `async` function's coroutine is run by `call_plan` (when its route allows it):
/// in a task of its own whose first step runs here (`tasks`, when it says so), else stepped
/// once here (`step`), else not at all (the outcome holds it for Python).
#[derive(Clone, Copy)]
struct Stepping<'a, 'py> {
    step: bool,
    tasks: Option<Tasks<'a, 'py>>,
}

/// Run the coroutine `coro` as a task on `tasks.task_loop` whose first step runs now: what
/// it returned or raised in that step, or, when the task did not end there (it suspended)
/// or ended cancelled, the task, `true` (it is running: the caller awaits it).
fn in_task<'py>(tasks: Tasks<'_, 'py>, coro: Bound<'py, PyAny>) -> PyResult<(Called<'py>, bool)> {
    Ok(match eager_step(tasks.task_loop, &coro)? {
        FirstStep::Returned(value) => (Called::Returned(value), false),
        FirstStep::Raised(exc) => (Called::Raised(exc), false),
        FirstStep::Running(task) => (Called::Returned(task), true),
    })
}

/// Call `plan` (entry `i` of a frame whose body is `body`): its reply, written as `shape`
/// says, put in `out`, or its outcome. An `async` function's coroutine is run as
/// `stepping` says (when its route allows it), and a value it returns at once is written as
/// a synchronous function's would be.
#[allow(clippy::too_many_arguments)]
fn call_plan<'py>(
    py: Python<'py>,
    body: &[u8],
    shape: &Shape,
    i: usize,
    plan: &Plan,
    context: Option<&Bound<'py, PyAny>>,
    stepping: Stepping<'_, 'py>,
    out: Out<'_, 'py>,
) -> PyResult<Ran<'py>> {
    let route = plan.route.get();
    let validated;
    let args: &[Py<PyAny>] = if route.validates() {
        match model_args(py, route, plan.arguments.of(body))? {
            Some(values) => {
                validated = values;
                &validated
            }
            None => return Ok(Ran::Declined),
        }
    } else {
        &plan.args
    };
    let (called, stepped, running) = match call_tool(py, route, args, context)? {
        Called::Returned(value) if route.steps() && is_coroutine(&value) => match stepping {
            Stepping {
                tasks: Some(tasks), ..
            } if tasks.may_step.call0()?.is_truthy()? => {
                let (called, running) = in_task(tasks, value)?;
                (called, true, running)
            }
            Stepping { step: true, .. } => (step_coroutine(value)?, true, false),
            _ => (Called::Returned(value), false, false),
        },
        called => (called, false, false),
    };
    let raw_id = plan.raw_id.of(body);
    let mut yielded = None;
    let (value, failed) = match called {
        Called::Returned(value) => {
            if !running && write_value(py, route, shape, raw_id, &value, out)? {
                return Ok(Ran::Written);
            }
            (value, false)
        }
        Called::Raised(exc) => (exc, true),
        Called::Suspended {
            coroutine,
            yielded: first,
        } => {
            yielded = Some(first.unbind());
            (coroutine, false)
        }
    };
    let outcome = Outcome {
        index: i,
        route: plan.route.clone_ref(py),
        tool: route.tool_of(py).unbind(),
        raw_id: PyBytes::new(py, raw_id).unbind(),
        value: value.unbind(),
        failed,
        stepped,
        yielded,
        running,
    };
    Ok(Ran::Outcome(Bound::new(py, outcome)?))
}

/// Write the reply for `value`, what the tool (or its coroutine) returned, into `out` when
/// the extension writes such a value itself (True); else write nothing (False: Python
/// shapes it). Always inlined: out of line, the call cost each planned call the extension
/// writes about 75 instructions, inline about 40 (`batch`: 59,582 -> 59,258 per body of 10;
/// bench/results/layout_instructions.md).
#[inline(always)]
fn write_value<'py>(
    py: Python<'py>,
    route: &ToolRoute,
    shape: &Shape,
    raw_id: &[u8],
    value: &Bound<'py, PyAny>,
    out: Out<'_, 'py>,
) -> PyResult<bool> {
    if let Some(p) = primitive(route.primitives(), value) {
        let structured = route.structured(shape.structured);
        let info = shape.server_info.as_deref();
        put(py, out, |buf| {
            encode::write_text_result(buf, raw_id, p, structured, info)
        })?;
        return Ok(true);
    }
    // A declared model's JSON, indented, is its text, and as it is its structured
    // content; data (a dict, a list, None) has texts and structured content of its
    // own (the declared output's dump).
    let written = match model_json(route.model_out(), value)? {
        Some(json) => encode::indented(json.as_bytes()).map(|text| {
            let texts = Texts::from_buf([text]);
            (texts, route.structured(shape.structured).then_some(json))
        }),
        None => data_json(route.data_out(), value, shape.structured)?,
    };
    if let Some((texts, data)) = written {
        let data = data.as_ref().map(|d| d.as_bytes());
        let info = shape.server_info.as_deref();
        put(py, out, |buf| {
            encode::write_json_result(buf, raw_id, &texts, data, info)
        })?;
        return Ok(true);
    }
    Ok(false)
}

/// A reply written by `write` put in `out`: as the single reply's `bytes`, or as the next
/// reply of the batch buffer.
#[inline(always)]
fn put<'py>(py: Python<'py>, out: Out<'_, 'py>, write: impl FnOnce(&mut Vec<u8>)) -> PyResult<()> {
    match out {
        Out::Single(reply) => {
            *reply = Some(encode_with(py, |buf| {
                write(buf);
                Ok(())
            })?);
        }
        Out::Batch(batch) => write(batch.reply()),
    }
    Ok(())
}

/// One entry of a batch run by `run_all`.
enum Item<'py> {
    /// Its reply, as its place in the batch buffer.
    Reply(usize, usize),
    Outcome(Bound<'py, Outcome>),
    NotRun,
}

impl Plans {
    fn slots(&self) -> MutexGuard<'_, Slots> {
        // A panic cannot leave the slots half-changed: each change is one assignment.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take entry `i`'s plan for running (the slot is marked as run).
    fn take(&self, i: usize) -> PyResult<Plan> {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(i) else {
            return Err(PyIndexError::new_err(format!("no entry {i}")));
        };
        match slot {
            Slot::Planned(plan) => {
                let kept = Slot::Ran(Kept::of(plan));
                match std::mem::replace(slot, kept) {
                    Slot::Planned(plan) => Ok(plan),
                    _ => unreachable!("the slot was just seen planned"),
                }
            }
            Slot::Unplanned => Err(PyValueError::new_err(format!("entry {i} is not planned"))),
            Slot::Ran(_) => Err(PyValueError::new_err(format!("entry {i} already ran"))),
        }
    }

    /// Whether `plan` stands against the tool table as it is now: the table did not change
    /// since planning, or the plan's name still maps to its route.
    fn is_current(&self, py: Python<'_>, plan: &Plan) -> bool {
        let table = self.routes.bind(py).borrow();
        table.generation() == self.generation
            || table.maps(
                plan.name.of(self.frame.get().body(py).as_bytes()),
                &plan.route,
            )
    }

    /// Entry `i` planned again against the tool table as it is now (None: it no longer
    /// plans).
    #[cold]
    fn replan(&self, py: Python<'_>, i: usize) -> PyResult<Option<Plan>> {
        let frame = self.frame.get();
        let Some(entry) = frame.parsed().get(i) else {
            return Ok(None);
        };
        let headers = self.headers.as_ref().map(|h| h.get());
        let rules = rules(frame, self.shape.get(), headers);
        let body = frame.body(py).as_bytes();
        plan_entry(py, body, entry, self.routes.bind(py), &mut None, rules)
    }

    /// Run entry `i` (with `context` for a tool that takes one): its reply put in `out`,
    /// or its outcome.
    fn execute<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        context: Option<&Bound<'py, PyAny>>,
        step: bool,
        out: Out<'_, 'py>,
    ) -> PyResult<Ran<'py>> {
        let mut plan = self.take(i)?;
        if !self.is_current(py, &plan) {
            match self.replan(py, i)? {
                Some(again) => plan = again,
                None => {
                    self.slots()[i] = Slot::Unplanned;
                    return Ok(Ran::Stale);
                }
            }
        }
        let body = self.frame.get().body(py).as_bytes();
        let stepping = Stepping { step, tasks: None };
        let ran = call_plan(py, body, self.shape.get(), i, &plan, context, stepping, out);
        plan.release(py);
        let ran = ran?;
        if matches!(ran, Ran::Declined) {
            // Served the general way, as an entry that no longer plans.
            self.slots()[i] = Slot::Unplanned;
        }
        Ok(ran)
    }

    /// The span `pick` finds in entry `i`'s plan, built into Python objects by the one
    /// JSON reader (None when the entry is not planned or `pick` finds none).
    fn build_of<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        pick: impl Fn(&Plan) -> Option<Span>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let span = match self.slots().get(i) {
            Some(Slot::Planned(plan)) => pick(plan),
            _ => None,
        };
        self.built(py, span)
    }

    /// The span `pick` finds in what entry `i` keeps of its `_meta` (planned, running or
    /// run), built into Python objects (None when it was never planned or `pick` finds
    /// none).
    fn kept_of<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        pick: impl Fn(Kept) -> Option<Span>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let span = match self.slots().get(i) {
            Some(Slot::Planned(plan)) => pick(Kept::of(plan)),
            Some(Slot::Ran(kept)) => pick(*kept),
            _ => None,
        };
        self.built(py, span)
    }

    fn built<'py>(
        &self,
        py: Python<'py>,
        span: Option<Span>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        span.map(|span| build(py, span.of(self.frame.get().body(py).as_bytes())))
            .transpose()
    }

    /// Run entry `i` of any frame as a single reply: bytes, outcome or None.
    fn run_one<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        context: Option<&Bound<'py, PyAny>>,
        step: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut reply = None;
        Ok(
            match self.execute(py, i, context, step, Out::Single(&mut reply))? {
                Ran::Written => reply.map(Bound::into_any),
                Ran::Outcome(outcome) => Some(outcome.into_any()),
                Ran::Stale | Ran::Declined => None,
            },
        )
    }
}

#[pymethods]
impl Plans {
    /// The number of entries in the frame (planned or not).
    fn __len__(&self) -> usize {
        self.slots().len()
    }

    /// Whether every entry of the frame is planned.
    #[getter]
    fn complete(&self) -> bool {
        self.complete
    }

    /// Whether entry `i` is planned and has not run.
    fn planned(&self, i: usize) -> PyResult<bool> {
        match self.slots().get(i) {
            Some(slot) => Ok(matches!(slot, Slot::Planned(_))),
            None => Err(PyIndexError::new_err(format!("no entry {i}"))),
        }
    }

    /// Call entry `i`'s tool: its finished reply, its `Outcome`, or None (nothing ran) when
    /// the tools changed since planning and the entry no longer plans. `context`: the
    /// context object of a tool that takes one (`ToolRoute.context`), passed by keyword.
    /// `step`: the coroutine of an `async` tool whose route allows it takes its first step
    /// here, and what it returns at once is answered as a synchronous tool's value.
    #[pyo3(signature = (i, context = None, step = false))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        context: Option<&Bound<'py, PyAny>>,
        step: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.run_one(py, i, context, step)
    }

    /// Run entry 0, planned as a call of a tool that takes a context, with the Context
    /// `Shape(context=...)` says how to make, whose exchange is `exchange` (what
    /// `Plans.run(0, context, step)` does, with no Python between planning and the tool).
    /// None when entry 0 is no such call (one Python calls itself, or not planned), or the
    /// shape has no `context`: nothing ran. Else its reply, or `(value, context, revision,
    /// raised)`: what `run` gave (None, reply bytes or an `Outcome`), or the exception it
    /// raised (`raised`: an `InputRequired`, or anything that is not an `Exception`).
    #[pyo3(signature = (exchange, step = false))]
    fn run_context<'py>(
        slf: &Bound<'py, Self>,
        exchange: &Bound<'py, PyAny>,
        step: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let this = slf.get();
        let shape = this.shape.get();
        let Some(contexts) = &shape.contexts else {
            return Ok(None);
        };
        let version = match this.slots().first() {
            Some(Slot::Planned(plan)) if plan.route.get().takes_context() => plan.version,
            _ => return Ok(None),
        };
        // Planned at 2026-07-28, `_meta` names one of the shape's versions.
        let Some(span) = version else {
            return Ok(None);
        };
        let lexeme = span.of(this.frame.get().body(py).as_bytes());
        let found = shape.version_index(lexeme).or_else(|| {
            // Written with escapes: decoded as planning read it.
            plan::string_text(lexeme)
                .and_then(|text| shape.versions.iter().position(|v| **v == *text))
        });
        let Some(k) = found else {
            return Ok(None);
        };
        let revision = contexts.revisions[k].bind(py);
        let plan = PyTuple::new(
            py,
            [
                slf.as_any(),
                this.frame.bind(py).as_any(),
                exchange,
                revision,
            ],
        )?;
        let context = contexts.make(py, plan)?;
        let (value, raised) = match this.run_one(py, 0, Some(&context), step) {
            Ok(Some(reply)) if reply.is_exact_instance_of::<PyBytes>() => return Ok(Some(reply)),
            Ok(value) => (value.unwrap_or_else(|| py.None().into_bound(py)), false),
            Err(err) => (err.into_value(py).into_bound(py).into_any(), true),
        };
        let raised = PyBool::new(py, raised).to_owned().into_any();
        let ran = PyTuple::new(py, [value, context, revision.clone(), raised])?;
        Ok(Some(ran.into_any()))
    }

    /// The route entry `i` is planned with (None once it ran or when it is not planned).
    fn route(&self, py: Python<'_>, i: usize) -> Option<Py<ToolRoute>> {
        match self.slots().get(i) {
            Some(Slot::Planned(plan)) => Some(plan.route.clone_ref(py)),
            _ => None,
        }
    }

    /// The `arguments` of entry `i`'s `params` as Python objects (None when the entry is
    /// not planned).
    fn arguments<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.build_of(py, i, |plan| Some(plan.arguments))
    }

    /// The `_meta` of entry `i`'s `params` as Python objects (None when it has none, or
    /// the entry was never planned). Still there while and after the entry runs.
    fn meta<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.kept_of(py, i, |kept| kept.meta)
    }

    /// The value of the log level member of entry `i`'s `_meta` (the last one, as in the
    /// dict `meta` builds), read without building the rest: None when it has none, or the
    /// entry was never planned. Still there while and after the entry runs.
    fn log_level<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.kept_of(py, i, |kept| kept.log_level)
    }

    /// The protocol version entry `i`'s `_meta` names, decoded (None when it names none, or
    /// the entry is not planned): at 2026-07-28, one the planning found among those served.
    fn version<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        let span = match self.slots().get(i) {
            Some(Slot::Planned(plan)) => plan.version,
            _ => None,
        };
        let Some(span) = span else {
            return Ok(None);
        };
        // Written without escapes (as clients do), it is one of the shape's own strings.
        let shape = self.shape.get();
        if let Some(k) = shape.version_index(span.of(self.frame.get().body(py).as_bytes())) {
            return Ok(Some(shape.version_strs[k].bind(py).clone().into_any()));
        }
        self.built(py, Some(span))
    }

    /// Run every entry in order (only when `complete`): the whole reply when every entry
    /// finished here (a single message's reply, or a batch's array), else the list of each
    /// entry's reply bytes or `Outcome` in order. From an entry that no longer plans (the
    /// tools changed under it) on, the list holds None: those entries did not run.
    fn run_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if !self.complete {
            return Err(PyValueError::new_err(
                "run_all needs every entry planned (see Plans.complete)",
            ));
        }
        let frame = self.frame.get();
        if frame.kind == FrameKind::Single as u8 {
            return Ok(match self.run_one(py, 0, None, false)? {
                Some(item) if item.is_instance_of::<PyBytes>() => item,
                item => PyList::new(py, [item])?.into_any(),
            });
        }
        let n = self.slots().len();
        let mut out = batch_out(frame.body(py).as_bytes());
        let mut items: Vec<Item<'py>> = Vec::with_capacity(n);
        let mut finished = true;
        for i in 0..n {
            let start = out.len() + usize::from(!out.is_empty());
            match self.execute(py, i, None, false, Out::Batch(&mut out))? {
                Ran::Written => items.push(Item::Reply(start, out.len())),
                Ran::Outcome(outcome) => {
                    finished = false;
                    items.push(Item::Outcome(outcome));
                }
                // From here on Python serves the entries, in order.
                Ran::Stale | Ran::Declined => {
                    finished = false;
                    items.resize_with(n, || Item::NotRun);
                    break;
                }
            }
        }
        if finished {
            return Ok(PyBytes::new(py, &out.finish()).into_any());
        }
        let bytes = out.bytes();
        let list = PyList::empty(py);
        for item in items {
            match item {
                Item::Reply(start, end) => list.append(PyBytes::new(py, &bytes[start..end]))?,
                Item::Outcome(outcome) => list.append(outcome)?,
                Item::NotRun => list.append(py.None())?,
            }
        }
        Ok(list.into_any())
    }

    fn __repr__(&self) -> String {
        let slots = self.slots();
        let planned = slots
            .iter()
            .filter(|s| matches!(s, Slot::Planned(_)))
            .count();
        format!(
            "<Plans entries={} planned={} complete={}>",
            slots.len(),
            planned,
            self.complete
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.frame)?;
        visit.call(&self.routes)?;
        visit.call(&self.shape)?;
        if let Some(h) = &self.headers {
            visit.call(h)?;
        }
        // A collection never runs while the slots are locked (no Python runs then), but a
        // lock held elsewhere is skipped rather than waited for.
        if let Ok(slots) = self.slots.try_lock() {
            for slot in slots.iter() {
                if let Slot::Planned(plan) = slot {
                    visit.call(&plan.route)?;
                    for arg in &plan.args {
                        visit.call(arg)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        self.slots().clear();
    }
}

/// A batch reply's buffer (replies run a little longer than the requests they answer).
fn batch_out(body: &[u8]) -> BatchOut {
    BatchOut::with_capacity(body.len() * 3 / 2 + 64)
}

/// Whether `frame` is one message or a non-empty array (the frames that can be planned).
fn plannable_kind(frame: &PyFrame) -> bool {
    frame.kind == FrameKind::Single as u8 || frame.kind == FrameKind::Batch as u8
}
