//! The live side: a [`Monitor`] following one commit's score stream in the
//! trace, [`best_commit`] (the measured rung to climb back to), and the
//! honest warm-up report when μ and σ are estimated.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use ratchet_trace::{AsOf, CommitId, EventDraft, Ledger, Receipt, ScorerRef, Verified};

use crate::detectors::{Alarm, Cusum, Detector, Shift};
use crate::error::{Error, Result, invalid};
use crate::live::{LiveChart, Warmup};

/// Event kind of an appended alarm.
pub const KIND_ALARM: &str = ratchet_trace::ReservedKind::Alarm.as_str();

/// Page size when following the trace.
const PAGE: usize = 4096;

/// An alarm tied to the trace (the payload of an `alarm` event).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TraceAlarm {
    /// The monitored commit.
    pub commit: CommitId,
    /// The scorer followed.
    pub scorer: String,
    /// The scorer's version followed (one version per stream; absent in
    /// alarms recorded before versions were tracked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer_version: Option<String>,
    /// The detector's alarm.
    pub alarm: Alarm,
    /// Seq of the score event that raised it.
    pub seq: u64,
    /// Seq of the first score of the estimated change (the change began
    /// between the previous score of this stream and this seq).
    pub change_seq: u64,
    /// The baseline the detector compared against: for the self-starting
    /// charts run since issue 40, the in-control estimate the alarming
    /// score was judged by (the warm-up and every score passed since); in
    /// alarms recorded before, the warm-up's mean, fixed for the deployment.
    pub baseline_mean: f64,
    /// Its standard deviation.
    pub baseline_sd: f64,
    /// The seq the watch followed the stream after (its deployment, or
    /// `watch --from`): where a chart of the alarm starts. Absent in alarms
    /// recorded before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
    /// The chart the watch ran. With `from_seq` and `watch`, what starts the
    /// monitor that raised the alarm again, so that a chart of the alarm
    /// is that monitor's own statistic ([`TraceAlarm::path`]). Absent in
    /// alarms recorded before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<Chart>,
    /// The sides the watch reported (an alarm on another side restarted
    /// its chart silently). Absent in alarms recorded before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<Watch>,
}

/// What [`Monitor::poll_observed`] shows each score to: its seq, the
/// chart just after judging it, the alarm it raised; a break stops the poll.
pub(crate) type Observer<'a> =
    dyn FnMut(u64, &LiveChart, Option<&Alarm>) -> std::ops::ControlFlow<()> + 'a;

/// Which shifts a [`Monitor`] reports. A live stream that improves is not
/// an incident: by default only the harmful direction alarms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Watch {
    /// Decreases only: harm for a higher-is-better scorer (the default).
    #[default]
    Decreases,
    /// Increases only: harm for a lower-is-better scorer (cost, latency).
    Increases,
    /// Both directions (on request).
    Both,
}

impl Watch {
    /// The harmful direction of a scorer.
    pub fn harm(lower_is_better: bool) -> Watch {
        if lower_is_better {
            Watch::Increases
        } else {
            Watch::Decreases
        }
    }

    /// Whether an alarm with this shift is reported.
    pub fn reports(self, shift: Shift) -> bool {
        matches!(
            (self, shift),
            (Watch::Both, _) | (Watch::Decreases, Shift::Down) | (Watch::Increases, Shift::Up)
        )
    }
}

/// Which chart a [`Monitor`] runs, scaled to the commit's measured
/// baseline (mean and σ; for pass/fail scores, the pass rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "chart", rename_all = "snake_case")]
pub enum Chart {
    /// The two-sided tabular CUSUM: reference `k`, interval `h` (σ units).
    Cusum {
        /// Reference (half the shift to catch, σ units).
        k: f64,
        /// Decision interval (σ units).
        h: f64,
    },
    /// EWMA with smoothing `lambda` and width `l` (σ units, steady-state limits).
    Ewma {
        /// Smoothing λ in (0, 1].
        lambda: f64,
        /// Limit width L.
        l: f64,
    },
    /// Page–Hinkley with tolerance `delta` and threshold `lambda` (σ units).
    PageHinkley {
        /// Tolerance δ.
        delta: f64,
        /// Threshold λ.
        lambda: f64,
    },
    /// The Bernoulli CUSUM for 0/1 scores ([`BernoulliCusum`](crate::BernoulliCusum)):
    /// tuned to a move of the pass rate by `shift` in the watched direction
    /// from the rate it measures, `(x + ½)/(n + 1)` over the in-control
    /// scores so far (self-starting, [`LiveChart`]), with the interval whose
    /// exact in-control ARL at that rate is `arl0`. One-sided.
    Bernoulli {
        /// Absolute change of the pass rate to catch.
        shift: f64,
        /// In-control average run length.
        arl0: f64,
    },
}

