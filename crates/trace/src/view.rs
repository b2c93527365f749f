//! [`Verified`]: what verification read, folded into memory — the only
//! thing a decision reads.
//!
//! Verification copies each event's bytes out of SQLite once, checks them
//! (hash, MAC, projection) and hands the same bytes to [`Fold`], which
//! parses scores and test runs from the *event payloads* (never from the
//! projection tables) and keeps them interned. Nothing here holds a
//! connection: once a `Verified` exists, no byte written to `trace.db`
//! afterwards can reach it.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::event::{CommitId, Event, ReservedKind};
use crate::projection::{Projection, Score, TestRun};
use crate::rows::{Batch, OwnedRow};
use crate::store::Head;
use crate::summary::Welford;
use crate::verify::VerifyReport;

mod query;
mod sources;

pub use sources::{Producer, SetAside, Side, Sources, merge_set_aside};

/// How much of the trace a query reads: all the view holds, or the trace
/// as it stood when it held `seq` events — what a decision recorded then
/// saw. A bare `u64` converts to [`AsOf::Seq`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AsOf {
    /// Every event in the view.
    #[default]
    Head,
    /// Events with seq at most this.
    Seq(u64),
}

impl AsOf {
    fn max_seq(self) -> u64 {
        match self {
            AsOf::Head => u64::MAX,
            AsOf::Seq(seq) => seq,
        }
    }
}

impl From<u64> for AsOf {
    fn from(seq: u64) -> AsOf {
        AsOf::Seq(seq)
    }
}

/// A scorer as the queries read it: by name, and — since a scorer's
/// version (a rubric's content hash) changes what its numbers mean — pinned
/// to one version or not. `"accuracy".into()` reads every version; readers
/// that decide pin one ([`ScorerRef::at_version`]) so versions never mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScorerRef<'a> {
    /// The scorer's name.
    pub name: &'a str,
    /// One version only, or every version.
    pub version: Option<&'a str>,
}

impl<'a> ScorerRef<'a> {
    /// `name`, at `version` only.
    pub fn at_version(name: &'a str, version: &'a str) -> Self {
        ScorerRef {
            name,
            version: Some(version),
        }
    }
}

impl<'a> From<&'a str> for ScorerRef<'a> {
    fn from(name: &'a str) -> Self {
        ScorerRef {
            name,
            version: None,
        }
    }
}

impl<'a> From<&'a String> for ScorerRef<'a> {
    fn from(name: &'a String) -> Self {
        name.as_str().into()
    }
}

/// One version of a scorer in the trace, from [`Verified::scorer_versions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScorerVersion {
    /// The version.
    pub version: String,
    /// Score rows of it.
    pub n: u64,
    /// Seq of its newest score.
    pub last_seq: u64,
}

/// Sufficient statistics of one scorer's values under one commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitStats {
    /// The commit.
    pub commit: CommitId,
    /// Number of score rows.
    pub n: u64,
    /// Mean value.
    pub mean: f64,
    /// Sample variance (n − 1 denominator); `None` when n < 2.
    pub variance: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The scores of one task under a baseline and a candidate commit, borrowed
/// from [`PairedScores`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedTask<'a> {
    /// The task.
    pub task: &'a str,
    /// Baseline values, in trace order (empty if the baseline never ran it).
    pub baseline: &'a [f64],
    /// Candidate values, in trace order (empty if the candidate never ran it).
    pub candidate: &'a [f64],
}

/// Every task of one scorer under a baseline and a candidate commit, from
/// [`Verified::paired_scores`], **in the baseline's trace order**: by the
/// seq of the baseline's first score of the task. Tasks only the candidate
/// ran come after all of them, by the seq of the candidate's first score.
///
/// The order is the one a sequential test must read: it was fixed when the
/// baseline was measured, so nothing the candidate's producer does (task
/// names, the order its scores arrive in, what it leaves out) can choose
/// it, and evidence arriving later only extends it.
#[derive(Debug, Clone)]
pub struct PairedScores<'v> {
    names: &'v Names,
    rows: Vec<PairRow>,
    values: Vec<f64>,
    /// The seq each of `values` was recorded at, index for index.
    seqs: Vec<u64>,
}

