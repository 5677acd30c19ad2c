//! Python objects from JSON that [`crate::frame::decode`] already validated: what
//! `Entry.params()` and `Entry.result()` return.
//!
//! The input has been checked against the full grammar, so this is a lean recursive descent
//! that only builds: strings without escapes go straight to CPython's UTF-8 decoder, integers
//! of up to 18 digits never go through text, and object keys come
//! from a small per-thread cache of interned strings (keys repeat from message to message, and
//! an interned key is the very object a Python constant like `"name"` is, so dict lookups
//! compare pointers). It never trusts the input for memory safety: every access is bounds
//! checked, and anything unexpected is a `ValueError` rather than undefined behaviour.

use std::cell::RefCell;
use std::os::raw::c_char;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::cursor::{unescape, Cursor};

/// Containers nested deeper than this are refused with a ValueError (the scanner's default
/// limit is 100; only a raised `max_depth` reaches this).
pub const MAX_NESTING: usize = 200;

/// Build the value that starts at the beginning of `data` (leading whitespace allowed).
pub fn build<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut b = Builder {
        py,
        cur: Cursor::new(data),
        scratch: Vec::new(),
    };
    b.value(0)
}

struct Builder<'a, 'py> {
    py: Python<'py>,
    cur: Cursor<'a>,
    /// Decoded bytes of a string with escapes.
    scratch: Vec<u8>,
}

/// Take ownership of a new reference returned by the C API (NULL: the pending exception).
#[inline]
fn owned<'py>(py: Python<'py>, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `ptr` is a new reference (or NULL with an exception set), as every caller
    // passes the result of a C API function returning a new reference.
    unsafe { Bound::from_owned_ptr_or_err(py, ptr) }
}