impl Chart {
    /// A CUSUM with reference `k` whose interval `h` gives an in-control
    /// ARL of `arl0` (Brook–Evans chain, [`DEFAULT_STATES`](crate::DEFAULT_STATES) states).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Chart, DEFAULT_STATES, cusum_arl};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let Chart::Cusum { k, h } = Chart::cusum_for_arl0(0.5, 370.0)? else { unreachable!() };
    /// assert!((h - 4.77).abs() < 0.05, "{h}"); // Montgomery: h = 4.77 for ARL0 ≈ 370
    /// assert!((cusum_arl(k, h, 0.0, false, DEFAULT_STATES)? - 370.0).abs() < 1.0);
    /// assert!(Chart::cusum_for_arl0(0.5, 1.0).is_err()); // an ARL0 below 2 is refused
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `k` or `arl0` out of range.
    pub fn cusum_for_arl0(k: f64, arl0: f64) -> Result<Chart> {
        Ok(Chart::Cusum {
            k,
            h: crate::cusum_h_for_arl0(k, arl0, crate::DEFAULT_STATES)?,
        })
    }

    /// A CUSUM with reference `k` whose in-control ARL is `arl0` for the
    /// sides `watch` alarms on: solved on the one-sided chain when one
    /// direction is watched (the harm), on the two-sided one for
    /// [`Watch::Both`].
    ///
    /// # Errors
    /// As [`Chart::cusum_for_arl0`].
    pub fn cusum_for_arl0_watching(k: f64, arl0: f64, watch: Watch) -> Result<Chart> {
        let h = match watch {
            Watch::Both => crate::cusum_h_for_arl0(k, arl0, crate::DEFAULT_STATES)?,
            Watch::Decreases | Watch::Increases => {
                crate::cusum_h_for_arl0_one_sided(k, arl0, crate::DEFAULT_STATES)?
            }
        };
        Ok(Chart::Cusum { k, h })
    }

    /// An EWMA with smoothing `lambda` whose in-control ARL is `arl0` for
    /// the sides `watch` alarms on: one side of a symmetric chart alarms at
    /// about half the two-sided rate, so one watched side is solved for a
    /// two-sided ARL of `arl0 / 2` (checked by simulation in the tests).
    ///
    /// # Errors
    /// As [`Chart::ewma_for_arl0`].
    pub fn ewma_for_arl0_watching(lambda: f64, arl0: f64, watch: Watch) -> Result<Chart> {
        match watch {
            Watch::Both => Chart::ewma_for_arl0(lambda, arl0),
            Watch::Decreases | Watch::Increases => Chart::ewma_for_arl0(lambda, arl0 / 2.0),
        }
    }

    /// An EWMA with smoothing `lambda` whose width `l` gives an in-control
    /// ARL of `arl0` (Lucas–Saccucci chain).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Chart, DEFAULT_STATES, ewma_arl};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let Chart::Ewma { lambda, l } = Chart::ewma_for_arl0(0.2, 500.0)? else { unreachable!() };
    /// assert!((l - 2.962).abs() < 0.01, "{l}"); // Lucas & Saccucci's table
    /// assert!((ewma_arl(lambda, l, 0.0, DEFAULT_STATES)? - 500.0).abs() < 1.0);
    /// assert!(ewma_arl(lambda, l, 1.0, DEFAULT_STATES)? < 15.0); // a 1σ shift is caught fast
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `lambda` or `arl0` out of range.
    pub fn ewma_for_arl0(lambda: f64, arl0: f64) -> Result<Chart> {
        Ok(Chart::Ewma {
            lambda,
            l: crate::ewma_l_for_arl0(lambda, arl0, crate::DEFAULT_STATES)?,
        })
    }

