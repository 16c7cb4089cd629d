//! `[[dependency]]` at run time: the companions booted before the target, in `depends-on` order,
//! each waited for by its own readiness check, handed to the target through the templates of its
//! environment, and removed on every path (issue 16).
//!
//! A `process` dependency is a child in its own process group, registered in [`super::cleanup`]
//! like the target, so SIGINT, SIGTERM, a panic or a dropped handle stop it. The `postgres` preset
//! runs the system's PostgreSQL: `initdb` into a temporary data directory (registered too, removed
//! after the processes), `postgres` on a free loopback port, `pg_isready` as its readiness. Postgres
//! refuses to run as root, so as root both run as the `postgres` system user where it exists, else
//! as `nobody`; it stops on SIGINT (its "fast" shutdown), sent to the postmaster alone. A `url`
//! dependency is an existing one: nothing is booted or removed.
//!
//! A `container` dependency runs its image (the preset's, a local one, one pulled only with
//! `pull = "missing"`, or one built from its Dockerfile) on the host's network with a free
//! loopback port of its own, like a process: the target, the probes and the data steps reach it
//! at 127.0.0.1. It is labelled with the run and its name, so a signal removes it after the
//! `[teardown]` steps, and `cargo loadgate clean` finds it after a `kill -9`.

use super::{
    BootEvent, ERROR_LOG_LINES, LogRing, OutputStream, TargetError,
    cleanup::{register_temp_dir, remove_temp_dir},
    container::{ContainerHandle, ContainerSpec, short},
    network::{self, NetworkPath},
    process::{ProcessHandle, Spawn, describe_status, free_loopback_port},
    ring::DEFAULT_LOG_LINES,
};
use crate::config::{
    DependencyConfig, DependencyKind, DependencySource, NetworkChoice, Preset, PullPolicy,
    ReadyCheck, TargetKind, boot_order, postgres_ready_command, render_references, url_host_port,
};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// How long a dependency gets between its stop signal and SIGKILL (PostgreSQL's fast shutdown
/// checkpoints first).
pub const DEPENDENCY_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long `initdb` may take.
const INITDB_TIMEOUT: Duration = Duration::from_secs(120);

/// The user and database the `postgres` preset's cluster is created with.
const POSTGRES_USER: &str = "postgres";

/// What a run records of one dependency (result.json `dependencies`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DependencyInfo {
    /// Its name in the config.
    pub name: String,
    /// How it ran.
    pub kind: DependencyKind,
    /// The host it listened on.
    pub host: String,
    /// The port it listened on.
    pub port: u16,
    /// The preset it ran, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The program that ran (process kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<PathBuf>,
    /// Its version, where it was cheap to ask (`postgres --version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its process id (process kind; container kind: its host pid, when the engine tells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The user it ran as, when not loadgate's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Its temporary data directory, removed at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// Where its output was written at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// The image it ran (container kind), as named, with its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<DependencyImage>,
    /// Its container's id, 12 characters (container kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

impl DependencyInfo {
    /// `name`, of `kind`, at `host:port`, with nothing else known yet.
    pub fn at(name: &str, kind: DependencyKind, host: &str, port: u16) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            host: host.to_owned(),
            port,
            preset: None,
            program: None,
            version: None,
            pid: None,
            user: None,
            data_dir: None,
            log: None,
            image: None,
            container: None,
        }
    }
}

/// The image a container dependency ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyImage {
    /// As the config names it (`postgres:16`), or the tag loadgate built from its Dockerfile.
    pub reference: String,
    /// The engine's id of it (`sha256:…`).
    pub id: String,
    /// Whether loadgate pulled it (`pull = "missing"`) for this run.
    pub pulled: bool,
}

/// The dependencies of a run, booted and ready, in boot order. Call
/// [`RunningDependencies::shutdown`]; dropped instead, each is killed and its data directory
/// removed synchronously (best effort).
#[derive(Debug, Default)]
pub struct RunningDependencies {
    running: Vec<Running>,
    log_dir: PathBuf,
}

#[derive(Debug)]
struct Running {
    info: DependencyInfo,
    /// `url`, `user`, `database` (what the templates may read beyond host and port).
    fields: BTreeMap<&'static str, String>,
    log: LogRing,
    process: Option<ProcessHandle>,
    container: Option<ContainerHandle>,
    data_dir: Option<PathBuf>,
}

impl Running {
    fn field(&self, field: &str) -> Option<String> {
        match field {
            "host" => Some(self.info.host.clone()),
            "port" => Some(self.info.port.to_string()),
            "addr" => Some(address(&self.info.host, self.info.port)),
            other => self.fields.get(other).cloned(),
        }
    }
}

