//! Where checks, merges and benchmarks run commands: the [`Sandbox`] trait and its two
//! local backends, [`ProcessSandbox`] and [`NamespaceSandbox`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::sys;
use crate::{Error, Result};

/// Limits on one command. A command that exceeds its wall-clock timeout is
/// killed with its whole process group; the others are kernel resource
/// limits (`setrlimit`, soft = hard) that the command cannot raise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// Wall-clock time before the process group is killed.
    #[serde(with = "millis")]
    pub timeout: Duration,
    /// CPU seconds (`RLIMIT_CPU`): SIGXCPU, then SIGKILL.
    pub cpu_seconds: Option<u64>,
    /// Address space in bytes (`RLIMIT_AS`): allocations beyond it fail.
    /// Off by default — runtimes that reserve large virtual ranges (the JVM,
    /// Go, sanitizers) fail under it long before they use the memory.
    pub address_space_bytes: Option<u64>,
    /// Largest file the command may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: Option<u64>,
    /// Processes of the user (`RLIMIT_NPROC`; counts every process of the
    /// real user id, and root is exempt from it).
    pub processes: Option<u64>,
    /// Bytes of the end of stdout and of stderr kept in the report.
    pub output_tail_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(600),
            cpu_seconds: Some(600),
            address_space_bytes: None,
            file_size_bytes: Some(1 << 30),
            processes: None,
            output_tail_bytes: 16 * 1024,
        }
    }
}

mod millis {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u128(d.as_millis())
    }
}

/// The environment a command sees: nothing of the caller's but the
/// variables named in `inherit`, plus `set`. `HOME` and `TMPDIR` point into
/// the sandbox (writable, outside the work directory).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvPolicy {
    /// Names passed through from the caller's environment when set there.
    pub inherit: Vec<String>,
    /// Variables set explicitly (win over inherited ones).
    pub set: BTreeMap<String, String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy {
            inherit: ["PATH", "LANG", "LC_ALL", "TZ", "TERM"]
                .into_iter()
                .map(String::from)
                .collect(),
            set: BTreeMap::new(),
        }
    }
}

impl EnvPolicy {
    fn resolve(&self, home: &Path, tmp: &Path) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = self
            .inherit
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v)))
            .collect();
        env.insert("HOME".into(), home.display().to_string());
        env.insert("TMPDIR".into(), tmp.display().to_string());
        env.extend(self.set.clone());
        env.into_iter().collect()
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this code.
    Code {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it (a resource limit: SIGXCPU, SIGXFSZ, SIGKILL…).
    Signal {
        /// The signal number.
        signal: i32,
    },
    /// Its wall-clock timeout passed: its process group was killed.
    TimedOut,
    /// It could not be started (no such program, not executable…).
    NotStarted {
        /// Why, from the operating system.
        reason: String,
    },
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code { code } => write!(f, "exit {code}"),
            Exit::Signal { signal } => write!(f, "killed by signal {signal}"),
            Exit::TimedOut => write!(f, "timed out"),
            Exit::NotStarted { reason } => write!(f, "not started: {reason}"),
        }
    }
}

/// What one command did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReport {
    /// The command as given.
    pub argv: Vec<String>,
    /// How it ended.
    pub exit: Exit,
    /// It exited with code 0.
    pub passed: bool,
    /// Wall time in milliseconds.
    pub wall_ms: f64,
    /// User + system CPU time in milliseconds, its waited-for children included.
    pub cpu_ms: f64,
    /// Peak resident memory in KiB.
    pub peak_rss_kib: u64,
    /// The end of its standard output (lossy UTF-8).
    pub stdout_tail: String,
    /// The end of its standard error (lossy UTF-8).
    pub stderr_tail: String,
    /// Bytes it wrote to standard output in all.
    pub stdout_bytes: u64,
    /// Bytes it wrote to standard error in all.
    pub stderr_bytes: u64,
}

/// What an entry of a file snapshot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    /// A file (0644).
    Regular,
    /// An executable file (0755).
    Executable,
    /// A symbolic link; its contents are the target.
    Symlink,
    /// An empty directory (a git submodule's place).
    Directory,
}

impl FileMode {
    /// The byte a snapshot hash records for it.
    pub(crate) fn tag(self) -> u8 {
        match self {
            FileMode::Regular => 0,
            FileMode::Executable => 1,
            FileMode::Symlink => 2,
            FileMode::Directory => 3,
        }
    }
}

