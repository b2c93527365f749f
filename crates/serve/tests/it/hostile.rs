//! Bad input and hostile clients: each gets a JSON error naming what was
//! wrong, nothing is stored, and the server keeps serving.

use std::io::Write;
use std::time::Duration;

use ratchet_serve::ServeOptions;

use crate::{A, B, Server, kind, post_events, raw, score_line, upload};

fn still_serving(s: &Server) {
    let v = s
        .client(&s.read)
        .get_json("/v1/status")
        .expect("still serving");
    assert!(v["verification"]["fault"].is_null(), "{v}");
}

#[test]
fn wrong_malformed_revoked_and_expired_tokens_are_refused_at_once() {
    let s = Server::start(ServeOptions::default());
    let line = score_line(A, "t1", 0.5);
    // The last hex digit of the secret changed (to another digit, always).
    let last = if s.record.ends_with('0') { '1' } else { '0' };
    let wrong_secret = format!("{}{last}", &s.record[..s.record.len() - 1]);
    for (token, status) in [
        ("", 401),
        ("not-a-token", 401),
        ("rtk_nothing", 401),
        ("rtk_0000000000000000_abcd", 401),
        (wrong_secret.as_str(), 401),
    ] {
        let r = upload(&s.client(token), "/v1/ingest/jsonl", line.as_bytes());
        assert_eq!(
            (r.status, kind(&r).as_str()),
            (status, "unauthorized"),
            "{token:?}: {r:?}"
        );
    }
    // No header at all.
    let (status, body) = raw(
        &s.socket,
        b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization"), "{body}");

    // Revoked: the very next request is refused.
    let rec = s.client(&s.record);
    rec.ingest("jsonl", &[], line.as_bytes())
        .expect("works before");
    s.client(&s.admin)
        .request(
            "DELETE",
            &format!("/v1/tokens/{}", s.record_id),
            "application/json",
            b"",
        )
        .expect("revoke")
        .ok_json()
        .expect("revoked");
    let before = s.size();
    let r = upload(
        &rec,
        "/v1/ingest/jsonl",
        score_line(A, "t2", 0.5).as_bytes(),
    );
    assert_eq!((r.status, kind(&r).as_str()), (403, "forbidden"), "{r:?}");
    assert!(String::from_utf8_lossy(&r.body).contains("revoked"));
    assert_eq!(s.size(), before);

    // Expired: minted to live half a second.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let minted = s.mint_over_api(
        serde_json::json!({"can": ["record"], "session": "brief", "expires_at_ms": now_ms + 500}),
    );
    std::thread::sleep(Duration::from_millis(800));
    let token = minted["token"].as_str().expect("token");
    let r = upload(&s.client(token), "/v1/ingest/jsonl", line.as_bytes());
    assert_eq!((r.status, kind(&r).as_str()), (403, "forbidden"), "{r:?}");
    assert!(String::from_utf8_lossy(&r.body).contains("expired"));
    still_serving(&s);
}

#[test]
fn malformed_bodies_are_clear_errors_and_store_nothing() {
    let s = Server::start(ServeOptions::default());
    let before = s.size();
    let rec = s.client(&s.record);
    let dec = s.client(&s.decide);
    let cases: [(&ratchet_serve::Client, &str, &str, &[u8], &str); 6] = [
        (&dec, "POST", "/v1/decide", b"{not json", "decide request"),
        (
            &dec,
            "POST",
            "/v1/decide",
            br#"{"class":"p","baseline":"HEAD","candidate":"x"}"#,
            "baseline",
        ),
        (
            &dec,
            "POST",
            "/v1/decide",
            br#"{"class":"p","oops":1}"#,
            "oops",
        ),
        (
            &rec,
            "POST",
            "/v1/events",
            b"{\"kind\":\"note\"}\n",
            "line 1",
        ),
        (
            &rec,
            "POST",
            "/v1/ingest/jsonl",
            b"{\"task\":1}\n",
            "line 1",
        ),
        (&rec, "POST", "/v1/ingest/nonsense", b"x", "nonsense"),
    ];
    for (client, method, path, body, names) in cases {
        let r = client
            .request(method, path, "application/json", body)
            .expect("answer");
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert_eq!(
            (r.status, kind(&r).as_str()),
            (400, "bad_request"),
            "{path}: {text}"
        );
        assert!(
            text.contains(names),
            "{path}: the error names {names:?}: {text}"
        );
    }
    // A bad query parameter.
    let r = upload(&rec, "/v1/ingest/jsonl?colour=blue", b"");
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(s.size(), before, "nothing of any bad request was stored");
    still_serving(&s);
}

