//! `[[probe]]` end to end, against the system's PostgreSQL (the `postgres` preset): the probe's
//! reading follows transactions run against the database; a run with a probe records its series in
//! result.json (schema-valid), and a limit that does not hold fails the gate (exit 10) with its own
//! JUnit case; a probe that cannot connect is recorded as missing and the run goes on.
//!
//! The PostgreSQL tests need its server binaries; where they are absent they say so loudly, and in
//! CI (`CI` set) they fail.

use cargo_loadgate::config::{TargetKind, parse_config_str};
use cargo_loadgate::targets::{PostgresProbe, boot_dependencies, free_loopback_port};
use loadgate_tests::{
    LoadgateCommand, RunOutput, assert_matches_result_schema, load_lock, postgres_or_skip,
    read_result,
};
use std::path::Path;
use std::time::{Duration, Instant};

const REGRESSION: i32 = 10;
const INVALID_RUN: i32 = 21;

/// Whether Debian's PostgreSQL packages put `pg_stat_statements` beside the server (the preset
/// loads it then).
fn stat_statements_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .any(|e| e.path().join("lib/pg_stat_statements.so").is_file())
}

/// The place of `xact_commit` in a postgres probe's reading.
fn series_index(name: &str) -> usize {
    cargo_loadgate::measure::probe::POSTGRES_SERIES
        .iter()
        .position(|s| s.name == name)
        .expect("a postgres series")
}

/// Transactions run against the preset's database show in the probe's `xact_commit`: 50 commits
/// raise it by at least 50 (PostgreSQL publishes a backend's counts within a second or so, so the
/// reading is repeated, for at most 15 s).
#[test]
fn the_postgres_probe_sees_the_transactions_run_against_the_database() {
    if !postgres_or_skip("the_postgres_probe_sees_the_transactions_run_against_the_database") {
        return;
    }
    let _load = load_lock();
    let config = parse_config_str(
        "[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n[workload]\nsessions-per-sec = 1\n[[workload.operation]]\nname = \"a\"\nrequest = { path = \"/\" }\n",
        Path::new("loadgate.toml"),
        None,
        "default",
    )
    .expect("a valid config");
    let logs = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let running = boot_dependencies(
            &config.dependencies,
            TargetKind::Process,
            "probes-test",
            logs.path(),
            &|_| {},
        )
        .await
        .expect("the preset boots");
        let url = running.render("{{db.url}}");
        let probe = PostgresProbe::connect_with(&url, Duration::from_secs(5), true)
            .await
            .expect("the probe connects");
        let commit = series_index("xact_commit");
        let before = probe.read().await.expect("a reading")[commit];
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("a client connects");
        let connection = tokio::spawn(connection);
        for i in 0..50 {
            client
                .simple_query(&format!("SELECT {i}"))
                .await
                .expect("a query");
        }
        drop(client);
        let _ = connection.await;
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut after = before;
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            after = probe.read().await.expect("a reading")[commit];
            if after - before >= 50.0 {
                break;
            }
        }
        assert!(
            after - before >= 50.0,
            "xact_commit rose by {} after 50 transactions",
            after - before
        );
        // Only the client above ran: no deadlock, nobody waiting.
        let last = probe.read().await.expect("a reading");
        assert_eq!(last[series_index("deadlocks")], 0.0);
        assert_eq!(last[series_index("connections_waiting")], 0.0);
        // The preset loads pg_stat_statements (where the server has it): the 50 statements are
        // one normalized statement, and the probe's own queries are not among them.
        let statements = probe.statements().await;
        if !stat_statements_installed() {
            assert!(statements.is_err(), "{statements:?}");
            drop(probe);
            assert!(running.shutdown().await.is_empty());
            return;
        }
        let statements = statements.expect("pg_stat_statements is loaded");
        let select = statements
            .iter()
            .find(|s| s.query == "SELECT $1")
            .unwrap_or_else(|| panic!("no `SELECT $1` in {statements:?}"));
        assert_eq!(select.calls, 50, "{statements:?}");
        assert!(
            statements.iter().all(|s| !s.query.contains("pg_stat_")),
            "{statements:?}"
        );
        drop(probe);
        assert!(running.shutdown().await.is_empty());
    });
}