/// `host:port`, with brackets around an IPv6 host.
fn address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl RunningDependencies {
    /// What the run records of each, in boot order.
    pub fn infos(&self) -> Vec<DependencyInfo> {
        self.running.iter().map(|r| r.info.clone()).collect()
    }

    /// `text` with every `{{name.field}}` filled in from the dependencies.
    pub fn render(&self, text: &str) -> String {
        render_references(text, |name, field| self.value(name, field))
    }

    /// `field` of the dependency `name` (`url`, `host`, …), when it runs and has one.
    pub fn value(&self, name: &str, field: &str) -> Option<String> {
        self.running
            .iter()
            .find(|r| r.info.name == name)
            .and_then(|r| r.field(field))
    }

    /// An environment with its values' templates filled in.
    pub fn render_env(&self, env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        env.iter()
            .map(|(k, v)| (k.clone(), self.render(v)))
            .collect()
    }

    /// Stops every dependency, the last booted first; keeps each one's output in
    /// `dependency-<name>.log` and removes its data directory. Returns the problems met (a
    /// dependency that had to be killed is not one).
    pub async fn shutdown(mut self) -> Vec<TargetError> {
        let mut problems = Vec::new();
        while let Some(r) = self.running.pop() {
            if let Some(process) = r.process
                && let Err(e) = process.shutdown(DEPENDENCY_SHUTDOWN_GRACE).await
            {
                problems.push(e);
            }
            if let Some(container) = r.container
                && let Err(e) = container.shutdown().await
            {
                problems.push(e);
            }
            if let Some(dir) = &r.data_dir
                && let Err(e) = remove_temp_dir(dir)
            {
                problems.push(TargetError::io(
                    format!("remove the data directory {}", dir.display()),
                    e,
                ));
            }
            if let Some(path) = &r.info.log {
                write_log(path, &r.log);
            }
        }
        problems
    }
}

impl Drop for RunningDependencies {
    fn drop(&mut self) {
        while let Some(mut r) = self.running.pop() {
            if let Some(process) = &r.process {
                process.kill_now();
            }
            if let Some(container) = &mut r.container {
                container.remove_blocking();
            }
            if let Some(dir) = &r.data_dir {
                let _ = remove_temp_dir(dir);
            }
            if let Some(path) = &r.info.log {
                write_log(path, &r.log);
            }
        }
    }
}

fn write_log(path: &Path, log: &LogRing) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut text = log.tail(DEFAULT_LOG_LINES).join("\n");
    text.push('\n');
    let _ = std::fs::write(path, text);
}

/// Which kind a dependency runs as: the one it names, else the target's (`--target`), where the
/// dependency can run so (a `url` target's dependencies run as processes).
pub fn resolve_kind(dependency: &DependencyConfig, target: TargetKind) -> DependencyKind {
    dependency.kind.unwrap_or(match target {
        TargetKind::Container => DependencyKind::Container,
        TargetKind::Process | TargetKind::Url => DependencyKind::Process,
    })
}

/// Boots `dependencies` in `depends-on` order, each ready before the next starts; their output is
/// written to `log_dir/dependency-<name>.log` at the end. On a failure, those already running are
/// stopped (and their directories removed) before the error is returned.
///
/// Containers are labelled with `run_id` (and their name), as the target's are.
pub async fn boot_dependencies(
    dependencies: &[DependencyConfig],
    target: TargetKind,
    run_id: &str,
    log_dir: &Path,
    events: &dyn Fn(BootEvent),
) -> Result<RunningDependencies, TargetError> {
    let mut booted = RunningDependencies {
        running: Vec::new(),
        log_dir: log_dir.to_path_buf(),
    };
    for dependency in boot_order(dependencies) {
        match boot_one(dependency, target, run_id, &booted, events).await {
            Ok(running) => booted.running.push(running),
            Err(e) => {
                let _ = booted.shutdown().await;
                return Err(e);
            }
        }
    }
    Ok(booted)
}

