//! `ratchet`: the command line over ratchet's libraries. Each command
//! parses its flags, makes one library call (or a few, in order) and
//! formats the answer: every capability lives in a library crate, so the
//! Python package and a control plane get it too.
//!
//! Exit codes: one table, [`exit::TABLE`] (printed by `ratchet --help`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches};
use ratchet_trace::{CommitId, Store, StoreOptions, WriterKey};

/// `println!` that hands the write's error back instead of panicking: a
/// closed pipe (`ratchet log | head`) ends the command quietly through
/// `main`, which treats `BrokenPipe` as the reader having had enough.
macro_rules! outln {
    () => {
        std::io::Write::write_all(&mut std::io::stdout().lock(), b"\n")?
    };
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(
            &mut std::io::stdout().lock(),
            format_args!("{}\n", format_args!($($arg)*)),
        )?
    };
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!($($arg)*))?
    };
}

mod cmd;
mod exit;
mod flags;
mod out;

use flags::{Cli, Command};

/// The `--help` heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// What every command needs: where the store is, how to answer, how to
/// read commits.
#[derive(Debug)]
struct Ctx {
    store_dir: PathBuf,
    json: bool,
    allow_unknown: bool,
    server: Option<String>,
    token_file: Option<PathBuf>,
}

impl Ctx {
    /// The server client when `--server` was given (the files are then
    /// never opened).
    fn client(&self) -> Result<Option<ratchet_serve::Client>> {
        let Some(server) = &self.server else {
            return Ok(None);
        };
        let path = self
            .token_file
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--server needs --token-file (RATCHET_TOKEN_FILE)"))?;
        let token = std::fs::read_to_string(path)
            .with_context(|| format!("reading the token file {}", path.display()))?;
        Ok(Some(ratchet_serve::Client::new(
            ratchet_serve::Endpoint::parse(server),
            token,
        )))
    }

    /// Opens the store for writing (read-only when its file cannot be written).
    fn open(&self, key_file: Option<&Path>) -> Result<Store> {
        let (o, given) = options_and_key_id(key_file)?;
        same_key(Store::open(&self.store_dir, o)?, given)
    }

    /// Opens the store for reading only.
    fn open_read(&self, key_file: Option<&Path>) -> Result<Store> {
        let (o, given) = options_and_key_id(key_file)?;
        same_key(Store::open_read_only(&self.store_dir, o)?, given)
    }

    /// Opens the store and verifies it once: a ledger whose view is what
    /// every decision of the command reads (refused if the trace does not
    /// verify, or is keyed and no key was given).
    fn ledger(&self, key_file: Option<&Path>) -> Result<ratchet_trace::Ledger> {
        let store = self.open(key_file)?;
        Ok(ratchet_trace::Ledger::new(
            store,
            ratchet_trace::VerifyOptions::default(),
        )?)
    }

    /// [`Ctx::ledger`] on a store opened for reading only.
    fn ledger_read(&self, key_file: Option<&Path>) -> Result<ratchet_trace::Ledger> {
        let store = self.open_read(key_file)?;
        Ok(ratchet_trace::Ledger::new(
            store,
            ratchet_trace::VerifyOptions::default(),
        )?)
    }

    /// A commit as typed (revision or id), resolved in the enclosing git repository.
    fn commit(&self, rev: &str) -> Result<CommitId> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        Ok(ratchet_orchestrate::resolve_commit(
            &cwd,
            rev,
            self.allow_unknown,
        )?)
    }
}

/// The environment variable naming the writer key file when a command is
/// given no `--key-file` (a CI job keeps the key in a secret file and sets
/// it once).
const KEY_FILE_ENV: &str = "RATCHET_KEY_FILE";

/// `--key-file`, else the file `RATCHET_KEY_FILE` names (unset or empty:
/// none).
fn key_file_or_env(key_file: Option<&Path>) -> Option<PathBuf> {
    key_file.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(KEY_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// The store options carrying the writer key (`--key-file`, else
/// `RATCHET_KEY_FILE`), and that key's id.
fn options_and_key_id(key_file: Option<&Path>) -> Result<(StoreOptions, Option<String>)> {
    let mut options = StoreOptions::default();
    let mut id = None;
    if let Some(p) = key_file_or_env(key_file) {
        let key = WriterKey::read_file(&p)
            .with_context(|| format!("reading the writer key {}", p.display()))?;
        id = Some(key.id_hex());
        options = options.writer_key(key);
    }
    Ok((options, id))
}

/// A key of another store is said to be one before anything is read with
/// it: its MACs would not match, and the store would look altered when
/// only the key is wrong. (A store whose key record an attacker replaced
/// is refused here too; the hint says so.)
fn same_key(store: Store, given: Option<String>) -> Result<Store> {
    match (store.writer_key_id(), given) {
        (Some(expected), Some(given)) if expected != given => Err(ratchet_trace::Error::WrongKey {
            expected: expected.to_string(),
            given,
        }
        .into()),
        _ => Ok(store),
    }
}

fn main() -> ExitCode {
    let parsed = Cli::command()
        .after_help(format!(
            "{}\nEnvironment: RATCHET_KEY_FILE names the writer key file of a keyed store for every command given no --key-file.",
            exit::help()
        ))
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(both) => both,
        Err(e) => return usage_error(&e),
    };
    let name = matches.subcommand_name().unwrap_or_default().to_string();
    let json = cli.json;
    match run(cli, &name) {
        Ok(code) => ExitCode::from(code),
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let message = error_text(&e);
            let hint = hint(&e);
            if json {
                let doc = serde_json::json!({
                    "error": { "message": message, "hint": hint },
                    "exit_code": exit::ERROR,
                });
                // Nowhere left to say it if stdout is closed: the exit code says it.
                let _ = writeln!(std::io::stdout().lock(), "{doc:#}");
            } else {
                eprintln!("error: {message}");
                if let Some(h) = hint {
                    eprintln!("hint: {h}");
                }
            }
            ExitCode::from(exit::ERROR)
        }
    }
}

