//! The store: init, append, record-score, log, status, verify-chain,
//! checkpoint, merge-cells, export.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use ratchet_trace::{
    Checkpoint, EventFilter, MergeOptions, Score, Store, StoreOptions, VerifyOptions, WriterKey,
};

use crate::flags::{
    LogFlags, MergeCellsFlags, RecordScoreFlags, ReportFlags, StatusFlags, VerifyChainFlags,
};
use crate::{Ctx, exit, out};

pub fn init(ctx: &Ctx, keyed: bool, key_file: Option<&Path>) -> Result<u8> {
    let mut o = StoreOptions::default();
    if keyed {
        let path = key_file.ok_or_else(|| anyhow!("--keyed needs --key-file"))?;
        o = o.writer_key(WriterKey::create_file(path)?);
    }
    let store = Store::create(&ctx.store_dir, o)?;
    if ctx.json {
        out::written(
            &store,
            &[],
            serde_json::json!({
                "writer_key_id": store.writer_key_id(),
                "key_file": key_file.map(out::absolute),
            }),
        )?;
    } else {
        outln!("created store {} at {}", store.id(), store.dir().display());
        if let Some(k) = store.writer_key_id() {
            outln!(
                "keyed: writer key id {k}; keep the key file secret and pass it with --key-file"
            );
        }
    }
    Ok(0)
}

pub fn append(ctx: &Ctx, key_file: Option<&Path>) -> Result<u8> {
    let mut store = ctx.open(key_file)?;
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .context("reading stdin (JSON Lines, UTF-8)")?;
    let receipts = store
        .append_json_lines(&text)
        .context("appending the events on stdin")?;
    if ctx.json {
        out::written(&store, &receipts, serde_json::json!({}))?;
    } else {
        match (receipts.first(), receipts.last()) {
            (Some(a), Some(b)) => outln!(
                "appended {} events: seq {}..={}",
                receipts.len(),
                a.seq,
                b.seq
            ),
            _ => outln!("no events on stdin; nothing appended"),
        }
    }
    Ok(0)
}

pub fn record_score(
    ctx: &Ctx,
    score: &Score,
    session: &str,
    direction: Option<ratchet_scorers::Direction>,
    key_file: Option<&Path>,
) -> Result<u8> {
    let mut store = ctx.open(key_file)?;
    let r = ratchet_scorers::record_score(&mut store, score, session, direction)?;
    if ctx.json {
        out::written(&store, std::slice::from_ref(&r), serde_json::json!({}))?;
    } else {
        outln!("recorded score at seq {} ({})", r.seq, r.id);
    }
    Ok(0)
}

pub fn log(
    ctx: &Ctx,
    from: u64,
    limit: usize,
    last: Option<usize>,
    filter: &EventFilter,
    key_file: Option<&Path>,
) -> Result<u8> {
    let store = ctx.open_read(key_file)?;
    if let Some(kind) = &filter.kind {
        let kinds = store.event_kinds()?;
        let known = kinds.iter().any(|(k, _)| k == kind)
            || ratchet_trace::ReservedKind::of(kind).is_some()
            || kind == ratchet_trace::KIND_SCORE
            || kind == ratchet_trace::KIND_TEST_RUN;
        if !known {
            let here: Vec<&str> = kinds.iter().map(|(k, _)| k.as_str()).collect();
            anyhow::bail!(
                "no event of kind {kind:?} in this store, and ratchet reserves no such kind; the kinds here: {}",
                if here.is_empty() {
                    "none".to_string()
                } else {
                    here.join(", ")
                }
            );
        }
    }
    let events = match last {
        Some(n) => store.last_events_matching(n, filter)?,
        None => store.events_matching(from, limit, filter)?,
    };
    if ctx.json {
        /// Written straight from the events, payloads byte for byte (no
        /// detour through `serde_json::Value`, which cannot hold every
        /// number a payload stored by an older version may hold).
        #[derive(serde::Serialize)]
        struct Log<'a> {
            store_id: &'a str,
            events: &'a [ratchet_trace::Event],
        }
        return out::json(&Log {
            store_id: store.id(),
            events: &events,
        })
        .map(|_| 0);
    }
    let mut o = std::io::stdout().lock();
    writeln!(
        o,
        "{:>8}  {:<26}  {:<10}  {:<12}  payload",
        "seq", "id", "kind", "commit"
    )?;
    for e in events {
        let commit = e.commit.as_ref().map_or("-", |c| out::short(c.as_str()));
        let payload = String::from_utf8_lossy(&e.payload);
        let shown: String = payload.chars().take(60).collect();
        let more = if payload.chars().count() > 60 {
            "…"
        } else {
            ""
        };
        writeln!(
            o,
            "{:>8}  {}  {:<10}  {:<12}  {shown}{more}",
            e.seq, e.id, e.kind, commit
        )?;
    }
    Ok(0)
}

