//! What `jetmcp bench`'s Rust driver counts per reply: latencies in HDR histograms, errors by
//! kind, seconds of the run, schedule keeping. The same figures, and the same verdict on each
//! reply, as the Python `Recorder` (python/jetmcp/bench/recorder.py), into which
//! `py_drive` merges them (`Recorder.merge_raw`): a reply is an error for the same reasons and
//! under the same kind names (`jsonrpc -32602`, `isError`, `http 503`, `missing`,
//! `transport`, `timeout`).

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use hdrhistogram::Histogram;
use jiter::JsonValue;
use memchr::memmem;

/// Latencies are kept in microseconds up to one hour, to three significant figures (the
/// Recorder's bounds: its `merge_raw` puts the buckets back where they were).
pub const HIGHEST_US: u64 = 3_600_000_000;
/// Per-second histograms only draw a plot: two figures.
const TIMELINE_FIGURES: u8 = 2;

/// The report's `errors` keys, in the Recorder's order.
pub const ERROR_KEYS: [&str; 5] = ["jsonrpc", "tool", "http", "transport", "missing"];
const JSONRPC: usize = 0;
const TOOL: usize = 1;
const HTTP: usize = 2;
const TRANSPORT: usize = 3;
const MISSING: usize = 4;

/// A histogram with the Recorder's bounds.
pub fn histogram(figures: u8) -> Histogram<u64> {
    // Cannot fail: the bounds are constant and valid.
    Histogram::new_with_bounds(1, HIGHEST_US, figures).expect("valid histogram bounds")
}

/// One second of a run.
pub struct Second {
    /// Replies in it.
    pub requests: u64,
    /// Failed requests in it.
    pub errors: u64,
    /// Their latencies.
    pub hist: Histogram<u64>,
}

/// Everything one phase (a run, a step of a ramp) saw.
pub struct Tally {
    /// When it started and ended, on the caller's clock (nanoseconds).
    pub started_ns: u64,
    /// See `started_ns`.
    pub ended_ns: u64,
    /// Latency from the time a request was due, per label.
    pub hists: Vec<Histogram<u64>>,
    /// Open model: latency from the time a request was written, per label.
    pub service: Vec<Histogram<u64>>,
    /// Replies per label.
    pub replies: Vec<u64>,
    /// Failed requests per label.
    pub failed: Vec<u64>,
    /// JSON-RPC replies received.
    pub entries: u64,
    /// Counts by [`ERROR_KEYS`].
    pub errors: [u64; 5],
    /// (label, kind) -> count.
    pub kinds: HashMap<(usize, String), u64>,
    /// Second of the run -> its counts.
    pub seconds: BTreeMap<u64, Second>,
    /// Open model: requests sent.
    pub sent: u64,
    /// Open model: requests that left later than the tolerance with a connection free.
    pub late: u64,
    /// The largest of those delays, microseconds.
    pub max_behind_us: u64,
    /// Open model: requests that found no connection free.
    pub waited: u64,
    /// Open model: how late each request left (with a connection free).
    pub lag: Histogram<u64>,
}

impl Tally {
    /// An empty tally for `labels` message kinds; `open_model` keeps service times too.
    pub fn new(labels: usize, open_model: bool, started_ns: u64) -> Self {
        Tally {
            started_ns,
            ended_ns: started_ns,
            hists: (0..labels).map(|_| histogram(3)).collect(),
            service: if open_model {
                (0..labels).map(|_| histogram(3)).collect()
            } else {
                Vec::new()
            },
            replies: vec![0; labels],
            failed: vec![0; labels],
            entries: 0,
            errors: [0; 5],
            kinds: HashMap::new(),
            seconds: BTreeMap::new(),
            sent: 0,
            late: 0,
            max_behind_us: 0,
            waited: 0,
            lag: histogram(3),
        }
    }

    fn second(&mut self, now_ns: u64) -> &mut Second {
        let sec = now_ns.saturating_sub(self.started_ns) / 1_000_000_000;
        self.seconds.entry(sec).or_insert_with(|| Second {
            requests: 0,
            errors: 0,
            hist: histogram(TIMELINE_FIGURES),
        })
    }

    /// One answered body (`Recorder.reply`).
    pub fn reply(
        &mut self,
        label: usize,
        latency_us: u64,
        now_ns: u64,
        status: u16,
        body: &[u8],
        expected: u64,
    ) {
        self.hists[label].saturating_record(latency_us);
        let cur = self.second(now_ns);
        cur.hist.saturating_record(latency_us);
        cur.requests += 1;
        self.replies[label] += 1;
        if plainly_fine(status, body, expected) {
            self.entries += 1;
            return;
        }
        let verdict = classify(status, body, expected);
        self.entries += verdict.answered;
        for (i, n) in verdict.counts.iter().enumerate() {
            self.errors[i] += n;
        }
        if !verdict.kinds.is_empty() {
            self.failed[label] += 1;
            self.second(now_ns).errors += 1;
            for kind in verdict.kinds {
                *self.kinds.entry((label, kind)).or_insert(0) += 1;
            }
        }
    }

