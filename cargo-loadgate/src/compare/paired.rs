//! The comparison of a paired run (issue 13): base and head measured side by side in one job.
//!
//! Each latency metric (p50 and p99, overall and per operation) is the per-pair log-ratio
//! ln(head / base) of the blocks of the pairs used, and the error rate the per-pair difference;
//! each is estimated by Hodges–Lehmann with the exact Wilcoxon signed-rank interval
//! (`stats::paired`), drawn at α for a pass and at its Holm level for a regression. Capacity comes from the two ramps, which
//! ran step by step in alternation: the knee brackets of both sides, as in a stored comparison
//! but with no run-to-run noise to add, since a slowdown of the machine fell on both. The RSS
//! slope is each side's Theil–Sen slope over the blocks, head − base. Holm runs over the primary
//! family (overall p50, p99, error rate, capacity, and the operations marked `gate = true`) and
//! the verdict follows the same rules as a stored comparison (`decide.rs`).

use super::decide::{ABORTED_BLOCKS, capacity_with_notes, judge};
use super::estimate::{Draft, Estimate, abort_names, floor_note, missing_same_load, rss_draft};
use super::figures::RunFigures;
use super::headroom::{headroom_comparison, headroom_warning};
use super::options::CompareOptions;
use crate::config::GateConfig;
use crate::plan::pairing::Side;
use crate::result::{BlockFigures, Comparison, Metric, PairedRecord, RunResult, Verdict};
use crate::stats::median::median_in_place;

/// What a paired comparison reads besides the two sides' results.
#[derive(Clone, Debug, Default)]
pub struct PairedInputs {
    /// Operations whose p50 and p99 are primary (`[[workload.operation]] gate = true`).
    pub gated_operations: Vec<String>,
    /// The base's RSS over the blocks: (seconds, bytes), in time order.
    pub base_rss: Vec<(f64, f64)>,
    /// The head's RSS over the blocks.
    pub head_rss: Vec<(f64, f64)>,
}

/// Compares the head of a paired run with its base: `head.paired` holds the blocks, `base` the
/// base side's result (its ramp). Returns the comparison and the verdict of the two sides; the
/// head's `[slo] headroom` check is settled into them once, after the last block
/// ([`super::settle_headroom`]), so that the adaptive design's looks judge the blocks alone.
pub fn compare_paired(
    base: &RunResult,
    head: &RunResult,
    gate: &GateConfig,
    inputs: &PairedInputs,
    options: &CompareOptions,
) -> (Comparison, Verdict) {
    let mut drafts: Vec<Draft> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    match &head.paired {
        Some(record) if record.blocks.is_empty() => {
            let why = record
                .design
                .stopped_early
                .clone()
                .unwrap_or_else(|| "no paired block ran".to_owned());
            drafts.extend(missing_same_load(gate, &why));
        }
        Some(record) => {
            let excluded: Vec<String> = record
                .pairs
                .iter()
                .filter_map(|p| {
                    p.excluded
                        .as_ref()
                        .map(|why| format!("pair {}: {why}", p.pair))
                })
                .collect();
            if !excluded.is_empty() {
                warnings.push(format!(
                    "{} of {} pair(s) left out: {}",
                    excluded.len(),
                    record.pairs.len(),
                    excluded.join("; ")
                ));
            }
            let mut overall = latency_and_error_drafts(record, gate, inputs, None);
            mark_aborted(record, &mut overall);
            drafts.extend(overall);
            let operations: Vec<String> = record
                .blocks
                .first()
                .map(|b| {
                    b.operations
                        .iter()
                        .filter_map(|o| o.operation.clone())
                        .collect()
                })
                .unwrap_or_default();
            if operations.len() > 1 {
                for op in &operations {
                    drafts.extend(
                        latency_and_error_drafts(record, gate, inputs, Some(op))
                            .into_iter()
                            .filter(|d| d.metric != Metric::ErrorRate),
                    );
                }
            }
        }
        None => {
            let why = "this run has no paired blocks".to_owned();
            drafts.extend(missing_same_load(gate, &why));
        }
    }
    let mut base_figures = RunFigures::from_result(base, None);
    let mut head_figures = RunFigures::from_result(head, None);
    if let Some(d) = capacity_with_notes(&base_figures, &head_figures, gate) {
        drafts.push(d);
    }
    base_figures.rss_slope = None;
    head_figures.rss_slope = None;
    base_figures.rss = inputs.base_rss.clone();
    head_figures.rss = inputs.head_rss.clone();
    let rss = rss_draft(&base_figures, &head_figures, gate, options).map(|mut d| {
        d.note = Some(
            "head slope minus base slope over the blocks (Theil–Sen, block bootstrap)".to_owned(),
        );
        d
    });
    let (metrics, mut verdict) = judge(drafts, rss, Vec::new(), warnings, options);
    let headroom = headroom_comparison(&base_figures, &head_figures, &metrics, gate, options);
    verdict
        .warnings
        .extend(headroom.as_ref().and_then(headroom_warning));
    let comparison = Comparison {
        base_commit: base.git.as_ref().map(|g| g.commit.clone()),
        head_commit: head.git.as_ref().map(|g| g.commit.clone()),
        alpha: options.alpha,
        metrics,
        verdict: verdict.clone(),
        noise: None,
        headroom,
    };
    (comparison, verdict)
}

