//! Change detectors behind one small trait: two-sided tabular CUSUM, the
//! EWMA chart and Page–Hinkley. Pure state machines over a score stream.

use serde::Serialize;

use crate::error::{Error, Result, invalid};

/// Which way the monitored mean moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shift {
    /// The mean went up.
    Up,
    /// The mean went down.
    Down,
}

impl std::fmt::Display for Shift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shift::Up => "upward",
            Shift::Down => "downward",
        })
    }
}

/// A detector's signal.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Alarm {
    /// The detector (`cusum`, `ewma`, `page_hinkley`): a static name on the
    /// update path (no allocation per alarm-capable update), owned only when
    /// read back from a stored alarm.
    pub detector: std::borrow::Cow<'static, str>,
    /// Observations seen, the alarming one included (1-based).
    pub n: u64,
    /// The statistic that crossed its limit.
    pub statistic: f64,
    /// The limit it crossed.
    pub limit: f64,
    /// Which way the mean moved.
    pub shift: Shift,
    /// Estimated first observation of the change (1-based): one past the last
    /// time the alarming statistic was at its floor (CUSUM: zero).
    pub change_start: u64,
}

/// A change detector fed one observation at a time.
pub trait Detector {
    /// Adds one observation; an alarm when a limit is crossed.
    ///
    /// # Errors
    /// [`Error::InvalidObservation`] for a NaN or infinite value; the state
    /// is unchanged (an observation is never silently skipped).
    fn update(&mut self, x: f64) -> Result<Option<Alarm>>;

    /// Forgets everything seen (after a heal, or to restart after an alarm).
    fn reset(&mut self);

    /// Observations seen since the last reset.
    fn n(&self) -> u64;
}

