//! The seeded, open-loop schedule of one phase: when each session arrives, which operations it
//! visits and how long its user thinks before each step.
//!
//! Everything here is a pure function of the workload, the session rate, the phase duration and
//! the seed. Sessions are generated lazily, one at a time, so memory stays flat however long the
//! phase is.
//!
//! Randomness comes from ChaCha8 with one stream per purpose: stream 0 of the seed draws the
//! arrival gaps, stream `k + 1` draws the path and think times of session `k`. A session's content
//! therefore depends only on the seed and its index — not on the rate, the duration or how many
//! sessions came before — which is what lets a shard `i/N` take the sessions `k ≡ i (mod N)` of
//! the same schedule, and what makes the sessions of a ramp step at twice the rate the same
//! sessions arriving at twice the rate.
//!
//! ## Filling the session population
//!
//! A phase starts with no session in progress. Were sessions to arrive at the steady rate λ from
//! the start, the request rate would climb from λ (only first requests) to λ·E\[N\] (N requests
//! per session) over the length of a session — seconds to minutes with human think times — and a
//! ramp step of a few seconds would offer a fraction of its nominal load. So arrivals start faster
//! and settle to λ: the arrival rate λ·g(t) solves
//!
//! ```text
//! g(t) = E[N] − ∫₀ᵗ g(s) · h(t − s) ds,        g(t) → 1,
//! ```
//!
//! where h(a) is the rate, per session, of its later requests at age a (think times summed along
//! the path; answer times are not known in advance and are left out). The request rate is then
//! λ·E\[N\] from the start of the phase; only the mix leans towards the entry operations while
//! the population fills (inside the warm-up for most models). h and E\[N\] are estimated from
//! [`FILL_SESSIONS`] of the schedule's own sessions, so the fill is a pure function of the
//! workload and the seed, like everything else here. A model whose sessions make one request
//! (N = 1) has g ≡ 1: plain Poisson arrivals at λ.
//!
//! ## A rate that changes inside the phase
//!
//! A spike or a stress steps the session rate up and back down *inside one phase*: two engine
//! phases would leave a gap in which the service's queue drains, and the recovery measured after
//! it would look better than it is. [`RateSteps`] holds a piecewise-constant multiplier m(t) of λ
//! (1 before its first step). Arrivals are the same seeded process in *nominal* time u, mapped to
//! real time by t = M⁻¹(u) with M(t) = ∫₀ᵗ m: where m = 3, nominal time passes three times as
//! fast, so three times as many sessions arrive per second, each the same session (index, path,
//! think times) it would have been at the constant rate. The fill acts in nominal time, so the
//! rate is λ·g(M(t))·m(t). A schedule without steps never touches this map: its arrivals, and
//! its hash, are exactly those of a constant rate.

use super::shard::Shard;
use crate::config::{ThinkTime, WorkloadConfig};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use std::{sync::Arc, time::Duration};

/// Sessions drawn to estimate the ages of later requests for the fill (see the module docs).
pub const FILL_SESSIONS: u64 = 4_096;
/// The grid of the fill's arrival rate, in seconds.
const FILL_STEP_SECS: f64 = 0.02;
/// The fill covers request ages up to this quantile of the drawn ages (capped by
/// [`FILL_MAX_SECS`]); later requests are too rare to matter and the rate is λ after it.
const FILL_AGE_QUANTILE: f64 = 0.995;
/// The longest fill, in seconds.
const FILL_MAX_SECS: f64 = 120.0;

/// The most steps one session takes. A model whose sessions would run longer (a cycle with a
/// probability close to 1) is cut here so that a pathological model cannot hang a run.
pub const MAX_SESSION_STEPS: usize = 1_000;

/// One session of the schedule: when it arrives and what its user does.
///
/// The plan holds no steps: its path is drawn one step at a time by [`SessionPlan::into_path`] as
/// the session goes, from the session's own stream, so a session costs no allocation however many
/// steps it takes, and the plan stays small while the dispatcher moves it. Two plans are equal when
/// their index, start and steps are.
#[derive(Clone)]
pub struct SessionPlan {
    /// The session's index in the schedule, from 0, in order of arrival.
    pub index: u64,
    /// When the session arrives, as an offset from the start of the phase. Its first step is
    /// intended to be sent at exactly this time.
    pub start: Duration,
    model: Arc<PathModel>,
}

impl SessionPlan {
    /// The session's requests, in order, drawn as they are taken: at most [`MAX_SESSION_STEPS`],
    /// and never none for a validated workload (one without entry points gives empty sessions).
    pub fn into_path(self) -> SessionPath {
        SessionPath {
            draw: PathDraw::new(self.index),
            model: self.model,
        }
    }

    /// The operation of the first step, without drawing the others (`None` for an empty
    /// session).
    pub fn first_operation(&self) -> Option<usize> {
        PathDraw::new(self.index)
            .next(&self.model)
            .map(|s| s.operation)
    }

    /// Every step of the session, drawn at once (for tests, hashes and analyses: a running
    /// session draws them one at a time with [`SessionPlan::into_path`]).
    pub fn steps(&self) -> Vec<PlannedStep> {
        self.model.steps(self.index)
    }
}

impl PartialEq for SessionPlan {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index && self.start == other.start && self.steps() == other.steps()
    }
}

impl Eq for SessionPlan {}

impl std::fmt::Debug for SessionPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPlan")
            .field("index", &self.index)
            .field("start", &self.start)
            .field("steps", &self.steps())
            .finish()
    }
}

/// The steps of one session, drawn one at a time ([`SessionPlan::into_path`]).
#[derive(Clone, Debug)]
pub struct SessionPath {
    model: Arc<PathModel>,
    draw: PathDraw,
}

impl Iterator for SessionPath {
    type Item = PlannedStep;

    fn next(&mut self) -> Option<PlannedStep> {
        self.draw.next(&self.model)
    }
}

/// One request of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedStep {
    /// Index into [`WorkloadConfig::operations`].
    pub operation: usize,
    /// How long the user thinks between the answer to the previous step and this request: the step
    /// is intended to be sent at (end of the previous step) + `think_before`. Zero for the first
    /// step, which is sent at the session's start.
    pub think_before: Duration,
}

