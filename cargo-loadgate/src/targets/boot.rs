//! Booting a target of any kind, waiting until it is ready, and the handle a run holds on it:
//! its base URL, its output, its resource sampler, and its teardown on every path.

use super::{
    BootEvent, ERROR_LOG_LINES, LogRing, ResourceSampler, SampleSource, TargetError,
    container::{ContainerHandle, ContainerSpec, short},
    docker::{CONNECT_TIMEOUT, connect},
    network::{self, EngineSite, NetworkInfo, NetworkPath},
    process::{ProcessHandle, SHUTDOWN_GRACE, Spawn, describe_status, free_loopback_port},
    ring::DEFAULT_LOG_LINES,
    sample::{Probe, procfs_readable},
    url::check_target_url,
};
use crate::{
    config::{PackageRef, ReadyConfig, TargetConfig, TargetKind, TargetSource},
    image::{
        BuildMode, ImageRef, Packing, build_dockerfile, cargo_build, inspect_local_image, pack_bin,
        pack_binary,
    },
};
use serde::{Deserialize, Serialize};
use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

/// Everything [`boot`] needs to know.
#[derive(Clone, Debug)]
pub struct BootRequest {
    /// How to run the target (resolved by the caller).
    pub kind: TargetKind,
    /// `[target]` of the config.
    pub config: TargetConfig,
    /// The cargo package, needed for `bin = …`.
    pub package: Option<PackageRef>,
    /// `--env KEY=VALUE`, applied after the config's env (so they win).
    pub extra_env: Vec<(String, String)>,
    /// Whether a non-loopback URL is allowed.
    pub allow_remote: bool,
    /// `--url`, for the `url` kind (overrides `[target] url`).
    pub url: Option<String>,
    /// Unique per run; containers are labelled with it (`loadgate.run`).
    pub run_id: String,
    /// Pin the target to these cores (`1`, `0-1`): cpuset for a container, affinity for a process.
    pub cpuset: Option<String>,
    /// A binary already built for `bin = …` (a paired run's base): run or packed as it is,
    /// without building the package.
    pub prebuilt: Option<PathBuf>,
}

/// What a run records about its target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// How it was run.
    pub kind: TargetKind,
    /// Where the load goes, e.g. `http://127.0.0.1:41234`.
    pub base_url: String,
    /// The image (container kind).
    pub image: Option<ImageRef>,
    /// How the binary was packed into the image, when loadgate packed it.
    pub packing: Option<Packing>,
    /// The binary (process kind, or the one packed into the image).
    pub binary: Option<PathBuf>,
    /// The service's process id as this host sees it.
    pub pid: Option<u32>,
    /// The container (container kind).
    pub container_id: Option<String>,
    /// The port the load goes to on 127.0.0.1.
    pub port: Option<u16>,
    /// The port the service listens on inside its container.
    pub container_port: Option<u16>,
    /// CPU limit in cores (container kind).
    pub cpus: Option<f64>,
    /// Memory limit in bytes (container kind).
    pub memory_bytes: Option<u64>,
    /// The cores the target is pinned to.
    pub cpuset: Option<String>,
    /// Where resource samples come from.
    pub samples: SampleSource,
    /// How the load reached a container target (absent for processes and URLs, which are on
    /// loopback already, and in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkInfo>,
}

/// How the target ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetExit {
    /// For a person: `exit status 0`, `signal 15 (SIGTERM)`.
    pub description: String,
    /// The exit code, when it exited normally (a container's code).
    pub code: Option<i64>,
    /// The signal that ended it (process kind).
    pub signal: Option<i32>,
    /// Whether it had to be killed after the grace period.
    pub killed: bool,
}

#[derive(Debug)]
enum Handle {
    Process(ProcessHandle),
    Container(ContainerHandle),
    Url,
}

/// A booted, ready target. Call [`RunningTarget::shutdown`]; if it is dropped instead, it is killed
/// and removed synchronously (best effort).
#[derive(Debug)]
pub struct RunningTarget {
    info: TargetInfo,
    log: LogRing,
    probe: Probe,
    handle: Option<Handle>,
}

