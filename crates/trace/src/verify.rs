//! Verification: what it reports ([`Fault`], [`VerifyReport`]), how it is
//! asked ([`VerifyOptions`]) and the store's doors to it. The walk itself
//! is in `walk.rs`; the per-row checks in `rows.rs`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use crate::checkpoint::Checkpoint;
use crate::encoding::{WriterKey, genesis_hash};
use crate::error::{Error, Result};
use crate::rows::Sink;
use crate::store::Store;
use crate::view::Verified;
use crate::walk::{Walk, walk};

/// What verification found wrong, at which seq.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// The first seq at which the store is wrong.
    pub seq: u64,
    /// What is wrong there.
    pub kind: FaultKind,
}

/// The kinds of damage verification detects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FaultKind {
    /// No event at this seq although later ones exist: a row was deleted.
    Missing {
        /// The next seq present.
        next_present: u64,
    },
    /// The row's `prev_hash` is not the hash of the event before it: rows were
    /// reordered, removed or inserted.
    BrokenLink,
    /// The row's content does not hash to its stored hash: it was edited.
    HashMismatch,
    /// Another event already carries this id: ids are unique by
    /// construction, so a second one was inserted by hand (or by a merge
    /// misled by a forged index).
    DuplicateId {
        /// The seq of the first event with the id.
        first_seq: u64,
    },
    /// A keyed store's row has no MAC.
    MacMissing,
    /// The MAC does not match: the row was written without the writer key.
    MacMismatch,
    /// A column does not have the shape the schema promises.
    MalformedRow {
        /// The column.
        #[serde(deserialize_with = "schema_name")]
        column: SchemaName,
    },
    /// The payload of a reserved kind does not parse as that kind.
    InvalidPayload {
        /// The parse error.
        reason: String,
    },
    /// A projection row disagrees with its event.
    ProjectionMismatch {
        /// The projection table.
        #[serde(deserialize_with = "schema_name")]
        table: SchemaName,
    },
    /// An event of a reserved kind has no projection row.
    ProjectionMissing {
        /// The projection table.
        #[serde(deserialize_with = "schema_name")]
        table: SchemaName,
    },
    /// A projection row has no event of its kind at its seq.
    ProjectionOrphan {
        /// The projection table.
        #[serde(deserialize_with = "schema_name")]
        table: SchemaName,
    },
    /// The store holds fewer events than a checkpoint says it had: truncated
    /// or rolled back to an older copy.
    Truncated {
        /// Size in the checkpoint.
        checkpoint_size: u64,
        /// Size found.
        store_size: u64,
    },
    /// The event at the checkpoint's size does not have the checkpoint's
    /// hash: the history was rewritten or rolled back and regrown.
    CheckpointMismatch,
    /// The database's schema is not the one ratchet created: a trigger,
    /// view, table or index was added, dropped or altered, or the metadata
    /// was edited. Reported at seq 0: it concerns the store as a whole.
    SchemaAltered {
        /// What differs, in words.
        what: String,
    },
    /// SQLite's own structural check (`PRAGMA quick_check`) fails: pages out
    /// of order, a subtree grafted under a wrong divider, pages nothing
    /// refers to. Queries that seek could then see other rows than a scan.
    /// Reported at seq 0.
    Structure {
        /// SQLite's first message.
        what: String,
    },
    /// A row sits at a seq outside the chain (`seq < 1`), where no event
    /// can vouch for it. Reported at seq 0.
    OutsideChain {
        /// The table holding the row.
        #[serde(deserialize_with = "schema_name")]
        table: SchemaName,
        /// The row's seq.
        row_seq: i64,
    },
    /// The per-commit statistics kept on append (`commit_stats`) disagree
    /// with the verified scores: a row was edited, added or removed. Checked
    /// when verification reaches the head; reported at seq 0.
    SummaryMismatch {
        /// The scorer of the first row that differs.
        scorer: String,
        /// Its scorer version.
        scorer_version: String,
        /// Its commit.
        commit: String,
    },
}

/// A table or column name a fault holds. (Spelled as an alias: serde
/// would borrow a field it sees written `&str` from the input, and the
/// name is read through [`schema_name`] instead.)
type SchemaName = &'static str;

