//! Container dependencies end to end: with `--target container` the `postgres` preset follows the
//! target and runs as a container (the image packed from this machine's PostgreSQL by
//! `fixtures/postgres-image/build.sh`, since no registry is reachable), on the host's network, so
//! the demo (itself a container), the `[data]` steps and the probe reach it at 127.0.0.1. The
//! `[teardown]` reaches it before it goes, on a normal end and on SIGTERM, and no container of the
//! run is left. An image that is not local is never pulled without `pull = "missing"`.
//!
//! These need an engine and PostgreSQL's server binaries (to pack them); in CI both are required.

use loadgate_tests::{
    LoadgateCommand, RunGuard, RunOutput, assert_matches_result_schema, containers_with_label,
    docker_or_skip, load_lock, postgres_image, postgres_or_skip, read_result, unique_run_id,
    wait_until,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::time::Duration;

const TARGET_FAILED: i32 = 20;
const INVALID_RUN: i32 = 21;
const TERMINATED: i32 = 143;

/// The demo beside a containerised PostgreSQL (`image`), seeded with 50 accounts, probed, and a
/// teardown that counts the seeded accounts through the database into `counted`.
fn config(image: &str, soak: &str) -> String {
    let sql = loadgate_tests::workspace_root().join("fixtures/demo-service/sql");
    format!(
        r#"
[target]
bin = "demo-service"
env = {{ DATABASE_URL = "postgres://{{{{db.user}}}}@{{{{db.host}}}}:{{{{db.port}}}}/{{{{db.database}}}}" }}
ready = {{ http = "/health", timeout = "60s", interval = "100ms" }}

[[dependency]]
name = "db"
preset = "postgres"
image = "{image}"

[[probe]]
kind = "postgres"
dependency = "db"

[data]
tier = "small"
vars = {{ accounts = "50" }}
steps = [{{ name = "seed", sql = ["{schema}", "{seed_sql}"], dependency = "db" }}]

[teardown]
steps = [{{ name = "count", command = "sh", args = ["-c", "psql -X -q -t -A -h {{{{db.host}}}} -p {{{{db.port}}}} -U {{{{db.user}}}} -c 'SELECT count(*) FROM accounts' {{{{db.database}}}} > counted"] }}]

[workload]
seed = 42
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
duration = "{soak}"

[paired]
mode = "stored"
"#,
        schema = sql.join("schema.sql").display(),
        seed_sql = sql.join("seed.sql").display(),
    )
}

/// One run of a test: its config written in a directory of its own, its out-dir there, and its
/// run id, whose containers are removed when it is dropped (also when the test fails).
struct Run {
    dir: tempfile::TempDir,
    config: PathBuf,
    out_dir: PathBuf,
    run_id: String,
    _guard: RunGuard,
}

impl Run {
    fn new(name: &str, config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loadgate.toml");
        std::fs::write(&path, config).unwrap();
        let run_id = unique_run_id(name);
        Self {
            out_dir: dir.path().join("out"),
            config: path,
            dir,
            _guard: RunGuard {
                run_id: run_id.clone(),
            },
            run_id,
        }
    }

    /// `cargo loadgate run` of the demo as a container with this config.
    fn command(&self) -> LoadgateCommand {
        LoadgateCommand::new([
            "run",
            "-p",
            "demo-service",
            "--target",
            "container",
            "--config",
        ])
        .arg_path(&self.config)
        .args(["--out-dir"])
        .arg_path(&self.out_dir)
        .env("LOADGATE_RUN_ID", &self.run_id)
    }

    /// What the run's teardown counted through the database, if it ran.
    fn counted(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.dir.path().join("counted"))
    }
}

fn ready(test: &str) -> bool {
    docker_or_skip(test) && postgres_or_skip(test)
}

fn assert_no_container_left(run_id: &str) {
    let left = containers_with_label(&format!("loadgate.run={run_id}"));
    assert!(left.is_empty(), "containers of the run left: {left:?}");
}

