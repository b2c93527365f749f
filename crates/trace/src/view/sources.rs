//! Whose evidence a reader counts: every score and test run carries who
//! wrote it ([`Producer`]), and a decision reads, per side of a
//! comparison, only the producers it trusts ([`Sources`]). Evidence from
//! anyone else stays in the trace (nothing is lost) but is set aside, and
//! the reader is told how much ([`SetAside`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::*;

/// Who wrote a piece of evidence, as the trace itself can tell.
///
/// On a keyed store only the holder of the writer key can append, directly
/// or through `ratchet serve`, which stamps each capability token's session
/// on everything the token records (a line naming another session is
/// refused). So an event of this store is the **token's** when its session
/// is one a token was minted for (a `capability` event of this store says
/// so), else the **key holder's**; an event merged from another store is
/// that **cell's**. On an unkeyed store anyone who can write the file is
/// the "key holder".
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "producer", rename_all = "snake_case", deny_unknown_fields)]
pub enum Producer {
    /// This store's writer, under one of its own sessions.
    KeyHolder {
        /// The session (may be empty).
        session: String,
    },
    /// The holder of a capability token minted for this session.
    Token {
        /// The token's session.
        session: String,
    },
    /// A cell merged into this store.
    Cell {
        /// The cell's store id.
        store: String,
        /// The session in the cell.
        session: String,
    },
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Producer::KeyHolder { session } if session.is_empty() => f.write_str("the key holder"),
            Producer::KeyHolder { session } => write!(f, "the key holder (session {session:?})"),
            Producer::Token { session } => write!(f, "token session {session:?}"),
            Producer::Cell { store, session } => {
                write!(f, "cell {store} (session {session:?})")
            }
        }
    }
}

/// Which producers one side of a comparison reads.
///
/// ```
/// use ratchet_trace::{Producer, Sources};
/// let ci = Sources::key_holder().session("ci");
/// assert!(ci.admits(&Producer::KeyHolder { session: "anything".into() }));
/// assert!(ci.admits(&Producer::Token { session: "ci".into() }));
/// assert!(!ci.admits(&Producer::Token { session: "cell-7".into() }));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    everyone: bool,
    key_holder: bool,
    sessions: BTreeSet<String>,
    cells: BTreeSet<String>,
}

impl Sources {
    /// Nobody's evidence.
    pub fn none() -> Sources {
        Sources::default()
    }

    /// Everyone's evidence: what readers did before evidence had authors
    /// (and what a recomputation of a verdict of that law reads).
    pub fn everyone() -> Sources {
        Sources {
            everyone: true,
            ..Sources::default()
        }
    }

    /// The key holder's evidence, under any of its sessions.
    pub fn key_holder() -> Sources {
        Sources::none().with_key_holder()
    }

    /// These sources and the key holder's.
    pub fn with_key_holder(mut self) -> Sources {
        self.key_holder = true;
        self
    }

    /// These sources and every event of this store under `session`,
    /// whether a token's or the key holder's.
    pub fn session(mut self, session: impl Into<String>) -> Sources {
        self.sessions.insert(session.into());
        self
    }

    /// These sources and every event merged from the cell with store id
    /// `store`.
    pub fn cell(mut self, store: impl Into<String>) -> Sources {
        self.cells.insert(store.into());
        self
    }

    /// Whether everyone's evidence is read.
    pub fn is_everyone(&self) -> bool {
        self.everyone
    }

    /// Whether evidence from `producer` is read.
    pub fn admits(&self, producer: &Producer) -> bool {
        if self.everyone {
            return true;
        }
        match producer {
            Producer::KeyHolder { session } => self.key_holder || self.sessions.contains(session),
            Producer::Token { session } => self.sessions.contains(session),
            Producer::Cell { store, .. } => self.cells.contains(store),
        }
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The commit running now.
    Baseline,
    /// The commit proposed.
    Candidate,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        })
    }
}

/// Evidence a query did not read because its producer is not trusted for
/// that side: stored, counted, never read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetAside {
    /// The side it was about.
    pub side: Side,
    /// Who wrote it.
    pub producer: Producer,
    /// Score rows set aside.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub scores: u64,
    /// Test runs set aside.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub test_runs: u64,
    /// Other evidence events set aside (a benchmark's `samples`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub samples: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Adds `other` into `into`, one entry per (side, producer), in order.
