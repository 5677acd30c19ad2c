//! `Drive`: `jetmcp bench`'s load loop in Rust ([`crate::drive`]), run with the GIL released.
//!
//! Python prepares what is sent (each message's body around its id, its header fields) and
//! gets back what a phase saw in the form `Recorder.to_raw()` has, which `Recorder.merge_raw`
//! takes: the histograms travel as their populated buckets.

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::drive::{Engine, Fields, Item, Mode, Source};
use crate::drive_check::{Tally, ERROR_KEYS};

/// One message of the mix: (label index, body before the id, body after it, header fields).
type ItemSpec = (usize, Vec<u8>, Vec<u8>, Fields);

/// The connections of one load run to one HTTP endpoint, and what they send.
#[pyclass(frozen, module = "jetmcp._wire", name = "Drive")]
pub struct PyDrive {
    engine: Mutex<Engine>,
    stop: Arc<AtomicBool>,
    progress: Arc<AtomicU64>,
    labels: usize,
}

fn counts(hist: &Histogram<u64>) -> Vec<(u64, u64)> {
    hist.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

impl PyDrive {
    fn run(&self, py: Python<'_>, mode: Mode, open_model: bool) -> PyResult<Py<PyDict>> {
        self.stop.store(false, Ordering::Relaxed);
        let labels = self.labels;
        let tally = py.detach(|| {
            let mut engine = self
                .engine
                .lock()
                .map_err(|_| "the driver failed earlier")?;
            let mut tally = Tally::new(labels, open_model, engine.now());
            engine.run(mode, &mut tally);
            Ok::<Tally, &str>(tally)
        });
        let tally = tally.map_err(PyRuntimeError::new_err)?;
        raw(py, &tally, open_model)
    }
}

fn raw(py: Python<'_>, t: &Tally, open_model: bool) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    d.set_item("open_model", open_model)?;
    d.set_item("started_ns", t.started_ns)?;
    d.set_item("ended_ns", t.ended_ns)?;
    d.set_item("hists", t.hists.iter().map(counts).collect::<Vec<_>>())?;
    d.set_item("service", t.service.iter().map(counts).collect::<Vec<_>>())?;
    d.set_item("replies", &t.replies)?;
    d.set_item("failed", &t.failed)?;
    d.set_item("entries", t.entries)?;
    let errors = PyDict::new(py);
    for (key, n) in ERROR_KEYS.iter().zip(t.errors) {
        errors.set_item(key, n)?;
    }
    d.set_item("errors", errors)?;
    let kinds = PyList::empty(py);
    let mut sorted: Vec<_> = t.kinds.iter().collect();
    sorted.sort();
    for ((label, kind), n) in sorted {
        kinds.append((label, kind, n))?;
    }
    d.set_item("kinds", kinds)?;
    let seconds = PyList::empty(py);
    for (sec, s) in &t.seconds {
        seconds.append((sec, s.requests, s.errors, counts(&s.hist)))?;
    }
    d.set_item("seconds", seconds)?;
    d.set_item("sent", t.sent)?;
    d.set_item("late", t.late)?;
    d.set_item("max_behind_us", t.max_behind_us)?;
    d.set_item("waited", t.waited)?;
    d.set_item("lag", counts(&t.lag))?;
    Ok(d.unbind())
}

#[pymethods]
impl PyDrive {
    /// `items`: the mix in rotation order (each message as often as its weight); `batch`
    /// requests per body, labelled `batch_label` with `batch_fields`; `labels`: how many
    /// labels the report has. `now_ns`: `time.perf_counter_ns()` now (the time base).
    #[new]
    #[pyo3(signature = (
        host, port, target, items, labels, *, batch = 1, batch_label = 0,
        batch_fields = Vec::new(), timeout = 30.0, connect_timeout = 10.0, late_ns = 2_000_000,
        now_ns, first_id = 1,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        host: &str,
        port: u16,
        target: Vec<u8>,
        items: Vec<ItemSpec>,
        labels: usize,
        batch: usize,
        batch_label: usize,
        batch_fields: Fields,
        timeout: f64,
        connect_timeout: f64,
        late_ns: i64,
        now_ns: u64,
        first_id: u64,
    ) -> PyResult<Self> {
        if items.is_empty() || batch == 0 {
            return Err(PyValueError::new_err("nothing to send"));
        }
        if items.iter().any(|i| i.0 >= labels) || batch_label >= labels {
            return Err(PyValueError::new_err("a label index is out of range"));
        }
        if !(timeout > 0.0 && connect_timeout > 0.0) {
            return Err(PyValueError::new_err("timeouts must be above 0"));
        }
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| PyOSError::new_err(format!("cannot resolve {host}: {e}")))?
            .next()
            .ok_or_else(|| PyOSError::new_err(format!("cannot resolve {host}")))?;
        let source = Source {
            items: items
                .into_iter()
                .map(|(label, head, tail, fields)| Item {
                    label,
                    head,
                    tail,
                    fields,
                })
                .collect(),
            batch,
            batch_label,
            batch_fields,
            next_id: first_id,
            cursor: 0,
        };
        let engine = Engine::new(
            addr,
            target,
            source,
            (timeout * 1e9) as u64,
            (connect_timeout * 1e9) as u64,
            late_ns,
            now_ns,
        )
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(PyDrive {
            stop: engine.stop.clone(),
            progress: engine.progress.clone(),
            engine: Mutex::new(engine),
            labels,
        })
    }

    /// Opens connections until `count` are open; how many are.
    fn fill(&self, py: Python<'_>, count: usize) -> PyResult<usize> {
        py.detach(|| {
            let mut engine = self
                .engine
                .lock()
                .map_err(|_| "the driver failed earlier")?;
            Ok::<usize, &str>(engine.fill(count))
        })
        .map_err(PyRuntimeError::new_err)
    }

    /// The closed loop over `lanes` connections, for `duration` seconds or `count` requests:
    /// what it saw, as `Recorder.to_raw()` has it (less `labels`).
    #[pyo3(signature = (lanes, duration = None, count = None))]
    fn closed(
        &self,
        py: Python<'_>,
        lanes: usize,
        duration: Option<f64>,
        count: Option<u64>,
    ) -> PyResult<Py<PyDict>> {
        if duration.is_none() && count.is_none() {
            return Err(PyValueError::new_err("give a duration or a count"));
        }
        let mode = Mode::Closed {
            lanes: lanes.max(1),
            duration_ns: duration.map(|d| (d.max(0.0) * 1e9) as u64),
            count,
        };
        self.run(py, mode, false)
    }

    /// The open model: `total` requests at `rate` a second, over `connections` (up to
    /// `max_connections` while all are busy).
    fn open(
        &self,
        py: Python<'_>,
        rate: f64,
        total: u64,
        connections: usize,
        max_connections: usize,
    ) -> PyResult<Py<PyDict>> {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(PyValueError::new_err("the rate must be above 0"));
        }
        let mode = Mode::Open {
            connections,
            interval_ns: 1e9 / rate,
            total,
            max_connections: max_connections.max(connections),
        };
        self.run(py, mode, true)
    }

    /// Ends the running phase soon (from another thread).
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Replies and failed requests of the running phase so far.
    #[getter]
    fn progress(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    /// Why connections could not be opened (the last few).
    #[getter]
    fn connect_errors(&self) -> Vec<String> {
        self.engine
            .lock()
            .map(|e| e.connect_errors.clone())
            .unwrap_or_default()
    }

    /// Connections open.
    #[getter]
    fn open_count(&self) -> usize {
        self.engine.lock().map(|e| e.open_count()).unwrap_or(0)
    }

    /// Closes every connection.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Ok(mut e) = self.engine.lock() {
                e.close();
            }
        });
    }
}
