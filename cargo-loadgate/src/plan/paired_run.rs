//! The phases of a paired run (issue 13): the two ramps taking turns step by step, then the
//! blocks in their balanced order. Base and head are both up the whole time; only one of them
//! takes load at any moment, so a slowdown of the machine falls on both sides alike.
//!
//! The ramps are the solo plan's ([`run_plan`] without its soak), one per side, run together on
//! one task: each phase waits for its turn from [`Turns`], which hands the turns out in the
//! order ABBA BAAB … (A the base, B the head) for as long as both ramps go on, and lets the
//! other side run alone once one has finished. The blocks follow [`pairing_order`]: both blocks
//! of a pair send the same slice of the schedule ([`slice_schedule`]), at the same offered load.

use super::abort::abort_watch;
use super::pairing::{Block, Side, slice_schedule, slice_seed};
use super::run::{PhaseRunner, PlanError, PlanEvent, PlanOptions, PlanOutcome, run_plan};
use crate::config::LoadgateConfig;
use crate::engine::PhaseSpec;
use crate::measure::PhaseMeasurement;
use crate::result::{BlockFigures, BlockRecord};
use crate::workload::Schedule;
use std::cell::RefCell;

/// Hands out the turns of two ramps run together: phase n goes to the side the pattern ABBA
/// (from `first`) names, while both sides go on; once one side is done the other runs alone.
/// Only one phase runs at a time.
pub struct Turns {
    state: RefCell<TurnState>,
    notify: tokio::sync::Notify,
}

struct TurnState {
    first: Side,
    /// Phases run so far, both sides together.
    taken: usize,
    running: bool,
    done_base: bool,
    done_head: bool,
    /// The sides in the order their phases ran.
    log: Vec<Side>,
}

impl Turns {
    /// Turns that start with `first`.
    pub fn new(first: Side) -> Self {
        Self {
            state: RefCell::new(TurnState {
                first,
                taken: 0,
                running: false,
                done_base: false,
                done_head: false,
                log: Vec::new(),
            }),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// The side whose turn phase `n` (from 0) is: ABBA BAAB ABBA … from `first` (A): every four
    /// turns are balanced, and every eight start with each side alike.
    pub fn whose(first: Side, n: usize) -> Side {
        let lead = if (n / 4).is_multiple_of(2) {
            first
        } else {
            first.other()
        };
        if matches!(n % 4, 0 | 3) {
            lead
        } else {
            lead.other()
        }
    }

    /// Waits until `side` may run a phase, and marks one running.
    pub async fn acquire(&self, side: Side) {
        loop {
            // Created before the state is read: a release in between still wakes it.
            let notified = self.notify.notified();
            {
                let mut st = self.state.borrow_mut();
                let other_done = match side {
                    Side::Base => st.done_head,
                    Side::Head => st.done_base,
                };
                if !st.running && (other_done || Self::whose(st.first, st.taken) == side) {
                    st.running = true;
                    st.log.push(side);
                    return;
                }
            }
            notified.await;
        }
    }

    /// Ends the running phase: the next turn begins.
    pub fn release(&self) {
        {
            let mut st = self.state.borrow_mut();
            st.running = false;
            st.taken += 1;
        }
        self.notify.notify_waiters();
    }

    /// Marks `side`'s ramp over: the other side runs alone from now on.
    pub fn finish(&self, side: Side) {
        {
            let mut st = self.state.borrow_mut();
            match side {
                Side::Base => st.done_base = true,
                Side::Head => st.done_head = true,
            }
        }
        self.notify.notify_waiters();
    }

    /// The sides in the order their phases ran, as letters: `ABBABA…`.
    pub fn letters(&self) -> String {
        self.state.borrow().log.iter().map(|s| s.letter()).collect()
    }
}

/// A runner that takes its turn before each phase.
struct TurnRunner<'a, R> {
    inner: &'a mut R,
    side: Side,
    turns: &'a Turns,
}

impl<R: PhaseRunner> PhaseRunner for TurnRunner<'_, R> {
    type Error = R::Error;

