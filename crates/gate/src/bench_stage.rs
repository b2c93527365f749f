//! The sequential stage of a `benchmarks` class: every benchmark judged on
//! its own samples ([`crate::benchmarks`]), read from the trusted
//! producers' `samples` events of the scorer's chosen version.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, Side};

use crate::benchmarks::{BenchVerdict, Thresholds, judge, median};
use crate::decide::{Law, Outcome, RejectCause, Stage, StageDetails, StageReport, StageState};
use crate::error::Result;
use crate::stages::{Look, Step, lower_is_better, push, reject};

use ratchet_records::{KIND_SAMPLES, Samples};

/// One benchmark in a verdict's table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkRow {
    /// The benchmark.
    pub benchmark: String,
    /// The baseline's median sample, in the scorer's unit.
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub baseline: f64,
    /// The candidate's median sample (NaN: none yet).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub candidate: f64,
    /// Candidate ÷ baseline as the pairs show it (above 1: slower).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub ratio: f64,
    /// Lower bound of the ratio (at the family's level α/m for a scorer
    /// that improves downwards; at α for one that improves upwards, whose
    /// "slower" is a lower ratio).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub low: f64,
    /// Upper bound of the ratio (at α, or α/m for a scorer that improves
    /// upwards).
    #[serde(deserialize_with = "crate::decide::recorded_f64")]
    pub high: f64,
    /// Pairs read.
    pub n: usize,
    /// What it came to.
    pub verdict: BenchVerdict,
    /// Another runner (samples' `scorer_version`) than the verdict's
    /// chosen one (its `scorer_versions`), which both sides were measured
    /// on: judged since [`Law::Tuned`] when the policy pins no runner. Such
    /// a row can flag a regression, never hold a promotion back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

impl BenchmarkRow {
    /// The benchmark's name as a table shows it: with its runner when that
    /// is not the verdict's chosen one.
    pub fn label(&self) -> String {
        label(&self.benchmark, self.runner.as_deref())
    }
}

/// A benchmark's name with its runner when that is not the chosen one.
fn label(benchmark: &str, runner: Option<&str>) -> String {
    match runner {
        Some(runner) => format!("{benchmark} on {runner}"),
        None => benchmark.to_string(),
    }
}

/// The figures of a `benchmarks` class's sequential stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchmarksDetails {
    /// Pairs are rounds of `ratchet bench` (drift cancelled), or else the
    /// j-th run of each side, measured apart (unpaired).
    pub paired: bool,
    /// A slowdown of this fraction is a regression.
    pub regression: f64,
    /// Changes within this fraction are noise.
    pub equivalence: f64,
    /// How false "slower" flags are bounded across the suite.
    pub family: String,
    /// Every benchmark, regressions first.
    pub benchmarks: Vec<BenchmarkRow>,
}

/// One side's runs of each benchmark: (round, values) in seq order, a run
/// split over consecutive events pooled back into one.
type Runs = BTreeMap<String, Vec<(Option<u64>, Vec<f64>)>>;

/// The runs of `commit` from the producers `side` trusts, per runner (the
/// samples' `scorer_version`), or of `version`'s runner alone.
fn runs_of(
    look: Look<'_>,
    commit: &CommitId,
    side: Side,
    version: Option<&str>,
) -> Result<BTreeMap<String, Runs>> {
    let sources = match side {
        Side::Baseline => &look.sources[0],
        Side::Candidate => &look.sources[1],
    };
    let (events, aside) = look
        .view
        .events_from(KIND_SAMPLES, commit, look.at, sources, side);
    look.set_aside(aside);
    let mut out: BTreeMap<String, Runs> = BTreeMap::new();
    // Each (runner, benchmark)'s last run's first event (values moved
    // out) and the seq of the last event folded into it: a run split over
    // several events (a payload holds at most 64 KiB) pools back
    // ([`Samples::continued_by`]).
    let mut last: BTreeMap<(String, String), (u64, Samples)> = BTreeMap::new();
    for e in events {
        let mut s =
            Samples::from_payload(&e.payload).map_err(|err| crate::Error::InvalidObservation {
                reason: format!("the samples event at seq {} does not parse: {err}", e.seq),
            })?;
        if s.scorer != look.q.policy.scorer || version.is_some_and(|v| v != s.scorer_version) {
            continue;
        }
        let values = std::mem::take(&mut s.values);
        let key = (s.scorer_version.clone(), s.benchmark.clone());
        let runs = out
            .entry(s.scorer_version.clone())
            .or_default()
            .entry(s.benchmark.clone())
            .or_default();
        match (last.get_mut(&key), runs.last_mut()) {
            (Some((seq, run)), Some((_, pooled))) if run.continued_by(*seq, &s, e.seq) => {
                pooled.extend(values);
                *seq = e.seq;
            }
            _ => {
                runs.push((s.round, values));
                last.insert(key, (e.seq, s));
            }
        }
    }
    Ok(out)
}

