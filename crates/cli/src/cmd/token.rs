//! `ratchet token mint|revoke|list`: the capability tokens `ratchet serve`
//! checks.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use ratchet_serve::{Scope, TokenSpec};

use crate::{Ctx, out};

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

/// `ratchet token …`: mint, revoke or list.
pub fn run(ctx: &Ctx, what: &TokenCommand) -> Result<u8> {
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

/// Writes a secret to a new file only its owner can read.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
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
    writeln!(file, "{text}").with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
