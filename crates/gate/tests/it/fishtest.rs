//! Parity with fishtest: the LLR of the paired GSPRT for logistic,
//! normalized and BayesElo bounds over trinomial and pentanomial counts,
//! against values computed by fishtest's own `LLRcalc.py` / `stat_util.py`
//! (the script that produced them is `fixtures/fishtest_llr.py`).

use ratchet_gate::{
    Boundaries, EloBounds, EloModel, PairedGsprt, Pairing, SequentialTest, llr_counts,
};
use ratchet_testkit::paired_class_to;

#[derive(serde::Deserialize)]
struct Case {
    model: String,
    counts: Vec<u64>,
    elo0: f64,
    elo1: f64,
    llr: f64,
}

#[derive(serde::Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

fn model(name: &str) -> EloModel {
    match name.trim_start_matches("update_SPRT:") {
        "logistic" => EloModel::Logistic,
        "normalized" => EloModel::Normalized,
        "bayes_elo" | "BayesElo" => EloModel::BayesElo,
        other => panic!("unknown model {other}"),
    }
}

#[test]
fn every_model_reproduces_fishtests_llr() {
    let fixture: Fixture = serde_json::from_str(include_str!("../fixtures/fishtest_llr.json"))
        .expect("fixture parses");
    assert!(fixture.cases.len() > 100);
    for c in &fixture.cases {
        let elo = EloBounds {
            model: model(&c.model),
            elo0: c.elo0,
            elo1: c.elo1,
        };
        let ours = llr_counts(&c.counts, elo);
        // fishtest's root finder (brentq, xtol 2e-12) and ours (bisection
        // to the last bit) agree to about 1e-12 in the root; the LLR scales
        // with N (up to 1e5 here).
        let tolerance = 1e-9 * c.llr.abs().max(1.0);
        assert!(
            (ours - c.llr).abs() <= tolerance,
            "{} {:?} [{}, {}]: ours {ours:.12}, fishtest {:.12}",
            c.model,
            c.counts,
            c.elo0,
            c.elo1,
            c.llr
        );
    }
}

#[test]
fn the_state_machine_gives_the_same_llr_as_the_counts() {
    let counts = [400u64, 2000, 4100, 2300, 450];
    let mut t = PairedGsprt::new(
        Pairing::Pentanomial,
        EloBounds {
            model: EloModel::Normalized,
            elo0: 0.0,
            elo1: 2.0,
        },
        Boundaries::new(0.05, 0.05).expect("bounds"),
    )
    .expect("test");
    for (class, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            t.observe(class).expect("class");
        }
    }
    // fishtest's update_SPRT on the same counts: 3.2601170122610537.
    assert!(
        (t.llr() - 3.260_117_012_261_053_7).abs() < 1e-8,
        "{}",
        t.llr()
    );
}

#[test]
fn bayes_elo_needs_trinomial_outcomes() {
    let err = PairedGsprt::new(
        Pairing::Pentanomial,
        EloBounds {
            model: EloModel::BayesElo,
            elo0: 0.0,
            elo1: 5.0,
        },
        Boundaries::new(0.05, 0.05).expect("bounds"),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("trinomial"), "{err}");
}

/// Normalized elo over pentanomial counts (the pairing normalized elo needs).
const NORMALIZED_PENTANOMIAL: &str = "elo_model = \"normalized\"\npairing = \"pentanomial\"\n";

#[test]
fn policies_name_the_unit_of_their_bounds() {
    let text = [
        paired_class_to("n", "s", 2.0, 100000, NORMALIZED_PENTANOMIAL),
        paired_class_to("b", "s", 5.0, 100000, "elo_model = \"bayes_elo\"\n"),
        paired_class_to("l", "s", 5.0, 100000, ""),
    ]
    .concat();
    let policy = ratchet_gate::Policy::parse(&text).expect("policy");
    let unit = |c: &str| {
        policy
            .class(c)
            .expect("class")
            .paired_test()
            .expect("test")
            .elo()
            .model
    };
    assert_eq!(unit("n"), EloModel::Normalized);
    assert_eq!(unit("b"), EloModel::BayesElo);
    assert_eq!(unit("l"), EloModel::Logistic, "logistic stays the default");
    // A class without the field hashes as it did before the field existed.
    let l = policy.class("l").expect("class");
    assert!(
        !serde_json::to_string(l)
            .expect("json")
            .contains("elo_model")
    );
    let err = ratchet_gate::Policy::parse(&paired_class_to(
        "x",
        "s",
        5.0,
        100,
        "elo_model = \"bayes_elo\"\npairing = \"pentanomial\"\n",
    ))
    .expect_err("refused");
    assert!(err.to_string().contains("class.x.elo_model"), "{err}");
}

#[test]
fn simulated_games_have_the_effect_asked_for() {
    use ratchet_gate::{NELO_PER_T, game_probabilities, logistic_score};
    for draw in [0.0, 0.3, 0.6] {
        for elo in [-20.0, 0.0, 5.0, 40.0] {
            let (w, d) = game_probabilities(EloModel::Logistic, elo, draw).expect("exists");
            assert!((w + d / 2.0 - logistic_score(elo)).abs() < 1e-12);
            let (w, d) = game_probabilities(EloModel::Normalized, elo, draw).expect("exists");
            let mu = w + d / 2.0;
            let var = w + d / 4.0 - mu * mu;
            assert!(((mu - 0.5) / var.sqrt() * NELO_PER_T - elo).abs() < 1e-9);
            let (w, d) = game_probabilities(EloModel::BayesElo, elo, draw).expect("exists");
            let l = 1.0 - w - d;
            // BayesElo of (w, l) is elo; at 0 the draw ratio is `draw`.
            let belo = 200.0 * (w / l * (1.0 - l) / (1.0 - w)).log10();
            assert!((belo - elo).abs() < 1e-9, "{belo} vs {elo}");
            if elo == 0.0 {
                assert!((d - draw).abs() < 1e-12);
            }
        }
    }
}
