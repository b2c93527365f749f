//! Per-commit statistics kept as the trace grows: the `commit_stats` table.
//!
//! One row per (scorer, scorer version, commit) holds Welford's running
//! state (count, mean, sum of squared deviations) with min, max and the seq
//! of the last score folded in. Every append or merge that inserts score
//! rows folds their values in seq order into the rows they touch, inside
//! the same transaction, so [`crate::Verified::commit_stats`] at the head reads
//! one row per scorer × version × commit instead of every score.
//!
//! The table is derived data, like the projection tables, and is checked
//! the same way: verification folds the verified score rows in seq order
//! again and requires the table to hold exactly that, to the bit (the fold
//! is deterministic, and SQLite stores a REAL as its 8 bytes). It is the one
//! table ratchet updates in place, so it has no UPDATE guard; an edit by
//! anyone else is a verification fault like any other.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};

/// The table, as created (schema version 2).
pub(crate) const DDL: &str = r#"
CREATE TABLE commit_stats (
    scorer         TEXT NOT NULL,
    scorer_version TEXT NOT NULL,
    commit_id      TEXT NOT NULL,
    n              INTEGER NOT NULL,
    mean           REAL NOT NULL,
    m2             REAL NOT NULL,
    min            REAL NOT NULL,
    max            REAL NOT NULL,
    last_seq       INTEGER NOT NULL,
    PRIMARY KEY (scorer, scorer_version, commit_id)
) WITHOUT ROWID;
"#;

/// Welford's running mean and sum of squared deviations, with min and max.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Welford {
    pub n: u64,
    pub mean: f64,
    pub m2: f64,
    pub min: f64,
    pub max: f64,
}

impl Welford {
    pub fn push(&mut self, x: f64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        // Saturating: a forged count read back from the table must not
        // panic a reader (verification reports the forgery).
        self.n = self.n.saturating_add(1);
        // Welford's update, in its own symbols: d = x − mean, mean += d / n.
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.mark_overflow();
    }

    /// Finite values near `f64::MAX` can overflow the fold; it is then
    /// marked +∞ (mean and sum of squares), never NaN: SQLite stores NaN as
    /// NULL, which would neither round-trip nor fit the NOT NULL columns,
    /// and every later score of the key would be refused (red team).
    fn mark_overflow(&mut self) {
        if !(self.mean.is_finite() && self.m2.is_finite()) {
            self.mean = f64::INFINITY;
            self.m2 = f64::INFINITY;
        }
    }

    /// Combines two states (Chan, Golub and LeVeque's pairwise update). An
    /// empty side leaves the other exactly as it was, so a single version's
    /// statistics are the sequential fold's to the bit.
    pub fn merge(&mut self, other: &Welford) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        // Chan, Golub & LeVeque's pairwise merge, in its symbols: n = na + nb,
        // d = mean_b − mean_a.
        let n = self.n.saturating_add(other.n);
        let d = other.mean - self.mean;
        let (na, nb) = (self.n as f64, other.n as f64);
        self.mean += d * nb / n as f64;
        self.m2 += other.m2 + d * d * na * nb / n as f64;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.n = n;
        self.mark_overflow();
    }

    /// Sample variance (n − 1 denominator), `None` below two values.
    pub fn variance(&self) -> Option<f64> {
        (self.n >= 2).then(|| self.m2 / (self.n - 1) as f64)
    }
}

/// One summary row's state: the fold and the last seq folded in.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Entry {
    fold: Welford,
    last_seq: u64,
}

impl Entry {
    /// Equal to the bit (`==` on floats would let `-0.0` pass for `0.0`,
    /// and `total_cmp` in a ranking tells them apart).
    fn same_bits(&self, other: &Entry) -> bool {
        let (a, b) = (&self.fold, &other.fold);
        a.n == b.n
            && self.last_seq == other.last_seq
            && [a.mean, a.m2, a.min, a.max]
                .iter()
                .zip([b.mean, b.m2, b.min, b.max])
                .all(|(x, y)| x.to_bits() == y.to_bits())
    }
}

/// One row of the table as stored: its key and state (`None` when a column
/// does not have the shape the schema promises).
type StoredRow = ((String, String, String), Option<Entry>);

