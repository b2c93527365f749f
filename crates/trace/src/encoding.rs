//! The hashed byte layout of an event: a compatibility promise.
//!
//! Changing anything here breaks every existing store; a new layout needs a
//! new context string (the version lives in it) and a schema migration.

use crate::error::{Error, Result};

/// BLAKE3 derive-key context for a store's event-hash key (layout version 1).
pub const STORE_KEY_CONTEXT: &str = "ratchet-trace 2026-11-30 store key v1";
/// BLAKE3 derive-key context for a store's genesis hash.
pub const GENESIS_CONTEXT: &str = "ratchet-trace 2026-11-30 genesis v1";
/// BLAKE3 derive-key context turning a writer secret into the MAC key.
pub const MAC_KEY_CONTEXT: &str = "ratchet-trace 2026-11-30 writer mac key v1";
/// BLAKE3 derive-key context turning a writer secret into its public key id.
pub const KEY_ID_CONTEXT: &str = "ratchet-trace 2026-11-30 writer key id v1";

/// Where a merged event came from: the producing store, its seq there and its hash there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OriginRef<'a> {
    pub store: &'a str,
    pub seq: u64,
    pub hash: &'a [u8; 32],
}

/// The fields of one event that the chain hash covers, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HashInput<'a> {
    pub seq: u64,
    pub prev_hash: &'a [u8; 32],
    pub id: u128,
    pub ts_ms: i64,
    pub cell: &'a str,
    pub session: &'a str,
    pub kind: &'a str,
    /// Canonical commit text (see [`is_canonical_commit`]).
    pub commit: Option<&'a str>,
    pub origin: Option<OriginRef<'a>>,
    pub payload: &'a [u8],
}

/// Computes one store's event hashes, reusing the keyed state and a buffer.
#[derive(Clone)]
pub(crate) struct ChainHasher {
    store_id: String,
    key: [u8; 32],
    buf: Vec<u8>,
}

impl std::fmt::Debug for ChainHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainHasher")
            .field("store_id", &self.store_id)
            .finish_non_exhaustive()
    }
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    // Lengths are u32: every string field is validated far below 4 GiB.
    buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

/// A commit id as stored: 40 or 64 lower-case hex digits. Only this form is
/// hashed (as its bytes), so the text ↔ bytes mapping is one to one.
pub(crate) fn is_canonical_commit(c: &str) -> bool {
    (c.len() == 40 || c.len() == 64) && c.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        _ => c - b'a' + 10,
    }
}

/// The key every event hash of `store_id` is computed under.
pub(crate) fn store_key(store_id: &str) -> [u8; 32] {
    blake3::derive_key(STORE_KEY_CONTEXT, store_id.as_bytes())
}

impl ChainHasher {
    pub fn new(store_id: &str) -> Self {
        ChainHasher {
            store_id: store_id.to_string(),
            key: store_key(store_id),
            buf: Vec::with_capacity(512),
        }
    }

    /// `BLAKE3-keyed(store_key, layout(input))`, layout as documented in the crate docs.
    pub fn hash(&mut self, e: &HashInput<'_>) -> blake3::Hash {
        let buf = &mut self.buf;
        buf.clear();
        buf.extend_from_slice(&e.seq.to_le_bytes());
        buf.extend_from_slice(e.prev_hash);
        buf.extend_from_slice(&e.id.to_be_bytes());
        buf.extend_from_slice(&e.ts_ms.to_le_bytes());
        if e.cell == self.store_id {
            buf.push(0);
        } else {
            buf.push(1);
            put_str(buf, e.cell);
        }
        put_str(buf, e.session);
        put_str(buf, e.kind);
        match e.commit {
            None => buf.push(0),
            Some(c) => {
                debug_assert!(is_canonical_commit(c), "commit {c:?} is not canonical");
                buf.push((c.len() / 2) as u8);
                buf.extend(
                    c.as_bytes()
                        .chunks(2)
                        .map(|p| nibble(p[0]) << 4 | nibble(p[1])),
                );
            }
        }
        match e.origin {
            None => buf.push(0),
            Some(o) => {
                buf.push(1);
                put_str(buf, o.store);
                buf.extend_from_slice(&o.seq.to_le_bytes());
                buf.extend_from_slice(o.hash);
            }
        }
        buf.extend_from_slice(&(e.payload.len() as u64).to_le_bytes());
        if e.payload.len() > 4096 {
            let mut hasher = blake3::Hasher::new_keyed(&self.key);
            hasher.update(buf);
            hasher.update(e.payload);
            hasher.finalize()
        } else {
            // The one-shot function, not a clone of a keyed `Hasher`: the
            // hasher carries a 1.7 KB chaining-value stack that a clone
            // copies for every event (measured: most of the hashing cost of
            // a short event beside the compressions themselves).
            buf.extend_from_slice(e.payload);
            blake3::keyed_hash(&self.key, buf)
        }
    }
}

