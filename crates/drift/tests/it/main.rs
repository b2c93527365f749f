//! The detectors against published ARL tables and seeded simulation, and
//! the monitor as it is fed: one integration binary, one module per promise.

mod alloc;
mod bernoulli;
mod monitor;
mod path;
mod tables;
mod warmup;
