//! Trace store benchmarks. Figures and the command that produced them are
//! in benches/README.md.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ratchet_benches::{commit, note, note_store, score_store};
use ratchet_trace::{
    AsOf, Durability, EventDraft, MergeOptions, Store, StoreOptions, VerifyOptions,
};
use rusqlite::params;

const BATCH: usize = 1000;

/// Chained append vs a raw rusqlite INSERT of the same rows, same batch size,
/// same table shape and durability, without hashing, validation or triggers.
///
/// The two are interleaved: every timed batch of one side is paired with an
/// untimed batch of the other, so both see the same machine state and the
/// same table sizes (run one after the other, whichever went first was
/// charged for the page-cache writeback of everything before it).
fn append(c: &mut Criterion) {
    for durability in [Durability::Full, Durability::Normal] {
        append_pair(c, durability);
    }
}

/// The raw baseline: a plain table with the events table's columns and id index.
struct RawTable {
    conn: rusqlite::Connection,
    seq: i64,
    payloads: Vec<Vec<u8>>,
}

impl RawTable {
    fn new(path: &std::path::Path, sync: &str) -> Self {
        let conn = rusqlite::Connection::open(path).expect("raw db");
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};
             CREATE TABLE events (seq INTEGER PRIMARY KEY, id BLOB NOT NULL, ts_ms INTEGER NOT NULL,
                cell TEXT NOT NULL, session TEXT NOT NULL, kind TEXT NOT NULL, commit_id TEXT,
                payload BLOB NOT NULL, origin_store TEXT, origin_seq INTEGER, origin_hash BLOB,
                prev_hash BLOB NOT NULL, hash BLOB NOT NULL, mac BLOB);
             CREATE INDEX events_by_id ON events (id);"
        ))
        .expect("raw schema");
        // The same payload bytes as `note(i)`.
        let payloads = (0..BATCH)
            .map(|i| {
                format!(
                    r#"{{"step":{i},"tool":"search","ok":true,"tokens":{}}}"#,
                    i % 977
                )
                .into_bytes()
            })
            .collect();
        RawTable {
            conn,
            seq: 0,
            payloads,
        }
    }

    fn insert_batch(&mut self) {
        let hash = [7u8; 32];
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("tx");
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO events (seq, id, ts_ms, cell, session, kind, commit_id, payload,
                        origin_store, origin_seq, origin_hash, prev_hash, hash, mac)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .expect("prepare");
            for p in &self.payloads {
                self.seq += 1;
                let id = (self.seq as u128).to_be_bytes();
                st.execute(params![
                    self.seq,
                    &id[..],
                    1_764_460_800_000i64,
                    "01JDXK0000000000000000000A",
                    "bench",
                    "note",
                    None::<&str>,
                    p,
                    None::<&str>,
                    None::<i64>,
                    None::<&[u8]>,
                    &hash[..],
                    &hash[..],
                    None::<&[u8]>
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
}

fn append_pair(c: &mut Criterion, durability: Durability) {
    let sync = match durability {
        Durability::Full => "FULL",
        _ => "NORMAL",
    };
    let mut g = c.benchmark_group(format!("append_batch_1000_{}", sync.to_lowercase()));
    g.throughput(Throughput::Elements(BATCH as u64));
    g.sample_size(30).measurement_time(Duration::from_secs(8));

    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(
        dir.path().join("chained"),
        StoreOptions::default().durability(durability),
    )
    .expect("store");
    let mut raw = RawTable::new(&dir.path().join("raw.db"), sync);
    let drafts: Vec<_> = (0..BATCH).map(note).collect();
    g.bench_function("chained", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                raw.insert_batch();
                let d = drafts.clone();
                let t = Instant::now();
                store.append_batch(d).expect("append");
                timed += t.elapsed();
            }
            timed
        })
    });
    g.bench_function("raw_insert", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                store.append_batch(drafts.clone()).expect("append");
                let t = Instant::now();
                raw.insert_batch();
                timed += t.elapsed();
            }
            timed
        })
    });
    g.finish();
}

fn point_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = note_store(&dir.path().join("s"), 200_000);
    let ids: Vec<_> = store
        .events_after(0, usize::MAX)
        .expect("read")
        .into_iter()
        .map(|e| e.id)
        .collect();
    let mut g = c.benchmark_group("point_read");
    let mut i = 0usize;
    g.bench_function("event_by_id_200k", |b| {
        b.iter(|| {
            i = (i + 7919) % ids.len();
            black_box(store.event_by_id(ids[i]).expect("read").expect("present"))
        })
    });
    // The limit: a raw prepared SELECT of the same row's columns by id on
    // the same file, read into owned values as `event_by_id` does.
    let raw = ratchet_benches::raw_connection(&store);
    type RawRow = (
        i64,
        Vec<u8>,
        i64,
        String,
        String,
        String,
        Option<String>,
        Vec<u8>,
        Vec<u8>,
    );
    let read_raw = |raw: &rusqlite::Connection, id: &ulid::Ulid| -> RawRow {
        raw.prepare_cached(
            "SELECT seq, id, ts_ms, cell, session, kind, commit_id, payload, hash FROM events WHERE id = ?1",
        )
        .expect("prepare")
        .query_row([&id.0.to_be_bytes()[..]], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .expect("row")
    };
    g.bench_function("raw_select_by_id_200k", |b| {
        b.iter(|| {
            i = (i + 7919) % ids.len();
            black_box(read_raw(&raw, &ids[i]))
        })
    });
    let tx = raw.unchecked_transaction().expect("read transaction");
    g.bench_function("raw_select_by_id_200k_in_transaction", |b| {
        b.iter(|| {
            i = (i + 7919) % ids.len();
            black_box(read_raw(&tx, &ids[i]))
        })
    });
    drop(tx);
    g.finish();
}

