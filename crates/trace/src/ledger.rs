//! [`Ledger`]: a store with its verified view kept warm by a long-lived
//! owner.
//!
//! The owner verifies the whole trace once and from then on trusts the
//! head it holds in memory: [`Ledger::refresh`] reads only the events after
//! that head, checks that they chain from it (hashes, MACs, projections)
//! and folds them in, and an append through the ledger folds the events it
//! wrote without reading them back. A file writer who edits earlier rows
//! cannot change what this owner decides (they are not read again); a full
//! verification — a fresh process, [`Ledger::reverify`] — still finds the
//! edit at its seq.

use crate::error::{Error, Result};
use crate::event::{EventDraft, Receipt};
use crate::projection::{Projection, Score, TestRun};
use crate::store::{AppendOnce, Head, Store};
use crate::verify::VerifyOptions;
use crate::view::Verified;
use crate::walk::{Walk, walk};

/// A store and its [`Verified`] view, kept in step.
///
/// # Examples
///
/// ```
/// use ratchet_trace::{CommitId, Ledger, Score, Store, VerifyOptions};
///
/// let dir = tempfile::tempdir()?;
/// let store = Store::create(dir.path(), Default::default())?;
/// let mut ledger = Ledger::new(store, VerifyOptions::default())?; // one full verification
/// let commit = CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904")?;
/// ledger.record_score(&Score::new(commit.clone(), "t1", "accuracy", 0.5), "run")?; // folded, not re-read
///
/// // Another writer appends; the owner reads only what is new.
/// let mut other = Store::open(dir.path(), Default::default())?;
/// other.record_score(&Score::new(commit.clone(), "t2", "accuracy", 1.0), "run")?;
/// assert_eq!(ledger.refresh()?, 1);
/// let stats = ledger.view().commit_stats_for(&commit, "accuracy", ratchet_trace::AsOf::Head);
/// assert_eq!(stats.map(|s| s.n), Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Ledger {
    store: Store,
    view: Verified,
    options: VerifyOptions,
    /// Heads this owner has held (the first verification's, and each
    /// refresh's): a checkpoint at one of them is checked without a walk.
    heads: Vec<Head>,
    /// Checkpoints the first verification checked the trace against.
    checkpoints: Vec<crate::Checkpoint>,
}

impl Ledger {
    /// Verifies the whole trace once and keeps what it read.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{EventDraft, Ledger, Store, VerifyOptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let mut store = Store::create(dir.path(), Default::default())?;
    /// store.append(EventDraft::json("note", &"before")?)?;
    ///
    /// let mut ledger = Ledger::new(store, VerifyOptions::default())?; // one full verification
    /// assert_eq!(ledger.view().head().size, 1);
    /// ledger.append(EventDraft::json("note", &"through the ledger")?)?; // folded as written
    /// assert_eq!(ledger.view().head().size, 2);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Store::verified`]: [`Error::Tampered`], [`Error::MacsUnchecked`].
    pub fn new(store: Store, options: VerifyOptions) -> Result<Ledger> {
        let view = store.verified(&options)?;
        let heads = vec![view.head()];
        let checkpoints = options.checkpoint_given().cloned().into_iter().collect();
        Ok(Ledger {
            store,
            view,
            options,
            heads,
            checkpoints,
        })
    }

    /// A ledger over `store` from a view already verified from it (by
    /// [`Store::verify_and_fold`], when the caller needed the report too).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the view is of another store.
    pub fn with_view(store: Store, view: Verified, options: VerifyOptions) -> Result<Ledger> {
        if view.store_id() != store.id() {
            return Err(Error::invalid(
                "view",
                format!(
                    "the view is of store {}, not of {}",
                    view.store_id(),
                    store.id()
                ),
            ));
        }
        let heads = vec![view.head()];
        let checkpoints = options.checkpoint_given().cloned().into_iter().collect();
        Ok(Ledger {
            store,
            view,
            options,
            heads,
            checkpoints,
        })
    }

    /// The verified view, as of the last refresh or append through this
    /// ledger.
    pub fn view(&self) -> &Verified {
        &self.view
    }

    /// The store, for plain reads (event listings) and its identity.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for writes made around the ledger (ingestion, merges):
    /// the view does not see them until the next [`Ledger::refresh`], which
    /// checks them like any other new event.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The store back, the view dropped.
    pub fn into_store(self) -> Store {
        self.store
    }

    /// Reads the events appended after the view's head (by anyone), checks
    /// that they chain from the head held in memory — every hash, MAC and
    /// projection row — and folds them in. Returns how many were new.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_trace::{EventDraft, Ledger, Store, VerifyOptions};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::create(dir.path(), Default::default())?;
    /// let mut ledger = Ledger::new(store, VerifyOptions::default())?;
    ///
    /// // Another process appends to the same store.
    /// let mut other = Store::open(dir.path(), Default::default())?;
    /// other.append_batch([EventDraft::json("note", &1)?, EventDraft::json("note", &2)?])?;
    ///
    /// assert_eq!(ledger.view().head().size, 0); // not seen yet
    /// assert_eq!(ledger.refresh()?, 2); // only the new events are read and checked
    /// assert_eq!(ledger.view().head(), other.head()?);
    /// assert_eq!(ledger.refresh()?, 0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Tampered`] at the first bad new event (a row at or below
    /// the head rewritten so that the new events no longer chain from it
    /// shows here as a broken link); the view is left as it was.
    pub fn refresh(&mut self) -> Result<u64> {
        let before = self.view.head();
        let mut new = Vec::new();
        let tx = self
            .store
            .conn
            .unchecked_transaction()
            .map_err(Error::sqlite("starting a read transaction"))?;
        let options = self.key_options();
        let report = walk(
            &self.store.conn,
            &self.store.store_id,
            &options,
            Walk::After(before),
            Some(&mut |b, r, p| new.push((b.event(r), p))),
            &mut |_| Ok(()),
        )?;
        drop(tx);
        report.into_result()?;
        let added = new.len() as u64;
        for (e, p) in new {
            self.view.fold(e, p);
        }
        if added > 0 {
            self.heads.push(self.view.head());
        }
        Ok(added)
    }