/// Runs `detector` over `values` in order, restarting it after each alarm:
/// every alarm with the index (0-based) of the value that raised it. The
/// batch form of [`Detector::update`], for arrays (the Python bindings run
/// NumPy arrays through it without copying them).
///
/// # Errors
/// [`Error::InvalidObservation`] for the first NaN or infinite value, naming
/// its index; the detector keeps the state it had before it.
pub fn alarms_in<D: Detector + ?Sized>(
    detector: &mut D,
    values: &[f64],
) -> Result<Vec<(usize, Alarm)>> {
    let mut out = Vec::new();
    for (i, &x) in values.iter().enumerate() {
        match detector.update(x) {
            Ok(Some(alarm)) => {
                out.push((i, alarm));
                detector.reset();
            }
            Ok(None) => {}
            Err(Error::InvalidObservation { reason }) => {
                return Err(Error::InvalidObservation {
                    reason: format!("value {i}: {reason}"),
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn finite(x: f64) -> Result<f64> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Error::InvalidObservation {
            reason: format!("{x} is not a finite score"),
        })
    }
}

fn positive(name: &'static str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(invalid(name, format!("{v} must be a positive number")))
    }
}

/// Two-sided tabular CUSUM on standardized observations `z = (x − μ0)/σ`:
/// `C⁺ = max(0, C⁺ + z − k)`, `C⁻ = max(0, C⁻ − z − k)`, alarm when either
/// exceeds `h` (Page 1954; Montgomery). `k` is half the shift to detect, in σ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cusum {
    mu0: f64,
    sigma: f64,
    k: f64,
    h: f64,
    fir: bool,
    up: f64,
    down: f64,
    n: u64,
    last_zero_up: u64,
    last_zero_down: u64,
}

impl Cusum {
    /// A CUSUM with reference value `k` and decision interval `h` (both in σ)
    /// around the in-control mean `mu0` with standard deviation `sigma`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Cusum, Detector, Shift};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut cusum = Cusum::new(0.80, 0.05, 0.5, 4.0)?; // mean 0.80, σ 0.05
    /// let stream = [0.80, 0.80, 0.80, 0.80, 0.80, 0.90, 0.90, 0.90]; // +2σ from the 6th on
    /// let mut alarms = Vec::new();
    /// for x in stream {
    ///     alarms.extend(cusum.update(x)?);
    /// }
    /// // C⁺ grows by 2 − k = 1.5 per shifted score and passes h = 4 at the third.
    /// let alarm = alarms.first().expect("an alarm");
    /// assert_eq!((alarm.n, alarm.shift, alarm.change_start), (8, Shift::Up, 6));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for σ ≤ 0, h ≤ 0, k < 0 or a non-finite μ0.
    pub fn new(mu0: f64, sigma: f64, k: f64, h: f64) -> Result<Self> {
        if !mu0.is_finite() {
            return Err(invalid("mu0", "must be finite"));
        }
        let sigma = positive("sigma", sigma)?;
        let h = positive("h", h)?;
        if !(k.is_finite() && k >= 0.0) {
            return Err(invalid("k", format!("{k} must be a finite number ≥ 0")));
        }
        let mut cusum = Cusum {
            mu0,
            sigma,
            k,
            h,
            fir: false,
            up: 0.0,
            down: 0.0,
            n: 0,
            last_zero_up: 0,
            last_zero_down: 0,
        };
        cusum.reset();
        Ok(cusum)
    }

    /// A CUSUM tuned to catch a mean shift of `shift` σ (k = shift/2) with the
    /// decision interval h that gives an in-control ARL of `target_arl0`
    /// (Markov-chain ARL, [`crate::cusum_h_for_arl0`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Cusum, DEFAULT_STATES, cusum_arl};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Catch a 1σ shift; a false alarm once in 500 in-control scores on average.
    /// let cusum = Cusum::for_arl0(0.80, 0.05, 500.0, 1.0)?;
    /// let (k, h) = cusum.parameters();
    /// assert!((k - 0.5).abs() < 1e-12);
    /// assert!(h > 5.0 && h < 5.2); // Montgomery's h = 5 gives ARL0 ≈ 465
    /// let arl0 = cusum_arl(k, h, 0.0, false, DEFAULT_STATES)?;
    /// assert!((arl0 - 500.0).abs() < 1.0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a non-positive shift, a target outside
    /// [2, 1e9], or invalid μ0/σ.
    pub fn for_arl0(mu0: f64, sigma: f64, target_arl0: f64, shift: f64) -> Result<Self> {
        let shift = positive("shift", shift)?;
        let k = shift / 2.0;
        let h = crate::arl::cusum_h_for_arl0(k, target_arl0, crate::arl::DEFAULT_STATES)?;
        Cusum::new(mu0, sigma, k, h)
    }

    /// Fast initial response (Lucas & Crosier 1982): both sums start at h/2,
    /// so a process that is already off target is caught sooner.
    pub fn with_fast_initial_response(mut self) -> Self {
        self.fir = true;
        self.reset();
        self
    }

    /// The current (C⁺, C⁻).
    pub fn statistics(&self) -> (f64, f64) {
        (self.up, self.down)
    }

    /// The parameters (k, h).
    pub fn parameters(&self) -> (f64, f64) {
        (self.k, self.h)
    }
}

impl Detector for Cusum {
    fn update(&mut self, x: f64) -> Result<Option<Alarm>> {
        let z = (finite(x)? - self.mu0) / self.sigma;
        self.n += 1;
        self.up = (self.up + z - self.k).max(0.0);
        self.down = (self.down - z - self.k).max(0.0);
        if self.up <= 0.0 {
            self.last_zero_up = self.n;
        }
        if self.down <= 0.0 {
            self.last_zero_down = self.n;
        }
        let alarm = |statistic, shift, last_zero: u64| Alarm {
            detector: "cusum".into(),
            n: self.n,
            statistic,
            limit: self.h,
            shift,
            change_start: last_zero + 1,
        };
        Ok(if self.up > self.h {
            Some(alarm(self.up, Shift::Up, self.last_zero_up))
        } else if self.down > self.h {
            Some(alarm(self.down, Shift::Down, self.last_zero_down))
        } else {
            None
        })
    }

    fn reset(&mut self) {
        let start = if self.fir { self.h / 2.0 } else { 0.0 };
        self.up = start;
        self.down = start;
        self.n = 0;
        self.last_zero_up = 0;
        self.last_zero_down = 0;
    }

    fn n(&self) -> u64 {
        self.n
    }
}

/// Which control limits an EWMA chart uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EwmaLimits {
    /// `Lσ√(λ/(2−λ)·(1 − (1−λ)^{2t}))`: exact at every t; tighter early on,
    /// so in-control runs are shorter than the published tables.
    TimeVarying,
    /// `Lσ√(λ/(2−λ))`: the limits of Lucas & Saccucci's ARL tables.
    SteadyState,
}

/// EWMA chart: `z_t = λx_t + (1−λ)z_{t−1}`, `z_0 = μ0`, alarm when
/// `|z_t − μ0|` exceeds the limit (Roberts 1959; Lucas & Saccucci 1990).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ewma {
    mu0: f64,
    sigma: f64,
    lambda: f64,
    l: f64,
    limits: EwmaLimits,
    z: f64,
    n: u64,
    last_centre: u64,
    /// (1−λ)^{2n}, kept by multiplication so an update needs no `powf`.
    decay: f64,
    /// (1−λ)², the decay's factor per observation.
    keep_sq: f64,
    /// The squared steady-state half-width, (Lσ)²·λ/(2−λ).
    steady_sq: f64,
}

