//! What is deployed: the `promotion` and `checkout` payloads, and the one
//! reading of them every face shares — `status`, the report, `serve` and
//! Python name the same deployed commit because they all call
//! [`deployments`], and a live chart starts where [`deployment_start`]
//! says, for drift's monitor and the report's alarm charts alike.
//!
//! The rule (design.md, "What is deployed"): a class's deployed commit is
//! its latest own promotion, unless a heal (a `checkout` event) has since
//! moved the work tree away from that commit — then the heal's target, and
//! so on through later heals. Two kinds of event deploy nothing new and are
//! passed over: a promotion that only brought a ref back to the trace's
//! record (`restores`), and a checkout that only completed an interrupted
//! one (`completes`). Events merged in from cells (`origin` set) are
//! evidence of what a cell did, never of what runs here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use ratchet_trace::{CommitId, Event, ReservedKind, Result, Verified};

/// The payload of a `promotion` event (written by
/// `ratchet_orchestrate::record_promotion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromotionRecord {
    /// The ref it moves.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The class.
    pub class: String,
    /// Seq of the decision that allowed it (`None` for an initial deployment).
    pub decision_seq: Option<u64>,
    /// Set when this event only brought the ref back to an earlier
    /// promotion (seq) after a crash or a foreign move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<u64>,
    /// What the ref pointed at when it was restored (`None`: it was absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_was: Option<String>,
}

/// The payload of a `checkout` event: a heal (written by
/// `ratchet_orchestrate::heal`, or by `recover_checkout` completing one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckoutRecord {
    /// The deployed commit the heal moved away from (the alarmed one; the
    /// work tree's own HEAD then is `head_was`).
    pub from: CommitId,
    /// The commit checked out.
    pub to: CommitId,
    /// Seq of the alarm healed from.
    #[serde(default)]
    pub alarm_seq: Option<u64>,
    /// The alarmed scorer.
    #[serde(default)]
    pub scorer: Option<String>,
    /// Why.
    pub reason: String,
    /// Commits passed over, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<(CommitId, String)>,
    /// What HEAD pointed at before the checkout (how a later command tells
    /// a checkout that never happened from a person's own move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_was: Option<String>,
    /// Set when this event completes an earlier checkout (seq) that a crash
    /// or failure left undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completes: Option<u64>,
}

/// A class's latest own promotion: what `refs/ratchet/promoted/<class>`
/// must name (a restoring promotion included: it names the same commit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Promoted {
    /// The class.
    pub class: String,
    /// The promoted commit.
    pub commit: CommitId,
    /// Seq of the `promotion` event.
    pub seq: u64,
    /// Seq of the decision that allowed it.
    pub decision_seq: Option<u64>,
}

/// How a deployment began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum DeployedBy {
    /// A promotion (`gate --record-promotion`).
    Promotion,
    /// A heal checked it out after an alarm.
    Heal {
        /// Seq of the alarm healed from.
        alarm_seq: Option<u64>,
        /// The commit the heal moved away from.
        from: CommitId,
    },
}

/// What is deployed for a class, by the trace ([`deployments`]). Read back
/// from a status document too (`status --server`), so a client names the
/// deployed commit with the same type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    /// The class.
    pub class: String,
    /// The deployed commit: the latest promotion, or the heal that moved
    /// away from it.
    pub commit: CommitId,
    /// Seq of the event that deployed it (the deployment's start).
    pub seq: u64,
    /// When that event was recorded (ms since the epoch).
    pub ts_ms: i64,
    /// How it was deployed.
    pub how: DeployedBy,
    /// The class's latest promotion (what its ref names), which a heal may
    /// have moved away from.
    pub promoted: CommitId,
    /// Seq of the decision that allowed that promotion.
    pub decision_seq: Option<u64>,
}

/// A deployment event: a promotion or a heal's checkout, parsed.
enum Move {
    Promotion(PromotionRecord),
    Checkout(CheckoutRecord),
}

/// This store's own promotion and checkout events, parsed, in trace order.
fn moves(view: &Verified) -> Result<Vec<(&Event, Move)>> {
    let kinds = [
        ReservedKind::Promotion.as_str(),
        ReservedKind::Checkout.as_str(),
    ];
    let mut out = Vec::new();
    for e in view.events_of_kinds(&kinds) {
        if e.origin.is_some() {
            continue;
        }
        let parsed = if e.reserved_kind() == Some(ReservedKind::Promotion) {
            parse(e).map(Move::Promotion)?
        } else {
            parse(e).map(Move::Checkout)?
        };
        out.push((e, parsed));
    }
    Ok(out)
}

/// A control payload, or the error that says the trace was edited (only
/// ratchet writes these kinds).
fn parse<T: serde::de::DeserializeOwned>(e: &Event) -> Result<T> {
    serde_json::from_slice(&e.payload).map_err(|err| ratchet_trace::Error::InvalidInput {
        field: "payload",
        reason: format!("{} event {} does not parse: {err}", e.kind, e.seq),
    })
}