    /// `pass_fail` when every score of `commit`'s `scorer` stream up to seq
    /// `upto` is exactly 0 or 1 (a pass/fail stream), else `otherwise`:
    /// what `ratchet watch --detector auto` runs. Call it on a verified
    /// trace.
    ///
    /// # Errors
    /// [`Error::Trace`] if the store cannot be read.
    pub fn for_stream(
        view: &Verified,
        commit: &CommitId,
        scorer: &str,
        upto: u64,
        pass_fail: Chart,
        otherwise: Chart,
    ) -> Result<Chart> {
        let all_pass_fail = view
            .score_stream(commit, scorer, 0, usize::MAX)
            .iter()
            .filter(|(seq, _)| *seq <= upto)
            .all(|(_, v)| v.to_bits() == 0f64.to_bits() || v.to_bits() == 1f64.to_bits());
        Ok(if all_pass_fail { pass_fail } else { otherwise })
    }
}

impl std::fmt::Display for Chart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Chart::Cusum { k, h } => write!(f, "CUSUM (k {k}, h {h:.4})"),
            Chart::Ewma { lambda, l } => write!(f, "EWMA (λ {lambda}, L {l:.4})"),
            Chart::PageHinkley { delta, lambda } => {
                write!(f, "Page–Hinkley (δ {delta}, λ {lambda})")
            }
            Chart::Bernoulli { shift, arl0 } => {
                write!(f, "Bernoulli CUSUM (pass-rate shift {shift}, ARL0 {arl0})")
            }
        }
    }
}

impl std::fmt::Display for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Watch::Decreases => "decreases",
            Watch::Increases => "increases",
            Watch::Both => "both directions",
        })
    }
}

/// How [`Monitor::follow`] follows the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follow {
    /// Append each alarm to the trace ([`record_alarm`]: once per alarm).
    pub record: bool,
    /// Keep polling after reaching the head (until the callback stops it).
    pub keep_following: bool,
    /// Pause between polls when following.
    pub interval: std::time::Duration,
}

impl Default for Follow {
    fn default() -> Self {
        Follow {
            record: false,
            keep_following: false,
            interval: std::time::Duration::from_secs(1),
        }
    }
}

/// What one [`Monitor::follow`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FollowReport {
    /// Alarms raised.
    pub alarms: usize,
    /// Alarms appended to the trace now (the others were recorded before,
    /// or recording was off).
    pub recorded: usize,
    /// The seq the monitor has read to.
    pub position: u64,
}

/// Follows one commit's scores of one scorer with a chart started from
/// that commit's measured statistics at `from_seq` and self-starting from
/// there ([`LiveChart`]: each score judged against every in-control score
/// before it, so the warm-up's error washes out), reporting
/// the shifts it [`Watch`]es (by default decreases; a shift the other way
/// restarts the chart without an alarm). Its state is a function of the
/// trace alone: a new monitor started at the same point and polled to the
/// same position is identical.
#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    commit: CommitId,
    scorer: String,
    version: String,
    watch: Watch,
    chart: Chart,
    detector: LiveChart,
    /// The warm-up at the start (a change of watched direction restarts
    /// the chart from it).
    baseline: Warmup,
    /// The seq it was started after (recorded in its alarms).
    from_seq: u64,
    position: u64,
    /// Seqs of the observations since the detector's last reset.
    seqs: Vec<u64>,
    /// Whose scores it reads (default: everyone's; `watch` reads the key
    /// holder's unless told otherwise, [`Monitor::reading`]).
    sources: ratchet_trace::Sources,
}

impl Monitor {
    /// Starts following `commit`'s `scorer` after `from_seq`, with a CUSUM of
    /// reference `k` and interval `h` (σ units) started from the commit's
    /// measured mean and standard deviation at `from_seq` (at least `min_n`
    /// scores) and self-starting from there ([`LiveChart`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the commit has fewer than `min_n` (≥ 2)
    /// scores or zero spread at `from_seq`, or for invalid k/h;
    /// [`Error::Trace`] if the store cannot be read.
    pub fn start(
        view: &Verified,
        commit: &CommitId,
        scorer: &str,
        from_seq: u64,
        k: f64,
        h: f64,
        min_n: u64,
    ) -> Result<Self> {
        Monitor::start_chart(
            view,
            commit,
            scorer,
            from_seq,
            Chart::Cusum { k, h },
            Watch::default(),
            min_n,
        )
    }

