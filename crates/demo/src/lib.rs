//! The ratchet demo: months of self-improvement compressed into seconds,
//! through the real library — a git repository, a store, rubric scoring,
//! the gate, promotion refs, the drift monitor and heal. Nothing is
//! scripted: every outcome comes from seeded random draws and the law.
//!
//! A crate of its own, not part of `ratchet-orchestrate`'s surface: it is
//! a user of the library (what `ratchet demo`, the report's tests and the
//! benches run), and what it needs of the library is public.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, RepositoryInitOptions, Signature};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;

use ratchet_drift::{Chart, Follow};
use ratchet_gate::{GateStatus, Policy, Question};
use ratchet_scorers::Rubric;
use ratchet_trace::{CommitId, Ledger, Score, Store, StoreOptions, TestRun, VerifyOptions};

use ratchet_orchestrate::{Error, HealOptions, Result, WatchPlan};

/// `Error::Io` for `path`, as a `map_err` argument.
fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The policy the demo's gate runs: a pass/fail sequential test on the
/// rubric's `correct` item, a cost guardrail, a safety invariant, green unit
/// tests.
pub const DEMO_POLICY: &str = r#"# The demo's policy (ratchet demo).
[class.prompt]
scorer = "answer"
test = "bernoulli"
alpha = 0.05
beta = 0.10
gap = 0.2
pass_threshold = 0.6
max_n = 2000
required_suites = ["unit"]

[[class.prompt.guardrail]]
scorer = "cost"
direction = "lower"
margin = 0.10
margin_kind = "relative"

[[class.prompt.invariant]]
scorer = "safety"
minimum = 1.0
"#;

/// The demo's rubric: a judge's checklist; the score is weighted arithmetic
/// (3 × correct + grounded + concise) / 5, so a task passes (≥ 0.6)
/// exactly when the answer is correct.
pub const DEMO_RUBRIC: &str = r#"name = "answer"
[[item]]
id = "correct"
type = "boolean"
weight = 3.0
[[item]]
id = "grounded"
type = "boolean"
weight = 1.0
[[item]]
id = "concise"
type = "boolean"
weight = 1.0
"#;

/// The scorer of the evaluation tasks (the gate's).
const EVAL_SCORER: &str = "answer";
/// The scorer of live requests (the monitor's): 1 when the answer was
/// correct, else 0.
const LIVE_SCORER: &str = "live_answer";
/// Safety prompts every commit is checked on (the invariant needs every one).
const SAFETY_TASKS: usize = 20;
/// Live requests served after each deployment.
const LIVE_REQUESTS: usize = 400;
/// Live requests after a deployment that the monitor takes its in-control
/// reference from (a latent regression starts after them).
const LIVE_WARMUP: usize = 120;
/// The live chart's in-control average run length (requests).
const LIVE_ARL0: f64 = 20_000.0;
/// The drop of the live pass rate the chart is tuned to.
const LIVE_SHIFT: f64 = 0.2;
/// How far a latent regression drops the chance of a correct answer.
const REGRESSION_DROP: f64 = 0.3;
/// Tasks a comparison may score at most (a guard; the test stops first).
const MAX_TASKS: usize = 50_000;
/// First batch of tasks per comparison; later batches grow by half.
const FIRST_BATCH: usize = 80;

/// How to run the demo.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Seed of every draw: the same seed gives the same run.
    pub seed: u64,
    /// Proposals to judge.
    pub proposals: usize,
    /// Where the repository (`repo/`, with its store in `repo/.ratchet`) is
    /// made; must be empty or absent.
    pub dir: PathBuf,
}

/// What a proposal was, by the demo's hidden ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// No change in quality (a refactor, a reworded prompt).
    Neutral,
    /// Better.
    Good,
    /// Worse.
    Harmful,
    /// Same quality, but 30 % costlier.
    Costly,
    /// Same quality, but fails a safety prompt.
    Unsafe,
    /// Same quality, but breaks a unit test.
    Broken,
}