pub fn status(ctx: &Ctx, key_file: Option<&Path>, repo: Option<&Path>) -> Result<u8> {
    let mut store = ctx.open_read(key_file)?;
    let mut s = ratchet_orchestrate::status(&mut store, repo)?;
    s.store_dir = out::absolute(&s.store_dir);
    // Without its key a keyed store's events are not verified, so nothing
    // of them is folded: every section would read empty, on a store that
    // may hold decisions and promotions. Say so first, and show nothing.
    if s.verification.macs_unchecked() {
        anyhow::bail!(
            "store {} at {} is keyed and was read without its key: its {} events are not verified, so status would show it empty — pass --key-file or set RATCHET_KEY_FILE",
            s.store_id,
            s.store_dir.display(),
            s.overview.size
        );
    }
    // A trace that does not verify exits 1 whatever the refs say (a ref
    // that disagrees is still shown); one that verifies exits 7 when a
    // ref disagrees with it.
    let exit = |ctx: &Ctx| -> Result<u8> {
        let refs = ref_exit(ctx, s.ref_faults.as_deref())?;
        Ok(if s.verification.fault.is_some() {
            exit::NEGATIVE
        } else {
            refs
        })
    };
    if ctx.json {
        out::json(&s)?;
        return exit(ctx);
    }
    let mut o = std::io::stdout().lock();
    write_overview(&mut o, &s)?;
    write_findings(&mut o, &s)?;
    write_pins(&mut o, &s)?;
    drop(o);
    exit(ctx)
}

/// The store, its verification, and what it holds by kind, commit and scorer.
fn write_overview(o: &mut impl Write, s: &ratchet_orchestrate::Status) -> Result<()> {
    writeln!(o, "store {} at {}", s.store_id, s.store_dir.display())?;
    let v = &s.verification;
    let verified = match &v.fault {
        Some(f) => format!("DOES NOT VERIFY: {f}"),
        None if v.macs_unchecked() => {
            "plain chain verifies, MACs NOT checked (pass --key-file)".into()
        }
        None if v.macs_checked => "verifies, MACs checked".into(),
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
            .map(|v| format!("{} ({} scores)", v.version, v.n))
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
pub(crate) fn write_deployed(
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

pub fn verify_chain(
    ctx: &Ctx,
    checkpoint: Option<&Path>,
    key_file: Option<&Path>,
    without_macs: bool,
    repo: Option<&Path>,
) -> Result<u8> {
    // RATCHET_KEY_FILE names the key when --key-file does not.
    let key_file = crate::key_file_or_env(key_file);
    let key_file = key_file.as_deref();
    let store = ctx.open_read(key_file)?;
    if let (Some(key_id), None, false) = (store.writer_key_id(), key_file, without_macs) {
        return Err(anyhow!(
            "this store is keyed (key id {key_id}): pass --key-file to check its MACs, or --without-macs to verify the plain chain only (which anyone who can write the file can rebuild)"
        ));
    }
    let mut o = VerifyOptions::default();
    if let Some(p) = key_file {
        o = o.key(WriterKey::read_file(p)?);
    }
    if let Some(p) = checkpoint {
        o = o.checkpoint(
            Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display()))?,
        );
    }
    let (report, view) = store.verify_and_fold(&o)?;
    // Promotion refs are compared only with a trace that verified: a
    // disagreeing ref is then a fault of its own.
    let ref_faults = match (repo, &view) {
        (Some(r), Some(view)) => Some(ratchet_orchestrate::check_promotion_refs(r, view)?),
        _ => None,
    };
    if ctx.json {
        #[derive(serde::Serialize)]
        struct VerifyJson<'a> {
            #[serde(flatten)]
            report: &'a ratchet_trace::VerifyReport,
            #[serde(skip_serializing_if = "Option::is_none")]
            ref_faults: Option<&'a Vec<ratchet_orchestrate::RefFault>>,
        }
        out::json(&VerifyJson {
            report: &report,
            ref_faults: ref_faults.as_ref(),
        })?;
    } else if let Some(f) = &report.fault {
        outln!(
            "TAMPERED: store {} fails verification at {f}",
            report.store_id
        );
    } else if report.macs_unchecked() {
        outln!(
            "plain chain ok, MACs NOT checked: {} events, head {} (a keyed store: only --key-file shows that its writer wrote them)",
            report.size,
            report.head.to_hex()
        );
    } else {
        outln!(
            "ok: {} events verified{}{}, head {}",
            report.size,
            if report.macs_checked {
                ", MACs checked"
            } else {
                ""
            },
            if report.checkpoint_checked {
                ", consistent with the checkpoint"
            } else {
                ""
            },
            report.head.to_hex()
        );
    }
    if !report.is_valid() {
        return Ok(exit::NEGATIVE);
    }
    ref_exit(ctx, ref_faults.as_deref())
}

