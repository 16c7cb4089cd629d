//! Intended changes (issue 18): a `Loadgate-Accept` trailer on the head's commits, or an
//! `[[accept]]` entry of the config naming one of them, says that a metric is meant to change by
//! up to an amount. The accepted amount replaces the `[gate]` threshold of the metrics it names,
//! so a change within it passes as **accepted** and a change beyond it is still a regression.
//!
//! This module owns the grammar (what a trailer's value may say), the application of accepts to
//! the drafts before Holm's family is tested, the outcome of an accepted metric, and the warnings
//! about accepts that were not needed. Reading the trailers from git is `baseline`'s; gathering the
//! accepts of a run is the CLI's (`cli/gate.rs`). The grammar is documented in docs/baselines.md.

use super::estimate::Draft;
use crate::config::{format_number, format_percent, format_size_rate, parse_size_rate};
use crate::result::{AcceptedChange, Metric, MetricComparison, MetricOutcome, Scale};

/// The trailer key that accepts a change.
pub const ACCEPT_TRAILER: &str = "Loadgate-Accept";
/// The trailer key that gives the reason of the accepts of its commit.
pub const REASON_TRAILER: &str = "Loadgate-Reason";

/// What an accept covers.
#[derive(Clone, Debug, PartialEq)]
pub enum AcceptScope {
    /// `all`: any change of every metric.
    All,
    /// One metric: of every operation (`p99`), or of one (`p99 of login`).
    Metric {
        /// The metric, named as results name it (`p50`, `p99`, `error-rate`, `capacity`,
        /// `rss-slope`).
        metric: Metric,
        /// The operation; `None` for the figure of all operations and every operation's own.
        operation: Option<String>,
    },
}

/// One intended change, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Accept {
    /// What it covers.
    pub scope: AcceptScope,
    /// The accepted change on the metric's own terms: a relative increase for p50 and p99 (0.3 is
    /// +30%), a relative loss for capacity (0.1 is −10%), an absolute increase for the error rate
    /// (a fraction: 0.01 is +1 percentage point) and for the RSS slope (bytes per second); 0 for
    /// [`AcceptScope::All`].
    pub amount: f64,
    /// Where it was written, for people: the trailer as written with its commit, or the config
    /// entry with its file and line.
    pub source: String,
    /// Why the change is intended.
    pub reason: String,
}

/// The metric names an accept may use: the names results write ([`Metric::as_str`]).
const METRICS: [Metric; 5] = [
    Metric::P50,
    Metric::P99,
    Metric::ErrorRate,
    Metric::Capacity,
    Metric::RssSlope,
];

/// Reads a metric's name as results write it.
pub fn parse_metric(word: &str) -> Result<Metric, String> {
    METRICS
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(word))
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|m| m.as_str()).collect();
            format!(
                "unknown metric `{word}`; expected `all`, {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Reads the accepted change of `metric`, written with its sign on the metric's bad side:
/// `+30%` for p50 and p99, `-10%` for capacity, `+1pp` (or `+1%`, percentage points as
/// `[gate] error-rate` writes them) for the error rate, `+2MiB/min` for the RSS slope.
pub fn parse_change(metric: Metric, text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (sign, rest) = match text.chars().next() {
        Some(c @ ('+' | '-')) => (c, &text[1..]),
        _ => {
            return Err(format!(
                "the change `{text}` has no sign; write e.g. `{}`",
                example(metric)
            ));
        }
    };
    let bad = if metric == Metric::Capacity { '-' } else { '+' };
    if sign != bad {
        return Err(format!(
            "an accepted change of {} is {}, written `{}`: `{text}` would accept an improvement, \
             which needs no accept",
            metric.as_str(),
            if bad == '+' { "an increase" } else { "a loss" },
            example(metric)
        ));
    }
    let amount = match metric {
        Metric::RssSlope => parse_size_rate(rest)?,
        Metric::ErrorRate => {
            let number = rest
                .strip_suffix("pp")
                .or_else(|| rest.strip_suffix('%'))
                .ok_or_else(|| {
                    format!(
                        "the change `{text}` needs a unit; write e.g. `{}`",
                        example(metric)
                    )
                })?;
            percent(number, text, metric)? / 100.0
        }
        _ => {
            let number = rest.strip_suffix('%').ok_or_else(|| {
                format!(
                    "the change `{text}` needs `%`; write e.g. `{}`",
                    example(metric)
                )
            })?;
            percent(number, text, metric)? / 100.0
        }
    };
    if !(amount.is_finite() && amount > 0.0) {
        return Err(format!("the change `{text}` must be more than zero"));
    }
    if metric == Metric::Capacity && amount >= 1.0 {
        return Err(format!(
            "the change `{text}` accepts losing all capacity; write a loss below 100%"
        ));
    }
    Ok(amount)
}

fn percent(number: &str, text: &str, metric: Metric) -> Result<f64, String> {
    number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("`{text}` is not a change; write e.g. `{}`", example(metric)))
}

