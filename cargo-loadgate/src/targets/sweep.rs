//! `cargo loadgate clean`: removing containers (and images) that loadgate labelled and left behind,
//! e.g. after a `kill -9` of a run, which no handler can catch.

use super::{
    TargetError, cleanup::LABEL_RUN, docker::CONNECT_TIMEOUT, docker::connect, docker::is_not_found,
};
use crate::image::LABEL;
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListImagesOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveImageOptionsBuilder,
};
use serde::Serialize;
use std::collections::HashMap;

/// What to sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepScope {
    /// Every container labelled `loadgate=1`.
    Containers,
    /// Every container and every image labelled `loadgate=1`.
    All,
    /// The containers of one run (`loadgate.run=<id>`).
    Run(String),
}

/// A container found by a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SweptContainer {
    /// The container id.
    pub id: String,
    /// Its name, without the leading `/`.
    pub name: String,
    /// Its image.
    pub image: String,
    /// The run that made it, when labelled.
    pub run_id: Option<String>,
    /// Its state (`running`, `exited`, …).
    pub state: String,
}

/// An image found by a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SweptImage {
    /// The image id.
    pub id: String,
    /// Its tags.
    pub tags: Vec<String>,
}

/// What a sweep found and (unless it was a dry run) removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Whether nothing was removed, only listed.
    pub dry_run: bool,
    /// Containers found.
    pub containers: Vec<SweptContainer>,
    /// Images found.
    pub images: Vec<SweptImage>,
    /// What could not be removed, with the engine's reason.
    pub failures: Vec<String>,
}

/// Finds (and unless `dry_run` removes) what loadgate labelled, in `scope`.
pub async fn sweep(scope: SweepScope, dry_run: bool) -> Result<SweepReport, TargetError> {
    let docker = connect(CONNECT_TIMEOUT).await?;
    let label = match &scope {
        SweepScope::Run(id) => format!("{LABEL_RUN}={id}"),
        SweepScope::Containers | SweepScope::All => format!("{LABEL}=1"),
    };
    let filters = HashMap::from([("label".to_owned(), vec![label.clone()])]);
    let list = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::new()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| TargetError::engine(format!("list containers labelled {label}"), e))?;
    let mut report = SweepReport {
        dry_run,
        ..SweepReport::default()
    };
    for c in list {
        let id = c.id.unwrap_or_default();
        report.containers.push(SweptContainer {
            name: c
                .names
                .unwrap_or_default()
                .first()
                .map(|n| n.trim_start_matches('/').to_owned())
                .unwrap_or_default(),
            image: c.image.unwrap_or_default(),
            run_id: c.labels.as_ref().and_then(|l| l.get(LABEL_RUN).cloned()),
            state: c.state.map(|s| s.to_string()).unwrap_or_default(),
            id,
        });
    }
    if scope == SweepScope::All {
        let filters = HashMap::from([("label".to_owned(), vec![format!("{LABEL}=1")])]);
        let images = docker
            .list_images(Some(
                ListImagesOptionsBuilder::new()
                    .all(false)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .map_err(|e| TargetError::engine(format!("list images labelled {LABEL}=1"), e))?;
        report.images = images
            .into_iter()
            .map(|i| SweptImage {
                id: i.id,
                tags: i.repo_tags,
            })
            .collect();
    }
    if dry_run {
        return Ok(report);
    }
    for c in &report.containers {
        let opts = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        match docker.remove_container(&c.id, Some(opts)).await {
            Ok(()) => super::cleanup::unregister_container(&c.id),
            Err(e) if is_not_found(&e) => {}
            Err(e) => report.failures.push(format!("container {}: {e}", c.id)),
        }
    }
    for i in &report.images {
        let opts = RemoveImageOptionsBuilder::new().force(true).build();
        match docker.remove_image(&i.id, Some(opts), None).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => report.failures.push(format!("image {}: {e}", i.id)),
        }
    }
    Ok(report)
}