/// The pairs' log-ratios of one benchmark, positive when the candidate is
/// worse, and whether they are paired by round: each round's medians when
/// every run has one, else the j-th run's median of each side.
fn log_ratios(
    base: &[(Option<u64>, Vec<f64>)],
    cand: &[(Option<u64>, Vec<f64>)],
    lower_is_better: bool,
    max_n: usize,
) -> (Vec<f64>, bool) {
    let sign = if lower_is_better { 1.0 } else { -1.0 };
    let by_round = |runs: &[(Option<u64>, Vec<f64>)]| {
        let mut rounds: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for (round, values) in runs {
            if let Some(r) = round {
                rounds.entry(*r).or_default().extend(values);
            }
        }
        rounds
    };
    let all_rounds = |runs: &[(Option<u64>, Vec<f64>)]| runs.iter().all(|(r, _)| r.is_some());
    if all_rounds(base) && all_rounds(cand) {
        let (b, c) = (by_round(base), by_round(cand));
        let d: Vec<f64> = b
            .iter()
            .filter_map(|(r, bv)| {
                let cv = c.get(r)?;
                Some(sign * (median(cv).ln() - median(bv).ln()))
            })
            .take(max_n)
            .collect();
        if !d.is_empty() {
            return (d, true);
        }
    }
    // Unpaired, the unit is the run, not the sample: a run's samples share
    // its process's state (memory layout, frequency, the machine's load
    // then), so they are one observation of it — its median. The j-th run
    // of each side (in trace order) make a pair.
    let d = base
        .iter()
        .zip(cand)
        .map(|((_, b), (_, c))| sign * (median(c).ln() - median(b).ln()))
        .take(max_n)
        .collect();
    (d, false)
}

/// Every sample of `runs`, run after run.
fn samples(runs: &[(Option<u64>, Vec<f64>)]) -> impl Iterator<Item = &f64> {
    runs.iter().flat_map(|(_, v)| v)
}

/// Stage 3 of a `benchmarks` class.
pub(crate) fn benchmarks(look: Look<'_>, stages: &mut Vec<StageReport>) -> Step {
    let q = look.q;
    let policy = q.policy;
    let lower = lower_is_better(look, &policy.scorer, policy.direction)?;
    let version = look.versions.get(&policy.scorer).map(String::as_str);
    // Since the fourth law, a policy that pins no runner has every runner
    // both sides measured on judged: the chosen one (the baseline's
    // newest) decides promotion, the others can flag a regression. Read
    // on its newest runner alone, a baseline re-measured on another host
    // hid a regression both sides had shown on the old one.
    let every_runner = look.law >= Law::Tuned && policy.scorer_version.is_none();
    let filter = if every_runner { None } else { version };
    let mut base_by = runs_of(look, q.baseline, Side::Baseline, filter)?;
    let mut cand_by = runs_of(look, q.candidate, Side::Candidate, filter)?;
    let chosen = version.unwrap_or_default();
    let base = base_by.remove(chosen).unwrap_or_default();
    let cand = cand_by.remove(chosen).unwrap_or_default();
    // The other runners both sides have samples of, each benchmark both
    // measured there.
    let others: Vec<(String, Runs, Runs)> = base_by
        .into_iter()
        .filter_map(|(runner, b)| {
            let mut c = cand_by.remove(&runner)?;
            let (b, c): (Runs, Runs) = b
                .into_iter()
                .filter_map(|(name, runs)| {
                    let cand = c.remove(&name)?;
                    Some(((name.clone(), runs), (name, cand)))
                })
                .unzip();
            (!b.is_empty()).then_some((runner, b, c))
        })
        .collect();
    if base.is_empty() {
        return reject(
            Stage::Sequential,
            RejectCause::MissingEvidence,
            format!(
                "the baseline has no samples of {} (ingest the benchmark tool's output for it; every importer keeps its samples)",
                policy.scorer
            ),
        );
    }
    let (regression, equivalence) = policy.benchmark_thresholds();
    let cells = base.len() + others.iter().map(|(_, b, _)| b.len()).sum::<usize>();
    let thresholds = Thresholds {
        alpha: policy.alpha,
        regression,
        equivalence,
        benchmarks: cells,
    };
    let max_n = usize::try_from(policy.max_n).unwrap_or(usize::MAX);
    let judged =
        std::iter::once((None, &base, &cand)).chain(others.iter().map(|(r, b, c)| (Some(r), b, c)));
    let table = match judge_cells(look.law, judged, lower, max_n, &thresholds) {
        Ok(table) => table,
        Err(name) => {
            return reject(
                Stage::Sequential,
                RejectCause::MissingEvidence,
                format!(
                    "benchmark {name}: a sample is not a positive number, so no ratio of it can be judged"
                ),
            );
        }
    };
    table.says(policy, &thresholds, max_n, base.len(), stages)
}

