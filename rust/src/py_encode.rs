//! Walking Python objects into the pure-Rust JSON writer, and the encoding functions of the
//! module.

use std::cell::{Cell, RefCell};
use std::os::raw::c_int;
use std::ptr;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use crate::encode;

/// Containers nested deeper than this are refused (this also stops reference cycles).
pub const MAX_DEPTH: usize = 255;

/// Bytes that are already JSON; the encoder writes them verbatim.
#[pyclass(frozen, module = "jetmcp._wire", name = "RawJSON")]
pub struct RawJson {
    data: Py<PyBytes>,
}

#[pymethods]
impl RawJson {
    #[new]
    fn new(data: Bound<'_, PyBytes>) -> Self {
        RawJson {
            data: data.unbind(),
        }
    }

    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("RawJSON({})", self.data.bind(py).repr()?))
    }
}

/// An optional argument whose absence differs from an explicit `None` (which writes `null`).
pub enum Omittable<'py> {
    Omitted,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Omittable<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Omittable::Given(obj.to_owned()))
    }
}

/// Append the JSON text of `obj` to `buf`. `depth` is the number of containers around it.
pub fn write_value(buf: &mut Vec<u8>, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
    let ob = obj.as_ptr();
    let tp = obj.get_type_ptr();
    // Exact types first: one pointer comparison each.
    // SAFETY: the addresses of the builtin type objects are only compared, never written, and
    // each `cast_unchecked` follows a check that the object's type is exactly that type.
    unsafe {
        if tp == ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            return write_pystr(buf, obj.cast_unchecked::<PyString>());
        }
        if tp == ptr::addr_of_mut!(ffi::PyDict_Type) {
            return write_dict(buf, obj.cast_unchecked::<PyDict>(), depth);
        }
        if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
            return write_int(buf, obj, true);
        }
        if tp == ptr::addr_of_mut!(ffi::PyList_Type) {
            return write_list(buf, obj.cast_unchecked::<PyList>(), depth);
        }
        if tp == ptr::addr_of_mut!(ffi::PyFloat_Type) {
            encode::write_f64(buf, obj.cast_unchecked::<PyFloat>().value());
            return Ok(());
        }
        if ob == ffi::Py_True() {
            encode::write_bool(buf, true);
            return Ok(());
        }
        if ob == ffi::Py_False() {
            encode::write_bool(buf, false);
            return Ok(());
        }
        if ob == ffi::Py_None() {
            encode::write_null(buf);
            return Ok(());
        }
        if tp == ptr::addr_of_mut!(ffi::PyTuple_Type) {
            return write_tuple(buf, obj.cast_unchecked::<PyTuple>(), depth);
        }
    }
    if let Ok(raw) = obj.cast::<RawJson>() {
        buf.extend_from_slice(raw.get().data.bind(obj.py()).as_bytes());
        return Ok(());
    }
    // Subclasses (enums, named tuples, ...). bool cannot be subclassed and was handled above.
    if let Ok(s) = obj.cast::<PyString>() {
        return write_pystr(buf, s);
    }
    if obj.is_instance_of::<PyInt>() {
        return write_int(buf, obj, false);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        encode::write_f64(buf, f.value());
        return Ok(());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return write_dict(buf, d, depth);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return write_list(buf, l, depth);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return write_tuple(buf, t, depth);
    }
    Err(PyTypeError::new_err(format!(
        "Object of type {} is not JSON serializable",
        obj.get_type().name()?
    )))
}

#[inline]
fn write_pystr(buf: &mut Vec<u8>, s: &Bound<'_, PyString>) -> PyResult<()> {
    // A lone surrogate cannot be UTF-8: `to_str` raises UnicodeEncodeError (a ValueError).
    encode::write_str(buf, s.to_str()?);
    Ok(())
}

#[inline]
fn enter(depth: usize) -> PyResult<usize> {
    if depth >= MAX_DEPTH {
        Err(PyValueError::new_err(format!(
            "nesting deeper than {MAX_DEPTH} levels (or a reference cycle)"
        )))
    } else {
        Ok(depth + 1)
    }
}

