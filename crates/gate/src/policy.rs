//! Policies: per artifact class, which scorer, which test, α, β, effect,
//! truncation, guardrails, invariants and required test suites — read from
//! TOML, validated with errors that name the field and the reason.
//!
//! ```toml
//! [class.prompt]
//! scorer = "accuracy"        # the primary scorer
//! test = "paired"            # "betting" (default) | "bernoulli" | "gaussian" | "paired" | "benchmarks" | "none"
//! alpha = 0.05
//! beta = 0.1
//! elo0 = 0.0                 # paired: logistic Elo bounds
//! elo1 = 20.0
//! pairing = "trinomial"      # paired: or "pentanomial" (two runs per task)
//! max_n = 5000               # truncation: always decide eventually
//! required_suites = ["unit"]
//! tasks = "tasks.txt"        # the order the test reads: task ids one a line, relative to this file
//!
//! [[class.prompt.guardrail]]
//! scorer = "cost"
//! direction = "lower"        # "lower" or "higher" is better
//! margin = 0.05
//! margin_kind = "relative"   # "absolute" | "relative"
//! method = "welch"           # "welch" | "sequence"
//!
//! [[class.prompt.invariant]]
//! scorer = "safety"
//! minimum = 1.0
//!
//! [class.ci]                 # decided on its suites (and invariants) alone:
//! test = "none"              # no scorer, no alpha, beta or max_n
//! required_suites = ["unit"]
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::gsprt::{EloBounds, EloModel, PairedGsprt, Pairing};
use crate::noninferiority::{Margin, NonInferiority};
use crate::sprt::{BernoulliSprt, Boundaries, GaussianSprt};
use ratchet_records::Direction;

/// Which sequential test judges the primary scorer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Pass/fail scores (score ≥ `pass_threshold`), paired per task: an
    /// SPRT on the discordant pairs (one side passed, the other failed),
    /// H0: θ = ½ against H1: θ = (1 + `gap`)/2, where θ is the chance that
    /// the candidate is the one that passed. Exact at the null whatever the
    /// pass rates; `gap` is a pass-rate improvement, designed for the
    /// hardest case (every pair discordant). See [`crate::decide`].
    Bernoulli,
    /// Continuous scores, paired per task: an SPRT on the per-task
    /// differences (candidate − baseline), H0: mean 0 against H1: mean
    /// `gap`, with their variance estimated.
    Gaussian,
    /// Per-task win / draw / loss of candidate against baseline, fishtest's
    /// GSPRT between logistic Elo `elo0` and `elo1`.
    Paired,
    /// Bounded scores (in `range`, default [0, 1]), paired per task: a
    /// betting e-process on the differences ([`crate::BettingTest`]),
    /// valid for **any** distribution of the scores in their range and any
    /// stopping rule — promote when the mean difference is shown above 0
    /// (at α), reject when shown below `gap` (at β). The default kind.
    #[default]
    Betting,
    /// Benchmarks judged as benchmarks ([`crate::benchmarks`]): each
    /// benchmark on its own samples (`samples` events), on the log ratio
    /// candidate ÷ baseline; the class promotes when every benchmark is
    /// shown not slower than `regression`, rejects when one is shown slower
    /// than `equivalence` (family-wise α over the suite). `max_n` bounds
    /// the pairs read per benchmark.
    Benchmarks,
    /// No sequential test (`test = "none"`): the class is decided by its
    /// required suites and invariants alone — promoted when every required
    /// suite is green on the candidate and every invariant holds. For a
    /// CI gate on test reports, where a suite's pass rate is one number per
    /// suite and no sequence of tasks exists to test. Such a class names no
    /// `scorer`, no guardrail and none of the tests' parameters; `alpha`,
    /// `beta` and `max_n` may be left out (nothing reads them).
    None,
}

impl TestKind {
    /// The name policy files and verdicts use (`bernoulli`, `gaussian`,
    /// `paired`, `betting`).
    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::Bernoulli => "bernoulli",
            TestKind::Gaussian => "gaussian",
            TestKind::Paired => "paired",
            TestKind::Betting => "betting",
            TestKind::Benchmarks => "benchmarks",
            TestKind::None => "none",
        }
    }
}

/// A direction as policy files write it: `"lower"` or `"higher"` (the
/// words are also what the canonical form behind the policy hash holds, so
/// the hash of a policy does not depend on how `Direction` names itself).
mod direction_word {
    use ratchet_records::Direction;
    use serde::{Deserialize, Deserializer, Serializer};

    fn word(d: Direction) -> &'static str {
        match d {
            Direction::LowerIsBetter => "lower",
            Direction::HigherIsBetter => "higher",
        }
    }

    fn parse<'de, D: Deserializer<'de>>(text: &str) -> Result<Direction, D::Error> {
        match text {
            "lower" => Ok(Direction::LowerIsBetter),
            "higher" => Ok(Direction::HigherIsBetter),
            other => Err(serde::de::Error::unknown_variant(
                other,
                &["lower", "higher"],
            )),
        }
    }

    pub fn serialize<S: Serializer>(d: &Direction, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(word(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Direction, D::Error> {
        parse::<D>(&String::deserialize(d)?)
    }

    /// The same for an optional direction.
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(d: &Option<Direction>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(word(*d)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Direction>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|t| parse::<D>(&t))
                .transpose()
        }
    }
}

/// Absolute or relative margin, in policy files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarginKind {
    /// In the metric's unit.
    Absolute,
    /// A fraction of the baseline mean.
    Relative,
}