/// A place to run untrusted commands against a set of files.
///
/// The life of a sandbox: [`prepare`](Sandbox::prepare) an empty work
/// directory, [`write_file`](Sandbox::write_file) the files under test,
/// [`exec`](Sandbox::exec) commands in it (each with [`Limits`] and an
/// [`EnvPolicy`]), [`read_file`](Sandbox::read_file) what they wrote
/// (JUnit, JSONL), [`destroy`](Sandbox::destroy) it. Paths are relative to
/// the work directory; absolute paths and `..` are refused.
///
/// **Beyond one machine.** A container or Kubernetes-pod backend implements
/// the same five calls: `prepare` creates the pod (non-root user, all
/// capabilities dropped, read-only root filesystem, an `emptyDir` work
/// volume, CPU and memory requests = limits, no service-account token, a
/// network policy denying egress, `activeDeadlineSeconds` as the hard
/// deadline); `write_file` copies into the volume (a tar stream over
/// `exec`, or an init container pulling a content-addressed bundle);
/// `exec` runs argv through the exec API with the timeout enforced by the
/// caller and the deadline by the cluster, filling a [`CommandReport`] from
/// the exit code, the container's cgroup counters (CPU, peak memory) and
/// the captured streams; `read_file` copies out; `destroy` deletes the pod.
/// Nothing above the trait changes: [`crate::checks::run_checks`] and [`crate::merge::merge_branch`]
/// only ever call these five.
pub trait Sandbox: std::fmt::Debug {
    /// The backend's name, as reports show it.
    fn backend(&self) -> &'static str;
    /// Makes a fresh, empty work directory (discarding an earlier one).
    ///
    /// # Errors
    /// [`Error::Sandbox`] if it cannot be made.
    fn prepare(&mut self) -> Result<()>;
    /// Writes a file into the work directory (directories made as needed).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an absolute or escaping path;
    /// [`Error::Sandbox`] if it cannot be written or nothing is prepared.
    /// `mode` says what to make: a file (0644 or 0755), a symlink whose
    /// target is `bytes`, or an empty directory (a submodule, as `git
    /// checkout` leaves it when not initialized). Nothing is written
    /// through a symlink already in the work directory.
    fn write_file(&mut self, path: &Path, bytes: &[u8], mode: FileMode) -> Result<()>;
    /// Runs `argv` (never through a shell) in the work directory.
    ///
    /// # Errors
    /// [`Error::EmptyCommand`] for an empty argv; [`Error::Sandbox`] if the
    /// sandbox itself fails. A command that fails, crashes, exceeds a limit
    /// or cannot start is a report, not an error.
    fn exec(&mut self, argv: &[String], limits: &Limits, env: &EnvPolicy) -> Result<CommandReport>;
    /// Reads a file from the work directory.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::Sandbox`] if it cannot be read.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>>;
    /// Removes the work directory and everything in it.
    ///
    /// # Errors
    /// [`Error::Sandbox`] if it cannot be removed.
    fn destroy(&mut self) -> Result<()>;
}

/// A path inside the work directory: relative, without `..`.
pub(crate) fn checked_relative(path: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => {
                return Err(Error::InvalidPath {
                    path: path.to_path_buf(),
                    reason: "must be relative to the work directory, without `..`",
                });
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(Error::InvalidPath {
            path: path.to_path_buf(),
            reason: "names no file",
        });
    }
    Ok(out)
}

fn sandbox_err(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Sandbox {
        what: what.to_string(),
        source,
    }
}

/// A sandbox's directories on this machine: `root/work` (the files under
/// test, the commands' working directory), `root/home`, `root/tmp`.
#[derive(Debug, Default)]
struct LocalDirs {
    root: Option<tempfile::TempDir>,
}

impl LocalDirs {
    fn prepare(&mut self) -> Result<()> {
        self.destroy()?;
        let root = tempfile::Builder::new()
            .prefix("ratchet-sandbox-")
            .tempdir()
            .map_err(sandbox_err("creating the sandbox directory"))?;
        for d in ["work", "home", "tmp"] {
            std::fs::create_dir(root.path().join(d))
                .map_err(sandbox_err("creating the sandbox directory"))?;
        }
        self.root = Some(root);
        Ok(())
    }

