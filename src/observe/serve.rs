//! A tiny loopback HTTP endpoint serving a pool's Prometheus text, so a person can watch a
//! long probe or sweep from a browser or `curl`. One request at a time, `GET` only. It serves
//! any [`MetricsSource`] (a `PlanPool` is one), so this layer never depends on the pool.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};

/// What the server reads on each request.
pub trait MetricsSource: Send + Sync + 'static {
    /// Prometheus text exposition.
    fn metrics_text(&self) -> String;
    /// The JSON form.
    fn metrics_json(&self) -> String;
}

/// The running endpoint; stops when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Serves `pool`'s metrics on `addr`, which must be a loopback address.
    pub fn start<S: MetricsSource>(addr: &str, pool: &Arc<S>) -> Result<MetricsServer> {
        let parsed: SocketAddr =
            addr.parse().map_err(|e| Error::invalid_argument("metrics_addr", format!("{addr:?} is not host:port: {e}")))?;
        if !parsed.ip().is_loopback() {
            return Err(Error::invalid_argument("metrics_addr", format!("{addr} is not a loopback address")));
        }
        let listener = TcpListener::bind(parsed)
            .map_err(|e| Error::invalid_argument("metrics_addr", format!("cannot listen on {addr}: {e}")))?;
        let addr = listener.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
        listener.set_nonblocking(true).map_err(|e| Error::Internal(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(pool);
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("hipfft-pool-metrics".into())
            .spawn(move || serve(listener, weak, s))
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(MetricsServer { addr, stop, thread: Some(thread) })
    }

    /// The address it listens on (the port chosen, when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            // Nobody to return it to: logged, never re-raised (a drop must not panic).
            tracing::error!("the metrics server thread panicked");
        }
    }
}

fn serve<S: MetricsSource>(listener: TcpListener, pool: Weak<S>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((conn, _)) => {
                let Some(pool) = pool.upgrade() else { return };
                let _ = answer(conn, &*pool);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn answer(mut conn: TcpStream, pool: &dyn MetricsSource) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = [0u8; 2048];
    let n = conn.read(&mut buf)?;
    let request = String::from_utf8_lossy(&buf[..n]);
    let (status, kind, body) = if request.starts_with("GET /metrics.json") {
        ("200 OK", "application/json", pool.metrics_json())
    } else if request.starts_with("GET ") {
        ("200 OK", "text/plain; version=0.0.4", pool.metrics_text())
    } else {
        ("405 Method Not Allowed", "text/plain", "GET only\n".to_string())
    };
    write!(conn, "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
}