/// Fixed-horizon Welch test or always-valid confidence sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailMethod {
    /// Welch's t test on all tasks of each side; failing rejects.
    Welch,
    /// Paired confidence sequence; not yet shown means continue.
    Sequence,
}

impl GuardrailMethod {
    /// The name policy files use (`welch`, `sequence`).
    pub fn as_str(self) -> &'static str {
        match self {
            GuardrailMethod::Welch => "welch",
            GuardrailMethod::Sequence => "sequence",
        }
    }
}

/// A guardrail: a metric that must not get worse by more than a margin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guardrail {
    /// The guardrail's scorer.
    pub scorer: String,
    /// Which way it improves (`"lower"` or `"higher"` in policy files).
    #[serde(with = "direction_word")]
    pub direction: Direction,
    /// The margin (≥ 0).
    pub margin: f64,
    /// Absolute or relative.
    pub margin_kind: MarginKind,
    /// The test.
    #[serde(default = "default_method")]
    pub method: GuardrailMethod,
    /// Pins the version of the guardrail's scorer read (not serialized
    /// when absent: a policy without it hashes as it did before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer_version: Option<String>,
}

fn default_method() -> GuardrailMethod {
    GuardrailMethod::Welch
}

/// A scorer that must reach a minimum on every task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invariant {
    /// The scorer.
    pub scorer: String,
    /// The minimum (safety: 1.0).
    pub minimum: f64,
    /// Pins the version of the invariant's scorer read (not serialized
    /// when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer_version: Option<String>,
}

/// Whose evidence a class reads, per side: a list of producers, each
/// `"key_holder"` (the store's own writer, under any session no token was
/// minted for), `"session:NAME"` (every event of this store under session
/// NAME, a token's included), `"cell:STORE_ID"` (events merged from that
/// cell) or `"everyone"`. A side left out reads the key holder's evidence
/// only, the default of a class without `[class.NAME.trust]`.
///
/// ```toml
/// [class.prompt.trust]
/// baseline = ["key_holder"]
/// candidate = ["key_holder", "session:cell-7"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trust {
    /// Producers whose evidence about the baseline counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Vec<String>>,
    /// Producers whose evidence about the candidate counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Vec<String>>,
}

impl Trust {
    /// The sources one list names (`None`: the key holder's).
    ///
    /// # Errors
    /// [`Error::Policy`] naming the entry that is not a producer.
    pub fn sources(list: Option<&[String]>, field: &str) -> Result<ratchet_trace::Sources> {
        use ratchet_trace::Sources;
        let Some(list) = list else {
            return Ok(Sources::key_holder());
        };
        let mut sources = Sources::none();
        for (i, entry) in list.iter().enumerate() {
            let named = |prefix: &str| {
                entry
                    .strip_prefix(prefix)
                    .filter(|rest| !rest.is_empty() && !rest.chars().any(char::is_control))
            };
            sources = if entry == "key_holder" {
                sources.with_key_holder()
            } else if entry == "everyone" {
                Sources::everyone()
            } else if let Some(session) = named("session:") {
                sources.session(session)
            } else if let Some(cell) = named("cell:") {
                sources.cell(cell)
            } else {
                return Err(bad(
                    format!("{field}[{i}]"),
                    format!(
                        "{entry:?} is not a producer: write \"key_holder\", \"session:NAME\", \"cell:STORE_ID\" or \"everyone\""
                    ),
                ));
            };
            if sources.is_everyone() {
                break;
            }
        }
        Ok(sources)
    }
}

/// Canary tasks that must pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Canaries {
    /// The task names.
    pub tasks: Vec<String>,
    /// The scorer that decides pass (default: the primary scorer).
    #[serde(default)]
    pub scorer: Option<String>,
    /// The score a canary must reach (default 1.0).
    #[serde(default = "one")]
    pub minimum: f64,
}

fn one() -> f64 {
    1.0
}

