//! `[stress]` end to end (issue 15): the built binary against a demo service started by the test
//! (`--url`), outside any git repository (no baseline: the stress's own comparison decides).
//!
//! The service answers after 10 ms of asynchronous wait (`DEMO_DELAY_MS`): its latency is the
//! timer's, tight on any machine, and requests in flight follow Little's law (rate × about
//! 10.5 ms). The ramp's steps (up to 150 requests/s, under 2 in flight) and the soak hold; the
//! overload to 1000% of that (about 1,500 requests/s, near 16 in flight) is a backlog of 12 at
//! once. With `DEMO_OVERLOAD_HARM=1`, `DEMO_HARM_BACKLOG=12` and `DEMO_HARM_CPU_US=3000`, every
//! request after it burns 3 ms of CPU more for the rest of the process's life: p50 about +30%
//! after the stress, "lasting harm", a regression. Without the knob the same run is never called
//! harmed and passes: "recovered" when the machine's own p99 drift over the phase stays within
//! the 10% threshold, inconclusive (a warning, no baseline) when it does not.

use loadgate_tests::{
    DemoProcess, assert_matches_result_schema, load_lock, read_result, run_config_at_url,
};

const PASS: i32 = 0;
const REGRESSION: i32 = 10;

fn config() -> String {
    r#"[target]
ready = { http = "/health", timeout = "5s" }

[workload]
seed = 29
sessions-per-sec = 100
entry = "landing"

[[workload.operation]]
name = "landing"
request = { path = "/" }
expect = { status = 200, body-contains = "Demo Bank" }

# Behaviour, not pacing, is under test on a possibly busy machine.
[generator]
max-lag = "250ms"

[slo]
p99 = "500ms"
min-requests = 5

[ramp]
steps = ["50%", "100%", "150%"]
hold = "2s"
warmup = "500ms"
refine = 1

[soak]
duration = "2s"
at = "60%"

[stress]
to = "1000%"
for = "3s"
before = "8s"
after = "14s"

[recovery]
windows = 3

# A harmed service queues during the overload: let the phase finish.
[abort]
p99 = "30s"
"#
    .to_owned()
}

fn run(env: &[(&str, &str)]) -> (serde_json::Value, loadgate_tests::RunOutput, String) {
    let demo = DemoProcess::start(env);
    let (dir, out) = run_config_at_url(&demo.url, &config());
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    let summary = std::fs::read_to_string(dir.path().join("out/summary.md")).unwrap_or_default();
    (result, out, summary)
}

#[test]
fn a_service_as_fast_after_the_stress_as_before_is_not_harmed_and_passes() {
    let _load = load_lock();
    let (result, out, summary) = run(&[("DEMO_DELAY_MS", "10")]);
    let stress = &result["stress"];
    assert!(
        stress.is_object(),
        "no stress in the result: {result}\n{}",
        out.stdout
    );
    // The p50 is the timer's: within 5% on any machine. A shared machine moves a p99 of 90
    // requests a second by 10% over half a minute now and then, so "recovered" is not asserted;
    // a false alarm is.
    assert_ne!(stress["harm"], "lasting-harm", "{stress}\n{}", out.stdout);
    assert_eq!(stress["changes"][0]["outcome"], "within", "{stress}");
    assert_eq!(stress["before"]["windows"], 8, "{stress}");
    assert_eq!(stress["after"]["windows"], 8, "{stress}");
    assert_eq!(stress["compared_from_ms"], 17000.0, "{stress}");
    let changes = stress["changes"].as_array().unwrap();
    let metrics: Vec<&str> = changes
        .iter()
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["p50", "p99", "error-rate"]);
    // The overload is in the phase's windows: the rate stepped inside it.
    let phase = result["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "stress")
        .expect("the stress's phase");
    let windows = phase["windows"]["windows"].as_array().unwrap();
    let sent = |w: &serde_json::Value| w["sent"].as_u64().unwrap();
    let (before, during) = (sent(&windows[4]), sent(&windows[9]));
    assert!(
        during > 3 * before.max(1),
        "sent {before}/s before, {during}/s during"
    );
    let word = if stress["harm"] == "recovered" {
        "RECOVERED"
    } else {
        // Inconclusive: without a baseline the run still exits 0, with a warning that says so.
        let warnings = result["verdict"]["warnings"].to_string();
        assert!(
            warnings.contains("the stress is inconclusive: "),
            "{warnings}"
        );
        "INCONCLUSIVE"
    };
    assert!(
        out.stdout
            .contains(&format!("stress {word}: to 1000% of this run's capacity")),
        "{}",
        out.stdout
    );
    assert!(summary.contains("**Stress:**"), "{summary}");
    out.assert_code(PASS);
}

#[test]
fn a_service_left_slower_by_the_overload_is_lasting_harm_and_fails_the_gate() {
    let _load = load_lock();
    let (result, out, summary) = run(&[
        ("DEMO_DELAY_MS", "10"),
        ("DEMO_OVERLOAD_HARM", "1"),
        ("DEMO_HARM_BACKLOG", "12"),
        ("DEMO_HARM_CPU_US", "3000"),
    ]);
    let stress = &result["stress"];
    assert_eq!(stress["harm"], "lasting-harm", "{stress}\n{}", out.stdout);
    let p50 = &stress["changes"][0];
    assert_eq!(p50["metric"], "p50");
    assert_eq!(p50["outcome"], "harm", "{stress}");
    assert!(p50["low"].as_f64().unwrap() > 1.05, "{p50}");
    assert!(
        out.stdout.contains("stress LASTING HARM: "),
        "{}",
        out.stdout
    );
    let verdict = &result["verdict"];
    assert_eq!(verdict["outcome"], "regression", "{verdict}");
    assert!(
        verdict["rule_fired"]
            .as_str()
            .unwrap()
            .starts_with("regression: stress: lasting harm: p50 +"),
        "{verdict}"
    );
    assert!(summary.contains("**Stress:**"), "{summary}");
    out.assert_code(REGRESSION);
}
