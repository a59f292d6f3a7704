//! The metrics server: a loopback HTTP endpoint serving a [`MetricsSource`]'s Prometheus text
//! (`/metrics`) and JSON (`/metrics.json`), so that a person or a scraper can watch a long
//! probe, a sweep or an intercepted program. It serves any `MetricsSource` (a `PlanPool` is
//! one), so this layer never depends on the pool.
//!
//! One thread sleeps in a blocking `accept` (no polling: a request is read as soon as it
//! arrives). Each connection is read and answered on a short-lived thread of its own, at most
//! [`MAX_CONNECTIONS`] at once, so a client that connects and sends nothing holds one of them
//! for at most [`READ_TIME`], never the server; past the cap a connection is answered 503 with
//! `Retry-After` by the accepting thread, which never blocks on a client. What a request may
//! be and how it is answered is in `http`; every connection closes after one response.
//!
//! A child process never serves: the listening socket is close-on-exec (std opens every socket
//! with `SOCK_CLOEXEC` on Linux), a child of `fork` closes its copy at once (`fork`), and the
//! server's threads, which a child does not have, also stop if they find themselves in
//! another process. So a port is never held by a child once the process that bound it exits.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::error::{Error, Result};
use crate::observe::fork::ForkGuard;
use crate::observe::http;

/// Connections read or answered at once; the next ones get 503 until one ends.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a connection has to deliver its whole request head; then it is answered 408 (or,
/// when nothing came, closed).
pub const READ_TIME: Duration = Duration::from_secs(2);
/// How long writing a response may take, for a client that reads it slowly or not at all.
const WRITE_TIME: Duration = Duration::from_secs(2);
/// After answering a request not read to its end: how long, and how many bytes, of what the
/// client still sends are read and dropped so that the close does not reset the connection
/// (a reset can discard the answer before the client reads it).
const LINGER_TIME: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1 << 20;
/// How long dropping the server waits for its accepting thread; its wake-up connection, to
/// a listener on this host, is made at once or not at all, bounded by `WAKE_TIME`.
const STOP_TIME: Duration = Duration::from_secs(1);
const WAKE_TIME: Duration = Duration::from_millis(250);

/// What the server reads on each request.
pub trait MetricsSource: Send + Sync + 'static {
    /// Prometheus text exposition.
    fn metrics_text(&self) -> String;
    /// The JSON form.
    fn metrics_json(&self) -> String;
}

/// The running endpoint; stops when dropped.
///
/// `GET` or `HEAD` `/metrics` is the Prometheus text, `/metrics.json` the JSON form; other
/// paths are 404, other methods 405. The server holds its source weakly: once the last `Arc`
/// is gone, requests are answered 503.
///
/// A child of `fork` does not serve: its copy of the listening socket is closed at the fork,
/// and dropping the `MetricsServer` it inherited neither wakes nor waits for the parent's
/// threads.
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use std::sync::Arc;
/// use hipfft_pool::MetricsServer;
/// use hipfft_pool::observe::serve::MetricsSource;
///
/// struct Counts;
/// impl MetricsSource for Counts {
///     fn metrics_text(&self) -> String { "requests_total 1\n".into() }
///     fn metrics_json(&self) -> String { r#"{"requests_total":1}"#.into() }
/// }
///
/// let counts = Arc::new(Counts); // held by the caller: the server keeps a weak reference
/// let server = MetricsServer::start("127.0.0.1:0", &counts)?;
/// let mut conn = std::net::TcpStream::connect(server.addr())?;
/// conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
/// let mut reply = String::new();
/// conn.read_to_string(&mut reply)?;
/// assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
/// assert!(reply.ends_with("\r\n\r\nrequests_total 1\n"), "{reply}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Disconnected once the accepting thread has returned (and closed the listener).
    stopped: Receiver<()>,
    /// The process that started the server: the only one whose drop wakes and joins it.
    owner: u32,
    fork: ForkGuard,
}

