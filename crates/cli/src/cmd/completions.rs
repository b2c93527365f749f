//! `ratchet completions`: a shell's completion script.

use anyhow::Result;
use clap::CommandFactory;

use crate::flags::Cli;

/// The script for `shell`, on stdout.
pub fn run(shell: clap_complete::Shell) -> Result<u8> {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "ratchet",
        &mut std::io::stdout(),
    );
    Ok(0)
}
