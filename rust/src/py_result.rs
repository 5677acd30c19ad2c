//! How the extension writes what a planned call's tool returned, as Python's shaping of a
//! `tools/call` result does: a primitive (`int`, `str`, `bool`, finite `float`) the tool's
//! output allows ([`PrimitiveOut`]); a value of exactly the declared pydantic return model
//! ([`ModelOut`]); plain JSON data in a `dict`, a `list` or None ([`DataOut`]). Each gives
//! the parts `encode` writes the reply from, or None: the value is then Python's to shape,
//! and nothing here changed anything (no code of the user's ran but their serializers on a
//! value of their own model).

use std::os::raw::c_int;
use std::ptr;

use pyo3::exceptions::PyException;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use smallvec::SmallVec;

use crate::encode::{self, Primitive};

/// Which primitive return values are written here: which of int, str, bool and float the
/// tool's output allows.
#[derive(Clone, Copy, Default)]
pub(crate) struct PrimitiveOut {
    /// `int` (of 64 bits: a larger one is Python's to write).
    pub(crate) int: bool,
    /// `str` (one with a lone surrogate is Python's to report).
    pub(crate) str: bool,
    /// `bool`.
    pub(crate) bool: bool,
    /// `float` (finite: the infinities and NaN are Python's to write).
    pub(crate) float: bool,
}

/// A call of a Python function with one positional argument and fixed keyword arguments.
struct KwCall {
    func: Py<PyAny>,
    kwnames: Py<PyTuple>,
    values: Vec<Py<PyAny>>,
}

impl KwCall {
    fn new(func: Py<PyAny>, kwargs: &Bound<'_, PyDict>) -> PyResult<Self> {
        let py = kwargs.py();
        let mut names = Vec::with_capacity(kwargs.len());
        let mut values = Vec::with_capacity(kwargs.len());
        for (k, v) in kwargs.iter() {
            names.push(k.cast_into::<PyString>()?);
            values.push(v.unbind());
        }
        Ok(KwCall {
            func,
            kwnames: PyTuple::new(py, names)?.unbind(),
            values,
        })
    }

    fn call<'py>(&self, arg: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = arg.py();
        let mut ptrs: SmallVec<[*mut ffi::PyObject; 4]> = SmallVec::new();
        ptrs.push(arg.as_ptr());
        ptrs.extend(self.values.iter().map(|v| v.as_ptr()));
        // SAFETY: `func`, the keyword-name tuple and the values are live objects owned here,
        // `arg` is borrowed for the call; one positional argument, then one value per
        // keyword name. The result is a new reference or NULL with an exception set.
        unsafe {
            let r = ffi::PyObject_Vectorcall(
                self.func.as_ptr(),
                ptrs.as_ptr(),
                1,
                self.kwnames.as_ptr(),
            );
            Bound::from_owned_ptr_or_err(py, r)
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.func)?;
        for v in &self.values {
            visit.call(v)?;
        }
        Ok(())
    }
}

/// A declared pydantic return model the extension writes itself from the compact JSON
/// `json` makes of the value (its serializer's `to_json`, by alias): the text content is
/// that JSON indented as pydantic's `indent=2` writes it, the structured content the JSON
/// itself, which is what Python's shaping writes (`to_json(value, indent=2)`, and
/// `to_python(value, mode="json", by_alias=True)` through the encoder).
pub(crate) struct ModelOut {
    tp: Py<PyType>,
    json: KwCall,
    /// When the model's serializer writes plain fields only (see [`PlainField`]), their
    /// order: a value whose fields hold exactly their declared kinds is written here
    /// without the serializer (what it would write, byte for byte); any other goes to it.
    plain: Option<Vec<PlainField>>,
}