/// A command line clap refused: under `--json` (looked for in the raw
/// arguments, since they did not parse) the same error document as every
/// other error, with clap's usage line as the hint; clap's own words
/// otherwise. `--help` and `--version` print as clap prints them.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let json = std::env::args_os().skip(1).any(|a| a == "--json");
    if !json
        || matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        e.exit();
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines
        .next()
        .map_or("the command line did not parse", |l| {
            l.strip_prefix("error: ").unwrap_or(l)
        })
        .to_string();
    let rest: Vec<&str> = lines.collect();
    let hint = (!rest.is_empty()).then(|| rest.join("; "));
    let doc = serde_json::json!({
        "error": { "message": message, "hint": hint, "kind": "usage" },
        "exit_code": exit::ERROR,
    });
    let _ = writeln!(std::io::stdout().lock(), "{doc:#}");
    ExitCode::from(exit::ERROR)
}

/// The error and its causes, each said once. The walk follows the context
/// the CLI added down to the first error of a ratchet library and stops
/// there: by the house rule a library error's message is whole — a variant
/// wrapping another crate's error is `#[error(transparent)]`, and one that
/// names an I/O or SQLite failure says it in its own words.
fn error_text(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        parts.push(cause.to_string());
        if is_library_error(cause) {
            break;
        }
    }
    parts.join(": ")
}

/// The trace store's error `e` is or wraps (transparently, so not found by
/// walking `source()`).
fn trace_error_of<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a ratchet_trace::Error> {
    if let Some(t) = e.downcast_ref::<ratchet_trace::Error>() {
        return Some(t);
    }
    e.downcast_ref::<ratchet_orchestrate::Error>()
        .and_then(ratchet_orchestrate::Error::trace_error)
        .or_else(|| {
            e.downcast_ref::<ratchet_gate::Error>()
                .and_then(ratchet_gate::Error::trace_error)
        })
        .or_else(|| {
            e.downcast_ref::<ratchet_scorers::Error>()
                .and_then(ratchet_scorers::Error::trace_error)
        })
        .or_else(|| {
            e.downcast_ref::<ratchet_drift::Error>()
                .and_then(ratchet_drift::Error::trace_error)
        })
        .or_else(|| {
            e.downcast_ref::<ratchet_report::Error>()
                .and_then(ratchet_report::Error::trace_error)
        })
        .or_else(|| {
            e.downcast_ref::<ratchet_serve::Error>()
                .and_then(ratchet_serve::Error::trace_error)
        })
}

fn is_library_error(e: &(dyn std::error::Error + 'static)) -> bool {
    e.is::<ratchet_trace::Error>()
        || e.is::<ratchet_gate::Error>()
        || e.is::<ratchet_drift::Error>()
        || e.is::<ratchet_scorers::Error>()
        || e.is::<ratchet_orchestrate::Error>()
        || e.is::<ratchet_report::Error>()
        || e.is::<ratchet_serve::Error>()
}

/// What to type next: library errors speak in library terms; the flags
/// that fix them are the CLI's to name.
fn hint(e: &anyhow::Error) -> Option<&'static str> {
    use ratchet_trace::Error as T;
    e.chain().find_map(|c| {
        if let Some(t) = trace_error_of(c) {
            return match t {
                T::KeyRequired | T::MacsUnchecked { .. } => {
                    Some("pass the store's writer key with --key-file, or set RATCHET_KEY_FILE to its path")
                }
                T::WrongKey { .. } => Some(
                    "--key-file (or RATCHET_KEY_FILE) names a key of another store; if it is this store's key, the store's key record was replaced: treat the store as altered",
                ),
                T::CellKeyRequired { .. } => Some("pass the cells' writer key with --cell-key-file"),
                T::StoreMissing { .. } => {
                    Some("create one with `ratchet init`, or point --store (RATCHET_STORE) at it")
                }
                T::SchemaAltered { .. } | T::Tampered { .. } => {
                    Some("run `ratchet verify-chain` to see where, and restore the store from a trusted copy")
                }
                T::ReadOnly { .. } => Some("copy the store somewhere writable to write to it"),
                _ => None,
            };
        }
        if let Some(ratchet_orchestrate::Error::UnknownCommit { .. }) = c.downcast_ref() {
            return Some(
                "pass --allow-unknown-commit for a full id measured outside this repository",
            );
        }
        if let Some(ratchet_orchestrate::Error::NoDeployment { .. }) = c.downcast_ref() {
            return Some("pass --from SEQ, the seq after which its deployment began");
        }
        if let Some(ratchet_orchestrate::Error::SandboxUnavailable { .. }) = c.downcast_ref() {
            return Some("install bubblewrap (apt-get install bubblewrap), or use --sandbox process");
        }
        if let Some(ratchet_orchestrate::Error::DirtyWorkTree { .. }) = c.downcast_ref() {
            return Some("commit or stash the changes first");
        }
        if let Some(ratchet_orchestrate::Error::NoAlarm) = c.downcast_ref() {
            return Some("record alarms with `ratchet watch --record`");
        }
        None
    })
}

