//! The decisions of a comparison: the preconditions (same load, valid phases, comparable
//! machines), Holm's procedure over the primary family, the widening of thresholds for a machine
//! difference, each metric's outcome by the interval rule, and the verdict.
//!
//! Every metric is estimated as a ratio head/base (latency percentiles, capacity) or a
//! difference head − base (error rate, RSS slope) with an interval, and judged by the interval
//! rule of `STATISTICS.md`: **Regression** when the whole interval lies beyond the metric's
//! threshold, **Pass** when it lies within, **Improvement** when it lies beyond the threshold on
//! the good side, **Inconclusive** otherwise. The primary metrics (p50 and p99 of all operations
//! and of each operation written with `gate = true`, the error rate, the capacity) form one
//! family tested with Holm's procedure at α = 0.01; the other operations' latencies are secondary
//! and only warn; the RSS slope is secondary too: it warns when inconclusive and fails the gate
//! only when its interval at α lies wholly beyond the threshold. A latency's threshold is the
//! relative `[gate]` change raised, where it is larger, to the absolute floor over the base's
//! figure (`GateConfig::p50_delta`). The verdict names the rule
//! that fired and the numbers behind it; see `docs/statistics.md` for the derivations.

use super::accept;
use super::estimate::{
    Draft, Estimate, FLOOR_RAISED, abort_names, capacity_draft, error_rate_draft, finite,
    latency_drafts, missing_same_load, rss_draft,
};
use super::figures::RunFigures;
use super::format::{describe, format_change, metric_name};
use super::headroom::{headroom_comparison, headroom_warning};
use super::leak::{head_leak, record_leak};
use super::noise::detectable_change;
use super::options::CompareOptions;
use crate::config::GateConfig;
use crate::result::{
    Comparison, Metric, MetricComparison, MetricOutcome, RunResult, Scale, Verdict, VerdictOutcome,
};
use crate::stats::holm::holm;
use crate::stats::student::t_quantile;

/// Compares run `head` with its baseline run `base` under `gate` and returns the comparison and
/// the verdict, with `head`'s leak finding recorded in both ([`super::record_leak`]). The one
/// way from two results to a verdict: the `run` gate and `cargo loadgate compare` both call it,
/// so they apply the same rules; the gate adds the run-to-run noise of the stored runs it found
/// through `options`, which two files compared offline do not have.
///
/// `options` carry the stored runs' noise model when the baseline came from a store (the gate),
/// and the defaults for two files compared offline.
pub fn compare_results(
    base: &RunResult,
    head: &RunResult,
    gate: &GateConfig,
    options: &CompareOptions,
) -> (Comparison, Verdict) {
    let mut comparison = compare_with(
        &RunFigures::from_result(base, None),
        &RunFigures::from_result(head, None),
        gate,
        options,
    );
    let mut verdict = comparison.verdict.clone();
    record_leak(
        head_leak(head, gate).as_deref(),
        Some(&mut comparison),
        &mut verdict,
    );
    // The absolute checks (headroom, recovery, audits, probe limits) judge the head alone: the
    // gate and `compare A B` apply them here alike.
    super::settle_checks(head, Some(&mut comparison), &mut verdict);
    (comparison, verdict)
}

/// How the rule of a metric that regressed because this run's soak was stopped by the `[abort]`
/// limits begins.
pub const ABORTED: &str = "this run's soak was stopped by the abort limits";

/// How the rule of a metric that regressed because a paired run's head blocks were stopped by the
/// `[abort]` limits (and their base blocks were not) begins.
pub const ABORTED_BLOCKS: &str = "this run's head blocks were stopped by the abort limits";

/// Whether `note` says the metric regressed because the abort limits stopped this run.
pub(super) fn is_abort_note(note: &str) -> bool {
    note.starts_with(ABORTED) || note.starts_with(ABORTED_BLOCKS)
}

/// The abort-limit reason a phase was stopped for (not a stop by signal or by
/// `abort.max-duration`, which say nothing about the service).
fn aborted_by_limits(phase: &crate::measure::PhaseMeasurement) -> Option<&str> {
    phase
        .stopped
        .as_deref()
        .filter(|r| r.ends_with(crate::plan::ABORT_LIMITS))
}

/// Compares `head` with `base` under the thresholds of `gate`, with the default options.
pub fn compare(base: &RunFigures, head: &RunFigures, gate: &GateConfig) -> Comparison {
    compare_with(base, head, gate, &CompareOptions::default())
}

