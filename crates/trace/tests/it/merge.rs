//! Cells → home merging: idempotent, provenance kept, and refusing (ingesting
//! nothing) every rewrite the design names.

use crate::common;

use common::*;
use ratchet_trace::{AsOf, Error, EventDraft, MergeOptions, Store, StoreOptions, WriterKey};

fn snapshot(s: &Store) -> Vec<ratchet_trace::Event> {
    s.events_after(0, usize::MAX).expect("read")
}

#[test]
fn merge_ingests_new_events_once_with_provenance() {
    let (_h, mut home) = new_store();
    let (_c, mut cell) = new_store();
    fill(&mut home, 4);
    fill(&mut cell, 9);
    let r = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("merge");
    assert_eq!(
        (r.ingested, r.high_water_before, r.high_water_after),
        (9, 0, 9)
    );
    let again = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("merge twice");
    assert_eq!(
        (again.ingested, again.high_water_before),
        (0, 9),
        "idempotent"
    );

    fill(&mut cell, 5);
    let r = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("merge more");
    assert_eq!(
        (r.ingested, r.high_water_before, r.high_water_after),
        (5, 9, 14)
    );
    assert_eq!(home.head().expect("head").size, 4 + 14);
    assert!(home.verify().expect("verify").is_valid());

    let cell_events = snapshot(&cell);
    let home_events = snapshot(&home);
    for (c, h) in cell_events.iter().zip(&home_events[4..]) {
        assert_eq!(
            (c.id, c.ts_ms, &c.kind, &c.payload, &c.cell),
            (h.id, h.ts_ms, &h.kind, &h.payload, &h.cell)
        );
        let o = h.origin.as_ref().expect("provenance");
        assert_eq!(
            (o.store.as_str(), o.seq, o.hash),
            (cell.id(), c.seq, c.hash)
        );
    }
    // Projections of merged scores are queryable at home.
    let cell_stats = view(&cell).commit_stats("acc", AsOf::Head);
    let home_view = view(&home);
    let home_stats = home_view.commit_stats("acc", AsOf::Head);
    assert!(
        home_stats.iter().map(|s| s.n).sum::<u64>() >= cell_stats.iter().map(|s| s.n).sum::<u64>()
    );
    let mut merged = 0;
    home_view.each_score(0, &mut |r| {
        if r.seq > 4 {
            assert_eq!(r.origin_store, Some(cell.id()), "seq {}", r.seq);
            merged += 1;
        } else {
            assert_eq!(r.origin_store, None);
        }
    });
    assert_eq!(merged, view(&cell).score_count());
}

#[test]
fn tampered_cell_is_refused_and_nothing_ingested() {
    let (_h, mut home) = new_store();
    let (_c, mut cell) = new_store();
    fill(&mut cell, 30);
    // A broken link in the middle of the batch, not at its ends.
    attacker(cell.dir())
        .execute(
            "UPDATE events SET payload = CAST('{\"x\":1}' AS BLOB) WHERE seq = 16",
            [],
        )
        .expect("tamper");
    let before = home.head().expect("head");
    let err = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect_err("refused");
    match err {
        Error::CellTampered { fault, .. } => assert_eq!(fault.seq, 16),
        other => panic!("expected CellTampered, got {other}"),
    }
    assert_eq!(home.head().expect("head"), before, "nothing ingested");
}

#[test]
fn cell_rewritten_after_a_merge_is_refused() {
    let (_h, mut home) = new_store();
    let (_c, mut cell) = new_store();
    fill(&mut cell, 10);
    home.merge_cell(cell.dir(), &MergeOptions::default())
        .expect("first merge");
    let before = home.head().expect("head");

    // The cell's owner rewrites history from seq 6 on and regrows it, consistently.
    let cell_dir = cell.dir().to_path_buf();
    {
        let a = attacker(&cell_dir);
        a.execute_batch(
            "DELETE FROM events WHERE seq >= 6; DELETE FROM scores WHERE seq >= 6; DELETE FROM test_runs WHERE seq >= 6;",
        )
        .expect("rewrite");
        refold_commit_stats(&a);
    }
    fill(&mut cell, 8);
    assert!(
        cell.verify().expect("verify").is_valid(),
        "the rewritten cell is self-consistent"
    );
    let err = home
        .merge_cell(&cell_dir, &MergeOptions::default())
        .expect_err("refused");
    assert!(matches!(err, Error::CellRewritten { seq: 10, .. }), "{err}");
    assert_eq!(home.head().expect("head"), before, "nothing ingested");
}

