//! `ratchet status`: what the store holds, what is deployed and pinned,
//! and what disagrees with it — locally or through `--server`.

use std::io::Write;

use anyhow::{Result, anyhow};

use crate::cmd::shared::ref_exit;
use crate::cmd::shared::remote::answer;
use crate::flags::StatusFlags;
use crate::{Ctx, exit, out};

/// The store's status in words or JSON; the exit code says whether the
/// trace verifies (1 if not) and whether a promotion ref disagrees with it
/// ([`exit::REF_FAULT`]).
pub fn run(ctx: &Ctx, flags: StatusFlags) -> Result<u8> {
    let StatusFlags { key_file, repo } = flags;
    if let Some(client) = ctx.client()? {
        return remote(ctx, &client);
    }
    // The repository of the store, else of the current directory
    // (a store kept outside the repository it promotes in).
    let repo = repo
        .or_else(|| ratchet_orchestrate::repository_of(&ctx.store_dir))
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .and_then(|d| ratchet_orchestrate::repository_of(&d))
        });
    let mut store = ctx.open_read(key_file.as_deref())?;
    let mut status = ratchet_orchestrate::status(&mut store, repo.as_deref())?;
    status.store_dir = out::absolute(&status.store_dir);
    // Without its key a keyed store's events are not verified, so nothing
    // of them is folded: every section would read empty, on a store that
    // may hold decisions and promotions. Say so first, and show nothing.
    if status.verification.macs_unchecked() {
        anyhow::bail!(
            "store {} at {} is keyed and was read without its key: its {} events are not verified, so status would show it empty — pass --key-file or set RATCHET_KEY_FILE",
            status.store_id,
            status.store_dir.display(),
            status.overview.size
        );
    }
    // A trace that does not verify exits 1 whatever the refs say (a ref
    // that disagrees is still shown); one that verifies exits 7 when a
    // ref disagrees with it.
    let exit = |ctx: &Ctx| -> Result<u8> {
        let refs = ref_exit(ctx, status.ref_faults.as_deref())?;
        Ok(if status.verification.fault.is_some() {
            exit::NEGATIVE
        } else {
            refs
        })
    };
    if ctx.json {
        out::json(&status)?;
        return exit(ctx);
    }
    let mut stdout = std::io::stdout().lock();
    write_overview(&mut stdout, &status)?;
    write_findings(&mut stdout, &status)?;
    write_pins(&mut stdout, &status)?;
    drop(stdout);
    exit(ctx)
}

/// The store, its verification, and what it holds by kind, commit and scorer.
fn write_overview(o: &mut impl Write, s: &ratchet_orchestrate::Status) -> Result<()> {
    writeln!(o, "store {} at {}", s.store_id, s.store_dir.display())?;
    let verification = &s.verification;
    let verified = match &verification.fault {
        Some(f) => format!("DOES NOT VERIFY: {f}"),
        None if verification.macs_unchecked() => {
            "plain chain verifies, MACs NOT checked (pass --key-file)".into()
        }
        None if verification.macs_checked => "verifies, MACs checked".into(),
        None => "verifies".into(),
    };
    writeln!(o, "{} events; {verified}", s.overview.size)?;
    let kinds: Vec<String> = s
        .overview
        .kinds
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    writeln!(
        o,
        "events by kind: {}",
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    )?;
    writeln!(o, "\ncommits ({}):", s.overview.commits.len())?;
    for c in &s.overview.commits {
        writeln!(
            o,
            "  {}  {:>8} scores  {:>5} test runs  (first at seq {})",
            c.commit, c.scores, c.test_runs, c.first_seq
        )?;
    }
    writeln!(o, "\nscorers ({}):", s.overview.scorers.len())?;
    for sc in &s.overview.scorers {
        let mut direction = s
            .directions
            .get(&sc.scorer)
            .map_or(String::new(), |d| d.to_string());
        if s.undeclared.contains(&sc.scorer) {
            // The gate reads a class's stated direction first: say that
            // this one is only the default.
            direction.push_str(
                " (the default: not declared in the trace; a policy's `direction` decides)",
            );
        }
        let versions: Vec<String> = sc
            .versions
            .iter()
            .map(|scored| format!("{} ({} scores)", scored.version, scored.n))
            .collect();
        writeln!(
            o,
            "  {:<20} {direction}, {} commit(s), versions: {}",
            sc.scorer,
            sc.commits,
            versions.join(", ")
        )?;
    }
    Ok(())
}