/// The seqs one task's scores were recorded at, index for index with its
/// [`PairedTask`]'s values: from [`PairedScores::seqs`]. A reader that
/// fixes its own order of tasks (the gate's name sweep) needs to know when
/// each score arrived, not only the baseline's order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedSeqs<'a> {
    /// Seqs of the baseline's values.
    pub baseline: &'a [u64],
    /// Seqs of the candidate's values.
    pub candidate: &'a [u64],
}

/// One task's place in [`PairedScores::values`]: the baseline's values at
/// `start..start + base`, the candidate's right after them.
#[derive(Debug, Clone, Copy)]
struct PairRow {
    task: u32,
    start: u32,
    base: u32,
    cand: u32,
}

impl PartialEq for PairedScores<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<'v> PairedScores<'v> {
    /// Number of tasks (on either side).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether neither side has a score.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn task_at(&self, r: &PairRow) -> PairedTask<'_> {
        let start = r.start as usize;
        let base_end = start + r.base as usize;
        let cand_end = base_end + r.cand as usize;
        PairedTask {
            task: self.names.name(r.task),
            baseline: &self.values[start..base_end],
            candidate: &self.values[base_end..cand_end],
        }
    }

    /// The tasks in order (see the type's documentation).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = PairedTask<'_>> + '_ {
        self.rows.iter().map(|r| self.task_at(r))
    }

    /// The seqs of each task's scores, in the order of [`PairedScores::iter`].
    pub fn seqs(&self) -> impl ExactSizeIterator<Item = PairedSeqs<'_>> + '_ {
        self.rows.iter().map(|r| {
            let start = r.start as usize;
            let base_end = start + r.base as usize;
            let cand_end = base_end + r.cand as usize;
            PairedSeqs {
                baseline: &self.seqs[start..base_end],
                candidate: &self.seqs[base_end..cand_end],
            }
        })
    }

    /// The task named `task`, if either side ran it.
    pub fn find(&self, task: &str) -> Option<PairedTask<'_>> {
        let ix = self.names.get(task)?;
        self.rows
            .iter()
            .find(|r| r.task == ix)
            .map(|r| self.task_at(r))
    }
}

/// What a store holds, counted: from [`Verified::overview`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    /// Events in the trace.
    pub size: u64,
    /// Events by kind.
    pub kinds: BTreeMap<String, u64>,
    /// Each commit with scores or test runs, in first-seen order.
    pub commits: Vec<CommitCounts>,
    /// Each scorer with its versions, by name.
    pub scorers: Vec<ScorerCounts>,
}

/// One commit in an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitCounts {
    /// The commit.
    pub commit: String,
    /// Score rows.
    pub scores: u64,
    /// Test-run rows.
    pub test_runs: u64,
    /// Seq of its first score or test run.
    pub first_seq: u64,
}

/// One scorer in an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScorerCounts {
    /// The scorer.
    pub scorer: String,
    /// Its versions, newest first.
    pub versions: Vec<ScorerVersion>,
    /// Commits it scored.
    pub commits: u64,
}

/// One score as the view lends it ([`Verified::each_score`]): text borrowed
/// from the view's interned names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRow<'a> {
    /// Seq of the score event.
    pub seq: u64,
    /// The commit (canonical hex).
    pub commit: &'a str,
    /// The task.
    pub task: &'a str,
    /// The scorer.
    pub scorer: &'a str,
    /// The scorer's version.
    pub scorer_version: &'a str,
    /// The value.
    pub value: f64,
    /// Cost, if recorded.
    pub cost: Option<f64>,
    /// Latency in milliseconds, if recorded.
    pub latency_ms: Option<f64>,
    /// A holdout task.
    pub holdout: bool,
    /// The session of the score event.
    pub session: &'a str,
    /// The cell store the event was merged from, if it was.
    pub origin_store: Option<&'a str>,
}

