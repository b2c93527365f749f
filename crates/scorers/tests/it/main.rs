//! Scoring and ingestion on real files real tools wrote: one integration
//! binary, one module per promise.

mod batch;
mod ingest;