/// Compares `head` with `base` under the thresholds of `gate`.
pub fn compare_with(
    base: &RunFigures,
    head: &RunFigures,
    gate: &GateConfig,
    options: &CompareOptions,
) -> Comparison {
    let mut drafts = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    // Each metric is judged on the phase it comes from: an invalid or missing soak makes the
    // latency, error-rate and RSS metrics inconclusive (`soak_blocker`), never the capacity the
    // ramp measured; an untrustworthy ramp makes only the capacity inconclusive.
    let mut soak_blocker: Option<String> = None;
    match (&base.phase, &head.phase) {
        (Some(bp), Some(hp)) => {
            let mut same_load = latency_drafts(bp, hp, gate, options);
            same_load.push(error_rate_draft(bp, hp, gate, options));
            let load_ratio = hp.sessions_per_sec / bp.sessions_per_sec;
            let mut why: Vec<String> = Vec::new();
            if !(load_ratio.is_finite() && (load_ratio - 1.0).abs() <= options.load_tolerance) {
                why.push(format!(
                    "not measured at the same offered load: {:.3} sessions/s (base) vs {:.3} (head)",
                    bp.sessions_per_sec, hp.sessions_per_sec
                ));
            }
            for (side, p) in [("the baseline's", bp), ("this run's", hp)] {
                if !p.validity.is_valid() {
                    let reasons: Vec<String> =
                        p.validity.reasons.iter().map(ToString::to_string).collect();
                    why.push(format!(
                        "{side} phase `{}` is invalid: {}",
                        p.name,
                        reasons.join("; ")
                    ));
                }
            }
            if !why.is_empty() {
                let why = why.join("; ");
                for d in &mut same_load {
                    d.forced = true;
                    d.note = Some(why.clone());
                }
                soak_blocker = Some(why);
            } else if let Some(reason) =
                aborted_by_limits(hp).filter(|_| aborted_by_limits(bp).is_none())
            {
                // Stopped by the [abort] limits (p99 of seconds, most requests failing) at the
                // load the baseline took whole: far beyond any latency or error threshold, even
                // when too few windows remain to draw an interval.
                let (bt, ht) = (bp.total(), hp.total());
                // Only the metrics the abort limits named: p99 for a p99 limit, the error rate
                // for an error-rate limit.
                let named = |m: Metric| abort_names(reason, m);
                for d in same_load
                    .iter_mut()
                    .filter(|d| d.operation.is_none() && named(d.metric))
                {
                    let (b, h) = match d.metric {
                        Metric::P99 => (
                            Some(bt.latency.quantile(0.99).as_secs_f64() * 1e3),
                            Some(ht.latency.quantile(0.99).as_secs_f64() * 1e3),
                        ),
                        _ => (bt.counters.error_rate(), ht.counters.error_rate()),
                    };
                    d.base = d.base.or(b);
                    d.head = d.head.or(h);
                    let figures = match (d.metric, d.base, d.head) {
                        (Metric::ErrorRate, Some(b), Some(h)) => {
                            format!(
                                " ({:.2}% of requests failed, {:.2}% in the baseline)",
                                h * 100.0,
                                b * 100.0
                            )
                        }
                        (_, Some(b), Some(h)) => {
                            format!(
                                " ({} {h:.2} ms, {b:.2} ms in the baseline)",
                                d.metric.label()
                            )
                        }
                        _ => String::new(),
                    };
                    d.aborted = Some(format!(
                        "{ABORTED}: {reason}, while the baseline ran its whole soak at the same \
                         load{figures}"
                    ));
                }
            }
            drafts.extend(same_load);
        }
        (b, _) => {
            let side = if b.is_none() {
                "the baseline"
            } else {
                "this run"
            };
            let why =
                format!("{side} has no phase measured at the comparison's load point (the soak)");
            drafts.extend(missing_same_load(gate, &why));
            soak_blocker = Some(why);
        }
    }
    if let Some(d) = capacity_with_notes(base, head, gate) {
        drafts.push(d);
    }
    // A stored baseline is another run: its interval carries the run-to-run noise too.
    if let Some(noise) = &options.noise {
        noise.apply(&mut drafts);
        warnings.extend(noise.warnings());
    }
    // The machines (or one machine at two moments) differ: no pass, and a regression only beyond
    // what the difference could explain. `slack` is the largest relative difference seen.
    let mut machine: Vec<String> = Vec::new();
    let mut slack: f64 = 0.0;
    match (base.calibration, head.calibration) {
        (Some(b), Some(h)) => {
            let drift = h / b - 1.0;
            if drift.abs() > options.calibration_tolerance {
                machine.push(format!(
                    "the calibration differs by {:+.1}% between the baseline's machine and this \
                     one, beyond {:.0}%: the numbers are not comparable",
                    drift * 100.0,
                    options.calibration_tolerance * 100.0
                ));
                slack = slack.max(drift.abs());
            }
        }
        (None, None) => warnings.push(
            "no calibration was measured: a drift of the machine between the runs is not detected"
                .to_owned(),
        ),
        (b, _) => warnings.push(format!(
            "{} has no calibration figure: a drift of the machine between the runs is not detected",
            if b.is_none() {
                "the baseline"
            } else {
                "this run"
            }
        )),
    }
    for (side, figures) in [("the baseline", base), ("this run", head)] {
        if let Some(drift) = figures.calibration_drift
            && drift.abs() > options.calibration_tolerance
        {
            machine.push(format!(
                "the machine drifted during {side}: its calibration moved {:+.1}% between before \
                 and after the phases, beyond {:.0}%",
                drift * 100.0,
                options.calibration_tolerance * 100.0
            ));
            slack = slack.max(drift.abs());
        }
    }
    if slack > 0.0 {
        for d in &mut drafts {
            widen_for_machine(d, slack);
        }
    }
    let rss = rss_draft(base, head, gate, options).map(|mut d| {
        if let Some(why) = &soak_blocker {
            d.forced = true;
            d.note = Some(why.clone());
        }
        d
    });

    let (metrics, mut verdict) = judge(drafts, rss, machine, warnings, options);
    let headroom = headroom_comparison(base, head, &metrics, gate, options);
    verdict
        .warnings
        .extend(headroom.as_ref().and_then(headroom_warning));
    Comparison {
        base_commit: base.commit.clone(),
        head_commit: head.commit.clone(),
        alpha: options.alpha,
        metrics,
        verdict,
        noise: options.noise.as_ref().map(|n| n.summary().clone()),
        headroom,
    }
}

/// The capacity draft of `base` and `head`, forced inconclusive by an untrusted ramp and kept from
/// passing by a generator-bound one; `None` when either side has no ramp.
pub(super) fn capacity_with_notes(
    base: &RunFigures,
    head: &RunFigures,
    gate: &GateConfig,
) -> Option<Draft> {
    let mut d = capacity_draft(base.knee.as_ref(), head.knee.as_ref(), gate)?;
    let untrusted: Vec<String> = [("the baseline's", base), ("this run's", head)]
        .into_iter()
        .filter_map(|(side, f)| {
            let knee = f.knee.as_ref()?;
            knee.invalid
                .as_ref()
                .map(|why| format!("{side} ramp is invalid: {why}"))
        })
        .collect();
    let bounded: Vec<String> = [("the baseline's", base), ("this run's", head)]
        .into_iter()
        .filter_map(|(side, f)| {
            let knee = f.knee.as_ref()?;
            knee.generator_limit_sessions_per_sec.map(|limit| {
                format!(
                    "{side} capacity is a lower bound: its generator reached its limit on this \
                         machine at {limit:.3} sessions/s"
                )
            })
        })
        .collect();
    if !untrusted.is_empty() {
        d.forced = true;
        d.note = Some(untrusted.join("; "));
    } else if !bounded.is_empty() {
        // A lower bound can prove the other side lost capacity, never that this one kept it.
        d.no_pass = Some(format!(
            "{}: it can show a regression, not a pass",
            bounded.join("; ")
        ));
    }
    Some(d)
}

/// Holm over the primary family of `drafts` (in their order), each metric classified by the
/// interval rule, the secondary ones alone at α; then the verdict.
pub(super) fn judge(
    drafts: Vec<Draft>,
    rss: Option<Draft>,
    machine: Vec<String>,
    warnings: Vec<String>,
    options: &CompareOptions,
) -> (Vec<MetricComparison>, Verdict) {
    // Holm over the primary family (in the drafts' order); the secondary metrics (per-operation
    // latencies, the RSS slope) are judged alone at α. A primary metric with nothing to test (no
    // estimate, or one its phase's precondition voided) is no hypothesis of the family: it is
    // inconclusive whatever the others show, and it does not make them clear a stricter level.
    let mut drafts = drafts;
    let mut rss = rss;
    for d in drafts.iter_mut().chain(rss.as_mut()) {
        accept::apply(d, &options.accepts);
    }
    let tested = |d: &Draft| {
        d.primary
            && !d.forced
            && !accept::accepts_all(d)
            && (d.aborted.is_some() || !matches!(d.estimate, Estimate::Missing | Estimate::HeldTop))
    };
    let p: Vec<f64> = drafts
        .iter()
        .filter(|d| tested(d))
        .map(Draft::p_value)
        .collect();
    let family = p.len().max(1) as f64;
    let mut steps = holm(&p, options.alpha).into_iter();
    let mut metrics: Vec<MetricComparison> = drafts
        .into_iter()
        .map(|d| match tested(&d).then(|| steps.next()).flatten() {
            Some(s) => classify(
                d,
                options.alpha,
                s.level,
                s.rejected,
                options.alpha / family,
            ),
            None if d.primary => classify(
                d,
                options.alpha,
                options.alpha,
                false,
                options.alpha / family,
            ),
            None => classify(d, options.alpha, options.alpha, false, options.alpha),
        })
        .collect();
    if let Some(d) = rss {
        metrics.push(classify(
            d,
            options.alpha,
            options.alpha,
            false,
            options.alpha,
        ));
    }
    let mut warnings = warnings;
    warnings.extend(accept::warnings(&metrics, &options.accepts));
    let verdict = decide(&metrics, machine, warnings);
    (metrics, verdict)
}

