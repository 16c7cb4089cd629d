//! The paired part of the run document (issue 13): which base the head was measured beside, the
//! base's ramp, the blocks in the order they ran with each block's figures, and each pair's
//! head-against-base differences, which the comparison's paired metrics rest on.

use crate::measure::PhaseMeasurement;
use crate::plan::RampOutcome;
use crate::plan::pairing::Side;
use crate::targets::TargetInfo;
use serde::{Deserialize, Serialize};

/// How the base of a paired run was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaseSource {
    /// Built by the gate from the merge-base, in a git worktree.
    Built,
    /// A build of the merge-base a directory store kept (`--save-baseline` with `dir:`).
    StoredBuild,
    /// A binary given with `--base-binary`.
    GivenBinary,
    /// A local image given with `--base-image`.
    GivenImage,
    /// A running service given with `--base-url`.
    GivenUrl,
    /// The head's own build, booted a second time (`--base-same-as-head`): an A/A run.
    SameAsHead,
}

impl BaseSource {
    /// For people: `built from the merge-base`, `--base-url`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Built => "built from the merge-base",
            Self::StoredBuild => "the stored build of the merge-base",
            Self::GivenBinary => "--base-binary",
            Self::GivenImage => "--base-image",
            Self::GivenUrl => "--base-url",
            Self::SameAsHead => "the head's own build (--base-same-as-head)",
        }
    }
}

/// The base a paired run measured the head beside.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedBase {
    /// The merge-base commit, when the base is one.
    pub commit: Option<String>,
    /// Where its build came from.
    pub source: BaseSource,
    /// The base target as booted.
    pub target: Option<TargetInfo>,
    /// The head's statement of what is compared, e.g. "the work tree (uncommitted changes)
    /// against 1a2b3c4".
    pub statement: String,
}

/// The design the blocks ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedDesign {
    /// The pairs planned (`[paired] pairs`, or fewer when `[paired] budget` is short).
    pub pairs_planned: usize,
    /// The measured length of a block, in seconds.
    pub block_s: f64,
    /// The warm-up discarded at the start of every block, in seconds.
    pub warmup_s: f64,
    /// The blocks' offered load in sessions per second: `at` × the base's capacity.
    pub sessions_per_sec: f64,
    /// `[paired] at`.
    pub at: f64,
    /// The base capacity the load was derived from, in sessions per second.
    pub base_capacity_sessions_per_sec: f64,
    /// How the capacity was found: `paired ramp` or why it was lowered.
    pub capacity_note: Option<String>,
    /// Whether pairs were added until the verdict decided (`[paired] adaptive`).
    pub adaptive: bool,
    /// The pair counts at which an adaptive run looked at its verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<usize>,
    /// Why the blocks stopped before the planned pairs, when they did.
    pub stopped_early: Option<String>,
    /// The order the blocks ran in, A the base and B the head: `AB BA BA AB`.
    pub order: String,
}

/// The figures of one operation (or of all) in one block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockFigures {
    /// The operation; `None` for all operations together.
    pub operation: Option<String>,
    /// Requests that came due in the measured part.
    pub requests: u64,
    /// Median latency from the intended send time, in ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile latency from the intended send time, in ms.
    pub p99_ms: Option<f64>,
    /// The share of requests without a correct answer (drops included).
    pub error_rate: Option<f64>,
}

impl BlockFigures {
    /// No figures: the operation (or all, with `None`) measured nothing.
    pub fn none(operation: Option<&str>) -> Self {
        Self {
            operation: operation.map(str::to_owned),
            requests: 0,
            p50_ms: None,
            p99_ms: None,
            error_rate: None,
        }
    }

    /// The figures of `operation` (or of all operations when `None`) in `m`.
    pub fn of(m: &PhaseMeasurement, operation: Option<&str>) -> Self {
        let op = match operation {
            None => Some(m.total()),
            Some(name) => m.operations.iter().find(|o| o.name == name).cloned(),
        };
        let Some(op) = op else {
            return Self::none(operation);
        };
        let answered = !op.latency.is_empty();
        let ms = |q: f64| answered.then(|| op.latency.quantile(q).as_secs_f64() * 1e3);
        Self {
            operation: operation.map(str::to_owned),
            requests: op.counters.requests(),
            p50_ms: ms(0.50),
            p99_ms: ms(0.99),
            error_rate: op.counters.error_rate(),
        }
    }
}

