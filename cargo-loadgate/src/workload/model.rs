//! The user model as an absorbing Markov chain (seed 000): what share of requests each operation
//! gets, how many requests a session sends and what request rate a session rate implies — computed
//! exactly — and a check that the generator's sessions reproduce that mix.
//!
//! Operations are the transient states; the probability an operation's `next` leaves unassigned
//! ends the session (the absorbing state). With `Q` the operation-to-operation matrix, the
//! fundamental matrix `N = (I − Q)⁻¹` gives the expected visits per session `v = entryᵀ · N`. Only
//! that one row combination is needed, so the code solves `(I − Q)ᵀ · v = entry` by Gaussian
//! elimination with partial pivoting instead of inverting.

use super::schedule::{MAX_SESSION_STEPS, PathModel};
use crate::config::{ThinkTime, WorkloadConfig};
use crate::stats::normal_quantile;
use serde::Serialize;
use std::fmt;

/// The family-wise confidence of [`validate_mix`].
pub const MIX_CONFIDENCE: f64 = 0.99;

/// Below this, an operation's exit probability counts as zero: a chain that leaves with
/// probability 1e-9 per step has sessions a billion steps long, which no run can send.
const EXIT_EPSILON: f64 = 1e-9;

/// What the user model implies, computed exactly from the chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelAnalysis {
    /// The session arrival rate the figures below assume ([`WorkloadConfig::sessions_per_sec`]).
    pub sessions_per_sec: f64,
    /// The expected number of requests one session sends.
    pub requests_per_session: f64,
    /// The expected total think time of one session, in seconds. The service's answer times add to
    /// this, so a real session lasts longer.
    pub session_seconds_mean: f64,
    /// The request rate the session rate implies: `sessions_per_sec × requests_per_session`.
    pub request_rate_per_sec: f64,
    /// Per operation, in the config's order.
    pub operations: Vec<OperationShare>,
}

/// One operation's part of the load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperationShare {
    /// The operation's name.
    pub name: String,
    /// The expected number of times one session sends this operation.
    pub visits_per_session: f64,
    /// Its share of all requests, in [0, 1].
    pub share: f64,
}

impl ModelAnalysis {
    /// The request rate at another session rate (a ramp step, say).
    pub fn request_rate_at(&self, sessions_per_sec: f64) -> f64 {
        sessions_per_sec * self.requests_per_session
    }
}

/// A user model that cannot describe sessions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Some operations form a closed cycle: once a session enters it, it never ends.
    #[error(
        "the user model never ends a session: {} {} a cycle that a session never leaves\nhint: give one of them a way out (let its `next` probabilities sum to less than 1) or an edge to an operation that has one",
        list(operations),
        if operations.len() == 1 { "forms" } else { "form" }
    )]
    NeverEnds {
        /// The operations on the cycle(s), in the config's order.
        operations: Vec<String>,
    },
    /// No operation has a positive entry weight.
    #[error("the user model has no entry point with a positive weight")]
    NoEntry,
    /// The chain's equations are numerically singular.
    #[error(
        "the user model's session lengths cannot be computed: its sessions are too close to never ending\nhint: raise the probability that sessions end"
    )]
    Singular,
    /// Too few sessions to estimate the mix.
    #[error("at least 2 sessions are needed to validate the mix, got {sessions}")]
    TooFewSessions {
        /// The sessions asked for.
        sessions: u64,
    },
}

