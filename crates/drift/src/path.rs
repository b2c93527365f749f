//! A recorded alarm's statistic along its window, from the detector that
//! raised it: what a chart of the alarm draws (the report's), so that the
//! chart and the decision cannot disagree about k, h or the path.

use std::ops::ControlFlow;

use ratchet_trace::{Sources, Verified};

use crate::detectors::{Cusum, Detector, Shift};
use crate::monitor::{Chart, Monitor, TraceAlarm, Watch};

/// The statistic of the CUSUM-type detector that raised an alarm, after
/// each score since its chart last restarted, up to the alarm.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmPath {
    /// `(seq, statistic)` after each score, the alarming one last (where
    /// it is the recorded statistic).
    pub points: Vec<(u64, f64)>,
    /// The reference value k the statistic subtracted at the alarm (σ for
    /// a CUSUM; counts of the watched outcome for the Bernoulli CUSUM).
    pub k: f64,
    /// The limit h it crossed (the alarm's).
    pub h: f64,
    /// How the path was obtained.
    pub from: PathFrom,
}

/// How an [`AlarmPath`] was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathFrom {
    /// The monitor that raised the alarm, started again where and as the
    /// alarm records (`from_seq`, `chart`, `watch`) and run over the trace:
    /// its own statistic and k, step by step.
    Replayed,
    /// An alarm recorded before its chart was: a fixed-parameter detector
    /// (`cusum` on the recorded baseline, `bernoulli_cusum`) run over its
    /// window with the one k that makes the evidence since the change sum
    /// to the recorded statistic.
    Solved,
}

/// Why an alarm's statistic cannot be drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotDrawn {
    /// Its window (`n`, `change_start`) does not fit in memory's indices.
    WindowOutOfRange,
    /// Its window is longer than the stream before the alarm, or empty.
    WindowNotInStream,
    /// The detector's statistic is no CUSUM-type sum (EWMA, Page–Hinkley).
    NotCusum,
    /// Solved for k, the path does not reach the recorded statistic (the
    /// detector may have restarted in its window).
    DoesNotReach,
    /// Started again as recorded, reading everyone's scores or the key
    /// holder's, the monitor does not raise this alarm here (its watch read
    /// another scorer version, or trusted other producers).
    DoesNotReplay,
}

/// Two statistics equal but for the last bits: JSON keeps an f64 exactly,
/// so only a different computation differs by more.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

impl TraceAlarm {
    /// The statistic of the detector that raised this alarm, along its
    /// window ([`AlarmPath`]). An alarm that records its chart is replayed
    /// ([`PathFrom::Replayed`]) from `view`; one recorded before is solved
    /// on `stream` ([`PathFrom::Solved`]): its score stream, in seq order,
    /// from where its watch started (at least to the alarm).
    ///
    /// # Errors
    /// [`NotDrawn`], saying why no path is drawn.
    pub fn path(&self, view: &Verified, stream: &[(u64, f64)]) -> Result<AlarmPath, NotDrawn> {
        match (self.chart, self.watch, self.from_seq) {
            (Some(chart), Some(watch), Some(from)) => self.replayed(view, chart, watch, from),
            _ => self.solved(stream),
        }
    }

    fn replayed(
        &self,
        view: &Verified,
        chart: Chart,
        watch: Watch,
        from: u64,
    ) -> Result<AlarmPath, NotDrawn> {
        if matches!(chart, Chart::Ewma { .. } | Chart::PageHinkley { .. }) {
            return Err(NotDrawn::NotCusum);
        }
        // Whose scores the watch read is not recorded: everyone's (a watch
        // before trust, or a store only its key holder writes), else the
        // key holder's (`watch`'s default). Only a replay that raises the
        // recorded alarm again is drawn, so a wrong guess draws nothing.
        self.replayed_reading(view, chart, watch, from, Sources::everyone())
            .or_else(|_| {
                let key_holder = Sources::key_holder();
                let view = view.restricted_to(&key_holder);
                self.replayed_reading(&view, chart, watch, from, key_holder)
            })
    }