/// One field of a model whose serializer writes it as is: a `float`, `int`, `str` or
/// `bool` (or None, where the field allows it) under its serialization alias, with no
/// serializer, exclusion or conversion of its own (`jetmcp.server.schema.plain_dump`).
struct PlainField {
    /// The attribute, looked up in the instance's `__dict__`.
    name: Py<PyString>,
    /// The key as written: `"alias":`.
    key: Vec<u8>,
    kind: PlainKind,
    nullable: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PlainKind {
    Float,
    Int,
    Str,
    Bool,
}

/// How the extension writes a tool's return value of exactly `dict`, `list` or None holding
/// plain JSON data ([`plain_data`]) itself, as Python's shaping does (the official SDK's
/// rules). The content: for a dict one text block, the JSON `text` makes of it (pydantic's
/// `to_json` with the text's keywords, compact) indented as pydantic's `indent=2` writes it;
/// for None no block; for a list the blocks of its items in turn (a string's own text, an
/// int's digits, `true`/`false`, none for None, a dict's or float's JSON as above, a list's
/// items' blocks). The structured content, where the revision has it and `structured` says
/// so: with no declared output (`check` None) a dict's JSON (the value as plain JSON is the
/// value itself) and none for a list or None; with one, what its `check` writes.
pub(crate) struct DataOut {
    text: KwCall,
    structured: bool,
    check: Option<Check>,
}

/// A declared output's structured content: the compact JSON `json` (its serializer's
/// `to_json`) makes of what `validate` (its validator's `validate_python`) makes of the value,
/// or of `{"result": value}` when the output is wrapped.
struct Check {
    validate: Py<PyAny>,
    json: KwCall,
    wrap: bool,
}

impl ModelOut {
    /// The writer `model_out` describes.
    pub(crate) fn new((tp, json, json_kw, plain): ModelOutArgs<'_>) -> PyResult<Self> {
        let plain = match plain {
            None => None,
            Some(fields) => {
                let mut out = Vec::with_capacity(fields.len());
                for (name, alias, kind, nullable) in fields {
                    let kind = match kind.as_str() {
                        "float" => PlainKind::Float,
                        "int" => PlainKind::Int,
                        "str" => PlainKind::Str,
                        "bool" => PlainKind::Bool,
                        other => {
                            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                                "no plain field kind {other:?}"
                            )))
                        }
                    };
                    let mut key = Vec::with_capacity(alias.len() + 3);
                    encode::write_str(&mut key, &alias);
                    key.push(b':');
                    out.push(PlainField {
                        name: PyString::intern(tp.py(), &name).unbind(),
                        key,
                        kind,
                        nullable,
                    });
                }
                Some(out)
            }
        };
        Ok(ModelOut {
            tp: tp.unbind(),
            json: KwCall::new(json, &json_kw)?,
            plain,
        })
    }

    /// Visit the objects held, for the garbage collector.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tp)?;
        if let Some(fields) = &self.plain {
            for field in fields {
                visit.call(&field.name)?;
            }
        }
        self.json.traverse(visit)
    }
}

/// The instance dict of `obj` (its `__dict__`, made if it has none yet), or None when its
/// type gives it none.
pub(crate) fn instance_dict<'py>(obj: &Bound<'py, PyAny>) -> Option<Bound<'py, PyDict>> {
    let py = obj.py();
    // SAFETY: `obj` is a live object; the call returns a new reference or NULL with an
    // exception set (no `__dict__`), which is cleared.
    let dict = unsafe { ffi::PyObject_GenericGetDict(obj.as_ptr(), ptr::null_mut()) };
    if dict.is_null() {
        let _ = PyErr::take(py);
        return None;
    }
    // SAFETY: a new, non-NULL reference.
    let dict = unsafe { Bound::from_owned_ptr(py, dict) };
    dict.cast_into::<PyDict>().ok()
}