/// One proposal, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    /// Its number, from 1.
    pub number: usize,
    /// The commit.
    pub commit: CommitId,
    /// The baseline it was judged against.
    pub baseline: CommitId,
    /// What it really was.
    pub kind: Kind,
    /// Its true chance of a correct answer.
    pub true_quality: f64,
    /// The baseline's.
    pub baseline_quality: f64,
    /// The gate's final status.
    pub status: GateStatus,
    /// Tasks scored for it.
    pub tasks: usize,
    /// Rounds of the gate (decisions recorded).
    pub rounds: usize,
    /// It carries a regression that fires in live traffic.
    pub latent_regression: bool,
}

/// A latent regression, and what the monitor and heal did about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    /// The deployed commit.
    pub commit: CommitId,
    /// Live request at which it fired.
    pub onset: usize,
    /// Live requests after the onset until the alarm (`None`: not caught).
    pub detected_after: Option<usize>,
    /// The commit heal checked out (`None`: none).
    pub healed_to: Option<CommitId>,
}

/// A rung of the quality ladder: a deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rung {
    /// The commit deployed.
    pub commit: CommitId,
    /// How it got there: `initial`, `promotion` or `heal`.
    pub how: &'static str,
    /// Its true quality (before any regression fires).
    pub true_quality: f64,
}

/// The demo's last act: a copy of the store with one byte of one event
/// edited directly in the database file, as anyone with write access could.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TamperProof {
    /// The copy.
    pub copy: PathBuf,
    /// The event whose byte was edited.
    pub seq: u64,
    /// The seq verification named (`None`: it found nothing).
    pub fault_seq: Option<u64>,
}

impl TamperProof {
    /// Verification named the edited event.
    pub fn caught(&self) -> bool {
        self.fault_seq == Some(self.seq)
    }
}

/// What the demo saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoSummary {
    /// The seed.
    pub seed: u64,
    /// Each proposal.
    pub proposals: Vec<Proposal>,
    /// Latent regressions that fired.
    pub regressions: Vec<Regression>,
    /// Alarms on deployments without a regression.
    pub false_alarms: usize,
    /// Live requests the monitor watched while the deployment was in
    /// control (before a regression's onset, up to a false alarm): over
    /// the chart's in-control ARL, the false alarms expected.
    pub in_control_watched: usize,
    /// The live chart's in-control ARL.
    pub live_arl0: f64,
    /// Deployments, in order.
    pub ladder: Vec<Rung>,
    /// The policy's α and β.
    pub alpha: f64,
    /// The policy's β.
    pub beta: f64,
    /// θ1 of the policy's discordant-pair test: the design effect. A
    /// proposal is at or beyond it when, from its true pass rates, the
    /// chance that the candidate is the one that passed a discordant pair
    /// is at least θ1; β is promised for those only.
    pub theta1: f64,
    /// Events in the store.
    pub events: u64,
    /// The chain verified at the end.
    pub chain_verified: bool,
    /// A byte edited in a copy of the store, and what verification said.
    pub tamper: TamperProof,
    /// The repository.
    pub repo: PathBuf,
    /// The store.
    pub store: PathBuf,
}

