//! What each token can and cannot do: the threat model's row for the
//! holder of a `record` token, tested route by route.

use ratchet_serve::{ROUTES, ServeOptions};

use crate::{A, B, Server, assert_refused, kind, post_events, score_line, upload};

#[test]
fn a_record_token_records_under_its_own_session_only() {
    let s = Server::start(ServeOptions::default());
    let c = s.client(&s.record);
    let doc = c
        .ingest("jsonl", &[], score_line(A, "t1", 0.5).as_bytes())
        .expect("record");
    assert!(
        !doc["receipts"].as_array().is_none_or(Vec::is_empty),
        "{doc}"
    );
    let doc = c
        .record_events("{\"kind\":\"note\",\"payload\":{\"n\":1}}\n")
        .expect("append");
    let seq = doc["receipts"][0]["seq"].as_u64().expect("seq");
    let store = s.reopen();
    let e = store.event_by_seq(seq).expect("read").expect("event");
    assert_eq!(e.session, "cell-1", "the server sets the token's session");

    // A line naming another session is refused, and nothing is stored.
    let before = s.size();
    let r = post_events(&c, "/v1/events", b"{\"kind\":\"note\",\"payload\":{}}\n{\"kind\":\"note\",\"session\":\"cell-2\",\"payload\":{}}\n");
    assert_refused(&r, (403, "forbidden"), "cell-2", "another session's line");
    // Reserved kinds: refused whole, naming their owner.
    for reserved in ["decision", "capability", "policy", "promotion", "scorer"] {
        let line = format!("{{\"kind\":\"{reserved}\",\"payload\":{{}}}}\n");
        let r = post_events(&c, "/v1/events", line.as_bytes());
        assert_refused(&r, (400, "bad_request"), "reserved", reserved);
    }
    assert_eq!(s.size(), before, "nothing of a refused request was stored");
}

#[test]
fn a_record_token_cannot_decide_read_mint_or_revoke() {
    let s = Server::start(ServeOptions::default());
    let c = s.client(&s.record);
    let decide = serde_json::json!({"class": "prompt", "baseline": A, "candidate": B});
    let body = serde_json::to_vec(&decide).expect("json");
    let mint = br#"{"can":["admin"],"session":"x"}"#;
    let revoke = format!("/v1/tokens/{}", s.record_id);
    let calls: [(&str, &str, &[u8]); 9] = [
        ("POST", "/v1/decide", &body),
        ("POST", "/v1/policies", b"[class.p]\nscorer = \"acc\"\n"),
        ("GET", "/v1/status", b""),
        ("GET", "/v1/decisions", b""),
        ("GET", "/v1/summary.md", b""),
        ("GET", "/v1/report.html", b""),
        ("GET", "/v1/tokens", b""),
        ("POST", "/v1/tokens", mint),
        ("DELETE", &revoke, b""),
    ];
    let before = s.size();
    for (method, path, body) in calls {
        let r = c
            .request(method, path, "application/json", body)
            .expect("answer");
        // The error names what the token may do.
        assert_refused(
            &r,
            (403, "forbidden"),
            "may record",
            &format!("{method} {path}"),
        );
    }
    assert_eq!(s.size(), before, "a refused request stores nothing");
    // A read token reads, and cannot record.
    let r = s.client(&s.read).get_json("/v1/status").expect("status");
    assert!(r["store_id"].is_string(), "{r}");
    let r = post_events(
        &s.client(&s.read),
        "/v1/events",
        b"{\"kind\":\"note\",\"payload\":{}}\n",
    );
    assert_eq!(r.status, 403, "{r:?}");
}

#[test]
fn the_key_never_leaves_the_server_and_every_event_it_writes_is_maced() {
    let s = Server::start_keyed(ServeOptions::default());
    let key_hex = std::fs::read_to_string(s.key_file.as_ref().expect("keyed"))
        .expect("key")
        .trim()
        .to_string();
    s.client(&s.record)
        .ingest("jsonl", &[], score_line(A, "t1", 0.5).as_bytes())
        .expect("record");
    // Every route's answer, with the strongest token: no key bytes in any.
    let admin = s.client(&s.admin);
    for r in ROUTES {
        let path = r.path.replace("{format}", "jsonl").replace("{id}", "nope");
        let answer = admin
            .request(r.method, &path, "application/json", b"")
            .expect("answer");
        let body = String::from_utf8_lossy(&answer.body);
        assert!(
            !body.contains(&key_hex),
            "{} {} leaked the writer key",
            r.method,
            r.path
        );
    }
    // The trace verifies with the key: every event the server wrote is MAC'd.
    let store = s.reopen();
    let report = store.verify().expect("verify");
    assert!(report.keyed && report.macs_checked, "{report:?}");
    assert!(report.fault.is_none(), "{report:?}");
}