    async fn run(
        &mut self,
        spec: PhaseSpec,
        schedule: Schedule,
        on_window: super::run::OnWindow,
    ) -> Result<super::run::PhaseRun, R::Error> {
        self.turns.acquire(self.side).await;
        let run = self.inner.run(spec, schedule, on_window).await;
        self.turns.release();
        run
    }
}

/// What the two ramps of a paired run found, each side's own.
pub struct PairedRamps<E: std::error::Error + 'static> {
    /// The base's ramp.
    pub base: Result<PlanOutcome, PlanError<E>>,
    /// The head's ramp.
    pub head: Result<PlanOutcome, PlanError<E>>,
    /// The sides in the order their phases ran: `ABBABAAB…`.
    pub order: String,
}

/// Why the ramps skip the soak in paired mode.
pub const PAIRED_SOAK_SKIPPED: &str =
    "paired mode: the blocks at the same load on both sides replace the soak";

/// Runs the ramp of both sides, taking turns phase by phase (see [`Turns`]), starting with
/// `first`. `observer` hears every plan event with the side it came from.
pub async fn run_paired_ramps<R: PhaseRunner>(
    config: &LoadgateConfig,
    base: &mut R,
    head: &mut R,
    first: Side,
    keep_going: bool,
    observer: &mut dyn FnMut(Side, PlanEvent),
) -> PairedRamps<R::Error> {
    let turns = Turns::new(first);
    let observer = RefCell::new(observer);
    let options = PlanOptions {
        keep_going,
        baseline_knee_sessions_per_sec: None,
        skip_soak: Some(PAIRED_SOAK_SKIPPED.to_owned()),
        fixed: false,
    };
    let (base, head) = tokio::join!(
        side_plan(config, Side::Base, base, &turns, &observer, &options),
        side_plan(config, Side::Head, head, &turns, &observer, &options)
    );
    PairedRamps {
        base,
        head,
        order: turns.letters(),
    }
}

/// One side's ramp, taking its turns.
async fn side_plan<R: PhaseRunner>(
    config: &LoadgateConfig,
    side: Side,
    runner: &mut R,
    turns: &Turns,
    observer: &RefCell<&mut dyn FnMut(Side, PlanEvent)>,
    options: &PlanOptions,
) -> Result<PlanOutcome, PlanError<R::Error>> {
    let mut runner = TurnRunner {
        inner: runner,
        side,
        turns,
    };
    let mut observe = |event: PlanEvent| (observer.borrow_mut())(side, event);
    let outcome = run_plan(config, &mut runner, options, &mut observe).await;
    turns.finish(side);
    outcome
}

/// What the blocks run with.
#[derive(Clone, Debug)]
pub struct BlockPlan {
    /// The blocks in the order they run ([`super::pairing::pairing_order`]).
    pub blocks: Vec<Block>,
    /// The offered load of every block, in sessions per second.
    pub sessions_per_sec: f64,
    /// `{{session}}` of the first slice's first session; later slices count on from it.
    pub first_session: u64,
}

/// What the blocks report as they go.
#[derive(Debug)]
pub enum BlockEvent<'a> {
    /// A block is about to run.
    Starting {
        /// The block.
        block: &'a Block,
        /// Its spec.
        spec: &'a PhaseSpec,
    },
    /// A block was measured.
    Done {
        /// Its record.
        record: &'a BlockRecord,
        /// What it measured.
        measurement: &'a PhaseMeasurement,
    },
}

/// Why the blocks stopped.
#[derive(Debug)]
pub struct BlockError<E> {
    /// The side whose block could not run.
    pub side: Side,
    /// The phase.
    pub phase: String,
    /// The runner's error.
    pub source: E,
    /// The blocks measured before.
    pub done: Vec<BlockRecord>,
}

/// The phase name of a block: `pair-3-base`.
pub fn block_phase_name(block: &Block) -> String {
    let side = match block.side {
        Side::Base => "base",
        Side::Head => "head",
    };
    format!("pair-{}-{side}", block.pair)
}