impl Ewma {
    /// An EWMA chart with smoothing `lambda` and width `l` (in σ of z).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Detector, Ewma, EwmaLimits, Shift};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut ewma = Ewma::new(0.80, 0.05, 0.2, 3.0, EwmaLimits::TimeVarying)?;
    /// assert!(ewma.limit(1) < ewma.limit(50)); // time-varying limits start tight
    /// let mut alarm = None;
    /// for x in [0.81, 0.79, 0.80, 0.70, 0.71, 0.70, 0.69, 0.70, 0.70, 0.71] {
    ///     alarm = alarm.or(ewma.update(x)?);
    /// }
    /// let alarm = alarm.expect("a 2σ drop is caught");
    /// assert_eq!(alarm.shift, Shift::Down);
    /// assert!(ewma.value() < 0.75);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for λ outside (0, 1], L ≤ 0, σ ≤ 0 or a non-finite μ0.
    pub fn new(mu0: f64, sigma: f64, lambda: f64, l: f64, limits: EwmaLimits) -> Result<Self> {
        if !mu0.is_finite() {
            return Err(invalid("mu0", "must be finite"));
        }
        let sigma = positive("sigma", sigma)?;
        let l = positive("L", l)?;
        if !(lambda.is_finite() && lambda > 0.0 && lambda <= 1.0) {
            return Err(invalid("lambda", format!("{lambda} must be in (0, 1]")));
        }
        Ok(Ewma {
            mu0,
            sigma,
            lambda,
            l,
            limits,
            z: mu0,
            n: 0,
            last_centre: 0,
            decay: 1.0,
            keep_sq: (1.0 - lambda) * (1.0 - lambda),
            steady_sq: (l * sigma).powi(2) * lambda / (2.0 - lambda),
        })
    }

