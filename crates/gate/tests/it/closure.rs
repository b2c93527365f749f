//! The architecture invariant of ARCHITECTURE.md, checked: the gate and
//! the trace link no parser of any tool's format. A reviewer who trusts a
//! verdict reads the trace, the records and the gate — none of the
//! importers, nor the XML, zip, compression and text-encoding crates they
//! pull in. `cargo tree` (offline: it reads `Cargo.lock`) lists each
//! crate's normal dependency closure, for every target platform.

use std::path::Path;
use std::process::Command;

/// What a crate of the trusted core may not link: the importers, and the
/// format parsers only they need.
const PARSERS: [&str; 6] = [
    "ratchet-scorers",
    "roxmltree",
    "zip",
    "flate2",
    "encoding_rs",
    "ruzstd",
];

/// The names of the crates in `package`'s normal dependency closure.
fn closure(package: &str) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(&cargo)
        .args(["tree", "--offline", "--manifest-path"])
        .arg(&manifest)
        .args([
            "-p", package, "-e", "normal", "--prefix", "none", "--target", "all",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(&cargo).display()));
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("cargo tree writes UTF-8");
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_gate_the_records_and_the_trace_link_no_parser_of_any_tools_format() {
    for package in ["ratchet-gate", "ratchet-records", "ratchet-trace"] {
        let names = closure(package);
        // The listing is the closure, not an empty or failed one.
        assert!(
            names.iter().any(|n| n == package) && names.iter().any(|n| n == "serde_json"),
            "cargo tree -p {package} listed {names:?}"
        );
        let linked: Vec<&str> = PARSERS
            .into_iter()
            .filter(|p| names.iter().any(|n| n == p))
            .collect();
        assert!(
            linked.is_empty(),
            "{package} links {linked:?}: the trusted core (trace, records, gate) may link no \
             importer and no parser of a tool's format (ARCHITECTURE.md, Architecture \
             Invariant); read the payload through ratchet-records, or move the type there"
        );
    }
    // The gate reads its records through ratchet-records, the trace beneath it.
    let gate = closure("ratchet-gate");
    assert!(gate.iter().any(|n| n == "ratchet-records"), "{gate:?}");
    assert!(
        !closure("ratchet-records")
            .iter()
            .any(|n| n == "ratchet-gate")
    );
}