/// Builds (when needed), starts and waits for the target; emits progress through `events`.
/// On any failure after the start, the target is torn down before the error is returned.
pub async fn boot(
    req: BootRequest,
    events: &dyn Fn(BootEvent),
) -> Result<RunningTarget, TargetError> {
    let target = match req.kind {
        TargetKind::Url => boot_url(&req)?,
        TargetKind::Process => boot_process(&req, events).await?,
        TargetKind::Container => boot_container(&req, events).await?,
    };
    match target.wait_ready(&req.config.ready).await {
        Ok(after) => {
            events(BootEvent::Ready { after });
            let mut target = target;
            target.check_listener(events);
            Ok(target)
        }
        Err(e) => {
            let _ = target.shutdown().await;
            Err(e)
        }
    }
}

fn source_desc(source: &TargetSource) -> String {
    match source {
        TargetSource::Bin { name } => format!("bin `{name}`"),
        TargetSource::Image { reference } => format!("image `{reference}`"),
        TargetSource::Dockerfile { path, .. } => format!("dockerfile `{}`", path.display()),
        TargetSource::Url { url } => format!("url `{url}`"),
    }
}

fn boot_url(req: &BootRequest) -> Result<RunningTarget, TargetError> {
    let url = match (&req.url, &req.config.source) {
        (Some(url), _) | (None, TargetSource::Url { url }) => url,
        (None, _) => return Err(TargetError::MissingUrl),
    };
    let base_url = check_target_url(url, req.allow_remote)?;
    let port = reqwest::Url::parse(&base_url)
        .ok()
        .and_then(|u| u.port_or_known_default());
    Ok(RunningTarget {
        info: TargetInfo {
            kind: TargetKind::Url,
            base_url,
            image: None,
            packing: None,
            binary: None,
            pid: None,
            container_id: None,
            port,
            container_port: None,
            cpus: None,
            memory_bytes: None,
            cpuset: None,
            samples: SampleSource::None,
            network: None,
        },
        log: LogRing::new(1),
        probe: Probe::Nothing,
        handle: Some(Handle::Url),
    })
}

/// The service's environment: `$PORT`, and `$HOST=127.0.0.1` when it runs on the host's network
/// (a process, or a container with host networking: a service that binds `$HOST` is then on
/// loopback only), then the config's env and `--env`, which win.
fn merged_env(req: &BootRequest, port: u16, on_host_network: bool) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![("PORT".into(), port.to_string())];
    if on_host_network {
        env.push(("HOST".into(), "127.0.0.1".into()));
    }
    for (k, v) in req
        .config
        .env
        .iter()
        .chain(req.extra_env.iter().map(|(k, v)| (k, v)))
    {
        env.retain(|(key, _)| key != k);
        env.push((k.clone(), v.clone()));
    }
    env
}

/// The `PORT` the user set in the config's env or with `--env`, which a process target then uses
/// instead of a free port.
fn port_override(req: &BootRequest) -> Option<u16> {
    req.extra_env
        .iter()
        .rev()
        .find(|(k, _)| k == "PORT")
        .map(|(_, v)| v)
        .or_else(|| req.config.env.get("PORT"))
        .and_then(|v| v.trim().parse().ok())
}