    /// Open model: the time from writing a request to its reply.
    pub fn service_time(&mut self, label: usize, latency_us: u64) {
        if let Some(h) = self.service.get_mut(label) {
            h.saturating_record(latency_us);
        }
    }

    /// A request that got no reply: `transport` or `timeout` (`Recorder.failure`).
    pub fn failure(&mut self, label: usize, kind: &str, now_ns: u64) {
        self.errors[TRANSPORT] += 1;
        self.failed[label] += 1;
        self.second(now_ns).errors += 1;
        *self.kinds.entry((label, kind.to_owned())).or_insert(0) += 1;
    }

    /// Open model: a request left `lag_ns` after its time with a connection free.
    pub fn scheduled(&mut self, lag_ns: i64, tolerance_ns: i64) {
        let lag_us = if lag_ns > 0 { lag_ns as u64 / 1000 } else { 0 };
        self.lag.saturating_record(lag_us);
        if lag_ns > tolerance_ns {
            self.late += 1;
            self.max_behind_us = self.max_behind_us.max(lag_us);
        }
    }
}

/// The common reply, judged by byte searches as the Recorder does: HTTP 200, one JSON
/// object with a result, no error, `isError` absent or a compact `"isError":false`.
pub fn plainly_fine(status: u16, body: &[u8], expected: u64) -> bool {
    if expected != 1 || status != 200 || body.first() != Some(&b'{') {
        return false;
    }
    // The searchers are built once (building one per search showed in profiles).
    static FINDERS: OnceLock<[memmem::Finder<'static>; 4]> = OnceLock::new();
    let [error, result, is_error, plain_false] = FINDERS.get_or_init(|| {
        [
            memmem::Finder::new(b"\"error\""),
            memmem::Finder::new(b"\"result\""),
            memmem::Finder::new(b"isError"),
            memmem::Finder::new(b"\"isError\":false"),
        ]
    });
    if error.find(body).is_some() || result.find(body).is_none() {
        return false;
    }
    let mut found = is_error.find_iter(body);
    match (found.next(), found.next()) {
        (None, _) => true,
        (Some(_), None) => plain_false.find(body).is_some(),
        _ => false,
    }
}

/// What a reply that is not plainly fine holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// JSON-RPC replies (results and errors) carrying an id.
    pub answered: u64,
    /// What to add to each of [`ERROR_KEYS`].
    pub counts: [u64; 5],
    /// The kinds of error, one per occurrence.
    pub kinds: Vec<String>,
}

/// `Recorder._classify`: every error a body shows.
pub fn classify(status: u16, body: &[u8], expected: u64) -> Verdict {
    let mut v = Verdict::default();
    for message in messages(body) {
        let JsonValue::Object(fields) = &message else {
            continue;
        };
        if field(fields, "id").is_none() {
            continue;
        }
        if let Some(error) = field(fields, "error") {
            v.answered += 1;
            v.counts[JSONRPC] += 1;
            let code = match error {
                JsonValue::Object(e) => field(e, "code").map_or_else(|| "None".to_owned(), repr),
                _ => "None".to_owned(),
            };
            v.kinds.push(format!("jsonrpc {code}"));
        } else if let Some(result) = field(fields, "result") {
            v.answered += 1;
            if let JsonValue::Object(r) = result {
                if matches!(field(r, "isError"), Some(JsonValue::Bool(true))) {
                    v.counts[TOOL] += 1;
                    v.kinds.push("isError".to_owned());
                }
            }
        }
    }
    if status >= 400 {
        v.counts[HTTP] += 1;
        v.kinds.push(format!("http {status}"));
    } else if v.answered < expected {
        v.counts[MISSING] += expected - v.answered;
        v.kinds.push("missing".to_owned());
    }
    v
}

/// A key's value; the last of duplicates, as a Python dict keeps it.
fn field<'a, 's>(
    object: &'a [(std::borrow::Cow<'s, str>, JsonValue<'s>)],
    key: &str,
) -> Option<&'a JsonValue<'s>> {
    object.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// The JSON-RPC messages of a body: one JSON value or array, or the `message` events of an
/// SSE stream (`Recorder._messages`); unreadable parts hold none.
fn messages(body: &[u8]) -> Vec<JsonValue<'_>> {
    let mut out = Vec::new();
    match body.first() {
        None => {}
        Some(b'{' | b'[' | b' ' | b'\n' | b'\t' | b'\r') => loads(body, &mut out),
        Some(_) => {
            for data in sse_messages(body) {
                let mut parsed = Vec::new();
                loads(&data, &mut parsed);
                // The data is owned here: keep what it parsed to beyond it.
                for value in parsed {
                    let owned: JsonValue<'static> = value.into_static();
                    out.push(owned);
                }
            }
        }
    }
    out
}