/// The p50, p99 and error-rate drafts of `operation` (all operations when `None`) from the pairs
/// `record` uses.
fn latency_and_error_drafts(
    record: &PairedRecord,
    gate: &GateConfig,
    inputs: &PairedInputs,
    operation: Option<&str>,
) -> Vec<Draft> {
    let figures = |side: Side| -> Vec<BlockFigures> {
        record
            .used_blocks(side)
            .into_iter()
            .map(|b| match operation {
                None => b.total.clone(),
                Some(op) => b
                    .operations
                    .iter()
                    .find(|o| o.operation.as_deref() == Some(op))
                    .cloned()
                    .unwrap_or_else(|| BlockFigures::none(Some(op))),
            })
            .collect()
    };
    let (base, head) = (figures(Side::Base), figures(Side::Head));
    let primary = operation.is_none_or(|op| inputs.gated_operations.iter().any(|g| g == op));
    let mut out = Vec::new();
    for metric in [Metric::P50, Metric::P99, Metric::ErrorRate] {
        let pick = |f: &BlockFigures| match metric {
            Metric::P50 => f.p50_ms,
            Metric::P99 => f.p99_ms,
            _ => f.error_rate,
        };
        // A pair counts for a metric when both of its blocks measured it.
        let (b, h): (Vec<f64>, Vec<f64>) = base
            .iter()
            .zip(&head)
            .filter(|(fb, fh)| enough(metric, fb) && enough(metric, fh))
            .filter_map(|(fb, fh)| Some((pick(fb)?, pick(fh)?)))
            .unzip();
        let (base_median, head_median) = (
            median_in_place(&mut b.clone()),
            median_in_place(&mut h.clone()),
        );
        let base_figure = base_median.unwrap_or(0.0);
        let (delta, floor) = match metric {
            Metric::P50 => (
                gate.p50_delta(base_figure),
                Some((gate.p50_change, gate.p50_floor, "p50")),
            ),
            Metric::P99 => (
                gate.p99_delta(base_figure),
                Some((gate.p99_change, gate.p99_floor, "p99")),
            ),
            _ => (gate.error_rate_increase, None),
        };
        let mut d = Draft::new(metric, operation.map(str::to_owned), delta);
        d.primary = primary;
        d.base = base_median;
        d.head = head_median;
        let diffs: Vec<f64> = match metric {
            Metric::ErrorRate => b.iter().zip(&h).map(|(b, h)| h - b).collect(),
            _ => crate::stats::paired::log_ratios(&b, &h),
        };
        if diffs.is_empty() {
            out.push(d.missing(format!(
                "no pair measured enough requests for the {} of {}",
                metric.label(),
                operation.unwrap_or("all operations")
            )));
            continue;
        }
        if let Some((relative, floor, label)) = floor
            && delta > relative
        {
            d.note = Some(floor_note(delta, floor, label));
        }
        d.estimate = Estimate::Paired { d: diffs };
        out.push(d);
    }
    out
}