    /// An EWMA chart with smoothing `lambda` whose width L gives an
    /// in-control ARL of `target_arl0` with steady-state limits
    /// ([`crate::ewma_l_for_arl0`]); `limits` chooses which limits it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Ewma, EwmaLimits};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ewma = Ewma::for_arl0(0.80, 0.05, 0.1, 500.0, EwmaLimits::SteadyState)?;
    /// // Lucas & Saccucci's table: λ = 0.1, ARL0 500 needs L ≈ 2.814, so the
    /// // limit is L·σ·√(λ/(2−λ)) around the mean.
    /// let l = ewma.limit(1) / (0.05 * (0.1_f64 / 1.9).sqrt());
    /// assert!((l - 2.814).abs() < 0.01, "{l}");
    /// assert!(Ewma::for_arl0(0.80, 0.05, 1.5, 500.0, EwmaLimits::SteadyState).is_err()); // λ > 1
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Ewma::new`], and for a target outside [2, 1e9].
    pub fn for_arl0(
        mu0: f64,
        sigma: f64,
        lambda: f64,
        target_arl0: f64,
        limits: EwmaLimits,
    ) -> Result<Self> {
        if !(lambda.is_finite() && lambda > 0.0 && lambda <= 1.0) {
            return Err(invalid("lambda", format!("{lambda} must be in (0, 1]")));
        }
        let l = crate::arl::ewma_l_for_arl0(lambda, target_arl0, crate::arl::DEFAULT_STATES)?;
        Ewma::new(mu0, sigma, lambda, l, limits)
    }

    /// The limit's half-width after `t` observations.
    pub fn limit(&self, t: u64) -> f64 {
        let steady = self.lambda / (2.0 - self.lambda);
        let factor = match self.limits {
            EwmaLimits::SteadyState => 1.0,
            EwmaLimits::TimeVarying => 1.0 - (1.0 - self.lambda).powf(2.0 * t as f64),
        };
        self.l * self.sigma * (steady * factor).sqrt()
    }

    /// The current smoothed value.
    pub fn value(&self) -> f64 {
        self.z
    }
}

impl Detector for Ewma {
    fn update(&mut self, x: f64) -> Result<Option<Alarm>> {
        let x = finite(x)?;
        self.n += 1;
        let before = self.z - self.mu0;
        self.z = self.lambda * x + (1.0 - self.lambda) * self.z;
        let dev = self.z - self.mu0;
        // The change is dated from the last crossing of the centre line.
        if before * dev <= 0.0 {
            self.last_centre = self.n - 1;
        }
        self.decay *= self.keep_sq;
        // Compared squared: no square root on the hot path.
        let limit_sq = match self.limits {
            EwmaLimits::SteadyState => self.steady_sq,
            EwmaLimits::TimeVarying => self.steady_sq * (1.0 - self.decay),
        };
        if dev * dev <= limit_sq {
            return Ok(None);
        }
        let limit = limit_sq.sqrt();
        Ok(Some(()).map(|()| Alarm {
            detector: "ewma".into(),
            n: self.n,
            statistic: self.z,
            limit: self.mu0 + limit * dev.signum(),
            shift: if dev > 0.0 { Shift::Up } else { Shift::Down },
            change_start: self.last_centre + 1,
        }))
    }

    fn reset(&mut self) {
        self.z = self.mu0;
        self.n = 0;
        self.last_centre = 0;
        self.decay = 1.0;
    }

    fn n(&self) -> u64 {
        self.n
    }
}

/// Page–Hinkley test in both directions (Page 1954; Hinkley 1971): for an
/// increase, `m_T = Σ(x_t − x̄_t − δ)` against its running minimum; for a
/// decrease, `Σ(x_t − x̄_t + δ)` against its running maximum; alarm when the
/// gap exceeds `λ`. `x̄_t` is the running mean including `x_t`. No
/// forgetting factor (River's `alpha`) and no minimum-instances rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageHinkley {
    delta: f64,
    lambda: f64,
    n: u64,
    mean: f64,
    up_sum: f64,
    up_min: f64,
    up_min_at: u64,
    down_sum: f64,
    down_max: f64,
    down_max_at: u64,
}

impl PageHinkley {
    /// A test with tolerance `delta` (≥ 0) and threshold `lambda` (> 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratchet_drift::{Detector, PageHinkley, Shift};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut ph = PageHinkley::new(0.005, 0.5)?;
    /// let stream = std::iter::repeat_n(0.8, 50).chain(std::iter::repeat_n(0.6, 50));
    /// let mut alarm = None;
    /// for x in stream {
    ///     alarm = alarm.or(ph.update(x)?);
    /// }
    /// let alarm = alarm.expect("the drop to 0.6 is caught");
    /// assert_eq!(alarm.shift, Shift::Down);
    /// assert!(alarm.n > 50 && alarm.change_start > 45);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for δ < 0 or λ ≤ 0.
    pub fn new(delta: f64, lambda: f64) -> Result<Self> {
        if !(delta.is_finite() && delta >= 0.0) {
            return Err(invalid(
                "delta",
                format!("{delta} must be a finite number ≥ 0"),
            ));
        }
        let lambda = positive("lambda", lambda)?;
        let mut detector = PageHinkley {
            delta,
            lambda,
            n: 0,
            mean: 0.0,
            up_sum: 0.0,
            up_min: 0.0,
            up_min_at: 0,
            down_sum: 0.0,
            down_max: 0.0,
            down_max_at: 0,
        };
        detector.reset();
        Ok(detector)
    }
}

impl Detector for PageHinkley {
    fn update(&mut self, x: f64) -> Result<Option<Alarm>> {
        let x = finite(x)?;
        self.n += 1;
        self.mean += (x - self.mean) / self.n as f64;
        self.up_sum += x - self.mean - self.delta;
        self.down_sum += x - self.mean + self.delta;
        if self.up_sum < self.up_min {
            self.up_min = self.up_sum;
            self.up_min_at = self.n;
        }
        if self.down_sum > self.down_max {
            self.down_max = self.down_sum;
            self.down_max_at = self.n;
        }
        let (up_gap, down_gap) = (self.up_sum - self.up_min, self.down_max - self.down_sum);
        let alarm = |statistic, shift, at: u64| Alarm {
            detector: "page_hinkley".into(),
            n: self.n,
            statistic,
            limit: self.lambda,
            shift,
            change_start: at + 1,
        };
        Ok(if up_gap > self.lambda {
            Some(alarm(up_gap, Shift::Up, self.up_min_at))
        } else if down_gap > self.lambda {
            Some(alarm(down_gap, Shift::Down, self.down_max_at))
        } else {
            None
        })
    }

    fn reset(&mut self) {
        self.n = 0;
        self.mean = 0.0;
        self.up_sum = 0.0;
        self.up_min = 0.0;
        self.up_min_at = 0;
        self.down_sum = 0.0;
        self.down_max = 0.0;
        self.down_max_at = 0;
    }

    fn n(&self) -> u64 {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_parameters_and_observations_are_refused() {
        assert!(matches!(
            Cusum::new(0.0, 0.0, 0.5, 4.0),
            Err(Error::InvalidParameter { name: "sigma", .. })
        ));
        assert!(matches!(
            Cusum::new(0.0, 1.0, 0.5, 0.0),
            Err(Error::InvalidParameter { name: "h", .. })
        ));
        assert!(matches!(
            Cusum::new(0.0, 1.0, -0.5, 4.0),
            Err(Error::InvalidParameter { name: "k", .. })
        ));
        for lambda in [0.0, 1.5, f64::NAN] {
            assert!(matches!(
                Ewma::new(0.0, 1.0, lambda, 3.0, EwmaLimits::SteadyState),
                Err(Error::InvalidParameter { name: "lambda", .. })
            ));
        }
        assert!(matches!(
            PageHinkley::new(0.1, 0.0),
            Err(Error::InvalidParameter { name: "lambda", .. })
        ));
        let mut cusum = Cusum::new(0.0, 1.0, 0.5, 4.0).expect("valid");
        assert!(matches!(
            cusum.update(f64::NAN),
            Err(Error::InvalidObservation { .. })
        ));
        assert_eq!(cusum.n(), 0, "a refused observation is not counted");
    }

    #[test]
    fn cusum_follows_the_recursion_and_dates_the_change() {
        let mut cusum = Cusum::new(10.0, 2.0, 0.5, 4.0).expect("valid");
        // In control, then a +2σ shift from observation 6 on.
        let xs = [10.0, 9.0, 11.0, 10.0, 8.0, 14.0, 14.0, 14.0, 14.0];
        let mut alarm = None;
        for x in xs {
            if let Some(a) = cusum.update(x).expect("finite") {
                alarm = Some(a);
                break;
            }
        }
        let caught = alarm.expect("the shift is caught");
        // z = 2 from obs 6: C⁺ = 1.5, 3.0, 4.5 > 4 at obs 8.
        assert_eq!(
            (caught.n, caught.shift, caught.change_start),
            (8, Shift::Up, 6)
        );
        assert!((caught.statistic - 4.5).abs() < 1e-12);
        let mut fir = Cusum::new(10.0, 2.0, 0.5, 4.0)
            .expect("valid")
            .with_fast_initial_response();
        assert_eq!(fir.statistics(), (2.0, 2.0));
        fir.reset();
        assert_eq!(fir.statistics(), (2.0, 2.0));
    }

    #[test]
    fn ewma_limits_grow_to_steady_state() {
        let tv = Ewma::new(0.0, 1.0, 0.2, 3.0, EwmaLimits::TimeVarying).expect("valid");
        let ss = Ewma::new(0.0, 1.0, 0.2, 3.0, EwmaLimits::SteadyState).expect("valid");
        assert!(
            (tv.limit(1) - 3.0 * 0.2).abs() < 1e-12,
            "first limit is Lσλ"
        );
        assert!(tv.limit(1) < tv.limit(5) && tv.limit(5) < tv.limit(100));
        assert!((tv.limit(1000) - ss.limit(1)).abs() < 1e-12);
    }

    #[test]
    fn incremental_ewma_limits_equal_the_closed_form() {
        let mut tv = Ewma::new(0.0, 1.0, 0.2, 1e9, EwmaLimits::TimeVarying).expect("valid");
        let reference = Ewma::new(0.0, 1.0, 0.2, 1e9, EwmaLimits::TimeVarying).expect("valid");
        for t in 1..=200u64 {
            tv.update(0.0).expect("finite");
            let want = reference.limit(t);
            let got = 1e9 * (0.2f64 / 1.8).sqrt() * (1.0 - tv.decay).sqrt();
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "t = {t}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn page_hinkley_catches_both_directions() {
        for (shift, want) in [(3.0, Shift::Up), (-3.0, Shift::Down)] {
            let mut detector = PageHinkley::new(0.5, 10.0).expect("valid");
            let mut got = None;
            for i in 0..200 {
                let x = if i < 50 {
                    f64::from(i % 3) - 1.0
                } else {
                    shift + f64::from(i % 3) - 1.0
                };
                if let Some(a) = detector.update(x).expect("finite") {
                    got = Some(a);
                    break;
                }
            }
            let caught = got.expect("caught");
            assert_eq!(caught.shift, want);
            assert!(
                caught.n > 50 && caught.n < 70,
                "caught soon after the change: {}",
                caught.n
            );
            assert!(
                (45..=55).contains(&caught.change_start),
                "dated near 51: {}",
                caught.change_start
            );
        }
    }
}