impl DemoSummary {
    /// Proposals promoted.
    pub fn promoted(&self) -> usize {
        self.count(|p| p.status == GateStatus::Promote)
    }
    /// Proposals rejected.
    pub fn rejected(&self) -> usize {
        self.count(|p| p.status == GateStatus::Reject)
    }
    /// Proposals whose quality equals their baseline's (every kind but good
    /// and harmful): the null hypothesis is true for them.
    pub fn null_proposals(&self) -> usize {
        self.count(|p| p.kind != Kind::Good && p.kind != Kind::Harmful)
    }
    /// Promotions of proposals no better than their baseline.
    pub fn false_promotes(&self) -> usize {
        self.count(|p| p.status == GateStatus::Promote && p.kind != Kind::Good)
    }
    /// Good proposals.
    pub fn good_proposals(&self) -> usize {
        self.count(|p| p.kind == Kind::Good)
    }
    /// Good proposals not promoted.
    pub fn false_rejects(&self) -> usize {
        self.count(|p| p.kind == Kind::Good && p.status != GateStatus::Promote)
    }
    /// Whether a proposal's true gain is at or beyond the design effect
    /// (its discordant-pair θ from the true pass rates reaches θ1).
    pub fn at_design(&self, p: &Proposal) -> bool {
        let (r, p0) = (p.true_quality, p.baseline_quality);
        let (won, lost) = (r * (1.0 - p0), p0 * (1.0 - r));
        won + lost > 0.0 && won / (won + lost) >= self.theta1
    }
    /// Good proposals at or beyond the design effect (β is promised for
    /// these).
    pub fn good_at_design(&self) -> usize {
        self.count(|p| p.kind == Kind::Good && self.at_design(p))
    }
    /// Good proposals at or beyond the design effect not promoted: the
    /// count to hold against β.
    pub fn false_rejects_at_design(&self) -> usize {
        self.count(|p| p.kind == Kind::Good && self.at_design(p) && p.status != GateStatus::Promote)
    }
    /// Good proposals with a gain smaller than the design effect, and how
    /// many of them were promoted (no error rate is promised for them).
    pub fn below_design(&self) -> (usize, usize) {
        let small = |p: &Proposal| p.kind == Kind::Good && !self.at_design(p);
        (
            self.count(small),
            self.count(|p| small(p) && p.status == GateStatus::Promote),
        )
    }
    /// Mean tasks scored per decision.
    pub fn mean_tasks(&self) -> f64 {
        let decisions = self.proposals.len().max(1) as f64;
        self.proposals.iter().map(|p| p.tasks as f64).sum::<f64>() / decisions
    }
    fn count(&self, f: impl Fn(&Proposal) -> bool) -> usize {
        self.proposals.iter().filter(|p| f(p)).count()
    }
}

/// Where the demo is, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoProgress {
    /// Proposals judged so far.
    pub done: usize,
    /// Proposals in all.
    pub of: usize,
}

/// A commit's hidden truth.
#[derive(Debug, Clone, Copy)]
struct Truth {
    quality: f64,
    cost: f64,
    unsafe_task: Option<usize>,
    broken: bool,
    regression: bool,
}

struct World {
    repo: Repository,
    /// The demo is a long-lived owner: verified once, then kept warm.
    ledger: Ledger,
    rubric: Rubric,
    rng: StdRng,
    truths: Vec<(CommitId, Truth)>,
    /// Tasks each commit was scored on (by index in `truths`).
    scored: Vec<usize>,
    live_served: usize,
    /// Live requests watched while the deployment was in control.
    in_control_watched: usize,
}

impl World {
    fn truth(&self, c: &CommitId) -> (usize, Truth) {
        let index = self
            .truths
            .iter()
            .position(|(k, _)| k == c)
            .unwrap_or_default();
        (index, self.truths[index].1)
    }

    /// A commit of `prompt.txt` on top of `parent` (not on any branch).
    fn commit(&mut self, parent: Option<Oid>, text: &str, truth: Truth) -> Result<CommitId> {
        // A clock of its own (an hour per commit from a fixed epoch): the
        // same seed makes the same commits, ids included.
        let when = git2::Time::new(1_780_000_000 + 3600 * self.truths.len() as i64, 0);
        let sig = Signature::new("ratchet demo", "demo@ratchet.invalid", &when)?;
        let parent = parent.map(|p| self.repo.find_commit(p)).transpose()?;
        let mut builder = self
            .repo
            .treebuilder(parent.as_ref().map(|p| p.tree()).transpose()?.as_ref())?;
        builder.insert("prompt.txt", self.repo.blob(text.as_bytes())?, 0o100644)?;
        builder.insert(".gitignore", self.repo.blob(b".ratchet\n")?, 0o100644)?;
        let tree = self.repo.find_tree(builder.write()?)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self.repo.commit(None, &sig, &sig, text, &tree, &parents)?;
        let id = CommitId::parse(&oid.to_string())?;
        self.truths.push((id.clone(), truth));
        self.scored.push(0);
        Ok(id)
    }

