//! What runs commands, and how (`verify`, `merge`, `bench`): the sandbox,
//! the flags `verify` and `merge` share, and a command's report in words.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use ratchet_orchestrate::checks::{CheckSpec, Evaluation};
use ratchet_orchestrate::sandbox::{
    CommandReport, EnvPolicy, Limits, NamespaceSandbox, ProcessSandbox, Sandbox,
};

use crate::Ctx;
use crate::cmd::shared::policy_file::policy_file;

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
    pub fn spec(&self, ctx: &Ctx, candidate: Option<ratchet_trace::CommitId>) -> Result<CheckSpec> {
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
                policy: policy_file(ctx, self.policy.as_deref())?,
                class: class.clone(),
                baseline: ctx.commit(baseline)?,
                candidate,
                junit: self.junit.clone(),
                suite: self.suite.clone(),
                jsonl: self.jsonl.clone(),
            }),
            _ => None,
        };
        Ok(CheckSpec {
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

    pub fn sandbox(&self) -> Result<Box<dyn Sandbox>> {
        self.sandbox.make()
    }
}

impl SandboxKind {
    pub fn make(self) -> Result<Box<dyn Sandbox>> {
        Ok(match self {
            SandboxKind::Process => Box::new(ProcessSandbox::new()),
            SandboxKind::Namespace => Box::new(NamespaceSandbox::new()?),
        })
    }
}

/// `--env` flags as the commands' environment: `NAME` inherited, `NAME=VALUE` set.
pub fn env_policy(flags: &[String]) -> EnvPolicy {
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

/// One command's run in a line (and, when it failed, the last ten lines
/// of each of its outputs).
pub fn print_command(c: &CommandReport) -> Result<()> {
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