async fn boot_process(
    req: &BootRequest,
    events: &dyn Fn(BootEvent),
) -> Result<RunningTarget, TargetError> {
    let TargetSource::Bin { name: bin } = &req.config.source else {
        return Err(TargetError::Unsupported {
            kind: "process".into(),
            source_desc: source_desc(&req.config.source),
        });
    };
    let on_line = |line: &str| {
        events(BootEvent::BuildOutput {
            line: line.to_owned(),
        })
    };
    let binary = match &req.prebuilt {
        Some(binary) => binary.clone(),
        None => {
            let package = req
                .package
                .as_ref()
                .ok_or_else(|| TargetError::NoPackage { bin: bin.clone() })?;
            events(BootEvent::Building {
                what: format!("{bin} (release)"),
            });
            cargo_build(package, bin, &BuildMode::Host, &on_line).await?
        }
    };
    events(BootEvent::Built {
        artifact: binary.display().to_string(),
        reused: req.prebuilt.is_some(),
    });
    let port = match port_override(req) {
        Some(port) => port,
        None => free_loopback_port()?,
    };
    let log = LogRing::new(DEFAULT_LOG_LINES);
    events(BootEvent::Starting {
        what: format!("{} on 127.0.0.1:{port}", binary.display()),
    });
    let handle = ProcessHandle::spawn(Spawn {
        binary: &binary,
        args: &req.config.args,
        env: merged_env(req, port, true),
        cpuset: req.cpuset.as_deref(),
        log: log.clone(),
        user: None,
        stop: None,
    })?;
    let pid = handle.pid;
    Ok(RunningTarget {
        info: TargetInfo {
            kind: TargetKind::Process,
            base_url: format!("http://127.0.0.1:{port}"),
            image: None,
            packing: None,
            binary: Some(binary),
            pid: Some(pid),
            container_id: None,
            port: Some(port),
            container_port: None,
            cpus: None,
            memory_bytes: None,
            cpuset: req.cpuset.clone(),
            samples: SampleSource::Procfs { pid },
            network: None,
        },
        log,
        probe: Probe::Procfs(pid),
        handle: Some(Handle::Process(handle)),
    })
}

async fn boot_container(
    req: &BootRequest,
    events: &dyn Fn(BootEvent),
) -> Result<RunningTarget, TargetError> {
    let docker = connect(CONNECT_TIMEOUT).await?;
    let (image, binary, packing) = match &req.config.source {
        TargetSource::Bin { name } => {
            let packed = match &req.prebuilt {
                Some(binary) => pack_binary(&docker, binary, name, events).await?,
                None => {
                    let package = req
                        .package
                        .as_ref()
                        .ok_or_else(|| TargetError::NoPackage { bin: name.clone() })?;
                    pack_bin(&docker, package, name, events).await?
                }
            };
            (packed.image, Some(packed.binary), Some(packed.packing))
        }
        TargetSource::Image { reference } => {
            (inspect_local_image(&docker, reference).await?, None, None)
        }
        TargetSource::Dockerfile { path, context } => (
            build_dockerfile(&docker, path, context, events).await?.0,
            None,
            None,
        ),
        TargetSource::Url { .. } => {
            return Err(TargetError::Unsupported {
                kind: "container".into(),
                source_desc: source_desc(&req.config.source),
            });
        }
    };
    let log = LogRing::new(DEFAULT_LOG_LINES);
    let site = EngineSite::of(&docker).await?;
    let (path, fallback) = network::decide(
        req.config.network,
        &site,
        &network::LocalSite::here(),
        matches!(req.config.source, TargetSource::Bin { .. }),
    )?;
    let host_network = path == NetworkPath::Host;
    // On the host's network the service listens on a free loopback port of its own, or on the
    // `PORT` the user set, which must be free (a paired run's base would otherwise find the
    // head's listener and pass its readiness check against the head); published, on the
    // config's port inside its own namespace.
    let port = match (host_network, port_override(req)) {
        (false, _) => req.config.port,
        (true, Some(port)) => {
            // With SO_REUSEADDR, as the service itself binds (tokio does): a port whose last
            // listener was just killed (a replica booted again) holds sockets in TIME_WAIT, which
            // do not stop a new listener; a live listener still does.
            let taken = tokio::net::TcpSocket::new_v4()
                .and_then(|s| {
                    s.set_reuseaddr(true)?;
                    s.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
                })
                .is_err();
            if taken {
                return Err(TargetError::PortInUse {
                    port,
                    log_tail: Vec::new(),
                });
            }
            port
        }
        (true, None) => free_loopback_port()?,
    };
    events(BootEvent::Starting {
        what: match path {
            NetworkPath::Host => format!(
                "container from {} on the host network (127.0.0.1:{port})",
                image.tag
            ),
            NetworkPath::Published => format!("container from {} (port {port})", image.tag),
        },
    });
    if let Some(why) = &fallback {
        events(BootEvent::Warning {
            message: format!(
                "not on the host network ({why}); the port is published on 127.0.0.1, and the \
                 engine's proxy is in the measured path"
            ),
        });
    }
    let handle = ContainerHandle::start(
        &docker,
        &ContainerSpec {
            image_id: &image.id,
            port,
            host_network,
            env: merged_env(req, port, host_network),
            args: &req.config.args,
            run_id: &req.run_id,
            cpus: req.config.cpus,
            memory_bytes: req.config.memory_bytes,
            cpuset: req.cpuset.as_deref(),
            dependency: None,
        },
        log.clone(),
    )
    .await?;
    let (probe, samples) = if procfs_readable(handle.pid) {
        (
            Probe::Procfs(handle.pid),
            SampleSource::Procfs { pid: handle.pid },
        )
    } else {
        (
            Probe::EngineStats(docker.clone(), handle.id.clone()),
            SampleSource::EngineStats {
                container_id: handle.id.clone(),
            },
        )
    };
    let host_port = handle.host_port;
    let info = TargetInfo {
        kind: TargetKind::Container,
        base_url: format!("http://127.0.0.1:{host_port}"),
        image: Some(image),
        packing,
        binary,
        pid: (handle.pid != 0).then_some(handle.pid),
        container_id: Some(handle.id.clone()),
        port: Some(host_port),
        container_port: (!host_network).then_some(port),
        cpus: req.config.cpus,
        memory_bytes: req.config.memory_bytes,
        cpuset: req.cpuset.clone(),
        samples,
        network: Some(NetworkInfo {
            path,
            asked: req.config.network,
            fallback,
            binds_every_interface: None,
        }),
    };
    let target = RunningTarget {
        info,
        log,
        probe,
        handle: Some(Handle::Container(handle)),
    };
    if host_port == 0 {
        // An engine clears the port bindings of a container that already exited: a service that
        // dies at once (bad config) lands here, and its exit status and output say why.
        if let Err(crashed) = target.check_alive().await {
            let _ = target.shutdown().await;
            return Err(crashed);
        }
        let tail = target.log_tail(ERROR_LOG_LINES);
        let _ = target.shutdown().await;
        return Err(TargetError::Crashed {
            status: "the engine published no port".into(),
            log_tail: tail,
        });
    }
    Ok(target)
}