#[test]
fn every_route_of_the_table_is_served_and_the_openapi_document_is_the_table() {
    let s = Server::start(ServeOptions::default());
    let doc = s.client("").get_json("/v1/openapi.json").expect("openapi");
    let paths = doc["paths"].as_object().expect("paths");
    let mut listed = 0;
    for (path, ops) in paths {
        listed += ops.as_object().map_or(0, serde_json::Map::len);
        for method in ops.as_object().expect("ops").keys() {
            assert!(
                ROUTES
                    .iter()
                    .any(|r| r.path == path && r.method.eq_ignore_ascii_case(method)),
                "{method} {path} is documented but not in the table"
            );
        }
    }
    assert_eq!(listed, ROUTES.len());
    let no_token = s.client("");
    for r in ROUTES {
        let path = r.path.replace("{format}", "jsonl").replace("{id}", "nope");
        let answer = no_token
            .request(r.method, &path, "application/json", b"")
            .expect("answer");
        match r.scope {
            // A route that needs a token says so (it exists: not 404).
            Some(_) => assert_eq!(
                (answer.status, kind(&answer).as_str()),
                (401, "unauthorized"),
                "{} {}",
                r.method,
                r.path
            ),
            None => assert_eq!(answer.status, 200, "{} {}", r.method, r.path),
        }
    }
    let r = no_token
        .request("GET", "/v1/nothing-here", "application/json", b"")
        .expect("answer");
    assert_eq!((r.status, kind(&r).as_str()), (404, "not_found"));
    let r = no_token
        .request("PUT", "/v1/status", "application/json", b"")
        .expect("answer");
    assert_eq!(r.status, 405, "{r:?}");
}

/// The class the server decides: the record token's session is a producer
/// it trusts for both sides (a token's evidence counts only when the
/// pinned policy names its session).
const POLICY: &str = "[class.prompt]\nscorer = \"acc\"\ntest = \"betting\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 400\n\
    trust = { baseline = [\"session:cell-1\"], candidate = [\"session:cell-1\"] }\n";

#[test]
fn the_server_decides_under_the_pinned_policy_and_records_the_verdict() {
    let s = Server::start(ServeOptions::default());
    let policy = ratchet_gate::Policy::parse(POLICY);
    let policy = match policy {
        Ok(p) => p,
        Err(e) => panic!("policy: {e}"),
    };
    // Not pinned yet: the server refuses to decide under a file it has not got.
    let d = s.client(&s.decide);
    let ask = serde_json::json!({"class": "prompt", "baseline": A, "candidate": B});
    let r = d.post_json("/v1/decide", &ask);
    assert!(
        matches!(&r, Err(ratchet_serve::Error::BadRequest(m)) if m.contains("prompt")),
        "{r:?}"
    );
    // The owner pins it through the server (an admin token).
    let pinned = s
        .client(&s.admin)
        .request(
            "POST",
            "/v1/policies",
            "application/toml",
            POLICY.as_bytes(),
        )
        .expect("answer")
        .ok_json()
        .expect("pinned");
    assert_eq!(
        pinned["pins"][0]["policy_hash"],
        policy.class("prompt").expect("class").hash().to_string(),
        "{pinned}"
    );
    let mut lines = String::new();
    for i in 0..200 {
        lines.push_str(&score_line(
            A,
            &format!("t{i}"),
            if i % 2 == 0 { 0.5 } else { 0.6 },
        ));
        lines.push_str(&score_line(
            B,
            &format!("t{i}"),
            if i % 2 == 0 { 0.9 } else { 1.0 },
        ));
    }
    s.client(&s.record)
        .ingest("jsonl", &[], lines.as_bytes())
        .expect("record");
    let v = d.post_json("/v1/decide", &ask).expect("decide");
    assert_eq!(v["status"], "promote", "{v:#}");
    let seq = v["decision"]["seq"].as_u64().expect("recorded");
    let recent = s
        .client(&s.read)
        .get_json("/v1/decisions?last=1")
        .expect("read");
    assert_eq!(recent["events"][0]["seq"], seq, "{recent}");
    // A dry run records nothing.
    let before = s.size();
    let mut dry = ask.clone();
    dry["dry_run"] = true.into();
    let v = d.post_json("/v1/decide", &dry).expect("dry run");
    assert!(v["decision"].is_null(), "{v}");
    assert_eq!(s.size(), before);
}

