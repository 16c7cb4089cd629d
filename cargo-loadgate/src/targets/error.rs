//! The target stage's error type: what went wrong building, booting, probing or tearing down the
//! service under test, with what a person needs to fix it (command, status, log tail) and a hint.

use std::{fmt::Write as _, time::Duration};

/// How many lines of a target's output an error shows.
pub const ERROR_LOG_LINES: usize = 20;

/// What [`TargetError::DependencyNotReady`] reports.
#[derive(Debug)]
pub struct DependencyNotReady {
    /// The dependency's name.
    pub name: String,
    /// The readiness it waited for, e.g. "`pg_isready -h 127.0.0.1 -p 41234` exiting 0".
    pub check: String,
    /// How long it waited.
    pub waited: Duration,
    /// What the last check saw.
    pub last: String,
    /// The last lines of its output.
    pub log_tail: Vec<String>,
}

/// What [`TargetError::DataStepFailed`] reports.
#[derive(Debug)]
pub struct DataStepFailure {
    /// The step's name.
    pub name: String,
    /// What ran, as a person would type it.
    pub command: String,
    /// Its exit status, the signal that ended it, its timeout, or why it could not start.
    pub status: String,
    /// The last lines of its output (psql names the failing file, line and statement).
    pub output_tail: Vec<String>,
}

/// What kind of failure a [`TargetError`] is; the command line picks the exit code from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetErrorKind {
    /// The request cannot be served as asked (a remote or malformed URL, a source this target kind
    /// cannot run): fix the command line or the config; nothing was started.
    Usage,
    /// The target could not be built, booted or made ready, or it failed while running.
    Target,
    /// A local I/O operation failed.
    Io,
}