    /// [`Monitor::start`] with any [`Chart`], watching `watch`.
    ///
    /// # Errors
    /// As [`Monitor::start`] (a Bernoulli chart needs no spread: a warm-up
    /// of all passes starts it); [`Error::InvalidParameter`] for the
    /// chart's parameters (a Bernoulli chart on scores that are not 0/1
    /// fails at its first such score).
    pub fn start_chart(
        view: &Verified,
        commit: &CommitId,
        scorer: &str,
        from_seq: u64,
        chart: Chart,
        watch: Watch,
        min_n: u64,
    ) -> Result<Self> {
        // One version: the newest the commit has at the start. Scores of
        // another version (a changed rubric) are another scale, never mixed.
        let version = view
            .shared_scorer_version(scorer, commit, commit, from_seq)
            .unwrap_or_default();
        let found =
            view.commit_stats_for(commit, ScorerRef::at_version(scorer, &version), from_seq);
        let have = found.as_ref().map_or(0, |s| s.n);
        let stats = found.filter(|s| s.n >= min_n.max(2)).ok_or_else(|| {
            invalid(
                "baseline",
                format!(
                    "commit {commit} has {have} {scorer} score(s) up to seq {from_seq}, fewer than the {} a baseline needs: start from a later seq once it has them (watch --from SEQ), or ask for fewer (--min-n)",
                    min_n.max(2)
                ),
            )
        })?;
        let baseline = Warmup {
            n: stats.n,
            mean: stats.mean,
            sd: stats.variance.unwrap_or(0.0).sqrt(),
        };
        let detector = LiveChart::start(chart, &baseline, watch).map_err(|e| match e {
            Error::InvalidParameter { name, reason } => invalid(
                name,
                format!("commit {commit}'s {scorer} baseline at seq {from_seq}: {reason}"),
            ),
            e => e,
        })?;
        Ok(Monitor {
            commit: commit.clone(),
            scorer: scorer.to_string(),
            version,
            watch,
            chart,
            detector,
            baseline,
            from_seq,
            position: from_seq,
            seqs: Vec::new(),
            sources: ratchet_trace::Sources::everyone(),
        })
    }

    /// This monitor reading only the scores `sources` admits from now on
    /// (start it on a view restricted to the same sources,
    /// [`Verified::restricted_to`], so its baseline is theirs too): no
    /// producer it does not trust can raise an alarm.
    pub fn reading(mut self, sources: ratchet_trace::Sources) -> Self {
        self.sources = sources;
        self
    }

    /// Whose scores it reads.
    pub fn sources(&self) -> &ratchet_trace::Sources {
        &self.sources
    }

    /// Which shifts alarm (default [`Watch::Decreases`]). A one-sided
    /// Bernoulli chart is rebuilt for the new direction.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for [`Watch::Both`] on a Bernoulli chart.
    pub fn watching(mut self, watch: Watch) -> Result<Self> {
        if matches!(self.chart, Chart::Bernoulli { .. }) && watch != self.watch {
            self.detector = LiveChart::start(self.chart, &self.baseline, watch)?;
        }
        self.watch = watch;
        Ok(self)
    }

    /// The chart run.
    pub fn chart(&self) -> Chart {
        self.chart
    }

    /// The shifts this monitor reports.
    pub fn watch(&self) -> Watch {
        self.watch
    }

    /// The seq up to which the trace has been read.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The commit and scorer followed.
    pub fn stream(&self) -> (&CommitId, &str) {
        (&self.commit, &self.scorer)
    }

    /// The scorer version followed.
    pub fn scorer_version(&self) -> &str {
        &self.version
    }

    /// The running chart (its in-control estimate, and the rate a
    /// Bernoulli chart is tuned at).
    pub fn live_chart(&self) -> &LiveChart {
        &self.detector
    }

    /// Reads the new scores of the stream and returns the alarms they raise,
    /// in order. After an alarm the detector restarts.
    ///
    /// # Errors
    /// [`Error::Trace`] if the store cannot be read.
    pub fn poll(&mut self, view: &Verified) -> Result<Vec<TraceAlarm>> {
        self.poll_observed(view, &mut |_, _, _| std::ops::ControlFlow::Continue(()))
    }