/// The hash the first event of a store chains from: bound to the store id, so a
/// row replayed from one store into another breaks.
pub(crate) fn genesis_hash(store_id: &str) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new_derive_key(GENESIS_CONTEXT);
    hasher.update(&(store_id.len() as u32).to_le_bytes());
    hasher.update(store_id.as_bytes());
    hasher.finalize()
}

/// The secret that authorises writes to a keyed store.
///
/// Derivation (documented in the crate docs): the MAC key is
/// `derive_key(MAC_KEY_CONTEXT, secret)`, and each event's MAC is
/// `keyed_hash(mac_key, event_hash)`. The key id, stored in the clear so a wrong
/// key is reported as such, is `derive_key(KEY_ID_CONTEXT, secret)`.
#[derive(Clone)]
pub struct WriterKey {
    mac_key: [u8; 32],
    id: blake3::Hash,
}

impl std::fmt::Debug for WriterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterKey")
            .field("id", &self.id.to_hex().as_str())
            .finish_non_exhaustive()
    }
}

impl WriterKey {
    /// Makes a key from at least 32 bytes of secret material.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] if the secret is shorter than 32 bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Self> {
        if secret.len() < 32 {
            return Err(Error::InvalidKey {
                reason: format!("secret is {} bytes; at least 32 are needed", secret.len()),
            });
        }
        Ok(WriterKey {
            mac_key: blake3::derive_key(MAC_KEY_CONTEXT, secret),
            id: blake3::Hash::from(blake3::derive_key(KEY_ID_CONTEXT, secret)),
        })
    }

    /// Parses the text of a key file: 64 or more hex digits, surrounding whitespace ignored.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] if the text is not even-length hex of at least 32 bytes.
    pub fn from_hex(text: &str) -> Result<Self> {
        let trimmed = text.trim();
        let bytes = decode_hex(trimmed).ok_or_else(|| Error::InvalidKey {
            reason: "a key is hex digits only (as `WriterKey::create_file` writes it)".into(),
        })?;
        Self::from_secret(&bytes)
    }

    /// Makes a fresh random key and returns it with its hex text (for a key file).
    ///
    /// # Errors
    /// [`Error::Randomness`] if the operating system's random source fails.
    pub fn generate() -> Result<(Self, String)> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| Error::Randomness {
            reason: e.to_string(),
        })?;
        let hex = encode_hex(&secret);
        Ok((Self::from_secret(&secret)?, hex))
    }

    /// Reads a key file (hex text, as [`WriterKey::create_file`] writes it).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; [`Error::InvalidKey`]
    /// (naming the file) if it does not hold a key.
    pub fn read_file(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_hex(&text).map_err(|e| match e {
            Error::InvalidKey { reason } => Error::InvalidKey {
                reason: format!("key file {}: {reason}", path.display()),
            },
            other => other,
        })
    }

    /// Generates a fresh key into a new file readable only by its owner
    /// (mode 0600 on Unix), synced to disk, and returns it. An existing
    /// file is never overwritten: a lost key makes a keyed store unwritable.
    ///
    /// # Errors
    /// [`Error::KeyFileExists`] if `path` exists; [`Error::Io`] if it cannot
    /// be written; [`Error::Randomness`] if the random source fails.
    pub fn create_file(path: impl AsRef<std::path::Path>) -> Result<Self> {
        use std::io::Write as _;
        let path = path.as_ref();
        let (key, hex) = Self::generate()?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = options.open(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                Error::KeyFileExists {
                    path: path.to_path_buf(),
                }
            } else {
                io(source)
            }
        })?;
        writeln!(file, "{hex}").map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(key)
    }

    /// The public id of this key, as recorded in a keyed store.
    pub fn id_hex(&self) -> String {
        self.id.to_hex().to_string()
    }

    /// A MAC of `bytes` under a key derived for `context` from this key's
    /// MAC key: for state a writer leaves outside the trace (a marker of a
    /// move under way) that someone without the key must not be able to
    /// forge. Never equal to an event's MAC (another derived key).
    pub fn authenticate(&self, context: &'static str, bytes: &[u8]) -> blake3::Hash {
        blake3::keyed_hash(&blake3::derive_key(context, &self.mac_key), bytes)
    }

    pub(crate) fn mac(&self, event_hash: &blake3::Hash) -> blake3::Hash {
        blake3::keyed_hash(&self.mac_key, event_hash.as_bytes())
    }
}

pub(crate) fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push(DIGITS[(b >> 4) as usize] as char);
        hex.push(DIGITS[(b & 15) as usize] as char);
    }
    hex
}

