//! The order a class that declares no `tasks` is read in since
//! [`Law::NameSweep`](crate::Law::NameSweep): the **name sweep**.
//!
//! A sequential test polled as evidence arrives must read one path that
//! every look extends, in an order nobody chose after seeing an outcome.
//! The baseline's trace order (laws 2–4) extends but carries timing: when
//! failures finish sooner than passes, the baseline's failures come first
//! and the early pairs favour the candidate (issue 40: false promotes
//! 0.075 where α is 0.05 with both sides in one pool, 0.13 with the
//! baseline's run before the candidate's). Name order was fixed before any
//! outcome, but re-sorting a growing set at every look (the first law) is a
//! repeated significance test.
//!
//! The sweep keeps both properties. Tasks are taken in name order
//! ([`natural_cmp`]: `t2` before `t10`), and the path is built event by
//! event in trace order, so the path at a later seq always extends the path
//! at an earlier one:
//!
//! * a task is **seen** when its first score on either side is recorded;
//!   a seen task joins the first sweep whose read position is below its
//!   name (a new sweep when every sweep has passed it);
//! * each sweep reads its tasks in name order and waits at the first one
//!   not yet complete (scored on both sides), so a candidate cannot leave
//!   out a task either side has scored, and cannot order what is read;
//! * a task seen only after a sweep passed its name is read by a later
//!   sweep: in a pool both of its jobs were still running, which says
//!   nothing about which side won.
//!
//! One exception keeps a candidate's new tasks from stalling the gate
//! forever: when the baseline had scored tasks before the candidate's first
//! score and has scored no new task since (its run was over), a task only
//! the candidate has scored is not waited for. Once the baseline scores a
//! new task after the candidate began, the two runs overlap: every task
//! the candidate scored before that moment is seen then, all at once (so
//! they are read in name order, not in the order the baseline then scores
//! them — a red team's attack), and each task it scores later is seen at
//! its score and waited for — as it must be: otherwise the tasks whose
//! baseline job runs longer would be passed over, and that depends on
//! outcomes.
//!
//! What is read is decided by the seqs of first scores and by task names,
//! both fixed before the test reads anything; a candidate that records its
//! wins first changes nothing it reads. The one choice a candidate keeps
//! while the baseline is still being recorded: a task neither side has
//! scored when a sweep passes its name moves to a later sweep, so a
//! candidate may hold back a task whose baseline job has not finished
//! (never one the baseline has scored). A declared task list removes even
//! that; the threat model in ARCHITECTURE.md says so.

use std::cmp::Ordering;
use std::collections::BTreeSet;

/// One task as the sweep sees it, from the seqs of its scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SweepTask<'a> {
    /// The task's name.
    pub name: &'a str,
    /// Seq of the baseline's first score of the task.
    pub baseline: Option<u64>,
    /// Seq of the candidate's first score of the task.
    pub candidate: Option<u64>,
    /// Seq from which the reader has what it needs of the task (both first
    /// scores; two runs a side for the pentanomial test).
    pub complete: Option<u64>,
}

/// The sweep's path: indices of the tasks given to [`name_sweep`] in the
/// order read, and the task the first blocked sweep waits at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SweepPath {
    pub read: Vec<usize>,
    pub waits_at: Option<usize>,
}