pub fn merge_set_aside(into: &mut Vec<SetAside>, other: impl IntoIterator<Item = SetAside>) {
    let mut by: BTreeMap<(Side, Producer), (u64, u64, u64)> = into
        .drain(..)
        .map(|s| ((s.side, s.producer), (s.scores, s.test_runs, s.samples)))
        .collect();
    for s in other {
        let slot = by.entry((s.side, s.producer)).or_default();
        slot.0 += s.scores;
        slot.1 += s.test_runs;
        slot.2 += s.samples;
    }
    into.extend(by.into_iter().map(
        |((side, producer), (scores, test_runs, samples))| SetAside {
            side,
            producer,
            scores,
            test_runs,
            samples,
        },
    ));
}

/// The producer of evidence merged from `origin` (a cell's store id) or,
/// when it is this store's own, written under `session`: a token's when a
/// token was minted for the session (`tokens`), else the key holder's.
fn classify(origin: Option<&str>, session: &str, tokens: &HashSet<&str>) -> Producer {
    let session = session.to_string();
    match origin {
        Some(store) => Producer::Cell {
            store: store.to_string(),
            session,
        },
        None if tokens.contains(session.as_str()) => Producer::Token { session },
        None => Producer::KeyHolder { session },
    }
}

/// Per provenance index: whether a side reads it.
pub(super) struct Admitted(Vec<bool>);

impl Admitted {
    pub(super) fn get(&self, provenance: u32) -> bool {
        self.0.get(provenance as usize).copied().unwrap_or(false)
    }
}

impl Verified {
    /// The sessions capability tokens were minted (or revoked) for, in
    /// this store's own `capability` events at or before `max`: whose
    /// events are a token's ([`Producer::Token`]).
    pub fn token_session_names(&self, max: u64) -> HashSet<&str> {
        self.events
            .iter()
            .take_while(|e| e.seq <= max)
            .filter(|e| e.reserved_kind() == Some(ReservedKind::Capability) && e.origin.is_none())
            .map(|e| e.session.as_str())
            .collect()
    }

    /// Who wrote `e`, given the token sessions by name
    /// ([`Verified::token_session_names`]).
    pub fn producer_of_event(e: &Event, tokens: &HashSet<&str>) -> Producer {
        classify(
            e.origin.as_ref().map(|o| o.store.as_str()),
            &e.session,
            tokens,
        )
    }

    /// Who wrote the scores and test runs of `provenance`.
    fn producer_of(&self, provenance: u32, tokens: &HashSet<&str>) -> Producer {
        let Some(p) = self.provenances.get(provenance as usize) else {
            return classify(None, "", tokens);
        };
        let origin = (p.origin != OWN).then(|| self.names.name(p.origin));
        classify(origin, self.names.name(p.session), tokens)
    }

    /// Who wrote the evidence of each provenance, as of `max`.
    pub(super) fn admitted(&self, sources: &Sources, max: u64) -> Admitted {
        if sources.is_everyone() {
            return Admitted(vec![true; self.provenances.len()]);
        }
        let tokens = self.token_session_names(max);
        Admitted(
            (0..self.provenances.len() as u32)
                .map(|i| sources.admits(&self.producer_of(i, &tokens)))
                .collect(),
        )
    }

    /// Counts of set-aside evidence by provenance, as [`SetAside`] rows.
    pub(super) fn set_aside_rows(
        &self,
        side: Side,
        counts: &BTreeMap<u32, (u64, u64)>,
        max: u64,
    ) -> Vec<SetAside> {
        if counts.is_empty() {
            return Vec::new();
        }
        let tokens = self.token_session_names(max);
        let mut out = Vec::new();
        merge_set_aside(
            &mut out,
            counts.iter().map(|(&p, &(scores, test_runs))| SetAside {
                side,
                producer: self.producer_of(p, &tokens),
                scores,
                test_runs,
                samples: 0,
            }),
        );
        out
    }

    /// The test runs under `commit` as of `as_of` written by producers
    /// `sources` admits, in seq order, and those it set aside (counted as
    /// evidence about `side`).
    pub fn test_runs_from(
        &self,
        commit: &CommitId,
        as_of: impl Into<AsOf>,
        sources: &Sources,
        side: Side,
    ) -> (Vec<(u64, TestRun)>, Vec<SetAside>) {
        let max = as_of.into().max_seq();
        let admitted = self.admitted(sources, max);
        let mut kept = Vec::new();
        let mut aside: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for (seq, run, provenance) in &self.test_runs {
            if *seq > max || &run.commit != commit {
                continue;
            }
            if admitted.get(*provenance) {
                kept.push((*seq, run.clone()));
            } else {
                aside.entry(*provenance).or_default().1 += 1;
            }
        }
        (kept, self.set_aside_rows(side, &aside, max))
    }
}