impl MetricsServer {
    /// Serves `pool`'s metrics on `addr`, which must be a loopback address (port 0 picks a
    /// free port: see [`addr`](Self::addr)).
    pub fn start<S: MetricsSource>(addr: &str, pool: &Arc<S>) -> Result<MetricsServer> {
        let parsed: SocketAddr =
            addr.parse().map_err(|e| Error::invalid_argument("metrics_addr", format!("{addr:?} is not host:port: {e}")))?;
        if !parsed.ip().is_loopback() {
            return Err(Error::invalid_argument("metrics_addr", format!("{addr} is not a loopback address")));
        }
        // Blocking, as std leaves it: the accepting thread sleeps in `accept` until a client comes.
        let listener = TcpListener::bind(parsed)
            .map_err(|e| Error::invalid_argument("metrics_addr", format!("cannot listen on {addr}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
        let (listener, fork) = ForkGuard::new(listener);
        let stop = Arc::new(AtomicBool::new(false));
        let (stopped_tx, stopped) = crossbeam_channel::bounded::<()>(0);
        let (source, s, owner) = (Arc::downgrade(pool), stop.clone(), std::process::id());
        let thread = std::thread::Builder::new()
            .name("hipfft-pool-metrics".into())
            .spawn(move || {
                let _stopped = stopped_tx;
                accept_loop(&listener, &source, &s, owner);
                drop(listener); // before `_stopped` says so
            })
            .map_err(|e| Error::Internal(format!("cannot start the metrics server thread: {e}")))?;
        Ok(MetricsServer { addr, stop, thread: Some(thread), stopped, owner, fork })
    }

    /// The address it listens on (the port chosen, when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The listening socket's descriptor, for the tests that read its flags.
    #[cfg(all(test, unix))]
    pub(crate) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fork.fd()
    }
}

impl Drop for MetricsServer {
    /// Stops accepting and closes the listener, at once unless the accepting thread does not
    /// wake (then it returns after `WAKE_TIME` + `STOP_TIME`, 1.25 s, and the thread stops at
    /// its next connection); connections already accepted finish on their own threads, each
    /// within its time limits.
    fn drop(&mut self) {
        if std::process::id() != self.owner {
            // A forked child: the threads are the parent's and do not exist here, so they are
            // neither woken (that would connect to the parent's listener) nor joined (that
            // would wait forever). Only this process's copy of the socket is closed.
            std::mem::forget(self.thread.take());
            self.fork.close_in_child();
            return;
        }
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept with a connection of our own; if even that fails (no
        // descriptors left), the thread stops at the next connection that comes.
        let _ = TcpStream::connect_timeout(&self.addr, WAKE_TIME);
        let Some(thread) = self.thread.take() else { return };
        match self.stopped.recv_timeout(STOP_TIME) {
            Err(RecvTimeoutError::Disconnected) => {
                if thread.join().is_err() {
                    // Nobody to return it to: logged, never re-raised (a drop must not panic).
                    tracing::error!("the metrics server thread panicked");
                }
            }
            // Left to stop on its own: a drop must not hang.
            _ => tracing::warn!("the metrics server thread did not stop within {STOP_TIME:?}; it stops at its next connection"),
        }
    }
}

// The interposer keeps its server in a static.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<MetricsServer>()
};

/// Decrements the count of open connections when a connection's thread ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn accept_loop<S: MetricsSource>(listener: &TcpListener, source: &Weak<S>, stop: &AtomicBool, owner: u32) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) || std::process::id() != owner {
            return;
        }
        let conn = match accepted {
            Ok((conn, _)) => conn,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionAborted) => continue,
            Err(e) => {
                // Out of descriptors or memory: the connection stays queued and `accept` would
                // fail again at once, so pause instead of spinning.
                tracing::warn!("the metrics server cannot accept a connection: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            turn_away(conn);
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (slot, source) = (Slot(open.clone()), source.clone());
        // If the thread cannot start, the closure is dropped: the connection closes unanswered
        // and its slot is given back.
        let spawned = std::thread::Builder::new().name("hipfft-pool-metrics-conn".into()).spawn(move || {
            let _slot = slot;
            serve_connection(conn, &source);
        });
        if let Err(e) = spawned {
            tracing::warn!("the metrics server cannot start a connection thread: {e}");
        }
    }
}

/// A 503 on the accepting thread, which must not block on a client: one non-blocking write
/// of a response small enough for any socket buffer, FIN, then what the client already sent
/// is read and dropped (closing with it unread would reset the connection).
fn turn_away(conn: TcpStream) {
    let _ = conn.set_nonblocking(true);
    let _ = (&conn).write_all(&http::refusal(http::SERVICE_UNAVAILABLE, &[("Retry-After", "1")], false));
    let _ = conn.shutdown(Shutdown::Write);
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        if !matches!((&conn).read(&mut sink), Ok(n) if n > 0) {
            break;
        }
    }
}