pub(crate) fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = "01JDXK0000000000000000000A";

    fn sample() -> HashInput<'static> {
        HashInput {
            seq: 1,
            prev_hash: &[7u8; 32],
            id: 0x0193_0000_0000_0000_0000_0000_0000_0001,
            ts_ms: 1_764_460_800_000,
            cell: STORE,
            session: "s",
            kind: "note",
            commit: Some("0123456789abcdef0123456789abcdef01234567"),
            origin: None,
            payload: br#"{"a":1}"#,
        }
    }

    /// The documented layout, built by hand for `sample()`.
    fn documented(payload: &[u8]) -> blake3::Hash {
        let mut buf = Vec::new();
        buf.extend_from_slice(&1u64.to_le_bytes());
        buf.extend_from_slice(&[7u8; 32]);
        buf.extend_from_slice(&0x0193_0000_0000_0000_0000_0000_0000_0001u128.to_be_bytes());
        buf.extend_from_slice(&1_764_460_800_000i64.to_le_bytes());
        buf.push(0); // cell = the store itself
        buf.extend_from_slice(&1u32.to_le_bytes());
        buf.extend_from_slice(b"s");
        buf.extend_from_slice(&4u32.to_le_bytes());
        buf.extend_from_slice(b"note");
        buf.push(20);
        buf.extend_from_slice(&[
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
        ]);
        buf.push(0); // no origin
        buf.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        buf.extend_from_slice(payload);
        let key = blake3::derive_key(STORE_KEY_CONTEXT, STORE.as_bytes());
        blake3::keyed_hash(&key, &buf)
    }

    /// Known-answer test: the layout is a compatibility promise. If this
    /// fails, existing stores no longer verify.
    #[test]
    fn event_hash_layout_is_stable() {
        let mut hasher = ChainHasher::new(STORE);
        let got = hasher.hash(&sample());
        assert_eq!(
            got,
            documented(br#"{"a":1}"#),
            "the code follows the documented layout"
        );
        assert_eq!(
            got.to_hex().as_str(),
            "e6dc47e91bb069c29295fb1efceacec3d0a1b93e400e7e69dc67fda635ad9270",
            "event hash layout v1 changed"
        );
    }

    #[test]
    fn large_payload_path_equals_small_payload_path() {
        // The two feeding strategies must hash the same bytes.
        let big = vec![b'x'; 5000];
        let mut hasher = ChainHasher::new(STORE);
        assert_eq!(
            hasher.hash(&HashInput {
                payload: &big,
                ..sample()
            }),
            documented(&big)
        );
    }

    #[test]
    fn every_field_changes_the_hash() {
        let mut hasher = ChainHasher::new(STORE);
        let base = hasher.hash(&sample());
        let prev = [8u8; 32];
        let oh = [1u8; 32];
        let variants: Vec<HashInput<'_>> = vec![
            HashInput { seq: 2, ..sample() },
            HashInput {
                prev_hash: &prev,
                ..sample()
            },
            HashInput { id: 2, ..sample() },
            HashInput {
                ts_ms: 0,
                ..sample()
            },
            HashInput {
                cell: "c",
                ..sample()
            },
            HashInput {
                session: "t",
                ..sample()
            },
            HashInput {
                kind: "nota",
                ..sample()
            },
            HashInput {
                commit: None,
                ..sample()
            },
            HashInput {
                commit: Some("1123456789abcdef0123456789abcdef01234567"),
                ..sample()
            },
            HashInput {
                origin: Some(OriginRef {
                    store: "x",
                    seq: 1,
                    hash: &oh,
                }),
                ..sample()
            },
            HashInput {
                payload: br#"{"a":2}"#,
                ..sample()
            },
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(hasher.hash(v), base, "variant {i} did not change the hash");
        }
        // The same row in another store hashes differently.
        assert_ne!(ChainHasher::new("another").hash(&sample()), base);
    }

    #[test]
    fn field_boundaries_are_unambiguous() {
        // Moving a byte from one string field to the next must change the hash.
        let mut hasher = ChainHasher::new(STORE);
        let first = hasher.hash(&HashInput {
            session: "ab",
            kind: "c",
            ..sample()
        });
        let second = hasher.hash(&HashInput {
            session: "a",
            kind: "bc",
            ..sample()
        });
        assert_ne!(first, second);
    }

    #[test]
    fn only_canonical_commits_are_hashed() {
        assert!(is_canonical_commit(&"ab".repeat(20)));
        assert!(is_canonical_commit(&"0".repeat(64)));
        assert!(!is_canonical_commit(&"AB".repeat(20)));
        assert!(!is_canonical_commit(&"a".repeat(41)));
        assert!(!is_canonical_commit("g123"));
    }

    #[test]
    fn keys_need_32_bytes_and_hex() {
        assert!(matches!(
            WriterKey::from_secret(&[1; 31]),
            Err(Error::InvalidKey { .. })
        ));
        assert!(matches!(
            WriterKey::from_hex("zz"),
            Err(Error::InvalidKey { .. })
        ));
        let (k, hex) = WriterKey::generate().expect("random key");
        let k2 = WriterKey::from_hex(&format!("  {hex}\n")).expect("parse own hex");
        assert_eq!(k.id_hex(), k2.id_hex());
        let hash = blake3::hash(b"e");
        assert_eq!(k.mac(&hash), k2.mac(&hash));
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(decode_hex(&encode_hex(&bytes)).as_deref(), Some(&bytes[..]));
        assert_eq!(decode_hex("abc"), None);
    }
}
