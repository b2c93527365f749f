//! The gate's policy tables as the tests write them: one function a test
//! kind, taking what the tests vary (the class, the scorer, the sizes) and
//! fixing what they share (α = β = 0.05 unless a test says otherwise). `extra` is more lines of the same
//! table (`pairing = "pentanomial"`, [`REQUIRES_UNIT`], …).

/// The line that makes a class require a green run of the `unit` suite.
pub const REQUIRES_UNIT: &str = "required_suites = [\"unit\"]\n";

/// The policy most gate tests decide: class `prompt`, a paired SPRT on
/// `accuracy` (elo 0 against 40, at most 3000 pairs), the `unit` suite
/// required.
pub fn prompt_policy() -> String {
    paired_class("prompt", "accuracy", 3000, REQUIRES_UNIT)
}

/// `[class.<name>]`: a paired SPRT on `scorer`, elo 0 against 40, at most
/// `max_n` pairs.
pub fn paired_class(name: &str, scorer: &str, max_n: u64, extra: &str) -> String {
    paired_class_to(name, scorer, 40.0, max_n, extra)
}

/// [`paired_class`] with elo 0 against `elo1`.
pub fn paired_class_to(name: &str, scorer: &str, elo1: f64, max_n: u64, extra: &str) -> String {
    format!(
        "\n[class.{name}]\nscorer = \"{scorer}\"\ntest = \"paired\"\nalpha = 0.05\nbeta = 0.05\n\
         elo0 = 0.0\nelo1 = {elo1:?}\nmax_n = {max_n}\n{extra}"
    )
}

/// `[class.<name>]`: a `test` ("bernoulli", "gaussian", "betting") on
/// `scorer` that detects a difference of `gap`, at most `max_n`
/// observations.
pub fn gap_class(
    name: &str,
    test: &str,
    scorer: &str,
    gap: f64,
    max_n: u64,
    extra: &str,
) -> String {
    gap_class_with_beta(name, test, scorer, 0.05, gap, max_n, extra)
}

/// [`gap_class`] with its own `beta` (the chance of missing a real
/// difference of `gap`).
pub fn gap_class_with_beta(
    name: &str,
    test: &str,
    scorer: &str,
    beta: f64,
    gap: f64,
    max_n: u64,
    extra: &str,
) -> String {
    format!(
        "\n[class.{name}]\nscorer = \"{scorer}\"\ntest = \"{test}\"\nalpha = 0.05\nbeta = {beta:?}\n\
         gap = {gap:?}\nmax_n = {max_n}\n{extra}"
    )
}

/// `[[class.<class>.guardrail]]`: `scorer` must not get worse (it is better
/// `direction`, "lower" or "higher") by more than `margin` of `margin_kind`
/// ("relative" or "absolute").
pub fn guardrail(
    class: &str,
    scorer: &str,
    direction: &str,
    margin: f64,
    margin_kind: &str,
    extra: &str,
) -> String {
    format!(
        "\n[[class.{class}.guardrail]]\nscorer = \"{scorer}\"\ndirection = \"{direction}\"\n\
         margin = {margin:?}\nmargin_kind = \"{margin_kind}\"\n{extra}"
    )
}
