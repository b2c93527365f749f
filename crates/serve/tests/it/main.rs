//! The server as its clients meet it: a real Unix socket, a real store,
//! hostile requests. One integration binary; each module pins one promise.

mod authorship;
mod hostile;
mod load;
mod scopes;
mod unauthenticated;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ratchet_serve::{
    Client, Endpoint, Listen, Owner, Quota, Scope, ServeOptions, TokenSpec, mint_token,
};
use ratchet_trace::{Store, StoreOptions, WriterKey};

pub const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
pub const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A server on a temporary store, in this process, and a token per role.
#[allow(missing_debug_implementations)]
pub struct Server {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub store_dir: PathBuf,
    pub key_file: Option<PathBuf>,
    /// record (session cell-1), decide+read, read, admin.
    pub record: String,
    pub decide: String,
    pub read: String,
    pub admin: String,
    /// The record token's id.
    pub record_id: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(options: ServeOptions) -> Server {
        Server::start_with(options, false, Quota::DEFAULT)
    }

    pub fn start_keyed(options: ServeOptions) -> Server {
        Server::start_with(options, true, Quota::DEFAULT)
    }

    /// A server whose record token may store as much as a load test sends
    /// (the default hourly quota is a few seconds of a fast machine's load).
    pub fn start_unmetered(options: ServeOptions) -> Server {
        let all = Quota {
            max_events: u64::MAX,
            max_bytes: u64::MAX,
            events_per_hour: u64::MAX,
            bytes_per_hour: u64::MAX,
        };
        Server::start_with(options, false, all)
    }

    fn start_with(options: ServeOptions, keyed: bool, record_quota: Quota) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let store_dir = dir.path().join("store");
        let key_file = keyed.then(|| dir.path().join("writer.key"));
        let mut o = StoreOptions::default();
        if let Some(k) = &key_file {
            o = o.writer_key(WriterKey::create_file(k).expect("key"));
        }
        let mut store = Store::create(&store_dir, o).expect("store");
        let mut mint = |can: Vec<Scope>, session: &str, quota: Quota| {
            mint_token(
                &mut store,
                &TokenSpec {
                    can,
                    session: session.into(),
                    cell: None,
                    expires_at_ms: None,
                    quota,
                },
            )
            .expect("mint")
        };
        let record = mint(vec![Scope::Record], "cell-1", record_quota);
        let decide = mint(vec![Scope::Decide, Scope::Read], "ci", Quota::DEFAULT);
        let read = mint(vec![Scope::Read], "viewer", Quota::DEFAULT);
        let admin = mint(vec![Scope::Admin, Scope::Read], "owner", Quota::DEFAULT);
        let socket = dir.path().join("serve.sock");
        let owner = Arc::new(Owner::new(store, options).expect("owner"));
        let (stop_tx, thread) = spawn(owner, &socket);
        Server {
            dir,
            socket,
            store_dir,
            key_file,
            record: record.token,
            decide: decide.token,
            read: read.token,
            admin: admin.token,
            record_id: record.id,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops the server and starts a new one on the same store and socket
    /// (what a restart after a crash or an upgrade is).
    pub fn restart(&mut self, options: ServeOptions) {
        self.stop_serving();
        let mut o = StoreOptions::default();
        if let Some(k) = &self.key_file {
            o = o.writer_key(WriterKey::read_file(k).expect("key"));
        }
        let store = Store::open(&self.store_dir, o).expect("reopen");
        let owner = Arc::new(Owner::new(store, options).expect("owner"));
        let (stop, thread) = spawn(owner, &self.socket);
        self.stop = Some(stop);
        self.thread = Some(thread);
    }

    fn stop_serving(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    pub fn client(&self, token: &str) -> Client {
        let mut c = Client::new(Endpoint::Unix(self.socket.clone()), token);
        c.timeout = Duration::from_secs(120);
        c
    }

    /// The store as a second reader sees it (verified, with the key if any).
    pub fn reopen(&self) -> Store {
        let mut o = StoreOptions::default();
        if let Some(k) = &self.key_file {
            o = o.writer_key(WriterKey::read_file(k).expect("key"));
        }
        Store::open_read_only(&self.store_dir, o).expect("open")
    }

    /// Mints a token over the API as the admin, from `spec` (the body of
    /// `POST /v1/tokens`), and returns the answer (`token`, `id`): the
    /// credentials of a second writer or owner a test brings in.
    pub fn mint_over_api(&self, spec: serde_json::Value) -> serde_json::Value {
        self.client(&self.admin)
            .post_json("/v1/tokens", &spec)
            .expect("mint")
    }

    /// How many events of `kind` the store holds, as a second reader sees it.
    pub fn count_of(&self, kind: &str) -> usize {
        self.reopen().events_of_kinds(&[kind]).expect("read").len()
    }

    pub fn size(&self) -> u64 {
        self.reopen().head().expect("head").size
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_serving();
    }
}

/// Serves `owner` on `socket` on a thread of its own; returns what stops it.
fn spawn(
    owner: Arc<Owner>,
    socket: &Path,
) -> (
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let listen = vec![Listen::Unix(socket.to_path_buf())];
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let r = rt.block_on(ratchet_serve::serve(
            owner,
            &listen,
            Duration::from_secs(5),
            |_| {
                let _ = ready_tx.send(());
            },
            async {
                let _ = stop_rx.await;
            },
        ));
        r.expect("serve");
    });
    ready_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the server came up");
    (stop_tx, thread)
}

/// A raw HTTP/1.1 exchange over the socket: what a hand-rolled or hostile
/// client sends, and what comes back (status, body).
pub fn raw(socket: &Path, request: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    s.write_all(request).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// The `kind` of a JSON error body.
pub fn kind(r: &ratchet_serve::Response) -> String {
    r.json()
        .ok()
        .and_then(|v| v["error"]["kind"].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("not a JSON error: {}", String::from_utf8_lossy(&r.body)))
}

/// POSTs `body` as raw bytes (`application/octet-stream`) to `path`, an
/// ingest route, and returns the answer whatever its status: the upload a
/// hand-written client makes, for tests that read a refusal or a retry.
pub fn upload(c: &Client, path: &str, body: &[u8]) -> ratchet_serve::Response {
    c.request("POST", path, "application/octet-stream", body)
        .expect("answer")
}

/// POSTs `body` (JSON lines of the append format) to `path`, an events
/// route, and returns the answer whatever its status: a raw append, for
/// tests that read a refusal or a retry.
pub fn post_events(c: &Client, path: &str, body: &[u8]) -> ratchet_serve::Response {
    c.request("POST", path, "application/x-ndjson", body)
        .expect("answer")
}

/// Asserts that `r` is a refusal with `status` and the error `kind_`,
/// whose message says `says`; `what` names the request when it is not.
#[track_caller]
pub fn assert_refused(
    r: &ratchet_serve::Response,
    (status, kind_): (u16, &str),
    says: &str,
    what: &str,
) {
    assert_eq!(
        (r.status, kind(r).as_str()),
        (status, kind_),
        "{what}: {r:?}"
    );
    assert!(
        String::from_utf8_lossy(&r.body).contains(says),
        "{what}: the error says {says:?}: {r:?}"
    );
}

pub fn score_line(commit: &str, task: &str, value: f64) -> String {
    format!(
        "{{\"task\":\"{task}\",\"scorer\":\"acc\",\"value\":{value},\"commit\":\"{commit}\"}}\n"
    )
}
