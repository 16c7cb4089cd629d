//! What one phase saw of each replica of a target booted with `[target] replicas` above one: the
//! attempts each was sent, the ones it failed, the sessions the generator's client moved away from
//! it (failovers and ejections), and when its failures and its logical errors happened, to the
//! millisecond: what a fault on one replica is judged from (the failover window).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One replica's figures over a whole phase, warm-up included (the times tell the warm-up apart:
/// they are negative there).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaCounts {
    /// Attempts sent to it (first attempts, retries and failovers).
    pub attempts: u64,
    /// Attempts it ended with a transport error (connect, reset, timeout, other).
    pub failed: u64,
    /// Attempts that failed on it (a transport error, or a 5xx when `failover.on` names it) and
    /// were sent again to another replica.
    pub failovers: u64,
    /// Times it was ejected: given no sessions for `generator.failover`'s `eject`.
    pub ejections: u64,
    /// Requests of sessions that stuck to it and went to another replica because it was ejected;
    /// each such session then sticks to the other, so this counts the sessions moved.
    pub moved: u64,
    /// Logical operations that ended in an error whose last attempt went to it.
    pub errors: u64,
    /// Its first and last failed attempt, in ms from the start of the measured part.
    pub first_failed_ms: Option<f64>,
    /// See `first_failed_ms`.
    pub last_failed_ms: Option<f64>,
    /// Its first and last logical error, in ms from the start of the measured part.
    pub first_error_ms: Option<f64>,
    /// See `first_error_ms`.
    pub last_error_ms: Option<f64>,
}

impl ReplicaCounts {
    /// Adds another loop's figures for the same replica.
    pub fn merge(&mut self, other: &ReplicaCounts) {
        self.attempts += other.attempts;
        self.failed += other.failed;
        self.failovers += other.failovers;
        self.ejections += other.ejections;
        self.moved += other.moved;
        self.errors += other.errors;
        self.first_failed_ms = earliest(self.first_failed_ms, other.first_failed_ms);
        self.last_failed_ms = latest(self.last_failed_ms, other.last_failed_ms);
        self.first_error_ms = earliest(self.first_error_ms, other.first_error_ms);
        self.last_error_ms = latest(self.last_error_ms, other.last_error_ms);
    }

    /// An attempt sent to it ended; `failed` when with a transport error, at `at_ms`.
    pub(super) fn attempt(&mut self, failed: bool, at_ms: f64) {
        self.attempts += 1;
        if failed {
            self.failed += 1;
            self.first_failed_ms = earliest(self.first_failed_ms, Some(at_ms));
            self.last_failed_ms = latest(self.last_failed_ms, Some(at_ms));
        }
    }

    /// A logical operation ended in an error on it at `at_ms`.
    pub(super) fn error(&mut self, at_ms: f64) {
        self.errors += 1;
        self.first_error_ms = earliest(self.first_error_ms, Some(at_ms));
        self.last_error_ms = latest(self.last_error_ms, Some(at_ms));
    }
}

/// Merges the per-replica figures of several loops, replica by replica.
pub fn merge_replicas(into: &mut Vec<ReplicaCounts>, other: &[ReplicaCounts]) {
    if into.len() < other.len() {
        into.resize(other.len(), ReplicaCounts::default());
    }
    for (mine, theirs) in into.iter_mut().zip(other) {
        mine.merge(theirs);
    }
}

/// `at` (an offset from the phase's origin) in ms from the end of `warmup`: negative in the
/// warm-up.
pub(super) fn ms_from(at: Duration, warmup: Duration) -> f64 {
    (at.as_secs_f64() - warmup.as_secs_f64()) * 1e3
}

fn earliest(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn latest(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_merge_by_replica_counts_summed_times_widened() {
        let mut a = vec![ReplicaCounts::default(), ReplicaCounts::default()];
        a[0].attempt(false, 1.0);
        a[1].attempt(true, 120.0);
        a[1].error(121.0);
        let mut b = vec![ReplicaCounts::default(), ReplicaCounts::default()];
        b[1].attempt(true, 80.0);
        b[1].attempt(true, 300.0);
        b[1].failovers = 2;
        merge_replicas(&mut a, &b);
        assert_eq!(a[0].attempts, 1);
        assert_eq!((a[1].attempts, a[1].failed, a[1].failovers), (3, 3, 2));
        assert_eq!(
            (a[1].first_failed_ms, a[1].last_failed_ms),
            (Some(80.0), Some(300.0))
        );
        assert_eq!(
            (a[1].first_error_ms, a[1].last_error_ms),
            (Some(121.0), Some(121.0))
        );
        assert_eq!(a[0].first_failed_ms, None);
    }

    #[test]
    fn times_before_the_measured_part_are_negative() {
        let ms = ms_from(Duration::from_millis(250), Duration::from_secs(1));
        assert!((ms + 750.0).abs() < 1e-9, "{ms}");
    }
}
