//! Checkpoints: `(origin, size, head)` as a small text record, in the shape of
//! a transparency-log checkpoint, to be held somewhere the store's writer
//! cannot reach. A self-consistent chain cannot show that it was truncated or
//! rolled back; a checkpoint can.
//!
//! The text is three lines, each ending in `\n`:
//!
//! ```text
//! ratchet-trace/v1/<store id>
//! <size in decimal>
//! <head hash, 64 lower-case hex digits>
//! ```

use std::fmt;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::read::read_head;
use crate::store::Store;

const ORIGIN_PREFIX: &str = "ratchet-trace/v1/";

/// A commitment to a store's chain at one size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// The store id (`store_id` in JSON, as everywhere).
    #[serde(rename = "store_id")]
    pub origin: String,
    /// Number of events covered.
    pub size: u64,
    /// Hash of event `size` (the genesis hash when `size` is 0).
    #[serde(serialize_with = "crate::hex_hash::serialize")]
    pub head: blake3::Hash,
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{ORIGIN_PREFIX}{}\n{}\n{}\n",
            self.origin,
            self.size,
            self.head.to_hex()
        )
    }
}

impl Checkpoint {
    /// Parses the text form.
    ///
    /// # Errors
    /// [`Error::CheckpointMalformed`] naming the line and what is wrong.
    pub fn parse(text: &str) -> Result<Checkpoint> {
        let bad = |line: usize, reason: &str| Error::CheckpointMalformed {
            line,
            reason: reason.to_string(),
        };
        let lines: Vec<&str> = text.lines().collect();
        let line = |i: usize, what: &str| -> Result<&str> {
            lines
                .get(i)
                .copied()
                .ok_or_else(|| bad(i + 1, &format!("missing the {what} line")))
        };
        let origin = line(0, "origin")?
            .strip_prefix(ORIGIN_PREFIX)
            .ok_or_else(|| bad(1, &format!("origin must start with {ORIGIN_PREFIX:?}")))?;
        if origin.is_empty() || origin.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad(1, "origin must be a store id without spaces"));
        }
        let size_text = line(1, "size")?;
        if size_text.is_empty() || !size_text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(2, "size must be a decimal number"));
        }
        let size: u64 = size_text
            .parse()
            .map_err(|_| bad(2, "size does not fit in 64 bits"))?;
        let head_text = line(2, "head hash")?;
        if head_text.len() != 64
            || !head_text
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(bad(3, "head must be 64 lower-case hex digits"));
        }
        let head = blake3::Hash::from_hex(head_text).map_err(|_| bad(3, "head is not a hash"))?;
        if let Some(extra) = lines.iter().skip(3).position(|l| !l.trim().is_empty()) {
            return Err(bad(extra + 4, "unexpected text after the head hash"));
        }
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            head,
        })
    }

    /// Reads and parses a checkpoint file.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be read; [`Error::CheckpointMalformed`] if it does not parse.
    pub fn read(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
        Checkpoint::parse(&text)
    }

    /// Writes the checkpoint atomically: a temporary file in the same
    /// directory, flushed to disk, then renamed over `path`, then the
    /// directory flushed. A reader sees the old or the new record, never half.
    ///
    /// # Errors
    /// [`Error::Io`] if any step fails.
    pub fn write_atomic(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomic(path.as_ref(), self.to_string().as_bytes())
    }
}

/// Creates the directory `dir` readable, writable and searchable by its
/// owner only (0700 on Unix, whatever the umask), its missing parents as
/// usual. A directory already there is left as it is: its owner chose its
/// mode (a store shared on purpose stays shared).
///
/// # Errors
/// [`Error::Io`] if a directory cannot be made, or `dir` is a file.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        // Made meanwhile by another process: theirs, as it is.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other.map_err(Error::io(dir)),
    }
}

/// Opens `path` for writing, creating it readable and writable by its
/// owner only (0600 on Unix, whatever the umask) when it is missing; with
/// `new_only`, a file already there is an error (`AlreadyExists`). An
/// existing file keeps its mode.
pub(crate) fn open_private(path: &Path, new_only: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new_only {
        options.create_new(true);
    } else {
        options.create(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, fsync dir).
/// A new file is readable by its owner only (0600 on Unix); a file replaced
/// keeps the mode it had.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| Error::Randomness {
        reason: e.to_string(),
    })?;
    let tmp = dir.join(format!(".{name}.{}.tmp", u64::from_le_bytes(nonce)));
    let result = (|| {
        let mut file = open_private(&tmp, true).map_err(Error::io(&tmp))?;
        if let Ok(was) = std::fs::metadata(path) {
            file.set_permissions(was.permissions())
                .map_err(Error::io(&tmp))?;
        }
        file.write_all(bytes).map_err(Error::io(&tmp))?;
        file.sync_all().map_err(Error::io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(Error::io(path))?;
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(Error::io(&dir))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl Store {
    /// The checkpoint of the chain as committed now.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the head cannot be read.
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        let head = read_head(&self.conn, &self.store_id)?;
        Ok(Checkpoint {
            origin: self.store_id.clone(),
            size: head.size,
            head: head.hash,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp() -> Checkpoint {
        Checkpoint {
            origin: "01JDXK0000000000000000000A".into(),
            size: 42,
            head: blake3::hash(b"x"),
        }
    }

    #[test]
    fn text_round_trips() {
        let checkpoint = cp();
        assert_eq!(
            Checkpoint::parse(&checkpoint.to_string()).expect("parse"),
            checkpoint
        );
        assert!(
            checkpoint
                .to_string()
                .starts_with("ratchet-trace/v1/01JDXK")
        );
    }

    #[test]
    fn malformed_checkpoints_name_the_line() {
        let good = cp().to_string();
        let lines: Vec<&str> = good.lines().collect();
        let cases = [
            (String::new(), 1),
            (format!("other/{}\n{}\n{}\n", "x", lines[1], lines[2]), 1),
            (format!("{}\n-3\n{}\n", lines[0], lines[2]), 2),
            (
                format!("{}\n99999999999999999999999\n{}\n", lines[0], lines[2]),
                2,
            ),
            (format!("{}\n{}\nabc\n", lines[0], lines[1]), 3),
            (
                format!("{}\n{}\n{}\n", lines[0], lines[1], lines[2].to_uppercase()),
                3,
            ),
            (format!("{good}junk\n"), 4),
        ];
        for (text, line) in cases {
            match Checkpoint::parse(&text) {
                Err(Error::CheckpointMalformed { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: expected malformed at line {line}, got {other:?}"),
            }
        }
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cp");
        cp().write_atomic(&path).expect("write");
        let mut c2 = cp();
        c2.size = 43;
        c2.write_atomic(&path).expect("rewrite");
        assert_eq!(Checkpoint::read(&path).expect("read"), c2);
        let names: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").collect();
        assert_eq!(names.len(), 1, "temporary files left behind");
    }
}
