//! Paired mode end to end (issue 13): two demo services started by the test, the head given with
//! `--url` and the base with `--base-url`, alternate through both ramps and then through blocks
//! of the same schedule slices. An A/A run never regresses; a head slowed by 5 ms per request
//! is a regression of its latency, named with its interval; the result records the mode, the
//! blocks and the pairs, and validates against the schema.

use loadgate_tests::{
    DemoProcess, LoadgateCommand, RunOutput, assert_matches_result_schema, load_lock, read_result,
};
use std::path::Path;

const REGRESSION: i32 = 10;
const USAGE: i32 = 2;

const CONFIG: &str = r#"[target]
ready = { http = "/health", timeout = "5s" }

[workload]
seed = 11
sessions-per-sec = 40
entry = "landing"

[[workload.operation]]
name = "landing"
request = { path = "/" }
expect = { status = 200, body-contains = "Demo Bank" }

[generator]
max-lag = "250ms"

[slo]
min-requests = 10

[paired]
pairs = 10
block = "1500ms"
warmup = "250ms"
"#;

fn paired_run(dir: &Path, head: &str, base: &str, extra: &[&str]) -> RunOutput {
    LoadgateCommand::new([
        "run",
        "--profile",
        "quick",
        "--config",
        "loadgate.toml",
        "--mode",
        "paired",
        "--url",
        head,
        "--base-url",
        base,
        "--out-dir",
    ])
    .arg_path(dir.join("out"))
    .args(extra)
    .current_dir(dir)
    .output()
}

#[test]
fn paired_blocks_pass_a_a_and_name_a_slower_head() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("loadgate.toml"), CONFIG).unwrap();
    let base = DemoProcess::start(&[]);
    let same = DemoProcess::start(&[]);

    let aa = paired_run(dir.path(), &same.url, &base.url, &[]);
    assert!(
        aa.code != Some(REGRESSION) && matches!(aa.code, Some(0) | Some(11)),
        "an A/A paired run must not regress\n--- stdout\n{}\n--- stderr\n{}",
        aa.stdout,
        aa.stderr
    );
    assert!(aa.stdout.contains("paired"), "{}", aa.stdout);
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    assert_eq!(result["mode"], "paired");
    let paired = &result["paired"];
    assert_eq!(paired["base"]["source"], "given-url");
    let blocks = paired["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 20, "10 pairs of 2 blocks");
    for pair in 0..10 {
        let of: Vec<&serde_json::Value> = blocks.iter().filter(|b| b["pair"] == pair).collect();
        assert_eq!(of.len(), 2);
        assert_ne!(of[0]["side"], of[1]["side"]);
        assert_eq!(
            of[0]["schedule_hash"], of[1]["schedule_hash"],
            "both blocks of pair {pair} send the same slice"
        );
    }
    assert_eq!(paired["pairs"].as_array().unwrap().len(), 10);
    let order = paired["design"]["order"].as_str().unwrap();
    assert_eq!(order.replace(' ', "").len(), 20, "{order}");
    assert!(result["paired"]["base_ramp"]["steps"].is_array());
    assert!(dir.path().join("out/base-result.json").is_file());
    let p50 = result["comparison"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "p50" && m["operation"].is_null())
        .expect("a p50 metric");
    assert_ne!(p50["outcome"], "regression", "{p50}");

    // The head answers 5 ms later than the base (a demo answers in well under 1 ms).
    let slow = DemoProcess::start(&[("DEMO_DELAY_MS", "5")]);
    let out = paired_run(dir.path(), &slow.url, &base.url, &[]);
    out.assert_code(REGRESSION);
    assert!(out.stdout.contains("regression"), "{}", out.stdout);
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    let verdict = result["verdict"]["rule_fired"].as_str().unwrap();
    assert!(
        verdict.contains("p50") || verdict.contains("p99"),
        "the rule names the metric: {verdict}"
    );
    assert!(verdict.contains("paired"), "{verdict}");
}

#[test]
fn paired_mode_with_a_url_target_and_no_base_url_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("loadgate.toml"), CONFIG).unwrap();
    let out = LoadgateCommand::new([
        "run",
        "--profile",
        "quick",
        "--config",
        "loadgate.toml",
        "--mode",
        "paired",
        "--url",
        "http://127.0.0.1:9",
    ])
    .current_dir(dir.path())
    .output();
    out.assert_code(USAGE);
    assert!(out.stderr.contains("--base-url"), "{}", out.stderr);
}