/// The benchmarks stage's table: a row per benchmark × runner judged, and
/// what could not be judged.
struct Table {
    rows: Vec<BenchmarkRow>,
    /// Whether every row's samples were paired by round.
    all_paired: bool,
    /// Benchmarks the candidate has no samples of.
    missing: Vec<String>,
    /// Benchmarks with a sample no ratio can be read of.
    unreadable: Vec<String>,
}

/// Judges each benchmark of each runner both sides were measured on
/// (`judged`: the runner, `None` for the chosen one, and each side's runs
/// by benchmark). `Err` names the first benchmark with a sample no ratio
/// can be read of, where the laws before the fourth stopped.
fn judge_cells<'a>(
    law: Law,
    judged: impl Iterator<Item = (Option<&'a String>, &'a Runs, &'a Runs)>,
    lower: bool,
    max_n: usize,
    thresholds: &Thresholds,
) -> std::result::Result<Table, String> {
    let mut table = Table {
        rows: Vec::new(),
        all_paired: true,
        missing: Vec::new(),
        unreadable: Vec::new(),
    };
    // Benchmarks with a sample no ratio can be read of (0, negative, not a
    // number): since the fourth law they are set aside and said after any
    // regression the rest show — one such sample, which the candidate's
    // producer may write, no longer outranks a regression shown on the
    // other benchmarks (the earlier laws stopped at the first).
    for (runner, base, cand) in judged {
        for (name, b) in base {
            let positive =
                |runs: &[(Option<u64>, Vec<f64>)]| samples(runs).all(|x| x.is_finite() && *x > 0.0);
            let c = cand.get(name).map(Vec::as_slice).unwrap_or(&[]);
            let readable = positive(b) && positive(c);
            if !readable && law >= Law::Tuned {
                table
                    .unreadable
                    .push(label(name, runner.map(String::as_str)));
                continue;
            }
            if !readable {
                return Err(name.clone());
            }
            if c.is_empty() {
                table.missing.push(name.clone());
            }
            let (d, paired) = log_ratios(b, c, lower, max_n);
            table.all_paired &= paired;
            let judgement = judge(&d, thresholds);
            table.rows.push(BenchmarkRow {
                benchmark: name.clone(),
                baseline: median(&samples(b).copied().collect::<Vec<_>>()),
                candidate: median(&samples(c).copied().collect::<Vec<_>>()),
                ratio: if lower {
                    judgement.ratio
                } else {
                    1.0 / judgement.ratio
                },
                low: if lower {
                    judgement.low
                } else {
                    1.0 / judgement.high
                },
                high: if lower {
                    judgement.high
                } else {
                    1.0 / judgement.low
                },
                n: judgement.n,
                verdict: judgement.verdict,
                runner: runner.cloned(),
            });
        }
    }
    Ok(table)
}

