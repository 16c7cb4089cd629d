//! Helpers shared by the end-to-end tests: locating the built `cargo-loadgate` binary, running it
//! like a user would, and checking the Docker engine and what was left behind.
//!
//! The tests drive the real binary (nextest's `CargoNextestCli`, ripgrep's `TestCommand`), so what
//! they check is what a user gets: arguments, exit codes, stdout/stderr, files written.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

/// The root of the cargo-loadgate workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives inside the workspace")
        .to_path_buf()
}

/// The demo service's manifest.
pub fn demo_manifest() -> PathBuf {
    workspace_root().join("fixtures/demo-service/Cargo.toml")
}

/// Builds `cargo-loadgate` once per test process (a no-op when it is up to date) and returns its path.
///
/// Cargo releases its build-directory lock before it runs test binaries, so building from inside a
/// test is safe (escargot does the same).
pub fn loadgate_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_debug_bin("cargo-loadgate", "cargo-loadgate"))
}

/// Runs `cargo build -p PACKAGE --bin BIN` in the workspace and returns the debug binary's path.
fn build_debug_bin(package: &str, bin: &str) -> PathBuf {
    let root = workspace_root();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .current_dir(&root)
        .status()
        .unwrap_or_else(|e| panic!("failed to run cargo build for {package}: {e}"));
    assert!(status.success(), "cargo build -p {package} failed");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let path = target_dir.join("debug").join(bin);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A `cargo-loadgate loadgate …` invocation, as cargo would run it.
pub struct LoadgateCommand {
    cmd: Command,
}

impl LoadgateCommand {
    /// Starts a command with the given arguments after `loadgate`.
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(loadgate_bin());
        cmd.arg("loadgate").args(args).current_dir(workspace_root());
        cmd.env("NO_COLOR", "1").env_remove("GITHUB_STEP_SUMMARY");
        Self { cmd }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Adds a path argument.
    pub fn arg_path(mut self, path: impl AsRef<Path>) -> Self {
        self.cmd.arg(path.as_ref());
        self
    }

    /// Sets an environment variable for the command.
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// Sets the working directory.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Runs to completion and returns what it printed and its exit code.
    pub fn output(mut self) -> RunOutput {
        let output = self
            .cmd
            .stdin(Stdio::null())
            .output()
            .expect("failed to spawn cargo-loadgate");
        RunOutput::from(output)
    }

    /// Spawns it with piped stdout/stderr, for tests that signal it while it runs.
    pub fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("failed to spawn cargo-loadgate")
    }
}

/// What a finished command printed.
#[derive(Debug)]
pub struct RunOutput {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl From<Output> for RunOutput {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl RunOutput {
    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn assert_code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(expected),
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Whether a Docker engine answers. When it does not, container tests print a loud notice and skip —
/// except in CI (`CI` set), where the engine is required and the test fails.
pub fn docker_or_skip(test: &str) -> bool {
    let answers = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if answers {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: no Docker engine answers, and container tests are required in CI");
    }
    eprintln!();
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    eprintln!("!! SKIPPED {test}: no Docker engine answers (`docker info` failed).");
    eprintln!("!! Container tests are required in CI; start the engine to run them here.");
    eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
    false
}

/// The ids of containers, running or not, carrying `label` (e.g. `loadgate.run=e2e-123`).
pub fn containers_with_label(label: &str) -> Vec<String> {
    let output = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("label={label}")])
        .output()
        .expect("failed to run docker ps");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Force-removes containers carrying `label`; used by guards so a failed test leaves nothing behind.
pub fn remove_containers_with_label(label: &str) {
    for id in containers_with_label(label) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// Waits up to `timeout` for `cond`, polling every 50 ms; returns whether it became true.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A unique run id for one test, passed to loadgate as `LOADGATE_RUN_ID` so the test can find exactly
/// the containers that its run labelled.
pub fn unique_run_id(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("e2e-{test}-{}-{nanos}", std::process::id())
}

/// Whether PostgreSQL's server binaries (`initdb`, `postgres`) are installed where loadgate's
/// `postgres` preset looks first (`/usr/lib/postgresql/*/bin`). When they are not, the tests that
/// boot it print a loud notice and skip — except in CI (`CI` set), where `.ci/run` installs them
/// and the test fails.
pub fn postgres_or_skip(test: &str) -> bool {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .any(|e| e.path().join("bin/initdb").is_file() && e.path().join("bin/postgres").is_file());
    if !found {
        if std::env::var_os("CI").is_some() {
            panic!("{test}: no PostgreSQL server binaries, and they are required in CI");
        }
        eprintln!(
            "SKIPPED {test}: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin \
             (apt-get install postgresql)"
        );
    }
    found
}

/// The PostgreSQL image packed from this machine's Debian packages
/// (`fixtures/postgres-image/build.sh`, built once per test process and reused while it exists), for
/// the tests of container dependencies: no registry is reachable, so `postgres:16` cannot be used.
/// Needs the server binaries ([`postgres_or_skip`]) and an engine ([`docker_or_skip`]).
pub fn postgres_image() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let out = Command::new("bash")
            .arg(workspace_root().join("fixtures/postgres-image/build.sh"))
            .output()
            .expect("run fixtures/postgres-image/build.sh");
        assert!(
            out.status.success(),
            "fixtures/postgres-image/build.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    })
}

/// Removes every container of a run when dropped, so a failing assertion leaves nothing behind.
pub struct RunGuard {
    /// The run id.
    pub run_id: String,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        remove_containers_with_label(&format!("loadgate.run={}", self.run_id));
    }
}

/// Builds the demo service (debug) once per test process and returns its path, for tests that start
/// it themselves and point loadgate at it as a URL target.
pub fn demo_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_debug_bin("demo-service", "demo-service"))
}

