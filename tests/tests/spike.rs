//! `[spike]` end to end (issue 15): the built binary against a demo service started by the test
//! (`--url`) that sheds load (`DEMO_SHED_AT`), outside any git repository (no baseline: the
//! `[slo] recovery` check alone can fail the run).
//!
//! The service answers after 40 ms of asynchronous wait (`DEMO_DELAY_MS`), so requests in flight
//! follow Little's law (rate × 40 ms) on any machine, and sheds from 6 in flight: the ramp's
//! 30 requests/s keep about 1.2 in flight and hold; the spike to 1000% of that (about 300/s, 12 in
//! flight) is answered mostly with fast 503s: "rejected cheaply", and stable again right after it.
//!
//! A second test runs the demo's `spike-collapse` profile, whose demo thrashes under its backlog
//! (`DEMO_COLLAPSE_AT`): "collapsed".

use loadgate_tests::{
    DemoProcess, assert_matches_result_schema, load_lock, read_result, run_config_at_url,
};

const PASS: i32 = 0;

const SHEDDING: [(&str, &str); 2] = [("DEMO_DELAY_MS", "40"), ("DEMO_SHED_AT", "6")];

fn config() -> String {
    r#"[target]
ready = { http = "/health", timeout = "5s" }

[workload]
seed = 23
sessions-per-sec = 20
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
recovery = "10s"

[ramp]
steps = ["50%", "100%", "150%"]
hold = "2s"
warmup = "500ms"
refine = 1

[soak]
duration = "2s"
at = "60%"

[spike]
to = "1000%"
for = "3s"
before = "3s"
after = "8s"

[recovery]
windows = 3

# Shed requests fail by design: let the spike finish.
[abort]
error-rate = "99%"
"#
    .to_owned()
}

#[test]
fn a_spike_against_a_shedding_service_is_rejected_cheaply_and_recovers() {
    let _load = load_lock();
    let demo = DemoProcess::start(&SHEDDING);
    let (dir, out) = run_config_at_url(&demo.url, &config());
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    let spike = &result["spike"];
    assert!(
        spike.is_object(),
        "no spike in the result: {result}\n{}",
        out.stdout
    );
    assert_eq!(
        spike["admission"]["admission"], "rejected-cheaply",
        "{spike}"
    );
    let rejected = spike["admission"]["rejected_share"].as_f64().unwrap();
    assert!(rejected > 0.2, "{spike}");
    assert_eq!(spike["recovery"]["state"], "recovered", "{spike}");
    assert_eq!(spike["check"]["outcome"], "pass", "{spike}");
    // The spike's phase is in the result with its windows, the rate stepped inside it.
    let phase = result["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "spike")
        .expect("the spike's phase");
    let windows = phase["windows"]["windows"].as_array().unwrap();
    let sent = |w: &serde_json::Value| w["sent"].as_u64().unwrap();
    let before = sent(&windows[1]);
    let during = sent(&windows[4]);
    assert!(
        during > 4 * before.max(1),
        "sent {before}/s before, {during}/s during"
    );
    assert!(
        out.stdout.contains("spike to 1000% of this run's capacity"),
        "{}",
        out.stdout
    );
    let summary = std::fs::read_to_string(dir.path().join("out/summary.md")).unwrap();
    assert!(summary.contains("**Spike:** to 1000%"), "{summary}");
    // Without a baseline a run passes unless a check fails (no-baseline is exit 0 here).
    out.assert_code(PASS);
}

/// The demo's `spike-collapse` profile: beyond 32 requests in flight every request burns more CPU
/// for each one in flight (`DEMO_COLLAPSE_AT`), so a spike to 300% of capacity builds a backlog
/// that lowers the goodput instead of levelling it off: the run names it "collapsed".
#[test]
fn a_spike_against_a_service_that_thrashes_under_its_backlog_is_named_collapsed() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = loadgate_tests::LoadgateCommand::new([
        "run",
        "--mode",
        "stored",
        "--profile",
        "spike-collapse",
        "--target",
        "process",
        "--manifest-path",
    ])
    .arg_path(loadgate_tests::demo_manifest())
    .args(["--out-dir"])
    .arg_path(dir.path())
    .output();
    let result = read_result(dir.path());
    assert_matches_result_schema(&result);
    let admission = &result["spike"]["admission"];
    assert_eq!(
        admission["admission"], "collapsed",
        "{admission}\n{}",
        out.stderr
    );
    // Not shed (no fast failures): the goodput itself fell under the backlog.
    let before = admission["goodput_before_per_sec"].as_f64().unwrap();
    let during = admission["goodput_during_per_sec"].as_f64().unwrap();
    assert!(during < before, "{admission}");
    assert!(
        out.stdout.contains(": collapsed ("),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}
