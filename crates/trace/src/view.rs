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
use crate::store::Head;
use crate::summary::Welford;
use crate::verify::VerifyReport;

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

/// The scores of one task under a baseline and a candidate commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedTask {
    /// The task.
    pub task: String,
    /// Baseline values, in append order (empty if the baseline never ran it).
    pub baseline: Vec<f64>,
    /// Candidate values, in append order (empty if the candidate never ran it).
    pub candidate: Vec<f64>,
}

/// One task's mean scores under a baseline and a candidate (`None`: that
/// side has no score of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskMeans {
    /// The task.
    pub task: String,
    /// The baseline's mean.
    pub baseline: Option<f64>,
    /// The candidate's mean.
    pub candidate: Option<f64>,
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

/// Interned strings: each name stored once, referred to by a `u32`.
#[derive(Debug, Default, Clone)]
struct Names {
    list: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Names {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.into());
        self.index.insert(s.into(), i);
        i
    }

    fn get(&self, s: &str) -> Option<u32> {
        self.index.get(s).copied()
    }

    fn name(&self, i: u32) -> &str {
        self.list.get(i as usize).map_or("", |s| s)
    }
}

/// No origin store (the event is this store's own).
const OWN: u32 = u32::MAX;
/// The holdout flag, kept in the top bit of [`Entry::session`].
const HOLDOUT: u32 = 1 << 31;

/// One score: 32 bytes. Cost and latency, rarely present, live beside it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    seq: u64,
    value: f64,
    task: u32,
    /// Interned session; the top bit is the holdout flag.
    session: u32,
    origin: u32,
    _pad: u32,
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
        let n = self.entries.partition_point(|e| e.seq <= max);
        &self.entries[..n]
    }

    fn fold_upto(&self, max: u64) -> Welford {
        if self.entries.last().is_none_or(|e| e.seq <= max) {
            return self.fold;
        }
        let mut w = Welford::default();
        for e in self.upto(max) {
            w.push(e.value);
        }
        w
    }
}

