//! Paired mode end to end (issue 13): two demo services started by the test, the head given with
//! `--url` and the base with `--base-url`, alternate through both ramps and then through blocks
//! of the same schedule slices. An A/A run never regresses; a head slowed by 5 ms per request
//! is a regression of its latency, named with its interval; the result records the mode, the
//! blocks and the pairs, and validates against the schema.

use loadgate_tests::{
    DemoProcess, LoadgateCommand, RunOutput, assert_matches_result_schema, git, load_lock,
    read_result,
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

/// `[paired] adaptive = true` (issue 13's sequential design) end to end: with a head 5 ms slower
/// the verdict decides at an early look, so the run stops well before its most pairs, and the
/// result records the looks and why it stopped.
#[test]
fn an_adaptive_paired_run_stops_at_the_look_that_decides() {
    let _load = load_lock();
    let dir = tempfile::tempdir().unwrap();
    let config = CONFIG
        .replace("pairs = 10", "pairs = 40\nadaptive = true")
        .replace("block = \"1500ms\"", "block = \"1s\"");
    std::fs::write(dir.path().join("loadgate.toml"), config).unwrap();
    let base = DemoProcess::start(&[]);
    let slow = DemoProcess::start(&[("DEMO_DELAY_MS", "5")]);
    let out = paired_run(dir.path(), &slow.url, &base.url, &[]);
    out.assert_code(REGRESSION);
    let result = read_result(&dir.path().join("out"));
    assert_matches_result_schema(&result);
    let design = &result["paired"]["design"];
    assert_eq!(design["adaptive"], true, "{design}");
    let looks: Vec<u64> = design["looks"]
        .as_array()
        .expect("the looks are recorded")
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    assert!(
        !looks.is_empty() && looks.windows(2).all(|w| w[0] < w[1]),
        "{looks:?}"
    );
    assert_eq!(
        *looks.last().unwrap(),
        40,
        "the last look is at the most pairs: {looks:?}"
    );
    let pairs = result["paired"]["pairs"].as_array().unwrap().len() as u64;
    assert!(
        pairs < 40 && looks.contains(&pairs),
        "a 5 ms slower head decides at an early look, not after all 40 pairs: {pairs} pair(s), looks {looks:?}"
    );
    let why = design["stopped_early"].as_str().unwrap_or_default();
    assert!(
        why.contains("decided") && why.contains(&format!("{pairs} pairs")),
        "{design}"
    );
    assert!(out.stdout.contains("adaptive"), "{}", out.stdout);
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

/// A service with no dependencies, so that building it (and its base, in a worktree) takes a
/// second: it answers every request with 200 after `DELAY_MS`.
const TINY_MAIN: &str = r#"use std::io::{Read, Write};
use std::net::TcpListener;

const DELAY_MS: u64 = DELAY;

fn main() {
    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".to_owned());
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).expect("bind");
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let mut request = Vec::new();
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(DELAY_MS));
                if stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .is_err()
                {
                    return;
                }
            }
        });
    }
}
"#;

const TINY_CONFIG: &str = r#"[target]
bin = "tiny"
ready = { http = "/", timeout = "20s" }

[workload]
seed = 5
sessions-per-sec = 40

[[workload.operation]]
name = "home"
request = { path = "/" }

[generator]
max-lag = "250ms"

[slo]
min-requests = 10

[paired]
pairs = 10
block = "1s"
warmup = "200ms"
"#;

/// A repository whose `main` has the tiny service with `base_delay` (or `base_main` as its source)
/// and whose `feature` branch, checked out, has it with `head_delay`.
fn tiny_repo(base_main: &str, head_delay: u64) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), base_main).unwrap();
    std::fs::write(dir.join("loadgate.toml"), TINY_CONFIG).unwrap();
    std::fs::write(dir.join(".gitignore"), "/target\nCargo.lock\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
    git(dir, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        dir.join("src/main.rs"),
        TINY_MAIN.replace("DELAY;", &format!("{head_delay};")),
    )
    .unwrap();
    git(dir, &["commit", "-q", "-am", "head"]);
    repo
}

fn worktrees(repo: &Path) -> usize {
    let out = std::process::Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(repo)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}

fn bin_run(repo: &Path, extra: &[&str]) -> RunOutput {
    LoadgateCommand::new([
        "run",
        "--profile",
        "quick",
        "--target",
        "process",
        "--manifest-path",
    ])
    .arg_path(repo.join("Cargo.toml"))
    .args(["--out-dir"])
    .arg_path(repo.join("out"))
    .args(extra)
    .current_dir(repo)
    .output()
}

#[test]
fn a_bin_target_pairs_with_its_merge_base_built_in_a_worktree() {
    let _load = load_lock();
    // The base answers at once, the head 5 ms later.
    let repo = tiny_repo(&TINY_MAIN.replace("DELAY;", "0;"), 5);
    let store = repo.path().join("store");
    let store_arg = format!("dir:{}", store.display());
    let out = bin_run(
        repo.path(),
        &[
            "--paired",
            "--save-baseline",
            "--baseline-store",
            &store_arg,
        ],
    );
    out.assert_code(REGRESSION);
    assert!(out.stderr.contains("Paired head:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("the merge-base with main"),
        "{}",
        out.stderr
    );
    let result = read_result(&repo.path().join("out"));
    assert_matches_result_schema(&result);
    assert_eq!(result["mode"], "paired");
    assert_eq!(result["paired"]["base"]["source"], "built");
    let base_commit = std::process::Command::new("git")
        .args(["rev-parse", "main"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(
        result["paired"]["base"]["commit"].as_str().unwrap(),
        String::from_utf8_lossy(&base_commit.stdout).trim()
    );
    // Both sides are stored, each under its own commit, as paired results.
    let head_commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    for commit in [&base_commit.stdout, &head_commit.stdout] {
        let commit = String::from_utf8_lossy(commit).trim().to_owned();
        let text = std::fs::read_to_string(store.join(format!("{commit}.json")))
            .unwrap_or_else(|e| panic!("no stored result for {commit}: {e}\n{}", out.stderr));
        let note: serde_json::Value = serde_json::from_str(&text).unwrap();
        let stored = &note["entries"][0]["result"];
        assert_eq!(stored["git"]["commit"], commit.as_str());
        assert_eq!(stored["mode"], "paired");
        assert_matches_result_schema(stored);
    }
    assert!(
        out.stderr.contains("Saved the base's side"),
        "{}",
        out.stderr
    );
    assert_eq!(worktrees(repo.path()), 1, "the base's worktree was removed");
    // The base's binary is kept (for the next run), its build dir is its own.
    assert!(repo.path().join("target/loadgate/base-target").is_dir());
}

#[test]
fn a_base_that_does_not_build_exits_20_with_its_build_output_and_a_bad_ref_exits_2() {
    let repo = tiny_repo("fn main() { this is not rust }\n", 0);
    let out = bin_run(repo.path(), &["--paired"]);
    out.assert_code(20);
    assert!(out.stderr.contains("error"), "{}", out.stderr);
    assert!(
        !repo.path().join("out/result.json").exists(),
        "no verdict is written for a run whose base did not build"
    );
    assert_eq!(worktrees(repo.path()), 1, "the base's worktree was removed");

    let bad = bin_run(repo.path(), &["--paired", "--base-ref", "no-such-branch"]);
    bad.assert_code(USAGE);
    assert!(bad.stderr.contains("no-such-branch"), "{}", bad.stderr);
}