fn list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// Computes the model's expected visits, shares, requests per session, think time per session and
/// implied request rate, exactly (up to floating point).
///
/// Operations no session can reach get zero visits. A model in which a reachable operation cannot
/// lead to the end of the session is refused with [`ModelError::NeverEnds`], naming the
/// operations of the closed cycle, since its sessions would be infinitely long.
pub fn analyze(w: &WorkloadConfig) -> Result<ModelAnalysis, ModelError> {
    let n = w.operations.len();
    let mut q = vec![vec![0.0; n]; n];
    let mut think = vec![0.0; n];
    for (i, op) in w.operations.iter().enumerate() {
        for t in op.next.iter().filter(|t| t.to < n && t.p > 0.0) {
            q[i][t.to] += t.p;
            think[i] += t.p * mean_think(t.think);
        }
    }
    let exits: Vec<bool> = q
        .iter()
        .map(|row| 1.0 - row.iter().sum::<f64>() > EXIT_EPSILON)
        .collect();

    let mut entry = vec![0.0; n];
    for e in w.entry.iter().filter(|e| e.operation < n && e.p > 0.0) {
        entry[e.operation] += e.p;
    }
    let entry_total: f64 = entry.iter().sum();
    if entry_total.is_nan() || entry_total <= 0.0 {
        return Err(ModelError::NoEntry);
    }
    entry.iter_mut().for_each(|e| *e /= entry_total);

    let edge = |i: usize, j: usize| q[i][j] > 0.0;
    let reachable = closure(n, entry.iter().map(|&e| e > 0.0).collect(), |from, to| {
        edge(from, to)
    });
    let can_end = closure(n, exits.clone(), |from, to| edge(to, from));
    let trapped: Vec<bool> = (0..n).map(|i| reachable[i] && !can_end[i]).collect();
    if trapped.iter().any(|&t| t) {
        // Every trapped operation leads only to trapped ones, so cycles exist among them; name
        // the operations on a cycle rather than those merely leading into one.
        let operations = (0..n)
            .filter(|&i| trapped[i] && on_cycle(n, i, &edge))
            .map(|i| w.operations[i].name.clone())
            .collect();
        return Err(ModelError::NeverEnds { operations });
    }

    // Solve (I − Q)ᵀ v = entry over the reachable operations only.
    let states: Vec<usize> = (0..n).filter(|&i| reachable[i]).collect();
    let m = states.len();
    let mut a = vec![vec![0.0; m + 1]; m];
    for (r, &j) in states.iter().enumerate() {
        for (c, &i) in states.iter().enumerate() {
            a[r][c] = if i == j { 1.0 } else { 0.0 } - q[i][j];
        }
        a[r][m] = entry[j];
    }
    let solution = solve(a).ok_or(ModelError::Singular)?;
    let mut visits = vec![0.0; n];
    for (&i, v) in states.iter().zip(solution) {
        visits[i] = v.max(0.0);
    }

    let requests_per_session: f64 = visits.iter().sum();
    let session_seconds_mean = visits.iter().zip(&think).map(|(v, t)| v * t).sum();
    Ok(ModelAnalysis {
        sessions_per_sec: w.sessions_per_sec,
        requests_per_session,
        session_seconds_mean,
        request_rate_per_sec: w.sessions_per_sec * requests_per_session,
        operations: w
            .operations
            .iter()
            .zip(&visits)
            .map(|(op, &v)| OperationShare {
                name: op.name.clone(),
                visits_per_session: v,
                share: v / requests_per_session,
            })
            .collect(),
    })
}

/// The mean of a think time distribution, in seconds.
pub(crate) fn mean_think(think: ThinkTime) -> f64 {
    match think {
        ThinkTime::Exponential(mean) | ThinkTime::Fixed(mean) => mean.as_secs_f64(),
        ThinkTime::Uniform(low, high) => (low.as_secs_f64() + high.as_secs_f64()) / 2.0,
    }
}

/// The states reachable from `start` along `edge`.
fn closure(n: usize, start: Vec<bool>, edge: impl Fn(usize, usize) -> bool) -> Vec<bool> {
    let mut seen = start;
    let mut stack: Vec<usize> = (0..n).filter(|&i| seen[i]).collect();
    while let Some(from) = stack.pop() {
        for (to, seen_to) in seen.iter_mut().enumerate() {
            if !*seen_to && edge(from, to) {
                *seen_to = true;
                stack.push(to);
            }
        }
    }
    seen
}

fn on_cycle(n: usize, state: usize, edge: &impl Fn(usize, usize) -> bool) -> bool {
    let successors = (0..n).map(|to| edge(state, to)).collect();
    closure(n, successors, edge)[state]
}