fn config(dependency: &str, limits: &str) -> String {
    format!(
        r#"
[target]
bin = "demo-service"
ready = {{ http = "/health", timeout = "60s", interval = "100ms" }}

[[dependency]]
name = "db"
{dependency}

[[probe]]
kind = "postgres"
dependency = "db"
{limits}

[workload]
sessions-per-sec = 10
[[workload.operation]]
name = "health"
request = {{ path = "/health" }}

[ramp]
steps = ["100%"]
hold = "1s"
warmup = "200ms"
refine = 0

[soak]
duration = "3s"

[paired]
mode = "stored"
"#
    )
}

fn run(dir: &Path, text: &str) -> RunOutput {
    let path = dir.join("loadgate.toml");
    std::fs::write(&path, text).unwrap();
    let _load = load_lock();
    LoadgateCommand::new([
        "run",
        "-p",
        "demo-service",
        "--target",
        "process",
        "--config",
    ])
    .arg_path(&path)
    .args(["--out-dir"])
    .arg_path(dir.join("out"))
    .output()
}

/// The `probes` testsuite of the run's junit.xml, read back by an independent parser.
fn probes_suite(out: &Path) -> junit_parser::TestSuite {
    let file = std::fs::File::open(out.join("junit.xml")).expect("junit.xml written");
    junit_parser::from_reader(std::io::BufReader::new(file))
        .expect("junit.xml parses")
        .suites
        .into_iter()
        .find(|s| s.name == "probes")
        .expect("a probes testsuite")
}

/// A run samples the preset's PostgreSQL once a second into result.json; `xact_commit = 0` cannot
/// hold (the probe's own query commits one a second), `deadlocks = 0` does: exit 10, the failed
/// limit its own failed JUnit case, the one that held a passed one.
#[test]
fn a_probe_records_its_series_and_a_limit_that_does_not_hold_fails_the_gate() {
    if !postgres_or_skip("a_probe_records_its_series_and_a_limit_that_does_not_hold_fails_the_gate")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &config(
            "preset = \"postgres\"",
            "limits = { xact_commit = 0, deadlocks = 0 }",
        ),
    );
    out.assert_code(REGRESSION);
    let out_dir = dir.path().join("out");
    let result = read_result(&out_dir);
    assert_matches_result_schema(&result);
    assert_eq!(result["status"], "complete");
    let probe = &result["probes"][0];
    assert_eq!(probe["status"], "sampled", "{probe:#}");
    // Sampled through the run on the resource sampler's clock: as often as the target's resources.
    let samples = probe["samples"].as_array().unwrap().len();
    let resources = result["resources"].as_array().unwrap().len();
    assert!(
        samples >= 2 && samples + 1 >= resources,
        "{samples} probe samples, {resources} resource samples: {probe:#}"
    );
    assert_eq!(probe["series"]["xact_commit"], "counter");
    assert_eq!(probe["series"]["connections_idle"], "gauge");
    assert_eq!(
        probe.get("statements_missing").is_none(),
        stat_statements_installed(),
        "the preset loads pg_stat_statements where the server has it: {probe:#}"
    );
    assert!(
        probe["totals"]["xact_commit"].as_f64().unwrap() >= 1.0,
        "{probe:#}"
    );
    assert_eq!(result["verdict"]["outcome"], "regression");
    assert!(
        result["verdict"]["rule_fired"]
            .as_str()
            .unwrap()
            .contains("db.xact_commit rose by"),
        "{}",
        result["verdict"]
    );
    let suite = probes_suite(&out_dir);
    let case = |name: &str| {
        suite
            .cases
            .iter()
            .find(|c| c.name.ends_with(&format!("::{name}")))
            .unwrap_or_else(|| {
                panic!(
                    "no case {name} in {:?}",
                    suite.cases.iter().map(|c| &c.name).collect::<Vec<_>>()
                )
            })
    };
    assert!(case("db.xact_commit at most 0").status.is_failure());
    assert!(case("db.deadlocks at most 0").status.is_success());
    assert!(
        out.stdout.contains("probe db (postgres of `db`"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("probe limit FAILED"), "{}", out.stdout);
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("### Probes"), "{summary}");
}