/// Orders `tasks` by the name sweep (see the module's documentation).
pub(crate) fn name_sweep(tasks: &[SweepTask<'_>]) -> SweepPath {
    let rank = ranks(tasks);
    // The baseline's run was over when the candidate began until the
    // baseline scores a task it had not scored before the candidate's
    // first score: until then a task the candidate scored first is not
    // waited for.
    let first_candidate = tasks.iter().filter_map(|t| t.candidate).min();
    let released_before = match first_candidate {
        Some(c0) if tasks.iter().any(|t| t.baseline.is_some_and(|b| b < c0)) => tasks
            .iter()
            .filter_map(|t| t.baseline.filter(|&b| b > c0))
            .min()
            .unwrap_or(u64::MAX),
        _ => 0,
    };
    let seen = |t: &SweepTask<'_>| match (t.baseline, t.candidate) {
        (Some(b), Some(c)) if b <= c => Some(b),
        (Some(b), None) => Some(b),
        // A task the candidate scored inside the window is seen when the
        // window closes (the baseline's first new task after the candidate
        // began), all such tasks at once — not each when the baseline
        // scores it, which would read them in the baseline's trace order.
        (_, Some(c)) if c < released_before => {
            (released_before != u64::MAX).then_some(released_before)
        }
        (_, c) => c,
    };
    // Events in trace order; a task seen and completed at one seq is seen
    // first.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        if let Some(s) = seen(t) {
            events.push((s, false, i));
            if let Some(c) = t.complete {
                events.push((c.max(s), true, i));
            }
        }
    }
    events.sort_unstable();

    let mut sweeps: Vec<Sweep> = Vec::new();
    let mut complete = vec![false; tasks.len()];
    let mut read = Vec::new();
    for (_, completes, i) in events {
        if completes {
            complete[i] = true;
            // Sweeps are read in the order they began: one waiting at a
            // task holds back every later one, so that no task one side
            // has scored is passed over.
            for sweep in &mut sweeps {
                if !sweep.advance(&complete, &mut read) {
                    break;
                }
            }
            continue;
        }
        let r = rank[i];
        let j = match sweeps.iter().position(|s| s.passed.is_none_or(|p| p < r)) {
            Some(j) => j,
            None => {
                sweeps.push(Sweep::default());
                sweeps.len() - 1
            }
        };
        sweeps[j].waiting.insert((r, i));
    }
    let waits_at = sweeps
        .iter()
        .find_map(|s| s.waiting.first().map(|&(_, i)| i));
    SweepPath { read, waits_at }
}

/// One pass over the names: where it has read up to, and the seen tasks
/// it has still to read, by name.
#[derive(Debug, Default)]
struct Sweep {
    passed: Option<usize>,
    waiting: BTreeSet<(usize, usize)>,
}

impl Sweep {
    /// Reads every task from the front that is complete; whether nothing
    /// seen is left waiting.
    fn advance(&mut self, complete: &[bool], read: &mut Vec<usize>) -> bool {
        while let Some(&(r, i)) = self.waiting.first() {
            if !complete[i] {
                return false;
            }
            self.waiting.pop_first();
            self.passed = Some(r);
            read.push(i);
        }
        true
    }
}