/// The compact JSON the serializer of a model of plain fields writes for `value` (its
/// instance), or None when a field holds anything but exactly its declared kind (or None
/// where allowed): a float that is not finite, an int past 64 bits, a str that is not
/// UTF-8, a value set around validation. The serializer then writes it (and warns where
/// it warns).
fn plain_json(fields: &[PlainField], value: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    let py = value.py();
    // No `__dict__`: the serializer is asked.
    let dict = instance_dict(value)?;
    let mut buf = Vec::with_capacity(16 * fields.len() + 2);
    buf.push(b'{');
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(&field.key);
        let item = dict.get_item(field.name.bind(py)).ok()??;
        let ptr = item.as_ptr();
        // SAFETY: exact type checks on a live object.
        unsafe {
            if field.nullable && ptr == ffi::Py_None() {
                buf.extend_from_slice(b"null");
                continue;
            }
            match field.kind {
                PlainKind::Float if ffi::PyFloat_CheckExact(ptr) != 0 => {
                    let v = ffi::PyFloat_AS_DOUBLE(ptr);
                    if !v.is_finite() {
                        return None;
                    }
                    encode::write_f64(&mut buf, v);
                }
                PlainKind::Int if ffi::PyLong_CheckExact(ptr) != 0 => {
                    encode::write_i64(&mut buf, item.extract::<i64>().ok()?);
                }
                PlainKind::Str if ffi::PyUnicode_CheckExact(ptr) != 0 => {
                    let text = item.cast::<PyString>().ok()?.to_str().ok()?;
                    encode::write_str(&mut buf, text);
                }
                PlainKind::Bool if ptr == ffi::Py_True() => buf.extend_from_slice(b"true"),
                PlainKind::Bool if ptr == ffi::Py_False() => buf.extend_from_slice(b"false"),
                _ => return None,
            }
        }
    }
    buf.push(b'}');
    Some(buf)
}

impl DataOut {
    /// The writer `data_out` describes.
    pub(crate) fn new((text, text_kw, structured, check): DataOutArgs<'_>) -> PyResult<Self> {
        Ok(DataOut {
            text: KwCall::new(text, &text_kw)?,
            structured,
            check: match check {
                Some((validate, json, json_kw, wrap)) => Some(Check {
                    validate,
                    json: KwCall::new(json, &json_kw)?,
                    wrap,
                }),
                None => None,
            },
        })
    }

    /// Visit the objects held, for the garbage collector.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.text.traverse(visit)?;
        if let Some(check) = &self.check {
            visit.call(&check.validate)?;
            check.json.traverse(visit)?;
        }
        Ok(())
    }
}

/// `model_out` as given to `ToolRoute`: (the model class, the function that writes an
/// instance as compact JSON bytes and its keyword arguments, and when its serializer writes
/// plain fields only, those fields in order: (attribute, serialization alias, kind —
/// `"float"`, `"int"`, `"str"` or `"bool"` — whether None is allowed).
pub(crate) type ModelOutArgs<'py> = (
    Bound<'py, PyType>,
    Py<PyAny>,
    Bound<'py, PyDict>,
    Option<Vec<(String, String, String, bool)>>,
);

/// `data_out` as given to `ToolRoute`: (the function that writes the text's compact JSON
/// and its keyword arguments, whether a result carries structured content, and for a
/// declared output its validator, the function that writes what that gives as compact JSON,
/// that function's keyword arguments, and whether the value is validated as
/// `{"result": value}`).
pub(crate) type DataOutArgs<'py> = (
    Py<PyAny>,
    Bound<'py, PyDict>,
    bool,
    Option<(Py<PyAny>, Py<PyAny>, Bound<'py, PyDict>, bool)>,
);

/// The reply text of an `int`, `str`, `bool` or finite `float` return value the tool's output
/// allows, as the Python shaping writes it; None for anything else (Python shapes it).
#[inline(always)]
pub(crate) fn primitive<'a>(
    out: &PrimitiveOut,
    value: &'a Bound<'_, PyAny>,
) -> Option<Primitive<'a>> {
    let tp = value.get_type_ptr();
    if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
        if !out.int {
            return None;
        }
        let mut overflow: c_int = 0;
        // SAFETY: `value` is an int, a valid argument; an error it sets is cleared here.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &mut overflow) };
        if overflow != 0 || (v == -1 && PyErr::take(value.py()).is_some()) {
            return None; // beyond 64 bits: Python writes it
        }
        Some(Primitive::Int(v))
    } else if tp == ptr::addr_of_mut!(ffi::PyBool_Type) {
        if !out.bool {
            return None;
        }
        // SAFETY: comparing with the True singleton's address.
        Some(Primitive::Bool(value.as_ptr() == unsafe { ffi::Py_True() }))
    } else if tp == ptr::addr_of_mut!(ffi::PyUnicode_Type) {
        if !out.str {
            return None;
        }
        // A lone surrogate cannot be written: Python's path reports it.
        // SAFETY: the type is exactly str.
        let s = unsafe { value.cast_unchecked::<PyString>() };
        s.to_str().ok().map(Primitive::Str)
    } else if tp == ptr::addr_of_mut!(ffi::PyFloat_Type) {
        if !out.float {
            return None;
        }
        // SAFETY: the type is exactly float.
        let v = unsafe { ffi::PyFloat_AS_DOUBLE(value.as_ptr()) };
        // Python writes the infinities and NaN (its text says `Infinity`).
        v.is_finite().then_some(Primitive::Float(v))
    } else {
        None
    }
}

