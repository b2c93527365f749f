//! `ratchet init`: a new store, keyed when asked.

use std::path::Path;

use anyhow::{Result, anyhow};
use ratchet_trace::{Store, StoreOptions, WriterKey};

use crate::{Ctx, out};

/// The store created at `--store`; with `--keyed`, its writer key generated
/// into `--key-file`.
pub fn run(ctx: &Ctx, keyed: bool, key_file: Option<&Path>) -> Result<u8> {
    let mut options = StoreOptions::default();
    if keyed {
        let path = key_file.ok_or_else(|| anyhow!("--keyed needs --key-file"))?;
        options = options.writer_key(WriterKey::create_file(path)?);
    }
    let store = Store::create(&ctx.store_dir, options)?;
    if ctx.json {
        out::written(
            &store,
            &[],
            serde_json::json!({
                "writer_key_id": store.writer_key_id(),
                "key_file": key_file.map(out::absolute),
            }),
        )?;
    } else {
        outln!("created store {} at {}", store.id(), store.dir().display());
        if let Some(k) = store.writer_key_id() {
            outln!(
                "keyed: writer key id {k}; keep the key file secret and pass it with --key-file"
            );
        }
    }
    Ok(0)
}
