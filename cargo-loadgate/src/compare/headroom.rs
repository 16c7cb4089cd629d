//! The headroom (seed 000: "the passing load level is your system capacity … subtract your
//! current production load to arrive at how much head room you have"): capacity / production
//! load with the knee's bracket kept, capacity − production load in requests per second, the one
//! `[slo] headroom` rule, and the comparison with the baseline's headroom by capacity's rule.
//!
//! The production load is the workload's session rate at the ramp's 100% (`[workload]
//! sessions-per-sec`, which `cargo loadgate load` writes from the logs). Both sides of the ratio
//! are session rates, so the headroom is the knee's share of that rate exactly; the margin in
//! requests per second takes both at the user model's steady-state rate (docs/decisions.md,
//! "Headroom").

use super::decide::{capacity_with_notes, classify};
use super::figures::{KneeBracket, RunFigures};
use super::options::CompareOptions;
use crate::config::{GateConfig, WorkloadConfig, format_factor};
use crate::plan::{RampOutcome, format_rate};
use crate::result::{
    Comparison, HeadroomBound, HeadroomComparison, HeadroomOutcome, HeadroomSummary, Metric,
    MetricComparison, MetricOutcome, RunResult, Verdict, VerdictOutcome,
};

/// Two session rates this close (relatively) are the same production load: the knee's rates are
/// a step's fraction times the workload's rate, which floating point rounds.
const SAME_LOAD: f64 = 1e-9;

/// The production load a headroom is taken against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProductionLoad {
    /// Sessions per second: the workload's rate at 100%.
    pub sessions_per_sec: f64,
    /// The user model's expected requests per session, when it can be computed.
    pub requests_per_session: Option<f64>,
}

impl ProductionLoad {
    /// The production load of `workload`: its session rate, and the request rate the user
    /// model's exact analysis (`workload::analyze`) implies.
    pub fn of(workload: &WorkloadConfig) -> Self {
        Self {
            sessions_per_sec: workload.sessions_per_sec,
            requests_per_session: crate::workload::analyze(workload)
                .ok()
                .map(|a| a.requests_per_session),
        }
    }
}

/// A headroom factor for people: `1.25x`.
fn times(x: f64) -> String {
    format!("{x:.2}x")
}

/// `low to high`, `≥ low`, `< high` or `unknown`, each end formatted by `f`.
fn span(
    bound: HeadroomBound,
    low: Option<f64>,
    high: Option<f64>,
    f: impl Fn(f64) -> String,
) -> String {
    match (bound, low, high) {
        (HeadroomBound::Bracket, Some(l), Some(h)) => format!("{} to {}", f(l), f(h)),
        (HeadroomBound::AtLeast, Some(l), _) => format!("≥ {}", f(l)),
        (HeadroomBound::Below, _, Some(h)) => format!("< {}", f(h)),
        _ => "unknown".to_owned(),
    }
}

