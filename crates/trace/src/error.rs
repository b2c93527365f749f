//! The one error type of `ratchet-trace`.

use std::path::PathBuf;

use crate::verify::Fault;

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the trace store.
///
/// Every variant names what was wrong and, where there is one, what to do.
/// An error returned by a write means nothing of that write was stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// SQLite reported an error while doing `context`.
    #[error("sqlite error while {context}: {source}")]
    Sqlite {
        /// What the store was doing.
        context: &'static str,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// A file system operation on `path` failed.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The path exists but is not a ratchet trace store.
    #[error("{path} is not a ratchet trace store: {reason}")]
    NotAStore {
        /// The store directory or database file.
        path: PathBuf,
        /// Why it was not recognised.
        reason: String,
    },
    /// `create` was asked to make a store where one already exists.
    #[error("a ratchet store already exists at {path}; open it instead of creating it")]
    StoreExists {
        /// The store directory.
        path: PathBuf,
    },
    /// `open` found no store at the path.
    #[error("no ratchet store at {path}; create one first")]
    StoreMissing {
        /// The store directory.
        path: PathBuf,
    },
    /// The store was written by a newer ratchet with a schema this version does not know.
    #[error(
        "{path} has schema version {found} but this ratchet supports up to {supported}; upgrade ratchet to read it"
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Newest version this build understands.
        supported: i64,
    },
    /// An event, score or test run given to the store is invalid; nothing was stored.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The field that is wrong (`payload`, `commit`, `score.value`, …).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A payload is larger than the inline limit; big data belongs in the blob store.
    #[error(
        "payload is {size} bytes, over the inline limit of {limit} bytes; store large data with put_blob and reference its hash in the payload"
    )]
    PayloadTooLarge {
        /// Size of the payload.
        size: usize,
        /// The store's inline limit.
        limit: usize,
    },
    /// The store is keyed and this write needs the writer key.
    #[error("this store is keyed: writing to it needs its writer key")]
    KeyRequired,
    /// A write was attempted on a store opened read-only.
    #[error(
        "the store at {path} is open read-only (its file or directory cannot be written): nothing was written"
    )]
    ReadOnly {
        /// The store directory.
        path: PathBuf,
    },
    /// The operating system's random source failed (needed for event ids,
    /// keys and checkpoint nonces); nothing was written.
    #[error("the operating system's random source failed: {reason}")]
    Randomness {
        /// What the operating system said.
        reason: String,
    },
    /// A new key file was to be written where a file already exists.
    #[error("key file {path} already exists; a key is never overwritten")]
    KeyFileExists {
        /// The existing file.
        path: PathBuf,
    },
    /// The writer key given is not the key this store was created with.
    #[error("the writer key does not match this store's key (key id {expected}, given {given})")]
    WrongKey {
        /// Key id recorded in the store.
        expected: String,
        /// Key id of the key given.
        given: String,
    },
    /// A writer key file or string could not be used.
    #[error("invalid writer key: {reason}")]
    InvalidKey {
        /// What is wrong with it.
        reason: String,
    },
    /// Verification found the trace altered.
    #[error("trace verification failed: {fault}")]
    Tampered {
        /// The first fault found.
        fault: Fault,
    },
    /// A cell store offered for merging does not verify; nothing was ingested.
    #[error("cell store {cell} failed verification, nothing ingested: {fault}")]
    CellTampered {
        /// The cell store directory.
        cell: PathBuf,
        /// The first fault found in the cell.
        fault: Fault,
    },
    /// A keyed store was verified without its writer key where a decision
    /// or an action depends on it: the plain chain alone can be rebuilt by
    /// anyone who can write the file.
    #[error(
        "this store is keyed (key id {key_id}) but was opened without its writer key: its MACs cannot be checked, so nothing is decided from it (pass the key file)"
    )]
    MacsUnchecked {
        /// The key id the store declares.
        key_id: String,
    },
    /// A cell's history changed after an earlier merge; nothing was ingested.
    #[error(
        "cell {cell_id} was rewritten after an earlier merge: its event {seq} no longer has the hash the home recorded; nothing ingested"
    )]
    CellRewritten {
        /// The cell's store id.
        cell_id: String,
        /// The cell seq of the recorded high-water mark.
        seq: u64,
    },
    /// A batch from a cell does not link to the recorded head or breaks inside; nothing ingested.
    #[error("cell {cell_id} batch breaks at cell seq {seq}: {reason}; nothing ingested")]
    BrokenBatch {
        /// The cell's store id.
        cell_id: String,
        /// Cell seq of the first bad link.
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// The same event id arrived with different content; nothing was ingested.
    #[error(
        "equivocation: event id {id} arrived from cell {cell_id} with content that differs from home event {existing_seq}; nothing ingested"
    )]
    Equivocation {
        /// The event id.
        id: String,
        /// The cell that sent the second version.
        cell_id: String,
        /// The home seq of the first version.
        existing_seq: u64,
    },
    /// A keyed cell was offered for merging without its writer key: its plain
    /// chain could have been rebuilt by anyone who can write its file.
    #[error(
        "cell {cell_id} is keyed (key id {key_id}): merging needs its writer key to check the MACs; nothing ingested"
    )]
    CellKeyRequired {
        /// The cell's store id.
        cell_id: String,
        /// The key id the cell declares.
        key_id: String,
    },
    /// A cell's event names another producer than the cell itself (or claims
    /// to come from the home store, which holds no such event).
    #[error(
        "cell {cell_id} event {seq} claims to be produced by {claimed}, which the merge cannot verify; nothing ingested"
    )]
    ForgedProducer {
        /// The cell's store id.
        cell_id: String,
        /// Cell seq of the event.
        seq: u64,
        /// The producer the event claims.
        claimed: String,
    },
    /// A reserved event kind was given to the generic append: only its owner's
    /// typed API writes it.
    #[error(
        "event kind {kind:?} is reserved: only {owner} writes it (generic appends cannot forge it)"
    )]
    ReservedKind {
        /// The kind.
        kind: String,
        /// Who writes it.
        owner: &'static str,
    },
    /// The database schema is not the one ratchet created (a trigger, view,
    /// table or index was added, dropped or altered): nothing is written to
    /// it, since a planted trigger would rewrite every honest write.
    #[error(
        "the store's database schema was altered ({what}); refusing to write. Verify the store and restore it from a trusted copy"
    )]
    SchemaAltered {
        /// What differs.
        what: String,
    },
    /// A store cannot merge itself.
    #[error("cannot merge store {store_id} into itself")]
    MergeSelf {
        /// The store id.
        store_id: String,
    },
    /// A checkpoint record could not be parsed.
    #[error("malformed checkpoint at line {line}: {reason}")]
    CheckpointMalformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A checkpoint belongs to another store.
    #[error("checkpoint is for store {checkpoint_origin}, but this store is {store_origin}")]
    CheckpointOrigin {
        /// Origin named in the checkpoint.
        checkpoint_origin: String,
        /// This store's origin.
        store_origin: String,
    },
    /// A blob's content does not hash to its name.
    #[error("blob {hash} is corrupt: its content hashes to {actual}")]
    BlobCorrupt {
        /// The expected (addressed) hash.
        hash: String,
        /// The hash of what is on disk.
        actual: String,
    },
    /// No blob with this hash is stored.
    #[error("no blob {hash} in this store")]
    BlobMissing {
        /// The hash asked for.
        hash: String,
    },
}

impl Error {
    pub(crate) fn sqlite(context: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
        move |source| Error::Sqlite { context, source }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidInput {
            field,
            reason: reason.into(),
        }
    }
}
