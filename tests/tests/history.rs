//! `cargo loadgate history` end to end, in a temporary repository with a `dir:` store: one real
//! quick run of the demo gives a result of the test's config (its config hash is the one the
//! command computes), and stored copies of it with their latencies scaled make a history of 12
//! commits with a step of +50% at the 8th, which carries a `Loadgate-Accept` trailer, and the two
//! oldest stored under another config hash. Checked: the listing, the change point at the right
//! commit (accepted), the JSON against docs/schema/history-v1.json, the series break, the "no
//! stored results" message and its exit code, and the bad-input exits.

use cargo_loadgate::baseline::{DirStore, Store, StoredEntry, StoredResult};
use cargo_loadgate::measure::LatencyHistogram;
use cargo_loadgate::result::{RunResult, result_from_value};
use loadgate_tests::{
    DemoProcess, LoadgateCommand, URL_TARGET_CONFIG, git, load_lock, read_result, repo_with_config,
    schema_errors, workspace_root,
};
use std::path::Path;

const PASS: i32 = 0;
const USAGE: i32 = 2;
const NO_BASELINE: i32 = 12;

/// `result` as measured at `commit` with every latency multiplied by `factor`.
fn scaled(result: &RunResult, commit: &str, factor: f64, config_hash: Option<&str>) -> RunResult {
    let mut r = result.clone();
    if let Some(g) = r.git.as_mut() {
        g.commit = commit.to_owned();
        g.dirty = false;
    }
    if let Some(h) = config_hash {
        r.config_hash = h.to_owned();
    }
    for phase in &mut r.phases {
        for op in &mut phase.measurement.operations {
            let mut h = LatencyHistogram::new();
            for v in op.latency.as_hdr().iter_recorded() {
                let micros = (v.value_iterated_to() as f64 * factor).round() as u64;
                for _ in 0..v.count_at_value() {
                    h.record_micros(micros.max(1));
                }
            }
            op.latency = h;
        }
    }
    r
}

/// `history` of the test's config in `repo`, reading `store`, with `extra` arguments.
fn history_command(repo: &Path, store: &str, extra: &[&str]) -> LoadgateCommand {
    LoadgateCommand::new([
        "history",
        "--config",
        "loadgate.toml",
        "--profile",
        "quick",
        "--baseline-store",
        store,
    ])
    .args(extra)
    .current_dir(repo)
}

fn history(repo: &Path, store: &str, extra: &[&str]) -> loadgate_tests::RunOutput {
    history_command(repo, store, extra).output()
}

