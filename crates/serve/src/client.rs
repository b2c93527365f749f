//! A small blocking client of the server (what the CLI's `--server` uses):
//! HTTP/1.1, one request per connection, over a Unix socket or loopback
//! TCP. Writes carry a request id the client chooses, so a retry after a
//! dropped connection is stored once.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::{Error, Result};

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket path.
    Unix(PathBuf),
    /// `host:port` over TCP.
    Tcp(String),
}

impl Endpoint {
    /// `http://host:port` (or `host:port`) is TCP; anything else a socket path.
    pub fn parse(text: &str) -> Endpoint {
        match text.strip_prefix("http://") {
            Some(rest) => Endpoint::Tcp(rest.trim_end_matches('/').to_string()),
            None if text.contains(':') && !text.contains('/') => Endpoint::Tcp(text.to_string()),
            None => Endpoint::Unix(PathBuf::from(text)),
        }
    }
}

/// A server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON.
    ///
    /// # Errors
    /// [`Error::BadRequest`] if it is not JSON.
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Error::BadRequest(format!("the server's answer is not JSON: {e}")))
    }

    /// The body as JSON when the status is 2xx; the server's error message
    /// otherwise.
    ///
    /// # Errors
    /// [`Error::BadRequest`] (4xx) or [`Error::Internal`] (5xx) carrying the
    /// server's message.
    pub fn ok_json(&self) -> Result<serde_json::Value> {
        if (200..300).contains(&self.status) {
            return self.json();
        }
        let message = self
            .json()
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&self.body).into_owned());
        let text = format!("the server answered {}: {message}", self.status);
        Err(match self.status {
            401 => Error::Unauthorized(text),
            403 => Error::Forbidden(text),
            429 => Error::RateLimited(text),
            507 => Error::StorageFull(text),
            s if s >= 500 => Error::Internal(text),
            _ => Error::BadRequest(text),
        })
    }
}

/// A client holding one token.
#[derive(Debug, Clone)]
pub struct Client {
    endpoint: Endpoint,
    token: String,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// Attempts for a request that failed to connect or lost its answer
    /// (writes are retried under the same request id).
    pub attempts: u32,
}

impl Client {
    /// A client of the server at `endpoint`, with `token`.
    pub fn new(endpoint: Endpoint, token: impl Into<String>) -> Client {
        Client {
            endpoint,
            token: token.into().trim().to_string(),
            timeout: Duration::from_secs(60),
            attempts: 5,
        }
    }