/// The open-loop schedule of one phase: Poisson session arrivals at a fixed rate for a fixed
/// duration, with each session's path and think times drawn from the seed.
///
/// Cloning is cheap (the compiled model is shared).
#[derive(Clone, Debug)]
pub struct Schedule {
    model: Arc<PathModel>,
    fill: Option<Arc<Fill>>,
    sessions_per_sec: f64,
    duration: Duration,
    /// The sessions of the seeded arrivals this schedule holds ([`Schedule::sharded`]).
    shard: Shard,
    /// Where the rate changes inside the phase; `None` for a constant rate.
    steps: Option<Arc<RateSteps>>,
}

/// One change of the session rate inside a phase: from `at` (an offset from the phase's start) the
/// rate is `multiplier` × the schedule's `sessions_per_sec`, until the next step.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateStep {
    /// When the rate changes, from the start of the phase.
    pub at: Duration,
    /// The rate from then on, as a multiple of the phase's session rate; finite and positive.
    pub multiplier: f64,
}

/// A piecewise-constant multiplier of a schedule's session rate: 1 until the first step, then each
/// step's multiplier until the next. Built by [`RateSteps::new`], which orders and checks them.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSteps {
    /// The steps in order of `at` (strictly increasing), in seconds: (at, multiplier).
    steps: Vec<(f64, f64)>,
    /// M(at) of each step: the nominal time at which it begins.
    nominal: Vec<f64>,
}

/// Why a list of rate steps is not a rate profile.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RateStepsError {
    /// A multiplier is zero, negative or not finite (a zero rate would leave no arrival to map).
    #[error("the rate multiplier at {at:?} must be a positive finite number, got {multiplier}")]
    Multiplier {
        /// The step's time.
        at: Duration,
        /// What was given.
        multiplier: f64,
    },
    /// Two steps at the same time, or out of order.
    #[error("rate steps must be in strictly increasing order of time, {at:?} is not")]
    Order {
        /// The offending step's time.
        at: Duration,
    },
}

impl RateSteps {
    /// Checks `steps` (strictly increasing times, positive finite multipliers) and builds the map
    /// from real to nominal time.
    pub fn new(steps: &[RateStep]) -> Result<Self, RateStepsError> {
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(steps.len());
        let mut nominal = Vec::with_capacity(steps.len());
        let (mut last_at, mut last_m, mut last_nominal) = (0.0f64, 1.0f64, 0.0f64);
        for step in steps {
            if !(step.multiplier.is_finite() && step.multiplier > 0.0) {
                return Err(RateStepsError::Multiplier {
                    at: step.at,
                    multiplier: step.multiplier,
                });
            }
            let at = step.at.as_secs_f64();
            if out.last().is_some_and(|&(prev, _)| at <= prev) {
                return Err(RateStepsError::Order { at: step.at });
            }
            let here = last_nominal + (at - last_at) * last_m;
            out.push((at, step.multiplier));
            nominal.push(here);
            (last_at, last_m, last_nominal) = (at, step.multiplier, here);
        }
        Ok(Self {
            steps: out,
            nominal,
        })
    }

    /// M(t) = ∫₀ᵗ m: the nominal time at real time `t` (seconds).
    pub fn nominal_at(&self, t: f64) -> f64 {
        match self.steps.iter().rposition(|&(at, _)| at <= t) {
            None => t,
            Some(i) => self.nominal[i] + (t - self.steps[i].0) * self.steps[i].1,
        }
    }

    /// M⁻¹(u): the real time at which nominal time reaches `u`.
    pub fn real_at(&self, u: f64) -> f64 {
        match self.nominal.iter().rposition(|&n| n <= u) {
            None => u,
            Some(i) => self.steps[i].0 + (u - self.nominal[i]) / self.steps[i].1,
        }
    }

    /// The multiplier in force at real time `t` (seconds).
    pub fn multiplier_at(&self, t: f64) -> f64 {
        self.steps
            .iter()
            .rev()
            .find(|&&(at, _)| at <= t)
            .map_or(1.0, |&(_, m)| m)
    }
}

/// The relative arrival rate g(t) while the session population fills, on a grid of
/// [`FILL_STEP_SECS`]: `rate[k]` holds on `[k·step, (k+1)·step)`, `cumulative[k]` =
/// ∫₀^{k·step} g, and g = 1 after the grid.
#[derive(Debug, PartialEq)]
struct Fill {
    rate: Vec<f64>,
    cumulative: Vec<f64>,
}

impl Fill {
    /// Solves the fill of `model` (see the module docs), or `None` when no session makes a later
    /// request (g ≡ 1).
    fn solve(model: &PathModel) -> Option<Self> {
        let mut ages = Vec::new();
        for index in 0..FILL_SESSIONS {
            let mut age = 0.0;
            for step in model.steps(index).iter().skip(1) {
                age += step.think_before.as_secs_f64();
                ages.push(age);
            }
        }
        if ages.is_empty() {
            return None;
        }
        ages.sort_by(f64::total_cmp);
        let cut = ages[((ages.len() - 1) as f64 * FILL_AGE_QUANTILE) as usize];
        let bins = ((cut.min(FILL_MAX_SECS) / FILL_STEP_SECS).ceil() as usize).max(1);
        let sessions = FILL_SESSIONS as f64;
        // h[m]: later requests per session per second at ages in bin m.
        let mut h = vec![0.0; bins];
        for age in &ages {
            if let Some(slot) = h.get_mut((age / FILL_STEP_SECS) as usize) {
                *slot += 1.0 / (sessions * FILL_STEP_SECS);
            }
        }
        let requests_per_session = 1.0 + ages.len() as f64 / sessions;
        let mut rate = Vec::with_capacity(bins);
        let mut cumulative = Vec::with_capacity(bins + 1);
        cumulative.push(0.0);
        for k in 0..bins {
            // Later requests due now from sessions that arrived in earlier bins (and, through h[0],
            // in this one).
            let earlier: f64 = (0..k).map(|j| rate[j] * FILL_STEP_SECS * h[k - j]).sum();
            let g = ((requests_per_session - earlier) / (1.0 + FILL_STEP_SECS * h[0])).max(0.0);
            rate.push(g);
            cumulative.push(cumulative[k] + g * FILL_STEP_SECS);
        }
        Some(Self { rate, cumulative })
    }

