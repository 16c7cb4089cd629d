//! Sends the post-run audits' requests (`[[audit]]`) to the target, after the run's phases and
//! before its teardown, and hands each answer to `compare::judge_audit`. The shell of the audit:
//! I/O only (reqwest, as readiness uses it; the engine's hot path is for load).

use crate::compare::{AuditAnswer, judge_audit};
use crate::config::{AuditConfig, BodyTemplate};
use crate::result::{AuditOutcome, RunResult, run_tallies};
use crate::targets::innermost;
use std::time::Duration;

/// Runs every audit of `audits` against `base_url`, each with `timeout`, and judges its answer
/// against the counts of `result`'s phases.
pub(super) async fn run_audits(
    audits: &[AuditConfig],
    base_url: &str,
    timeout: Duration,
    result: &RunResult,
) -> Vec<AuditOutcome> {
    if audits.is_empty() {
        return Vec::new();
    }
    let tallies = run_tallies(result);
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build();
    let mut out = Vec::new();
    for audit in audits {
        let answer = match &client {
            Ok(client) => send(client, base_url, audit).await,
            Err(e) => Err(format!("the HTTP client could not be built: {e}")),
        };
        out.push(judge_audit(audit, &answer, &tallies));
    }
    out
}

/// Sends one audit's request; its status and body, or why there is none.
async fn send(client: &reqwest::Client, base_url: &str, audit: &AuditConfig) -> AuditAnswer {
    let r = &audit.request;
    let url = format!(
        "{}/{}",
        base_url.trim_end_matches('/'),
        r.path.trim_start_matches('/')
    );
    let method = reqwest::Method::from_bytes(r.method.as_bytes())
        .map_err(|e| format!("`{}` is not a method: {e}", r.method))?;
    let mut request = client.request(method, &url);
    for (name, value) in &r.headers {
        request = request.header(name, value);
    }
    request = match &r.body {
        Some(BodyTemplate::Json(json)) => request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(json.to_string()),
        Some(BodyTemplate::Raw(text)) => request.body(text.clone()),
        None => request,
    };
    let response = request
        .send()
        .await
        .map_err(|e| format!("{} {url} failed: {}", r.method, innermost(&e)))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(|e| {
        format!(
            "the answer of {} {url} broke off: {}",
            r.method,
            innermost(&e)
        )
    })?;
    Ok((status, body.to_vec()))
}
