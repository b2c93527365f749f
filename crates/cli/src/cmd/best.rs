//! `ratchet best`: the commits ranked by a confidence bound on a scorer's
//! mean — the measured rung to climb back to.

use anyhow::Result;
use ratchet_trace::{AsOf, CommitId};

use crate::cmd::shared::trusted;
use crate::flags::BestFlags;
use crate::{Ctx, exit, out};

/// The ranking (best first) in words or JSON; exit 1 when no commit ranks.
pub fn run(ctx: &Ctx, flags: BestFlags) -> Result<u8> {
    let BestFlags {
        scorer,
        min_n,
        confidence,
        exclude,
        key_file,
        trust,
    } = flags;
    let exclude = exclude
        .iter()
        .map(|c| ctx.commit(c))
        .collect::<Result<Vec<_>>>()?;
    let trust = trusted(&trust)?;
    let (scorer, exclude): (&str, &[CommitId]) = (&scorer, &exclude);
    let ledger = ctx.ledger_read(key_file.as_deref())?;
    // A scorer the trace never saw is a mistake to name, not an empty
    // ranking: say which scorers there are.
    if !ledger.view().has_scorer(scorer, AsOf::Head) {
        let known: Vec<String> = ledger
            .view()
            .overview()
            .scorers
            .into_iter()
            .map(|s| s.scorer)
            .collect();
        anyhow::bail!(
            "unknown scorer {scorer:?}: the trace holds no score of it; {}",
            if known.is_empty() {
                "it holds no score at all (record some with `ratchet record-score` or `ratchet ingest`)".to_string()
            } else {
                format!("its scorers are {}", known.join(", "))
            }
        );
    }
    // Only the producers trusted rank the commits.
    let view = &ledger.view().restricted_to(&trust);
    // The scorer's direction as the trace declares it (cost and latency
    // improve downwards): the best commit has the smallest upper bound then.
    let lower_is_better = ratchet_scorers::direction_in(ledger.view(), scorer)?
        == ratchet_scorers::Direction::LowerIsBetter;
    let ranking = ratchet_drift::best_commit(
        view,
        &ratchet_drift::Ranking {
            scorer,
            version: None,
            min_n,
            confidence,
            exclude,
            lower_is_better,
        },
    )?;
    let direction = if lower_is_better { "lower" } else { "higher" };
    let reason = ranking
        .is_empty()
        .then(|| why_none_ranks(view, scorer, min_n, exclude));
    if ctx.json {
        out::json_in(
            ledger.store().id(),
            &serde_json::json!({
                "scorer": scorer, "better": direction, "ranking": ranking, "reason": reason
            }),
        )?;
    } else if let Some(reason) = &reason {
        outln!("no commit ranked: {reason}");
    } else {
        print_ranking(scorer, &ranking, lower_is_better)?;
    }
    Ok(if ranking.is_empty() {
        exit::NEGATIVE
    } else {
        0
    })
}

/// The ranking as a table, its bound the one that ranks (the upper for a
/// scorer that improves downwards).
fn print_ranking(
    scorer: &str,
    ranking: &[ratchet_drift::RankedCommit],
    lower_is_better: bool,
) -> Result<()> {
    outln!(
        "{:<42} {:>7} {:>9} {:>9} {:>11}",
        "commit",
        "n",
        "mean",
        "sd",
        if lower_is_better {
            "upper bound"
        } else {
            "lower bound"
        }
    );
    // Timings in seconds are often below 10⁻³: significant digits,
    // not four decimals of zeros.
    let unit = ratchet_gate::shown::Unit::of_scorer(scorer);
    let shown = |x: f64| ratchet_gate::shown::number(x, unit);
    for r in ranking {
        outln!(
            "{:<42} {:>7} {:>9} {:>9} {:>11}",
            r.commit,
            r.n,
            shown(r.mean),
            shown(r.sd),
            shown(r.lower_bound)
        );
    }
    Ok(())
}

/// Why `best` ranked no commit of a known scorer: how many commits have
/// scores of it (at the version ranked, its newest, from the producers
/// trusted), the most any has, against `--min-n`.
fn why_none_ranks(
    view: &ratchet_trace::Verified,
    scorer: &str,
    min_n: u64,
    exclude: &[CommitId],
) -> String {
    let Some(version) = view.scorer_versions(scorer, AsOf::Head).into_iter().next() else {
        return format!(
            "no score of {scorer} is from a producer trusted here (--trust names whose scores rank)"
        );
    };
    let stats: Vec<_> = view
        .commit_stats(
            ratchet_trace::ScorerRef::at_version(scorer, &version.version),
            AsOf::Head,
        )
        .into_iter()
        .filter(|s| !exclude.contains(&s.commit))
        .collect();
    let most = stats.iter().map(|s| s.n).max().unwrap_or(0);
    if stats.is_empty() {
        return format!(
            "every commit with scores of {scorer} (version {}) was excluded",
            version.version
        );
    }
    if most < min_n {
        return format!(
            "{} commit(s) have scores of {scorer} (version {}), the most any has is {most}, and a commit needs --min-n {min_n}: record more scores, or pass a smaller --min-n (at least 2)",
            stats.len(),
            version.version
        );
    }
    format!(
        "{} commit(s) have at least --min-n {min_n} scores of {scorer} (version {}), but no confidence bound could be drawn from them (their statistics overflowed)",
        stats.iter().filter(|s| s.n >= min_n).count(),
        version.version
    )
}
