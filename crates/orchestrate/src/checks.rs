//! Checks: `run_checks` runs a branch's commands against a snapshot of
//! its files in a [`Sandbox`], optionally judges what they wrote with the
//! gate, and records the report as a `verification` event (the recorded
//! word and the CLI's `ratchet verify` stay). Not the trace's chain check
//! (`ratchet_trace::Store::verify`, `ratchet verify-chain`).

use std::path::{Path, PathBuf};

use git2::{ObjectType, Repository, TreeWalkMode, TreeWalkResult};
use serde::Serialize;

use ratchet_gate::{GateStatus, Policy, Question, Verdict};
use ratchet_trace::{CommitId, EventDraft, Receipt, ReservedKind, Store};

use crate::sandbox::{CommandReport, EnvPolicy, FileMode, Limits, Sandbox, checked_relative};
use crate::{Error, Result, io_err};

/// What is verified.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A directory on this machine, copied as it is, but for `.git` and
    /// `.ratchet` (the conventional store directory). Everything else goes,
    /// ignored files included: to verify what is committed, give a revision.
    Directory(&'a Path),
    /// Files given in memory.
    Files(&'a [SourceFile]),
    /// A git revision (`HEAD`, a branch, a commit id) of the repository at
    /// `repo`, read from its object database (the work tree is not used).
    Revision {
        /// The repository (any path inside its work tree).
        repo: &'a Path,
        /// The revision.
        rev: &'a str,
    },
}

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Relative path.
    pub path: PathBuf,
    /// Contents.
    pub bytes: Vec<u8>,
    /// A file, an executable, a symlink (`bytes`: its target) or an empty
    /// directory.
    pub mode: FileMode,
}

/// The gate on top of the commands: what they wrote is ingested, and the
/// class is decided for the candidate against `baseline`.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The policy file's contents (`None`: the class's pin in the trace).
    /// A pinned class is decided under its pin; a file that differs is
    /// refused ([`ratchet_gate::resolve_policy`]).
    pub policy: Option<Policy>,
    /// The class to decide.
    pub class: String,
    /// The commit running now.
    pub baseline: CommitId,
    /// The commit the evidence is about. For a [`Source::Revision`] it is
    /// the revision's commit when not given; other sources must name it.
    pub candidate: Option<CommitId>,
    /// JUnit XML files the commands write (relative to the work directory),
    /// ingested as test runs.
    pub junit: Vec<PathBuf>,
    /// The suite those runs are recorded as (`None`: as each report names
    /// it — pytest's `pytest`, a path, `(empty)`…): the name the class's
    /// `required_suites` asks for, so the run just verified is the one
    /// that satisfies it.
    pub suite: Option<String>,
    /// JSON Lines score files the commands write, ingested as scores.
    pub jsonl: Vec<PathBuf>,
}

/// How to verify.
#[derive(Debug, Clone, Default)]
pub struct CheckSpec {
    /// Commands, each an argv list (never a shell string: write
    /// `["sh", "-c", "…"]` to want a shell). Run in order.
    pub commands: Vec<Vec<String>>,
    /// Limits on each command.
    pub limits: Limits,
    /// The environment each command sees.
    pub env: EnvPolicy,
    /// Run the remaining commands after one fails (default: stop).
    pub keep_going: bool,
    /// The gate on top, if any.
    pub evaluation: Option<Evaluation>,
}

/// What a file the commands were to write gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngestedFile {
    /// The file, relative to the work directory.
    pub path: PathBuf,
    /// `junit` or `jsonl`.
    pub format: &'static str,
    /// Test runs recorded from it.
    pub test_runs: usize,
    /// Scores recorded from it.
    pub scores: usize,
    /// Why nothing was recorded, when nothing was (missing, malformed, or
    /// ingested before).
    pub note: Option<String>,
}

/// The gate's part of a verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationReport {
    /// The commit decided about.
    pub candidate: CommitId,
    /// The commit compared with.
    pub baseline: CommitId,
    /// What the commands' files gave.
    pub ingested: Vec<IngestedFile>,
    /// The verdict.
    pub verdict: Verdict,
    /// Seq of the `decision` event the gate appended (`None` when the trace
    /// failed verification and nothing was appended).
    pub decision_seq: Option<u64>,
}