/// Marks the overall p99 and error-rate drafts as regressed when the `[abort]` limits stopped a
/// head block whose base block of the same pair ran whole: the head failed at a load the base
/// took, far beyond any threshold, even when too few requests remain for an interval (as a stored
/// run's aborted soak). Only the metric the limit named: p99 for a p99 limit, the error rate for
/// an error-rate limit.
fn mark_aborted(record: &PairedRecord, drafts: &mut [Draft]) {
    let aborted = |side: Side, pair: usize| {
        record
            .blocks
            .iter()
            .find(|b| b.pair == pair && b.side == side)
            .and_then(|b| b.stopped.as_deref())
            .filter(|r| r.ends_with(crate::plan::ABORT_LIMITS))
    };
    let stopped: Vec<(usize, &str)> = record
        .pairs
        .iter()
        .filter_map(|p| {
            let reason = aborted(Side::Head, p.pair)?;
            aborted(Side::Base, p.pair)
                .is_none()
                .then_some((p.pair, reason))
        })
        .collect();
    let Some(&(first, reason)) = stopped.first() else {
        return;
    };
    for d in drafts.iter_mut().filter(|d| d.operation.is_none()) {
        if abort_names(reason, d.metric) {
            d.aborted = Some(format!(
                "{ABORTED_BLOCKS} in {} of {} pair(s) (pair {first}: {reason}), while their base \
                 blocks ran whole at the same load",
                stopped.len(),
                record.pairs.len()
            ));
        }
    }
}