/// Every row of `commit_stats`, by a plain scan of the table's b-tree.
///
/// Reads and verification both go through this: a scan visits every cell
/// whatever order the cells are in, where a keyed seek (`WHERE scorer = ?`)
/// stops at the first larger key. `PRAGMA quick_check` does not check key
/// order in a `WITHOUT ROWID` table, so a page whose cells were reordered
/// would let a seek miss rows that verification's scan compared (red team,
/// issue 14). What a read sees is therefore exactly what was verified.
fn all_rows(conn: &Connection) -> Result<Vec<StoredRow>> {
    const CONTEXT: &str = "reading per-commit statistics";
    let mut st = conn
        .prepare_cached(
            "SELECT scorer, scorer_version, commit_id, n, mean, m2, min, max, last_seq
               FROM commit_stats",
        )
        .map_err(Error::sqlite(CONTEXT))?;
    let mut rows = st.query([]).map_err(Error::sqlite(CONTEXT))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(Error::sqlite(CONTEXT))? {
        let text = |i| {
            row.get_ref(i)
                .ok()
                .and_then(crate::rows::text)
                .map(str::to_string)
        };
        let (Some(scorer), Some(version), Some(commit)) = (text(0), text(1), text(2)) else {
            out.push((("?".into(), "?".into(), "?".into()), None));
            continue;
        };
        out.push(((scorer, version, commit), entry_from_row(row, 3).ok()));
    }
    Ok(out)
}

/// Summaries being folded, keyed by `scorer \0 version \0 commit` (names
/// hold no control characters and commits are hex, so the key is
/// unambiguous; one `String` per key, none per value).
#[derive(Debug, Default)]
pub(crate) struct Summaries {
    entries: HashMap<String, Entry>,
    key: String,
}

fn split_key(key: &str) -> (&str, &str, &str) {
    let mut parts = key.splitn(3, '\0');
    let mut next = || parts.next().unwrap_or_default();
    (next(), next(), next())
}

impl Summaries {
    fn set_key(&mut self, scorer: &str, version: &str, commit: &str) {
        self.key.clear();
        self.key.push_str(scorer);
        self.key.push('\0');
        self.key.push_str(version);
        self.key.push('\0');
        self.key.push_str(commit);
    }

    /// Folds one score in, starting an untouched key from nothing.
    pub fn push(&mut self, scorer: &str, version: &str, commit: &str, value: f64, seq: u64) {
        self.set_key(scorer, version, commit);
        if !self.entries.contains_key(self.key.as_str()) {
            self.entries.insert(self.key.clone(), Entry::default());
        }
        self.fold_in(value, seq);
    }

    /// Folds `value` at `seq` into the entry of the current key.
    fn fold_in(&mut self, value: f64, seq: u64) {
        if let Some(entry) = self.entries.get_mut(self.key.as_str()) {
            entry.fold.push(value);
            entry.last_seq = seq;
        }
    }

    /// Folds one score in, starting an untouched key from its stored row
    /// (read inside the caller's write transaction).
    pub fn push_onto(
        &mut self,
        conn: &Connection,
        scorer: &str,
        version: &str,
        commit: &str,
        value: f64,
        seq: u64,
    ) -> Result<()> {
        self.set_key(scorer, version, commit);
        if !self.entries.contains_key(self.key.as_str()) {
            let stored = read_row(conn, scorer, version, commit)?.unwrap_or_default();
            self.entries.insert(self.key.clone(), stored);
        }
        self.fold_in(value, seq);
        Ok(())
    }

    /// Writes every touched row (inside the caller's write transaction).
    pub fn write(&self, conn: &Connection) -> Result<()> {
        let mut st = conn
            .prepare_cached(
                "INSERT INTO commit_stats (scorer, scorer_version, commit_id, n, mean, m2, min, max, last_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (scorer, scorer_version, commit_id) DO UPDATE SET
                   n = excluded.n, mean = excluded.mean, m2 = excluded.m2, min = excluded.min,
                   max = excluded.max, last_seq = excluded.last_seq",
            )
            .map_err(Error::sqlite("preparing the per-commit statistics update"))?;
        for (key, e) in &self.entries {
            let (scorer, version, commit) = split_key(key);
            st.execute(params![
                scorer,
                version,
                commit,
                e.fold.n as i64,
                e.fold.mean,
                e.fold.m2,
                e.fold.min,
                e.fold.max,
                e.last_seq as i64
            ])
            .map_err(Error::sqlite("updating per-commit statistics"))?;
        }
        Ok(())
    }