/// Everything a verification saw: appended to the trace as a
/// `verification` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The sandbox backend.
    pub backend: &'static str,
    /// The source, in words.
    pub source: String,
    /// The commit the source is (a revision), or the evaluation's candidate.
    pub commit: Option<CommitId>,
    /// BLAKE3 of the file snapshot (see [`snapshot_hash`]), hex.
    pub snapshot: String,
    /// Files in the snapshot.
    pub files: usize,
    /// Entries not copied (sockets, fifos, devices in a directory source), by path.
    pub skipped: Vec<String>,
    /// Each command run, in order (the ones after a failure are not run
    /// unless `keep_going`).
    pub commands: Vec<CommandReport>,
    /// Every command ran and passed.
    pub commands_passed: bool,
    /// The gate's part, if an evaluation was asked for.
    pub evaluation: Option<EvaluationReport>,
    /// The verification passed: every command passed and, with an
    /// evaluation, the gate promoted.
    pub passed: bool,
}

impl CheckReport {
    /// The answer in one word, on the gate's scale: promote when passed;
    /// reject when a command failed; the gate's own status otherwise.
    pub fn status(&self) -> GateStatus {
        match (&self.evaluation, self.commands_passed) {
            (_, false) => GateStatus::Reject,
            (None, true) => GateStatus::Promote,
            (Some(e), true) => e.verdict.outcome.status(),
        }
    }
}

/// The BLAKE3 content hash of a file snapshot: derive-key context
/// `"ratchet-orchestrate 2026-11-30 file snapshot v1"` over the entries in
/// byte order of their paths, each as `u32 len ‖ path ‖ u8 mode ‖ u64 len ‖
/// bytes` (little-endian; mode 0 file, 1 executable, 2 symlink, 3 empty
/// directory). Equal snapshots hash equal whichever
/// source they came from.
pub fn snapshot_hash(files: &[SourceFile]) -> blake3::Hash {
    let mut sorted: Vec<&SourceFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.as_os_str().cmp(b.path.as_os_str()));
    let mut hasher =
        blake3::Hasher::new_derive_key("ratchet-orchestrate 2026-11-30 file snapshot v1");
    for f in sorted {
        let path = f.path.as_os_str().as_encoded_bytes();
        hasher.update(&(path.len() as u32).to_le_bytes());
        hasher.update(path);
        hasher.update(&[f.mode.tag()]);
        hasher.update(&(f.bytes.len() as u64).to_le_bytes());
        hasher.update(&f.bytes);
    }
    hasher.finalize()
}

/// A source's files, the entries left out, its commit if any, and its name.
pub(crate) struct Loaded {
    pub files: Vec<SourceFile>,
    pub skipped: Vec<String>,
    pub commit: Option<CommitId>,
    pub name: String,
}

fn read_dir_files(root: &Path, rel: &Path, out: &mut Loaded) -> Result<()> {
    let dir = root.join(rel);
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)
        .map_err(io_err(&dir))?
        .collect::<std::io::Result<_>>()
        .map_err(io_err(&dir))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = rel.join(e.file_name());
        let kind = e.file_type().map_err(io_err(&root.join(&path)))?;
        if kind.is_dir() {
            if e.file_name() != ".git" && e.file_name() != ".ratchet" {
                let before = out.files.len() + out.skipped.len();
                read_dir_files(root, &path, out)?;
                if out.files.len() + out.skipped.len() == before {
                    // Empty (a submodule's place): kept, as a checkout keeps it.
                    out.files.push(SourceFile {
                        path,
                        bytes: Vec::new(),
                        mode: FileMode::Directory,
                    });
                }
            }
        } else if kind.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let full = root.join(&path);
            let bytes = std::fs::read(&full).map_err(io_err(&full))?;
            let bits = e.metadata().map_err(io_err(&full))?.permissions().mode();
            let mode = if bits & 0o111 != 0 {
                FileMode::Executable
            } else {
                FileMode::Regular
            };
            out.files.push(SourceFile { path, bytes, mode });
        } else if kind.is_symlink() {
            use std::os::unix::ffi::OsStrExt;
            let full = root.join(&path);
            let target = std::fs::read_link(&full).map_err(io_err(&full))?;
            out.files.push(SourceFile {
                path,
                bytes: target.as_os_str().as_bytes().to_vec(),
                mode: FileMode::Symlink,
            });
        } else {
            out.skipped.push(path.display().to_string());
        }
    }
    Ok(())
}