    /// One rubric-scored answer: the judge's checklist drawn from the
    /// commit's true chance of a correct answer.
    fn answer(
        &mut self,
        commit: &CommitId,
        task: String,
        p_correct: f64,
        cost: f64,
    ) -> Result<Score> {
        let observation = serde_json::json!({
            "correct": self.rng.random_bool(p_correct.clamp(0.0, 1.0)),
            "grounded": self.rng.random_bool(0.7),
            "concise": self.rng.random_bool(0.6),
        });
        let mut score = Score::new(
            commit.clone(),
            task,
            EVAL_SCORER,
            self.rubric.score_json(&observation)?,
        );
        score.scorer_version = self.rubric.version();
        score.cost = Some(cost * self.rng.random_range(0.8..1.2));
        score.latency_ms = Some(self.rng.random_range(300.0..900.0));
        Ok(score)
    }

    /// Scores `commit` on evaluation tasks up to `upto` (those it lacks),
    /// its safety prompts and its unit tests the first time.
    fn evaluate(&mut self, commit: &CommitId, upto: usize) -> Result<()> {
        let (i, truth) = self.truth(commit);
        let from = self.scored[i];
        if from == 0 {
            let safety: Vec<Score> = (0..SAFETY_TASKS)
                .map(|t| {
                    let ok = truth.unsafe_task != Some(t);
                    Score::new(
                        commit.clone(),
                        format!("safety-{t:02}"),
                        "safety",
                        f64::from(u8::from(ok)),
                    )
                })
                .collect();
            self.ledger.record_scores(&safety, "demo:safety")?;
            self.ledger.record_test_run(
                &TestRun {
                    commit: commit.clone(),
                    suite: "unit".into(),
                    passed: 120 - u64::from(truth.broken),
                    failed: u64::from(truth.broken),
                    skipped: 0,
                    duration_ms: 4200.0,
                    failures: Vec::new(),
                },
                "demo:ci",
            )?;
        }
        if upto > from {
            let mut scores = Vec::with_capacity(upto - from);
            for t in from..upto {
                scores.push(self.answer(
                    commit,
                    format!("task-{t:05}"),
                    truth.quality,
                    truth.cost,
                )?);
            }
            let anchors = ratchet_scorers::cost_and_latency(&scores);
            scores.extend(anchors);
            self.ledger.record_scores(&scores, "demo:eval")?;
            self.scored[i] = upto;
        }
        Ok(())
    }
}

/// Draws a proposal's kind and truth from its baseline's.
fn draw_proposal(rng: &mut StdRng, base: Truth, start_quality: f64) -> (Kind, Truth) {
    let roll: f64 = rng.random();
    let mut truth = Truth {
        unsafe_task: None,
        broken: false,
        regression: false,
        ..base
    };
    let kind = if roll < 0.35 {
        Kind::Neutral
    } else if roll < 0.60 {
        // Gains shrink near the ceiling.
        let room = (1.0 - base.quality) / (1.0 - start_quality);
        truth.quality = (base.quality + rng.random_range(0.08..0.18) * room).min(0.97);
        truth.regression = rng.random_bool(0.3);
        Kind::Good
    } else if roll < 0.80 {
        truth.quality = (base.quality - rng.random_range(0.08..0.22)).max(0.05);
        Kind::Harmful
    } else if roll < 0.88 {
        truth.cost = base.cost * 1.3;
        Kind::Costly
    } else if roll < 0.94 {
        truth.unsafe_task = Some(rng.random_range(0..SAFETY_TASKS));
        Kind::Unsafe
    } else {
        truth.broken = true;
        Kind::Broken
    };
    (kind, truth)
}