    fn root(&self) -> Result<&Path> {
        self.root
            .as_ref()
            .map(|r| r.path())
            .ok_or_else(|| Error::Sandbox {
                what: "using a sandbox that was not prepared".into(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            })
    }

    fn work(&self) -> Result<PathBuf> {
        Ok(self.root()?.join("work"))
    }

    fn write_file(&self, path: &Path, bytes: &[u8], mode: FileMode) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let rel = checked_relative(path)?;
        let work = self.work()?;
        // Refuse to write through a symlink an earlier entry made.
        let mut prefix = work.clone();
        for c in rel.iter() {
            prefix.push(c);
            if std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Error::InvalidPath {
                    path: path.to_path_buf(),
                    reason: "goes through a symlink in the work directory",
                });
            }
        }
        let full = work.join(&rel);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(sandbox_err("creating a directory"))?;
        }
        match mode {
            FileMode::Regular | FileMode::Executable => {
                std::fs::write(&full, bytes).map_err(sandbox_err("writing a file"))?;
                let bits = if mode == FileMode::Executable {
                    0o755
                } else {
                    0o644
                };
                std::fs::set_permissions(&full, std::fs::Permissions::from_mode(bits))
                    .map_err(sandbox_err("setting a file's mode"))?;
            }
            FileMode::Symlink => {
                use std::os::unix::ffi::OsStrExt;
                let target = std::ffi::OsStr::from_bytes(bytes);
                std::os::unix::fs::symlink(target, &full)
                    .map_err(sandbox_err("making a symlink"))?;
            }
            FileMode::Directory => {
                std::fs::create_dir_all(&full).map_err(sandbox_err("creating a directory"))?;
            }
        }
        Ok(())
    }

    /// Reads a file the commands wrote. They may have made it (or a
    /// directory on its path) a symlink to a file outside the work
    /// directory, a FIFO that blocks a reader for ever, a device, or a file
    /// too large to hold: only a regular file inside the work directory, of
    /// at most [`MAX_READ_BYTES`], is read.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        use std::os::unix::fs::OpenOptionsExt;
        let rel = checked_relative(path)?;
        let work = self.work()?;
        let resolve = |p: &Path| p.canonicalize().map_err(sandbox_err("reading a file"));
        let (full, root) = (resolve(&work.join(rel))?, resolve(&work)?);
        let refuse = |reason| Error::InvalidPath {
            path: path.to_path_buf(),
            reason,
        };
        if !full.starts_with(&root) {
            return Err(refuse(
                "resolves (through a symlink) to a file outside the work directory",
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&full)
            .map_err(sandbox_err("reading a file"))?;
        let meta = file.metadata().map_err(sandbox_err("reading a file"))?;
        if !meta.file_type().is_file() {
            return Err(refuse("is not a regular file"));
        }
        let mut bytes = Vec::new();
        file.take(MAX_READ_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(sandbox_err("reading a file"))?;
        if bytes.len() as u64 > MAX_READ_BYTES {
            return Err(refuse("is larger than the 256 MiB a report file may be"));
        }
        Ok(bytes)
    }

    fn destroy(&mut self) -> Result<()> {
        match self.root.take() {
            Some(root) => root.close().map_err(sandbox_err("removing the sandbox")),
            None => Ok(()),
        }
    }
}

/// Commands run as ordinary processes of this user, each in its own
/// process group with resource limits and a cleaned environment, in a
/// temporary work directory. It contains mistakes, not attacks: the
/// command sees the whole filesystem and network, and a process that
/// leaves its process group (`setsid`) escapes the timeout's kill.
/// [`NamespaceSandbox`] contains those too.
#[derive(Debug, Default)]
pub struct ProcessSandbox {
    dirs: LocalDirs,
}

impl ProcessSandbox {
    /// A sandbox; call [`Sandbox::prepare`] before use.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Sandbox for ProcessSandbox {
    fn backend(&self) -> &'static str {
        "process"
    }
    fn prepare(&mut self) -> Result<()> {
        self.dirs.prepare()
    }
    fn write_file(&mut self, path: &Path, bytes: &[u8], mode: FileMode) -> Result<()> {
        self.dirs.write_file(path, bytes, mode)
    }
    fn exec(&mut self, argv: &[String], limits: &Limits, env: &EnvPolicy) -> Result<CommandReport> {
        let root = self.dirs.root()?;
        let env = env.resolve(&root.join("home"), &root.join("tmp"));
        run_limited(argv, argv, &root.join("work"), &env, limits)
    }
    fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        self.dirs.read_file(path)
    }
    fn destroy(&mut self) -> Result<()> {
        self.dirs.destroy()
    }
}