/// The files of a git tree, read from the object database: the bytes the
/// repository stores, which is also what a landing writes (it checks out
/// with filters disabled — see `merge`), so what is verified is what lands,
/// byte for byte. Checkout filters (`.gitattributes` line endings, `ident`,
/// LFS) are deliberately not applied: a branch could otherwise make the
/// bytes that run differ from the bytes that were verified.
pub(crate) fn tree_files(repo: &Repository, tree: &git2::Tree<'_>, out: &mut Loaded) -> Result<()> {
    let mut failure = None;
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let path = PathBuf::from(format!("{dir}{}", entry.name().unwrap_or("")));
        let mode = match (entry.kind(), entry.filemode()) {
            (Some(ObjectType::Tree), _) => return TreeWalkResult::Ok,
            (Some(ObjectType::Blob), 0o100755) => FileMode::Executable,
            (Some(ObjectType::Blob), 0o120000) => FileMode::Symlink,
            (Some(ObjectType::Blob), _) => FileMode::Regular,
            // A submodule: git leaves an empty directory until it is initialized.
            (Some(ObjectType::Commit), _) => {
                out.files.push(SourceFile {
                    path,
                    bytes: Vec::new(),
                    mode: FileMode::Directory,
                });
                return TreeWalkResult::Ok;
            }
            _ => {
                out.skipped.push(path.display().to_string());
                return TreeWalkResult::Ok;
            }
        };
        match repo.find_blob(entry.id()) {
            Ok(blob) => {
                out.files.push(SourceFile {
                    path,
                    bytes: blob.content().to_vec(),
                    mode,
                });
                TreeWalkResult::Ok
            }
            Err(e) => {
                failure = Some(e);
                TreeWalkResult::Abort
            }
        }
    })?;
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

