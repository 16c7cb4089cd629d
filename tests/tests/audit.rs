//! The post-run audit against the demo service as a process (issue 15): the demo's own `audit`
//! profile (retries on, the ledger audit) driven at a demo started by the test with
//! `DEMO_FAIL_AFTER_COMMIT`, with and without the duplicate-effects bug. The demo is given with
//! `--url`, so the knobs are the test's and the ledger starts empty.

use loadgate_tests::{
    DemoProcess, LoadgateCommand, RunOutput, URL_TARGET_CONFIG, assert_matches_result_schema,
    demo_manifest, load_lock, read_result,
};
use std::path::Path;

const PASS: i32 = 0;
const REGRESSION: i32 = 10;

fn audit_run(url: &str, out: &Path) -> RunOutput {
    LoadgateCommand::new(["run", "--profile", "audit", "--manifest-path"])
        .arg_path(demo_manifest())
        .args(["--url", url, "--out-dir"])
        .arg_path(out)
        .output()
}

/// Parses the run's JUnit report with an independent JUnit parser; the audit's case.
fn audit_case(out: &Path) -> junit_parser::TestCase {
    let file = std::fs::File::open(out.join("junit.xml")).expect("junit.xml written");
    let suites =
        junit_parser::from_reader(std::io::BufReader::new(file)).expect("junit.xml parses");
    suites
        .suites
        .into_iter()
        .find(|s| s.name == "audit")
        .and_then(|s| {
            s.cases
                .into_iter()
                .find(|c| c.original_name == "audit ledger")
        })
        .expect("an audit suite with the ledger's case")
}

#[test]
fn duplicated_effects_fail_the_ledger_audit_with_exit_10_and_a_correct_ledger_passes() {
    let _load = load_lock();
    let out = tempfile::tempdir().unwrap();

    // The bug: a retry after a failure-after-commit books the transfer again.
    let buggy = DemoProcess::start(&[
        ("DEMO_FAIL_AFTER_COMMIT", "0.2"),
        ("DEMO_DUPLICATE_EFFECTS", "1"),
    ]);
    let caught = audit_run(&buggy.url, out.path());
    caught.assert_code(REGRESSION);
    drop(buggy);
    assert!(
        caught
            .stdout
            .contains("audit `ledger` (GET /ledger/summary) failed"),
        "{}",
        caught.stdout
    );
    let result = read_result(out.path());
    assert_matches_result_schema(&result);
    let audit = &result["audits"][0];
    assert_eq!(audit["status"], "failed", "{audit}");
    assert_eq!(audit["checks"][0]["pointer"], "/duplicates");
    assert!(
        audit["checks"][0]["answer"].as_f64().unwrap() > 0.0,
        "{audit}"
    );
    assert_eq!(audit["checks"][0]["held"], false);
    // The retries were attempts of logical operations, never extra operations.
    let transfer = |phase: &serde_json::Value| {
        phase["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "transfer")
            .cloned()
            .unwrap()
    };
    let (logical, attempts) = result["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| transfer(p)["tally"].clone())
        .fold((0, 0), |(l, a), t| {
            (
                l + t["logical"].as_u64().unwrap(),
                a + t["attempts"].as_u64().unwrap(),
            )
        });
    assert!(
        attempts > logical,
        "{attempts} attempts of {logical} logical operations"
    );
    assert_eq!(
        audit["checks"][2]["expected"].as_f64().unwrap() as u64,
        logical
    );
    assert_eq!(result["verdict"]["outcome"], "regression");
    let case = audit_case(out.path());
    assert!(case.status.is_failure(), "{:?}", case.status);

    // The same service without the bug: the retry finds its booking, the ledger reconciles.
    let correct = DemoProcess::start(&[("DEMO_FAIL_AFTER_COMMIT", "0.2")]);
    let passed = audit_run(&correct.url, out.path());
    passed.assert_code(PASS);
    let result = read_result(out.path());
    assert_matches_result_schema(&result);
    assert_eq!(
        result["audits"][0]["status"], "passed",
        "{}",
        result["audits"]
    );
    assert!(
        passed.stdout.contains("retries: `transfer`:"),
        "{}",
        passed.stdout
    );
    assert!(audit_case(out.path()).status.is_success());
}

/// An audit whose answer is not the expected one says why and fails the gate (the case of no
/// answer at all, never a pass either, is pinned in `compare::audit`).
#[test]
fn an_audit_whose_answer_is_wrong_fails_the_gate_with_exit_10() {
    let _load = load_lock();
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let demo = DemoProcess::start(&[]);
    // A route the demo does not have: an answer, but not the expected one.
    let config = format!(
        r#"{URL_TARGET_CONFIG}
[paired]
mode = "stored"

[[audit]]
name = "missing"
request = {{ path = "/no/such/route" }}
expect = {{ status = 200 }}
check = [{{ pointer = "/effects", at-most = "logical.landing" }}]
"#
    );
    std::fs::write(dir.path().join("loadgate.toml"), config).unwrap();
    let out_run = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(dir.path().join("loadgate.toml"))
        .args(["--url", &demo.url, "--out-dir"])
        .arg_path(out.path())
        .output();
    out_run.assert_code(REGRESSION);
    let result = read_result(out.path());
    assert_matches_result_schema(&result);
    let audit = &result["audits"][0];
    assert_eq!(audit["status"], "failed", "{audit}");
    assert!(
        audit["reason"]
            .as_str()
            .unwrap()
            .starts_with("the answer is not the expected one"),
        "{audit}"
    );
}
