//! What is deployed is one fact: after promotions, a heal, a ref restored
//! and a cell merged in, `ratchet status`, the report, `serve` (the status
//! endpoint Python's `Client.status()` reads) and the library name the
//! same commit (issue 38 item 1); and heal, `heal --dry-run` and `status`
//! tell the truth when the work tree was elsewhere (issue 39 item 10).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::*;
use crate::common::{ratchet, text};

/// `gate` of `cand` over `base` in class `prompt`, recording a promotion
/// on promote; expects exit `code`.
fn gate_recording(w: &World, base: &str, cand: &str, code: i32) {
    let repo_s = w.root().to_str().expect("utf8").to_string();
    let o = gate(w, base, cand, &["--record-promotion", &repo_s]);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
}

/// The deployed commit of `prompt` in `status --json`, and its text.
fn status_says(w: &World) -> (String, String) {
    let o = w.cmd(&["status", "--json"], "");
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let json = v["deployed"]["prompt"]["commit"]
        .as_str()
        .unwrap_or_else(|| panic!("nothing deployed: {v:#}"))
        .to_string();
    (json, text(&w.cmd(&["status"], "")))
}

/// The deployed commit the report's banner names (its first 8 digits).
fn report_says(w: &World) -> String {
    let out = w.dir.path().join("report.html");
    let o = w.cmd(&["report", "--out", out.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&out).expect("report");
    let at = html
        .find("<p class=deployed>Deployed: <code>")
        .unwrap_or_else(|| panic!("no deployed line in the report"));
    let rest = &html[at + "<p class=deployed>Deployed: <code>".len()..];
    rest[..rest.find("</code>").expect("code")].to_string()
}

/// The deployed commit `serve`'s `/v1/status` names (what Python's
/// `Client.status()` returns), from a server started on the store.
fn serve_says(w: &World) -> String {
    let token = w.dir.path().join("read.token");
    // One read token for every ask (a token file is never overwritten).
    let o = if token.exists() {
        None
    } else {
        Some(w.cmd(
            &[
                "token",
                "mint",
                "--can",
                "read",
                "--session",
                "reader",
                "--out",
                token.to_str().expect("utf8"),
            ],
            "",
        ))
    };
    if let Some(o) = o {
        assert!(o.status.success(), "{}", text(&o));
    }
    let socket = w.dir.path().join("serve.sock");
    let socket_s = socket.to_str().expect("utf8").to_string();
    let store = w.store();
    let key = w.key_s();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "--store",
            store.to_str().expect("utf8"),
            "--json",
            "serve",
            "--socket",
            socket.to_str().expect("utf8"),
            "--key-file",
            key.as_str(),
        ])
        .current_dir(w.root())
        .env_remove("RATCHET_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the ready line");
    let mut client = ratchet_serve::Client::new(
        ratchet_serve::Endpoint::Unix(socket),
        std::fs::read_to_string(&token).expect("token"),
    );
    client.timeout = Duration::from_secs(120);
    let status = client.get_json("/v1/status");
    // `status --server` reads the same document, typed, into the same words.
    let remote = ratchet(
        w.dir.path(),
        &[
            "--server",
            socket_s.as_str(),
            "--token-file",
            token.to_str().expect("utf8"),
            "status",
        ],
        "",
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let status = status.expect("status served");
    let commit = status["deployed"]["prompt"]["commit"]
        .as_str()
        .unwrap_or_else(|| panic!("nothing deployed: {status:#}"))
        .to_string();
    assert!(
        text(&remote).contains(&format!("deployed for prompt: {commit}")),
        "status --server: {}",
        text(&remote)
    );
    commit
}

/// Every face names `expected` as deployed for `prompt`.
fn all_say(w: &World, expected: &str, when: &str) {
    let (json, words) = status_says(w);
    assert_eq!(json, expected, "status --json {when}");
    assert!(
        words.contains(&format!("deployed for prompt: {expected}")),
        "status {when}: {words}"
    );
    assert_eq!(report_says(w), expected[..8], "the report {when}");
    assert_eq!(serve_says(w), expected, "serve {when}");
    let store = w.open_keyed();
    let view = store.verified(&Default::default()).expect("verifies");
    let d = ratchet_orchestrate::deployed(&view, "prompt")
        .expect("reads")
        .expect("deployed");
    assert_eq!(d.commit.as_str(), expected, "the library {when}");
}

