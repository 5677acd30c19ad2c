//! `jetmcp bench`'s load loop over HTTP in Rust: N non-blocking keep-alive connections on one
//! epoll (mio), requests written and responses framed by the shared HTTP/1.1 client
//! ([`crate::http1::client`]), each reply judged and counted ([`crate::drive_check`]).
//!
//! It follows python/jetmcp/bench/generator.py's `Driver` step by step, so that either driver
//! gives the same counts: the closed loop (each lane one request at a time, a lost connection
//! replaced), and the open model (request `i` due at `t0 + i / rate` whatever the server does,
//! sent over a free connection, else queued while another connection opens, up to a maximum;
//! its latency counts from the time it was due). Requests older than the timeout fail as
//! `timeout` and their connection is closed.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::drive_check::Tally;
use crate::http1::client::{ClientConnection, ClientEvent, Response};
use crate::http1::Limits;

/// Header fields of a request, as (name, value).
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// One message of the mix, encoded around its id (`Template`).
pub struct Item {
    /// The report label's index.
    pub label: usize,
    /// The body before the id.
    pub head: Vec<u8>,
    /// The body after the id.
    pub tail: Vec<u8>,
    /// Its header fields (Host among them).
    pub fields: Fields,
}

/// The next request body: the messages in rotation (`Source`), or `batch` of them in one
/// JSON array. Ids count up from 1 across phases.
pub struct Source {
    /// The messages, each repeated as often as its weight, in rotation order.
    pub items: Vec<Item>,
    /// Requests per body.
    pub batch: usize,
    /// The label of a batch.
    pub batch_label: usize,
    /// The fields of a batch.
    pub batch_fields: Fields,
    /// The next id.
    pub next_id: u64,
    /// The next item.
    pub cursor: usize,
}

impl Source {
    fn take(&mut self) -> &Item {
        let i = self.cursor;
        self.cursor = (i + 1) % self.items.len();
        &self.items[i]
    }

    /// Writes the next body into `body`: (label, expected replies, its fields).
    fn next(&mut self, body: &mut Vec<u8>) -> (usize, u64, usize) {
        body.clear();
        let mut ids = itoa::Buffer::new();
        if self.batch == 1 {
            let id = self.next_id;
            self.next_id += 1;
            let at = self.cursor;
            let item = self.take();
            body.extend_from_slice(&item.head);
            body.extend_from_slice(ids.format(id).as_bytes());
            body.extend_from_slice(&item.tail);
            return (item.label, 1, at);
        }
        body.push(b'[');
        for n in 0..self.batch {
            if n > 0 {
                body.push(b',');
            }
            let id = self.next_id;
            self.next_id += 1;
            let item = self.take();
            body.extend_from_slice(&item.head);
            body.extend_from_slice(ids.format(id).as_bytes());
            body.extend_from_slice(&item.tail);
        }
        body.push(b']');
        (self.batch_label, self.batch as u64, usize::MAX)
    }