/// The headroom of a ramp's outcome against `production`, checked against `limit`
/// (`[slo] headroom`) when one is configured.
///
/// The capacity lies in `[last held, first broke)`, so the headroom lies in `[low, high)`. The
/// check passes when `low` is at or above the limit, fails when `high` is at or below it (the
/// capacity is then certainly below the limit), and is inconclusive otherwise: a bracket that
/// straddles the limit, a lower bound below it (the generator's limit, not the service's), a ramp
/// that found nothing, or one that cannot be trusted.
pub fn headroom(
    ramp: &RampOutcome,
    production: &ProductionLoad,
    limit: Option<f64>,
) -> HeadroomSummary {
    let p = production.sessions_per_sec;
    let cap_low = ramp.knee_sessions_per_sec;
    let cap_high = ramp.lowest_break.as_ref().map(|b| b.sessions_per_sec);
    let bound = match (cap_low, cap_high) {
        (Some(_), Some(_)) => HeadroomBound::Bracket,
        (Some(_), None) => HeadroomBound::AtLeast,
        (None, Some(_)) => HeadroomBound::Below,
        (None, None) => HeadroomBound::Unknown,
    };
    let ratio = |c: Option<f64>| c.map(|c| c / p).filter(|r| r.is_finite());
    let (low, high) = (ratio(cap_low), ratio(cap_high));
    let rps = production.requests_per_session;
    let margin = |c: Option<f64>| c.zip(rps).map(|(c, r)| (c - p) * r);
    let (margin_low, margin_high) = (margin(cap_low), margin(cap_high));
    // Why a lower bound is one.
    let why_lower = match &ramp.generator_limit {
        Some(g) => format!(
            "the generator reached its limit at {} sessions/s",
            format_rate(g.sessions_per_sec)
        ),
        None => "the ramp held its highest step".to_owned(),
    };
    let mut statement = if bound == HeadroomBound::Unknown {
        format!(
            "headroom unknown: the ramp found no capacity (nothing held and nothing broke) to \
             set against a production load of {} sessions/s (the workload's rate at 100%)",
            format_rate(p)
        )
    } else {
        format!(
            "headroom {}: capacity {} sessions/s over a production load of {} sessions/s (the \
             workload's rate at 100%)",
            span(bound, low, high, times),
            span(bound, cap_low, cap_high, format_rate),
            format_rate(p)
        )
    };
    if bound == HeadroomBound::AtLeast {
        statement.push_str(&format!(", a lower bound: {why_lower}"));
    }
    if let Some(r) = rps.filter(|_| bound != HeadroomBound::Unknown) {
        statement.push_str(&format!(
            "; capacity − production load {} req/s, at the model's {r:.2} requests per session \
             ({} req/s of production load)",
            span(bound, margin_low, margin_high, |m| format!("{m:+.1}")),
            format_rate(p * r)
        ));
    }
    let (outcome, reason) = match limit {
        None => (None, None),
        Some(limit) => {
            let (o, r) = check(ramp, bound, low, high, limit, &why_lower);
            (Some(o), Some(r))
        }
    };
    HeadroomSummary {
        production_sessions_per_sec: p,
        requests_per_session: rps,
        production_rate_per_sec: rps.map(|r| r * p),
        capacity_low_sessions_per_sec: cap_low,
        capacity_high_sessions_per_sec: cap_high,
        bound,
        low,
        high,
        margin_low_rate_per_sec: margin_low,
        margin_high_rate_per_sec: margin_high,
        limit,
        outcome,
        statement,
        reason,
    }
}

/// The `[slo] headroom` rule: the one place it is applied.
fn check(
    ramp: &RampOutcome,
    bound: HeadroomBound,
    low: Option<f64>,
    high: Option<f64>,
    limit: f64,
    why_lower: &str,
) -> (HeadroomOutcome, String) {
    let named = format!("slo.headroom {}", format_factor(limit));
    let range = span(bound, low, high, times);
    if !ramp.valid {
        let why = ramp
            .sentence
            .strip_prefix("invalid: ")
            .unwrap_or(&ramp.sentence);
        return (
            HeadroomOutcome::Inconclusive,
            format!("the ramp is invalid ({why}): headroom {range} is not judged against {named}"),
        );
    }
    let at_least = |x: f64| x >= limit * (1.0 - SAME_LOAD);
    match (bound, low, high) {
        (_, Some(l), _) if at_least(l) => (
            HeadroomOutcome::Pass,
            format!("headroom {range} is at least {named}"),
        ),
        (_, _, Some(h)) if h <= limit * (1.0 + SAME_LOAD) => (
            HeadroomOutcome::Fail,
            format!("headroom {range} is below {named}: the capacity broke below the limit"),
        ),
        (HeadroomBound::Bracket, ..) => (
            HeadroomOutcome::Inconclusive,
            format!(
                "headroom {range} straddles {named}: the ramp's bracket does not decide (more \
                 `[ramp] refine` iterations, or a step at {}, narrow it)",
                crate::config::format_percent(limit)
            ),
        ),
        (HeadroomBound::Below, ..) => (
            HeadroomOutcome::Inconclusive,
            format!("headroom {range}: nothing held, so it may lie below {named} or above it"),
        ),
        (HeadroomBound::AtLeast, ..) => (
            HeadroomOutcome::Inconclusive,
            format!(
                "headroom {range} is a lower bound below {named} ({why_lower}): it cannot show \
                 that the limit is met"
            ),
        ),
        _ => (
            HeadroomOutcome::Inconclusive,
            format!("the ramp found no capacity: the headroom is not judged against {named}"),
        ),
    }
}

