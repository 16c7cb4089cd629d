//! `cargo loadgate report`: several run results side by side, driving the real binary on the two
//! checked-in results of tests/fixtures/report/ (real runs of the demo service, trimmed) and on
//! unusable input. No load is sent.

use loadgate_tests::{LoadgateCommand, assert_matches_result_schema, workspace_root};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Exit codes from `cli::ExitCode`, restated here on purpose: a renumbering must break this test.
mod code {
    pub const PASS: i32 = 0;
    pub const OTHER_ERROR: i32 = 1;
    pub const USAGE: i32 = 2;
}

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/report").join(name)
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `result` as `dir/<name>/result.json`, so the run is labelled `name`.
fn write_result(dir: &Path, name: &str, result: &Value) -> PathBuf {
    let path = dir.join(name).join("result.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(result).unwrap()).unwrap();
    path
}

#[test]
fn the_fixtures_are_valid_run_results() {
    for name in ["before.json", "after.json"] {
        assert_matches_result_schema(&read(&fixture(name)));
    }
}

#[test]
fn two_runs_are_reported_side_by_side_on_the_terminal_and_in_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("report.md");
    let out = LoadgateCommand::new(["report"])
        .arg_path(fixture("before.json"))
        .arg_path(fixture("after.json"))
        .args(["--markdown"])
        .arg_path(&markdown)
        .output();
    out.assert_code(code::PASS);
    let stdout = &out.stdout;
    assert!(
        stdout.starts_with("cargo-loadgate report: 2 runs side by side\n"),
        "{stdout}"
    );
    // Named after the files (both in one directory), the first the reference of the ratios.
    assert!(
        stdout.contains("ratios (×) are to the first run, before;"),
        "{stdout}"
    );
    // The capacity: the first knee is a lower bound, so the ratio is an upper bound.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("after ") && l.ends_with("62.5    ≤ 0.33×")),
        "{stdout}"
    );
    // The ramp sentence, the soak per operation, the slopes, generator health and verdicts.
    for expected in [
        "  after: held through 62.5 req/s; broke at 69.0 req/s: `landing` p99 321 ms > 200 ms",
        "60% of the baseline's knee",
        "\nall           before      3394      23     0.38          –    31.12          –\n",
        "slope per s (95% interval)",
        "\ngenerator health\n",
        "  after: inconclusive: the calibration differs by -32.8%",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in\n{stdout}"
        );
    }
    assert!(
        stdout.ends_with(&format!("\nmarkdown: {}\n", markdown.display())),
        "{stdout}"
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr);

    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        md.starts_with("## cargo-loadgate report: 2 runs side by side\n"),
        "{md}"
    );
    for expected in [
        "| after | 62.5 | ≤ 0.33× |",
        "| all | after | 2062 | 7 | 3796.99 | 9888× | 7282.69 | 234× |",
        "- **after**: ⚠️ inconclusive: the calibration differs",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in\n{md}");
    }
}

#[test]
fn runs_of_other_workloads_are_still_reported_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let before = write_result(dir.path(), "vm", &read(&fixture("before.json")));
    let mut other = read(&fixture("after.json"));
    other["config_hash"] = "a".repeat(64).into();
    let other = write_result(dir.path(), "cluster", &other);
    let out = LoadgateCommand::new(["report"])
        .arg_path(&before)
        .arg_path(&other)
        .output();
    out.assert_code(code::PASS);
    assert!(
        out.stdout
            .contains("note: cluster ran another configuration than vm (config aaaaaaaaaaaa vs "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("so their loads are not the same"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\ncluster "), "{}", out.stdout);
}

#[test]
fn unusable_results_are_refused_naming_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing/result.json");
    let not_json = dir.path().join("not-json.json");
    std::fs::write(&not_json, "<html>").unwrap();
    let mut newer = read(&fixture("before.json"));
    newer["format_version"] = 2.into();
    let newer = write_result(dir.path(), "newer", &newer);
    let mut no_ramp = read(&fixture("before.json"));
    no_ramp["ramp"] = Value::Null;
    let no_ramp = write_result(dir.path(), "no-ramp", &no_ramp);

    let out = LoadgateCommand::new(["report"])
        .arg_path(fixture("before.json"))
        .arg_path(&missing)
        .arg_path(&not_json)
        .arg_path(&newer)
        .arg_path(&no_ramp)
        .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stdout.is_empty(),
        "no report is printed:\n{}",
        out.stdout
    );
    let stderr = &out.stderr;
    for expected in [
        format!("error: failed to read {}\n  caused by: ", missing.display()),
        format!(
            "error: {} is not a run result: it is not JSON\n",
            not_json.display()
        ),
        format!(
            "error: {} was written in result format 2, newer than 1, the newest this cargo-loadgate reads\nhint: ",
            newer.display()
        ),
        format!(
            "error: {} has no ramp: the run measured no capacity to put beside the others\n",
            no_ramp.display()
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_markdown_file_that_cannot_be_written_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("no-such-dir/report.md");
    let out = LoadgateCommand::new(["report"])
        .arg_path(fixture("before.json"))
        .args(["--markdown"])
        .arg_path(&markdown)
        .output();
    out.assert_code(code::OTHER_ERROR);
    assert!(
        out.stderr.starts_with(&format!(
            "error: failed to write the Markdown report to {}\n",
            markdown.display()
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn report_needs_at_least_one_result() {
    let out = LoadgateCommand::new(["report"]).output();
    out.assert_code(code::USAGE);
    assert!(out.stderr.contains("<RESULT.json>..."), "{}", out.stderr);
}