/// Classifies one metric by the interval rule. A regression found by Holm is drawn at its Holm `level`; anything else at
/// `alpha`, the level the pass rule needs (a pass of the run is an intersection–union test: every
/// metric within, each at α). `detect_level` is the level a regression of this metric would have
/// to clear alone, α/m for a primary metric, which the smallest detectable change is quoted at.
pub(super) fn classify(
    mut draft: Draft,
    alpha: f64,
    holm_level: f64,
    rejected: bool,
    detect_level: f64,
) -> MetricComparison {
    let level = if rejected { holm_level } else { alpha };
    // Student's t when the standard error rests on a run-to-run variance from few stored runs
    // (`noise.rs`); the normal otherwise (`df` infinite).
    let z = t_quantile(1.0 - level, draft.df);
    let scale = draft.scale();
    let delta = draft.delta;
    let (threshold, good) = match (scale, draft.metric) {
        (_, Metric::Capacity) => (1.0 - delta, 1.0 + delta),
        (Scale::Ratio, _) => (1.0 + delta, 1.0 - delta),
        (Scale::Difference, _) => (delta, -delta),
    };
    let p_value = match draft.estimate {
        Estimate::Missing | Estimate::HeldTop => None,
        _ if draft.forced => None,
        _ => Some(draft.p_value()),
    };
    let (estimate, low, high, detectable, mut outcome) = match draft.estimate {
        Estimate::Normal { est, se } => {
            let (lo, hi) = (est - z * se, est + z * se);
            let detectable =
                detectable_change(draft.metric, delta, se, draft.df, detect_level, 1.0);
            let (estimate, low, high) = match scale {
                Scale::Ratio => (est.exp(), lo.exp(), hi.exp()),
                Scale::Difference => (est, lo, hi),
            };
            let outcome = if rejected || (!draft.primary && low > threshold) {
                MetricOutcome::Regression
            } else if low > threshold {
                draft.note = Some(format!(
                    "beyond the threshold at {:.0}% confidence, but not after Holm's correction \
                     for the number of metrics",
                    (1.0 - 2.0 * alpha) * 100.0
                ));
                MetricOutcome::Inconclusive
            } else if high < good {
                MetricOutcome::Improvement
            } else if high < threshold {
                MetricOutcome::Pass
            } else {
                MetricOutcome::Inconclusive
            };
            (
                Some(estimate),
                finite(low),
                finite(high),
                finite(detectable),
                outcome,
            )
        }
        Estimate::Bracket { est, low, high } => {
            // Run-to-run noise widens both ends of the bracket at the level drawn.
            let bracket_width = high / low;
            let widen = (z * draft.spread).exp();
            let (low, high) = (low / widen, high * widen);
            let outcome = if high < threshold {
                if rejected || !draft.primary {
                    MetricOutcome::Regression
                } else {
                    draft.note = Some(format!(
                        "beyond the threshold at {:.0}% confidence, but not after Holm's \
                         correction for the number of metrics",
                        (1.0 - 2.0 * alpha) * 100.0
                    ));
                    MetricOutcome::Inconclusive
                }
            } else if low > good {
                MetricOutcome::Improvement
            } else if low > threshold {
                MetricOutcome::Pass
            } else {
                MetricOutcome::Inconclusive
            };
            // The bracket's width factor: a true loss is seen once the whole bracket of the
            // ratio fits below 1 − δ, so the smallest loss seen is 1 − (1 − δ) / width; the
            // run-to-run noise adds its own factor at the detection level and power.
            let width = bracket_width;
            let detectable = width
                .is_finite()
                .then(|| {
                    detectable_change(
                        Metric::Capacity,
                        delta,
                        draft.spread,
                        draft.df,
                        detect_level,
                        width,
                    )
                })
                .filter(|d| *d > 0.0);
            (
                est,
                finite(low).filter(|l| *l > 0.0),
                finite(high),
                detectable,
                outcome,
            )
        }
        Estimate::Paired { ref d } => {
            let n = d.iter().filter(|x| x.is_finite()).count();
            let paired = crate::stats::paired::wilcoxon_interval(d, scale, level);
            let detectable = crate::stats::paired::pair_sd(d).and_then(|sd| {
                crate::stats::paired::detectable_change(n, sd, detect_level, 0.8, scale, delta).map(
                    |x| match scale {
                        Scale::Ratio => x,
                        Scale::Difference => x,
                    },
                )
            });
            match paired {
                Some(p) => {
                    let (low, high) = (p.low, p.high);
                    let outcome = if rejected || (!draft.primary && low > threshold) {
                        MetricOutcome::Regression
                    } else if low > threshold {
                        draft.note = Some(format!(
                            "beyond the threshold at {:.0}% confidence, but not after Holm's \
                             correction for the number of metrics",
                            (1.0 - 2.0 * alpha) * 100.0
                        ));
                        MetricOutcome::Inconclusive
                    } else if high < good {
                        MetricOutcome::Improvement
                    } else if high < threshold {
                        MetricOutcome::Pass
                    } else {
                        if p.is_unbounded() && draft.note.is_none() {
                            draft.note = Some(format!(
                                "{n} pair(s) cannot give an interval at {:.0}% confidence: the \
                                 exact test needs at least {}",
                                (1.0 - 2.0 * level) * 100.0,
                                crate::stats::paired::min_pairs(level)
                            ));
                        }
                        MetricOutcome::Inconclusive
                    };
                    let bounded =
                        |x: f64| finite(x).filter(|v| scale == Scale::Difference || *v > 0.0);
                    (
                        Some(p.estimate),
                        bounded(low),
                        bounded(high),
                        detectable.and_then(finite),
                        outcome,
                    )
                }
                None => {
                    draft
                        .note
                        .get_or_insert_with(|| "no pair measured this metric".to_owned());
                    (None, None, None, None, MetricOutcome::Inconclusive)
                }
            }
        }
        Estimate::Missing => (None, None, None, None, MetricOutcome::Inconclusive),
        // The ratio of the capacities as far as the ramp measured them is 1, and the head's may
        // be higher: [1, unbounded), a pass within the ramp (the note says where it ends).
        Estimate::HeldTop => (Some(1.0), Some(1.0), None, None, MetricOutcome::Pass),
    };
    if draft.forced {
        outcome = MetricOutcome::Inconclusive;
    } else if let Some(why) = draft.aborted.take() {
        outcome = MetricOutcome::Regression;
        draft.note = Some(why);
    } else if let Some(why) = draft.no_pass.take() {
        if matches!(outcome, MetricOutcome::Pass | MetricOutcome::Improvement) {
            outcome = MetricOutcome::Inconclusive;
        }
        draft.note = Some(why);
    }
    // An intended change: judged against the accepted amount (already δ), or any change under
    // `all`; a metric that passed within its `[gate]` threshold stays a pass.
    let judged = !draft.forced && !matches!(draft.estimate, Estimate::Missing);
    let accepted = draft.accept.take().map(|a| {
        let (settled, accepted) =
            accept::settle(a, draft.metric, scale, (low, high), judged, outcome);
        outcome = settled;
        accepted
    });
    MetricComparison {
        metric: draft.metric,
        operation: draft.operation,
        primary: draft.primary,
        scale,
        base: draft.base,
        head: draft.head,
        estimate,
        low,
        high,
        confidence: 1.0 - 2.0 * level,
        threshold,
        p_value,
        outcome,
        detectable,
        note: draft.note,
        noise: draft.noise,
        accepted,
    }
}