#[test]
fn same_event_arriving_by_two_routes_is_kept_once() {
    // cell → relay, then both relay and cell → home: the cell's events reach
    // home twice with the same content; the second copy is recognised.
    let (_h, mut home) = new_store();
    let (_r, mut relay) = new_store();
    let (_c, mut cell) = new_store();
    fill(&mut cell, 6);
    relay
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("relay");
    home.merge_cell(relay.dir(), &MergeOptions::default())
        .expect("home from relay");
    let r = home
        .merge_cell(cell.dir(), &MergeOptions::default())
        .expect("home from cell");
    assert_eq!((r.ingested, r.already_present), (0, 6));
    assert!(home.verify().expect("verify").is_valid());
}

#[test]
fn same_id_with_different_content_is_equivocation() {
    // A cell whose chain verifies but which carries another cell's event id
    // with different content.
    let (_h, mut home) = new_store();
    let (_c1, mut cell1) = new_store();
    fill(&mut cell1, 3);
    home.merge_cell(cell1.dir(), &MergeOptions::default())
        .expect("merge cell1");
    let stolen = snapshot(&cell1)[1].id;
    // A forged cell: an event appended normally, then its id replaced by
    // the stolen one and the whole chain re-linked, so the cell verifies.
    let (_c3, mut forged) = new_store();
    forged
        .append(EventDraft::json("note", &serde_json::json!({"evil": true})).expect("json"))
        .expect("append");
    let conn = attacker(forged.dir());
    conn.execute(
        "UPDATE events SET id = ?1 WHERE seq = 1",
        [&stolen.0.to_be_bytes()[..]],
    )
    .expect("steal id");
    recompute_chain(&conn, forged.id(), 1);
    drop(conn);
    assert!(
        forged.verify().expect("verify").is_valid(),
        "forged cell verifies"
    );
    let before = home.head().expect("head");
    let err = home
        .merge_cell(forged.dir(), &MergeOptions::default())
        .expect_err("equivocation");
    assert!(
        matches!(
            err,
            Error::Equivocation {
                existing_seq: 2,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(home.head().expect("head"), before, "nothing ingested");
}

/// A cell edited and re-linked so that it verifies, holding what no append
/// would have stored: a payload that is not JSON (bytes that are not even
/// UTF-8), or a number no reader can hold. The home refuses it, naming the
/// event, and ingests nothing of the cell.
#[test]
fn a_relinked_cell_holding_what_no_append_stores_is_refused() {
    for payload in [&b"{\"a\":\"\xff\"}"[..], b"{\"x\": 1e999}", b"not json"] {
        let (_h, mut home) = new_store();
        let (_c, mut cell) = new_store();
        fill(&mut cell, 4); // seq 1 and 4 are notes
        let a = attacker(cell.dir());
        a.execute("UPDATE events SET payload = ?1 WHERE seq = 4", [payload])
            .expect("edit");
        recompute_chain(&a, cell.id(), 4);
        drop(a);
        assert!(
            cell.verify().expect("verify").is_valid(),
            "the re-linked cell verifies"
        );
        let before = home.head().expect("head");
        let err = home
            .merge_cell(cell.dir(), &MergeOptions::default())
            .expect_err("refused");
        assert!(
            matches!(&err, Error::InvalidInput { field: "merge", reason } if reason.contains("event 4 of cell")),
            "{err}"
        );
        assert_eq!(home.head().expect("head"), before, "nothing ingested");
    }
}

#[test]
fn merging_a_store_into_itself_is_refused() {
    let (_h, mut home) = new_store();
    let dir = home.dir().to_path_buf();
    assert!(matches!(
        home.merge_cell(&dir, &MergeOptions::default()),
        Err(Error::MergeSelf { .. })
    ));
}

#[test]
fn keyed_cells_are_checked_with_their_key() {
    let (key, _) = WriterKey::generate().expect("key");
    let (_h, mut home) = new_store();
    let (_c, mut cell) = new_store_with(StoreOptions::default().writer_key(key.clone()));
    fill(&mut cell, 5);
    let conn = attacker(cell.dir());
    conn.execute("UPDATE events SET mac = randomblob(32) WHERE seq = 4", [])
        .expect("forge mac");
    drop(conn);
    // Without the key the chain itself is fine; with it the forgery shows.
    let err = home
        .merge_cell(cell.dir(), &MergeOptions::default().cell_key(key))
        .expect_err("refused");
    assert!(
        matches!(err, Error::CellTampered { ref fault, .. } if fault.seq == 4),
        "{err}"
    );
    assert_eq!(home.head().expect("head").size, 0);
}

#[test]
fn missing_cell_is_a_clear_error() {
    let (d, mut home) = new_store();
    let err = home
        .merge_cell(d.path().join("nope"), &MergeOptions::default())
        .expect_err("missing");
    assert!(matches!(err, Error::StoreMissing { .. }), "{err}");
    let _ = Store::open(home.dir(), StoreOptions::default()).expect("home still opens");
}
