//! `[data]` and `[teardown]` at run time (issue 16): each step's templates filled in from the
//! seed, the tier, `[data] vars`, the dependencies and the target, then run as a child in its own
//! process group (registered for cleanup like every child), bounded by its `timeout`.
//!
//! An SQL step runs `psql -X -q -t -A -b -v ON_ERROR_STOP=1` with the seed, the tier and each
//! variable as psql variables, against the dependency's URL, one `-f` per file: quiet, tuples
//! only and unaligned, so what it prints is what the files `SELECT` (the demo's seed file prints
//! the checksum of the rows it loaded), and it stops at the first error, which it reports with the
//! file, the line and (`-b`) the statement. A step's standard output is digested into the result
//! (`data.steps[].output_sha256`): the same seed and tier give the same digest when the step
//! prints what it loaded. Its whole output goes to `data-<name>.log` in the run's directory as it
//! is printed, so a step killed at its timeout leaves what it printed until then. A step's process
//! group is ended with it: nothing it started in the background outlives it, or holds its output
//! open.
//!
//! Teardown steps are prepared once the dependencies run and registered in [`super::cleanup`]:
//! the normal path takes them back one at a time and runs them after the target stops
//! ([`run_teardown`]); a signal or a panic runs those not run yet ([`run_blocking`]) once the
//! target and the data steps are stopped, before the dependencies are.

use super::{
    DataStepFailure, RunningDependencies, TargetError,
    cleanup::{register_process_group, unregister_process_group},
    process::describe_status,
};
use crate::config::{
    DataAction, DataConfig, DataStage, DataStep, TeardownConfig, format_duration, render_data,
};
use nix::{
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use serde::{Deserialize, Serialize};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

/// How many lines of a step's output an error and the result keep.
pub const OUTPUT_LINES: usize = 20;

/// The longest the teardown steps may run in all when a signal or a panic ends the run (each its
/// own `timeout` when shorter): whoever pressed Ctrl-C is waiting. A second signal cuts it short.
pub const TEARDOWN_ON_SIGNAL: Duration = Duration::from_secs(30);

/// How much of the end of a step's standard output and error is kept for its error and its record.
const TAIL_BYTES: usize = 64 * 1024;

/// How long a step's process group has to go after its leader exits or its timeout passes:
/// SIGTERM, then SIGKILL.
const GROUP_GRACE: Duration = Duration::from_secs(2);

/// How long a step's output may stay open after its process group is gone (a process it started
/// in another group holds it).
const OUTPUT_AFTER_EXIT: Duration = Duration::from_secs(5);

/// How long psql waits for a connection (`PGCONNECT_TIMEOUT`).
const PSQL_CONNECT_TIMEOUT_S: u32 = 10;

/// `[data]` as it ran (result.json `data`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataRecord {
    /// `[data] tier`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The workload's seed, handed to every step.
    pub seed: u64,
    /// `[data] vars`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
    /// Each step that ran, in order.
    pub steps: Vec<DataStepRecord>,
}

/// One data step that ran and succeeded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataStepRecord {
    /// Its name.
    pub name: String,
    /// When it ran.
    pub after: DataStage,
    /// How long it took.
    pub seconds: f64,
    /// sha256 (hex) of its standard output: the same seed and tier give the same digest when the
    /// step prints what it loaded (a checksum of the rows).
    pub output_sha256: String,
    /// The last lines of its standard output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<String>,
}

/// What a step's templates are filled in from.
pub struct DataContext<'a> {
    /// The workload's seed.
    pub seed: u64,
    /// `[data] tier`.
    pub tier: Option<&'a str>,
    /// `[data] vars`.
    pub vars: &'a BTreeMap<String, String>,
    /// The dependencies, running.
    pub dependencies: &'a RunningDependencies,
    /// The target's base URL, for a step run after it is ready.
    pub target_url: Option<&'a str>,
    /// Where steps run, and relative paths start: the config file's directory.
    pub dir: &'a Path,
    /// Where each step's output is written (`data-<name>.log`, `teardown-<name>.log`).
    pub log_dir: &'a Path,
}

