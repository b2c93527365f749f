//! `ratchet bench`: baseline and candidate built and benchmarked in
//! alternating rounds (ABBA), every run recorded; with `--class`, stopped
//! as soon as the gate decides.

use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use ratchet_orchestrate::{BenchGate, BenchRound, BenchSide, BenchSpec, Limits};

use crate::cmd::shared::policy_file::policy_file;
use crate::cmd::shared::sandbox::{env_policy, print_command};
use crate::cmd::shared::verdict::print_verdict;
use crate::flags::BenchFlags;
use crate::{Ctx, out};

/// Both revisions resolved, the commands split, the policy
/// read; then [`ratchet_orchestrate::bench_with`], each round printed as it ends.
pub fn run(ctx: &Ctx, flags: BenchFlags) -> Result<u8> {
    let split = |flag: &str, c: &str| {
        shell_words::split(c).with_context(|| format!("{flag} {c:?}: unbalanced quotes"))
    };
    let repo = std::env::current_dir().context("reading the current directory")?;
    let gate = match &flags.class {
        Some(class) => Some(BenchGate {
            class: class.clone(),
            policy: policy_file(ctx, flags.policy.as_deref())?,
        }),
        None => None,
    };
    let max_time = match flags.max_seconds {
        Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => return Err(anyhow!("--max-seconds {s}: not a number of seconds")),
        None => None,
    };
    let spec = BenchSpec {
        repo,
        baseline: ctx.commit(&flags.baseline)?,
        candidate: ctx.commit(&flags.candidate)?,
        build: split("--build", &flags.build)?,
        cmd: split("--cmd", &flags.cmd)?,
        out: flags.out.clone(),
        format: flags.format,
        gate,
        rounds: flags.rounds,
        max_time,
        limits: Limits {
            timeout: Duration::from_secs(flags.timeout),
            ..Limits::default()
        },
        env: env_policy(&flags.env),
    };
    let (mut a, mut b) = (flags.sandbox.make()?, flags.sandbox.make()?);
    let mut store = ctx.open(flags.key_file.as_deref())?;
    let json = ctx.json;
    let mut progress = |r: &BenchRound| {
        if !json {
            let _ = print_round(r);
        }
    };
    let report = ratchet_orchestrate::bench_with(
        &mut store,
        [a.as_mut(), b.as_mut()],
        &spec,
        &mut progress,
    )?;
    if json {
        out::json_in(store.id(), &serde_json::json!({ "bench": report }))?;
    } else {
        for b in &report.builds {
            if !b.command.passed {
                outln!("build ({}):", side_name(b.side));
                print_command(&b.command)?;
            }
        }
        if let Some(f) = &report.failure {
            for r in report.rounds.last().iter().flat_map(|r| &r.runs) {
                if !r.command.passed {
                    print_command(&r.command)?;
                }
            }
            outln!("FAILED: {f}");
        }
        if let Some(v) = &report.verdict {
            print_verdict(v, &ratchet_gate::shown::Scale::of_verdict(None, v, None))?;
            if let Some(seq) = report.decision_seq {
                outln!("recorded as seq {seq}");
            }
        }
    }
    Ok(report.status().exit_code())
}

fn side_name(side: BenchSide) -> &'static str {
    match side {
        BenchSide::Baseline => "baseline",
        BenchSide::Candidate => "candidate",
    }
}

fn print_round(r: &BenchRound) -> Result<()> {
    let runs: Vec<String> = r
        .runs
        .iter()
        .map(|run| {
            format!(
                "{} {:.0} ms ({} benchmark(s))",
                side_name(run.side),
                run.command.wall_ms,
                run.samples
            )
        })
        .collect();
    let verdict = match &r.verdict {
        None => String::new(),
        Some(v) => {
            let mut line = format!(" -> {}", v.outcome.status().as_str());
            if let Some(rows) = bench_rows(v) {
                line.push_str(&format!(" ({rows})"));
            }
            line
        }
    };
    let only = match &r.only {
        Some(names) => format!(" [only the {} undecided]", names.len()),
        None => String::new(),
    };
    outln!("round {}{only}: {}{verdict}", r.round, runs.join(", then "));
    Ok(())
}

/// Each benchmark's verdict, as `name: verdict`.
fn bench_rows(v: &ratchet_gate::Verdict) -> Option<String> {
    v.stages.iter().find_map(|s| match &s.details {
        ratchet_gate::StageDetails::Benchmarks(d) => Some(
            d.benchmarks
                .iter()
                .map(|b| format!("{}: {}", b.label(), b.verdict.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    })
}
