//! The Markdown summary for a pull request: what was decided, in words.
//!
//! Every text in it that someone other than ratchet chose — class, suite,
//! test, scorer and task names, reasons, anything read from the trace —
//! goes through [`md`]: inside a code span it cannot close, or outside one
//! with every Markdown metacharacter escaped and GitHub's mentions,
//! references and autolinks broken. The comment links to nothing outside,
//! shows no image and pings nobody, whatever the trace holds.

use ratchet_trace::ReservedKind;
use std::fmt::Write as _;

use ratchet_gate::StageState;
use ratchet_trace::{AsOf, Verified};

use crate::read::{self, Decision, short, utc};
use crate::{Result, alpha_beta, decided_without_test, decision_scorer, effect_of};
use ratchet_gate::shown::{Unit, number, sig, signed};

/// Which decisions a summary is of: one class, one candidate, or (the
/// default) the latest of every class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Only this class.
    pub class: Option<String>,
    /// Only comparisons of this candidate (a pull request's head): a
    /// later decision about another commit does not replace its verdict.
    pub candidate: Option<ratchet_trace::CommitId>,
}

/// A short Markdown summary fit for a pull-request comment: per class,
/// the latest *final* decision in plain words — what was decided, on how
/// many tasks, under which α and β, the effect with its interval, the
/// failed tests of the candidate by name — then each stage's result; and
/// a comparison still open, if any. [`markdown_of`] narrows it to a class
/// or a candidate.
///
/// # Errors
/// [`crate::Error::Fmt`] only (writing to a string).
pub fn markdown(view: &Verified) -> Result<String> {
    markdown_of(view, &Summary::default())
}

/// [`markdown`] of the decisions `which` names only.
///
/// # Errors
/// [`crate::Error::Fmt`] only (writing to a string).
pub fn markdown_of(view: &Verified, which: &Summary) -> Result<String> {
    let (decisions, unreadable) =
        Decision::read_all(&view.events_of_kinds(&[ReservedKind::Decision.as_str()]));
    let mut episodes = read::episodes(&decisions);
    if let Some(class) = &which.class {
        episodes.retain(|c, _| c == class);
    }
    if let Some(candidate) = &which.candidate {
        for eps in episodes.values_mut() {
            eps.retain(|e| e.last.candidate() == candidate.as_str());
        }
        episodes.retain(|_, eps| !eps.is_empty());
    }
    let mut out = String::new();
    for (seq, why) in &unreadable {
        writeln!(
            out,
            "**ratchet**: the decision at seq {seq} is not shown: {} (a ratchet that knows its law reads it).\n",
            md(why, As::Text)
        )?;
    }
    if episodes.is_empty() {
        let of = match (&which.class, &which.candidate) {
            (None, None) => String::new(),
            (class, candidate) => format!(
                " for{}{}",
                class
                    .as_deref()
                    .map(|c| format!(" class {}", md(c, As::Code)))
                    .unwrap_or_default(),
                candidate
                    .as_ref()
                    .map(|c| format!(" candidate {}", md(short(c.as_str()), As::Code)))
                    .unwrap_or_default()
            ),
        };
        writeln!(out, "**ratchet**: no decision recorded in this store{of}.")?;
        return Ok(out);
    }
    for (class, eps) in &episodes {
        let open = eps.last().filter(|e| !e.is_final()).map(|e| e.last);
        match eps.iter().rev().find(|e| e.is_final()) {
            Some(ep) => decided(&mut out, view, class, ep.last, ep.interim.len() + 1)?,
            None => writeln!(
                out,
                "### ratchet gate: **NO FINAL DECISION** (class {})\n",
                md(class, As::Code)
            )?,
        }
        if let Some(d) = open {
            let sequential = d.sequential();
            writeln!(
                out,
                "Still open: candidate {} against {} — the gate said *continue*{} (seq {}).\n",
                md(short(d.candidate()), As::Code),
                md(short(d.baseline()), As::Code),
                sequential
                    .map(|sequential| format!(
                        " after {} observations, statistic {:+.3} between {:+.3} and {:+.3}",
                        sequential.n, sequential.llr, sequential.lower, sequential.upper
                    ))
                    .unwrap_or_default(),
                d.seq
            )?;
        }
    }
    Ok(out)
}

