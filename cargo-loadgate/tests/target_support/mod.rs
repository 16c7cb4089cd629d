//! Shared helpers of the `target_*` integration tests: the demo service as a `PackageRef`, configs,
//! a Docker check that is loud when it skips (and fails under `CI`), and guards that remove what a
//! test made even when it fails.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these helpers"
)]

use cargo_loadgate::{
    config::{NetworkChoice, PackageRef, ReadyConfig, TargetConfig, TargetKind, TargetSource},
    targets::{BootEvent, BootRequest, ResourceSample, cleanup},
};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock, PoisonError},
    time::Duration,
};

/// Tests of one binary run one at a time: they build with cargo, count processes and containers.
/// (A tokio mutex: each test has its own runtime, and the guard is held across awaits; it is not
/// poisoned by a failing test.)
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Takes the serial lock in an async test.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.lock().await
}

/// Takes the serial lock in a sync test.
pub fn serial_blocking() -> tokio::sync::MutexGuard<'static, ()> {
    SERIAL.blocking_lock()
}

/// The workspace root (this crate's parent).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate has a parent")
        .to_owned()
}

/// The demo service, found through `cargo metadata` as the CLI finds packages.
pub fn demo_package() -> PackageRef {
    static PKG: OnceLock<PackageRef> = OnceLock::new();
    PKG.get_or_init(|| {
        let meta = cargo_metadata::MetadataCommand::new()
            .manifest_path(workspace_root().join("Cargo.toml"))
            .no_deps()
            .exec()
            .expect("cargo metadata");
        let pkg = meta
            .packages
            .iter()
            .find(|p| p.name.as_str() == "demo-service")
            .expect("demo-service in workspace");
        PackageRef {
            name: pkg.name.to_string(),
            manifest_path: pkg.manifest_path.clone().into(),
            workspace_root: meta.workspace_root.clone().into(),
            target_directory: meta.target_directory.clone().into(),
            bins: pkg
                .targets
                .iter()
                .filter(|t| t.is_bin())
                .map(|t| t.name.clone())
                .collect(),
        }
    })
    .clone()
}

/// A `[target]` for the demo service's binary.
pub fn demo_config(ready_path: &str, timeout: Duration) -> TargetConfig {
    TargetConfig {
        source: TargetSource::Bin {
            name: "demo-service".into(),
        },
        port: 8080,
        ready: ReadyConfig {
            path: ready_path.into(),
            timeout,
            interval: Duration::from_millis(50),
        },
        cpus: Some(1.0),
        memory_bytes: Some(512 * 1024 * 1024),
        env: BTreeMap::from([("RUST_LOG".into(), "warn".into())]),
        args: vec![],
        network: NetworkChoice::Auto,
        replicas: 1,
    }
}

/// A unique run id for one test.
pub fn run_id(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("test-{test}-{}-{nanos}", std::process::id())
}

/// A boot request for the demo service.
pub fn demo_request(
    kind: TargetKind,
    run_id: &str,
    config: TargetConfig,
    env: &[(&str, &str)],
) -> BootRequest {
    BootRequest {
        kind,
        config,
        package: Some(demo_package()),
        extra_env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        allow_remote: false,
        url: None,
        run_id: run_id.to_owned(),
        cpuset: None,
        prebuilt: None,
    }
}

/// Collects boot events, and when the target was started (builds can wait minutes for cargo's lock,
/// so time limits are measured from the start).
#[derive(Default)]
pub struct Events(
    pub Mutex<Vec<BootEvent>>,
    pub Mutex<Option<std::time::Instant>>,
);

impl Events {
    /// The callback to hand to `boot`.
    pub fn push(&self, e: BootEvent) {
        if matches!(e, BootEvent::Starting { .. }) {
            *self.1.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(std::time::Instant::now());
        }
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(e);
    }

    /// Time since the target was started.
    pub fn since_start(&self) -> Duration {
        self.1
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .expect("the target was started")
            .elapsed()
    }

    /// Every event except cargo's output lines.
    pub fn steps(&self) -> Vec<BootEvent> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|e| !matches!(e, BootEvent::BuildOutput { .. }))
            .cloned()
            .collect()
    }
}

/// Whether the Docker engine answers. When it does not, says so LOUDLY on stderr and returns
/// false, except under `CI`, where container tests are required and this panics.
pub async fn docker_available(test: &str) -> bool {
    match cargo_loadgate::targets::detect_docker(Duration::from_secs(5)).await {
        Ok(_) => true,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(
                !ci,
                "CI is set and the Docker engine does not answer, so {test} cannot run: {e}"
            );
            eprintln!(
                "\n##########\n########## SKIPPED {test}: NO DOCKER ENGINE ({e})\n##########\n"
            );
            false
        }
    }
}

/// Removes every container of a run when dropped (also when the test panics).
pub struct RunGuard(pub String);

impl Drop for RunGuard {
    fn drop(&mut self) {
        cleanup::remove_containers_blocking(
            &[],
            std::slice::from_ref(&self.0),
            true,
            Duration::from_secs(20),
        );
    }
}

/// Kills a process group when dropped.
pub struct PidGuard(pub u32);

impl Drop for PidGuard {
    fn drop(&mut self) {
        if pid_alive(self.0) {
            cleanup::kill_group_blocking(self.0 as i32, Duration::from_millis(500));
        }
    }
}

/// Whether a process exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_err() {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| cleanup::parse_state_and_pgrp(&s))
        .is_some_and(|(state, _)| state != 'Z')
}

/// Children of this test process whose executable is `binary` and that are still running.
pub fn live_children_running(binary: &Path) -> Vec<u32> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == binary)
        })
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s[s.rfind(')')? + 1..]
                        .split_whitespace()
                        .nth(1)
                        .map(|p| p == me)
                })
                .unwrap_or(false)
        })
        .filter(|&pid| pid_alive(pid))
        .collect()
}

/// Sends `n` GETs to `url`, one after another (bounded: each with a 5 s timeout).
pub async fn burst(url: &str, n: usize) -> usize {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let mut ok = 0;
    for _ in 0..n {
        if client
            .get(url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            ok += 1;
        }
    }
    ok
}

/// GET status of a URL.
pub async fn status_of(url: &str) -> Option<u16> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    client
        .get(url)
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

/// The RSS growth between the first and the last sample.
pub fn rss_growth(samples: &[ResourceSample]) -> i64 {
    match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => b.rss_bytes as i64 - a.rss_bytes as i64,
        _ => 0,
    }
}
