//! A merged cell's ids cannot exhaust or steer the home's.

use std::path::{Path, PathBuf};

use super::*;
use crate::common::{ratchet, text};

/// A self-consistent unkeyed cell whose one note has `id`: its chain
/// rebuilt by someone who knows the documented layout.
fn hostile_cell(dir: &Path, id: u128) -> PathBuf {
    let cell = dir.join(format!("cell-{id:x}"));
    let o = ratchet(dir, &["--store", cell.to_str().expect("utf8"), "init"], "");
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "append"],
        "{\"kind\":\"note\",\"payload\":{\"hello\":1}}\n",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "status", "--json"],
        "",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let cell_id = v["store_id"].as_str().expect("id").to_string();
    {
        let a = trace_common::attacker(&cell);
        a.execute(
            "UPDATE events SET id = ?1 WHERE seq = 1",
            [&id.to_be_bytes()[..]],
        )
        .expect("edit id");
        trace_common::recompute_chain(&a, &cell_id, 1);
    }
    let o = ratchet(
        dir,
        &["--store", cell.to_str().expect("utf8"), "verify-chain"],
        "",
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "the cell is self-consistent: {}",
        text(&o)
    );
    cell
}

#[test]
fn a_cell_with_extreme_ids_cannot_brick_the_home() {
    let (w, base, cand) = gate_world();
    for id in [u128::MAX, 0] {
        let cell = hostile_cell(w.dir.path(), id);
        let o = w.cmd(&["merge-cells", cell.to_str().expect("utf8")], "");
        assert!(o.status.success(), "{}", text(&o));
    }
    // Every write of the home still works: append, record-score, a
    // recorded decision.
    let o = w.cmd(
        &["append"],
        "{\"kind\":\"note\",\"payload\":{\"after\":true}}\n",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = w.cmd(
        &[
            "record-score",
            "--commit",
            &cand,
            "--task",
            "zz-extra",
            "--scorer",
            "accuracy",
            "--value",
            "0.7",
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = gate(&w, &base, &cand, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a recorded decision: {}",
        text(&o)
    );
    for _ in 0..3 {
        let o = w.cmd(&["append"], "{\"kind\":\"note\",\"payload\":{}}\n");
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = w.cmd(&["verify-chain"], "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
