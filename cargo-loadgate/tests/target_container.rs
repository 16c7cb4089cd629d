//! The `container` target against the demo service packed into a `FROM scratch` image: boot,
//! readiness, samples, teardown, image reuse, and a missing image failing fast. Needs the Docker
//! engine; without one these tests say so loudly and pass, except under `CI`, where they fail.

#[path = "target_support/mod.rs"]
mod support;

use bollard::query_parameters::ListContainersOptionsBuilder;
use cargo_loadgate::{
    config::{NetworkChoice, TargetConfig, TargetKind, TargetSource},
    image::{BuildMode, Packing, cargo_build, host_triple, pack_binary},
    targets::{BootEvent, NetworkPath, SampleSource, SweepScope, TargetError, boot, sweep},
};
use std::{
    collections::HashMap,
    time::{Duration, Instant},
};
use support::*;

async fn docker() -> bollard::Docker {
    bollard::Docker::connect_with_local_defaults()
        .expect("docker")
        .negotiate_version()
        .await
        .expect("negotiate")
}

async fn containers_of_run(run: &str) -> Vec<String> {
    let filters = HashMap::from([("label".to_owned(), vec![format!("loadgate.run={run}")])]);
    let opts = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    docker()
        .await
        .list_containers(Some(opts))
        .await
        .expect("list")
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_boots_serves_samples_reuses_its_image_and_leaves_nothing() {
    let _serial = serial().await;
    if !docker_available("container_boots_serves_samples_reuses_its_image_and_leaves_nothing").await
    {
        return;
    }
    let id = run_id("container-boot");
    let _guard = RunGuard(id.clone());
    let events = Events::default();
    // The published path here; the host network has its own test below.
    let published = TargetConfig {
        network: NetworkChoice::Published,
        ..demo_config("/health", Duration::from_secs(30))
    };
    let req = demo_request(
        TargetKind::Container,
        &id,
        published,
        &[("DEMO_LEAK_BYTES", "1000000")],
    );
    let started = Instant::now();
    let target = boot(req, &|e| events.push(e)).await.expect("boots");
    eprintln!(
        "container: first boot (build + pack + start + ready) took {:?}",
        started.elapsed()
    );
    let info = target.info();
    let steps = events.steps();
    eprintln!("container: events {steps:?}");
    assert_eq!(info.packing, Some(Packing::Static), "{steps:?}");
    let image = info.image.clone().expect("image");
    assert!(image.tag.starts_with("loadgate/demo-service:"), "{image:?}");
    let container_id = info.container_id.clone().expect("container id");
    assert!(
        matches!(info.samples, SampleSource::Procfs { .. }),
        "{:?}",
        info.samples
    );
    assert!(target.base_url().starts_with("http://127.0.0.1:"));
    let network = info.network.clone().expect("the path is recorded");
    assert_eq!(
        (network.path, network.asked, network.fallback),
        (NetworkPath::Published, NetworkChoice::Published, None)
    );
    assert_eq!(info.container_port, Some(8080));

    // Published on loopback only.
    let inspect = docker()
        .await
        .inspect_container(&container_id, None)
        .await
        .expect("inspect");
    let host = inspect.host_config.expect("host config");
    assert_eq!(host.nano_cpus, Some(1_000_000_000));
    assert_eq!(host.memory, Some(512 * 1024 * 1024));
    let bindings = inspect
        .network_settings
        .and_then(|n| n.ports)
        .expect("ports");
    let bound: Vec<String> = bindings
        .values()
        .flatten()
        .flatten()
        .filter_map(|b| b.host_ip.clone())
        .collect();
    assert_eq!(bound, ["127.0.0.1"]);
    let labels = inspect.config.and_then(|c| c.labels).expect("labels");
    assert_eq!(labels.get("loadgate.run"), Some(&id));
    assert_eq!(labels.get("loadgate").map(String::as_str), Some("1"));

    assert_eq!(
        status_of(&format!("{}/health", target.base_url())).await,
        Some(200)
    );
    let sampler = target.start_sampler(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(burst(&format!("{}/", target.base_url()), 200).await, 200);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let samples = sampler.stop().await;
    let growth = rss_growth(&samples);
    eprintln!(
        "container: {} samples, RSS +{growth} bytes, last {:?}",
        samples.len(),
        samples.last().expect("samples")
    );
    assert!(
        growth > 150_000_000,
        "200 requests leaking 1 MB each should grow RSS by >150 MB, grew {growth}"
    );

    let started = Instant::now();
    let exit = target.shutdown().await.expect("shutdown");
    eprintln!("container: shutdown took {:?}: {exit:?}", started.elapsed());
    assert!(!exit.killed, "{exit:?}");
    let gone = docker().await.inspect_container(&container_id, None).await;
    assert!(gone.is_err(), "container {container_id} outlived shutdown");
    assert!(containers_of_run(&id).await.is_empty());

    // Second boot: the binary is unchanged, so the image is reused, not rebuilt.
    let events = Events::default();
    let req = demo_request(
        TargetKind::Container,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[],
    );
    let target = boot(req, &|e| events.push(e)).await.expect("boots again");
    let steps = events.steps();
    assert!(
        steps.iter().any(
            |e| matches!(e, BootEvent::Built { artifact, reused: true } if *artifact == image.tag)
        ),
        "{steps:?}"
    );
    assert!(
        !steps
            .iter()
            .any(|e| matches!(e, BootEvent::Building { what } if what.starts_with("image"))),
        "{steps:?}"
    );
    assert_eq!(target.info().image.expect("image").id, image.id);
    target.shutdown().await.expect("shutdown");
    assert!(containers_of_run(&id).await.is_empty());
}

/// Host networking (what `auto` chooses on an engine on this machine's kernel, as in CI): no port
/// published, the service on a free loopback port given as `$PORT` and bound to `$HOST`
/// (127.0.0.1); a service that binds every interface instead is warned about and recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_on_the_host_network_listens_on_its_own_loopback_port_and_publishes_nothing() {
    let _serial = serial().await;
    if !docker_available(
        "container_on_the_host_network_listens_on_its_own_loopback_port_and_publishes_nothing",
    )
    .await
    {
        return;
    }
    let id = run_id("container-host-network");
    let _guard = RunGuard(id.clone());
    let hosted = TargetConfig {
        network: NetworkChoice::Host,
        ..demo_config("/health", Duration::from_secs(30))
    };
    let events = Events::default();
    let target = boot(
        demo_request(TargetKind::Container, &id, hosted.clone(), &[]),
        &|e| events.push(e),
    )
    .await
    .expect("boots on the host network");
    let info = target.info();
    let network = info.network.clone().expect("the path is recorded");
    assert_eq!(network.path, NetworkPath::Host, "{network:?}");
    assert_eq!(network.fallback, None);
    assert_eq!(
        network.binds_every_interface,
        Some(false),
        "the demo binds $HOST = 127.0.0.1"
    );
    let port = info.port.expect("port");
    assert_ne!(port, 8080, "a free port of its own, not the config's");
    assert_eq!(info.container_port, None);
    assert_eq!(target.base_url(), format!("http://127.0.0.1:{port}"));
    assert_eq!(
        status_of(&format!("{}/health", target.base_url())).await,
        Some(200)
    );
    let inspect = docker()
        .await
        .inspect_container(&info.container_id.clone().expect("id"), None)
        .await
        .expect("inspect");
    let host = inspect.host_config.expect("host config");
    assert_eq!(host.network_mode.as_deref(), Some("host"));
    assert!(
        host.port_bindings.unwrap_or_default().is_empty(),
        "nothing published"
    );
    assert!(
        !events
            .steps()
            .iter()
            .any(|e| matches!(e, BootEvent::Warning { .. })),
        "{:?}",
        events.steps()
    );
    target.shutdown().await.expect("shutdown");

    // The same service told to bind every interface: it runs, and the run says so.
    let events = Events::default();
    let target = boot(
        demo_request(
            TargetKind::Container,
            &id,
            hosted,
            &[("DEMO_BIND", "0.0.0.0")],
        ),
        &|e| events.push(e),
    )
    .await
    .expect("boots");
    let network = target.info().network.expect("recorded");
    assert_eq!(network.binds_every_interface, Some(true));
    assert!(
        events.steps().iter().any(
            |e| matches!(e, BootEvent::Warning { message } if message.contains("every interface"))
        ),
        "{:?}",
        events.steps()
    );
    target.shutdown().await.expect("shutdown");
    assert!(containers_of_run(&id).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_local_image_fails_fast_without_pulling() {
    let _serial = serial().await;
    if !docker_available("missing_local_image_fails_fast_without_pulling").await {
        return;
    }
    let id = run_id("container-missing");
    let _guard = RunGuard(id.clone());
    let mut config = demo_config("/health", Duration::from_secs(30));
    config.source = TargetSource::Image {
        reference: "loadgate-test/does-not-exist:never".into(),
    };
    let req = demo_request(TargetKind::Container, &id, config, &[]);
    let started = Instant::now();
    let err = boot(req, &|_| {}).await.expect_err("missing image");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(&err, TargetError::ImageMissing { reference } if reference == "loadgate-test/does-not-exist:never"),
        "{err}"
    );
    assert!(containers_of_run(&id).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashing_container_fails_at_once_with_its_output() {
    let _serial = serial().await;
    if !docker_available("crashing_container_fails_at_once_with_its_output").await {
        return;
    }
    let id = run_id("container-crash");
    let _guard = RunGuard(id.clone());
    let req = demo_request(
        TargetKind::Container,
        &id,
        demo_config("/health", Duration::from_secs(60)),
        &[("DEMO_LEAK_BYTES", "lots")],
    );
    let events = Events::default();
    let err = boot(req, &|e| events.push(e))
        .await
        .expect_err("bad env makes it exit");
    let since_start = events.since_start();
    assert!(
        since_start < Duration::from_secs(10),
        "did not wait out the 60 s timeout: {since_start:?}"
    );
    let TargetError::Crashed { status, log_tail } = &err else {
        panic!("expected Crashed, got {err}")
    };
    assert!(status.ends_with("exit status 2"), "{status}");
    assert!(
        log_tail.iter().any(|l| l.contains("DEMO_LEAK_BYTES")),
        "{log_tail:?}"
    );
    assert!(
        containers_of_run(&id).await.is_empty(),
        "the crashed container was removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ready_path_in_a_container_shows_the_log_tail() {
    let _serial = serial().await;
    if !docker_available("wrong_ready_path_in_a_container_shows_the_log_tail").await {
        return;
    }
    let id = run_id("container-ready");
    let _guard = RunGuard(id.clone());
    let req = demo_request(
        TargetKind::Container,
        &id,
        demo_config("/nope", Duration::from_secs(2)),
        &[],
    );
    let err = boot(req, &|_| {}).await.expect_err("never ready");
    let TargetError::ReadinessTimeout { log_tail, last, .. } = &err else {
        panic!("expected timeout, got {err}")
    };
    assert!(last.contains("404"), "{last}");
    assert!(
        log_tail
            .iter()
            .any(|l| l.contains("demo-service listening on")),
        "{log_tail:?}"
    );
    assert!(containers_of_run(&id).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_removes_a_leftover_container_of_a_run() {
    let _serial = serial().await;
    if !docker_available("sweep_removes_a_leftover_container_of_a_run").await {
        return;
    }
    let id = run_id("container-sweep");
    let _guard = RunGuard(id.clone());
    let req = demo_request(
        TargetKind::Container,
        &id,
        demo_config("/health", Duration::from_secs(30)),
        &[],
    );
    let target = boot(req, &|_| {}).await.expect("boots");
    let container_id = target.info().container_id.expect("id");
    // Simulate `kill -9` of loadgate: the handle is forgotten, nothing tears the container down.
    std::mem::forget(target);
    let dry = sweep(SweepScope::Run(id.clone()), true)
        .await
        .expect("dry run");
    assert_eq!(
        dry.containers
            .iter()
            .map(|c| c.id.clone())
            .collect::<Vec<_>>(),
        std::slice::from_ref(&container_id)
    );
    assert_eq!(
        containers_of_run(&id).await,
        std::slice::from_ref(&container_id),
        "dry run removes nothing"
    );
    let report = sweep(SweepScope::Run(id.clone()), false)
        .await
        .expect("sweep");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.containers.len(), 1);
    assert!(containers_of_run(&id).await.is_empty());
}

/// Removes an image when dropped.
struct ImageGuard(String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rmi", "-f", &self.0])
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_binary_is_packed_with_its_libraries_and_runs() {
    let _serial = serial().await;
    if !docker_available("dynamic_binary_is_packed_with_its_libraries_and_runs").await {
        return;
    }
    let id = run_id("container-dynamic");
    let _guard = RunGuard(id.clone());
    let binary = cargo_build(&demo_package(), "demo-service", &BuildMode::Host, &|_| {})
        .await
        .expect("host build");
    let events = Events::default();
    let packed = pack_binary(&docker().await, &binary, "demo-service", &|e| {
        events.push(e)
    })
    .await
    .expect("packs");
    let _image = ImageGuard(packed.image.tag.clone());
    assert_eq!(packed.packing, Packing::WithLibraries);
    let steps = events.steps();
    assert!(
        steps
            .iter()
            .any(|e| matches!(e, BootEvent::DynamicFallback { .. })),
        "{steps:?}"
    );
    let labels = docker()
        .await
        .inspect_image(&packed.image.tag)
        .await
        .expect("inspect")
        .config
        .and_then(|c| c.labels);
    let labels = labels.expect("labels");
    assert_eq!(
        labels.get("loadgate.packing").map(String::as_str),
        Some("with-libraries")
    );
    assert_eq!(labels.get("loadgate").map(String::as_str), Some("1"));

    let mut config = demo_config("/health", Duration::from_secs(30));
    config.source = TargetSource::Image {
        reference: packed.image.tag.clone(),
    };
    let target = boot(
        demo_request(TargetKind::Container, &id, config, &[]),
        &|_| {},
    )
    .await
    .expect("boots");
    assert_eq!(
        status_of(&format!("{}/health", target.base_url())).await,
        Some(200)
    );
    target.shutdown().await.expect("shutdown");
    assert!(containers_of_run(&id).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dockerfile_is_built_labelled_and_reused() {
    let _serial = serial().await;
    if !docker_available("dockerfile_is_built_labelled_and_reused").await {
        return;
    }
    let id = run_id("container-dockerfile");
    let _guard = RunGuard(id.clone());
    let triple = host_triple().await.expect("triple");
    let binary = cargo_build(
        &demo_package(),
        "demo-service",
        &BuildMode::Static { triple },
        &|_| {},
    )
    .await
    .expect("static build");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(&binary, dir.path().join("svc")).expect("copy");
    std::fs::write(dir.path().join("nonce"), &id).expect("nonce makes the context unique");
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM scratch\nCOPY svc /svc\nCOPY nonce /nonce\nENTRYPOINT [\"/svc\"]\n",
    )
    .expect("dockerfile");
    let mut config = demo_config("/health", Duration::from_secs(30));
    config.source = TargetSource::Dockerfile {
        path: dir.path().join("Dockerfile"),
        context: dir.path().to_owned(),
    };

    let events = Events::default();
    let target = boot(
        demo_request(TargetKind::Container, &id, config.clone(), &[]),
        &|e| events.push(e),
    )
    .await
    .expect("boots");
    let tag = target.info().image.expect("image").tag;
    let _image = ImageGuard(tag.clone());
    assert!(tag.starts_with("loadgate/dockerfile-"), "{tag}");
    assert!(
        events
            .steps()
            .iter()
            .any(|e| matches!(e, BootEvent::Built { reused: false, .. })),
        "{:?}",
        events.steps()
    );
    assert_eq!(
        status_of(&format!("{}/health", target.base_url())).await,
        Some(200)
    );
    target.shutdown().await.expect("shutdown");

    let events = Events::default();
    let target = boot(
        demo_request(TargetKind::Container, &id, config, &[]),
        &|e| events.push(e),
    )
    .await
    .expect("boots again");
    assert!(
        events
            .steps()
            .iter()
            .any(|e| matches!(e, BootEvent::Built { artifact, reused: true } if *artifact == tag)),
        "{:?}",
        events.steps()
    );
    target.shutdown().await.expect("shutdown");
    assert!(containers_of_run(&id).await.is_empty());
}