impl ScoreRow<'_> {
    /// The row as an owned [`Score`].
    pub fn to_score(&self) -> Score {
        Score {
            // Interned commits were parsed from the event when folded.
            commit: CommitId::parse(self.commit).unwrap_or_else(|_| unreachable_commit()),
            task: self.task.to_string(),
            scorer: self.scorer.to_string(),
            scorer_version: self.scorer_version.to_string(),
            value: self.value,
            cost: self.cost,
            latency_ms: self.latency_ms,
            holdout: self.holdout,
        }
    }
}

#[cold]
fn unreachable_commit() -> CommitId {
    // Only canonical commits are interned (`Fold::score`); this is never
    // reached, and the all-zero id is no commit anyone ran.
    CommitId::parse("0000000000000000000000000000000000000000")
        .unwrap_or_else(|_| unreachable_commit())
}

/// Interned strings: each name stored once, in one arena, referred to by a
/// `u32` (about 14 bytes per name beside its text: a 1M-task trace's names
/// cost what their text costs, not a map and a list of boxed copies).
#[derive(Debug, Default, Clone)]
struct Names {
    arena: String,
    /// End of each name in `arena`; name i starts where i − 1 ends.
    ends: Vec<usize>,
    table: hashbrown::HashTable<u32>,
    hasher: std::hash::RandomState,
}

impl Names {
    fn text<'a>(arena: &'a str, ends: &[usize], i: u32) -> &'a str {
        let index = i as usize;
        let Some(&end) = ends.get(index) else {
            return "";
        };
        let start = if index == 0 { 0 } else { ends[index - 1] };
        &arena[start..end]
    }

    fn intern(&mut self, s: &str) -> u32 {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(s);
        let (arena, ends) = (&self.arena, &self.ends);
        if let Some(&i) = self.table.find(hash, |&i| Names::text(arena, ends, i) == s) {
            return i;
        }
        let index = self.ends.len() as u32;
        self.arena.push_str(s);
        self.ends.push(self.arena.len());
        let (arena, ends, hasher) = (&self.arena, &self.ends, &self.hasher);
        self.table.insert_unique(hash, index, |&j| {
            hasher.hash_one(Names::text(arena, ends, j))
        });
        index
    }

    fn get(&self, s: &str) -> Option<u32> {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(s);
        self.table
            .find(hash, |&i| Names::text(&self.arena, &self.ends, i) == s)
            .copied()
    }

    fn name(&self, i: u32) -> &str {
        Names::text(&self.arena, &self.ends, i)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn heap_bytes(&self) -> usize {
        self.arena.capacity() + self.ends.capacity() * 8 + self.table.capacity() * 5
    }
}

/// How a score came: its session, the store it was merged from (if any)
/// and the holdout flag. A trace has few of these, so each score holds an
/// index into them instead of the three fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Provenance {
    session: u32,
    /// Interned origin store; [`OWN`] for this store's own events.
    origin: u32,
    holdout: bool,
}

/// No origin store (the event is this store's own).
const OWN: u32 = u32::MAX;

/// One score: 24 bytes. Cost and latency, rarely present, live beside it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    seq: u64,
    value: f64,
    task: u32,
    /// Index into [`Verified::provenances`].
    provenance: u32,
}

/// Every score of one scorer × version × commit, in trace order, with its
/// running statistics (Welford, in trace order).
#[derive(Debug, Clone)]
struct Series {
    scorer: u32,
    version: u32,
    commit: u32,
    entries: Vec<Entry>,
    fold: Welford,
}

impl Series {
    /// Entries with seq at most `max`.
    fn upto(&self, max: u64) -> &[Entry] {
        let count = self.entries.partition_point(|e| e.seq <= max);
        &self.entries[..count]
    }

    fn fold_upto(&self, max: u64) -> Welford {
        if self.entries.last().is_none_or(|e| e.seq <= max) {
            return self.fold;
        }
        let mut welford = Welford::default();
        for e in self.upto(max) {
            welford.push(e.value);
        }
        welford
    }
}