/// One block: one side taking one slice of the schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockRecord {
    /// The pair it belongs to, from 0.
    pub pair: usize,
    /// The side that took the load.
    pub side: Side,
    /// The phase name, e.g. `pair-3-head`.
    pub phase: String,
    /// The hash of the schedule slice it sent; both blocks of a pair have the same.
    pub schedule_hash: String,
    /// Whether the generator kept its schedule in it.
    pub valid: bool,
    /// Why not, when it did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_reasons: Vec<String>,
    /// Why it was stopped early, when it was (the `[abort]` limits).
    pub stopped: Option<String>,
    /// All operations together.
    pub total: BlockFigures,
    /// Each operation.
    pub operations: Vec<BlockFigures>,
}

/// One pair's head-against-base differences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// The pair, from 0.
    pub pair: usize,
    /// The side that went first.
    pub first: Side,
    /// Whether the comparison uses the pair: both blocks valid.
    pub used: bool,
    /// Why not, when it does not.
    pub excluded: Option<String>,
    /// head p50 / base p50.
    pub p50_ratio: Option<f64>,
    /// head p99 / base p99.
    pub p99_ratio: Option<f64>,
    /// head error rate − base error rate.
    pub error_rate_difference: Option<f64>,
}

/// Everything a paired run records beyond a solo run's document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedRecord {
    /// The base.
    pub base: PairedBase,
    /// The blocks' design.
    pub design: PairedDesign,
    /// The base's ramp, run step by step in alternation with the head's (whose ramp is the
    /// document's `ramp`).
    pub base_ramp: Option<RampOutcome>,
    /// Every block, in the order it ran.
    pub blocks: Vec<BlockRecord>,
    /// Every pair.
    pub pairs: Vec<PairRecord>,
}

impl PairedRecord {
    /// The pairs the comparison uses.
    pub fn used_pairs(&self) -> impl Iterator<Item = &PairRecord> {
        self.pairs.iter().filter(|p| p.used)
    }

    /// How the run was decided, in one line for people: `decided by paired blocks: base
    /// `6ae25712e4ad` (built from the merge-base), 3 of 4 pairs used, order AB BA BA AB, at 120
    /// sessions/s = 60% of the base's capacity`. Reporters show it beside the verdict.
    pub fn describe(&self) -> String {
        let base = match (&self.base.commit, &self.base.target) {
            (Some(commit), _) => format!("`{}` ", &commit[..commit.len().min(12)]),
            (None, Some(target)) => format!("`{}` ", target.base_url),
            (None, None) => String::new(),
        };
        let design = &self.design;
        let mut planned = String::new();
        if design.pairs_planned != self.pairs.len() {
            planned = format!(" ({} planned)", design.pairs_planned);
        }
        let mut line = format!(
            "decided by paired blocks: base {base}({}), {} of {} pair(s) used{planned}, order {}, \
             at {} sessions/s = {:.0}% of the base's capacity",
            self.base.source.describe(),
            self.used_pairs().count(),
            self.pairs.len(),
            if design.order.is_empty() {
                "–"
            } else {
                &design.order
            },
            crate::plan::format_rate(design.sessions_per_sec),
            design.at * 100.0,
        );
        if design.adaptive && !design.looks.is_empty() {
            let looks: Vec<String> = design.looks.iter().map(usize::to_string).collect();
            line.push_str(&format!(
                ", adaptive (looked at {} pair(s))",
                looks.join(", ")
            ));
        }
        if let Some(why) = &design.stopped_early {
            line.push_str(&format!(", stopped early: {why}"));
        }
        line
    }

    /// The blocks of `side` in pair order, for the pairs the comparison uses.
    pub fn used_blocks(&self, side: Side) -> Vec<&BlockRecord> {
        let mut out: Vec<&BlockRecord> = self
            .used_pairs()
            .filter_map(|p| {
                self.blocks
                    .iter()
                    .find(|b| b.pair == p.pair && b.side == side)
            })
            .collect();
        out.sort_by_key(|b| b.pair);
        out
    }
}

