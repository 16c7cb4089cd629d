//! Booting the demo service as a container and as a process through `cargo loadgate run`, seeing it
//! answer and grow under a leak, and finding nothing left afterwards — also after SIGINT and SIGTERM.

use loadgate_tests::{
    LoadgateCommand, RunGuard, assert_matches_result_schema, containers_with_label, demo_manifest,
    docker_or_skip, load_lock, process_alive, read_result, unique_run_id, wait_until,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

const INTERRUPTED: i32 = 130;
const TERMINATED: i32 = 143;

/// Bytes the demo keeps for good per request in the leak tests.
const LEAK_BYTES: u64 = 20_000;

fn run_demo(kind: &str, run_id: &str, out_dir: &std::path::Path) -> loadgate_tests::RunOutput {
    let _load = load_lock();
    // Stored mode, pinned: `auto` pairs on a branch ahead of the default one, and these tests
    // check one side's boot, soak and cleanup, not pairing.
    LoadgateCommand::new([
        "run",
        "--mode",
        "stored",
        "--profile",
        "e2e",
        "--target",
        kind,
        "--manifest-path",
    ])
    .arg_path(demo_manifest())
    .args([
        "--env",
        &format!("DEMO_LEAK_BYTES={LEAK_BYTES}"),
        "--out-dir",
    ])
    .arg_path(out_dir)
    .env("LOADGATE_RUN_ID", run_id)
    .output()
}

/// Checks what every leak run must show: the service answered, RSS grew by roughly what it was told
/// to retain, and the figures are the ones the run measured.
fn assert_answered_and_grew(result: &serde_json::Value) {
    assert_matches_result_schema(result);
    assert_eq!(result["status"], "complete", "{result:#}");
    assert_eq!(result["valid"], true);
    let phases = result["phases"].as_array().unwrap();
    assert!(
        phases.len() >= 2,
        "the quick plan runs ramp steps and a soak"
    );
    // The demo's flow needs captures to work: the login token for /accounts, an account id for its
    // transactions and transfers. Every answer of every phase must be correct, no session abandoned.
    for phase in phases {
        for op in phase["operations"].as_array().unwrap() {
            let counters = &op["counters"];
            assert_eq!(
                counters["ok"], counters["sent"],
                "{} {}: {counters}",
                phase["name"], op["name"]
            );
        }
        assert_eq!(
            phase["counters"]["sessions_abandoned"], 0,
            "{}",
            phase["name"]
        );
    }
    let ok: u64 = phases
        .iter()
        .flat_map(|p| p["operations"].as_array().unwrap())
        .map(|op| op["counters"]["ok"].as_u64().unwrap())
        .sum();
    assert!(ok > 100, "only {ok} correct answers");
    let soak = phases
        .iter()
        .find(|p| p["name"] == "soak")
        .expect("a soak phase");
    let transfers = soak["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "transfer")
        .expect("the demo workload has a transfer operation");
    assert!(
        transfers["counters"]["ok"].as_u64().unwrap() > 0,
        "no transfer was made"
    );

    let samples = result["resources"].as_array().unwrap();
    assert!(samples.len() >= 4, "{} resource samples", samples.len());
    let first = samples.first().unwrap()["rss_bytes"].as_u64().unwrap();
    let last = samples.last().unwrap()["rss_bytes"].as_u64().unwrap();
    // Every request retains LEAK_BYTES; at least half of that must show in RSS.
    let sent: u64 = phases
        .iter()
        .map(|p| p["requests_total"].as_u64().unwrap())
        .sum();
    let expected = sent * LEAK_BYTES;
    assert!(
        last > first + expected / 2,
        "RSS grew {} bytes over {sent} requests leaking {LEAK_BYTES} each",
        last.saturating_sub(first)
    );
    // The soak's RSS slope sees the leak: its whole interval lies above zero.
    let rss_slope = &result["soak"]["slopes"]["rss_bytes_per_sec"];
    assert!(rss_slope["low"].as_f64().unwrap() > 0.0, "{rss_slope}");
}

#[test]
fn process_target_boots_measures_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = unique_run_id("process");
    let out = run_demo("process", &run_id, dir.path());
    out.assert_code(0);
    let result = read_result(dir.path());
    assert_eq!(result["target"]["kind"], "process");
    assert_answered_and_grew(&result);
    let pid = result["target"]["pid"].as_i64().unwrap() as i32;
    assert!(
        !process_alive(pid),
        "the demo process {pid} outlived the run"
    );
}

#[test]
fn container_target_boots_measures_and_leaves_nothing() {
    if !docker_or_skip("container_target_boots_measures_and_leaves_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run_id = unique_run_id("container");
    let _guard = RunGuard {
        run_id: run_id.clone(),
    };
    let out = run_demo("container", &run_id, dir.path());
    out.assert_code(0);
    let result = read_result(dir.path());
    assert_eq!(result["target"]["kind"], "container");
    assert!(
        result["target"]["base_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert_answered_and_grew(&result);
    // The build's own lines (cargo's, the image builder's `Step 1/6 : …`) go to the build log,
    // not the terminal, which gets one line per build.
    let log = std::fs::read_to_string(dir.path().join("build.log")).expect("build.log");
    assert!(
        log.contains("Finished"),
        "cargo's lines are in the log:\n{log}"
    );
    for line in ["Step 1/", "Finished `release`", "Compiling demo-service"] {
        assert!(
            !out.stderr.contains(line),
            "{line:?} on the terminal:\n{}",
            out.stderr
        );
    }
    assert!(out.stderr.contains("Building "), "{}", out.stderr);
    let left = containers_with_label(&format!("loadgate.run={run_id}"));
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

/// Starts a run, waits until its phase is sending, sends `signal`, and checks the exit code and that
/// neither the service process nor any container of the run is left.
fn signal_mid_run(kind: &str, signal: Signal, expected: i32) {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let run_id = unique_run_id(&format!("{kind}-{signal}"));
    let _guard = RunGuard {
        run_id: run_id.clone(),
    };
    let mut child = LoadgateCommand::new([
        "run",
        "--mode",
        "stored",
        "--profile",
        "ci",
        "--target",
        kind,
        "--manifest-path",
    ])
    .arg_path(demo_manifest())
    .args(["--out-dir"])
    .arg_path(dir.path())
    .env("LOADGATE_RUN_ID", &run_id)
    .spawn();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Builds may run first; the ci profile then sends for 20 s, so there is time to interrupt it.
    let mut pid = None;
    let mut seen = Vec::new();
    let started = loop {
        match rx.recv_timeout(Duration::from_secs(600)) {
            Ok(line) => {
                if let Some(rest) = line.split("(pid ").nth(1) {
                    pid = rest.trim_end_matches(')').parse::<i32>().ok();
                }
                // A finished ramp step prints `ramp-25%: offered …`; by then result.json holds it.
                let sending = line.contains("ramp-") && line.contains(": offered");
                seen.push(line);
                if sending {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    assert!(
        started,
        "the run never finished a step:\n{}",
        seen.join("\n")
    );
    let pid = pid.unwrap_or_else(|| panic!("no target pid printed:\n{}", seen.join("\n")));
    assert!(process_alive(pid));
    if kind == "container" {
        assert!(!containers_with_label(&format!("loadgate.run={run_id}")).is_empty());
    }
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let exited = wait_until(Duration::from_secs(60), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = child.kill();
    }
    assert!(
        exited,
        "cargo-loadgate did not exit within 60 s of {signal}"
    );
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(expected),
        "exit status after {signal}: {status:?}"
    );
    assert!(
        wait_until(Duration::from_secs(5), || !process_alive(pid)),
        "the target process {pid} outlived {signal}"
    );
    let left = containers_with_label(&format!("loadgate.run={run_id}"));
    assert!(left.is_empty(), "containers left after {signal}: {left:?}");
    // What was measured before the signal is kept: a valid result with the finished steps.
    let result = read_result(dir.path());
    assert_matches_result_schema(&result);
    assert_eq!(result["status"], "running");
    assert!(!result["phases"].as_array().unwrap().is_empty());
    assert!(!result["ramp"]["steps"].as_array().unwrap().is_empty());
}

#[test]
fn sigint_during_a_process_run_leaves_nothing() {
    signal_mid_run("process", Signal::SIGINT, INTERRUPTED);
}

#[test]
fn sigterm_during_a_process_run_leaves_nothing() {
    signal_mid_run("process", Signal::SIGTERM, TERMINATED);
}

#[test]
fn sigint_during_a_container_run_leaves_nothing() {
    if docker_or_skip("sigint_during_a_container_run_leaves_nothing") {
        signal_mid_run("container", Signal::SIGINT, INTERRUPTED);
    }
}

#[test]
fn sigterm_during_a_container_run_leaves_nothing() {
    if docker_or_skip("sigterm_during_a_container_run_leaves_nothing") {
        signal_mid_run("container", Signal::SIGTERM, TERMINATED);
    }
}
