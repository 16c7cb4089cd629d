//! Resource sampling of the target: CPU seconds, RSS, threads and open file descriptors, read from
//! `/proc/<pid>` (process targets and containers on a local engine) or, when `/proc` cannot see the
//! container's process (a remote engine), from the engine's stats API.

use bollard::{Docker, query_parameters::StatsOptionsBuilder};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use std::{
    path::Path,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};
use tokio::{sync::oneshot, task::JoinHandle};

/// One sample of the target's resources.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ResourceSample {
    /// Seconds since the sampler started.
    pub elapsed_s: f64,
    /// CPU time used by the target so far (user + system), cumulative.
    pub cpu_seconds: f64,
    /// Resident set size (with the engine's stats: the container's memory usage).
    pub rss_bytes: u64,
    /// Threads of the target process (with the engine's stats: processes and threads of the container).
    pub threads: u64,
    /// Open file descriptors (0 with the engine's stats, which do not report them).
    pub fds: u64,
}

/// Where resource samples come from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case", tag = "source")]
pub enum SampleSource {
    /// `/proc/<pid>` of the target's main process.
    Procfs {
        /// The process id as the host sees it.
        pid: u32,
    },
    /// The Docker engine's stats API (no fd count).
    EngineStats {
        /// The container.
        container_id: String,
    },
    /// No samples (a URL target).
    None,
}

/// The figures read from `/proc/<pid>/stat` and `/proc/<pid>/status`, before the clock tick is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// User plus system time, in clock ticks.
    pub cpu_ticks: u64,
}

/// Parses `/proc/<pid>/stat`: utime and stime (fields 14 and 15). The command name (field 2) may
/// contain spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field N is at index N - 3.
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(ProcStat {
        cpu_ticks: utime + stime,
    })
}

/// Parses `VmRSS` (in bytes) and `Threads` from `/proc/<pid>/status`. A zombie has no `VmRSS`; it
/// reads as 0.
pub fn parse_proc_status(text: &str) -> Option<(u64, u64)> {
    let mut rss = 0;
    let mut threads = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            let mut parts = v.split_whitespace();
            let n: u64 = parts.next()?.parse().ok()?;
            let unit = match parts.next() {
                Some("kB") | None => 1024,
                Some("mB") => 1024 * 1024,
                Some(_) => return None,
            };
            rss = n * unit;
        } else if let Some(v) = line.strip_prefix("Threads:") {
            threads = Some(v.trim().parse().ok()?);
        }
    }
    Some((rss, threads?))
}

/// The kernel's clock ticks per second (`sysconf(_SC_CLK_TCK)`), 100 when it cannot be read.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf only reads a configuration value; it has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

/// Reads one sample of a process from `proc_root` (normally `/proc`), or `None` when it is gone or
/// unreadable.
pub fn read_proc_sample(proc_root: &Path, pid: u32, elapsed_s: f64) -> Option<ResourceSample> {
    let dir = proc_root.join(pid.to_string());
    let stat = parse_proc_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)?;
    let (rss_bytes, threads) =
        parse_proc_status(&std::fs::read_to_string(dir.join("status")).ok()?)?;
    let fds = std::fs::read_dir(dir.join("fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    Some(ResourceSample {
        elapsed_s,
        cpu_seconds: stat.cpu_ticks as f64 / clock_ticks_per_sec() as f64,
        rss_bytes,
        threads,
        fds,
    })
}

/// Whether `/proc/<pid>` of this host is readable (false for a container on a remote engine, whose
/// pid means nothing here).
pub fn procfs_readable(pid: u32) -> bool {
    pid != 0 && read_proc_sample(Path::new("/proc"), pid, 0.0).is_some()
}

/// What a sampler reads from.
#[derive(Clone, Debug)]
pub(crate) enum Probe {
    Procfs(u32),
    EngineStats(Docker, String),
    Nothing,
}

impl Probe {
    async fn sample(&self, elapsed_s: f64) -> Option<ResourceSample> {
        match self {
            Probe::Procfs(pid) => {
                let pid = *pid;
                tokio::task::spawn_blocking(move || {
                    read_proc_sample(Path::new("/proc"), pid, elapsed_s)
                })
                .await
                .ok()
                .flatten()
            }
            Probe::EngineStats(docker, id) => {
                let opts = StatsOptionsBuilder::new()
                    .stream(false)
                    .one_shot(true)
                    .build();
                let stats = docker.stats(id, Some(opts)).next().await?.ok()?;
                let cpu_ns = stats.cpu_stats.as_ref()?.cpu_usage.as_ref()?.total_usage?;
                Some(ResourceSample {
                    elapsed_s,
                    cpu_seconds: cpu_ns as f64 / 1e9,
                    rss_bytes: stats
                        .memory_stats
                        .as_ref()
                        .and_then(|m| m.usage)
                        .unwrap_or(0),
                    threads: stats
                        .pids_stats
                        .as_ref()
                        .and_then(|p| p.current)
                        .unwrap_or(0),
                    fds: 0,
                })
            }
            Probe::Nothing => None,
        }
    }
}