/// Applies this run's `[slo] headroom` check (`head.headroom`, decided by [`headroom`]) to the
/// verdict and to the comparison's copy of it: a failed check makes the verdict a regression,
/// with or without a baseline (a regression's rule gains it); an inconclusive one makes a pass
/// inconclusive and warns otherwise; a pass changes nothing.
pub fn settle_headroom(
    head: &RunResult,
    comparison: Option<&mut Comparison>,
    verdict: &mut Verdict,
) {
    let Some((outcome, reason)) = head
        .headroom
        .as_ref()
        .and_then(|h| h.outcome.zip(h.reason.as_ref()))
    else {
        return;
    };
    match (outcome, verdict.outcome) {
        (HeadroomOutcome::Pass, _) => return,
        (HeadroomOutcome::Fail, VerdictOutcome::Regression) => {
            verdict.rule_fired.push_str(&format!("; and {reason}"));
        }
        (HeadroomOutcome::Fail, _) => {
            decide_by_headroom(verdict, VerdictOutcome::Regression, reason);
        }
        (HeadroomOutcome::Inconclusive, VerdictOutcome::Pass) => {
            decide_by_headroom(verdict, VerdictOutcome::Inconclusive, reason);
        }
        (HeadroomOutcome::Inconclusive, _) => verdict
            .warnings
            .push(format!("the headroom check is inconclusive: {reason}")),
    }
    if let Some(c) = comparison {
        c.verdict = verdict.clone();
    }
}

/// The verdict becomes `outcome` by the headroom check (`reason`); the rule it replaces goes
/// first among the warnings, and no comparison metric is behind the new one.
fn decide_by_headroom(verdict: &mut Verdict, outcome: VerdictOutcome, reason: &str) {
    let before = std::mem::replace(
        &mut verdict.rule_fired,
        format!("{}: {reason}", outcome.as_str()),
    );
    verdict
        .warnings
        .insert(0, format!("without the headroom check: {before}"));
    verdict.outcome = outcome;
    verdict.metrics.clear();
}

/// This run's headroom against the baseline's, by capacity's rule; `None` when either side has
/// no production load or the comparison has no capacity metric.
///
/// With the same production load on both sides (the gate's case: the baseline has this config's
/// hash, `[workload]` included) headroom_head / headroom_base is capacity's ratio exactly, so
/// capacity's judgement (with its Holm level and run-to-run noise) is reported and the headroom
/// is not a second hypothesis of the family. With different loads (`cargo loadgate compare` of
/// two results of different workloads) the knee brackets are taken over each side's production
/// load and judged by the same capacity draft, alone at α: it warns and does not decide.
pub(super) fn headroom_comparison(
    base: &RunFigures,
    head: &RunFigures,
    metrics: &[MetricComparison],
    gate: &GateConfig,
    options: &CompareOptions,
) -> Option<HeadroomComparison> {
    let (pb, ph) = (
        base.production_sessions_per_sec?,
        head.production_sessions_per_sec?,
    );
    let capacity = metrics
        .iter()
        .find(|m| m.metric == Metric::Capacity && m.operation.is_none())?;
    let change = |x: Option<f64>| {
        x.map_or_else(
            || "unbounded".to_owned(),
            |v| format!("{:+.1}%", (v - 1.0) * 100.0),
        )
    };
    if (pb / ph - 1.0).abs() <= SAME_LOAD {
        return Some(HeadroomComparison {
            base_production_sessions_per_sec: pb,
            head_production_sessions_per_sec: ph,
            same_as_capacity: true,
            estimate: capacity.estimate,
            low: capacity.low,
            high: capacity.high,
            outcome: capacity.outcome,
            note: format!(
                "the production load is {} sessions/s on both sides, so the headroom's ratio is \
                 capacity's ({}, interval {} to {}): judged once, as capacity",
                format_rate(ph),
                change(capacity.estimate),
                change(capacity.low),
                change(capacity.high)
            ),
        });
    }
    let over = |f: &RunFigures, p: f64| {
        let mut f = f.clone();
        f.knee = f.knee.map(|k| KneeBracket {
            last_held_sessions_per_sec: k.last_held_sessions_per_sec.map(|x| x / p),
            first_broke_sessions_per_sec: k.first_broke_sessions_per_sec.map(|x| x / p),
            generator_limit_sessions_per_sec: k.generator_limit_sessions_per_sec.map(|x| x / p),
            invalid: k.invalid,
        });
        f
    };
    let mut draft = capacity_with_notes(&over(base, pb), &over(head, ph), gate)?;
    // Secondary: judged alone at α, outside Holm's family.
    draft.primary = false;
    let judged = classify(draft, options.alpha, options.alpha, false, options.alpha);
    Some(HeadroomComparison {
        base_production_sessions_per_sec: pb,
        head_production_sessions_per_sec: ph,
        same_as_capacity: false,
        estimate: judged.estimate,
        low: judged.low,
        high: judged.high,
        outcome: judged.outcome,
        note: format!(
            "the production loads differ ({} sessions/s in the baseline, {} in this run): each \
             knee bracket over its own production load, by capacity's rule alone at α = {}; \
             it warns, capacity decides",
            format_rate(pb),
            format_rate(ph),
            options.alpha
        ),
    })
}

