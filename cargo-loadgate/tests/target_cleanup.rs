//! Always-cleanup, end to end: a child process (this test binary, re-run with one test selected)
//! installs the handlers, boots the demo service, and is then sent SIGTERM or SIGINT, or panics.
//! Afterwards neither the service process nor its container may exist, and the exit code must be
//! 143 / 130 (or the panic's 101).
//!
//! Each test plays both roles: run normally it is the parent; run with `LOADGATE_CLEANUP_CHILD`
//! set it is the child.

#[path = "target_support/mod.rs"]
mod support;

use cargo_loadgate::{
    cli::exit_on_signal,
    config::TargetKind,
    targets::{boot, install_cleanup_handlers},
};
use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};
use support::*;

const CHILD_ENV: &str = "LOADGATE_CLEANUP_CHILD";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    Sigterm,
    Sigint,
    Panic,
}

/// The child's part: boot, report, then wait (bounded) for the signal or panic.
async fn child(kind: TargetKind, ending: Ending) {
    install_cleanup_handlers(exit_on_signal).expect("handlers");
    let id = std::env::var("LOADGATE_CLEANUP_RUN").expect("run id");
    let req = demo_request(
        kind,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[],
    );
    let target = boot(req, &|_| {}).await.expect("boots");
    let info = target.info();
    println!("LOADGATE_CHILD_PID={}", info.pid.unwrap_or(0));
    println!(
        "LOADGATE_CHILD_CONTAINER={}",
        info.container_id.unwrap_or_default()
    );
    if ending == Ending::Panic {
        // Wait until the parent has seen the target alive (it writes a line, or closes stdin by
        // exiting): panicking at once raced the parent's check and failed on a loaded machine.
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        panic!("deliberate panic with a running target");
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    drop(target);
    panic!("no signal arrived within 60 s");
}

/// The parent's part: run the child, end it, check that nothing is left.
fn parent(test: &str, kind: TargetKind, ending: Ending) {
    let run = run_id(test);
    let _guard = RunGuard(run.clone());
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("LOADGATE_CLEANUP_RUN", &run)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let mut stdin = child.stdin.take().expect("stdin");
    let child_pid = child.id();
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut pid = None;
    let mut container = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    while (pid.is_none() || container.is_none()) && Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => {
                // The harness may print `test name ... ` before the child's first line.
                if let Some((_, p)) = line.split_once("LOADGATE_CHILD_PID=") {
                    pid = p.trim().parse::<u32>().ok();
                }
                if let Some((_, c)) = line.split_once("LOADGATE_CHILD_CONTAINER=") {
                    container = Some(c.trim().to_owned());
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if child.try_wait().expect("try_wait").is_some() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let (Some(pid), Some(container)) = (pid, container) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child did not report its target");
    };
    let _pid_guard = PidGuard(pid);
    assert_eq!(
        container.is_empty(),
        kind == TargetKind::Process,
        "container {container:?} for {kind:?}"
    );
    assert_ne!(pid, 0, "the target's pid is known for {kind:?}");
    assert!(
        pid == 0 || pid_alive(pid),
        "target {pid} runs before the ending"
    );
    match ending {
        Ending::Sigterm => signal(child_pid, nix::sys::signal::Signal::SIGTERM),
        Ending::Sigint => signal(child_pid, nix::sys::signal::Signal::SIGINT),
        Ending::Panic => {
            use std::io::Write as _;
            let _ = writeln!(stdin, "go");
        }
    }
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the child did not exit within 60 s of the ending");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!(
        "{test}: child exited with {status:?} {:?} after the ending",
        started.elapsed()
    );
    let expected = match ending {
        Ending::Sigterm => 143,
        Ending::Sigint => 130,
        Ending::Panic => 101,
    };
    assert_eq!(status.code(), Some(expected), "{status:?}");
    if pid != 0 {
        assert!(!pid_alive(pid), "target process {pid} outlived the child");
    }
    if !container.is_empty() {
        let out = Command::new("docker")
            .args(["inspect", &container])
            .output()
            .expect("docker inspect");
        assert!(
            !out.status.success(),
            "container {container} outlived the child"
        );
        let out = Command::new("docker")
            .args([
                "ps",
                "-aq",
                "--filter",
                &format!("label=loadgate.run={run}"),
            ])
            .output()
            .expect("docker ps");
        assert!(
            String::from_utf8_lossy(&out.stdout).trim().is_empty(),
            "containers of {run} remain"
        );
    }
}

fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).expect("signal the child");
}

fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

macro_rules! cleanup_test {
    ($name:ident, $kind:expr, $ending:expr, $needs_docker:expr) => {
        #[test]
        fn $name() {
            if is_child() {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("rt");
                rt.block_on(child($kind, $ending));
                return;
            }
            let _serial = serial_blocking();
            if $needs_docker {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("rt");
                if !rt.block_on(docker_available(stringify!($name))) {
                    return;
                }
            }
            parent(stringify!($name), $kind, $ending);
        }
    };
}

cleanup_test!(
    sigterm_kills_a_process_target,
    TargetKind::Process,
    Ending::Sigterm,
    false
);
cleanup_test!(
    sigint_kills_a_process_target,
    TargetKind::Process,
    Ending::Sigint,
    false
);
cleanup_test!(
    panic_kills_a_process_target,
    TargetKind::Process,
    Ending::Panic,
    false
);
cleanup_test!(
    sigterm_removes_a_container_target,
    TargetKind::Container,
    Ending::Sigterm,
    true
);
cleanup_test!(
    sigint_removes_a_container_target,
    TargetKind::Container,
    Ending::Sigint,
    true
);
cleanup_test!(
    panic_removes_a_container_target,
    TargetKind::Container,
    Ending::Panic,
    true
);
