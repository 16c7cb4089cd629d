//! The probes' gate checks: each `[[probe]] limits` entry against what the probe measured. A
//! gauge's check reads its largest sample, a counter's its increase over the run (`deadlocks = 0`:
//! no deadlock during the run). A failed check makes the verdict a regression (exit 10), whatever
//! the baseline says: a limit is absolute, like the SLO, not a comparison.

use crate::config::ProbeConfig;
use crate::measure::probe::{ProbeRecord, ProbeStatus, SeriesKind};
use crate::result::{Comparison, ProbeCheck, RunResult, Verdict, VerdictOutcome};

/// Every limit of `probes`, judged against the `records` of the run (matched by name).
pub fn probe_checks(probes: &[ProbeConfig], records: &[ProbeRecord]) -> Vec<ProbeCheck> {
    let mut checks = Vec::new();
    for probe in probes {
        let record = records.iter().find(|r| r.name == probe.name);
        for (series, &limit) in &probe.limits {
            let label = format!("{}.{series}", probe.name);
            let limit_text = crate::measure::probe::format_value(limit);
            let check = |value: Option<f64>, passed: bool, message: String| ProbeCheck {
                probe: probe.name.clone(),
                series: series.clone(),
                limit,
                value,
                passed,
                message,
            };
            let Some(record) = record.filter(|r| r.status == ProbeStatus::Sampled) else {
                let why = record
                    .and_then(|r| r.missing.clone())
                    .unwrap_or_else(|| "the probe did not run".to_owned());
                checks.push(check(
                    None,
                    false,
                    format!("{label} cannot be checked (limit {limit_text}): {why}"),
                ));
                continue;
            };
            let (value, what) = match record.series.get(series) {
                Some(SeriesKind::Counter) => (record.totals.get(series).copied(), "rose by"),
                Some(SeriesKind::Gauge) => (record.max(series), "reached"),
                None => (None, ""),
            };
            checks.push(match value {
                None if record.unseen.contains(series) => check(
                    None,
                    false,
                    format!(
                        "{label} cannot be checked (limit {limit_text}): no scrape of `{}` \
                         exposed it",
                        record.dependency
                    ),
                ),
                None => check(
                    None,
                    false,
                    format!(
                        "{label} has no sample to check (limit {limit_text}){}",
                        record
                            .last_error
                            .as_ref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    ),
                ),
                // Seconds whose sample failed were not seen: what they held is unknown, so a
                // value within the limit cannot pass (one beyond it was seen, and fails).
                Some(v) if record.sample_errors > 0 && v <= limit => check(
                    Some(v),
                    false,
                    format!(
                        "{label} {what} {} in the samples taken, but {} sample(s) failed{}: it \
                         cannot be checked (limit {limit_text})",
                        crate::measure::probe::format_value(v),
                        record.sample_errors,
                        record
                            .last_error
                            .as_ref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ),
                ),
                Some(v) => check(
                    Some(v),
                    v <= limit,
                    format!(
                        "{label} {what} {} during the run (limit {limit_text})",
                        crate::measure::probe::format_value(v)
                    ),
                ),
            });
        }
    }
    checks
}

/// Settles `verdict`, and the comparison's copy of it, by the head's probe limits
/// (`head.probe_checks`): a failed check makes it a regression naming the checks, and the rule it
/// replaces goes first among the warnings; a regression's rule gains them. Checks that held leave
/// it as it is.
pub fn settle_probe_checks(
    head: &RunResult,
    comparison: Option<&mut Comparison>,
    verdict: &mut Verdict,
) {
    if apply_probe_checks(verdict, &head.probe_checks)
        && let Some(c) = comparison
    {
        c.verdict = verdict.clone();
    }
}