fn example(metric: Metric) -> &'static str {
    match metric {
        Metric::P50 | Metric::P99 => "+15%",
        Metric::Capacity => "-10%",
        Metric::ErrorRate => "+0.5pp",
        Metric::RssSlope => "+2MiB/min",
    }
}

/// Parses the value of a `Loadgate-Accept` trailer: `all`, or `<metric> [of <operation>]
/// <change>` (`p99 +15%`, `capacity -10%`, `p50 of login +20%`). Returns what it covers and the
/// amount ([`Accept::amount`]).
pub fn parse_accept(value: &str) -> Result<(AcceptScope, f64), String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        [] => Err("it is empty; write e.g. `p99 +15%` or `all`".to_owned()),
        [all] if all.eq_ignore_ascii_case("all") => Ok((AcceptScope::All, 0.0)),
        [all, ..] if all.eq_ignore_ascii_case("all") => {
            Err("`all` takes no operation or amount: it accepts any change".to_owned())
        }
        [metric] => {
            let metric = parse_metric(metric)?;
            Err(format!(
                "no amount; write e.g. `{} {}`",
                metric.as_str(),
                example(metric)
            ))
        }
        [metric, change] => {
            let metric = parse_metric(metric)?;
            Ok((
                AcceptScope::Metric {
                    metric,
                    operation: None,
                },
                parse_change(metric, change)?,
            ))
        }
        [metric, of, operation, change] if of.eq_ignore_ascii_case("of") => {
            let metric = parse_metric(metric)?;
            check_operation(metric)?;
            Ok((
                AcceptScope::Metric {
                    metric,
                    operation: Some((*operation).to_owned()),
                },
                parse_change(metric, change)?,
            ))
        }
        _ => Err(
            "expected `<metric> <change>`, `<metric> of <operation> <change>` or `all`".to_owned(),
        ),
    }
}

/// Only latencies are compared per operation.
pub fn check_operation(metric: Metric) -> Result<(), String> {
    if matches!(metric, Metric::P50 | Metric::P99) {
        Ok(())
    } else {
        Err(format!(
            "{} is not compared per operation; only p50 and p99 take `of <operation>`",
            metric.as_str()
        ))
    }
}

/// An accept's amount for people, on its metric's terms: `+30%`, `-10%`, `+1pp`, `+2MiB/min`.
pub fn format_amount(metric: Metric, amount: f64) -> String {
    match metric {
        Metric::Capacity => format!("-{}", format_percent(amount)),
        Metric::ErrorRate => format!("+{}pp", format_number(amount * 100.0)),
        Metric::RssSlope => format!("+{}", format_size_rate(amount)),
        Metric::P50 | Metric::P99 => format!("+{}", format_percent(amount)),
    }
}

impl Accept {
    /// Whether this accept covers the metric `metric` of `operation`.
    fn covers(&self, metric: Metric, operation: Option<&str>) -> bool {
        match &self.scope {
            AcceptScope::All => true,
            AcceptScope::Metric {
                metric: m,
                operation: None,
            } => *m == metric,
            AcceptScope::Metric {
                metric: m,
                operation: Some(op),
            } => *m == metric && operation == Some(op.as_str()),
        }
    }
}

/// What a draft carries of the accepts that cover it, until it is classified.
#[derive(Clone, Debug)]
pub(super) struct DraftAccept {
    /// An `all` accept covers it.
    all: bool,
    /// The threshold's δ before the accepted amount replaced it.
    gate_delta: f64,
    sources: Vec<String>,
    reasons: Vec<String>,
}

