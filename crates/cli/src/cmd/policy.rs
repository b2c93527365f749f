//! `ratchet policy pin`: a policy file's classes pinned in the trace.

use std::path::Path;

use anyhow::Result;

use crate::flags::PolicyCommand;
use crate::{Ctx, out};

/// `ratchet policy …`: its one subcommand, `pin`.
pub fn run(ctx: &Ctx, what: PolicyCommand) -> Result<u8> {
    let PolicyCommand::Pin {
        path,
        class,
        key_file,
    } = what;
    pin(ctx, &path, class.as_deref(), key_file.as_deref())
}

/// Each class of the file (or `--class` only) pinned, and how it will
/// read each scorer from now on.
fn pin(ctx: &Ctx, path: &Path, only: Option<&str>, key_file: Option<&Path>) -> Result<u8> {
    let policy = ratchet_gate::Policy::from_path(path)?;
    let classes: Vec<&String> = match only {
        Some(c) => {
            policy.class(c)?;
            policy.class.keys().filter(|k| k.as_str() == c).collect()
        }
        None => policy.class.keys().collect(),
    };
    let mut store = ctx.open(key_file)?;
    let mut pins = Vec::new();
    let mut receipts = Vec::new();
    for class in classes {
        let class_policy = policy.class(class)?;
        let pinned = ratchet_gate::pin_policy(&mut store, class, class_policy)?;
        if let ratchet_gate::Pinned::Appended { receipt } = &pinned {
            receipts.push(*receipt);
        }
        // How the class will read each scorer from now on, whatever later
        // evidence declares: shown to the person pinning.
        let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
        let readings = ratchet_gate::readings(&view, class_policy, pinned.seq())?;
        pins.push(serde_json::json!({
            "class": class,
            "policy_hash": class_policy.hash().to_string(),
            "pin": pinned,
            "readings": readings,
        }));
        if !ctx.json {
            match &pinned {
                ratchet_gate::Pinned::Appended { receipt } => outln!(
                    "pinned class {class}: policy {} (seq {})",
                    out::short(&class_policy.hash().to_hex()),
                    receipt.seq
                ),
                ratchet_gate::Pinned::AlreadyPinned { seq } => outln!(
                    "class {class} is already pinned to policy {} (seq {seq}): nothing appended",
                    out::short(&class_policy.hash().to_hex())
                ),
            }
            for r in &readings {
                outln!("  {}: {} ({})", r.scorer, r.direction, r.from);
            }
            // The order the test will read, now pinned with the policy.
            if let Some(ids) = class_policy.declared_tasks() {
                outln!(
                    "  tasks: {} listed, read in that order (first {})",
                    ids.len(),
                    ids.first().map_or("", String::as_str)
                );
            }
        }
    }
    if ctx.json {
        out::written(&store, &receipts, serde_json::json!({ "pins": pins }))?;
    }
    Ok(0)
}
