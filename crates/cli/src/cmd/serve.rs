//! `serve` and `token`: the store's owner on a socket, and the capability
//! tokens its clients hold.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use ratchet_serve::{Listen, Scope, ServeOptions, TokenSpec};

use crate::{Ctx, out};

/// `ratchet serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The Unix socket to listen on (made mode 0600; default: the store
    /// directory's path with `.sock` appended, beside it).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Also listen on this loopback TCP address (e.g. 127.0.0.1:8787; port
    /// 0 picks one, printed when ready).
    #[arg(long)]
    tcp: Option<std::net::SocketAddr>,
    /// Writer key file (keyed stores): the server MACs every event; clients never see it.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// The largest request body, in MiB (413 above it).
    #[arg(long, default_value_t = 16)]
    max_body_mb: usize,
    /// Requests per second each token may make on average (429 beyond it).
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Requests each token may make in a burst.
    #[arg(long, default_value_t = 400.0)]
    burst: f64,
    /// Seconds a request may take, its upload included (408 beyond it).
    #[arg(long, default_value_t = 30)]
    request_timeout: u64,
    /// A checkpoint held elsewhere (`ratchet checkpoint --out`): the trace
    /// must hold its events at start (else the server does not start) and
    /// at every re-verification (else decisions and writes stop).
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// How often the whole file is verified again in the background
    /// (`10m`, `1h`, `30s`; `off` never). A fault — an edited byte, a
    /// rollback or truncation under the server, a checkpoint no longer
    /// held — stops decisions and writes until restart; `GET /v1/status`
    /// shows it under `reverification`.
    #[arg(long, default_value = "10m")]
    reverify_every: String,
}

/// `ratchet token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint a token; it is printed once and stored only as a hash.
    Mint(MintFlags),
    /// Revoke a token by id: refused from the next request on.
    Revoke {
        /// The token's id (the part after `rtk_`, before the second `_`).
        id: String,
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// List the tokens minted for this store (never their secrets).
    List {
        /// Writer key file (keyed stores).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

/// The flags of `ratchet token mint`.
#[derive(Debug, Args)]
pub struct MintFlags {
    /// What it may do (repeat): record, decide, read, admin.
    #[arg(long = "can", required = true)]
    pub can: Vec<String>,
    /// The session its events are recorded under.
    #[arg(long)]
    pub session: String,
    /// The cell (fleet member, CI job) it speaks for.
    #[arg(long)]
    pub cell: Option<String>,
    /// How long it lives: `90s`, `30m`, `12h`, `7d` (default: until revoked).
    #[arg(long)]
    pub expires: Option<String>,
    /// Events it may store in all (record tokens; default 1000000). A
    /// request past any quota stores nothing and is answered 429 over_quota.
    #[arg(long)]
    pub max_events: Option<u64>,
    /// Bytes it may send to be stored in all: event lines and uploads as
    /// sent (default 1073741824, 1 GiB).
    #[arg(long)]
    pub max_bytes: Option<u64>,
    /// Events it may store in any hour (default 100000).
    #[arg(long)]
    pub events_per_hour: Option<u64>,
    /// Bytes it may send in any hour (default 67108864, 64 MiB).
    #[arg(long)]
    pub bytes_per_hour: Option<u64>,
    /// Write the token to this file (mode 0600) instead of printing it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Writer key file (keyed stores).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
}

pub fn serve(ctx: &Ctx, a: &ServeArgs) -> Result<u8> {
    let store = ctx.open(a.key_file.as_deref())?;
    let socket = a.socket.clone().unwrap_or_else(|| {
        let mut p = out::absolute(store.dir()).into_os_string();
        p.push(".sock");
        PathBuf::from(p)
    });
    let checkpoint = a
        .checkpoint
        .as_deref()
        .map(|p| {
            ratchet_trace::Checkpoint::read(p)
                .with_context(|| format!("checkpoint {}", p.display()))
        })
        .transpose()?;
    let reverify_every = match a.reverify_every.trim() {
        "off" | "never" => None,
        every => {
            let d = parse_duration_of("--reverify-every", every)?;
            if d.is_zero() {
                anyhow::bail!("--reverify-every {every:?}: give a positive interval, or off");
            }
            Some(d)
        }
    };
    let options = ServeOptions {
        checkpoint,
        reverify_every,
        max_body_bytes: a.max_body_mb.saturating_mul(1 << 20),
        rate_per_second: a.rate,
        burst: a.burst,
        request_timeout: Duration::from_secs(a.request_timeout),
        ..ServeOptions::default()
    };
    let store_id = store.id().to_string();
    let owner = Arc::new(ratchet_serve::Owner::new(store, options)?);
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
    let mut listen = vec![Listen::Unix(socket.clone())];
    if let Some(t) = a.tcp {
        listen.push(Listen::Tcp(t));
    }
    // Few blocking threads: each thread that allocates under contention
    // gets a malloc arena of its own that keeps what it once held, so a
    // burst of parses on many threads would leave the server holding
    // several times what the parse permits bound (measured: 64 concurrent
    // 4 MB uploads, peak 465 MB on the default pool, see the README).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let json = ctx.json;
    let socket_shown = out::absolute(&socket);
    runtime.block_on(ratchet_serve::serve(
        owner,
        &listen,
        Duration::from_secs(10),
        |tcp| {
            // One line when every socket is bound: what a supervisor (or a
            // test) waits for before it connects.
            let line = if json {
                serde_json::json!({
                    "store_id": store_id, "socket": socket_shown, "tcp": tcp,
                })
                .to_string()
            } else {
                let tcp: Vec<String> = tcp.iter().map(|a| format!(" tcp:{a}")).collect();
                format!(
                    "serving store {store_id} on unix:{}{}",
                    socket_shown.display(),
                    tcp.concat()
                )
            };
            // A supervisor that closed our stdout does not stop the server.
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        },
        shutdown_signal(),
    ))?;
    Ok(0)
}

/// SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // Without signal handlers the server runs until killed.
        _ => std::future::pending::<()>().await,
    }
}