    /// [`Monitor::poll`], showing `step` each score's seq, the chart just
    /// after it judged the score (before any restart) and whether it
    /// alarmed, until `step` breaks (the rest of the stream is then left
    /// unread): how [`TraceAlarm::path`] replays the statistic.
    pub(crate) fn poll_observed(
        &mut self,
        view: &Verified,
        step: &mut Observer<'_>,
    ) -> Result<Vec<TraceAlarm>> {
        let mut alarms = Vec::new();
        loop {
            let page = view.score_stream_from(
                &self.commit,
                ScorerRef::at_version(&self.scorer, &self.version),
                self.position,
                PAGE,
                &self.sources,
            );
            for &(seq, value) in &page {
                self.seqs.push(seq);
                self.position = seq;
                // The estimate the score was judged against (an alarm
                // records it as its baseline).
                let judged_by = self.detector.in_control();
                let raised = self.detector.update(value)?;
                let seen = step(seq, &self.detector, raised.as_ref());
                if let Some(alarm) = raised {
                    if !self.watch.reports(alarm.shift) {
                        self.detector.reset();
                        self.seqs.clear();
                        continue;
                    }
                    let idx = (alarm.change_start as usize)
                        .saturating_sub(1)
                        .min(self.seqs.len() - 1);
                    alarms.push(TraceAlarm {
                        commit: self.commit.clone(),
                        scorer: self.scorer.clone(),
                        scorer_version: Some(self.version.clone()),
                        change_seq: self.seqs[idx],
                        seq,
                        alarm,
                        baseline_mean: judged_by.mean,
                        baseline_sd: judged_by.sd,
                        from_seq: Some(self.from_seq),
                        chart: Some(self.chart),
                        watch: Some(self.watch),
                    });
                    self.detector.reset();
                    self.seqs.clear();
                }
                if seen.is_break() {
                    return Ok(alarms);
                }
            }
            if page.len() < PAGE {
                break;
            }
        }
        Ok(alarms)
    }
}

impl Monitor {
    /// Polls a warm owner's view (each poll refreshes it first: only the
    /// events after the head it holds are read and checked, so a poll costs
    /// what is new), records alarms through it if asked, and hands each to
    /// `on_alarm` with whether it was appended now. Returns after one poll,
    /// or — with `keep_following` — when `on_alarm` breaks.
    ///
    /// # Errors
    /// [`Error::Trace`] if a new event fails verification (then nothing is
    /// read or recorded) or the store cannot be read or written.
    pub fn follow(
        &mut self,
        ledger: &mut Ledger,
        how: &Follow,
        on_alarm: &mut dyn FnMut(&TraceAlarm, bool) -> std::ops::ControlFlow<()>,
    ) -> Result<FollowReport> {
        let mut report = FollowReport {
            alarms: 0,
            recorded: 0,
            position: self.position,
        };
        loop {
            ledger.refresh()?;
            let alarms = self.poll(ledger.view())?;
            report.position = self.position;
            for a in alarms {
                report.alarms += 1;
                let appended = how.record && record_alarm(ledger, &a)?.is_some();
                report.recorded += usize::from(appended);
                if on_alarm(&a, appended).is_break() {
                    return Ok(report);
                }
            }
            if !how.keep_following {
                return Ok(report);
            }
            std::thread::sleep(how.interval);
        }
    }
}

/// Appends an alarm to the trace (kind `alarm`, under the alarmed commit),
/// once: an alarm for the same commit, scorer and score seq recorded before
/// (by an earlier `watch --record` over the same stretch) is not recorded
/// again, and `None` is returned.
///
/// # Errors
/// [`Error::Trace`] if the append fails (for instance, a keyed store opened without its key).
pub fn record_alarm(ledger: &mut Ledger, alarm: &TraceAlarm) -> Result<Option<Receipt>> {
    let draft = EventDraft::reserved(ratchet_trace::ReservedKind::Alarm, alarm)?
        .commit(alarm.commit.clone())
        .session("monitor");
    let key = format!("alarm:{}:{}:{}", alarm.commit, alarm.scorer, alarm.seq);
    Ok(match ledger.append_once(&key, vec![draft])? {
        ratchet_trace::AppendOnce::Appended(mut r) => r.pop(),
        ratchet_trace::AppendOnce::AlreadyAppended { .. } => None,
    })
}