async fn boot_one(
    d: &DependencyConfig,
    target: TargetKind,
    run_id: &str,
    before: &RunningDependencies,
    events: &dyn Fn(BootEvent),
) -> Result<Running, TargetError> {
    let kind = resolve_kind(d, target);
    if let DependencySource::Url { url } = &d.source {
        let (host, port) = url_host_port(url).ok_or_else(|| TargetError::InvalidUrl {
            url: url.clone(),
            reason: "no host and port".into(),
        })?;
        return Ok(Running {
            info: DependencyInfo::at(&d.name, DependencyKind::Url, &host, port),
            fields: BTreeMap::from([("url", before.render(url))]),
            log: LogRing::new(1),
            process: None,
            container: None,
            data_dir: None,
        });
    }
    if kind == DependencyKind::Container {
        return boot_container(d, run_id, before, events).await;
    }
    let host = "127.0.0.1".to_owned();
    let port = port_of(d)?;
    let log = LogRing::new(DEFAULT_LOG_LINES);
    let log_path = before.log_dir.join(format!("dependency-{}.log", d.name));
    let render = |text: &str| render_with_self(text, &host, port, before);
    let mut env = address_env(&host, port);
    env.extend(d.env.iter().map(|(k, v)| (k.clone(), render(v))));
    let mut fields = BTreeMap::new();
    let started = Instant::now();
    let (process, program, version, user, data_dir, isready) = match &d.source {
        DependencySource::Command { command, args } => {
            let args: Vec<String> = args.iter().map(|a| render(a)).collect();
            events(BootEvent::Starting {
                what: format!("dependency `{}`: {command} on {host}:{port}", d.name),
            });
            let process = ProcessHandle::spawn(Spawn {
                binary: Path::new(command),
                args: &args,
                env,
                cpuset: None,
                log: log.clone(),
                user: None,
                stop: None,
            })
            .map_err(|e| match e {
                TargetError::Io { source, .. } => TargetError::DependencyUnavailable {
                    name: d.name.clone(),
                    missing: format!("`{command}` cannot be started: {source}"),
                    help: "install it, or give its full path in `command`".into(),
                },
                other => other,
            })?;
            (process, PathBuf::from(command), None, None, None, None)
        }
        DependencySource::Preset {
            preset: Preset::Postgres,
            ..
        } => {
            let pg = postgres_binaries(&d.name)?;
            let runas = run_as(&d.name)?;
            let dir = data_dir_for(&d.name, runas.as_ref())?;
            let data = dir.join("data");
            fields = postgres_fields(&host, port);
            let version = version_of(&pg.bin.join("postgres")).await;
            events(BootEvent::Starting {
                what: format!(
                    "dependency `{}`: {} on {host}:{port} (data in {})",
                    d.name,
                    version.as_deref().unwrap_or("postgres"),
                    data.display()
                ),
            });
            let ids = runas.as_ref().map(|u| (u.uid, u.gid));
            let boot = async {
                initdb(d, &pg, &data, ids, &env, &log).await?;
                let mut args: Vec<String> = [
                    "-D",
                    &data.to_string_lossy(),
                    "-p",
                    &port.to_string(),
                    "-c",
                    &format!("listen_addresses={host}"),
                    "-k",
                    &dir.to_string_lossy(),
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                // The statements a probe ranks by blocks (when the server has the module).
                if pg.has_stat_statements() {
                    args.push("-c".into());
                    args.push("shared_preload_libraries=pg_stat_statements".into());
                }
                ProcessHandle::spawn(Spawn {
                    binary: &pg.bin.join("postgres"),
                    args: &args,
                    env: env.clone(),
                    cpuset: None,
                    log: log.clone(),
                    user: ids,
                    stop: Some(Signal::SIGINT),
                })
            };
            let process = match boot.await {
                Ok(p) => p,
                Err(e) => {
                    let _ = remove_temp_dir(&dir);
                    write_log(&log_path, &log);
                    return Err(e);
                }
            };
            (
                process,
                pg.bin.join("postgres"),
                version,
                runas.map(|u| u.name),
                Some(dir),
                pg.isready,
            )
        }
        DependencySource::Image { .. }
        | DependencySource::Dockerfile { .. }
        | DependencySource::Url { .. } => {
            return Err(TargetError::DependencyUnavailable {
                name: d.name.clone(),
                missing: format!("it cannot run as a `{}` dependency", kind.name()),
                help: "an image or a Dockerfile runs as `kind = \"container\"`".into(),
            });
        }
    };
    let pid = process.pid;
    // A signal stops it after the `[teardown]` steps, which may reach it.
    super::cleanup::register_dependency_group(pid as i32);
    let running = Running {
        info: DependencyInfo {
            preset: match &d.source {
                DependencySource::Preset { preset, .. } => Some(preset.name().to_owned()),
                _ => None,
            },
            program: Some(program),
            version,
            pid: Some(pid),
            user,
            data_dir: data_dir.clone(),
            log: Some(log_path),
            ..DependencyInfo::at(&d.name, kind, &host, port)
        },
        fields,
        log,
        process: Some(process),
        container: None,
        data_dir,
    };
    // `pg_isready` of a preset's default check is the one beside its server.
    let check = match &d.ready.check {
        ReadyCheck::Command(argv) => ReadyCheck::Command(
            argv.iter()
                .enumerate()
                .map(|(i, a)| match (&isready, i) {
                    (Some(path), 0) if a == "pg_isready" => path.to_string_lossy().into_owned(),
                    _ => render(a),
                })
                .collect(),
        ),
        other => other.clone(),
    };
    ready_or_stopped(d, running, &Check::Config(check), started, before, events).await
}

/// The port a dependency listens on: the one written, else a free loopback port.
fn port_of(d: &DependencyConfig) -> Result<u16, TargetError> {
    match d.port {
        Some(p) => Ok(p),
        None => free_loopback_port(),
    }
}

/// `text` with `{{self.host|port|addr}}` (the dependency being booted, at `host:port`) and the
/// fields of the dependencies booted before it filled in.
fn render_with_self(text: &str, host: &str, port: u16, before: &RunningDependencies) -> String {
    render_references(text, |name, field| match (name, field) {
        ("self", "host") => Some(host.to_owned()),
        ("self", "port") => Some(port.to_string()),
        ("self", "addr") => Some(address(host, port)),
        ("self", _) => None,
        _ => before.value(name, field),
    })
}

/// `$PORT` and `$HOST` of a dependency listening at `host:port`.
fn address_env(host: &str, port: u16) -> Vec<(String, String)> {
    vec![
        ("PORT".into(), port.to_string()),
        ("HOST".into(), host.to_owned()),
    ]
}

/// What the templates read of the `postgres` preset beyond its host and port.
fn postgres_fields(host: &str, port: u16) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        (
            "url",
            format!(
                "postgres://{POSTGRES_USER}@{}/{POSTGRES_USER}",
                address(host, port)
            ),
        ),
        ("user", POSTGRES_USER.to_owned()),
        ("database", POSTGRES_USER.to_owned()),
    ])
}

/// Waits for `running` to pass `check`; stops it (and writes its log) when it does not.
async fn ready_or_stopped(
    d: &DependencyConfig,
    running: Running,
    check: &Check,
    started: Instant,
    before: &RunningDependencies,
    events: &dyn Fn(BootEvent),
) -> Result<Running, TargetError> {
    if let Err(e) = wait_ready(d, &running, check, started).await {
        let one = RunningDependencies {
            running: vec![running],
            log_dir: before.log_dir.clone(),
        };
        let _ = one.shutdown().await;
        return Err(e);
    }
    events(BootEvent::Ready {
        after: started.elapsed(),
    });
    Ok(running)
}

/// What tells that a dependency is ready: its config's check, or (a container of the `postgres`
/// preset, whose `pg_isready` may not be on this machine) a PostgreSQL connection.
enum Check {
    Config(ReadyCheck),
    PostgresConnection,
}