fn decided(
    out: &mut String,
    view: &Verified,
    class: &str,
    d: &Decision,
    looks: usize,
) -> Result<()> {
    let verb = if d.promoted() {
        "promoted"
    } else if d.truncated() {
        "did not promote (the test was truncated)"
    } else if !d.measured_reject() {
        "could not decide about"
    } else {
        "rejected"
    };
    writeln!(
        out,
        "### ratchet gate: **{}** (class {})\n",
        md(&d.outcome().to_uppercase(), As::Text),
        md(class, As::Code)
    )?;
    writeln!(
        out,
        "The gate **{verb}** candidate {} against baseline {} (decision at seq {}, {} UTC, after {looks} look{} at the gate; trace head {}).",
        md(short(d.candidate()), As::Code),
        md(short(d.baseline()), As::Code),
        d.seq,
        utc(d.ts_ms),
        if looks == 1 { "" } else { "s" },
        md(short(d.v.trace.hash.to_hex().as_str()), As::Code)
    )?;
    let ab = alpha_beta(view, d)
        .map(|(a, b)| {
            format!(
                "α = {} (false-promote rate), β = {} (false-reject rate)",
                sig(a),
                sig(b)
            )
        })
        .unwrap_or_else(|| "α and β not recorded".into());
    match (d.sequential(), d.effect(), effect_of(view, d)) {
        (Some(f), Some((tasks, iv)), Some(e)) => {
            writeln!(
                out,
                "It read **{tasks} tasks** scored on both sides ({}): the {} sequential test, under {ab}, stopped after {} observations at statistic {:+.3} (boundaries {:+.3} and {:+.3}).\n\
                 Effect, {}: **{}** — {}: {} — {}95 % interval {} to {} ({iv}).",
                md(
                    &decision_scorer(view, d).unwrap_or_else(|| "?".into()),
                    As::Code
                ),
                md(f.test.test().as_str(), As::Code),
                f.n,
                f.llr,
                f.lower,
                f.upper,
                e.measure,
                signed(e.value, e.unit),
                e.reads_as,
                e.better,
                // The decision's own one-sided bound first: the two-sided
                // interval alone reads "maybe worse" beside most promotes.
                e.bound
                    .as_ref()
                    .map_or_else(String::new, |b| format!("**{}**; two-sided ", b.text)),
                signed(e.low, e.unit),
                signed(e.high, e.unit),
            )?;
        }
        _ if decided_without_test(view, d) => writeln!(
            out,
            "No sequential test: the class is decided by its required suites and invariants alone."
        )?,
        _ => writeln!(
            out,
            "No effect was measured: the decision stopped before the sequential test ({ab})."
        )?,
    }
    if let Some(r) = d.reason() {
        writeln!(out, "Why: {}.", md(r, As::Text))?;
    }
    writeln!(out)?;
    // A benchmarks class: every benchmark, regressions first.
    let unit = decision_scorer(view, d).map_or(Unit::Plain, |s| Unit::of_scorer(&s));
    for s in d.stages() {
        if let ratchet_gate::StageDetails::Benchmarks(b) = &s.details {
            writeln!(
                out,
                "| benchmark | baseline | candidate | ratio [interval] | verdict |\n|---|---|---|---|---|"
            )?;
            for r in &b.benchmarks {
                writeln!(
                    out,
                    "| {} | {} | {} | ×{:.3} \\[{:.3}, {:.3}\\] | {} |",
                    md(&r.label(), As::Text),
                    number(r.baseline, unit),
                    number(r.candidate, unit),
                    r.ratio,
                    r.low,
                    r.high,
                    if r.verdict == ratchet_gate::benchmarks::BenchVerdict::Slower {
                        "**slower**"
                    } else {
                        r.verdict.as_str()
                    }
                )?;
            }
            writeln!(
                out,
                "\nRatio = candidate ÷ baseline per benchmark ({}); lower bound at α/{}, upper at α.\n",
                if b.paired {
                    "paired by round"
                } else {
                    "unpaired samples: the machine's drift between the runs is not cancelled"
                },
                b.benchmarks.len()
            )?;
        }
    }
    // Failed tests, by name, of the candidate's recorded runs.
    {
        // The runs the decision could read: from the producers its class
        // trusts for the candidate (the pinned policy's, else the key
        // holder's), never a failing run someone untrusted recorded.
        let sources = ratchet_gate::pinned_policy(view, class, d.at())
            .ok()
            .flatten()
            .filter(|p| p.hash == d.v.policy_hash)
            .and_then(|p| p.policy.sources(class).ok())
            .map_or_else(ratchet_trace::Sources::key_holder, |[_, c]| c);
        let (runs, _) = view.test_runs_from(
            &d.v.candidate,
            AsOf::Seq(d.at()),
            &sources,
            ratchet_trace::Side::Candidate,
        );
        let failing: Vec<_> = runs.iter().filter(|(_, r)| r.failed > 0).collect();
        if runs.is_empty() {
            writeln!(out, "Tests: no run recorded for the candidate.\n")?;
        } else if failing.is_empty() {
            writeln!(
                out,
                "Tests: no failure in the candidate's {} recorded run{}.\n",
                runs.len(),
                if runs.len() == 1 { "" } else { "s" }
            )?;
        } else {
            writeln!(out, "Failed tests of the candidate:\n")?;
            for (seq, r) in failing {
                let names = if r.failures.is_empty() {
                    "(no names recorded)".to_string()
                } else {
                    r.failures
                        .iter()
                        .map(|f| md(f, As::Code))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let unnamed = r.failed.saturating_sub(r.failures.len() as u64);
                writeln!(
                    out,
                    "* suite {} (run at seq {seq}): {} failed — {names}{}",
                    md(&r.suite, As::Code),
                    r.failed,
                    if unnamed > 0 && !r.failures.is_empty() {
                        format!(" and {unnamed} more")
                    } else {
                        String::new()
                    }
                )?;
            }
            writeln!(out)?;
        }
    }
    writeln!(out, "| stage | result |\n|---|---|")?;
    for s in d.stages() {
        let result = match s.passed {
            StageState::Passed => "passed",
            StageState::Failed => "**failed**",
            StageState::Open => "not decided",
        };
        // A table cell: text mode (its `|` escaped), never a code span.
        writeln!(out, "| {} | {result} |", md(&s.stage.to_string(), As::Text))?;
    }
    writeln!(out)?;
    Ok(())
}

/// How [`md`] puts a text into the Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum As {
    /// In a code span of its own (shown verbatim, monospace). Not for a
    /// table cell: GitHub splits cells at a `|` even inside a code span.
    Code,
    /// As plain text: every Markdown metacharacter escaped, GitHub's
    /// mentions, references and autolinks broken. Fine anywhere, table
    /// cells included.
    Text,
}

