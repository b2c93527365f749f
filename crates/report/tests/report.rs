//! The report on a real store (the demo's), parsed, and rendered in a real
//! browser.

use std::path::{Path, PathBuf};
use std::process::Command;

use ratchet_orchestrate::demo::{DemoOptions, DemoSummary, run_demo};
use ratchet_report::{ReportOptions, html, markdown, thin};
use ratchet_trace::{Score, Store, StoreOptions, VerifyOptions};

fn demo(dir: &Path) -> DemoSummary {
    run_demo(
        &DemoOptions {
            seed: 5,
            proposals: 10,
            dir: dir.to_path_buf(),
        },
        &mut |_| {},
    )
    .expect("demo")
}

fn svgs(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

fn declared_plots(page: &str) -> usize {
    let at =
        page.find("ratchet-plots content=").expect("plot count") + "ratchet-plots content=".len();
    page[at..]
        .split('>')
        .next()
        .expect("value")
        .parse()
        .expect("number")
}

#[test]
fn the_report_shows_every_part_and_its_plots_are_well_formed_svg() {
    let d = tempfile::tempdir().expect("tempdir");
    let s = demo(d.path());
    let mut store = Store::open_read_only(&s.store, StoreOptions::default()).expect("open");
    let page = html(&mut store, &ReportOptions::default()).expect("report");
    let plots = svgs(&page);
    assert_eq!(plots.len(), declared_plots(&page));
    for (i, svg) in plots.iter().enumerate() {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("svg {i}: {e}"));
        let drawn = doc.descendants().filter(|n| n.is_element()).count();
        assert!(drawn > 20, "svg {i} is nearly empty ({drawn} elements)");
    }
    for part in [
        "id=ladder",
        "class=llr",
        "id=timeline",
        "The chain verifies",
        "<h2>Benchmark history</h2>",
        "<h2>Decisions</h2>",
    ] {
        assert!(page.contains(part), "missing {part}");
    }
    if !s.regressions.is_empty() {
        assert!(page.contains("class=cusum"), "an alarm without its chart");
    }
    // Self-contained: nothing is fetched (the one URL is SVG's namespace).
    let without_ns = page.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(!page.contains("<script") && !page.contains(" src="));
    let view = store
        .verified(&VerifyOptions::default())
        .expect("the demo's store verifies");
    let md = markdown(&view).expect("markdown");
    assert!(md.starts_with("### ratchet gate: **"), "{md}");
    assert!(md.contains("| sequential |"), "{md}");
}

#[test]
fn a_store_that_does_not_verify_is_reported_as_such() {
    let d = tempfile::tempdir().expect("tempdir");
    let s = demo(d.path());
    let mut copy = Store::open_read_only(&s.tamper.copy, StoreOptions::default()).expect("open");
    let page = html(&mut copy, &ReportOptions::default()).expect("report");
    assert!(
        page.contains("does NOT verify"),
        "a tampered store reported as sound"
    );
    // Nothing of an altered trace is drawn: no figure, no table, no count.
    assert_eq!(declared_plots(&page), 0);
    assert!(
        svgs(&page).is_empty(),
        "a figure drawn from a tampered trace"
    );
    for part in [
        "id=ladder",
        "class=llr",
        "id=timeline",
        "<h2>",
        "<table",
        " events · ",
        "The chain verifies",
    ] {
        assert!(
            !page.contains(part),
            "a tampered store's report shows {part}"
        );
    }
    // And the view a decision would read is refused outright.
    assert!(matches!(
        copy.verified(&VerifyOptions::default()),
        Err(ratchet_trace::Error::Tampered { .. })
    ));
}

#[test]
fn benchmarks_are_plotted_per_runner_with_intervals() {
    let d = tempfile::tempdir().expect("tempdir");
    let mut store = Store::create(d.path().join("s"), StoreOptions::default()).expect("store");
    for (i, c) in ["aa", "bb", "cc"].iter().enumerate() {
        let commit = ratchet_trace::CommitId::parse(&c.repeat(20)).expect("commit");
        for run in 0..3 {
            for bench in ["parse/small", "parse/large"] {
                let mut s = Score::new(
                    commit.clone(),
                    bench,
                    ratchet_scorers::CRITERION_NS,
                    1000.0 * (i + 1) as f64 + f64::from(run),
                );
                s.scorer_version = "runner-1".into();
                store.record_score(&s, "bench").expect("score");
            }
        }
    }
    let page = html(&mut store, &ReportOptions::default()).expect("report");
    assert_eq!(
        page.matches("class=bench").count(),
        2,
        "one plot per benchmark"
    );
    assert!(page.contains("parse/large") && page.contains("runner-1"));
}

#[test]
fn long_series_are_thinned_and_keep_their_last_point() {
    let xs: Vec<u32> = (0..10_001).collect();
    let (kept, k) = thin(&xs, 1000);
    assert_eq!(k, 11);
    assert!(kept.len() <= 1001);
    assert_eq!(kept.last(), Some(&10_000));
    let (same, one) = thin(&xs[..10], 1000);
    assert_eq!((same.len(), one), (10, 1));
}

/// Where test artifacts (the screenshot) are kept.
fn artifacts() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

#[test]
fn the_report_renders_in_headless_chromium_without_console_errors() {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("Chromium is installed by scripts/test (Debian package chromium)");
    let d = tempfile::tempdir().expect("tempdir");
    let s = demo(d.path());
    let mut store = Store::open_read_only(&s.store, StoreOptions::default()).expect("open");
    let page = html(&mut store, &ReportOptions::default()).expect("report");
    let out = artifacts();
    let file = out.join("report.html");
    std::fs::write(&file, &page).expect("write");
    let profile = tempfile::tempdir().expect("profile");
    let run = |extra: &[&str]| {
        let mut c = Command::new(&chromium);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", file.display()));
        c.output().expect("run chromium")
    };
    let dom = run(&["--dump-dom"]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let rendered = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        rendered.matches("<svg").count(),
        declared_plots(&page),
        "every plot is in the rendered page"
    );
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let shot = out.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let png = run(&[
        "--window-size=900,2400",
        &format!("--screenshot={}", shot.display()),
    ]);
    assert!(
        png.status.success(),
        "{}",
        String::from_utf8_lossy(&png.stderr)
    );
    let bytes = std::fs::read(&shot).expect("screenshot written");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "a blank screenshot?"
    );
    eprintln!("screenshot: {}", shot.display());
}
