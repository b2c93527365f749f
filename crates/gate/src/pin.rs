//! The policy a class decides under, pinned in the trace.
//!
//! A policy file beside the store can be edited by anyone who can write
//! the store's directory; the trace cannot be (verification names the
//! edit). So a deployment pins each class's policy — [`pin_policy`], a
//! `policy` event its writer appends — and from then on every decision of
//! that class is taken under the pinned policy: [`decide`](crate::decide)
//! refuses a policy that differs from the pin in force at the seq it
//! decides at ([`Error::PolicyNotPinned`], naming the fields), and
//! [`resolve_policy`] gives a caller the pinned policy (a file that differs
//! is refused, never used silently). Changing a class's policy is a new
//! pin: an explicit, recorded act.
//!
//! ```
//! use ratchet_gate::{Policy, pin_policy, pinned_policy};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let mut store = ratchet_trace::Store::create(dir.path().join(".ratchet"), Default::default())?;
//! let policy = Policy::parse("[class.prompt]\nscorer = \"acc\"\ntest = \"gaussian\"\nalpha = 0.05\nbeta = 0.1\ngap = 0.1\nmax_n = 500\n")?;
//! pin_policy(&mut store, "prompt", policy.class("prompt")?)?;
//! let view = store.verified(&Default::default())?;
//! let pinned = pinned_policy(&view, "prompt", view.head().size)?.expect("pinned");
//! assert_eq!(pinned.policy, *policy.class("prompt")?);
//! # Ok(()) }
//! ```

use serde::Serialize;

use ratchet_records::{Pin, Pinned};
use ratchet_trace::{Store, Verified};

use crate::error::{Error, Result};
use crate::policy::{ClassPolicy, Policy};

/// A class policy pinned in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PinnedPolicy {
    /// The class.
    pub class: String,
    /// The policy.
    pub policy: ClassPolicy,
    /// Its content hash.
    #[serde(with = "ratchet_trace::hex_hash")]
    pub hash: ratchet_trace::Hash,
    /// Seq of the `policy` event.
    pub seq: u64,
}

impl PinnedPolicy {
    /// Whether `given` is this pin's policy: the same hash *and* the same
    /// values (serde_json writes NaN and ±inf as `null`, so a hash alone
    /// could not tell `pass_threshold = nan` from an absent one).
    pub fn admits(&self, given: &ClassPolicy) -> bool {
        given.hash() == self.hash && *given == self.policy
    }
}

/// Every class's pin in force at `max_seq` (the latest own pin of each),
/// by class name.
///
/// # Errors
/// [`Error::Trace`] if the store cannot be read; [`Error::Policy`] if a pin
/// does not hold a valid policy or its hash does not match it.
pub fn pinned_policies(
    view: &Verified,
    max_seq: u64,
) -> Result<std::collections::BTreeMap<String, PinnedPolicy>> {
    class_pins(&ratchet_records::pins(view, max_seq)?)
}

/// The class pins in force among `pins` (as [`ratchet_records::pins`]
/// reads them: in trace order), by class name.
///
/// # Errors
/// As [`pinned_policies`].
pub(crate) fn class_pins(
    pins: &[(u64, Pin)],
) -> Result<std::collections::BTreeMap<String, PinnedPolicy>> {
    let mut out = std::collections::BTreeMap::new();
    for (seq, pin) in pins {
        let seq = *seq;
        if let Pin::Class {
            class,
            policy,
            policy_hash,
        } = pin
        {
            let parsed = ClassPolicy::from_pinned(class, policy.clone(), seq)?;
            let hash = parsed.hash();
            if hash.to_hex().as_str() != policy_hash {
                return Err(Error::Policy {
                    field: format!("class.{class}"),
                    reason: format!(
                        "the pin at seq {seq} records hash {policy_hash}, but its policy hashes to {hash}"
                    ),
                });
            }
            out.insert(
                class.clone(),
                PinnedPolicy {
                    class: class.clone(),
                    policy: parsed,
                    hash,
                    seq,
                },
            );
        }
    }
    Ok(out)
}

/// The policy `class` is pinned to at `max_seq`, if any.
///
/// # Errors
/// As [`pinned_policies`].
pub fn pinned_policy(view: &Verified, class: &str, max_seq: u64) -> Result<Option<PinnedPolicy>> {
    Ok(pinned_policies(view, max_seq)?.remove(class))
}

/// Pins `policy` as the policy of `class`: appends a `policy` event (unless
/// the same policy is already the pin in force, then nothing). On a keyed
/// store only the holder of the writer key can do this, which is the point.
///
/// # Errors
/// [`Error::Trace`] if the trace does not verify (or is keyed and was
/// opened without its key), or cannot be read or written.
pub fn pin_policy(store: &mut Store, class: &str, policy: &ClassPolicy) -> Result<Pinned> {
    // A pin is written only into a trace that verifies (with its key).
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let head = view.head().size;
    let hash = policy.hash();
    let in_force = pinned_policy(&view, class, head)?
        .filter(|p| p.hash == hash)
        .map(|p| p.seq);
    let pin = Pin::Class {
        class: class.to_string(),
        policy: serde_json::to_value(policy).map_err(|e| Error::Serialize {
            reason: e.to_string(),
        })?,
        policy_hash: hash.to_string(),
    };
    Ok(ratchet_records::append_pin(store, &pin, in_force)?)
}

