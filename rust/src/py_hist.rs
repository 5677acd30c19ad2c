//! `Histogram`: an HDR latency histogram for `jetmcp bench` (the `hdrhistogram` crate).
//!
//! A load generator records one value per reply, so recording is a single call that never
//! fails (values past the highest trackable one are clamped to it). Histograms of several
//! generator processes are merged without loss: [`PyHistogram::counts`] lists every
//! populated bucket as `(value, count)` and [`PyHistogram::record_n`] puts it back into the
//! same bucket of a histogram with the same bounds.

use hdrhistogram::Histogram;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// One hour in microseconds: the default highest trackable value.
const DEFAULT_HIGHEST: u64 = 3_600_000_000;

/// An HDR histogram of non-negative integers (`jetmcp bench` records microseconds).
#[pyclass(module = "jetmcp._wire", name = "Histogram")]
pub struct PyHistogram {
    hist: Histogram<u64>,
}

fn bad(what: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(what.to_string())
}

#[pymethods]
impl PyHistogram {
    #[new]
    #[pyo3(signature = (highest = DEFAULT_HIGHEST, significant_figures = 3))]
    fn new(highest: u64, significant_figures: u8) -> PyResult<Self> {
        let hist =
            Histogram::new_with_bounds(1, highest.max(2), significant_figures).map_err(bad)?;
        Ok(Self { hist })
    }

    /// Record one value (clamped to the highest trackable value).
    fn record(&mut self, value: u64) {
        self.hist.saturating_record(value);
    }

    /// Record `value` `count` times (clamped like :meth:`record`).
    fn record_n(&mut self, value: u64, count: u64) {
        let value = value.min(self.hist.high());
        // Cannot fail: the value is within bounds and counts saturate.
        let _ = self.hist.record_n(value, count);
    }

    /// Add every count of `other` (whose bounds must fit in this one's).
    fn add(&mut self, other: PyRef<'_, Self>) -> PyResult<()> {
        self.hist.add(&other.hist).map_err(bad)
    }

    /// Forget every value.
    fn reset(&mut self) {
        self.hist.reset();
    }

    /// The value at `quantile` (0.0..=1.0); 0 when empty.
    fn value_at_quantile(&self, quantile: f64) -> u64 {
        if self.hist.is_empty() {
            return 0;
        }
        self.hist.value_at_quantile(quantile.clamp(0.0, 1.0))
    }

    /// How many values were recorded.
    #[getter]
    fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The smallest value recorded (0 when empty).
    #[getter]
    fn min(&self) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.min()
        }
    }

    /// The largest value recorded, to the histogram's precision (0 when empty).
    #[getter]
    fn max(&self) -> u64 {
        self.hist.max()
    }

    /// The mean of the values recorded (0.0 when empty).
    #[getter]
    fn mean(&self) -> f64 {
        self.hist.mean()
    }

    /// The standard deviation of the values recorded (0.0 when empty).
    #[getter]
    fn stdev(&self) -> f64 {
        self.hist.stdev()
    }

    /// The highest trackable value.
    #[getter]
    fn highest(&self) -> u64 {
        self.hist.high()
    }

    /// The significant figures kept.
    #[getter]
    fn significant_figures(&self) -> u8 {
        self.hist.sigfig()
    }

    /// Every populated bucket as `(value, count)`, lowest first: what :meth:`record_n`
    /// needs to rebuild the histogram exactly.
    fn counts(&self) -> Vec<(u64, u64)> {
        self.hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// `(quantile, value)` points for a percentile plot, `ticks` per halving of the
    /// distance to 100% (HdrHistogram's percentile distribution).
    #[pyo3(signature = (ticks = 5))]
    fn percentiles(&self, ticks: u32) -> Vec<(f64, u64)> {
        if self.hist.is_empty() {
            return Vec::new();
        }
        self.hist
            .iter_quantiles(ticks.max(1))
            .map(|v| (v.quantile_iterated_to(), v.value_iterated_to()))
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "Histogram(count={}, min={}, max={})",
            self.hist.len(),
            self.min(),
            self.hist.max()
        )
    }
}