/// The verified trace in memory: every score per scorer × version × commit
/// in trace order, test runs, and the events a decision, report or
/// monitor reads (control events, observations) whole — built by
/// verification from the bytes it checked, and the only input of a
/// decision. A caller's plain events (notes: see [`is_plain`]) are
/// verified and counted but not held, unless every event was asked for
/// ([`crate::VerifyOptions::keep_all_events`]).
///
/// There is no way to build one but verifying ([`crate::Store::verified`],
/// [`crate::Ledger`]), so a decision query on an unverified read does not
/// compile:
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// let store = ratchet_trace::Store::create(dir.path(), Default::default()).unwrap();
/// let commit = ratchet_trace::CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904").unwrap();
/// // `paired_scores` is a query of the verified view, not of the store.
/// let _ = store.paired_scores(&commit, &commit, "accuracy", ratchet_trace::AsOf::Head);
/// ```
///
/// The same query on a view made by verifying compiles and runs:
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let store = ratchet_trace::Store::create(dir.path(), Default::default())?;
/// let commit = ratchet_trace::CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904")?;
/// let view = store.verified(&Default::default())?;
/// assert!(view.paired_scores(&commit, &commit, "accuracy", ratchet_trace::AsOf::Head).is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail
/// // Nor can a view be made up.
/// let view = ratchet_trace::Verified { };
/// ```
#[derive(Debug, Clone)]
pub struct Verified {
    pub(crate) report: VerifyReport,
    pub(crate) genesis: blake3::Hash,
    names: Names,
    commits: Names,
    series: Vec<Series>,
    series_index: HashMap<(u32, u32, u32), u32>,
    provenances: Vec<Provenance>,
    provenance_index: HashMap<Provenance, u32>,
    by_scorer: HashMap<u32, Vec<u32>>,
    extras: HashMap<u64, (Option<f64>, Option<f64>)>,
    /// Each test run with its seq and its provenance (an index into
    /// `provenances`): whose run it is decides whether a class reads it.
    test_runs: Vec<(u64, TestRun, u32)>,
    events: Vec<Event>,
    keep_all: bool,
    kinds: BTreeMap<String, u64>,
    /// Per interned commit: (scores, test runs, first seq).
    commit_counts: Vec<(u64, u64, u64)>,
    scores: u64,
}

impl Verified {
    pub(crate) fn empty(report: VerifyReport, genesis: blake3::Hash, keep_all: bool) -> Self {
        Verified {
            report,
            genesis,
            names: Names::default(),
            commits: Names::default(),
            series: Vec::new(),
            series_index: HashMap::new(),
            provenances: Vec::new(),
            provenance_index: HashMap::new(),
            by_scorer: HashMap::new(),
            extras: HashMap::new(),
            test_runs: Vec::new(),
            events: Vec::new(),
            keep_all,
            kinds: BTreeMap::new(),
            commit_counts: Vec::new(),
            scores: 0,
        }
    }

    /// Gives back what the fold's growth left unused (a large vector's
    /// capacity is up to twice its length): a cold verification's view
    /// holds what it holds and no more.
    pub(crate) fn shrink_to_fit(&mut self) {
        for s in &mut self.series {
            s.entries.shrink_to_fit();
        }
        self.events.shrink_to_fit();
        self.test_runs.shrink_to_fit();
        self.names.arena.shrink_to_fit();
        self.names.ends.shrink_to_fit();
        self.commits.arena.shrink_to_fit();
        self.commits.ends.shrink_to_fit();
    }

    /// Folds one verified row in as verification read it: a score is kept
    /// as its numbers (no `Event` is built for it), anything else whole.
    pub(crate) fn fold_row(&mut self, b: &Batch, r: &OwnedRow, projection: Option<Projection>) {
        match projection {
            Some(Projection::Score(s)) if !self.keep_all => {
                let kind = b.str(r.kind);
                match self.kinds.get_mut(kind) {
                    Some(n) => *n += 1,
                    None => {
                        self.kinds.insert(kind.to_string(), 1);
                    }
                }
                let origin = r
                    .origin
                    .as_ref()
                    .map_or(OWN, |(store, _, _)| self.names.intern(b.str(*store)));
                let session = self.names.intern(b.str(r.session));
                self.score(r.seq, &s, session, origin);
                self.report.size = r.seq;
                self.report.head = blake3::Hash::from(r.stored);
            }
            None if !self.keep_all && is_plain(b.str(r.kind)) => {
                // Verified and counted; nothing of it is held (see [`is_plain`]).
                self.count_kind(b.str(r.kind));
                self.report.size = r.seq;
                self.report.head = blake3::Hash::from(r.stored);
            }
            other => self.fold(b.event(r), other),
        }
    }