/// The policy of one artifact class, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassPolicy {
    /// The primary scorer (empty, and then not serialized, for a class
    /// with `test = "none"`: every other class's canonical form, and so
    /// its hash and pin, is what it was before a class could omit it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scorer: String,
    /// Pins the primary scorer's version (a rubric's content hash). Without
    /// it the gate reads the newest version both commits have scores of;
    /// versions are never mixed. (Not serialized when absent, so the policy
    /// hash of a policy without it is what it was before the field existed.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer_version: Option<String>,
    /// The sequential test (default: `betting`, valid for any scores in
    /// `range`).
    #[serde(default)]
    pub test: TestKind,
    /// False-promote rate. Required by every test; a `test = "none"`
    /// class may leave it out (then 0.05, which nothing reads).
    #[serde(default = "unread_alpha")]
    pub alpha: f64,
    /// False-reject rate (as `alpha`: 0.1 when left out of a `test = "none"`
    /// class).
    #[serde(default = "unread_beta")]
    pub beta: f64,
    /// Which way the primary scorer improves; default: the scorer's own
    /// direction (lower for the `cost` and `latency_ms` anchors), else higher.
    #[serde(default, with = "direction_word::option")]
    pub direction: Option<Direction>,
    /// Effect to detect (bernoulli, gaussian).
    #[serde(default)]
    pub gap: Option<f64>,
    /// Pass threshold of a task score (bernoulli; default 1.0).
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// The range every score lies in (betting, default `[0, 1]`; gaussian,
    /// optional: under the tuned law it bounds the effect's interval): a
    /// score outside it is refused, never clipped. Not serialized when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
    /// Null hypothesis in `elo_model`'s unit (paired).
    #[serde(default)]
    pub elo0: Option<f64>,
    /// Alternative in `elo_model`'s unit (paired).
    #[serde(default)]
    pub elo1: Option<f64>,
    /// The unit of `elo0`/`elo1` (paired): `logistic` (the default),
    /// `normalized` (fishtest's default today) or `bayes_elo` (trinomial
    /// only). Not serialized when absent: the policy hash of a policy
    /// without it is what it was before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo_model: Option<EloModel>,
    /// Outcome classes (paired): `trinomial` (per-task means, the default) or
    /// `pentanomial` (two runs per task, run i against run i).
    #[serde(default)]
    pub pairing: Option<Pairing>,
    /// Overshoot correction (paired; default on).
    #[serde(default)]
    pub overshoot: Option<bool>,
    /// Warm-up (gaussian; default 20, or 30 since the fourth law:
    /// [`ClassPolicy::gaussian_warmup`]).
    #[serde(default)]
    pub warmup: Option<u64>,
    /// Truncation limit: the test decides after at most this many tasks
    /// (as `alpha`: 1 when left out of a `test = "none"` class).
    #[serde(default = "unread_max_n")]
    pub max_n: u64,
    /// Test suites that must be green for the candidate.
    #[serde(default)]
    pub required_suites: Vec<String>,
    /// Guardrails.
    #[serde(default, rename = "guardrail")]
    pub guardrails: Vec<Guardrail>,
    /// Invariants.
    #[serde(default, rename = "invariant")]
    pub invariants: Vec<Invariant>,
    /// Canary tasks.
    #[serde(default)]
    pub canaries: Option<Canaries>,
    /// Benchmarks: a slowdown of this fraction or more is a regression
    /// (default 0.05). Not serialized when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression: Option<f64>,
    /// Benchmarks: changes within this fraction are noise (default 0.01,
    /// below `regression`). Not serialized when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
    /// Whose evidence counts, per side (absent: the key holder's only).
    /// Not serialized when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Trust>,
    /// The class's tasks in the order the harness submits them: the order
    /// the sequential test and the guardrails read pairs in (since
    /// `Law::Tuned`), fixed before any outcome is known. A policy file
    /// names a file of task ids, one a line, relative to itself
    /// ([`Policy::from_path`] reads it), or lists them inline; the
    /// canonical form (the hash, the pin) holds the ids themselves, so the
    /// list is pinned with the policy and an edit of the file is an edit
    /// of the policy. Not serialized when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Tasks>,
}

/// A class's declared task list (`tasks`): its ids, or — only between
/// reading a policy file and resolving it — the file that holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Tasks {
    /// The task ids, in the order the harness submits them (the only form
    /// a validated policy holds).
    Listed(Vec<String>),
    /// A file of task ids, one a line, as the policy file names it
    /// (relative to the policy file): [`Policy::from_path`] replaces it by
    /// the ids it holds; [`Policy::parse`], which knows no file, refuses it.
    File(String),
}

