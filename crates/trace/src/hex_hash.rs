//! A [`Hash`](blake3::Hash) in JSON: 64 lower-case hex digits, the form
//! every hash takes in ratchet's output and in recorded payloads. Use it as
//! `#[serde(with = "ratchet_trace::hex_hash")]` on a `Hash` field.
//!
//! # Examples
//!
//! ```
//! use ratchet_trace::Hash;
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct Head {
//!     #[serde(with = "ratchet_trace::hex_hash")]
//!     hash: Hash,
//! }
//! let head = Head { hash: blake3::hash(b"x") };
//! let json = serde_json::to_string(&head).unwrap();
//! assert_eq!(json.len(), r#"{"hash":""}"#.len() + 64);
//! assert_eq!(serde_json::from_str::<Head>(&json).unwrap(), head);
//! assert!(serde_json::from_str::<Head>(r#"{"hash":"ab"}"#).is_err());
//! ```

use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

/// Writes the hash as 64 lower-case hex digits.
///
/// # Errors
/// Only the serializer's own.
pub fn serialize<S: Serializer>(h: &blake3::Hash, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(h.to_hex().as_str())
}

/// Reads 64 hex digits (either case) as a hash.
///
/// # Errors
/// A deserializer error naming the text if it is not 64 hex digits.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<blake3::Hash, D::Error> {
    let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
    blake3::Hash::from_hex(text.as_bytes())
        .map_err(|_| D::Error::custom(format!("{text:?} is not a hash (64 hex digits)")))
}
