//! The metrics server over real loopback connections: concurrency and its cap, the limits and
//! status codes, a prompt wake-up and stop, and its socket's flags across fork and exec.
//!
//! Time bounds are loose, for a loaded machine: they tell a blocked or polling server from a
//! working one and are no benchmark. Every client reads with a timeout, so a server that never
//! answers fails a test instead of hanging it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::serve::{MAX_CONNECTIONS, MetricsServer, MetricsSource, READ_TIME};

const TEXT: &str = "hipfft_pool_test_total 1\n";
const JSON: &str = r#"{"test_total":1}"#;
const GET: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
/// How long a client waits for an answer before the test fails.
const CLIENT_WAIT: Duration = Duration::from_secs(5);

struct Fixed;

impl MetricsSource for Fixed {
    fn metrics_text(&self) -> String {
        TEXT.into()
    }
    fn metrics_json(&self) -> String {
        JSON.into()
    }
}

fn server() -> (Arc<Fixed>, MetricsServer) {
    let source = Arc::new(Fixed);
    let server = MetricsServer::start("127.0.0.1:0", &source).unwrap();
    (source, server)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(CLIENT_WAIT)).unwrap();
    conn.set_write_timeout(Some(CLIENT_WAIT)).unwrap();
    // Each write its own segment, for the tests that split a request.
    conn.set_nodelay(true).unwrap();
    conn
}

/// What came back: the head (status line and fields), the body, and the error that ended the
/// exchange, if one did (a reset, a timeout) rather than the server's close.
struct Reply {
    head: String,
    body: Vec<u8>,
    error: Option<std::io::Error>,
}

impl Reply {
    fn status(&self) -> u16 {
        self.head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} + {} bytes of body, error {:?}", self.head, self.body.len(), self.error)
    }
}

fn read_reply(mut conn: TcpStream) -> Reply {
    let mut all = Vec::new();
    let mut chunk = [0u8; 4096];
    let error = loop {
        match conn.read(&mut chunk) {
            Ok(0) => break None,
            Ok(n) => all.extend_from_slice(&chunk[..n]),
            Err(e) => break Some(e),
        }
    };
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").map_or(all.len(), |i| i + 4);
    let body = all.split_off(split);
    Reply { head: String::from_utf8_lossy(&all).into_owned(), body, error }
}

/// Sends `request` in one write and reads the answer to the server's close.
fn exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut conn = connect(addr);
    if let Err(e) = conn.write_all(request) {
        return Reply { head: String::new(), body: Vec::new(), error: Some(e) };
    }
    read_reply(conn)
}

#[test]
fn ten_silent_clients_do_not_delay_a_get() {
    let (_source, server) = server();
    let silent: Vec<_> = (0..10).map(|_| connect(server.addr())).collect();
    std::thread::sleep(Duration::from_millis(100)); // accepted, and waiting for a request
    let start = Instant::now();
    let reply = exchange(server.addr(), GET);
    let took = start.elapsed();
    assert_eq!(reply.status(), 200, "{reply:?}");
    assert_eq!(reply.body, TEXT.as_bytes());
    assert!(took < Duration::from_secs(1), "the GET took {took:?} behind ten silent clients");
    drop(silent);
}

