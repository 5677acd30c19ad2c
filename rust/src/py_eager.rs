//! Eager tasks: an asyncio task whose first step runs at once, inside the caller (the
//! native engine's socket callback), as Python 3.12's eager tasks run; 3.11 has none.
//!
//! `eager_task(loop, coro)` makes the task as `loop.create_task(coro)` makes it, a real
//! `asyncio.Task` (so `current_task()`, `asyncio.timeout`, cancellation and the task's own
//! copy of the context hold in that step as in any task), except that the step its
//! constructor schedules with `loop.call_soon` is caught (the loop's `call_soon` is shadowed
//! on that loop instance for the constructor's call only) and taken now, in the task's
//! context. A task that ended in that step never went through the loop; one that did not goes
//! on as any task does (its next step is scheduled by what it waits on).
//!
//! The task is registered in asyncio's set of all tasks as `Task.__init__` registers it
//! (`WeakSet.add`), by the extension (`_register_task` stands in for the set's `add` during
//! the constructor's call): the same weak reference with the same callback put in the
//! same set. A task that ended in its first step is taken out again at once, as
//! `WeakSet.discard` takes it out, so its weak reference dies before it and no Python
//! callback runs when the task is freed (about 3,500 instructions of Python per request).
//!
//! On Python 3.12 and later the constructor's own `eager_start=True` does all of this
//! (CPython's eager tasks, registered as it registers them).
//!
//! Outside a socket callback (a task running on the loop) or on a loop with a task factory
//! (whose tasks are not ours to make) or one whose instances take no attributes, it is an
//! ordinary `create_task`.

use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PySet, PyString, PyTuple, PyType};

use crate::py_result::instance_dict;

/// What eager tasks need of asyncio, looked up once.
struct Asyncio {
    /// `asyncio.Task`.
    task: Py<PyType>,
    /// `_asyncio._current_tasks`, the task running on each loop, where the C module keeps
    /// one (3.11 to 3.13); else `asyncio.current_task` is asked.
    current: Option<Py<PyDict>>,
    current_task: Py<PyAny>,
    /// Python 3.12 and later: the constructor takes `eager_start=True` and runs the first
    /// step itself (CPython's own eager tasks); nothing below is used.
    eager_start: bool,
    /// 3.11: asyncio's set of all tasks, `_asyncio._all_tasks`, when it is a
    /// `weakref.WeakSet` (else a task registers itself through its own `add`).
    all: Option<AllTasks>,
    /// This module's `_capture_step`, put in the loop's `call_soon` while a task is made.
    capture: Py<PyAny>,
    /// The task's name (given, so that 3.11's constructor formats no `Task-<n>`).
    name: Py<PyString>,
    call_soon: Py<PyString>,
    get_task_factory: Py<PyString>,
    create_task: Py<PyString>,
    kw_loop: Py<PyString>,
    kw_name: Py<PyString>,
    kw_eager_start: Py<PyString>,
}

/// asyncio's set of all tasks (a `weakref.WeakSet`): the set, its instance dict, its `data`
/// set of weak references, its `_remove` callback and its `_pending_removals` list.
struct AllTasks {
    set: Py<PyAny>,
    dict: Py<PyDict>,
    data: Py<PySet>,
    remove: Py<PyAny>,
    pending: Py<PyList>,
    /// `weakref.WeakSet.add`, for a set with removals pending (it commits them first).
    weakset_add: Py<PyAny>,
    /// This module's `_register_task`, put in the set's `add` while a task is made.
    register: Py<PyAny>,
    add: Py<PyString>,
}

static ASYNCIO: PyOnceLock<Asyncio> = PyOnceLock::new();

/// The step a task's constructor scheduled, and the context it gave (the task's).
type Step = (Py<PyAny>, Option<Py<PyAny>>);

/// Where `_capture_step` puts the step; taken right after the constructor returns, with the
/// GIL held all along (so no other thread's task can come between).
static CAUGHT: Mutex<Option<Step>> = Mutex::new(None);

/// Every eager task's name: given, so that 3.11's `Task.__init__` formats no `Task-<n>` per
/// request (about 1,400 instructions).
const EAGER_NAME: &str = "jetmcp-request";

/// 3.11's set of all tasks, when it is the `weakref.WeakSet` this module knows.
fn all_tasks(py: Python<'_>, native: &Bound<'_, PyModule>) -> PyResult<Option<AllTasks>> {
    let Ok(set) = native.getattr("_all_tasks") else {
        return Ok(None);
    };
    let weakset = py.import("weakref")?.getattr("WeakSet")?;
    if !set.get_type().is(&weakset) {
        return Ok(None);
    }
    let module = py.import("jetmcp._wire")?;
    Ok(Some(AllTasks {
        dict: set.getattr("__dict__")?.cast_into::<PyDict>()?.unbind(),
        data: set.getattr("data")?.cast_into::<PySet>()?.unbind(),
        remove: set.getattr("_remove")?.unbind(),
        pending: set
            .getattr("_pending_removals")?
            .cast_into::<PyList>()?
            .unbind(),
        weakset_add: weakset.getattr("add")?.unbind(),
        register: module.getattr("_register_task")?.unbind(),
        add: PyString::intern(py, "add").unbind(),
        set: set.unbind(),
    }))
}