/// Each task's place in name order (ties in [`natural_cmp`] broken by the
/// bytes, so that the order is total).
fn ranks(tasks: &[SweepTask<'_>]) -> Vec<usize> {
    let mut by_name: Vec<usize> = (0..tasks.len()).collect();
    by_name.sort_by(|&a, &b| {
        natural_cmp(tasks[a].name, tasks[b].name).then_with(|| tasks[a].name.cmp(tasks[b].name))
    });
    let mut rank = vec![0; tasks.len()];
    for (r, i) in by_name.into_iter().enumerate() {
        rank[i] = r;
    }
    rank
}

/// Name order as people number things: runs of digits compare by value
/// (`t2` < `t10`, `7` < `12`), everything else by bytes.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (da, ra) = split_digits(a);
                let (db, rb) = split_digits(b);
                let (va, vb) = (trim_zeros(da), trim_zeros(db));
                let by_value = va.len().cmp(&vb.len()).then_with(|| va.cmp(vb));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (a, b) = (ra, rb);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b'0').count();
    &s[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task complete once both sides have scored it.
    pub(super) fn task(name: &str, baseline: Option<u64>, candidate: Option<u64>) -> SweepTask<'_> {
        SweepTask {
            name,
            baseline,
            candidate,
            complete: baseline.zip(candidate).map(|(b, c)| b.max(c)),
        }
    }

    fn names<'a>(tasks: &[SweepTask<'a>], path: &SweepPath) -> (Vec<&'a str>, Option<&'a str>) {
        (
            path.read.iter().map(|&i| tasks[i].name).collect(),
            path.waits_at.map(|i| tasks[i].name),
        )
    }

    #[test]
    fn numbers_in_names_compare_by_value() {
        let mut v = ["t10", "t2", "t1", "a", "t02x", "t2a", "b3", "b03"];
        v.sort_by(|a, b| natural_cmp(a, b).then_with(|| a.cmp(b)));
        assert_eq!(v, ["a", "b03", "b3", "t1", "t2", "t2a", "t02x", "t10"]);
    }

    #[test]
    fn a_complete_baseline_is_read_in_name_order_waiting_at_the_first_gap() {
        // The baseline's run recorded t3, t1, t2, t4 (seqs 1–4); the
        // candidate then scored t4, t1, t3 — not t2.
        let tasks = [
            task("t3", Some(1), Some(7)),
            task("t1", Some(2), Some(6)),
            task("t2", Some(3), None),
            task("t4", Some(4), Some(5)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t1"], Some("t2")));
    }

    #[test]
    fn every_later_look_extends_the_path_of_an_earlier_one() {
        // Two pools' worth of arrivals, interleaved and out of name order;
        // the path at every prefix of the trace is a prefix of the next.
        let mut arrivals: Vec<(usize, bool)> = Vec::new();
        for t in 0..30usize {
            arrivals.push((t, false));
            arrivals.push((t, true));
        }
        // A fixed shuffle: by a multiplicative hash of the position.
        arrivals.sort_by_key(|&(t, c)| (t * 7919 + usize::from(c) * 104_729) % 61);
        let names: Vec<String> = (0..30).map(|t| format!("t{t}")).collect();
        let mut last: Vec<usize> = Vec::new();
        for upto in 0..=arrivals.len() {
            let mut b = vec![None; 30];
            let mut c = vec![None; 30];
            for (seq, &(t, cand)) in arrivals[..upto].iter().enumerate() {
                let side = if cand { &mut c } else { &mut b };
                side[t].get_or_insert(seq as u64);
            }
            let tasks: Vec<SweepTask<'_>> = (0..30).map(|t| task(&names[t], b[t], c[t])).collect();
            let path = name_sweep(&tasks).read;
            assert!(
                path.starts_with(&last),
                "at {upto}: {path:?} does not extend {last:?}"
            );
            last = path;
        }
        assert_eq!(last.len(), 30, "everything is read once complete");
    }

    #[test]
    fn a_candidate_recording_its_wins_first_does_not_order_them() {
        // The baseline's run is over (seqs 0–3); the candidate records t4
        // and t2 (say, its wins) before t1 and t3.
        let tasks = [
            task("t1", Some(0), Some(12)),
            task("t2", Some(1), Some(11)),
            task("t3", Some(2), Some(13)),
            task("t4", Some(3), Some(10)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t1", "t2", "t3", "t4"], None));
        // Before t1 arrives nothing is read: the sweep waits at it.
        let early: Vec<_> = tasks
            .iter()
            .map(|t| task(t.name, t.baseline, t.candidate.filter(|&c| c < 12)))
            .collect();
        assert_eq!(names(&early, &name_sweep(&early)), (vec![], Some("t1")));
    }

    #[test]
    fn a_task_only_the_candidate_ran_after_the_baseline_finished_is_not_waited_for() {
        let tasks = [
            task("t1", Some(0), Some(3)),
            task("new", None, Some(4)),
            task("t2", Some(1), Some(5)),
            task("t3", Some(2), Some(6)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t1", "t2", "t3"], None));
    }

    #[test]
    fn while_the_runs_overlap_a_task_the_candidate_scored_first_is_waited_for() {
        // The baseline scores t1, the candidate t1; the baseline scores t2
        // — a new task after the candidate began — and the candidate t3,
        // still running on the baseline: the sweep waits at t3.
        let tasks = [
            task("t1", Some(0), Some(1)),
            task("t2", Some(2), Some(4)),
            task("t3", None, Some(3)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t1", "t2"], Some("t3")));
    }

    #[test]
    fn a_task_one_side_has_scored_holds_back_every_later_sweep() {
        // Scored in descending name order, each task complete before the
        // next is seen: t4 and t3 each begin a sweep, t2a a third, which
        // t2b joins; the candidate leaves out t2b; t1, below every
        // sweep's position, begins a fourth — complete, but read only
        // after t2b.
        let tasks = [
            task("t4", Some(0), Some(1)),
            task("t3", Some(2), Some(3)),
            task("t2a", Some(4), Some(5)),
            task("t2b", Some(6), None),
            task("t1", Some(7), Some(8)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t4", "t3", "t2a"], Some("t2b")));
        let mut filled = tasks;
        filled[3] = task("t2b", Some(6), Some(9));
        let path = name_sweep(&filled);
        assert_eq!(
            names(&filled, &path),
            (vec!["t4", "t3", "t2a", "t2b", "t1"], None)
        );
    }

    #[test]
    fn a_task_first_seen_after_the_sweep_passed_its_name_is_read_by_a_later_sweep() {
        // t1 and t3 complete; then t2 appears (both of its jobs ran long).
        let tasks = [
            task("t1", Some(0), Some(1)),
            task("t3", Some(2), Some(3)),
            task("t2", Some(4), Some(5)),
        ];
        let path = name_sweep(&tasks);
        assert_eq!(names(&tasks, &path), (vec!["t1", "t3", "t2"], None));
    }
}

#[cfg(test)]
mod red_team {
    //! A red team's attacks on the name sweep (issue 40): the path's prefix
    //! property over random traces, and the one attack that worked — a
    //! candidate run recorded in one stretch while the baseline's run was
    //! silent read the baseline's trace order — pinned as closed.
    use super::tests::task;
    use super::*;

    fn names<'a>(tasks: &[SweepTask<'a>], path: &SweepPath) -> Vec<&'a str> {
        path.read.iter().map(|&i| tasks[i].name).collect()
    }

    /// Tiny xorshift so the test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Event: (task, side: 0 baseline / 1 candidate). Two runs a side may
    /// appear (pentanomial); first and second scores give seqs.
    fn tasks_at<'a>(
        names: &'a [String],
        events: &[(usize, u8)],
        runs: usize,
    ) -> Vec<SweepTask<'a>> {
        let n = names.len();
        let mut seqs: Vec<[Vec<u64>; 2]> = vec![[Vec::new(), Vec::new()]; n];
        for (s, &(t, side)) in events.iter().enumerate() {
            seqs[t][side as usize].push(s as u64);
        }
        (0..n)
            .map(|t| SweepTask {
                name: &names[t],
                baseline: seqs[t][0].first().copied(),
                candidate: seqs[t][1].first().copied(),
                complete: seqs[t][0]
                    .get(runs - 1)
                    .zip(seqs[t][1].get(runs - 1))
                    .map(|(&b, &c)| b.max(c)),
            })
            .collect()
    }

    /// Every look extends one path, brute force: random traces (overlapping runs, baseline
    /// first, candidate-only and baseline-only tasks, re-runs, one or two
    /// runs a side), every prefix's path a prefix of the next.
    #[test]
    fn every_look_extends_one_path_over_random_traces() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..5_000 {
            let n = 1 + rng.below(7) as usize;
            let runs = 1 + rng.below(2) as usize;
            let names: Vec<String> = (0..n)
                .map(|t| format!("t{}", rng.below(12) * 100 + t as u64))
                .collect();
            let mut events = Vec::new();
            for t in 0..n {
                for side in 0..2u8 {
                    if rng.below(6) == 0 {
                        continue; // this side never scores the task
                    }
                    for _ in 0..(runs + rng.below(2) as usize) {
                        events.push((t, side));
                    }
                }
            }
            // Shuffle; sometimes put the baseline's run first.
            for i in (1..events.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                events.swap(i, j);
            }
            if rng.below(3) == 0 {
                events.sort_by_key(|&(_, side)| side);
            }
            let mut last: Vec<usize> = Vec::new();
            for upto in 0..=events.len() {
                let tasks = tasks_at(&names, &events[..upto], runs);
                let path = name_sweep(&tasks).read;
                assert!(
                    path.starts_with(&last),
                    "names {names:?} events {events:?} runs {runs} at {upto}: {path:?} does not extend {last:?}"
                );
                last = path;
            }
        }
    }

    /// Attack A. The runs overlap: the baseline has recorded t5 when the
    /// candidate records its whole run in one batch (seqs 1–8). Its first
    /// score opens the "baseline's run was over" window, which lasts until
    /// the baseline's next new task (seq 9). The sweep first seen each
    /// task the candidate scored in the window only at the baseline's
    /// score of it, complete on arrival, so it read the baseline's trace
    /// order (t5 t8 t2 t7 t1 t6 t3 t4), whose timing bias it exists to
    /// remove. Now every such task is seen when the window closes, at
    /// once, and read in name order, as when the window closed sooner.
    #[test]
    fn a_candidate_run_recorded_while_the_baseline_is_silent_is_read_in_name_order() {
        let baseline_order = ["t5", "t8", "t2", "t7", "t1", "t6", "t3", "t4"];
        let b = |n: &str| {
            baseline_order
                .iter()
                .position(|&x| x == n)
                .map(|p| if p == 0 { 0 } else { 8 + p as u64 })
        };
        let cand = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"];
        let c = |n: &str| cand.iter().position(|&x| x == n).map(|p| 1 + p as u64);
        let tasks: Vec<_> = cand.iter().map(|&n| task(n, b(n), c(n))).collect();
        assert_eq!(
            names(&tasks, &name_sweep(&tasks)),
            ["t5", "t6", "t7", "t8", "t1", "t2", "t3", "t4"],
            "not in the baseline's trace order {baseline_order:?}"
        );

        // The same scores with the candidate's batch recorded one baseline
        // score later (the window closed at seq 2): read in name order, the
        // sweeps waiting for the baseline rather than taking its order.
        let b2 = |n: &str| match baseline_order.iter().position(|&x| x == n) {
            Some(0) => Some(0),
            Some(1) => Some(2),
            Some(p) => Some(10 + p as u64),
            None => None,
        };
        let c2 = |n: &str| match cand.iter().position(|&x| x == n) {
            Some(4) => Some(1), // t5 first, opening (and closing) the window
            Some(p) => Some(3 + p as u64),
            None => None,
        };
        let tasks2: Vec<_> = cand.iter().map(|&n| task(n, b2(n), c2(n))).collect();
        assert_eq!(
            names(&tasks2, &name_sweep(&tasks2)),
            ["t5", "t6", "t7", "t8", "t1", "t2", "t3", "t4"],
            "name order from t5 (its sweep waits at t6 for the baseline), then a second sweep"
        );
    }

    /// Attack A quantified: null hypothesis (both sides pass with
    /// probability ½, independently), baseline failures finish sooner. The
    /// candidate's run is recorded in one batch after the baseline's third
    /// score — (a) straight after it (inside the window), (b) after one
    /// score of the candidate and one more of the baseline (window closed);
    /// (c) a candidate that knows outcomes puts its losses in the window
    /// batch and records its wins after the window closes. Mean of
    /// (candidate − baseline) over the first K pairs read; 0 is unbiased.
    ///
    /// Measured: (a) +4.56 before the fix, +1.23 after (what remains: the
    /// tasks the baseline scored before the candidate began, its fastest
    /// jobs, are read first); (c) +1.63 → +0.17; (d) +0.71, the documented
    /// exception; name order 0.01. Over 5,000 trials the mean of a sum of
    /// ten values in {−1, 0, 1} has a standard error below √(10/5000) =
    /// 0.045, so the bounds below sit more than six errors from the
    /// measured means.
    #[test]
    fn a_candidate_run_recorded_inside_the_window_is_no_longer_read_first() {
        const N: usize = 40;
        const K: usize = 10;
        const TRIALS: usize = 5_000;
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        let names: Vec<String> = (0..N).map(|t| format!("t{t}")).collect();
        let mut sums = [0f64; 5];
        for _ in 0..TRIALS {
            let bpass: Vec<bool> = (0..N).map(|_| rng.below(2) == 1).collect();
            let cpass: Vec<bool> = (0..N).map(|_| rng.below(2) == 1).collect();
            // Baseline finish times: failures in [0,1), passes in [0.5,2).
            let mut border: Vec<(u64, usize)> = (0..N)
                .map(|t| {
                    (
                        if bpass[t] {
                            500 + rng.below(1500)
                        } else {
                            rng.below(1000)
                        },
                        t,
                    )
                })
                .collect();
            border.sort();
            let border: Vec<usize> = border.into_iter().map(|(_, t)| t).collect();
            let score = |t: usize| f64::from(u8::from(cpass[t])) - f64::from(u8::from(bpass[t]));
            for (case, sum) in sums.iter_mut().enumerate() {
                let mut ev: Vec<(usize, u8)> = Vec::new();
                match case {
                    0 => {
                        // (a) baseline 3, candidate batch, baseline rest.
                        ev.extend(border[..3].iter().map(|&t| (t, 0)));
                        ev.extend((0..N).map(|t| (t, 1)));
                        ev.extend(border[3..].iter().map(|&t| (t, 0)));
                    }
                    1 => {
                        // (b) baseline 3, candidate 1 (a task the baseline
                        // has), baseline 1, candidate batch, baseline rest.
                        ev.extend(border[..3].iter().map(|&t| (t, 0)));
                        ev.push((border[0], 1));
                        ev.push((border[3], 0));
                        ev.extend((0..N).filter(|&t| t != border[0]).map(|t| (t, 1)));
                        ev.extend(border[4..].iter().map(|&t| (t, 0)));
                    }
                    2 => {
                        // (c) baseline 3, candidate's losses-or-ties among
                        // tasks the baseline has not scored, baseline 1, the
                        // candidate's other scores, baseline rest.
                        let done: Vec<usize> = border[..4].to_vec();
                        ev.extend(border[..3].iter().map(|&t| (t, 0)));
                        let lose = |t: usize| !cpass[t];
                        ev.push((border[0], 1));
                        ev.extend(
                            (0..N)
                                .filter(|&t| !done.contains(&t) && lose(t))
                                .map(|t| (t, 1)),
                        );
                        ev.push((border[3], 0));
                        ev.extend(
                            (0..N)
                                .filter(|&t| t != border[0] && (done.contains(&t) || !lose(t)))
                                .map(|t| (t, 1)),
                        );
                        ev.extend(border[4..].iter().map(|&t| (t, 0)));
                    }
                    3 => {
                        // (d) the documented exception: window closed as in
                        // (b); the candidate records its passes at once and
                        // holds back its failures on tasks the baseline has
                        // not scored until the baseline's run is over.
                        let done: Vec<usize> = border[..4].to_vec();
                        let lose = |t: usize| !cpass[t] && !done.contains(&t);
                        ev.extend(border[..3].iter().map(|&t| (t, 0)));
                        ev.push((border[0], 1));
                        ev.push((border[3], 0));
                        ev.extend(
                            (0..N)
                                .filter(|&t| t != border[0] && !lose(t))
                                .map(|t| (t, 1)),
                        );
                        ev.extend(border[4..].iter().map(|&t| (t, 0)));
                        ev.extend((0..N).filter(|&t| lose(t)).map(|t| (t, 1)));
                    }
                    _ => {
                        // Reference: pure name order.
                        *sum += (0..K).map(score).sum::<f64>();
                        continue;
                    }
                }
                let tasks = tasks_at(&names, &ev, 1);
                let read = name_sweep(&tasks).read;
                assert_eq!(read.len(), N);
                *sum += read[..K].iter().map(|&t| score(t)).sum::<f64>();
            }
        }
        let means: Vec<f64> = sums.iter().map(|s| s / TRIALS as f64).collect();
        eprintln!(
            "mean (cand - base) over first {K} pairs: (a) batch in window {:.3}, (b) window closed {:.3}, (c) losses in window {:.3}, (d) losses held back {:.3}, name order {:.3}",
            means[0], means[1], means[2], means[3], means[4]
        );
        assert!(means[0] < 1.6, "batch in the window: {}", means[0]);
        assert!(means[1].abs() < 0.3, "window closed: {}", means[1]);
        assert!(means[2] < 0.5, "losses in the window: {}", means[2]);
    }
}
