//! Red team, round 3: the fixes of round 2 (one whole-table scan of
//! `commit_stats`, bit-exact comparison, saturating counts) and what is
//! next to them.
//!
//! Tests named `break_*` were broken promises. The UTF-16 ones are fixed
//! (`PRAGMA encoding` must be UTF-8: a fault at seq 0 otherwise) and now
//! pin the fix. The raw-write ones were a known open hole until decisions
//! moved to the verified view (issue 21); they now pin that a raw write
//! after verification cannot reach what a decision reads
//! (`raw_*_cannot_reach_the_view`). Every other test is an attack that was
//! caught.
//!
//! Two holes, both about the bytes SQLite hands verification versus the
//! bytes a later query compares or reads:
//!
//! * a UTF-16 database (`PRAGMA encoding` was never checked): text is
//!   converted to UTF-8 for verification but compared raw in SQL, so a row
//!   can verify while `WHERE commit_id = ?` / `scorer = ?` / `kind IN (…)`
//!   never finds it (`break_utf16_*`);
//! * a raw write to `trace.db` after verification, inside the same
//!   snapshot: SQLite re-reads the file (shared memory map), so the read
//!   was not what was verified. Closed: a decision reads a [`Verified`]
//!   view, folded from the very bytes verification checked, holding no
//!   connection — no later byte of the file reaches it
//!   (`raw_file_write_after_verification_cannot_reach_the_view`,
//!   `raw_score_write_after_verification_cannot_reach_the_gates_view`).
//!
//! [`Verified`]: ratchet_trace::Verified

use crate::common;

use std::path::Path;

use common::*;
use ratchet_trace::{
    AsOf, FaultKind, Store, StoreOptions, TestRun, Verified, VerifyOptions, WriterKey,
};

/// The fix for the UTF-16 rewrites: a database that does not store text as
/// UTF-8 is a fault of the store as a whole (seq 0), and is refused writes.
fn assert_refused_as_utf16(s: &Store) {
    let f = fault(s);
    assert!(
        matches!(&f, Some((0, FaultKind::SchemaAltered { what })) if what.contains("UTF-16")),
        "a UTF-16 database must not verify: {f:?}"
    );
}

/// [`assert_refused_as_utf16`], after a deciding read with `opts` (the
/// writer's key, a checkpoint held elsewhere) is refused as tampered.
fn assert_read_refused_as_utf16(s: &Store, opts: &VerifyOptions) {
    let read = s.verified(opts);
    assert!(
        matches!(
            &read,
            Err(ratchet_trace::Error::Tampered { fault })
                if matches!(fault.kind, FaultKind::SchemaAltered { .. })
        ),
        "{:?}",
        read.err()
    );
    assert_refused_as_utf16(s);
}

// ---------------------------------------------------------------------------
// The UTF-16 store. A file writer may replace `trace.db` by a database with
// the same rows in another text encoding (`PRAGMA encoding = 'UTF-16le'`):
// every text reads back through `sqlite3_column_text` as the same UTF-8, so
// hashes, MACs, projections, the schema text and the checkpoint all verify.
// In a UTF-16 database SQLite drops a trailing odd byte of a TEXT value when
// it converts it to UTF-8 (`pMem->n &= ~1` in sqlite3VdbeMemTranslate), but
// compares the raw UTF-16 bytes in SQL (`commit_id = ?`). A row whose
// `commit_id` carries one extra byte is therefore read by verification (and
// by `commit_stats` at the head, which converts keys too) as its commit, but
// no `WHERE commit_id = ?` / `IN (?, ?)` query ever finds it.
// ---------------------------------------------------------------------------