impl DataContext<'_> {
    /// The value of one `{{…}}` (`seed`, `tier`, `var.NAME`, `target.FIELD`, `NAME.FIELD`).
    fn value(&self, inner: &str) -> Option<String> {
        use crate::config::{DATA_SEED, DATA_TARGET, DATA_TIER, DATA_VAR};
        if inner == DATA_SEED {
            return Some(self.seed.to_string());
        }
        if inner == DATA_TIER {
            return self.tier.map(str::to_owned);
        }
        let (name, field) = inner.split_once('.')?;
        match name {
            DATA_VAR => self.vars.get(field).cloned(),
            DATA_TARGET => {
                let url = self.target_url?;
                let (host, port) = crate::config::url_host_port(url)?;
                match field {
                    "url" => Some(url.to_owned()),
                    "host" => Some(host),
                    "port" => Some(port.to_string()),
                    _ => None,
                }
            }
            _ => self.dependencies.value(name, field),
        }
    }

    fn render(&self, s: &str) -> String {
        render_data(s, |inner| self.value(inner))
    }
}

/// A step with everything filled in, ready to run now or from a signal handler.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedStep {
    /// Its name.
    pub name: String,
    /// `data` or `teardown`: the section it is from, and the prefix of its log file.
    pub section: &'static str,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment, beside loadgate's own.
    pub env: Vec<(String, String)>,
    /// Where it runs.
    pub dir: PathBuf,
    /// How long it may take.
    pub timeout: Duration,
    /// The directory its log is written to.
    pub log_dir: PathBuf,
}

