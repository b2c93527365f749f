//! The trace read for people: decisions grouped into comparisons and
//! their looks, what is deployed, what failed. Presentation only: every
//! figure here is one a decision or an event recorded; nothing is decided.

use ratchet_trace::ReservedKind;
use std::collections::BTreeMap;

use ratchet_gate::{
    EffectInterval, Outcome, RejectCause, SequentialDetails, Stage, StageReport, Verdict,
};
use ratchet_trace::Event;

pub(crate) fn short(c: &str) -> &str {
    c.get(..8).unwrap_or(c)
}

/// A decision event, read for people.
pub(crate) struct Decision {
    pub seq: u64,
    pub ts_ms: i64,
    pub v: Verdict,
}

impl Decision {
    /// The decision events of `events` this gate can read, and for each it
    /// cannot (a verdict of a later law), its seq and why.
    pub fn read_all(events: &[&Event]) -> (Vec<Decision>, Vec<(u64, String)>) {
        let (mut read, mut unreadable) = (Vec::new(), Vec::new());
        for e in events
            .iter()
            .filter(|e| e.reserved_kind() == Some(ReservedKind::Decision) && e.origin.is_none())
        {
            match Verdict::from_json(&e.payload) {
                Ok(v) => read.push(Decision {
                    seq: e.seq,
                    ts_ms: e.ts_ms,
                    v,
                }),
                Err(why) => unreadable.push((e.seq, why.to_string())),
            }
        }
        (read, unreadable)
    }

    pub fn is_final(&self) -> bool {
        !matches!(self.v.outcome, Outcome::Continue { .. })
    }
    pub fn promoted(&self) -> bool {
        self.v.outcome == Outcome::Promote
    }
    pub fn truncated(&self) -> bool {
        matches!(
            self.v.outcome,
            Outcome::Reject {
                cause: RejectCause::Truncated,
                ..
            }
        )
    }
    pub fn class(&self) -> &str {
        &self.v.class
    }
    pub fn candidate(&self) -> &str {
        self.v.candidate.as_str()
    }
    pub fn baseline(&self) -> &str {
        self.v.baseline.as_str()
    }
    /// The trace size the decision was taken at.
    pub fn at(&self) -> u64 {
        self.v.trace.size
    }
    /// "promote", "reject at sequential", "cannot decide (evidence
    /// missing) at sequential": the gate's words ([`GateStatus::words`]),
    /// the same the CLI prints.
    ///
    /// [`GateStatus::words`]: ratchet_gate::GateStatus::words
    pub fn outcome(&self) -> String {
        let status = self.v.outcome.status();
        match &self.v.outcome {
            Outcome::Reject { stage, .. } if self.truncated() => {
                format!("truncated at {}", stage)
            }
            Outcome::Reject { stage, .. } => {
                format!("{} at {}", status.words(), stage)
            }
            _ => status.words().to_string(),
        }
    }

    /// Rejected on measured evidence (not a refusal, not truncated).
    pub fn measured_reject(&self) -> bool {
        self.v.outcome.status() == ratchet_gate::GateStatus::Reject
    }
    pub fn reason(&self) -> Option<&str> {
        match &self.v.outcome {
            Outcome::Promote => None,
            Outcome::Reject { reason, .. } | Outcome::Continue { reason, .. } => Some(reason),
        }
    }
    pub fn stages(&self) -> impl Iterator<Item = &StageReport> {
        self.v.stages.iter()
    }
    pub fn stage(&self, stage: &Stage) -> Option<&StageReport> {
        self.v.stage(stage)
    }
    /// The sequential stage's figures, when its test ran.
    pub fn sequential(&self) -> Option<&SequentialDetails> {
        self.v.sequential()
    }
    /// The effect's (tasks, interval's name); its figures are shown as
    /// read ([`crate::effect_of`]), never on the gate's judged scale.
    pub fn effect(&self) -> Option<(u64, &'static str)> {
        let effect = self.sequential()?.effect?;
        Some((
            effect.n as u64,
            effect
                .interval
                .map_or("normal interval", EffectInterval::as_str),
        ))
    }
}

/// One comparison's looks up to its final decision (or the latest look,
/// while it is still open).
pub(crate) struct Episode<'d> {
    /// The "continue" looks before `last`.
    pub interim: Vec<&'d Decision>,
    /// The final decision, or the latest look of an open comparison.
    pub last: &'d Decision,
}

impl Episode<'_> {
    pub fn is_final(&self) -> bool {
        self.last.is_final()
    }
}

/// The decisions of each class, grouped into episodes, in trace order.
pub(crate) fn episodes(decisions: &[Decision]) -> BTreeMap<String, Vec<Episode<'_>>> {
    // Interim looks wait, per comparison, for the decision that ends them.
    let mut open: BTreeMap<(String, String, String), Vec<&Decision>> = BTreeMap::new();
    let mut ended: Vec<Episode<'_>> = Vec::new();
    for d in decisions {
        let key = (
            d.class().to_string(),
            d.baseline().to_string(),
            d.candidate().to_string(),
        );
        let looks = open.entry(key.clone()).or_default();
        if d.is_final() {
            ended.push(Episode {
                interim: std::mem::take(looks),
                last: d,
            });
        } else {
            looks.push(d);
        }
    }
    for (_, mut looks) in open {
        if let Some(last) = looks.pop() {
            ended.push(Episode {
                interim: looks,
                last,
            });
        }
    }
    ended.sort_by_key(|e| e.last.seq);
    let mut by_class: BTreeMap<String, Vec<Episode<'_>>> = BTreeMap::new();
    for e in ended {
        by_class
            .entry(e.last.class().to_string())
            .or_default()
            .push(e);
    }
    by_class
}

/// A wall-clock time in UTC, `2026-11-30 14:05:09`.
pub(crate) fn utc(ts_ms: i64) -> String {
    let secs = ts_ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// α and β of a verdict's sequential test, from Wald's boundaries it
/// recorded (`upper = ln((1−β)/α)`, `lower = ln(β/(1−α))`).
pub(crate) fn alpha_beta(fig: &SequentialDetails) -> Option<(f64, f64)> {
    let (u, l) = (fig.wald_upper.exp(), fig.wald_lower.exp());
    let alpha = (1.0 - l) / (u - l);
    let beta = l * (1.0 - alpha);
    (alpha.is_finite() && beta.is_finite()).then_some((alpha, beta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_are_civil_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_796_206_341_520), "2026-12-02 10:12:21");
    }

    #[test]
    fn alpha_and_beta_come_back_from_walds_boundaries() {
        let (a, b) = (0.05f64, 0.1f64);
        let fig = SequentialDetails {
            test: ratchet_gate::TestFigures::Gaussian {
                design: "paired differences".into(),
                effect_measure: "mean difference".into(),
                mu0: 0.0,
                mu1: 0.1,
                variance: None,
            },
            llr: 0.0,
            n: 0,
            lower: 0.0,
            upper: 0.0,
            wald_lower: (b / (1.0 - a)).ln(),
            wald_upper: ((1.0 - b) / a).ln(),
            effect: None,
            max_n: 10,
            decision: ratchet_gate::Decision::Continue,
            tasks_available: 0,
            stopped_at_missing_task: None,
        };
        let (alpha, beta) = alpha_beta(&fig).expect("both");
        assert!((alpha - a).abs() < 1e-12 && (beta - b).abs() < 1e-12);
    }
}