    fn first_label(&self) -> usize {
        self.items[0].label
    }
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum State {
    Connecting,
    Idle,
    Busy,
}

struct Conn {
    stream: TcpStream,
    http: ClientConnection,
    out: Vec<u8>,
    written: usize,
    /// Whether the loop watches for writability (connecting, or a request half written).
    wants_write: bool,
    state: State,
    /// Whether the engine holds it in its list of free connections.
    listed: bool,
    opened_ns: u64,
    label: usize,
    due_ns: u64,
    sent_ns: u64,
    expected: u64,
}

/// What happened on a connection (returned by value at once: boxing the response would
/// cost an allocation per reply).
#[allow(clippy::large_enum_variant)]
enum Happened {
    Nothing,
    Connected,
    Reply(Response),
    Lost,
}

/// How a phase runs.
pub enum Mode {
    /// Each of `lanes` connections sends one request at a time until `duration_ns` passed
    /// or `count` requests were sent.
    Closed {
        /// Concurrent requests.
        lanes: usize,
        /// How long (None: until `count`).
        duration_ns: Option<u64>,
        /// How many requests (None: for `duration_ns`).
        count: Option<u64>,
    },
    /// `total` requests, one every `interval_ns`.
    Open {
        /// Connections to open first.
        connections: usize,
        /// Nanoseconds between two requests' due times.
        interval_ns: f64,
        /// Requests to send.
        total: u64,
        /// The most connections to open while every one is busy.
        max_connections: usize,
    },
}

/// The connections and what they send, kept across phases (the Python `Driver`).
pub struct Engine {
    poll: Poll,
    events: Events,
    addr: SocketAddr,
    target: Vec<u8>,
    source: Source,
    conns: Vec<Option<Conn>>,
    free_slots: Vec<usize>,
    free: VecDeque<usize>,
    open_count: usize,
    timeout_ns: u64,
    connect_timeout_ns: u64,
    late_ns: i64,
    clock: (Instant, u64),
    body: Vec<u8>,
    read_buf: Vec<u8>,
    ready: Vec<usize>,
    timer: Timer,
    /// Why connections could not be opened (the last few).
    pub connect_errors: Vec<String>,
    /// Set from another thread: stop sending, end the phase.
    pub stop: Arc<AtomicBool>,
    /// Replies and failures of the running phase, for a progress bar.
    pub progress: Arc<AtomicU64>,
}

/// The running phase's own state.
struct Phase {
    closed: bool,
    // Closed loop.
    lanes: usize,
    stopping: bool,
    deadline: Option<u64>,
    remaining: Option<u64>,
    /// Lanes waiting to open a connection again, at these times.
    reopen: Vec<u64>,
    // Open model.
    t0: u64,
    interval: f64,
    total: u64,
    index: u64,
    waiting: VecDeque<u64>,
    opening: usize,
    max_connections: usize,
    sending: bool,
}

/// The open model's timer's token (mio keeps `usize::MAX` for itself).
const TIMER: usize = usize::MAX - 1;
/// A request due sooner than this is sent on the timer, not the epoll timeout...
const FINE_NS: u64 = 2_000_000;
/// ...at rates up to 10,000/s. Faster, replies arrive more often than requests fall due and
/// each sends what is due, so the timer's syscalls and wake-ups (2.3x the CPU per request at
/// 20,000/s) buy nothing.
const FINE_MIN_INTERVAL_NS: f64 = 100_000.0;

/// A one-shot timerfd on the loop's epoll.
struct Timer {
    fd: libc::c_int,
    /// The due time it is armed for (0: none).
    armed_for: u64,
}

impl Timer {
    fn new(poll: &Poll) -> std::io::Result<Timer> {
        // SAFETY: timerfd_create takes no pointers; the fd is owned by the Timer.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let timer = Timer { fd, armed_for: 0 };
        poll.registry()
            .register(&mut SourceFd(&fd), Token(TIMER), Interest::READABLE)?;
        Ok(timer)
    }

