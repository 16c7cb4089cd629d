//! JUnit XML for CI systems: one testsuite per phase, one testcase per gate check.
//!
//! A regression is a `failure` whose message carries base, head, change, interval and threshold; an
//! inconclusive check is `skipped` with the reason; a phase that could not keep its schedule is an
//! `error`. A leak finding fails only when the verdict counts it (`verdict.leak`), else it is
//! `skipped` with why not, and the `[slo] headroom` check is a case of the ramp's suite that
//! fails, passes or is skipped as `compare::headroom` decided: JUnit decides nothing of its own. Properties hold the commits, the
//! profile, the environment and the measurement mode (`stored` or `paired`; a paired run adds its
//! base and the pairs it used). The XML is written with nextest's `quick-junit`, which escapes
//! markup and drops characters XML cannot carry.

use crate::compare::{format_change, metric_name, threshold_phrase};
use crate::config::format_factor;
use crate::plan::RecoveryCheckOutcome;
use crate::result::{AuditStatus, BaseSource, HeadroomOutcome, MeasurementMode, RunResult};
use crate::result::{Metric, MetricComparison, MetricOutcome, VerdictOutcome};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::path::Path;

/// Builds the JUnit report of a finished (or interrupted) run.
pub fn junit_report(result: &RunResult) -> Report {
    let mut report = Report::new("cargo-loadgate");
    let properties = properties(result);

    let mut generator = TestSuite::new("generator");
    generator.add_properties(properties.clone());
    for phase in &result.phases {
        let m = &phase.measurement;
        let name = format!("{} kept its schedule", m.name);
        let step = result
            .ramp
            .as_ref()
            .filter(|ramp| ramp.excuses(&m.name))
            .and_then(|ramp| ramp.steps.iter().find(|s| s.phase == m.name));
        let case = if m.validity.is_valid() {
            TestCase::new(name, TestCaseStatus::success())
        } else if let Some(step) = step {
            // Excused: the generator's limit bounds the knee, or a re-measurement replaced it.
            let why = step.transient.clone().unwrap_or_else(|| {
                format!(
                    "the generator reached its limit here ({}): the capacity is a lower bound",
                    step.invalid_reasons.join("; ")
                )
            });
            let mut status = TestCaseStatus::skipped();
            status.set_message(why).set_type("not-kept-excused");
            TestCase::new(name, status)
        } else {
            let reasons: Vec<String> = m.validity.reasons.iter().map(ToString::to_string).collect();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_message(format!("invalid phase: {}", reasons.join("; ")))
                .set_type("invalid-run");
            TestCase::new(name, status)
        };
        generator.add_test_case(with_class(case, "generator"));
    }
    report.add_test_suite(generator);

    let mut ramp = TestSuite::new("ramp");
    ramp.add_properties(properties.clone());
    let mut soak = TestSuite::new("soak");
    soak.add_properties(properties.clone());
    if let Some(outcome) = &result.ramp {
        ramp.add_test_case(with_class(
            TestCase::new(
                "capacity found",
                match outcome.knee_rate_per_sec {
                    Some(_) => TestCaseStatus::success(),
                    None => {
                        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        s.set_message(outcome.sentence.clone())
                            .set_type("no-capacity");
                        s
                    }
                },
            ),
            "ramp",
        ));
    }
    // The `[slo] headroom` check as `compare::headroom` decided it: a failure fails the gate.
    if let Some(h) = &result.headroom
        && let (Some(outcome), Some(limit), Some(reason)) = (h.outcome, h.limit, &h.reason)
    {
        let status = match outcome {
            HeadroomOutcome::Pass => TestCaseStatus::success(),
            HeadroomOutcome::Fail => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(format!("regression: {reason}"))
                    .set_type("headroom");
                s
            }
            HeadroomOutcome::Inconclusive => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("inconclusive: {reason}"))
                    .set_type("inconclusive");
                s
            }
        };
        let mut case = TestCase::new(
            format!("headroom at least {}", format_factor(limit)),
            status,
        );
        case.set_system_out(h.statement.clone());
        ramp.add_test_case(with_class(case, "ramp"));
    }
    // The leak finding as the verdict counts it (`compare::record_leak`): a failure only when the
    // verdict is a regression because of it, else skipped with why it is not one.
    if let Some(leak) = result.verdict.as_ref().and_then(|v| v.leak.as_ref()) {
        let status = if leak.regression {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(leak.message.clone()).set_type("leak");
            s
        } else {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("{}; {}", leak.message, leak.reason))
                .set_type("leak");
            s
        };
        soak.add_test_case(with_class(TestCase::new("no leak", status), "soak"));
    }

    match (&result.comparison, &result.verdict) {
        (Some(comparison), _) => {
            for m in &comparison.metrics {
                let case = check_case(m);
                if m.metric == Metric::Capacity {
                    ramp.add_test_case(with_class(case, "ramp"));
                } else {
                    soak.add_test_case(with_class(case, "soak"));
                }
            }
        }
        (None, Some(verdict)) => {
            let mut status = TestCaseStatus::skipped();
            let kind = if verdict.outcome == VerdictOutcome::NoBaseline {
                "no-baseline"
            } else {
                "inconclusive"
            };
            status
                .set_message(verdict.rule_fired.clone())
                .set_type(kind);
            soak.add_test_case(with_class(
                TestCase::new("comparison with the baseline", status),
                "soak",
            ));
        }
        (None, None) => {}
    }
    report.add_test_suite(ramp);
    report.add_test_suite(soak);
    // One case per post-run audit: a failure whatever the latency, as the verdict counts it.
    if !result.audits.is_empty() {
        let mut audit = TestSuite::new("audit");
        audit.add_properties(self::properties(result));
        for outcome in &result.audits {
            let status = if outcome.passed() {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(outcome.statement())
                    .set_type(match outcome.status {
                        AuditStatus::NotRun => "audit-not-run",
                        _ => "audit",
                    });
                s
            };
            let mut case = TestCase::new(format!("audit {}", outcome.name), status);
            case.set_system_out(outcome.statement());
            audit.add_test_case(with_class(case, "audit"));
        }
        report.add_test_suite(audit);
    }
    // The spike's `[slo] recovery` check as `compare::recovery_check` decided it: a failure fails
    // the gate (the verdict is a regression by `compare::settle_recovery`).
    if let Some(spike) = &result.spike
        && let Some(check) = &spike.check
    {
        let mut suite = TestSuite::new("spike");
        let status = recovery_status(check);
        let mut case = TestCase::new(
            format!(
                "time to stable SLO within {}",
                crate::config::format_duration(check.limit)
            ),
            status,
        );
        case.set_system_out(crate::report::spike_sentence(spike));
        suite.add_test_case(with_class(case, "spike"));
        report.add_test_suite(suite);
    }
    // The stress: its before/after comparison (lasting harm fails the gate by
    // `compare::settle_stress`), and its `[slo] recovery` check when a limit is set.
    if let Some(stress) = &result.stress {
        let mut suite = TestSuite::new("stress");
        let status = match stress.harm {
            crate::plan::Harm::Recovered => TestCaseStatus::success(),
            crate::plan::Harm::LastingHarm => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(format!("regression: {}", stress.reason))
                    .set_type("lasting-harm");
                s
            }
            crate::plan::Harm::Inconclusive => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("inconclusive: {}", stress.reason))
                    .set_type("inconclusive");
                s
            }
        };
        let mut case = TestCase::new("no lasting harm after the stress", status);
        case.set_system_out(crate::report::stress_sentence(stress));
        suite.add_test_case(with_class(case, "stress"));
        if let Some(check) = &stress.check {
            let mut case = TestCase::new(
                format!(
                    "time to stable SLO within {}",
                    crate::config::format_duration(check.limit)
                ),
                recovery_status(check),
            );
            case.set_system_out(check.reason.clone());
            suite.add_test_case(with_class(case, "stress"));
        }
        report.add_test_suite(suite);
    }
    // Each `[[fault]]`: verified from its stub's figures (one that was not is skipped: it makes the
    // run inconclusive), and its `[slo] recovery` check when a limit is set.
    if !result.faults.is_empty() {
        let mut suite = TestSuite::new("faults");
        for fault in &result.faults {
            let status = if fault.verified {
                TestCaseStatus::success()
            } else {
                // Not a failure of the service: the experiment did not run as declared, which
                // makes the run inconclusive, as a skipped check.
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "inconclusive: not verified: {}",
                    fault.problem.as_deref().unwrap_or("no figures")
                ))
                .set_type("fault-not-verified");
                s
            };
            let mut case = TestCase::new(format!("fault {} verified", fault.name), status);
            case.set_system_out(fault.statement());
            suite.add_test_case(with_class(case, "faults"));
            if let Some(check) = &fault.check {
                let mut case = TestCase::new(
                    format!(
                        "time to stable SLO after fault {} within {}",
                        fault.name,
                        crate::config::format_duration(check.limit)
                    ),
                    recovery_status(check),
                );
                case.set_system_out(check.reason.clone());
                suite.add_test_case(with_class(case, "faults"));
            }
            if let Some(degraded) = &fault.degraded {
                let status = check_status(degraded.outcome, &degraded.reason, "degraded");
                let mut case = TestCase::new(
                    format!("fault {} within its degraded objective", fault.name),
                    status,
                );
                case.set_system_out(degraded.reason.clone());
                suite.add_test_case(with_class(case, "faults"));
            }
        }
        report.add_test_suite(suite);
    }
    // Each `[[probe]] limits` entry, as `compare::probe_checks` judged it.
    if !result.probe_checks.is_empty() {
        let mut probes = TestSuite::new("probes");
        probes.add_properties(properties);
        for check in &result.probe_checks {
            let status = if check.passed {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(check.message.clone()).set_type("probe-limit");
                s
            };
            let mut case = TestCase::new(
                format!(
                    "{}.{} at most {}",
                    check.probe,
                    check.series,
                    crate::measure::probe::format_value(check.limit)
                ),
                status,
            );
            case.set_system_out(check.message.clone());
            probes.add_test_case(with_class(case, "probes"));
        }
        report.add_test_suite(probes);
    }
    report
}