impl Check {
    fn describe(&self, host: &str, port: u16) -> String {
        match self {
            Self::Config(check) => check.describe(host, Some(port)),
            Self::PostgresConnection => format!(
                "a PostgreSQL connection to {} as `{POSTGRES_USER}` answering `SELECT 1`",
                address(host, port)
            ),
        }
    }
}

/// Boots a container dependency: its image on the host's network, with a free loopback port as
/// `$PORT` (the `postgres` preset is told its port on the command line), limited as written,
/// labelled with the run and its name.
async fn boot_container(
    d: &DependencyConfig,
    run_id: &str,
    before: &RunningDependencies,
    events: &dyn Fn(BootEvent),
) -> Result<Running, TargetError> {
    let unavailable = |missing: String, help: String| TargetError::DependencyUnavailable {
        name: d.name.clone(),
        missing,
        help,
    };
    let docker = super::docker::connect(super::docker::CONNECT_TIMEOUT)
        .await
        .map_err(|e| match e {
            TargetError::EngineUnavailable { detail } => unavailable(
                format!("it runs as a container and no Docker engine answers ({detail})"),
                "start the engine, or run it as a process (`--target process`, or \
                 `kind = \"process\"` on the dependency)"
                    .into(),
            ),
            other => other,
        })?;
    let (preset, image) = match &d.source {
        DependencySource::Preset {
            preset,
            image,
            pull,
        } => {
            let reference = image
                .clone()
                .unwrap_or_else(|| preset.default_image().to_owned());
            (
                Some(*preset),
                local_or_pulled(&docker, d, &reference, *pull, events).await?,
            )
        }
        DependencySource::Image { reference, pull } => (
            None,
            local_or_pulled(&docker, d, reference, *pull, events).await?,
        ),
        DependencySource::Dockerfile { path } => {
            let context = path.parent().unwrap_or_else(|| Path::new("."));
            let (built, _) = crate::image::build_dockerfile(&docker, path, context, events).await?;
            (
                None,
                DependencyImage {
                    reference: built.tag,
                    id: built.id,
                    pulled: false,
                },
            )
        }
        DependencySource::Command { command, .. } => {
            return Err(unavailable(
                format!("`{command}` is a command, which runs as a process, not a container"),
                "remove `kind = \"container\"`, or give it an `image`".into(),
            ));
        }
        DependencySource::Url { .. } => {
            return Err(unavailable(
                "a `url` dependency is not booted".into(),
                "remove `kind = \"container\"`".into(),
            ));
        }
    };
    // The host's network, so that the target (a process, or a container on the host's network),
    // the probes and the data steps all reach it at 127.0.0.1.
    let site = network::EngineSite::of(&docker).await?;
    match network::decide(
        NetworkChoice::Host,
        &site,
        &network::LocalSite::here(),
        true,
    ) {
        Ok((NetworkPath::Host, _)) => {}
        Ok((NetworkPath::Published, _))
        | Err(
            TargetError::HostNetworkUnavailable { .. } | TargetError::EngineNetworkElsewhere { .. },
        ) => {
            let why = match network::engine_elsewhere(&site, &network::LocalSite::here()) {
                Some(reason) => reason,
                None => network::host_unavailable(&site, network::local_kernel().as_deref())
                    .unwrap_or_else(|| "the engine's host network is not this loopback".into()),
            };
            return Err(unavailable(
                format!("a container dependency runs on the host's network, and {why}"),
                instead(d, preset),
            ));
        }
        Err(e) => return Err(e),
    }
    let host = "127.0.0.1".to_owned();
    let port = port_of(d)?;
    let render = |text: &str| render_with_self(text, &host, port, before);
    let mut env = address_env(&host, port);
    let mut args = Vec::new();
    let mut fields = BTreeMap::new();
    if preset == Some(Preset::Postgres) {
        // The official image's entrypoint (and the packed one's) reads these; `-p` and
        // `listen_addresses` put the server on this loopback port of the host's network.
        env.push(("POSTGRES_HOST_AUTH_METHOD".into(), "trust".into()));
        env.push(("PGPORT".into(), port.to_string()));
        args = [
            "-p".to_owned(),
            port.to_string(),
            "-c".into(),
            format!("listen_addresses={host}"),
            // The statements a probe ranks by blocks (both images have the module).
            "-c".into(),
            "shared_preload_libraries=pg_stat_statements".into(),
        ]
        .to_vec();
        fields = postgres_fields(&host, port);
    }
    // Its own env wins (a container's environment keeps the first of two equal names).
    env.retain(|(k, _)| !d.env.contains_key(k));
    env.extend(d.env.iter().map(|(k, v)| (k.clone(), render(v))));
    let log = LogRing::new(DEFAULT_LOG_LINES);
    let log_path = before.log_dir.join(format!("dependency-{}.log", d.name));
    events(BootEvent::Starting {
        what: format!(
            "dependency `{}`: container from {} on the host network ({host}:{port})",
            d.name, image.reference
        ),
    });
    let started = Instant::now();
    let handle = ContainerHandle::start(
        &docker,
        &ContainerSpec {
            image_id: &image.id,
            port,
            host_network: true,
            env,
            args: &args,
            run_id,
            cpus: d.cpus,
            memory_bytes: d.memory_bytes,
            cpuset: None,
            dependency: Some(&d.name),
        },
        log.clone(),
    )
    .await?;
    let running = Running {
        info: DependencyInfo {
            preset: preset.map(|p| p.name().to_owned()),
            pid: (handle.pid != 0).then_some(handle.pid),
            log: Some(log_path),
            image: Some(image),
            container: Some(short(&handle.id).to_owned()),
            ..DependencyInfo::at(&d.name, DependencyKind::Container, &host, port)
        },
        fields,
        log,
        process: None,
        container: Some(handle),
        data_dir: None,
    };
    // The preset's default `pg_isready` may not be on this machine: a connection tells the same.
    let check = match &d.ready.check {
        ReadyCheck::Command(argv)
            if preset == Some(Preset::Postgres) && *argv == postgres_ready_command() =>
        {
            Check::PostgresConnection
        }
        ReadyCheck::Command(argv) => Check::Config(ReadyCheck::Command(
            argv.iter().map(|a| render(a)).collect(),
        )),
        other => Check::Config(other.clone()),
    };
    ready_or_stopped(d, running, &check, started, before, events).await
}