    /// Fires in `in_ns` (for the request due at `due`).
    fn arm(&mut self, due: u64, in_ns: u64) {
        if self.armed_for == due {
            return;
        }
        let in_ns = in_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (in_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (in_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` outlives the call; a null old value is allowed.
        let rc = unsafe { libc::timerfd_settime(self.fd, 0, &spec, std::ptr::null_mut()) };
        self.armed_for = if rc == 0 { due } else { 0 };
    }

    /// It fired: read its count so that it can fire again.
    fn clear(&mut self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `count`.
        let _ = unsafe { libc::read(self.fd, count.as_mut_ptr().cast(), 8) };
        self.armed_for = 0;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: the fd is the Timer's own.
        unsafe { libc::close(self.fd) };
    }
}

const SWEEP_MAX_NS: u64 = 250_000_000;
const RETRY_NS: u64 = 50_000_000;

impl Engine {
    /// An engine with no connection yet. `now_ns`: the caller's clock now (its nanoseconds
    /// are the tallies' time base).
    pub fn new(
        addr: SocketAddr,
        target: Vec<u8>,
        source: Source,
        timeout_ns: u64,
        connect_timeout_ns: u64,
        late_ns: i64,
        now_ns: u64,
    ) -> std::io::Result<Self> {
        let poll = Poll::new()?;
        let timer = Timer::new(&poll)?;
        Ok(Engine {
            poll,
            timer,
            events: Events::with_capacity(1024),
            addr,
            target,
            source,
            conns: Vec::new(),
            free_slots: Vec::new(),
            free: VecDeque::new(),
            open_count: 0,
            timeout_ns,
            connect_timeout_ns,
            late_ns,
            clock: (Instant::now(), now_ns),
            body: Vec::new(),
            read_buf: vec![0; 64 * 1024],
            ready: Vec::new(),
            connect_errors: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The caller's clock, nanoseconds.
    pub fn now(&self) -> u64 {
        self.clock.1 + self.clock.0.elapsed().as_nanos() as u64
    }

    /// Open connections: how many are open.
    pub fn open_count(&self) -> usize {
        self.open_count
    }

    fn connect_error(&mut self, what: String) {
        if self.connect_errors.len() >= 16 {
            self.connect_errors.remove(0);
        }
        self.connect_errors.push(what);
    }

    /// Starts opening a connection; its slot, or None when it failed at once.
    fn dial(&mut self) -> Option<usize> {
        let mut stream = match TcpStream::connect(self.addr) {
            Ok(s) => s,
            Err(e) => {
                self.connect_error(e.to_string());
                return None;
            }
        };
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.connect_error(e.to_string());
            self.free_slots.push(slot);
            return None;
        }
        let now = self.now();
        self.conns[slot] = Some(Conn {
            stream,
            http: ClientConnection::new(Limits::default()),
            out: Vec::new(),
            written: 0,
            wants_write: true,
            state: State::Connecting,
            listed: false,
            opened_ns: now,
            label: 0,
            due_ns: 0,
            sent_ns: 0,
            expected: 0,
        });
        self.open_count += 1;
        Some(slot)
    }

    fn drop_conn(&mut self, slot: usize) {
        if let Some(mut conn) = self.conns[slot].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            self.open_count -= 1;
            self.free_slots.push(slot);
        }
    }

    /// Closes every connection.
    pub fn close(&mut self) {
        for slot in 0..self.conns.len() {
            self.drop_conn(slot);
        }
        self.free.clear();
    }

    /// Opens connections until `count` are open (or failed); how many are open.
    pub fn fill(&mut self, count: usize) -> usize {
        while self.open_count < count {
            if self.dial().is_none() {
                break;
            }
        }
        loop {
            let connecting: Vec<usize> = (0..self.conns.len())
                .filter(|&s| matches!(&self.conns[s], Some(c) if c.state == State::Connecting))
                .collect();
            if connecting.is_empty() || self.stop.load(Ordering::Relaxed) {
                break;
            }
            if self
                .poll
                .poll(&mut self.events, Some(Duration::from_millis(10)))
                .is_err()
            {
                break;
            }
            let ready: Vec<usize> = self.events.iter().map(|e| e.token().0).collect();
            let now = self.now();
            for slot in connecting {
                let happened = if ready.contains(&slot) {
                    self.advance(slot)
                } else if self.conns[slot]
                    .as_ref()
                    .is_some_and(|c| now - c.opened_ns > self.connect_timeout_ns)
                {
                    self.connect_error("timed out connecting".to_owned());
                    Happened::Lost
                } else {
                    Happened::Nothing
                };
                match happened {
                    Happened::Connected => self.list(slot),
                    Happened::Lost => self.drop_conn(slot),
                    _ => {}
                }
            }
        }
        self.open_count
    }

    fn list(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].as_mut() {
            if !c.listed && c.state == State::Idle {
                c.listed = true;
                self.free.push_back(slot);
            }
        }
    }

    fn take(&mut self) -> Option<usize> {
        while let Some(slot) = self.free.pop_front() {
            if let Some(c) = self.conns[slot].as_mut() {
                c.listed = false;
                if c.state == State::Idle {
                    return Some(slot);
                }
            }
        }
        None
    }

    /// Reads and writes what the connection can; what it came to.
    fn advance(&mut self, slot: usize) -> Happened {
        let Some(conn) = self.conns[slot].as_mut() else {
            return Happened::Nothing;
        };
        if conn.state == State::Connecting {
            match conn.stream.take_error() {
                Ok(None) => {}
                Ok(Some(e)) | Err(e) => {
                    let what = e.to_string();
                    self.connect_error(what);
                    return Happened::Lost;
                }
            }
            match conn.stream.peer_addr() {
                Ok(_) => {
                    let _ = conn.stream.set_nodelay(true);
                    // From now on writability matters only while a request is half written
                    // (each write would otherwise wake the loop once more).
                    if let Err(e) = self.poll.registry().reregister(
                        &mut conn.stream,
                        Token(slot),
                        Interest::READABLE,
                    ) {
                        self.connect_error(e.to_string());
                        return Happened::Lost;
                    }
                    conn.state = State::Idle;
                    conn.wants_write = false;
                    return Happened::Connected;
                }
                Err(e) if e.kind() == ErrorKind::NotConnected => return Happened::Nothing,
                Err(e) => {
                    self.connect_error(e.to_string());
                    return Happened::Lost;
                }
            }
        }
        if conn.wants_write && self.write_pending(slot).is_err() {
            return Happened::Lost;
        }
        let Some(conn) = self.conns[slot].as_mut() else {
            return Happened::Nothing;
        };
        let mut eof = false;
        loop {
            match conn.stream.read(&mut self.read_buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    conn.http.feed(&self.read_buf[..n]);
                    // Edge-triggered: what arrives after this read wakes the loop again, so
                    // a short read has drained the socket (no read just to see EAGAIN).
                    if n < self.read_buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return Happened::Lost,
            }
        }
        if eof {
            conn.http.feed_eof();
        }
        loop {
            match conn.http.next_event() {
                Ok(Some(ClientEvent::Response(r))) => return Happened::Reply(r),
                // A request is never written streamed: no other event comes.
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(_) => return Happened::Lost,
            }
        }
        if eof {
            return Happened::Lost;
        }
        Happened::Nothing
    }

    /// Writes the next request over an idle connection.
    fn send(&mut self, slot: usize, due_ns: u64, now: u64) -> bool {
        let (label, expected, at) = self.source.next(&mut self.body);
        let Some(conn) = self.conns[slot].as_mut() else {
            return false;
        };
        let fields = if at == usize::MAX {
            &self.source.batch_fields
        } else {
            &self.source.items[at].fields
        };
        let slices: Vec<(&[u8], &[u8])> = fields
            .iter()
            .map(|(n, v)| (n.as_slice(), v.as_slice()))
            .collect();
        conn.out.drain(..conn.written);
        conn.written = 0;
        let written = conn.http.write_request(
            b"POST",
            &self.target,
            &slices,
            Some(&self.body),
            false,
            &mut conn.out,
        );
        conn.label = label;
        conn.due_ns = due_ns;
        conn.sent_ns = now;
        conn.expected = expected;
        conn.state = State::Busy;
        written.is_ok() && self.write_pending(slot).is_ok()
    }

    /// Writes what the connection has pending, watching for writability while some is left.
    fn write_pending(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(conn) = self.conns[slot].as_mut() else {
            return Ok(());
        };
        flush(conn)?;
        let left = conn.written < conn.out.len();
        if left != conn.wants_write {
            let interest = if left {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            self.poll
                .registry()
                .reregister(&mut conn.stream, Token(slot), interest)?;
            conn.wants_write = left;
        }
        Ok(())
    }

    /// Runs one phase into `tally`.
    pub fn run(&mut self, mode: Mode, tally: &mut Tally) {
        self.progress.store(0, Ordering::Relaxed);
        let mut ph = Phase {
            closed: matches!(mode, Mode::Closed { .. }),
            lanes: 0,
            stopping: false,
            deadline: None,
            remaining: None,
            reopen: Vec::new(),
            t0: 0,
            interval: 1.0,
            total: 0,
            index: 0,
            waiting: VecDeque::new(),
            opening: 0,
            max_connections: 0,
            sending: false,
        };
        match mode {
            Mode::Closed {
                lanes,
                duration_ns,
                count,
            } => {
                self.fill(lanes);
                let now = self.now();
                tally.started_ns = now;
                ph.deadline = duration_ns.filter(|_| count.is_none()).map(|d| now + d);
                ph.remaining = count;
                ph.lanes = lanes;
                for _ in 0..lanes {
                    match self.take() {
                        Some(slot) => self.next(slot, &mut ph, tally),
                        None => self.replace(&mut ph, tally, now),
                    }
                }
            }
            Mode::Open {
                connections,
                interval_ns,
                total,
                max_connections,
            } => {
                self.fill(connections);
                ph.max_connections = max_connections;
                ph.interval = interval_ns;
                ph.total = total;
                ph.sending = true;
                let now = self.now();
                ph.t0 = now;
                tally.started_ns = now;
                self.due(&mut ph, tally, now);
            }
        }
        let mut next_sweep = self.now() + self.sweep_period();
        loop {
            if self.finished(&ph) {
                break;
            }
            let now = self.now();
            if self.stop.load(Ordering::Relaxed) && !ph.stopping {
                ph.stopping = true;
                ph.sending = false;
                ph.remaining = Some(0);
                if !ph.closed {
                    ph.total = ph.index;
                    ph.waiting.clear();
                }
            }
            let mut wake = next_sweep;
            if let Some(d) = ph.deadline {
                if !ph.stopping {
                    wake = wake.min(d);
                }
            }
            if ph.sending {
                let next = ph.t0 + (ph.index as f64 * ph.interval) as u64;
                wake = wake.min(next);
                if ph.interval >= FINE_MIN_INTERVAL_NS && next > now && next - now < FINE_NS {
                    self.timer.arm(next, next - now);
                }
            }
            if let Some(&r) = ph.reopen.iter().min() {
                wake = wake.min(r);
            }
            let wait = Duration::from_nanos(wake.saturating_sub(now));
            if let Err(e) = self.poll.poll(&mut self.events, Some(wait)) {
                if e.kind() != ErrorKind::Interrupted {
                    break;
                }
            }
            let mut ready = std::mem::take(&mut self.ready);
            ready.clear();
            ready.extend(self.events.iter().map(|e| e.token().0));
            for &slot in &ready {
                self.event(slot, &mut ph, tally);
            }
            self.ready = ready;
            let now = self.now();
            if let Some(d) = ph.deadline {
                if now >= d && !ph.stopping {
                    ph.stopping = true;
                }
            }
            if ph.sending {
                self.due(&mut ph, tally, now);
            }
            if !ph.reopen.is_empty() {
                self.retry(&mut ph, tally, now);
            }
            if now >= next_sweep {
                self.sweep(&mut ph, tally, now);
                next_sweep = now + self.sweep_period();
            }
        }
        tally.ended_ns = self.now();
    }

    fn sweep_period(&self) -> u64 {
        (self.timeout_ns / 4).clamp(10_000_000, SWEEP_MAX_NS)
    }

    fn finished(&self, ph: &Phase) -> bool {
        if ph.closed {
            return ph.lanes == 0;
        }
        if ph.sending || !ph.waiting.is_empty() {
            return false;
        }
        !self
            .conns
            .iter()
            .flatten()
            .any(|c| c.state == State::Busy || c.state == State::Connecting)
    }

    fn event(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        if slot == TIMER {
            // What fell due is sent after the events (`due`).
            self.timer.clear();
            return;
        }
        let was_connecting = matches!(&self.conns[slot], Some(c) if c.state == State::Connecting);
        match self.advance(slot) {
            Happened::Nothing => {}
            Happened::Connected => self.connected(slot, ph, tally),
            Happened::Reply(response) => self.reply(slot, response, ph, tally),
            Happened::Lost => {
                if was_connecting {
                    self.connect_failed(slot, ph, tally);
                } else {
                    self.lost(slot, ph, tally);
                }
            }
        }
    }

    // ------------------------------------------------------------------ closed loop

    fn next(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        if ph.stopping || ph.remaining == Some(0) {
            ph.lanes -= 1;
            self.list(slot);
            return;
        }
        if let Some(r) = ph.remaining.as_mut() {
            *r -= 1;
        }
        let now = self.now();
        if !self.send(slot, now, now) {
            self.lost(slot, ph, tally);
        }
    }

    /// A lane lost its connection: it goes on over a new one.
    fn replace(&mut self, ph: &mut Phase, tally: &mut Tally, now: u64) {
        if !ph.closed {
            return;
        }
        if ph.stopping {
            ph.lanes -= 1;
            return;
        }
        if self.dial().is_none() {
            self.lane_failed(ph, tally, now);
        }
    }

    /// A lane's connection could not be opened: the request it would send fails, and it
    /// tries again a little later (a dead server does not spin the loop).
    fn lane_failed(&mut self, ph: &mut Phase, tally: &mut Tally, now: u64) {
        if ph.remaining == Some(0) || ph.stopping {
            ph.lanes -= 1;
            return;
        }
        if let Some(r) = ph.remaining.as_mut() {
            *r -= 1;
        }
        tally.failure(self.source.first_label(), "transport", now);
        self.progress.fetch_add(1, Ordering::Relaxed);
        ph.reopen.push(now + RETRY_NS);
    }

    fn retry(&mut self, ph: &mut Phase, tally: &mut Tally, now: u64) {
        let due: Vec<u64> = ph.reopen.iter().copied().filter(|&t| t <= now).collect();
        ph.reopen.retain(|&t| t > now);
        for _ in due {
            self.replace(ph, tally, now);
        }
    }

    // ------------------------------------------------------------------ open model

    /// Sends every request due by `now`.
    fn due(&mut self, ph: &mut Phase, tally: &mut Tally, now: u64) {
        let elapsed = now.saturating_sub(ph.t0) as f64;
        let due = ph.total.min((elapsed / ph.interval) as u64 + 1);
        while ph.index < due {
            let scheduled = ph.t0 + (ph.index as f64 * ph.interval) as u64;
            ph.index += 1;
            match self.take() {
                Some(slot) => {
                    tally.scheduled(now as i64 - scheduled as i64, self.late_ns);
                    self.fire(slot, scheduled, now, ph, tally);
                }
                None => {
                    ph.waiting.push_back(scheduled);
                    tally.waited += 1;
                    if self.open_count < ph.max_connections {
                        self.grow(ph, tally);
                    }
                }
            }
        }
        if ph.index >= ph.total {
            ph.sending = false;
        }
    }

    fn fire(&mut self, slot: usize, due: u64, now: u64, ph: &mut Phase, tally: &mut Tally) {
        tally.sent += 1;
        if !self.send(slot, due, now) {
            self.lost(slot, ph, tally);
        }
    }

    fn grow(&mut self, ph: &mut Phase, tally: &mut Tally) {
        match self.dial() {
            Some(_) => ph.opening += 1,
            None => self.grow_failed(ph, tally),
        }
    }

    fn grow_failed(&mut self, ph: &mut Phase, tally: &mut Tally) {
        // Nothing to send over: the waiting request closest to being due fails.
        if ph.waiting.pop_front().is_some() {
            let now = self.now();
            tally.failure(self.source.first_label(), "transport", now);
            self.progress.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection can take another request: the oldest waiting one, else it is free.
    fn after(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        if !ph.closed {
            if let Some(due) = ph.waiting.pop_front() {
                let now = self.now();
                self.fire(slot, due, now, ph, tally);
                return;
            }
        }
        self.list(slot);
    }

    // ------------------------------------------------------------------ events

    fn connected(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        if ph.closed {
            self.next(slot, ph, tally);
        } else {
            ph.opening = ph.opening.saturating_sub(1);
            self.after(slot, ph, tally);
        }
    }

    fn connect_failed(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        self.drop_conn(slot);
        let now = self.now();
        if ph.closed {
            self.lane_failed(ph, tally, now);
        } else {
            ph.opening = ph.opening.saturating_sub(1);
            self.grow_failed(ph, tally);
        }
    }

    fn reply(&mut self, slot: usize, response: Response, ph: &mut Phase, tally: &mut Tally) {
        let now = self.now();
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        conn.state = State::Idle;
        let (label, due, sent, expected) = (conn.label, conn.due_ns, conn.sent_ns, conn.expected);
        let keep_alive = response.keep_alive();
        tally.reply(
            label,
            now.saturating_sub(due) / 1000,
            now,
            response.status(),
            response.body(),
            expected,
        );
        self.progress.fetch_add(1, Ordering::Relaxed);
        if ph.closed {
            if keep_alive {
                self.next(slot, ph, tally);
            } else {
                self.drop_conn(slot);
                self.replace(ph, tally, now);
            }
            return;
        }
        tally.service_time(label, now.saturating_sub(sent) / 1000);
        if !keep_alive {
            self.drop_conn(slot);
            if !ph.waiting.is_empty() && self.open_count < ph.max_connections {
                self.grow(ph, tally);
            }
            return;
        }
        self.after(slot, ph, tally);
        if ph.sending {
            self.due(ph, tally, now);
        }
    }

    /// A connection failed: its request (if any) fails as `transport`.
    fn lost(&mut self, slot: usize, ph: &mut Phase, tally: &mut Tally) {
        let busy = match &self.conns[slot] {
            Some(c) if c.state == State::Busy => Some(c.label),
            _ => None,
        };
        self.drop_conn(slot);
        let now = self.now();
        if let Some(label) = busy {
            tally.failure(label, "transport", now);
            self.progress.fetch_add(1, Ordering::Relaxed);
            if ph.closed {
                self.replace(ph, tally, now);
            }
        }
        if !ph.closed && !ph.waiting.is_empty() && self.open_count < ph.max_connections {
            self.grow(ph, tally);
        }
    }

    /// Gives up on requests older than the timeout (`timeout` errors; their connections
    /// close, as a late reply would be mistaken for the next one's), and on connections
    /// that took too long to open.
    fn sweep(&mut self, ph: &mut Phase, tally: &mut Tally, now: u64) {
        for slot in 0..self.conns.len() {
            let Some(c) = &self.conns[slot] else {
                continue;
            };
            if c.state == State::Busy && c.sent_ns + self.timeout_ns < now {
                let label = c.label;
                self.drop_conn(slot);
                tally.failure(label, "timeout", now);
                self.progress.fetch_add(1, Ordering::Relaxed);
                if ph.closed {
                    self.replace(ph, tally, now);
                } else if !ph.waiting.is_empty() && self.open_count < ph.max_connections {
                    self.grow(ph, tally);
                }
            } else if c.state == State::Connecting && c.opened_ns + self.connect_timeout_ns < now {
                self.connect_error("timed out connecting".to_owned());
                self.connect_failed(slot, ph, tally);
            }
        }
    }
}

/// Writes what the connection has pending; Err when it failed.
fn flush(conn: &mut Conn) -> std::io::Result<()> {
    while conn.written < conn.out.len() {
        match conn.stream.write(&conn.out[conn.written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => conn.written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    conn.out.clear();
    conn.written = 0;
    Ok(())
}