    fn count_kind(&mut self, kind: &str) {
        match self.kinds.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.kinds.insert(kind.to_string(), 1);
            }
        }
    }

    /// Folds one verified event in (its seq is one past the view's head).
    pub(crate) fn fold(&mut self, event: Event, projection: Option<Projection>) {
        let (seq, hash) = (event.seq, event.hash);
        match self.kinds.get_mut(event.kind.as_str()) {
            Some(n) => *n += 1,
            None => {
                self.kinds.insert(event.kind.clone(), 1);
            }
        }
        match projection {
            Some(Projection::Score(s)) => {
                let origin = event
                    .origin
                    .as_ref()
                    .map_or(OWN, |o| self.names.intern(&o.store));
                let session = self.names.intern(&event.session);
                self.score(seq, &s, session, origin);
                if self.keep_all {
                    self.events.push(event);
                }
            }
            Some(Projection::TestRun(t)) => {
                let commit_id = self.commit(&t.commit, seq);
                if let Some(counts) = self.commit_counts.get_mut(commit_id as usize) {
                    counts.1 += 1;
                }
                let origin = event
                    .origin
                    .as_ref()
                    .map_or(OWN, |o| self.names.intern(&o.store));
                let session = self.names.intern(&event.session);
                let provenance = self.provenance(session, origin, false);
                self.test_runs.push((seq, t, provenance));
                self.events.push(event);
            }
            None if !self.keep_all && is_plain(&event.kind) => {}
            None => self.events.push(event),
        }
        self.report.size = seq;
        self.report.head = hash;
    }

    fn commit(&mut self, commit: &CommitId, seq: u64) -> u32 {
        let commit_id = self.commits.intern(commit.as_str());
        if commit_id as usize == self.commit_counts.len() {
            self.commit_counts.push((0, 0, seq));
        }
        commit_id
    }

    fn score(&mut self, seq: u64, s: &Score, session: u32, origin: u32) {
        let commit = self.commit(&s.commit, seq);
        if let Some(counts) = self.commit_counts.get_mut(commit as usize) {
            counts.0 += 1;
        }
        let scorer = self.names.intern(&s.scorer);
        let version = self.names.intern(&s.scorer_version);
        let task = self.names.intern(&s.task);
        let key = (scorer, version, commit);
        let ix = match self.series_index.get(&key) {
            Some(&i) => i,
            None => {
                let series_id = self.series.len() as u32;
                self.series.push(Series {
                    scorer,
                    version,
                    commit,
                    entries: Vec::new(),
                    fold: Welford::default(),
                });
                self.series_index.insert(key, series_id);
                self.by_scorer.entry(scorer).or_default().push(series_id);
                series_id
            }
        };
        if s.cost.is_some() || s.latency_ms.is_some() {
            self.extras.insert(seq, (s.cost, s.latency_ms));
        }
        let provenance = self.provenance(session, origin, s.holdout);
        let series = &mut self.series[ix as usize];
        series.fold.push(s.value);
        series.entries.push(Entry {
            seq,
            value: s.value,
            task,
            provenance,
        });
        self.scores += 1;
    }

    /// The index of a provenance in `provenances`, added when new.
    fn provenance(&mut self, session: u32, origin: u32, holdout: bool) -> u32 {
        let provenance = Provenance {
            session,
            origin,
            holdout,
        };
        match self.provenance_index.get(&provenance) {
            Some(&i) => i,
            None => {
                let provenance_id = self.provenances.len() as u32;
                self.provenances.push(provenance);
                self.provenance_index.insert(provenance, provenance_id);
                provenance_id
            }
        }
    }

    // ---- identity -------------------------------------------------------

    /// The verification this view came from, at the view's head (a warm
    /// owner's refreshes advance it).
    pub fn report(&self) -> &VerifyReport {
        &self.report
    }

    /// The verified head: the last event folded in.
    pub fn head(&self) -> Head {
        Head {
            size: self.report.size,
            hash: self.report.head,
        }
    }

    /// The store's id.
    pub fn store_id(&self) -> &str {
        &self.report.store_id
    }

    /// The store's genesis hash (the head of an empty trace).
    pub fn genesis(&self) -> blake3::Hash {
        self.genesis
    }

    /// Score events folded in.
    pub fn score_count(&self) -> u64 {
        self.scores
    }

    /// Approximate bytes the view holds on the heap (what
    /// `benches/README.md` states per score event).
    pub fn heap_bytes(&self) -> usize {
        let names = |n: &Names| n.heap_bytes();
        let series: usize = self
            .series
            .iter()
            .map(|s| s.entries.capacity() * std::mem::size_of::<Entry>() + 96)
            .sum();
        let events: usize = self
            .events
            .iter()
            .map(|e| {
                std::mem::size_of::<Event>()
                    + e.payload.capacity()
                    + e.session.capacity()
                    + e.kind.capacity()
                    + e.cell.capacity()
            })
            .sum();
        names(&self.names)
            + names(&self.commits)
            + series
            + self.series_index.capacity() * 24
            + self.provenances.capacity() * 12
            + self.provenance_index.capacity() * 20
            + self.extras.capacity() * 48
            + events
            + self.test_runs.capacity() * 104
    }
}

