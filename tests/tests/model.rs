//! `cargo loadgate model` and `cargo loadgate load` as a user meets them: the built binary reads
//! access logs written here, prints the model, writes the `[workload]` TOML the config loader
//! reads back, and its `--json` matches the checked-in schemas. No service, no Docker.

use loadgate_tests::{LoadgateCommand, schema_errors, workspace_root};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Exit codes from `cli::ExitCode`, restated here on purpose: a renumbering must break this test.
mod code {
    pub const PASS: i32 = 0;
    pub const USAGE: i32 = 2;
}

const CONFIG: &str = r#"
[workload]
sessions-per-sec = 10
entry = "landing"

[[workload.operation]]
name = "landing"
request = { path = "/" }
next = [{ to = "login", p = 0.5, think = "1s" }]

[[workload.operation]]
name = "login"
request = { method = "POST", path = "/login" }
next = [{ to = "item", p = 0.5, think = "1s" }]

[[workload.operation]]
name = "item"
request = { path = "/items/{{rand}}" }
next = []
"#;

/// A combined log of `sessions` sessions, one every 100 ms: session k visits landing, then login
/// when k is even, then an item when k is a multiple of 4, a second apart; each answer 2 ms.
fn log(sessions: u64) -> String {
    let mut lines: Vec<(u64, String)> = Vec::new();
    for k in 0..sessions {
        let start = k * 100_000;
        let mut steps = vec![("GET", "/".to_owned())];
        if k % 2 == 0 {
            steps.push(("POST", "/login".to_owned()));
        }
        if k % 4 == 0 {
            steps.push(("GET", format!("/items/{}", k % 7)));
        }
        for (i, (method, path)) in steps.into_iter().enumerate() {
            let t = start + i as u64 * 1_002_000;
            lines.push((
                t,
                format!(
                    "127.0.0.1 - - [03/Dec/2025:12:{:02}:{:02}.{:06} +0000] \"{method} {path} HTTP/1.1\" 200 10 \"-\" \"test\" rt=0.002 user=u{k}\n",
                    t / 60_000_000,
                    t / 1_000_000 % 60,
                    t % 1_000_000
                ),
            ));
        }
    }
    lines.sort_by_key(|(t, _)| *t);
    lines.into_iter().map(|(_, l)| l).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn schema(name: &str) -> serde_json::Value {
    let path = workspace_root().join("docs/schema").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn assert_schema(name: &str, doc: &serde_json::Value) {
    let errors = schema_errors(&schema(name), doc);
    assert!(errors.is_empty(), "{name}:\n{}", errors.join("\n"));
}

#[test]
fn model_prints_the_model_and_writes_a_workload_the_config_loader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "loadgate.toml", CONFIG);
    let access = write(dir.path(), "access.log", &log(2_000));
    let out_toml = dir.path().join("workload.toml");
    let out = LoadgateCommand::new(["model", "--config"])
        .arg_path(&config)
        .args(["--from"])
        .arg_path(&access)
        .args(["--session-gap", "10s", "--out"])
        .arg_path(&out_toml)
        .output();
    out.assert_code(code::PASS);
    assert!(
        out.stdout
            .contains("sessions by `field:user` (the default)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("→ login"), "{}", out.stdout);
    assert!(out.stdout.contains("[workload]"), "{}", out.stdout);
    // Half the sessions log in, half of those open an item: the config's model.
    assert!(
        out.stdout
            .contains("every probability of the config lies within its interval"),
        "{}",
        out.stdout
    );
    let text = std::fs::read_to_string(&out_toml).unwrap();
    let parsed = cargo_loadgate::config::parse_config_str(&text, &out_toml, None, "default")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names: Vec<&str> = parsed
        .workload
        .operations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, ["landing", "login", "item"]);
    assert_eq!(parsed.workload.operations[2].request.path, "/items/0");
}

#[test]
fn model_json_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "loadgate.toml", CONFIG);
    let access = write(dir.path(), "access.log", &log(400));
    let out = LoadgateCommand::new(["model", "--json", "--session-gap", "10s", "--config"])
        .arg_path(&config)
        .args(["--from"])
        .arg_path(&access)
        .output();
    out.assert_code(code::PASS);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_schema("model-v1.json", &doc);
    assert_eq!(doc["format_version"], 1);
    assert_eq!(
        doc["validations"][1]["within"], true,
        "{}",
        doc["validations"]
    );
    // A mistyped document does not pass: the schema is not vacuous.
    let mut bad = doc.clone();
    bad["estimate"]["entry"][0]["p"]["point"] = serde_json::json!("high");
    assert!(!schema_errors(&schema("model-v1.json"), &bad).is_empty());
}