/// Widens a latency or capacity metric's threshold by a machine difference of `slack` (relative):
/// the head must be worse than the threshold *and* than what a machine that much slower could
/// explain before the metric is a regression. Timing-free metrics (error rate) keep theirs.
fn widen_for_machine(d: &mut Draft, slack: f64) {
    if !matches!(d.metric, Metric::P50 | Metric::P99 | Metric::Capacity) {
        return;
    }
    let widened = (1.0 + d.delta) * (1.0 + slack) - 1.0;
    // Capacity's threshold is 1 − δ, which must stay above 0.
    d.delta = if d.metric == Metric::Capacity {
        widened.min(0.99)
    } else {
        widened
    };
    let widened = format!(
        "threshold widened by the {:.1}% calibration difference",
        slack * 100.0
    );
    match &mut d.note {
        None => d.note = Some(widened),
        // The floor raised it first: say both.
        Some(note) if note.starts_with(FLOOR_RAISED) => {
            note.push_str(&format!(", then {}", widened.replace("threshold ", "")));
        }
        Some(_) => {}
    }
}

/// Decides the verdict: a regression of any metric is a regression (each metric was judged on the
/// phase it comes from, so an invalid phase makes only its own metrics inconclusive); `machine`
/// (calibration differences) allow a regression beyond the widened thresholds but never a pass.
fn decide(
    metrics: &[MetricComparison],
    machine: Vec<String>,
    mut warnings: Vec<String>,
) -> Verdict {
    // The RSS slope is secondary but fails the gate when its interval lies wholly beyond its
    // threshold; a secondary per-operation latency only warns.
    let decides = |m: &MetricComparison| m.primary || m.metric == Metric::RssSlope;
    let regressed: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].outcome == MetricOutcome::Regression && decides(&metrics[i]))
        .collect();
    let inconclusive: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].primary && metrics[i].outcome == MetricOutcome::Inconclusive)
        .collect();
    for m in metrics.iter().filter(|m| !m.primary) {
        match m.outcome {
            MetricOutcome::Regression if !decides(m) => warnings.push(format!(
                "{} regressed: {}; per operation it warns, the overall figures decide",
                metric_name(m),
                describe(m)
            )),
            MetricOutcome::Inconclusive if decides(m) => warnings.push(format!(
                "{} is inconclusive: {}",
                metric_name(m),
                m.note.clone().unwrap_or_else(|| describe(m))
            )),
            _ => {}
        }
    }
    if let Some(&first) = regressed.first() {
        let m = &metrics[first];
        let mut rule = match &m.note {
            Some(note) if is_abort_note(note) => {
                format!("regression: {}: {note}", metric_name(m))
            }
            _ => format!("regression: {}", describe(m)),
        };
        if regressed.len() > 1 {
            rule.push_str(&format!("; {} more metrics regressed", regressed.len() - 1));
        }
        warnings.extend(machine);
        return Verdict {
            outcome: VerdictOutcome::Regression,
            rule_fired: rule,
            metrics: regressed,
            warnings,
            leak: None,
        };
    }
    if !machine.is_empty() {
        let mut machine = machine.into_iter();
        let first = machine.next().unwrap_or_default();
        warnings.extend(machine);
        return Verdict {
            outcome: VerdictOutcome::Inconclusive,
            rule_fired: format!("{first}; no metric regressed beyond what that could explain"),
            metrics: Vec::new(),
            warnings,
            leak: None,
        };
    }
    if let Some(&first) = inconclusive.first() {
        let m = &metrics[first];
        // Missing, or forced inconclusive by a precondition of its phase (no p-value).
        let precondition = m.p_value.is_none() && m.note.is_some();
        let mut rule = match &m.note {
            Some(note) if precondition => format!("inconclusive: {}: {note}", metric_name(m)),
            Some(note) if note.contains("Holm") => {
                format!("inconclusive: {}; {note}", describe(m))
            }
            _ => format!(
                "inconclusive: {}; the interval straddles the threshold",
                describe(m)
            ),
        };
        if let Some(d) = m.detectable.filter(|_| !precondition) {
            rule.push_str(&format!(
                "; this run could detect a change of {} or more",
                format_change(
                    m,
                    Some(match (m.metric, m.scale) {
                        (Metric::Capacity, _) => 1.0 - d,
                        (_, Scale::Ratio) => 1.0 + d,
                        (_, Scale::Difference) => d,
                    })
                )
            ));
        }
        if inconclusive.len() > 1 {
            rule.push_str(&format!(
                "; {} more metrics inconclusive",
                inconclusive.len() - 1
            ));
        }
        return Verdict {
            outcome: VerdictOutcome::Inconclusive,
            rule_fired: rule,
            metrics: inconclusive,
            warnings,
            leak: None,
        };
    }
    let improved: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].outcome == MetricOutcome::Improvement)
        .collect();
    let accepted: Vec<usize> = (0..metrics.len())
        .filter(|&i| metrics[i].outcome == MetricOutcome::Accepted)
        .collect();
    let primaries = metrics.iter().filter(|m| m.primary).count();
    let mut rule = format!("pass: all {primaries} primary metrics are within their thresholds");
    if !accepted.is_empty() {
        let phrases: Vec<String> = accepted
            .iter()
            .map(|&i| accept::accepted_phrase(&metrics[i]))
            .collect();
        rule.push_str(&format!("; accepted: {}", phrases.join(", ")));
    }
    if !improved.is_empty() {
        let names: Vec<String> = improved.iter().map(|&i| metric_name(&metrics[i])).collect();
        rule.push_str(&format!("; improved: {}", names.join(", ")));
    }
    Verdict {
        outcome: VerdictOutcome::Pass,
        rule_fired: rule,
        metrics: accepted.into_iter().chain(improved).collect(),
        warnings,
        leak: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::KneeBracket;
    use crate::compare::testkit::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_sample_compared_with_itself_never_regresses() {
        for seed in 0..40 {
            let f = figures(soak(seed, SHAPE));
            let c = compare_with(&f, &f, &gate(), &fast_options());
            assert_ne!(c.verdict.outcome, VerdictOutcome::Regression, "seed {seed}");
            for m in &c.metrics {
                assert_ne!(m.outcome, MetricOutcome::Regression, "seed {seed}: {m:?}");
                let none = if m.scale == Scale::Ratio { 1.0 } else { 0.0 };
                assert_eq!(m.estimate, Some(none), "seed {seed}: {m:?}");
            }
        }
    }

    #[test]
    fn two_samples_of_the_same_service_never_regress() {
        // A/A: independent draws of the same distribution, including window drift.
        for seed in 0..40 {
            let base = figures(soak(2 * seed, SHAPE));
            let head = figures(soak(2 * seed + 1, SHAPE));
            let c = compare_with(&base, &head, &gate(), &fast_options());
            assert_ne!(
                c.verdict.outcome,
                VerdictOutcome::Regression,
                "seed {seed}: {}",
                c.verdict.rule_fired
            );
        }
    }

    #[test]
    fn a_machine_difference_forbids_a_pass_but_not_a_clear_regression() {
        let medium = Shape {
            windows: 60,
            per_window: 300,
            ..SHAPE
        };
        let calibrated = |mut f: RunFigures, c: f64| {
            f.calibration = Some(c);
            f
        };
        let base = calibrated(figures(soak(1, medium)), 1000.0);
        // The same service on a machine 25% slower: would pass, is inconclusive.
        let same = calibrated(figures(soak(2, medium)), 750.0);
        let c = compare(&base, &same, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
        assert!(
            c.verdict
                .rule_fired
                .contains("calibration differs by -25.0%"),
            "{}",
            c.verdict.rule_fired
        );
        // A 2× slower tail is far beyond (1 + 10%)(1 + 25%): still a regression, thresholds widened.
        let slower = calibrated(
            figures(soak(
                2,
                Shape {
                    tail: 2.0,
                    ..medium
                },
            )),
            750.0,
        );
        let c = compare(&base, &slower, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        let p99 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P99 && m.operation.is_none())
            .or_else(|| c.metrics.iter().find(|m| m.metric == Metric::P99))
            .expect("p99 compared");
        assert!(
            (p99.threshold - 1.1 * 1.25).abs() < 1e-9,
            "threshold widened to (1 + 10%)(1 + 25%): {p99:?}"
        );
        assert!(c.verdict.warnings.iter().any(|w| w.contains("calibration")));
    }

    #[test]
    fn a_thirty_percent_p99_increase_is_a_regression() {
        // 18,000 requests a side: the slow path (3%) holds p99. With 6,000 the same change is
        // found about 85% of the time (51 of 60 seeds) and inconclusive otherwise.
        let medium = Shape {
            windows: 60,
            per_window: 300,
            ..SHAPE
        };
        let base = figures(soak(1, medium));
        let head = figures(soak(
            2,
            Shape {
                tail: 1.3,
                ..medium
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        assert_eq!(outcome_of(&c, Metric::P99, None), MetricOutcome::Regression);
        // The body of the distribution did not move.
        assert_ne!(outcome_of(&c, Metric::P50, None), MetricOutcome::Regression);
        let first = &c.metrics[c.verdict.metrics[0]];
        assert_eq!(first.metric, Metric::P99);
        assert!(first.low.unwrap() > 1.1, "{first:?}");
        assert!(
            c.verdict.rule_fired.starts_with("regression: p99"),
            "{}",
            c.verdict.rule_fired
        );
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
    }

    #[test]
    fn a_two_percent_increase_passes_a_ten_percent_gate() {
        let mut g = gate();
        g.p50_change = 0.10;
        // p99 needs many requests (STATISTICS.md: 10,000 per class): 36,000 here, 12,000 in the
        // smaller class.
        let big = Shape {
            windows: 60,
            per_window: 600,
            ..SHAPE
        };
        let base = figures(soak(3, big));
        let head = figures(soak(4, Shape { scale: 1.02, ..big }));
        let c = compare(&base, &head, &g);
        assert_eq!(
            c.verdict.outcome,
            VerdictOutcome::Pass,
            "{}",
            c.verdict.rule_fired
        );
        for m in c.metrics.iter().filter(|m| m.metric == Metric::P50) {
            assert_eq!(m.outcome, MetricOutcome::Pass, "{m:?}");
            // The estimate is close to the true 2%.
            assert!((m.estimate.unwrap() - 1.02).abs() < 0.03, "{m:?}");
        }
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass);
    }

    #[test]
    fn wide_noise_is_inconclusive_and_says_what_it_could_detect() {
        let noisy = Shape {
            drift: 0.3,
            windows: 12,
            ..SHAPE
        };
        let base = figures(soak(5, noisy));
        let head = figures(soak(
            6,
            Shape {
                scale: 1.08,
                ..noisy
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
        assert!(
            c.verdict.rule_fired.contains("could detect a change of"),
            "{}",
            c.verdict.rule_fired
        );
        let m = &c.metrics[c.verdict.metrics[0]];
        assert!(m.detectable.unwrap() > 0.2, "{m:?}");
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive);
    }

    #[test]
    fn holm_gives_the_strongest_evidence_the_strictest_level() {
        let base = figures(soak(7, SHAPE));
        let head = figures(soak(8, Shape { tail: 1.6, ..SHAPE }));
        let c = compare(&base, &head, &gate());
        let primaries: Vec<&MetricComparison> = c.metrics.iter().filter(|m| m.primary).collect();
        let m = primaries.len() as f64;
        let strongest = primaries
            .iter()
            .min_by(|a, b| a.p_value.unwrap().total_cmp(&b.p_value.unwrap()))
            .unwrap();
        assert!((strongest.confidence - (1.0 - 2.0 * 0.01 / m)).abs() < 1e-12);
        // Levels never get stricter as the evidence weakens.
        let mut by_p = primaries.clone();
        by_p.sort_by(|a, b| a.p_value.unwrap().total_cmp(&b.p_value.unwrap()));
        assert!(by_p.windows(2).all(|w| w[0].confidence >= w[1].confidence));
        // 2 percentiles of all operations + the error rate; per-class latencies are secondary.
        assert_eq!(primaries.len(), 3);
        assert!(
            c.metrics
                .iter()
                .filter(|m| m.operation.is_some())
                .all(|m| !m.primary)
        );
    }

    #[test]
    fn more_errors_are_a_regression_and_none_on_both_sides_pass() {
        let base = figures(soak(9, SHAPE));
        let head = figures(soak(
            10,
            Shape {
                errors: 0.03,
                ..SHAPE
            },
        ));
        let c = compare(&base, &head, &gate());
        assert_eq!(
            outcome_of(&c, Metric::ErrorRate, None),
            MetricOutcome::Regression
        );
        let same = compare(&base, &base, &gate());
        let m = same
            .metrics
            .iter()
            .find(|m| m.metric == Metric::ErrorRate)
            .unwrap();
        assert_eq!((m.outcome, m.estimate), (MetricOutcome::Pass, Some(0.0)));
    }

    fn knee(held: Option<f64>, broke: Option<f64>) -> Option<KneeBracket> {
        Some(KneeBracket {
            last_held_sessions_per_sec: held,
            first_broke_sessions_per_sec: broke,
            generator_limit_sessions_per_sec: None,
            invalid: None,
        })
    }

    #[test_case::test_case(knee(Some(30.0), Some(35.0)), MetricOutcome::Regression; "clearly lower")]
    #[test_case::test_case(knee(Some(45.0), Some(55.0)), MetricOutcome::Inconclusive; "overlapping")]
    #[test_case::test_case(knee(Some(50.0), Some(60.0)), MetricOutcome::Pass; "same or better")]
    #[test_case::test_case(knee(Some(60.0), Some(70.0)), MetricOutcome::Improvement; "clearly higher")]
    #[test_case::test_case(knee(None, Some(10.0)), MetricOutcome::Regression; "broke at once")]
    #[test_case::test_case(knee(Some(45.0), None), MetricOutcome::Inconclusive; "never broke below the base")]
    fn capacity_is_judged_by_the_knee_brackets(
        head_knee: Option<KneeBracket>,
        expected: MetricOutcome,
    ) {
        let phase = soak(11, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(40.0), Some(50.0));
        let mut head = figures(phase);
        head.knee = head_knee;
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(outcome_of(&c, Metric::Capacity, None), expected, "{c:#?}");
    }

    #[test]
    fn the_same_load_an_invalid_phase_and_the_calibration_are_preconditions() {
        let phase = soak(12, SHAPE);
        let base = figures(phase.clone());
        let rule = |head: &RunFigures, base: &RunFigures| {
            let c = compare_with(base, head, &gate(), &fast_options());
            assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
            c.verdict.rule_fired
        };
        let mut other_load = figures(phase.clone());
        other_load.phase.as_mut().unwrap().sessions_per_sec = 40.0;
        let mut invalid = figures(phase.clone());
        invalid.phase.as_mut().unwrap().validity.reasons.push(
            crate::measure::InvalidReason::Drops {
                rate: 0.05,
                limit: 0.01,
                cause: crate::measure::DropCause::Saturated,
                busy: Some(0.97),
            },
        );
        let mut calibrated_base = base.clone();
        calibrated_base.calibration = Some(1000.0);
        let mut slower_machine = figures(phase.clone());
        slower_machine.calibration = Some(700.0);
        let mut drifting = figures(phase.clone());
        drifting.calibration_drift = Some(0.25);
        let mut no_soak = figures(phase);
        no_soak.phase = None;
        insta::assert_snapshot!([
            rule(&other_load, &base),
            rule(&invalid, &base),
            rule(&slower_machine, &calibrated_base),
            rule(&drifting, &base),
            rule(&no_soak, &base),
        ].join("\n"), @r"
        inconclusive: p50 (all operations): not measured at the same offered load: 50.000 sessions/s (base) vs 40.000 (head); 2 more metrics inconclusive
        inconclusive: p50 (all operations): this run's phase `soak` is invalid: 5.00% of arrivals were dropped at the in-flight cap, above the limit of 1.00%: the generator was saturated (its loop used 97% of its core); 2 more metrics inconclusive
        the calibration differs by -30.0% between the baseline's machine and this one, beyond 20%: the numbers are not comparable; no metric regressed beyond what that could explain
        the machine drifted during this run: its calibration moved +25.0% between before and after the phases, beyond 20%; no metric regressed beyond what that could explain
        inconclusive: p50 (all operations): this run has no phase measured at the comparison's load point (the soak); 2 more metrics inconclusive
        ");
    }

    /// Per-operation latencies are secondary: a regression of one warns and the overall figures
    /// decide (measured: an operation's p99 moved ×4 between A/A runs of the demo's `ci` profile,
    /// and 2 of 10 A/A runs failed the gate on it).
    #[test]
    fn a_per_operation_regression_warns_and_the_overall_figures_decide() {
        let metric = |operation: Option<&str>, outcome: MetricOutcome| MetricComparison {
            metric: Metric::P99,
            operation: operation.map(str::to_owned),
            primary: operation.is_none(),
            scale: Scale::Ratio,
            base: Some(1.0),
            head: Some(4.0),
            estimate: Some(4.0),
            low: Some(1.2),
            high: Some(15.0),
            confidence: 0.98,
            threshold: 1.1,
            p_value: Some(0.001),
            outcome,
            detectable: None,
            note: None,
            noise: None,
            accepted: None,
        };
        let v = decide(
            &[
                metric(None, MetricOutcome::Pass),
                metric(Some("accounts"), MetricOutcome::Regression),
            ],
            Vec::new(),
            Vec::new(),
        );
        assert_eq!(v.outcome, VerdictOutcome::Pass, "{v:?}");
        assert_eq!(
            v.rule_fired,
            "pass: all 1 primary metrics are within their thresholds"
        );
        assert!(
            v.warnings[0].starts_with("p99 of `accounts` regressed: "),
            "{:?}",
            v.warnings
        );
        let v = decide(
            &[
                metric(None, MetricOutcome::Regression),
                metric(Some("accounts"), MetricOutcome::Regression),
            ],
            Vec::new(),
            Vec::new(),
        );
        assert_eq!(v.outcome, VerdictOutcome::Regression);
        assert_eq!(v.metrics, vec![0]);
    }

    /// 18,000 requests a side, for figures whose intervals are narrow.
    const MEDIUM: Shape = Shape {
        windows: 60,
        per_window: 300,
        ..SHAPE
    };

    /// A 15% slower service is a regression of p50 (about +0.4 ms on 2.5 ms) and p99 under the
    /// relative thresholds alone; floors of 1 ms and 10 ms raise them above the change, which
    /// then passes.
    #[test]
    fn a_floor_turns_a_tiny_absolute_change_into_a_pass() {
        let base = figures(soak(1, MEDIUM));
        let head = figures(soak(
            2,
            Shape {
                scale: 1.15,
                ..MEDIUM
            },
        ));
        let plain = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(plain.verdict.outcome, VerdictOutcome::Regression);
        assert_eq!(
            outcome_of(&plain, Metric::P50, None),
            MetricOutcome::Regression
        );
        let floored = GateConfig {
            p50_floor: std::time::Duration::from_millis(1),
            p99_floor: std::time::Duration::from_millis(10),
            ..gate()
        };
        let c = compare_with(&base, &head, &floored, &fast_options());
        assert_eq!(
            c.verdict.outcome,
            VerdictOutcome::Pass,
            "{}",
            c.verdict.rule_fired
        );
        let p50 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P50 && m.operation.is_none())
            .expect("p50 compared");
        let base_p50 = p50.base.expect("a base figure");
        assert!((2.0..3.0).contains(&base_p50), "{p50:?}");
        // 1 ms over the base's p50, far above 5%.
        assert!(
            (p50.threshold - (1.0 + 1.0 / base_p50)).abs() < 1e-9,
            "{p50:?}"
        );
        let note = p50.note.as_deref().unwrap_or_default();
        let expected = format!(
            "threshold raised to {:.1}% by the 1ms floor (`gate.p50-floor`)",
            100.0 / base_p50
        );
        assert_eq!(note, expected);
        // A floor below the relative threshold changes nothing and says nothing.
        let low = GateConfig {
            p50_floor: std::time::Duration::from_micros(10),
            ..gate()
        };
        let c = compare_with(&base, &head, &low, &fast_options());
        let p50 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P50)
            .expect("p50");
        assert_eq!((p50.threshold, p50.note.as_deref()), (1.05, None));
        assert_eq!(p50.outcome, MetricOutcome::Regression);
    }

    /// The `slow` operation's body is 60% slower; the overall p50 and p99 move a few percent. Ungated,
    /// its regression warns and the run passes; with `gate = true` it fails the verdict.
    #[test]
    fn a_gated_operations_regression_fails_and_an_ungated_one_warns() {
        // Wide enough that the overall figures pass (they move up to 5%), far below +60%.
        let g = GateConfig {
            p50_change: 0.25,
            p99_change: 0.25,
            ..gate()
        };
        let base = figures(soak(5, MEDIUM));
        let head = figures(soak(
            6,
            Shape {
                slow_op: 1.6,
                ..MEDIUM
            },
        ));
        let ungated = compare_with(&base, &head, &g, &fast_options());
        assert_eq!(
            ungated.verdict.outcome,
            VerdictOutcome::Pass,
            "{}",
            ungated.verdict.rule_fired
        );
        assert_eq!(
            outcome_of(&ungated, Metric::P50, Some("slow")),
            MetricOutcome::Regression
        );
        assert!(
            ungated
                .verdict
                .warnings
                .iter()
                .any(|w| w.starts_with("p50 of `slow` regressed: ")),
            "{:?}",
            ungated.verdict.warnings
        );
        let options = CompareOptions {
            gated_operations: vec!["slow".to_owned()],
            ..fast_options()
        };
        let gated = compare_with(&base, &head, &g, &options);
        assert_eq!(gated.verdict.outcome, VerdictOutcome::Regression);
        let first = &gated.metrics[gated.verdict.metrics[0]];
        assert_eq!(
            (first.metric, first.operation.as_deref(), first.primary),
            (Metric::P50, Some("slow"), true)
        );
        assert!(
            gated
                .verdict
                .rule_fired
                .starts_with("regression: p50 of `slow`"),
            "{}",
            gated.verdict.rule_fired
        );
        // Only the gated operation joins the family: 3 overall metrics and its p50 and p99.
        assert_eq!(gated.metrics.iter().filter(|m| m.primary).count(), 5);
        let fast = gated
            .metrics
            .iter()
            .find(|m| m.operation.as_deref() == Some("fast"))
            .expect("fast compared");
        assert!(!fast.primary);
    }

    fn saturated_soak(mut f: RunFigures) -> RunFigures {
        f.phase
            .as_mut()
            .unwrap()
            .validity
            .reasons
            .push(crate::measure::InvalidReason::Lag {
                p99: std::time::Duration::from_millis(40),
                limit: std::time::Duration::from_millis(10),
                cause: crate::measure::LagCause::Saturated,
                busy: Some(0.98),
            });
        f
    }

    /// Regression (issue 12, measured with `bench/verdicts.sh demo-service ci-cap40`): a head
    /// whose soak the abort limits stopped after 4 windows was inconclusive ("fewer than 5
    /// windows with answers") instead of a regression.
    #[test]
    fn a_soak_stopped_by_the_abort_limits_at_the_baselines_load_is_a_regression() {
        let base = figures(soak(25, SHAPE));
        let mut head = figures(soak(
            26,
            Shape {
                windows: 3,
                scale: 400.0,
                errors: 0.6,
                ..SHAPE
            },
        ));
        head.phase.as_mut().unwrap().stopped = Some(format!(
            "p99 7.00 s > 5.00 s in 2 {}",
            crate::plan::ABORT_LIMITS
        ));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        let p99 = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::P99 && m.operation.is_none())
            .unwrap();
        insta::assert_snapshot!(p99.note.clone().unwrap_or_default(), @"this run's soak was stopped by the abort limits: p99 7.00 s > 5.00 s in 2 consecutive windows (abort limits), while the baseline ran its whole soak at the same load (p99 8437.76 ms, 25.09 ms in the baseline)");
        assert_eq!(p99.outcome, MetricOutcome::Regression);
        insta::assert_snapshot!(c.verdict.rule_fired, @"regression: p50 (all operations) changed +38762.9% (interval +5094.6% to +290646.9% at 98.00% confidence) against a threshold of +5.0%; 2 more metrics regressed");
        // A stop by signal or by abort.max-duration says nothing about the service.
        let by_abort = |c: &Comparison| {
            c.metrics
                .iter()
                .any(|m| m.note.as_deref().is_some_and(is_abort_note))
        };
        assert!(by_abort(&c));
        head.phase.as_mut().unwrap().stopped = Some("stopped".to_owned());
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert!(!by_abort(&c), "{c:#?}");
        // Nor does an abort on both sides.
        let mut aborted_base = base.clone();
        aborted_base.phase.as_mut().unwrap().stopped = Some(format!(
            "p99 7.00 s > 5.00 s in 2 {}",
            crate::plan::ABORT_LIMITS
        ));
        head.phase.as_mut().unwrap().stopped = aborted_base.phase.as_ref().unwrap().stopped.clone();
        let c = compare_with(&aborted_base, &head, &gate(), &fast_options());
        assert!(!by_abort(&c), "{c:#?}");
    }

    /// Regression: an invalid soak made the whole verdict inconclusive, hiding the capacity
    /// regression the ramp had measured (issue 12: "a regression was reported as invalid").
    #[test]
    fn an_invalid_soak_does_not_hide_a_capacity_regression() {
        let phase = soak(21, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(40.0), Some(50.0));
        let mut head = saturated_soak(figures(phase));
        head.knee = knee(Some(8.0), Some(10.0));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
        assert!(
            c.verdict.rule_fired.starts_with("regression: capacity"),
            "{}",
            c.verdict.rule_fired
        );
        assert_eq!(
            outcome_of(&c, Metric::P50, None),
            MetricOutcome::Inconclusive
        );
        // Without the capacity loss nothing can pass: the soak's metrics are inconclusive.
        head.knee = knee(Some(40.0), Some(50.0));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Inconclusive, "{c:#?}");
    }

    #[test]
    fn an_invalid_ramp_makes_only_the_capacity_inconclusive() {
        let phase = soak(22, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(40.0), Some(50.0));
        let mut head = figures(soak(23, Shape { tail: 2.0, ..SHAPE }));
        head.knee = knee(Some(8.0), None).map(|k| KneeBracket {
            invalid: Some("invalid: the ramp stopped at `ramp-25%`".to_owned()),
            ..k
        });
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::Capacity, None),
            MetricOutcome::Inconclusive
        );
        assert_eq!(
            outcome_of(&c, Metric::P99, None),
            MetricOutcome::Regression,
            "{c:#?}"
        );
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        let capacity = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::Capacity)
            .unwrap();
        assert_eq!(
            capacity.note.as_deref(),
            Some("this run's ramp is invalid: invalid: the ramp stopped at `ramp-25%`")
        );
    }

    /// A service faster than the ramp: both sides held the highest step. The capacity passes
    /// within the ramp (no hypothesis test, not in Holm's family), saying where the ramp ended,
    /// and unchanged code can pass the run; a head that broke, or whose generator reached its
    /// limit, still cannot.
    #[test]
    fn both_holding_the_whole_ramp_passes_the_capacity_within_it_and_lets_the_run_pass() {
        let phase = soak(25, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(60.0), None);
        let mut head = figures(phase.clone());
        head.knee = knee(Some(60.0), None);
        let c = compare_with(&base, &head, &gate(), &fast_options());
        let capacity = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::Capacity)
            .unwrap();
        assert_eq!(capacity.outcome, MetricOutcome::Pass, "{c:#?}");
        assert_eq!(
            (
                capacity.estimate,
                capacity.low,
                capacity.high,
                capacity.p_value
            ),
            (Some(1.0), Some(1.0), None, None)
        );
        let note = capacity.note.as_deref().unwrap_or_default();
        assert!(
            note.contains("both held the ramp's highest step (60.000 sessions/s)"),
            "{note}"
        );
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass, "{c:#?}");

        // The head broke where the base held: no longer "both held".
        head.knee = knee(Some(40.0), Some(50.0));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::Capacity, None),
            MetricOutcome::Regression,
            "{c:#?}"
        );
        // A head that held only because its generator stopped short is a lower bound.
        head.knee = knee(Some(60.0), None).map(|k| KneeBracket {
            generator_limit_sessions_per_sec: Some(60.0),
            ..k
        });
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::Capacity, None),
            MetricOutcome::Inconclusive,
            "{c:#?}"
        );
    }

    #[test]
    fn a_generator_bound_knee_is_a_lower_bound_that_shows_a_regression_but_never_a_pass() {
        let phase = soak(24, SHAPE);
        let mut base = figures(phase.clone());
        base.knee = knee(Some(40.0), Some(50.0));
        let bounded = |held: f64| {
            knee(Some(held), None).map(|k| KneeBracket {
                generator_limit_sessions_per_sec: Some(held * 1.5),
                ..k
            })
        };
        let mut head = figures(phase.clone());
        // Even a lower bound well above the baseline's knee does not pass (issue 12: the capacity
        // check is inconclusive, with the reason).
        head.knee = bounded(60.0);
        let c = compare_with(&base, &head, &gate(), &fast_options());
        let capacity = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::Capacity)
            .unwrap();
        assert_eq!(
            capacity.outcome,
            MetricOutcome::Inconclusive,
            "{capacity:?}"
        );
        assert_eq!(
            capacity.note.as_deref(),
            Some(
                "this run's capacity is a lower bound: its generator reached its limit on this \
                 machine at 90.000 sessions/s: it can show a regression, not a pass"
            )
        );
        // A baseline bounded by its generator still shows a head that broke far below it.
        let mut bounded_base = figures(phase);
        bounded_base.knee = bounded(40.0);
        head.knee = knee(Some(8.0), Some(10.0));
        let c = compare_with(&bounded_base, &head, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::Capacity, None),
            MetricOutcome::Regression
        );
    }

    /// Results written before drops were counted per window left them out of their error rate:
    /// against such a baseline the head's drops are left out too, or a cap reached within the
    /// old limit would read as a regression.
    #[test]
    fn drops_count_in_the_error_rate_only_when_both_sides_counted_them_per_window() {
        let base = figures(soak(27, SHAPE));
        let mut head = figures(soak(27, SHAPE));
        let phase = head.phase.as_mut().unwrap();
        for w in phase.windows.windows.iter_mut() {
            w.dropped = 20;
        }
        phase.counters.dropped = 20 * phase.windows.windows.len() as u64;
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::ErrorRate, None),
            MetricOutcome::Regression,
            "{c:#?}"
        );
        let mut old_base = base.clone();
        old_base.phase.as_mut().unwrap().counters.dropped = 5;
        let c = compare_with(&old_base, &head, &gate(), &fast_options());
        let m = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::ErrorRate)
            .unwrap();
        assert_eq!(m.estimate, Some(0.0), "{m:?}");
    }

    fn rss(per_sec: f64, noise: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..60)
            .map(|t| {
                let t = f64::from(t);
                (t, 100e6 + per_sec * t + noise * normal(&mut rng))
            })
            .collect()
    }

    #[test]
    fn an_rss_leak_fails_and_a_noisy_slope_only_warns() {
        let phase = soak(13, SHAPE);
        let mib_min = 1024.0 * 1024.0 / 60.0;
        let mut base = figures(phase.clone());
        base.rss = rss(0.0, 50_000.0, 1);
        let mut leaky = figures(phase.clone());
        leaky.rss = rss(8.0 * mib_min, 50_000.0, 2);
        let c = compare_with(&base, &leaky, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::RssSlope, None),
            MetricOutcome::Regression
        );
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            c.verdict
                .rule_fired
                .starts_with("regression: RSS slope changed +7.9"),
            "{}",
            c.verdict.rule_fired
        );

        let mut noisy = figures(phase);
        noisy.rss = rss(2.0 * mib_min, 5e6, 3);
        let c = compare_with(&base, &noisy, &gate(), &fast_options());
        assert_eq!(
            outcome_of(&c, Metric::RssSlope, None),
            MetricOutcome::Inconclusive
        );
        assert_ne!(c.verdict.outcome, VerdictOutcome::Regression);
        assert!(
            c.verdict
                .warnings
                .iter()
                .any(|w| w.starts_with("RSS slope is inconclusive")),
            "{:?}",
            c.verdict.warnings
        );
    }

    #[test]
    fn the_plans_stored_slopes_are_used_when_present() {
        use crate::stats::SlopeEstimate;
        let phase = soak(16, SHAPE);
        let per_min = 1024.0 * 1024.0 / 60.0;
        let slope = |mib: f64, half: f64| SlopeEstimate {
            estimate: mib * per_min,
            low: (mib - half) * per_min,
            high: (mib + half) * per_min,
        };
        let mut base = figures(phase.clone());
        base.rss_slope = Some(slope(0.1, 0.2));
        let mut head = figures(phase);
        head.rss_slope = Some(slope(6.0, 0.5));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        let m = c
            .metrics
            .iter()
            .find(|m| m.metric == Metric::RssSlope)
            .unwrap();
        assert_eq!(m.outcome, MetricOutcome::Regression, "{m:?}");
        assert!(!m.primary);
        head.rss_slope = Some(slope(0.5, 0.5));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(outcome_of(&c, Metric::RssSlope, None), MetricOutcome::Pass);
    }

    #[test]
    fn comparisons_are_deterministic_and_serialize() {
        let base = figures(soak(14, SHAPE));
        let head = figures(soak(15, Shape { tail: 1.2, ..SHAPE }));
        let a = compare_with(&base, &head, &gate(), &fast_options());
        let b = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(a, b);
        let json = serde_json::to_string(&a).unwrap();
        let back: Comparison = serde_json::from_str(&json).unwrap();
        assert_eq!(back.verdict, a.verdict);
        assert_eq!(back.metrics.len(), a.metrics.len());
    }

    #[test]
    fn no_baseline_is_a_verdict_of_its_own() {
        let v = Verdict::no_baseline(vec!["no baseline stored for 3f2a91c".to_owned()]);
        assert_eq!(v.outcome, VerdictOutcome::NoBaseline);
        assert_eq!(v.rule_fired, "no baseline matches this run");
        assert_eq!(v.warnings, ["no baseline stored for 3f2a91c"]);
        assert!(v.metrics.is_empty());
    }
}