fn asyncio(py: Python<'_>) -> PyResult<&Asyncio> {
    if let Some(found) = ASYNCIO.get(py) {
        return Ok(found);
    }
    let tasks = py.import("asyncio.tasks")?;
    // The C tasks' own registries (what `asyncio.tasks` imports from there too).
    let native = py.import("_asyncio")?;
    let module = py.import("jetmcp._wire")?;
    let eager_start = py.version_info() >= (3, 12);
    let built = Asyncio {
        task: tasks.getattr("Task")?.cast_into::<PyType>()?.unbind(),
        current: native
            .getattr("_current_tasks")
            .ok()
            .and_then(|c| c.cast_into::<PyDict>().ok())
            .map(Bound::unbind),
        current_task: tasks.getattr("current_task")?.unbind(),
        eager_start,
        all: if eager_start {
            None
        } else {
            all_tasks(py, &native)?
        },
        capture: module.getattr("_capture_step")?.unbind(),
        name: PyString::intern(py, EAGER_NAME).unbind(),
        call_soon: PyString::intern(py, "call_soon").unbind(),
        get_task_factory: PyString::intern(py, "get_task_factory").unbind(),
        create_task: PyString::intern(py, "create_task").unbind(),
        kw_loop: PyString::intern(py, "loop").unbind(),
        kw_name: PyString::intern(py, "name").unbind(),
        kw_eager_start: PyString::intern(py, "eager_start").unbind(),
    };
    // Another thread may have stored one meanwhile (looking up ran Python): either is fine.
    let _ = ASYNCIO.set(py, built);
    Ok(ASYNCIO.get(py).expect("set just now"))
}

/// The weak reference `_register_task` put in the set of all tasks for the task being made.
static REGISTERED: Mutex<Option<Py<PyAny>>> = Mutex::new(None);

/// The set of all tasks' `add` while an eager task is made: `WeakSet.add(task)`, keeping
/// the weak reference it put in the set for `eager`.
#[pyfunction]
pub(crate) fn _register_task(task: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = task.py();
    let Some(all) = &asyncio(py)?.all else {
        return Err(PyRuntimeError::new_err(
            "no set of all tasks to register in",
        ));
    };
    if !all.pending.bind(py).is_empty() {
        // Removals to commit first: the set's own `add` does it (and keeps no reference).
        all.weakset_add.bind(py).call1((all.set.bind(py), task))?;
        return Ok(());
    }
    // SAFETY: `task` is live and weakly referenceable (an asyncio.Task), `_remove` a live
    // callable; a new reference or NULL with an exception set.
    let wr = unsafe { ffi::PyWeakref_NewRef(task.as_ptr(), all.remove.as_ptr()) };
    if wr.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new, non-NULL reference.
    let wr = unsafe { Bound::from_owned_ptr(py, wr) };
    all.data.bind(py).add(&wr)?;
    *REGISTERED.lock().unwrap_or_else(|e| e.into_inner()) = Some(wr.unbind());
    Ok(())
}

/// The loop's `call_soon` while an eager task is made: keeps the step for `eager_task`.
#[pyfunction]
#[pyo3(signature = (callback, *args, context = None))]
pub(crate) fn _capture_step(
    callback: Py<PyAny>,
    args: &Bound<'_, PyTuple>,
    context: Option<Py<PyAny>>,
) -> PyResult<()> {
    if !args.is_empty() {
        return Err(PyRuntimeError::new_err(
            "an eager task's step was scheduled with arguments",
        ));
    }
    *CAUGHT.lock().unwrap_or_else(|e| e.into_inner()) = Some((callback, context));
    Ok(())
}

/// A task made and stepped by [`stepped`]: the weak reference registering it in the set of
/// all tasks, when the extension made it (None: an ordinary task, or one registered by the
/// set's own `add`).
struct Stepped<'py> {
    task: Bound<'py, PyAny>,
    registered: Option<Py<PyAny>>,
}

impl Stepped<'_> {
    /// The task ended (in its first step): out of the set of all tasks again, as
    /// `WeakSet.discard` takes it out; the weak reference, now ours alone, goes before the
    /// task does (no callback runs).
    fn ended(&mut self) -> PyResult<()> {
        if let Some(wr) = self.registered.take() {
            let py = self.task.py();
            if let Some(all) = &asyncio(py)?.all {
                all.data.bind(py).discard(wr.bind(py))?;
            }
            // Freed here, while the task lives (dropped after it, the reference would still
            // be there when the task goes, and its callback would run).
            drop(wr);
        }
        Ok(())
    }
}

/// The keyword arguments of every eager task's constructor on the loop they name (built
/// once per loop: the constructor only reads them).
static KWARGS: Mutex<Option<(Py<PyAny>, Py<PyDict>)>> = Mutex::new(None);