impl<'py> Builder<'_, 'py> {
    #[cold]
    fn bad(&self) -> PyErr {
        PyValueError::new_err(format!("invalid JSON at byte {}", self.cur.pos))
    }

    fn literal(&mut self, word: &[u8]) -> PyResult<()> {
        if self.cur.starts_with(word) {
            self.cur.pos += word.len();
            Ok(())
        } else {
            Err(self.bad())
        }
    }

    /// The value at the position (whitespace before it skipped).
    fn value(&mut self, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        match self.cur.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string(false),
            Some(b't') => {
                self.literal(b"true")?;
                Ok(true.into_pyobject(py)?.to_owned().into_any())
            }
            Some(b'f') => {
                self.literal(b"false")?;
                Ok(false.into_pyobject(py)?.to_owned().into_any())
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Ok(py.None().into_bound(py))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.bad()),
        }
    }

    fn enter(&self, depth: usize) -> PyResult<()> {
        if depth > MAX_NESTING {
            Err(PyValueError::new_err(format!(
                "nesting deeper than {MAX_NESTING} levels"
            )))
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        self.enter(depth)?;
        let py = self.py;
        // SAFETY: PyDict_New returns a new reference or NULL with an exception set.
        let dict = owned(py, unsafe { ffi::PyDict_New() })?;
        let mut more = self.cur.object_open().ok_or_else(|| self.bad())?;
        while more {
            if self.cur.peek() != Some(b'"') {
                return Err(self.bad());
            }
            let key = self.string(true)?;
            if !self.cur.eat(b':') {
                return Err(self.bad());
            }
            let value = self.value(depth)?;
            // SAFETY: `dict` is a dict and `key` a str, both alive; PyDict_SetItem takes its
            // own references.
            if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) } != 0 {
                return Err(PyErr::fetch(py));
            }
            more = self.cur.object_next().ok_or_else(|| self.bad())?;
        }
        Ok(dict)
    }

    fn array(&mut self, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        self.enter(depth)?;
        let py = self.py;
        let mut items: Vec<Bound<'py, PyAny>> = Vec::new();
        let mut more = self.cur.array_open().ok_or_else(|| self.bad())?;
        while more {
            items.push(self.value(depth)?);
            more = self.cur.array_next().ok_or_else(|| self.bad())?;
        }
        let len = ffi::Py_ssize_t::try_from(items.len()).map_err(|_| self.bad())?;
        // SAFETY: PyList_New returns a new list of `len` NULL slots (or NULL with an
        // exception); each slot is filled once with a reference it steals.
        unsafe {
            let list = ffi::PyList_New(len);
            if list.is_null() {
                return Err(PyErr::fetch(py));
            }
            for (i, item) in items.into_iter().enumerate() {
                ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, item.into_ptr());
            }
            owned(py, list)
        }
    }

    /// A string at `"`; a key (`is_key`) may come from the cache.
    fn string(&mut self, is_key: bool) -> PyResult<Bound<'py, PyAny>> {
        let (span, escaped) = self.cur.string().ok_or_else(|| self.bad())?;
        let bytes = span.of(self.cur.data);
        if escaped {
            return self.escaped_string(bytes);
        }
        if is_key && bytes.len() <= KEY_MAX {
            return cached_key(self.py, bytes);
        }
        new_str(self.py, bytes)
    }

    /// The slow path of [`Self::string`]: a string with escapes.
    #[cold]
    fn escaped_string(&mut self, content: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        let decoded = unescape(content, &mut out);
        let made = match decoded {
            Some(()) => new_str(self.py, &out),
            None => Err(self.bad()),
        };
        self.scratch = out;
        made
    }

    fn number(&mut self) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let data = self.cur.data;
        let start = self.cur.pos;
        let mut i = start;
        let negative = data.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let digits_start = i;
        let mut value: i64 = 0;
        while let Some(&c @ b'0'..=b'9') = data.get(i) {
            // Wrapping: only used when there are at most 18 digits, which cannot overflow.
            value = value.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
            i += 1;
        }
        let digits = i - digits_start;
        let is_float = matches!(data.get(i), Some(b'.' | b'e' | b'E'));
        if !is_float {
            self.cur.pos = i;
            if digits == 0 {
                return Err(self.bad());
            }
            if digits <= 18 {
                let v = if negative { -value } else { value };
                // SAFETY: returns a new reference or NULL with an exception set.
                return owned(py, unsafe { ffi::PyLong_FromLongLong(v) });
            }
            // Longer: Python's own conversion (the scanner allows at most 4300 digits, which
            // is also Python's default limit for int(str)).
            let mut text = Vec::with_capacity(i - start + 1);
            text.extend_from_slice(data.get(start..i).unwrap_or_default());
            text.push(0);
            // SAFETY: `text` is NUL-terminated ASCII digits with an optional sign.
            return owned(py, unsafe {
                ffi::PyLong_FromString(text.as_ptr() as *const c_char, std::ptr::null_mut(), 10)
            });
        }
        while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = data.get(i) {
            i += 1;
        }
        self.cur.pos = i;
        let text = data.get(start..i).unwrap_or_default();
        let f: f64 = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.bad())?;
        // SAFETY: returns a new reference or NULL with an exception set.
        owned(py, unsafe { ffi::PyFloat_FromDouble(f) })
    }
}

/// A new `str` from UTF-8 `bytes`: ASCII is copied straight into a new compact ASCII str,
/// anything else goes through CPython's decoder.
#[inline]
fn new_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let len = ffi::Py_ssize_t::try_from(bytes.len())
        .map_err(|_| PyValueError::new_err("string too long"))?;
    // SAFETY: PyUnicode_New(len, 127) makes a compact ASCII str whose `len` bytes of
    // character data (followed by the NUL it wrote) start right after its PyASCIIObject
    // header, as CPython's own _PyUnicode_COMPACT_DATA computes; they are all written before
    // the str is used. Otherwise PyUnicode_FromStringAndSize decodes (and checks) the UTF-8.
    unsafe {
        if bytes.is_ascii() {
            let s = ffi::PyUnicode_New(len, 127);
            if s.is_null() {
                return Err(PyErr::fetch(py));
            }
            let data = (s as *mut ffi::PyASCIIObject).add(1) as *mut u8;
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
            owned(py, s)
        } else {
            owned(
                py,
                ffi::PyUnicode_FromStringAndSize(bytes.as_ptr() as *const c_char, len),
            )
        }
    }
}