pub fn token(ctx: &Ctx, what: &TokenCommand) -> Result<u8> {
    match what {
        TokenCommand::Mint(flags) => mint(ctx, flags),
        TokenCommand::Revoke { id, key_file } => {
            let mut store = ctx.open(key_file.as_deref())?;
            let receipt = ratchet_serve::revoke_token(&mut store, id)?;
            if ctx.json {
                out::written(&store, &[receipt], serde_json::json!({ "revoked": id }))?;
            } else {
                outln!("revoked token {id} (seq {})", receipt.seq);
            }
            Ok(0)
        }
        TokenCommand::List { key_file } => {
            let store = ctx.open_read(key_file.as_deref())?;
            let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
            let tokens: Vec<_> = ratchet_serve::tokens_in(&view)?.into_values().collect();
            if ctx.json {
                out::json_in(store.id(), &serde_json::json!({ "tokens": tokens }))?;
            } else {
                for t in &tokens {
                    let can: Vec<&str> = t.spec.can.iter().map(|s| s.as_str()).collect();
                    outln!(
                        "{}  {:<24} {:<20} {}",
                        t.id,
                        can.join(","),
                        t.spec.session,
                        if t.revoked_seq.is_some() {
                            "revoked"
                        } else if t.live(ratchet_serve::now_ms()) {
                            "live"
                        } else {
                            "expired"
                        }
                    );
                }
            }
            Ok(0)
        }
    }
}

/// `ratchet token mint`: the scopes and lifetime read, the token minted
/// into the store, its secret printed once or written to a 0600 file.
fn mint(ctx: &Ctx, flags: &MintFlags) -> Result<u8> {
    let MintFlags {
        can,
        session,
        cell,
        expires,
        max_events,
        max_bytes,
        events_per_hour,
        bytes_per_hour,
        out: out_file,
        key_file,
    } = flags;
    let can = can
        .iter()
        .map(|c| c.parse::<Scope>())
        .collect::<Result<Vec<_>, _>>()?;
    let expires_at_ms = expires
        .as_deref()
        .map(|e| ratchet_serve::expires_in(e).map_err(|e| anyhow!("--expires {e}")))
        .transpose()?;
    let spec = TokenSpec {
        can,
        session: session.clone(),
        cell: cell.clone(),
        expires_at_ms,
        quota: ratchet_serve::Quota {
            max_events: max_events.unwrap_or(ratchet_serve::Quota::DEFAULT.max_events),
            max_bytes: max_bytes.unwrap_or(ratchet_serve::Quota::DEFAULT.max_bytes),
            events_per_hour: events_per_hour
                .unwrap_or(ratchet_serve::Quota::DEFAULT.events_per_hour),
            bytes_per_hour: bytes_per_hour.unwrap_or(ratchet_serve::Quota::DEFAULT.bytes_per_hour),
        },
    };
    let mut store = ctx.open(key_file.as_deref())?;
    let minted = ratchet_serve::mint_token(&mut store, &spec)?;
    if let Some(p) = out_file {
        write_private(p, &minted.token)?;
    }
    if ctx.json {
        out::written(
            &store,
            &[minted.receipt],
            serde_json::json!({
                "id": minted.id,
                "token": out_file.is_none().then_some(&minted.token),
                "token_file": out_file.as_deref().map(out::absolute),
                "spec": spec,
            }),
        )?;
    } else if let Some(p) = out_file {
        outln!("minted token {} into {}", minted.id, p.display());
    } else {
        outln!("{}", minted.token);
    }
    Ok(0)
}