/// Commands run inside Linux namespaces through bubblewrap (`bwrap`): no
/// network (a network namespace with only a down loopback), the system
/// mounted read-only, only the sandbox directory writable, its own PID
/// namespace (when `bwrap` dies, everything in it dies), its own session,
/// every capability dropped (a root caller's command cannot remount the
/// system writable, make device nodes or trace processes) — with the same
/// limits, environment and reports as [`ProcessSandbox`].
#[derive(Debug)]
pub struct NamespaceSandbox {
    dirs: LocalDirs,
    bwrap: PathBuf,
}

impl NamespaceSandbox {
    /// A sandbox using `bwrap` from `PATH`.
    ///
    /// # Errors
    /// [`Error::SandboxUnavailable`] if `bwrap` is not installed (Debian
    /// package `bubblewrap`) or cannot create namespaces here.
    pub fn new() -> Result<Self> {
        let bwrap = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("bwrap"))
            .find(|p| p.is_file())
            .ok_or_else(|| Error::SandboxUnavailable {
                backend: "namespace",
                reason: "bwrap is not on PATH (install the bubblewrap package)".into(),
            })?;
        let probe = Command::new(&bwrap)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--unshare-all",
                "--die-with-parent",
                "true",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| Error::SandboxUnavailable {
                backend: "namespace",
                reason: format!("running {}: {e}", bwrap.display()),
            })?;
        if !probe.status.success() {
            return Err(Error::SandboxUnavailable {
                backend: "namespace",
                reason: format!(
                    "bwrap cannot create namespaces here: {}",
                    String::from_utf8_lossy(&probe.stderr).trim()
                ),
            });
        }
        Ok(NamespaceSandbox {
            dirs: LocalDirs::default(),
            bwrap,
        })
    }
}

impl Sandbox for NamespaceSandbox {
    fn backend(&self) -> &'static str {
        "namespace"
    }
    fn prepare(&mut self) -> Result<()> {
        self.dirs.prepare()
    }
    fn write_file(&mut self, path: &Path, bytes: &[u8], mode: FileMode) -> Result<()> {
        self.dirs.write_file(path, bytes, mode)
    }
    fn exec(&mut self, argv: &[String], limits: &Limits, env: &EnvPolicy) -> Result<CommandReport> {
        let root = self.dirs.root()?.to_path_buf();
        let work = root.join("work");
        let env = env.resolve(&root.join("home"), &root.join("tmp"));
        let text = |p: &Path| p.display().to_string();
        let mut full: Vec<String> = vec![text(&self.bwrap)];
        full.extend(
            [
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-all",
                // The command is the namespace's pid 1, with no bwrap init
                // above it: bwrap then reaps it itself, so the CPU time and
                // peak memory wait4 reports for bwrap are the command's (with
                // an init, bwrap exits on the init's word without reaping it,
                // and the report showed bwrap's own 4 ms).
                "--as-pid-1",
                "--die-with-parent",
                "--new-session",
                "--cap-drop",
                "ALL",
                "--bind",
            ]
            .map(String::from),
        );
        full.extend([
            text(&root),
            text(&root),
            "--chdir".into(),
            text(&work),
            "--".into(),
        ]);
        full.extend(argv.iter().cloned());
        run_limited(argv, &full, &work, &env, limits)
    }
    fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        self.dirs.read_file(path)
    }
    fn destroy(&mut self) -> Result<()> {
        self.dirs.destroy()
    }
}

/// Runs `argv` as a limited process (own process group, limits, cleaned
/// environment) in `dir` itself, outside any sandbox directory: a deploy
/// hook. `HOME` and `TMPDIR` are the caller's.
pub(crate) fn run_in_dir(
    argv: &[String],
    dir: &Path,
    env: &EnvPolicy,
    limits: &Limits,
) -> Result<CommandReport> {
    let home = std::env::var_os("HOME").map_or_else(|| dir.to_path_buf(), PathBuf::from);
    let env = env.resolve(&home, &std::env::temp_dir());
    run_limited(argv, argv, dir, &env, limits)
}

/// The end of a stream: the last `keep` bytes and the total count.
fn read_tail(mut from: impl Read, keep: usize) -> (Vec<u8>, u64) {
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut total = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                tail.extend(&buf[..n]);
                let excess = tail.len().saturating_sub(keep);
                tail.drain(..excess);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (tail.into_iter().collect(), total)
}

/// The largest file [`Sandbox::read_file`] returns from a local sandbox.
pub(crate) const MAX_READ_BYTES: u64 = 256 << 20;