#[test]
fn malformed_lines_are_counted_and_shown_and_too_many_fail() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "loadgate.toml", CONFIG);
    let mut text = log(400);
    text.insert_str(0, "this is not a log line\n");
    let access = write(dir.path(), "access.log", &text);
    let out = LoadgateCommand::new([
        "model",
        "--format",
        "combined",
        "--session-gap",
        "10s",
        "--config",
    ])
    .arg_path(&config)
    .args(["--from"])
    .arg_path(&access)
    .output();
    out.assert_code(code::PASS);
    assert!(out.stdout.contains(", 1 malformed"), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "access.log:1: fields are not where the format puts them: this is not a log line"
        ),
        "{}",
        out.stdout
    );
    let mut text = log(20);
    for _ in 0..10 {
        text.push_str("garbage\n");
    }
    let access = write(dir.path(), "bad.log", &text);
    let out = LoadgateCommand::new(["model", "--format", "combined", "--config"])
        .arg_path(&config)
        .args(["--from"])
        .arg_path(&access)
        .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr
            .contains("10 of 45 lines are not in the combined format (more than 5% are)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("bad.log:36: "), "{}", out.stderr);
}

#[test]
fn no_sessions_under_the_key_is_a_usage_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "loadgate.toml", CONFIG);
    let access = write(dir.path(), "access.log", &log(100));
    let out = LoadgateCommand::new(["model", "--session-key", "cookie:sid", "--config"])
        .arg_path(&config)
        .args(["--from"])
        .arg_path(&access)
        .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains(
            "no sessions under the key `cookie:sid`: 0 of 175 lines of known operations had it"
        ),
        "{}",
        out.stderr
    );
}

/// A day with 200 sessions per hour from 8 to 19 h, 5 at night: with the proposed threshold the
/// nights drop out; every day hour holds 200, so σ = 0 and the load is 200 per hour.
fn day_log() -> String {
    let mut text = String::new();
    let mut k = 0;
    for h in 0..24u64 {
        let n: u64 = if (8..20).contains(&h) { 200 } else { 5 };
        for i in 0..n {
            let s = i * 3600 / n;
            let _ = writeln!(
                text,
                "10.0.0.1 - - [03/Dec/2025:{h:02}:{:02}:{:02} +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"t\" user=u{k}",
                s / 60,
                s % 60
            );
            k += 1;
        }
    }
    text
}

#[test]
fn load_reports_the_production_load_and_its_json_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let access = write(dir.path(), "day.log", &day_log());
    let out = LoadgateCommand::new(["load", "--interval", "1h", "--from"])
        .arg_path(&access)
        .output();
    out.assert_code(code::PASS);
    assert!(
        out.stdout.contains(
            "24 intervals of 1h; active: 12 above 100 (proposed: half the 90th percentile"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("production load (99th percentile) = mean + 2.33σ = 200.00 per interval"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("sessions-per-sec = 0.0556"),
        "{}",
        out.stdout
    );
    let out = LoadgateCommand::new([
        "load",
        "--json",
        "--interval",
        "1h",
        "--quantile",
        "0.95",
        "--from",
    ])
    .arg_path(&access)
    .output();
    out.assert_code(code::PASS);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_schema("load-v1.json", &doc);
    assert_eq!(doc["load"]["active"], 12);
    assert!((doc["load"]["z"].as_f64().unwrap() - 1.644_853_6).abs() < 1e-6);
    assert_eq!(doc["busiest"]["count"], 200);
}

#[test]
fn load_with_every_interval_inactive_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let access = write(dir.path(), "day.log", &day_log());
    let out = LoadgateCommand::new([
        "load",
        "--interval",
        "1h",
        "--active-above",
        "500",
        "--from",
    ])
    .arg_path(&access)
    .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("all 24 intervals are inactive: the busiest had 200 sessions starting, at or below the threshold of 500"),
        "{}",
        out.stderr
    );
}