/// The fields in which two class policies differ, as policy files name
/// them (`alpha`, `guardrail[0].margin`, `direction`).
pub fn policy_differences(a: &ClassPolicy, b: &ClassPolicy) -> Vec<String> {
    fn walk(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                // Keys are the policy file's own names (serde renames the
                // lists to `guardrail` and `invariant`).
                for k in keys {
                    let p = if path.is_empty() {
                        k.to_string()
                    } else {
                        format!("{path}.{k}")
                    };
                    let null = Value::Null;
                    walk(
                        &p,
                        x.get(k).unwrap_or(&null),
                        y.get(k).unwrap_or(&null),
                        out,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    walk(&format!("{path}[{i}]"), u, v, out);
                }
            }
            (x, y) if x == y => {}
            _ => out.push(path.to_string()),
        }
    }
    let (Ok(x), Ok(y)) = (serde_json::to_value(a), serde_json::to_value(b)) else {
        return vec!["(the policy cannot be serialized)".into()];
    };
    let mut out = Vec::new();
    walk("", &x, &y, &mut out);
    if out.is_empty() && a != b {
        // JSON writes NaN and ±inf as null: the difference is in one of them.
        out.push("a value that is not a finite number".into());
    }
    out
}

/// The error for a policy that differs from the pin in force.
pub(crate) fn not_pinned(class: &str, pinned: &PinnedPolicy, given: &ClassPolicy) -> Error {
    Error::PolicyNotPinned {
        class: class.to_string(),
        seq: pinned.seq,
        pinned_hash: pinned.hash.to_string(),
        given_hash: given.hash().to_string(),
        fields: policy_differences(&pinned.policy, given),
    }
}

/// Where a decision's class policy came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// The pin in the trace (a file given, if any, was identical).
    Pinned,
    /// A policy file: the class has no pin in the trace.
    Unpinned,
}

/// The policy a decision of `class` at the head runs under: the pin in
/// force when the class is pinned (a `file` given must then be identical,
/// or it is refused), else the class from `file`.
///
/// # Errors
/// [`Error::PolicyNotPinned`] if `file`'s class differs from the pin;
/// [`Error::Policy`] if the class is not pinned and not in `file`;
/// [`Error::NoPolicy`] if it is not pinned and there is no `file`;
/// [`Error::Trace`] if the store cannot be read.
pub fn resolve_policy(
    view: Option<&Verified>,
    class: &str,
    file: Option<&Policy>,
) -> Result<(ClassPolicy, PolicySource)> {
    // Without a verified view no pin can be read: the file's class is used,
    // and the decision it feeds fails closed on the unverified trace.
    let pinned = match view {
        Some(view) => pinned_policy(view, class, view.head().size)?,
        None => None,
    };
    match (pinned, file) {
        (Some(p), Some(file)) => match file.class.get(class) {
            Some(given) if p.admits(given) => Ok((p.policy, PolicySource::Pinned)),
            Some(given) => Err(not_pinned(class, &p, given)),
            None => Err(Error::PolicyNotPinned {
                class: class.to_string(),
                seq: p.seq,
                pinned_hash: p.hash.to_string(),
                given_hash: String::new(),
                fields: vec![format!(
                    "class.{class} (the policy file does not define it)"
                )],
            }),
        },
        (Some(p), None) => Ok((p.policy, PolicySource::Pinned)),
        (None, Some(file)) => Ok((file.class(class)?.clone(), PolicySource::Unpinned)),
        (None, None) => Err(Error::NoPolicy {
            class: class.to_string(),
        }),
    }
}

/// How a pinned class will read one scorer: its direction and where that
/// comes from, shown to the key holder when pinning (what the gate then
/// reads, whatever evidence declares later).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reading {
    /// The scorer.
    pub scorer: String,
    /// Which way it improves.
    pub direction: ratchet_records::Direction,
    /// `policy`, `declared at seq N` or `default for its name`.
    pub from: String,
}

/// The direction of every scorer `policy` reads (primary, guardrails,
/// invariants), as a decision of the class pinned at `at` reads it: the
/// policy's, else the trace's own declaration at or before `at`, else the
/// default for the name.
///
/// # Errors
/// [`Error::Trace`] if a declaration does not parse.
pub fn readings(view: &Verified, policy: &ClassPolicy, at: u64) -> Result<Vec<Reading>> {
    // A class without a sequential test has no primary scorer to read.
    let primary = (policy.test != crate::TestKind::None)
        .then_some((policy.scorer.as_str(), policy.direction));
    let stated = primary
        .into_iter()
        .chain(
            policy
                .guardrails
                .iter()
                .map(|g| (g.scorer.as_str(), Some(g.direction))),
        )
        .chain(policy.invariants.iter().map(|i| (i.scorer.as_str(), None)));
    let mut out: Vec<Reading> = Vec::new();
    for (scorer, stated) in stated {
        if out.iter().any(|r| r.scorer == scorer) {
            continue;
        }
        let declared = ratchet_records::declared_direction(view, scorer, at)?;
        let (direction, from) = match (stated, declared) {
            (Some(d), _) => (d, "policy".to_string()),
            (None, Some((d, seq))) => (d, format!("declared at seq {seq}")),
            (None, None) => (
                ratchet_records::direction_of(scorer),
                "default for its name".to_string(),
            ),
        };
        out.push(Reading {
            scorer: scorer.to_string(),
            direction,
            from,
        });
    }
    Ok(out)
}