    /// ∫₀ᵗ g.
    fn integral(&self, t: f64) -> f64 {
        let end = FILL_STEP_SECS * self.rate.len() as f64;
        let total = *self.cumulative.last().unwrap_or(&0.0);
        if t >= end {
            return total + (t - end);
        }
        let k = ((t / FILL_STEP_SECS) as usize).min(self.rate.len() - 1);
        self.cumulative[k] + self.rate[k] * (t - k as f64 * FILL_STEP_SECS)
    }

    /// The time t at which ∫₀ᵗ g reaches `v`: the inverse of [`Fill::integral`], walking the
    /// grid forward from `bin` (the bin of the previous, earlier `v`), which it updates.
    fn time_at(&self, v: f64, bin: &mut usize) -> f64 {
        let bins = self.rate.len();
        while *bin < bins && self.cumulative[*bin + 1] <= v {
            *bin += 1;
        }
        let k = *bin;
        if k >= bins {
            return FILL_STEP_SECS * bins as f64 + (v - self.cumulative[bins]);
        }
        // g > 0 in this bin: its cumulative rises past v within it.
        k as f64 * FILL_STEP_SECS + (v - self.cumulative[k]) / self.rate[k]
    }
}

impl Schedule {
    /// Builds the schedule of a phase of `duration` with sessions arriving at `sessions_per_sec`
    /// (the rate of the phase, which may differ from [`WorkloadConfig::sessions_per_sec`]).
    ///
    /// A rate that is not a positive finite number gives a schedule without sessions.
    pub fn new(w: &WorkloadConfig, sessions_per_sec: f64, duration: Duration, seed: u64) -> Self {
        let model = PathModel::new(w, seed);
        Schedule {
            fill: Fill::solve(&model).map(Arc::new),
            model: Arc::new(model),
            sessions_per_sec,
            duration,
            shard: Shard::WHOLE,
            steps: None,
        }
    }

    /// The same schedule with the session rate changing inside the phase ([`RateSteps`]; see the
    /// module docs). Sessions keep their indices, paths and think times; only their starts move.
    /// Without steps the schedule is unchanged (same arrivals, same hash).
    pub fn with_rate_steps(&self, steps: RateSteps) -> Schedule {
        Schedule {
            steps: (!steps.steps.is_empty()).then(|| Arc::new(steps)),
            ..self.clone()
        }
    }

    /// The rate steps of this schedule, if its rate changes inside the phase.
    pub fn rate_steps(&self) -> Option<&RateSteps> {
        self.steps.as_deref()
    }

    /// The same schedule restricted to `shard` of its sessions (of the shard it already is: the
    /// two compose, [`Shard::split`]). Indices, starts, paths and think times are those of the whole
    /// schedule; only the other shards' sessions are left out, without drawing their paths.
    pub fn sharded(&self, shard: Shard) -> Schedule {
        Schedule {
            shard: self.shard.split(shard),
            ..self.clone()
        }
    }

    /// The sessions of the whole seeded schedule this one holds.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// The session arrival rate of this schedule.
    pub fn sessions_per_sec(&self) -> f64 {
        self.sessions_per_sec
    }

    /// The length of the phase; every session starts before it ends.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The expected number of sessions of the whole schedule (of every shard): `rate × duration` plus the extra arrivals that fill the
    /// session population at the start (the actual count is Poisson around it).
    pub fn expected_sessions(&self) -> f64 {
        if !self.rate_is_usable() {
            return 0.0;
        }
        let real = self.duration.as_secs_f64();
        let secs = self.steps.as_ref().map_or(real, |s| s.nominal_at(real));
        self.sessions_per_sec * self.fill.as_ref().map_or(secs, |f| f.integral(secs))
    }

    /// How many sessions the phase holds: the length of [`Schedule::sessions`], counted from the
    /// arrivals alone, without drawing any session's path.
    pub fn session_count(&self) -> u64 {
        let mut sessions = self.sessions();
        let mut count = 0;
        while sessions.next_arrival().is_some() {
            count += 1;
        }
        count
    }

    /// The sessions of the phase, lazily, in order of arrival: indices 0, 1, 2, … and starts
    /// strictly increasing and below [`Schedule::duration`].
    ///
    /// The iterator owns what it needs (`'static`), so it can be moved into a task.
    pub fn sessions(&self) -> Sessions {
        let mut arrivals = ChaCha8Rng::from_seed(self.model.seed_bytes);
        arrivals.set_stream(0);
        Sessions {
            model: Arc::clone(&self.model),
            fill: self.fill.clone(),
            fill_bin: 0,
            arrivals,
            mean_gap_secs: if self.rate_is_usable() {
                1.0 / self.sessions_per_sec
            } else {
                f64::INFINITY
            },
            end_secs: self.duration.as_secs_f64(),
            elapsed_secs: 0.0,
            next_index: 0,
            shard: self.shard,
            steps: self.steps.clone(),
            done: !self.rate_is_usable(),
        }
    }

    /// Plans session `index` as if it arrived at `start`: its path and think times, which depend
    /// only on the seed and the index.
    pub fn plan_session(&self, index: u64, start: Duration) -> SessionPlan {
        SessionPlan {
            index,
            start,
            model: Arc::clone(&self.model),
        }
    }