/// A zero-width joiner: invisible, and no part of a user name, a domain
/// or a scheme, so what it splits is no mention, reference or autolink.
const ZWJ: char = '\u{200D}';

/// The one way a text someone else chose enters the Markdown: neutralised,
/// so that whatever it holds it renders as the characters it is — no link,
/// image, HTML, autolink, @mention or #reference, no emphasis or heading,
/// and it cannot end the line, the paragraph or the table cell it is in.
///
/// Both ways, first: a line ending, any other control character and the
/// bidirectional overrides (U+202A–U+202E, U+2066–U+2069, marks, U+2028/9)
/// become U+FFFD, so the text stays on its line and reads in the order it
/// is stored.
///
/// [`As::Code`]: a code span whose fence is one backtick longer than the
/// longest run of backticks inside (CommonMark ends a span only at a run
/// of exactly its fence's length), padded with a space on each side
/// (which CommonMark strips, so a backtick at either end cannot join the
/// fence). Nothing inside a code span is Markdown, HTML, a mention or a
/// link to GitHub.
///
/// [`As::Text`]: every ASCII punctuation character backslash-escaped
/// (CommonMark lets any be, and then it is only itself: no `[`, `!`, `<`,
/// `&`, `*`, `|`, … that means anything), and, because GitHub links after
/// rendering, a zero-width joiner after each `@` and `#` (no @mention, no
/// `owner/repo#1`, no e-mail autolink) and wherever an extended autolink
/// would start (`://`, `www.`).
pub(crate) fn md(text: &str, how: As) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            let bidi = matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
            if c.is_control() || bidi || matches!(c, '\u{2028}' | '\u{2029}') {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    match how {
        As::Code => {
            let (mut longest, mut run) = (0, 0);
            for c in clean.chars() {
                run = if c == '`' { run + 1 } else { 0 };
                longest = longest.max(run);
            }
            let fence = "`".repeat(longest + 1);
            format!("{fence} {clean} {fence}")
        }
        As::Text => {
            let mut out = String::with_capacity(clean.len() * 2);
            let chars: Vec<char> = clean.chars().collect();
            for (i, &c) in chars.iter().enumerate() {
                if c == '.'
                    && i >= 3
                    && chars[i - 3..i].iter().all(|w| w.eq_ignore_ascii_case(&'w'))
                {
                    out.push(ZWJ);
                }
                if c.is_ascii_punctuation() {
                    out.push('\\');
                }
                out.push(c);
                if matches!(c, '@' | '#') || (c == ':' && chars.get(i + 1) == Some(&'/')) {
                    out.push(ZWJ);
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{As, md};

    #[test]
    fn a_code_span_is_fenced_longer_than_any_backtick_run_inside() {
        assert_eq!(md("acc", As::Code), "` acc `");
        assert_eq!(md("a`b", As::Code), "`` a`b ``");
        assert_eq!(md("``x```", As::Code), "```` ``x``` ````");
        assert_eq!(md("`", As::Code), "`` ` ``");
        assert_eq!(
            md("a\nb\r\u{202E}c", As::Code),
            "` a\u{FFFD}b\u{FFFD}\u{FFFD}c `"
        );
    }

    #[test]
    fn text_escapes_every_metacharacter_and_breaks_what_github_links() {
        assert_eq!(md("![x](y)", As::Text), "\\!\\[x\\]\\(y\\)");
        assert_eq!(md("<img>", As::Text), "\\<img\\>");
        assert_eq!(md("a|b", As::Text), "a\\|b");
        assert_eq!(md("@octocat", As::Text), "\\@\u{200D}octocat");
        assert_eq!(md("o/r#1", As::Text), "o\\/r\\#\u{200D}1");
        assert_eq!(md("https://e.x", As::Text), "https\\:\u{200D}\\/\\/e\\.x");
        assert_eq!(md("WwW.e.x", As::Text), "WwW\u{200D}\\.e\\.x");
        assert_eq!(md("plain words", As::Text), "plain words");
    }
}
