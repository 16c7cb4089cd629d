//! The command line as a user meets it: help, config errors, exit codes — driving the real binary.
//! None of these tests needs a Docker engine: targets are URL targets on loopback.

use loadgate_tests::{
    DemoProcess, LoadgateCommand, assert_matches_result_schema, load_lock, read_result,
    schema_errors,
};
use std::path::Path;

/// Exit codes from `cli::ExitCode`, restated here on purpose: a renumbering must break this test.
mod code {
    pub const PASS: i32 = 0;
    pub const OTHER_ERROR: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const TARGET_FAILED: i32 = 20;
    pub const INVALID_RUN: i32 = 21;
}

fn write_config(dir: &Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("loadgate.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// A one-operation workload against a URL target, small enough for a debug build on a busy machine.
fn url_config(url: &str, extra: &str) -> String {
    format!(
        r#"[target]
url = "{url}"
ready = {{ http = "/health", timeout = "2s" }}

[workload]
seed = 7
sessions-per-sec = 20
entry = "landing"

[[workload.operation]]
name = "landing"
request = {{ path = "/" }}
expect = {{ status = 200, body-contains = "Demo Bank" }}

# These tests check behaviour, not pacing, on machines that may be busy; the test of an invalid run
# sets its own limits.
[generator]
max-lag = "250ms"
{extra}
"#
    )
}

#[test]
fn help_lists_the_commands() {
    let out = LoadgateCommand::new(["--help"]).output();
    out.assert_code(code::PASS);
    insta::assert_snapshot!("help", out.stdout);
}

#[test]
fn run_help_lists_the_flags() {
    let out = LoadgateCommand::new(["run", "--help"]).output();
    out.assert_code(code::PASS);
    insta::assert_snapshot!("run_help", out.stdout);
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = LoadgateCommand::new(["run", "--no-such-flag"]).output();
    out.assert_code(code::USAGE);
    assert!(out.stderr.contains("--no-such-flag"), "{}", out.stderr);
}

/// `qualify --resume` goes on only with the series' own settings: a kept series made with another
/// profile is refused before any run starts, naming what differs, and its runs are left alone.
#[test]
fn qualify_resume_with_other_settings_is_a_usage_error_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let qualify = |extra: &[&str]| {
        let mut args = vec![
            "qualify",
            "-p",
            "demo-service",
            "--target",
            "process",
            "--profile",
            "quick",
            "--aa-runs",
            "0",
            "--paired",
            "--resume",
        ];
        args.extend_from_slice(extra);
        args.push("--out-dir");
        LoadgateCommand::new(args).arg_path(dir.path()).output()
    };
    // Nothing to run: refused before the series' settings are kept.
    let out = qualify(&[]);
    out.assert_code(code::USAGE);
    assert!(out.stderr.contains("nothing to run"), "{}", out.stderr);
    assert!(!dir.path().join("qualify-series.json").exists());

    // An earlier series made with the `ci` profile, with one finished run kept.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(loadgate_tests::workspace_root())
        .output()
        .unwrap();
    let series = serde_json::json!({
        "mode": "paired", "manifest_path": null, "package": "demo-service", "config": null,
        "profile": "ci", "target": "process", "env": [], "inject": ["DEMO_CPU_US=3000"],
        "commit": String::from_utf8_lossy(&head.stdout).trim(), "dirty": false,
    });
    std::fs::write(dir.path().join("qualify-series.json"), series.to_string()).unwrap();
    let kept = dir.path().join("injected-01").join("qualify-run.json");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, "{}").unwrap();
    let out = qualify(&["--inject", "DEMO_CPU_US=3000"]);
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("cannot resume the qualification")
            && out.stderr.contains("profile: \"ci\" then, \"quick\" now")
            && out.stderr.contains("\nhint: "),
        "{}",
        out.stderr
    );
    assert!(kept.is_file(), "the earlier series' runs are left alone");
}