fn write_int(buf: &mut Vec<u8>, obj: &Bound<'_, PyAny>, exact: bool) -> PyResult<()> {
    let py = obj.py();
    let mut overflow: c_int = 0;
    // SAFETY: `obj` is an int (or subclass), a valid object for the call.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(obj.as_ptr(), &mut overflow) };
    if overflow == 0 {
        if v == -1 {
            if let Some(err) = PyErr::take(py) {
                return Err(err);
            }
        }
        encode::write_i64(buf, v);
        return Ok(());
    }
    if overflow > 0 {
        // SAFETY: as above.
        let u = unsafe { ffi::PyLong_AsUnsignedLongLong(obj.as_ptr()) };
        if u != u64::MAX || PyErr::take(py).is_none() {
            encode::write_u64(buf, u);
            return Ok(());
        }
    }
    // Beyond 64 bits: Python's own decimal text (int.__repr__, so a subclass's __str__ or
    // __repr__ cannot change it).
    let text = if exact {
        obj.repr()?
    } else {
        py.get_type::<PyInt>()
            .getattr(intern!(py, "__repr__"))?
            .call1((obj,))?
            .cast_into::<PyString>()?
    };
    buf.extend_from_slice(text.to_str()?.as_bytes());
    Ok(())
}

fn write_dict(buf: &mut Vec<u8>, dict: &Bound<'_, PyDict>, depth: usize) -> PyResult<()> {
    write_dict_with(buf, dict, depth, |_, _, _| Ok(false), |_, _| {})
}

/// `dict` as a JSON object, `member` writing the value of each member it takes (returning
/// true; false: written as JSON here), `tail` writing more members (given whether any came
/// before) before the closing brace.
fn write_dict_with(
    buf: &mut Vec<u8>,
    dict: &Bound<'_, PyDict>,
    depth: usize,
    mut member: impl FnMut(&mut Vec<u8>, &str, &Bound<'_, PyAny>) -> PyResult<bool>,
    tail: impl FnOnce(&mut Vec<u8>, bool),
) -> PyResult<()> {
    let depth = enter(depth)?;
    let py = dict.py();
    buf.push(b'{');
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = ptr::null_mut();
    let mut value: *mut ffi::PyObject = ptr::null_mut();
    let mut first = true;
    // SAFETY: `dict` is a dict (or subclass); PyDict_Next stays in bounds even if the dict
    // changes, and it hands out borrowed references that are made strong at once, before any
    // code that could run Python (and so change the dict) is called.
    while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
        let (key, value) = unsafe {
            (
                Bound::from_borrowed_ptr(py, key),
                Bound::from_borrowed_ptr(py, value),
            )
        };
        if first {
            first = false;
        } else {
            buf.push(b',');
        }
        let key = match key.cast::<PyString>() {
            Ok(k) => k.to_str()?,
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "dict keys must be str, not {}",
                    key.get_type().name()?
                )))
            }
        };
        encode::write_str(buf, key);
        buf.push(b':');
        if !member(buf, key, &value)? {
            write_value(buf, &value, depth)?;
        }
    }
    tail(buf, !first);
    buf.push(b'}');
    Ok(())
}

/// A 2026-07-28 result: `result` (a dict) completed as the dispatcher's completion does it:
/// its members in order, but `_meta` holding the server's identity first (a `_meta` that is
/// not a dict is replaced); then `"resultType":"complete"` unless it has one, and `_meta`
/// unless it has one.
fn write_completed(buf: &mut Vec<u8>, result: &Bound<'_, PyAny>, info: &[u8]) -> PyResult<()> {
    let Ok(dict) = result.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(format!(
            "a result to complete must be a dict, not {}",
            result.get_type().name()?
        )));
    };
    let has_type = Cell::new(false);
    let has_meta = Cell::new(false);
    let server_info = std::str::from_utf8(encode::META_SERVER_INFO).unwrap_or_default();
    write_dict_with(
        buf,
        dict,
        0,
        |buf, key, value| {
            if key == "resultType" {
                has_type.set(true);
                return Ok(false);
            }
            if key != "_meta" {
                return Ok(false);
            }
            has_meta.set(true);
            buf.extend_from_slice(encode::SERVER_META_OPEN);
            let Ok(meta) = value.cast::<PyDict>() else {
                buf.extend_from_slice(info);
                buf.push(b'}');
                return Ok(true);
            };
            // `{serverInfo: info, **meta}`: the meta's own serverInfo (if any) wins, first.
            match meta.get_item(server_info)? {
                Some(own) => write_value(buf, &own, 2)?,
                None => buf.extend_from_slice(info),
            }
            let depth = enter(1)?;
            let py = meta.py();
            let mut pos: ffi::Py_ssize_t = 0;
            let mut k: *mut ffi::PyObject = ptr::null_mut();
            let mut v: *mut ffi::PyObject = ptr::null_mut();
            // SAFETY: as in write_dict_with.
            while unsafe { ffi::PyDict_Next(meta.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
                let (k, v) = unsafe {
                    (
                        Bound::from_borrowed_ptr(py, k),
                        Bound::from_borrowed_ptr(py, v),
                    )
                };
                let Ok(k) = k.cast::<PyString>() else {
                    return Err(PyTypeError::new_err(format!(
                        "dict keys must be str, not {}",
                        k.get_type().name()?
                    )));
                };
                let k = k.to_str()?;
                if k == server_info {
                    continue;
                }
                buf.push(b',');
                encode::write_str(buf, k);
                buf.push(b':');
                write_value(buf, &v, depth)?;
            }
            buf.push(b'}');
            Ok(true)
        },
        |buf, any| {
            if !has_type.get() {
                if any {
                    buf.push(b',');
                }
                buf.extend_from_slice(encode::RESULT_TYPE_COMPLETE);
            }
            if !has_meta.get() {
                buf.push(b',');
                buf.extend_from_slice(encode::META_KEY);
                buf.extend_from_slice(encode::SERVER_META_OPEN);
                buf.extend_from_slice(info);
                buf.push(b'}');
            }
        },
    )
}