fn verify_and_stats(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = score_store(&dir.path().join("s"), N, 100);
    let notes = note_store(&dir.path().join("n"), N);

    let mut g = c.benchmark_group("verify_1m");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    g.bench_function("scores", |b| {
        b.iter(|| assert!(store.verify().expect("verify").is_valid()))
    });
    g.bench_function("notes", |b| {
        b.iter(|| assert!(notes.verify().expect("verify").is_valid()))
    });
    // The limit of verify's work on the same rows: one raw scan of the
    // hashed columns in seq order with a keyed BLAKE3 over the same bytes
    // (one thread; verification also re-derives projections and checks
    // links, the schema and metadata).
    for (name, st) in [
        ("scores_physical_limit", &store),
        ("notes_physical_limit", &notes),
    ] {
        let raw = ratchet_benches::raw_connection(st);
        let key = *blake3::hash(st.id().as_bytes()).as_bytes();
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut q = raw
                    .prepare_cached(
                        "SELECT seq, prev_hash, id, ts_ms, cell, session, kind, commit_id, payload FROM events ORDER BY seq",
                    )
                    .expect("prepare");
                let mut rows = q.query([]).expect("scan");
                let mut last = [0u8; 32];
                while let Some(r) = rows.next().expect("row") {
                    let mut h = blake3::Hasher::new_keyed(&key);
                    for i in 0..9 {
                        match r.get_ref(i).expect("column") {
                            rusqlite::types::ValueRef::Integer(v) => {
                                h.update(&v.to_le_bytes());
                            }
                            rusqlite::types::ValueRef::Text(t)
                            | rusqlite::types::ValueRef::Blob(t) => {
                                h.update(&(t.len() as u64).to_le_bytes());
                                h.update(t);
                            }
                            _ => {
                                h.update(&[0]);
                            }
                        }
                    }
                    last = *h.finalize().as_bytes();
                }
                black_box(last)
            })
        });
    }
    g.finish();

    // Decisions query the view verification folds (verified once here, as
    // a warm owner holds it; the verification itself is `verify_1m`).
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    let mut g = c.benchmark_group("commit_stats_1m");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    g.bench_function("100_commits", |b| {
        b.iter(|| black_box(view.commit_stats("accuracy", AsOf::Head)))
    });
    // The same figures by a scan (what a read at an earlier seq does): as
    // of a seq before each commit's last score (the rows are round-robin
    // over the 100 commits), so every commit's values are folded again.
    let before_last = view.head().size - 100;
    g.bench_function("100_commits_by_scan", |b| {
        b.iter(|| black_box(view.commit_stats("accuracy", AsOf::Seq(before_last))))
    });
    // SQLite's own aggregate over the same rows: the yardstick.
    let raw = ratchet_benches::raw_connection(&store);
    // SQLite's plan (its covering index on scorer, commit) and the same
    // aggregate forced onto the table scan the read rule allows.
    for (name, table) in [
        ("sqlite_group_by_100_commits", "scores"),
        (
            "sqlite_group_by_not_indexed_100_commits",
            "scores NOT INDEXED",
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(ratchet_benches::group_by_commit(&raw, table, "accuracy")))
        });
    }
    g.bench_function("one_commit_of_100", |b| {
        let c7 = commit(7);
        b.iter(|| black_box(view.commit_stats_for(&c7, "accuracy", AsOf::Head)))
    });
    g.finish();
}

fn merge(c: &mut Criterion) {
    const N: usize = 200_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let score_cell = dir.path().join("score-cell");
    let note_cell = dir.path().join("note-cell");
    drop(score_store(&score_cell, N, 10));
    drop(note_store(&note_cell, N));
    let mut g = c.benchmark_group("merge_cell_200k");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    let mut k = 0;
    for (name, cell) in [("notes", &note_cell), ("scores", &score_cell)] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    k += 1;
                    Store::create(dir.path().join(format!("home{k}")), StoreOptions::default())
                        .expect("home")
                },
                |mut home| {
                    let r = home
                        .merge_cell(cell, &MergeOptions::default())
                        .expect("merge");
                    assert_eq!(r.ingested, N as u64);
                    home
                },
                BatchSize::PerIteration,
            )
        });
        // The yardstick: the home appending the same events itself (read
        // back from the cell once, appended in batches of 10,000 as the
        // store was made), in the same run.
        let events: Vec<EventDraft> = Store::open(cell, StoreOptions::default())
            .expect("cell")
            .events_after(0, usize::MAX)
            .expect("events")
            .into_iter()
            .map(|e| {
                let mut d = EventDraft::raw(e.kind.clone(), e.payload.clone()).session(e.session);
                if let Some(c) = e.commit {
                    d = d.commit(c);
                }
                d
            })
            .collect();
        g.bench_function(format!("{name}_home_append_baseline"), |b| {
            b.iter_batched(
                || {
                    k += 1;
                    let home =
                        Store::create(dir.path().join(format!("home{k}")), StoreOptions::default())
                            .expect("home");
                    (home, events.clone())
                },
                |(mut home, events)| {
                    let mut it = events.into_iter().peekable();
                    while it.peek().is_some() {
                        home.append_batch(it.by_ref().take(10_000)).expect("append");
                    }
                    home
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, append, point_read, verify_and_stats, merge);
criterion_main!(benches);