/// Solves the augmented system `a` (m rows of m coefficients and a right-hand side) by Gaussian
/// elimination with partial pivoting. `None` when a pivot vanishes.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let m = a.len();
    for col in 0..m {
        let pivot = (col..m).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        let magnitude = a[pivot][col].abs();
        if magnitude.is_nan() || magnitude <= 1e-14 {
            return None;
        }
        a.swap(col, pivot);
        let (done, rest) = a.split_at_mut(col + 1);
        let pivot_row = &done[col];
        for row in rest {
            let factor = row[col] / pivot_row[col];
            if factor != 0.0 {
                for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= factor * p;
                }
            }
        }
    }
    let mut x = vec![0.0; m];
    for row in (0..m).rev() {
        let tail: f64 = (row + 1..m).map(|k| a[row][k] * x[k]).sum();
        x[row] = (a[row][m] - tail) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The generated mix compared with the model's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixValidation {
    /// The seed the sessions were drawn from.
    pub seed: u64,
    /// How many sessions were drawn.
    pub sessions: u64,
    /// How many requests they send in all.
    pub requests: u64,
    /// Sessions cut at [`MAX_SESSION_STEPS`]; their tails are missing from the mix.
    pub truncated_sessions: u64,
    /// The family-wise confidence of the intervals ([`MIX_CONFIDENCE`]): each operation's interval
    /// is at `1 − (1 − confidence) / operations`, so that a correct generator falls outside any of
    /// them with probability at most `1 − confidence`.
    pub confidence: f64,
    /// Per operation, in the config's order.
    pub operations: Vec<OperationMix>,
}

/// One operation's generated share against the model's.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct OperationMix {
    /// The operation's name.
    pub name: String,
    /// The share the model gives it.
    pub expected_share: f64,
    /// The share of the generated requests it got.
    pub observed_share: f64,
    /// The lower bound of the interval around `expected_share` the observed share should lie in.
    pub low: f64,
    /// The upper bound of that interval.
    pub high: f64,
    /// Whether the observed share lies in the interval.
    pub within: bool,
}

impl OperationMix {
    /// `` `name` VERB 1.23% (model 1.00%, interval 0.90%–1.10%) ``, for a verdict naming it.
    pub fn describe(&self, verb: &str) -> String {
        format!(
            "`{}` {verb} {:.2}% (model {:.2}%, interval {:.2}%–{:.2}%)",
            self.name,
            self.observed_share * 100.0,
            self.expected_share * 100.0,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

impl MixValidation {
    /// Whether every operation's observed share lies within its interval.
    pub fn all_within(&self) -> bool {
        self.operations.iter().all(|o| o.within)
    }
}

/// Draws `sessions` sessions from `seed` with the generator the schedule uses and checks each
/// operation's share of their requests against [`analyze`]'s (seed 000's model validation).
pub fn validate_mix(
    w: &WorkloadConfig,
    seed: u64,
    sessions: u64,
) -> Result<MixValidation, ModelError> {
    validate_mix_against(w, &analyze(w)?, seed, sessions)
}

/// Like [`validate_mix`], against the shares of `expected` (operations matched by position; a
/// missing one expects a share of 0).
///
/// Sessions are independent, but the requests within one are not, so the count of an operation is
/// not binomial in requests. The test treats each session as the unit: with `c` a session's visits
/// to the operation, `t` its requests and `p` the expected share, `d = c − p·t` has mean 0 when the
/// model holds, and by the central limit theorem `Σd / √(n·s²)` is standard normal (`s²` the sample
/// variance of `d`). Since `observed − p = Σd / Σt`, the interval on the share is
/// `p ± z·√(n·s²) / Σt`.
pub fn validate_mix_against(
    w: &WorkloadConfig,
    expected: &ModelAnalysis,
    seed: u64,
    sessions: u64,
) -> Result<MixValidation, ModelError> {
    if sessions < 2 {
        return Err(ModelError::TooFewSessions { sessions });
    }
    let n_ops = w.operations.len();
    let p: Vec<f64> = (0..n_ops)
        .map(|i| expected.operations.get(i).map_or(0.0, |o| o.share))
        .collect();
    let names: Vec<String> = w.operations.iter().map(|o| o.name.clone()).collect();
    let model = PathModel::new(w, seed);
    let mut moments = MixMoments::new(n_ops);
    let mut counts = vec![0u64; n_ops];
    let mut truncated = 0u64;
    for index in 0..sessions {
        let steps = model.steps(index);
        counts.iter_mut().for_each(|c| *c = 0);
        for step in &steps {
            counts[step.operation] += 1;
        }
        truncated += u64::from(steps.len() >= MAX_SESSION_STEPS);
        moments.add_session(&counts);
    }
    let operations = moments.shares(&names, &p, n_ops);
    let requests = moments.requests();
    Ok(MixValidation {
        seed,
        sessions,
        requests,
        truncated_sessions: truncated,
        confidence: MIX_CONFIDENCE,
        operations,
    })
}

/// Per-session sums from which the mix test of [`validate_mix_against`] is computed for any
/// expected shares: the generator's sessions fill it there, a log's sessions fill it in `logs/`.
///
/// With `c` a session's visits to an operation and `t` its requests, the test needs the sample
/// variance of `d = c − p·t`, which is `Σc² − 2pΣct + p²Σt²` less `(Σc − pΣt)²/n`: keeping these
/// integer sums (exact in `u64` for any log that fits a disk) lets the expected share `p` be chosen
/// after the sessions were seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MixMoments {
    sessions: u64,
    sum_t: u64,
    sum_t2: u64,
    sum_c: Vec<u64>,
    sum_c2: Vec<u64>,
    sum_ct: Vec<u64>,
}

/// The observed mean of a per-session figure against the model's, with its interval.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct MeanCheck {
    /// What the model gives.
    pub expected: f64,
    /// What the sessions show.
    pub observed: f64,
    /// The lower bound of the interval around `expected` the observed mean should lie in.
    pub low: f64,
    /// The upper bound of that interval.
    pub high: f64,
    /// Whether the observed mean lies in the interval.
    pub within: bool,
}

impl MixMoments {
    /// Empty sums over `operations` operations.
    pub fn new(operations: usize) -> Self {
        Self {
            sum_c: vec![0; operations],
            sum_c2: vec![0; operations],
            sum_ct: vec![0; operations],
            ..Self::default()
        }
    }

