//! The Docker engine: connecting (with API version negotiation, since the engine may be older than
//! bollard's default API) and telling whether one answers at all.

use super::TargetError;
use bollard::Docker;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the Docker engine says about itself; recorded in a run's environment fingerprint.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DockerInfo {
    /// The engine's version, e.g. `20.10.24+dfsg1`.
    pub version: String,
    /// The API version in use after negotiation, e.g. `1.41`.
    pub api_version: String,
}

/// How long a connection attempt may take before the engine counts as unavailable.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the local engine (`DOCKER_HOST` or the default socket) and negotiates the API version.
pub async fn connect(timeout: Duration) -> Result<Docker, TargetError> {
    let unavailable = |detail: String| TargetError::EngineUnavailable { detail };
    let docker = Docker::connect_with_local_defaults().map_err(|e| unavailable(e.to_string()))?;
    match tokio::time::timeout(timeout, docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(e)) => Err(unavailable(e.to_string())),
        Err(_) => Err(unavailable(format!(
            "no answer within {}",
            super::error::format_duration(timeout)
        ))),
    }
}

/// Pings the engine and asks its version, all within `timeout`.
pub async fn detect_docker(timeout: Duration) -> Result<DockerInfo, TargetError> {
    let attempt = async {
        let docker = connect(timeout).await?;
        let unavailable = |e: bollard::errors::Error| TargetError::EngineUnavailable {
            detail: e.to_string(),
        };
        docker.ping().await.map_err(unavailable)?;
        let version = docker.version().await.map_err(unavailable)?;
        Ok(DockerInfo {
            version: version.version.unwrap_or_else(|| "unknown".into()),
            api_version: docker.client_version().to_string(),
        })
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(TargetError::EngineUnavailable {
                detail: format!(
                    "no answer within {}",
                    super::error::format_duration(timeout)
                ),
            })
        })
}

/// Whether a bollard error is the engine's 404 (no such image or container).
pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}