pub(crate) fn load(source: &Source<'_>) -> Result<Loaded> {
    let mut out = Loaded {
        files: Vec::new(),
        skipped: Vec::new(),
        commit: None,
        name: String::new(),
    };
    match *source {
        Source::Directory(dir) => {
            if !dir.is_dir() {
                return Err(Error::Io {
                    path: dir.to_path_buf(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
                });
            }
            read_dir_files(dir, Path::new(""), &mut out)?;
            out.name = format!("directory {}", dir.display());
        }
        Source::Files(files) => {
            for f in files {
                checked_relative(&f.path)?;
            }
            out.files = files.to_vec();
            out.name = format!("{} files", files.len());
        }
        Source::Revision { repo, rev } => {
            let repository = Repository::discover(repo)?;
            let commit = repository
                .revparse_single(rev)
                .and_then(|o| o.peel_to_commit())
                .map_err(|e| Error::UnknownCommit {
                    rev: rev.to_string(),
                    reason: e.message().to_string(),
                })?;
            tree_files(&repository, &commit.tree()?, &mut out)?;
            out.commit = Some(CommitId::parse(&commit.id().to_string())?);
            out.name = format!("revision {rev}");
        }
    }
    Ok(out)
}

/// Verifies `source`: copies its files into a freshly prepared `sandbox`,
/// runs `spec.commands` there in order, and — with an evaluation — ingests
/// the files they wrote and lets the gate decide. The report is appended to
/// the trace as a `verification` event (under the commit, if known) and
/// returned with its receipt. The sandbox is destroyed afterwards, whatever
/// happened.
///
/// # Examples
///
/// ```
/// use ratchet_orchestrate::checks::{CheckSpec, Source, SourceFile, run_checks};
/// use ratchet_orchestrate::sandbox::{FileMode, ProcessSandbox};
/// use ratchet_trace::Store;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let mut store = Store::create(dir.path().join("store"), Default::default())?;
/// let files = [SourceFile { path: "answer.txt".into(), bytes: b"42\n".to_vec(), mode: FileMode::Regular }];
/// let sh = |script: &str| CheckSpec {
///     commands: vec![vec!["sh".into(), "-c".into(), script.into()]],
///     ..CheckSpec::default()
/// };
/// let (report, receipt) = run_checks(&mut store, &mut ProcessSandbox::new(), &Source::Files(&files), &sh("grep -qx 42 answer.txt"))?;
/// assert!(report.passed && report.commands_passed);
/// assert_eq!(receipt.seq, store.head()?.size); // recorded as a `verification` event
///
/// // A failing command is a report, not an error.
/// let (report, _) = run_checks(&mut store, &mut ProcessSandbox::new(), &Source::Files(&files), &sh("grep -qx 43 answer.txt"))?;
/// assert!(!report.passed);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::NoCommands`] or [`Error::EmptyCommand`] before anything runs;
/// [`Error::MissingCandidate`] for an evaluation of a non-revision source
/// without a candidate; [`Error::Io`], [`Error::Git`] or
/// [`Error::UnknownCommit`] reading the source; [`Error::Sandbox`] if the
/// sandbox fails; [`Error::Trace`], [`Error::Scorers`], [`Error::Gate`]
/// while recording. A failing command or a rejecting gate is a report
/// (`passed: false`), not an error.
pub fn run_checks(
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    source: &Source<'_>,
    spec: &CheckSpec,
) -> Result<(CheckReport, Receipt)> {
    check_commands(&spec.commands)?;
    let loaded = load(source)?;
    run_checks_loaded(store, sandbox, loaded, spec)
}

pub(crate) fn check_commands(commands: &[Vec<String>]) -> Result<()> {
    if commands.is_empty() {
        return Err(Error::NoCommands);
    }
    if commands
        .iter()
        .any(|c| c.first().is_none_or(String::is_empty))
    {
        return Err(Error::EmptyCommand);
    }
    Ok(())
}

pub(crate) fn run_checks_loaded(
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    loaded: Loaded,
    spec: &CheckSpec,
) -> Result<(CheckReport, Receipt)> {
    if let Some(e) = &spec.evaluation {
        for p in e.junit.iter().chain(&e.jsonl) {
            checked_relative(p)?;
        }
    }
    let candidate = match &spec.evaluation {
        Some(e) => Some(
            e.candidate
                .clone()
                .or_else(|| loaded.commit.clone())
                .ok_or(Error::MissingCandidate)?,
        ),
        None => None,
    };
    sandbox.prepare()?;
    let result = run_in(store, sandbox, &loaded, spec, candidate);
    let destroyed = sandbox.destroy();
    let report = result?;
    destroyed?;
    let mut draft = EventDraft::reserved(ReservedKind::Verification, &report)?
        .session(format!("verify:{}", report.backend));
    if let Some(c) = &report.commit {
        draft = draft.commit(c.clone());
    }
    let receipt = store.append(draft)?;
    Ok((report, receipt))
}

/// Writes a snapshot's files into a prepared sandbox's work directory.
pub(crate) fn write_snapshot(sandbox: &mut dyn Sandbox, files: &[SourceFile]) -> Result<()> {
    for f in files {
        sandbox.write_file(&f.path, &f.bytes, f.mode)?;
    }
    Ok(())
}

fn run_in(
    store: &mut Store,
    sandbox: &mut dyn Sandbox,
    loaded: &Loaded,
    spec: &CheckSpec,
    candidate: Option<CommitId>,
) -> Result<CheckReport> {
    write_snapshot(sandbox, &loaded.files)?;
    let mut commands = Vec::new();
    for argv in &spec.commands {
        let ran = sandbox.exec(argv, &spec.limits, &spec.env)?;
        let failed = !ran.passed;
        commands.push(ran);
        if failed && !spec.keep_going {
            break;
        }
    }
    let commands_passed =
        commands.len() == spec.commands.len() && commands.iter().all(|c| c.passed);
    let evaluation = match (&spec.evaluation, candidate.as_ref()) {
        (Some(e), Some(candidate)) => Some(evaluate(store, &*sandbox, e, candidate)?),
        _ => None,
    };
    let passed = commands_passed
        && evaluation
            .as_ref()
            .is_none_or(|e| e.verdict.outcome.status() == GateStatus::Promote);
    Ok(CheckReport {
        backend: sandbox.backend(),
        source: loaded.name.clone(),
        commit: loaded.commit.clone().or(candidate),
        snapshot: snapshot_hash(&loaded.files).to_hex().to_string(),
        files: loaded.files.len(),
        skipped: loaded.skipped.clone(),
        commands,
        commands_passed,
        evaluation,
        passed,
    })
}

fn evaluate(
    store: &mut Store,
    sandbox: &dyn Sandbox,
    e: &Evaluation,
    candidate: &CommitId,
) -> Result<EvaluationReport> {
    if e.baseline == *candidate {
        return Err(Error::SameCommit {
            commit: candidate.clone(),
        });
    }
    let (_, view) = store.verify_and_fold(&ratchet_trace::VerifyOptions::default())?;
    let (class_policy, _) =
        ratchet_gate::resolve_policy(view.as_ref(), &e.class, e.policy.as_ref())?;
    drop(view);
    let class_policy = &class_policy;
    // The commands' files are copied out of the sandbox (which may be
    // remote) and ingested from a local copy under the same relative name.
    let local = tempfile::tempdir().map_err(io_err(&std::env::temp_dir()))?;
    let session = format!("verify:{}", sandbox.backend());
    let mut ingested = Vec::new();
    let files = e
        .junit
        .iter()
        .map(|p| (p, "junit"))
        .chain(e.jsonl.iter().map(|p| (p, "jsonl")));
    for (path, format) in files {
        let mut row = IngestedFile {
            path: path.clone(),
            format,
            test_runs: 0,
            scores: 0,
            note: None,
        };
        let bytes = match sandbox.read_file(path) {
            Ok(b) => b,
            Err(Error::Sandbox { source, .. }) => {
                row.note = Some(format!("not written: {source}"));
                ingested.push(row);
                continue;
            }
            // The commands made it a symlink out of their directory: refused.
            Err(Error::InvalidPath { reason, .. }) => {
                row.note = Some(format!("refused: {reason}"));
                ingested.push(row);
                continue;
            }
            Err(other) => return Err(other),
        };
        let copy = local.path().join(checked_relative(path)?);
        if let Some(parent) = copy.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        std::fs::write(&copy, &bytes).map_err(io_err(&copy))?;
        // Evidence about any other commit — the baseline above all — is not
        // the commands' to give: a line naming one refuses the file.
        if format == "jsonl" {
            let text = String::from_utf8_lossy(&bytes);
            let stray = ratchet_scorers::parse_jsonl(
                &text,
                path,
                Some(candidate),
                &ratchet_scorers::RubricSet::default(),
            )
            .ok()
            .and_then(|scores| scores.into_iter().find(|s| s.commit != *candidate));
            if let Some(s) = stray {
                row.note = Some(format!(
                    "refused: a line scores commit {}, not the candidate {candidate}",
                    s.commit
                ));
                ingested.push(row);
                continue;
            }
        }
        // What the commands wrote is evidence about the candidate, under
        // this verification's session, and declares nothing: a branch's
        // evaluation may not say how a scorer is read.
        let options = ratchet_scorers::IngestOptions {
            commit: Some(candidate.clone()),
            session: Some(session.clone()),
            suite: e.suite.clone(),
            no_new_directions: true,
            ..ratchet_scorers::IngestOptions::default()
        };
        let format = match format {
            "junit" => ratchet_scorers::Format::Junit,
            _ => ratchet_scorers::Format::Jsonl,
        };
        let got = ratchet_scorers::ingest(store, format, std::slice::from_ref(&copy), &options);
        match got {
            Ok(r) => {
                row.test_runs = r.test_runs;
                row.scores = r.scores;
                if let Some(seq) = r.already_ingested_at {
                    row.note = Some(format!("ingested before, at seq {seq}"));
                }
            }
            // What an untrusted command wrote may be malformed: that is the
            // command's failure, recorded, not the verifier's error.
            Err(ratchet_scorers::Error::Malformed {
                location, reason, ..
            }) => row.note = Some(format!("refused: {location}: {reason}")),
            // A file declaring a direction (`"direction"` on a line) is
            // refused whole: the commands may not say how a scorer is read.
            Err(e @ ratchet_scorers::Error::MayNotDeclare { .. }) => {
                row.note = Some(format!("refused: {e}"));
            }
            Err(other) => return Err(other.into()),
        }
        ingested.push(row);
    }
    let question = Question {
        class: &e.class,
        policy: class_policy,
        baseline: &e.baseline,
        candidate,
        checkpoint: None,
        allow_unpinned: false,
    };
    let (verdict, receipt) = ratchet_gate::decide_recorded(store, &question)?;
    Ok(EvaluationReport {
        candidate: candidate.clone(),
        baseline: e.baseline.clone(),
        ingested,
        verdict,
        decision_seq: receipt.map(|r| r.seq),
    })
}
