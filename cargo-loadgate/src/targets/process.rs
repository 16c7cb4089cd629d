//! The `process` target: the cargo-built binary as a child process in its own process group, on a
//! free loopback port, its output kept in a ring buffer, the whole group killed at the end.

use super::{
    LogRing, OutputStream, TargetError, TargetExit,
    cleanup::{group_has_live_members, register_process_group, unregister_process_group},
};
use nix::{
    sched::CpuSet,
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use std::{
    os::unix::process::ExitStatusExt as _,
    path::Path,
    process::{ExitStatus, Stdio},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};
use tokio::{io::AsyncReadExt as _, process::Child};

/// How long [`ProcessHandle::shutdown`] waits, after the SIGKILL of the members its leader left,
/// for the last of them to be gone.
const MEMBERS_GONE_WITHIN: Duration = Duration::from_secs(5);

/// How long a process target gets between SIGTERM and SIGKILL.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A free TCP port on 127.0.0.1: bound, read, released. Another process could take it before the
/// target binds it; the target then fails with [`TargetError::PortInUse`].
pub fn free_loopback_port() -> Result<u16, TargetError> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| TargetError::io("bind 127.0.0.1:0", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| TargetError::io("read the address of 127.0.0.1:0", e))?
        .port();
    Ok(port)
}

/// Parses a cpuset list like `1`, `0-3` or `0,2-3` into core numbers.
pub fn parse_cpuset(list: &str) -> Option<Vec<usize>> {
    let mut cores = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b >= CpuSet::count() {
                    return None;
                }
                cores.extend(a..=b);
            }
            None => {
                let c: usize = part.parse().ok()?;
                if c >= CpuSet::count() {
                    return None;
                }
                cores.push(c);
            }
        }
    }
    (!cores.is_empty()).then_some(cores)
}

/// A running child process.
#[derive(Debug)]
pub(crate) struct ProcessHandle {
    pub(crate) pid: u32,
    child: Mutex<Child>,
    exited: Mutex<Option<ExitStatus>>,
    open_streams: Arc<AtomicUsize>,
    stop: Option<Signal>,
}

/// What to spawn.
pub(crate) struct Spawn<'a> {
    pub(crate) binary: &'a Path,
    pub(crate) args: &'a [String],
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cpuset: Option<&'a str>,
    pub(crate) log: LogRing,
    /// Run as this user and group (uid, gid) instead of loadgate's own (a database that refuses
    /// to run as root).
    pub(crate) user: Option<(u32, u32)>,
    /// The signal that stops it, sent to the group's leader alone; SIGTERM to the whole group
    /// when `None`.
    pub(crate) stop: Option<Signal>,
}