/// A database that does not answer: the probe is missing (with why), the run goes on; with a limit
/// the check fails (it cannot pass) and the gate with it.
#[test]
fn a_probe_that_cannot_connect_is_missing_and_the_run_goes_on() {
    let port = free_loopback_port().unwrap();
    let dependency = format!("url = \"postgres://postgres@127.0.0.1:{port}/postgres\"");
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &config(&dependency, ""));
    if out.code != Some(INVALID_RUN) {
        out.assert_code(0);
    }
    assert!(
        out.stderr
            .contains("Warning probe `db` is missing: cannot connect"),
        "{}",
        out.stderr
    );
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    assert_eq!(result["status"], "complete");
    assert_eq!(result["probes"][0]["status"], "missing");
    assert!(
        result["probes"][0]["missing"]
            .as_str()
            .unwrap()
            .contains(&format!("127.0.0.1:{port}")),
        "{}",
        result["probes"][0]
    );

    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &config(&dependency, "limits = { deadlocks = 0 }"),
    );
    out.assert_code(REGRESSION);
    let result = read_result(&dir.path().join("out"));
    assert_eq!(result["probe_checks"][0]["passed"], false);
    assert!(
        result["probe_checks"][0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be checked"),
        "{}",
        result["probe_checks"][0]
    );
}

/// A `prometheus` probe of the demo's own `/metrics`, with the leak knob on: the sessions and the
/// retained bytes are sampled into result.json (schema-valid), the bytes grow through the soak,
/// a limit on the sessions that cannot hold fails the gate with its own JUnit case, and a series
/// the page does not expose is `unseen` and fails its limit (a typo never passes).
#[test]
fn a_prometheus_probe_scrapes_the_targets_own_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
[target]
bin = "demo-service"
ready = { http = "/health", timeout = "60s", interval = "100ms" }
env = { DEMO_LEAK_BYTES = "4096" }

[[probe]]
kind = "prometheus"
series = ["demo_sessions", "demo_leaked_bytes", "demo_transfers_total", "demo_sesions"]
limits = { demo_sessions = 1, demo_sesions = 100 }

[slo]
min-requests = 10             # a short step is judged, so the soak has a capacity to run at

[workload]
sessions-per-sec = 20
[[workload.operation]]
name = "login"
request = { method = "POST", path = "/login", json = { user = "u{{session}}" } }

[ramp]
steps = ["100%"]
hold = "2s"
warmup = "200ms"
refine = 0

[soak]
duration = "5s"

[paired]
mode = "stored"
"#;
    let out = run(dir.path(), text);
    out.assert_code(REGRESSION);
    let out_dir = dir.path().join("out");
    let result = read_result(&out_dir);
    assert_matches_result_schema(&result);
    let probe = &result["probes"][0];
    assert_eq!(probe["name"], "metrics", "{probe:#}");
    assert_eq!(probe["kind"], "prometheus");
    assert_eq!(probe["dependency"], "target");
    assert_eq!(probe["status"], "sampled", "{probe:#}");
    assert_eq!(probe["series"]["demo_sessions"], "gauge");
    assert_eq!(probe["series"]["demo_transfers_total"], "counter");
    assert_eq!(probe["unseen"], serde_json::json!(["demo_sesions"]));
    let last = probe["samples"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["values"]["demo_sessions"].as_f64().unwrap() >= 20.0,
        "{last:#}"
    );
    assert!(
        last["values"]["demo_leaked_bytes"].as_f64().unwrap() >= 20.0 * 4096.0,
        "{last:#}"
    );
    // Every login retains 4 KiB: the bytes grow through the soak, with an interval above zero.
    let slope = &probe["soak_slopes"]["demo_leaked_bytes"];
    assert!(slope["low"].as_f64().unwrap() > 0.0, "{probe:#}");
    let checks: Vec<(&str, bool)> = result["probe_checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["series"].as_str().unwrap(),
                c["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(checks, [("demo_sesions", false), ("demo_sessions", false)]);
    let suite = probes_suite(&out_dir);
    assert_eq!(suite.cases.len(), 2);
    assert!(
        out.stdout.contains("probe metrics (prometheus of `target`"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("never exposed: demo_sesions"),
        "{}",
        out.stdout
    );
}