// ------------------------------------------------------------------------------ key cache

/// Keys up to this many bytes (without escapes) are cached: enough for the namespaced
/// `_meta` keys of 2026-07-28 (`io.modelcontextprotocol/clientCapabilities` is 42).
const KEY_MAX: usize = 48;
/// Slots of the per-thread key cache (a power of two; direct-mapped).
const KEY_SLOTS: usize = 512;

#[derive(Clone, Copy)]
struct Slot {
    /// An owned reference to an interned str, or NULL.
    key: *mut ffi::PyObject,
    len: u8,
    bytes: [u8; KEY_MAX],
}

const EMPTY_SLOT: Slot = Slot {
    key: std::ptr::null_mut(),
    len: 0,
    bytes: [0; KEY_MAX],
};

thread_local! {
    /// Interned key strings by their bytes. The references it holds are never released when
    /// a thread ends (a bounded, deliberate leak, as in other JSON libraries' key caches):
    /// there may be no interpreter to release them to by then.
    static KEYS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// The key cache's hasher: ahash with fixed seeds (a slot only has to be spread well; a
/// collision costs an eviction, never a wrong key, as the bytes are compared).
static KEY_HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243F_6A88_85A3_08D3,
    0x1319_8A2E_0370_7344,
    0xA409_3822_299F_31D0,
    0x082E_FA98_EC4E_6C89,
);

/// The interned str for `bytes`, from the cache when it is there.
fn cached_key<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut padded = [0u8; KEY_MAX];
    padded[..bytes.len()].copy_from_slice(bytes);
    let slot_index = KEY_HASHER.hash_one(bytes) as usize & (KEY_SLOTS - 1);
    let hit = KEYS.try_with(|cell| {
        let cache = cell.try_borrow().ok()?;
        let slot = cache.get(slot_index)?;
        // Fixed-size compares (the stored bytes are zero-padded too): no memcmp call.
        if !slot.key.is_null() && usize::from(slot.len) == bytes.len() && slot.bytes == padded {
            // SAFETY: the cache owns a reference to this str; this makes another one.
            Some(unsafe { Bound::from_borrowed_ptr(py, slot.key) })
        } else {
            None
        }
    });
    if let Ok(Some(key)) = hit {
        return Ok(key);
    }
    let key = new_str(py, bytes)?;
    let mut ptr = key.into_ptr();
    // SAFETY: `ptr` is an owned reference to an exact str; interning may swap it for the
    // equal interned one, handing back an owned reference to that instead.
    unsafe { ffi::PyUnicode_InternInPlace(&mut ptr) };
    // SAFETY: `ptr` is an owned reference (see above).
    let key = unsafe { Bound::from_owned_ptr(py, ptr) };
    let _ = KEYS.try_with(|cell| {
        let Ok(mut cache) = cell.try_borrow_mut() else {
            return;
        };
        if cache.is_empty() {
            cache.resize(KEY_SLOTS, EMPTY_SLOT);
        }
        if let Some(slot) = cache.get_mut(slot_index) {
            let old = slot.key;
            *slot = Slot {
                // The cache's own reference.
                key: key.clone().into_ptr(),
                len: bytes.len() as u8,
                bytes: padded,
            };
            if !old.is_null() {
                // SAFETY: the reference the cache held for the evicted key; the GIL is held.
                unsafe { ffi::Py_DECREF(old) };
            }
        }
    });
    Ok(key)
}
