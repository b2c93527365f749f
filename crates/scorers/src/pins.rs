//! Pins: what a store's writer fixed in the trace so that nothing beside
//! the trace can change a decision. A `policy` event holds one pin — the
//! policy a class decides under (written by `ratchet_gate::pin_policy`,
//! read there) or the version a rubric scores with ([`pin_rubric`]).
//!
//! Only this store's own pins count: a pin merged in from a cell is what
//! the cell decided under, never a rule for this store. The latest own pin
//! at or before a seq is the one in force there, so a past verdict is
//! recomputed under the pin it was taken under.

use serde::{Deserialize, Serialize};

use ratchet_trace::{EventDraft, Receipt, ReservedKind, Store, Verified};

use crate::{Result, Rubric, RubricSet};

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
        /// Its content hash ([`Rubric::version`]).
        version: String,
    },
}

/// This store's own pins at or before `max_seq`, in trace order, with
/// their seqs.
///
/// # Errors
/// [`crate::Error::Trace`] if the store cannot be read, or a pin event of
/// this store does not parse (a `policy` event is written only by the pin
/// functions: one that does not parse is not a pin anyone may ignore).
pub fn pins(view: &Verified, max_seq: u64) -> Result<Vec<(u64, Pin)>> {
    pins_in(view.events(), max_seq)
}

/// [`pins`] among `events` (in seq order): a writer's check of what it is
/// about to append reads them from the store ([`Store::events_of_kinds`]).
fn pins_in(events: &[ratchet_trace::Event], max_seq: u64) -> Result<Vec<(u64, Pin)>> {
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
/// [`crate::Error::Trace`] if the append fails.
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

/// Pins `rubric` at its current version: from then on scoring with another
/// version of a rubric of that name is refused
/// ([`check_rubrics_pinned`]), and the gate reads the pinned version of its
/// scores. Pinning again at another version is the recorded way to change it.
///
/// # Errors
/// [`crate::Error::Trace`] if the trace does not verify (or is keyed and
/// was opened without its key), or cannot be read or written.
pub fn pin_rubric(store: &mut Store, rubric: &Rubric) -> Result<Pinned> {
    // A pin is written only into a trace that verifies (with its key).
    let view = store.verified(&ratchet_trace::VerifyOptions::default())?;
    let version = rubric.version();
    let in_force = pinned_rubric_version(&view, &rubric.name, u64::MAX)?
        .filter(|(v, _)| *v == version)
        .map(|(_, seq)| seq);
    append_pin(
        store,
        &Pin::Rubric {
            rubric: rubric.name.clone(),
            version,
        },
        in_force,
    )
}

/// Refuses a rubric set in which a rubric is pinned in the trace at another
/// version: a rubric file edited beside the store cannot score evidence
/// under a name the store's writer fixed.
///
/// # Errors
/// [`crate::Error::RubricNotPinned`] naming the rubric, both versions and
/// how to pin the new one; [`crate::Error::Trace`] if the store cannot be read.
pub fn check_rubrics_pinned(view: &Verified, rubrics: &RubricSet) -> Result<()> {
    check_pinned_in(&pins(view, u64::MAX)?, rubrics)
}

/// [`check_rubrics_pinned`] before an ingestion writes, from the store's
/// own events as they stand (the gate reads the pinned version from its
/// verified view, so an edited file can only make this check refuse).
pub(crate) fn check_rubrics_pinned_before_writing(
    store: &Store,
    rubrics: &RubricSet,
) -> Result<()> {
    // No rubric given, nothing to check: no read of the trace.
    if rubrics.all().is_empty() {
        return Ok(());
    }
    let events = store.events_of_kinds(&[ReservedKind::Policy.as_str()])?;
    check_pinned_in(&pins_in(&events, u64::MAX)?, rubrics)
}

fn check_pinned_in(all: &[(u64, Pin)], rubrics: &RubricSet) -> Result<()> {
    for r in rubrics.all() {
        if let Some((version, seq)) = rubric_pin_in(all, &r.name) {
            let given = r.version();
            if version != given {
                return Err(crate::Error::RubricNotPinned {
                    rubric: r.name.clone(),
                    pinned: version.to_string(),
                    given,
                    seq,
                });
            }
        }
    }
    Ok(())
}
