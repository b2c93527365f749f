//! Sockets: a Unix socket (mode 0600) and optionally a loopback TCP port,
//! HTTP/1.1 through hyper with a header-read timeout, and a graceful end:
//! on shutdown no new connection is taken and the ones in flight finish
//! (for at most `grace`). Every write the server acknowledged is a
//! committed SQLite transaction, so even an abrupt end loses nothing
//! acknowledged.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Error, Owner, Result};

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A Unix socket at this path (made mode 0600; a stale one is replaced,
    /// a live one refused).
    Unix(PathBuf),
    /// A TCP address; only loopback addresses are accepted.
    Tcp(SocketAddr),
}

enum Bound {
    Unix(tokio::net::UnixListener, PathBuf),
    Tcp(tokio::net::TcpListener),
}

/// Serves `owner` on every address of `listen` until `shutdown` completes,
/// then lets requests in flight finish for at most `grace`. `ready` is
/// called once every socket is bound (with the TCP addresses as bound,
/// port 0 resolved).
///
/// # Errors
/// [`Error::Io`] if a socket cannot be bound; [`Error::BadRequest`] for a
/// TCP address that is not loopback or a Unix socket path that is live.
pub async fn serve(
    owner: Arc<Owner>,
    listen: &[Listen],
    grace: Duration,
    ready: impl FnOnce(&[SocketAddr]),
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    // Every address checked before any is bound: a refused one leaves no
    // socket file behind.
    for l in listen {
        if let Listen::Tcp(addr) = l
            && !addr.ip().is_loopback()
        {
            return Err(Error::BadRequest(format!(
                "{addr} is not a loopback address: the server speaks plain HTTP, so it listens on 127.0.0.1 or ::1 only (put a TLS proxy in front for anything else)"
            )));
        }
    }
    let mut bound = Vec::new();
    let mut tcp_addrs = Vec::new();
    for l in listen {
        match l {
            Listen::Unix(path) => bound.push(Bound::Unix(bind_unix(path)?, path.clone())),
            Listen::Tcp(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|source| Error::Io {
                        what: format!("binding {addr}"),
                        source,
                    })?;
                tcp_addrs.push(listener.local_addr().map_err(|source| Error::Io {
                    what: "reading the bound address".into(),
                    source,
                })?);
                bound.push(Bound::Tcp(listener));
            }
        }
    }
    ready(&tcp_addrs);
    let app = crate::api::router(owner.clone());
    let graceful = GracefulShutdown::new();
    let header_timeout = owner.options.header_timeout;
    tokio::pin!(shutdown);
    // A connection is accepted only with a permit, held until it closes:
    // past `max_connections` the next client waits in the backlog rather
    // than costing the server memory.
    let permits = Arc::new(tokio::sync::Semaphore::new(
        owner.options.max_connections.max(1),
    ));
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<(Box<dyn Conn>, tokio::sync::OwnedSemaphorePermit)>(1);
    let mut accepters = tokio::task::JoinSet::new();
    let mut unix_paths = Vec::new();
    for b in bound {
        let tx = tx.clone();
        match b {
            Bound::Unix(l, path) => {
                unix_paths.push(path);
                let permits = permits.clone();
                accepters.spawn(async move {
                    loop {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            break;
                        };
                        match l.accept().await {
                            Ok((s, _)) => {
                                if tx.send((Box::new(s), permit)).await.is_err() {
                                    break;
                                }
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "accepting on the unix socket");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                });
            }
            Bound::Tcp(l) => {
                let permits = permits.clone();
                accepters.spawn(async move {
                    loop {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            break;
                        };
                        match l.accept().await {
                            Ok((s, _)) => {
                                let _ = s.set_nodelay(true);
                                if tx.send((Box::new(s), permit)).await.is_err() {
                                    break;
                                }
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "accepting on tcp");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                });
            }
        }
    }
    drop(tx);
    // The whole file verified again now and then, off the request path.
    let reverifier = owner.options.reverify_every.map(|every| {
        let owner = owner.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is at once; the verification at start covered it.
            tick.tick().await;
            loop {
                tick.tick().await;
                let shared_owner = owner.clone();
                match tokio::task::spawn_blocking(move || shared_owner.reverify()).await {
                    Ok(Ok(h)) => tracing::debug!(runs = h.runs, fault = ?h.fault, "re-verified"),
                    Ok(Err(e)) => tracing::warn!(error = %e, "re-verification failed to run"),
                    Err(e) => tracing::warn!(error = %e, "re-verification task failed"),
                }
            }
        })
    });
    loop {
        tokio::select! {
            conn = rx.recv() => {
                let Some((conn, permit)) = conn else { break };
                let service = TowerToHyperService::new(app.clone());
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(TokioIo::new(conn), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(e) = watched.await {
                        tracing::debug!(error = %e, "connection ended");
                    }
                    drop(permit);
                });
            }
            () = &mut shutdown => break,
        }
    }
    accepters.abort_all();
    if let Some(r) = reverifier {
        r.abort();
    }
    tracing::info!("shutting down: finishing requests in flight");
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the grace period; ending");
    }
    for p in unix_paths {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Conn for T {}

fn bind_unix(path: &std::path::Path) -> Result<tokio::net::UnixListener> {
    if path.exists() {
        // A socket nobody answers on is left from a server that died; one
        // that answers belongs to a live server, which keeps it.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(Error::BadRequest(format!(
                "{} is the socket of a running server",
                path.display()
            )));
        }
        std::fs::remove_file(path).map_err(|source| Error::Io {
            what: format!("removing the stale socket {}", path.display()),
            source,
        })?;
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(|source| Error::Io {
        what: format!("binding {}", path.display()),
        source,
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        Error::Io {
            what: format!("making {} private (0600)", path.display()),
            source,
        }
    })?;
    Ok(listener)
}