/// Writes the report to `path` atomically, readable by everyone (0644 minus the umask).
pub fn write_junit(path: &Path, result: &RunResult) -> std::io::Result<()> {
    let xml = junit_report(result)
        .to_string()
        .map_err(std::io::Error::other)?;
    crate::result::write_file_atomic(path, xml.as_bytes())
}

fn check_case(m: &MetricComparison) -> TestCase {
    let detail = format!(
        "base {}, head {}: change {} (interval {} to {}) against {}",
        m.base.map_or_else(|| "?".to_owned(), |v| format!("{v:.6}")),
        m.head.map_or_else(|| "?".to_owned(), |v| format!("{v:.6}")),
        format_change(m, m.estimate),
        format_change(m, m.low),
        format_change(m, m.high),
        threshold_phrase(m),
    );
    let status = match m.outcome {
        // An intended change within its accepted amount passes; its properties name the
        // accept, its system-out says "accepted".
        MetricOutcome::Pass | MetricOutcome::Improvement | MetricOutcome::Accepted => {
            TestCaseStatus::success()
        }
        MetricOutcome::Regression => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("regression: {detail}"))
                .set_type("regression");
            s
        }
        MetricOutcome::Inconclusive => {
            let mut s = TestCaseStatus::skipped();
            let why = m.note.clone().map(|n| format!("; {n}")).unwrap_or_default();
            s.set_message(format!("inconclusive: {detail}{why}"))
                .set_type("inconclusive");
            s
        }
    };
    let mut case = TestCase::new(metric_name(m), status);
    case.set_system_out(if m.outcome == MetricOutcome::Accepted {
        format!("accepted: {detail}")
    } else {
        detail
    });
    if let Some(accepted) = &m.accepted {
        // Every accept that covers the check, also when it was not needed or the change went
        // beyond it: the trailer (or config entry) as written, with its commit.
        for source in &accepted.sources {
            case.add_property(Property::new("loadgate.accept", source.clone()));
        }
        for reason in &accepted.reasons {
            case.add_property(Property::new("loadgate.accept.reason", reason.clone()));
        }
    }
    case
}