fn varint(mut v: u64) -> Vec<u8> {
    // SQLite's big-endian varint, up to 8 bytes of 7 bits (enough here).
    let mut out = vec![(v & 0x7f) as u8];
    v >>= 7;
    while v > 0 {
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.reverse();
    out
}

/// Reads an SQLite varint at `at`: (value, width).
fn read_varint(b: &[u8], at: usize) -> (u64, usize) {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = b[at + i];
        if i == 8 {
            return ((v << 8) | u64::from(byte), 9);
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    unreachable!()
}

/// Bytes of a value of serial type `t`.
fn serial_len(t: u64) -> usize {
    match t {
        0 | 8 | 9 => 0,
        1..=4 => t as usize,
        5 => 6,
        6 | 7 => 8,
        t if t >= 12 => ((t - 12) / 2) as usize,
        _ => 0,
    }
}

/// Finds the table record holding the texts `first` and `second` (written
/// with [`odd_split`]) in two adjacent columns, and moves one byte from the
/// first text to the second by editing only their serial types in the
/// record header (same varint widths: nothing else on the page moves).
fn shift_one_byte(db: &Path, first: &str, second: &str) {
    let mut bytes = std::fs::read(db).expect("read db");
    let (ea, eb) = (utf16le(first), utf16le(second));
    let pattern = [ea.clone(), eb.clone()].concat();
    let (ta, tb) = (2 * ea.len() as u64 + 13, 2 * eb.len() as u64 + 13);
    let mut found = Vec::new();
    for body_at in bytes
        .windows(pattern.len())
        .enumerate()
        .filter(|(_, w)| *w == pattern.as_slice())
        .map(|(i, _)| i)
    {
        // A record header before it whose columns put `first` exactly here
        // (the same texts also sit in index entries: any record will do,
        // but a table record has its rowid alias as a NULL first column).
        for start in body_at.saturating_sub(2000)..body_at {
            let (hsize, w) = read_varint(&bytes, start);
            let hsize = hsize as usize;
            if !(2..=64).contains(&hsize) || start + hsize > body_at {
                continue;
            }
            let mut pos = start + w;
            let mut types = Vec::new();
            while pos < start + hsize {
                let (t, w) = read_varint(&bytes, pos);
                types.push((t, pos, w));
                pos += w;
            }
            if pos != start + hsize || types.first().map(|t| t.0) != Some(0) {
                continue;
            }
            let mut off = start + hsize;
            for i in 0..types.len().saturating_sub(1) {
                if off == body_at && types[i].0 == ta && types[i + 1].0 == tb {
                    found.push((types[i], types[i + 1]));
                }
                off += serial_len(types[i].0);
            }
        }
    }
    assert_eq!(found.len(), 1, "one table record holds the texts");
    let ((_, pa, wa), (_, pb, wb)) = found[0];
    let (na, nb) = (varint(ta - 2), varint(tb + 2));
    assert_eq!((na.len(), nb.len()), (wa, wb), "same varint widths");
    bytes[pa..pa + wa].copy_from_slice(&na);
    bytes[pb..pb + wb].copy_from_slice(&nb);
    std::fs::write(db, bytes).expect("write db");
}

/// The UTF-16 re-spelling of one row: the store at `dir` rewritten as
/// UTF-16 with two adjacent text columns of the row at `seq` set by `sql`
/// (`?1`, `?2` the texts, `?3` the seq) to `texts` split at odd lengths
/// ([`odd_split`]), then one byte moved back from the first to the second
/// in the file ([`shift_one_byte`]): the row reads as it was, but a query
/// comparing either column's bytes no longer finds it.
fn respell_as_utf16(dir: &Path, sql: &str, (first, second): (&str, &str), seq: u64) {
    let (a, b) = odd_split(first, second);
    rewrite_as_utf16(dir, |c| {
        c.execute(sql, rusqlite::params![a, b, seq as i64])
            .expect("tweak");
    });
    shift_one_byte(&db_path(dir), &a, &b);
}

/// A keyed store with a checkpoint held elsewhere: the strongest setup.
/// Commit 2's `unit` suite failed once (seq 1) and passed on a rerun
/// (seq 2): the gate must reject it ("every recorded run counts").
fn failed_then_green() -> (tempfile::TempDir, std::path::PathBuf, WriterKey) {
    let (key, _) = WriterKey::generate().expect("key");
    let (d, mut s) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    for failed in [3, 0] {
        s.record_test_run(
            &TestRun {
                commit: commit(2),
                suite: "unit".into(),
                passed: 10,
                failed,
                skipped: 0,
                duration_ms: 1.0,
                failures: Vec::new(),
            },
            "s",
        )
        .expect("run");
    }
    let dir = s.dir().to_path_buf();
    (d, dir, key)
}

#[test]
fn break_utf16_store_hides_a_failed_test_run_from_the_gate() {
    let (_d, dir, key) = failed_then_green();
    let opts = StoreOptions::default().writer_key(key.clone());
    let cp = {
        let s = Store::open(&dir, opts.clone()).expect("open");
        assert_eq!(view(&s).test_runs(&commit(2), AsOf::Head).len(), 2);
        s.checkpoint().expect("checkpoint")
    };
    respell_as_utf16(
        &dir,
        "UPDATE test_runs SET commit_id = ?1, suite = ?2 WHERE seq = ?3",
        (commit(2).as_str(), "unit"),
        1,
    );

    let s = Store::open(&dir, opts).expect("open the rewritten store");
    assert_read_refused_as_utf16(&s, &VerifyOptions::default().key(key).checkpoint(cp));
}

/// The same rewrite hides one of commit 2's scores from every query that
/// selects by commit (`paired_scores`, the gate's read;
/// `scores`; `score_stream`, the drift monitor's; `commit_stats` at an
/// earlier seq), while verification and `commit_stats` at the head still
/// count it: the head and the scan no longer agree, and the store verifies.
#[test]
fn break_utf16_store_hides_a_score_from_every_scan_by_commit() {
    let (_d, mut s) = new_store();
    let mut scores = Vec::new();
    for t in 0..5 {
        scores.push(score(1, &format!("t{t}"), "acc", 0.5));
        scores.push(score(2, &format!("t{t}"), "acc", 0.75));
    }
    // Commit 2's one bad score, on task t0.
    scores.push(score(2, "t0", "acc", 0.0));
    s.record_scores(&scores, "s").expect("scores");
    let dir = s.dir().to_path_buf();
    let size = s.head().expect("head").size;
    let v = view(&s);
    assert_eq!(
        v.paired_scores(&commit(1), &commit(2), "acc", AsOf::Head)
            .len(),
        5
    );
    assert_eq!(
        v.commit_stats_for(&commit(2), "acc", AsOf::Head)
            .map(|c| c.n),
        Some(6)
    );
    drop(s);

    respell_as_utf16(
        &dir,
        "UPDATE scores SET commit_id = ?1, task = ?2 WHERE seq = ?3",
        (commit(2).as_str(), "t0"),
        size,
    );

    let s = reopen(&dir);
    assert_refused_as_utf16(&s);
    let (seq, kind) = refused(s.verified(&VerifyOptions::default()));
    assert!(
        seq == 0 && matches!(kind, FaultKind::SchemaAltered { .. }),
        "no view of a UTF-16 store: {seq} {kind:?}"
    );
}

/// No byte editing at all, and even lengths: SQLite's UTF-16 decoder
/// combines a high surrogate with *any* next unit (`READ_UTF16LE` keeps its
/// low 10 bits and never checks it is a low surrogate), so two different
/// UTF-16 byte strings read back as the same UTF-8 text. A scorer whose
/// name holds a character outside the BMP can have one score row's name
/// re-spelled by plain SQL (`CAST(x'…' AS TEXT)`): verification and the
/// head statistics read `acc🎯`, `scorer = 'acc🎯'` does not match it. So
/// refusing odd lengths would not close the hole; only a UTF-8 database
/// (no conversion between what is verified and what is compared) does.
#[test]
fn break_utf16_surrogate_alias_hides_a_score_from_scans_by_scorer() {
    let name = "acc\u{1F3AF}";
    let (_d, mut s) = new_store();
    let mut scores = Vec::new();
    for t in 0..5 {
        scores.push(score(1, &format!("t{t}"), name, 0.5));
    }
    scores.push(score(1, "t0", name, 0.0));
    s.record_scores(&scores, "s").expect("scores");
    let dir = s.dir().to_path_buf();
    let size = s.head().expect("head").size;
    drop(s);
    // "acc" + D83C, then 03AF where the low surrogate DFAF was (same low
    // 10 bits): a valid-looking TEXT to SQLite, the same UTF-8 on reading.
    let mut alias = utf16le("acc");
    alias.extend_from_slice(&[0x3c, 0xd8, 0xaf, 0x03]);
    assert_eq!(
        &utf16le(name)[..8],
        &alias[..8],
        "same high surrogate, other second unit"
    );
    rewrite_as_utf16(&dir, |c| {
        c.execute(
            "UPDATE scores SET scorer = CAST(?1 AS TEXT) WHERE seq = ?2",
            rusqlite::params![alias, size as i64],
        )
        .expect("tweak");
    });
    let s = reopen(&dir);
    assert_refused_as_utf16(&s);
}

// ---------------------------------------------------------------------------
// A snapshot was one SQLite read transaction: it kept other *SQLite*
// writers' commits out, but SQLite reads pages of the main file through a
// shared memory map (`mmap_size`, set by every ratchet connection), and even
// without it re-reads a page it evicted. A file writer who overwrote bytes
// of `trace.db` after verification, inside the snapshot, changed what the
// very next read of that snapshot returned. Snapshots are gone: decisions
// read a `Verified` view, in memory, folded from the bytes verification
// checked. The same writes now leave the view as verified.
// ---------------------------------------------------------------------------

/// Position of the big-endian `mean` of the `commit_stats` row of
/// (`acc`, `1`, commit `c`) in the file (no WAL).
fn mean_offset(bytes: &[u8], c: u8) -> usize {
    let mut pat = b"acc1".to_vec();
    pat.extend_from_slice(commit(c).as_str().as_bytes());
    let at: Vec<usize> = bytes
        .windows(pat.len())
        .enumerate()
        .filter(|(_, w)| *w == pat.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "one commit_stats row");
    // n (serial type 1: one byte) follows the key, then the mean.
    at[0] + pat.len() + 1
}

/// Verification reads commit 2's honest `commit_stats` row; the attacker
/// then rewrites its mean's 8 bytes in place. The view was folded from the
/// bytes verification checked (the score events) and holds no connection:
/// it still says the honest mean. The edit stays in the file, so the next
/// verification names it.
#[test]
fn raw_file_write_after_verification_cannot_reach_the_view() {
    let (_d, mut s) = new_store();
    two_commits(&mut s);
    let dir = s.dir().to_path_buf();
    let honest = view(&s).commit_stats("acc", AsOf::Head);
    drop(s);
    settle(&dir);
    let path = db_path(&dir);
    let bytes = std::fs::read(&path).expect("read");
    let at = mean_offset(&bytes, 2);
    let mean2 = f64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    assert_eq!(
        mean2.to_bits(),
        honest[1].mean.to_bits(),
        "found commit 2's mean"
    );

    let s = reopen(&dir);
    let v = view(&s);
    // The attacker, between verification and the read: 8 bytes, in place.
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open for writing");
        f.seek(SeekFrom::Start(at as u64)).expect("seek");
        f.write_all(&0.99f64.to_be_bytes()).expect("write");
    }
    assert_eq!(
        bits(&v.commit_stats("acc", AsOf::Head)),
        bits(&honest),
        "the view holds what was verified"
    );
    assert_eq!(
        v.commit_stats_for(&commit(2), "acc", AsOf::Head)
            .map(|c| c.mean.to_bits()),
        Some(honest[1].mean.to_bits())
    );
    drop(s);
    let (seq, kind) = refused(reopen(&dir).verified(&VerifyOptions::default()));
    assert!(
        seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
        "the edit is named by the next verification: {seq} {kind:?}"
    );
}

/// The same window on a `scores` page, the gate's path: verification reads
/// the honest page, the attacker then rewrites one score's 8 value bytes in
/// place, and puts them back after the gate's read. `paired_scores` of the
/// view (what `decide` reads) is the honest value: the view parsed it from
/// the score event's payload as verification checked it. While the edit is
/// in the file, a fresh verification names its seq.
#[test]
fn raw_score_write_after_verification_cannot_reach_the_gates_view() {
    use std::io::{Seek, SeekFrom, Write};
    let (_d, mut s) = new_store();
    two_commits(&mut s);
    let dir = s.dir().to_path_buf();
    let pairs = |v: &Verified| -> Vec<(String, Vec<f64>, Vec<f64>)> {
        v.paired_scores(&commit(1), &commit(2), "acc", AsOf::Head)
            .iter()
            .map(|t| {
                (
                    t.task.to_string(),
                    t.baseline.to_vec(),
                    t.candidate.to_vec(),
                )
            })
            .collect()
    };
    let honest = pairs(&view(&s));
    let seq = view(&s)
        .scores()
        .into_iter()
        .find(|(_, sc)| sc.commit == commit(2) && sc.task == "t0")
        .expect("commit 2's t0")
        .0;
    drop(s);
    settle(&dir);
    let path = db_path(&dir);
    let bytes = std::fs::read(&path).expect("read");
    let mut pat = b"t0acc1".to_vec();
    pat.extend_from_slice(&0.41f64.to_be_bytes());
    let at = bytes
        .windows(pat.len())
        .position(|w| w == pat.as_slice())
        .expect("commit 2's t0 score")
        + 6;
    let write = |v: f64| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.seek(SeekFrom::Start(at as u64)).expect("seek");
        f.write_all(&v.to_be_bytes()).expect("write");
    };
    let s = reopen(&dir);
    let read = {
        let v = view(&s);
        write(0.99);
        let read = pairs(&v);
        let meanwhile = refused(reopen(&dir).verified(&VerifyOptions::default()));
        assert_eq!(
            meanwhile,
            (seq, FaultKind::ProjectionMismatch { table: "scores" }),
            "while the edit is in the file, it is named at its seq"
        );
        write(0.41);
        read
    };
    assert_eq!(fault(&reopen(&dir)), None, "the bytes are back");
    assert_eq!(read, honest, "the view holds what was verified");
}