/// `90s`, `30m`, `12h`, `7d` (and `500ms`) as a duration, read by the
/// server's own reader ([`ratchet_serve::parse_duration`], which the mint
/// route's `expires` goes through too); `flag` names the flag in an error.
fn parse_duration_of(flag: &str, text: &str) -> Result<Duration> {
    ratchet_serve::parse_duration(text).map_err(|e| anyhow!("{flag} {e}"))
}

/// Writes a secret to a new file only its owner can read.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| {
            format!(
                "creating {} (a token file is never overwritten)",
                path.display()
            )
        })?;
    writeln!(f, "{text}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Prints a server's answer as the command's document (under `--json`) or
/// in a line of words.
fn answer(
    ctx: &Ctx,
    doc: &serde_json::Value,
    words: impl FnOnce(&serde_json::Value) -> String,
) -> Result<()> {
    if ctx.json {
        out::json(doc)
    } else {
        outln!("{}", words(doc));
        Ok(())
    }
}

fn receipts_in_words(doc: &serde_json::Value) -> String {
    let receipts = doc["receipts"].as_array().map_or(&[][..], Vec::as_slice);
    match (receipts.first(), receipts.last()) {
        (Some(a), Some(b)) => format!(
            "recorded {} event(s) by the server: seq {}..={}",
            receipts.len(),
            a["seq"],
            b["seq"]
        ),
        _ => "already recorded: nothing stored twice".to_string(),
    }
}

/// `append --server`: the lines on stdin, recorded once by the server.
pub fn append_remote(ctx: &Ctx, client: &ratchet_serve::Client) -> Result<u8> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut text)
        .context("reading stdin (JSON Lines, UTF-8)")?;
    let doc = client.record_events(&text)?;
    answer(ctx, &doc, receipts_in_words)?;
    Ok(0)
}

/// `record-score --server`: one score line, ingested by the server.
pub fn record_score_remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    score: &ratchet_trace::Score,
    direction: Option<ratchet_scorers::Direction>,
) -> Result<u8> {
    let mut line = serde_json::json!({
        "task": score.task, "scorer": score.scorer, "value": score.value,
        "commit": score.commit.as_str(), "holdout": score.holdout,
    });
    if !score.scorer_version.is_empty() {
        line["scorer_version"] = score.scorer_version.clone().into();
    }
    if let Some(c) = score.cost {
        line["cost"] = c.into();
    }
    if let Some(l) = score.latency_ms {
        line["latency_ms"] = l.into();
    }
    if let Some(d) = direction {
        line["direction"] = match d {
            ratchet_scorers::Direction::HigherIsBetter => "higher",
            ratchet_scorers::Direction::LowerIsBetter => "lower",
        }
        .into();
    }
    let doc = client.ingest("jsonl", &[], format!("{line}\n").as_bytes())?;
    answer(ctx, &doc, receipts_in_words)?;
    Ok(0)
}