    /// Verifies the whole trace again (what a restart costs) and replaces
    /// the view with what it read: how an owner's sleep phase finds an edit
    /// to rows it had already folded.
    ///
    /// # Errors
    /// As [`Ledger::new`]; the view is left as it was.
    pub fn reverify(&mut self) -> Result<()> {
        let view = self.store.verified(&self.options)?;
        self.heads = vec![view.head()];
        self.checkpoints = self
            .options
            .checkpoint_given()
            .cloned()
            .into_iter()
            .collect();
        self.view = view;
        Ok(())
    }

    /// Whether `checkpoint` agrees with a head this owner has held, without
    /// reading the file: `Some(true)` it does, `Some(false)` it cannot (the
    /// trace it vouches for is longer than the view, or a held head at its
    /// size differs), `None` unknown (its size is not one of the held heads;
    /// a full verification decides).
    pub fn checkpoint_matches(&self, checkpoint: &crate::Checkpoint) -> Option<bool> {
        if checkpoint.origin != self.view.store_id() || checkpoint.size > self.view.head().size {
            return Some(false);
        }
        if checkpoint.size == 0 {
            return Some(checkpoint.head == self.view.genesis());
        }
        if self.checkpoints.contains(checkpoint) {
            return Some(true);
        }
        self.heads
            .iter()
            .find(|h| h.size == checkpoint.size)
            .map(|h| h.hash == checkpoint.head)
    }

    /// The options with the store's own key when none was given.
    fn key_options(&self) -> VerifyOptions {
        let mut options = VerifyOptions::default();
        if let Some(k) = self
            .options
            .key_given()
            .or(self.store.options.writer_key.as_ref())
        {
            options = options.key(k.clone());
        }
        options
    }

    /// Appends one event and folds it in.
    ///
    /// # Errors
    /// As [`Store::append`].
    pub fn append(&mut self, draft: EventDraft) -> Result<Receipt> {
        let mut receipts = self.append_batch(vec![draft])?;
        receipts
            .pop()
            .ok_or_else(|| Error::invalid("batch", "internal: no receipt for the event"))
    }

    /// Appends events in one transaction and folds them in: directly when
    /// they chain from the view's head (nobody else appended between), else
    /// by a refresh that reads the gap and them.
    ///
    /// # Errors
    /// As [`Store::append_batch`]; after a successful append, as
    /// [`Ledger::refresh`].
    pub fn append_batch(&mut self, drafts: Vec<EventDraft>) -> Result<Vec<Receipt>> {
        match self.append_inner(drafts, None)? {
            AppendOnce::Appended(r) => Ok(r),
            AppendOnce::AlreadyAppended { .. } => Ok(Vec::new()),
        }
    }

    /// [`Store::append_once`], folded in.
    ///
    /// # Errors
    /// As [`Store::append_once`].
    ///
    /// The key is looked for in the verified view first (every marker up to
    /// its head), then by the write transaction among newer events only: the
    /// check costs what the view has not seen, not a scan of the trace.
    pub fn append_once(&mut self, key: &str, drafts: Vec<EventDraft>) -> Result<AppendOnce> {
        let session = format!("ingest:{key}");
        if let Some(e) = self.view.events().iter().find(|e| {
            e.kind == crate::event::ReservedKind::Ingest.as_str()
                && e.origin.is_none()
                && e.session == session
        }) {
            return Ok(AppendOnce::AlreadyAppended { seq: e.seq });
        }
        self.append_inner(drafts, Some(key))
    }

    /// Records one score, folded in.
    ///
    /// # Errors
    /// As [`Store::record_score`].
    pub fn record_score(&mut self, score: &Score, session: &str) -> Result<Receipt> {
        self.append(score.to_draft()?.session(session))
    }

    /// Records several scores in one transaction, folded in.
    ///
    /// # Errors
    /// As [`Store::record_scores`].
    pub fn record_scores(&mut self, scores: &[Score], session: &str) -> Result<Vec<Receipt>> {
        let drafts = scores
            .iter()
            .map(|s| Ok(s.to_draft()?.session(session)))
            .collect::<Result<Vec<_>>>()?;
        self.append_batch(drafts)
    }

    /// Records one test run, folded in.
    ///
    /// # Errors
    /// As [`Store::record_test_run`].
    pub fn record_test_run(&mut self, run: &TestRun, session: &str) -> Result<Receipt> {
        self.append(run.to_draft()?.session(session))
    }

    fn append_inner(&mut self, drafts: Vec<EventDraft>, once: Option<&str>) -> Result<AppendOnce> {
        let known_through = if once.is_some() {
            self.view.head().size
        } else {
            0
        };
        let (outcome, written) = self.store.append_events(drafts, once, known_through)?;
        let head = self.view.head();
        let chains = written
            .first()
            .is_some_and(|e| e.seq == head.size + 1 && e.prev_hash == head.hash);
        if chains {
            for e in written {
                // Validated and projected on append, exactly as verification
                // projects it.
                let projection = Projection::from_event(&e.kind, e.commit.as_ref(), &e.payload)
                    .ok()
                    .flatten();
                self.view.fold(e, projection);
            }
        } else if !written.is_empty() || matches!(outcome, AppendOnce::AlreadyAppended { .. }) {
            self.refresh()?;
        }
        Ok(outcome)
    }
}
