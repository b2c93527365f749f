//! The queries a decision makes of a [`Verified`] view: every one reads
//! memory only, and a past verdict is recomputed with the query that made
//! it ([`AsOf`]).

use std::collections::{BTreeMap, HashMap};

use super::sources::merge_set_aside;
use super::*;

impl Verified {
    pub(super) fn series_of<'s>(
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
        self.test_runs_from(commit, as_of, &Sources::everyone(), Side::Candidate)
            .0
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
        out.sort_by_key(|v| std::cmp::Reverse(v.last_seq));
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

    /// Every score of `scorer` under `commit` as of `max`, in seq order:
    /// borrowed when one series holds them (one scorer version), merged
    /// when several do.
    fn side_entries(
        &self,
        commit: Option<u32>,
        scorer: ScorerRef<'_>,
        max: u64,
    ) -> std::borrow::Cow<'_, [Entry]> {
        use std::borrow::Cow;
        let Some(commit) = commit else {
            return Cow::Borrowed(&[]);
        };
        let mut series = self.series_of(scorer, None).filter(|s| s.commit == commit);
        let Some(first) = series.next() else {
            return Cow::Borrowed(&[]);
        };
        let Some(second) = series.next() else {
            return Cow::Borrowed(first.upto(max));
        };
        let mut out: Vec<Entry> = first.upto(max).to_vec();
        out.extend_from_slice(second.upto(max));
        for s in series {
            out.extend_from_slice(s.upto(max));
        }
        out.sort_unstable_by_key(|e| e.seq);
        Cow::Owned(out)
    }

    /// Scores of `scorer` per task under a baseline and a candidate commit
    /// as of `as_of`, in the baseline's trace order ([`PairedScores`]).
    /// Tasks only one side ran are included with no values on the other.
    pub fn paired_scores<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
    ) -> PairedScores<'_> {
        let (scorer, max) = (scorer.into(), as_of.into().max_seq());
        let sides = [
            self.side_entries(self.commits.get(baseline.as_str()), scorer, max),
            self.side_entries(self.commits.get(candidate.as_str()), scorer, max),
        ];
        self.pair(sides)
    }

    /// [`Verified::paired_scores`] reading only the evidence each side's
    /// [`Sources`] admits (`sources[0]` the baseline's, `sources[1]` the
    /// candidate's), with what it set aside. The first score of a task
    /// from a trusted producer is the first one read: nobody untrusted can
    /// pre-empt it, nor order the baseline's tasks.
    pub fn paired_scores_from<'s>(
        &self,
        baseline: &CommitId,
        candidate: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        as_of: impl Into<AsOf>,
        sources: [&Sources; 2],
    ) -> (PairedScores<'_>, Vec<SetAside>) {
        use std::borrow::Cow;
        let (scorer, max) = (scorer.into(), as_of.into().max_seq());
        let mut aside = Vec::new();
        let mut sides: [Cow<'_, [Entry]>; 2] = [Cow::Borrowed(&[]), Cow::Borrowed(&[])];
        for (i, (commit, side)) in [(baseline, Side::Baseline), (candidate, Side::Candidate)]
            .into_iter()
            .enumerate()
        {
            let entries = self.side_entries(self.commits.get(commit.as_str()), scorer, max);
            if sources[i].is_everyone() {
                sides[i] = entries;
                continue;
            }
            let admitted = self.admitted(sources[i], max);
            let mut counts: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
            let kept: Vec<Entry> = entries
                .iter()
                .filter(|e| {
                    let ok = admitted.get(e.provenance);
                    if !ok {
                        counts.entry(e.provenance).or_default().0 += 1;
                    }
                    ok
                })
                .copied()
                .collect();
            merge_set_aside(&mut aside, self.set_aside_rows(side, &counts, max));
            sides[i] = Cow::Owned(kept);
        }
        (self.pair(sides), aside)
    }

    /// Pairs two sides' entries by task (see [`PairedScores`]).
    fn pair(&self, sides: [std::borrow::Cow<'_, [Entry]>; 2]) -> PairedScores<'_> {
        const NONE: u32 = u32::MAX;
        // Rows are made in the order tasks are first met: every baseline
        // task (its trace order), then the candidate's new ones. A dense
        // slot per interned name keeps this free of hashing.
        let mut slot = vec![NONE; self.names.len()];
        let mut rows: Vec<PairRow> = Vec::new();
        for (side, entries) in sides.iter().enumerate() {
            for &Entry { task, .. } in entries.iter() {
                let Some(ix) = slot.get_mut(task as usize) else {
                    continue;
                };
                if *ix == NONE {
                    *ix = rows.len() as u32;
                    rows.push(PairRow {
                        task,
                        start: 0,
                        base: 0,
                        cand: 0,
                    });
                }
                let row = &mut rows[*ix as usize];
                if side == 0 {
                    row.base += 1;
                } else {
                    row.cand += 1;
                }
            }
        }
        let mut start = 0u32;
        for r in &mut rows {
            r.start = start;
            start += r.base + r.cand;
        }
        let mut values = vec![0.0; start as usize];
        let mut seqs = vec![0u64; start as usize];
        let mut filled: Vec<u32> = vec![0; rows.len()];
        for (side, entries) in sides.iter().enumerate() {
            for &Entry {
                task, value, seq, ..
            } in entries.iter()
            {
                let Some(&ix) = slot.get(task as usize) else {
                    continue;
                };
                let (r, f) = (&rows[ix as usize], &mut filled[ix as usize]);
                let at = r.start + if side == 0 { *f } else { r.base + *f };
                values[at as usize] = value;
                seqs[at as usize] = seq;
                *f += 1;
            }
            filled.iter_mut().for_each(|f| *f = 0);
        }
        PairedScores {
            names: &self.names,
            rows,
            values,
            seqs,
        }
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
        self.score_stream_from(commit, scorer, after_seq, limit, &Sources::everyone())
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
            let series = &self.series[i as usize];
            let entry = &series.entries[j as usize];
            let (cost, latency_ms) = self.extras.get(&seq).copied().unwrap_or_default();
            let prov = self.provenances[entry.provenance as usize];
            each(ScoreRow {
                seq,
                commit: self.commits.name(series.commit),
                task: self.names.name(entry.task),
                scorer: self.names.name(series.scorer),
                scorer_version: self.names.name(series.version),
                value: entry.value,
                cost,
                latency_ms,
                holdout: prov.holdout,
                session: self.names.name(prov.session),
                origin_store: (prov.origin != OWN).then(|| self.names.name(prov.origin)),
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
        (0..self.commits.len() as u32)
            .map(|i| self.commit_id(i))
            .collect()
    }
}
