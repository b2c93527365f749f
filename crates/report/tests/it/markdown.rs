//! The Markdown summary of a store whose every name was chosen by an
//! attacker, parsed as CommonMark with GitHub's tables: the names show as
//! themselves, and nothing in it links, embeds, pings or breaks out.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use ratchet_gate::{Policy, Question};
use ratchet_report::markdown;
use ratchet_trace::{
    CommitId, EventDraft, ReservedKind, Score, Store, StoreOptions, TestRun, VerifyOptions,
};

fn commit(i: u8) -> CommitId {
    CommitId::parse(&format!("{i:02x}").repeat(20)).expect("commit")
}

/// What an attacker puts in a name (no `'`: the policy quotes names with
/// it; no control character: the trace refuses them in names): backticks
/// of every run length, an image that would be a beacon, raw HTML, a
/// link, an autolink, bare URLs GitHub links, a mention, a cross-repository
/// reference, a table pipe, emphasis, a trailing backslash.
fn hostile(what: &str) -> String {
    format!(
        "{what}`a``b ![x](https://evil/beacon.png) <img src=x> [link](https://evil) \
         <https://evil.auto> @octocat https://evil.example www.evil.example \
         evil/repo#1 x|y *em* &lt; \\"
    )
}

/// A reason read from the trace may hold line endings too: a blank line and
/// a heading, a fence, a quote would start blocks of their own.
fn hostile_reason() -> String {
    format!(
        "{}\n\n# owned\n```\n> quoted\r\n<div>html</div>",
        hostile("reason")
    )
}

/// The store: two classes named by the attacker, whose primary scorer,
/// guardrail scorer, tasks, required suite and failed tests are named by
/// the attacker; one candidate fails its tests (rejected at tests, its
/// failures listed), the other is decided by the sequential test (its
/// scorer named); then a decision as someone with write access to the
/// trace could append it, with a reason and an effect measure of theirs,
/// and one no gate can read whose verdict is a hostile word.
fn hostile_store(dir: &std::path::Path) -> Store {
    let mut store = Store::create(dir.join("s"), StoreOptions::default()).expect("store");
    let (base, good, broken) = (commit(1), commit(2), commit(3));
    let (scorer, guard, suite) = (hostile("scorer"), hostile("guard"), hostile("suite"));
    let mut policies = Vec::new();
    for (class, candidate) in [(hostile("tests"), &broken), (hostile("seq"), &good)] {
        let text = format!(
            "[class.'{class}']\nscorer = '{scorer}'\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\n\
             max_n = 1400\ngap = 0.1\nrequired_suites = ['{suite}']\n\
             [[class.'{class}'.guardrail]]\nscorer = '{guard}'\ndirection = \"lower\"\n\
             margin = 0.5\nmargin_kind = \"absolute\"\n"
        );
        let policy = Policy::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let p = policy.class(&class).expect("class").clone();
        ratchet_gate::pin_policy(&mut store, &class, &p).expect("pin");
        policies.push((class, candidate, p));
    }
    for (commit, failures) in [
        (&broken, vec![hostile("test1"), hostile("test2")]),
        (&good, vec![]),
        (&base, vec![]),
    ] {
        store
            .record_test_run(
                &TestRun {
                    commit: commit.clone(),
                    suite: suite.clone(),
                    passed: 10,
                    failed: failures.len() as u64,
                    skipped: 0,
                    duration_ms: 10.0,
                    failures,
                },
                "ci",
            )
            .expect("test run");
    }
    let mut state = 11u64;
    let mut next = |m: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let mut done = vec![false; policies.len()];
    for batch in 0..40 {
        if done.iter().all(|d| *d) {
            break;
        }
        let mut scores = Vec::new();
        for t in batch * 25..(batch + 1) * 25 {
            let task = format!("{}{t}", hostile("task"));
            let b = next(11) as f64 / 10.0;
            let c = (b + next(5) as f64 / 10.0 - 0.1).clamp(0.0, 1.0);
            for (commit, v) in [(&base, b), (&good, c), (&broken, c)] {
                scores.push(Score::new(commit.clone(), task.clone(), scorer.clone(), v));
                scores.push(Score::new(commit.clone(), task.clone(), guard.clone(), 1.0));
            }
        }
        store.record_scores(&scores, "eval").expect("scores");
        for (i, (class, candidate, p)) in policies.iter().enumerate() {
            if done[i] {
                continue;
            }
            let q = Question {
                class,
                policy: p,
                baseline: &base,
                candidate,
                checkpoint: None,
                allow_unpinned: false,
            };
            let v = ratchet_gate::decide(&mut store, &q).expect("decide");
            done[i] = v.outcome.status() != ratchet_gate::GateStatus::Continue;
        }
    }
    assert!(done.iter().all(|d| *d), "every class decided: {done:?}");

    // A decision written by hand: the last one's, its class, reason and
    // effect measure replaced.
    let last = store
        .events_after(0, usize::MAX)
        .expect("events")
        .into_iter()
        .rfind(|e| e.kind == ratchet_gate::KIND_DECISION)
        .expect("a decision");
    let mut forged: serde_json::Value = serde_json::from_slice(&last.payload).expect("json");
    forged["class"] = hostile("forged").into();
    forged["outcome"] = serde_json::json!({
        "verdict": "reject",
        "stage": "sequential",
        "cause": "measured",
        "reason": hostile_reason(),
    });
    replace_key(&mut forged, "effect_measure", &hostile_reason());
    store
        .append(EventDraft::reserved(ReservedKind::Decision, &forged).expect("draft"))
        .expect("a forged decision");
    // One no gate reads: its error names the hostile verdict.
    let mut unreadable = forged.clone();
    replace_key(&mut unreadable, "verdict", &hostile_reason());
    store
        .append(EventDraft::reserved(ReservedKind::Decision, &unreadable).expect("draft"))
        .expect("an unreadable decision");
    store
}

