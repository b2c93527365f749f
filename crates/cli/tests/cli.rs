//! The `ratchet` binary, run as a user would: output, JSON and exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn ratchet(cwd: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .current_dir(cwd)
        .args(args)
        .env_remove("RATCHET_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const C: &str = "0123456789abcdef0123456789abcdef01234567";

#[test]
fn store_end_to_end_with_exit_codes() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    std::fs::create_dir(p.join(".git")).expect("fake git root");
    std::fs::create_dir(p.join("sub")).expect("subdir");
    let sub = p.join("sub");

    let o = ratchet(&sub, &["init"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        p.join(".ratchet/trace.db").is_file(),
        "default store at the git root"
    );

    let lines = format!(
        "{{\"kind\":\"note\",\"payload\":{{\"hello\":1}}}}\n\n{{\"kind\":\"score\",\"commit\":\"{C}\",\"session\":\"s\",\"payload\":{{\"task\":\"t1\",\"scorer\":\"acc\",\"scorer_version\":\"1\",\"value\":0.5}}}}\n"
    );
    let o = ratchet(&sub, &["append"], &lines);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("appended 2 events"), "{}", text(&o));

    let o = ratchet(
        &sub,
        &[
            "record-score",
            "--commit",
            C,
            "--task",
            "t2",
            "--scorer",
            "acc",
            "--value",
            "-0.25",
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));

    let o = ratchet(&sub, &["--json", "log"], "");
    assert!(o.status.success(), "{}", text(&o));
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json log");
    assert_eq!(events.as_array().map(Vec::len), Some(3));
    assert_eq!(events[0]["payload"]["hello"], 1);

    let o = ratchet(&sub, &["verify-chain"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("ok: 3 events verified"), "{}", text(&o));

    let cp = p.join("cp");
    let o = ratchet(
        &sub,
        &["checkpoint", "--out", cp.to_str().expect("utf8")],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        &sub,
        &["verify-chain", "--checkpoint", cp.to_str().expect("utf8")],
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // Tamper through raw SQL: exit 1, naming the seq.
    let conn = rusqlite_free_edit(&p.join(".ratchet/trace.db"), b"\"hello\":1", b"\"hello\":2");
    assert!(conn, "payload found in the file");
    let o = ratchet(&sub, &["verify-chain"], "");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("seq 1"), "{}", text(&o));
    let o = ratchet(&sub, &["--json", "verify-chain"], "");
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["fault"]["seq"], 1);
    assert_eq!(v["fault"]["kind"]["fault"], "hash_mismatch");
}

/// Edits bytes of the database file in place (no SQLite involved), after
/// making sure no WAL holds newer pages.
fn rusqlite_free_edit(db: &Path, from: &[u8], to: &[u8]) -> bool {
    assert!(
        !db.with_extension("db-wal").exists()
            || std::fs::metadata(db.with_extension("db-wal"))
                .map(|m| m.len())
                .unwrap_or(0)
                == 0
    );
    let mut bytes = std::fs::read(db).expect("read db");
    let Some(at) = bytes.windows(from.len()).position(|w| w == from) else {
        return false;
    };
    bytes[at..at + to.len()].copy_from_slice(to);
    std::fs::write(db, bytes).expect("write db");
    true
}

#[test]
fn bad_input_exits_2_with_a_clear_message_and_stores_nothing() {
    let d = tempfile::tempdir().expect("tempdir");
    let s = d.path().join("s");
    let st = s.to_str().expect("utf8");
    assert!(
        ratchet(d.path(), &["--store", st, "init"], "")
            .status
            .success()
    );
    let bad = "{\"kind\":\"note\",\"payload\":{}}\n{\"kind\":\"note\",\"commit\":\"abc\",\"payload\":{}}\n";
    let o = ratchet(d.path(), &["--store", st, "append"], bad);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("stdin line 2"), "{}", text(&o));
    assert!(text(&o).contains("full commit id"), "{}", text(&o));

    for (value, field) in [("NaN", "score.value"), ("inf", "score.value")] {
        let o = ratchet(
            d.path(),
            &[
                "--store",
                st,
                "record-score",
                "--commit",
                C,
                "--task",
                "t",
                "--scorer",
                "a",
                "--value",
                value,
            ],
            "",
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(field), "{}", text(&o));
    }
    let o = ratchet(d.path(), &["--store", st, "--json", "log"], "");
    let events: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(events.as_array().map(Vec::len), Some(0), "nothing stored");

    let o = ratchet(
        d.path(),
        &[
            "--store",
            d.path().join("none").to_str().expect("utf8"),
            "log",
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("ratchet init"), "{}", text(&o));

    let cp = d.path().join("bad-cp");
    std::fs::write(&cp, "not a checkpoint\n").expect("write");
    let o = ratchet(
        d.path(),
        &[
            "--store",
            st,
            "verify-chain",
            "--checkpoint",
            cp.to_str().expect("utf8"),
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("line 1"), "{}", text(&o));
}

#[test]
fn keyed_store_and_cell_merge() {
    let d = tempfile::tempdir().expect("tempdir");
    let (home, cell, key) = (
        d.path().join("home"),
        d.path().join("cell"),
        d.path().join("home.key"),
    );
    let (home_s, cell_s, key_s) = (
        home.to_str().expect("utf8"),
        cell.to_str().expect("utf8"),
        key.to_str().expect("utf8"),
    );
    let o = ratchet(
        d.path(),
        &["--store", home_s, "init", "--keyed", "--key-file", key_s],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        d.path(),
        &["--store", home_s, "init", "--keyed", "--key-file", key_s],
        "",
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "refuses to overwrite the key: {}",
        text(&o)
    );

    assert!(
        ratchet(d.path(), &["--store", cell_s, "init"], "")
            .status
            .success()
    );
    let lines = "{\"kind\":\"note\",\"payload\":[1]}\n{\"kind\":\"note\",\"payload\":[2]}\n";
    assert!(
        ratchet(d.path(), &["--store", cell_s, "append"], lines)
            .status
            .success()
    );

    let o = ratchet(d.path(), &["--store", home_s, "merge-cells", cell_s], "");
    assert_eq!(
        o.status.code(),
        Some(2),
        "keyed home needs its key: {}",
        text(&o)
    );
    assert!(text(&o).contains("--key-file"), "{}", text(&o));
    let o = ratchet(
        d.path(),
        &[
            "--store",
            home_s,
            "merge-cells",
            cell_s,
            "--key-file",
            key_s,
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("2 new events"), "{}", text(&o));
    let o = ratchet(
        d.path(),
        &[
            "--store",
            home_s,
            "--json",
            "merge-cells",
            cell_s,
            "--key-file",
            key_s,
        ],
        "",
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(r[0]["ingested"], 0, "idempotent");

    let o = ratchet(
        d.path(),
        &["--store", home_s, "verify-chain", "--key-file", key_s],
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("MACs checked"), "{}", text(&o));
}

#[test]
fn demo_catches_its_tampering() {
    let d = tempfile::tempdir().expect("tempdir");
    let o = ratchet(
        d.path(),
        &[
            "--json",
            "demo",
            "--dir",
            d.path().join("demo").to_str().expect("utf8"),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["caught"], true);
    assert_eq!(v["after_tamper"]["fault"]["seq"], v["tamper_seq"]);
}