/// The verified trace in memory: every score per scorer × version × commit
/// in trace order, test runs, and every other event (control events,
/// observations, notes) whole — built by verification from the bytes it
/// checked, and the only input of a decision.
///
/// There is no way to build one but verifying ([`crate::Store::verified`],
/// [`crate::Ledger`]), so a decision query on an unverified read does not
/// compile:
///
/// ```compile_fail
/// # let dir = tempfile::tempdir().unwrap();
/// let store = ratchet_trace::Store::create(dir.path(), Default::default()).unwrap();
/// let c = ratchet_trace::CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904").unwrap();
/// // `paired_scores` is a query of the verified view, not of the store.
/// let _ = store.paired_scores(&c, &c, "accuracy", ratchet_trace::AsOf::Head);
/// ```
///
/// The same query on a view made by verifying compiles and runs:
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let store = ratchet_trace::Store::create(dir.path(), Default::default())?;
/// let c = ratchet_trace::CommitId::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904")?;
/// let view = store.verified(&Default::default())?;
/// assert!(view.paired_scores(&c, &c, "accuracy", ratchet_trace::AsOf::Head).is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail
/// // Nor can a view be made up.
/// let v = ratchet_trace::Verified { };
/// ```
#[derive(Debug, Clone)]
pub struct Verified {
    pub(crate) report: VerifyReport,
    pub(crate) genesis: blake3::Hash,
    names: Names,
    commits: Names,
    series: Vec<Series>,
    series_index: HashMap<(u32, u32, u32), u32>,
    by_scorer: HashMap<u32, Vec<u32>>,
    extras: HashMap<u64, (Option<f64>, Option<f64>)>,
    test_runs: Vec<(u64, TestRun)>,
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
                let c = self.commit(&t.commit, seq);
                if let Some(counts) = self.commit_counts.get_mut(c as usize) {
                    counts.1 += 1;
                }
                self.test_runs.push((seq, t));
                self.events.push(event);
            }
            None => self.events.push(event),
        }
        self.report.size = seq;
        self.report.head = hash;
    }

    fn commit(&mut self, commit: &CommitId, seq: u64) -> u32 {
        let c = self.commits.intern(commit.as_str());
        if c as usize == self.commit_counts.len() {
            self.commit_counts.push((0, 0, seq));
        }
        c
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
                let i = self.series.len() as u32;
                self.series.push(Series {
                    scorer,
                    version,
                    commit,
                    entries: Vec::new(),
                    fold: Welford::default(),
                });
                self.series_index.insert(key, i);
                self.by_scorer.entry(scorer).or_default().push(i);
                i
            }
        };
        if s.cost.is_some() || s.latency_ms.is_some() {
            self.extras.insert(seq, (s.cost, s.latency_ms));
        }
        let series = &mut self.series[ix as usize];
        series.fold.push(s.value);
        series.entries.push(Entry {
            seq,
            value: s.value,
            task,
            session: session | if s.holdout { HOLDOUT } else { 0 },
            origin,
            _pad: 0,
        });
        self.scores += 1;
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
        let names = |n: &Names| {
            n.list.iter().map(|s| 2 * s.len() + 48).sum::<usize>() + n.list.capacity() * 16
        };
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
            + self.extras.capacity() * 48
            + events
            + self.test_runs.capacity() * 96
    }

    // ---- the queries a decision makes ------------------------------------

    fn series_of<'s>(
        &'s self,
        scorer: ScorerRef<'_>,
        commit: Option<&CommitId>,
    ) -> impl Iterator<Item = &'s Series> + 's {
        let scorer_ix = self.names.get(scorer.name);
        let version_ix = scorer.version.map(|v| self.names.get(v));
        let commit_ix = commit.map(|c| self.commits.get(c.as_str()));
        scorer_ix
            .and_then(|s| self.by_scorer.get(&s))
            .into_iter()
            .flatten()
            .map(|&i| &self.series[i as usize])
            .filter(move |s| match version_ix {
                None => true,
                Some(v) => v == Some(s.version),
            })
            .filter(move |s| match commit_ix {
                None => true,
                Some(c) => c == Some(s.commit),
            })
    }

    fn commit_id(&self, ix: u32) -> CommitId {
        CommitId::parse(self.commits.name(ix)).unwrap_or_else(|_| unreachable_commit())
    }

    /// The test runs under `commit` as of `as_of`, in seq order, with their
    /// seqs.
    pub fn test_runs(&self, commit: &CommitId, as_of: impl Into<AsOf>) -> Vec<(u64, TestRun)> {
        let max = as_of.into().max_seq();
        self.test_runs
            .iter()
            .filter(|(seq, r)| *seq <= max && &r.commit == commit)
            .cloned()
            .collect()
    }

    /// Whether any score of `scorer` (under any commit) was recorded as of
    /// `as_of`: how the gate tells an unknown scorer from a known one with no
    /// data yet for a commit.
    pub fn has_scorer<'s>(&self, scorer: impl Into<ScorerRef<'s>>, as_of: impl Into<AsOf>) -> bool {
        let max = as_of.into().max_seq();
        self.series_of(scorer.into(), None)
            .any(|s| s.entries.first().is_some_and(|e| e.seq <= max))
    }

    /// The versions of `scorer` recorded as of `as_of`, newest (by its
    /// latest score) first.
    pub fn scorer_versions(&self, scorer: &str, as_of: impl Into<AsOf>) -> Vec<ScorerVersion> {
        let max = as_of.into().max_seq();
        let mut by_version: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for s in self.series_of(scorer.into(), None) {
            let upto = s.upto(max);
            if let Some(last) = upto.last() {
                let slot = by_version.entry(s.version).or_default();
                slot.0 += upto.len() as u64;
                slot.1 = slot.1.max(last.seq);
            }
        }
        let mut out: Vec<ScorerVersion> = by_version
            .into_iter()
            .map(|(v, (n, last_seq))| ScorerVersion {
                version: self.names.name(v).to_string(),
                n,
                last_seq,
            })
            .collect();
        out.sort_by(|a, b| b.last_seq.cmp(&a.last_seq));
        out
    }

    /// The newest version of `scorer` (by its latest score, as of `as_of`,
    /// under either commit) that both commits have scores of: the version a
    /// paired comparison reads when none is pinned.
    pub fn shared_scorer_version(
        &self,
        scorer: &str,
        a: &CommitId,
        b: &CommitId,
        as_of: impl Into<AsOf>,
    ) -> Option<String> {
        let max = as_of.into().max_seq();
        // Per version: the newest seq under a, under b.
        let mut latest: HashMap<u32, [Option<u64>; 2]> = HashMap::new();
        for (side, commit) in [a, b].into_iter().enumerate() {
            for s in self.series_of(scorer.into(), Some(commit)) {
                if let Some(e) = s.upto(max).last() {
                    let slot = &mut latest.entry(s.version).or_default()[side];
                    *slot = Some(slot.map_or(e.seq, |q| q.max(e.seq)));
                }
            }
        }
        latest
            .into_iter()
            .filter_map(|(v, [x, y])| Some((x?.max(y?), v)))
            .max()
            .map(|(_, v)| self.names.name(v).to_string())
    }

    /// Per-commit statistics of `scorer` as of `as_of`, ordered by commit
    /// id. Each version's values are folded in seq order with Welford's
    /// update (no catastrophic cancellation) and a commit's versions are
    /// combined in version order — the fold the kept `commit_stats` table
    /// holds, to the bit.
    pub fn commit_stats<'s>(
        &self,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Vec<CommitStats> {
        self.stats(scorer.into(), None, as_of.into())
    }

    /// Statistics of `scorer` under one commit as of `as_of` (`None` if it
    /// has no scores then), as [`Verified::commit_stats`] computes them.
    pub fn commit_stats_for<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Option<CommitStats> {
        self.stats(scorer.into(), Some(commit), as_of.into()).pop()
    }

    fn stats(
        &self,
        scorer: ScorerRef<'_>,
        commit: Option<&CommitId>,
        as_of: AsOf,
    ) -> Vec<CommitStats> {
        let max = as_of.max_seq();
        let mut keyed: Vec<(&str, &str, Welford)> = self
            .series_of(scorer, commit)
            .map(|s| {
                (
                    self.commits.name(s.commit),
                    self.names.name(s.version),
                    s.fold_upto(max),
                )
            })
            .filter(|(_, _, w)| w.n > 0)
            .collect();
        keyed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut out: Vec<(&str, Welford)> = Vec::new();
        for (c, _, w) in keyed {
            match out.last_mut() {
                Some((last, fold)) if *last == c => fold.merge(&w),
                _ => out.push((c, w)),
            }
        }
        out.into_iter()
            .filter_map(|(c, w)| {
                Some(CommitStats {
                    commit: CommitId::parse(c).ok()?,
                    n: w.n,
                    mean: w.mean,
                    variance: w.variance(),
                    min: w.min,
                    max: w.max,
                })
            })
            .collect()
    }

    /// Every score of `scorer` under either commit as of `as_of`, as
    /// (seq, task, side) in seq order: side 0 the baseline, 1 the candidate.
    fn pair_entries(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: ScorerRef<'_>,
        as_of: AsOf,
    ) -> Vec<(u64, u32, [bool; 2], f64)> {
        let max = as_of.max_seq();
        let mut out = Vec::new();
        let b = self.commits.get(baseline.as_str());
        let c = self.commits.get(candidate.as_str());
        for s in self.series_of(scorer, None) {
            let sides = [Some(s.commit) == b, Some(s.commit) == c];
            if sides == [false, false] {
                continue;
            }
            out.extend(s.upto(max).iter().map(|e| (e.seq, e.task, sides, e.value)));
        }
        out.sort_unstable_by_key(|e| e.0);
        out
    }

    /// Scores of `scorer` per task under a baseline and a candidate commit
    /// as of `as_of`, ordered by task. Tasks only one side ran are included
    /// with an empty list on the other side.
    pub fn paired_scores<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Vec<PairedTask> {
        let mut tasks: HashMap<u32, [Vec<f64>; 2]> = HashMap::new();
        for (_, task, sides, value) in
            self.pair_entries(baseline, candidate, scorer.into(), as_of.into())
        {
            let entry = tasks.entry(task).or_default();
            for (side, values) in sides.iter().zip(entry.iter_mut()) {
                if *side {
                    values.push(value);
                }
            }
        }
        let mut out: Vec<PairedTask> = tasks
            .into_iter()
            .map(|(task, [baseline, candidate])| PairedTask {
                task: self.names.name(task).to_string(),
                baseline,
                candidate,
            })
            .collect();
        out.sort_unstable_by(|a, b| a.task.cmp(&b.task));
        out
    }

    /// Per-task means of `scorer` under each commit (`None` where a commit
    /// has no score of the task), in task order, as of `as_of`.
    pub fn task_means<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> Vec<TaskMeans> {
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        self.paired_scores(baseline, candidate, scorer, as_of)
            .into_iter()
            .map(|t| TaskMeans {
                baseline: mean(&t.baseline),
                candidate: mean(&t.candidate),
                task: t.task,
            })
            .collect()
    }

    /// Values of `scorer` under `commit` recorded after `after_seq`, in seq
    /// order, at most `limit` of them: a live score stream to follow (a
    /// binary search per series, so following costs only what is new).
    pub fn score_stream<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        after_seq: u64,
        limit: usize,
    ) -> Vec<(u64, f64)> {
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut several = 0;
        for s in self.series_of(scorer.into(), Some(commit)) {
            let from = s.entries.partition_point(|e| e.seq <= after_seq);
            out.extend(s.entries[from..].iter().map(|e| (e.seq, e.value)));
            several += 1;
        }
        if several > 1 {
            out.sort_unstable_by_key(|e| e.0);
        }
        out.truncate(limit);
        out
    }

    /// Every score in seq order, handed to `each` (text borrowed from the
    /// view): what exports, notebooks and batch scoring read.
    pub fn each_score(&self, after: u64, each: &mut dyn FnMut(ScoreRow<'_>)) {
        let mut order: Vec<(u64, u32, u32)> = Vec::with_capacity(self.scores as usize);
        for (i, s) in self.series.iter().enumerate() {
            let from = s.entries.partition_point(|e| e.seq <= after);
            for (j, e) in s.entries[from..].iter().enumerate() {
                order.push((e.seq, i as u32, (from + j) as u32));
            }
        }
        order.sort_unstable_by_key(|e| e.0);
        for (seq, i, j) in order {
            let s = &self.series[i as usize];
            let e = &s.entries[j as usize];
            let (cost, latency_ms) = self.extras.get(&seq).copied().unwrap_or_default();
            each(ScoreRow {
                seq,
                commit: self.commits.name(s.commit),
                task: self.names.name(e.task),
                scorer: self.names.name(s.scorer),
                scorer_version: self.names.name(s.version),
                value: e.value,
                cost,
                latency_ms,
                holdout: e.session & HOLDOUT != 0,
                session: self.names.name(e.session & !HOLDOUT),
                origin_store: (e.origin != OWN).then(|| self.names.name(e.origin)),
            });
        }
    }

    /// Every score in seq order, owned, with its seq.
    pub fn scores(&self) -> Vec<(u64, Score)> {
        let mut out = Vec::with_capacity(self.scores as usize);
        self.each_score(0, &mut |r| out.push((r.seq, r.to_score())));
        out
    }

    /// Every event of the given kinds, in seq order. Score events are not
    /// kept whole unless the view was asked to
    /// ([`crate::VerifyOptions::keep_all_events`]); read scores through the
    /// score queries.
    pub fn events_of_kinds(&self, kinds: &[&str]) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| kinds.contains(&e.kind.as_str()))
            .collect()
    }

    /// Every event kept whole (all but scores, unless every event was
    /// kept), in seq order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The kept event at `seq`, if it is kept whole.
    pub fn event_at(&self, seq: u64) -> Option<&Event> {
        self.events
            .binary_search_by_key(&seq, |e| e.seq)
            .ok()
            .map(|i| &self.events[i])
    }

    /// This store's own events of `kind` at or before `max_seq`, in seq
    /// order, each with its payload parsed as `T`: how a control event is
    /// read for acting on it ([`own_control_events`] over the view).
    ///
    /// # Errors
    /// As [`own_control_events`].
    pub fn own_control_events<T: serde::de::DeserializeOwned>(
        &self,
        kind: ReservedKind,
        max_seq: u64,
    ) -> crate::Result<Vec<(&Event, T)>> {
        own_control_events(&self.events, kind, max_seq)
    }

    /// What the trace holds, counted: events by kind, commits with their
    /// score and test-run counts, scorers with their versions.
    pub fn overview(&self) -> Overview {
        let mut commits: Vec<CommitCounts> = self
            .commit_counts
            .iter()
            .enumerate()
            .map(|(i, &(scores, test_runs, first_seq))| CommitCounts {
                commit: self.commits.name(i as u32).to_string(),
                scores,
                test_runs,
                first_seq,
            })
            .collect();
        commits.sort_by_key(|c| c.first_seq);
        let mut scorers: Vec<ScorerCounts> = self
            .by_scorer
            .iter()
            .map(|(&scorer, series)| {
                let name = self.names.name(scorer);
                let mut distinct: Vec<u32> = series
                    .iter()
                    .map(|&i| self.series[i as usize].commit)
                    .collect();
                distinct.sort_unstable();
                distinct.dedup();
                ScorerCounts {
                    scorer: name.to_string(),
                    versions: self.scorer_versions(name, AsOf::Head),
                    commits: distinct.len() as u64,
                }
            })
            .collect();
        scorers.sort_by(|a, b| a.scorer.cmp(&b.scorer));
        Overview {
            size: self.report.size,
            kinds: self.kinds.clone(),
            commits,
            scorers,
        }
    }

    /// Every commit with scores, as interned (first-seen order).
    pub fn commits(&self) -> Vec<CommitId> {
        (0..self.commits.list.len() as u32)
            .map(|i| self.commit_id(i))
            .collect()
    }
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