/// The image `reference` in the local engine; pulled first when it is missing and `pull` allows
/// (a dependency's only: the service under test is never pulled).
async fn local_or_pulled(
    docker: &bollard::Docker,
    d: &DependencyConfig,
    reference: &str,
    pull: PullPolicy,
    events: &dyn Fn(BootEvent),
) -> Result<DependencyImage, TargetError> {
    match crate::image::inspect_local_image(docker, reference).await {
        Ok(image) => {
            return Ok(DependencyImage {
                reference: reference.to_owned(),
                id: image.id,
                pulled: false,
            });
        }
        Err(TargetError::ImageMissing { .. }) if pull == PullPolicy::Missing => {}
        Err(TargetError::ImageMissing { .. }) => {
            return Err(TargetError::DependencyUnavailable {
                name: d.name.clone(),
                missing: format!("the image `{reference}` is not in the local engine"),
                help: format!(
                    "let loadgate pull it: `pull = \"missing\"` on dependency `{}` \
                     (dependencies only; the service under test is never pulled); or build or \
                     load it locally (`docker build -t {reference} …`, `docker load`); or {}",
                    d.name,
                    instead(d, None),
                ),
            });
        }
        Err(e) => return Err(e),
    }
    events(BootEvent::Building {
        what: format!("dependency `{}`: pulling {reference}", d.name),
    });
    let (from_image, tag) = split_reference(reference);
    let opts = bollard::query_parameters::CreateImageOptionsBuilder::new()
        .from_image(from_image)
        .tag(tag)
        .build();
    let mut stream = docker.create_image(Some(opts), None, None);
    use futures::StreamExt as _;
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            return Err(TargetError::DependencyUnavailable {
                name: d.name.clone(),
                missing: format!("the image `{reference}` could not be pulled: {e}"),
                help: "check the name and the registry's reachability, or build the image \
                       locally"
                    .into(),
            });
        }
    }
    let image = crate::image::inspect_local_image(docker, reference).await?;
    events(BootEvent::Built {
        artifact: reference.to_owned(),
        reused: false,
    });
    Ok(DependencyImage {
        reference: reference.to_owned(),
        id: image.id,
        pulled: true,
    })
}

/// What to do instead of running `d` as a container: a preset runs as a process too.
fn instead(d: &DependencyConfig, preset: Option<Preset>) -> String {
    let preset = preset.or(match &d.source {
        DependencySource::Preset { preset, .. } => Some(*preset),
        _ => None,
    });
    match preset {
        Some(_) => "run it as a process (`kind = \"process\"` on the dependency, or \
                    `--target process`), or point `url` at one you start"
            .into(),
        None => "point `url` at one you start".into(),
    }
}

/// `name[:tag]` (a digest `name@sha256:…` stays whole, with no tag) as the pull API takes it:
/// the tag defaults to `latest`, and a registry's port is not a tag.
fn split_reference(reference: &str) -> (&str, &str) {
    if reference.contains('@') {
        return (reference, "");
    }
    match reference.rfind(':') {
        Some(i) if !reference[i + 1..].contains('/') => (&reference[..i], &reference[i + 1..]),
        _ => (reference, "latest"),
    }
}

/// Polls `check` until it passes, the dependency exits, or its `ready.timeout` passes.
async fn wait_ready(
    d: &DependencyConfig,
    r: &Running,
    check: &Check,
    started: Instant,
) -> Result<(), TargetError> {
    let waited_for = check.describe(&r.info.host, r.info.port);
    loop {
        if let Some(container) = &r.container
            && let Some((code, oom)) = container.exited().await?
        {
            container.drain_output(Duration::from_secs(1)).await;
            return Err(TargetError::DependencyExited {
                name: d.name.clone(),
                step: format!(
                    "its container ({})",
                    r.info
                        .image
                        .as_ref()
                        .map_or("its image", |i| i.reference.as_str())
                ),
                status: if oom {
                    format!("exit status {code}, killed: out of memory")
                } else {
                    format!("exit status {code}")
                },
                log_tail: r.log.tail(ERROR_LOG_LINES),
            });
        }
        if let Some(process) = &r.process
            && let Some(status) = process.try_exit()?
        {
            process.drain_output(Duration::from_secs(1)).await;
            return Err(TargetError::DependencyExited {
                name: d.name.clone(),
                step: r
                    .info
                    .program
                    .as_ref()
                    .and_then(|p| p.file_name())
                    .map_or_else(|| "it".to_owned(), |f| f.to_string_lossy().into_owned()),
                status: describe_status(status),
                log_tail: r.log.tail(ERROR_LOG_LINES),
            });
        }
        let seen = match check {
            Check::Config(check) => check_once(check, &r.info.host, r.info.port).await,
            Check::PostgresConnection => postgres_answers(&r.info.host, r.info.port).await,
        };
        let last = match seen {
            Ok(()) => return Ok(()),
            Err(seen) => seen,
        };
        if started.elapsed() >= d.ready.timeout {
            return Err(TargetError::DependencyNotReady(Box::new(
                super::error::DependencyNotReady {
                    name: d.name.clone(),
                    check: waited_for,
                    waited: d.ready.timeout,
                    last,
                    log_tail: r.log.tail(ERROR_LOG_LINES),
                },
            )));
        }
        tokio::time::sleep(d.ready.interval).await;
    }
}

