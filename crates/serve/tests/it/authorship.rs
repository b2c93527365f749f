//! Evidence has an author (issue 35): a record token's cost is bounded
//! (quotas counted from the trace, bodies read only under a parse permit),
//! each batch's marker names its token and cell, a running server notices
//! its file altered under it, and no client sends a token in clear text
//! to another machine.

use std::time::{Duration, Instant};

use ratchet_serve::{Client, Endpoint, ServeOptions, is_loopback};

use crate::{A, B, Server};

fn notes(n: usize, tag: &str) -> String {
    (0..n)
        .map(|i| format!("{{\"kind\":\"note\",\"payload\":{{\"tag\":\"{tag}\",\"i\":{i}}}}}\n"))
        .collect()
}

/// `POST /v1/events` as it is answered: (status, JSON body).
fn post_events(c: &Client, body: &str, request_id: &str) -> (u16, serde_json::Value) {
    let r = c
        .request(
            "POST",
            &format!("/v1/events?request_id={request_id}"),
            "application/x-ndjson",
            body.as_bytes(),
        )
        .expect("answered");
    (r.status, r.json().expect("json"))
}

fn mint_record(s: &Server, spec: serde_json::Value) -> (String, String) {
    let mut spec = spec;
    spec["can"] = serde_json::json!(["record"]);
    let minted = s.mint_over_api(spec);
    (
        minted["token"].as_str().expect("token").to_string(),
        minted["id"].as_str().expect("id").to_string(),
    )
}

#[test]
fn a_request_past_a_quota_stores_nothing_names_the_quota_and_a_restart_does_not_reset_it() {
    let mut s = Server::start(ServeOptions::default());
    let (token, id) = mint_record(
        &s,
        serde_json::json!({ "session": "quota", "quota": { "max_events": 5 } }),
    );
    let c = s.client(&token);
    let (status, _) = post_events(&c, &notes(3, "a"), "r1");
    assert_eq!(status, 200);
    let before = s.size();
    let (status, err) = post_events(&c, &notes(3, "b"), "r2");
    assert_eq!(status, 429, "{err}");
    assert_eq!(err["error"]["kind"], "over_quota", "{err}");
    assert_eq!(err["error"]["quota"], "max_events", "{err}");
    let message = err["error"]["message"].as_str().expect("message");
    assert!(
        message.contains(&id) && message.contains("nothing was stored"),
        "{message}"
    );
    assert_eq!(s.size(), before, "nothing of the refused request stored");
    // A retry of what was stored is still answered as stored.
    let (status, v) = post_events(&c, &notes(3, "a"), "r1");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["already_recorded"], true);

    // The totals are read from the trace: a new server counts the same.
    s.restart(ServeOptions::default());
    let c = s.client(&token);
    let (status, err) = post_events(&c, &notes(3, "c"), "r3");
    assert_eq!(status, 429, "{err}");
    assert_eq!(err["error"]["quota"], "max_events");
    let (status, v) = post_events(&c, &notes(2, "d"), "r4");
    assert_eq!(status, 200, "up to the quota exactly: {v}");
    let (status, err) = post_events(&c, &notes(1, "e"), "r5");
    assert_eq!(status, 429, "{err}");
}

#[test]
fn bytes_per_hour_and_max_bytes_count_what_was_sent() {
    let s = Server::start(ServeOptions::default());
    let body = notes(10, "x");
    let (token, _) = mint_record(
        &s,
        serde_json::json!({ "session": "bytes", "quota": { "bytes_per_hour": body.len() * 2 + 1 } }),
    );
    let c = s.client(&token);
    assert_eq!(post_events(&c, &body, "1").0, 200);
    assert_eq!(post_events(&c, &body, "2").0, 200);
    let (status, err) = post_events(&c, &body, "3");
    assert_eq!(status, 429, "{err}");
    assert_eq!(err["error"]["quota"], "bytes_per_hour", "{err}");
    let message = err["error"]["message"].as_str().expect("message");
    assert!(message.contains("leaves it in"), "says when: {message}");

    let (token, _) = mint_record(
        &s,
        serde_json::json!({ "session": "bytes2", "quota": { "max_bytes": 100 } }),
    );
    let (status, err) = post_events(&s.client(&token), &body, "1");
    assert_eq!(status, 429, "{err}");
    assert_eq!(err["error"]["quota"], "max_bytes", "{err}");
}

#[test]
fn an_upload_past_the_events_per_hour_quota_stores_nothing() {
    let s = Server::start(ServeOptions::default());
    let (token, _) = mint_record(
        &s,
        serde_json::json!({ "session": "up", "quota": { "events_per_hour": 3 } }),
    );
    let lines: String = (0..4)
        .map(|i| {
            format!("{{\"task\":\"t{i}\",\"scorer\":\"acc\",\"value\":0.5,\"commit\":\"{A}\"}}\n")
        })
        .collect();
    let before = s.size();
    let r = s
        .client(&token)
        .request(
            "POST",
            "/v1/ingest/jsonl?request_id=u1",
            "application/octet-stream",
            lines.as_bytes(),
        )
        .expect("answered");
    let err = r.json().expect("json");
    assert_eq!(r.status, 429, "{err}");
    assert_eq!(err["error"]["quota"], "events_per_hour", "{err}");
    assert_eq!(s.size(), before, "nothing stored");
}