/// Runs the demo in `options.dir`, calling `progress` after each proposal.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be used (or is not empty);
/// [`Error::Git`], [`Error::Trace`], [`Error::Gate`], [`Error::Drift`]
/// underneath.
pub fn run_demo(
    options: &DemoOptions,
    progress: &mut dyn FnMut(DemoProgress),
) -> Result<DemoSummary> {
    let repo_dir = options.dir.join("repo");
    if repo_dir.exists() {
        return Err(Error::Io {
            path: repo_dir,
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the demo makes its repository here; choose an empty directory",
            ),
        });
    }
    std::fs::create_dir_all(&repo_dir).map_err(io_err(&repo_dir))?;
    let mut init = RepositoryInitOptions::new();
    init.initial_head("main");
    let repo = Repository::init_opts(&repo_dir, &init)?;
    let store_dir = repo_dir.join(".ratchet");
    let mut store = Store::create(&store_dir, StoreOptions::default())?;
    std::fs::write(store_dir.join("policy.toml"), DEMO_POLICY).map_err(io_err(&store_dir))?;
    let policy = Policy::parse(DEMO_POLICY)?;
    let class = policy.class("prompt")?.clone();
    ratchet_scorers::declare_scorer(
        &mut store,
        "answer",
        ratchet_scorers::Direction::HigherIsBetter,
    )?;
    // Pinned: every decision of the run is taken under this policy, whatever
    // happens to the file beside the store.
    ratchet_gate::pin_policy(&mut store, "prompt", &class)?;
    let mut world = World {
        repo,
        ledger: Ledger::new(store, VerifyOptions::default())?,
        rubric: Rubric::from_toml(DEMO_RUBRIC)?,
        rng: StdRng::seed_from_u64(options.seed),
        truths: Vec::new(),
        scored: Vec::new(),
        live_served: 0,
        in_control_watched: 0,
    };

    const START: f64 = 0.55;
    let first = Truth {
        quality: START,
        cost: 1.0,
        unsafe_task: None,
        broken: false,
        regression: false,
    };
    let v0 = world.commit(None, "v0: answer the question.\n", first)?;
    let v0_oid = Oid::from_str(v0.as_str())?;
    world
        .repo
        .reference("refs/heads/main", v0_oid, true, "demo: initial")?;
    world
        .repo
        .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
    world.evaluate(&v0, FIRST_BATCH)?;
    ratchet_orchestrate::record_promotion(&repo_dir, &mut world.ledger, &v0, "prompt", None)?;
    let mut ladder = vec![Rung {
        commit: v0.clone(),
        how: "initial",
        true_quality: START,
    }];
    let mut baseline = v0;
    let mut proposals = Vec::new();
    let mut regressions = Vec::new();
    let mut false_alarms = 0;
    // The first deployment serves live traffic too.
    if let Some(healed) = live_phase(
        &mut world,
        &repo_dir,
        &baseline,
        &mut regressions,
        &mut false_alarms,
        &mut ladder,
    )? {
        baseline = healed;
    }

    for number in 1..=options.proposals {
        let (_, base_truth) = world.truth(&baseline);
        let (kind, truth) = draw_proposal(&mut world.rng, base_truth, START);
        let parent = Oid::from_str(baseline.as_str())?;
        let text = format!("v{number}: {kind:?} idea #{number}.\n");
        let candidate = world.commit(Some(parent), &text, truth)?;
        let mut upto = FIRST_BATCH;
        let mut rounds = 0;
        let status = loop {
            world.evaluate(&baseline, upto)?;
            world.evaluate(&candidate, upto)?;
            rounds += 1;
            let question = Question {
                class: "prompt",
                policy: &class,
                baseline: &baseline,
                candidate: &candidate,
                checkpoint: None,
                allow_unpinned: false,
            };
            let (verdict, _) = ratchet_gate::decide_in(&mut world.ledger, &question)?;
            let status = verdict.outcome.status();
            // The test truncates after `max_n` discordant pairs, so it ends;
            // the cap on tasks is only a guard against a policy that never does.
            if status != GateStatus::Continue || upto >= MAX_TASKS {
                break status;
            }
            upto = (upto + upto / 2).min(MAX_TASKS);
        };
        proposals.push(Proposal {
            number,
            commit: candidate.clone(),
            baseline: baseline.clone(),
            kind,
            true_quality: truth.quality,
            baseline_quality: base_truth.quality,
            status,
            tasks: upto,
            rounds,
            latent_regression: truth.regression,
        });
        if status == GateStatus::Promote {
            ratchet_orchestrate::record_promotion(
                &repo_dir,
                &mut world.ledger,
                &candidate,
                "prompt",
                None,
            )?;
            // Deployed: the work tree is checked out at the promoted commit
            // (against the old HEAD, then HEAD moves).
            ratchet_orchestrate::check_out_detached(&world.repo, &candidate, &store_dir)?;
            ladder.push(Rung {
                commit: candidate.clone(),
                how: "promotion",
                true_quality: truth.quality,
            });
            baseline = candidate;
            if let Some(healed) = live_phase(
                &mut world,
                &repo_dir,
                &baseline,
                &mut regressions,
                &mut false_alarms,
                &mut ladder,
            )? {
                baseline = healed;
            }
        }
        progress(DemoProgress {
            done: number,
            of: options.proposals,
        });
    }
    let marker = world.ledger.append(ratchet_trace::EventDraft::json(
        "note",
        &serde_json::json!({"demo": "finished", "marker": TAMPER_MARKER}),
    )?)?;
    // The one full verification after the run (what a fresh reader does).
    let report = world
        .ledger
        .store()
        .verify_with(&VerifyOptions::default())?;
    let in_control_watched = world.in_control_watched;
    drop(world);
    let tamper = tamper_copy(&store_dir, &options.dir.join("tampered-copy"), marker.seq)?;
    Ok(DemoSummary {
        seed: options.seed,
        proposals,
        regressions,
        false_alarms,
        in_control_watched,
        live_arl0: LIVE_ARL0,
        ladder,
        alpha: class.alpha,
        beta: class.beta,
        theta1: class.discordant_hypotheses().1,
        events: report.size,
        chain_verified: report.is_valid(),
        tamper,
        repo: repo_dir,
        store: store_dir,
    })
}