/// The same rewrite on an event's `session` and `kind` (both hashed; both
/// read back as they were) hides a control event from `events_of_kinds`
/// (`kind IN (…)` compares the raw bytes): a scorer's declared direction
/// (`declared_direction` then falls back to the policy or the name's
/// default), the latest alarm (`heal_latest`), promotions and checkouts.
#[test]
fn break_utf16_store_hides_a_scorer_declaration() {
    let (_d, mut s) = new_store();
    s.append(
        ratchet_trace::EventDraft::reserved(
            ratchet_trace::ReservedKind::Scorer,
            &serde_json::json!({"scorer": "tokens", "direction": "lower"}),
        )
        .expect("draft")
        .session("declare"),
    )
    .expect("declare");
    s.record_score(&score(1, "t", "tokens", 10.0), "s")
        .expect("score");
    let dir = s.dir().to_path_buf();
    assert_eq!(s.events_of_kinds(&["scorer"]).expect("kinds").len(), 1);
    assert_eq!(view(&s).events_of_kinds(&["scorer"]).len(), 1);
    drop(s);
    respell_as_utf16(
        &dir,
        "UPDATE events SET session = ?1, kind = ?2 WHERE seq = ?3",
        ("declare", "scorer"),
        1,
    );
    let s = reopen(&dir);
    assert_refused_as_utf16(&s);
}

