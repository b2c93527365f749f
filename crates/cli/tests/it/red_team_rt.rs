//! Red team, round rt: authority over the `benchmarks` gate since the
//! fourth law (`Law::Tuned`: every runner both sides share is judged, the
//! baseline's newest decides promotion). Each attack through the binary,
//! on a keyed store whose pinned policy trusts session `evil` (a hostile
//! branch's CI job) for the candidate side only.

use std::process::Output;

use crate::common::{ratchet, text};
use crate::red_team_hred::gbench_on;

const BASE: &str = "1111111111111111111111111111111111111111";
const CAND: &str = "2222222222222222222222222222222222222222";

/// A keyed store with a record token minted for session `evil`, and the
/// class `perf` pinned: trusted — the key holder for both sides, `evil`
/// for the candidate's.
struct Keyed {
    dir: tempfile::TempDir,
    n: std::cell::Cell<u32>,
}

impl Keyed {
    fn new() -> Keyed {
        let k = Keyed {
            dir: tempfile::tempdir().expect("tempdir"),
            n: std::cell::Cell::new(0),
        };
        k.ok(&["init", "--keyed", "--key-file", &k.key()]);
        let tok = k.path("evil.tok");
        let key = k.key();
        k.ok(&[
            "token",
            "mint",
            "--can",
            "record",
            "--session",
            "evil",
            "--out",
            &tok,
            "--key-file",
            &key,
        ]);
        let file = k.path("policy.toml");
        std::fs::write(
            &file,
            "[class.perf]\nscorer = \"gbench_real_ns\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 100\nregression = 0.05\nequivalence = 0.01\ntrust = { baseline = [\"key_holder\"], candidate = [\"key_holder\", \"session:evil\"] }\n",
        )
        .expect("policy");
        k.ok(&["policy", "pin", &file, "--key-file", &key]);
        k
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn key(&self) -> String {
        self.path("writer.key")
    }

    fn run(&self, args: &[&str]) -> Output {
        let store = self.path("s");
        let mut all = vec!["--store", store.as_str(), "--allow-unknown-commit"];
        all.extend_from_slice(args);
        ratchet(self.dir.path(), &all, "")
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        o
    }

    /// Ingests one Google Benchmark file of `commit`, as the key holder
    /// (`session` None) or as `evil`.
    #[track_caller]
    fn ingest(&self, session: Option<&str>, body: String, commit: &str) {
        self.n.set(self.n.get() + 1);
        let file = self.path(&format!("run{}.json", self.n.get()));
        std::fs::write(&file, body).expect("write");
        let key = self.key();
        let mut args = vec![
            "ingest",
            "google-benchmark",
            file.as_str(),
            "--commit",
            commit,
            "--key-file",
            key.as_str(),
        ];
        if let Some(s) = session {
            args.extend(["--session", s]);
        }
        self.ok(&args);
    }

    /// `gate --json` of `perf`: the verdict's JSON, the exit code, the text.
    fn gate(&self) -> (serde_json::Value, Option<i32>, String) {
        let key = self.key();
        let o = self.run(&[
            "--json",
            "gate",
            "--baseline",
            BASE,
            "--candidate",
            CAND,
            "--class",
            "perf",
            "--key-file",
            &key,
        ]);
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        (v, o.status.code(), text(&o))
    }
}

/// HIDE A REGRESSION (found by the red team, fixed in the same law: an
/// unreadable sample is set aside and said after any regression). The
/// key holder's runs show `b1` 5 % slower on
/// runner `h` (24 runs each side): REJECT, measured, `b1` named — a reject
/// heal honours (it never checks out a commit rejected on *measured*
/// evidence). Then `evil`, trusted for the candidate only, ingests one
/// run of `b2` with a 0 ns timing. The stage returns at the first
/// non-positive sample, before any flag is read: the verdict becomes
/// "missing evidence", `b1` named nowhere, and heal may check the
/// regressed commit out. A sample the candidate's producer wrote should
/// not outrank a regression shown on trusted evidence.
#[test]
fn one_zero_timing_from_the_candidates_producer_does_not_hide_a_measured_reject() {
    let k = Keyed::new();
    for i in 0..24u32 {
        let j = f64::from(i) * 0.01;
        k.ingest(
            None,
            gbench_on("h", &[("b1", 1000.0 + j), ("b2", 2000.0 + j)]),
            BASE,
        );
        k.ingest(
            None,
            gbench_on("h", &[("b1", 1050.0 + j), ("b2", 2000.0 + j)]),
            CAND,
        );
    }
    let (v, code, out) = k.gate();
    assert_eq!(v["outcome"]["cause"], "measured", "honest: {out}");
    assert!(out.contains("b1"), "{out}");
    let honest_code = code;
    k.ingest(Some("evil"), gbench_on("h", &[("b2", 0.0)]), CAND);
    let (v, code, out) = k.gate();
    assert_eq!(code, honest_code, "the exit code changed: {out}");
    assert_eq!(
        v["outcome"]["cause"], "measured",
        "one zero sample from the candidate's producer hid a measured regression: {v:#}"
    );
    assert!(out.contains("b1"), "b1 named: {out}");
}

/// REGRESSION PROMOTED (found by the red team, fixed in the same law: a
/// benchmark the chosen runner lacks must be shown not slower where it
/// was measured). `b1` is 8 % slower on runner `h`; 5 runs of each
/// side there leave it undecided (a flag at α/2 needs 6): CONTINUE. Then
/// the baseline's newest runs are on a new runner `h2` and hold `b2` only
/// (a runner pool changed; a filtered nightly), and `evil` records the
/// candidate's `b2` there (it is unchanged: these are honest numbers).
/// The chosen runner `h2` has no `b1`, so nothing requires `b1` to be
/// shown not slower; on `h` it is undecided, which "can flag, never hold
/// back": PROMOTE, with a benchmark 8 % slower never shown within 5 %.
#[test]
fn an_undecided_regression_on_the_old_runner_holds_the_promotion_back_once_the_baseline_moves_to_a_runner_without_it()
 {
    let k = Keyed::new();
    for i in 0..5u32 {
        let j = f64::from(i) * 0.01;
        k.ingest(
            None,
            gbench_on("h", &[("b1", 1000.0 + j), ("b2", 2000.0 + j)]),
            BASE,
        );
        k.ingest(
            None,
            gbench_on("h", &[("b1", 1080.0 + j), ("b2", 2000.0 + j)]),
            CAND,
        );
    }
    let (v, _, out) = k.gate();
    assert_eq!(
        v["outcome"]["verdict"], "continue",
        "before the switch: {out}"
    );
    for i in 0..30u32 {
        let j = f64::from(i) * 0.01;
        k.ingest(Some("evil"), gbench_on("h2", &[("b2", 2000.0 + j)]), CAND);
    }
    for i in 0..30u32 {
        let j = f64::from(i) * 0.01;
        k.ingest(None, gbench_on("h2", &[("b2", 2000.0 + j)]), BASE);
    }
    let (v, code, out) = k.gate();
    assert_ne!(
        v["outcome"]["verdict"], "promote",
        "b1, 8 % slower and never shown within 5 %, promoted (exit {code:?}): {out}"
    );
}
