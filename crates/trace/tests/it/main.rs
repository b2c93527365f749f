//! The trace store as its users and its attackers meet it: one integration
//! binary, one module per promise (the store's API, durability across
//! crashes, the files beside it, tampering, merges, the warm ledger, the
//! statistics kept on append, bytes the chain does not cover).

mod attacks;
mod common;
mod durability;
mod encoding_and_raw_writes;
mod files;
mod fixture;
mod kept_statistics;
mod ledger;
mod merge;
mod props;
mod store;
mod tamper;