/// The tables and columns a fault can name. A fault read back from JSON
/// (a verdict's verification stage) names one of these; the names stay
/// `&'static str` so that a fault is matched on the literal it was built
/// from.
const SCHEMA_NAMES: &[&str] = &[
    "events",
    "scores",
    "test_runs",
    "seq",
    "id",
    "ts_ms",
    "cell",
    "kind",
    "session",
    "commit_id",
    "payload",
    "origin_store",
    "origin_seq",
    "origin_hash",
    "prev_hash",
    "hash",
    "mac",
];

fn schema_name<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<&'static str, D::Error> {
    let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
    SCHEMA_NAMES
        .iter()
        .copied()
        .find(|known| *known == name)
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{name:?} is not a table or column of the trace's schema"
            ))
        })
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.seq == 0 {
            f.write_str("store: ")?;
        } else {
            write!(f, "seq {}: ", self.seq)?;
        }
        match &self.kind {
            FaultKind::Missing { next_present } => {
                write!(f, "event missing (deleted row; next present is seq {next_present})")
            }
            FaultKind::BrokenLink => f.write_str("prev_hash does not link to the previous event (rows reordered, removed or inserted)"),
            FaultKind::HashMismatch => f.write_str("content does not match its hash (row edited)"),
            FaultKind::DuplicateId { first_seq } => {
                write!(f, "event id already used by seq {first_seq} (ids are unique)")
            }
            FaultKind::MacMissing => f.write_str("no MAC in a keyed store"),
            FaultKind::MacMismatch => f.write_str("MAC does not match (written without the writer key)"),
            FaultKind::MalformedRow { column } => write!(f, "malformed column {column}"),
            FaultKind::InvalidPayload { reason } => write!(f, "invalid payload: {reason}"),
            FaultKind::ProjectionMismatch { table } => write!(f, "{table} row disagrees with its event"),
            FaultKind::ProjectionMissing { table } => write!(f, "{table} row missing for its event"),
            FaultKind::ProjectionOrphan { table } => write!(f, "{table} row has no matching event"),
            FaultKind::Truncated { checkpoint_size, store_size } => write!(
                f,
                "store holds {store_size} events but the checkpoint saw {checkpoint_size} (truncated or rolled back)"
            ),
            FaultKind::CheckpointMismatch => f.write_str(
                "event hash differs from the checkpoint's head (history rewritten or rolled back)",
            ),
            FaultKind::SchemaAltered { what } => {
                write!(f, "the database schema was altered: {what}")
            }
            FaultKind::Structure { what } => write!(
                f,
                "the database file's structure is damaged or was edited (quick_check: {what})"
            ),
            FaultKind::OutsideChain { table, row_seq } => write!(
                f,
                "{table} holds a row at seq {row_seq}, outside the chain (no event vouches for it)"
            ),
            FaultKind::SummaryMismatch {
                scorer,
                scorer_version,
                commit,
            } => write!(
                f,
                "the per-commit statistics of scorer {scorer:?} version {scorer_version:?} \
                 for commit {commit} disagree with its verified scores"
            ),
        }
    }
}

/// Settings of a verification; [`VerifyOptions::default`] recomputes the
/// whole chain, every projection row and the schema.
///
/// There is deliberately no way to skip a prefix: a file writer can edit rows
/// inside any prefix without touching the stored hashes, so a prefix that is
/// not recomputed is a prefix nobody checked (see ARCHITECTURE.md, threat
/// model). A checkpoint adds the rollback check; it never replaces work.
///
/// # Examples
///
/// ```
/// use ratchet_trace::{EventDraft, Store, VerifyOptions};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path(), Default::default())?;
/// store.append(EventDraft::json("note", &1)?)?;
/// let checkpoint = store.checkpoint()?; // held somewhere the store's writer cannot reach
/// store.append(EventDraft::json("note", &2)?)?;
///
/// // The store still holds the checkpoint's events, and more.
/// let report = store.verify_with(&VerifyOptions::default().checkpoint(checkpoint))?;
/// assert!(report.is_valid() && report.checkpoint_checked);
/// assert_eq!(report.size, 2);
/// // The trace as it stood at seq 1.
/// assert_eq!(store.verify_with(&VerifyOptions::default().up_to(1))?.size, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub(crate) key: Option<WriterKey>,
    pub(crate) checkpoint: Option<Checkpoint>,
    pub(crate) up_to: Option<u64>,
    pub(crate) keep_all_events: bool,
}