/// The text the demo edits in a copy of its store.
const TAMPER_MARKER: &str = "RATCHET-DEMO-MARKER";

/// Copies the store's database (closed, so the WAL is folded in) to `copy`,
/// edits one byte of the marker event in the file, and verifies the copy.
fn tamper_copy(store_dir: &Path, copy: &Path, seq: u64) -> Result<TamperProof> {
    std::fs::create_dir_all(copy).map_err(io_err(copy))?;
    let from = store_dir.join(ratchet_trace::DB_FILE);
    let to = copy.join(ratchet_trace::DB_FILE);
    let mut bytes = std::fs::read(&from).map_err(io_err(&from))?;
    let at = bytes
        .windows(TAMPER_MARKER.len())
        .position(|w| w == TAMPER_MARKER.as_bytes())
        .ok_or_else(|| Error::Io {
            path: from.clone(),
            source: std::io::Error::other("the demo's marker is not in the database file"),
        })?;
    bytes[at] = b'X';
    std::fs::write(&to, &bytes).map_err(io_err(&to))?;
    let tampered = Store::open_read_only(copy, StoreOptions::default())?;
    let report = tampered.verify()?;
    Ok(TamperProof {
        copy: copy.to_path_buf(),
        seq,
        fault_seq: report.fault.map(|f| f.seq),
    })
}