/// An error of the target stage.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No Docker engine answered.
    #[error("the docker engine does not answer: {detail}")]
    EngineUnavailable {
        /// What the connection attempt reported.
        detail: String,
    },
    /// The image named in the config is not in the local engine (loadgate never pulls).
    #[error("image `{reference}` is not in the local docker engine")]
    ImageMissing {
        /// The reference that was looked up.
        reference: String,
    },
    /// Building the binary or the image failed.
    #[error(
        "`{command}` failed ({status}){}",
        render_tail("its output", stderr_tail)
    )]
    Build {
        /// The command (or image build) that failed.
        command: String,
        /// Its exit status, or the builder's error message.
        status: String,
        /// The last lines of its error output.
        stderr_tail: Vec<String>,
    },
    /// cargo succeeded but reported no executable for the binary target.
    #[error("cargo built package `{package}` but reported no executable for binary `{bin}`")]
    BinaryNotFound {
        /// The package.
        package: String,
        /// The binary target that was asked for.
        bin: String,
    },
    /// The config names a binary target but there is no cargo package to build it from.
    #[error("target `bin = \"{bin}\"` needs a cargo package, and none was found")]
    NoPackage {
        /// The binary target's name.
        bin: String,
    },
    /// The readiness check did not succeed in time.
    #[error(
        "target did not become ready: GET {url} did not answer 2xx within {}{}",
        format_duration(*waited),
        render_tail("target output", log_tail)
    )]
    ReadinessTimeout {
        /// The URL that was polled.
        url: String,
        /// How long it was polled.
        waited: Duration,
        /// What the last poll saw (status or transport error).
        last: String,
        /// The last lines of the target's output.
        log_tail: Vec<String>,
    },
    /// The target exited while it should have been running.
    #[error(
        "target exited unexpectedly: {status}{}",
        render_tail("target output", log_tail)
    )]
    Crashed {
        /// Its exit status or signal.
        status: String,
        /// The last lines of its output.
        log_tail: Vec<String>,
    },
    /// The target could not listen because its port was taken.
    #[error(
        "target could not listen on port {port}: address already in use{}",
        render_tail("target output", log_tail)
    )]
    PortInUse {
        /// The port.
        port: u16,
        /// The last lines of its output.
        log_tail: Vec<String>,
    },
    /// A `[[stub]]` could not listen on 127.0.0.1.
    #[error("stub `{name}` could not listen on 127.0.0.1:{port}: {source}")]
    StubListen {
        /// The stub's name.
        name: String,
        /// The port it asked for (0: any free one).
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// A URL target that is not on the loopback interface, without `--allow-remote`.
    #[error("refusing to send load to `{url}`: it is not a loopback address")]
    RemoteRefused {
        /// The URL.
        url: String,
    },
    /// A URL target that does not parse or has no host.
    #[error("invalid target url `{url}`: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The target kind cannot run this source (e.g. `--target process` with `image = …`).
    #[error("target kind `{kind}` cannot run {source_desc}")]
    Unsupported {
        /// The kind asked for.
        kind: String,
        /// What the config names.
        source_desc: String,
    },
    /// A `url` target without a URL.
    #[error("target kind `url` needs a url (`--url` or `[target] url`)")]
    MissingUrl,
    /// `[target] network = "host"` with an engine whose host network is not this machine's.
    #[error("`[target] network = \"host\"` cannot reach the container from here: {reason}")]
    HostNetworkUnavailable {
        /// Why the engine's host network is not this machine's loopback.
        reason: String,
    },
    /// The engine's host is another network namespace than loadgate's (loadgate runs in a
    /// container with the engine's socket, or beside a Docker-in-Docker engine): neither a port
    /// published on the engine's 127.0.0.1 nor its host network is this process's loopback.
    #[error("the Docker engine's containers cannot be reached on this loopback: {reason}")]
    EngineNetworkElsewhere {
        /// What showed it.
        reason: String,
    },
    /// A `[[dependency]]` did not pass its readiness check in time (boxed: the largest variant
    /// sets the size of every `Result` carrying this error).
    #[error(
        "dependency `{}` did not become ready: waited {} for {}{}",
        .0.name,
        format_duration(.0.waited),
        .0.check,
        render_tail(&format!("`{}` output", .0.name), &.0.log_tail)
    )]
    DependencyNotReady(Box<DependencyNotReady>),
    /// A `[[dependency]]` (or a step of booting it, such as `initdb`) exited when it should not.
    #[error(
        "dependency `{name}`: {step} exited unexpectedly ({status}){}",
        render_tail(&format!("`{name}` output"), log_tail)
    )]
    DependencyExited {
        /// The dependency's name.
        name: String,
        /// What was running: `initdb`, `postgres`, the command.
        step: String,
        /// Its exit status or signal.
        status: String,
        /// The last lines of its output.
        log_tail: Vec<String>,
    },
    /// What a `[[dependency]]` needs is not on this machine (the PostgreSQL binaries of a preset,
    /// a user to run it as).
    #[error("dependency `{name}` cannot be booted: {missing}")]
    DependencyUnavailable {
        /// The dependency's name.
        name: String,
        /// What is missing.
        missing: String,
        /// How to get it.
        help: String,
    },
    /// A `[data]` step (SQL files through psql, or a command) failed, timed out or could not start:
    /// the data the run needs is not there, so nothing is measured (boxed, like
    /// [`Self::DependencyNotReady`]).
    #[error(
        "data step `{}` failed: {}{}",
        .0.name,
        .0.status,
        render_tail(&format!("`{}` output", .0.name), &.0.output_tail)
    )]
    DataStepFailed(Box<DataStepFailure>),
    /// A Docker engine call failed.
    #[error("docker engine: failed to {context}")]
    Engine {
        /// What was being done.
        context: String,
        /// The engine's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// An I/O operation failed.
    #[error("failed to {context}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl TargetError {
    /// What kind of failure this is.
    pub fn kind(&self) -> TargetErrorKind {
        match self {
            Self::RemoteRefused { .. }
            | Self::InvalidUrl { .. }
            | Self::MissingUrl
            | Self::NoPackage { .. }
            | Self::HostNetworkUnavailable { .. }
            | Self::Unsupported { .. } => TargetErrorKind::Usage,
            Self::Io { .. } => TargetErrorKind::Io,
            Self::EngineUnavailable { .. }
            | Self::ImageMissing { .. }
            | Self::Build { .. }
            | Self::BinaryNotFound { .. }
            | Self::ReadinessTimeout { .. }
            | Self::Crashed { .. }
            | Self::PortInUse { .. }
            | Self::StubListen { .. }
            | Self::EngineNetworkElsewhere { .. }
            | Self::DependencyNotReady(_)
            | Self::DependencyExited { .. }
            | Self::DependencyUnavailable { .. }
            | Self::DataStepFailed(_)
            | Self::Engine { .. } => TargetErrorKind::Target,
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::EngineUnavailable { .. } => {
                "start the Docker engine, or use `--target process` to run the service as a local process".into()
            }
            Self::ImageMissing { reference } => format!(
                "build it locally (e.g. `docker build -t {reference} .`) or use `bin = \"…\"`; loadgate never pulls"
            ),
            Self::Build { .. } => "fix the build error above; loadgate ran the command shown".into(),
            Self::BinaryNotFound { bin, .. } => {
                format!("check that `{bin}` is a binary target of the package (`[[bin]]` or src/main.rs)")
            }
            Self::NoPackage { .. } => {
                "run inside a cargo workspace (or pass `--manifest-path`), or use `image = …` or `--url`".into()
            }
            Self::ReadinessTimeout { last, .. } => format!(
                "last poll: {last}; check `[target] ready` (path and timeout) and that the service listens on $PORT"
            ),
            Self::Crashed { .. } => "the service's own output above says why it stopped".into(),
            Self::PortInUse { port, .. } => {
                format!("another process listens on port {port}; stop it or drop the `PORT` override")
            }
            Self::StubListen { name, port, .. } if *port != 0 => format!(
                "another process listens on port {port}; change stub `{name}`'s `port`, or leave \
                 it out to take a free one"
            ),
            Self::StubListen { .. } => {
                "loopback refused a listening socket; check the machine's limits (`ulimit -n`)"
                    .into()
            }
            Self::RemoteRefused { .. } => {
                "pass `--allow-remote` if you really mean to load a service on another host".into()
            }
            Self::InvalidUrl { .. } | Self::MissingUrl => "write it like `http://127.0.0.1:8080`".into(),
            Self::Unsupported { .. } => {
                "use `--target container` for `image` and `dockerfile`, and `bin` or `--url` otherwise".into()
            }
            Self::HostNetworkUnavailable { .. } => {
                "set `[target] network = \"auto\"` (host networking where the engine allows it, a port published on 127.0.0.1 otherwise) or `\"published\"`".into()
            }
            Self::EngineNetworkElsewhere { .. } => {
                "run loadgate in the engine host's network namespace (a job container: `--network host`), or use `--target process` or `--url`".into()
            }
            Self::DependencyNotReady(e) => format!(
                "last check: {}; the output above says why `{}` did not answer; check its `ready` (and `ready.timeout`)",
                e.last, e.name
            ),
            Self::DependencyExited { .. } => {
                "the dependency's own output above says why it stopped".into()
            }
            Self::DependencyUnavailable { help, .. } => help.clone(),
            Self::DataStepFailed(e) => format!(
                "it ran `{}`; its output above names what failed (psql: the file, line and \
                 statement); its whole output is in the run's `data-*.log`",
                e.command
            ),
            Self::Engine { .. } | Self::Io { .. } => return None,
        })
    }

    /// The target output carried by this error, if any.
    pub fn log_tail(&self) -> &[String] {
        match self {
            Self::ReadinessTimeout { log_tail, .. }
            | Self::Crashed { log_tail, .. }
            | Self::PortInUse { log_tail, .. }
            | Self::DependencyExited { log_tail, .. } => log_tail,
            Self::DataStepFailed(e) => &e.output_tail,
            Self::DependencyNotReady(e) => &e.log_tail,
            Self::Build { stderr_tail, .. } => stderr_tail,
            _ => &[],
        }
    }

    pub(crate) fn engine(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Engine {
            context: context.into(),
            source: Box::new(source),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// Renders a log tail on the lines after a message, indented, or nothing when it is empty.
fn render_tail(what: &str, tail: &[String]) -> String {
    if tail.is_empty() {
        return format!("\n  ({what}: empty)");
    }
    let mut out = match tail.len() {
        1 => format!("\n  last line of {what}:"),
        n => format!("\n  last {n} lines of {what}:"),
    };
    for line in tail {
        let _ = write!(out, "\n  | {line}");
    }
    out
}

/// Durations in messages are configured ones (`ready.timeout`) or constants: written as the
/// config writes them, so a person finds the key's value.
pub(crate) use crate::config::format_duration;

#[cfg(test)]
fn tail() -> Vec<String> {
    vec![
        "listening on 0.0.0.0:8080".into(),
        "thread 'main' panicked at src/main.rs:3:5".into(),
    ]
}

/// One example of every variant, named, for the tests here and the exit-code tests in the CLI.
#[cfg(test)]
pub(crate) fn examples() -> Vec<(&'static str, TargetError)> {
    vec![
        (
            "engine_unavailable",
            TargetError::EngineUnavailable {
                detail: "connection refused".into(),
            },
        ),
        (
            "image_missing",
            TargetError::ImageMissing {
                reference: "acme/api:1.2".into(),
            },
        ),
        (
            "build",
            TargetError::Build {
                command: "cargo build --release -p demo --bin demo".into(),
                status: "exit status 101".into(),
                stderr_tail: vec!["error[E0425]: cannot find value `x` in this scope".into()],
            },
        ),
        (
            "binary_not_found",
            TargetError::BinaryNotFound {
                package: "demo".into(),
                bin: "demo".into(),
            },
        ),
        ("no_package", TargetError::NoPackage { bin: "demo".into() }),
        (
            "readiness_timeout",
            TargetError::ReadinessTimeout {
                url: "http://127.0.0.1:4000/healthz".into(),
                waited: Duration::from_secs(30),
                last: "404 Not Found".into(),
                log_tail: tail(),
            },
        ),
        (
            "crashed",
            TargetError::Crashed {
                status: "exit status 101".into(),
                log_tail: tail(),
            },
        ),
        (
            "crashed_silent",
            TargetError::Crashed {
                status: "signal 9 (SIGKILL)".into(),
                log_tail: vec![],
            },
        ),
        (
            "port_in_use",
            TargetError::PortInUse {
                port: 4000,
                log_tail: tail(),
            },
        ),
        (
            "stub_listen",
            TargetError::StubListen {
                name: "fraud".into(),
                port: 4001,
                source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
            },
        ),
        (
            "remote_refused",
            TargetError::RemoteRefused {
                url: "http://10.0.0.1:8080".into(),
            },
        ),
        (
            "invalid_url",
            TargetError::InvalidUrl {
                url: "htp:/x".into(),
                reason: "no host".into(),
            },
        ),
        ("missing_url", TargetError::MissingUrl),
        (
            "host_network_unavailable",
            TargetError::HostNetworkUnavailable {
                reason: "the engine is Docker Desktop, whose containers run in a VM".into(),
            },
        ),
        (
            "unsupported",
            TargetError::Unsupported {
                kind: "process".into(),
                source_desc: "image `acme/api:1.2`".into(),
            },
        ),
        (
            "engine_network_elsewhere",
            TargetError::EngineNetworkElsewhere {
                reason: "the engine's bridge `docker0` is not an interface of this network \
                         namespace"
                    .into(),
            },
        ),
        (
            "dependency_not_ready",
            TargetError::DependencyNotReady(Box::new(DependencyNotReady {
                name: "db".into(),
                check: "`/usr/lib/postgresql/15/bin/pg_isready -h 127.0.0.1 -p 41234` exiting 0"
                    .into(),
                waited: Duration::from_secs(60),
                last: "exit status 2: 127.0.0.1:41234 - no response".into(),
                log_tail: vec![
                    "FATAL:  could not create lock file \"/run/postgresql/.s.PGSQL.41234.lock\""
                        .into(),
                ],
            })),
        ),
        (
            "dependency_exited",
            TargetError::DependencyExited {
                name: "db".into(),
                step: "initdb".into(),
                status: "exit status 1".into(),
                log_tail: vec!["initdb: error: cannot be run as root".into()],
            },
        ),
        (
            "dependency_unavailable",
            TargetError::DependencyUnavailable {
                name: "db".into(),
                missing: "no PostgreSQL server binaries (initdb, postgres)".into(),
                help: "install PostgreSQL (Debian: `apt-get install postgresql`)".into(),
            },
        ),
        (
            "data_step_failed",
            TargetError::DataStepFailed(Box::new(DataStepFailure {
                name: "seed".into(),
                command: "psql -f sql/seed.sql".into(),
                status: "exit status 3".into(),
                output_tail: vec![
                    "psql:sql/seed.sql:9: ERROR:  relation \"acounts\" does not exist".into(),
                    "LINE 1: INSERT INTO acounts (id, owner) SELECT 'acc-seed-1', 'seed-user-1'"
                        .into(),
                ],
            })),
        ),
        (
            "engine",
            TargetError::engine(
                "create the container",
                std::io::Error::other("no such image"),
            ),
        ),
        (
            "io",
            TargetError::io(
                "read /proc/1/stat",
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test]
    fn messages_are_lowercase_fragments_without_final_period() {
        for (name, err) in examples() {
            let first = err
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            assert!(
                first.chars().next().is_some_and(|c| !c.is_uppercase()),
                "{name}: {first}"
            );
            assert!(!first.ends_with('.'), "{name}: {first}");
        }
    }

    #[test_case("remote_refused", TargetErrorKind::Usage)]
    #[test_case("invalid_url", TargetErrorKind::Usage)]
    #[test_case("missing_url", TargetErrorKind::Usage)]
    #[test_case("no_package", TargetErrorKind::Usage)]
    #[test_case("unsupported", TargetErrorKind::Usage)]
    #[test_case("host_network_unavailable", TargetErrorKind::Usage)]
    #[test_case("engine_unavailable", TargetErrorKind::Target)]
    #[test_case("image_missing", TargetErrorKind::Target)]
    #[test_case("build", TargetErrorKind::Target)]
    #[test_case("binary_not_found", TargetErrorKind::Target)]
    #[test_case("readiness_timeout", TargetErrorKind::Target)]
    #[test_case("crashed", TargetErrorKind::Target)]
    #[test_case("crashed_silent", TargetErrorKind::Target)]
    #[test_case("port_in_use", TargetErrorKind::Target)]
    #[test_case("stub_listen", TargetErrorKind::Target)]
    #[test_case("dependency_not_ready", TargetErrorKind::Target)]
    #[test_case("dependency_exited", TargetErrorKind::Target)]
    #[test_case("dependency_unavailable", TargetErrorKind::Target)]
    #[test_case("data_step_failed", TargetErrorKind::Target)]
    #[test_case("engine", TargetErrorKind::Target)]
    #[test_case("engine_network_elsewhere", TargetErrorKind::Target)]
    #[test_case("io", TargetErrorKind::Io)]
    fn kinds(name: &str, kind: TargetErrorKind) {
        let (_, err) = examples()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("variant in table");
        assert_eq!(err.kind(), kind);
    }

    #[test]
    fn source_is_kept() {
        use std::error::Error as _;
        let err = TargetError::io("read x", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(err.source().is_some());
    }

    #[test_case(Duration::from_millis(250), "250ms")]
    #[test_case(Duration::from_secs(30), "30s")]
    #[test_case(Duration::from_millis(1500), "1500ms")]
    fn durations(d: Duration, expected: &str) {
        assert_eq!(format_duration(d), expected);
    }
}