    /// Adds one session, given its visits per operation (by index).
    pub fn add_session(&mut self, counts: &[u64]) {
        let t: u64 = counts.iter().sum();
        self.sessions += 1;
        self.sum_t = self.sum_t.saturating_add(t);
        self.sum_t2 = self.sum_t2.saturating_add(t.saturating_mul(t));
        for (i, &c) in counts.iter().enumerate().take(self.sum_c.len()) {
            self.sum_c[i] = self.sum_c[i].saturating_add(c);
            self.sum_c2[i] = self.sum_c2[i].saturating_add(c.saturating_mul(c));
            self.sum_ct[i] = self.sum_ct[i].saturating_add(c.saturating_mul(t));
        }
    }

    /// The sessions added.
    pub fn sessions(&self) -> u64 {
        self.sessions
    }

    /// The requests of operation `op` (by index) in all sessions added.
    pub fn requests_of(&self, op: usize) -> u64 {
        self.sum_c.get(op).copied().unwrap_or(0)
    }

    /// The requests of all sessions added.
    pub fn requests(&self) -> u64 {
        self.sum_t
    }

    /// Each operation's observed share against `expected` (by index), at the family-wise
    /// [`MIX_CONFIDENCE`] over `family` tests (Bonferroni), as [`validate_mix_against`] states.
    pub fn shares(&self, names: &[String], expected: &[f64], family: usize) -> Vec<OperationMix> {
        let n = self.sessions as f64;
        let requests = self.sum_t as f64;
        let z = family_z(family);
        (0..self.sum_c.len())
            .map(|i| {
                let p = expected.get(i).copied().unwrap_or(0.0);
                let observed = if self.sum_t == 0 {
                    0.0
                } else {
                    self.sum_c[i] as f64 / requests
                };
                let sum_d = self.sum_c[i] as f64 - p * requests;
                let sum_d2 = self.sum_c2[i] as f64 - 2.0 * p * self.sum_ct[i] as f64
                    + p * p * self.sum_t2 as f64;
                let variance = if n > 1.0 {
                    ((sum_d2 - sum_d * sum_d / n) / (n - 1.0)).max(0.0)
                } else {
                    0.0
                };
                let half = if self.sum_t == 0 {
                    0.0
                } else {
                    z * (n * variance).sqrt() / requests
                };
                // A variance of exactly 0 (every session identical) leaves room only for rounding.
                let half = half.max(1e-12);
                OperationMix {
                    name: names.get(i).cloned().unwrap_or_default(),
                    expected_share: p,
                    observed_share: observed,
                    low: (p - half).max(0.0),
                    high: (p + half).min(1.0),
                    within: (observed - p).abs() <= half,
                }
            })
            .collect()
    }