fn write_list(buf: &mut Vec<u8>, list: &Bound<'_, PyList>, depth: usize) -> PyResult<()> {
    let depth = enter(depth)?;
    buf.push(b'[');
    let mut i = 0;
    // The length is read again at each step: the list may change while items are written.
    while i < list.len() {
        if i > 0 {
            buf.push(b',');
        }
        write_value(buf, &list.get_item(i)?, depth)?;
        i += 1;
    }
    buf.push(b']');
    Ok(())
}

fn write_tuple(buf: &mut Vec<u8>, tuple: &Bound<'_, PyTuple>, depth: usize) -> PyResult<()> {
    let depth = enter(depth)?;
    buf.push(b'[');
    for (i, item) in tuple.iter_borrowed().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_value(buf, &item, depth)?;
    }
    buf.push(b']');
    Ok(())
}

/// Initial capacity of an encoding buffer: most replies fit.
const INITIAL_CAPACITY: usize = 4096;
/// A buffer that grew past this is not kept for the next call.
const MAX_KEPT_CAPACITY: usize = 1 << 20;

thread_local! {
    /// The encoding buffer, reused from call to call so a reply costs no allocation but its
    /// `bytes` object.
    static BUFFER: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(INITIAL_CAPACITY));
}

/// Run `f` on an empty buffer and return its content as `bytes`. The thread's buffer is used
/// when it is free (a call made while it is in use, say from a finalizer that runs during an
/// encoding, gets a fresh one).
pub(crate) fn encode_with<'py>(
    py: Python<'py>,
    f: impl FnOnce(&mut Vec<u8>) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut f = Some(f);
    let pooled = BUFFER.try_with(|cell| {
        let mut buf = cell.try_borrow_mut().ok()?;
        let f = f.take()?;
        buf.clear();
        let out = f(&mut buf).map(|()| PyBytes::new(py, &buf));
        if buf.capacity() > MAX_KEPT_CAPACITY {
            *buf = Vec::with_capacity(INITIAL_CAPACITY);
        }
        Some(out)
    });
    if let Ok(Some(out)) = pooled {
        return out;
    }
    // The thread's buffer is busy (or gone): `f` was not taken.
    let Some(f) = f else {
        return Err(PyValueError::new_err("encoding buffer unavailable"));
    };
    let mut buf = Vec::with_capacity(INITIAL_CAPACITY);
    f(&mut buf)?;
    Ok(PyBytes::new(py, &buf))
}

/// A writer of an optional argument's value, when it was given.
fn given<'a, 'py>(
    value: &'a Omittable<'py>,
) -> Option<impl FnOnce(&mut Vec<u8>) -> PyResult<()> + 'a> {
    match value {
        Omittable::Given(v) => Some(move |buf: &mut Vec<u8>| write_value(buf, v, 0)),
        Omittable::Omitted => None,
    }
}

fn check_raw_id(raw_id: &[u8]) -> PyResult<()> {
    encode::check_raw_id(raw_id).map_err(PyValueError::new_err)
}