impl PreparedStep {
    /// The command as a person would type it.
    pub fn shown(&self) -> String {
        std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().cloned())
            .map(|a| {
                if a.is_empty() || a.contains([' ', '"', '\'', '$', '&', ';']) {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The file its whole output is written to.
    pub fn log_path(&self) -> PathBuf {
        self.log_dir
            .join(format!("{}-{}.log", self.section, self.name))
    }

    /// Starts its log (the command as typed) and opens it for appending: what the step prints
    /// goes there as it comes. `None` when the log cannot be written (the step runs anyway).
    fn open_log(&self) -> Option<std::fs::File> {
        let _ = std::fs::create_dir_all(&self.log_dir);
        std::fs::write(self.log_path(), format!("$ {}\n", self.shown())).ok()?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.log_path())
            .ok()
    }

    fn failed(&self, status: String, output_tail: Vec<String>) -> TargetError {
        TargetError::DataStepFailed(Box::new(DataStepFailure {
            name: self.name.clone(),
            command: self.shown(),
            status,
            output_tail,
        }))
    }
}

/// The `psql` to run SQL steps with: beside the newest PostgreSQL server in
/// `/usr/lib/postgresql/*/bin` (where Debian puts it), else on `$PATH`.
fn psql_program() -> Option<PathBuf> {
    super::dependency::postgres_bin_dirs()
        .into_iter()
        .map(|d| d.join("psql"))
        .find(|p| p.is_file())
}

/// `step` of `section` with its templates filled in from `cx`.
pub fn prepare(
    step: &DataStep,
    section: &'static str,
    cx: &DataContext<'_>,
) -> Result<PreparedStep, TargetError> {
    let mut env: Vec<(String, String)> = vec![("LOADGATE_SEED".into(), cx.seed.to_string())];
    if let Some(tier) = cx.tier {
        env.push(("LOADGATE_TIER".into(), tier.to_owned()));
    }
    let (program, args) = match &step.action {
        DataAction::Sql { dependency, files } => {
            let unable = |status: String| {
                TargetError::DataStepFailed(Box::new(DataStepFailure {
                    name: step.name.clone(),
                    command: "psql".into(),
                    status,
                    output_tail: Vec::new(),
                }))
            };
            let url = cx.dependencies.value(dependency, "url").ok_or_else(|| {
                unable(format!(
                    "dependency `{dependency}` is not running, or has no URL to run SQL against"
                ))
            })?;
            let psql = psql_program().ok_or_else(|| {
                unable(
                    "it cannot start: no `psql` in /usr/lib/postgresql/*/bin or on $PATH \
                     (Debian: `apt-get install postgresql-client`)"
                        .into(),
                )
            })?;
            let mut args: Vec<String> = ["-X", "-q", "-t", "-A", "-b", "-v", "ON_ERROR_STOP=1"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let mut variable = |name: &str, value: &str| {
                args.push("-v".into());
                args.push(format!("{name}={value}"));
            };
            variable(crate::config::DATA_SEED, &cx.seed.to_string());
            if let Some(tier) = cx.tier {
                variable(crate::config::DATA_TIER, tier);
            }
            for (name, value) in cx.vars {
                variable(name, value);
            }
            args.push("-d".into());
            args.push(url);
            for file in files {
                args.push("-f".into());
                args.push(file.path.to_string_lossy().into_owned());
            }
            env.push((
                "PGCONNECT_TIMEOUT".into(),
                PSQL_CONNECT_TIMEOUT_S.to_string(),
            ));
            (psql, args)
        }
        DataAction::Command {
            command,
            args,
            env: own,
        } => {
            env.extend(own.iter().map(|(k, v)| (k.clone(), cx.render(v))));
            (
                PathBuf::from(command),
                args.iter().map(|a| cx.render(a)).collect(),
            )
        }
    };
    Ok(PreparedStep {
        name: step.name.clone(),
        section,
        program,
        args,
        env,
        dir: cx.dir.to_path_buf(),
        timeout: step.timeout,
        log_dir: cx.log_dir.to_path_buf(),
    })
}

/// The last [`OUTPUT_LINES`] lines of `bytes`, without trailing blanks.
fn last_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(OUTPUT_LINES)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// What a step printed on its standard output.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutput {
    /// sha256 (hex) of all of it.
    pub sha256: String,
    /// Its last [`OUTPUT_LINES`] lines.
    pub lines: Vec<String>,
}

/// One of a step's streams, read to its end as it is printed.
#[derive(Default)]
struct Drained {
    /// sha256 (hex) of all of it.
    sha256: String,
    /// Its last [`TAIL_BYTES`] or so.
    tail: Vec<u8>,
    /// Whether it was read to its end (not given up on, see [`OUTPUT_AFTER_EXIT`]).
    complete: bool,
}

/// Reads `from` to its end, appending each piece to `log` as it comes, digesting it, and keeping
/// its end.
async fn drain(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut log: Option<std::fs::File>,
) -> Drained {
    use sha2::Digest as _;
    use std::io::Write as _;
    use tokio::io::AsyncReadExt as _;
    let mut hasher = sha2::Sha256::new();
    let mut tail = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf).await {
        let piece = &buf[..n];
        hasher.update(piece);
        if let Some(file) = log.as_mut() {
            let _ = file.write_all(piece);
        }
        tail.extend_from_slice(piece);
        if tail.len() > 2 * TAIL_BYTES {
            tail.drain(..tail.len() - TAIL_BYTES);
        }
    }
    tail.drain(..tail.len().saturating_sub(TAIL_BYTES));
    Drained {
        sha256: crate::result::hex(&hasher.finalize()),
        tail,
        complete: true,
    }
}

/// The drained stream of `task`, waiting at most [`OUTPUT_AFTER_EXIT`] for its end.
async fn drained(task: tokio::task::JoinHandle<Drained>) -> Drained {
    let abort = task.abort_handle();
    match tokio::time::timeout(OUTPUT_AFTER_EXIT, task).await {
        Ok(Ok(d)) => d,
        _ => {
            abort.abort();
            Drained::default()
        }
    }
}

/// Stops what is left of process group `pgid` (SIGTERM, then SIGKILL after [`GROUP_GRACE`]), off
/// the runtime's threads, and forgets it.
async fn end_group(pgid: i32) {
    let _ =
        tokio::task::spawn_blocking(move || super::cleanup::kill_group_blocking(pgid, GROUP_GRACE))
            .await;
    unregister_process_group(pgid);
}

/// Runs `step` to its end (or its timeout), writing its whole output to its log as it is
/// printed: how long it took and what it printed, or why it failed (with its output's tail:
/// stderr's, else stdout's). What it started in its process group is ended with it.
pub async fn run_step(step: &PreparedStep) -> Result<(f64, StepOutput), TargetError> {
    let started = Instant::now();
    // Both streams append to the one log, as they come.
    let log = step.open_log();
    let log = || log.as_ref().and_then(|f| f.try_clone().ok());
    let mut cmd = tokio::process::Command::new(&step.program);
    cmd.args(&step.args)
        .envs(step.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&step.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        step.failed(
            format!("it cannot start `{}`: {e}", step.program.display()),
            Vec::new(),
        )
    })?;
    let pgid = child.id().map(|p| p as i32);
    if let Some(p) = pgid {
        register_process_group(p);
        if step.section == "teardown" {
            // A signal now lets it finish, within the teardown's budget.
            super::cleanup::register_teardown_group(p);
        }
    }
    let stdout = child.stdout.take().map(|s| tokio::spawn(drain(s, log())));
    let stderr = child.stderr.take().map(|s| tokio::spawn(drain(s, log())));
    let waited = tokio::time::timeout(step.timeout, child.wait()).await;
    // The group goes with the step, whether it ended or timed out: nothing it started is left,
    // and nothing holds its output open.
    if let Some(p) = pgid {
        end_group(p).await;
    }
    if waited.is_err() {
        let _ = tokio::time::timeout(OUTPUT_AFTER_EXIT, child.wait()).await;
    }
    let (stdout, stderr) = match (stdout, stderr) {
        (Some(o), Some(e)) => tokio::join!(drained(o), drained(e)),
        _ => (Drained::default(), Drained::default()),
    };
    let tail = || {
        if stderr.tail.iter().all(u8::is_ascii_whitespace) {
            last_lines(&stdout.tail)
        } else {
            last_lines(&stderr.tail)
        }
    };
    let status = match waited {
        Err(_) => {
            return Err(step.failed(
                format!(
                    "it did not finish within {} (its `timeout`) and was killed",
                    format_duration(step.timeout)
                ),
                tail(),
            ));
        }
        Ok(Err(e)) => {
            return Err(TargetError::io(
                format!("wait for {} step `{}`", step.section, step.name),
                e,
            ));
        }
        Ok(Ok(status)) => status,
    };
    if !status.success() {
        return Err(step.failed(describe_status(status), tail()));
    }
    if !stdout.complete || !stderr.complete {
        return Err(step.failed(
            format!(
                "it exited, and its output stayed open {} after: a process it started in another \
                 process group holds it",
                format_duration(OUTPUT_AFTER_EXIT)
            ),
            tail(),
        ));
    }
    Ok((
        started.elapsed().as_secs_f64(),
        StepOutput {
            sha256: stdout.sha256,
            lines: last_lines(&stdout.tail),
        },
    ))
}