/// Serves live traffic on the deployed commit, watches it with the drift
/// monitor and heals on an alarm; returns the commit healed to.
fn live_phase(
    w: &mut World,
    repo_dir: &Path,
    deployed: &CommitId,
    regressions: &mut Vec<Regression>,
    false_alarms: &mut usize,
    ladder: &mut Vec<Rung>,
) -> Result<Option<CommitId>> {
    let (_, truth) = w.truth(deployed);
    let onset = truth
        .regression
        .then(|| w.rng.random_range(LIVE_WARMUP + 10..LIVE_WARMUP + 120));
    let mut live = Vec::with_capacity(LIVE_REQUESTS);
    for r in 0..LIVE_REQUESTS {
        let fired = onset.is_some_and(|o| r >= o);
        let pass_probability = truth.quality - if fired { REGRESSION_DROP } else { 0.0 };
        // Live traffic is scored pass/fail (was the answer correct) under
        // a scorer of its own: the gate pairs the evaluation scorer's tasks
        // in the baseline's trace order and would wait at a live request
        // the candidate never serves; and a 0/1 stream has a chart whose
        // ARL is exact (the Bernoulli CUSUM), where a normal-theory chart
        // on the rubric's six-valued, left-heavy scores is not.
        let task = format!("live-{:06}", w.live_served + r);
        let correct = w.rng.random_bool(pass_probability.clamp(0.0, 1.0));
        live.push(Score::new(
            deployed.clone(),
            task,
            LIVE_SCORER,
            f64::from(u8::from(correct)),
        ));
    }
    w.live_served += LIVE_REQUESTS;
    // The first requests after a deployment are the in-control reference
    // (μ, σ) of the chart: a regression starts only after them.
    let (warmup, watched) = live.split_at(LIVE_WARMUP);
    w.ledger.record_scores(warmup, "demo:live")?;
    let from = w.ledger.view().head().size;
    let chart = Chart::Bernoulli {
        shift: LIVE_SHIFT,
        arl0: LIVE_ARL0,
    };
    let plan = WatchPlan {
        commit: deployed.clone(),
        scorer: LIVE_SCORER.into(),
        from: Some(from),
        chart: Some(chart),
        auto: (chart, chart),
        two_sided: false,
        min_n: LIVE_WARMUP as u64,
        trust: ratchet_trace::Sources::key_holder(),
    };
    let mut monitor = ratchet_orchestrate::start_watch(&mut w.ledger, &plan)?;
    let first_live_seq = from + 1;
    w.ledger.record_scores(watched, "demo:live")?;
    let mut first_alarm = None;
    monitor.follow(
        &mut w.ledger,
        &Follow {
            record: true,
            keep_following: false,
            interval: std::time::Duration::ZERO,
        },
        &mut |alarm, _| {
            first_alarm.get_or_insert(alarm.seq);
            std::ops::ControlFlow::Break(())
        },
    )?;
    let Some(alarm_seq) = first_alarm else {
        w.in_control_watched += onset.map_or(watched.len(), |o| o - LIVE_WARMUP);
        if let Some(onset) = onset {
            regressions.push(Regression {
                commit: deployed.clone(),
                onset,
                detected_after: None,
                healed_to: None,
            });
        }
        return Ok(None);
    };
    // One event per live request, in order: the request's index from the seq.
    let request = LIVE_WARMUP + ((alarm_seq - first_live_seq) as usize).min(watched.len() - 1);
    w.in_control_watched += onset.map_or(request + 1, |o| o.min(request + 1)) - LIVE_WARMUP;
    let options = HealOptions::default();
    // No other commit measured on live traffic yet: the alarm stands and
    // the deployment stays (what heal would do, said without an error).
    let healed =
        match ratchet_orchestrate::heal_latest(repo_dir, &mut w.ledger, Some(deployed), &options) {
            Ok((report, _)) => report.chosen.filter(|_| report.checked_out),
            Err(ratchet_orchestrate::Error::NoCandidate { .. }) => None,
            Err(e) => return Err(e),
        };
    if let Some(h) = &healed {
        let (_, t) = w.truth(h);
        ladder.push(Rung {
            commit: h.clone(),
            how: "heal",
            true_quality: t.quality,
        });
    }
    match onset {
        Some(onset) => regressions.push(Regression {
            commit: deployed.clone(),
            onset,
            detected_after: Some(request.saturating_sub(onset)),
            healed_to: healed.clone(),
        }),
        None => *false_alarms += 1,
    }
    Ok(healed)
}
