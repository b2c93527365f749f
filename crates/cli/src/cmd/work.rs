//! Verify and merge: `verify`, `merge`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{Args, ValueEnum};
use ratchet_orchestrate::{
    BenchGate, BenchRound, BenchSide, BenchSpec, CommandReport, EnvPolicy, Evaluation, Limits,
    MergeOutcome, MergeRequest, NamespaceSandbox, ProcessSandbox, Sandbox, Source,
    VerificationReport, VerifySpec,
};

use crate::flags::{BenchFlags, MergeFlags, VerifyFlags};
use crate::{Ctx, exit, out};

/// Which sandbox runs the commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxKind {
    /// Processes of this user, each in its own process group with limits.
    Process,
    /// Linux namespaces through bubblewrap: no network, read-only system.
    Namespace,
}

/// The flags `verify` and `merge` share: what runs, where, under which
/// limits, and the gate on top.
#[derive(Debug, Args)]
pub struct RunFlags {
    /// A command, as its words: split the way a shell splits them but never
    /// run by a shell (write `sh -c '…'` to want one). Repeat for several;
    /// they run in order.
    #[arg(long = "cmd", value_name = "COMMAND", required = true)]
    pub cmds: Vec<String>,
    /// Run every command even after one fails.
    #[arg(long)]
    pub keep_going: bool,
    /// Where the commands run.
    #[arg(long, value_enum, default_value_t = SandboxKind::Process)]
    pub sandbox: SandboxKind,
    /// Seconds a command may take before its process group is killed.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Address space a command may use, in MiB (off by default).
    #[arg(long)]
    pub memory_mb: Option<u64>,
    /// An environment variable for the commands: `NAME` passes the caller's
    /// value through, `NAME=VALUE` sets it. The rest of the caller's
    /// environment is not passed (PATH, LANG, LC_ALL, TZ, TERM are).
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Policy file: the gate decides `--class` on what the commands wrote
    /// (default: policy.toml in the store directory, when --class is given).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Artifact class to decide (needs --baseline).
    #[arg(long, requires = "baseline")]
    pub class: Option<String>,
    /// The commit running now, to compare with (a git revision or full id).
    #[arg(long, requires = "class")]
    pub baseline: Option<String>,
    /// A JUnit XML file the commands write (relative to their directory),
    /// ingested for the gate's --class (required: without a decision to
    /// make, nothing would read it).
    #[arg(long, requires = "class")]
    pub junit: Vec<PathBuf>,
    /// The suite the --junit reports are recorded as (default: as each
    /// report names it): the name the class's required_suites asks for.
    #[arg(long, requires = "junit")]
    pub suite: Option<String>,
    /// A JSON Lines score file the commands write (relative to their
    /// directory), ingested for the gate's --class (required, as --junit).
    #[arg(long, requires = "class")]
    pub jsonl: Vec<PathBuf>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

impl RunFlags {
    fn spec(&self, ctx: &Ctx, candidate: Option<ratchet_trace::CommitId>) -> Result<VerifySpec> {
        let commands = self
            .cmds
            .iter()
            .map(|c| {
                shell_words::split(c).with_context(|| format!("--cmd {c:?}: unbalanced quotes"))
            })
            .collect::<Result<Vec<_>>>()?;
        let env = env_policy(&self.env);
        let evaluation = match (&self.class, &self.baseline) {
            (Some(class), Some(baseline)) => Some(Evaluation {
                policy: crate::cmd::gate::policy_file(ctx, self.policy.as_deref())?,
                class: class.clone(),
                baseline: ctx.commit(baseline)?,
                candidate,
                junit: self.junit.clone(),
                suite: self.suite.clone(),
                jsonl: self.jsonl.clone(),
            }),
            _ => None,
        };
        Ok(VerifySpec {
            commands,
            limits: Limits {
                timeout: Duration::from_secs(self.timeout),
                address_space_bytes: self.memory_mb.map(|m| m << 20),
                ..Limits::default()
            },
            env,
            keep_going: self.keep_going,
            evaluation,
        })
    }