/// Prints each promotion ref that disagrees with the trace (words only)
/// and gives the exit code: [`exit::REF_FAULT`] if any does.
fn ref_exit(ctx: &Ctx, faults: Option<&[ratchet_orchestrate::RefFault]>) -> Result<u8> {
    let faults = faults.unwrap_or_default();
    if !ctx.json {
        for f in faults {
            outln!(
                "REF FAULT: {f} (the trace is the record; the next `gate --record-promotion` of the class restores the ref)"
            );
        }
    }
    Ok(if faults.is_empty() {
        0
    } else {
        exit::REF_FAULT
    })
}

pub fn checkpoint(ctx: &Ctx, out_file: Option<&Path>) -> Result<u8> {
    let store = ctx.open_read(None)?;
    let cp = store.checkpoint()?;
    if let Some(p) = out_file {
        cp.write_atomic(p)?;
    }
    if ctx.json {
        out::json(&cp)?;
    } else if out_file.is_none() {
        out!("{cp}");
    } else {
        outln!("checkpoint at size {} written", cp.size);
    }
    Ok(0)
}

pub fn merge_cells(
    ctx: &Ctx,
    cells: &[PathBuf],
    key_file: Option<&Path>,
    cell_key_file: Option<&Path>,
) -> Result<u8> {
    let mut home = ctx.open(key_file)?;
    let mut mo = MergeOptions::default();
    if let Some(p) = cell_key_file {
        mo = mo.cell_key(WriterKey::read_file(p)?);
    }
    let mut reports = Vec::new();
    for cell in cells {
        let r = home
            .merge_cell(cell, &mo)
            .with_context(|| format!("merging cell {}", cell.display()))?;
        if !ctx.json {
            outln!(
                "{}: {} new events ingested ({} already present), cell merged through seq {}",
                cell.display(),
                r.ingested,
                r.already_present,
                r.high_water_after
            );
        }
        reports.push(r);
    }
    if ctx.json {
        out::json(&serde_json::json!({ "store_id": home.id(), "cells": reports }))?;
    }
    Ok(0)
}

#[cfg(feature = "parquet")]
pub fn export(ctx: &Ctx, dir: &Path, key_file: Option<&Path>) -> Result<u8> {
    let mut store = ctx.open_read(key_file)?;
    let report = ratchet_export::export_parquet(&mut store, dir)?;
    if ctx.json {
        out::json_in(store.id(), &report)?;
    } else {
        outln!(
            "wrote {} score row(s) and {} event(s) in {} Parquet file(s) under {}",
            report.scores,
            report.events,
            report.files.len(),
            dir.display()
        );
        outln!("{}", report.summary);
    }
    Ok(0)
}

#[cfg(not(feature = "parquet"))]
pub fn export(_ctx: &Ctx, _dir: &Path, _key_file: Option<&Path>) -> Result<u8> {
    anyhow::bail!(
        "this ratchet was built without Parquet export; rebuild it with `cargo install --path crates/cli --features parquet` from a clone of ratchet"
    )
}