/// Hiding an ingestion marker (`kind = 'ingest' AND session = ?`) makes
/// the next `append_once` of the same report append it again: the honest
/// writer itself counts the evidence twice, and the store verifies.
#[test]
fn break_utf16_store_makes_a_report_count_twice() {
    let (_d, mut s) = new_store();
    let report = || vec![score(2, "t", "acc", 1.0).to_draft().expect("draft")];
    s.append_once("junit:abc", report()).expect("first");
    let dir = s.dir().to_path_buf();
    drop(s);
    respell_as_utf16(
        &dir,
        "UPDATE events SET session = ?1, kind = ?2 WHERE seq = ?3",
        ("ingest:junit:abc", "ingest"),
        2,
    );
    let s = reopen(&dir);
    assert_refused_as_utf16(&s);
}

// ---------------------------------------------------------------------------
// Caught: attacks on the round-2 fixes and next to them.
// ---------------------------------------------------------------------------

fn two_commits(s: &mut Store) {
    let mut scores = Vec::new();
    for t in 0..20 {
        scores.push(score(
            1,
            &format!("t{t}"),
            "acc",
            0.91 + (t % 3) as f64 * 0.01,
        ));
        scores.push(score(
            2,
            &format!("t{t}"),
            "acc",
            0.41 + (t % 3) as f64 * 0.01,
        ));
    }
    s.record_scores(&scores, "s").expect("scores");
}

