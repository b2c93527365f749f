//! `ratchet verify-chain`: every hash (and MAC, with the key) recomputed,
//! against a checkpoint when given, the promotion refs compared.

use anyhow::{Context, Result, anyhow};
use ratchet_trace::{Checkpoint, VerifyOptions, WriterKey};

use crate::cmd::shared::ref_exit;
use crate::flags::VerifyChainFlags;
use crate::{Ctx, exit, out};

/// Exit 0 when the store verifies, 1 naming the first bad seq when not,
/// [`exit::REF_FAULT`] when it verifies and a promotion ref disagrees.
pub fn run(ctx: &Ctx, flags: VerifyChainFlags) -> Result<u8> {
    let VerifyChainFlags {
        checkpoint,
        key_file,
        without_macs,
        repo,
    } = flags;
    // RATCHET_KEY_FILE names the key when --key-file does not.
    let key_file = crate::key_file_or_env(key_file.as_deref());
    let key_file = key_file.as_deref();
    let store = ctx.open_read(key_file)?;
    if let (Some(key_id), None, false) = (store.writer_key_id(), key_file, without_macs) {
        return Err(anyhow!(
            "this store is keyed (key id {key_id}): pass --key-file to check its MACs, or --without-macs to verify the plain chain only (which anyone who can write the file can rebuild)"
        ));
    }
    let mut options = VerifyOptions::default();
    if let Some(p) = key_file {
        options = options.key(WriterKey::read_file(p)?);
    }
    if let Some(p) = &checkpoint {
        options = options.checkpoint(
            Checkpoint::read(p).with_context(|| format!("checkpoint {}", p.display()))?,
        );
    }
    let (report, view) = store.verify_and_fold(&options)?;
    // Promotion refs are compared only with a trace that verified: a
    // disagreeing ref is then a fault of its own.
    let ref_faults = match (repo.as_deref(), &view) {
        (Some(r), Some(view)) => Some(ratchet_orchestrate::check_promotion_refs(r, view)?),
        _ => None,
    };
    if ctx.json {
        #[derive(serde::Serialize)]
        struct VerifyJson<'a> {
            #[serde(flatten)]
            report: &'a ratchet_trace::VerifyReport,
            #[serde(skip_serializing_if = "Option::is_none")]
            ref_faults: Option<&'a Vec<ratchet_orchestrate::RefFault>>,
        }
        out::json(&VerifyJson {
            report: &report,
            ref_faults: ref_faults.as_ref(),
        })?;
    } else if let Some(f) = &report.fault {
        outln!(
            "TAMPERED: store {} fails verification at {f}",
            report.store_id
        );
    } else if report.macs_unchecked() {
        outln!(
            "plain chain ok, MACs NOT checked: {} events, head {} (a keyed store: only --key-file shows that its writer wrote them)",
            report.size,
            report.head.to_hex()
        );
    } else {
        outln!(
            "ok: {} events verified{}{}, head {}",
            report.size,
            if report.macs_checked {
                ", MACs checked"
            } else {
                ""
            },
            if report.checkpoint_checked {
                ", consistent with the checkpoint"
            } else {
                ""
            },
            report.head.to_hex()
        );
    }
    if !report.is_valid() {
        return Ok(exit::NEGATIVE);
    }
    ref_exit(ctx, ref_faults.as_deref())
}