/// `None` for an `Exception` (the caller hands the call to the general path), the error
/// itself for anything else (it propagates, as on the general path).
pub(crate) fn declined<T>(py: Python<'_>, err: PyErr) -> PyResult<Option<T>> {
    if err.is_instance_of::<PyException>(py) {
        Ok(None)
    } else {
        Err(err)
    }
}

/// A return value of exactly the declared model (`out`, a route's `model_out`) as compact
/// JSON (UTF-8), for [`crate::encode::write_json_result`]. None for any other value, or when
/// the serializer raises an `Exception`: Python shapes the value (and reports what went
/// wrong) as the general path does.
pub(crate) fn model_json<'py>(
    out: Option<&ModelOut>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Some(out) = out else {
        return Ok(None);
    };
    if value.get_type_ptr() != out.tp.as_ptr().cast::<ffi::PyTypeObject>() {
        return Ok(None);
    }
    if let Some(json) = out
        .plain
        .as_deref()
        .and_then(|fields| plain_json(fields, value))
    {
        return Ok(Some(PyBytes::new(value.py(), &json)));
    }
    utf8_json(value.py(), out.json.call(value))
}

/// What the extension writes for a data result ([`data_json`]): the text of each content
/// block (UTF-8) and the structured content's compact JSON, if any.
pub(crate) type DataJson<'py> = (Texts, Option<Bound<'py, PyBytes>>);

/// The texts of a result's content blocks (most results have one).
pub(crate) type Texts = SmallVec<[Vec<u8>; 1]>;

/// A return value of exactly `dict`, `list` or None holding plain JSON data, written as
/// `out` (a route's `data_out`) says: its content blocks' texts and, when
/// `revision_structured` and `out` gives it one, its structured content, for
/// [`crate::encode::write_json_result`]. In the
/// general path's order: the content first, then the declared output's check. None for any
/// other value, or when a step raises an `Exception` (the declared output refusing the value
/// included), or a text holds `Infinity` or `NaN`: Python shapes the value, and reports what
/// went wrong, as the general path does. Plain data runs no code of the user's in any step
/// (no `__str__`, no serializer or validator of theirs), so a step that fails here has
/// changed nothing.
pub(crate) fn data_json<'py>(
    out: Option<&DataOut>,
    value: &Bound<'py, PyAny>,
    revision_structured: bool,
) -> PyResult<Option<DataJson<'py>>> {
    let Some(out) = out else {
        return Ok(None);
    };
    let tp = value.get_type_ptr();
    let is_dict = tp == ptr::addr_of_mut!(ffi::PyDict_Type);
    let is_list = tp == ptr::addr_of_mut!(ffi::PyList_Type);
    if !(is_dict || is_list || value.is_none()) || !plain_data(value, 0) {
        return Ok(None);
    }
    let py = value.py();
    let mut texts = Texts::new();
    let mut own = None;
    if is_dict {
        let Some(json) = utf8_json(py, out.text.call(value))? else {
            return Ok(None);
        };
        let Some(text) = encode::indented(json.as_bytes()) else {
            return Ok(None);
        };
        texts.push(text);
        own = Some(json);
    } else if is_list && !list_texts(out, value, &mut texts)? {
        return Ok(None);
    }
    if !(revision_structured && out.structured) {
        return Ok(Some((texts, None)));
    }
    let Some(check) = &out.check else {
        // No declared output: a dict as plain JSON (its text's JSON); nothing for the rest.
        return Ok(Some((texts, own)));
    };
    let given = if check.wrap {
        let wrapped = PyDict::new(py);
        wrapped.set_item(pyo3::intern!(py, "result"), value)?;
        wrapped.into_any()
    } else {
        value.clone()
    };
    let checked = match check.validate.bind(py).call1((given,)) {
        Ok(checked) => checked,
        Err(err) => return declined(py, err),
    };
    Ok(utf8_json(py, check.json.call(&checked))?.map(|json| (texts, Some(json))))
}