/// Failing test runs, the last decision and the last alarm.
fn write_findings(o: &mut impl Write, s: &ratchet_orchestrate::Status) -> Result<()> {
    if !s.failing_runs.is_empty() {
        writeln!(o, "\nfailing test runs (newest {}):", s.failing_runs.len())?;
        for r in &s.failing_runs {
            // Three names per run: the rest are in --json and the report.
            let shown = &r.failures[..r.failures.len().min(3)];
            let more = r.failed.saturating_sub(shown.len() as u64);
            writeln!(
                o,
                "  seq {} {} {}: {} failed{}{}",
                r.seq,
                out::short(r.commit.as_str()),
                r.suite,
                r.failed,
                if shown.is_empty() {
                    String::new()
                } else {
                    format!(": {}", shown.join(", "))
                },
                if more > 0 && !shown.is_empty() {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )?;
        }
    }
    match &s.last_decision {
        Some(d) => writeln!(
            o,
            "\nlast decision: seq {}, {} for {} over {} ({}){}",
            d.seq,
            d.outcome.verdict,
            out::short(d.candidate.as_str()),
            out::short(d.baseline.as_str()),
            d.class,
            d.outcome
                .cause
                .map(|c| format!(", {}", c.as_str().replace('_', " ")))
                .unwrap_or_default()
        )?,
        None => writeln!(o, "\nlast decision: none")?,
    }
    match &s.last_alarm {
        Some(a) => writeln!(
            o,
            "last alarm: {} {} shift of {} at seq {} (change from seq {})",
            out::short(a.commit.as_str()),
            a.alarm.shift,
            a.scorer,
            a.seq,
            a.change_seq
        )?,
        None => writeln!(o, "last alarm: none")?,
    }
    Ok(())
}

/// What is pinned and deployed, and what is not (each a risk named).
fn write_pins(o: &mut impl Write, s: &ratchet_orchestrate::Status) -> Result<()> {
    if s.pinned_policies.is_empty() {
        writeln!(
            o,
            "policy not pinned: a policy file beside the store decides, and anyone who can write it can change a verdict (`ratchet policy pin FILE`)"
        )?;
    }
    for (class, p) in &s.pinned_policies {
        writeln!(
            o,
            "policy of {class}: pinned {} at seq {}",
            out::short(&p.hash),
            p.seq
        )?;
    }
    for (rubric, p) in &s.pinned_rubrics {
        writeln!(
            o,
            "rubric {rubric}: pinned {} at seq {}",
            out::short(&p.hash),
            p.seq
        )?;
    }
    write_deployed(o, &s.deployed, s.checked_out.as_deref())?;
    if s.ref_faults.is_none() {
        writeln!(
            o,
            "promotion refs: not compared (no git repository here; pass --repo)"
        )?;
    }
    for class in &s.unpinned_classes {
        writeln!(
            o,
            "class {class}: policy not pinned (decided or promoted under a file; `ratchet policy pin FILE --class {class}`)"
        )?;
    }
    Ok(())
}

/// What is deployed for each class, and when the work tree shows another
/// commit: the lines `status` prints, locally and through `--server`.
fn write_deployed(
    o: &mut impl Write,
    deployed: &std::collections::BTreeMap<String, ratchet_orchestrate::Deployment>,
    checked_out: Option<&str>,
) -> Result<()> {
    for (class, d) in deployed {
        match &d.how {
            ratchet_orchestrate::DeployedBy::Promotion => writeln!(
                o,
                "deployed for {class}: {} (promotion at seq {})",
                d.commit, d.seq
            )?,
            ratchet_orchestrate::DeployedBy::Heal { alarm_seq, from } => writeln!(
                o,
                "deployed for {class}: {} (checked out by a heal at seq {}{}, away from {}; promoted: {})",
                d.commit,
                d.seq,
                alarm_seq
                    .map(|a| format!(" after the alarm at seq {a}"))
                    .unwrap_or_default(),
                out::short(from.as_str()),
                out::short(d.promoted.as_str())
            )?,
        }
        // The work tree is a cache of the trace: say when it shows
        // something else, rather than let either be read as the other.
        if let Some(head) = checked_out.filter(|h| *h != d.commit.as_str()) {
            writeln!(
                o,
                "checked out: {head}, not the commit deployed for {class} ({})",
                out::short(d.commit.as_str())
            )?;
        }
    }
    Ok(())
}

/// `status --server`.
fn remote(ctx: &Ctx, client: &ratchet_serve::Client) -> Result<u8> {
    let doc = client.get_json("/v1/status")?;
    answer(ctx, &doc, |d| {
        format!(
            "store {} ({} events) served; `--json` shows the whole status",
            d["store_id"].as_str().unwrap_or("?"),
            d["overview"]["size"]
        )
    })?;
    if !ctx.json {
        // What is deployed, read with the type the server wrote it with,
        // in the words a local `status` uses.
        let deployed: std::collections::BTreeMap<String, ratchet_orchestrate::Deployment> =
            serde_json::from_value(doc["deployed"].clone())
                .map_err(|e| anyhow!("the server's status names no readable deployment: {e}"))?;
        let mut text = Vec::new();
        write_deployed(&mut text, &deployed, None)?;
        outln!("{}", String::from_utf8_lossy(&text).trim_end());
    }
    Ok(0)
}