/// Runs the blocks of `plan` in order, each on its side's runner with the `[abort]` watch. After
/// every completed pair, `stop` is asked (with the blocks so far) whether to end early: the
/// adaptive design's looks. Returns the block records in the order they ran.
pub async fn run_blocks<R: PhaseRunner>(
    config: &LoadgateConfig,
    plan: &BlockPlan,
    base: &mut R,
    head: &mut R,
    observer: &mut dyn FnMut(BlockEvent<'_>),
    stop: &mut dyn FnMut(&[BlockRecord]) -> bool,
) -> Result<Vec<BlockRecord>, BlockError<R::Error>> {
    let mut records: Vec<BlockRecord> = Vec::with_capacity(plan.blocks.len());
    // The first session of each slice, fixed when its first block runs.
    let mut slice_first: Vec<(usize, u64)> = Vec::new();
    let mut next_session = plan.first_session;
    for (i, block) in plan.blocks.iter().enumerate() {
        let schedule = slice_schedule(
            &config.workload,
            plan.sessions_per_sec,
            block,
            config.workload.seed,
        );
        let mut spec = PhaseSpec {
            name: block_phase_name(block),
            sessions_per_sec: plan.sessions_per_sec,
            duration: block.length,
            warmup: block.warmup,
            seed: slice_seed(config.workload.seed, block.slice),
            first_session: 0,
            keep_window_histograms: false,
        };
        spec.first_session = match slice_first.iter().find(|(s, _)| *s == block.slice) {
            Some(&(_, first)) => first,
            None => {
                let first = next_session;
                next_session = next_session.saturating_add(schedule.session_count());
                slice_first.push((block.slice, first));
                first
            }
        };
        observer(BlockEvent::Starting { block, spec: &spec });
        let watch = Box::new(abort_watch(&config.abort, spec.warmup));
        let runner = match block.side {
            Side::Base => &mut *base,
            Side::Head => &mut *head,
        };
        let hash = schedule.hash();
        let phase = spec.name.clone();
        let run = match runner.run(spec, schedule, watch).await {
            Ok(run) => run,
            Err(source) => {
                return Err(BlockError {
                    side: block.side,
                    phase,
                    source,
                    done: records,
                });
            }
        };
        let m = run.measurement;
        let record = block_record(config, block, &m, hash);
        observer(BlockEvent::Done {
            record: &record,
            measurement: &m,
        });
        records.push(record);
        let pair_complete = i % 2 == 1;
        if pair_complete && i + 1 < plan.blocks.len() && stop(&records) {
            break;
        }
    }
    Ok(records)
}

/// The record of `block`, measured as `m` on the schedule with hash `schedule_hash`.
pub fn block_record(
    config: &LoadgateConfig,
    block: &Block,
    m: &PhaseMeasurement,
    schedule_hash: String,
) -> BlockRecord {
    BlockRecord {
        pair: block.pair,
        side: block.side,
        phase: m.name.clone(),
        schedule_hash,
        valid: m.validity.is_valid(),
        invalid_reasons: m.validity.reasons.iter().map(ToString::to_string).collect(),
        stopped: m.stopped.clone(),
        total: BlockFigures::of(m, None),
        operations: config
            .workload
            .operations
            .iter()
            .map(|op| BlockFigures::of(m, Some(&op.name)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::pairing::pairing_order;
    use crate::plan::run::tests::{FakeService, config};
    use crate::result::pair_records;
    use std::time::Duration;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn turns_go_abba_from_the_first_side() {
        let letters: String = (0..8)
            .map(|n| Turns::whose(Side::Head, n).letter())
            .collect();
        assert_eq!(letters, "BAABABBA");
    }

    #[test]
    fn the_ramps_take_turns_and_each_finds_its_own_knee() {
        let cfg = config("");
        // The head holds half the base's capacity.
        let mut base = FakeService::new(200.0);
        let mut head = FakeService::new(100.0);
        let mut seen: Vec<(Side, String)> = Vec::new();
        let ramps = block_on(run_paired_ramps(
            &cfg,
            &mut base,
            &mut head,
            Side::Base,
            false,
            &mut |side, e| {
                if let PlanEvent::StepDone { record, .. } = e {
                    seen.push((side, record.phase));
                }
            },
        ));
        let (b, h) = (ramps.base.unwrap(), ramps.head.unwrap());
        let (bk, hk) = (
            b.ramp.knee_sessions_per_sec.unwrap(),
            h.ramp.knee_sessions_per_sec.unwrap(),
        );
        assert!(hk < 0.75 * bk, "head knee {hk} vs base {bk}");
        assert!(b.soak.is_none() && h.soak.is_none());
        assert_eq!(b.soak_skipped.as_deref(), Some(PAIRED_SOAK_SKIPPED));
        // While both ramps go on, the turns run ABBA ABBA …; then the longer one runs alone.
        let both = 2 * base.specs.len().min(head.specs.len());
        let expected: String = (0..both)
            .map(|n| Turns::whose(Side::Base, n).letter())
            .collect();
        assert_eq!(&ramps.order[..both], expected, "{}", ramps.order);
        assert_eq!(ramps.order.len(), base.specs.len() + head.specs.len());
        assert_eq!(seen.len(), ramps.order.len());
        // Each side ran the same first step on the same schedule.
        assert_eq!(base.schedules[0].hash(), head.schedules[0].hash());
    }

    fn block_plan(pairs: usize) -> BlockPlan {
        BlockPlan {
            blocks: pairing_order(pairs, 7, Duration::from_secs(1), Duration::from_secs(3)),
            sessions_per_sec: 60.0,
            first_session: 1_000,
        }
    }

    #[test]
    fn both_blocks_of_a_pair_send_the_same_slice_and_the_pairs_see_the_slower_head() {
        let cfg = config("");
        let mut base = FakeService::new(1000.0);
        let mut head = FakeService::new(1000.0);
        head.extra = Duration::from_millis(5);
        let plan = block_plan(4);
        let mut started = Vec::new();
        let records = block_on(run_blocks(
            &cfg,
            &plan,
            &mut base,
            &mut head,
            &mut |e| {
                if let BlockEvent::Starting { spec, .. } = e {
                    started.push((spec.name.clone(), spec.first_session));
                }
            },
            &mut |_| false,
        ))
        .unwrap();
        assert_eq!(records.len(), 8);
        assert_eq!(base.specs.len(), 4);
        assert_eq!(head.specs.len(), 4);
        for pair in 0..4 {
            let of = |side| records.iter().find(|r| r.pair == pair && r.side == side);
            let (b, h) = (of(Side::Base).unwrap(), of(Side::Head).unwrap());
            assert_eq!(b.schedule_hash, h.schedule_hash, "pair {pair}");
            let firsts: Vec<u64> = started
                .iter()
                .filter(|(n, _)| n.starts_with(&format!("pair-{pair}-")))
                .map(|(_, f)| *f)
                .collect();
            assert_eq!(firsts.len(), 2);
            assert_eq!(
                firsts[0], firsts[1],
                "pair {pair} numbers its sessions alike"
            );
        }
        let hashes: std::collections::BTreeSet<&str> =
            records.iter().map(|r| r.schedule_hash.as_str()).collect();
        assert_eq!(hashes.len(), 4, "each pair has its own slice");
        assert_eq!(started[0].1, 1_000);
        let pairs = pair_records(&records);
        assert!(pairs.iter().all(|p| p.used));
        for p in &pairs {
            let r = p.p50_ratio.unwrap();
            assert!(r > 1.1 && r < 1.6, "pair {}: p50 ratio {r}", p.pair);
        }
        // The order of the blocks is the pairing order's.
        let ran: Vec<(usize, Side)> = records.iter().map(|r| (r.pair, r.side)).collect();
        let planned: Vec<(usize, Side)> = plan.blocks.iter().map(|b| (b.pair, b.side)).collect();
        assert_eq!(ran, planned);
    }

    #[test]
    fn the_blocks_stop_after_a_pair_when_asked() {
        let cfg = config("");
        let mut base = FakeService::new(1000.0);
        let mut head = FakeService::new(1000.0);
        let plan = block_plan(6);
        let mut looks = Vec::new();
        let records = block_on(run_blocks(
            &cfg,
            &plan,
            &mut base,
            &mut head,
            &mut |_| {},
            &mut |done| {
                looks.push(done.len());
                done.len() >= 4
            },
        ))
        .unwrap();
        assert_eq!(records.len(), 4);
        assert_eq!(looks, vec![2, 4]);
    }
}
