//! The `container` target: created with bollard directly (see below), on the host's network or
//! published on 127.0.0.1 only (`super::network` decides which), limited in CPU and memory,
//! labelled for sweeping, its output followed into a ring buffer.
//!
//! Why bollard and not testcontainers' `GenericImage` runner: the runner pulls the image when
//! create answers 404 (loadgate must never pull), it talks API 1.53 without negotiating, and its
//! `ContainerAsync` removes itself on drop through `Handle::current()`, which panics outside a
//! runtime — and removal must work from a panic hook and from signal handlers. Creating the
//! container ourselves keeps every one of those paths under our control; the result is the same
//! container testcontainers would make (labels, host config, published port).

use super::{
    LogRing, OutputStream, TargetError, TargetExit,
    cleanup::{
        LABEL_DEPENDENCY, LABEL_RUN, register_container, register_dependency_container,
        register_run_id, unregister_container,
    },
    docker::is_not_found,
};
use crate::image::LABEL;
use bollard::{
    Docker,
    models::{ContainerCreateBody, HostConfig, PortBinding},
    query_parameters::{
        LogsOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
    },
};
use futures::StreamExt as _;
use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};
use tokio::task::JoinHandle;

/// How long `docker stop` waits between SIGTERM and SIGKILL.
const STOP_GRACE_SECS: i32 = 5;

/// What to create.
pub(crate) struct ContainerSpec<'a> {
    pub(crate) image_id: &'a str,
    /// The port the service listens on: inside the container when it is published, on the host's
    /// loopback with host networking.
    pub(crate) port: u16,
    /// Host networking (no port published, no proxy) instead of a port published on 127.0.0.1.
    pub(crate) host_network: bool,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) args: &'a [String],
    pub(crate) run_id: &'a str,
    pub(crate) cpus: Option<f64>,
    pub(crate) memory_bytes: Option<u64>,
    pub(crate) cpuset: Option<&'a str>,
    /// The `[[dependency]]` it runs, if it is one (labelled, and removed after the teardown).
    pub(crate) dependency: Option<&'a str>,
}