fn kwargs<'py>(a: &Asyncio, loop_: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let py = loop_.py();
    let mut kept = KWARGS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((on, kwargs)) = kept.as_ref() {
        if on.is(loop_) {
            return Ok(kwargs.bind(py).clone());
        }
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item(a.kw_loop.bind(py), loop_)?;
    kwargs.set_item(a.kw_name.bind(py), a.name.bind(py))?;
    if a.eager_start {
        kwargs.set_item(a.kw_eager_start.bind(py), true)?;
    }
    *kept = Some((loop_.clone().unbind(), kwargs.clone().unbind()));
    Ok(kwargs)
}

/// A task of `coro` on `loop_` whose first step has run (see the module docs).
fn stepped<'py>(loop_: &Bound<'py, PyAny>, coro: &Bound<'py, PyAny>) -> PyResult<Stepped<'py>> {
    let py = loop_.py();
    let a = asyncio(py)?;
    let running = match &a.current {
        Some(current) => current.bind(py).contains(loop_)?,
        None => !a.current_task.bind(py).call1((loop_,))?.is_none(),
    };
    let ordinary = running || !loop_.call_method0(a.get_task_factory.bind(py))?.is_none();
    if !ordinary && a.eager_start {
        // 3.12 and later: CPython's own eager start runs the first step in the constructor.
        let kwargs = kwargs(a, loop_)?;
        return Ok(Stepped {
            task: a.task.bind(py).call((coro,), Some(&kwargs))?,
            registered: None,
        });
    }
    let dict = if ordinary { None } else { instance_dict(loop_) };
    let Some(dict) = dict else {
        return Ok(Stepped {
            task: loop_.call_method1(a.create_task.bind(py), (coro,))?,
            registered: None,
        });
    };
    let kwargs = kwargs(a, loop_)?;
    let call_soon = a.call_soon.bind(py);
    dict.set_item(call_soon, a.capture.bind(py))?;
    let made = match &a.all {
        Some(all) => {
            let (add, all_dict) = (all.add.bind(py), all.dict.bind(py));
            all_dict
                .set_item(add, all.register.bind(py))
                .and_then(|()| {
                    let made = a.task.bind(py).call((coro,), Some(&kwargs));
                    all_dict.del_item(add)?;
                    made
                })
        }
        None => a.task.bind(py).call((coro,), Some(&kwargs)),
    };
    let restored = dict.del_item(call_soon);
    let caught = CAUGHT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner()).take();
    let task = made?;
    restored?;
    let Some((step, context)) = caught else {
        return Err(PyRuntimeError::new_err(
            "asyncio.Task scheduled no first step",
        ));
    };
    let step = step.into_bound(py);
    match context {
        Some(context) => {
            let context = context.into_bound(py);
            // SAFETY: `context` is a live contextvars.Context (what the task made); entered
            // and exited around the step as `Context.run` does.
            if unsafe { ffi::PyContext_Enter(context.as_ptr()) } < 0 {
                return Err(PyErr::fetch(py));
            }
            let ran = step.call0();
            // SAFETY: the context entered above, still current.
            let exited = unsafe { ffi::PyContext_Exit(context.as_ptr()) };
            ran?;
            if exited < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        None => {
            step.call0()?;
        }
    }
    Ok(Stepped { task, registered })
}

/// A task of `coro` on `loop_` whose first step has run (see the module docs).
pub(crate) fn eager<'py>(
    loop_: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut made = stepped(loop_, coro)?;
    if made.registered.is_some()
        && made
            .task
            .call_method0(intern!(loop_.py(), "done"))?
            .is_truthy()?
    {
        made.ended()?;
    }
    Ok(made.task)
}

/// What an eager task's first step came to.
pub(crate) enum FirstStep<'py> {
    /// The coroutine returned this value.
    Returned(Bound<'py, PyAny>),
    /// It raised this `Exception` (anything else left the step, and the call, as an error).
    Raised(Bound<'py, PyAny>),
    /// The task goes on (it suspended), or it ended cancelled: the task.
    Running(Bound<'py, PyAny>),
}

/// [`eager`], and what its first step came to.
pub(crate) fn eager_step<'py>(
    loop_: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
) -> PyResult<FirstStep<'py>> {
    let py = loop_.py();
    let mut made = stepped(loop_, coro)?;
    match made.task.call_method0(intern!(py, "result")) {
        Ok(value) => {
            made.ended()?;
            Ok(FirstStep::Returned(value))
        }
        Err(err) => {
            if !made.task.call_method0(intern!(py, "done"))?.is_truthy()? {
                return Ok(FirstStep::Running(made.task));
            }
            made.ended()?;
            if made
                .task
                .call_method0(intern!(py, "cancelled"))?
                .is_truthy()?
            {
                Ok(FirstStep::Running(made.task))
            } else {
                Ok(FirstStep::Raised(
                    err.into_value(py).into_bound(py).into_any(),
                ))
            }
        }
    }
}

/// `eager_task(loop, coro)`: a task of `coro` whose first step has run (see the module).
#[pyfunction]
pub(crate) fn eager_task<'py>(
    loop_: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    eager(loop_, coro)
}