    /// The observed requests per session against `expected`, at the family-wise
    /// [`MIX_CONFIDENCE`] over `family` tests: `expected ± z·s/√n` with `s` the sample standard
    /// deviation of the sessions' request counts (the central limit theorem over sessions).
    pub fn requests_per_session(&self, expected: f64, family: usize) -> MeanCheck {
        let n = self.sessions as f64;
        let observed = if n > 0.0 { self.sum_t as f64 / n } else { 0.0 };
        let variance = if n > 1.0 {
            ((self.sum_t2 as f64 - self.sum_t as f64 * observed) / (n - 1.0)).max(0.0)
        } else {
            0.0
        };
        let half = if n > 0.0 {
            (family_z(family) * (variance / n).sqrt()).max(1e-12)
        } else {
            1e-12
        };
        MeanCheck {
            expected,
            observed,
            low: (expected - half).max(0.0),
            high: expected + half,
            within: (observed - expected).abs() <= half,
        }
    }
}

/// The two-sided normal quantile of one of `family` tests at the family-wise [`MIX_CONFIDENCE`].
fn family_z(family: usize) -> f64 {
    normal_quantile(1.0 - (1.0 - MIX_CONFIDENCE) / (2.0 * family.max(1) as f64))
}

impl fmt::Display for ModelAnalysis {
    /// The table `cargo loadgate check` prints: each operation's share and visits per session, the
    /// requests and think time per session, and the request rate the session rate implies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .operations
            .iter()
            .map(|o| o.name.chars().count())
            .chain(["operation".len()])
            .max()
            .unwrap_or(0);
        writeln!(
            f,
            "{:<width$}  {:>6}  {:>14}",
            "operation", "share", "visits/session"
        )?;
        for o in &self.operations {
            writeln!(
                f,
                "{:<width$}  {:>5.1}%  {:>14.3}",
                o.name,
                o.share * 100.0,
                o.visits_per_session
            )?;
        }
        writeln!(f, "requests per session: {:.2}", self.requests_per_session)?;
        writeln!(
            f,
            "think time per session: {:.1}s on average",
            self.session_seconds_mean
        )?;
        write!(
            f,
            "at {} sessions/s: {:.1} requests/s",
            trim_number(self.sessions_per_sec),
            self.request_rate_per_sec
        )
    }
}

impl fmt::Display for MixValidation {
    /// The verdict line: within the model's interval, or which operations fall outside it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = trim_number(self.confidence * 100.0);
        if self.all_within() {
            write!(
                f,
                "generated mix of {} sessions lies within the {percent}% interval of the model",
                self.sessions
            )?;
        } else {
            let outside: Vec<String> = self
                .operations
                .iter()
                .filter(|o| !o.within)
                .map(|o| o.describe("got"))
                .collect();
            write!(
                f,
                "generated mix of {} sessions falls outside the {percent}% interval of the model: {}",
                self.sessions,
                outside.join("; ")
            )?;
        }
        if self.truncated_sessions > 0 {
            write!(
                f,
                " ({} sessions were cut at {MAX_SESSION_STEPS} steps)",
                self.truncated_sessions
            )?;
        }
        Ok(())
    }
}

/// What `cargo loadgate check` prints about the workload: the model's table, then the verdict on
/// the generated mix.
pub fn render_check(analysis: &ModelAnalysis, mix: &MixValidation) -> String {
    format!("{analysis}\n{mix}\n")
}