/// Runs the `[data]` steps that run `after` `stage`, in order, each reported to `report` as it
/// ends; the first failure ends it.
pub async fn run_data(
    config: &DataConfig,
    stage: DataStage,
    cx: &DataContext<'_>,
    report: &dyn Fn(&DataStepRecord),
) -> Result<Vec<DataStepRecord>, TargetError> {
    let mut out = Vec::new();
    for step in config.steps.iter().filter(|s| s.after == stage) {
        let prepared = prepare(step, "data", cx)?;
        let (seconds, output) = run_step(&prepared).await?;
        let record = DataStepRecord {
            name: step.name.clone(),
            after: stage,
            seconds,
            output_sha256: output.sha256,
            output: output.lines,
        };
        report(&record);
        out.push(record);
    }
    Ok(out)
}

/// Prepares the `[teardown]` steps and registers them, so that a signal or a panic runs them
/// too; [`run_teardown`] runs them on the normal path.
pub fn register_teardown(config: &TeardownConfig, cx: &DataContext<'_>) -> Result<(), TargetError> {
    let steps = config
        .steps
        .iter()
        .map(|s| prepare(s, "teardown", cx))
        .collect::<Result<Vec<_>, _>>()?;
    super::cleanup::register_teardown(steps);
    Ok(())
}

/// Runs the registered teardown steps, each taken from the registry as it starts (so a signal
/// arriving meanwhile runs only those not started), all of them whatever each does, until a
/// signal is being handled; what went wrong, one line each.
pub async fn run_teardown() -> Vec<String> {
    let mut problems = Vec::new();
    while !super::cleanup::stopping() && !super::cleanup::cleaning() {
        let Some(step) = super::cleanup::take_next_teardown() else {
            break;
        };
        if let Err(e) = run_step(&step).await {
            problems.push(match e {
                TargetError::DataStepFailed(failure) => format!(
                    "teardown step `{}` failed: {}{} (its output: {})",
                    failure.name,
                    failure.status,
                    failure
                        .output_tail
                        .last()
                        .map(|l| format!("; last line: {l}"))
                        .unwrap_or_default(),
                    step.log_path().display()
                ),
                other => format!("teardown step `{}`: {other}", step.name),
            });
        }
    }
    problems
}

