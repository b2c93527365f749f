//! Benchmarks judged as benchmarks through the binary, on a real tool's
//! output (pytest-benchmark 5.3.1, `stats.data` whole: see the fixture's
//! ORIGIN.md): every sample ingested, each benchmark compared on its own.

use crate::common::{ratchet, text};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../scorers/tests/fixtures/real/pytest-benchmark/pytest-benchmark-5.3.1-sort-data.json"
);

const POLICY: &str = "[class.perf]\nscorer = \"pytest_benchmark_s\"\ndirection = \"lower\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 1000\nregression = 0.05\nequivalence = 0.01\n";

const BASE: &str = "1111111111111111111111111111111111111111";
const CAND: &str = "2222222222222222222222222222222222222222";

/// The real file for the baseline; for the candidate the same file with
/// `benchmark`'s samples (and summary) multiplied by `factor`.
fn gate_after(benchmark: &str, factor: f64) -> (std::process::Output, tempfile::TempDir) {
    let d = tempfile::tempdir().expect("tempdir");
    let st = d.path().join("s").display().to_string();
    assert!(
        ratchet(d.path(), &["--store", &st, "init"], "")
            .status
            .success()
    );
    std::fs::write(d.path().join("s/policy.toml"), POLICY).expect("policy");
    let raw = std::fs::read_to_string(FIXTURE).expect("fixture");
    let mut json: serde_json::Value = serde_json::from_str(&raw).expect("json");
    for b in json["benchmarks"].as_array_mut().expect("benchmarks") {
        if b["name"] == benchmark {
            let stats = &mut b["stats"];
            for key in ["min", "max", "mean", "median", "q1", "q3"] {
                if let Some(x) = stats[key].as_f64() {
                    stats[key] = (x * factor).into();
                }
            }
            for x in stats["data"].as_array_mut().expect("data") {
                *x = (x.as_f64().expect("time") * factor).into();
            }
        }
    }
    let cand = d.path().join("cand.json");
    std::fs::write(&cand, serde_json::to_string(&json).expect("json")).expect("write");
    for (file, commit) in [
        (FIXTURE.to_string(), BASE),
        (cand.display().to_string(), CAND),
    ] {
        let o = ratchet(
            d.path(),
            &[
                "--store",
                &st,
                "ingest",
                "pytest-benchmark",
                &file,
                "--commit",
                commit,
            ],
            "",
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = ratchet(
        d.path(),
        &[
            "--store",
            &st,
            "gate",
            "--baseline",
            BASE,
            "--candidate",
            CAND,
            "--class",
            "perf",
            "--dry-run",
        ],
        "",
    );
    (o, d)
}

/// One run a side — one pytest-benchmark file each, `test_sort_100` 25 %
/// slower over its 184 samples: a run's samples share its process's state,
/// so one run a side is one pair, and the gate says it cannot flag
/// anything yet and how many runs it needs — the table shows the ratio,
/// unpaired (`ratchet bench` pairs rounds; separate runs ingested per
/// commit make more pairs).
#[test]
fn one_real_pytest_benchmark_run_a_side_is_shown_and_says_what_it_needs() {
    let (o, _d) = gate_after("test_sort_100", 1.25);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let out = text(&o);
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("test_sort.py::test_sort_100"))
        .unwrap_or("");
    assert!(row.contains("×1.250") && row.contains("undecided"), "{out}");
    assert!(
        out.contains("unpaired") && out.contains("needs at least"),
        "{out}"
    );
}

/// The same file for both commits: one pair a side, nothing shown yet,
/// nothing flagged.
#[test]
fn an_unchanged_real_pytest_benchmark_file_is_not_flagged() {
    let (o, _d) = gate_after("none", 1.0);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(!text(&o).contains("slower "), "{}", text(&o));
}