/// NaN bytes (any payload: SQLite reads a NaN REAL as NULL) and infinities
/// planted in each REAL column of `commit_stats`: a fault, and the
/// head read errs or returns, never panics.
#[test]
fn nan_and_infinite_bytes_in_commit_stats_are_summary_faults() {
    for (col, bits) in [
        (0usize, 0x7ff8_0000_0000_0001u64),
        (0, 0xfff0_0000_0000_0001),
        (1, 0x7ff0_0000_0000_0000),
        (2, 0xfff0_0000_0000_0000),
        (3, 0x7ff8_0000_0000_0000),
        (1, 0x7fff_ffff_ffff_ffff),
    ] {
        let (_d, mut s) = new_store();
        two_commits(&mut s);
        let dir = s.dir().to_path_buf();
        drop(s);
        settle(&dir);
        let path = db_path(&dir);
        let mut bytes = std::fs::read(&path).expect("read");
        let at = mean_offset(&bytes, 2) + 8 * col;
        bytes[at..at + 8].copy_from_slice(&bits.to_be_bytes());
        std::fs::write(&path, bytes).expect("write");
        let s = reopen(&dir);
        // NaN reads as NULL, which `quick_check` reports against the NOT
        // NULL column; an infinity is a summary mismatch.
        assert!(
            matches!(
                fault(&s),
                Some((
                    0,
                    FaultKind::SummaryMismatch { .. } | FaultKind::Structure { .. }
                ))
            ),
            "column {col} bits {bits:#x}: {:?}",
            fault(&s)
        );
        // No view of it, and no panic on the way.
        assert!(matches!(
            s.verified(&VerifyOptions::default()),
            Err(ratchet_trace::Error::Tampered { .. })
        ));
    }
}