/// What reading a request head ended with.
enum Head {
    /// The head, and where it ends in what was read.
    Complete(Vec<u8>, usize),
    /// [`http::HEAD_LIMIT`] bytes without the blank line.
    TooLarge(Vec<u8>),
    /// The time ran out; whether anything had come.
    TimedOut(bool),
    /// The client closed before the blank line; whether anything had come.
    Closed(bool),
    Failed,
}

/// Reads until the blank line that ends the head, across as many reads as it takes, until
/// `deadline` (one for the whole head, so a client trickling bytes cannot hold a slot longer).
fn read_head(conn: &mut TcpStream, deadline: Instant) -> Head {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Head::TimedOut(!buf.is_empty());
        }
        if conn.set_read_timeout(Some(left)).is_err() {
            return Head::Failed;
        }
        let room = (http::HEAD_LIMIT - buf.len()).min(chunk.len());
        match conn.read(&mut chunk[..room]) {
            Ok(0) => return Head::Closed(!buf.is_empty()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Head::TimedOut(!buf.is_empty());
            }
            Err(_) => return Head::Failed,
        }
        if let Some(end) = http::head_end(&buf) {
            return Head::Complete(buf, end);
        }
        if buf.len() >= http::HEAD_LIMIT {
            return Head::TooLarge(buf);
        }
    }
}

fn serve_connection<S: MetricsSource>(mut conn: TcpStream, source: &Weak<S>) {
    // `unread`: the client may still be sending (a body, the rest of an oversized head).
    let (answer, unread) = match read_head(&mut conn, Instant::now() + READ_TIME) {
        Head::Complete(buf, end) => match http::parse(&buf[..end]) {
            Ok(request) => (route(&request, source), end < buf.len() || request.body_len > 0),
            Err(status) => (http::refusal(status, &[], false), true),
        },
        Head::TooLarge(buf) => (http::refusal(http::too_large(&buf), &[], false), true),
        Head::TimedOut(true) => (http::refusal(http::REQUEST_TIMEOUT, &[], false), true),
        Head::Closed(true) => (http::refusal(http::BAD_REQUEST, &[], false), false),
        Head::TimedOut(false) | Head::Closed(false) | Head::Failed => return,
    };
    if !write_within(&mut conn, &answer, Instant::now() + WRITE_TIME) {
        return;
    }
    // FIN now, even if another process holds a copy of this socket.
    let _ = conn.shutdown(Shutdown::Write);
    if unread {
        linger(&mut conn);
    }
}

fn route<S: MetricsSource>(request: &http::Request, source: &Weak<S>) -> Vec<u8> {
    let head_only = match request.method.as_str() {
        "GET" => false,
        "HEAD" => true,
        _ => return http::refusal(http::METHOD_NOT_ALLOWED, &[("Allow", "GET, HEAD")], false),
    };
    let json = match request.path.as_str() {
        "/metrics" => false,
        "/metrics.json" => true,
        _ => return http::refusal(http::NOT_FOUND, &[], head_only),
    };
    let Some(source) = source.upgrade() else {
        return http::refusal(http::SERVICE_UNAVAILABLE, &[], head_only);
    };
    let (kind, body) = if json {
        ("application/json", source.metrics_json())
    } else {
        ("text/plain; version=0.0.4; charset=utf-8", source.metrics_text())
    };
    http::response(http::OK, kind, &[], body.as_bytes(), head_only)
}

/// Writes all of `bytes` by `deadline` (one for the whole response, so a client reading a byte
/// at a time cannot hold a slot longer); false if it could not.
fn write_within(conn: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> bool {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_write_timeout(Some(left)).is_err() {
            return false;
        }
        match conn.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Reads and drops what the client still sends, bounded by [`LINGER_TIME`] and
/// [`LINGER_BYTES`], until it closes.
fn linger(conn: &mut TcpStream) {
    let deadline = Instant::now() + LINGER_TIME;
    let mut sink = [0u8; 16 * 1024];
    let mut total = 0;
    while total < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match conn.read(&mut sink) {
            Ok(0) => return,
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
