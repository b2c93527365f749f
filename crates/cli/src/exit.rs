//! Every command's exit codes: one table, one meaning per code. The
//! table is printed by `ratchet --help` and is the README's "Exit codes"
//! (a test checks they agree), and the gate's statuses map onto it
//! ([`ratchet_gate::GateStatus::exit_code`], checked below).

/// Done; `gate`: promote.
pub const SUCCESS: u8 = 0;
/// A negative finding: `gate` rejected on measured evidence,
/// `verify-chain`/`status` found tampering, `watch` an alarm, `best` no
/// qualifying commit, `bench` a failed build or run.
pub const NEGATIVE: u8 = 1;
/// An error: bad input, a missing store, an unreadable file, usage, a
/// keyed store read without its key.
pub const ERROR: u8 = 2;
/// `gate`, `bench`: continue — collect more evidence.
pub const CONTINUE: u8 = 3;
/// `gate`: cannot decide — evidence missing or unknown.
pub const MISSING_EVIDENCE: u8 = 4;
/// `gate`: cannot decide — the trace failed verification.
pub const UNVERIFIED: u8 = 5;
/// `gate`: truncated — the test reached `max_n` undecided.
pub const TRUNCATED: u8 = 6;
/// `status`, `verify-chain --repo`: a promotion ref disagrees with the
/// trace (which verified).
pub const REF_FAULT: u8 = 7;

/// The table: code and meaning.
pub const TABLE: &[(u8, &str)] = &[
    (SUCCESS, "done; gate: promote"),
    (
        NEGATIVE,
        "a negative finding: gate rejected on measured evidence, tampering found, an alarm (watch), no qualifying commit (best), a failed build or run (bench)",
    ),
    (
        ERROR,
        "an error: bad input, missing store, unreadable file, usage, a keyed store read without its key",
    ),
    (CONTINUE, "gate, bench: continue — collect more evidence"),
    (
        MISSING_EVIDENCE,
        "gate: cannot decide — evidence missing or unknown",
    ),
    (
        UNVERIFIED,
        "gate: cannot decide — the trace failed verification",
    ),
    (
        TRUNCATED,
        "gate: truncated — the test reached max_n undecided",
    ),
    (
        REF_FAULT,
        "status, verify-chain --repo: a promotion ref disagrees with the trace",
    ),
];

/// The table as `ratchet --help` prints it.
pub fn help() -> String {
    let mut out = String::from("Exit codes:\n");
    for (code, meaning) in TABLE {
        out.push_str(&format!("  {code}  {meaning}\n"));
    }
    out
}

/// The table as the README shows it (a Markdown table).
#[cfg(test)]
fn markdown() -> String {
    let mut out = String::from("| exit | meaning |\n|---|---|\n");
    for (code, meaning) in TABLE {
        out.push_str(&format!("| {code} | {meaning} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_gate::GateStatus;

    #[test]
    fn each_code_has_one_meaning_and_the_gate_maps_onto_the_table() {
        for (i, (code, _)) in TABLE.iter().enumerate() {
            assert_eq!(usize::from(*code), i, "codes are 0..n, each once");
        }
        for (status, code) in [
            (GateStatus::Promote, SUCCESS),
            (GateStatus::Reject, NEGATIVE),
            (GateStatus::Continue, CONTINUE),
            (GateStatus::MissingEvidence, MISSING_EVIDENCE),
            (GateStatus::UnverifiedTrace, UNVERIFIED),
            (GateStatus::Truncated, TRUNCATED),
        ] {
            assert_eq!(status.exit_code(), code, "{status:?}");
        }
    }

    #[test]
    fn the_readme_shows_the_table_as_it_is() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
        assert!(
            readme.contains(&markdown()),
            "README.md's exit-code table differs from crates/cli/src/exit.rs; paste this under \"Exit codes\":\n{}",
            markdown()
        );
    }
}