/// Samples the target's resources in a background task until stopped.
#[derive(Debug)]
pub struct ResourceSampler {
    samples: Arc<Mutex<Vec<ResourceSample>>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ResourceSampler {
    /// Starts sampling `probe` every `every` (the first sample is taken at once).
    pub(crate) fn start(probe: Probe, every: Duration) -> Self {
        let samples: Arc<Mutex<Vec<ResourceSample>>> = Arc::default();
        if matches!(probe, Probe::Nothing) {
            return Self {
                samples,
                stop: None,
                task: None,
            };
        }
        let (stop_tx, mut stop_rx) = oneshot::channel();
        let store = samples.clone();
        let every = every.max(Duration::from_millis(10));
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = &mut stop_rx => break,
                    _ = tick.tick() => {}
                }
                let sample = tokio::select! {
                    _ = &mut stop_rx => break,
                    s = probe.sample(started.elapsed().as_secs_f64()) => s,
                };
                if let Some(sample) = sample {
                    store
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(sample);
                }
            }
        });
        Self {
            samples,
            stop: Some(stop_tx),
            task: Some(task),
        }
    }

    /// Every sample taken so far, oldest first; sampling goes on.
    pub fn snapshot(&self) -> Vec<ResourceSample> {
        self.samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The most recent sample, if any was taken yet.
    pub fn latest(&self) -> Option<ResourceSample> {
        self.samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
    }

    /// Stops sampling and returns every sample taken, oldest first.
    pub async fn stop(mut self) -> Vec<ResourceSample> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for ResourceSampler {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indoc::indoc;
    use test_case::test_case;

    const STAT: &str = "4242 (my (odd) svc) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 12345 \
                        123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_counts_fields_after_the_last_paren() {
        assert_eq!(parse_proc_stat(STAT), Some(ProcStat { cpu_ticks: 325 }));
    }

    #[test_case("" ; "empty")]
    #[test_case("4242 (svc) S 1 2" ; "truncated")]
    #[test_case("4242 (svc) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 75" ; "not a number")]
    fn stat_rejects_garbage(text: &str) {
        assert_eq!(parse_proc_stat(text), None);
    }

    #[test]
    fn status_reads_rss_and_threads() {
        let text = indoc! {"
            Name:\tdemo-service
            State:\tS (sleeping)
            VmPeak:\t  20000 kB
            VmRSS:\t    5120 kB
            RssAnon:\t    1000 kB
            Threads:\t3
        "};
        assert_eq!(parse_proc_status(text), Some((5120 * 1024, 3)));
    }

    #[test]
    fn zombie_status_has_no_rss() {
        assert_eq!(
            parse_proc_status("Name:\tx\nState:\tZ (zombie)\nThreads:\t1\n"),
            Some((0, 1))
        );
    }

    #[test]
    fn status_without_threads_is_rejected() {
        assert_eq!(parse_proc_status("VmRSS:\t1 kB\n"), None);
    }

    #[test]
    fn reads_a_fake_proc_tree() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("77");
        std::fs::create_dir_all(dir.join("fd")).expect("mkdir");
        std::fs::write(dir.join("stat"), STAT).expect("write");
        std::fs::write(dir.join("status"), "VmRSS:\t100 kB\nThreads:\t4\n").expect("write");
        for fd in ["0", "1", "2"] {
            std::fs::write(dir.join("fd").join(fd), "").expect("write");
        }
        let s = read_proc_sample(root.path(), 77, 1.5).expect("sample");
        let ticks = clock_ticks_per_sec() as f64;
        assert_eq!(
            s,
            ResourceSample {
                elapsed_s: 1.5,
                cpu_seconds: 325.0 / ticks,
                rss_bytes: 102_400,
                threads: 4,
                fds: 3
            }
        );
        assert_eq!(read_proc_sample(root.path(), 78, 0.0), None);
    }

    #[test]
    fn reads_this_process() {
        let s = read_proc_sample(Path::new("/proc"), std::process::id(), 0.0).expect("own /proc");
        assert!(s.rss_bytes > 0 && s.threads >= 1 && s.fds >= 3, "{s:?}");
        assert!(procfs_readable(std::process::id()));
        assert!(!procfs_readable(0));
    }

    #[tokio::test]
    async fn sampler_collects_and_stops() {
        let sampler =
            ResourceSampler::start(Probe::Procfs(std::process::id()), Duration::from_millis(20));
        tokio::time::sleep(Duration::from_millis(110)).await;
        assert!(sampler.latest().is_some());
        let samples = sampler.stop().await;
        assert!(samples.len() >= 3, "{samples:?}");
        assert!(
            samples
                .windows(2)
                .all(|w| w[0].elapsed_s < w[1].elapsed_s && w[0].cpu_seconds <= w[1].cpu_seconds)
        );
    }

    #[tokio::test]
    async fn nothing_probe_samples_nothing() {
        let sampler = ResourceSampler::start(Probe::Nothing, Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(sampler.latest(), None);
        assert!(sampler.stop().await.is_empty());
    }
}