/// The pair records of `blocks`: a pair is used when both its blocks exist and are valid.
pub fn pair_records(blocks: &[BlockRecord]) -> Vec<PairRecord> {
    let mut pairs: Vec<usize> = blocks.iter().map(|b| b.pair).collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
        .into_iter()
        .map(|pair| {
            let of = |side: Side| blocks.iter().find(|b| b.pair == pair && b.side == side);
            let first = blocks
                .iter()
                .find(|b| b.pair == pair)
                .map_or(Side::Base, |b| b.side);
            let (base, head) = (of(Side::Base), of(Side::Head));
            let excluded = match (base, head) {
                (Some(b), Some(h)) => [b, h]
                    .iter()
                    .filter(|x| !x.valid)
                    .map(|x| {
                        format!(
                            "the generator could not keep block `{}`'s schedule ({})",
                            x.phase,
                            x.invalid_reasons.join("; ")
                        )
                    })
                    .reduce(|a, b| format!("{a}; {b}")),
                _ => Some("the pair did not run both of its blocks".to_owned()),
            };
            let ratio = |f: fn(&BlockFigures) -> Option<f64>| match (base, head) {
                (Some(b), Some(h)) => match (f(&b.total), f(&h.total)) {
                    (Some(b), Some(h)) if b > 0.0 && h > 0.0 => Some(h / b),
                    _ => None,
                },
                _ => None,
            };
            PairRecord {
                pair,
                first,
                used: excluded.is_none(),
                excluded,
                p50_ratio: ratio(|f| f.p50_ms),
                p99_ratio: ratio(|f| f.p99_ms),
                error_rate_difference: match (base, head) {
                    (Some(b), Some(h)) => match (b.total.error_rate, h.total.error_rate) {
                        (Some(b), Some(h)) => Some(h - b),
                        _ => None,
                    },
                    _ => None,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(pair: usize, side: Side, p50: f64, valid: bool) -> BlockRecord {
        let figures = BlockFigures {
            operation: None,
            requests: 1000,
            p50_ms: Some(p50),
            p99_ms: Some(p50 * 3.0),
            error_rate: Some(0.0),
        };
        BlockRecord {
            pair,
            side,
            phase: format!("pair-{pair}-{side:?}"),
            schedule_hash: format!("h{pair}"),
            valid,
            invalid_reasons: if valid {
                Vec::new()
            } else {
                vec!["lag".to_owned()]
            },
            stopped: None,
            total: figures.clone(),
            operations: vec![figures],
        }
    }

    #[test]
    fn pairs_take_head_over_base_and_leave_out_a_pair_with_an_invalid_block() {
        let blocks = vec![
            block(0, Side::Base, 1.0, true),
            block(0, Side::Head, 1.1, true),
            block(1, Side::Head, 2.0, true),
            block(1, Side::Base, 1.0, false),
            block(2, Side::Base, 1.0, true),
        ];
        let pairs = pair_records(&blocks);
        assert_eq!(pairs.len(), 3);
        assert!(pairs[0].used);
        assert_eq!(pairs[0].first, Side::Base);
        assert!((pairs[0].p50_ratio.unwrap() - 1.1).abs() < 1e-12);
        assert!(!pairs[1].used);
        assert_eq!(pairs[1].first, Side::Head);
        assert!(
            pairs[1]
                .excluded
                .as_deref()
                .unwrap()
                .contains("pair-1-Base")
        );
        assert!(!pairs[2].used, "a pair with one block is not used");
        let record = PairedRecord {
            base: PairedBase {
                commit: None,
                source: BaseSource::GivenUrl,
                target: None,
                statement: String::new(),
            },
            design: PairedDesign {
                pairs_planned: 3,
                block_s: 1.0,
                warmup_s: 0.0,
                sessions_per_sec: 1.0,
                at: 0.6,
                base_capacity_sessions_per_sec: 1.0 / 0.6,
                capacity_note: None,
                adaptive: false,
                looks: Vec::new(),
                stopped_early: None,
                order: "AB BA A".to_owned(),
            },
            base_ramp: None,
            blocks,
            pairs,
        };
        assert_eq!(record.used_blocks(Side::Head).len(), 1);
        assert_eq!(
            record.describe(),
            "decided by paired blocks: base (--base-url), 1 of 3 pair(s) used, order AB BA A, \
             at 1.00 sessions/s = 60% of the base's capacity"
        );
    }

    #[test]
    fn the_description_names_the_base_commit_and_what_was_planned() {
        let mut record = crate::result::testing::paired().paired.unwrap();
        assert_eq!(
            record.describe(),
            "decided by paired blocks: base `6ae25712e4ad` (built from the merge-base), 3 of 4 \
             pair(s) used, order AB BA BA AB, at 120 sessions/s = 60% of the base's capacity"
        );
        record.design.pairs_planned = 6;
        record.design.stopped_early = Some("the budget ran out".to_owned());
        assert!(record.describe().contains(
            "3 of 4 pair(s) used (6 planned), order AB BA BA AB, at 120 sessions/s = 60% of the \
             base's capacity, stopped early: the budget ran out"
        ));
    }
}