impl<'de> Deserialize<'de> for Tasks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Tasks, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Tasks;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a file of task ids (its path) or a list of task ids")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Tasks, E> {
                Ok(Tasks::File(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Tasks, A::Error> {
                let mut ids = Vec::new();
                while let Some(id) = seq.next_element::<String>()? {
                    ids.push(id);
                }
                Ok(Tasks::Listed(ids))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The ids of a task file: one a line, surrounding blanks trimmed, blank
/// lines skipped (duplicates are refused by validation, naming the id).
fn task_file_ids(text: &str) -> Vec<String> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `alpha` of a `test = "none"` class that leaves it out. The field is
/// always written in a policy's canonical form (its hash), so a class that
/// omits it needs a value; nothing reads it, and a file may not give one.
const UNREAD_ALPHA: f64 = 0.05;
/// `beta` of a `test = "none"` class that leaves it out ([`UNREAD_ALPHA`]).
const UNREAD_BETA: f64 = 0.1;
/// `max_n` of a `test = "none"` class that leaves it out ([`UNREAD_ALPHA`]).
const UNREAD_MAX_N: u64 = 1;

fn unread_alpha() -> f64 {
    UNREAD_ALPHA
}

fn unread_beta() -> f64 {
    UNREAD_BETA
}

fn unread_max_n() -> u64 {
    UNREAD_MAX_N
}

/// The fields a class's test requires in a file, which serde fills with
/// an unread default only so that a `test = "none"` class may omit them
/// (checked on the file's own keys: the typed value cannot tell a default
/// from a value written).
const TEST_FIELDS: [(&str, &str); 3] = [
    ("alpha", "the false-promote rate"),
    ("beta", "the false-reject rate"),
    ("max_n", "the truncation limit"),
];

/// Each class of a parsed file either gives every field its test requires
/// or, with `test = "none"`, none of them.
fn test_fields_given(text: &str) -> Result<()> {
    let Ok(raw) = toml::from_str::<toml::Table>(text) else {
        // The typed parse has already reported what is wrong.
        return Ok(());
    };
    let Some(classes) = raw.get("class").and_then(toml::Value::as_table) else {
        return Ok(());
    };
    for (name, class) in classes {
        let Some(class) = class.as_table() else {
            continue;
        };
        let none = class.get("test").and_then(toml::Value::as_str) == Some("none");
        for (key, what) in TEST_FIELDS {
            match (none, class.contains_key(key)) {
                (false, false) => {
                    return Err(bad(
                        format!("class.{name}.{key}"),
                        format!(
                            "required: {what} of the sequential test (or write test = \"none\" to decide the class on required_suites and invariants alone)"
                        ),
                    ));
                }
                (true, true) => {
                    return Err(bad(
                        format!("class.{name}.{key}"),
                        "test = \"none\" runs no sequential test, so nothing reads it: remove it",
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// A policy file: classes by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The classes.
    #[serde(default)]
    pub class: BTreeMap<String, ClassPolicy>,
}

fn bad(field: String, reason: impl Into<String>) -> Error {
    Error::Policy {
        field,
        reason: reason.into(),
    }
}

impl Policy {
    /// Parses and validates a policy file's text.
    ///
    /// # Errors
    /// [`Error::Policy`] naming the field (`class.NAME.alpha`) and the reason.
    pub fn parse(text: &str) -> Result<Policy> {
        Policy::parse_in(text, None)
    }

    /// [`Policy::parse`] of a file in `dir` (`None`: text known by no
    /// file): a class's `tasks = "FILE"` is read relative to `dir`.
    fn parse_in(text: &str, dir: Option<&std::path::Path>) -> Result<Policy> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let policy: Policy = toml::from_str(text).map_err(|e| {
            // toml renders "TOML parse error at line L, column C" and a
            // caret drawing; the first line's place is what a person needs.
            let place = e
                .to_string()
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("TOML parse error at "))
                .unwrap_or("policy")
                .to_string();
            bad(place, e.message().trim().to_string())
        })?;
        test_fields_given(text)?;
        let mut policy = policy;
        for (name, c) in &mut policy.class {
            if let Some(Tasks::File(file)) = &c.tasks {
                let field = format!("class.{name}.tasks");
                let Some(dir) = dir else {
                    return Err(bad(
                        field,
                        format!(
                            "names the file {file:?}, which is read relative to the policy file: read the policy from its file (`ratchet policy pin FILE`, `Policy::from_path`), or list the ids inline (tasks = [\"t1\", \"t2\"])"
                        ),
                    ));
                };
                let path = dir.join(file);
                let ids = std::fs::read_to_string(&path).map_err(|e| {
                    bad(
                        field,
                        format!("cannot read the task list {}: {e}", path.display()),
                    )
                })?;
                c.tasks = Some(Tasks::Listed(task_file_ids(&ids)));
            }
        }
        if policy.class.is_empty() {
            return Err(bad(
                "class".into(),
                "the policy defines no [class.NAME] table",
            ));
        }
        for (name, c) in &policy.class {
            c.validate(name)?;
        }
        Ok(policy)
    }

    /// Reads and validates a policy file.
    ///
    /// # Errors
    /// [`Error::PolicyFile`] if the file cannot be read, or naming the file
    /// around the [`Error::Policy`] that [`Policy::parse`] found.
    pub fn from_path(path: impl AsRef<std::path::Path>) -> Result<Policy> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::PolicyFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        // A class's task file is named relative to the policy file.
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        Policy::parse_in(&text, Some(dir)).map_err(|e| Error::PolicyFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// The policy of one class.
    ///
    /// # Errors
    /// [`Error::Policy`] if the class is not defined (the message lists those that are).
    pub fn class(&self, name: &str) -> Result<&ClassPolicy> {
        self.class.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.class.keys().map(String::as_str).collect();
            bad(
                format!("class.{name}"),
                format!("no such class; the policy defines {known:?}"),
            )
        })
    }
}

impl ClassPolicy {
    /// A class policy from the canonical JSON a pin holds, validated.
    ///
    /// # Errors
    /// [`Error::Policy`] naming the pin's seq if it does not hold a valid policy.
    pub(crate) fn from_pinned(
        class: &str,
        json: serde_json::Value,
        seq: u64,
    ) -> Result<ClassPolicy> {
        let policy: ClassPolicy = serde_json::from_value(json).map_err(|e| {
            bad(
                format!("class.{class}"),
                format!("the pin at seq {seq} does not hold a policy: {e}"),
            )
        })?;
        policy.validate(class)?;
        Ok(policy)
    }

    pub(crate) fn validate(&self, name: &str) -> Result<()> {
        let f = |k: &str| format!("class.{name}.{k}");
        if self.test == TestKind::None {
            return self.validate_without_test(name);
        }
        if self.scorer.trim().is_empty() {
            return Err(bad(
                f("scorer"),
                "must name the scorer the sequential test judges (or write test = \"none\" to decide the class on required_suites and invariants alone)",
            ));
        }
        Boundaries::new(self.alpha, self.beta).map_err(|e| match e {
            Error::InvalidParameter { name: p, reason } => bad(f(p), reason),
            other => other,
        })?;
        // Every number is finite, used by the test or not: JSON (the form
        // a policy is hashed and pinned in) cannot tell NaN from absent.
        for (name, v) in [
            ("pass_threshold", self.pass_threshold),
            ("gap", self.gap),
            ("elo0", self.elo0),
            ("elo1", self.elo1),
        ] {
            if let Some(v) = v
                && !v.is_finite()
            {
                return Err(bad(f(name), format!("{v} must be a finite number")));
            }
        }
        if self.max_n == 0 {
            return Err(bad(f("max_n"), "must be at least 1"));
        }
        if let Some([lo, hi]) = self.range
            && !(lo.is_finite() && hi.is_finite() && lo < hi)
        {
            return Err(bad(
                f("range"),
                format!("[{lo}, {hi}] must be two finite numbers, the lower first"),
            ));
        }
        if self.range.is_some() && !matches!(self.test, TestKind::Betting | TestKind::Gaussian) {
            return Err(bad(
                f("range"),
                "only the betting and gaussian tests read a range",
            ));
        }
        match self.test {
            TestKind::Betting => {
                let gap = self
                    .gap
                    .ok_or_else(|| bad(f("gap"), "required for this test"))?;
                let [lo, hi] = self.score_range();
                if !(gap > 0.0 && gap < hi - lo) {
                    return Err(bad(
                        f("gap"),
                        format!(
                            "{gap} must be a positive mean difference below the range's width {}",
                            hi - lo
                        ),
                    ));
                }
            }
            TestKind::Bernoulli | TestKind::Gaussian => {
                let gap = self
                    .gap
                    .ok_or_else(|| bad(f("gap"), "required for this test"))?;
                if !(gap.is_finite() && gap > 0.0) {
                    return Err(bad(
                        f("gap"),
                        format!("{gap} must be a positive number (p1 > p0)"),
                    ));
                }
                if self.test == TestKind::Bernoulli && gap >= 1.0 {
                    return Err(bad(
                        f("gap"),
                        format!("{gap} must be below 1 (θ1 = (1 + gap)/2 < 1)"),
                    ));
                }
                if let Some(w) = self.warmup
                    && w < 2
                {
                    return Err(bad(f("warmup"), "at least 2 observations are needed"));
                }
            }
            TestKind::Benchmarks => {
                let (reg, eq) = self.benchmark_thresholds();
                if !(reg.is_finite() && reg > 0.0) {
                    return Err(bad(
                        f("regression"),
                        format!("{reg} must be a positive fraction (0.05: 5 % slower)"),
                    ));
                }
                if !(eq.is_finite() && eq >= 0.0 && eq < reg) {
                    return Err(bad(
                        f("equivalence"),
                        format!("{eq} must be at least 0 and below regression = {reg}"),
                    ));
                }
            }
            // Validated above, before the sequential tests' fields.
            TestKind::None => {}
            TestKind::Paired => {
                let e0 = self
                    .elo0
                    .ok_or_else(|| bad(f("elo0"), "required for the paired test"))?;
                let e1 = self
                    .elo1
                    .ok_or_else(|| bad(f("elo1"), "required for the paired test"))?;
                if !(e0.is_finite() && e1.is_finite()) || e1 <= e0 {
                    return Err(bad(
                        f("elo1"),
                        format!("{e1} must be greater than elo0 = {e0}"),
                    ));
                }
                if self.elo_model == Some(EloModel::BayesElo)
                    && self.pairing == Some(Pairing::Pentanomial)
                {
                    return Err(bad(
                        f("elo_model"),
                        "bayes_elo needs trinomial pairing (its draw Elo is estimated per game)",
                    ));
                }
            }
        }
        for (i, g) in self.guardrails.iter().enumerate() {
            let margin = match g.margin_kind {
                MarginKind::Absolute => Margin::Absolute(g.margin),
                MarginKind::Relative => Margin::Relative(g.margin),
            };
            NonInferiority::new(g.direction, margin, self.alpha).map_err(|e| match e {
                Error::InvalidParameter { reason, .. } => {
                    bad(f(&format!("guardrail[{i}].margin")), reason)
                }
                other => other,
            })?;
        }
        for (i, inv) in self.invariants.iter().enumerate() {
            if !inv.minimum.is_finite() {
                return Err(bad(
                    f(&format!("invariant[{i}].minimum")),
                    "must be a finite number",
                ));
            }
        }
        self.sources(name)?;
        if let Some(c) = &self.canaries {
            if c.tasks.is_empty() {
                return Err(bad(f("canaries.tasks"), "lists no task"));
            }
            if !c.minimum.is_finite() {
                return Err(bad(f("canaries.minimum"), "must be a finite number"));
            }
        }
        self.validate_tasks(name)
    }

    /// A declared task list names each task once, and only where a test
    /// reads tasks in an order.
    fn validate_tasks(&self, name: &str) -> Result<()> {
        let field = format!("class.{name}.tasks");
        let ids = match &self.tasks {
            None => return Ok(()),
            Some(Tasks::File(file)) => {
                return Err(bad(
                    field,
                    format!(
                        "names the file {file:?}, not yet read: read the policy with Policy::from_path"
                    ),
                ));
            }
            Some(Tasks::Listed(ids)) => ids,
        };
        if self.test == TestKind::Benchmarks {
            return Err(bad(
                field,
                "the benchmarks test reads each benchmark's samples, not tasks in an order: remove it",
            ));
        }
        if ids.is_empty() {
            return Err(bad(field, "lists no task"));
        }
        let mut seen = std::collections::HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            if id.trim().is_empty() || id.chars().any(char::is_control) {
                return Err(bad(
                    format!("{field}[{i}]"),
                    format!("{id:?} is not a task id (empty, or with control characters)"),
                ));
            }
            if let Some(first) = seen.insert(id.as_str(), i) {
                return Err(bad(
                    field,
                    format!(
                        "task {id:?} is listed twice (entries {} and {}): an order names each task once",
                        first + 1,
                        i + 1
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The declared task ids in order (`tasks`), if the class declares
    /// them.
    pub fn declared_tasks(&self) -> Option<&[String]> {
        match &self.tasks {
            Some(Tasks::Listed(ids)) => Some(ids),
            _ => None,
        }
    }

    /// A `test = "none"` class: something to decide on (a required suite,
    /// an invariant or canaries), and nothing a sequential test would read
    /// — a field it gives would be silently ignored, so it is refused.
    fn validate_without_test(&self, name: &str) -> Result<()> {
        let f = |k: &str| format!("class.{name}.{k}");
        let unread = |k: &str| {
            bad(
                f(k),
                "test = \"none\" runs no sequential test, so nothing reads it: remove it (or choose a test)",
            )
        };
        if !self.scorer.is_empty() {
            return Err(unread("scorer"));
        }
        for (key, given) in [
            ("scorer_version", self.scorer_version.is_some()),
            ("direction", self.direction.is_some()),
            ("gap", self.gap.is_some()),
            ("pass_threshold", self.pass_threshold.is_some()),
            ("range", self.range.is_some()),
            ("elo0", self.elo0.is_some()),
            ("elo1", self.elo1.is_some()),
            ("elo_model", self.elo_model.is_some()),
            ("pairing", self.pairing.is_some()),
            ("overshoot", self.overshoot.is_some()),
            ("warmup", self.warmup.is_some()),
            ("regression", self.regression.is_some()),
            ("equivalence", self.equivalence.is_some()),
            ("tasks", self.tasks.is_some()),
        ] {
            if given {
                return Err(unread(key));
            }
        }
        if !self.guardrails.is_empty() {
            return Err(bad(
                f("guardrail"),
                "a guardrail is judged on the tasks the sequential test pairs, and test = \"none\" pairs none: make it an invariant, or choose a test",
            ));
        }
        if self.required_suites.is_empty() && self.invariants.is_empty() && self.canaries.is_none()
        {
            return Err(bad(
                f("required_suites"),
                "test = \"none\" decides on required suites and invariants alone, and the class names neither: list the suites that must be green (required_suites = [\"unit\"]) or add an [[invariant]]",
            ));
        }
        for (i, inv) in self.invariants.iter().enumerate() {
            if !inv.minimum.is_finite() {
                return Err(bad(
                    f(&format!("invariant[{i}].minimum")),
                    "must be a finite number",
                ));
            }
        }
        if let Some(c) = &self.canaries {
            if c.tasks.is_empty() {
                return Err(bad(f("canaries.tasks"), "lists no task"));
            }
            if c.scorer.is_none() {
                return Err(bad(
                    f("canaries.scorer"),
                    "required under test = \"none\" (canaries default to the primary scorer, and the class has none)",
                ));
            }
            if !c.minimum.is_finite() {
                return Err(bad(f("canaries.minimum"), "must be a finite number"));
            }
        }
        self.sources(name)?;
        Ok(())
    }

    /// The producers whose evidence this class reads about the baseline
    /// and about the candidate ([`Trust`]).
    ///
    /// # Errors
    /// [`Error::Policy`] naming an entry that is not a producer.
    pub fn sources(&self, class: &str) -> Result<[ratchet_trace::Sources; 2]> {
        let trust = self.trust.clone().unwrap_or_default();
        Ok([
            Trust::sources(
                trust.baseline.as_deref(),
                &format!("class.{class}.trust.baseline"),
            )?,
            Trust::sources(
                trust.candidate.as_deref(),
                &format!("class.{class}.trust.candidate"),
            )?,
        ])
    }

    /// The benchmark thresholds: `regression` (default 0.05) and
    /// `equivalence` (default 0.01).
    pub fn benchmark_thresholds(&self) -> (f64, f64) {
        (
            self.regression.unwrap_or(0.05),
            self.equivalence.unwrap_or(0.01),
        )
    }

    /// Wald's boundaries for this class's α and β.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if α and β are invalid (impossible after [`Policy::parse`]).
    pub fn boundaries(&self) -> Result<Boundaries> {
        Boundaries::new(self.alpha, self.beta)
    }

    /// The discordant-pair test this class runs (bernoulli): one Bernoulli
    /// observation per discordant pair, "the candidate passed", with
    /// θ0 = ½ and θ1 = (1 + gap)/2. Truncated at `max_n` discordant pairs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless 0 < gap < 1.
    pub fn bernoulli_test(&self) -> Result<BernoulliSprt> {
        let (theta0, theta1) = self.discordant_hypotheses();
        BernoulliSprt::new(theta0, theta1, self.boundaries()?)?.with_truncation(self.max_n)
    }

    /// θ0 and θ1 of the discordant-pair test: ½ and (1 + gap)/2.
    pub fn discordant_hypotheses(&self) -> (f64, f64) {
        (0.5, (1.0 + self.gap.unwrap_or_default()) / 2.0)
    }

    /// The paired-difference test this class runs (gaussian): per-task
    /// differences, H0: mean 0 against H1: mean `gap`, variance estimated.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid gap or warm-up.
    pub fn gaussian_test(&self, law: crate::Law) -> Result<GaussianSprt> {
        GaussianSprt::new(0.0, self.gap.unwrap_or_default(), self.boundaries()?)?
            .with_warmup(self.gaussian_warmup(law))?
            .with_truncation(self.max_n)
    }

    /// The gaussian test's warm-up under `law`: the policy's `warmup`, else
    /// [`GaussianSprt::DEFAULT_WARMUP`] (20), or since [`crate::Law::Tuned`]
    /// 30 — polled with a pool's pass/fail scores, 20 tasks' variance let
    /// the test promote 0.070 ± 0.008 at the null (issue 40; Wald's bound
    /// α/(1−β) = 0.056), and 30 promoted 4.1 % where 20 promoted 5.1 % in
    /// the module's own normal runs (`GaussianSprt`'s docs).
    pub fn gaussian_warmup(&self, law: crate::Law) -> u64 {
        self.warmup.unwrap_or(if law >= crate::Law::Tuned {
            GaussianSprt::TUNED_WARMUP
        } else {
            GaussianSprt::DEFAULT_WARMUP
        })
    }

    /// The range of every score (betting): `range`, default `[0, 1]`.
    pub fn score_range(&self) -> [f64; 2] {
        self.range.unwrap_or([0.0, 1.0])
    }

    /// The betting test this class runs under `law`: paired differences
    /// in `[−w, w]` for the range's width `w`, promote above 0 at α, reject
    /// below `gap` at β, truncated at `max_n`; since [`crate::Law::Tuned`]
    /// with bets tuned to `gap` ([`crate::BettingTest::tuned`]), before it
    /// PrPl-EB's alone ([`crate::BettingTest::new`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an invalid gap or range (impossible
    /// after [`Policy::parse`]).
    pub fn betting_test(&self, law: crate::Law) -> Result<crate::BettingTest> {
        let [lo, hi] = self.score_range();
        let (a, b, gap, width) = (self.alpha, self.beta, self.gap.unwrap_or_default(), hi - lo);
        if law >= crate::Law::Tuned {
            crate::BettingTest::tuned(a, b, gap, width)
        } else {
            crate::BettingTest::new(a, b, gap, width)
        }?
        .with_truncation(self.max_n)
    }

    /// The paired (trinomial) GSPRT this class runs.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for invalid Elo bounds (impossible after [`Policy::parse`]).
    pub fn paired_test(&self) -> Result<PairedGsprt> {
        let elo = EloBounds {
            model: self.elo_model.unwrap_or_default(),
            elo0: self.elo0.unwrap_or_default(),
            elo1: self.elo1.unwrap_or_default(),
        };
        let pairing = self.pairing.unwrap_or(Pairing::Trinomial);
        let t = PairedGsprt::new(pairing, elo, self.boundaries()?)?.with_truncation(self.max_n)?;
        Ok(if self.overshoot.unwrap_or(true) {
            t.with_overshoot_correction()
        } else {
            t
        })
    }

    /// The content hash of this class policy: BLAKE3 of its canonical JSON.
    pub fn hash(&self) -> ratchet_trace::Hash {
        let json = serde_json::to_vec(self).unwrap_or_default();
        blake3::hash(&json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_and_guardrail_method_names_are_their_serialized_forms() {
        for kind in [
            TestKind::Bernoulli,
            TestKind::Gaussian,
            TestKind::Paired,
            TestKind::Betting,
            TestKind::Benchmarks,
        ] {
            let json = serde_json::to_string(&kind).expect("json");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        for method in [GuardrailMethod::Welch, GuardrailMethod::Sequence] {
            let json = serde_json::to_string(&method).expect("json");
            assert_eq!(json, format!("\"{}\"", method.as_str()));
        }
    }

    const GOOD: &str = r#"
[class.prompt]
scorer = "accuracy"
test = "paired"
alpha = 0.05
beta = 0.1
elo0 = 0.0
elo1 = 20.0
max_n = 5000
required_suites = ["unit"]

[[class.prompt.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.05
margin_kind = "relative"

[[class.prompt.invariant]]
scorer = "safety"
minimum = 1.0

[class.tool]
scorer = "pass"
test = "bernoulli"
alpha = 0.05
beta = 0.05
gap = 0.1
max_n = 1000
"#;

    #[test]
    fn a_good_policy_parses() {
        let p = Policy::parse(GOOD).expect("valid policy");
        let c = p.class("prompt").expect("class");
        assert_eq!(c.test, TestKind::Paired);
        assert_eq!(c.guardrails[0].method, GuardrailMethod::Welch);
        assert_eq!(c.hash().to_hex().len(), 64);
        assert_ne!(c.hash(), p.class("tool").expect("class").hash());
        let e = p.class("agent").expect_err("missing class");
        assert!(e.to_string().contains("\"prompt\""), "{e}");
    }

    #[test]
    fn a_task_file_is_read_beside_the_policy_file_and_its_ids_are_the_policy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = GOOD.replace(
            "max_n = 1000\n",
            "max_n = 1000\ntasks = \"lists/tasks.txt\"\n",
        );
        std::fs::create_dir(dir.path().join("lists")).expect("dir");
        std::fs::write(dir.path().join("lists/tasks.txt"), " b\r\n\na\nc \n").expect("list");
        std::fs::write(dir.path().join("policy.toml"), &text).expect("policy");
        let p = Policy::from_path(dir.path().join("policy.toml")).expect("policy");
        let c = p.class("tool").expect("class");
        let ids = ["b", "a", "c"].map(String::from);
        assert_eq!(c.declared_tasks(), Some(&ids[..]));
        // The canonical form holds the ids, not the path: the hash covers
        // the list, and a pin reads back the same class.
        let json = serde_json::to_value(c).expect("json");
        assert_eq!(json["tasks"], serde_json::json!(["b", "a", "c"]));
        let back = ClassPolicy::from_pinned("tool", json, 1).expect("pinned form");
        assert_eq!((&back, back.hash()), (c, c.hash()));
        // An edit of the file is an edit of the policy.
        std::fs::write(dir.path().join("lists/tasks.txt"), "a\nb\nc\n").expect("list");
        let edited = Policy::from_path(dir.path().join("policy.toml")).expect("policy");
        assert_ne!(edited.class("tool").expect("class").hash(), c.hash());
        // A class without the field hashes as it did before it existed.
        let plain = Policy::parse(GOOD).expect("good");
        let json = serde_json::to_value(plain.class("tool").expect("class")).expect("json");
        assert!(json.get("tasks").is_none(), "{json}");
        // Text known by no file cannot resolve a path; an inline list can.
        let (field, reason) = field_of(&text);
        assert_eq!(field, "class.tool.tasks");
        assert!(reason.contains("relative to the policy file"), "{reason}");
        let inline = Policy::parse(&GOOD.replace(
            "max_n = 1000\n",
            "max_n = 1000\ntasks = [\"b\", \"a\", \"c\"]\n",
        ))
        .expect("inline");
        assert_eq!(inline.class("tool").expect("class").hash(), c.hash());
        // A missing file is named.
        std::fs::remove_file(dir.path().join("lists/tasks.txt")).expect("rm");
        let e = Policy::from_path(dir.path().join("policy.toml")).expect_err("missing list");
        assert!(e.to_string().contains("tasks.txt"), "{e}");
    }

    #[test]
    fn a_task_list_names_each_task_once_and_only_where_a_test_reads_an_order() {
        let with =
            |extra: &str| GOOD.replace("max_n = 1000\n", &format!("max_n = 1000\n{extra}\n"));
        let (field, reason) = field_of(&with("tasks = [\"a\", \"b\", \"a\"]"));
        assert_eq!(field, "class.tool.tasks");
        assert!(
            reason.contains("\"a\" is listed twice (entries 1 and 3)"),
            "{reason}"
        );
        let (field, _) = field_of(&with("tasks = []"));
        assert_eq!(field, "class.tool.tasks");
        let (field, _) = field_of(&with("tasks = [\"a\", \"\"]"));
        assert_eq!(field, "class.tool.tasks[1]");
        let (_, reason) = field_of(&with("tasks = { file = \"x\" }"));
        assert!(reason.contains("a list of task ids"), "{reason}");
        let (field, _) = field_of(
            "[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\"]\ntasks = [\"a\"]\n",
        );
        assert_eq!(field, "class.ci.tasks");
        let (field, reason) = field_of(
            "[class.perf]\nscorer = \"t\"\ntest = \"benchmarks\"\nalpha = 0.05\nbeta = 0.1\nmax_n = 10\ntasks = [\"a\"]\n",
        );
        assert_eq!(field, "class.perf.tasks");
        assert!(reason.contains("samples"), "{reason}");
    }

    #[test]
    fn a_class_without_a_test_parses_without_scorer_or_rates_and_survives_its_pin() {
        let p = Policy::parse("[class.ci]\ntest = \"none\"\nrequired_suites = [\"unit\"]\n")
            .expect("valid policy");
        let c = p.class("ci").expect("class");
        assert_eq!(c.test, TestKind::None);
        // The canonical form (what a pin holds) names no scorer, and reads
        // back as the same class.
        let json = serde_json::to_value(c).expect("json");
        assert!(json.get("scorer").is_none(), "{json}");
        let back = ClassPolicy::from_pinned("ci", json, 1).expect("pinned form");
        assert_eq!(&back, c);
        assert_eq!(back.hash(), c.hash());
        // A class with a scorer keeps it in its canonical form (its hash
        // is what it was before a class could omit it).
        let json = serde_json::to_value(
            Policy::parse(GOOD)
                .expect("good")
                .class("prompt")
                .expect("class"),
        )
        .expect("json");
        assert_eq!(json["scorer"], "accuracy");
    }

    fn field_of(text: &str) -> (String, String) {
        match Policy::parse(text) {
            Err(Error::Policy { field, reason }) => (field, reason),
            other => panic!("expected a policy error, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_field_and_the_reason() {
        let cases = [
            (
                GOOD.replace("alpha = 0.05\nbeta = 0.1", "alpha = 1.5\nbeta = 0.1"),
                "class.prompt.alpha",
            ),
            (
                GOOD.replace("alpha = 0.05\nbeta = 0.1", "alpha = 0.6\nbeta = 0.5"),
                "class.prompt.alpha + beta",
            ),
            (
                GOOD.replace("elo1 = 20.0", "elo1 = -1.0"),
                "class.prompt.elo1",
            ),
            (GOOD.replace("gap = 0.1", "gap = -0.1"), "class.tool.gap"),
            (GOOD.replace("gap = 0.1\n", ""), "class.tool.gap"),
            (
                GOOD.replace("margin = 0.05", "margin = -1"),
                "class.prompt.guardrail[0].margin",
            ),
            (
                GOOD.replace("max_n = 1000", "max_n = 0"),
                "class.tool.max_n",
            ),
        ];
        for (text, field) in cases {
            let (got, reason) = field_of(&text);
            assert_eq!(got, field, "reason: {reason}");
            assert!(!reason.is_empty());
        }
        // Unknown keys and wrong types are caught by the parser, with the reason.
        let (_, reason) = field_of(&GOOD.replace("max_n = 5000", "max_n = 5000\nmaxn = 3"));
        assert!(reason.contains("maxn"), "{reason}");
        let (_, reason) = field_of(&GOOD.replace("test = \"paired\"", "test = \"magic\""));
        assert!(
            reason.contains("magic") || reason.contains("variant"),
            "{reason}"
        );
        let (field, _) = field_of("");
        assert_eq!(field, "class");
    }
}