/// How long to wait for the output streams to close after the command's
/// process group was killed: a process that left the group may hold them.
const STREAM_GRACE: Duration = Duration::from_secs(2);

/// Runs `program` (the command, or bwrap around it) in its own process
/// group with `limits`, reporting as `argv`.
fn run_limited(
    argv: &[String],
    program: &[String],
    cwd: &Path,
    env: &[(String, String)],
    limits: &Limits,
) -> Result<CommandReport> {
    use std::os::unix::process::CommandExt;
    let (Some(first), Some(exe)) = (argv.first(), program.first()) else {
        return Err(Error::EmptyCommand);
    };
    if first.is_empty() {
        return Err(Error::EmptyCommand);
    }
    let mut command = Command::new(exe);
    command
        .args(&program[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    sys::set_limits(
        &mut command,
        sys::RLimits {
            cpu_seconds: limits.cpu_seconds,
            address_space: limits.address_space_bytes,
            file_size: limits.file_size_bytes,
            processes: limits.processes,
        },
    );
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ok(CommandReport {
                argv: argv.to_vec(),
                exit: Exit::NotStarted {
                    reason: e.to_string(),
                },
                passed: false,
                wall_ms: started.elapsed().as_secs_f64() * 1e3,
                cpu_ms: 0.0,
                peak_rss_kib: 0,
                stdout_tail: String::new(),
                stderr_tail: String::new(),
                stdout_bytes: 0,
                stderr_bytes: 0,
            });
        }
    };
    let pid = child.id();
    let keep = limits.output_tail_bytes;
    let (tx, rx) = mpsc::channel();
    for (which, stream) in [
        (
            0usize,
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
        (
            1,
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
    ] {
        if let Some(stream) = stream {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((which, read_tail(stream, keep)));
            });
        }
    }
    drop(tx);

    // Wait for the leader, polling with a growing interval (short commands
    // pay microseconds, long ones a check every 20 ms).
    let deadline = started + limits.timeout;
    let mut pause = Duration::from_micros(50);
    let mut timed_out = false;
    // The leader is waited for without being reaped, so its group is
    // killed while its number is still its own (`sys::ended`).
    loop {
        if sys::ended(pid, false).map_err(sandbox_err("waiting for a command"))? {
            break;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            sys::kill_group(pid);
            sys::ended(pid, true).map_err(sandbox_err("waiting for a killed command"))?;
            break;
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    // Nothing the command started outlives it: the rest of its group goes
    // too — before the leader is reaped.
    sys::kill_group(pid);
    let reaped = sys::reap(pid, true)
        .map_err(sandbox_err("reaping a command"))?
        .ok_or_else(|| Error::Sandbox {
            what: "reaping a command".into(),
            source: std::io::Error::other("it ended but could not be reaped"),
        })?;
    // `child` was reaped above through wait4; dropping it neither waits nor kills.
    drop(child);

    let mut streams: [(Vec<u8>, u64); 2] = Default::default();
    let grace_end = Instant::now() + STREAM_GRACE;
    for _ in 0..2 {
        match rx.recv_timeout(grace_end.saturating_duration_since(Instant::now())) {
            Ok((which, got)) => streams[which] = got,
            Err(_) => break,
        }
    }
    let [(out, out_n), (err, err_n)] = streams;
    let exit = if timed_out {
        Exit::TimedOut
    } else if let Some(code) = reaped.code {
        Exit::Code { code }
    } else {
        Exit::Signal {
            signal: reaped.signal.unwrap_or(0),
        }
    };
    Ok(CommandReport {
        argv: argv.to_vec(),
        passed: exit == Exit::Code { code: 0 },
        exit,
        wall_ms,
        cpu_ms: reaped.cpu_ms,
        peak_rss_kib: reaped.peak_rss_kib,
        stdout_tail: String::from_utf8_lossy(&out).into_owned(),
        stderr_tail: String::from_utf8_lossy(&err).into_owned(),
        stdout_bytes: out_n,
        stderr_bytes: err_n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_work_directory() {
        assert!(checked_relative(Path::new("a/b.xml")).is_ok());
        assert!(checked_relative(Path::new("./a")).is_ok());
        for bad in ["/etc/passwd", "../x", "a/../../x", "", "."] {
            assert!(
                matches!(
                    checked_relative(Path::new(bad)),
                    Err(Error::InvalidPath { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_tail_keeps_the_end_and_counts_everything() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (tail, n) = read_tail(&data[..], 1000);
        assert_eq!(n, 100_000);
        assert_eq!(tail, data[99_000..]);
    }
}
