//! Replicas with client-side failover, end to end (issue 15, seed 003): `cargo loadgate run
//! --profile replicas` boots two demo replicas (as processes, and as containers), each session
//! sticking to one; 10 s
//! into the soak's measured part replica 1 is killed, and 10 s later booted again on its port.
//! The sessions on it fail over to replica 0, the kill and the restart are verified from the
//! replica's state, and the failover window is stated in ms.

use loadgate_tests::{
    LoadgateCommand, assert_matches_result_schema, case_names, containers_with_label,
    demo_manifest, docker_or_skip, junit_suite, load_lock, read_result, unique_run_id,
};

#[test]
fn killing_one_of_two_process_replicas_fails_its_sessions_over_and_the_restart_is_verified() {
    kill_one_of_two("process", &unique_run_id("replicas"));
}

/// The same in containers: the kill is the engine's, and the restart a new container from the
/// same image on the same port of the host's network.
#[test]
fn killing_one_of_two_container_replicas_fails_its_sessions_over_and_the_restart_is_verified() {
    if !docker_or_skip("killing_one_of_two_container_replicas") {
        return;
    }
    let run_id = unique_run_id("replicas");
    kill_one_of_two("container", &run_id);
    // The killed replica's container, and the one booted in its place: none is left behind.
    let left = containers_with_label(&format!("loadgate.run={run_id}"));
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

fn kill_one_of_two(target: &str, run_id: &str) {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = LoadgateCommand::new([
        "run",
        "--mode",
        "stored",
        "--profile",
        "replicas",
        "--target",
        target,
        "--manifest-path",
    ])
    .arg_path(demo_manifest())
    .args(["--out-dir"])
    .arg_path(dir.path())
    .env("LOADGATE_RUN_ID", run_id)
    .output();
    let result = read_result(dir.path());
    assert_matches_result_schema(&result);
    assert!(
        out.stderr.contains("Replica 1 at http://127.0.0.1:"),
        "{}",
        out.stderr
    );
    assert_eq!(
        result["replicas"].as_array().map(Vec::len),
        Some(1),
        "the replica beyond the first: {result:#}"
    );
    let soak = result["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "soak")
        .expect("a soak phase");
    let replicas = soak["replicas"].as_array().expect("per-replica figures");
    assert_eq!(replicas.len(), 2, "{soak:#}");
    // Both replicas served the soak; the live one never failed.
    assert!(
        replicas
            .iter()
            .all(|r| r["attempts"].as_u64().unwrap() > 50),
        "{replicas:#?}"
    );
    assert_eq!(replicas[0]["failed"], 0, "{replicas:#?}");
    assert_eq!(replicas[0]["errors"], 0, "{replicas:#?}");
    // The dead one's sessions went to replica 0 on the connect errors after the kill.
    let dead = &replicas[1];
    assert!(dead["failovers"].as_u64().unwrap() >= 1, "{dead:#}");
    assert!(dead["ejections"].as_u64().unwrap() >= 1, "{dead:#}");
    let fault = &result["faults"][0];
    assert_eq!(fault["name"], "kill-replica", "{result:#}\n{}", out.stderr);
    assert_eq!(fault["change"], "kill replica 1");
    assert_eq!(fault["verified"], true, "{fault:#}\n{}", out.stderr);
    let applied = fault["applied_at_ms"].as_f64().unwrap();
    let removed = fault["removed_at_ms"].as_f64().unwrap();
    assert!((applied - 10_000.0).abs() < 300.0, "{fault:#}");
    assert!((removed - 20_000.0).abs() < 1_000.0, "{fault:#}");
    let replica = &fault["replica"];
    assert_eq!(replica["replica"], 1);
    assert_eq!(replica["action"], "kill");
    // Seen exited within the 2 s the check allows, and ready again after its restart.
    let exited = replica["confirmed_at_ms"].as_f64().unwrap();
    assert!(exited >= applied && exited - applied < 2_000.0, "{fault:#}");
    let back = replica["back_at_ms"].as_f64().unwrap();
    assert!(back > removed, "{fault:#}");
    // Only the requests in flight on it when it died can fail: the failover window is the time
    // from the kill to the last of them, well under a second, and replica 0 saw no error.
    let window = replica["failover_window_ms"].as_f64().unwrap();
    assert!((0.0..1_000.0).contains(&window), "{fault:#}");
    assert_eq!(replica["errors_elsewhere"], 0, "{fault:#}");
    assert_eq!(replica["failovers"], dead["failovers"]);
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("### Replicas"), "{summary}");
    assert!(
        summary.contains("✅ fault kill-replica (kill replica 1, soak "),
        "{summary}"
    );
    out.assert_code(0);
    // JUnit, read back by an independent parser: the fault's case and its recovery check.
    let faults = junit_suite(dir.path(), "faults");
    let names = case_names(&faults);
    assert_eq!(
        names,
        [
            "fault kill-replica verified",
            "time to stable SLO after fault kill-replica within 5s",
            "fault kill-replica within its degraded objective"
        ]
    );
}