    /// A SHA-256 (lower-case hex) over every session of the schedule, in order: its index, its
    /// start in nanoseconds, its number of steps, and each step's operation index and think time
    /// in nanoseconds (all little-endian `u64`), after a format tag.
    ///
    /// It identifies the offered load: two runs with the same hash sent the same sessions, paths
    /// and think times at the same intended times (templates and expectations are covered by the
    /// config hash, not by this one). Computing it iterates the whole schedule, in flat memory.
    pub fn hash(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"loadgate-schedule-v2\0");
        let mut steps = Vec::new();
        for session in self.sessions() {
            hasher.update(session.index.to_le_bytes());
            hasher.update(nanos(session.start).to_le_bytes());
            steps.clear();
            steps.extend(session.into_path());
            hasher.update((steps.len() as u64).to_le_bytes());
            for step in &steps {
                hasher.update((step.operation as u64).to_le_bytes());
                hasher.update(nanos(step.think_before).to_le_bytes());
            }
        }
        let digest = hasher.finalize();
        let mut hex = String::with_capacity(64);
        for byte in digest {
            hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(HEX_DIGITS[usize::from(byte & 0xf)]));
        }
        hex
    }

    fn rate_is_usable(&self) -> bool {
        self.sessions_per_sec.is_finite() && self.sessions_per_sec > 0.0
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The sessions of a [`Schedule`], generated one at a time.
#[derive(Clone, Debug)]
pub struct Sessions {
    model: Arc<PathModel>,
    fill: Option<Arc<Fill>>,
    /// The fill bin the last arrival fell in (arrivals only move forward).
    fill_bin: usize,
    arrivals: ChaCha8Rng,
    mean_gap_secs: f64,
    end_secs: f64,
    elapsed_secs: f64,
    next_index: u64,
    /// The sessions handed out; the others' arrivals are drawn (they move the clock) and skipped.
    shard: Shard,
    /// [`Schedule::with_rate_steps`]: nominal arrival times are mapped to real ones through it.
    steps: Option<Arc<RateSteps>>,
    done: bool,
}

impl Iterator for Sessions {
    type Item = SessionPlan;

    fn next(&mut self) -> Option<SessionPlan> {
        let (index, start) = self.next_arrival()?;
        Some(SessionPlan {
            index,
            start,
            model: Arc::clone(&self.model),
        })
    }
}

impl Sessions {
    /// The next session's index and start, without its path (the arrivals draw from their own
    /// stream, so skipping the paths changes nothing that follows): the next of the shard's.
    fn next_arrival(&mut self) -> Option<(u64, Duration)> {
        loop {
            let (index, start) = self.next_any_arrival()?;
            if self.shard.owns(index) {
                return Some((index, start));
            }
        }
    }

    /// The next arrival of the whole schedule.
    fn next_any_arrival(&mut self) -> Option<(u64, Duration)> {
        if self.done {
            return None;
        }
        // Gaps are accumulated in seconds and converted per session, so rounding to nanoseconds
        // never drifts. A gap of zero seconds is possible only in theory (u = 0 exactly); starts
        // still never decrease.
        // `elapsed_secs` is the arrival process in operational time (∫ g, in seconds at rate λ);
        // without a fill it is the time itself.
        self.elapsed_secs += exponential(&mut self.arrivals, self.mean_gap_secs);
        let at = match self.fill.as_deref() {
            None => self.elapsed_secs,
            Some(fill) => fill.time_at(self.elapsed_secs, &mut self.fill_bin),
        };
        let at = match self.steps.as_deref() {
            None => at,
            Some(steps) => steps.real_at(at),
        };
        if at.is_nan() || at >= self.end_secs {
            self.done = true;
            return None;
        }
        let index = self.next_index;
        self.next_index += 1;
        Some((index, secs_to_duration(at)))
    }
}

/// The user model reduced to what drawing paths needs: cumulative probabilities.
#[derive(Debug)]
pub(crate) struct PathModel {
    seed_bytes: [u8; 32],
    /// (operation, cumulative probability), in the order written.
    entry: Vec<(usize, f64)>,
    /// Per operation: (to, cumulative probability, think time), in the order written.
    next: Vec<Vec<(usize, f64, ThinkTime)>>,
}

impl PathModel {
    /// Compiles the model of `w` for drawing paths from `seed`.
    pub(crate) fn new(w: &WorkloadConfig, seed: u64) -> Self {
        // The seed is expanded once here; each session's generator then starts from the same key
        // on its own stream, which is cheaper than expanding a u64 seed per session.
        let seed_bytes = ChaCha8Rng::seed_from_u64(seed).get_seed();
        let mut cumulative = 0.0;
        let entry = w
            .entry
            .iter()
            .filter(|e| e.operation < w.operations.len() && e.p > 0.0)
            .map(|e| {
                cumulative += e.p;
                (e.operation, cumulative)
            })
            .collect();
        let next = w
            .operations
            .iter()
            .map(|op| {
                let mut cumulative = 0.0;
                op.next
                    .iter()
                    .filter(|t| t.to < w.operations.len() && t.p > 0.0)
                    .map(|t| {
                        cumulative += t.p;
                        (t.to, cumulative, t.think)
                    })
                    .collect()
            })
            .collect();
        PathModel {
            seed_bytes,
            entry,
            next,
        }
    }

    /// Draws the path and think times of session `index` from its own stream (`index + 1`).
    pub(crate) fn steps(&self, index: u64) -> Vec<PlannedStep> {
        let mut draw = PathDraw::new(index);
        std::iter::from_fn(|| draw.next(self)).collect()
    }

    /// The operation of a model with one entry and no way on from it: every path is that one
    /// step, whatever would be drawn.
    fn lone(&self) -> Option<usize> {
        match self.entry.as_slice() {
            [(only, _)] if self.next[*only].is_empty() => Some(*only),
            _ => None,
        }
    }
}

/// Where the drawing of one session's path stands. The generator is made at the first step and
/// kept in place (a running session holds it in its own future, so nothing is allocated).
#[derive(Clone, Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "boxing the generator would allocate once a session, which is what this avoids"
)]
enum PathDraw {
    Start {
        index: u64,
    },
    Drawing {
        rng: ChaCha8Rng,
        current: usize,
        len: usize,
    },
    Done,
}

impl PathDraw {
    fn new(index: u64) -> Self {
        PathDraw::Start { index }
    }