/// `qualify --paired --pool DIR` pools an earlier series made at another commit into the report:
/// with `--aa-runs 0` and the knob at `--runs 0` nothing is run, and the report counts the pooled
/// runs, names the series and its commit, and pools injected runs only with the same knob.
#[test]
fn qualify_pools_an_earlier_series_into_its_report_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("earlier");
    let series = serde_json::json!({
        "mode": "paired", "manifest_path": null, "package": "demo-service", "config": null,
        "profile": "ci", "target": "process", "env": [], "inject": ["DEMO_CPU_US=1100"],
        "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false,
    });
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::write(earlier.join("qualify-series.json"), series.to_string()).unwrap();
    let run = |kind: &str, index: u32, outcome: &str| {
        serde_json::json!({
            "kind": kind, "index": index, "exit_code": if outcome == "regression" { 10 } else { 0 },
            "outcome": outcome, "unreadable": null, "rule_fired": null, "regressed": [],
            "valid": true, "calibration_drift": null, "capacity": "pass",
            "detectable_p50": 0.06, "detectable_p99": 0.18,
            "result": "/elsewhere/result.json", "seconds": 300.0,
        })
    };
    for (name, value) in [
        ("aa-01", run("a-a", 1, "pass")),
        ("aa-02", run("a-a", 2, "pass")),
        ("injected-01", run("injected", 1, "regression")),
    ] {
        std::fs::create_dir_all(earlier.join(name)).unwrap();
        std::fs::write(
            earlier.join(name).join("qualify-run.json"),
            value.to_string(),
        )
        .unwrap();
    }
    let qualify = |knob: &str| {
        let json = dir.path().join(format!("report-{knob}.json"));
        let out = LoadgateCommand::new([
            "qualify",
            "-p",
            "demo-service",
            "--target",
            "process",
            "--profile",
            "ci",
            "--paired",
            "--aa-runs",
            "0",
            "--runs",
            "0",
            "--inject",
            knob,
            "--pool",
        ])
        .arg_path(&earlier)
        .args(["--out-dir"])
        .arg_path(dir.path().join("now"))
        .args(["--json"])
        .arg_path(&json)
        .output();
        out.assert_code(code::PASS);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (out, report)
    };
    let (out, report) = qualify("DEMO_CPU_US=1100");
    assert!(
        out.stdout
            .contains("pooled: 2 A/A and 1 injected run(s) from ")
            && out
                .stdout
                .contains("(commit 0123456; its resolved configuration was not recorded"),
        "{}",
        out.stdout
    );
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("docs/schema/qualify-v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let errors = loadgate_tests::schema_errors(&schema, &report);
    assert!(
        errors.is_empty(),
        "qualify.json against its schema: {errors:?}"
    );
    // The schema is not vacuous.
    let mut bad = report.clone();
    bad["runs"][0]["kind"] = serde_json::json!("sideways");
    assert!(!loadgate_tests::schema_errors(&schema, &bad).is_empty());
    assert_eq!(report["format_version"], 1);
    assert_eq!(report["aa"]["pass"], 2);
    assert_eq!(report["detection_rate"]["hits"], 1);
    assert_eq!(
        report["pools"][0]["commit"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(report["runs"].as_array().unwrap().len(), 3);
    assert!(report["runs"][0]["pooled_from"].is_string(), "{report}");
    // Another knob: the A/A runs pool, the injected one does not.
    let (_, report) = qualify("DEMO_CPU_US=1250");
    assert_eq!(report["pools"][0]["injected"], 0);
    assert_eq!(report["injected"]["regression"], 0);
}

/// `qualify --paired` makes no baseline run, so `--save` has nothing to store: it is refused
/// before any run starts.
#[test]
fn qualify_paired_with_save_is_a_usage_error_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let out = LoadgateCommand::new([
        "qualify",
        "-p",
        "demo-service",
        "--target",
        "process",
        "--runs",
        "1",
        "--paired",
        "--save",
        "--out-dir",
    ])
    .arg_path(dir.path())
    .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("error: --save") && out.stderr.contains("\nhint: "),
        "{}",
        out.stderr
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "no run was started"
    );
}

