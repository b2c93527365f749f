//! Content-addressed blobs for payloads too big to inline: `blobs/ab/cdef…`,
//! named by the BLAKE3 hash of their content, written atomically, verified on read;
//! owner-only (files 0600, directories 0700 on Unix), as the rest of the store.

use std::path::PathBuf;

use crate::checkpoint::{create_private_dir, write_atomic};
use crate::error::{Error, Result};
use crate::store::Store;

impl Store {
    fn blob_path(&self, hash: &blake3::Hash) -> PathBuf {
        let hex = hash.to_hex();
        self.dir.join("blobs").join(&hex[..2]).join(&hex[2..])
    }

    /// Stores `bytes` and returns their hash; storing the same content twice
    /// writes once. Reference the hash (`hash.to_hex()`) from an event payload.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be written.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<blake3::Hash> {
        let hash = blake3::hash(bytes);
        let path = self.blob_path(&hash);
        if path.is_file() {
            return Ok(hash);
        }
        // `blobs/` and `blobs/ab/`, owner only (0700), as the store's directory.
        if let Some(parent) = path.parent() {
            if let Some(blobs) = parent.parent() {
                create_private_dir(blobs)?;
            }
            create_private_dir(parent)?;
        }
        write_atomic(&path, bytes)?;
        tracing::debug!(blob = %hash, bytes = bytes.len(), "blob stored");
        Ok(hash)
    }

    /// Reads a blob and checks that its content still hashes to its name.
    ///
    /// # Errors
    /// [`Error::BlobMissing`] if there is none; [`Error::BlobCorrupt`] if the
    /// content was altered; [`Error::Io`] if it cannot be read.
    pub fn get_blob(&self, hash: &blake3::Hash) -> Result<Vec<u8>> {
        let path = self.blob_path(hash);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::BlobMissing {
                    hash: hash.to_hex().to_string(),
                });
            }
            Err(e) => return Err(Error::Io { path, source: e }),
        };
        let actual = blake3::hash(&bytes);
        if actual != *hash {
            return Err(Error::BlobCorrupt {
                hash: hash.to_hex().to_string(),
                actual: actual.to_hex().to_string(),
            });
        }
        Ok(bytes)
    }
}