/// A whole run: the dependency is a container of the packed image, the seed and the probe reach
/// it, the teardown counts the seeded rows through it, and nothing of the run is left.
#[test]
fn a_postgres_container_is_seeded_probed_torn_down_and_removed() {
    let test = "a_postgres_container_is_seeded_probed_torn_down_and_removed";
    if !ready(test) {
        return;
    }
    let image = postgres_image();
    let run = Run::new("container-dependency", &config(image, "2s"));
    let out = {
        let _load = load_lock();
        run.command().output()
    };
    // A generator the shared machine starved makes the run invalid (21): a judgement of the
    // machine, which this test of the dependency does not make.
    if out.code != Some(INVALID_RUN) {
        out.assert_code(0);
    }
    assert_no_container_left(&run.run_id);
    let result = read_result(&run.out_dir);
    assert_matches_result_schema(&result);
    let db = &result["dependencies"][0];
    assert_eq!(db["kind"], "container", "{db:#}");
    assert_eq!(db["preset"], "postgres");
    assert_eq!(db["host"], "127.0.0.1");
    assert_eq!(db["image"]["reference"], image);
    assert_eq!(db["image"]["pulled"], false);
    assert!(
        db["image"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("sha256:")),
        "{db:#}"
    );
    assert_eq!(db["container"].as_str().map(str::len), Some(12), "{db:#}");
    assert_eq!(result["target"]["kind"], "container");
    // The seed reached it: its checksum of the rows it loaded.
    let checksum = result["data"]["steps"][0]["output"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        checksum.len() == 32 && checksum.bytes().all(|b| b.is_ascii_hexdigit()),
        "{:#}",
        result["data"]
    );
    // The probe sampled it through the run, statements included (the preset preloads them).
    let probe = &result["probes"][0];
    assert_eq!(probe["status"], "sampled", "{probe:#}");
    assert!(probe.get("statements_missing").is_none(), "{probe:#}");
    assert!(
        probe["totals"]["xact_commit"].as_f64().unwrap_or(0.0) >= 1.0,
        "{probe:#}"
    );
    // The teardown ran while it still did.
    let counted = run
        .counted()
        .unwrap_or_else(|e| panic!("the teardown did not count ({e}):\n{}", out.stderr));
    assert_eq!(counted.trim(), "50", "{}", out.stderr);
    let log =
        std::fs::read_to_string(run.out_dir.join("dependency-db.log")).expect("its log is kept");
    assert!(
        log.contains("database system is ready to accept connections"),
        "{log}"
    );
}

/// SIGTERM mid-soak: the target goes first, the teardown still reaches the database, then its
/// container is removed; the run ends with 143.
#[test]
fn sigterm_mid_run_tears_down_through_the_database_then_removes_its_container() {
    let test = "sigterm_mid_run_tears_down_through_the_database_then_removes_its_container";
    if !ready(test) {
        return;
    }
    let image = postgres_image();
    let run = Run::new("container-dependency-sigterm", &config(image, "60s"));
    let _load = load_lock();
    let child = run.command().spawn();
    let pid = child.id();
    // result.json is first written once the target is up, beside its dependencies.
    let result_path = run.out_dir.join("result.json");
    let booted = wait_until(Duration::from_secs(300), || {
        std::fs::read_to_string(&result_path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|r| r["dependencies"][0]["container"].is_string())
    });
    if !booted {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let out = child.wait_with_output().unwrap();
        panic!(
            "the run did not boot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        containers_with_label(&format!("loadgate.run={}", run.run_id)).len(),
        2,
        "the database and the target run as containers of the run"
    );
    std::thread::sleep(Duration::from_millis(500));
    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    let out = RunOutput::from(child.wait_with_output().unwrap());
    out.assert_code(TERMINATED);
    let counted = run.counted().unwrap_or_else(|e| {
        panic!(
            "the teardown did not reach the database ({e}):\n{}",
            out.stderr
        )
    });
    assert_eq!(counted.trim(), "50", "{}", out.stderr);
    assert_no_container_left(&run.run_id);
}

/// An image the engine lacks is not pulled unless `pull = "missing"` says so: exit 20 at once,
/// naming the image and the key, with nothing started.
#[test]
fn a_missing_dependency_image_is_exit_20_and_never_pulled() {
    let test = "a_missing_dependency_image_is_exit_20_and_never_pulled";
    if !docker_or_skip(test) {
        return;
    }
    let image = format!("loadgate-test/absent-{}:1", std::process::id());
    let run = Run::new("container-dependency-missing", &config(&image, "1s"));
    let out = run.command().output();
    out.assert_code(TARGET_FAILED);
    assert!(
        out.stderr
            .contains(&format!("the image `{image}` is not in the local engine")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("pull = \"missing\""), "{}", out.stderr);
    assert_no_container_left(&run.run_id);
    assert!(run.counted().is_err(), "no teardown without a database");
}

/// A dependency container that exits while booting (the packed image's entrypoint refuses to run
/// without an authentication method, which its `env` takes away) ends the run with exit 20, its
/// output's last lines, and no container of the run left.
#[test]
fn a_dependency_container_that_exits_while_booting_is_exit_20_and_removed() {
    let test = "a_dependency_container_that_exits_while_booting_is_exit_20_and_removed";
    if !ready(test) {
        return;
    }
    let image = postgres_image();
    let written = format!("image = \"{image}\"\n");
    let text = config(image, "1s").replace(
        &written,
        &format!("{written}env = {{ POSTGRES_HOST_AUTH_METHOD = \"\" }}\n"),
    );
    assert!(text.contains("POSTGRES_HOST_AUTH_METHOD"), "{text}");
    let run = Run::new("container-dependency-exits", &text);
    let out = run.command().output();
    out.assert_code(TARGET_FAILED);
    assert!(
        out.stderr.contains("dependency `db`: its container")
            && out.stderr.contains("exited unexpectedly (exit status 1)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("set POSTGRES_HOST_AUTH_METHOD"),
        "its output's tail: {}",
        out.stderr
    );
    assert_no_container_left(&run.run_id);
}