/// Whether the PostgreSQL server at `host:port` takes a connection as the preset's user and
/// answers `SELECT 1` (within 5 s): `Ok`, or what it said.
async fn postgres_answers(host: &str, port: u16) -> Result<(), String> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(host)
        .port(port)
        .user(POSTGRES_USER)
        .dbname(POSTGRES_USER)
        .connect_timeout(Duration::from_secs(5));
    let attempt = async {
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(connection);
        let answer = client.simple_query("SELECT 1").await.map(|_| ());
        drop(client);
        let _ = driver.await;
        answer.map_err(|e| e.to_string())
    };
    tokio::time::timeout(Duration::from_secs(5), attempt)
        .await
        .unwrap_or_else(|_| Err("no answer within 5s".into()))
}

/// One readiness check: `Ok`, or what it saw.
async fn check_once(check: &ReadyCheck, host: &str, port: u16) -> Result<(), String> {
    const ATTEMPT: Duration = Duration::from_secs(5);
    match check {
        ReadyCheck::Tcp => {
            match tokio::time::timeout(ATTEMPT, tokio::net::TcpStream::connect((host, port))).await
            {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(format!("connect: {e}")),
                Err(_) => Err("connect: timed out".into()),
            }
        }
        ReadyCheck::Http(path) => {
            let url = format!("http://{}{path}", address(host, port));
            let client = reqwest::Client::builder()
                .timeout(ATTEMPT)
                .build()
                .map_err(|e| e.to_string())?;
            match client.get(&url).send().await {
                Ok(resp) if resp.status().is_success() => Ok(()),
                Ok(resp) => Err(format!("{}", resp.status())),
                Err(e) => Err(e.to_string()),
            }
        }
        ReadyCheck::Command(argv) => {
            let Some((program, args)) = argv.split_first() else {
                return Err("empty command".into());
            };
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true);
            match tokio::time::timeout(ATTEMPT, cmd.output()).await {
                Ok(Ok(out)) if out.status.success() => Ok(()),
                Ok(Ok(out)) => {
                    let said = String::from_utf8_lossy(&out.stdout).to_string()
                        + &String::from_utf8_lossy(&out.stderr);
                    let said = said.lines().next().unwrap_or_default().trim().to_owned();
                    Err(format!("{}: {said}", describe_status(out.status)))
                }
                Ok(Err(e)) => Err(format!("cannot run `{program}`: {e}")),
                Err(_) => Err(format!("`{program}` did not end within 5s")),
            }
        }
    }
}

/// The PostgreSQL server binaries found on this machine.
struct PostgresBinaries {
    /// The directory of `initdb` and `postgres`.
    bin: PathBuf,
    /// `pg_isready`, beside them or on `$PATH`.
    isready: Option<PathBuf>,
}

impl PostgresBinaries {
    /// Whether the server has the `pg_stat_statements` module (in its `lib` beside `bin`, where
    /// Debian's packages put it).
    fn has_stat_statements(&self) -> bool {
        self.bin
            .parent()
            .is_some_and(|dir| dir.join("lib/pg_stat_statements.so").is_file())
    }
}

/// Where PostgreSQL's programs may be, in the order they are looked for: Debian's versioned
/// `/usr/lib/postgresql/*/bin`, the newest first, then `$PATH`.
pub(super) fn postgres_bin_dirs() -> Vec<PathBuf> {
    let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.split('.').next()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .collect();
    versioned.sort_by(|a, b| b.cmp(a));
    versioned
        .into_iter()
        .map(|(_, bin)| bin)
        .chain(
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default(),
        )
        .collect()
}

/// Finds `initdb` and `postgres`: Debian's and Ubuntu's `/usr/lib/postgresql/<version>/bin` (the
/// newest version), then `$PATH` (where other systems put them).
fn postgres_binaries(name: &str) -> Result<PostgresBinaries, TargetError> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    let dirs = postgres_bin_dirs();
    let bin = dirs
        .iter()
        .find(|d| has_server(d))
        .cloned()
        .ok_or_else(|| TargetError::DependencyUnavailable {
            name: name.to_owned(),
            missing: "no PostgreSQL server binaries (`initdb` and `postgres` in \
                      /usr/lib/postgresql/*/bin or on $PATH)"
                .into(),
            help: "install PostgreSQL (Debian and Ubuntu: `apt-get install postgresql`), or run \
                   the dependency as `kind = \"url\"` against a server you start"
                .into(),
        })?;
    let isready = std::iter::once(bin.clone())
        .chain(dirs)
        .map(|d| d.join("pg_isready"))
        .find(|p| p.is_file());
    Ok(PostgresBinaries { bin, isready })
}

/// The unprivileged user a database runs as.
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
}

