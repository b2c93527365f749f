//! Pins: what a store's writer fixed in the trace so that nothing beside
//! the trace can change a decision. A `policy` event holds one [`Pin`] —
//! the policy a class decides under (written by `ratchet_gate::pin_policy`,
//! read there) or the version a rubric scores with
//! (`ratchet_scorers::pin_rubric`).
//!
//! Only this store's own pins count: a pin merged in from a cell is what
//! the cell decided under, never a rule for this store. The latest own pin
//! at or before a seq is the one in force there, so a past verdict is
//! recomputed under the pin it was taken under.

use serde::{Deserialize, Serialize};

use ratchet_trace::{Event, EventDraft, Receipt, ReservedKind, Result, Store, Verified};

/// One pin, the payload of a `policy` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pin", rename_all = "snake_case", deny_unknown_fields)]
pub enum Pin {
    /// The policy an artifact class decides under.
    Class {
        /// The class.
        class: String,
        /// The class policy in its canonical JSON form (what its hash covers).
        policy: serde_json::Value,
        /// The policy's content hash (`ClassPolicy::hash`).
        policy_hash: String,
    },
    /// The version a rubric scores with (its content hash).
    Rubric {
        /// The rubric's name (its scores' scorer).
        rubric: String,
        /// Its content hash (`ratchet_scorers::Rubric::version`).
        version: String,
    },
}

/// This store's own pins at or before `max_seq`, in trace order, with
/// their seqs.
///
/// # Errors
/// [`ratchet_trace::Error`] if a pin event of this store does not parse (a
/// `policy` event is written only by the pin functions: one that does not
/// parse is not a pin anyone may ignore; verify the store).
pub fn pins(view: &Verified, max_seq: u64) -> Result<Vec<(u64, Pin)>> {
    pins_among(view.events(), max_seq)
}

/// [`pins`] among `events` (in seq order): a writer's check of what it is
/// about to append reads them from the store ([`Store::events_of_kinds`]).
///
/// # Errors
/// As [`pins`].
pub fn pins_among(events: &[Event], max_seq: u64) -> Result<Vec<(u64, Pin)>> {
    Ok(
        ratchet_trace::own_control_events::<Pin>(events, ReservedKind::Policy, max_seq)?
            .into_iter()
            .map(|(e, pin)| (e.seq, pin))
            .collect(),
    )
}

/// The version rubric `name` is pinned to at or before `max_seq` (the
/// latest own pin), with the pin's seq.
///
/// # Errors
/// As [`pins`].
pub fn pinned_rubric_version(
    view: &Verified,
    name: &str,
    max_seq: u64,
) -> Result<Option<(String, u64)>> {
    Ok(rubric_pin_in(&pins(view, max_seq)?, name).map(|(v, seq)| (v.to_string(), seq)))
}

/// The latest pin of rubric `name` among `pins` (in trace order, as
/// [`pins`] reads them): its version and seq.
pub fn rubric_pin_in<'a>(pins: &'a [(u64, Pin)], name: &str) -> Option<(&'a str, u64)> {
    pins.iter().rev().find_map(|(seq, p)| match p {
        Pin::Rubric { rubric, version } if rubric == name => Some((version.as_str(), *seq)),
        _ => None,
    })
}

/// What a pin did: appended, or already in force.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Pinned {
    /// The pin was appended.
    Appended {
        /// Its `policy` event.
        receipt: Receipt,
    },
    /// The same pin is already in force: nothing was appended.
    AlreadyPinned {
        /// Seq of the pin in force.
        seq: u64,
    },
}

impl Pinned {
    /// The seq of the pin now in force.
    pub fn seq(&self) -> u64 {
        match self {
            Pinned::Appended { receipt } => receipt.seq,
            Pinned::AlreadyPinned { seq } => *seq,
        }
    }
}

/// Appends `pin` unless `in_force` says the same pin already stands
/// (session `pin:<what>`). Shared by rubric and class pins.
///
/// # Errors
/// [`ratchet_trace::Error`] if the append fails (it names why: a store
/// opened read-only, a keyed store opened without its key, a full disk).
pub fn append_pin(store: &mut Store, pin: &Pin, in_force: Option<u64>) -> Result<Pinned> {
    if let Some(seq) = in_force {
        return Ok(Pinned::AlreadyPinned { seq });
    }
    let session = match pin {
        Pin::Class { class, .. } => format!("pin:class:{class}"),
        Pin::Rubric { rubric, .. } => format!("pin:rubric:{rubric}"),
    };
    let receipt =
        store.append(EventDraft::reserved(ReservedKind::Policy, pin)?.session(session))?;
    Ok(Pinned::Appended { receipt })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_is_stored_as_it_always_was() {
        let pin = Pin::Rubric {
            rubric: "helpfulness".into(),
            version: "abc".into(),
        };
        let json = serde_json::to_string(&pin).expect("json");
        assert_eq!(
            json,
            r#"{"pin":"rubric","rubric":"helpfulness","version":"abc"}"#
        );
        assert_eq!(serde_json::from_str::<Pin>(&json).expect("parses"), pin);
        let class = Pin::Class {
            class: "prompt".into(),
            policy: serde_json::json!({"alpha": 0.05}),
            policy_hash: "h".into(),
        };
        assert_eq!(
            serde_json::to_string(&class).expect("json"),
            r#"{"pin":"class","class":"prompt","policy":{"alpha":0.05},"policy_hash":"h"}"#
        );
        assert!(
            serde_json::from_str::<Pin>(r#"{"pin":"rubric","rubric":"r","version":"v","x":1}"#)
                .is_err()
        );
    }

    #[test]
    fn the_latest_pin_of_a_rubric_is_the_one_in_force() {
        let pins = vec![
            (
                3,
                Pin::Rubric {
                    rubric: "r".into(),
                    version: "v1".into(),
                },
            ),
            (
                5,
                Pin::Rubric {
                    rubric: "s".into(),
                    version: "w".into(),
                },
            ),
            (
                9,
                Pin::Rubric {
                    rubric: "r".into(),
                    version: "v2".into(),
                },
            ),
        ];
        assert_eq!(rubric_pin_in(&pins, "r"), Some(("v2", 9)));
        assert_eq!(rubric_pin_in(&pins[..2], "r"), Some(("v1", 3)));
        assert_eq!(rubric_pin_in(&pins, "t"), None);
        assert_eq!(Pinned::AlreadyPinned { seq: 4 }.seq(), 4);
    }
}
