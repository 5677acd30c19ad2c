//! jetmcp's JSON-RPC wire core, and the `jetmcp._wire` extension module built on it.
//!
//! Two layers, each depending only on what is below it (`rust/tests/module_graph.rs` fails on
//! any cycle between modules, and on any file over 1,300 lines):
//!
//! * pure Rust, no pyo3, tested with `cargo test --no-default-features`: `cursor` (the one
//!   JSON cursor), `id` (raw ids), `frame/` (the validating scan: body -> `Frame`), `plan`
//!   (which `tools/call` requests the extension may run, by rules that need no Python),
//!   `encode` (reply bytes with the raw id spliced in) and `http1/` (HTTP/1.1 framing,
//!   sans-IO: bytes -> requests, responses -> bytes);
//! * the PyO3 glue, with the `python` feature: `py_build` (Python objects from JSON),
//!   `py_frame` (`decode`, `Frame`, `Entry`), `py_encode` (`dumps`, the `encode_*` functions),
//!   `py_headers` (`Headers`), `py_gate` (`Gate`), `py_shape` (`Shape`, and the Context slots
//!   it sets), `py_result` (writing what a tool returned), `py_route` (`ToolRoute`, the
//!   `Routes` table, planning one entry, calling a tool), `py_http` (`Http1Connection`,
//!   `Http1Request`, the client side), `py_hist` (`Histogram`, `jetmcp bench`'s latencies), `py_drive` (`Drive`, its load loop
//!   over HTTP: `drive` runs it on mio, `drive_check` counts and judges the replies)
//!   and, on top, `py_plan` (`Plans`, `Outcome`, and `Routes`' Python methods: `plan` and
//!   `answer` make `Plans`).
//!
//! A `tools/call` flows one way through them: bytes -> `frame` -> `plan` -> `py_route`
//! (route, arguments, the call) -> `py_result` -> `encode`, driven by `py_plan`.

// Every public item of the pure modules says what it guarantees (clippy's -D warnings makes
// this an error in the test command).
#![warn(missing_docs)]

pub mod cursor;
pub mod encode;
pub mod frame;
pub mod http1;
pub mod id;
pub mod plan;

#[cfg(test)]
mod mutate;

#[cfg(feature = "python")]
mod drive;
#[cfg(feature = "python")]
mod drive_check;
#[cfg(feature = "python")]
mod py_build;
#[cfg(feature = "python")]
mod py_drive;
#[cfg(feature = "python")]
mod py_eager;
#[cfg(feature = "python")]
mod py_encode;
#[cfg(feature = "python")]
mod py_frame;
#[cfg(feature = "python")]
mod py_gate;
#[cfg(feature = "python")]
mod py_headers;
#[cfg(feature = "python")]
mod py_hist;
#[cfg(feature = "python")]
mod py_http;
#[cfg(feature = "python")]
mod py_native;
#[cfg(feature = "python")]
mod py_plan;
#[cfg(feature = "python")]
mod py_result;
#[cfg(feature = "python")]
mod py_route;
#[cfg(feature = "python")]
mod py_shape;

#[cfg(feature = "python")]
use pyo3::prelude::*;

#[cfg(feature = "python")]
#[pymodule(name = "_wire")]
fn wire_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use frame::{EntryKind, FrameKind};
    use id::IdClass;

    m.add("FRAME_SINGLE", FrameKind::Single as u8)?;
    m.add("FRAME_BATCH", FrameKind::Batch as u8)?;
    m.add("FRAME_PARSE_ERROR", FrameKind::ParseError as u8)?;
    m.add("FRAME_EMPTY_BATCH", FrameKind::EmptyBatch as u8)?;
    m.add("FRAME_BATCH_TOO_LARGE", FrameKind::BatchTooLarge as u8)?;

    m.add("REQUEST", EntryKind::Request as u8)?;
    m.add("NOTIFICATION", EntryKind::Notification as u8)?;
    m.add("RESPONSE", EntryKind::Response as u8)?;
    m.add("INVALID", EntryKind::Invalid as u8)?;

    m.add("ID_ABSENT", IdClass::Absent as u8)?;
    m.add("ID_NULL", IdClass::Null as u8)?;
    m.add("ID_STRING", IdClass::String as u8)?;
    m.add("ID_INT", IdClass::Int as u8)?;
    m.add("ID_UNSAFE_NUMBER", IdClass::UnsafeNumber as u8)?;
    m.add("ID_OTHER", IdClass::Other as u8)?;

    m.add("DEFAULT_MAX_DEPTH", frame::DEFAULT_MAX_DEPTH)?;
    m.add("DEFAULT_MAX_BATCH", frame::DEFAULT_MAX_BATCH)?;
    m.add("BUILD", env!("JETMCP_WIRE_BUILD"))?;
    m.add(
        "CONTEXT_SLOTS",
        pyo3::types::PyTuple::new(m.py(), py_shape::CONTEXT_SLOTS)?,
    )?;

    m.add_class::<py_frame::PyEntry>()?;
    m.add_class::<py_frame::PyFrame>()?;
    m.add_class::<py_encode::RawJson>()?;
    m.add_class::<py_route::ToolRoute>()?;
    m.add_class::<py_route::Routes>()?;
    m.add_class::<py_shape::Shape>()?;
    m.add_class::<py_headers::PyHeaders>()?;
    m.add_class::<py_gate::Gate>()?;
    m.add_class::<py_plan::Plans>()?;
    m.add_class::<py_plan::Outcome>()?;
    m.add("HTTP1_IDLE", http1::Phase::Idle as u8)?;
    m.add("HTTP1_HEAD", http1::Phase::Head as u8)?;
    m.add("HTTP1_BODY", http1::Phase::Body as u8)?;
    m.add("HTTP1_RESPONDING", http1::Phase::Responding as u8)?;
    m.add("HTTP1_CLOSED", http1::Phase::Closed as u8)?;
    m.add_class::<py_http::PyConnection>()?;
    m.add_class::<py_http::PyRequest>()?;
    m.add_class::<py_http::PyFields>()?;
    m.add_class::<py_http::PyClientConnection>()?;
    m.add_class::<py_http::PyResponse>()?;
    m.add_class::<py_native::NativeLane>()?;
    m.add_class::<py_native::Http1Protocol>()?;
    m.add_class::<py_hist::PyHistogram>()?;
    m.add_class::<py_drive::PyDrive>()?;
    m.add("Http1Error", m.py().get_type::<py_http::Http1Error>())?;
    m.add_function(wrap_pyfunction!(py_http::http1_simple_response, m)?)?;
    m.add_function(wrap_pyfunction!(py_frame::decode, m)?)?;
    m.add_function(wrap_pyfunction!(py_eager::eager_task, m)?)?;
    m.add_function(wrap_pyfunction!(py_eager::_capture_step, m)?)?;
    m.add_function(wrap_pyfunction!(py_eager::_register_task, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::dumps, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::encode_result, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::encode_error, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::encode_request, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::encode_notification, m)?)?;
    m.add_function(wrap_pyfunction!(py_encode::encode_batch, m)?)?;
    Ok(())
}