impl Table {
    /// The stage's report of the table, and what it decides: a regression
    /// rejects, then an unreadable sample, then a benchmark the candidate
    /// lacks; every chosen-runner benchmark shown not slower promotes;
    /// otherwise it waits, or is truncated.
    fn says(
        self,
        policy: &crate::ClassPolicy,
        thresholds: &Thresholds,
        max_n: usize,
        chosen_benchmarks: usize,
        stages: &mut Vec<StageReport>,
    ) -> Step {
        let Table {
            mut rows,
            all_paired,
            missing,
            unreadable,
        } = self;
        let &Thresholds {
            regression,
            equivalence,
            benchmarks: cells,
            ..
        } = thresholds;
        rank(&mut rows);
        let slower: Vec<String> = rows
            .iter()
            .filter(|r| r.verdict == BenchVerdict::Slower)
            .map(|r| {
                format!(
                    "{} ×{:.3} [{:.3}, {:.3}]",
                    r.label(),
                    r.ratio,
                    r.low,
                    r.high
                )
            })
            .collect();
        let undecided = holding_back(&rows);
        let state = if !slower.is_empty() || !missing.is_empty() || !unreadable.is_empty() {
            StageState::Failed
        } else if undecided.is_empty() {
            StageState::Passed
        } else {
            StageState::Open
        };
        let truncated = !undecided.is_empty() && undecided.iter().all(|r| r.n >= max_n);
        push(
            stages,
            Stage::Sequential,
            if truncated { StageState::Failed } else { state },
            StageDetails::Benchmarks(BenchmarksDetails {
                paired: all_paired,
                regression,
                equivalence,
                family: format!(
                    "bonferroni: each \"slower\"/\"faster\" flag at α/{} (family-wise α = {})",
                    cells, policy.alpha
                ),
                benchmarks: rows.clone(),
            }),
        );
        if !slower.is_empty() {
            return reject(
                Stage::Sequential,
                RejectCause::Measured,
                format!(
                    "{} of {} benchmark(s) shown slower than {:.1} % ({}): {}",
                    slower.len(),
                    rows.len(),
                    equivalence * 100.0,
                    if all_paired {
                        "paired by round"
                    } else {
                        "unpaired samples"
                    },
                    slower.join("; ")
                ),
            );
        }
        if !unreadable.is_empty() {
            return reject(
                Stage::Sequential,
                RejectCause::MissingEvidence,
                format!(
                    "{} benchmark(s) hold a sample that is not a positive number, so no ratio of them can be judged (first: {}); the others show no regression",
                    unreadable.len(),
                    unreadable[0]
                ),
            );
        }
        if !missing.is_empty() {
            return reject(
                Stage::Sequential,
                RejectCause::MissingEvidence,
                format!(
                    "the candidate has no samples of {} benchmark(s) the baseline has (first: {})",
                    missing.len(),
                    missing[0]
                ),
            );
        }
        if undecided.is_empty() {
            return Ok(None);
        }
        if truncated {
            return reject(
                Stage::Sequential,
                RejectCause::Truncated,
                format!(
                    "{} benchmark(s) not shown within {:.1} % after {} pairs each (first: {})",
                    undecided.len(),
                    regression * 100.0,
                    max_n,
                    undecided[0].label()
                ),
            );
        }
        still_open(policy, cells, rows.len(), chosen_benchmarks, &undecided)
    }
}

/// Regressions first, then what is still open, then the rest; within each,
/// the largest ratio first.
fn rank(rows: &mut [BenchmarkRow]) {
    let order = |v: BenchVerdict| match v {
        BenchVerdict::Slower => 0,
        BenchVerdict::Undecided => 1,
        BenchVerdict::NotSlower => 2,
        BenchVerdict::Unchanged => 3,
        BenchVerdict::Faster => 4,
    };
    rows.sort_by(|a, b| {
        order(a.verdict)
            .cmp(&order(b.verdict))
            .then(b.ratio.total_cmp(&a.ratio))
    });
}

/// The rows that hold a promotion back: not yet shown not slower. The
/// chosen runner's benchmarks must be shown not slower; another runner's
/// can flag a regression, and hold a promotion back only for a benchmark
/// the chosen runner has no row of (else a benchmark measured slower where
/// it was last measured, and not measured since, would be required
/// nowhere).
fn holding_back(rows: &[BenchmarkRow]) -> Vec<&BenchmarkRow> {
    let on_chosen: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.runner.is_none())
        .map(|r| r.benchmark.as_str())
        .collect();
    rows.iter()
        .filter(|r| r.runner.is_none() || !on_chosen.contains(r.benchmark.as_str()))
        .filter(|r| !r.verdict.not_slower())
        .collect()
}

/// The continue of a table with benchmarks still `undecided` (first the
/// one ranked first), and the samples a flag needs.
fn still_open(
    policy: &crate::ClassPolicy,
    cells: usize,
    rows: usize,
    chosen_benchmarks: usize,
    undecided: &[&BenchmarkRow],
) -> Step {
    // A flag at α/m needs at least this many pairs, however clear the
    // change: say so when the samples are fewer.
    let fewest = crate::benchmarks::fewest_pairs(policy.alpha / cells.max(1) as f64);
    let first = undecided[0];
    Ok(Some(Outcome::Continue {
        expected_more: fewest.saturating_sub(first.n).max(1) as u64,
        reason: format!(
            "{} of {} benchmark(s) undecided (first: {}, ×{:.3} over {} pair(s)); more samples decide them{}",
            undecided.len(),
            chosen_benchmarks,
            first.label(),
            first.ratio,
            first.n,
            if first.runner.is_some() {
                " — the baseline's newest runner has no samples of it: measure it there on both commits, or pin the runner (`scorer_version`) to judge one".to_string()
            } else if first.n < fewest {
                format!(
                    " — flagging one of {} benchmarks at α = {} needs at least {fewest} pairs: runs of each side (a run's samples share its process's state and count as one), i.e. `ratchet bench` rounds or as many separate runs of the tool ingested per commit",
                    rows, policy.alpha
                )
            } else {
                String::new()
            }
        ),
    }))
}
