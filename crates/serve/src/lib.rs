//! `ratchet serve`: the trusted side of ratchet as a long-lived process.
//!
//! One [`Owner`] holds the store, its writer key and the verified view
//! (refreshed, never re-read whole, before each request); clients hold only
//! capability tokens ([`Scope`]: `record`, `decide`, `read`, `admin`) and
//! speak HTTP/JSON over a Unix socket (mode 0600) or a loopback TCP port.
//! Whoever records evidence never touches the files, never sees the key
//! (the server MACs every event), cannot decide, pin or read unless its
//! token says so, and records only under its own session.
//!
//! A record token's cost is bounded: quotas ([`Quota`]: events and bytes,
//! in all and per hour) counted from each batch's `ingest` marker, whose
//! key names the token, the bytes sent and the token's cell; bodies read
//! only under one of [`ServeOptions::max_parsing`] permits (64 concurrent
//! 4 MB uploads: 42–69 MB peak resident on a debug build, see
//! benches/README.md, issue 35). [`Owner::reverify`] verifies the whole
//! file again (every [`ServeOptions::reverify_every`]) against the head the
//! server holds and [`ServeOptions::checkpoint`]; a fault refuses decisions
//! and writes until restart. [`Client`] sends a token over TCP only to a
//! loopback address ([`is_loopback`]).
//!
//! The routes are described once, in [`ROUTES`]; [`openapi`] renders them
//! as an OpenAPI 3.1 document (served at `GET /v1/openapi.json`).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use ratchet_serve::{Scope, TokenSpec, mint_token, Owner, ServeOptions};
//! let dir = tempfile::tempdir()?;
//! let mut store = ratchet_trace::Store::create(dir.path().join("s"), Default::default())?;
//! let minted = mint_token(&mut store, &TokenSpec {
//!     can: vec![Scope::Record], session: "cell-1".into(), cell: None, expires_at_ms: None,
//!     quota: Default::default(),
//! })?;
//! assert!(minted.token.starts_with("rtk_"));
//! let owner = Owner::new(store, ServeOptions::default())?;
//! let caller = owner.authenticate(&minted.token)?;
//! assert_eq!(caller.spec.session, "cell-1");
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod api;
mod client;
mod error;
mod owner;
mod server;
mod tokens;

pub use api::{ROUTES, Route, openapi};
pub use client::{Client, Endpoint, Response, is_loopback};
pub use error::{Error, Result};
pub use owner::{Health, Owner, ServeOptions};
pub use server::{Listen, serve};
pub use tokens::{
    Capability, MAX_CELL_LEN, Minted, Quota, Scope, TokenSpec, authenticate, expires_in,
    mint_token, now_ms, parse_duration, revoke_token, tokens_in,
};