#[test]
fn history_lists_the_series_finds_the_step_and_says_where_it_breaks() {
    let repo = repo_with_config(URL_TARGET_CONFIG);
    let out = tempfile::tempdir().unwrap();
    let r = repo.path();
    let store_dir = out.path().join("store");
    let store = format!("dir:{}", store_dir.display());

    // Nothing stored: where it looked, and the no-baseline code.
    let empty = history(r, &store, &[]);
    empty.assert_code(NO_BASELINE);
    assert!(
        empty
            .stderr
            .contains(&format!("no stored results of this config in {store}")),
        "{}",
        empty.stderr
    );
    assert!(
        empty.stderr.contains("looked at: 1 commit(s) from HEAD"),
        "{}",
        empty.stderr
    );

    // One real run of the demo: a result of this config.
    let measured = {
        let _load = load_lock();
        let demo = DemoProcess::start(&[]);
        LoadgateCommand::new([
            "run",
            "--profile",
            "quick",
            "--config",
            "loadgate.toml",
            "--url",
            &demo.url,
            "--out-dir",
        ])
        .arg_path(out.path().join("run"))
        .current_dir(r)
        .output()
        .assert_code(PASS);
        result_from_value(&read_result(&out.path().join("run"))).expect("the run's result reads")
    };

    // Twelve commits; the 8th (index 7) is slower on purpose and says so.
    let mut commits = Vec::new();
    for i in 0..12 {
        let mut args = vec!["commit", "-q", "--allow-empty", "-m"];
        let message = format!("commit {i}");
        args.push(&message);
        let trailer = "Loadgate-Accept: p50 +60%\nLoadgate-Reason: a new check";
        if i == 7 {
            args.extend(["-m", trailer]);
        }
        git(r, &args);
        commits.push(git(r, &["rev-parse", "HEAD"]));
    }
    // Jitter of a few percent, then +50% from commit 7; commits 0 and 1 under another config,
    // commit 4 with nothing stored.
    let jitter = [
        1.0, 1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.0, 1.03, 0.98, 1.01, 1.0,
    ];
    let dir = DirStore::new(&store_dir);
    for (i, commit) in commits.iter().enumerate() {
        if i == 4 {
            continue;
        }
        let step = if i >= 7 { 1.5 } else { 1.0 };
        let other = (i < 2).then_some("another-config");
        let result = scaled(&measured, commit, step * jitter[i], other);
        let entry = StoredEntry::from_result(StoredResult::new(&result), true, i as u64).unwrap();
        dir.save(&entry).unwrap();
    }

    let since = &commits[0];
    let listed = history_command(
        r,
        &store,
        &["--since", since, "--metric", "p50", "--out-dir"],
    )
    .arg_path(out.path().join("history"))
    .output();
    listed.assert_code(PASS);
    let short = |c: &str| c[..7].to_owned();
    let text = &listed.stdout;
    assert!(text.contains("p50 (all operations) | ms"), "{text}");
    for c in &commits {
        assert!(text.contains(&short(c)), "{} missing:\n{text}", short(c));
    }
    assert!(
        text.contains(&format!(
            "series break at {}…{} (2 commits): config changed",
            short(&commits[0]),
            short(&commits[1])
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "series break at {}: no result",
            short(&commits[4])
        )),
        "{text}"
    );
    assert!(text.contains("p50 (all operations) rose +"), "{text}");
    assert!(
        text.contains(&format!(
            "at {}; it lies at {}; accepted (`Loadgate-Accept: p50 +60%` in {})",
            short(&commits[7]),
            short(&commits[7]),
            short(&commits[7])
        )),
        "{text}"
    );
    assert!(out.path().join("history/history-p50.svg").exists());
    let md = std::fs::read_to_string(out.path().join("history/history.md")).unwrap();
    assert!(md.contains("### cargo loadgate history"), "{md}");
    assert!(md.contains(&short(&commits[7])), "{md}");

    // The document, printed and written, matches its schema and says the same.
    let json = history_command(r, &store, &["--json", "--out-dir"])
        .arg_path(out.path().join("history-json"))
        .output();
    json.assert_code(PASS);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("--json prints JSON");
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("history-json/history.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(doc, written);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("docs/schema/history-v1.json")).unwrap(),
    )
    .unwrap();
    let errors = schema_errors(&schema, &doc);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert_eq!(doc["format_version"], 1);
    // The walk reaches the first commit too (13 in all, the `service` commit with no result).
    assert_eq!(doc["commits"].as_array().unwrap().len(), 13);
    assert_eq!(doc["commits"][8]["accepted"], true);
    let p50 = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "p50" && m["operation"].is_null())
        .expect("p50 of all operations");
    assert_eq!(p50["points"].as_array().unwrap().len(), 9);
    let changes = p50["change_points"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["commit"], commits[7].as_str());
    assert_eq!(changes[0]["accepted"], true);
    let ratio = changes[0]["estimate"].as_f64().unwrap();
    assert!((1.35..1.65).contains(&ratio), "{ratio}");

    // Bad input: a --since that names nothing, a metric that does not exist, an operation the
    // results did not measure.
    let bad = history(r, &store, &["--since", "v9.9"]);
    bad.assert_code(USAGE);
    assert!(
        bad.stderr.contains("`v9.9` does not name a commit"),
        "{}",
        bad.stderr
    );
    let bad = history(r, &store, &["--metric", "p95"]);
    bad.assert_code(USAGE);
    assert!(
        bad.stderr
            .contains("unknown metric `p95`; history has `p50`, `p99`, `error-rate`, `capacity`"),
        "{}",
        bad.stderr
    );
    let bad = history(r, &store, &["--operation", "login"]);
    bad.assert_code(USAGE);
    assert!(
        bad.stderr.contains(
            "no stored result of the series measured an operation `login`; they measured \
             `landing`"
        ),
        "{}",
        bad.stderr
    );
}

#[test]
fn history_help_lists_the_flags() {
    let out = LoadgateCommand::new(["history", "--help"]).output();
    out.assert_code(PASS);
    insta::assert_snapshot!("history_help", out.stdout);
}