/// `ingest --server`: each file uploaded and ingested by the server (one
/// transaction per file; a directory is for local ingestion only).
pub fn ingest_remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    format: ratchet_scorers::Format,
    paths: &[PathBuf],
    options: &ratchet_scorers::IngestOptions,
) -> Result<u8> {
    if !options.directions.is_empty() {
        // The server's query takes one direction for every metric; sending
        // only that one would record the named metrics the wrong way.
        anyhow::bail!(
            "--direction NAME=higher|lower is not sent to a server (its ingest takes one direction for every metric): ingest locally with --store, or give one --direction higher|lower"
        );
    }
    let mut docs = Vec::new();
    for path in paths {
        if path.is_dir() {
            anyhow::bail!(
                "{}: a directory; with --server, name its files (each is uploaded and ingested on its own)",
                path.display()
            );
        }
        let body = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("upload");
        let commit = options.commit.as_ref().map(|c| c.as_str().to_string());
        let direction = options.direction.map(|d| match d {
            ratchet_scorers::Direction::HigherIsBetter => "higher",
            ratchet_scorers::Direction::LowerIsBetter => "lower",
        });
        let mut query: Vec<(&str, &str)> = vec![("name", name)];
        if let Some(c) = &commit {
            query.push(("commit", c));
        }
        if let Some(s) = &options.suite {
            query.push(("suite", s));
        }
        if let Some(d) = direction {
            query.push(("direction", d));
        }
        if !options.runner_label.is_empty() {
            query.push(("label", &options.runner_label));
        }
        if let Some(r) = &options.runner {
            query.push(("runner", r));
        }
        let doc = client.ingest(format.name(), &query, &body)?;
        if let Some(here) = doc["ingest"]["runner_from_here"].as_str() {
            crate::cmd::ingest::runner_from_here(format, &format!("{here}, the server's"));
        }
        docs.push(doc);
    }
    if ctx.json {
        let receipts: Vec<serde_json::Value> = docs
            .iter()
            .flat_map(|d| d["receipts"].as_array().cloned().unwrap_or_default())
            .collect();
        out::json(&serde_json::json!({
            "store_id": docs.first().map(|d| d["store_id"].clone()),
            "receipts": receipts,
            "ingest": docs.iter().map(|d| d["ingest"].clone()).collect::<Vec<_>>(),
        }))?;
    } else {
        for (p, d) in paths.iter().zip(&docs) {
            outln!(
                "{}: {} test run(s), {} score(s) recorded by the server",
                p.display(),
                d["ingest"]["test_runs"],
                d["ingest"]["scores"]
            );
        }
    }
    Ok(0)
}

/// `gate --server`: the server decides under the class's pinned policy and
/// records the verdict; the exit code is the verdict's, as locally.
pub fn gate_remote(
    ctx: &Ctx,
    client: &ratchet_serve::Client,
    class: &str,
    baseline: &ratchet_trace::CommitId,
    candidate: &ratchet_trace::CommitId,
    dry_run: bool,
) -> Result<u8> {
    let doc = client.post_json(
        "/v1/decide",
        &serde_json::json!({
            "class": class, "baseline": baseline.as_str(), "candidate": candidate.as_str(),
            "dry_run": dry_run,
        }),
    )?;
    let status: ratchet_gate::GateStatus = serde_json::from_value(doc["status"].clone())
        .map_err(|e| anyhow!("the server's verdict has no status: {e}"))?;
    // The answer is the verdict with the server's additions beside it:
    // without them it reads back as the verdict, printed as a local gate
    // prints one (stages, commits, figures), not as one word.
    if !ctx.json {
        let mut verdict = doc.clone();
        if let Some(fields) = verdict.as_object_mut() {
            for added in ["status", "words", "exit_code", "decision", "store_id"] {
                fields.remove(added);
            }
        }
        let parsed = serde_json::to_vec(&verdict)
            .ok()
            .and_then(|bytes| ratchet_gate::Verdict::from_json(&bytes).ok());
        if let Some(v) = parsed {
            crate::cmd::gate::print_verdict(
                &v,
                &ratchet_gate::shown::Scale::of_verdict(None, &v, None),
            )?;
            if let Some(seq) = doc["decision"]["seq"].as_u64() {
                outln!("recorded by the server as seq {seq}");
            }
            return Ok(status.exit_code());
        }
    }
    answer(ctx, &doc, |d| {
        format!(
            "{}: {}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_uppercase))
                .unwrap_or_default(),
            d["outcome"]["reason"]
                .as_str()
                .or_else(|| d["reason"].as_str())
                .unwrap_or("")
        )
    })?;
    Ok(status.exit_code())
}

/// `status --server`.
pub fn status_remote(ctx: &Ctx, client: &ratchet_serve::Client) -> Result<u8> {
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
        crate::cmd::store::write_deployed(&mut text, &deployed, None)?;
        outln!("{}", String::from_utf8_lossy(&text).trim_end());
    }
    Ok(0)
}