/// The content blocks' texts of the items of `list` (plain data), appended to `texts` as
/// Python's `content_blocks` makes them; false when one cannot be written here (a string
/// with a lone surrogate, a float or dict whose JSON has `Infinity` or `NaN`, a writer that
/// raised an `Exception`).
fn list_texts(out: &DataOut, list: &Bound<'_, PyAny>, texts: &mut Texts) -> PyResult<bool> {
    let py = list.py();
    // SAFETY: the caller checked that the type is exactly list.
    let list = unsafe { list.cast_unchecked::<PyList>() };
    for item in list.iter() {
        let tp = item.get_type_ptr();
        if item.is_none() {
            continue;
        } else if tp == ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            // SAFETY: the type is exactly str.
            let Ok(text) = unsafe { item.cast_unchecked::<PyString>() }.to_str() else {
                return Ok(false);
            };
            texts.push(text.as_bytes().to_vec());
        } else if tp == ptr::addr_of_mut!(ffi::PyBool_Type) {
            let word: &[u8] = if item.is_truthy()? { b"true" } else { b"false" };
            texts.push(word.to_vec());
        } else if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
            texts.push(item.extract::<i64>()?.to_string().into_bytes());
        } else if tp == ptr::addr_of_mut!(ffi::PyList_Type) {
            if !list_texts(out, &item, texts)? {
                return Ok(false);
            }
        } else {
            // A dict or a float: its JSON, indented.
            let Some(json) = utf8_json(py, out.text.call(&item))? else {
                return Ok(false);
            };
            let Some(text) = encode::indented(json.as_bytes()) else {
                return Ok(false);
            };
            texts.push(text);
        }
    }
    Ok(true)
}

/// How deep [`plain_data`] looks: deeper values are Python's to shape.
const PLAIN_DEPTH: usize = 32;

/// Whether `value` is plain JSON data: exactly a `str`, an `int` of 64 bits, a `float`, a
/// `bool` or None, or a `list`, or a `dict` with `str` keys, of such values (no subclass,
/// nesting at most [`PLAIN_DEPTH`]). Larger ints are Python's: its encoder refuses those
/// past `sys.get_int_max_str_digits()`, which pydantic writes.
fn plain_data(value: &Bound<'_, PyAny>, depth: usize) -> bool {
    let tp = value.get_type_ptr();
    if tp == ptr::addr_of_mut!(ffi::PyLong_Type) {
        let mut overflow: c_int = 0;
        // SAFETY: the type is exactly int; the conversion sets no exception for an int.
        unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &mut overflow) };
        return overflow == 0;
    }
    if tp == ptr::addr_of_mut!(ffi::PyUnicode_Type)
        || tp == ptr::addr_of_mut!(ffi::PyFloat_Type)
        || tp == ptr::addr_of_mut!(ffi::PyBool_Type)
        || value.is_none()
    {
        return true;
    }
    if depth >= PLAIN_DEPTH {
        return false;
    }
    if tp == ptr::addr_of_mut!(ffi::PyDict_Type) {
        // SAFETY: the type is exactly dict.
        let dict = unsafe { value.cast_unchecked::<PyDict>() };
        return dict.iter().all(|(k, v)| {
            k.get_type_ptr() == ptr::addr_of_mut!(ffi::PyUnicode_Type) && plain_data(&v, depth + 1)
        });
    }
    if tp == ptr::addr_of_mut!(ffi::PyList_Type) {
        // SAFETY: the type is exactly list.
        let list = unsafe { value.cast_unchecked::<PyList>() };
        return list.iter().all(|v| plain_data(&v, depth + 1));
    }
    false
}

/// What a JSON writer gave, when it is UTF-8 `bytes`; None when it raised an `Exception` or
/// gave anything else (Python's path reports it).
fn utf8_json<'py>(
    py: Python<'py>,
    written: PyResult<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let json = match written {
        Ok(json) => json,
        Err(err) => return declined(py, err),
    };
    let Ok(json) = json.cast_into::<PyBytes>() else {
        return Ok(None);
    };
    if std::str::from_utf8(json.as_bytes()).is_err() {
        return Ok(None); // Python's decode reports it
    }
    Ok(Some(json))
}