    /// The session's next step under `model`, or `None` once its path has ended.
    fn next(&mut self, model: &PathModel) -> Option<PlannedStep> {
        let step = match self {
            PathDraw::Done => None,
            // One entry and no way on from it: the path is that one step whatever would be
            // drawn, so nothing is drawn (each session's stream is its own: no other session's
            // draws move). This is every `attack --url` session, where the generator's keys,
            // ~800 instructions a session, were most of drawing it.
            PathDraw::Start { .. } if let Some(operation) = model.lone() => {
                *self = PathDraw::Done;
                return Some(PlannedStep {
                    operation,
                    think_before: Duration::ZERO,
                });
            }
            PathDraw::Start { index } => {
                let mut rng = ChaCha8Rng::from_seed(model.seed_bytes);
                rng.set_stream(index.wrapping_add(1));
                // Entry weights are normalized to 1 by validation; dividing by the total keeps a
                // model built by hand (whose weights need not sum to 1) from falling off the end.
                model.entry.last().map(|&(_, entry_total)| {
                    let u = unit(&mut rng) * entry_total;
                    let first = model
                        .entry
                        .iter()
                        .find(|&&(_, c)| u < c)
                        .or(model.entry.last())
                        .map_or(0, |&(op, _)| op);
                    *self = PathDraw::Drawing {
                        rng,
                        current: first,
                        len: 1,
                    };
                    PlannedStep {
                        operation: first,
                        think_before: Duration::ZERO,
                    }
                })
            }
            PathDraw::Drawing { len, .. } if *len >= MAX_SESSION_STEPS => None,
            PathDraw::Drawing { rng, current, len } => {
                let u = unit(rng);
                // The probability mass beyond the last cumulative value ends the session.
                model.next[*current]
                    .iter()
                    .find(|&&(_, c, _)| u < c)
                    .map(|&(to, _, think)| {
                        *current = to;
                        *len += 1;
                        PlannedStep {
                            operation: to,
                            think_before: draw_think(rng, think),
                        }
                    })
            }
        };
        if step.is_none() {
            *self = PathDraw::Done;
        }
        step
    }
}

/// A uniform draw in [0, 1) with 53 bits, from the generator's raw output so the sequence does not
/// depend on how a version of `rand` maps bits to floats.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// An exponential draw with the given mean, by inverse transform: −ln(1 − u) · mean.
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -(1.0 - unit(rng)).ln() * mean
}

fn draw_think(rng: &mut ChaCha8Rng, think: ThinkTime) -> Duration {
    match think {
        ThinkTime::Exponential(mean) => secs_to_duration(exponential(rng, mean.as_secs_f64())),
        ThinkTime::Fixed(d) => d,
        ThinkTime::Uniform(low, high) => {
            let (low, high) = (low.as_secs_f64(), high.as_secs_f64());
            secs_to_duration(low + unit(rng) * (high - low))
        }
    }
}

