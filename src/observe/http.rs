//! The HTTP/1.1 the metrics server speaks, apart from sockets: where a request head (request
//! line and header fields) ends, what it asks for or which status refuses it, and the bytes
//! of a response. Strict where RFC 9112 says a server must reject (whitespace before a
//! field's colon, folded lines, conflicting `Content-Length`), small everywhere else: the
//! server reads no bodies and closes every connection after one response.

/// The most bytes of request line and header fields read (the blank line included).
pub(crate) const HEAD_LIMIT: usize = 8 * 1024;
/// The largest `Content-Length` accepted. No route reads a body; a small one is drained
/// before the connection closes, a larger one is refused before it is sent.
pub(crate) const BODY_LIMIT: u64 = 1024;

/// A status code and its reason phrase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Status(pub(crate) u16, pub(crate) &'static str);

pub(crate) const OK: Status = Status(200, "OK");
pub(crate) const BAD_REQUEST: Status = Status(400, "Bad Request");
pub(crate) const NOT_FOUND: Status = Status(404, "Not Found");
pub(crate) const METHOD_NOT_ALLOWED: Status = Status(405, "Method Not Allowed");
pub(crate) const REQUEST_TIMEOUT: Status = Status(408, "Request Timeout");
pub(crate) const CONTENT_TOO_LARGE: Status = Status(413, "Content Too Large");
pub(crate) const URI_TOO_LONG: Status = Status(414, "URI Too Long");
pub(crate) const HEADER_FIELDS_TOO_LARGE: Status = Status(431, "Request Header Fields Too Large");
pub(crate) const NOT_IMPLEMENTED: Status = Status(501, "Not Implemented");
pub(crate) const SERVICE_UNAVAILABLE: Status = Status(503, "Service Unavailable");
pub(crate) const VERSION_NOT_SUPPORTED: Status = Status(505, "HTTP Version Not Supported");

/// A request the server can route: its method, its path (query dropped) and the length of
/// the body it announced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) body_len: u64,
}

/// The lines of `buf`, each without its line ending; LF alone also ends a line (RFC 9112
/// section 2.2 lets a recipient accept it). The last item is what follows the last LF.
fn lines(buf: &[u8]) -> impl Iterator<Item = (&[u8], usize)> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let nl = buf[start..].iter().position(|&b| b == b'\n')?;
        let line = &buf[start..start + nl];
        start += nl + 1;
        Some((line.strip_suffix(b"\r").unwrap_or(line), start))
    })
}

/// Where the head in `buf` ends (just past its blank line), once it has all arrived. Empty
/// lines before the request line are skipped, as RFC 9112 section 2.2 asks.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    let mut started = false;
    for (line, end) in lines(buf) {
        match (line.is_empty(), started) {
            (true, true) => return Some(end),
            (true, false) => {}
            (false, _) => started = true,
        }
    }
    None
}

/// The answer to a head that reached [`HEAD_LIMIT`] unfinished: 414 when the request line
/// itself is that long (its target is), 431 when the header fields are, 400 when what came
/// is not a request line at all.
pub(crate) fn too_large(buf: &[u8]) -> Status {
    let mut lines = lines(buf).map(|(l, _)| l).skip_while(|l| l.is_empty());
    if lines.next().is_some() {
        return HEADER_FIELDS_TOO_LARGE;
    }
    let rest = buf.iter().position(|&b| b != b'\r' && b != b'\n').map_or(&buf[..0], |i| &buf[i..]);
    match rest.iter().position(|&b| b == b' ') {
        Some(sp) if sp > 0 && rest[..sp].iter().all(|&b| is_tchar(b)) => URI_TOO_LONG,
        _ => BAD_REQUEST,
    }
}

/// A token character (RFC 9110 section 5.6.2): what methods and field names are made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Reads the head `head_end` found (its blank line included).
pub(crate) fn parse(head: &[u8]) -> Result<Request, Status> {
    let mut lines = lines(head).map(|(l, _)| l).skip_while(|l| l.is_empty());
    let request_line = lines.next().ok_or(BAD_REQUEST)?;
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BAD_REQUEST);
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(BAD_REQUEST);
    }
    match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => {}
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit() => {
            return Err(VERSION_NOT_SUPPORTED);
        }
        _ => return Err(BAD_REQUEST),
    }
    let path = path_of(target).ok_or(BAD_REQUEST)?;
    let mut body_len = None;
    for line in lines.take_while(|l| !l.is_empty()) {
        let colon = line.iter().position(|&b| b == b':').ok_or(BAD_REQUEST)?;
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        // An empty name, or whitespace before the colon or at the start (a folded line):
        // rejected, never guessed at (RFC 9112 section 5).
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) || value.iter().any(|&b| b == b'\r' || b == 0) {
            return Err(BAD_REQUEST);
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = content_length(value).ok_or(BAD_REQUEST)?;
            if body_len.is_some_and(|m| m != n) {
                return Err(BAD_REQUEST);
            }
            body_len = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // A chunked body's length is unknown until it is read, and nothing here reads one.
            return Err(NOT_IMPLEMENTED);
        }
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > BODY_LIMIT {
        return Err(CONTENT_TOO_LARGE);
    }
    Ok(Request { method: String::from_utf8_lossy(method).into_owned(), path, body_len })
}

