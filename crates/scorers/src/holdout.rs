//! Holdout rubrics count for the gate but stay hidden from the proposing
//! side: the view served to a proposer ([`ProposerView`]) has no way to list
//! a holdout's definition or read its per-item results — the type offers no
//! such method, and lookups by name are refused.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::rubric::Rubric;

/// All rubrics, holdouts included: the trusted scorer side.
#[derive(Debug, Clone, Default)]
pub struct RubricSet {
    rubrics: Vec<Rubric>,
}

impl RubricSet {
    /// A set of rubrics.
    pub fn new(rubrics: Vec<Rubric>) -> Self {
        RubricSet { rubrics }
    }

    /// A rubric by name, holdout or not (trusted side only).
    pub fn get(&self, name: &str) -> Option<&Rubric> {
        self.rubrics.iter().find(|r| r.name == name)
    }

    /// Every rubric (trusted side only).
    pub fn all(&self) -> &[Rubric] {
        &self.rubrics
    }

    /// The view to serve to the proposing side.
    pub fn proposer_view(&self) -> ProposerView<'_> {
        ProposerView { set: self }
    }
}

/// What the proposing side may see: the non-holdout rubrics and their
/// per-item results. Holdouts appear nowhere in this type's API.
#[derive(Debug, Clone, Copy)]
pub struct ProposerView<'a> {
    set: &'a RubricSet,
}

impl<'a> ProposerView<'a> {
    /// The rubrics the proposer may read.
    pub fn rubrics(&self) -> impl Iterator<Item = &'a Rubric> + 'a {
        self.set.rubrics.iter().filter(|r| !r.holdout)
    }

    /// A visible rubric by name.
    ///
    /// # Errors
    /// [`Error::Hidden`] for a holdout (and for an unknown name, so that the
    /// answer does not reveal which holdouts exist).
    pub fn rubric(&self, name: &str) -> Result<&'a Rubric> {
        self.rubrics()
            .find(|r| r.name == name)
            .ok_or_else(|| Error::Hidden(name.to_string()))
    }

    /// Per-item results of an observation under a visible rubric.
    ///
    /// # Errors
    /// [`Error::Hidden`] for a holdout or unknown rubric;
    /// [`Error::InvalidObservation`] if the observation does not fit.
    pub fn item_results(
        &self,
        name: &str,
        observation: &serde_json::Value,
    ) -> Result<BTreeMap<String, f64>> {
        let rubric = self.rubric(name)?;
        Ok(rubric.item_values(&rubric.validate_observation(observation)?))
    }
}