/// A number without a trailing `.0` when it is whole.
fn trim_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::schedule::tests::{demo_like, single};
    use test_case::test_case;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * (1.0 + b.abs())
    }

    /// The demo-like model by hand: with x = visits of portfolio and y = visits of transfer,
    /// landing = 0.8 + 0.1y, login = 0.7·landing, x = 0.2 + 0.9·login + 0.2x + 0.6y, y = 0.5x.
    #[test]
    fn demo_like_visits_match_the_hand_solution() {
        let a = analyze(&demo_like()).unwrap();
        // Substituting: x = 0.2 + 0.63(0.8 + 0.05x) + 0.2x + 0.3x → x(0.5 − 0.0315) = 0.704.
        let x = 0.704 / 0.4685;
        let y = 0.5 * x;
        let landing = 0.8 + 0.1 * y;
        let login = 0.7 * landing;
        let visits = [landing, login, x, y];
        for (o, v) in a.operations.iter().zip(visits) {
            assert!(
                close(o.visits_per_session, v),
                "{}: {} vs {v}",
                o.name,
                o.visits_per_session
            );
        }
        let total: f64 = visits.iter().sum();
        assert!(close(a.requests_per_session, total));
        assert!(close(a.request_rate_per_sec, 20.0 * total));
        assert!(close(a.operations.iter().map(|o| o.share).sum(), 1.0));
        // Think: landing 0.7·2, login 0.9·1, portfolio 0.5·3 + 0.2·1.5, transfer 0.6·0.5 + 0.1·1.5.
        let think = landing * 1.4 + login * 0.9 + x * 1.8 + y * 0.45;
        assert!(
            close(a.session_seconds_mean, think),
            "{}",
            a.session_seconds_mean
        );
        assert!(close(a.request_rate_at(10.0), 10.0 * total));
    }

    #[test_case(0.0, 1.0; "no loop")]
    #[test_case(0.5, 2.0; "half loop")]
    #[test_case(0.9, 10.0; "geometric")]
    #[test_case(0.999, 1000.0; "long")]
    fn a_self_loop_is_geometric(p: f64, visits: f64) {
        let mut w = single();
        if p > 0.0 {
            w.operations[0].next = vec![crate::config::Transition {
                to: 0,
                p,
                think: ThinkTime::Fixed(std::time::Duration::from_secs(1)),
            }];
        }
        let a = analyze(&w).unwrap();
        assert!(
            close(a.requests_per_session, visits),
            "{}",
            a.requests_per_session
        );
        assert!(
            close(a.session_seconds_mean, visits * p),
            "{}",
            a.session_seconds_mean
        );
    }

    #[test]
    fn a_closed_cycle_is_named() {
        let mut w = demo_like();
        // portfolio ⇄ transfer with probability 1: sessions that reach portfolio never end.
        w.operations[2].next[0].p = 0.8;
        w.operations[3].next.truncate(1);
        w.operations[3].next[0].p = 1.0;
        let err = analyze(&w).unwrap_err();
        assert_eq!(
            err,
            ModelError::NeverEnds {
                operations: vec!["portfolio".to_owned(), "transfer".to_owned()]
            }
        );
        insta::assert_snapshot!(err.to_string(), @r"
        the user model never ends a session: `portfolio`, `transfer` form a cycle that a session never leaves
        hint: give one of them a way out (let its `next` probabilities sum to less than 1) or an edge to an operation that has one
        ");
    }

    #[test]
    fn an_operation_leading_into_a_cycle_is_not_named() {
        let mut w = demo_like();
        w.operations[0].next[0].p = 1.0; // landing → login always
        w.operations[1].next[0].p = 1.0; // login → portfolio always
        w.operations[2].next = vec![crate::config::Transition {
            to: 2,
            p: 1.0,
            think: ThinkTime::Fixed(std::time::Duration::ZERO),
        }];
        let err = analyze(&w).unwrap_err();
        assert_eq!(
            err,
            ModelError::NeverEnds {
                operations: vec!["portfolio".to_owned()]
            }
        );
        assert!(err.to_string().contains("`portfolio` forms a cycle"));
    }

    #[test]
    fn an_unreachable_cycle_does_not_matter() {
        let mut w = demo_like();
        w.operations.push(w.operations[0].clone());
        w.operations[4].name = "orphan".to_owned();
        w.operations[4].next = vec![crate::config::Transition {
            to: 4,
            p: 1.0,
            think: ThinkTime::Fixed(std::time::Duration::ZERO),
        }];
        let a = analyze(&w).unwrap();
        assert_eq!(a.operations[4].visits_per_session, 0.0);
        assert_eq!(a.operations[4].share, 0.0);
        assert!(validate_mix(&w, 1, 1_000).unwrap().all_within());
    }

    #[test]
    fn no_entry_is_an_error() {
        let mut w = single();
        w.entry.clear();
        assert_eq!(analyze(&w).unwrap_err(), ModelError::NoEntry);
    }

    #[test]
    fn the_solver_pivots() {
        // The first pivot is 0: without row exchange this divides by zero.
        let x = solve(vec![vec![0.0, 1.0, 2.0], vec![1.0, 1.0, 3.0]]).unwrap();
        assert!(close(x[0], 1.0) && close(x[1], 2.0), "{x:?}");
        assert!(solve(vec![vec![1.0, 2.0, 1.0], vec![2.0, 4.0, 2.0]]).is_none());
    }

    #[test_case(0.5, 0.0; "median")]
    #[test_case(0.975, 1.959_963_985; "two sided 95")]
    #[test_case(0.995, 2.575_829_304; "two sided 99")]
    #[test_case(0.9995, 3.290_526_731; "two sided 99.9")]
    #[test_case(0.01, -2.326_347_874; "lower tail")]
    fn normal_quantiles(p: f64, z: f64) {
        assert!(
            (normal_quantile(p) - z).abs() < 1e-7,
            "{}",
            normal_quantile(p)
        );
    }

    #[test]
    fn the_generated_mix_matches_the_model() {
        let v = validate_mix(&demo_like(), 42, 20_000).unwrap();
        assert!(v.all_within(), "{v}");
        assert_eq!(v.sessions, 20_000);
        assert_eq!(v.truncated_sessions, 0);
        assert_eq!(
            v.to_string(),
            "generated mix of 20000 sessions lies within the 99% interval of the model"
        );
        // The interval is not vacuous: a few tenths of a percentage point wide.
        for o in &v.operations {
            assert!(o.high - o.low < 0.02 && o.high - o.low > 0.001, "{o:?}");
        }
    }

    #[test]
    fn a_mis_specified_model_is_caught() {
        // The generator follows demo_like; the expectation comes from a model where portfolio
        // goes to transfer a little more often (0.55 instead of 0.5).
        let mut other = demo_like();
        other.operations[2].next[0].p = 0.55;
        let expected = analyze(&other).unwrap();
        let v = validate_mix_against(&demo_like(), &expected, 42, 20_000).unwrap();
        assert!(!v.all_within(), "{v}");
        let transfer = &v.operations[3];
        assert!(
            !transfer.within && transfer.observed_share < transfer.low,
            "{transfer:?}"
        );
        assert!(
            v.to_string()
                .contains("falls outside the 99% interval of the model: ")
        );
        assert!(v.to_string().contains("`transfer` got"));
    }

    #[test]
    fn a_deterministic_model_has_an_exact_mix() {
        let v = validate_mix(&single(), 3, 100).unwrap();
        assert!(v.all_within());
        assert_eq!(v.operations[0].observed_share, 1.0);
        assert_eq!(v.requests, 100);
    }

    #[test]
    fn too_few_sessions_are_an_error() {
        assert_eq!(
            validate_mix(&single(), 3, 1).unwrap_err(),
            ModelError::TooFewSessions { sessions: 1 }
        );
    }

    #[test]
    fn the_check_table_reads_well() {
        let w = demo_like();
        let analysis = analyze(&w).unwrap();
        let mix = validate_mix(&w, w.seed, 20_000).unwrap();
        insta::assert_snapshot!(render_check(&analysis, &mix));
    }

    #[test]
    fn analysis_serializes() {
        let a = analyze(&single()).unwrap();
        insta::assert_json_snapshot!(a, @r#"
        {
          "sessions_per_sec": 1.0,
          "requests_per_session": 1.0,
          "session_seconds_mean": 0.0,
          "request_rate_per_sec": 1.0,
          "operations": [
            {
              "name": "only",
              "visits_per_session": 1.0,
              "share": 1.0
            }
          ]
        }
        "#);
    }
}