/// `Content-Length`: digits only (a list of equal values, which RFC 9112 section 6.3 allows, is
/// taken as one); saturates rather than overflows, since anything that large is refused.
fn content_length(value: &[u8]) -> Option<u64> {
    let mut seen = None;
    for v in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
        if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = v.iter().fold(0u64, |n, &d| n.saturating_mul(10).saturating_add(u64::from(d - b'0')));
        if seen.is_some_and(|m| m != n) {
            return None;
        }
        seen = Some(n);
    }
    seen
}

/// The path a request target names, without its query: origin form (`/metrics?x`) or
/// absolute form (`http://host/metrics`, which RFC 9112 section 3.2.2 says a server must
/// accept). `None` for anything else, or for bytes a target cannot hold.
fn path_of(target: &[u8]) -> Option<String> {
    if target.is_empty() || !target.iter().all(|&b| b.is_ascii_graphic()) {
        return None;
    }
    let target = std::str::from_utf8(target).ok()?;
    let origin = match target.find("://") {
        Some(i) if ["http", "https"].iter().any(|s| target[..i].eq_ignore_ascii_case(s)) => {
            let after = &target[i + 3..];
            after.find(['/', '?']).map_or("/", |j| &after[j..])
        }
        _ if target.starts_with('/') => target,
        _ => return None,
    };
    let path = origin.split('?').next().unwrap_or(origin);
    Some(if path.is_empty() { "/".to_string() } else { path.to_string() })
}

/// A whole response: status line, `Content-Type`, `Content-Length`, `Connection: close`,
/// any extra fields, then the body unless `head_only` (a `HEAD` gets the length its `GET`
/// would have, and no body).
pub(crate) fn response(status: Status, content_type: &str, extra: &[(&str, &str)], body: &[u8], head_only: bool) -> Vec<u8> {
    let Status(code, reason) = status;
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in extra {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}

/// A short plain-text response for a refusal, saying why.
pub(crate) fn refusal(status: Status, extra: &[(&str, &str)], head_only: bool) -> Vec<u8> {
    let why = match status.0 {
        400 => "not a request this server can read",
        404 => "this server serves /metrics and /metrics.json",
        405 => "only GET and HEAD are served",
        408 => "the request did not arrive in time",
        413 => "this server accepts request bodies of at most 1 KiB, and reads none",
        414 => "the request line is longer than the 8 KiB this server reads",
        431 => "the request line and header fields are longer than the 8 KiB this server reads",
        501 => "request bodies in a transfer coding are not read",
        503 => "too many connections at once, or nothing left to serve",
        505 => "only HTTP/1.x is served",
        _ => "",
    };
    let body = format!("{} {}: {why}\n", status.0, status.1);
    response(status, "text/plain; charset=utf-8", extra, body.as_bytes(), head_only)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, path: &str) -> Request {
        Request { method: method.into(), path: path.into(), body_len: 0 }
    }

    #[test]
    fn the_head_ends_at_the_first_blank_line_after_the_request_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nrest"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\nHost: x\n\n"), Some(24));
        assert_eq!(head_end(b"\r\n\r\nGET / HTTP/1.1\r\n\r\n"), Some(22));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b"\r\n\r\n"), None);
    }

    #[test]
    fn requests_are_read_in_origin_and_absolute_form() {
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Ok(req("GET", "/metrics")));
        assert_eq!(parse(b"\r\nHEAD /metrics.json?x=1 HTTP/1.0\n\n"), Ok(req("HEAD", "/metrics.json")));
        assert_eq!(parse(b"GET http://127.0.0.1:9/metrics HTTP/1.1\r\n\r\n"), Ok(req("GET", "/metrics")));
        assert_eq!(parse(b"GET HTTP://h HTTP/1.1\r\n\r\n"), Ok(req("GET", "/")));
        assert_eq!(parse(b"POST /metrics HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n").map(|r| r.body_len), Ok(3));
    }

    #[test]
    fn what_rfc_9112_rejects_is_rejected() {
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1 \r\n\r\n",
            b"G(T /metrics HTTP/1.1\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTX/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET /m\xc3\xa9trics HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(parse(bad), Err(BAD_REQUEST), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse(b"GET /metrics HTTP/2.0\r\n\r\n"), Err(VERSION_NOT_SUPPORTED));
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), Err(CONTENT_TOO_LARGE));
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), Err(NOT_IMPLEMENTED));
    }

    #[test]
    fn an_unfinished_head_at_the_limit_is_414_for_a_long_target_and_431_for_long_fields() {
        assert_eq!(too_large(b"GET /aaaaaaaa"), URI_TOO_LONG);
        assert_eq!(too_large(b"\r\nGET /aaaaaaaa"), URI_TOO_LONG);
        assert_eq!(too_large(b"GET / HTTP/1.1\r\nX: aaaaaaaa"), HEADER_FIELDS_TOO_LARGE);
        assert_eq!(too_large(b"aaaaaaaaaaaa"), BAD_REQUEST);
    }

    #[test]
    fn a_head_response_has_the_length_of_the_body_it_leaves_out() {
        let get = response(OK, "text/plain", &[("Allow", "GET, HEAD")], b"hello", false);
        let head = response(OK, "text/plain", &[("Allow", "GET, HEAD")], b"hello", true);
        assert_eq!(get, [&head[..], b"hello"].concat());
        let text = String::from_utf8(head).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\n"), "{text}");
        assert!(text.contains("Content-Length: 5\r\n") && text.contains("Connection: close\r\nAllow: GET, HEAD\r\n"), "{text}");
    }
}