/// As root: the `postgres` system user where it exists (the PostgreSQL packages create it), else
/// `nobody`; otherwise loadgate's own user (`None`).
fn run_as(name: &str) -> Result<Option<RunAs>, TargetError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    for candidate in [POSTGRES_USER, "nobody"] {
        if let Ok(Some(user)) = nix::unistd::User::from_name(candidate) {
            return Ok(Some(RunAs {
                name: user.name,
                uid: user.uid.as_raw(),
                gid: user.gid.as_raw(),
            }));
        }
    }
    Err(TargetError::DependencyUnavailable {
        name: name.to_owned(),
        missing: "PostgreSQL refuses to run as root, and neither a `postgres` nor a `nobody` \
                  user exists to run it as"
            .into(),
        help: "create a system user `postgres` (`useradd --system postgres`), or run loadgate \
               as an unprivileged user"
            .into(),
    })
}

/// A new directory `$TMPDIR/loadgate-<name>-…`, mode 0700, owned by `runas`, registered for
/// removal on every path.
fn data_dir_for(name: &str, runas: Option<&RunAs>) -> Result<PathBuf, TargetError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "loadgate-{name}-{}-{nanos:08x}",
        std::process::id()
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| TargetError::io(format!("create {}", dir.display()), e))?;
    register_temp_dir(&dir);
    if let Some(u) = runas
        && let Err(e) = std::os::unix::fs::chown(&dir, Some(u.uid), Some(u.gid))
    {
        let _ = remove_temp_dir(&dir);
        return Err(TargetError::io(
            format!("give {} to user {}", dir.display(), u.name),
            e,
        ));
    }
    Ok(dir)
}

