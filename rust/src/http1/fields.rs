//! The header fields of a parsed head, as byte ranges into the message's own buffer: no copy
//! per field, lookups by name (ASCII case-insensitive, as field names are).

use smallvec::SmallVec;

/// One field line: the ranges of its name and its value (leading and trailing whitespace
/// already stripped by `httparse`) in the message's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpan {
    /// Start and end of the name.
    pub name: (u32, u32),
    /// Start and end of the value.
    pub value: (u32, u32),
}

/// The field lines of a head, in the order received (repeats kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    spans: SmallVec<[FieldSpan; 12]>,
}

impl Fields {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Fields {
            spans: SmallVec::with_capacity(n),
        }
    }

    /// Records a field whose name and value are subslices of `base`.
    pub(crate) fn push(&mut self, base: &[u8], name: &[u8], value: &[u8]) {
        let at = |s: &[u8]| {
            let start = s.as_ptr() as usize - base.as_ptr() as usize;
            (start as u32, (start + s.len()) as u32)
        };
        // An empty value may point anywhere (`httparse` gives a dangling empty slice for it).
        let value = if value.is_empty() {
            let end = at(name).1;
            (end, end)
        } else {
            at(value)
        };
        self.spans.push(FieldSpan {
            name: at(name),
            value,
        });
    }

    /// How many field lines there are.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Every field line as (name, value), in order, from the buffer they were parsed from.
    pub fn iter<'a>(&'a self, buf: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        self.spans.iter().map(move |f| {
            (
                &buf[f.name.0 as usize..f.name.1 as usize],
                &buf[f.value.0 as usize..f.value.1 as usize],
            )
        })
    }

    /// Every value of the fields named `name` (any case), in order.
    pub fn all<'a>(&'a self, buf: &'a [u8], name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.iter(buf)
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// The first value of the field named `name` (any case).
    pub fn first<'a>(&self, buf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
        self.spans.iter().find_map(|f| {
            let n = &buf[f.name.0 as usize..f.name.1 as usize];
            n.eq_ignore_ascii_case(name)
                .then(|| &buf[f.value.0 as usize..f.value.1 as usize])
        })
    }

    /// How many fields are named `name` (any case).
    pub fn count(&self, buf: &[u8], name: &[u8]) -> usize {
        self.all(buf, name).count()
    }
}