/// Where the deployment of `commit` began: the seq of the latest event
/// this store recorded that deployed it — a promotion or a heal's
/// checkout; one that only restored a ref or completed an interrupted
/// checkout deploys nothing new (a live monitor starts there by default).
/// `None` if the trace holds neither. The one rule, shared with the
/// report's alarm charts: [`ratchet_records::deployment_start`].
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read or a deployment event
/// does not parse.
pub fn deployment_start(view: &Verified, commit: &CommitId) -> Result<Option<u64>> {
    Ok(ratchet_records::deployment_start(view, commit, u64::MAX)?)
}

/// The latest alarm this store's own monitor recorded (for `commit`, if
/// given): the alarm a heal acts on. Alarms merged in from cells
/// (`origin` set) are evidence of what a cell saw, never an instruction to
/// this view, so they are passed over. Call it on a verified trace
/// ([`ratchet_trace::Store::verified`]); a payload that does not parse is an error, not a
/// skipped alarm.
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read or an alarm payload is
/// malformed.
pub fn latest_alarm(view: &Verified, commit: Option<&CommitId>) -> Result<Option<TraceAlarm>> {
    let mut latest = None;
    for e in view.events_of_kinds(&[KIND_ALARM]) {
        if e.origin.is_none() && (commit.is_none() || e.commit.as_ref() == commit) {
            latest = Some(serde_json::from_slice(&e.payload).map_err(|err| {
                ratchet_trace::Error::InvalidInput {
                    field: "payload",
                    reason: format!("alarm event {} does not parse: {err}", e.seq),
                }
            })?);
        }
    }
    Ok(latest)
}

/// One commit in a best-commit ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedCommit {
    /// The commit.
    pub commit: CommitId,
    /// Scores.
    pub n: u64,
    /// Mean score.
    pub mean: f64,
    /// Sample standard deviation.
    pub sd: f64,
    /// The pessimistic one-sided confidence bound on the mean: the lower
    /// bound `x̄ − t_{c, n−1}·s/√n` for a higher-is-better scorer, the upper
    /// bound `x̄ + t·s/√n` for a lower-is-better one.
    pub lower_bound: f64,
}

/// What [`best_commit`] ranks: one scorer at one version, the commits
/// with at least `min_n` scores, `exclude`d ones left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking<'a> {
    /// The scorer.
    pub scorer: &'a str,
    /// Its version (default: its newest, so that commits are compared on
    /// one scale).
    pub version: Option<&'a str>,
    /// Fewest scores a ranked commit has (≥ 2).
    pub min_n: u64,
    /// Confidence of the bound, in (0, 1).
    pub confidence: f64,
    /// Commits left out (the alarmed one).
    pub exclude: &'a [CommitId],
    /// The scorer improves downwards (cost, latency): ranked by the upper
    /// bound, smallest first.
    pub lower_is_better: bool,
}

/// Ranks commits by the pessimistic confidence bound on their mean score
/// (the raw argmax of means picks lucky small samples). The first entry is
/// the best measured commit.
///
/// # Errors
/// [`Error::InvalidParameter`] for `min_n` < 2 or `confidence` outside (0, 1).
pub fn best_commit(view: &Verified, ranking: &Ranking<'_>) -> Result<Vec<RankedCommit>> {
    let Ranking {
        scorer,
        version,
        min_n,
        confidence,
        exclude,
        lower_is_better,
    } = *ranking;
    let sign = if lower_is_better { -1.0 } else { 1.0 };
    if min_n < 2 {
        return Err(invalid(
            "min_n",
            "at least 2 scores are needed for a confidence bound",
        ));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(invalid(
            "confidence",
            format!("{confidence} must be in (0, 1)"),
        ));
    }
    let mut ranked: Vec<RankedCommit> = Vec::new();
    let newest;
    let version = match version {
        Some(v) => v,
        None => {
            newest = view
                .scorer_versions(scorer, AsOf::Head)
                .into_iter()
                .next()
                .map(|v| v.version)
                .unwrap_or_default();
            &newest
        }
    };
    for s in view.commit_stats(ScorerRef::at_version(scorer, version), AsOf::Head) {
        if s.n < min_n || exclude.contains(&s.commit) {
            continue;
        }
        let sd = s.variance.unwrap_or(0.0).sqrt();
        let student = StudentsT::new(0.0, 1.0, (s.n - 1) as f64)
            .map_err(|e| Error::Numerical {
                what: "student t",
                reason: e.to_string(),
            })?
            .inverse_cdf(confidence);
        let lower_bound = s.mean - sign * student * sd / (s.n as f64).sqrt();
        // Statistics that overflowed f64 (scores near ±1.8e308) are marked
        // +∞ by the store: no bound can be drawn from them, and an infinite
        // or NaN bound must not rank a commit first.
        if !lower_bound.is_finite() {
            continue;
        }
        ranked.push(RankedCommit {
            lower_bound,
            commit: s.commit,
            n: s.n,
            mean: s.mean,
            sd,
        });
    }
    ranked.sort_by(|a, b| {
        (sign * b.lower_bound)
            .total_cmp(&(sign * a.lower_bound))
            .then_with(|| a.commit.cmp(&b.commit))
    });
    Ok(ranked)
}

