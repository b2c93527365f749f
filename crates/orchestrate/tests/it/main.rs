//! Verify, merge and heal in real git repositories with real processes:
//! one integration binary, one module per promise.

mod bench;
mod common;
mod heal;
mod hostile_commands_and_branches;
mod merge;
mod ranking_over_kept_statistics;
mod ranking_over_rewritten_stores;
mod verify;