fn with_class(mut case: TestCase, class: &str) -> TestCase {
    case.set_classname(format!("loadgate.{class}"));
    case
}

fn properties(result: &RunResult) -> Vec<Property> {
    let mut props = vec![
        Property::new("profile", result.profile.clone()),
        Property::new("config_hash", result.config_hash.clone()),
        Property::new("cpu_model", result.environment.cpu_model.clone()),
        Property::new("cores", result.environment.cores.to_string()),
        Property::new("tool_version", result.tool.version.clone()),
    ];
    if let Some(git) = &result.git {
        props.push(Property::new("head_commit", git.commit.clone()));
        props.push(Property::new("head_dirty", git.dirty.to_string()));
    }
    if let Some(base) = &result.baseline {
        props.push(Property::new("base_commit", base.commit.clone()));
    }
    // What retries cost (issue 15): per retried operation, over every phase.
    for (name, t) in crate::result::run_tallies(result) {
        if t.attempts > t.logical {
            props.push(Property::new(
                format!("logical.{name}"),
                t.logical.to_string(),
            ));
            props.push(Property::new(
                format!("attempts.{name}"),
                t.attempts.to_string(),
            ));
            props.push(Property::new(
                format!("retries.{name}"),
                (t.attempts - t.logical).to_string(),
            ));
            props.push(Property::new(
                format!("attempts_per_operation.{name}"),
                format!("{:.3}", t.attempts as f64 / t.logical.max(1) as f64),
            ));
        }
    }
    props.push(Property::new(
        "mode",
        match result.mode {
            MeasurementMode::Stored => "stored",
            MeasurementMode::Paired => "paired",
        },
    ));
    if let Some(paired) = &result.paired {
        if let (None, Some(commit)) = (&result.baseline, &paired.base.commit) {
            props.push(Property::new("base_commit", commit.clone()));
        }
        props.push(Property::new(
            "base_source",
            match paired.base.source {
                BaseSource::Built => "built",
                BaseSource::StoredBuild => "stored-build",
                BaseSource::GivenBinary => "given-binary",
                BaseSource::GivenImage => "given-image",
                BaseSource::GivenUrl => "given-url",
                BaseSource::SameAsHead => "same-as-head",
            },
        ));
        props.push(Property::new("base", paired.base.statement.clone()));
        props.push(Property::new(
            "pairs_used",
            paired.used_pairs().count().to_string(),
        ));
        props.push(Property::new("pairs", paired.pairs.len().to_string()));
        props.push(Property::new("paired", paired.describe()));
    }
    if let Some(noise) = result.comparison.as_ref().and_then(|c| c.noise.as_ref()) {
        props.push(Property::new("noise_source", noise.source.word()));
        props.push(Property::new(
            "noise_history_runs",
            noise.history_runs.to_string(),
        ));
        props.push(Property::new(
            "noise_qualify_runs",
            noise.qualify_runs.to_string(),
        ));
        props.push(Property::new(
            "noise_skipped_ancestors",
            noise.skipped.total().to_string(),
        ));
        props.push(Property::new("noise", noise.describe()));
    }
    props
}