    /// Sends one request. A request that cannot have been stored twice (a
    /// `GET`, or a write carrying `request_id=`) is retried after any
    /// failure short of an answer; any other (a decision, a mint) only when
    /// the connection could not be made, so it is never sent twice. Nothing
    /// is retried once the server answered, whatever it answered.
    ///
    /// # Errors
    /// [`Error::Io`] if no attempt reached the server.
    pub fn request(
        &self,
        method: &str,
        path_and_query: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<Response> {
        if let Endpoint::Tcp(addr) = &self.endpoint
            && !self.token.is_empty()
            && !is_loopback(addr)
        {
            return Err(Error::BadRequest(format!(
                "refusing to send the token in clear text to http://{addr}: plain HTTP carries a bearer token only to a loopback address (127.0.0.0/8, ::1, localhost) or over a Unix socket; reach a remote server through a tunnel or TLS proxy that ends on this machine's loopback"
            )));
        }
        let repeatable = method == "GET" || path_and_query.contains("request_id=");
        let mut last = None;
        for attempt in 0..self.attempts.max(1) {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(50 << attempt.min(5)));
            }
            match self.once(method, path_and_query, content_type, body) {
                Ok(r) => return Ok(r),
                Err(Failure::Connect(e)) => last = Some(e),
                Err(Failure::AfterSending(e)) if repeatable => last = Some(e),
                Err(Failure::AfterSending(e)) => {
                    return Err(Error::Io {
                        what: format!(
                            "{method} {path_and_query}: the connection failed after the request was sent (not retried: it may have been carried out)"
                        ),
                        source: e,
                    });
                }
            }
        }
        Err(Error::Io {
            what: format!("{method} {path_and_query} to {:?}", self.endpoint),
            source: last.unwrap_or_else(|| std::io::Error::other("no attempt made")),
        })
    }

    fn once(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> std::result::Result<Response, Failure> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: ratchet\r\nAuthorization: Bearer {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.token,
            body.len()
        );
        let mut raw = Vec::new();
        let mut stream: Box<dyn ReadWrite> = match &self.endpoint {
            Endpoint::Unix(p) => {
                Box::new(std::os::unix::net::UnixStream::connect(p).map_err(Failure::Connect)?)
            }
            Endpoint::Tcp(addr) => {
                Box::new(std::net::TcpStream::connect(addr).map_err(Failure::Connect)?)
            }
        };
        stream.timeouts(self.timeout).map_err(Failure::Connect)?;
        // One write for the head and the body: a server that answers from
        // the headers alone (a refused token, a rate limit) and closes
        // finds the whole request already sent, most of the time.
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        let sent = stream.write_all(&request);
        // And when it closed before the body was all in, its answer is
        // still there to read: an early answer is the answer.
        let read = stream.read_to_end(&mut raw);
        match parse_response(&raw) {
            Ok(r) => Ok(r),
            Err(unparsed) => Err(Failure::AfterSending(
                sent.err().or(read.err()).unwrap_or(unparsed),
            )),
        }
    }

    /// `GET path` as JSON.
    ///
    /// # Errors
    /// As [`Client::request`] and [`Response::ok_json`].
    pub fn get_json(&self, path: &str) -> Result<serde_json::Value> {
        self.request("GET", path, "application/json", &[])?
            .ok_json()
    }

    /// `POST path` of a JSON body, answered in JSON.
    ///
    /// # Errors
    /// As [`Client::request`] and [`Response::ok_json`].
    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<serde_json::Value> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| Error::BadRequest(format!("serializing the request: {e}")))?;
        self.request("POST", path, "application/json", &bytes)?
            .ok_json()
    }

    /// Records events (JSON Lines of the append format) once, however often
    /// the connection drops: the request id is chosen here.
    ///
    /// # Errors
    /// As [`Client::request`] and [`Response::ok_json`].
    pub fn record_events(&self, lines: &str) -> Result<serde_json::Value> {
        let id = ulid::Ulid::new().to_string();
        self.request(
            "POST",
            &format!("/v1/events?request_id={id}"),
            "application/x-ndjson",
            lines.as_bytes(),
        )?
        .ok_json()
    }

    /// Uploads one report for ingestion, once (a request id chosen here).
    /// `query` holds `commit=…&suite=…` pairs, already encoded.
    ///
    /// # Errors
    /// As [`Client::request`] and [`Response::ok_json`].
    pub fn ingest(
        &self,
        format: &str,
        query: &[(&str, &str)],
        body: &[u8],
    ) -> Result<serde_json::Value> {
        let id = ulid::Ulid::new().to_string();
        let mut query_string = format!("request_id={id}");
        for (k, v) in query {
            query_string.push('&');
            query_string.push_str(k);
            query_string.push('=');
            query_string.push_str(&encode(v));
        }
        self.request(
            "POST",
            &format!("/v1/ingest/{format}?{query_string}"),
            "application/octet-stream",
            body,
        )?
        .ok_json()
    }
}

/// Whether `host:port` (or `[v6]:port`, or a bare host) names this
/// machine: 127.0.0.0/8, ::1 or `localhost` (any case, with or without a
/// trailing dot). Anything else — another name that may resolve anywhere
/// included — is not.
pub fn is_loopback(addr: &str) -> bool {
    let host = if let Some(rest) = addr.strip_prefix('[') {
        match rest.split_once(']') {
            Some((h, _)) => h,
            None => return false,
        }
    } else {
        match addr.rsplit_once(':') {
            // A bare IPv6 address has colons of its own.
            Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => addr,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Why one attempt failed: before anything was sent, or after.
enum Failure {
    Connect(std::io::Error),
    AfterSending(std::io::Error),
}

trait ReadWrite: Read + Write {
    fn timeouts(&self, t: Duration) -> std::io::Result<()>;
}

impl ReadWrite for std::os::unix::net::UnixStream {
    fn timeouts(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

impl ReadWrite for std::net::TcpStream {
    fn timeouts(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

/// Percent-encodes a query value.
pub(crate) fn encode(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn parse_response(raw: &[u8]) -> std::io::Result<Response> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("the answer ended before its headers did"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("headers are not text"))?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k == "content-length" {
            length = v.parse::<usize>().ok();
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest).ok_or_else(|| bad("a malformed chunked body"))?
    } else if let Some(n) = length {
        if rest.len() < n {
            return Err(bad("the answer was cut short"));
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if rest.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