/// Whether a block's figures rest on enough requests for `metric`: a quantile q needs
/// n · min(q, 1 − q) ≥ [`super::MIN_TAIL_REQUESTS`].
fn enough(metric: Metric, f: &BlockFigures) -> bool {
    let n = f.requests as f64;
    match metric {
        Metric::P50 => n * 0.5 >= super::MIN_TAIL_REQUESTS,
        Metric::P99 => n * 0.01 >= super::MIN_TAIL_REQUESTS,
        _ => n > 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testkit::gate;
    use crate::result::{
        BaseSource, BlockRecord, MetricOutcome, PairedBase, PairedDesign, VerdictOutcome,
        pair_records,
    };
    use rand::{Rng as _, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

    /// A paired record of `pairs` pairs: base p50 `p50_ms` (p99 three times it) for both
    /// operations, the head's `head_factor` times the base's (`op_factor` more for `login`), each
    /// block with its own noise of SD `sd` (ln scale), drawn from `seed`.
    fn record(
        pairs: usize,
        p50_ms: f64,
        head_factor: f64,
        op_factor: f64,
        sd: f64,
        seed: u64,
    ) -> PairedRecord {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut blocks = Vec::new();
        for pair in 0..pairs {
            // The machine's drift moves both blocks of a pair alike.
            let drift = 1.0 + 0.3 * (pair as f64 / pairs as f64);
            for side in [Side::Base, Side::Head] {
                let mut noise = || (sd * (rng.random::<f64>() - 0.5) * 3.46).exp();
                let factor = if side == Side::Head { head_factor } else { 1.0 };
                let figures = |name: Option<&str>, extra: f64, noise: f64| BlockFigures {
                    operation: name.map(str::to_owned),
                    requests: 5_000,
                    p50_ms: Some(p50_ms * factor * extra * drift * noise),
                    p99_ms: Some(3.0 * p50_ms * factor * extra * drift * noise),
                    error_rate: Some(0.0),
                };
                let login = if side == Side::Head { op_factor } else { 1.0 };
                let n = noise();
                blocks.push(BlockRecord {
                    pair,
                    side,
                    phase: format!("pair-{pair}-{side:?}"),
                    schedule_hash: format!("slice-{pair}"),
                    valid: true,
                    invalid_reasons: Vec::new(),
                    stopped: None,
                    total: figures(None, 1.0, n),
                    operations: vec![
                        figures(Some("home"), 1.0, noise()),
                        figures(Some("login"), login, noise()),
                    ],
                });
            }
        }
        PairedRecord {
            base: PairedBase {
                commit: None,
                source: BaseSource::GivenUrl,
                target: None,
                statement: String::new(),
            },
            design: PairedDesign {
                pairs_planned: pairs,
                block_s: 5.0,
                warmup_s: 1.0,
                sessions_per_sec: 100.0,
                at: 0.6,
                base_capacity_sessions_per_sec: 166.0,
                capacity_note: None,
                adaptive: false,
                looks: Vec::new(),
                stopped_early: None,
                order: String::new(),
            },
            base_ramp: None,
            pairs: pair_records(&blocks),
            blocks,
        }
    }

    fn compared(record: PairedRecord, gate: &GateConfig, gated: &[&str]) -> Comparison {
        let mut base = crate::result::testing::before();
        // No ramps: capacity has its own tests; these are about the blocks.
        base.ramp = None;
        let mut head = base.clone();
        head.paired = Some(record);
        let inputs = PairedInputs {
            gated_operations: gated.iter().map(|s| (*s).to_owned()).collect(),
            ..PairedInputs::default()
        };
        compare_paired(&base, &head, gate, &inputs, &CompareOptions::default()).0
    }

    fn overall(c: &Comparison, metric: Metric) -> &crate::result::MetricComparison {
        c.metrics
            .iter()
            .find(|m| m.metric == metric && m.operation.is_none())
            .unwrap()
    }

    #[test]
    fn an_a_a_run_with_a_drifting_machine_passes() {
        let c = compared(record(12, 1.0, 1.0, 1.0, 0.02, 1), &gate(), &[]);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass, "{:?}", c.verdict);
        let p50 = overall(&c, Metric::P50);
        assert!(
            p50.high.unwrap() < 1.05 && p50.low.unwrap() > 0.95,
            "{p50:?}"
        );
        assert!(p50.detectable.unwrap() < 0.10, "{p50:?}");
    }

    /// Issue 18 in paired mode: the same accepts, judged on the pairs.
    #[test]
    fn an_accepted_change_passes_on_the_pairs_and_one_beyond_it_regresses() {
        use crate::compare::{Accept, parse_accept};
        let accepts: Vec<Accept> = ["p50 +30%", "p99 +30%"]
            .iter()
            .map(|v| {
                let (scope, amount) = parse_accept(v).unwrap();
                Accept {
                    scope,
                    amount,
                    source: format!("`Loadgate-Accept: {v}` in 3f2a91c"),
                    reason: "a new feature".to_owned(),
                }
            })
            .collect();
        let with_accepts = |record: PairedRecord| {
            let mut base = crate::result::testing::before();
            base.ramp = None;
            let mut head = base.clone();
            head.paired = Some(record);
            let options = CompareOptions {
                accepts: accepts.clone(),
                ..CompareOptions::default()
            };
            compare_paired(&base, &head, &gate(), &PairedInputs::default(), &options).0
        };
        let c = with_accepts(record(12, 1.0, 1.2, 1.2, 0.02, 7));
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass, "{:?}", c.verdict);
        assert_eq!(overall(&c, Metric::P50).outcome, MetricOutcome::Accepted);
        assert_eq!(overall(&c, Metric::P99).outcome, MetricOutcome::Accepted);
        let c = with_accepts(record(12, 1.0, 1.5, 1.5, 0.02, 8));
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        assert_eq!(overall(&c, Metric::P50).outcome, MetricOutcome::Regression);
    }

    #[test]
    fn a_slower_head_is_a_regression_named_with_its_interval() {
        let c = compared(record(12, 1.0, 1.25, 1.0, 0.02, 2), &gate(), &[]);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        let p50 = overall(&c, Metric::P50);
        assert_eq!(p50.outcome, MetricOutcome::Regression);
        assert!((p50.estimate.unwrap() - 1.25).abs() < 0.03, "{p50:?}");
        assert!(p50.low.unwrap() > 1.05);
        assert!(
            c.verdict.rule_fired.contains("p50"),
            "{}",
            c.verdict.rule_fired
        );
    }

    #[test]
    fn a_change_below_the_absolute_floor_is_never_a_regression() {
        // p50 0.1 ms, +20%: 20 µs, below a 50 µs floor.
        let mut g = gate();
        let slower = compared(record(12, 0.1, 1.2, 1.0, 0.02, 3), &g, &[]);
        assert_eq!(
            overall(&slower, Metric::P50).outcome,
            MetricOutcome::Regression
        );
        g.p50_floor = Duration::from_micros(50);
        g.p99_floor = Duration::from_micros(200);
        let floored = compared(record(12, 0.1, 1.2, 1.0, 0.02, 3), &g, &[]);
        let p50 = overall(&floored, Metric::P50);
        assert_eq!(p50.outcome, MetricOutcome::Pass, "{p50:?}");
        // 50 µs over the base p50 (0.1 ms and the drift): +40% and more.
        let base = p50.base.unwrap();
        assert!(
            (p50.threshold - (1.0 + 0.05 / base)).abs() < 1e-9,
            "{p50:?}"
        );
        assert!(p50.note.as_deref().unwrap().contains("floor"), "{p50:?}");
    }

    #[test]
    fn an_operation_regression_warns_unless_the_operation_gates() {
        let r = || record(12, 1.0, 1.0, 1.5, 0.02, 4);
        let warned = compared(r(), &gate(), &[]);
        assert_ne!(warned.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            warned.verdict.warnings.iter().any(|w| w.contains("login")),
            "{:?}",
            warned.verdict.warnings
        );
        let gated = compared(r(), &gate(), &["login"]);
        assert_eq!(gated.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            gated.verdict.rule_fired.contains("login"),
            "{}",
            gated.verdict.rule_fired
        );
    }

    #[test]
    fn head_blocks_stopped_by_the_abort_limits_are_a_regression_of_what_the_limit_named() {
        let mut r = record(12, 1.0, 1.0, 1.0, 0.02, 6);
        for b in r.blocks.iter_mut().filter(|b| b.side == Side::Head) {
            // Too few requests were left for a p99.
            b.total.requests = 300;
            b.stopped = Some(format!(
                "p99 6.1 s above 5 s in 3 {}",
                crate::plan::ABORT_LIMITS
            ));
        }
        let c = compared(r, &gate(), &[]);
        assert_eq!(
            c.verdict.outcome,
            VerdictOutcome::Regression,
            "{:?}",
            c.verdict
        );
        let p99 = overall(&c, Metric::P99);
        assert_eq!(p99.outcome, MetricOutcome::Regression);
        assert!(
            c.verdict.rule_fired.contains("abort limits"),
            "{}",
            c.verdict.rule_fired
        );
        // The error rate was not what the limit named.
        assert_ne!(
            overall(&c, Metric::ErrorRate).outcome,
            MetricOutcome::Regression
        );
    }

    #[test]
    fn no_blocks_say_why_in_every_latency_metric() {
        let mut r = record(12, 1.0, 1.0, 1.0, 0.02, 7);
        r.blocks.clear();
        r.pairs.clear();
        r.design.stopped_early = Some("no blocks: the base's ramp held no step".to_owned());
        let c = compared(r, &gate(), &[]);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive);
        let p50 = overall(&c, Metric::P50);
        assert!(
            p50.note.as_deref().unwrap().contains("held no step"),
            "{p50:?}"
        );
    }

    #[test]
    fn too_few_pairs_are_inconclusive_and_say_why() {
        let c = compared(record(4, 1.0, 1.0, 1.0, 0.02, 5), &gate(), &[]);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive);
        let p50 = overall(&c, Metric::P50);
        assert!(
            p50.note.as_deref().unwrap_or("").contains("pair"),
            "{p50:?}"
        );
    }
}