    /// Compares the stored table with these summaries (folded from the
    /// verified scores): `None` when they agree exactly, else the first
    /// (scorer, version, commit) that differs, is missing or is extra.
    pub fn difference(mut self, conn: &Connection) -> Result<Option<(String, String, String)>> {
        for (key, stored) in all_rows(conn)? {
            self.set_key(&key.0, &key.1, &key.2);
            // Removed on the first match: a key stored twice (a corrupted
            // b-tree) finds nothing the second time.
            let folded = self.entries.remove(self.key.as_str());
            match (stored, folded) {
                (Some(s), Some(f)) if s.same_bits(&f) => {}
                _ => return Ok(Some(key)),
            }
        }
        let mut left: Vec<&String> = self.entries.keys().collect();
        left.sort();
        Ok(left.first().map(|k| {
            let (a, b, c) = split_key(k);
            (a.to_string(), b.to_string(), c.to_string())
        }))
    }
}

fn entry_from_row(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Entry> {
    let count: i64 = row.get(at)?;
    let last_seq: i64 = row.get(at + 5)?;
    Ok(Entry {
        fold: Welford {
            n: u64::try_from(count).map_err(|_| crate::store::conv_err(at, "n"))?,
            mean: crate::read::real(row, at + 1)?,
            m2: crate::read::real(row, at + 2)?,
            min: crate::read::real(row, at + 3)?,
            max: crate::read::real(row, at + 4)?,
        },
        last_seq: u64::try_from(last_seq)
            .map_err(|_| crate::store::conv_err(at + 5, "last_seq"))?,
    })
}

fn read_row(conn: &Connection, scorer: &str, version: &str, commit: &str) -> Result<Option<Entry>> {
    conn.prepare_cached(
        "SELECT n, mean, m2, min, max, last_seq FROM commit_stats
          WHERE scorer = ?1 AND scorer_version = ?2 AND commit_id = ?3",
    )
    .and_then(|mut st| {
        st.query_row(params![scorer, version, commit], |r| entry_from_row(r, 0))
            .optional()
    })
    .map_err(Error::sqlite("reading per-commit statistics"))
}

/// Builds the table from the scores already stored (upgrading a version-1
/// store), folding them in seq order as appends would have.
pub(crate) fn rebuild(conn: &Connection) -> Result<()> {
    let mut summaries = Summaries::default();
    let mut st = conn
        .prepare(
            "SELECT seq, scorer, scorer_version, commit_id, value FROM scores NOT INDEXED ORDER BY seq",
        )
        .map_err(Error::sqlite("building per-commit statistics"))?;
    let mut rows = st
        .query([])
        .map_err(Error::sqlite("building per-commit statistics"))?;
    while let Some(r) = rows
        .next()
        .map_err(Error::sqlite("building per-commit statistics"))?
    {
        let fold = (|| -> rusqlite::Result<_> {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                crate::read::real(r, 4)?,
            ))
        })()
        .map_err(Error::sqlite("building per-commit statistics"))?;
        let (seq, scorer, version, commit, value) = fold;
        summaries.push(&scorer, &version, &commit, value, seq as u64);
    }
    summaries.write(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_equals_the_sequential_fold_within_rounding() {
        let xs: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 / 7.0)
            .collect();
        let mut whole = Welford::default();
        xs.iter().for_each(|&x| whole.push(x));
        let (mut a, mut b) = (Welford::default(), Welford::default());
        xs[..313].iter().for_each(|&x| a.push(x));
        xs[313..].iter().for_each(|&x| b.push(x));
        let single = a;
        a.merge(&b);
        assert_eq!((a.n, a.min, a.max), (whole.n, whole.min, whole.max));
        assert!((a.mean - whole.mean).abs() <= 1e-12 * whole.mean.abs());
        assert!((a.m2 - whole.m2).abs() <= 1e-12 * whole.m2);
        let mut empty = Welford::default();
        empty.merge(&single);
        assert_eq!(empty, single, "merging into nothing is exact");
    }

    #[test]
    fn keys_split_back_into_their_parts() {
        let mut summaries = Summaries::default();
        summaries.push("acc", "v 1.2", &"ab".repeat(20), 1.0, 3);
        let key = summaries.entries.keys().next().cloned().unwrap_or_default();
        assert_eq!(split_key(&key), ("acc", "v 1.2", "ab".repeat(20).as_str()));
    }
}