#[test]
fn check_accepts_the_demo_config_for_every_builtin_profile() {
    for profile in ["default", "quick", "ci", "full"] {
        let out =
            LoadgateCommand::new(["check", "-p", "demo-service", "--profile", profile]).output();
        out.assert_code(code::PASS);
        assert!(
            out.stdout.contains("[workload]"),
            "{profile}: {}",
            out.stdout
        );
        // Issue 12, item 5: the thresholds the profile can reach, per primary metric.
        assert!(
            out.stdout
                .contains("Thresholds a stored comparison can decide on this machine")
                && out.stdout.contains("the conservative default"),
            "{profile}: {}",
            out.stdout
        );
    }
}

#[test]
fn check_reports_every_config_problem_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        r#"[target]
url = "http://127.0.0.1:9"
prot = 8080

[slo]
p99 = 200

[workload]
seed = 1
sessions-per-sec = -3
entry = "landing"

[[workload.operation]]
name = "landing"
request = { path = "/" }
next = [{ to = "logn", p = 0.5, think = "1s" }]
"#,
    );
    let out = LoadgateCommand::new(["check", "--config"])
        .arg_path(&path)
        .current_dir(dir.path())
        .output();
    out.assert_code(code::USAGE);
    let stderr = out
        .stderr
        .replace(&dir.path().display().to_string(), "[DIR]");
    insta::assert_snapshot!("config_errors", stderr);
}

#[test]
fn a_remote_url_is_refused_without_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &url_config("http://192.0.2.1:80", ""));
    let out = LoadgateCommand::new(["run", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::USAGE);
    assert!(out.stderr.contains("--allow-remote"), "{}", out.stderr);
}