/// Sets every value of `key` in `v`, at any depth, to `to`.
fn replace_key(v: &mut serde_json::Value, key: &str, to: &str) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == key {
                    *x = to.into();
                } else {
                    replace_key(x, key, to);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| replace_key(x, key, to)),
        _ => {}
    }
}

/// What a reader of the rendered comment gets, as CommonMark (with GitHub's
/// tables) parses it.
#[derive(Debug, Default)]
struct Rendered {
    /// Every code span's content.
    code: Vec<String>,
    /// The text outside code spans, a line per block.
    text: String,
    headings: usize,
    /// Cells per table row.
    rows: Vec<usize>,
}

fn render(md: &str) -> Rendered {
    let mut r = Rendered::default();
    let mut cells = 0;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => panic!("a link to {dest_url}:\n{md}"),
            Event::Start(Tag::Image { dest_url, .. }) => panic!("an image of {dest_url}:\n{md}"),
            Event::Start(Tag::HtmlBlock) | Event::Html(_) | Event::InlineHtml(_) => {
                panic!("HTML ({event:?}):\n{md}")
            }
            Event::Start(Tag::Heading { .. }) => r.headings += 1,
            Event::Start(Tag::CodeBlock(_)) | Event::Start(Tag::BlockQuote(_)) => {
                panic!("a block of the attacker's ({event:?}):\n{md}")
            }
            Event::Code(c) => r.code.push(c.into_string()),
            Event::Text(t) => r.text.push_str(&t),
            Event::SoftBreak | Event::HardBreak => r.text.push(' '),
            Event::Start(Tag::TableRow) | Event::Start(Tag::TableHead) => cells = 0,
            Event::Start(Tag::TableCell) => cells += 1,
            Event::End(TagEnd::TableRow) | Event::End(TagEnd::TableHead) => r.rows.push(cells),
            Event::End(_) => r.text.push('\n'),
            _ => {}
        }
    }
    r
}

#[test]
fn names_chosen_by_an_attacker_render_as_themselves_and_nothing_else() {
    let d = tempfile::tempdir().expect("tempdir");
    let store = hostile_store(d.path());
    let view = store.verified(&VerifyOptions::default()).expect("verifies");
    let md = markdown(&view).expect("markdown");
    let r = render(&md);

    // One heading per class (the two decided, the forged one): nothing in
    // a name or a reason starts a block of its own.
    assert_eq!(r.headings, 3, "{md}");
    assert!(!r.rows.is_empty(), "the stage tables: {md}");
    assert!(
        r.rows.iter().all(|&n| n == 2),
        "every row of a stage table has its two cells ({:?}):\n{md}",
        r.rows
    );

    // Each name in a code span is exactly itself.
    for name in [
        hostile("tests"),
        hostile("seq"),
        hostile("forged"),
        hostile("suite"),
        hostile("test1"),
        hostile("test2"),
        hostile("scorer"),
    ] {
        assert!(
            r.code.contains(&name),
            "{name:?} is not a code span of its own: {:?}\n{md}",
            r.code
        );
    }
    // Outside code spans the attacker's text reads as itself, once the
    // invisible joiners that break mentions and autolinks are dropped;
    // its line endings are shown, not followed.
    let plain = r.text.replace('\u{200D}', "");
    let shown_reason = hostile_reason().replace(['\n', '\r'], "\u{FFFD}");
    assert!(plain.contains(&shown_reason), "the reason:\n{plain}\n{md}");
    assert!(
        plain.contains(&hostile("guard")) || plain.contains(&hostile("guard").to_uppercase()),
        "the guardrail's name in its stage row:\n{plain}\n{md}"
    );
    assert!(
        plain.contains("is not shown"),
        "the unreadable decision:\n{plain}"
    );

    // Nothing outside a code span is a mention, a reference or something
    // GitHub autolinks.
    let lower = r.text.to_lowercase();
    for needle in ["://", "www.", "@octocat", "#1", "@evil"] {
        assert!(
            !lower.contains(needle),
            "{needle:?} outside a code span:\n{}\n{md}",
            r.text
        );
    }
    for (i, c) in r.text.char_indices() {
        if c == '@' || c == '#' {
            let next = r.text[i + 1..].chars().next();
            assert!(
                !next.is_some_and(char::is_alphanumeric),
                "{c} followed by {next:?} outside a code span:\n{}",
                r.text
            );
        }
    }
}
