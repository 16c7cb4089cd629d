//! The `process` target against the demo service: boot, readiness, samples, output, teardown, and
//! each way a boot fails (crash, readiness timeout, port in use).

#[path = "target_support/mod.rs"]
mod support;

use cargo_loadgate::{
    config::TargetKind,
    targets::{BootEvent, SampleSource, TargetError, boot},
};
use std::time::{Duration, Instant};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_boots_serves_samples_and_leaves_nothing() {
    let _serial = serial().await;
    let id = run_id("process-boot");
    let events = Events::default();
    let req = demo_request(
        TargetKind::Process,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[("DEMO_LEAK_BYTES", "1000000")],
    );
    let target = boot(req, &|e| events.push(e)).await.expect("boots");
    let info = target.info();
    let pid = info.pid.expect("pid");
    let _guard = PidGuard(pid);
    assert!(
        target.base_url().starts_with("http://127.0.0.1:"),
        "{}",
        target.base_url()
    );
    assert_eq!(info.samples, SampleSource::Procfs { pid });
    let steps = events.steps();
    assert!(
        matches!(steps.first(), Some(BootEvent::Building { .. })),
        "{steps:?}"
    );
    assert!(
        matches!(steps.last(), Some(BootEvent::Ready { .. })),
        "{steps:?}"
    );

    assert_eq!(
        status_of(&format!("{}/health", target.base_url())).await,
        Some(200)
    );

    let sampler = target.start_sampler(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(250)).await;
    let ok = burst(&format!("{}/", target.base_url()), 200).await;
    assert_eq!(ok, 200);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(sampler.latest().is_some());
    let samples = sampler.stop().await;
    let growth = rss_growth(&samples);
    eprintln!(
        "process: {} samples, RSS {} -> {} bytes (+{growth}), cpu {:.3}s, threads {}, fds {}",
        samples.len(),
        samples[0].rss_bytes,
        samples.last().expect("samples").rss_bytes,
        samples.last().expect("samples").cpu_seconds,
        samples.last().expect("samples").threads,
        samples.last().expect("samples").fds,
    );
    assert!(
        growth > 150_000_000,
        "200 requests leaking 1 MB each should grow RSS by >150 MB, grew {growth}"
    );
    assert!(samples.last().expect("samples").threads >= 2);
    assert!(samples.last().expect("samples").fds >= 3);

    assert!(
        target
            .log_tail(20)
            .iter()
            .any(|l| l.contains("demo-service listening on")),
        "{:?}",
        target.log_tail(20)
    );
    target.check_alive().await.expect("still alive");

    let started = Instant::now();
    let exit = target.shutdown().await.expect("shutdown");
    eprintln!("process: shutdown took {:?}: {exit:?}", started.elapsed());
    assert!(
        !exit.killed,
        "the demo stops on SIGTERM within the grace period: {exit:?}"
    );
    assert!(!pid_alive(pid), "process {pid} outlived shutdown");
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_err(),
        "process {pid} was not reaped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_during_boot_fails_at_once_with_the_log_tail() {
    let _serial = serial().await;
    let id = run_id("process-crash");
    let req = demo_request(
        TargetKind::Process,
        &id,
        demo_config("/health", Duration::from_secs(60)),
        &[("DEMO_LEAK_BYTES", "lots")],
    );
    let events = Events::default();
    let err = boot(req, &|e| events.push(e))
        .await
        .expect_err("bad env makes it exit");
    let since_start = events.since_start();
    let TargetError::Crashed { status, log_tail } = &err else {
        panic!("expected Crashed, got {err}")
    };
    assert_eq!(status, "exit status 2");
    assert!(
        log_tail.iter().any(|l| l.contains("DEMO_LEAK_BYTES")),
        "{log_tail:?}"
    );
    assert!(
        since_start < Duration::from_secs(5),
        "did not wait out the 60 s timeout: {since_start:?}"
    );
    assert!(err.to_string().contains("| demo-service: error"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ready_path_times_out_with_the_log_tail_and_leaves_nothing() {
    let _serial = serial().await;
    let id = run_id("process-ready");
    let binary = demo_package()
        .target_directory
        .join("release")
        .join("demo-service");
    let req = demo_request(
        TargetKind::Process,
        &id,
        demo_config("/no-such-path", Duration::from_secs(2)),
        &[],
    );
    let err = boot(req, &|_| {}).await.expect_err("never ready");
    let TargetError::ReadinessTimeout {
        url,
        last,
        log_tail,
        waited,
    } = &err
    else {
        panic!("expected timeout, got {err}")
    };
    assert!(url.ends_with("/no-such-path"), "{url}");
    assert_eq!(*waited, Duration::from_secs(2));
    assert!(last.contains("404"), "{last}");
    assert!(
        log_tail
            .iter()
            .any(|l| l.contains("demo-service listening on")),
        "{log_tail:?}"
    );
    assert!(
        err.to_string().contains("demo-service listening on"),
        "the message shows the tail: {err}"
    );
    assert_eq!(
        live_children_running(&binary),
        Vec::<u32>::new(),
        "boot failure left the service running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taken_port_is_port_in_use() {
    let _serial = serial().await;
    let id = run_id("process-port");
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let port_s = port.to_string();
    let req = demo_request(
        TargetKind::Process,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[("PORT", &port_s)],
    );
    let err = boot(req, &|_| {}).await.expect_err("port taken");
    let TargetError::PortInUse {
        port: reported,
        log_tail,
    } = &err
    else {
        panic!("expected PortInUse, got {err}")
    };
    assert_eq!(*reported, port);
    assert!(
        log_tail
            .iter()
            .any(|l| l.to_lowercase().contains("address already in use")),
        "{log_tail:?}"
    );
    assert_eq!(
        cargo_loadgate::cli::ExitCode::for_target(err.kind()),
        cargo_loadgate::cli::ExitCode::TARGET_FAILED
    );
    drop(listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_target_is_killed() {
    let _serial = serial().await;
    let id = run_id("process-drop");
    let mut req = demo_request(
        TargetKind::Process,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[],
    );
    req.cpuset = Some("0".into());
    let target = boot(req, &|_| {}).await.expect("boots");
    let pid = target.info().pid.expect("pid");
    let _guard = PidGuard(pid);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    assert!(
        status.lines().any(
            |l| l.starts_with("Cpus_allowed_list:") && l.split_whitespace().nth(1) == Some("0")
        ),
        "pinned to core 0"
    );
    drop(target);
    // Drop kills the group; the zombie is reaped by tokio's orphan reaper.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!pid_alive(pid), "dropped target {pid} still runs");
}