/// The create body for a spec (pure, so it can be tested without an engine).
pub(crate) fn create_body(spec: &ContainerSpec<'_>) -> ContainerCreateBody {
    let port_key = format!("{}/tcp", spec.port);
    let bindings = (!spec.host_network).then(|| {
        HashMap::from([(
            port_key.clone(),
            Some(vec![PortBinding {
                host_ip: Some("127.0.0.1".into()),
                host_port: Some(String::new()),
            }]),
        )])
    });
    let memory = spec.memory_bytes.and_then(|m| i64::try_from(m).ok());
    ContainerCreateBody {
        image: Some(spec.image_id.to_owned()),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        cmd: (!spec.args.is_empty()).then(|| spec.args.to_vec()),
        labels: Some(
            [
                (LABEL.to_owned(), "1".to_owned()),
                (LABEL_RUN.to_owned(), spec.run_id.to_owned()),
            ]
            .into_iter()
            .chain(
                spec.dependency
                    .map(|name| (LABEL_DEPENDENCY.to_owned(), name.to_owned())),
            )
            .collect(),
        ),
        exposed_ports: (!spec.host_network).then(|| vec![port_key]),
        host_config: Some(HostConfig {
            network_mode: spec.host_network.then(|| "host".to_owned()),
            port_bindings: bindings,
            nano_cpus: spec.cpus.map(|c| (c * 1e9).round() as i64),
            memory,
            // No swap beyond the limit: a container that swaps is not comparable run to run.
            memory_swap: memory,
            cpuset_cpus: spec.cpuset.map(str::to_owned),
            // docker-init as PID 1 forwards SIGTERM; a service running as PID 1 without a handler
            // would ignore it and every stop would wait out the grace period.
            init: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A created and started container.
#[derive(Debug)]
pub(crate) struct ContainerHandle {
    pub(crate) docker: Docker,
    pub(crate) id: String,
    pub(crate) host_port: u16,
    /// The host pid of the service (the child of docker-init), 0 when unknown.
    pub(crate) pid: u32,
    follower: Option<JoinHandle<()>>,
    output_ended: Arc<AtomicBool>,
}

impl ContainerHandle {
    /// Creates, registers and starts the container, and starts following its output.
    pub(crate) async fn start(
        docker: &Docker,
        spec: &ContainerSpec<'_>,
        log: LogRing,
    ) -> Result<Self, TargetError> {
        // Before the engine is asked: a signal during the call finds the container by its label.
        register_run_id(spec.run_id);
        let created = docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                create_body(spec),
            )
            .await
            .map_err(|e| {
                if is_not_found(&e) {
                    TargetError::ImageMissing {
                        reference: spec.image_id.to_owned(),
                    }
                } else {
                    TargetError::engine(format!("create a container from {}", spec.image_id), e)
                }
            })?;
        let id = created.id;
        if spec.dependency.is_some() {
            register_dependency_container(&id, spec.run_id);
        } else {
            register_container(&id, spec.run_id);
        }
        let output_ended = Arc::new(AtomicBool::new(false));
        let mut handle = Self {
            docker: docker.clone(),
            id: id.clone(),
            host_port: 0,
            pid: 0,
            follower: None,
            output_ended: output_ended.clone(),
        };
        if let Err(e) = docker
            .start_container(
                &id,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
        {
            let _ = handle.remove_now().await;
            return Err(TargetError::engine(
                format!("start container {}", short(&id)),
                e,
            ));
        }
        handle.follower = Some(follow_logs(docker.clone(), id.clone(), log, output_ended));
        let inspect = match docker.inspect_container(&id, None).await {
            Ok(i) => i,
            Err(e) => {
                let _ = handle.remove_now().await;
                return Err(TargetError::engine(
                    format!("inspect container {}", short(&id)),
                    e,
                ));
            }
        };
        handle.host_port = if spec.host_network {
            spec.port
        } else {
            inspect
                .network_settings
                .and_then(|n| n.ports)
                .and_then(|p| p.get(&format!("{}/tcp", spec.port)).cloned().flatten())
                .and_then(|b| b.into_iter().find_map(|b| b.host_port?.parse().ok()))
                .unwrap_or(0)
        };
        let init_pid = inspect
            .state
            .and_then(|s| s.pid)
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0);
        handle.pid = service_pid(init_pid).await;
        Ok(handle)
    }

    /// The exit status if the container is no longer running.
    pub(crate) async fn exited(&self) -> Result<Option<(i64, bool)>, TargetError> {
        let inspect = self
            .docker
            .inspect_container(&self.id, None)
            .await
            .map_err(|e| {
                TargetError::engine(format!("inspect container {}", short(&self.id)), e)
            })?;
        let state = inspect.state.unwrap_or_default();
        if state.running.unwrap_or(false) {
            return Ok(None);
        }
        Ok(Some((
            state.exit_code.unwrap_or(-1),
            state.oom_killed.unwrap_or(false),
        )))
    }

    /// Waits (briefly) for the log follower to see the end of the output.
    pub(crate) async fn drain_output(&self, max: Duration) {
        let deadline = Instant::now() + max;
        while !self.output_ended.load(Ordering::SeqCst) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops (SIGTERM, then SIGKILL after the grace period), reads the exit code, removes.
    pub(crate) async fn shutdown(mut self) -> Result<TargetExit, TargetError> {
        let started = Instant::now();
        let stop = StopContainerOptionsBuilder::new()
            .t(STOP_GRACE_SECS)
            .build();
        let stopped = self.docker.stop_container(&self.id, Some(stop)).await;
        let exit = match self.docker.inspect_container(&self.id, None).await {
            Ok(i) => i.state.unwrap_or_default(),
            Err(e) => {
                let _ = self.remove_now().await;
                return Err(TargetError::engine(
                    format!("inspect container {}", short(&self.id)),
                    e,
                ));
            }
        };
        self.drain_output(Duration::from_millis(500)).await;
        let removed = self.remove_now().await;
        if let Err(e) = stopped {
            // 304: already stopped.
            if !matches!(
                e,
                bollard::errors::Error::DockerResponseServerError {
                    status_code: 304,
                    ..
                }
            ) {
                return Err(TargetError::engine(
                    format!("stop container {}", short(&self.id)),
                    e,
                ));
            }
        }
        removed?;
        let code = exit.exit_code.unwrap_or(-1);
        let killed =
            started.elapsed() >= Duration::from_secs(STOP_GRACE_SECS as u64) || code == 137;
        let description = if exit.oom_killed.unwrap_or(false) {
            format!("exit status {code} (killed: out of memory)")
        } else {
            format!("exit status {code}")
        };
        Ok(TargetExit {
            description,
            code: Some(code),
            signal: None,
            killed,
        })
    }

    /// Force-removes the container (and stops following it).
    async fn remove_now(&mut self) -> Result<(), TargetError> {
        if let Some(task) = self.follower.take() {
            task.abort();
        }
        let opts = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        let res = match self.docker.remove_container(&self.id, Some(opts)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(TargetError::engine(
                format!("remove container {}", short(&self.id)),
                e,
            )),
        };
        if res.is_ok() {
            unregister_container(&self.id);
        }
        res
    }

    /// Best effort for `Drop`: remove the container now, from a fresh thread.
    pub(crate) fn remove_blocking(&mut self) {
        if let Some(task) = self.follower.take() {
            task.abort();
        }
        super::cleanup::remove_containers_blocking(
            std::slice::from_ref(&self.id),
            &[],
            true,
            Duration::from_secs(15),
        );
        unregister_container(&self.id);
    }
}

/// The host pid of the service: the first child of docker-init (retried briefly, since init forks
/// right after start), or the init pid itself when `/proc` shows no child.
async fn service_pid(init_pid: u32) -> u32 {
    if init_pid == 0 {
        return 0;
    }
    for _ in 0..50 {
        let path = format!("/proc/{init_pid}/task/{init_pid}/children");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                if let Some(child) = text.split_whitespace().next().and_then(|c| c.parse().ok()) {
                    return child;
                }
            }
            Err(_) => return init_pid,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    init_pid
}

fn follow_logs(docker: Docker, id: String, log: LogRing, ended: Arc<AtomicBool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let opts = LogsOptionsBuilder::new()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .build();
        let mut stream = docker.logs(&id, Some(opts));
        while let Some(Ok(item)) = stream.next().await {
            match item {
                bollard::container::LogOutput::StdErr { message } => {
                    log.push_chunk(OutputStream::Stderr, &message)
                }
                bollard::container::LogOutput::StdOut { message }
                | bollard::container::LogOutput::Console { message } => {
                    log.push_chunk(OutputStream::Stdout, &message)
                }
                bollard::container::LogOutput::StdIn { .. } => {}
            }
        }
        ended.store(true, Ordering::SeqCst);
    })
}

/// The first 12 characters of a container id, as `docker ps` shows them.
pub(crate) fn short(id: &str) -> &str {
    &id[..12.min(id.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_body_publishes_on_loopback_with_limits_and_labels() {
        let args = vec!["--flag".to_owned()];
        let spec = ContainerSpec {
            image_id: "sha256:abc",
            port: 8080,
            env: vec![
                ("PORT".into(), "8080".into()),
                ("RUST_LOG".into(), "warn".into()),
            ],
            args: &args,
            run_id: "run-1",
            cpus: Some(1.5),
            memory_bytes: Some(512 * 1024 * 1024),
            cpuset: Some("1"),
            host_network: false,
            dependency: None,
        };
        let body = create_body(&spec);
        let json = serde_json::to_value(&body).expect("serializes");
        insta::assert_json_snapshot!(json);
    }

    #[test]
    fn create_body_on_the_host_network_publishes_and_exposes_nothing() {
        let spec = ContainerSpec {
            image_id: "img",
            port: 41234,
            env: vec![
                ("PORT".into(), "41234".into()),
                ("HOST".into(), "127.0.0.1".into()),
            ],
            args: &[],
            run_id: "r",
            cpus: Some(1.0),
            memory_bytes: None,
            cpuset: Some("1"),
            host_network: true,
            dependency: Some("db"),
        };
        let body = create_body(&spec);
        assert_eq!(body.exposed_ports, None);
        let host = body.host_config.expect("host config");
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        assert_eq!(host.port_bindings, None);
        // The limits are the same on either path.
        assert_eq!(host.nano_cpus, Some(1_000_000_000));
        assert_eq!(host.cpuset_cpus.as_deref(), Some("1"));
        assert_eq!(host.init, Some(true));
        // A dependency's container says so: a signal removes it after the teardown.
        let labels = body.labels.expect("labels");
        assert_eq!(labels.get(LABEL_DEPENDENCY).map(String::as_str), Some("db"));
        assert_eq!(labels.get(LABEL_RUN).map(String::as_str), Some("r"));
    }

    #[test]
    fn create_body_without_limits() {
        let spec = ContainerSpec {
            image_id: "img",
            port: 80,
            env: vec![],
            args: &[],
            run_id: "r",
            cpus: None,
            memory_bytes: None,
            cpuset: None,
            host_network: false,
            dependency: None,
        };
        let host = create_body(&spec).host_config.expect("host config");
        assert_eq!(
            (host.nano_cpus, host.memory, host.cpuset_cpus),
            (None, None, None)
        );
        assert_eq!(create_body(&spec).cmd, None);
    }
}