/// Applies `accepts` to `draft`: the combined amount of the accepts that cover it replaces its δ
/// where it is larger (an accept never makes the gate stricter); several accepts of one metric
/// add up (ratios multiply: +10% and +10% accept +21%). Under an `all` accept δ is kept (the
/// outcome is settled after classification, [`settle`]).
pub(super) fn apply(draft: &mut Draft, accepts: &[Accept]) {
    let covering: Vec<&Accept> = accepts
        .iter()
        .filter(|a| a.covers(draft.metric, draft.operation.as_deref()))
        .collect();
    if covering.is_empty() {
        return;
    }
    let all = covering.iter().any(|a| a.scope == AcceptScope::All);
    let gate_delta = draft.delta;
    if !all {
        let amounts = covering.iter().map(|a| a.amount);
        let combined = match (draft.metric, draft.scale()) {
            (Metric::Capacity, _) => 1.0 - amounts.map(|a| 1.0 - a).product::<f64>(),
            (_, Scale::Ratio) => amounts.map(|a| 1.0 + a).product::<f64>() - 1.0,
            (_, Scale::Difference) => amounts.sum(),
        };
        draft.delta = draft.delta.max(combined);
    }
    draft.accept = Some(DraftAccept {
        all,
        gate_delta,
        sources: covering.iter().map(|a| a.source.clone()).collect(),
        reasons: covering.iter().map(|a| a.reason.clone()).collect(),
    });
}

/// Whether an `all` accept covers the draft: then it is no hypothesis of Holm's family (any
/// change of it is accepted).
pub(super) fn accepts_all(draft: &Draft) -> bool {
    draft.accept.as_ref().is_some_and(|a| a.all)
}

/// The outcome of a metric an accept covers, from its outcome under the accepted threshold, and
/// what the document records of the accept. A metric whose interval lies within its `[gate]`
/// threshold passed without the accept (it stays a pass, and [`warnings`] says the accept was
/// not needed); one within the accepted amount only is **accepted**; one beyond it stays a
/// regression. An `all` accept turns a regression or an inconclusive interval into accepted. A
/// metric without an estimate, or whose phase's precondition failed (`judged` false), stays
/// inconclusive.
pub(super) fn settle(
    accept: DraftAccept,
    metric: Metric,
    scale: Scale,
    (low, high): (Option<f64>, Option<f64>),
    judged: bool,
    outcome: MetricOutcome,
) -> (MetricOutcome, AcceptedChange) {
    let gate_threshold = threshold_of(metric, scale, accept.gate_delta);
    let within_gate = match (metric, scale) {
        (Metric::Capacity, _) => low.is_some_and(|l| l > gate_threshold),
        _ => high.is_some_and(|h| h < gate_threshold),
    };
    let outcome = match outcome {
        _ if !judged => outcome,
        MetricOutcome::Regression | MetricOutcome::Inconclusive if accept.all => {
            MetricOutcome::Accepted
        }
        MetricOutcome::Pass | MetricOutcome::Improvement if !within_gate => MetricOutcome::Accepted,
        other => other,
    };
    (
        outcome,
        AcceptedChange {
            sources: accept.sources,
            reasons: accept.reasons,
            all: accept.all,
            gate_threshold,
        },
    )
}

/// Where the bad side begins for δ, on the estimate's scale (as `MetricComparison::threshold`).
pub(super) fn threshold_of(metric: Metric, scale: Scale, delta: f64) -> f64 {
    match (metric, scale) {
        (Metric::Capacity, _) => 1.0 - delta,
        (_, Scale::Ratio) => 1.0 + delta,
        (_, Scale::Difference) => delta,
    }
}

