//! Every measurement a benchmark tool gave, kept beside the one number its
//! summary score holds: the payload ([`Samples`], a `samples` event) is
//! `ratchet_records`'; what is here is how ingestion fits a long run into
//! events of the store's payload limit.

use crate::Samples;

/// `run` as events that each fit `max_payload` bytes: itself when it
/// fits, else consecutive runs of its values in order (at least one
/// value each), every other field the same.
pub(crate) fn split_to_fit(run: Samples, max_payload: usize) -> Vec<Samples> {
    let whole = serde_json::to_vec(&run).map_or(usize::MAX, |b| b.len());
    if whole <= max_payload {
        return vec![run];
    }
    let empty = Samples {
        values: Vec::new(),
        ..run.clone()
    };
    let overhead = serde_json::to_vec(&empty).map_or(0, |b| b.len());
    let budget = max_payload.saturating_sub(overhead);
    let mut parts = Vec::new();
    let mut current: Vec<f64> = Vec::new();
    let mut used = 0;
    for v in run.values {
        // The value as serde_json writes it, and its comma.
        let len = serde_json::to_string(&(v + 0.0)).map_or(32, |t| t.len()) + 1;
        if !current.is_empty() && used + len > budget {
            parts.push(std::mem::take(&mut current));
            used = 0;
        }
        used += len;
        current.push(v);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
        .into_iter()
        .map(|values| Samples {
            values,
            ..empty.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_trace::CommitId;

    fn samples(values: Vec<f64>) -> Samples {
        Samples {
            commit: CommitId::parse(&"a".repeat(40)).expect("commit"),
            benchmark: "fib".into(),
            scorer: "hyperfine_s".into(),
            scorer_version: "abc".into(),
            unit: "s".into(),
            values,
            round: None,
        }
    }

    #[test]
    fn a_run_too_big_for_one_event_is_split_in_order() {
        let values: Vec<f64> = (0..20_000).map(|i| 1.0 + f64::from(i) * 1e-7).collect();
        let parts = split_to_fit(
            samples(values.clone()),
            ratchet_trace::DEFAULT_MAX_INLINE_PAYLOAD,
        );
        assert!(parts.len() > 1);
        for p in &parts {
            let len = serde_json::to_vec(p).expect("json").len();
            assert!(len <= ratchet_trace::DEFAULT_MAX_INLINE_PAYLOAD, "{len}");
        }
        let joined: Vec<f64> = parts.into_iter().flat_map(|p| p.values).collect();
        assert_eq!(joined, values);
        assert_eq!(split_to_fit(samples(vec![1.0]), 10).len(), 1);
    }
}
