//! Shared fixtures for the benchmarks.