#[test]
fn an_oversized_body_is_413_and_a_flood_is_429() {
    let s = Server::start(ServeOptions {
        max_body_bytes: 4096,
        rate_per_second: 0.5,
        burst: 3.0,
        ..ServeOptions::default()
    });
    let rec = s.client(&s.record);
    let before = s.size();
    let big: String = (0..200)
        .map(|i| score_line(A, &format!("t{i}"), 0.5))
        .collect();
    assert!(big.len() > 4096);
    let r = upload(&rec, "/v1/ingest/jsonl", big.as_bytes());
    assert_eq!((r.status, kind(&r).as_str()), (413, "too_large"), "{r:?}");
    assert_eq!(s.size(), before);
    // The burst is 3 (the 413 above was one): the third request after it is refused.
    let mut statuses = Vec::new();
    for i in 0..4 {
        let r = upload(
            &rec,
            "/v1/ingest/jsonl",
            score_line(A, &format!("r{i}"), 0.5).as_bytes(),
        );
        statuses.push(r.status);
        if r.status == 429 {
            assert_eq!(kind(&r), "rate_limited");
        }
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    // The limit is per token: another token is served meanwhile.
    still_serving(&s);
}

#[test]
fn a_slow_client_is_timed_out_without_holding_the_server() {
    let s = Server::start(ServeOptions {
        request_timeout: Duration::from_secs(1),
        header_timeout: Duration::from_secs(1),
        ..ServeOptions::default()
    });
    // Headers that never end: the connection is closed by the server.
    let mut slow = std::os::unix::net::UnixStream::connect(&s.socket).expect("connect");
    slow.write_all(b"POST /v1/events HTTP/1.1\r\nHost: x\r\n")
        .expect("write");
    // A body promised and never sent: 408.
    let mut body_slow = std::os::unix::net::UnixStream::connect(&s.socket).expect("connect");
    let head = format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{",
        s.record
    );
    body_slow.write_all(head.as_bytes()).expect("write");
    // Meanwhile others are served.
    still_serving(&s);
    use std::io::Read;
    body_slow
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut answer = Vec::new();
    let _ = body_slow.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("timeout"), "{answer}");
    slow.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut rest = Vec::new();
    // The server hangs up on the header-less client (EOF, or a 408 first).
    let _ = slow.read_to_end(&mut rest);
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.is_empty() || rest.contains("408"), "{rest}");
    still_serving(&s);
}

#[test]
fn a_retried_request_id_is_stored_once() {
    let s = Server::start(ServeOptions::default());
    let rec = s.client(&s.record);
    let lines = format!("{}{}", score_line(A, "t1", 0.5), score_line(A, "t2", 0.7));
    let first = upload(
        &rec,
        "/v1/ingest/jsonl?request_id=batch-7",
        lines.as_bytes(),
    )
    .ok_json()
    .expect("first");
    let size = s.size();
    let again = upload(
        &rec,
        "/v1/ingest/jsonl?request_id=batch-7",
        lines.as_bytes(),
    )
    .ok_json()
    .expect("retry");
    assert!(first["ingest"]["scores"] == 2, "{first}");
    assert!(again["ingest"]["already_ingested_at"].is_u64(), "{again}");
    assert_eq!(s.size(), size, "the retry stored nothing");
    // Plain events too.
    let ev = "{\"kind\":\"note\",\"payload\":{\"n\":1}}\n";
    for _ in 0..2 {
        post_events(&rec, "/v1/events?request_id=e-1", ev.as_bytes())
            .ok_json()
            .expect("ok");
    }
    let notes = s.count_of("note");
    assert_eq!(notes, 1);
    // Equal content under two ids counts twice (two real batches).
    post_events(&rec, "/v1/events?request_id=e-2", ev.as_bytes())
        .ok_json()
        .expect("ok");
    assert_eq!(s.count_of("note"), 2);
}

#[test]
fn what_clients_send_loosely_is_read_as_meant_and_server_paths_stay_private() {
    let s = Server::start(ServeOptions::default());
    // The scheme name is case-insensitive.
    let (status, body) = raw(
        &s.socket,
        format!(
            "GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: bearer {}\r\nConnection: close\r\n\r\n",
            s.read
        )
        .as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    // A token that would be born expired is refused.
    let r = s
        .client(&s.admin)
        .request(
            "POST",
            "/v1/tokens",
            "application/json",
            br#"{"can":["record"],"session":"x","expires_at_ms":1}"#,
        )
        .expect("answer");
    assert_eq!((r.status, kind(&r).as_str()), (400, "bad_request"), "{r:?}");
    // An ingestion error names the client's file, never the server's spool.
    let r = upload(
        &s.client(&s.record),
        &format!("/v1/ingest/junit?name=report.xml&commit={A}"),
        b"<not-junit/>",
    );
    let text = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 400, "{text}");
    assert!(
        text.contains("report.xml") && !text.contains("ratchet-serve-"),
        "{text}"
    );
    // One request id reused for other events stores them (nothing dropped).
    let rec = s.client(&s.record);
    for n in 0..2 {
        let line = format!("{{\"kind\":\"note\",\"payload\":{{\"n\":{n}}}}}\n");
        post_events(&rec, "/v1/events?request_id=same", line.as_bytes())
            .ok_json()
            .expect("ok");
    }
    assert_eq!(s.count_of("note"), 2);
}