fn loads<'a>(data: &'a [u8], out: &mut Vec<JsonValue<'a>>) {
    match JsonValue::parse(data, false) {
        Ok(JsonValue::Array(items)) => out.extend(items.iter().cloned()),
        Ok(value) => out.push(value),
        Err(_) => {}
    }
}

/// The data of each complete SSE event named `message` (or unnamed) with data, as
/// `SseParser` reads them (lines end in LF or CRLF; a blank line ends an event).
fn sse_messages(body: &[u8]) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let mut data: Vec<&[u8]> = Vec::new();
    let mut event: &[u8] = b"";
    let mut rest = body;
    while let Some(end) = memchr::memchr(b'\n', rest) {
        let mut line = &rest[..end];
        rest = &rest[end + 1..];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        if line.is_empty() {
            let joined = data.join(&b"\n"[..]);
            let name: &[u8] = if event.is_empty() { b"message" } else { event };
            if !joined.is_empty() && name == b"message" {
                events.push(joined);
            }
            data.clear();
            event = b"";
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (name, mut value) = match memchr::memchr(b':', line) {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &b""[..]),
        };
        if let Some(v) = value.strip_prefix(b" ") {
            value = v;
        }
        match name {
            b"data" => data.push(value),
            b"event" => event = value,
            _ => {}
        }
    }
    events
}

/// How Python prints a JSON value it loaded (`f"{value}"`): the kind names of errors are
/// `jsonrpc {code}` whatever the code is.
pub fn repr(value: &JsonValue<'_>) -> String {
    match value {
        JsonValue::Str(s) => s.to_string(),
        other => inner_repr(other),
    }
}

fn inner_repr(value: &JsonValue<'_>) -> String {
    match value {
        JsonValue::Null => "None".to_owned(),
        JsonValue::Bool(true) => "True".to_owned(),
        JsonValue::Bool(false) => "False".to_owned(),
        JsonValue::Int(i) => i.to_string(),
        JsonValue::BigInt(i) => i.to_string(),
        JsonValue::Float(f) => float_repr(*f),
        JsonValue::Str(s) => str_repr(s),
        JsonValue::Array(items) => {
            let parts: Vec<String> = items.iter().map(inner_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        JsonValue::Object(fields) => {
            // A Python dict keeps the first position of a key and its last value.
            let mut keys: Vec<&str> = Vec::new();
            for (k, _) in fields.iter() {
                if !keys.contains(&k.as_ref()) {
                    keys.push(k);
                }
            }
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    let v = field(fields, k).map_or_else(String::new, inner_repr);
                    format!("{}: {v}", str_repr(k))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python's `repr(float)`: the shortest digits, an exponent below 1e-4 and from 1e16.
fn float_repr(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
        return format!("{f:.1}");
    }
    let debug = format!("{f:?}");
    match debug.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => debug,
    }
}

/// Python's `repr(str)` for printable text: single quotes unless the text holds one and no
/// double quote.
fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_replies() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#;
        assert!(plainly_fine(200, ok, 1));
        assert!(!plainly_fine(200, ok, 2));
        assert!(!plainly_fine(500, ok, 1));
        let tool = br#"{"jsonrpc":"2.0","id":1,"result":{"isError":true}}"#;
        assert!(!plainly_fine(200, tool, 1));
        assert_eq!(classify(200, tool, 1).kinds, vec!["isError"]);
    }

    #[test]
    fn errors_by_kind() {
        let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#;
        let v = classify(200, err, 1);
        assert_eq!(v.kinds, vec!["jsonrpc -32602"]);
        assert_eq!(v.answered, 1);
        let v = classify(404, b"Not Found", 1);
        assert_eq!(v.kinds, vec!["http 404"]);
        let v = classify(200, br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, 3);
        assert_eq!(v.counts[MISSING], 2);
        let v = classify(200, br#"{"id":1,"error":{"code":1.5}}"#, 1);
        assert_eq!(v.kinds, vec!["jsonrpc 1.5"]);
        let v = classify(200, br#"{"id":1,"error":"bad"}"#, 1);
        assert_eq!(v.kinds, vec!["jsonrpc None"]);
    }

    #[test]
    fn sse_bodies() {
        let body =
            b"event: message\r\ndata: {\"id\":1,\"error\":{\"code\":-1}}\r\n\r\n: c\n\ndata: x\n";
        let v = classify(200, body, 1);
        assert_eq!(v.kinds, vec!["jsonrpc -1"]);
    }

    #[test]
    fn python_reprs() {
        assert_eq!(float_repr(-32600.0), "-32600.0");
        assert_eq!(float_repr(1e20), "1e+20");
        assert_eq!(float_repr(1.5e-7), "1.5e-07");
        let v = JsonValue::parse(br#"{"a":[1,"it's",null,true],"b":{"c":2.5}}"#, false).unwrap();
        assert_eq!(
            repr(&v),
            r#"{'a': [1, "it's", None, True], 'b': {'c': 2.5}}"#
        );
    }
}