/// The commit a promotion event names (its event's commit).
fn promoted_commit(e: &Event) -> Result<CommitId> {
    e.commit
        .clone()
        .ok_or_else(|| ratchet_trace::Error::InvalidInput {
            field: "commit",
            reason: format!("promotion event {} names no commit", e.seq),
        })
}

/// The latest own promotion of every class: what each promotion ref must
/// name (`check_promotion_refs`, `sync_promotion_ref`). Not what runs
/// after a heal: that is [`deployments`].
///
/// # Errors
/// [`ratchet_trace::Error`] if a promotion event does not parse or names
/// no commit (an edited trace).
pub fn promotions(view: &Verified) -> Result<BTreeMap<String, Promoted>> {
    let mut out = BTreeMap::new();
    for (e, r) in view.own_control_events::<PromotionRecord>(ReservedKind::Promotion, u64::MAX)? {
        out.insert(
            r.class.clone(),
            Promoted {
                class: r.class,
                commit: promoted_commit(e)?,
                seq: e.seq,
                decision_seq: r.decision_seq,
            },
        );
    }
    Ok(out)
}

/// What is deployed for each class (the module's rule): the one answer of
/// `ratchet status`, the report, `serve`'s `/v1/status` and Python.
///
/// # Errors
/// As [`promotions`]; a checkout event that does not parse, too.
pub fn deployments(view: &Verified) -> Result<BTreeMap<String, Deployment>> {
    let mut out: BTreeMap<String, Deployment> = BTreeMap::new();
    for (e, m) in moves(view)? {
        match m {
            Move::Promotion(r) if r.restores.is_none() => {
                let commit = promoted_commit(e)?;
                out.insert(
                    r.class.clone(),
                    Deployment {
                        class: r.class,
                        commit: commit.clone(),
                        seq: e.seq,
                        ts_ms: e.ts_ms,
                        how: DeployedBy::Promotion,
                        promoted: commit,
                        decision_seq: r.decision_seq,
                    },
                );
            }
            Move::Checkout(c) if c.completes.is_none() => {
                // A heal moves the work tree, not a class: every class
                // deployed on the commit it left now runs its target.
                for d in out.values_mut().filter(|d| d.commit == c.from) {
                    d.commit = c.to.clone();
                    d.seq = e.seq;
                    d.ts_ms = e.ts_ms;
                    d.how = DeployedBy::Heal {
                        alarm_seq: c.alarm_seq,
                        from: c.from.clone(),
                    };
                }
            }
            Move::Promotion(_) | Move::Checkout(_) => {}
        }
    }
    Ok(out)
}

/// What is deployed for `class` ([`deployments`]).
///
/// # Errors
/// As [`deployments`].
pub fn deployed(view: &Verified, class: &str) -> Result<Option<Deployment>> {
    Ok(deployments(view)?.remove(class))
}

/// Where the deployment of `commit` that was live just before `before_seq`
/// began: the seq of the latest own event that deployed it (a promotion
/// naming it, a heal checking it out; restoring and completing events
/// deploy nothing new). A live monitor starts there by default
/// (`ratchet_drift::deployment_start`), and the report draws an alarm's
/// stream from there. `None` if the trace holds neither.
///
/// # Errors
/// As [`deployments`].
pub fn deployment_start(
    view: &Verified,
    commit: &CommitId,
    before_seq: u64,
) -> Result<Option<u64>> {
    Ok(moves(view)?
        .into_iter()
        .filter(|(e, _)| e.seq < before_seq)
        .filter(|(e, m)| match m {
            Move::Promotion(r) => r.restores.is_none() && e.commit.as_ref() == Some(commit),
            Move::Checkout(c) => c.completes.is_none() && &c.to == commit,
        })
        .map(|(e, _)| e.seq)
        .next_back())
}