/// Runs `initdb` (as `ids`) into `data`, its output into `log`.
async fn initdb(
    d: &DependencyConfig,
    pg: &PostgresBinaries,
    data: &Path,
    ids: Option<(u32, u32)>,
    env: &[(String, String)],
    log: &LogRing,
) -> Result<(), TargetError> {
    let initdb = pg.bin.join("initdb");
    let mut cmd = tokio::process::Command::new(&initdb);
    cmd.arg("-D")
        .arg(data)
        .args([
            "-U",
            POSTGRES_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some((uid, gid)) = ids {
        cmd.uid(uid).gid(gid);
    }
    // In its own process group, registered: a signal while it runs stops it too.
    cmd.process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd
        .spawn()
        .map_err(|e| TargetError::io(format!("run {}", initdb.display()), e))?;
    let pgid = child.id().map(|p| p as i32);
    if let Some(pgid) = pgid {
        super::cleanup::register_process_group(pgid);
    }
    let waited = tokio::time::timeout(INITDB_TIMEOUT, child.wait_with_output()).await;
    if let Some(pgid) = pgid {
        if waited.is_err() {
            super::cleanup::kill_group_blocking(pgid, Duration::from_secs(1));
        }
        super::cleanup::unregister_process_group(pgid);
    }
    let out = match waited {
        Ok(out) => out.map_err(|e| TargetError::io(format!("run {}", initdb.display()), e))?,
        Err(_) => {
            return Err(TargetError::DependencyExited {
                name: d.name.clone(),
                step: "initdb".into(),
                status: format!(
                    "still running after {}",
                    crate::config::format_duration(INITDB_TIMEOUT)
                ),
                log_tail: log.tail(ERROR_LOG_LINES),
            });
        }
    };
    log.push_chunk(OutputStream::Stdout, &out.stdout);
    log.push_chunk(OutputStream::Stderr, &out.stderr);
    if !out.status.success() {
        return Err(TargetError::DependencyExited {
            name: d.name.clone(),
            step: "initdb".into(),
            status: describe_status(out.status),
            log_tail: log.tail(ERROR_LOG_LINES),
        });
    }
    Ok(())
}

/// The first line `program --version` prints, if it prints one within a few seconds.
async fn version_of(program: &Path) -> Option<String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(5), cmd.output())
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    (out.status.success() && !line.is_empty()).then(|| line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DependencyConfig, parse_config_str};

    /// The dependencies of a config made of the smallest workload and `text`.
    fn dependencies(text: &str) -> Vec<DependencyConfig> {
        let text = format!(
            "[workload]\nsessions-per-sec = 1\n[[workload.operation]]\nname = \"home\"\n\
             request = {{ path = \"/\" }}\n{text}"
        );
        parse_config_str(&text, Path::new("loadgate.toml"), None, "default")
            .unwrap_or_else(|e| panic!("{e}"))
            .dependencies
    }

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| super::super::cleanup::parse_state_and_pgrp(&s))
            .is_some_and(|(state, _)| state != 'Z' && state != 'X')
    }

    /// `second` is written first but waits for `first`: it refuses to start (exit 3) unless
    /// `first` is ready, and it is handed `first`'s port through a template.
    #[tokio::test]
    async fn dependencies_boot_in_depends_on_order_and_see_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let deps = dependencies(&format!(
            r#"
            [[dependency]]
            name = "second"
            command = "sh"
            args = ["-c", "test -f {d}/first || exit 3; echo \"$FIRST\" > {d}/second; exec sleep 30"]
            env = {{ FIRST = "{{{{first.port}}}}" }}
            ready = {{ command = ["test", "-f", "{d}/second"], interval = "20ms" }}
            depends-on = ["first"]

            [[dependency]]
            name = "first"
            command = "sh"
            args = ["-c", "echo $PORT > {d}/first; exec sleep 30"]
            ready = {{ command = ["test", "-f", "{d}/first"], interval = "20ms" }}
            "#
        ));
        let running =
            boot_dependencies(&deps, TargetKind::Process, "run-test", dir.path(), &|_| {})
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        let infos = running.infos();
        let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        let first_port = infos[0].port.to_string();
        let seen = std::fs::read_to_string(dir.path().join("second")).unwrap();
        assert_eq!(seen.trim(), first_port, "second was handed first's port");
        assert_eq!(
            running.render("x={{first.addr}}"),
            format!("x=127.0.0.1:{first_port}")
        );
        let pids: Vec<u32> = infos.iter().filter_map(|i| i.pid).collect();
        assert!(pids.iter().all(|&p| alive(p)));
        assert!(running.shutdown().await.is_empty());
        assert!(
            pids.iter().all(|&p| !alive(p)),
            "a dependency outlived its shutdown"
        );
        for name in ["first", "second"] {
            assert!(dir.path().join(format!("dependency-{name}.log")).is_file());
        }
    }

    /// A dependency that never becomes ready: the error names it, the readiness it waited for and
    /// its output; it and the one booted before it are gone.
    #[tokio::test]
    async fn a_dependency_that_never_becomes_ready_is_reported_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let deps = dependencies(&format!(
            r#"
            [[dependency]]
            name = "up"
            command = "sh"
            args = ["-c", "echo $$ > {d}/up.pid; exec sleep 30"]
            ready = {{ command = ["test", "-f", "{d}/up.pid"], interval = "20ms" }}

            [[dependency]]
            name = "never"
            command = "sh"
            args = ["-c", "echo $$ > {d}/never.pid; echo still warming up; exec sleep 30"]
            ready = {{ tcp = true, timeout = "1s", interval = "100ms" }}
            depends-on = ["up"]
            "#
        ));
        let err = boot_dependencies(&deps, TargetKind::Process, "run-test", dir.path(), &|_| {})
            .await
            .expect_err("never is never ready");
        let TargetError::DependencyNotReady(e) = &err else {
            panic!("{err}")
        };
        let super::super::error::DependencyNotReady {
            name,
            check,
            waited,
            log_tail,
            ..
        } = e.as_ref();
        assert_eq!(name, "never");
        assert!(check.starts_with("a TCP connect to 127.0.0.1:"), "{check}");
        assert_eq!(*waited, Duration::from_secs(1));
        assert_eq!(log_tail, &["still warming up".to_owned()]);
        assert_eq!(err.kind(), super::super::TargetErrorKind::Target);
        for name in ["up", "never"] {
            let pid: u32 = std::fs::read_to_string(dir.path().join(format!("{name}.pid")))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(!alive(pid), "`{name}` ({pid}) outlived the failed boot");
        }
    }

    /// A `url` dependency boots nothing: its address comes from the url, whole for `{{NAME.url}}`,
    /// and a process that depends on it is handed it.
    #[tokio::test]
    async fn a_url_dependency_is_handed_over_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let deps = dependencies(&format!(
            r#"
            [[dependency]]
            name = "shared"
            url = "postgres://app@127.0.0.1/app"

            [[dependency]]
            name = "user"
            command = "sh"
            args = ["-c", "echo \"$DB\" > {d}/db; exec sleep 30"]
            env = {{ DB = "{{{{shared.url}}}} {{{{shared.addr}}}}" }}
            ready = {{ command = ["test", "-f", "{d}/db"], interval = "20ms" }}
            depends-on = ["shared"]
            "#
        ));
        let running =
            boot_dependencies(&deps, TargetKind::Process, "run-test", dir.path(), &|_| {})
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        let infos = running.infos();
        assert_eq!(infos[0].kind, DependencyKind::Url);
        assert_eq!((infos[0].host.as_str(), infos[0].port), ("127.0.0.1", 5432));
        assert_eq!(infos[0].pid, None);
        let seen = std::fs::read_to_string(dir.path().join("db")).unwrap();
        assert_eq!(seen.trim(), "postgres://app@127.0.0.1/app 127.0.0.1:5432");
        assert!(running.shutdown().await.is_empty());
    }

    #[test]
    fn a_reference_splits_into_name_and_tag_as_the_pull_api_takes_them() {
        assert_eq!(split_reference("postgres:16"), ("postgres", "16"));
        assert_eq!(split_reference("postgres"), ("postgres", "latest"));
        // A registry's port is not a tag.
        assert_eq!(
            split_reference("registry.local:5000/team/pg"),
            ("registry.local:5000/team/pg", "latest")
        );
        assert_eq!(
            split_reference("registry.local:5000/team/pg:15"),
            ("registry.local:5000/team/pg", "15")
        );
        assert_eq!(split_reference("pg@sha256:abc"), ("pg@sha256:abc", ""));
    }

    #[test]
    fn a_preset_follows_the_target_unless_it_names_its_kind() {
        let deps = dependencies(
            "[[dependency]]\nname = \"a\"\npreset = \"postgres\"\n\
             [[dependency]]\nname = \"b\"\npreset = \"postgres\"\nkind = \"process\"\n",
        );
        assert_eq!(
            resolve_kind(&deps[0], TargetKind::Container),
            DependencyKind::Container
        );
        assert_eq!(
            resolve_kind(&deps[0], TargetKind::Url),
            DependencyKind::Process
        );
        assert_eq!(
            resolve_kind(&deps[1], TargetKind::Container),
            DependencyKind::Process
        );
    }
}