impl VerifyOptions {
    /// Also check every row's MAC with the writer key. A store opened with
    /// its writer key ([`crate::StoreOptions::writer_key`]) uses that key
    /// without being told.
    pub fn key(mut self, key: WriterKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Also check the store against a checkpoint held elsewhere: it must
    /// still hold the checkpoint's events, ending in the checkpoint's head.
    pub fn checkpoint(mut self, cp: Checkpoint) -> Self {
        self.checkpoint = Some(cp);
        self
    }

    /// Verify the chain only up to and including `seq`: the trace as it
    /// stood when an earlier decision was taken.
    pub fn up_to(mut self, seq: u64) -> Self {
        self.up_to = Some(seq);
        self
    }

    /// Keep every event whole in the [`Verified`] view, score events and a
    /// caller's plain events too (by default a score is kept as its numbers
    /// only, and a plain event — [`crate::is_plain`] — only counted): for
    /// exports that write every event out.
    pub fn keep_all_events(mut self) -> Self {
        self.keep_all_events = true;
        self
    }

    /// The checkpoint given, if any.
    pub(crate) fn checkpoint_given(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }

    /// The key given, if any.
    pub(crate) fn key_given(&self) -> Option<&WriterKey> {
        self.key.as_ref()
    }
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The store verified.
    pub store_id: String,
    /// Seq of the last event recomputed (the chain size if valid).
    pub size: u64,
    /// Hash of the last valid event.
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub head: blake3::Hash,
    /// Whether the store declares a writer key (its events should carry MACs).
    pub keyed: bool,
    /// Whether MACs were checked (a key was given or the store was opened with it).
    pub macs_checked: bool,
    /// Whether a checkpoint was compared.
    pub checkpoint_checked: bool,
    /// The first fault, if any.
    pub fault: Option<Fault>,
}

impl VerifyReport {
    /// True when nothing was found wrong.
    pub fn is_valid(&self) -> bool {
        self.fault.is_none()
    }

    /// True when the store is keyed but its MACs were not checked: the plain
    /// chain verified, which anyone who can write the file can rebuild. A
    /// caller that decides from the trace must treat this as unverified.
    pub fn macs_unchecked(&self) -> bool {
        self.keyed && !self.macs_checked
    }

    /// The report if valid.
    ///
    /// # Errors
    /// [`Error::Tampered`] with the first fault.
    pub fn into_result(self) -> Result<VerifyReport> {
        match self.fault {
            None => Ok(self),
            Some(fault) => Err(Error::Tampered { fault }),
        }
    }
}

impl Store {
    /// Recomputes the whole chain and every projection row.
    ///
    /// # Errors
    /// Only for failures to read ([`Error::Sqlite`]); damage is reported in
    /// [`VerifyReport::fault`].
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(&VerifyOptions::default())
    }

    /// Verifies before acting on the trace and returns what it read, folded
    /// into a [`Verified`] view — the only input of a decision (gate,
    /// monitor, best commit, heal, report, export, batch scoring). The view
    /// holds no connection: bytes written to the file after this returns
    /// cannot reach it.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{AsOf, CommitId, Error, Score, Store, StoreOptions, VerifyOptions, WriterKey};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let key = WriterKey::from_secret(&[7; 32])?;
    /// let mut store = Store::create(dir.path(), StoreOptions::default().writer_key(key.clone()))?;
    /// let commit = CommitId::parse(&"c".repeat(40))?;
    /// store.record_score(&Score::new(commit.clone(), "t1", "accuracy", 0.9), "run")?;
    ///
    /// // Opened without its key, a keyed store's MACs cannot be checked: no view.
    /// let reader = Store::open(dir.path(), StoreOptions::default())?;
    /// assert!(matches!(reader.verified(&VerifyOptions::default()), Err(Error::MacsUnchecked { .. })));
    ///
    /// let view = reader.verified(&VerifyOptions::default().key(key))?;
    /// assert_eq!(view.commit_stats_for(&commit, "accuracy", AsOf::Head).map(|s| s.n), Some(1));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Tampered`] with the first fault; [`Error::MacsUnchecked`] if
    /// the store is keyed and no key was given (in `options` or when opening);
    /// as [`Store::verify_with`] otherwise.
    pub fn verified(&self, options: &VerifyOptions) -> Result<Verified> {
        let (report, view) = self.verify_and_fold(options)?;
        let report = report.into_result()?;
        match view {
            Some(view) => Ok(view),
            None => Err(Error::MacsUnchecked {
                key_id: self.key_id.clone().unwrap_or(report.store_id),
            }),
        }
    }

