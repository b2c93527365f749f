//! How honest evidence arrives (issue 40): a pool of workers runs jobs in
//! submission order and each result is recorded when its job completes.

/// The jobs of `jobs` (each with its duration) in the order a pool of
/// `workers` completes them: each job starts, in submission order, on the
/// first worker free, and ends its duration later. When a job's duration
/// depends on its outcome (failures crash sooner, passes time out later),
/// the completion order carries the outcomes.
pub fn pool_completions<J>(workers: usize, jobs: impl IntoIterator<Item = (J, f64)>) -> Vec<J> {
    let mut free = vec![0.0f64; workers.max(1)];
    let mut ends: Vec<(f64, usize, J)> = Vec::new();
    for (i, (job, duration)) in jobs.into_iter().enumerate() {
        let (w, start) = free
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        free[w] = start + duration;
        ends.push((free[w], i, job));
    }
    // Ties (equal end times) complete in submission order.
    ends.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ends.into_iter().map(|(_, _, job)| job).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_jobs_overtake_long_ones_started_before_them() {
        // Two workers: a (3) and b (1) start at 0; c (1) starts at 1 on
        // b's worker and ends at 2, before a; d (5) starts at 2.
        let order = pool_completions(2, [("a", 3.0), ("b", 1.0), ("c", 1.0), ("d", 5.0)]);
        assert_eq!(order, ["b", "c", "a", "d"]);
        // One worker: submission order.
        assert_eq!(pool_completions(1, [(1, 9.0), (2, 1.0)]), [1, 2]);
    }
}