/// NaN or an infinity in `scores.value` (bytes edited; the payload says
/// 0.41): NaN reads as NULL (`quick_check`: a NULL in a NOT NULL column),
/// an infinity is a projection fault at the row's seq; no panic in any read.
#[test]
fn nan_and_infinite_bytes_in_a_score_value_are_projection_faults() {
    for bits in [
        0x7ff8_0000_0000_0000u64,
        0xfff8_dead_beef_0001,
        0x7ff0_0000_0000_0000,
    ] {
        let (_d, mut s) = new_store();
        two_commits(&mut s);
        let dir = s.dir().to_path_buf();
        let seq = view(&s)
            .scores()
            .into_iter()
            .find(|(_, sc)| sc.commit == commit(2) && sc.task == "t0")
            .expect("t0")
            .0;
        drop(s);
        let mut from = b"t0acc1".to_vec();
        from.extend_from_slice(&0.41f64.to_be_bytes());
        let mut to = b"t0acc1".to_vec();
        to.extend_from_slice(&bits.to_be_bytes());
        replace_bytes(&dir, &from, &to);
        let s = reopen(&dir);
        match fault(&s) {
            Some((at, FaultKind::ProjectionMismatch { table: "scores" })) => assert_eq!(at, seq),
            Some((0, FaultKind::Structure { .. })) => assert!(f64::from_bits(bits).is_nan()),
            other => panic!("bits {bits:#x}: {other:?}"),
        }
        let (report, folded) = s
            .verify_and_fold(&VerifyOptions::default())
            .expect("verification runs");
        assert!(!report.is_valid() && folded.is_none(), "bits {bits:#x}");
    }
}

/// Cell pointers of a `scores` leaf page swapped (a rowid table: SQLite
/// checks rowid order even in `quick_check`): a fault, so the unordered
/// scans of `stats()` at an earlier seq cannot fold in another order than
/// verification did.
#[test]
fn reordered_cells_of_a_scores_page_are_a_fault() {
    let (_d, mut s) = new_store();
    s.record_scores(
        &[
            score(1, "a", "acc", 0.1),
            score(1, "b", "acc", 0.7),
            score(1, "c", "acc", 0.3),
        ],
        "s",
    )
    .expect("scores");
    let dir = s.dir().to_path_buf();
    drop(s);
    settle(&dir);
    let (ps, root) = page_size_and_root(&dir, "scores");
    let path = db_path(&dir);
    let mut bytes = std::fs::read(&path).expect("read");
    let base = (root - 1) * ps;
    assert_eq!(bytes[base], 0x0d, "a leaf table page");
    bytes.swap(base + 8, base + 10);
    bytes.swap(base + 9, base + 11);
    std::fs::write(&path, bytes).expect("write");
    let s = reopen(&dir);
    assert!(fault(&s).is_some(), "reordered rowids are found");
}