fn run(cli: Cli, name: &str) -> Result<u8> {
    let store_dir = match &cli.store {
        Some(d) => d.clone(),
        None => Store::discover(std::env::current_dir().context("reading the current directory")?),
    };
    let ctx = Ctx {
        store_dir,
        json: cli.json,
        allow_unknown: cli.allow_unknown_commit,
        server: cli.server.clone(),
        token_file: cli.token_file.clone(),
    };
    // `--server` (or RATCHET_SERVER) is a promise that the command speaks
    // to the server and touches no local file: a command that cannot is
    // refused rather than run on a local store the user did not mean.
    if ctx.server.is_some() && !speaks_to_a_server(&cli.command) {
        anyhow::bail!(
            "`ratchet {name}` does not speak to a server: drop --server (or unset RATCHET_SERVER) to run it on a local store; through a server: append, record-score, ingest, gate and status"
        );
    }
    // One line per command: its file under `cmd/` does the rest.
    match cli.command {
        Command::Init { keyed, key_file } => cmd::init::run(&ctx, keyed, key_file.as_deref()),
        Command::Append { key_file } => cmd::append::run(&ctx, key_file.as_deref()),
        Command::RecordScore(flags) => cmd::record_score::run(&ctx, flags),
        Command::Log(flags) => cmd::log::run(&ctx, flags),
        Command::Status(flags) => cmd::status::run(&ctx, flags),
        Command::Completions { shell } => cmd::completions::run(shell),
        Command::VerifyChain(flags) => cmd::verify_chain::run(&ctx, flags),
        Command::Checkpoint { out } => cmd::checkpoint::run(&ctx, out.as_deref()),
        Command::MergeCells(flags) => cmd::merge_cells::run(&ctx, flags),
        Command::Gate(flags) => cmd::gate::run(&ctx, flags),
        Command::Calibrate(flags) => cmd::calibrate::run(&ctx, flags),
        Command::Watch(flags) => cmd::watch::run(&ctx, flags),
        Command::Heal(flags) => cmd::heal::run(&ctx, flags),
        Command::Verify(flags) => cmd::verify::run(&ctx, flags),
        Command::Bench(flags) => cmd::bench::run(&ctx, flags),
        Command::Merge(flags) => cmd::merge::run(&ctx, flags),
        Command::Best(flags) => cmd::best::run(&ctx, flags),
        Command::Arl(flags) => cmd::arl::run(&ctx, flags),
        Command::Ingest(flags) => cmd::ingest::run(&ctx, flags),
        Command::Score { rubric, key_file } => cmd::score::run(&ctx, &rubric, key_file.as_deref()),
        Command::Export { parquet, key_file } => {
            cmd::export::run(&ctx, &parquet, key_file.as_deref())
        }
        Command::Rubric { what } => cmd::rubric::run(&ctx, what),
        Command::Policy { what } => cmd::policy::run(&ctx, what),
        Command::Serve(flags) => cmd::serve::run(&ctx, &flags),
        Command::Token { what } => cmd::token::run(&ctx, &what),
        Command::Report(flags) => cmd::report::run(&ctx, flags),
        Command::Demo(flags) => cmd::demo::run(&ctx, flags),
    }
}

/// The commands that go through `--server` when it is given.
fn speaks_to_a_server(command: &Command) -> bool {
    matches!(
        command,
        Command::Append { .. }
            | Command::RecordScore(_)
            | Command::Ingest(_)
            | Command::Gate(_)
            | Command::Status(_)
            | Command::Completions { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_error_behind_transparent_wrappers_still_gets_its_hint() {
        let wrapped = ratchet_orchestrate::Error::Scorers(ratchet_scorers::Error::Trace(
            ratchet_trace::Error::KeyRequired,
        ));
        let error = anyhow::Error::new(wrapped).context("reading the store");
        assert_eq!(
            hint(&error),
            Some(
                "pass the store's writer key with --key-file, or set RATCHET_KEY_FILE to its path"
            )
        );
        // Said once: the context, then the library's whole message.
        let text = error_text(&error);
        assert!(text.starts_with("reading the store: "), "{text}");
        let rest = text.trim_start_matches("reading the store: ");
        assert_eq!(rest, ratchet_trace::Error::KeyRequired.to_string());
    }
}