/// The warning a headroom comparison that regressed without being capacity's gives the verdict.
pub(super) fn headroom_warning(c: &HeadroomComparison) -> Option<String> {
    (!c.same_as_capacity && c.outcome == MetricOutcome::Regression)
        .then(|| format!("headroom regressed against the baseline's: {}", c.note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testkit::{SHAPE, fast_options, figures, gate, soak};
    use crate::compare::{compare_with, figures::KneeBracket};
    use crate::plan::BreakPoint;
    use test_case::test_case;

    const PRODUCTION: ProductionLoad = ProductionLoad {
        sessions_per_sec: 20.0,
        requests_per_session: Some(3.0),
    };

    fn point(sessions_per_sec: f64) -> BreakPoint {
        BreakPoint {
            phase: "refine-1".to_owned(),
            sessions_per_sec,
            offered_rate_per_sec: sessions_per_sec * 3.0,
            reasons: vec!["`home` p99 340 ms > 200 ms".to_owned()],
        }
    }

    /// A ramp whose knee held at `held` and broke at `broke` (session rates).
    fn ramp(held: Option<f64>, broke: Option<f64>) -> RampOutcome {
        let mut r = RampOutcome::conclude(Vec::new(), Vec::new());
        r.knee_sessions_per_sec = held;
        r.knee_rate_per_sec = held.map(|h| h * 3.0);
        r.lowest_break = broke.map(point);
        r
    }

    #[test]
    fn a_bracketed_knee_gives_a_bracketed_headroom_and_margin() {
        let h = headroom(&ramp(Some(25.0), Some(27.5)), &PRODUCTION, None);
        assert_eq!(h.bound, HeadroomBound::Bracket);
        assert_eq!((h.low, h.high), (Some(1.25), Some(1.375)));
        // (25 − 20) × 3 and (27.5 − 20) × 3 requests per second.
        assert_eq!(
            (h.margin_low_rate_per_sec, h.margin_high_rate_per_sec),
            (Some(15.0), Some(22.5))
        );
        assert_eq!(h.production_rate_per_sec, Some(60.0));
        assert_eq!((h.outcome, h.reason), (None, None), "no limit, no check");
        assert!(
            h.statement
                .starts_with("headroom 1.25x to 1.38x: capacity 25.0 to 27.5")
        );
    }

    #[test]
    fn a_held_top_step_or_a_generator_limit_gives_a_lower_bound() {
        let held = headroom(&ramp(Some(30.0), None), &PRODUCTION, None);
        assert_eq!(held.bound, HeadroomBound::AtLeast);
        assert_eq!((held.low, held.high), (Some(1.5), None));
        assert_eq!(held.margin_low_rate_per_sec, Some(30.0));
        assert!(held.statement.contains("≥ 1.50x"), "{}", held.statement);
        assert!(held.statement.contains("the ramp held its highest step"));
        let mut limited = ramp(Some(24.0), None);
        limited.generator_limit = Some(point(26.0));
        let limited = headroom(&limited, &PRODUCTION, None);
        assert_eq!(limited.bound, HeadroomBound::AtLeast);
        assert!(
            limited
                .statement
                .contains("the generator reached its limit at 26.0 sessions/s"),
            "{}",
            limited.statement
        );
    }

    #[test]
    fn nothing_held_is_an_upper_bound_and_nothing_measured_is_unknown() {
        let below = headroom(&ramp(None, Some(5.0)), &PRODUCTION, None);
        assert_eq!(below.bound, HeadroomBound::Below);
        assert_eq!((below.low, below.high), (None, Some(0.25)));
        assert_eq!(below.margin_high_rate_per_sec, Some(-45.0));
        let unknown = headroom(&ramp(None, None), &PRODUCTION, Some(1.0));
        assert_eq!(unknown.bound, HeadroomBound::Unknown);
        assert_eq!(unknown.outcome, Some(HeadroomOutcome::Inconclusive));
        assert_eq!(
            unknown.statement,
            "headroom unknown: the ramp found no capacity (nothing held and nothing broke) to set \
             against a production load of 20.0 sessions/s (the workload's rate at 100%)"
        );
    }

    #[test]
    fn without_a_model_the_margin_is_not_given() {
        let production = ProductionLoad {
            requests_per_session: None,
            ..PRODUCTION
        };
        let h = headroom(&ramp(Some(25.0), Some(30.0)), &production, None);
        assert_eq!(h.margin_low_rate_per_sec, None);
        assert!(!h.statement.contains("req/s"), "{}", h.statement);
    }

    // The check: pass from the lower end, fail from the upper end, inconclusive between.
    #[test_case(Some(25.0), Some(27.5), 1.2, HeadroomOutcome::Pass; "bracket above")]
    #[test_case(Some(24.0), Some(27.5), 1.2, HeadroomOutcome::Pass; "lower end at the limit")]
    #[test_case(Some(20.0), Some(22.0), 1.2, HeadroomOutcome::Fail; "bracket below")]
    #[test_case(Some(20.0), Some(24.0), 1.2, HeadroomOutcome::Fail; "upper end at the limit")]
    #[test_case(Some(22.0), Some(26.0), 1.2, HeadroomOutcome::Inconclusive; "bracket straddles")]
    #[test_case(Some(30.0), None, 1.5, HeadroomOutcome::Pass; "lower bound at the limit")]
    #[test_case(Some(30.0), None, 1.2, HeadroomOutcome::Pass; "lower bound above")]
    #[test_case(Some(20.0), None, 1.2, HeadroomOutcome::Inconclusive; "lower bound below")]
    #[test_case(None, Some(10.0), 1.2, HeadroomOutcome::Fail; "nothing held below the limit")]
    #[test_case(None, Some(30.0), 1.2, HeadroomOutcome::Inconclusive; "nothing held above the limit")]
    #[test_case(Some(10.0), Some(12.0), 0.5, HeadroomOutcome::Pass; "a limit below one")]
    fn the_check_decides_by_the_brackets_ends(
        held: Option<f64>,
        broke: Option<f64>,
        limit: f64,
        expected: HeadroomOutcome,
    ) {
        let h = headroom(&ramp(held, broke), &PRODUCTION, Some(limit));
        assert_eq!(h.outcome, Some(expected), "{h:#?}");
        assert_eq!(h.limit, Some(limit));
    }

    #[test]
    fn a_step_fraction_times_the_rate_still_meets_a_limit_equal_to_it() {
        // 0.1 × 3 is not 0.3 in floating point; a knee at the "30%" step meets "30%".
        let production = ProductionLoad {
            sessions_per_sec: 3.0,
            requests_per_session: None,
        };
        let h = headroom(&ramp(Some(0.1 * 3.0 * 3.0), None), &production, Some(0.3));
        assert_eq!(h.outcome, Some(HeadroomOutcome::Pass), "{h:#?}");
    }

    #[test]
    fn an_invalid_ramp_is_not_judged_and_the_reasons_say_why() {
        let mut invalid = ramp(Some(10.0), None);
        invalid.valid = false;
        invalid.sentence = "invalid: the ramp stopped at `ramp-50%`".to_owned();
        let h = headroom(&invalid, &PRODUCTION, Some(1.2));
        assert_eq!(h.outcome, Some(HeadroomOutcome::Inconclusive));
        assert_eq!(
            h.reason.as_deref(),
            Some(
                "the ramp is invalid (the ramp stopped at `ramp-50%`): headroom ≥ 0.50x is not \
                 judged against slo.headroom 1.2x"
            )
        );
        let straddle = headroom(&ramp(Some(22.0), Some(26.0)), &PRODUCTION, Some(1.2));
        assert_eq!(
            straddle.reason.as_deref(),
            Some(
                "headroom 1.10x to 1.30x straddles slo.headroom 1.2x: the ramp's bracket does not \
                 decide (more `[ramp] refine` iterations, or a step at 120%, narrow it)"
            )
        );
    }

    fn run_with(h: Option<HeadroomSummary>) -> RunResult {
        let mut r = crate::result::testing::before();
        r.headroom = h;
        r
    }

    fn verdict(outcome: VerdictOutcome, rule: &str) -> Verdict {
        Verdict {
            outcome,
            rule_fired: rule.to_owned(),
            metrics: vec![0],
            warnings: Vec::new(),
            leak: None,
        }
    }

    #[test]
    fn a_failed_check_is_a_regression_with_or_without_a_baseline() {
        let failed = run_with(Some(headroom(
            &ramp(Some(20.0), Some(22.0)),
            &PRODUCTION,
            Some(1.2),
        )));
        let reason = failed.headroom.as_ref().unwrap().reason.clone().unwrap();
        for before in [
            Verdict::no_baseline(vec!["no baseline stored".to_owned()]),
            verdict(
                VerdictOutcome::Pass,
                "pass: all 4 primary metrics are within their thresholds",
            ),
            verdict(VerdictOutcome::Inconclusive, "inconclusive: capacity …"),
        ] {
            let mut v = before.clone();
            settle_headroom(&failed, None, &mut v);
            assert_eq!(v.outcome, VerdictOutcome::Regression);
            assert_eq!(v.rule_fired, format!("regression: {reason}"));
            assert_eq!(
                v.warnings[0],
                format!("without the headroom check: {}", before.rule_fired)
            );
            assert!(v.metrics.is_empty(), "no comparison metric is behind it");
        }
        let mut v = verdict(VerdictOutcome::Regression, "regression: p99 …");
        settle_headroom(&failed, None, &mut v);
        assert_eq!(v.rule_fired, format!("regression: p99 …; and {reason}"));
        assert_eq!(v.metrics, [0]);
    }

    #[test]
    fn an_inconclusive_check_keeps_a_run_from_passing_and_a_pass_changes_nothing() {
        let unsure = run_with(Some(headroom(
            &ramp(Some(22.0), Some(26.0)),
            &PRODUCTION,
            Some(1.2),
        )));
        let mut v = verdict(VerdictOutcome::Pass, "pass: …");
        let mut c =
            crate::compare::compare(&figures(soak(3, SHAPE)), &figures(soak(3, SHAPE)), &gate());
        settle_headroom(&unsure, Some(&mut c), &mut v);
        assert_eq!(v.outcome, VerdictOutcome::Inconclusive);
        assert!(
            v.rule_fired
                .starts_with("inconclusive: headroom 1.10x to 1.30x straddles")
        );
        assert_eq!(c.verdict, v, "the comparison's copy agrees");
        // Without a baseline it stays "no baseline" (`--require-baseline` still exits 12).
        let mut v = Verdict::no_baseline(Vec::new());
        settle_headroom(&unsure, None, &mut v);
        assert_eq!(v.outcome, VerdictOutcome::NoBaseline);
        assert!(v.warnings[0].starts_with("the headroom check is inconclusive: headroom 1.10x"));
        for passed in [
            run_with(Some(headroom(
                &ramp(Some(30.0), None),
                &PRODUCTION,
                Some(1.2),
            ))),
            run_with(Some(headroom(
                &ramp(Some(20.0), Some(21.0)),
                &PRODUCTION,
                None,
            ))),
            run_with(None),
        ] {
            for before in [
                Verdict::no_baseline(Vec::new()),
                verdict(VerdictOutcome::Pass, "pass"),
            ] {
                let mut v = before.clone();
                settle_headroom(&passed, None, &mut v);
                assert_eq!(v, before);
            }
        }
    }

    fn knee(held: f64, broke: f64) -> Option<KneeBracket> {
        Some(KneeBracket {
            last_held_sessions_per_sec: Some(held),
            first_broke_sessions_per_sec: Some(broke),
            generator_limit_sessions_per_sec: None,
            invalid: None,
        })
    }

    /// With the same production load (the gate's case) the headroom's ratio is capacity's: it is
    /// reported with capacity's outcome and adds no hypothesis to Holm's family.
    #[test]
    fn the_same_production_load_reports_capacitys_ratio_once() {
        let phase = soak(11, SHAPE);
        let (mut base, mut head) = (figures(phase.clone()), figures(phase));
        base.knee = knee(40.0, 50.0);
        head.knee = knee(30.0, 35.0);
        let without = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(
            without.headroom, None,
            "no production load, no headroom comparison"
        );
        base.production_sessions_per_sec = Some(20.0);
        head.production_sessions_per_sec = Some(20.0);
        let with = compare_with(&base, &head, &gate(), &fast_options());
        let h = with.headroom.clone().expect("compared");
        let capacity = with
            .metrics
            .iter()
            .find(|m| m.metric == Metric::Capacity)
            .unwrap();
        assert!(h.same_as_capacity);
        assert_eq!(
            (h.estimate, h.low, h.high, h.outcome),
            (
                capacity.estimate,
                capacity.low,
                capacity.high,
                capacity.outcome
            )
        );
        assert_eq!(h.outcome, MetricOutcome::Regression);
        assert!(h.note.contains("judged once, as capacity"), "{}", h.note);
        // The metrics, their Holm levels and the verdict are those without it.
        assert_eq!(with.metrics, without.metrics);
        assert_eq!(with.verdict, without.verdict);
    }

    /// With different production loads the knee brackets are taken over each side's, by
    /// capacity's rule: the same capacity at half the production load is twice the headroom.
    #[test]
    fn different_production_loads_judge_the_headroom_by_capacitys_rule_and_only_warn() {
        let phase = soak(12, SHAPE);
        let (mut base, mut head) = (figures(phase.clone()), figures(phase));
        base.knee = knee(40.0, 50.0);
        head.knee = knee(40.0, 50.0);
        base.production_sessions_per_sec = Some(20.0);
        head.production_sessions_per_sec = Some(40.0);
        let c = compare_with(&base, &head, &gate(), &fast_options());
        let h = c.headroom.clone().expect("compared");
        assert!(!h.same_as_capacity);
        // Head headroom [1, 1.25) over base headroom [2, 2.5): at most 0.625.
        assert_eq!(h.outcome, MetricOutcome::Regression, "{h:#?}");
        assert!(h.high.unwrap() <= 0.625 + 1e-9, "{h:#?}");
        // The same brackets: capacity's own ratio [0.8, 1.25] does not regress.
        assert_ne!(
            crate::compare::testkit::outcome_of(&c, Metric::Capacity, None),
            MetricOutcome::Regression
        );
        assert_ne!(
            c.verdict.outcome,
            VerdictOutcome::Regression,
            "it only warns"
        );
        assert!(
            c.verdict
                .warnings
                .iter()
                .any(|w| w.starts_with("headroom regressed against the baseline's")),
            "{:#?}",
            c.verdict
        );
    }
}