    fn sandbox(&self) -> Result<Box<dyn Sandbox>> {
        self.sandbox.make()
    }
}

impl SandboxKind {
    fn make(self) -> Result<Box<dyn Sandbox>> {
        Ok(match self {
            SandboxKind::Process => Box::new(ProcessSandbox::new()),
            SandboxKind::Namespace => Box::new(NamespaceSandbox::new()?),
        })
    }
}

/// `--env` flags as the commands' environment: `NAME` inherited, `NAME=VALUE` set.
fn env_policy(flags: &[String]) -> EnvPolicy {
    let mut env = EnvPolicy::default();
    for e in flags {
        match e.split_once('=') {
            Some((k, v)) => {
                env.set.insert(k.to_string(), v.to_string());
            }
            None => env.inherit.push(e.clone()),
        }
    }
    env
}

pub fn verify(
    ctx: &Ctx,
    source: Option<&str>,
    candidate: Option<&str>,
    flags: &RunFlags,
) -> Result<u8> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let source_text = source.unwrap_or(".");
    let as_dir = cwd.join(source_text);
    let source = if as_dir.is_dir() {
        Source::Directory(&as_dir)
    } else {
        Source::Revision {
            repo: &cwd,
            rev: source_text,
        }
    };
    let candidate = candidate.map(|c| ctx.commit(c)).transpose()?;
    let spec = flags.spec(ctx, candidate)?;
    let mut sandbox = flags.sandbox()?;
    let mut store = ctx.open(flags.key_file.as_deref())?;
    let (report, receipt) =
        ratchet_orchestrate::verify(&mut store, sandbox.as_mut(), &source, &spec)?;
    if ctx.json {
        out::written(
            &store,
            std::slice::from_ref(&receipt),
            serde_json::json!({ "verification": report }),
        )?;
    } else {
        print_verification(&report)?;
        outln!("recorded as seq {}", receipt.seq);
    }
    Ok(report.status().exit_code())
}

fn print_command(c: &CommandReport) -> Result<()> {
    outln!(
        "  {} {}: {} in {:.0} ms (cpu {:.0} ms, peak {} KiB)",
        if c.passed { "ok  " } else { "FAIL" },
        shell_words::join(&c.argv),
        c.exit,
        c.wall_ms,
        c.cpu_ms,
        c.peak_rss_kib
    );
    if !c.passed {
        for (name, tail) in [("stdout", &c.stdout_tail), ("stderr", &c.stderr_tail)] {
            let lines: Vec<&str> = tail.lines().collect();
            for l in &lines[lines.len().saturating_sub(10)..] {
                outln!("      {name}| {l}");
            }
        }
    }
    Ok(())
}

fn print_verification(r: &VerificationReport) -> Result<()> {
    outln!(
        "{} in the {} sandbox: {} files, snapshot {}",
        r.source,
        r.backend,
        r.files,
        &r.snapshot[..16]
    );
    for c in &r.commands {
        print_command(c)?;
    }
    if let Some(e) = &r.evaluation {
        for f in &e.ingested {
            outln!(
                "  ingested {} ({}): {} test runs, {} scores{}",
                f.path.display(),
                f.format,
                f.test_runs,
                f.scores,
                f.note
                    .as_deref()
                    .map(|n| format!(" — {n}"))
                    .unwrap_or_default()
            );
        }
        crate::cmd::gate::print_verdict(
            &e.verdict,
            &ratchet_gate::shown::Scale::of_verdict(None, &e.verdict, None),
        )?;
    }
    outln!("{}", if r.passed { "PASSED" } else { "FAILED" });
    Ok(())
}