/// A `commit_stats` key holding NUL (the in-memory fold keys join the parts
/// with '\0'): names never hold control characters (validated on append,
/// on verification's re-derivation and so on merge), so no stored key can
/// be taken for a folded one; a planted one is a summary fault.
#[test]
fn nul_in_a_commit_stats_key_is_a_summary_fault() {
    for (scorer, version) in [("acc\u{0}1", ""), ("acc", "1\u{0}"), ("acc", "1\u{0}x")] {
        let (_d, mut s) = new_store();
        two_commits(&mut s);
        {
            let a = attacker(s.dir());
            a.execute(
                "INSERT INTO commit_stats SELECT ?1, ?2, commit_id, n, mean, m2, min, max, last_seq
                   FROM commit_stats WHERE commit_id = ?3",
                rusqlite::params![scorer, version, commit(2).as_str()],
            )
            .expect("plant");
        }
        assert!(
            matches!(fault(&s), Some((0, FaultKind::SummaryMismatch { .. }))),
            "{scorer:?}/{version:?}"
        );
        assert!(matches!(
            s.verified(&VerifyOptions::default()),
            Err(ratchet_trace::Error::Tampered { .. })
        ));
    }
    // And a name with NUL cannot be appended at all.
    let (_d, mut s) = new_store();
    assert!(matches!(
        s.record_score(&score(1, "t", "acc\u{0}1", 0.5), "s"),
        Err(ratchet_trace::Error::InvalidInput { .. })
    ));
}

/// A keyed version-1 cell (the committed fixture) merged into a version-2
/// home: the home's statistics are folded by the home, exact at the head
/// and equal to the scan.
#[test]
fn a_v1_cell_merged_into_a_v2_home_keeps_the_statistics_exact() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let tmp = tempfile::tempdir().expect("tmp");
    let cell = tmp.path().join("cell");
    std::fs::create_dir_all(&cell).expect("mkdir");
    std::fs::copy(src.join("store/trace.db"), cell.join("trace.db")).expect("copy");
    let key = WriterKey::from_hex(&std::fs::read_to_string(src.join("writer.key")).expect("key"))
        .expect("parse");
    let mut home = Store::create(tmp.path().join("home"), StoreOptions::default()).expect("home");
    home.merge_cell(
        &cell,
        &ratchet_trace::MergeOptions::default().cell_key(key.clone()),
    )
    .expect("merge");
    // Verification requires the home's kept table to be the refold of the
    // merged score rows; the view folds the cell's values in the cell's
    // order, so its figures are the cell's, to the bit.
    let home_stats = view(&home).commit_stats("accuracy", AsOf::Head);
    let cell_stats = Store::open_read_only(&cell, StoreOptions::default())
        .expect("cell")
        .verified(&VerifyOptions::default().key(key))
        .expect("the cell verifies")
        .commit_stats("accuracy", AsOf::Head);
    assert_eq!(home_stats.len(), 2);
    assert_eq!(bits(&home_stats), bits(&cell_stats));
}

/// `rebuild_commit_stats` folds the stored rows without verifying them
/// (rows outside the chain included): verification still fails.
#[test]
fn rebuild_over_a_row_outside_the_chain_still_faults() {
    let (_d, mut s) = new_store();
    two_commits(&mut s);
    {
        let a = attacker(s.dir());
        a.execute(
            "INSERT INTO scores SELECT 0, commit_id, task, scorer, scorer_version, 100.0, cost, latency_ms, holdout
               FROM scores WHERE seq = 1",
            [],
        )
        .expect("plant");
    }
    s.rebuild_commit_stats().expect("rebuild");
    assert!(matches!(
        fault(&s),
        Some((0, FaultKind::OutsideChain { .. }))
    ));
}

/// Without the stray byte, a UTF-16 copy would be harmless, but it is still
/// not a store ratchet wrote: refused like the others.
#[test]
fn a_plain_utf16_copy_is_refused_too() {
    let (_d, dir, key) = failed_then_green();
    let opts = StoreOptions::default().writer_key(key.clone());
    let (cp, runs) = {
        let mut s = Store::open(&dir, opts.clone()).expect("open");
        two_commits(&mut s);
        (
            s.checkpoint().expect("cp"),
            view(&s).test_runs(&commit(2), AsOf::Head),
        )
    };
    rewrite_as_utf16(&dir, |_| {});
    let s = Store::open(&dir, opts).expect("open");
    // Refused even with nothing tweaked: ratchet only writes UTF-8 stores,
    // and a UTF-16 copy is an edit of the file like any other.
    assert_read_refused_as_utf16(&s, &VerifyOptions::default().key(key).checkpoint(cp));
    let _ = runs;
}