/// The state of a booted instance, as a fault verifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceState {
    /// Its process runs.
    Running,
    /// Its process is stopped (SIGSTOP): alive, and answering nothing.
    Stopped,
    /// It has exited.
    Exited,
}

/// The state letter of `/proc/<pid>/stat`, when the process is visible to this host.
fn proc_state(pid: u32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    super::cleanup::parse_state_and_pgrp(&text).map(|(state, _)| state)
}

/// A process's state from its `/proc/<pid>/stat` letter: `T` (stopped by a signal) and `t`
/// (stopped by a tracer) are stopped, `Z` and `X` have exited, the rest run.
fn state_of_letter(letter: char) -> InstanceState {
    match letter {
        'T' | 't' => InstanceState::Stopped,
        'Z' | 'X' => InstanceState::Exited,
        _ => InstanceState::Running,
    }
}

impl RunningTarget {
    /// Kills the service at once with SIGKILL, which gives it no chance to close its connections:
    /// a process's whole group, or the container (its init and the service with it).
    pub async fn kill(&self) -> Result<(), TargetError> {
        match &self.handle {
            Some(Handle::Process(p)) => nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(p.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .map_err(|e| TargetError::io("kill the target's process group", e.into())),
            Some(Handle::Container(c)) => c
                .docker
                .kill_container(
                    &c.id,
                    Some(
                        bollard::query_parameters::KillContainerOptionsBuilder::new()
                            .signal("SIGKILL")
                            .build(),
                    ),
                )
                .await
                .map_err(|e| TargetError::engine(format!("kill container {}", short(&c.id)), e)),
            Some(Handle::Url) | None => Err(not_booted("kill")),
        }
    }

    /// Stops (SIGSTOP, `stop`) or continues (SIGCONT) the service: a process's whole group, or a
    /// container's service process as this host sees it (a signal to the container's init would
    /// stop the init alone). A container whose service this host cannot see cannot be paused.
    pub fn stop_or_continue(&self, stop: bool) -> Result<(), TargetError> {
        use nix::sys::signal::Signal;
        let signal = if stop {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        let what = if stop { "pause" } else { "continue" };
        match &self.handle {
            Some(Handle::Process(p)) => {
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(p.pid as i32), signal).map_err(
                    |e| TargetError::io(format!("{what} the target's process group"), e.into()),
                )
            }
            Some(Handle::Container(c)) if c.pid != 0 => {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.pid as i32), signal).map_err(
                    |e| TargetError::io(format!("{what} the container's service"), e.into()),
                )
            }
            Some(Handle::Container(_)) => Err(TargetError::io(
                format!("{what} the container's service"),
                std::io::Error::other(
                    "its process is not visible to this host (no readable /proc entry)",
                ),
            )),
            Some(Handle::Url) | None => Err(not_booted(what)),
        }
    }

    /// The service's state: exited, stopped or running. A container's service that this host
    /// cannot see reads as running while the container runs.
    pub async fn state(&self) -> Result<InstanceState, TargetError> {
        match &self.handle {
            Some(Handle::Process(p)) => Ok(match p.try_exit()? {
                Some(_) => InstanceState::Exited,
                None => proc_state(p.pid).map_or(InstanceState::Exited, state_of_letter),
            }),
            Some(Handle::Container(c)) => Ok(match c.exited().await? {
                Some(_) => InstanceState::Exited,
                None if c.pid != 0 => {
                    proc_state(c.pid).map_or(InstanceState::Running, state_of_letter)
                }
                None => InstanceState::Running,
            }),
            Some(Handle::Url) | None => Err(not_booted("look at")),
        }
    }

    /// On the host's network, looks at how the ready service's listener is bound, records it, and
    /// warns when it is every interface.
    fn check_listener(&mut self, events: &dyn Fn(BootEvent)) {
        let Some(port) = self.info.port else { return };
        if self.info.kind == TargetKind::Process {
            // A process is on the host's network too: the same warning, from the same tables.
            let seen = NetworkInfo {
                path: NetworkPath::Host,
                asked: self
                    .info
                    .network
                    .as_ref()
                    .map_or_else(Default::default, |n| n.asked),
                fallback: None,
                binds_every_interface: network::binds_every_interface(port),
            };
            if let Some(message) = seen.warning(port) {
                events(BootEvent::Warning { message });
            }
            return;
        }
        let Some(network) = self.info.network.as_mut() else {
            return;
        };
        if network.path != NetworkPath::Host {
            return;
        }
        network.binds_every_interface = network::binds_every_interface(port);
        if let Some(message) = network.warning(port) {
            events(BootEvent::Warning { message });
        }
    }

    /// The base URL the load goes to, e.g. `http://127.0.0.1:41234` (no trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.info.base_url
    }

    /// What a run records about the target.
    pub fn info(&self) -> TargetInfo {
        self.info.clone()
    }

    /// Starts sampling CPU, RSS, threads and fds every `every` in a background task. A `url`
    /// target yields no samples.
    pub fn start_sampler(&self, every: Duration) -> ResourceSampler {
        ResourceSampler::start(self.probe.clone(), every)
    }

    /// The last `lines` lines of the target's stdout and stderr.
    pub fn log_tail(&self, lines: usize) -> Vec<String> {
        self.log.tail(lines)
    }

    /// `Ok` while the target runs; [`TargetError::Crashed`] (or [`TargetError::PortInUse`] when its
    /// output says so) with the tail of its output once it has exited.
    pub async fn check_alive(&self) -> Result<(), TargetError> {
        let status = match &self.handle {
            Some(Handle::Process(p)) => match p.try_exit()? {
                None => return Ok(()),
                Some(status) => {
                    p.drain_output(Duration::from_millis(500)).await;
                    describe_status(status)
                }
            },
            Some(Handle::Container(c)) => match c.exited().await? {
                None => return Ok(()),
                Some((code, oom)) => {
                    c.drain_output(Duration::from_secs(1)).await;
                    let mut s = format!("container {} exit status {code}", short(&c.id));
                    if oom {
                        s.push_str(", killed: out of memory");
                    }
                    s
                }
            },
            Some(Handle::Url) | None => return Ok(()),
        };
        let log_tail = self.log.tail(ERROR_LOG_LINES);
        if self.log.contains_ignore_case("address already in use")
            || self.log.contains_ignore_case("address in use")
        {
            let port = self.info.container_port.or(self.info.port).unwrap_or(0);
            return Err(TargetError::PortInUse { port, log_tail });
        }
        Err(TargetError::Crashed { status, log_tail })
    }

    /// Polls `GET <base_url><ready.path>` every `ready.interval` until it answers 2xx, checking
    /// between polls that the target still runs (a crash fails at once, not after the timeout).
    pub async fn wait_ready(&self, ready: &ReadyConfig) -> Result<Duration, TargetError> {
        let url = format!(
            "{}/{}",
            self.info.base_url,
            ready.path.trim_start_matches('/')
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| TargetError::io("build the readiness client", std::io::Error::other(e)))?;
        let started = Instant::now();
        let mut last = "no answer yet".to_owned();
        loop {
            self.check_alive().await?;
            let remaining = ready.timeout.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                return Err(TargetError::ReadinessTimeout {
                    url,
                    waited: ready.timeout,
                    last,
                    log_tail: self.log.tail(ERROR_LOG_LINES),
                });
            }
            let per_try = remaining.clamp(Duration::from_millis(50), Duration::from_secs(2));
            match client.get(&url).timeout(per_try).send().await {
                Ok(resp) if resp.status().is_success() => return Ok(started.elapsed()),
                Ok(resp) => last = format!("HTTP {}", resp.status()),
                Err(e) => last = innermost(&e),
            }
            let remaining = ready.timeout.saturating_sub(started.elapsed());
            tokio::time::sleep(ready.interval.min(remaining)).await;
        }
    }

    /// Stops the target (SIGTERM, then SIGKILL after a grace period), removes its container, and
    /// reports how it ended.
    pub async fn shutdown(mut self) -> Result<TargetExit, TargetError> {
        match self.handle.take() {
            Some(Handle::Process(p)) => p.shutdown(SHUTDOWN_GRACE).await,
            Some(Handle::Container(c)) => c.shutdown().await,
            Some(Handle::Url) | None => Ok(TargetExit {
                description: "not started by loadgate".into(),
                code: None,
                signal: None,
                killed: false,
            }),
        }
    }
}