/// Serialize dict/list/tuple/str/int/float/bool/None/RawJSON to compact JSON (UTF-8, no ASCII
/// escaping). Non-finite floats become null. Raises TypeError for anything else and ValueError
/// for nesting deeper than 255.
#[pyfunction]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    encode_with(py, |buf| write_value(buf, obj, 0))
}

/// `{"jsonrpc":"2.0","id":<raw_id>,"result":<result>}` with `raw_id` spliced in as is;
/// with `server_info` (JSON text), the result completed as a 2026-07-28 one.
#[pyfunction]
#[pyo3(signature = (raw_id, result, server_info = None))]
pub fn encode_result<'py>(
    py: Python<'py>,
    raw_id: &[u8],
    result: &Bound<'py, PyAny>,
    server_info: Option<&[u8]>,
) -> PyResult<Bound<'py, PyBytes>> {
    check_raw_id(raw_id)?;
    encode_with(py, |buf| match server_info {
        None => encode::write_result(buf, raw_id, |buf| write_value(buf, result, 0)),
        Some(info) => encode::write_result(buf, raw_id, |buf| write_completed(buf, result, info)),
    })
}

/// A JSON-RPC error reply; `raw_id` None writes `"id":null`; `data` is omitted when not given.
#[pyfunction]
#[pyo3(
    signature = (raw_id, code, message, data = Omittable::Omitted),
    text_signature = "(raw_id, code, message, data=...)"
)]
pub fn encode_error<'py>(
    py: Python<'py>,
    raw_id: Option<&[u8]>,
    code: i64,
    message: &str,
    data: Omittable<'py>,
) -> PyResult<Bound<'py, PyBytes>> {
    if let Some(raw_id) = raw_id {
        check_raw_id(raw_id)?;
    }
    encode_with(py, |buf| {
        encode::write_error(buf, raw_id, code, message, given(&data))
    })
}

/// A JSON-RPC request with `raw_id` spliced in; `params` omitted when not given.
#[pyfunction]
#[pyo3(
    signature = (raw_id, method, params = Omittable::Omitted),
    text_signature = "(raw_id, method, params=...)"
)]
pub fn encode_request<'py>(
    py: Python<'py>,
    raw_id: &[u8],
    method: &str,
    params: Omittable<'py>,
) -> PyResult<Bound<'py, PyBytes>> {
    check_raw_id(raw_id)?;
    encode_with(py, |buf| {
        encode::write_request(buf, raw_id, method, given(&params))
    })
}

/// A JSON-RPC notification; `params` omitted when not given.
#[pyfunction]
#[pyo3(
    signature = (method, params = Omittable::Omitted),
    text_signature = "(method, params=...)"
)]
pub fn encode_notification<'py>(
    py: Python<'py>,
    method: &str,
    params: Omittable<'py>,
) -> PyResult<Bound<'py, PyBytes>> {
    encode_with(py, |buf| {
        encode::write_notification(buf, method, given(&params))
    })
}

/// Join encoded replies (a list or tuple of bytes) into one JSON array.
#[pyfunction]
pub fn encode_batch<'py>(
    py: Python<'py>,
    replies: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let items: Vec<Bound<'py, PyBytes>> = if let Ok(list) = replies.cast::<PyList>() {
        let mut v = Vec::with_capacity(list.len());
        for item in list.iter() {
            v.push(cast_reply(item)?);
        }
        v
    } else if let Ok(tuple) = replies.cast::<PyTuple>() {
        let mut v = Vec::with_capacity(tuple.len());
        for item in tuple.iter() {
            v.push(cast_reply(item)?);
        }
        v
    } else {
        return Err(PyTypeError::new_err(format!(
            "encode_batch expects a list of bytes, not {}",
            replies.get_type().name()?
        )));
    };
    let len = encode::batch_len(items.iter().map(|b| b.as_bytes()));
    PyBytes::new_with(py, len, |out| {
        if encode::write_batch(out, items.iter().map(|b| b.as_bytes())) {
            Ok(())
        } else {
            Err(PyValueError::new_err("encode_batch: replies changed size"))
        }
    })
}

fn cast_reply(item: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyBytes>> {
    match item.cast_into::<PyBytes>() {
        Ok(b) => Ok(b),
        Err(e) => Err(PyTypeError::new_err(format!(
            "encode_batch expects bytes, not {}",
            e.into_inner().get_type().name()?
        ))),
    }
}
