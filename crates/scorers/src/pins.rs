//! Pins: what a store's writer fixed in the trace so that nothing beside
//! the trace can change a decision. A `policy` event holds one pin — the
//! policy a class decides under (written by `ratchet_gate::pin_policy`,
//! read there) or the version a rubric scores with ([`pin_rubric`]). The
//! payload and its readers are `ratchet_records`'; what needs a [`Rubric`]
//! is here.
//!
//! Only this store's own pins count: a pin merged in from a cell is what
//! the cell decided under, never a rule for this store. The latest own pin
//! at or before a seq is the one in force there, so a past verdict is
//! recomputed under the pin it was taken under.

use ratchet_trace::{ReservedKind, Store, Verified};

use crate::{
    Pin, Pinned, Result, Rubric, RubricSet, append_pin, pinned_rubric_version, pins, rubric_pin_in,
};

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
    Ok(append_pin(
        store,
        &Pin::Rubric {
            rubric: rubric.name.clone(),
            version,
        },
        in_force,
    )?)
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
    check_pinned_in(&ratchet_records::pins_among(&events, u64::MAX)?, rubrics)
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