impl ProcessHandle {
    /// Spawns the process in its own process group and registers the group for cleanup.
    pub(crate) fn spawn(spec: Spawn<'_>) -> Result<Self, TargetError> {
        let mut cmd = tokio::process::Command::new(spec.binary);
        cmd.args(spec.args)
            .envs(spec.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        if let Some((uid, gid)) = spec.user {
            // std drops the supplementary groups too when root changes its uid.
            cmd.uid(uid).gid(gid);
        }
        if let Some(list) = spec.cpuset {
            let cores = parse_cpuset(list).ok_or_else(|| TargetError::Unsupported {
                kind: "process".into(),
                source_desc: format!(
                    "cpuset `{list}` (expected core numbers like `1` or `0-2` on this machine)"
                ),
            })?;
            let mut set = CpuSet::new();
            for c in cores {
                set.set(c)
                    .map_err(|e| TargetError::io(format!("pin to core {c}"), e.into()))?;
            }
            // SAFETY: the closure runs in the forked child before exec; it only makes the
            // sched_setaffinity system call, which is async-signal-safe, and allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    nix::sched::sched_setaffinity(Pid::from_raw(0), &set)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| TargetError::io(format!("start {}", spec.binary.display()), e))?;
        let pid = child.id().ok_or_else(|| {
            TargetError::io(
                "read the pid of the target",
                std::io::Error::other("exited at once"),
            )
        })?;
        register_process_group(pid as i32);
        if let Some(signal) = spec.stop {
            super::cleanup::register_leader_signal(pid as i32, signal);
        }
        let open_streams = Arc::new(AtomicUsize::new(2));
        let out = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
        let err = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
        for (stream, which) in [(out, OutputStream::Stdout), (err, OutputStream::Stderr)] {
            let log = spec.log.clone();
            let open = open_streams.clone();
            tokio::spawn(async move {
                if let Some(mut stream) = stream {
                    let mut buf = vec![0u8; 8192];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        log.push_chunk(which, &buf[..n]);
                    }
                }
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
        Ok(Self {
            pid,
            child: Mutex::new(child),
            exited: Mutex::new(None),
            open_streams,
            stop: spec.stop,
        })
    }

    /// The exit status if the process has exited (reaping it).
    pub(crate) fn try_exit(&self) -> Result<Option<ExitStatus>, TargetError> {
        let mut exited = self.exited.lock().unwrap_or_else(PoisonError::into_inner);
        if exited.is_none() {
            let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
            *exited = child
                .try_wait()
                .map_err(|e| TargetError::io("check on the target process", e))?;
        }
        Ok(*exited)
    }

    /// Waits (briefly) until the output pipes are drained, so a crash report has the last words.
    pub(crate) async fn drain_output(&self, max: Duration) {
        let deadline = Instant::now() + max;
        while self.open_streams.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGTERM to the group (or the stop signal to the leader), up to `grace` for the process to
    /// exit, then SIGKILL; reaps it and kills any member of the group that is left.
    pub(crate) async fn shutdown(self, grace: Duration) -> Result<TargetExit, TargetError> {
        let pgid = self.pid as i32;
        let pg = Pid::from_raw(pgid);
        let mut child = self
            .child
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let already = self
            .exited
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut killed = false;
        let status = match already {
            Some(status) => status,
            None => {
                let _ = match self.stop {
                    Some(signal) => nix::sys::signal::kill(pg, signal),
                    None => killpg(pg, Signal::SIGTERM),
                };
                // A group a fault paused (SIGSTOP) handles the signal once continued.
                let _ = killpg(pg, Signal::SIGCONT);
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(status) => {
                        status.map_err(|e| TargetError::io("wait for the target process", e))?
                    }
                    Err(_) => {
                        killed = true;
                        let _ = killpg(pg, Signal::SIGKILL);
                        child
                            .wait()
                            .await
                            .map_err(|e| TargetError::io("wait for the killed target process", e))?
                    }
                }
            }
        };
        // Members the leader left (its children, in its group) are killed, and shutdown returns
        // once none is running, within a bound: nothing the target started outlives it. Under load
        // a member can take a while to be scheduled and die, even of SIGKILL.
        if group_has_live_members(pgid) {
            let _ = killpg(pg, Signal::SIGKILL);
            let until = tokio::time::Instant::now() + MEMBERS_GONE_WITHIN;
            while group_has_live_members(pgid) && tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        unregister_process_group(pgid);
        Ok(exit_of(status, killed))
    }

    /// Best effort for `Drop`: kill the group now, without waiting on the runtime.
    pub(crate) fn kill_now(&self) {
        super::cleanup::kill_group_blocking(self.pid as i32, Duration::from_millis(500));
        if let Ok(mut child) = self.child.lock() {
            let _ = child.start_kill();
            let _ = child.try_wait();
        }
        unregister_process_group(self.pid as i32);
    }
}

/// Describes an exit status the way a person reads it.
pub(crate) fn exit_of(status: ExitStatus, killed: bool) -> TargetExit {
    TargetExit {
        description: describe_status(status),
        code: status.code().map(i64::from),
        signal: status.signal(),
        killed,
    }
}

/// `exit status 1`, `signal 9 (SIGKILL)`.
pub(crate) fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("signal {sig} ({})", s.as_str()),
            Err(_) => format!("signal {sig}"),
        },
        (None, None) => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test]
    fn free_port_is_bindable() {
        let port = free_loopback_port().expect("free port");
        assert!(port > 0);
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("port is free");
        drop(listener);
    }

    #[test_case("1", Some(vec![1]))]
    #[test_case("0-1", Some(vec![0, 1]))]
    #[test_case("0, 1", Some(vec![0, 1]))]
    #[test_case("2-1", None)]
    #[test_case("", None)]
    #[test_case("x", None)]
    #[test_case("100000", None)]
    fn cpusets(list: &str, cores: Option<Vec<usize>>) {
        assert_eq!(parse_cpuset(list), cores);
    }

    #[test]
    fn statuses_read_well() {
        assert_eq!(
            describe_status(ExitStatus::from_raw(1 << 8)),
            "exit status 1"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(9)),
            "signal 9 (SIGKILL)"
        );
    }

    #[tokio::test]
    async fn spawns_captures_and_shuts_down_the_group() {
        let log = LogRing::new(100);
        let handle = ProcessHandle::spawn(Spawn {
            binary: Path::new("/bin/sh"),
            args: &[
                "-c".into(),
                "echo started; echo oops >&2; sleep 30 & wait".into(),
            ],
            env: vec![],
            cpuset: Some("0"),
            log: log.clone(),
            user: None,
            stop: None,
        })
        .expect("spawn");
        let pid = handle.pid;
        // Wait for both lines to be captured (the readers are threads; on a loaded machine they
        // can take a while to be scheduled), up to a bound.
        let captured = |tail: &[String]| {
            tail.contains(&"started".to_owned()) && tail.contains(&"oops".to_owned())
        };
        for _ in 0..100 {
            if captured(&log.tail(10)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(handle.try_exit().expect("alive"), None);
        let affinity = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        assert!(
            affinity
                .lines()
                .any(|l| l.starts_with("Cpus_allowed_list:") && l.trim_end().ends_with("\t0")),
            "{affinity}"
        );
        // The grace period is long so that a loaded machine cannot turn SIGTERM into SIGKILL.
        let exit = handle
            .shutdown(Duration::from_secs(10))
            .await
            .expect("shutdown");
        assert_eq!(exit.signal, Some(15), "{exit:?}");
        assert!(!exit.killed);
        assert!(!group_has_live_members(pid as i32));
        assert!(
            nix::sys::signal::kill(Pid::from_raw(pid as i32), None).is_err(),
            "reaped"
        );
        let tail = log.tail(10);
        assert!(captured(&tail), "{tail:?}");
    }

    #[tokio::test]
    async fn reports_an_early_exit() {
        let log = LogRing::new(10);
        let handle = ProcessHandle::spawn(Spawn {
            binary: Path::new("/bin/sh"),
            args: &[
                "-c".into(),
                "echo 'bind: Address already in use'; exit 3".into(),
            ],
            env: vec![],
            cpuset: None,
            log: log.clone(),
            user: None,
            stop: None,
        })
        .expect("spawn");
        let mut status = None;
        for _ in 0..100 {
            status = handle.try_exit().expect("try_wait");
            if status.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        handle.drain_output(Duration::from_secs(1)).await;
        assert_eq!(status.and_then(|s| s.code()), Some(3));
        assert!(log.contains_ignore_case("address already in use"));
        let exit = handle
            .shutdown(Duration::from_secs(1))
            .await
            .expect("shutdown");
        assert_eq!((exit.code, exit.killed), (Some(3), false));
    }
}