/// A demo service started by a test on a free loopback port; killed when dropped.
pub struct DemoProcess {
    child: std::process::Child,
    /// Its base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
}

impl DemoProcess {
    /// Starts the demo service with the given knobs and waits until `/health` answers.
    pub fn start(knobs: &[(&str, &str)]) -> Self {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            listener.local_addr().expect("local addr").port()
        };
        let mut cmd = Command::new(demo_bin());
        cmd.env("PORT", port.to_string())
            .env("DEMO_BIND", "127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in knobs {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("failed to start the demo service");
        let url = format!("http://127.0.0.1:{port}");
        let ready = wait_until(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "the demo service did not listen on {url}");
        Self { child, url }
    }
}

impl Drop for DemoProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the `result.json` a run wrote into `out_dir`.
pub fn read_result(out_dir: &Path) -> serde_json::Value {
    let path = out_dir.join("result.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The suite `name` of the `junit.xml` a run wrote into `out_dir`, read back by an independent
/// parser.
pub fn junit_suite(out_dir: &Path, name: &str) -> junit_parser::TestSuite {
    let path = out_dir.join("junit.xml");
    let file = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let suites = junit_parser::from_reader(std::io::BufReader::new(file))
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    suites
        .suites
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{} has no suite `{name}`", path.display()))
}

/// The names of the cases of a suite, in order.
pub fn case_names(suite: &junit_parser::TestSuite) -> Vec<&str> {
    suite
        .cases
        .iter()
        .map(|c| c.original_name.as_str())
        .collect()
}

/// Held by every test that makes `cargo loadgate` send load. Runs pin their generator to the same
/// core, so two at once would steal each other's time and (rightly) be judged invalid; these tests
/// check behaviour, not speed, so they take turns.
pub fn load_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Validates a run result against the checked-in schema (`docs/schema/run-result-v1.json`) and
/// panics with every violation when it does not conform.
pub fn assert_matches_result_schema(result: &serde_json::Value) {
    let path = workspace_root().join("docs/schema/run-result-v1.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read the schema"))
            .expect("the schema is JSON");
    let errors = schema_errors(&schema, result);
    assert!(
        errors.is_empty(),
        "result.json does not match {}:\n{}",
        path.display(),
        errors.join("\n")
    );
}

/// Every violation of `schema` by `instance`, as `path: message` lines.
pub fn schema_errors(schema: &serde_json::Value, instance: &serde_json::Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The config of the end-to-end tests that run a demo service they started themselves and give
/// it with `--url`: one operation, so the config (and its hash) stays the same from run to run.
pub const URL_TARGET_CONFIG: &str = r#"[target]
ready = { http = "/health", timeout = "5s" }

[workload]
seed = 11
sessions-per-sec = 20
entry = "landing"

[[workload.operation]]
name = "landing"
request = { path = "/" }
expect = { status = 200, body-contains = "Demo Bank" }

# Behaviour, not pacing, is under test on a possibly busy machine.
[generator]
max-lag = "250ms"

# The quick steps send 10 to 40 requests; with fewer than min-requests in all a step neither holds
# nor breaks, and there would be no knee to soak at.
[slo]
min-requests = 10
"#;

/// Runs git in `repo` under a fixed test identity, panicking when it fails, and returns its
/// trimmed standard output.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A new repository on `main` whose one commit holds `config` as `loadgate.toml`.
pub fn repo_with_config(config: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("a temporary directory");
    let r = repo.path();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join("loadgate.toml"), config).expect("write loadgate.toml");
    git(r, &["add", "loadgate.toml"]);
    git(r, &["commit", "-q", "-m", "service"]);
    repo
}

/// A PostgreSQL server a test starts itself (the system's `/usr/lib/postgresql/*/bin`): `initdb`
/// into a temporary directory as the `postgres` user when run as root, a free loopback port, trust
/// authentication for `postgres`. Stopped (SIGQUIT to the postmaster, then waited) and its data
/// directory removed when dropped, so a failing assertion leaves nothing behind. Call
/// [`postgres_or_skip`] first.
pub struct TempPostgres {
    child: std::process::Child,
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl TempPostgres {
    /// Starts a server and waits (up to 30 s) until it accepts connections.
    pub fn start() -> Self {
        use std::os::unix::process::CommandExt as _;
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("/usr/lib/postgresql")
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").is_file())
            .expect("PostgreSQL server binaries");
        let ids = nix::unistd::geteuid().is_root().then(|| {
            let user = nix::unistd::User::from_name("postgres")
                .ok()
                .flatten()
                .or_else(|| nix::unistd::User::from_name("nobody").ok().flatten())
                .expect("a postgres or nobody user to run PostgreSQL as");
            (user.uid.as_raw(), user.gid.as_raw())
        });
        let dir = tempfile::Builder::new()
            .prefix("loadgate-test-pg-")
            .tempdir()
            .expect("temp dir");
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown data dir");
        }
        let data = dir.path().join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-U", "postgres", "--auth=trust", "--no-sync", "-D"])
            .arg(&data)
            .stdout(Stdio::null());
        if let Some((uid, gid)) = ids {
            initdb.uid(uid).gid(gid);
        }
        let status = initdb.status().expect("run initdb");
        assert!(status.success(), "initdb failed: {status}");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            listener.local_addr().expect("local addr").port()
        };
        let mut postgres = Command::new(bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .args([
                "-p",
                &port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
                "-k",
            ])
            .arg(dir.path())
            .args(["-c", "fsync=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = ids {
            postgres.uid(uid).gid(gid);
        }
        let child = postgres.spawn().expect("start postgres");
        let server = Self {
            child,
            dir,
            bin,
            port,
        };
        let ready = wait_until(Duration::from_secs(30), || {
            Command::new(server.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success())
        });
        assert!(ready, "postgres did not become ready on port {port}");
        server
    }

    /// The `DATABASE_URL` of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The data directory's parent, removed when dropped.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `psql` connected to its `postgres` database as `postgres` (`-At`, stop at the first
    /// error); the caller adds `-c`, `-f` or `-v`.
    pub fn psql_command(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
        ])
        .args(["-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1"]);
        cmd
    }

    /// Runs `sql` through [`Self::psql_command`] and returns its output.
    pub fn psql(&self, sql: &str) -> String {
        let out = self
            .psql_command()
            .args(["-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        // SIGQUIT: PostgreSQL's immediate shutdown, by the postmaster's own pid.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGQUIT,
        );
        let _ = self.child.wait();
    }
}

/// Runs the gate with `config` (written as `loadgate.toml` in a new directory) against the
/// service at `url`, profile `default`, with the out-dir `out` in that directory, which it
/// returns with the run.
pub fn run_config_at_url(url: &str, config: &str) -> (tempfile::TempDir, RunOutput) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("loadgate.toml"), config).expect("write loadgate.toml");
    let out = LoadgateCommand::new([
        "run",
        "--profile",
        "default",
        "--config",
        "loadgate.toml",
        "--url",
        url,
    ])
    .args(["--out-dir"])
    .arg_path(dir.path().join("out"))
    .current_dir(dir.path())
    .output();
    (dir, out)
}
