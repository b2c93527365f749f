//! A caller without a valid token costs the server little: it is answered
//! from its headers before any body is read, guessing is slowed while valid
//! tokens are served, and idle connections beyond the cap wait in the
//! backlog instead of costing memory.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use ratchet_serve::ServeOptions;

use crate::{Server, assert_refused, kind, raw};

/// Reads one response's head (status line and headers) from `s`.
fn response_head(s: &mut UnixStream) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            Ok(_) => break,
            Err(e) => panic!(
                "no response head (read so far {:?}): {e}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn a_bad_token_is_refused_from_the_headers_before_its_body_is_sent() {
    let s = Server::start(ServeOptions::default());
    let before = s.size();
    let mut c = UnixStream::connect(&s.socket).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    // Announces 16 MB and sends none of it: the answer must not wait for it.
    c.write_all(
        b"POST /v1/ingest/jsonl HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rtk_0000000000000000_abcd\r\nContent-Length: 16000000\r\n\r\n",
    )
    .expect("headers");
    let head = response_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "a failed authentication ends the connection: {head}"
    );
    // The same with no Authorization header at all.
    let mut c = UnixStream::connect(&s.socket).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    c.write_all(b"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n")
        .expect("headers");
    let head = response_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert_eq!(s.size(), before);
}

#[test]
fn guessing_tokens_is_slowed_and_valid_tokens_are_still_served() {
    let s = Server::start(ServeOptions {
        failed_auth_per_second: 0.001,
        failed_auth_burst: 3.0,
        ..ServeOptions::default()
    });
    let guess = |i: u32| {
        s.client(&format!("rtk_{i:016x}_{}", "0".repeat(64)))
            .request("GET", "/v1/status", "application/json", b"")
            .expect("answer")
    };
    for i in 0..3 {
        let r = guess(i);
        assert_eq!(
            (r.status, kind(&r).as_str()),
            (401, "unauthorized"),
            "{r:?}"
        );
    }
    // Over the rate: each further failure waits a second, then 429.
    let started = Instant::now();
    let r = guess(3);
    assert_refused(
        &r,
        (429, "rate_limited"),
        "failed authentications",
        "the fourth guess",
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the failure was answered after a pause ({:?})",
        started.elapsed()
    );
    // A valid token is not slowed by someone else's guessing.
    let v = s
        .client(&s.read)
        .get_json("/v1/status")
        .expect("valid tokens are served");
    assert!(v["verification"]["fault"].is_null(), "{v}");
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    let s = Server::start(ServeOptions {
        max_connections: 2,
        ..ServeOptions::default()
    });
    let idle: Vec<UnixStream> = (0..2)
        .map(|_| UnixStream::connect(&s.socket).expect("connect"))
        .collect();
    let (status, _) = {
        let mut third = UnixStream::connect(&s.socket).expect("the backlog takes it");
        third
            .set_read_timeout(Some(Duration::from_millis(1500)))
            .expect("timeout");
        third
            .write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("request");
        let mut buf = [0u8; 64];
        // While two connections hold both places, nothing is answered.
        match third.read(&mut buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Ok(n) => panic!(
                "answered past the cap: {:?}",
                String::from_utf8_lossy(&buf[..n])
            ),
            Err(e) => panic!("{e}"),
        }
        drop(idle);
        third
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        let mut rest = Vec::new();
        let _ = third.read_to_end(&mut rest);
        let text = String::from_utf8_lossy(&rest).into_owned();
        let status: u16 = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, text)
    };
    assert_eq!(status, 200, "served once a place was free");
    let (status, body) = raw(
        &s.socket,
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_refused_tcp_address_leaves_no_socket_file_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        ratchet_trace::Store::create(dir.path().join("s"), Default::default()).expect("store");
    let owner = std::sync::Arc::new(
        ratchet_serve::Owner::new(store, ServeOptions::default()).expect("owner"),
    );
    let socket = dir.path().join("s.sock");
    let listen = [
        ratchet_serve::Listen::Unix(socket.clone()),
        ratchet_serve::Listen::Tcp("0.0.0.0:0".parse().expect("addr")),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let r = rt.block_on(ratchet_serve::serve(
        owner,
        &listen,
        Duration::from_secs(1),
        |_| {},
        std::future::pending(),
    ));
    match r {
        Err(ratchet_serve::Error::BadRequest(m)) => assert!(m.contains("loopback"), "{m}"),
        other => panic!("expected the address refused, got {other:?}"),
    }
    assert!(!socket.exists(), "no socket file left behind");
}

#[test]
fn the_client_reads_an_answer_the_server_gave_before_the_body_was_in() {
    let s = Server::start(ServeOptions::default());
    // 8 MiB the server never reads: it answers from the headers and
    // closes while the client is still writing.
    let big = vec![b' '; 8 << 20];
    let r = s
        .client("rtk_0000000000000000_abcd")
        .request("POST", "/v1/ingest/jsonl", "application/octet-stream", &big)
        .expect("the early answer, not a broken pipe");
    assert_eq!(
        (r.status, kind(&r).as_str()),
        (401, "unauthorized"),
        "{r:?}"
    );
}