pub fn merge(
    ctx: &Ctx,
    repo: &Path,
    branches: &[String],
    into: &str,
    deploy: Option<&str>,
    flags: &RunFlags,
) -> Result<u8> {
    let mut request = MergeRequest::new(into, flags.spec(ctx, None)?);
    request.deploy = deploy
        .map(|d| shell_words::split(d).map_err(|_| anyhow!("--deploy {d:?}: unbalanced quotes")))
        .transpose()?;
    let mut sandbox = flags.sandbox()?;
    let mut store = ctx.open(flags.key_file.as_deref())?;
    let outcomes =
        ratchet_orchestrate::merge_all(repo, &mut store, sandbox.as_mut(), branches, &request)?;
    if ctx.json {
        out::json_in(
            store.id(),
            &serde_json::json!({ "into": into, "outcomes": outcomes }),
        )?;
    } else {
        for o in &outcomes {
            print_outcome(o)?;
        }
    }
    Ok(if outcomes.iter().all(MergeOutcome::succeeded) {
        0
    } else {
        exit::NEGATIVE
    })
}

fn print_outcome(o: &MergeOutcome) -> Result<()> {
    match o {
        MergeOutcome::Landed {
            branch,
            into,
            commit,
            attempts,
            verification,
            deploy,
            ..
        } => {
            outln!("{branch}: landed on {into} as {commit} (attempt {attempts})");
            for c in &verification.commands {
                print_command(c)?;
            }
            if let Some(d) = deploy {
                outln!("  deploy:");
                print_command(d)?;
            }
        }
        MergeOutcome::UpToDate { branch, into, .. } => {
            outln!("{branch}: {into} already contains it")
        }
        MergeOutcome::Conflict {
            branch,
            into,
            report,
        } => {
            outln!("{branch}: CONFLICT with {into}; nothing changed");
            for f in &report.files {
                outln!("  {}", f.path);
                for h in &f.hunks {
                    for l in h.lines() {
                        outln!("    {l}");
                    }
                }
            }
        }
        MergeOutcome::SemanticConflict {
            branch,
            into,
            commit,
            verification,
        } => {
            outln!(
                "{branch}: SEMANTIC CONFLICT — merges cleanly into {into} but the merge {commit} fails verification; nothing landed"
            );
            for c in &verification.commands {
                print_command(c)?;
            }
        }
        MergeOutcome::Refused { branch, reason, .. } => outln!("{branch}: REFUSED — {reason}"),
    }
    Ok(())
}

/// `ratchet verify`: the flags checked and turned into the library's terms, then run.
pub fn verify_command(ctx: &Ctx, flags: VerifyFlags) -> Result<u8> {
    let VerifyFlags {
        source,
        candidate,
        run,
    } = flags;
    crate::cmd::work::verify(ctx, source.as_deref(), candidate.as_deref(), &run)
}

/// `ratchet merge`: the flags checked and turned into the library's terms, then run.
pub fn merge_command(ctx: &Ctx, flags: MergeFlags) -> Result<u8> {
    let MergeFlags {
        branches,
        into,
        repo,
        deploy,
        run,
    } = flags;
    crate::cmd::work::merge(ctx, &repo, &branches, &into, deploy.as_deref(), &run)
}

/// `ratchet bench`: both revisions resolved, the commands split, the policy
/// read; then [`ratchet_orchestrate::bench_with`], each round printed as it ends.
pub fn bench_command(ctx: &Ctx, flags: BenchFlags) -> Result<u8> {
    let split = |flag: &str, c: &str| {
        shell_words::split(c).with_context(|| format!("{flag} {c:?}: unbalanced quotes"))
    };
    let repo = std::env::current_dir().context("reading the current directory")?;
    let gate = match &flags.class {
        Some(class) => Some(BenchGate {
            class: class.clone(),
            policy: crate::cmd::gate::policy_file(ctx, flags.policy.as_deref())?,
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
            crate::cmd::gate::print_verdict(
                v,
                &ratchet_gate::shown::Scale::of_verdict(None, v, None),
            )?;
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
            let mut s = format!(" -> {}", v.outcome.status().as_str());
            if let Some(rows) = bench_rows(v) {
                s.push_str(&format!(" ({rows})"));
            }
            s
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