#[test]
fn the_same_upload_from_two_sessions_counts_once_for_each() {
    let s = Server::start(ServeOptions::default());
    let minted = s.mint_over_api(serde_json::json!({"can": ["record"], "session": "cell-2"}));
    let other = s.client(minted["token"].as_str().expect("token"));
    let mine = s.client(&s.record);
    let line = score_line(A, "t1", 0.5);
    // Without a request id an upload is keyed by its content, per session:
    // one writer sending first cannot make another's evidence "already
    // recorded" and so keep it out of the other's session.
    let upload = |c: &ratchet_serve::Client| {
        upload(c, "/v1/ingest/jsonl", line.as_bytes())
            .ok_json()
            .expect("ingested")
    };
    assert_eq!(upload(&other)["already_recorded"], false);
    assert_eq!(upload(&mine)["already_recorded"], false);
    assert_eq!(
        upload(&mine)["already_recorded"],
        true,
        "a retry counts once"
    );
    let mut sessions: Vec<String> = s
        .reopen()
        .events_of_kinds(&["score"])
        .expect("scores")
        .into_iter()
        .map(|e| e.session)
        .collect();
    sessions.sort();
    assert_eq!(sessions, ["cell-1", "cell-2"]);
}

#[test]
fn a_payload_number_no_reader_can_hold_is_refused_and_reads_keep_working() {
    let s = Server::start(ServeOptions::default());
    let before = s.size();
    let r = post_events(
        &s.client(&s.record),
        "/v1/events",
        b"{\"kind\":\"note\",\"payload\":{\"x\":1e999}}\n",
    );
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(
        (r.status, kind(&r).as_str()),
        (400, "bad_request"),
        "{text}"
    );
    assert!(
        text.contains("payload") && text.contains("out of range"),
        "{text}"
    );
    assert_eq!(s.size(), before);
    let v = s
        .client(&s.read)
        .get_json("/v1/decisions")
        .expect("reads work");
    assert!(v["events"].is_array(), "{v}");
}

#[test]
fn revoking_a_revoked_token_is_a_conflict_and_appends_nothing() {
    let s = Server::start(ServeOptions::default());
    let admin = s.client(&s.admin);
    let path = format!("/v1/tokens/{}", s.record_id);
    let first = admin
        .request("DELETE", &path, "application/json", b"")
        .expect("answer")
        .ok_json()
        .expect("revoked");
    let seq = first["receipts"][0]["seq"].as_u64().expect("seq");
    let before = s.size();
    let r = admin
        .request("DELETE", &path, "application/json", b"")
        .expect("answer");
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(
        (r.status, kind(&r).as_str()),
        (409, "already_revoked"),
        "{text}"
    );
    assert!(text.contains(&format!("at seq {seq}")), "{text}");
    assert_eq!(s.size(), before);
}

/// An Inspect `.eval` archive whose one sample deflates 64 MiB of spaces.
fn zip_bomb() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("header.json", deflated).expect("entry");
    zip.write_all(br#"{"eval": {"task": "bomb"}, "status": "success"}"#)
        .expect("header");
    zip.start_file("samples/1_epoch_1.json", deflated)
        .expect("entry");
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..64 {
        zip.write_all(&spaces).expect("spaces");
    }
    zip.write_all(b"{}").expect("end");
    zip.finish().expect("finish").into_inner()
}

#[test]
fn an_upload_that_inflates_past_its_share_is_refused_and_the_server_keeps_serving() {
    let s = Server::start(ServeOptions {
        max_body_bytes: 1 << 20,
        ..ServeOptions::default()
    });
    let before = s.size();
    let bomb = zip_bomb();
    assert!(
        bomb.len() < 1 << 20,
        "within the body limit: {}",
        bomb.len()
    );
    let r = upload(
        &s.client(&s.record),
        &format!("/v1/ingest/inspect?commit={A}&name=bomb.eval"),
        &bomb,
    );
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(
        (r.status, kind(&r).as_str()),
        (400, "bad_request"),
        "{text}"
    );
    assert!(text.contains("inflates past 8388608 bytes"), "{text}");
    assert!(
        text.contains("bomb.eval"),
        "names the client's file: {text}"
    );
    assert_eq!(s.size(), before);
    still_serving(&s);
}

#[test]
fn a_request_id_reused_for_other_evidence_stores_it() {
    let s = Server::start(ServeOptions::default());
    let rec = s.client(&s.record);
    let report = r#"<testsuite name="unit" tests="1"><testcase name="a"/></testsuite>"#;
    let upload = |commit: &str| {
        upload(
            &rec,
            &format!("/v1/ingest/junit?commit={commit}&request_id=r1"),
            report.as_bytes(),
        )
        .ok_json()
        .expect("ingested")
    };
    assert_eq!(upload(A)["already_recorded"], false);
    // The same id and body for another commit is other evidence.
    assert_eq!(upload(B)["already_recorded"], false);
    // The same request again is a retry.
    assert_eq!(upload(B)["already_recorded"], true);
    let runs = s.reopen().events_of_kinds(&["test_run"]).expect("runs");
    assert_eq!(runs.len(), 2, "{runs:?}");
}