/// Runs `step` synchronously for at most `limit` (or its own timeout when shorter), its output
/// written to its log: the signal and panic path. A second signal ([`super::cleanup::hurried`])
/// kills it. What became of it, for a person.
pub fn run_blocking(step: &PreparedStep, limit: Duration) -> String {
    use std::os::unix::process::CommandExt;
    let (out, err) = match step.open_log().and_then(|f| Some((f.try_clone().ok()?, f))) {
        Some((o, e)) => (Stdio::from(o), Stdio::from(e)),
        None => (Stdio::null(), Stdio::null()),
    };
    let mut cmd = std::process::Command::new(&step.program);
    cmd.args(&step.args)
        .envs(step.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&step.dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return format!("could not start: {e}"),
    };
    let pgid = child.id() as i32;
    let allowed = step.timeout.min(limit);
    let deadline = Instant::now() + allowed;
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break "done".to_owned(),
            Ok(Some(status)) => break format!("failed ({})", describe_status(status)),
            Ok(None) if super::cleanup::hurried() => {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                let _ = child.wait();
                break "killed (a second signal)".to_owned();
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                let _ = child.wait();
                break format!("killed after {}", format_duration(allowed));
            }
        }
    };
    // What it left in the background goes with it.
    super::cleanup::kill_group_blocking(pgid, Duration::from_millis(500));
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(args: &[&str], log_dir: &Path) -> PreparedStep {
        PreparedStep {
            name: "t".into(),
            section: "data",
            program: PathBuf::from("sh"),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![("LOADGATE_SEED".into(), "42".into())],
            dir: std::env::temp_dir(),
            timeout: Duration::from_secs(20),
            log_dir: log_dir.to_path_buf(),
        }
    }

    fn context<'a>(
        vars: &'a BTreeMap<String, String>,
        deps: &'a RunningDependencies,
        dir: &'a Path,
    ) -> DataContext<'a> {
        DataContext {
            seed: 42,
            tier: Some("small"),
            vars,
            dependencies: deps,
            target_url: Some("http://127.0.0.1:8080"),
            dir,
            log_dir: dir,
        }
    }

    #[test]
    fn a_command_step_gets_the_seed_tier_vars_and_target_filled_in() {
        let vars = BTreeMap::from([("rows".to_owned(), "100".to_owned())]);
        let deps = RunningDependencies::default();
        let dir = PathBuf::from("/cfg");
        let cx = context(&vars, &deps, &dir);
        let step = DataStep {
            name: "warm".into(),
            action: DataAction::Command {
                command: "curl".into(),
                args: vec![
                    "{{target.url}}/seed?seed={{seed}}&tier={{tier}}&n={{var.rows}}".into(),
                    "{{target.port}}".into(),
                ],
                env: BTreeMap::from([("HOST".to_owned(), "{{target.host}}".to_owned())]),
            },
            after: DataStage::Target,
            timeout: Duration::from_secs(5),
        };
        let prepared = prepare(&step, "data", &cx).expect("prepared");
        assert_eq!(prepared.program, PathBuf::from("curl"));
        assert_eq!(
            prepared.args,
            vec![
                "http://127.0.0.1:8080/seed?seed=42&tier=small&n=100".to_owned(),
                "8080".to_owned()
            ]
        );
        assert!(prepared.env.contains(&("HOST".into(), "127.0.0.1".into())));
        assert!(
            prepared
                .env
                .contains(&("LOADGATE_SEED".into(), "42".into()))
        );
        assert!(
            prepared
                .env
                .contains(&("LOADGATE_TIER".into(), "small".into()))
        );
        assert_eq!(prepared.dir, dir);
        assert_eq!(
            prepared.shown(),
            "curl 'http://127.0.0.1:8080/seed?seed=42&tier=small&n=100' 8080"
        );
    }

    #[test]
    fn an_sql_step_against_a_dependency_that_is_not_running_fails_before_it_starts() {
        let vars = BTreeMap::new();
        let deps = RunningDependencies::default();
        let dir = PathBuf::from(".");
        let step = DataStep {
            name: "seed".into(),
            action: DataAction::Sql {
                dependency: "db".into(),
                files: Vec::new(),
            },
            after: DataStage::Dependencies,
            timeout: Duration::from_secs(5),
        };
        let err = prepare(&step, "data", &context(&vars, &deps, &dir)).expect_err("no db");
        assert!(
            err.to_string().contains("dependency `db` is not running"),
            "{err}"
        );
        assert_eq!(err.kind(), crate::targets::TargetErrorKind::Target);
    }

    #[tokio::test]
    async fn a_step_keeps_its_output_and_a_failing_one_says_why_with_its_tail() {
        let logs = tempfile::tempdir().expect("a temporary directory");
        let (_, out) = run_step(&step(&["-c", "echo rows=$LOADGATE_SEED"], logs.path()))
            .await
            .expect("it succeeds");
        assert_eq!(out.lines, ["rows=42"]);
        assert_eq!(out.sha256, crate::result::hex_sha256(b"rows=42\n"));
        let log = std::fs::read_to_string(logs.path().join("data-t.log")).expect("its log");
        assert!(
            log.starts_with("$ sh -c 'echo rows=$LOADGATE_SEED'\n"),
            "{log}"
        );
        assert!(log.contains("rows=42"), "{log}");

        let err = run_step(&step(
            &["-c", "echo fine; echo 'ERROR: no table' >&2; exit 3"],
            logs.path(),
        ))
        .await
        .expect_err("it fails");
        let TargetError::DataStepFailed(failure) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(failure.status, "exit status 3");
        assert_eq!(failure.output_tail, vec!["ERROR: no table".to_owned()]);
        assert!(
            err.to_string()
                .starts_with("data step `t` failed: exit status 3")
        );
    }

    #[tokio::test]
    async fn a_step_past_its_timeout_is_killed_with_its_group() {
        let logs = tempfile::tempdir().expect("a temporary directory");
        let pid_file = logs.path().join("pid");
        let script = format!("echo $$ > {}; sleep 30 & sleep 30", pid_file.display());
        let mut slow = step(&["-c", &script], logs.path());
        slow.timeout = Duration::from_millis(500);
        let started = Instant::now();
        let err = run_step(&slow).await.expect_err("timed out");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(err.to_string().contains("did not finish within"), "{err}");
        // The shell led its own group; the group (its background sleep too) is gone and forgotten.
        let pgid: i32 = std::fs::read_to_string(&pid_file)
            .expect("the step wrote its pid")
            .trim()
            .parse()
            .expect("a pid");
        let deadline = Instant::now() + Duration::from_secs(5);
        while super::super::cleanup::group_has_live_members(pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!super::super::cleanup::group_has_live_members(pgid));
        assert!(!super::super::cleanup::registered().2.contains(&pgid));
    }

    /// A step killed at its timeout leaves what it printed until then, in its log and its error.
    #[tokio::test]
    async fn a_step_past_its_timeout_keeps_what_it_printed() {
        let logs = tempfile::tempdir().expect("a temporary directory");
        let mut slow = step(
            &[
                "-c",
                "echo loaded 10 rows; echo 'still locking' >&2; sleep 30",
            ],
            logs.path(),
        );
        slow.timeout = Duration::from_secs(2);
        let err = run_step(&slow).await.expect_err("timed out");
        let TargetError::DataStepFailed(failure) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(failure.output_tail, ["still locking"]);
        let log = std::fs::read_to_string(logs.path().join("data-t.log")).expect("its log");
        assert!(
            log.contains("loaded 10 rows") && log.contains("still locking"),
            "{log}"
        );
    }

    /// A step that exits leaving a process in the background (which holds its output open) ends
    /// when its leader does: the background process is stopped with its group.
    #[tokio::test]
    async fn a_step_that_leaves_a_process_behind_ends_with_its_group() {
        let logs = tempfile::tempdir().expect("a temporary directory");
        let pid_file = logs.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; echo seeded", pid_file.display());
        let started = Instant::now();
        let (_, out) = run_step(&step(&["-c", &script], logs.path()))
            .await
            .expect("it succeeds");
        assert_eq!(out.lines, ["seeded"]);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "it waited for the background sleep"
        );
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .expect("the step wrote the pid")
            .trim()
            .parse()
            .expect("a pid");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            super::super::cleanup::parse_state_and_pgrp(&stat)
                .is_none_or(|(state, _)| state == 'Z' || state == 'X'),
            "the background sleep outlived its step: {stat}"
        );
    }

    #[test]
    fn the_blocking_path_runs_a_step_and_bounds_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let logs = dir.path().to_path_buf();
        assert_eq!(
            run_blocking(&step(&["-c", "exit 0"], &logs), TEARDOWN_ON_SIGNAL),
            "done"
        );
        assert_eq!(
            run_blocking(&step(&["-c", "exit 4"], &logs), TEARDOWN_ON_SIGNAL),
            "failed (exit status 4)"
        );
        // Its output goes to its log.
        let mut logged = step(&["-c", "echo dropped; echo gone >&2"], dir.path());
        logged.section = "teardown";
        assert_eq!(run_blocking(&logged, TEARDOWN_ON_SIGNAL), "done");
        let log = std::fs::read_to_string(dir.path().join("teardown-t.log")).expect("its log");
        assert!(log.contains("dropped") && log.contains("gone"), "{log}");
        let started = Instant::now();
        let outcome = run_blocking(
            &step(&["-c", "sleep 30"], &logs),
            Duration::from_millis(200),
        );
        assert!(outcome.starts_with("killed after"), "{outcome}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