#[test]
fn past_the_cap_a_connection_gets_503_with_retry_after_and_the_slots_come_back() {
    let (_source, server) = server();
    let silent: Vec<_> = (0..MAX_CONNECTIONS).map(|_| connect(server.addr())).collect();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let reply = exchange(server.addr(), GET);
    assert_eq!(reply.status(), 503, "{reply:?}");
    assert_eq!(reply.header("Retry-After"), Some("1"), "{reply:?}");
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    drop(silent);
    let deadline = Instant::now() + CLIENT_WAIT;
    for attempt in 0.. {
        if exchange(server.addr(), GET).status() == 200 {
            break;
        }
        assert!(attempt < 100 && Instant::now() < deadline, "the slots did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_request_split_over_three_writes_is_served() {
    let (_source, server) = server();
    let mut conn = connect(server.addr());
    for part in [&b"GE"[..], b"T /metrics HTTP/1.1\r\nHo", b"st: localhost\r\n\r\n"] {
        conn.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let reply = read_reply(conn);
    assert_eq!(reply.status(), 200, "{reply:?}");
    assert_eq!(reply.body, TEXT.as_bytes());
}

#[test]
fn a_200_kb_request_line_gets_414_not_a_reset() {
    let (_source, server) = server();
    let request = format!("GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(200_000));
    let reply = exchange(server.addr(), request.as_bytes());
    assert!(reply.error.is_none(), "{reply:?}");
    assert_eq!(reply.status(), 414, "{reply:?}");
}

#[test]
fn header_fields_over_8_kib_get_431() {
    let (_source, server) = server();
    let fields: String = (0..100).map(|i| format!("X-Filler-{i}: {}\r\n", "b".repeat(100))).collect();
    let request = format!("GET /metrics HTTP/1.1\r\n{fields}\r\n");
    let reply = exchange(server.addr(), request.as_bytes());
    assert!(reply.error.is_none(), "{reply:?}");
    assert_eq!(reply.status(), 431, "{reply:?}");
}

#[test]
fn a_large_content_length_gets_413_and_a_small_body_is_drained() {
    let (_source, server) = server();
    let reply = exchange(server.addr(), b"GET /metrics HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n");
    assert_eq!(reply.status(), 413, "{reply:?}");
    let reply = exchange(server.addr(), b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    assert!(reply.error.is_none(), "{reply:?}");
    assert_eq!(reply.status(), 200, "{reply:?}");
}

#[test]
fn other_methods_get_405_with_allow() {
    let (_source, server) = server();
    for request in [&b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"[..], b"DELETE /metrics HTTP/1.1\r\n\r\n", b"get /metrics HTTP/1.1\r\n\r\n"] {
        let reply = exchange(server.addr(), request);
        assert_eq!(reply.status(), 405, "{reply:?}");
        assert_eq!(reply.header("Allow"), Some("GET, HEAD"), "{reply:?}");
    }
}

#[test]
fn head_gets_the_fields_of_a_get_and_no_body() {
    let (_source, server) = server();
    let reply = exchange(server.addr(), b"HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(reply.error.is_none(), "{reply:?}");
    assert_eq!(reply.status(), 200, "{reply:?}");
    assert_eq!(reply.header("Content-Length"), Some(TEXT.len().to_string().as_str()));
    assert_eq!(reply.header("Content-Type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert_eq!(reply.header("Connection"), Some("close"));
    assert!(reply.body.is_empty(), "{reply:?}");
    let reply = exchange(server.addr(), b"HEAD /nothing HTTP/1.1\r\n\r\n");
    assert_eq!((reply.status(), reply.body.len()), (404, 0), "{reply:?}");
}

#[test]
fn malformed_requests_get_400() {
    let (_source, server) = server();
    for request in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /metrics\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost : localhost\r\n\r\n",
    ] {
        let reply = exchange(server.addr(), request);
        assert_eq!(reply.status(), 400, "{}: {reply:?}", String::from_utf8_lossy(request));
        assert_eq!(reply.header("Connection"), Some("close"));
    }
    let reply = exchange(server.addr(), b"GET /metrics HTTP/2.0\r\n\r\n");
    assert_eq!(reply.status(), 505, "{reply:?}");
}

#[test]
fn the_two_paths_are_served_and_others_get_404() {
    let (source, server) = server();
    let reply = exchange(server.addr(), b"GET /metrics.json HTTP/1.1\r\n\r\n");
    assert_eq!((reply.status(), reply.header("Content-Type")), (200, Some("application/json")), "{reply:?}");
    assert_eq!(reply.body, JSON.as_bytes());
    let reply = exchange(server.addr(), b"GET /metrics?name[]=x HTTP/1.1\r\n\r\n");
    assert_eq!((reply.status(), &reply.body[..]), (200, TEXT.as_bytes()), "{reply:?}");
    for path in ["/", "/metricsx", "/metrics/", "/metrics.json.gz"] {
        let reply = exchange(server.addr(), format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes());
        assert_eq!(reply.status(), 404, "{path}: {reply:?}");
    }
    // The server holds its source weakly: once it is gone, 503.
    drop(source);
    assert_eq!(exchange(server.addr(), GET).status(), 503);
}

#[test]
fn a_request_that_stops_midway_gets_408_after_the_read_time() {
    let (_source, server) = server();
    let mut conn = connect(server.addr());
    let start = Instant::now();
    conn.write_all(b"GET /metr").unwrap();
    let reply = read_reply(conn);
    let took = start.elapsed();
    assert_eq!(reply.status(), 408, "{reply:?}");
    assert!(took >= READ_TIME - Duration::from_millis(100) && took < READ_TIME + Duration::from_secs(2), "{took:?}");
}

#[test]
fn dropping_the_server_is_prompt_and_frees_the_port() {
    let (_source, server) = server();
    let addr = server.addr();
    let silent: Vec<_> = (0..3).map(|_| connect(addr)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    drop(server);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(1), "dropping took {took:?}");
    std::net::TcpListener::bind(addr).expect("the port is free once the server is dropped");
    drop(silent);
}

/// The listening socket's flags, from `/proc` (no `libc` in this crate): the generic Linux
/// values of `O_NONBLOCK` and `O_CLOEXEC` (x86, Arm, RISC-V).
#[cfg(target_os = "linux")]
fn fd_flags(server: &MetricsServer) -> u32 {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", server.raw_fd())).unwrap();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap();
    u32::from_str_radix(flags.trim(), 8).unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn the_listener_blocks_in_accept_and_a_get_right_after_start_is_served() {
    const O_NONBLOCK: u32 = 0o4000;
    for _ in 0..5 {
        let start = Instant::now();
        let (_source, server) = server();
        // A blocking listener: the accepting thread sleeps in `accept`, it does not poll.
        assert_eq!(fd_flags(&server) & O_NONBLOCK, 0);
        let reply = exchange(server.addr(), GET);
        assert_eq!(reply.status(), 200, "{reply:?}");
        assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    }
}

#[cfg(target_os = "linux")]
#[test]
fn the_listener_is_close_on_exec() {
    const O_CLOEXEC: u32 = 0o2000000;
    let (_source, server) = server();
    assert_ne!(fd_flags(&server) & O_CLOEXEC, 0);
}

#[cfg(target_os = "linux")]
#[test]
fn a_forked_child_closes_the_listener_and_the_parent_keeps_serving() {
    use std::os::unix::process::CommandExt;
    unsafe extern "C" {
        fn fcntl(fd: std::ffi::c_int, cmd: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    const F_GETFD: std::ffi::c_int = 1;
    const EEXIST: i32 = 17;
    let (_source, server) = server();
    let fd = server.raw_fd();
    // Runs in the forked child before exec: only fcntl, which is async-signal-safe, and an
    // error made from a number, which allocates nothing.
    let check = move || {
        // SAFETY: F_GETFD only reads the descriptor table; it fails with EBADF when closed.
        let open = unsafe { fcntl(fd, F_GETFD) } != -1;
        if open { Err(std::io::Error::from_raw_os_error(EEXIST)) } else { Ok(()) }
    };
    let mut child = std::process::Command::new("/bin/true");
    // SAFETY: `check` is safe to run between fork and exec (above).
    unsafe { child.pre_exec(check) };
    let status = child.status().expect("the forked child (before exec) still had the listening socket open");
    assert!(status.success());
    let reply = exchange(server.addr(), GET);
    assert_eq!(reply.status(), 200, "{reply:?}");
}
