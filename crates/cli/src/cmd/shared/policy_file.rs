//! Which policy a command decides under: the pin in the trace, else the
//! policy file (`gate`, `calibrate`, and `verify`, `merge` and `bench`
//! with `--class`).

use std::path::Path;

use anyhow::Result;

use crate::Ctx;

/// The policy file a command was given, else `policy.toml` in the store
/// directory when it exists (`None`: neither; a pinned class needs none).
pub fn policy_file(ctx: &Ctx, path: Option<&Path>) -> Result<Option<ratchet_gate::Policy>> {
    let default = ctx.store_dir.join("policy.toml");
    let path = match path {
        Some(p) => p,
        None if default.exists() => default.as_path(),
        None => return Ok(None),
    };
    Ok(Some(ratchet_gate::Policy::from_path(path)?))
}

/// The class policy a command decides under: the pin in the trace when the
/// class is pinned (a policy file that differs is refused), else the file's.
pub fn class_policy(
    ctx: &Ctx,
    view: Option<&ratchet_trace::Verified>,
    class: &str,
    path: Option<&Path>,
) -> Result<(ratchet_gate::ClassPolicy, ratchet_gate::PolicySource)> {
    let file = policy_file(ctx, path)?;
    no_policy_named(
        ctx,
        class,
        ratchet_gate::resolve_policy(view, class, file.as_ref()),
    )
}

/// Neither a pin nor a file: say where the file was looked for.
pub fn no_policy_named<T>(ctx: &Ctx, class: &str, resolved: ratchet_gate::Result<T>) -> Result<T> {
    match resolved {
        Err(ratchet_gate::Error::NoPolicy { .. }) => anyhow::bail!(
            "class {class} is not pinned in the trace and there is no policy file (looked for {}); pass --policy FILE, or pin one with `ratchet policy pin FILE`",
            ctx.store_dir.join("policy.toml").display()
        ),
        resolved => Ok(resolved?),
    }
}