    /// [`Store::verify_with`], also folding what it read into a
    /// [`Verified`] view — `Some` only when the trace is sound and, if
    /// keyed, its MACs were checked: for callers (the gate) that report a
    /// failed verification rather than stop at it.
    ///
    /// # Errors
    /// As [`Store::verify_with`].
    pub fn verify_and_fold(
        &self,
        options: &VerifyOptions,
    ) -> Result<(VerifyReport, Option<Verified>)> {
        let mut view = Verified::empty(
            VerifyReport {
                store_id: self.store_id.clone(),
                size: 0,
                head: genesis_hash(&self.store_id),
                keyed: self.key_id.is_some(),
                macs_checked: false,
                checkpoint_checked: false,
                fault: None,
            },
            genesis_hash(&self.store_id),
            options.keep_all_events,
        );
        let report = self.verify_inner(options, Some(&mut |b, r, p| view.fold_row(b, r, p)))?;
        if !report.is_valid() || report.macs_unchecked() {
            return Ok((report, None));
        }
        view.report = report.clone();
        view.shrink_to_fit();
        Ok((report, Some(view)))
    }

    /// Verifies with a key, a checkpoint or a limit. The store's own writer
    /// key, if it was opened with one, is used when `options` has none.
    ///
    /// # Errors
    /// [`Error::CheckpointOrigin`] if a checkpoint is for another store;
    /// [`Error::Sqlite`] for failures to read.
    #[tracing::instrument(name = "trace.verify", skip_all, fields(store = %self.store_id))]
    pub fn verify_with(&self, options: &VerifyOptions) -> Result<VerifyReport> {
        self.verify_inner(options, None)
    }

    fn verify_inner(
        &self,
        options: &VerifyOptions,
        fold: Option<&mut Sink<'_>>,
    ) -> Result<VerifyReport> {
        let with_key;
        let mut options = options;
        if options.key.is_none()
            && let Some(k) = &self.options.writer_key
        {
            with_key = options.clone().key(k.clone());
            options = &with_key;
        }
        if let Some(cp) = &options.checkpoint
            && cp.origin != self.store_id
        {
            return Err(Error::CheckpointOrigin {
                checkpoint_origin: cp.origin.clone(),
                store_origin: self.store_id.clone(),
            });
        }
        // One read transaction: a consistent snapshot while writers go on
        // (or the caller's, inside a `Snapshot`).
        let tx = if self.conn.is_autocommit() {
            Some(
                self.conn
                    .unchecked_transaction()
                    .map_err(Error::sqlite("starting a read transaction"))?,
            )
        } else {
            None
        };
        let mut report = walk(
            &self.conn,
            &self.store_id,
            options,
            Walk::Whole,
            fold,
            &mut |_| Ok(()),
        )?;
        report.keyed = self.key_id.is_some();
        drop(tx);
        match &report.fault {
            None => tracing::debug!(size = report.size, "chain verified"),
            Some(f) => tracing::warn!(fault = %f, "chain verification failed"),
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_reads_back_from_its_json() {
        let faults = [
            FaultKind::MalformedRow {
                column: "origin_hash",
            },
            FaultKind::ProjectionOrphan { table: "test_runs" },
            FaultKind::OutsideChain {
                table: "scores",
                row_seq: -3,
            },
            FaultKind::SchemaAltered {
                what: "a trigger".into(),
            },
            FaultKind::Missing { next_present: 9 },
        ];
        for kind in faults {
            let fault = Fault { seq: 4, kind };
            let json = serde_json::to_string(&fault).expect("json");
            let back: Fault = serde_json::from_str(&json).expect("reads back");
            assert_eq!(back, fault, "{json}");
        }
    }

    #[test]
    fn a_fault_naming_no_column_of_the_schema_is_refused() {
        let err = serde_json::from_str::<Fault>(
            r#"{"seq":1,"kind":{"fault":"malformed_row","column":"nonsense"}}"#,
        )
        .expect_err("unknown column");
        assert!(
            err.to_string()
                .contains("\"nonsense\" is not a table or column"),
            "{err}"
        );
    }
}