/// A cell store whose own promotion of `commit` in class `prompt` is
/// merged into `w`'s store: evidence of what the cell did, not of what
/// runs here.
fn merge_a_cell_promoting(w: &World, commit: &str) {
    let cell = w.dir.path().join("cell");
    let mut store = ratchet_trace::Store::create(&cell, Default::default()).expect("cell");
    let record = ratchet_orchestrate::PromotionRecord {
        reference: "refs/ratchet/promoted/prompt".into(),
        class: "prompt".into(),
        decision_seq: None,
        restores: None,
        ref_was: None,
    };
    store
        .append(
            ratchet_trace::EventDraft::reserved(ratchet_trace::ReservedKind::Promotion, &record)
                .expect("draft")
                .commit(ratchet_trace::CommitId::parse(commit).expect("id"))
                .session("promote"),
        )
        .expect("the cell's promotion");
    drop(store);
    let o = w.cmd(&["merge-cells", cell.to_str().expect("utf8")], "");
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn status_the_report_serve_and_the_library_name_one_deployed_commit_through_heals_restores_and_merges()
 {
    let w = World::new();
    let v1 = w.commit(&[("prompt.txt", b"v1")], "v1");
    let v2 = w.commit(&[("prompt.txt", b"v2")], "v2");
    let v3 = w.commit(&[("prompt.txt", b"v3")], "v3");
    w.checkout_head();
    w.init();
    std::fs::write(w.store().join("policy.toml"), policy_text()).expect("policy");
    // v3 honestly better than v1 on accuracy: promoted (event, then ref).
    record_honest_scores(&w, &v3, &v1);
    gate_recording(&w, &v1, &v3, 0);
    all_say(&w, &v3, "after the promotion");

    // The work tree is on another branch when v3's live scores fall and
    // heal runs: "was" is the tree's HEAD, not the alarmed commit.
    let elsewhere = w.loose_commit(&[("prompt.txt", b"elsewhere", BLOB)], &v3, "elsewhere");
    w.point_ref("refs/heads/elsewhere", &elsewhere);
    w.repo.set_head("refs/heads/elsewhere").expect("attach");
    w.checkout_head();
    record_alarm(&w, &[(&v1, 0.85), (&v2, 0.95), (&v3, 0.90)], &v3);
    let o = w.cmd(&["heal"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("healed: checked out {v2} (was {elsewhere})")),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains(&format!("the alarm was on {v3}")),
        "{}",
        text(&o)
    );
    assert_eq!(w.head_commit(), v2);
    all_say(&w, &v2, "after the heal");
    // Asked again, heal stays on what it checked out.
    let o = w.cmd(&["heal", "--dry-run"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("staying on {v2}: nothing to heal")),
        "{}",
        text(&o)
    );
    let (_, words) = status_says(&w);
    assert!(!words.contains("checked out:"), "{words}");

    // The ref moved by hand and brought back by the next gate of the
    // class (a restoring promotion): it deploys nothing new.
    w.point_ref("refs/ratchet/promoted/prompt", &v1);
    gate_recording(&w, &v3, &v1, 1);
    assert_eq!(w.promotion_ref().as_deref(), Some(v3.as_str()));
    assert!(
        w.events("promotion")
            .iter()
            .any(|e| e["payload"]["restores"].is_u64()),
        "a restore was recorded"
    );
    all_say(&w, &v2, "after the ref was restored");

    // A cell's promotion merged in is the cell's, not this store's.
    merge_a_cell_promoting(&w, &v1);
    all_say(&w, &v2, "after a cell was merged");

    // A person checks out another commit: status says the tree differs.
    w.repo
        .set_head_detached(Oid::from_str(&v1).expect("oid"))
        .expect("detach");
    w.checkout_head();
    let (json, words) = status_says(&w);
    assert_eq!(json, v2);
    assert!(
        words.contains(&format!(
            "checked out: {v1}, not the commit deployed for prompt ({})",
            &v2[..12]
        )),
        "{words}"
    );

    // The class's next promotion deploys again, everywhere.
    gate_recording(&w, &v1, &v3, 0);
    all_say(&w, &v3, "after the next promotion");
}