#[test]
fn replicas_of_a_url_target_are_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "\n[profile.default.target]\nreplicas = 2\n";
    let path = write_config(dir.path(), &url_config("http://127.0.0.1:9", extra));
    let out = LoadgateCommand::new(["run", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr
            .contains("`[target] replicas = 2` boots 2 instances of the service, and a url target is not booted by loadgate"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("hint: run it with `--target process`"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_url_that_never_gets_ready_fails_the_target() {
    // Port 9 (discard) has no listener here: readiness times out after the configured 2 s.
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &url_config("http://127.0.0.1:9", ""));
    let out = LoadgateCommand::new(["run", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::TARGET_FAILED);
    assert!(out.stderr.contains("ready"), "{}", out.stderr);
}

#[test]
fn a_run_against_a_url_passes_and_writes_what_it_measured() {
    let _load = load_lock();
    let demo = DemoProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // The quick steps send 10 to 40 requests: enough to judge only with a lower min-requests (with
    // fewer than min-requests in all, a step neither holds nor breaks, and nothing would be soaked).
    let slo = "[slo]\nmin-requests = 10\n";
    let path = write_config(dir.path(), &url_config(&demo.url, slo));
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::PASS);
    let result = read_result(dir.path());
    assert_matches_result_schema(&result);
    assert_eq!(result["slo"]["min_requests"], 10);
    assert_eq!(result["format_version"], 1);
    assert_eq!(result["status"], "complete");
    let phases = result["phases"].as_array().unwrap();
    assert_eq!(phases[0]["name"], "ramp-25%");
    let soak = phases
        .iter()
        .find(|p| p["name"] == "soak")
        .expect("a soak phase");
    let landing = &soak["operations"][0];
    assert_eq!(landing["name"], "landing");
    let sent = landing["counters"]["sent"].as_u64().unwrap() as f64;
    // One request per session: the count is Poisson around rate × time (4.5 sd is 1 in 150,000).
    let expected =
        soak["sessions_per_sec"].as_f64().unwrap() * soak["measured_ms"].as_f64().unwrap() / 1e3;
    assert!(
        (sent - expected).abs() <= 4.5 * expected.sqrt() + 2.0,
        "sent {sent}, expected {expected}"
    );
    assert_eq!(landing["counters"]["ok"].as_f64().unwrap(), sent);
    assert!(soak["schedule_hash"].as_str().unwrap().len() == 64);
    assert!(
        result["ramp"]["sentence"]
            .as_str()
            .unwrap()
            .contains("req/s")
    );
    assert!(out.stdout.contains("landing"), "{}", out.stdout);
}

#[test]
fn wrong_answers_are_errors_even_when_fast() {
    let _load = load_lock();
    let demo = DemoProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = url_config(&demo.url, "").replace("Demo Bank", "Some Other Bank");
    let path = write_config(dir.path(), &config);
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    // Until the verdict lands, a run that kept its schedule exits 0 whatever the answers were; the
    // result must still count every answer as wrong.
    out.assert_code(code::PASS);
    let landing = &read_result(dir.path())["phases"][0]["operations"][0]["counters"];
    assert_eq!(landing["ok"], 0);
    assert!(landing["wrong_answer"].as_u64().unwrap() > 0, "{landing}");
    assert!(
        !landing["wrong_answer_examples"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_run_whose_generator_cannot_keep_its_schedule_in_any_phase_is_invalid() {
    let _load = load_lock();
    // Every request takes 50 ms, well within the 200 ms SLO, and only one may be in flight: the
    // arrivals dropped at the cap are the generator's (its cap is too low), not the service's.
    let demo = DemoProcess::start(&[("DEMO_DELAY_MS", "50")]);
    let dir = tempfile::tempdir().unwrap();
    let config = url_config(&demo.url, "max-in-flight = 1\n");
    let path = write_config(dir.path(), &config);
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::INVALID_RUN);
    assert!(out.stderr.contains("invalid run"), "{}", out.stderr);
    assert!(
        out.stderr.contains("max-in-flight is too low"),
        "{}",
        out.stderr
    );
    let phase = &read_result(dir.path())["phases"][0];
    assert!(phase["counters"]["dropped"].as_u64().unwrap() > 0);
    assert_eq!(
        phase["validity"]["reasons"][0]["cause"], "cap-too-low",
        "{phase}"
    );
}

/// Regression (issue 12): arrivals dropped at the in-flight cap because the service was slow made
/// the run invalid (exit 21), hiding the service's failure behind "the generator could not keep
/// its schedule". They are the service's failures: counted as errors, and the phase is judged.
#[test]
fn drops_at_the_cap_while_the_service_is_slow_are_its_failures_not_an_invalid_run() {
    let _load = load_lock();
    // 300 ms answers against the 200 ms SLO, one request in flight at most; a step is judged from
    // 5 requests, so the 10 of the first step are.
    let demo = DemoProcess::start(&[("DEMO_DELAY_MS", "300")]);
    let dir = tempfile::tempdir().unwrap();
    let config = url_config(&demo.url, "max-in-flight = 1\n\n[slo]\nmin-requests = 5\n");
    let path = write_config(dir.path(), &config);
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(code::PASS);
    assert!(!out.stderr.contains("invalid run"), "{}", out.stderr);
    let result = read_result(dir.path());
    let phase = &result["phases"][0];
    assert!(
        phase["validity"]["reasons"].as_array().unwrap().is_empty(),
        "{phase}"
    );
    assert!(
        phase["validity"]["service_drops"].as_f64().unwrap() > 0.01,
        "{phase}"
    );
    let landing = &phase["operations"][0]["counters"];
    assert!(landing["dropped"].as_u64().unwrap() > 0, "{landing}");
    let step = &result["ramp"]["steps"][0];
    assert_eq!(step["valid"], true, "{step}");
    assert!(
        step["held"]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("dropped at the in-flight cap")),
        "{step}"
    );
}

#[test]
fn an_unwritable_out_dir_is_an_other_error() {
    let _load = load_lock();
    let demo = DemoProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(dir.path(), &url_config(&demo.url, ""));
    // A regular file where the out-dir should be.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(&blocker)
        .output();
    out.assert_code(code::OTHER_ERROR);
    assert!(
        out.stderr.contains("failed to write the result"),
        "{}",
        out.stderr
    );
}

/// The verdict's `leak` (added within format version 1) is in the schema: written, it validates,
/// and a mistyped one does not.
#[test]
fn a_verdicts_leak_finding_matches_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("docs/schema/run-result-v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let verdict_schema = serde_json::json!({"$defs": schema["$defs"], "$ref": "#/$defs/verdict"});
    let mut verdict =
        cargo_loadgate::result::Verdict::no_baseline(vec!["no baseline stored".to_owned()]);
    verdict.leak = Some(cargo_loadgate::result::LeakFinding {
        message: "RSS grows 100.0 KiB/s".to_owned(),
        regression: false,
        reason: "not a regression: there is no baseline to compare with".to_owned(),
    });
    let mut value = serde_json::to_value(&verdict).unwrap();
    assert_eq!(schema_errors(&verdict_schema, &value), Vec::<String>::new());
    value["leak"]["regression"] = serde_json::json!("no");
    assert!(!schema_errors(&verdict_schema, &value).is_empty());
}

/// A stored comparison's `noise` and each metric's (issue 12, added within format version 1) are
/// in the schema: written, they validate, and mistyped ones do not.
/// The checked-in run-result schema's `comparison` definition, as a schema of its own.
fn comparison_schema() -> serde_json::Value {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("docs/schema/run-result-v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    serde_json::json!({"$defs": schema["$defs"], "$ref": "#/$defs/comparison"})
}

#[test]
fn a_comparisons_noise_matches_the_schema() {
    use cargo_loadgate::result::{
        Comparison, Metric, MetricComparison, MetricNoise, MetricOutcome, NoiseSource,
        NoiseSummary, Scale, SkippedAncestors, Verdict,
    };
    let comparison_schema = comparison_schema();
    let comparison = Comparison {
        base_commit: None,
        head_commit: None,
        alpha: 0.01,
        metrics: vec![MetricComparison {
            metric: Metric::P50,
            operation: None,
            primary: true,
            scale: Scale::Ratio,
            base: Some(2.0),
            head: Some(2.1),
            estimate: Some(1.05),
            low: Some(0.9),
            high: Some(1.2),
            confidence: 0.98,
            threshold: 1.05,
            p_value: Some(0.5),
            outcome: MetricOutcome::Inconclusive,
            detectable: Some(0.3),
            note: None,
            noise: Some(MetricNoise {
                source: NoiseSource::History,
                runs: 8,
                run_sd: 0.04,
                df: Some(7.5),
                excluded: 2,
            }),
            accepted: None,
        }],
        verdict: Verdict::no_baseline(Vec::new()),
        noise: Some(NoiseSummary {
            source: NoiseSource::HistoryAndQualify,
            history_runs: 8,
            qualify_runs: 10,
            skipped: SkippedAncestors {
                different_config: 1,
                different_environment: 0,
                unreadable: 2,
            },
        }),
        headroom: None,
    };
    let mut value = serde_json::to_value(&comparison).unwrap();
    assert_eq!(
        schema_errors(&comparison_schema, &value),
        Vec::<String>::new()
    );
    assert_eq!(value["noise"]["source"], "history-and-qualify");
    value["noise"]["source"] = serde_json::json!("guess");
    assert!(!schema_errors(&comparison_schema, &value).is_empty());
    let mut value = serde_json::to_value(&comparison).unwrap();
    value["metrics"][0]["noise"]["run_sd"] = serde_json::json!("wide");
    assert!(!schema_errors(&comparison_schema, &value).is_empty());
}

/// An accepted metric (issue 18) as the types write it matches the schema, and the schema
/// refuses an accept that lacks what it replaced.
#[test]
fn an_accepted_metric_matches_the_schema() {
    use cargo_loadgate::result::{
        AcceptedChange, Comparison, Metric, MetricComparison, MetricOutcome, Scale, Verdict,
    };
    let comparison_schema = comparison_schema();
    let comparison = Comparison {
        base_commit: None,
        head_commit: None,
        alpha: 0.01,
        metrics: vec![MetricComparison {
            metric: Metric::P50,
            operation: None,
            primary: true,
            scale: Scale::Ratio,
            base: Some(2.0),
            head: Some(2.4),
            estimate: Some(1.2),
            low: Some(1.15),
            high: Some(1.25),
            confidence: 0.98,
            threshold: 1.3,
            p_value: Some(0.99),
            outcome: MetricOutcome::Accepted,
            detectable: Some(0.1),
            note: None,
            noise: None,
            accepted: Some(AcceptedChange {
                sources: vec!["`Loadgate-Accept: p50 +30%` in 3f2a91c".to_owned()],
                reasons: vec!["a new feature".to_owned()],
                all: false,
                gate_threshold: 1.05,
            }),
        }],
        verdict: Verdict::no_baseline(Vec::new()),
        noise: None,
        headroom: None,
    };
    let value = serde_json::to_value(&comparison).unwrap();
    assert_eq!(
        schema_errors(&comparison_schema, &value),
        Vec::<String>::new()
    );
    assert_eq!(value["metrics"][0]["outcome"], "accepted");
    let mut broken = value.clone();
    broken["metrics"][0]["accepted"]
        .as_object_mut()
        .unwrap()
        .remove("gate_threshold");
    assert!(!schema_errors(&comparison_schema, &broken).is_empty());
}

/// The after fixture (`tests/fixtures/report/after.json`) read typed, with the SLO a run now
/// records (the fixture predates it).
fn after_result() -> cargo_loadgate::result::RunResult {
    let mut result = cargo_loadgate::result::result_from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("tests/fixtures/report/after.json"),
        )
        .unwrap(),
    )
    .unwrap();
    result.slo = Some(cargo_loadgate::result::SloSummary {
        latency: Vec::new(),
        error_rate: 0.01,
        min_requests: 100,
        recovery_limit_ms: None,
    });
    result
}

/// The after fixture as a paired run (issue 13) would write it, built from the types: two pairs,
/// the second left out because its base block could not keep its schedule.
fn paired_result() -> cargo_loadgate::result::RunResult {
    use cargo_loadgate::plan::pairing::Side;
    use cargo_loadgate::result::{
        BaseSource, BlockFigures, BlockRecord, MeasurementMode, PairedBase, PairedDesign,
        PairedRecord, pair_records,
    };
    let mut result = after_result();
    let block = |pair: usize, side: Side, p50: f64, valid: bool| {
        let total = BlockFigures {
            operation: None,
            requests: 1_000,
            p50_ms: Some(p50),
            p99_ms: Some(p50 * 4.0),
            error_rate: Some(0.0),
        };
        BlockRecord {
            pair,
            side,
            phase: format!(
                "pair-{pair}-{}",
                if side == Side::Base { "base" } else { "head" }
            ),
            schedule_hash: "ab".repeat(32),
            valid,
            invalid_reasons: if valid {
                Vec::new()
            } else {
                vec!["lag".to_owned()]
            },
            stopped: None,
            operations: vec![BlockFigures {
                operation: Some("get".to_owned()),
                ..total.clone()
            }],
            total,
        }
    };
    let blocks = vec![
        block(0, Side::Base, 2.0, true),
        block(0, Side::Head, 2.2, true),
        block(1, Side::Head, 2.1, true),
        block(1, Side::Base, 2.0, false),
    ];
    result.mode = MeasurementMode::Paired;
    result.paired = Some(PairedRecord {
        base: PairedBase {
            commit: Some("6ae25712e4ad8bd64feb28a0a20893a52f7a842a".to_owned()),
            source: BaseSource::Built,
            target: result.target.clone(),
            statement: "HEAD against 6ae2571".to_owned(),
        },
        design: PairedDesign {
            pairs_planned: 2,
            block_s: 10.0,
            warmup_s: 2.0,
            sessions_per_sec: 120.0,
            at: 0.6,
            base_capacity_sessions_per_sec: 200.0,
            capacity_note: Some("paired ramp".to_owned()),
            adaptive: true,
            looks: vec![2],
            stopped_early: None,
            order: "AB BA".to_owned(),
        },
        base_ramp: result.ramp.clone(),
        pairs: pair_records(&blocks),
        blocks,
    });
    result
}

/// A paired result's `mode` and `paired` (issue 13, added within format version 1) are in the
/// schema: a paired result built from the types validates, and mistyped parts do not.
#[test]
fn a_paired_result_matches_the_schema() {
    let value = serde_json::to_value(paired_result()).unwrap();
    assert_eq!(value["mode"], "paired");
    let mut unknown = value.clone();
    unknown["paired"]["pairs"][0]["ratio"] = serde_json::json!(1.0);
    assert_schema_takes_only(
        &value,
        &[
            ("/mode", serde_json::json!("interleaved")),
            ("/paired/base/source", serde_json::json!("downloaded")),
            ("/paired/blocks/0/side", serde_json::json!("left")),
            ("/paired/blocks/0/total/p50_ms", serde_json::json!("fast")),
            ("/paired/pairs/1/used", serde_json::json!("no")),
            ("/paired/design/order", serde_json::json!("ABC")),
        ],
        &unknown,
    );
}

/// `value` validates against the checked-in run-result schema; each of `mistyped` (a JSON
/// pointer into it and a wrong value) does not, nor does `unknown` (it with a key the schema
/// does not allow).
fn assert_schema_takes_only(
    value: &serde_json::Value,
    mistyped: &[(&str, serde_json::Value)],
    unknown: &serde_json::Value,
) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("docs/schema/run-result-v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(schema_errors(&schema, value), Vec::<String>::new());
    for (pointer, wrong) in mistyped {
        let mut changed = value.clone();
        *changed.pointer_mut(pointer).unwrap() = wrong.clone();
        assert!(
            !schema_errors(&schema, &changed).is_empty(),
            "{pointer} mistyped still validates"
        );
    }
    assert!(!schema_errors(&schema, unknown).is_empty());
}

/// A paired run's JUnit, parsed back by an independent parser: every suite records the mode,
/// the base and the pairs used, and the per-metric testcases keep their names.
#[test]
fn a_paired_results_junit_parses_with_its_mode_base_and_pairs() {
    let xml = cargo_loadgate::report::junit_report(&paired_result())
        .to_string()
        .unwrap();
    let suites = junit_parser::from_reader(std::io::Cursor::new(xml)).expect("the XML parses");
    assert!(!suites.suites.is_empty());
    for suite in &suites.suites {
        let property = |name: &str| suite.properties.hashmap.get(name).map(String::as_str);
        assert_eq!(property("mode"), Some("paired"), "suite {}", suite.name);
        assert_eq!(property("base"), Some("HEAD against 6ae2571"));
        assert_eq!(property("base_source"), Some("built"));
        assert_eq!(property("pairs_used"), Some("1"));
        assert_eq!(property("pairs"), Some("2"));
    }
    let names: Vec<&str> = suites
        .suites
        .iter()
        .flat_map(|s| s.cases.iter())
        .map(|c| c.original_name.as_str())
        .collect();
    for name in [
        "p50 (all operations)",
        "p99 (all operations)",
        "error rate",
        "capacity",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
}

#[test]
fn the_result_schema_is_not_vacuous() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            loadgate_tests::workspace_root().join("docs/schema/run-result-v1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(!schema_errors(&schema, &serde_json::json!({})).is_empty());
    assert!(!schema_errors(&schema, &serde_json::json!({"format_version": 2})).is_empty());
}

/// The after fixture with a failed `[slo] headroom` check (issue 17), as the gate settles it:
/// capacity 15 to 17.5 sessions/s over a production load of 20 sessions/s, against 1.2x.
fn headroom_failed_result() -> cargo_loadgate::result::RunResult {
    use cargo_loadgate::compare::{ProductionLoad, headroom, settle_headroom};
    use cargo_loadgate::plan::BreakPoint;
    let mut result = after_result();
    let mut ramp = result.ramp.clone().expect("the fixture ran a ramp");
    ramp.knee_sessions_per_sec = Some(15.0);
    ramp.lowest_break = Some(BreakPoint {
        phase: "refine-1".to_owned(),
        sessions_per_sec: 17.5,
        offered_rate_per_sec: 52.5,
        reasons: vec!["`landing` p99 340 ms > 200 ms".to_owned()],
    });
    let production = ProductionLoad {
        sessions_per_sec: 20.0,
        requests_per_session: Some(3.0),
    };
    result.headroom = Some(headroom(&ramp, &production, Some(1.2)));
    let mut verdict = result.verdict.take().expect("the fixture has a verdict");
    let mut comparison = result.comparison.take();
    if let Some(c) = comparison.as_mut() {
        c.headroom = Some(cargo_loadgate::result::HeadroomComparison {
            base_production_sessions_per_sec: 20.0,
            head_production_sessions_per_sec: 20.0,
            same_as_capacity: true,
            estimate: Some(0.8),
            low: Some(0.7),
            high: None,
            outcome: cargo_loadgate::result::MetricOutcome::Regression,
            note: "the production load is 20.0 sessions/s on both sides".to_owned(),
        });
    }
    settle_headroom(&result, comparison.as_mut(), &mut verdict);
    result.comparison = comparison;
    result.verdict = Some(verdict);
    result
}

/// The headroom and its check are in the schema: a result built from the types validates, and
/// mistyped parts do not.
#[test]
fn a_headroom_result_matches_the_schema() {
    let value = serde_json::to_value(headroom_failed_result()).unwrap();
    assert_eq!(value["headroom"]["outcome"], "fail");
    assert_eq!(value["verdict"]["outcome"], "regression");
    let mut unknown = value.clone();
    unknown["headroom"]["ratio"] = serde_json::json!(1.0);
    assert_schema_takes_only(
        &value,
        &[
            ("/headroom/outcome", serde_json::json!("failed")),
            ("/headroom/bound", serde_json::json!("somewhere")),
            ("/headroom/low", serde_json::json!(-1.0)),
            ("/headroom/limit", serde_json::json!("1.2x")),
            ("/headroom/statement", serde_json::json!(null)),
            (
                "/comparison/headroom/same_as_capacity",
                serde_json::json!("yes"),
            ),
        ],
        &unknown,
    );
    // Results written before the headroom was recorded still read.
    let mut older = value.clone();
    older.as_object_mut().unwrap().remove("headroom");
    let read = cargo_loadgate::result::result_from_value(&older).expect("an older result reads");
    assert_eq!(read.headroom, None);
}

/// The failed check is its own JUnit case, a failure with the numbers, parsed back by an
/// independent parser.
#[test]
fn a_failed_headroom_check_is_a_junit_failure() {
    let xml = cargo_loadgate::report::junit_report(&headroom_failed_result())
        .to_string()
        .unwrap();
    let suites = junit_parser::from_reader(std::io::Cursor::new(xml)).expect("the XML parses");
    let case = suites
        .suites
        .iter()
        .flat_map(|s| s.cases.iter())
        .find(|c| c.original_name == "headroom at least 1.2x")
        .expect("a headroom case");
    assert_eq!(case.classname.as_deref(), Some("loadgate.ramp"));
    let junit_parser::TestStatus::Failure(failure) = &case.status else {
        panic!("not a failure: {:?}", case.status)
    };
    assert_eq!(failure.failure_type, "headroom");
    assert_eq!(
        failure.message,
        "regression: headroom 0.75x to 0.88x is below slo.headroom 1.2x: the capacity broke \
         below the limit"
    );
}