/// The warnings about `accepts`: one that covers no compared metric, and one that was not needed
/// because every metric it covers passed within its `[gate]` threshold (so stale accepts do not
/// pile up). An accept of a metric that could not be judged is not warned of.
pub(super) fn warnings(metrics: &[MetricComparison], accepts: &[Accept]) -> Vec<String> {
    let mut out = Vec::new();
    for accept in accepts {
        let covered: Vec<&MetricComparison> = metrics
            .iter()
            .filter(|m| accept.covers(m.metric, m.operation.as_deref()))
            .collect();
        if covered.is_empty() {
            out.push(format!(
                "accept {} covers no compared metric; nothing was accepted by it",
                accept.source
            ));
            continue;
        }
        let unneeded = covered
            .iter()
            .all(|m| matches!(m.outcome, MetricOutcome::Pass | MetricOutcome::Improvement));
        if unneeded {
            let names: Vec<String> = covered
                .iter()
                .map(|m| super::format::metric_name(m))
                .collect();
            out.push(format!(
                "accept {} was not needed: {} passed within the [gate] threshold without it; \
                 remove it so that stale accepts do not pile up",
                accept.source,
                names.join(", ")
            ));
        }
    }
    out
}

/// What the verdict says of an accepted metric: `p50 (all operations) +20.0% within the accepted
/// +30.0%`, or `p50 (all operations) +80.0% (accepted: all)`.
pub fn accepted_phrase(m: &MetricComparison) -> String {
    let name = super::format::metric_name(m);
    let change = super::format::format_change(m, m.estimate);
    match &m.accepted {
        Some(a) if a.all => format!("{name} {change} (accepted: all)"),
        _ => format!(
            "{name} {change} within the accepted {}",
            super::format::format_threshold(m)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("p99 +15%", Metric::P99, None, 0.15; "p99")]
    #[test_case("capacity -10%", Metric::Capacity, None, 0.10; "capacity")]
    #[test_case("p50 of login +20%", Metric::P50, Some("login"), 0.20; "per operation")]
    #[test_case("error-rate +0.5pp", Metric::ErrorRate, None, 0.005; "error rate in points")]
    #[test_case("error-rate +1%", Metric::ErrorRate, None, 0.01; "error rate in percent")]
    #[test_case("rss-slope +2MiB/min", Metric::RssSlope, None, 2.0 * 1024.0 * 1024.0 / 60.0; "rss slope")]
    #[test_case("  P99   +7.5% ", Metric::P99, None, 0.075; "case and spaces")]
    fn the_grammar_reads(value: &str, metric: Metric, operation: Option<&str>, amount: f64) {
        let (scope, got) = parse_accept(value).expect("valid");
        assert_eq!(
            scope,
            AcceptScope::Metric {
                metric,
                operation: operation.map(str::to_owned)
            }
        );
        assert!((got - amount).abs() < 1e-12, "{got} vs {amount}");
    }

    #[test]
    fn all_accepts_every_metric() {
        assert_eq!(parse_accept("all"), Ok((AcceptScope::All, 0.0)));
        assert_eq!(parse_accept("ALL"), Ok((AcceptScope::All, 0.0)));
    }

    // Each malformed value is refused with what was expected; nothing of it is accepted.
    #[test_case("", "it is empty; write e.g. `p99 +15%` or `all`"; "empty")]
    #[test_case("p99 15%", "the change `15%` has no sign; write e.g. `+15%`"; "no sign")]
    #[test_case("p99 -15%", "an accepted change of p99 is an increase, written `+15%`: `-15%` would accept an improvement, which needs no accept"; "wrong side")]
    #[test_case("capacity +10%", "an accepted change of capacity is a loss, written `-10%`: `+10%` would accept an improvement, which needs no accept"; "capacity gain")]
    #[test_case("latency +10%", "unknown metric `latency`; expected `all`, `p50`, `p99`, `error-rate`, `capacity`, `rss-slope`"; "unknown metric")]
    #[test_case("p99 +abc%", "`+abc%` is not a change; write e.g. `+15%`"; "not a number")]
    #[test_case("p99 +15", "the change `+15` needs `%`; write e.g. `+15%`"; "no unit")]
    #[test_case("p99 +0%", "the change `+0%` must be more than zero"; "zero")]
    #[test_case("capacity -100%", "the change `-100%` accepts losing all capacity; write a loss below 100%"; "all capacity")]
    #[test_case("p99", "no amount; write e.g. `p99 +15%`"; "no amount")]
    #[test_case("all +10%", "`all` takes no operation or amount: it accepts any change"; "all with amount")]
    #[test_case("capacity of login -10%", "capacity is not compared per operation; only p50 and p99 take `of <operation>`"; "capacity per operation")]
    #[test_case("p50 for login +20%", "expected `<metric> <change>`, `<metric> of <operation> <change>` or `all`"; "no of")]
    fn a_malformed_value_is_refused(value: &str, message: &str) {
        assert_eq!(parse_accept(value), Err(message.to_owned()));
    }

    use crate::compare::CompareOptions;
    use crate::compare::compare_with;
    use crate::compare::testkit::{SHAPE, Shape, fast_options, figures, gate, outcome_of, soak};
    use crate::result::VerdictOutcome;

    fn accept(value: &str) -> Accept {
        let (scope, amount) = parse_accept(value).expect("valid");
        Accept {
            scope,
            amount,
            source: format!("`Loadgate-Accept: {value}` in 3f2a91c"),
            reason: "a new feature".to_owned(),
        }
    }

    fn with(accepts: &[&str]) -> CompareOptions {
        CompareOptions {
            accepts: accepts.iter().map(|a| accept(a)).collect(),
            ..fast_options()
        }
    }

    /// A longer soak than the usual, so that p99's interval can show it within 10%.
    const LONG: Shape = Shape {
        windows: 60,
        per_window: 400,
        ..SHAPE
    };

    /// Every latency `factor` times slower but the slow path's extra shortened to match (a body
    /// near 3 ms and 20 ms more on the slow path, which makes p99): p50 changes by `factor`, p99
    /// stays near where it was.
    fn slower_p50(seed: u64, factor: f64) -> crate::compare::RunFigures {
        figures(soak(
            seed,
            Shape {
                scale: factor,
                tail: ((3.0 + 20.0) / factor - 3.0) / 20.0,
                ..LONG
            },
        ))
    }

    /// Issue 18's goal: a head with `Loadgate-Accept: p50 +30%` and a +20% change passes,
    /// showing "accepted"; with +50% it is a regression against the accepted amount.
    #[test]
    fn accepting_p50_plus_30_passes_plus_20_and_not_plus_50() {
        for seed in 0..10 {
            let base = figures(soak(100 + seed, LONG));
            let head = slower_p50(200 + seed, 1.2);
            // Without the accept, +20% is a regression of p50.
            let c = compare_with(&base, &head, &gate(), &fast_options());
            assert_eq!(outcome_of(&c, Metric::P50, None), MetricOutcome::Regression);

            let c = compare_with(&base, &head, &gate(), &with(&["p50 +30%"]));
            assert_eq!(
                c.verdict.outcome,
                VerdictOutcome::Pass,
                "seed {seed}: {}",
                c.verdict.rule_fired
            );
            let p50 = c
                .metrics
                .iter()
                .find(|m| m.metric == Metric::P50 && m.operation.is_none())
                .unwrap();
            assert_eq!(p50.outcome, MetricOutcome::Accepted, "{p50:?}");
            assert!((p50.threshold - 1.3).abs() < 1e-12);
            let a = p50.accepted.as_ref().expect("the accept is recorded");
            assert!((a.gate_threshold - 1.05).abs() < 1e-12);
            assert_eq!(a.sources, ["`Loadgate-Accept: p50 +30%` in 3f2a91c"]);
            // Each operation's p50 rose too; the accept covers them.
            assert_eq!(
                outcome_of(&c, Metric::P50, Some("fast")),
                MetricOutcome::Accepted
            );
            assert!(
                c.verdict
                    .rule_fired
                    .contains("; accepted: p50 (all operations) +"),
                "{}",
                c.verdict.rule_fired
            );
            assert!(
                c.verdict.rule_fired.contains("within the accepted +30.0%"),
                "{}",
                c.verdict.rule_fired
            );
            assert!(
                c.verdict.warnings.iter().all(|w| !w.contains("accept")),
                "{:?}",
                c.verdict.warnings
            );

            // +50% lies beyond the accepted +30%: still a regression, judged against it.
            let head = slower_p50(300 + seed, 1.5);
            let c = compare_with(&base, &head, &gate(), &with(&["p50 +30%"]));
            assert_eq!(c.verdict.outcome, VerdictOutcome::Regression, "{c:#?}");
            assert_eq!(outcome_of(&c, Metric::P50, None), MetricOutcome::Regression);
            assert!(
                c.verdict
                    .rule_fired
                    .starts_with("regression: p50 (all operations) changed +")
                    && c.verdict.rule_fired.contains(
                        "against the accepted +30.0% (`Loadgate-Accept: p50 +30%` in 3f2a91c)"
                    ),
                "{}",
                c.verdict.rule_fired
            );
        }
    }

    #[test]
    fn accepts_of_one_metric_add_up_and_never_make_the_gate_stricter() {
        let base = figures(soak(1, SHAPE));
        let head = slower_p50(2, 1.2);
        // +10% twice is +21%: the ratios multiply.
        let c = compare_with(&base, &head, &gate(), &with(&["p50 +10%", "p50 +10%"]));
        let p50 = c.metrics.iter().find(|m| m.metric == Metric::P50).unwrap();
        assert!((p50.threshold - 1.21).abs() < 1e-12, "{}", p50.threshold);
        assert_eq!(p50.accepted.as_ref().unwrap().sources.len(), 2);
        // An amount below the [gate] threshold keeps the threshold.
        let c = compare_with(&base, &head, &gate(), &with(&["p50 +1%"]));
        let p50 = c.metrics.iter().find(|m| m.metric == Metric::P50).unwrap();
        assert!((p50.threshold - 1.05).abs() < 1e-12);
        // Per operation: only that operation's p50.
        let c = compare_with(&base, &head, &gate(), &with(&["p50 of slow +30%"]));
        assert_eq!(
            outcome_of(&c, Metric::P50, Some("slow")),
            MetricOutcome::Accepted
        );
        assert_eq!(outcome_of(&c, Metric::P50, None), MetricOutcome::Regression);
    }

    #[test]
    fn an_accept_of_a_metric_that_did_not_change_is_a_warning() {
        // A run compared with itself: every interval lies within the [gate] thresholds.
        let base = figures(soak(3, SHAPE));
        let head = base.clone();
        let c = compare_with(
            &base,
            &head,
            &gate(),
            &with(&["p50 +30%", "p50 of nowhere +5%"]),
        );
        assert_eq!(outcome_of(&c, Metric::P50, None), MetricOutcome::Pass);
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass, "{c:#?}");
        let warned: Vec<&String> = c
            .verdict
            .warnings
            .iter()
            .filter(|w| w.starts_with("accept "))
            .collect();
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert!(
            warned[0].starts_with(
                "accept `Loadgate-Accept: p50 +30%` in 3f2a91c was not needed: p50 (all \
                 operations), p50 of `fast`, p50 of `slow` passed within the [gate] threshold"
            ),
            "{}",
            warned[0]
        );
        assert_eq!(
            warned[1],
            "accept `Loadgate-Accept: p50 of nowhere +5%` in 3f2a91c covers no compared metric; \
             nothing was accepted by it"
        );
    }

    #[test]
    fn all_accepts_any_change_of_every_metric() {
        let base = figures(soak(5, SHAPE));
        let head = figures(soak(
            6,
            Shape {
                scale: 3.0,
                ..SHAPE
            },
        ));
        let c = compare_with(&base, &head, &gate(), &fast_options());
        assert_eq!(c.verdict.outcome, VerdictOutcome::Regression);
        let c = compare_with(&base, &head, &gate(), &with(&["all"]));
        assert_eq!(c.verdict.outcome, VerdictOutcome::Pass, "{c:#?}");
        for metric in [Metric::P50, Metric::P99] {
            let m = c.metrics.iter().find(|m| m.metric == metric).unwrap();
            assert_eq!(m.outcome, MetricOutcome::Accepted, "{m:?}");
            // The threshold shown stays the [gate] one.
            assert_eq!(
                Some(m.threshold),
                m.accepted.as_ref().map(|a| a.gate_threshold)
            );
        }
        assert!(
            c.verdict.rule_fired.contains("(accepted: all)"),
            "{}",
            c.verdict.rule_fired
        );
    }

    #[test]
    fn amounts_are_written_back_as_accepted() {
        assert_eq!(format_amount(Metric::P50, 0.3), "+30%");
        assert_eq!(format_amount(Metric::Capacity, 0.1), "-10%");
        assert_eq!(format_amount(Metric::ErrorRate, 0.005), "+0.5pp");
    }
}