/// [`settle_probe_checks`] on `checks`; whether any failed (and so changed the verdict).
fn apply_probe_checks(verdict: &mut Verdict, checks: &[ProbeCheck]) -> bool {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.message.as_str())
        .collect();
    if failed.is_empty() {
        return false;
    }
    let rule = format!("probe limit: {}", failed.join("; "));
    if verdict.outcome == VerdictOutcome::Regression {
        verdict.rule_fired = format!("{}; and {rule}", verdict.rule_fired);
    } else {
        let before = std::mem::replace(&mut verdict.rule_fired, format!("regression: {rule}"));
        verdict
            .warnings
            .insert(0, format!("before the probe limits: {before}"));
        verdict.outcome = VerdictOutcome::Regression;
        verdict.metrics.clear();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProbeKind;
    use crate::measure::probe::{POSTGRES_SERIES, ProbeRecorder};
    use std::collections::BTreeMap;

    fn probe(limits: &[(&str, f64)]) -> ProbeConfig {
        ProbeConfig {
            name: "db".to_owned(),
            kind: ProbeKind::Postgres,
            dependency: Some("db".to_owned()),
            path: None,
            url: None,
            series: Vec::new(),
            limits: limits.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            location: String::new(),
        }
    }

    fn reading(waiting: f64, deadlocks: f64) -> Vec<f64> {
        POSTGRES_SERIES
            .iter()
            .map(|s| match s.name {
                "connections_waiting" => waiting,
                "deadlocks" => deadlocks,
                _ => 0.0,
            })
            .collect()
    }

    #[test]
    fn a_counter_is_held_to_its_increase_and_a_gauge_to_its_largest_sample() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
        r.push(0.0, &reading(1.0, 7.0));
        r.push(1.0, &reading(6.0, 7.0));
        r.push(2.0, &reading(2.0, 9.0));
        let records = [r.finish()];
        let checks = probe_checks(
            &[probe(&[("deadlocks", 0.0), ("connections_waiting", 6.0)])],
            &records,
        );
        let by: BTreeMap<&str, &ProbeCheck> =
            checks.iter().map(|c| (c.series.as_str(), c)).collect();
        assert!(!by["deadlocks"].passed);
        assert_eq!(by["deadlocks"].value, Some(2.0));
        assert_eq!(
            by["deadlocks"].message,
            "db.deadlocks rose by 2 during the run (limit 0)"
        );
        assert!(by["connections_waiting"].passed);
        assert_eq!(by["connections_waiting"].value, Some(6.0));

        let mut verdict = Verdict {
            outcome: VerdictOutcome::NoBaseline,
            rule_fired: "no baseline".to_owned(),
            metrics: Vec::new(),
            warnings: Vec::new(),
            leak: None,
        };
        assert!(apply_probe_checks(&mut verdict, &checks));
        assert_eq!(verdict.outcome, VerdictOutcome::Regression);
        assert!(verdict.rule_fired.contains("db.deadlocks rose by 2"));
        // The rule it replaced is kept, first among the warnings.
        assert_eq!(verdict.warnings[0], "before the probe limits: no baseline");
        // Checks that all held change nothing.
        let held: Vec<ProbeCheck> = checks.into_iter().filter(|c| c.passed).collect();
        let mut pass = Verdict {
            outcome: VerdictOutcome::Pass,
            rule_fired: "pass".to_owned(),
            metrics: Vec::new(),
            warnings: Vec::new(),
            leak: None,
        };
        assert!(!apply_probe_checks(&mut pass, &held));
        assert_eq!(
            (pass.outcome, pass.rule_fired.as_str()),
            (VerdictOutcome::Pass, "pass")
        );
    }

    #[test]
    fn a_probe_whose_samples_failed_cannot_pass_a_limit_it_seemed_to_hold() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
        r.push(0.0, &reading(0.0, 7.0));
        r.push(1.0, &reading(2.0, 7.0));
        let mut record = r.finish();
        record.sample_errors = 3;
        record.last_error = Some("connection closed".to_owned());
        let checks = probe_checks(
            &[probe(&[("deadlocks", 0.0), ("connections_waiting", 1.0)])],
            &[record],
        );
        let by: BTreeMap<&str, &ProbeCheck> =
            checks.iter().map(|c| (c.series.as_str(), c)).collect();
        // Within the limit in the samples taken, but three seconds were not seen.
        assert!(!by["deadlocks"].passed);
        assert!(
            by["deadlocks"]
                .message
                .contains("3 sample(s) failed (connection closed)"),
            "{}",
            by["deadlocks"].message
        );
        // Beyond the limit in a sample taken: a failure that was seen.
        assert!(!by["connections_waiting"].passed);
        assert!(by["connections_waiting"].message.contains("during the run"));
    }

    /// A limit on a series no scrape exposed cannot pass (a typo in its name must not hold);
    /// one on a counter that showed up during the run is held to its whole count.
    #[test]
    fn a_series_no_scrape_exposed_fails_its_limit() {
        use crate::measure::probe::SeriesKind;
        let mut r = ProbeRecorder::new("metrics", "prometheus", "target", &[]);
        let reading = |errors: Option<f64>| {
            vec![
                ("errors_total".to_owned(), SeriesKind::Counter, errors),
                ("eror_total".to_owned(), SeriesKind::Counter, None),
            ]
        };
        r.push_named(0.0, &reading(None));
        r.push_named(1.0, &reading(Some(2.0)));
        r.never_read(&["errors_total".to_owned(), "eror_total".to_owned()]);
        let mut config = probe(&[("errors_total", 0.0), ("eror_total", 0.0)]);
        config.name = "metrics".to_owned();
        let checks = probe_checks(&[config], &[r.finish()]);
        let by: BTreeMap<&str, &ProbeCheck> =
            checks.iter().map(|c| (c.series.as_str(), c)).collect();
        assert!(!by["errors_total"].passed);
        assert_eq!(by["errors_total"].value, Some(2.0));
        assert!(!by["eror_total"].passed);
        assert_eq!(
            by["eror_total"].message,
            "metrics.eror_total cannot be checked (limit 0): no scrape of `target` exposed it"
        );
    }

    #[test]
    fn a_missing_probe_fails_its_checks_with_the_reason() {
        let records = [ProbeRecord::missing(
            "db",
            "postgres",
            "db",
            "cannot connect: refused".to_owned(),
        )];
        let checks = probe_checks(&[probe(&[("deadlocks", 0.0)])], &records);
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].passed);
        assert_eq!(checks[0].value, None);
        assert!(checks[0].message.contains("cannot connect: refused"));
    }
}