    fn replayed_reading(
        &self,
        view: &Verified,
        chart: Chart,
        watch: Watch,
        from: u64,
        sources: Sources,
    ) -> Result<AlarmPath, NotDrawn> {
        // The baseline was at least the watch's min_n scores, or it would
        // not have started: 2, the least any start takes, refuses nothing
        // the watch accepted.
        let mut monitor =
            Monitor::start_chart(view, &self.commit, &self.scorer, from, chart, watch, 2)
                .map_err(|_| NotDrawn::DoesNotReplay)?
                .reading(sources);
        if self
            .scorer_version
            .as_deref()
            .is_some_and(|v| v != monitor.scorer_version())
        {
            return Err(NotDrawn::DoesNotReplay);
        }
        let (seq, shift, recorded) = (self.seq, self.alarm.shift, self.alarm.statistic);
        let mut points = Vec::new();
        let mut at_alarm = None;
        monitor
            .poll_observed(view, &mut |at, live, raised| {
                if at > seq {
                    return ControlFlow::Break(());
                }
                let Some((statistic, k)) = live.cusum_state(shift) else {
                    return ControlFlow::Break(());
                };
                points.push((at, statistic));
                if at == seq {
                    at_alarm = Some((raised.cloned(), statistic, k));
                    return ControlFlow::Break(());
                }
                if raised.is_some() {
                    // Every alarm, reported or not, restarts the chart.
                    points.clear();
                }
                ControlFlow::Continue(())
            })
            .map_err(|_| NotDrawn::DoesNotReplay)?;
        match at_alarm {
            Some((Some(raised), statistic, k))
                if raised.shift == shift
                    && same(raised.statistic, recorded)
                    && same(statistic, recorded) =>
            {
                Ok(AlarmPath {
                    points,
                    k,
                    h: self.alarm.limit,
                    from: PathFrom::Replayed,
                })
            }
            _ => Err(NotDrawn::DoesNotReplay),
        }
    }

    fn solved(&self, stream: &[(u64, f64)]) -> Result<AlarmPath, NotDrawn> {
        let down = self.alarm.shift != Shift::Up;
        let (mu, sd) = (self.baseline_mean, self.baseline_sd.max(1e-12));
        let evidence = |x: f64| -> Option<f64> {
            match self.alarm.detector.as_ref() {
                // Counts the watched outcome: failures when the rate may drop.
                "bernoulli_cusum" => {
                    Some(f64::from(u8::from(if down { x < 0.5 } else { x >= 0.5 })))
                }
                "cusum" => {
                    let z = (x - mu) / sd;
                    Some(if down { -z } else { z })
                }
                _ => None,
            }
        };
        let upto: Vec<&(u64, f64)> = stream.iter().filter(|(s, _)| *s <= self.seq).collect();
        let (Ok(n), Ok(cs)) = (
            usize::try_from(self.alarm.n),
            usize::try_from(self.alarm.change_start),
        ) else {
            return Err(NotDrawn::WindowOutOfRange);
        };
        if n == 0 || n > upto.len() || cs == 0 || cs > n {
            return Err(NotDrawn::WindowNotInStream);
        }
        let window = &upto[upto.len() - n..];
        let Some(e): Option<Vec<f64>> = window.iter().map(|(_, x)| evidence(*x)).collect() else {
            return Err(NotDrawn::NotCusum);
        };
        // The statistic is zero just before the change and adds e − k at
        // each score since: the k that makes it the recorded value.
        let recorded = self.alarm.statistic;
        let since = &e[cs - 1..];
        let k = (since.iter().sum::<f64>() - recorded) / since.len() as f64;
        // The detector's own recursion, on the evidence in its units.
        let mut cusum = Cusum::new(0.0, 1.0, k, self.alarm.limit.max(f64::MIN_POSITIVE))
            .map_err(|_| NotDrawn::DoesNotReach)?;
        let mut points = Vec::with_capacity(n);
        for ((seq, _), x) in window.iter().zip(&e) {
            cusum.update(*x).map_err(|_| NotDrawn::DoesNotReach)?;
            points.push((*seq, cusum.statistics().0));
        }
        let last = points.last().map_or(f64::NAN, |p| p.1);
        if (last - recorded).abs() <= 1e-6 * recorded.abs().max(1.0) {
            Ok(AlarmPath {
                points,
                k,
                h: self.alarm.limit,
                from: PathFrom::Solved,
            })
        } else {
            Err(NotDrawn::DoesNotReach)
        }
    }
}