#[test]
fn a_record_token_cannot_choose_how_a_new_scorer_is_read() {
    let s = Server::start(ServeOptions::default());
    let line = format!(
        "{{\"task\":\"t1\",\"scorer\":\"quality\",\"value\":0.5,\"commit\":\"{A}\",\"direction\":\"lower\"}}\n"
    );
    let before = s.size();
    let r = upload(&s.client(&s.record), "/v1/ingest/jsonl", line.as_bytes());
    assert_eq!((r.status, kind(&r).as_str()), (400, "bad_request"), "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.body).contains("may not declare"),
        "{r:?}"
    );
    assert_eq!(s.size(), before, "nothing stored");
    // Without a direction it records (read with the default); the owner may declare.
    let plain = score_line(A, "t1", 0.5);
    s.client(&s.record)
        .ingest("jsonl", &[], plain.as_bytes())
        .expect("records");
    let minted =
        s.mint_over_api(serde_json::json!({"can": ["record", "admin"], "session": "owner2"}));
    let owner = s.client(minted["token"].as_str().expect("token"));
    owner
        .ingest("jsonl", &[], line.as_bytes())
        .expect("the owner declares");
}

/// An Inspect log whose one scorer the uploader named: its direction is
/// only the format's convention (higher is better).
fn inspect_log(scorer: &str) -> String {
    format!(
        r#"{{"status":"success","eval":{{"task":"t"}},"samples":[{{"id":"s1","scores":{{"{scorer}":{{"value":0.9}}}}}}]}}"#
    )
}

#[test]
fn a_record_token_cannot_declare_a_scorer_by_naming_it_in_a_report() {
    let s = Server::start(ServeOptions::default());
    // `hallucination_rate` is lower-is-better; a record token naming it in
    // an Inspect log must not make the trace read it the other way up.
    let r = upload(
        &s.client(&s.record),
        &format!("/v1/ingest/inspect?commit={A}&name=log.json"),
        inspect_log("hallucination_rate").as_bytes(),
    )
    .ok_json()
    .expect("the scores are recorded");
    assert_eq!(r["ingest"]["scores"], 1, "{r}");
    let notes = r["ingest"]["notes"].to_string();
    assert!(notes.contains("left for the store's owner"), "{notes}");
    let store = s.reopen();
    let declarations = store
        .events_of_kinds(&[ratchet_trace::ReservedKind::Scorer.as_str()])
        .expect("declarations");
    assert!(
        declarations.is_empty(),
        "no declaration from a record token: {declarations:?}"
    );
    // The owner's upload of a new scorer declares it, as the CLI would.
    let minted =
        s.mint_over_api(serde_json::json!({"can": ["record", "admin"], "session": "owner2"}));
    s.client(minted["token"].as_str().expect("token"))
        .ingest(
            "inspect",
            &[("commit", A), ("name", "log.json")],
            inspect_log("accuracy").as_bytes(),
        )
        .expect("the owner records");
    let declared = s
        .reopen()
        .events_of_kinds(&[ratchet_trace::ReservedKind::Scorer.as_str()])
        .expect("declarations");
    assert_eq!(declared.len(), 1, "{declared:?}");
}

#[test]
fn a_record_token_asking_beyond_its_scope_is_refused_before_its_body_is_read() {
    use std::io::{Read, Write};
    let s = Server::start(ServeOptions::default());
    let mut c = std::os::unix::net::UnixStream::connect(&s.socket).expect("connect");
    c.set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .expect("timeout");
    let head = format!(
        "POST /v1/decide HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 16000000\r\n\r\n",
        s.record
    );
    c.write_all(head.as_bytes()).expect("headers");
    let mut got = [0u8; 12];
    c.read_exact(&mut got).expect("an answer without the body");
    assert_eq!(&got, b"HTTP/1.1 403", "{}", String::from_utf8_lossy(&got));
}