#[test]
fn each_batch_s_marker_names_its_token_its_cell_and_its_size() {
    let s = Server::start(ServeOptions::default());
    let (token, id) = mint_record(
        &s,
        serde_json::json!({ "session": "cell7", "cell": "runner-7" }),
    );
    let c = s.client(&token);
    let body = notes(2, "m");
    c.record_events(&body).expect("events");
    let lines = format!("{{\"task\":\"t\",\"scorer\":\"acc\",\"value\":0.5,\"commit\":\"{B}\"}}\n");
    c.ingest("jsonl", &[], lines.as_bytes()).expect("ingest");
    // And without a request id (a hand-rolled client): marked too.
    assert_eq!(
        c.request(
            "POST",
            "/v1/events",
            "application/x-ndjson",
            body.as_bytes()
        )
        .expect("answered")
        .status,
        200
    );
    let markers = s.reopen().events_of_kinds(&["ingest"]).expect("markers");
    let sessions: Vec<&str> = markers.iter().map(|e| e.session.as_str()).collect();
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    let events_prefix = format!("ingest:serve:{id}:{}:runner-7:events:", body.len());
    let ingest_prefix = format!("ingest:serve:{id}:{}:runner-7:ingest:", lines.len());
    assert!(sessions[0].starts_with(&events_prefix), "{sessions:?}");
    assert!(sessions[1].starts_with(&ingest_prefix), "{sessions:?}");
    assert!(sessions[2].starts_with(&events_prefix), "{sessions:?}");
    // The marker counts the batch's events; the events themselves are
    // stored as before, under the token's session.
    let payload: serde_json::Value = serde_json::from_slice(&markers[0].payload).expect("json");
    assert_eq!(payload["events"], 2);
    // A cell that would break the stamp is refused at mint.
    let r = s
        .client(&s.admin)
        .request(
            "POST",
            "/v1/tokens",
            "application/json",
            br#"{"can":["record"],"session":"x","cell":"a:b"}"#,
        )
        .expect("answered");
    assert_eq!(r.status, 400, "{:?}", r.json());
}

#[test]
fn at_most_max_parsing_bodies_are_in_memory_at_once() {
    let options = ServeOptions {
        max_parsing: 2,
        ..ServeOptions::default()
    };
    let s = Server::start(options);
    let body = notes(4000, "load");
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let c = s.client(&s.record);
                let body = &body;
                scope.spawn(move || post_events(&c, body, &format!("p{i}")).0)
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("thread"), 200);
        }
    });
    let status = s.client(&s.admin).get_json("/v1/status").expect("status");
    let peak = status["bodies_in_memory_peak"].as_u64().expect("peak");
    assert!((1..=2).contains(&peak), "{peak} bodies held at once");
}

/// Flips one byte of `needle` wherever the store's files hold it.
fn edit_a_byte(store_dir: &std::path::Path, needle: &[u8]) -> bool {
    let mut edited = false;
    for name in [
        ratchet_trace::DB_FILE.to_string(),
        format!("{}-wal", ratchet_trace::DB_FILE),
    ] {
        let path = store_dir.join(name);
        let Ok(mut bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut at = 0;
        while let Some(i) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
            let i = at + i;
            bytes[i + needle.len() - 1] ^= 0x01;
            at = i + needle.len();
            edited = true;
        }
        if edited {
            std::fs::write(&path, &bytes).expect("write");
        }
    }
    edited
}

#[test]
fn a_byte_edited_under_a_running_server_stops_decisions_and_writes_and_status_says_so() {
    let options = ServeOptions {
        reverify_every: Some(Duration::from_millis(50)),
        ..ServeOptions::default()
    };
    let s = Server::start(options);
    let admin = s.client(&s.admin);
    let status = admin.get_json("/v1/status").expect("status");
    assert!(
        status["reverification"]["fault"].is_null(),
        "{}",
        status["reverification"]
    );
    s.client(&s.record)
        .record_events("{\"kind\":\"note\",\"payload\":{\"m\":\"TAMPERME0001\"}}\n")
        .expect("recorded");
    assert!(
        edit_a_byte(&s.store_dir, b"TAMPERME0001"),
        "the note is in the files"
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let fault = loop {
        let status = admin.get_json("/v1/status").expect("status");
        if let Some(f) = status["reverification"]["fault"].as_str() {
            break f.to_string();
        }
        assert!(Instant::now() < deadline, "no fault found: {status}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!fault.is_empty());
    let r = s
        .client(&s.decide)
        .request(
            "POST",
            "/v1/decide",
            "application/json",
            format!("{{\"class\":\"prompt\",\"baseline\":\"{A}\",\"candidate\":\"{B}\"}}")
                .as_bytes(),
        )
        .expect("answered");
    let err = r.json().expect("json");
    assert_eq!(r.status, 503, "{err}");
    assert_eq!(err["error"]["kind"], "faulted");
    assert!(
        err["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("restart")),
        "{err}"
    );
    let (status, err) = post_events(&s.client(&s.record), &notes(1, "late"), "late");
    assert_eq!(status, 503, "{err}");
}

#[test]
fn no_client_sends_a_token_over_plain_http_to_another_machine() {
    for (addr, local) in [
        ("127.0.0.1:8787", true),
        ("127.3.4.5:1", true),
        ("[::1]:8787", true),
        ("localhost:8787", true),
        ("LOCALHOST.:8787", true),
        ("10.0.0.1:8787", false),
        ("192.168.1.2:80", false),
        ("example.com:8787", false),
        ("localhost.example.com:80", false),
        ("[::2]:8787", false),
        ("[::ffff:10.0.0.1]:80", false),
    ] {
        assert_eq!(is_loopback(addr), local, "{addr}");
    }
    // Refused before any connection is tried (nothing listens there).
    let c = Client::new(Endpoint::parse("http://10.255.255.1:9"), "rtk_x_y");
    let started = Instant::now();
    let err = c.get_json("/v1/status").expect_err("refused");
    let message = err.to_string();
    assert!(
        message.contains("refusing to send the token") && message.contains("loopback"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no connection was attempted"
    );
}