impl Drop for RunningTarget {
    fn drop(&mut self) {
        match self.handle.take() {
            Some(Handle::Process(p)) => p.kill_now(),
            Some(Handle::Container(mut c)) => c.remove_blocking(),
            Some(Handle::Url) | None => {}
        }
    }
}

/// The error of a fault's action on a target loadgate did not boot.
fn not_booted(what: &str) -> TargetError {
    TargetError::io(
        format!("{what} the target"),
        std::io::Error::other("it was not started by loadgate"),
    )
}

/// The innermost cause of an error: "Connection refused (os error 111)" rather than
/// "error sending request".
pub fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn request(kind: TargetKind, source: TargetSource) -> BootRequest {
        BootRequest {
            prebuilt: None,
            kind,
            config: TargetConfig {
                source,
                port: 8080,
                ready: ReadyConfig {
                    path: "/health".into(),
                    timeout: Duration::from_millis(600),
                    interval: Duration::from_millis(50),
                },
                cpus: None,
                memory_bytes: None,
                env: BTreeMap::from([
                    ("RUST_LOG".into(), "warn".into()),
                    ("A".into(), "config".into()),
                ]),
                args: vec![],
                network: crate::config::NetworkChoice::Auto,
                replicas: 1,
            },
            package: None,
            extra_env: vec![("A".into(), "cli".into())],
            allow_remote: false,
            url: None,
            run_id: "test".into(),
            cpuset: None,
        }
    }

    #[test]
    fn env_order_port_then_config_then_cli() {
        let req = request(TargetKind::Process, TargetSource::Bin { name: "x".into() });
        assert_eq!(
            merged_env(&req, 4000, false),
            [
                ("PORT".into(), "4000".into()),
                ("RUST_LOG".into(), "warn".into()),
                ("A".into(), "cli".into())
            ]
        );
        // On the host's network the service is also told to bind loopback; the user's `HOST`
        // wins like every other key.
        assert_eq!(
            merged_env(&req, 4000, true)[..2],
            [
                ("PORT".into(), "4000".into()),
                ("HOST".into(), "127.0.0.1".into()),
            ]
        );
        let mut own_host = req.clone();
        own_host.extra_env.push(("HOST".into(), "::1".into()));
        let env = merged_env(&own_host, 4000, true);
        assert_eq!(
            env.iter().filter(|(k, _)| k == "HOST").collect::<Vec<_>>(),
            [&("HOST".to_owned(), "::1".to_owned())]
        );
        assert_eq!(port_override(&req), None);
        let mut req = req;
        req.extra_env.push(("PORT".into(), "4321".into()));
        assert_eq!(port_override(&req), Some(4321));
        assert!(merged_env(&req, 4321, true).contains(&("PORT".into(), "4321".into())));
    }

    #[tokio::test]
    async fn url_target_refuses_remote_and_needs_a_url() {
        let mut req = request(TargetKind::Url, TargetSource::Bin { name: "x".into() });
        let err = boot(req.clone(), &|_| {}).await.expect_err("no url");
        assert!(matches!(err, TargetError::MissingUrl));
        req.url = Some("http://10.0.0.1:8080".into());
        let err = boot(req, &|_| {}).await.expect_err("remote");
        assert!(matches!(err, TargetError::RemoteRefused { .. }));
    }

    #[tokio::test]
    async fn url_target_waits_for_readiness() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        // A server that answers 503 twice, then 200, for at most 10 connections.
        let server = tokio::spawn(async move {
            for i in 0..10 {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0u8; 1024];
                let _ = sock.read(&mut buf).await;
                let status = if i < 2 {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                let _ = sock
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .await;
            }
        });
        let mut req = request(
            TargetKind::Url,
            TargetSource::Url {
                url: format!("http://127.0.0.1:{port}/"),
            },
        );
        req.config.ready.timeout = Duration::from_secs(5);
        let seen = std::sync::Mutex::new(Vec::new());
        let target = boot(req, &|e| seen.lock().expect("lock").push(e))
            .await
            .expect("ready");
        assert_eq!(target.base_url(), format!("http://127.0.0.1:{port}"));
        assert!(matches!(
            seen.lock().expect("lock").as_slice(),
            [BootEvent::Ready { .. }]
        ));
        assert_eq!(target.info().samples, SampleSource::None);
        assert!(
            target
                .start_sampler(Duration::from_millis(10))
                .stop()
                .await
                .is_empty()
        );
        target
            .check_alive()
            .await
            .expect("url targets are always alive");
        assert_eq!(
            target.shutdown().await.expect("shutdown").description,
            "not started by loadgate"
        );
        server.abort();
    }

    #[tokio::test]
    async fn url_target_with_nothing_listening_times_out() {
        let port = free_loopback_port().expect("port");
        let req = request(
            TargetKind::Url,
            TargetSource::Url {
                url: format!("http://127.0.0.1:{port}"),
            },
        );
        let started = Instant::now();
        let err = boot(req, &|_| {}).await.expect_err("nothing listens");
        assert!(started.elapsed() < Duration::from_secs(3));
        let TargetError::ReadinessTimeout { url, last, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(url, &format!("http://127.0.0.1:{port}/health"));
        assert!(last.to_lowercase().contains("refused"), "{last}");
    }

    #[tokio::test]
    async fn process_kind_cannot_run_an_image() {
        let req = request(
            TargetKind::Process,
            TargetSource::Image {
                reference: "a:b".into(),
            },
        );
        let err = boot(req, &|_| {}).await.expect_err("unsupported");
        assert!(matches!(err, TargetError::Unsupported { .. }), "{err}");
        let req = request(TargetKind::Process, TargetSource::Bin { name: "x".into() });
        let err = boot(req, &|_| {}).await.expect_err("no package");
        assert!(matches!(err, TargetError::NoPackage { .. }), "{err}");
    }
}