/// This store's own `checkout` events (heals, and completions of
/// interrupted ones), in trace order, with their seqs.
///
/// # Errors
/// [`ratchet_trace::Error`] if a checkout event does not parse.
pub fn checkouts(view: &Verified) -> Result<Vec<(u64, CheckoutRecord)>> {
    Ok(view
        .own_control_events::<CheckoutRecord>(ReservedKind::Checkout, u64::MAX)?
        .into_iter()
        .map(|(e, r)| (e.seq, r))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(c: char) -> CommitId {
        CommitId::parse(&c.to_string().repeat(40)).expect("id")
    }

    /// The recorded bytes are a compatibility promise: old traces are read
    /// by these types, and new events must be the bytes old readers knew.
    #[test]
    fn promotion_and_checkout_payloads_are_stored_as_they_always_were() {
        let promotion = PromotionRecord {
            reference: "refs/ratchet/promoted/prompt".into(),
            class: "prompt".into(),
            decision_seq: Some(7),
            restores: None,
            ref_was: None,
        };
        let json = serde_json::to_string(&promotion).expect("json");
        assert_eq!(
            json,
            r#"{"ref":"refs/ratchet/promoted/prompt","class":"prompt","decision_seq":7}"#
        );
        assert_eq!(
            serde_json::from_str::<PromotionRecord>(&json).expect("parses"),
            promotion
        );
        let restore = PromotionRecord {
            decision_seq: None,
            restores: Some(9),
            ref_was: Some("x".into()),
            ..promotion
        };
        assert_eq!(
            serde_json::to_string(&restore).expect("json"),
            r#"{"ref":"refs/ratchet/promoted/prompt","class":"prompt","decision_seq":null,"restores":9,"ref_was":"x"}"#
        );
        let checkout = CheckoutRecord {
            from: id('a'),
            to: id('b'),
            alarm_seq: Some(3),
            scorer: Some("quality".into()),
            reason: "why".into(),
            skipped: vec![(id('c'), "gone".into())],
            head_was: Some("d".into()),
            completes: None,
        };
        let json = serde_json::to_string(&checkout).expect("json");
        let (a, b, c) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        assert_eq!(
            json,
            format!(
                r#"{{"from":"{a}","to":"{b}","alarm_seq":3,"scorer":"quality","reason":"why","skipped":[["{c}","gone"]],"head_was":"d"}}"#
            )
        );
        assert_eq!(
            serde_json::from_str::<CheckoutRecord>(&json).expect("parses"),
            checkout
        );
        // A checkout recorded before `head_was` and `completes` existed.
        let old = format!(r#"{{"from":"{a}","to":"{b}","reason":"r"}}"#);
        let read: CheckoutRecord = serde_json::from_str(&old).expect("an old checkout parses");
        assert_eq!(
            (read.alarm_seq, read.head_was, read.completes),
            (None, None, None)
        );
    }

    fn promote(
        store: &mut ratchet_trace::Store,
        commit: &CommitId,
        class: &str,
        restores: Option<u64>,
    ) -> u64 {
        let promotion = PromotionRecord {
            reference: format!("refs/ratchet/promoted/{class}"),
            class: class.into(),
            decision_seq: None,
            restores,
            ref_was: None,
        };
        let draft = ratchet_trace::EventDraft::reserved(ReservedKind::Promotion, &promotion)
            .expect("draft")
            .commit(commit.clone())
            .session("promote");
        store.append(draft).expect("append").seq
    }

    fn heal(
        store: &mut ratchet_trace::Store,
        from: &CommitId,
        to: &CommitId,
        completes: Option<u64>,
    ) -> u64 {
        let checkout = CheckoutRecord {
            from: from.clone(),
            to: to.clone(),
            alarm_seq: Some(1),
            scorer: None,
            reason: "test".into(),
            skipped: Vec::new(),
            head_was: None,
            completes,
        };
        let draft = ratchet_trace::EventDraft::reserved(ReservedKind::Checkout, &checkout)
            .expect("draft")
            .commit(to.clone())
            .session("heal");
        store.append(draft).expect("append").seq
    }

    #[test]
    fn a_heal_moves_every_class_on_the_commit_it_left_and_restores_and_completions_move_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store =
            ratchet_trace::Store::create(dir.path().join(".ratchet"), Default::default())
                .expect("store");
        let (a, b, c) = (id('a'), id('b'), id('c'));
        let p1 = promote(&mut store, &a, "prompt", None);
        promote(&mut store, &a, "model", None);
        promote(&mut store, &c, "other", None);
        let healed = heal(&mut store, &a, &b, None);
        // The ref brought back to the promotion, the heal's checkout
        // completed after a crash: neither deploys anything new.
        promote(&mut store, &a, "prompt", Some(p1));
        heal(&mut store, &a, &b, Some(healed));
        let view = store.verified(&Default::default()).expect("verifies");
        let now = deployments(&view).expect("reads");
        for class in ["prompt", "model"] {
            let deployment = &now[class];
            assert_eq!(
                (&deployment.commit, deployment.seq, &deployment.promoted),
                (&b, healed, &a),
                "{class}"
            );
            assert_eq!(
                deployment.how,
                DeployedBy::Heal {
                    alarm_seq: Some(1),
                    from: a.clone()
                }
            );
        }
        assert_eq!(now["other"].commit, c);
        assert_eq!(
            deployment_start(&view, &b, u64::MAX).expect("reads"),
            Some(healed)
        );
        assert_eq!(
            deployment_start(&view, &a, u64::MAX).expect("reads"),
            Some(p1 + 1)
        );
        assert_eq!(
            deployment_start(&view, &a, p1 + 1).expect("reads"),
            Some(p1)
        );
        assert_eq!(deployment_start(&view, &b, healed).expect("reads"), None);
        // What the refs must name is the promotion, restore included.
        let refs = promotions(&view).expect("reads");
        assert_eq!(
            (&refs["prompt"].commit, refs["prompt"].seq),
            (&a, healed + 1)
        );
        // A later promotion of the class deploys again.
        drop(view);
        let p2 = promote(&mut store, &c, "prompt", None);
        let view = store.verified(&Default::default()).expect("verifies");
        let deployment = deployed(&view, "prompt").expect("reads").expect("deployed");
        assert_eq!(
            (deployment.commit, deployment.seq, deployment.how),
            (c, p2, DeployedBy::Promotion)
        );
    }
}