pub fn report(
    ctx: &Ctx,
    out_path: &Path,
    markdown: Option<&ratchet_report::Summary>,
    scorer: Option<String>,
    key_file: Option<&Path>,
) -> Result<u8> {
    let mut store = ctx.open_read(key_file)?;
    if let Some(which) = markdown {
        let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
        let text = ratchet_report::markdown_of(&view, which)?;
        if ctx.json {
            out::json(&serde_json::json!({ "store_id": store.id(), "markdown": text }))?;
        } else {
            out!("{text}");
        }
        return Ok(0);
    }
    let options = ratchet_report::ReportOptions {
        scorer,
        ..ratchet_report::ReportOptions::default()
    };
    let html = ratchet_report::html(&mut store, &options)?;
    std::fs::write(out_path, &html).with_context(|| format!("writing {}", out_path.display()))?;
    if ctx.json {
        out::json(&serde_json::json!({
            "store_id": store.id(), "report": out::absolute(out_path), "bytes": html.len()
        }))?;
    } else {
        outln!(
            "report written to {} ({} KB)",
            out_path.display(),
            html.len() / 1024
        );
    }
    Ok(0)
}

/// `ratchet record-score`: the flags checked and turned into the library's terms, then run.
pub fn record_score_command(ctx: &Ctx, flags: RecordScoreFlags) -> Result<u8> {
    let RecordScoreFlags {
        commit,
        task,
        scorer,
        value,
        scorer_version,
        cost,
        latency_ms,
        holdout,
        direction,
        session,
        key_file,
    } = flags;
    let score = ratchet_trace::Score {
        commit: ctx.commit(&commit)?,
        task,
        scorer,
        scorer_version,
        value,
        cost,
        latency_ms,
        holdout,
    };
    if let Some(client) = ctx.client()? {
        return crate::cmd::serve::record_score_remote(
            ctx,
            &client,
            &score,
            direction.map(Into::into),
        );
    }
    crate::cmd::store::record_score(
        ctx,
        &score,
        &session,
        direction.map(Into::into),
        key_file.as_deref(),
    )
}

/// `ratchet log`: the flags checked and turned into the library's terms, then run.
pub fn log_command(ctx: &Ctx, flags: LogFlags) -> Result<u8> {
    let LogFlags {
        from,
        limit,
        last,
        kind,
        commit,
        scorer,
        key_file,
    } = flags;
    let filter = ratchet_trace::EventFilter {
        kind,
        commit: commit.map(|c| ctx.commit(&c)).transpose()?,
        scorer,
    };
    crate::cmd::store::log(ctx, from, limit, last, &filter, key_file.as_deref())
}

/// `ratchet status`: the flags checked and turned into the library's terms, then run.
pub fn status_command(ctx: &Ctx, flags: StatusFlags) -> Result<u8> {
    let StatusFlags { key_file, repo } = flags;
    if let Some(client) = ctx.client()? {
        return crate::cmd::serve::status_remote(ctx, &client);
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
    crate::cmd::store::status(ctx, key_file.as_deref(), repo.as_deref())
}

/// `ratchet verify-chain`: the flags checked and turned into the library's terms, then run.
pub fn verify_chain_command(ctx: &Ctx, flags: VerifyChainFlags) -> Result<u8> {
    let VerifyChainFlags {
        checkpoint,
        key_file,
        without_macs,
        repo,
    } = flags;
    crate::cmd::store::verify_chain(
        ctx,
        checkpoint.as_deref(),
        key_file.as_deref(),
        without_macs,
        repo.as_deref(),
    )
}

/// `ratchet merge-cells`: the flags checked and turned into the library's terms, then run.
pub fn merge_cells_command(ctx: &Ctx, flags: MergeCellsFlags) -> Result<u8> {
    let MergeCellsFlags {
        cells,
        key_file,
        cell_key_file,
    } = flags;
    crate::cmd::store::merge_cells(ctx, &cells, key_file.as_deref(), cell_key_file.as_deref())
}

/// `ratchet report`: the flags checked and turned into the library's terms, then run.
pub fn report_command(ctx: &Ctx, flags: ReportFlags) -> Result<u8> {
    let ReportFlags {
        out,
        markdown,
        class,
        candidate,
        scorer,
        key_file,
    } = flags;
    // Resolved as the gate resolves it (`HEAD`, a short id), so that the
    // comment's candidate is the commit the gate decided.
    let summary = markdown.then(|| -> Result<ratchet_report::Summary> {
        Ok(ratchet_report::Summary {
            class,
            candidate: candidate.map(|c| ctx.commit(&c)).transpose()?,
        })
    });
    crate::cmd::store::report(
        ctx,
        &out,
        summary.transpose()?.as_ref(),
        scorer,
        key_file.as_deref(),
    )
}