impl Verified {
    /// The newest version of `scorer` (by its latest admitted score as of
    /// `as_of`) among `commit`'s scores from producers `sources` admits:
    /// the version a comparison reads when nothing pins one, chosen by the
    /// trusted evidence alone.
    pub fn newest_version_from(
        &self,
        scorer: &str,
        commit: &CommitId,
        as_of: impl Into<AsOf>,
        sources: &Sources,
    ) -> Option<String> {
        let max = as_of.into().max_seq();
        let admitted = self.admitted(sources, max);
        self.series_of(scorer.into(), Some(commit))
            .filter_map(|s| {
                let newest = s
                    .upto(max)
                    .iter()
                    .rev()
                    .find(|e| admitted.get(e.provenance))?;
                Some((newest.seq, s.version))
            })
            .max()
            .map(|(_, v)| self.names.name(v).to_string())
    }
}

impl Verified {
    /// The kept events of `kind` about `commit` as of `as_of` whose
    /// producer `sources` admits, in seq order, and how many it set aside
    /// (counted as `samples` about `side`): how a decision reads evidence
    /// that is neither a score nor a test run (a benchmark's samples).
    pub fn events_from(
        &self,
        kind: &str,
        commit: &CommitId,
        as_of: impl Into<AsOf>,
        sources: &Sources,
        side: Side,
    ) -> (Vec<&Event>, Vec<SetAside>) {
        let max = as_of.into().max_seq();
        let tokens = self.token_session_names(max);
        let mut kept = Vec::new();
        let mut aside: BTreeMap<Producer, u64> = BTreeMap::new();
        for e in self.events.iter().take_while(|e| e.seq <= max) {
            if e.kind != kind || e.commit.as_ref() != Some(commit) {
                continue;
            }
            let producer = Verified::producer_of_event(e, &tokens);
            if sources.admits(&producer) {
                kept.push(e);
            } else {
                *aside.entry(producer).or_default() += 1;
            }
        }
        let aside = aside
            .into_iter()
            .map(|(producer, samples)| SetAside {
                side,
                producer,
                scores: 0,
                test_runs: 0,
                samples,
            })
            .collect();
        (kept, aside)
    }
}

impl Verified {
    /// This view with only the scores and test runs `sources` admits (as
    /// of the head): what a reader that is not a class — `watch`, `best`,
    /// `heal` — reads so that no producer it does not trust can raise an
    /// alarm or pick the commit heal checks out. Control events and every
    /// other kept event stay; each series' running statistics are folded
    /// again from the scores left.
    pub fn restricted_to(&self, sources: &Sources) -> Verified {
        if sources.is_everyone() {
            return self.clone();
        }
        let admitted = self.admitted(sources, u64::MAX);
        let mut out = self.clone();
        let mut kept = 0u64;
        for s in &mut out.series {
            s.entries.retain(|e| admitted.get(e.provenance));
            let mut fold = crate::summary::Welford::default();
            for e in &s.entries {
                fold.push(e.value);
            }
            s.fold = fold;
            kept += s.entries.len() as u64;
        }
        out.test_runs.retain(|(_, _, p)| admitted.get(*p));
        out.scores = kept;
        out
    }

    /// [`Verified::score_stream`] reading only the scores `sources` admits.
    pub fn score_stream_from<'s>(
        &self,
        commit: &CommitId,
        scorer: impl Into<ScorerRef<'s>>,
        after_seq: u64,
        limit: usize,
        sources: &Sources,
    ) -> Vec<(u64, f64)> {
        let admitted = (!sources.is_everyone()).then(|| self.admitted(sources, u64::MAX));
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut several = 0;
        for s in self.series_of(scorer.into(), Some(commit)) {
            let from = s.entries.partition_point(|e| e.seq <= after_seq);
            out.extend(
                s.entries[from..]
                    .iter()
                    .filter(|e| admitted.as_ref().is_none_or(|a| a.get(e.provenance)))
                    .map(|e| (e.seq, e.value)),
            );
            several += 1;
        }
        if several > 1 {
            out.sort_unstable_by_key(|e| e.0);
        }
        out.truncate(limit);
        out
    }
}