/// What a plug-in CUSUM does in control when μ and σ are estimated from
/// `m` warm-up samples instead of known (textbook ARLs assume them known).
/// The monitor no longer runs such a chart ([`LiveChart`] self-starts);
/// this is the measurement of why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WarmupReport {
    /// Warm-up samples.
    pub m: u64,
    /// P(false alarm within `horizon` in-control observations), estimated.
    pub p_false_alarm: f64,
    /// Its Monte-Carlo standard error.
    pub se: f64,
    /// The same probability with μ and σ known.
    pub p_false_alarm_known: f64,
    /// The horizon.
    pub horizon: u64,
}

/// Simulates the in-control false-alarm probability within `horizon`
/// observations of a CUSUM (k, h) whose μ and σ are estimated from `m`
/// N(0, 1) samples, and the same with known parameters. Seeded.
///
/// # Errors
/// [`Error::InvalidParameter`] for m < 2, horizon = 0 or runs < 2.
pub fn warmup_false_alarms(
    k: f64,
    h: f64,
    m: u64,
    horizon: u64,
    runs: usize,
    seed: u64,
) -> Result<WarmupReport> {
    if m < 2 || horizon == 0 || runs < 2 {
        return Err(invalid(
            "m/horizon/runs",
            "need m ≥ 2, horizon ≥ 1 and at least 2 runs",
        ));
    }
    let normal = Normal::new(0.0, 1.0).map_err(|e| invalid("normal", e.to_string()))?;
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut est_alarms, mut known_alarms) = (0usize, 0usize);
    for _ in 0..runs {
        let (mut mean, mut m2) = (0.0, 0.0);
        for i in 1..=m {
            let x: f64 = normal.sample(&mut rng);
            let d = x - mean;
            mean += d / i as f64;
            m2 += d * (x - mean);
        }
        let sd = (m2 / (m - 1) as f64).sqrt().max(f64::MIN_POSITIVE);
        let mut estimated = Cusum::new(mean, sd, k, h)?;
        let mut known = Cusum::new(0.0, 1.0, k, h)?;
        let (mut e_hit, mut k_hit) = (false, false);
        for _ in 0..horizon {
            let x: f64 = normal.sample(&mut rng);
            e_hit = e_hit || estimated.update(x)?.is_some();
            k_hit = k_hit || known.update(x)?.is_some();
        }
        est_alarms += usize::from(e_hit);
        known_alarms += usize::from(k_hit);
    }
    let r = runs as f64;
    let p = est_alarms as f64 / r;
    Ok(WarmupReport {
        m,
        p_false_alarm: p,
        se: (p * (1.0 - p) / r).sqrt(),
        p_false_alarm_known: known_alarms as f64 / r,
        horizon,
    })
}

/// The smallest warm-up size from `candidates` (ascending) whose estimated
/// false-alarm probability within `horizon` is at most `target`, with its
/// report; `None` if none reaches it.
///
/// # Errors
/// As [`warmup_false_alarms`].
pub fn size_warmup(
    k: f64,
    h: f64,
    target: f64,
    horizon: u64,
    candidates: &[u64],
    runs: usize,
    seed: u64,
) -> Result<Option<WarmupReport>> {
    for &m in candidates {
        let report = warmup_false_alarms(k, h, m, horizon, runs, seed)?;
        if report.p_false_alarm <= target {
            return Ok(Some(report));
        }
    }
    Ok(None)
}