/// Converts seconds to a duration, saturating instead of panicking on values out of range.
pub(crate) fn secs_to_duration(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{
        BodyTemplate, EntryPoint, Expect, OperationConfig, RequestTemplate, Transition,
    };

    fn op(name: &str, next: Vec<Transition>) -> OperationConfig {
        OperationConfig {
            name: name.to_owned(),
            request: RequestTemplate {
                method: "GET".to_owned(),
                path: format!("/{name}"),
                headers: Vec::new(),
                body: None::<BodyTemplate>,
            },
            expect: Expect::default(),
            capture: Vec::new(),
            next,
            gate: false,
            retry: crate::config::OperationRetry::Inherit,
            idempotent: false,
        }
    }

    fn to(to: usize, p: f64, think: ThinkTime) -> Transition {
        Transition { to, p, think }
    }

    fn exp_secs(secs: f64) -> ThinkTime {
        ThinkTime::Exponential(Duration::from_secs_f64(secs))
    }

    /// A model shaped like the demo's: landing → login → portfolio ⇄ transfer, with exits.
    pub(crate) fn demo_like() -> WorkloadConfig {
        WorkloadConfig {
            seed: 42,
            sessions_per_sec: 20.0,
            entry: vec![
                EntryPoint {
                    operation: 0,
                    p: 0.8,
                },
                EntryPoint {
                    operation: 2,
                    p: 0.2,
                },
            ],
            operations: vec![
                op("landing", vec![to(1, 0.7, exp_secs(2.0))]),
                op("login", vec![to(2, 0.9, exp_secs(1.0))]),
                op(
                    "portfolio",
                    vec![to(3, 0.5, exp_secs(3.0)), to(2, 0.2, exp_secs(1.5))],
                ),
                op(
                    "transfer",
                    vec![
                        to(2, 0.6, ThinkTime::Fixed(Duration::from_millis(500))),
                        to(
                            0,
                            0.1,
                            ThinkTime::Uniform(Duration::from_secs(1), Duration::from_secs(2)),
                        ),
                    ],
                ),
            ],
        }
    }

    /// One operation that always ends the session: the cheapest sessions there are.
    pub(crate) fn single() -> WorkloadConfig {
        WorkloadConfig {
            seed: 1,
            sessions_per_sec: 1.0,
            entry: vec![EntryPoint {
                operation: 0,
                p: 1.0,
            }],
            operations: vec![op("only", Vec::new())],
        }
    }

    fn collect(s: &Schedule) -> Vec<SessionPlan> {
        s.sessions().collect()
    }

    #[test]
    fn same_seed_gives_the_same_schedule() {
        let w = demo_like();
        let a = Schedule::new(&w, 50.0, Duration::from_secs(20), 7);
        let b = Schedule::new(&w, 50.0, Duration::from_secs(20), 7);
        let (sa, sb) = (collect(&a), collect(&b));
        assert!(sa.len() > 500, "{} sessions", sa.len());
        assert_eq!(sa, sb);
        // Counting the arrivals alone gives the same number as drawing every session.
        assert_eq!(a.session_count(), sa.len() as u64);
        assert_eq!(a.hash(), b.hash());
    }

    /// `run --shard i/N` on a generator of T loops: the loops of the process shards send every
    /// session of the schedule once, with the same plan, and each process's shard hash differs.
    #[test]
    fn process_shards_split_into_loops_are_the_schedule() {
        let w = demo_like();
        let whole = Schedule::new(&w, 80.0, Duration::from_secs(10), 3);
        let expected = collect(&whole);
        let mut union = Vec::new();
        let mut hashes = std::collections::BTreeSet::new();
        for p in 0..4 {
            let process = whole.sharded(Shard { index: p, count: 4 });
            assert_eq!(process.session_count(), collect(&process).len() as u64);
            hashes.insert(process.hash());
            for l in 0..2 {
                let part = process.sharded(Shard { index: l, count: 2 });
                assert!(collect(&part).iter().all(|s| s.index % 4 == p as u64));
                union.extend(collect(&part));
            }
        }
        union.sort_by_key(|s| s.index);
        assert_eq!(union, expected);
        assert_eq!(hashes.len(), 4);
        assert!(!hashes.contains(&whole.hash()));
        assert_eq!(whole.sharded(Shard::WHOLE).hash(), whole.hash());
    }

    #[test]
    fn a_different_seed_gives_a_different_schedule() {
        let w = demo_like();
        let a = Schedule::new(&w, 50.0, Duration::from_secs(20), 7);
        let b = Schedule::new(&w, 50.0, Duration::from_secs(20), 8);
        assert_ne!(collect(&a), collect(&b));
        assert_ne!(a.hash(), b.hash());
    }

    #[test]
    fn hash_is_pinned_and_covers_think_times() {
        let w = demo_like();
        let a = Schedule::new(&w, 50.0, Duration::from_secs(5), 7);
        let h = a.hash();
        // Pinned: a change of this value means the same seed no longer gives the same load, which
        // breaks comparison with every stored baseline. Bump the format tag if it is intended.
        assert_eq!(
            h,
            "53dd3da3aaaeb40b3f0afd79867373f693f3d0c242498307b8d10f085c7873b0"
        );
        // Only a think time differs: the fixed 500 ms edge becomes 501 ms.
        let mut changed = w.clone();
        changed.operations[3].next[0].think = ThinkTime::Fixed(Duration::from_millis(501));
        let sessions_use_edge = collect(&a).iter().any(|s| {
            s.steps()
                .windows(2)
                .any(|pair| pair[0].operation == 3 && pair[1].operation == 2)
        });
        assert!(sessions_use_edge);
        assert_ne!(
            Schedule::new(&changed, 50.0, Duration::from_secs(5), 7).hash(),
            h
        );
    }

    fn spike_steps() -> RateSteps {
        RateSteps::new(&[
            RateStep {
                at: Duration::from_secs(10),
                multiplier: 3.0,
            },
            RateStep {
                at: Duration::from_secs(20),
                multiplier: 1.0,
            },
        ])
        .expect("valid steps")
    }

    /// Stored baselines hold the hash of a constant-rate schedule: an empty step list must not
    /// change a single arrival.
    #[test]
    fn a_constant_rate_keeps_its_pinned_hash_with_an_empty_step_list() {
        let w = demo_like();
        let a = Schedule::new(&w, 50.0, Duration::from_secs(5), 7);
        let none = a.with_rate_steps(RateSteps::new(&[]).expect("no steps"));
        assert!(none.rate_steps().is_none());
        assert_eq!(
            none.hash(),
            "53dd3da3aaaeb40b3f0afd79867373f693f3d0c242498307b8d10f085c7873b0"
        );
        // Steps after the end of the phase change no arrival; steps inside it do.
        assert_eq!(a.with_rate_steps(spike_steps()).hash(), a.hash());
        let long = Schedule::new(&w, 50.0, Duration::from_secs(30), 7);
        assert_ne!(long.with_rate_steps(spike_steps()).hash(), long.hash());
    }

    /// A spike ×3 from 10 s to 20 s: over 20 seeds, each segment's count lies within 4.4 sd of
    /// its Poisson mean (a false alarm once in 10⁵ segments), and the sums over seeds within 4.4
    /// sd of theirs, so a rate off by a few percent fails.
    #[test]
    fn piecewise_rate_counts_per_segment_match_the_rates() {
        let w = single();
        let rate = 100.0;
        let expected = [10.0 * rate, 30.0 * rate, 10.0 * rate];
        let mut sums = [0.0f64; 3];
        let seeds = 20u64;
        for seed in 0..seeds {
            let schedule = Schedule::new(&w, rate, Duration::from_secs(30), seed)
                .with_rate_steps(spike_steps());
            let mut counts = [0.0f64; 3];
            for s in schedule.sessions() {
                let t = s.start.as_secs_f64();
                counts[usize::from(t >= 10.0) + usize::from(t >= 20.0)] += 1.0;
            }
            for (i, (&count, &mean)) in counts.iter().zip(&expected).enumerate() {
                assert!(
                    (count - mean).abs() < 4.4 * mean.sqrt(),
                    "seed {seed} segment {i}: {count} vs {mean}"
                );
                sums[i] += count;
            }
            assert!(
                (schedule.expected_sessions() - expected.iter().sum::<f64>()).abs() < 1e-6,
                "{}",
                schedule.expected_sessions()
            );
        }
        for (i, (&sum, &mean)) in sums.iter().zip(&expected).enumerate() {
            let mean = mean * seeds as f64;
            assert!(
                (sum - mean).abs() < 4.4 * mean.sqrt(),
                "segment {i}: {sum} vs {mean}"
            );
        }
    }

    /// The stepped schedule is deterministic, its shards are its sessions, and each session is
    /// the one of the constant-rate schedule with the same index (only its start moved).
    #[test]
    fn a_stepped_schedule_is_deterministic_shardable_and_keeps_its_sessions() {
        let w = demo_like();
        let flat = Schedule::new(&w, 40.0, Duration::from_secs(30), 5);
        let stepped = flat.with_rate_steps(spike_steps());
        let sessions = collect(&stepped);
        assert_eq!(sessions, collect(&flat.with_rate_steps(spike_steps())));
        assert_eq!(stepped.hash(), flat.with_rate_steps(spike_steps()).hash());
        assert_eq!(stepped.session_count(), sessions.len() as u64);
        for (s, f) in sessions.iter().zip(collect(&flat)) {
            assert_eq!((s.index, s.steps()), (f.index, f.steps()));
            // Before the first step both run at the same rate: the same starts.
            if f.start < Duration::from_secs(10) {
                assert_eq!(s.start, f.start);
            }
        }
        let mut union: Vec<SessionPlan> = (0..3)
            .flat_map(|i| collect(&stepped.sharded(Shard { index: i, count: 3 })))
            .collect();
        union.sort_by_key(|s| s.index);
        assert_eq!(union, sessions);
    }

    #[test]
    fn rate_steps_refuse_a_zero_rate_and_disorder() {
        let step = |secs, multiplier| RateStep {
            at: Duration::from_secs(secs),
            multiplier,
        };
        assert!(matches!(
            RateSteps::new(&[step(1, 0.0)]),
            Err(RateStepsError::Multiplier { .. })
        ));
        assert!(matches!(
            RateSteps::new(&[step(1, f64::NAN)]),
            Err(RateStepsError::Multiplier { .. })
        ));
        assert!(matches!(
            RateSteps::new(&[step(2, 2.0), step(2, 1.0)]),
            Err(RateStepsError::Order { .. })
        ));
        let steps = RateSteps::new(&[step(10, 3.0), step(20, 1.0)]).expect("valid");
        assert_eq!(steps.nominal_at(15.0), 25.0);
        assert_eq!(steps.real_at(25.0), 15.0);
        assert_eq!(steps.real_at(45.0), 25.0);
        assert_eq!(steps.multiplier_at(19.9), 3.0);
        assert_eq!(steps.multiplier_at(5.0), 1.0);
    }

    #[test]
    fn a_session_depends_only_on_seed_and_index() {
        let w = demo_like();
        let slow = collect(&Schedule::new(&w, 10.0, Duration::from_secs(30), 3));
        let fast = collect(&Schedule::new(&w, 40.0, Duration::from_secs(30), 3));
        assert!(slow.len() < fast.len());
        for (s, f) in slow.iter().zip(&fast) {
            assert_eq!(s.index, f.index);
            assert_eq!(s.steps(), f.steps());
        }
        // The same uniform draws make the arrivals' operational times (∫ g up to the arrival)
        // scale exactly with the rate.
        let fill = Schedule::new(&w, 10.0, Duration::from_secs(30), 3)
            .fill
            .unwrap();
        let operational = |s: &SessionPlan| fill.integral(s.start.as_secs_f64());
        let ratio = operational(&slow[100]) / operational(&fast[100]);
        assert!((ratio - 4.0).abs() < 1e-6, "{ratio}");
        let planned =
            Schedule::new(&w, 10.0, Duration::from_secs(30), 3).plan_session(17, slow[17].start);
        assert_eq!(planned, slow[17]);
    }

    #[test]
    fn sessions_are_ordered_and_inside_the_phase() {
        let w = demo_like();
        let duration = Duration::from_secs(10);
        let sessions = collect(&Schedule::new(&w, 100.0, duration, 11));
        for (i, pair) in sessions.windows(2).enumerate() {
            assert_eq!(pair[0].index, i as u64);
            assert!(pair[0].start < pair[1].start);
        }
        for s in &sessions {
            assert!(s.start < duration);
            let steps = s.steps();
            assert!(!steps.is_empty() && steps.len() <= MAX_SESSION_STEPS);
            assert_eq!(steps[0].think_before, Duration::ZERO);
            assert!(steps.iter().all(|st| st.operation < w.operations.len()));
        }
    }

    /// Poisson arrivals: the count in a long window lies within its 99.9% interval (mean λT,
    /// sd √(λT)), and the gaps have mean 1/λ and a coefficient of variation of 1.
    #[test]
    fn arrivals_are_a_poisson_process() {
        let w = single();
        let (rate, secs) = (200.0, 500.0);
        let schedule = Schedule::new(&w, rate, Duration::from_secs_f64(secs), 99);
        let mut count = 0u64;
        let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
        let mut previous = 0.0;
        for s in schedule.sessions() {
            let t = s.start.as_secs_f64();
            let gap = t - previous;
            previous = t;
            sum += gap;
            sum_sq += gap * gap;
            count += 1;
        }
        let expected = schedule.expected_sessions();
        assert_eq!(expected, rate * secs);
        let z999 = 3.2905;
        assert!(
            (count as f64 - expected).abs() < z999 * expected.sqrt(),
            "{count} arrivals, expected {expected}"
        );
        let n = count as f64;
        let mean = sum / n;
        let sd = (sum_sq / n - mean * mean).sqrt();
        // The sample mean of n exponential gaps has sd mean/√n.
        assert!(
            (mean - 1.0 / rate).abs() < z999 * (1.0 / rate) / n.sqrt(),
            "mean gap {mean}"
        );
        let cv = sd / mean;
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
    }

    /// The fill: the request rate (think times summed, answers taken as instant) is the steady rate
    /// λ·E[N] from the first second of the phase, where plain Poisson arrivals at λ would offer
    /// only a fraction of it until the population of sessions has filled.
    #[test]
    fn the_request_rate_is_steady_from_the_start() {
        let w = demo_like();
        let rate = 1_000.0;
        let secs = 20usize;
        let schedule = Schedule::new(&w, rate, Duration::from_secs(secs as u64), 5);
        let fill = schedule
            .fill
            .as_ref()
            .expect("demo sessions make several requests");
        let per_session = 1.0 + {
            let model = PathModel::new(&w, 5);
            (0..FILL_SESSIONS)
                .map(|i| model.steps(i).len() as f64 - 1.0)
                .sum::<f64>()
                / FILL_SESSIONS as f64
        };
        assert!(
            fill.rate[0] > 2.0,
            "arrivals start faster: g(0) = {}",
            fill.rate[0]
        );
        assert!(
            (fill.rate.last().unwrap() - 1.0).abs() < 0.1,
            "and settle to the steady rate: {}",
            fill.rate.last().unwrap()
        );
        let mut per_second = vec![0.0f64; secs];
        for session in schedule.sessions() {
            let mut at = session.start.as_secs_f64();
            for step in &session.steps() {
                at += step.think_before.as_secs_f64();
                if let Some(bin) = per_second.get_mut(at as usize) {
                    *bin += 1.0;
                }
            }
        }
        // Requests due after the end of the phase are never sent: judge the whole seconds whose
        // requests are all in the schedule, i.e. all of them (later sessions are cut at the end,
        // not earlier ones).
        let steady = rate * per_session;
        for (second, count) in per_second.iter().enumerate() {
            // A second's count has an sd of ~√(λ·E[N²]) ≈ 160 (4%): allow 12%. Without the fill
            // the first second offers ~1/E[N] of the rate.
            assert!(
                (count / steady - 1.0).abs() < 0.12,
                "second {second}: {count} requests, steady rate {steady:.0}/s: {per_second:?}"
            );
        }
        let mean = per_second.iter().sum::<f64>() / secs as f64;
        assert!((mean / steady - 1.0).abs() < 0.03, "{mean} vs {steady}");
    }

    /// A model whose sessions make one request needs no fill: plain Poisson arrivals.
    #[test]
    fn single_request_sessions_have_no_fill() {
        let schedule = Schedule::new(&single(), 50.0, Duration::from_secs(2), 1);
        assert!(schedule.fill.is_none());
        assert_eq!(schedule.expected_sessions(), 100.0);
    }

    /// The undrawn path of a lone operation is the one step a draw would give; one entry with a
    /// way on is still drawn session by session.
    #[test]
    fn one_entry_is_drawn_only_when_there_is_a_way_on() {
        let lone = PathModel::new(&single(), 7);
        for index in 0..1000 {
            assert_eq!(
                lone.steps(index),
                [PlannedStep {
                    operation: 0,
                    think_before: Duration::ZERO
                }]
            );
        }
        let mut chain = single();
        chain.operations = vec![
            op("first", vec![to(1, 0.5, exp_secs(1.0))]),
            op("second", Vec::new()),
        ];
        let model = PathModel::new(&chain, 7);
        let lengths: Vec<usize> = (0..1000).map(|i| model.steps(i).len()).collect();
        let two = lengths.iter().filter(|&&n| n == 2).count();
        assert!(lengths.iter().all(|&n| n == 1 || n == 2));
        // Binomial(1000, 0.5): 400..600 holds with overwhelming probability for any seed.
        assert!((400..600).contains(&two), "{two} of 1000 went on");
        // A path depends only on the seed and the session's index.
        assert_eq!(model.steps(17), PathModel::new(&chain, 7).steps(17));
    }

    /// Exponential think times: the mean of the draws of one edge lies within its 99.9% interval.
    #[test]
    fn exponential_think_times_have_their_mean() {
        let mut w = single();
        w.operations[0].next = vec![to(0, 0.99, exp_secs(2.0))];
        let schedule = Schedule::new(&w, 1.0, Duration::from_secs(1), 5);
        let mut n = 0.0;
        let mut sum = 0.0;
        for index in 0..200 {
            for step in &schedule.plan_session(index, Duration::ZERO).steps()[1..] {
                n += 1.0;
                sum += step.think_before.as_secs_f64();
            }
        }
        assert!(n > 10_000.0, "{n} draws");
        let mean = sum / n;
        assert!(
            (mean - 2.0).abs() < 3.2905 * 2.0 / f64::sqrt(n),
            "mean {mean}"
        );
    }

    #[test]
    fn fixed_and_uniform_think_times_stay_in_their_bounds() {
        let w = demo_like();
        let schedule = Schedule::new(&w, 1.0, Duration::from_secs(1), 5);
        let mut seen = (0, 0);
        for index in 0..2_000 {
            let steps = schedule.plan_session(index, Duration::ZERO).steps();
            for pair in steps.windows(2) {
                match (pair[0].operation, pair[1].operation) {
                    (3, 2) => {
                        assert_eq!(pair[1].think_before, Duration::from_millis(500));
                        seen.0 += 1;
                    }
                    (3, 0) => {
                        let t = pair[1].think_before;
                        assert!(t >= Duration::from_secs(1) && t <= Duration::from_secs(2));
                        seen.1 += 1;
                    }
                    _ => {}
                }
            }
        }
        assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
    }

    #[test]
    fn a_session_that_never_ends_is_cut() {
        let mut w = single();
        w.operations[0].next = vec![to(0, 1.0, ThinkTime::Fixed(Duration::ZERO))];
        let plan =
            Schedule::new(&w, 1.0, Duration::from_secs(1), 5).plan_session(0, Duration::ZERO);
        assert_eq!(plan.steps().len(), MAX_SESSION_STEPS);
    }

    #[test_case::test_case(0.0; "zero")]
    #[test_case::test_case(-3.0; "negative")]
    #[test_case::test_case(f64::NAN; "nan")]
    #[test_case::test_case(f64::INFINITY; "infinite")]
    fn an_unusable_rate_gives_no_sessions(rate: f64) {
        let schedule = Schedule::new(&single(), rate, Duration::from_secs(10), 1);
        assert_eq!(schedule.sessions().count(), 0);
        assert_eq!(schedule.session_count(), 0);
        assert_eq!(schedule.expected_sessions(), 0.0);
    }

    /// Memory is flat in run length by construction: the schedule is an iterator. This pulls a
    /// million sessions through it without collecting them.
    #[test]
    fn a_million_sessions_stream_without_collecting() {
        let schedule = Schedule::new(&single(), 10_000.0, Duration::from_secs(101), 3);
        let mut count = 0u64;
        let mut last = Duration::ZERO;
        for s in schedule.sessions().take(1_000_000) {
            assert!(s.start >= last);
            last = s.start;
            count += 1;
        }
        assert_eq!(count, 1_000_000);
    }
}