/// Caller kinds a reader of the view reads (besides scores and test runs,
/// which are projected): kept whole like the reserved kinds.
/// `observation` is what `ratchet_scorers::score_pending` scores;
/// `samples` is every measurement of a benchmark run
/// (`ratchet_scorers::Samples`), which a per-benchmark comparison reads.
pub const KEPT_CALLER_KINDS: &[&str] = &["observation", "samples"];

/// Whether the view leaves events of `kind` in the file: a caller's own
/// kind (a note, a log line) that no decision, report or monitor reads —
/// not reserved, not a score or test run, not one of
/// [`KEPT_CALLER_KINDS`]. Such an event is verified like any other (its
/// hash, its MAC, its place in the chain) and counted by kind in
/// [`Verified::overview`], but nothing of it is held in memory: however
/// many notes a writer sends, the warm view does not grow with them.
/// A view made with [`crate::VerifyOptions::keep_all_events`] keeps them
/// whole (an export reads them).
pub fn is_plain(kind: &str) -> bool {
    ReservedKind::of(kind).is_none()
        && kind != crate::projection::KIND_SCORE
        && kind != crate::projection::KIND_TEST_RUN
        && !KEPT_CALLER_KINDS.contains(&kind)
}

/// The store's own events of `kind` among `events` (in seq order) at or
/// before `max_seq`, each with its payload parsed as `T`. Events merged in
/// from cells are passed over (they are what a cell saw, never an
/// instruction to this store), and a payload that does not parse is an
/// error, never a skipped event. A decision reads them from its
/// [`Verified`] view; a writer checking what it is about to append
/// (ingestion's declarations) may read them from [`crate::Store::events_of_kinds`].
///
/// # Errors
/// [`crate::Error::InvalidInput`] naming the seq of a payload that does
/// not parse.
pub fn own_control_events<'a, T: serde::de::DeserializeOwned>(
    events: impl IntoIterator<Item = &'a Event>,
    kind: ReservedKind,
    max_seq: u64,
) -> crate::Result<Vec<(&'a Event, T)>> {
    let mut out = Vec::new();
    for e in events {
        if e.seq > max_seq {
            break;
        }
        if e.kind != kind.as_str() || e.origin.is_some() {
            continue;
        }
        let parsed: T = serde_json::from_slice(&e.payload).map_err(|err| {
            crate::Error::invalid(
                "payload",
                format!("{} event {} does not parse: {err}", kind.as_str(), e.seq),
            )
        })?;
        out.push((e, parsed));
    }
    Ok(out)
}
