//! `ratchet serve`: the store's owner on a socket, for the holders of the
//! tokens `ratchet token` mints.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use ratchet_serve::{Listen, ServeOptions};

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

/// Serves until SIGTERM or SIGINT, one line said when every socket is bound.
pub fn run(ctx: &Ctx, a: &ServeArgs) -> Result<u8> {
    let store = ctx.open(a.key_file.as_deref())?;
    let socket = a.socket.clone().unwrap_or_else(|| {
        let mut path = out::absolute(store.dir()).into_os_string();
        path.push(".sock");
        PathBuf::from(path)
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
            let interval = parse_duration_of("--reverify-every", every)?;
            if interval.is_zero() {
                anyhow::bail!("--reverify-every {every:?}: give a positive interval, or off");
            }
            Some(interval)
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

/// `90s`, `30m`, `12h`, `7d` (and `500ms`) as a duration, read by the
/// server's own reader ([`ratchet_serve::parse_duration`], which the mint
/// route's `expires` goes through too); `flag` names the flag in an error.
fn parse_duration_of(flag: &str, text: &str) -> Result<Duration> {
    ratchet_serve::parse_duration(text).map_err(|e| anyhow!("{flag} {e}"))
}
