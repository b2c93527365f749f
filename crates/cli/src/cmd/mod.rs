//! One file per command, named as the user types it (`ratchet
//! verify-chain` is `verify_chain.rs`; a command with subcommands, such as
//! `rubric check|pin`, is one file). Each has one entry point, `run`, that
//! takes the command's flags as clap typed them, calls the library, and
//! formats the answer; a command that speaks to a server under
//! `--server` says so in the same file. What two or more commands use is
//! in [`shared`], once.

pub mod append;
pub mod arl;
pub mod bench;
pub mod best;
pub mod calibrate;
pub mod checkpoint;
pub mod completions;
pub mod demo;
pub mod export;
pub mod gate;
pub mod heal;
pub mod ingest;
pub mod init;
pub mod log;
pub mod merge;
pub mod merge_cells;
pub mod policy;
pub mod record_score;
pub mod report;
pub mod rubric;
pub mod score;
pub mod serve;
pub mod shared;
pub mod status;
pub mod token;
pub mod verify;
pub mod verify_chain;
pub mod watch;