/// The JUnit status of a `[slo] recovery` check: a failure fails the gate, an inconclusive one is
/// skipped with why.
fn recovery_status(check: &crate::plan::RecoveryCheck) -> TestCaseStatus {
    check_status(check.outcome, &check.reason, "recovery")
}

/// A check's case: a pass, a failure of type `kind` (a regression), or skipped (inconclusive).
fn check_status(outcome: RecoveryCheckOutcome, reason: &str, kind: &str) -> TestCaseStatus {
    match outcome {
        RecoveryCheckOutcome::Pass => TestCaseStatus::success(),
        RecoveryCheckOutcome::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("regression: {reason}"))
                .set_type(kind);
            s
        }
        RecoveryCheckOutcome::Inconclusive => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("inconclusive: {reason}"))
                .set_type("inconclusive");
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Environment, RESULT_FORMAT_VERSION, RunStatus, ToolInfo};

    /// A run that measured nothing: enough for the writer.
    fn empty_result() -> RunResult {
        RunResult {
            format_version: RESULT_FORMAT_VERSION,
            tool: ToolInfo::current(),
            started_at_unix_ms: 0,
            status: RunStatus::Complete,
            git: None,
            profile: "ci".to_owned(),
            config_path: "loadgate.toml".into(),
            slo: None,
            config_hash: String::new(),
            environment: Environment {
                cpu_model: "test".to_owned(),
                cores: 1,
                kernel: "test".to_owned(),
                engine_version: None,
                generator_core: None,
                target_cpuset: None,
            },
            target: None,
            replicas: Vec::new(),
            target_exit: None,
            ramp: None,
            headroom: None,
            soak: None,
            soak_skipped: None,
            spike: None,
            spike_skipped: None,
            stress: None,
            stress_skipped: None,
            valid: Some(true),
            baseline: None,
            comparison: None,
            verdict: None,
            phases: Vec::new(),
            resources: Vec::new(),
            calibration: None,
            mode: crate::result::MeasurementMode::Stored,
            paired: None,
            shards: None,
            dependencies: Vec::new(),
            audits: Vec::new(),
            probes: Vec::new(),
            probe_checks: Vec::new(),
            stubs: Vec::new(),
            faults: Vec::new(),
            data: None,
        }
    }

    #[test]
    fn a_probe_limit_is_a_case_of_its_own_suite_failed_when_it_did_not_hold() {
        let mut result = empty_result();
        result.probe_checks = vec![
            crate::result::ProbeCheck {
                probe: "db".to_owned(),
                series: "deadlocks".to_owned(),
                limit: 0.0,
                value: Some(2.0),
                passed: false,
                message: "db.deadlocks rose by 2 during the run (limit 0)".to_owned(),
            },
            crate::result::ProbeCheck {
                probe: "db".to_owned(),
                series: "connections_waiting".to_owned(),
                limit: 5.0,
                value: Some(1.0),
                passed: true,
                message: "db.connections_waiting reached 1 during the run (limit 5)".to_owned(),
            },
        ];
        let report = junit_report(&result);
        let suite = report
            .test_suites
            .iter()
            .find(|s| s.name.as_str() == "probes")
            .expect("a probes suite");
        assert_eq!(suite.test_cases.len(), 2);
        let failed = &suite.test_cases[0];
        assert_eq!(failed.name.as_str(), "db.deadlocks at most 0");
        match &failed.status {
            TestCaseStatus::NonSuccess { kind, message, .. } => {
                assert_eq!(*kind, NonSuccessKind::Failure);
                assert_eq!(
                    message.as_ref().map(|m| m.as_str()),
                    Some("db.deadlocks rose by 2 during the run (limit 0)")
                );
            }
            other => panic!("not a failure: {other:?}"),
        }
        assert!(matches!(
            suite.test_cases[1].status,
            TestCaseStatus::Success { .. }
        ));
        // Without limits there is no such suite.
        assert!(
            !junit_report(&empty_result())
                .test_suites
                .iter()
                .any(|s| s.name.as_str() == "probes")
        );
    }

    /// Regression: junit.xml was written 0600 (the temporary file's mode), unreadable to the CI
    /// user that publishes test reports.
    #[cfg(target_os = "linux")]
    #[test]
    fn junit_xml_gets_0644_minus_the_umask_not_0600() {
        use std::os::unix::fs::PermissionsExt as _;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        write_junit(&path, &empty_result()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644 & !umask);
        assert!(std::fs::read_to_string(&path).unwrap().starts_with("<?xml"));
    }

    /// A generator-bound ramp step is excused (skipped, with why) and a phase the generator
    /// failed in otherwise is an error: JUnit must not show red beside a run whose verdict a
    /// generator limit did not touch.
    #[test]
    fn a_step_at_the_generators_limit_is_skipped_and_a_starved_phase_is_an_error() {
        use crate::measure::{FinishInfo, InvalidReason, LagCause, PhaseRecorder};
        use crate::plan::{RampOutcome, StepJudgement, StepKind, StepRecord};
        use crate::result::PhaseRecord;
        use std::time::Duration;
        let phase = |name: &str, cause: Option<LagCause>| {
            let mut m = PhaseRecorder::new(
                &["a".to_owned()],
                Duration::ZERO,
                Duration::from_millis(100),
                Duration::from_secs(1),
            )
            .finish(FinishInfo {
                name: name.to_owned(),
                seed: 1,
                sessions_per_sec: 10.0,
                arrivals_end: Duration::from_secs(2),
                end: Duration::from_secs(2),
                max_lag: Duration::from_millis(10),
                max_drop_rate: 0.01,
                generator_cpu: None,
                generator_core: None,
                stopped: None,
            });
            if let Some(cause) = cause {
                m.validity.reasons.push(InvalidReason::Lag {
                    p99: Duration::from_millis(40),
                    limit: Duration::from_millis(10),
                    cause,
                    busy: Some(0.95),
                });
            }
            m
        };
        let held = StepJudgement {
            holds: true,
            ..StepJudgement::default()
        };
        let steps = [("ramp-50%", None), ("ramp-100%", Some(LagCause::Saturated))];
        let mut result = empty_result();
        let mut records = Vec::new();
        for (name, cause) in steps {
            let m = phase(name, cause);
            records.push(StepRecord::new(StepKind::Step, 0.5, 1.0, &m, held.clone()));
            result.phases.push(PhaseRecord {
                schedule_hash: String::new(),
                measurement: m,
            });
        }
        result.ramp = Some(RampOutcome::conclude(records, Vec::new()));
        result.phases.push(PhaseRecord {
            schedule_hash: String::new(),
            measurement: phase("soak", Some(LagCause::Starved)),
        });
        let report = junit_report(&result);
        let case = |name: &str| {
            report
                .test_suites
                .iter()
                .flat_map(|s| s.test_cases.iter())
                .find(|c| c.name.as_str() == name)
                .unwrap_or_else(|| panic!("{name}"))
                .clone()
        };
        assert!(matches!(
            case("ramp-50% kept its schedule").status,
            TestCaseStatus::Success { .. }
        ));
        assert!(matches!(
            case("ramp-100% kept its schedule").status,
            TestCaseStatus::Skipped { .. }
        ));
        assert!(matches!(
            case("soak kept its schedule").status,
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Error,
                ..
            }
        ));
    }

    fn property<'a>(suite: &'a TestSuite, name: &str) -> Option<&'a str> {
        suite
            .properties
            .iter()
            .find(|p| p.name.as_str() == name)
            .map(|p| p.value.as_str())
    }

    #[test]
    fn every_suite_records_the_mode_and_a_paired_run_its_base_and_pairs() {
        let stored = junit_report(&empty_result());
        for suite in &stored.test_suites {
            assert_eq!(property(suite, "mode"), Some("stored"));
            assert_eq!(property(suite, "pairs_used"), None);
        }
        let paired = crate::result::testing::paired();
        let report = junit_report(&paired);
        for suite in &report.test_suites {
            assert_eq!(property(suite, "mode"), Some("paired"));
            assert_eq!(
                property(suite, "base"),
                Some("the work tree (uncommitted changes) against 6ae2571")
            );
            assert_eq!(property(suite, "base_source"), Some("built"));
            assert_eq!(
                property(suite, "base_commit"),
                Some("6ae25712e4ad8bd64feb28a0a20893a52f7a842a")
            );
            assert_eq!(property(suite, "pairs_used"), Some("3"));
            assert_eq!(property(suite, "pairs"), Some("4"));
        }
        // The per-metric testcases keep the names a stored run gives them.
        let names: Vec<&str> = report
            .test_suites
            .iter()
            .flat_map(|s| s.test_cases.iter())
            .map(|c| c.name.as_str())
            .collect();
        assert!(names.contains(&"p50 (all operations)"), "{names:?}");
        assert!(names.contains(&"capacity"), "{names:?}");
    }

    /// The `[slo] headroom` check's case in the ramp suite, as `compare::headroom` decided it:
    /// a failure, a skip when inconclusive, a success; none without a limit.
    #[test]
    fn the_headroom_check_is_a_case_of_the_ramp_suite() {
        use crate::compare::{ProductionLoad, headroom};
        use crate::plan::{BreakPoint, RampOutcome};
        let production = ProductionLoad {
            sessions_per_sec: 20.0,
            requests_per_session: Some(1.0),
        };
        let case = |held: f64, broke: Option<f64>, limit: Option<f64>| {
            let mut ramp = RampOutcome::conclude(Vec::new(), Vec::new());
            ramp.knee_sessions_per_sec = Some(held);
            ramp.lowest_break = broke.map(|b| BreakPoint {
                phase: "refine-1".to_owned(),
                sessions_per_sec: b,
                offered_rate_per_sec: b,
                reasons: Vec::new(),
            });
            let mut result = empty_result();
            result.headroom = Some(headroom(&ramp, &production, limit));
            let report = junit_report(&result);
            let ramp_suite = report
                .test_suites
                .iter()
                .find(|s| s.name.as_str() == "ramp")
                .expect("a ramp suite")
                .clone();
            ramp_suite
                .test_cases
                .iter()
                .find(|c| c.name.as_str().starts_with("headroom"))
                .cloned()
        };
        let failed = case(20.0, Some(22.0), Some(1.2)).expect("a case");
        assert_eq!(failed.name.as_str(), "headroom at least 1.2x");
        assert_eq!(failed.classname.as_deref(), Some("loadgate.ramp"));
        let TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Failure,
            message,
            ty,
            ..
        } = &failed.status
        else {
            panic!("{:?}", failed.status)
        };
        assert_eq!(ty.as_deref(), Some("headroom"));
        assert_eq!(
            message.as_deref(),
            Some(
                "regression: headroom 1.00x to 1.10x is below slo.headroom 1.2x: the capacity \
                 broke below the limit"
            )
        );
        let unsure = case(22.0, Some(26.0), Some(1.2)).expect("a case");
        assert!(
            matches!(&unsure.status, TestCaseStatus::Skipped { ty, .. } if ty.as_deref() == Some("inconclusive")),
            "{:?}",
            unsure.status
        );
        let passed = case(30.0, None, Some(1.2)).expect("a case");
        assert!(matches!(passed.status, TestCaseStatus::Success { .. }));
        assert!(case(30.0, None, None).is_none(), "no limit, no case");
    }

    /// A stress is a `stress` suite: its case fails on lasting harm (typed `lasting-harm`), is
    /// skipped when inconclusive, passes when recovered; its `[slo] recovery` check is a second
    /// case when a limit is set.
    #[test]
    fn a_stress_is_a_suite_whose_case_fails_on_lasting_harm() {
        use crate::plan::{Harm, RecoveryCheck, RecoveryCheckOutcome};
        let mut result = empty_result();
        let suite_of = |result: &RunResult| {
            junit_report(result)
                .test_suites
                .into_iter()
                .find(|s| s.name.as_str() == "stress")
        };
        assert!(suite_of(&result).is_none(), "no stress, no suite");
        let mut stress = crate::plan::stress_testing::outcome();
        stress.check = Some(RecoveryCheck {
            limit: std::time::Duration::from_secs(10),
            outcome: RecoveryCheckOutcome::Pass,
            reason: "stable SLO 4.0 s after the stress, within 10.0 s".to_owned(),
        });
        result.stress = Some(stress.clone());
        let suite = suite_of(&result).expect("a stress suite");
        let names: Vec<&str> = suite.test_cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "no lasting harm after the stress",
                "time to stable SLO within 10s"
            ]
        );
        match &suite.test_cases[0].status {
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Failure,
                ty,
                message,
                ..
            } => {
                assert_eq!(ty.as_deref(), Some("lasting-harm"));
                assert!(
                    message
                        .as_deref()
                        .unwrap()
                        .starts_with("regression: lasting harm: p99 +40.0%"),
                    "{message:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            suite.test_cases[1].status,
            TestCaseStatus::Success { .. }
        ));
        for (harm, skipped) in [(Harm::Recovered, false), (Harm::Inconclusive, true)] {
            stress.harm = harm;
            result.stress = Some(stress.clone());
            let suite = suite_of(&result).expect("a stress suite");
            assert_eq!(
                matches!(suite.test_cases[0].status, TestCaseStatus::Skipped { .. }),
                skipped
            );
            assert_eq!(
                matches!(suite.test_cases[0].status, TestCaseStatus::Success { .. }),
                !skipped
            );
        }
    }

    /// An audit is its own case of an `audit` suite (a failure when it did not pass, typed
    /// `audit-not-run` when it could not run), and retries are properties of every suite.
    #[test]
    fn audits_are_cases_of_their_own_suite_and_retries_are_properties() {
        use crate::measure::{OperationMeasurement, OperationTally};
        use crate::result::{AuditOutcome, AuditStatus};
        let audit = |name: &str, status, reason: Option<&str>| AuditOutcome {
            name: name.to_owned(),
            request: "GET /ledger/summary".to_owned(),
            status,
            reason: reason.map(str::to_owned),
            checks: Vec::new(),
        };
        let mut result = empty_result();
        assert!(
            junit_report(&result)
                .test_suites
                .iter()
                .all(|s| s.name.as_str() != "audit"),
            "no audits, no suite"
        );
        result.audits = vec![
            audit("ledger", AuditStatus::Passed, None),
            audit(
                "lost",
                AuditStatus::Failed,
                Some("/effects at-least acknowledged.transfer does not hold"),
            ),
            audit("gone", AuditStatus::NotRun, Some("connection refused")),
        ];
        let mut phase = crate::result::testing::before().phases[0].clone();
        let mut transfer = OperationMeasurement::new("transfer");
        transfer.tally = OperationTally {
            logical: 100,
            attempts: 125,
            acknowledged: 99,
        };
        phase.measurement.operations = vec![transfer];
        result.phases = vec![phase];
        let report = junit_report(&result);
        let suite = report
            .test_suites
            .iter()
            .find(|s| s.name.as_str() == "audit")
            .expect("an audit suite");
        let kinds: Vec<(&str, Option<&str>)> = suite
            .test_cases
            .iter()
            .map(|c| match &c.status {
                TestCaseStatus::Success { .. } => (c.name.as_str(), None),
                TestCaseStatus::NonSuccess {
                    kind: NonSuccessKind::Failure,
                    ty,
                    ..
                } => (c.name.as_str(), ty.as_deref()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("audit ledger", None),
                ("audit lost", Some("audit")),
                ("audit gone", Some("audit-not-run"))
            ]
        );
        for suite in &report.test_suites {
            assert_eq!(property(suite, "logical.transfer"), Some("100"));
            assert_eq!(property(suite, "attempts.transfer"), Some("125"));
            assert_eq!(property(suite, "retries.transfer"), Some("25"));
            assert_eq!(
                property(suite, "attempts_per_operation.transfer"),
                Some("1.250")
            );
        }
    }

    /// A run whose soak leaked and whose verdict holds `leak`.
    fn leaking_result(verdict: crate::result::Verdict) -> RunResult {
        use crate::plan::{CapacitySource, Slopes, SoakOutcome};
        let mut result = empty_result();
        result.soak = Some(SoakOutcome {
            phase: "soak".to_owned(),
            capacity_sessions_per_sec: 50.0,
            capacity_from: CapacitySource::Baseline,
            at_sessions_per_sec: 30.0,
            offered_rate_per_sec: 45.0,
            model_rate_per_sec: 45.0,
            achieved_rate_per_sec: 45.0,
            slopes: Slopes::default(),
            leak: verdict.leak.as_ref().map(|l| l.message.clone()),
            aborted: None,
            valid: true,
            invalid_reasons: Vec::new(),
            windows: 20,
            samples: 20,
            sampled_s: None,
            lowered: None,
        });
        result.verdict = Some(verdict);
        result
    }

    fn leak_case(report: &Report) -> TestCase {
        report
            .test_suites
            .iter()
            .flat_map(|s| s.test_cases.iter())
            .find(|c| c.name.as_str() == "no leak")
            .expect("a leak case")
            .clone()
    }

    /// Regression: JUnit failed "no leak" from the soak's own finding while the verdict passed
    /// (the baseline leaked as much, and head − base decides). Now JUnit shows the verdict's count.
    #[test]
    fn a_leak_the_verdict_does_not_count_is_skipped_not_failed() {
        use crate::result::{LeakFinding, Verdict};
        let verdict = Verdict {
            outcome: VerdictOutcome::Pass,
            rule_fired: "pass: all 1 primary metrics are within their thresholds".to_owned(),
            metrics: Vec::new(),
            warnings: Vec::new(),
            leak: Some(LeakFinding {
                message: "RSS grows 100.0 KiB/s".to_owned(),
                regression: false,
                reason: "not a regression: against the baseline the RSS slope (head − base) is \
                         within the threshold"
                    .to_owned(),
            }),
        };
        let report = junit_report(&leaking_result(verdict.clone()));
        let case = leak_case(&report);
        assert!(
            matches!(case.status, TestCaseStatus::Skipped { .. }),
            "{:?}",
            case.status
        );
        let xml = report.to_string().unwrap();
        assert!(!xml.contains("<failure"), "{xml}");
        assert!(
            xml.contains("RSS grows 100.0 KiB/s; not a regression: against the baseline"),
            "{xml}"
        );

        let mut counted = verdict;
        counted.outcome = VerdictOutcome::Regression;
        if let Some(leak) = &mut counted.leak {
            leak.regression = true;
        }
        let case = leak_case(&junit_report(&leaking_result(counted)));
        match &case.status {
            TestCaseStatus::NonSuccess { kind, message, .. } => {
                assert_eq!(*kind, NonSuccessKind::Failure);
                assert_eq!(message.as_deref(), Some("RSS grows 100.0 KiB/s"));
            }
            other => panic!("{other:?}"),
        }
    }
}
