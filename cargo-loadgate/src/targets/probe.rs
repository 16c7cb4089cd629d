//! Sampling `[[probe]]`s: one connection per probe (tokio-postgres, no TLS: what loadgate boots
//! listens on loopback), one query a second, on the runtime's tasks beside the resource sampler —
//! never on the generator's core. A probe that cannot connect is recorded as missing, with why;
//! the run goes on. `measure::probe` turns the readings into series.

use super::dependency::RunningDependencies;
use crate::config::{ProbeConfig, ProbeKind};
use crate::measure::probe::{POSTGRES_SERIES, ProbeRecord, ProbeRecorder};
use std::{
    str::FromStr,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};
use tokio::{sync::oneshot, task::JoinHandle};

/// How long a probe may take to connect before it is recorded as missing.
pub const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one sample may take; a slower one counts as a failed sample.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(2);

/// One query reads every series of [`POSTGRES_SERIES`], in its order: the connections of every
/// client backend but the probe's own by state, the lock waits, and `pg_stat_database` summed over
/// the cluster's databases.
const POSTGRES_QUERY: &str = "\
SELECT a.*, d.*
FROM
  (SELECT
     count(*) FILTER (WHERE state = 'active' AND wait_event_type IS DISTINCT FROM 'Lock')::float8,
     count(*) FILTER (WHERE state = 'idle')::float8,
     count(*) FILTER (WHERE state IN ('idle in transaction', 'idle in transaction (aborted)'))::float8,
     count(*) FILTER (WHERE wait_event_type = 'Lock')::float8,
     (SELECT count(*) FROM pg_locks WHERE NOT granted)::float8
   FROM pg_stat_activity
   WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()) a,
  (SELECT sum(xact_commit)::float8, sum(xact_rollback)::float8, sum(deadlocks)::float8,
          sum(temp_bytes)::float8, sum(blks_read)::float8, sum(blks_hit)::float8
   FROM pg_stat_database) d";

/// A connected PostgreSQL probe.
pub struct PostgresProbe {
    client: tokio_postgres::Client,
    connection: JoinHandle<()>,
}

impl std::fmt::Debug for PostgresProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresProbe").finish_non_exhaustive()
    }
}

impl PostgresProbe {
    /// Connects to `url` (`postgres://user@host:port/database`) within `timeout`; the error says
    /// why it could not, for people.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, String> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| format!("{url} is not a PostgreSQL address: {e}"))?;
        config
            .connect_timeout(timeout)
            .application_name("cargo-loadgate probe");
        let connect = config.connect(tokio_postgres::NoTls);
        let (client, connection) = match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(format!("cannot connect to {url}: {}", error_text(&e))),
            Err(_) => {
                return Err(format!(
                    "cannot connect to {url}: no answer within {}s",
                    timeout.as_secs()
                ));
            }
        };
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self { client, connection })
    }

    /// One reading of [`POSTGRES_SERIES`], in its order.
    pub async fn read(&self) -> Result<Vec<f64>, String> {
        let row = tokio::time::timeout(SAMPLE_TIMEOUT, self.client.query_one(POSTGRES_QUERY, &[]))
            .await
            .map_err(|_| format!("no answer within {}s", SAMPLE_TIMEOUT.as_secs()))?
            .map_err(|e| error_text(&e))?;
        (0..POSTGRES_SERIES.len())
            .map(|i| {
                row.try_get::<_, Option<f64>>(i)
                    .map(|v| v.unwrap_or(0.0))
                    .map_err(|e| error_text(&e))
            })
            .collect()
    }
}

impl Drop for PostgresProbe {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

/// The message of a tokio-postgres error with its cause (its `Display` alone says "error
/// connecting to server").
fn error_text(e: &tokio_postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// The probes of a run, sampling until stopped.
#[derive(Debug, Default)]
pub struct ProbeSampler {
    probes: Vec<Sampling>,
}

#[derive(Debug)]
struct Sampling {
    record: Arc<Mutex<ProbeRecorder>>,
    missing: Option<ProbeRecord>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ProbeSampler {
    /// Connects every probe of `probes` to its dependency of `running` and starts sampling each
    /// every `every`, on the clock of `started` (the resource sampler's). `warn` hears of each
    /// probe that could not connect (it is recorded as missing).
    pub async fn start(
        probes: &[ProbeConfig],
        running: &RunningDependencies,
        started: Instant,
        every: Duration,
        warn: &dyn Fn(&str),
    ) -> Self {
        let mut sampling = Vec::new();
        for probe in probes {
            let ProbeKind::Postgres = probe.kind;
            let url = running.render(&format!("{{{{{}.url}}}}", probe.dependency));
            let recorder = ProbeRecorder::new(
                &probe.name,
                probe.kind.name(),
                &probe.dependency,
                POSTGRES_SERIES,
            );
            let connected = if url.contains("{{") {
                Err(format!("dependency `{}` is not running", probe.dependency))
            } else {
                PostgresProbe::connect(&url, PROBE_CONNECT_TIMEOUT).await
            };
            match connected {
                Err(why) => {
                    warn(&format!("probe `{}` is missing: {why}", probe.name));
                    sampling.push(Sampling {
                        record: Arc::new(Mutex::new(recorder)),
                        missing: Some(ProbeRecord::missing(
                            &probe.name,
                            probe.kind.name(),
                            &probe.dependency,
                            why,
                        )),
                        stop: None,
                        task: None,
                    });
                }
                Ok(client) => {
                    let record = Arc::new(Mutex::new(recorder));
                    let (stop_tx, stop_rx) = oneshot::channel();
                    let task =
                        tokio::spawn(sample_loop(client, record.clone(), started, every, stop_rx));
                    sampling.push(Sampling {
                        record,
                        missing: None,
                        stop: Some(stop_tx),
                        task: Some(task),
                    });
                }
            }
        }
        Self { probes: sampling }
    }

    /// Every probe's record so far; sampling goes on.
    pub fn snapshot(&self) -> Vec<ProbeRecord> {
        self.probes.iter().map(Sampling::record).collect()
    }

    /// Stops sampling and returns every probe's record, in the order of the config.
    pub async fn stop(mut self) -> Vec<ProbeRecord> {
        let mut out = Vec::new();
        for mut s in std::mem::take(&mut self.probes) {
            if let Some(stop) = s.stop.take() {
                let _ = stop.send(());
            }
            if let Some(task) = s.task.take() {
                let _ = task.await;
            }
            out.push(s.record());
        }
        out
    }
}

impl Sampling {
    fn record(&self) -> ProbeRecord {
        match &self.missing {
            Some(m) => m.clone(),
            None => self
                .record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record()
                .clone(),
        }
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn sample_loop(
    probe: PostgresProbe,
    record: Arc<Mutex<ProbeRecorder>>,
    started: Instant,
    every: Duration,
    mut stop: oneshot::Receiver<()>,
) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = tick.tick() => {}
        }
        let elapsed_s = started.elapsed().as_secs_f64();
        let reading = tokio::select! {
            _ = &mut stop => break,
            r = probe.read() => r,
        };
        let mut r = record.lock().unwrap_or_else(PoisonError::into_inner);
        match reading {
            Ok(raw) => r.push(elapsed_s, &raw),
            Err(e) => r.failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing listens on a port just freed: the probe says so instead of hanging.
    #[tokio::test]
    async fn a_probe_that_cannot_connect_says_why() {
        let port = super::super::free_loopback_port().expect("a free port");
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let err = PostgresProbe::connect(&url, Duration::from_secs(2))
            .await
            .expect_err("nothing listens there");
        assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
        assert!(err.contains("refused"), "{err}");
    }
}