/// Honest but extreme finite scores overflow Welford's state. Found by the
/// red team: the mean became NaN, which SQLite stores as NULL, and every
/// later score of that scorer × version × commit was refused ("NOT NULL
/// constraint failed"). Fixed: an overflowed fold is marked +∞, stored and
/// compared like any value, and later scores are accepted.
#[test]
fn extreme_scores_overflow_the_kept_statistics() {
    let (_d, mut s) = new_store();
    s.record_scores(
        &[score(1, "a", "acc", 1e308), score(1, "b", "acc", -1e308)],
        "s",
    )
    .expect("two extreme scores are accepted");
    let st = view(&s).commit_stats("acc", AsOf::Head);
    assert!(st[0].mean.is_infinite() && st[0].mean > 0.0, "{st:?}");
    assert_eq!(fault(&s), None);
    s.record_score(&score(1, "c", "acc", 0.5), "s")
        .expect("a later score is still accepted");
    let v = view(&s);
    let now = v.commit_stats("acc", AsOf::Head);
    assert!(now[0].mean.is_infinite() && now[0].n == 3, "{now:?}");
    // The view's kept fold then equals its scan now (a later score exists).
    assert_eq!(bits(&v.commit_stats("acc", AsOf::Seq(2))), bits(&st));
    assert_eq!(fault(&s), None);
}

/// A closed store whose `commit_stats` page holds three rows (`acc` of
/// commits 1 and 2 over ten tasks, `zzz` of commit 1), its directory and
/// the scores it holds: the page the misordering attacks permute.
fn three_commit_stats_rows() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<ratchet_trace::Score>,
) {
    let (d, mut s) = new_store();
    let mut scores = Vec::new();
    for i in 0..10 {
        scores.push(score(1, &format!("t{i}"), "acc", 0.9));
        scores.push(score(2, &format!("t{i}"), "acc", 0.4));
    }
    scores.push(score(1, "t0", "zzz", 0.5));
    s.record_scores(&scores, "s").expect("scores");
    let dir = s.dir().to_path_buf();
    drop(s);
    (d, dir, scores)
}

/// Round 2 moved the reads off keyed seeks, but the *append* still seeks
/// (`read_row` before folding, the UPSERT's conflict probe). On a misordered
/// `commit_stats` page an honest append misses the stored row, starts the
/// fold from nothing and inserts a second row under the same key. What
/// matters: verification then names it (a DoS, not a silent change), and
/// `rebuild_commit_stats` repairs it.
#[test]
fn an_append_over_a_misordered_commit_stats_page_is_named_not_trusted() {
    let (_d, dir, scores) = three_commit_stats_rows();
    // [acc/c1, acc/c2, zzz/c1] → [acc/c2, zzz/c1, acc/c1].
    permute_leaf_cells(&dir, "commit_stats", &[1, 2, 0]);
    let mut s = reopen(&dir);
    assert_eq!(fault(&s), None, "the misordering alone verifies (round 2)");
    s.record_score(&score(1, "t99", "acc", 0.1), "s")
        .expect("honest append");
    // The same scores in an honest store: what the figures must be.
    let honest = {
        let (_t, mut clean) = new_store();
        clean.record_scores(&scores, "s").expect("scores");
        clean
            .record_score(&score(1, "t99", "acc", 0.1), "s")
            .expect("append");
        view(&clean).commit_stats("acc", AsOf::Head)
    };
    // The second row under the same key is named: no view is handed out.
    let (seq, kind) = refused(s.verified(&VerifyOptions::default()));
    assert!(
        seq == 0 && matches!(kind, FaultKind::SummaryMismatch { .. }),
        "{seq} {kind:?}"
    );
    s.rebuild_commit_stats().expect("rebuild");
    assert_eq!(fault(&s), None);
    assert_eq!(
        bits(&view(&s).commit_stats("acc", AsOf::Head)),
        bits(&honest)
    );
}

/// A cell pointer of the `commit_stats` page duplicated over another (the
/// row read twice by a scan, another row never): `quick_check` sees the
/// cell content used twice, or the summary comparison the key twice and a
/// key missing. Either way a fault, and no read panics.
#[test]
fn a_duplicated_commit_stats_cell_is_a_fault() {
    for (keep, over) in [(0usize, 1usize), (2, 0), (1, 2)] {
        let (_d, dir, _) = three_commit_stats_rows();
        let mut order = vec![0, 1, 2];
        order[over] = keep;
        permute_leaf_cells(&dir, "commit_stats", &order);
        let s = reopen(&dir);
        assert!(fault(&s).is_some(), "cell {keep} over {over}");
        assert!(matches!(
            s.verified(&VerifyOptions::default()),
            Err(ratchet_trace::Error::Tampered { .. })
        ));
    }
}
