//! Sampling `[[probe]]`s, once a second each, on the runtime's tasks beside the resource sampler —
//! never on the generator's core: a `postgres` probe holds one connection (tokio-postgres, no
//! TLS: what loadgate boots listens on loopback) and runs one query; a `prometheus` probe fetches
//! its page and keeps its series (`measure::exposition`). A probe that cannot connect, or whose
//! first scrape fails, is recorded as missing, with why; the run goes on. `measure::probe` turns
//! the readings into series.

use super::dependency::RunningDependencies;
use crate::config::{ProbeConfig, ProbeKind};
use crate::measure::exposition::{self, Selector};
use crate::measure::probe::{
    POSTGRES_SERIES, ProbeRecord, ProbeRecorder, SeriesKind, StatementRecord,
};
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

/// What `pg_stat_statements` says of every statement but the probe's own (those naming a
/// `pg_stat_` view), summed over the users and databases that ran it: its id, its normalized text,
/// calls, shared blocks hit and read, and the time spent in it (ms). PostgreSQL 13 or later
/// (`total_exec_time`).
const STATEMENTS_QUERY: &str = "\
SELECT coalesce(queryid::text, min(query)), min(query), sum(calls)::float8,
       sum(shared_blks_hit + shared_blks_read)::float8, sum(total_exec_time)::float8
FROM pg_stat_statements
WHERE query NOT ILIKE '%pg\\_stat\\_%'
GROUP BY queryid";

/// How many statements a record keeps, the most blocks first.
pub const TOP_STATEMENTS: usize = 10;

/// One statement's counts, as `pg_stat_statements` holds them.
#[derive(Clone, Debug, PartialEq)]
struct StatementCounts {
    query: String,
    calls: f64,
    blocks: f64,
    ms: f64,
}

/// A connected PostgreSQL probe.
pub struct PostgresProbe {
    client: tokio_postgres::Client,
    connection: JoinHandle<()>,
    /// The statements' counts when it connected (what the run adds is the difference), or why
    /// there are none.
    statements_before: Result<std::collections::HashMap<String, StatementCounts>, String>,
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
        Self::connect_with(url, timeout, false).await
    }

    /// [`Self::connect`]; with `create_extension` (a server loadgate booted) it first creates
    /// `pg_stat_statements` in the database, which a user's own server is not asked to.
    pub async fn connect_with(
        url: &str,
        timeout: Duration,
        create_extension: bool,
    ) -> Result<Self, String> {
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
        // The view exists once the extension is created in this database (the preset loads the
        // module); a server without it has no statements.
        if create_extension {
            let _ = tokio::time::timeout(
                SAMPLE_TIMEOUT,
                client.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"),
            )
            .await;
        }
        let statements_before = read_statements(&client).await;
        Ok(Self {
            client,
            connection,
            statements_before,
        })
    }

    /// The statements run since it connected, the most shared blocks first (at most
    /// [`TOP_STATEMENTS`]), or why there are none (`pg_stat_statements` is not loaded).
    pub async fn statements(&self) -> Result<Vec<StatementRecord>, String> {
        let before = self.statements_before.as_ref().map_err(Clone::clone)?;
        let now = read_statements(&self.client).await?;
        let mut out: Vec<StatementRecord> = now
            .into_iter()
            .filter_map(|(id, n)| {
                let b = before.get(&id);
                let calls = n.calls - b.map_or(0.0, |b| b.calls);
                let blocks = n.blocks - b.map_or(0.0, |b| b.blocks);
                let ms = n.ms - b.map_or(0.0, |b| b.ms);
                (calls >= 1.0).then(|| StatementRecord {
                    query: one_line(&n.query),
                    calls: calls as u64,
                    blocks: blocks.max(0.0) as u64,
                    blocks_per_call: blocks.max(0.0) / calls,
                    mean_ms: ms.max(0.0) / calls,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.blocks
                .cmp(&a.blocks)
                .then(b.calls.cmp(&a.calls))
                .then(a.query.cmp(&b.query))
        });
        out.truncate(TOP_STATEMENTS);
        Ok(out)
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

/// A `prometheus` probe: the page it scrapes and the series it keeps.
#[derive(Debug)]
pub struct PrometheusProbe {
    client: reqwest::Client,
    url: String,
    /// Each series as written, and its selector.
    series: Vec<(String, Selector)>,
    /// Each counter series' running total, by the series as written.
    counters: Mutex<std::collections::HashMap<String, CounterTotal>>,
}

/// A counter series' running total across scrapes: the last value of each labelled sample it
/// matches, and the sum of their increases so far. Summing the increases of each labelled sample
/// (not the increase of their sum) keeps a reset of one, or one that disappears, from reading as
/// a reset of all, as PromQL's `sum(increase(…))` does.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CounterTotal {
    last: std::collections::HashMap<Vec<(String, String)>, f64>,
    total: f64,
    /// Whether a scrape has been taken (what a sample held then is where it starts).
    started: bool,
}

impl CounterTotal {
    /// Takes one scrape's matching samples (labels, value); returns the running total. In the
    /// first scrape the total is their sum; after it each sample adds its increase: the
    /// difference to its last value, its whole value after a reset (it went down), or its whole
    /// value when it appears (a labelled counter appears at its first increment). A sample that
    /// disappears adds nothing.
    pub(crate) fn advance<'a>(
        &mut self,
        samples: impl Iterator<Item = (&'a [(String, String)], f64)>,
    ) -> f64 {
        let mut seen = std::collections::HashMap::new();
        for (labels, now) in samples {
            let now = now.max(0.0);
            let increase = if !self.started {
                now
            } else {
                match self.last.get(labels) {
                    Some(&before) if now >= before => now - before,
                    _ => now,
                }
            };
            self.total += increase;
            seen.insert(labels.to_vec(), now);
        }
        // Samples that disappeared keep their last value, in case they come back.
        self.last.extend(seen);
        self.started = true;
        self.total
    }
}

impl PrometheusProbe {
    /// A probe of `url` keeping `series` (selectors as written; the config checked them), whose
    /// first scrape answered within `timeout`; the error says why not, for people.
    pub async fn connect(url: &str, series: &[String], timeout: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let series = series
            .iter()
            .map(|s| Selector::parse(s).map(|sel| (s.clone(), sel)))
            .collect::<Result<Vec<_>, _>>()?;
        let probe = Self {
            client,
            url: url.to_owned(),
            series,
            counters: Mutex::default(),
        };
        probe.read_within(timeout).await?;
        Ok(probe)
    }

    /// One scrape: each series as written, its kind, and its value when the page has it (a
    /// counter's running total of its samples' increases, see [`CounterTotal`]).
    pub async fn read(&self) -> Result<Vec<(String, SeriesKind, Option<f64>)>, String> {
        self.read_within(SAMPLE_TIMEOUT).await
    }

    async fn read_within(
        &self,
        timeout: Duration,
    ) -> Result<Vec<(String, SeriesKind, Option<f64>)>, String> {
        let answer = self
            .client
            .get(&self.url)
            .timeout(timeout)
            .header(reqwest::header::ACCEPT, "text/plain; version=0.0.4")
            .send()
            .await
            .map_err(|e| format!("cannot scrape {}: {}", self.url, super::innermost(&e)))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(format!("{} answered {status}", self.url));
        }
        let text = answer
            .text()
            .await
            .map_err(|e| format!("cannot read {}: {}", self.url, super::innermost(&e)))?;
        let page = exposition::parse(&text).map_err(|e| format!("{}: {e}", self.url))?;
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(self
            .series
            .iter()
            .map(|(written, selector)| {
                let kind = page.kind(&selector.name);
                let value = match kind {
                    SeriesKind::Gauge => page.value(selector),
                    SeriesKind::Counter => {
                        let total = counters.entry(written.clone()).or_default();
                        let samples = page.matching(selector).map(|s| (&s.labels[..], s.value));
                        let running = total.advance(samples);
                        // A counter no sample matched yet has no value.
                        (!total.last.is_empty()).then_some(running)
                    }
                };
                (written.clone(), kind, value)
            })
            .collect())
    }
}

/// What a probe reads.
#[derive(Debug)]
enum Reader {
    Postgres(PostgresProbe),
    Prometheus(PrometheusProbe),
}

impl Reader {
    async fn read(&self) -> Result<Vec<(String, SeriesKind, Option<f64>)>, String> {
        match self {
            Self::Postgres(probe) => Ok(POSTGRES_SERIES
                .iter()
                .zip(probe.read().await?)
                .map(|(def, value)| (def.name.to_owned(), def.kind, Some(value)))
                .collect()),
            Self::Prometheus(probe) => probe.read().await,
        }
    }
}

/// The page a `prometheus` probe scrapes: its `url`, or its `path` on its dependency or on the
/// target; `Err` when the dependency is not running.
fn scrape_url(
    probe: &ProbeConfig,
    running: &RunningDependencies,
    target_url: &str,
) -> Result<String, String> {
    if let Some(url) = &probe.url {
        return Ok(url.clone());
    }
    let path = probe
        .path
        .as_deref()
        .unwrap_or(crate::config::DEFAULT_METRICS_PATH);
    match &probe.dependency {
        None => Ok(format!("{}{path}", target_url.trim_end_matches('/'))),
        Some(name) => {
            let (Some(host), Some(port)) =
                (running.value(name, "host"), running.value(name, "port"))
            else {
                return Err(format!("dependency `{name}` is not running"));
            };
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host
            };
            Ok(format!("http://{host}:{port}{path}"))
        }
    }
}

/// Every statement's counts in `pg_stat_statements`, by id; the error says why there are none.
async fn read_statements(
    client: &tokio_postgres::Client,
) -> Result<std::collections::HashMap<String, StatementCounts>, String> {
    let rows = tokio::time::timeout(SAMPLE_TIMEOUT, client.query(STATEMENTS_QUERY, &[]))
        .await
        .map_err(|_| format!("no answer within {}s", SAMPLE_TIMEOUT.as_secs()))?
        .map_err(|e| format!("pg_stat_statements cannot be read: {}", error_text(&e)))?;
    rows.iter()
        .map(|row| {
            let text = |i| {
                row.try_get::<_, Option<String>>(i)
                    .map(Option::unwrap_or_default)
            };
            let number = |i| row.try_get::<_, Option<f64>>(i).map(|v| v.unwrap_or(0.0));
            Ok((
                text(0)?,
                StatementCounts {
                    query: text(1)?,
                    calls: number(2)?,
                    blocks: number(3)?,
                    ms: number(4)?,
                },
            ))
        })
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(|e| error_text(&e))
}

/// A statement's text on one line, at most 200 characters (for the result and reports).
fn one_line(query: &str) -> String {
    let words: Vec<&str> = query.split_whitespace().collect();
    let text = words.join(" ");
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
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
    /// The series a `prometheus` probe was asked for (those never read are named in its record).
    asked: Vec<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ProbeSampler {
    /// Connects every probe of `probes` to what it watches (a dependency of `running`, or the
    /// target at `target_url`) and starts sampling each every `every`, on the clock of `started`
    /// (the resource sampler's). `warn` hears of each probe that could not connect (it is
    /// recorded as missing).
    pub async fn start(
        probes: &[ProbeConfig],
        running: &RunningDependencies,
        target_url: &str,
        started: Instant,
        every: Duration,
        warn: &dyn Fn(&str),
    ) -> Self {
        let mut sampling = Vec::new();
        for probe in probes {
            let watches = probe.watches();
            let connected = match probe.kind {
                ProbeKind::Postgres => {
                    let dependency = probe.dependency.as_deref().unwrap_or_default();
                    let url = running.render(&format!("{{{{{dependency}.url}}}}"));
                    let recorder = ProbeRecorder::new(
                        &probe.name,
                        probe.kind.name(),
                        &watches,
                        POSTGRES_SERIES,
                    );
                    // A server loadgate booted (a preset) gets pg_stat_statements created.
                    let booted = running
                        .infos()
                        .iter()
                        .any(|d| d.name == dependency && d.preset.is_some());
                    if url.contains("{{") {
                        Err(format!("dependency `{dependency}` is not running"))
                    } else {
                        PostgresProbe::connect_with(&url, PROBE_CONNECT_TIMEOUT, booted)
                            .await
                            .map(|p| (Reader::Postgres(p), recorder))
                    }
                }
                ProbeKind::Prometheus => {
                    let recorder =
                        ProbeRecorder::new(&probe.name, probe.kind.name(), &watches, &[]);
                    match scrape_url(probe, running, target_url) {
                        Err(why) => Err(why),
                        Ok(url) => {
                            PrometheusProbe::connect(&url, &probe.series, PROBE_CONNECT_TIMEOUT)
                                .await
                                .map(|p| (Reader::Prometheus(p), recorder))
                        }
                    }
                }
            };
            match connected {
                Err(why) => {
                    warn(&format!("probe `{}` is missing: {why}", probe.name));
                    sampling.push(Sampling {
                        record: Arc::new(Mutex::new(ProbeRecorder::new(
                            &probe.name,
                            probe.kind.name(),
                            &watches,
                            &[],
                        ))),
                        missing: Some(ProbeRecord::missing(
                            &probe.name,
                            probe.kind.name(),
                            &watches,
                            why,
                        )),
                        asked: Vec::new(),
                        stop: None,
                        task: None,
                    });
                }
                Ok((reader, recorder)) => {
                    let record = Arc::new(Mutex::new(recorder));
                    let (stop_tx, stop_rx) = oneshot::channel();
                    let task =
                        tokio::spawn(sample_loop(reader, record.clone(), started, every, stop_rx));
                    sampling.push(Sampling {
                        record,
                        missing: None,
                        asked: probe.series.clone(),
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
            None => {
                let mut recorder = self.record.lock().unwrap_or_else(PoisonError::into_inner);
                recorder.never_read(&self.asked);
                recorder.record().clone()
            }
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
    probe: Reader,
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
            Ok(reading) => r.push_named(elapsed_s, &reading),
            Err(e) => r.failed(e),
        }
    }
    // What the run's statements did, once, at the end.
    if let Reader::Postgres(probe) = &probe {
        let statements = probe.statements().await;
        record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set_statements(statements);
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

    /// A counter selector's running total sums each labelled sample's increase: one sample's
    /// reset or disappearance is not a reset of all; a sample that appears counts its whole
    /// value; the first scrape only sets where it starts.
    #[test]
    fn a_counters_total_sums_the_increase_of_each_sample() {
        let a = [("route".to_owned(), "/a".to_owned())];
        let b = [("route".to_owned(), "/b".to_owned())];
        let c = [("route".to_owned(), "/c".to_owned())];
        let mut t = CounterTotal::default();
        assert_eq!(
            t.advance([(&a[..], 100.0), (&b[..], 50.0)].into_iter()),
            150.0
        );
        // /a +10, /b reset to 5 (counts 5): +15, not the sum's fall.
        assert_eq!(
            t.advance([(&a[..], 110.0), (&b[..], 5.0)].into_iter()),
            165.0
        );
        // /b disappears: nothing; /c appears with 3: +3.
        assert_eq!(
            t.advance([(&a[..], 110.0), (&c[..], 3.0)].into_iter()),
            168.0
        );
        // /b comes back where it was: +2.
        assert_eq!(
            t.advance([(&a[..], 110.0), (&b[..], 7.0), (&c[..], 3.0)].into_iter()),
            170.0
        );
    }

    /// A page served on loopback is scraped: its series kept by name, a counter by its type,
    /// a series it lacks as absent; a page that is not one is an error naming the line.
    #[tokio::test]
    async fn a_prometheus_page_is_scraped_by_series() {
        let page = std::sync::Arc::new(std::sync::Mutex::new(
            "# TYPE requests_total counter\nrequests_total{route=\"/a\"} 5\n\
             requests_total{route=\"/b\"} 7\npool_waiting 2\n"
                .to_owned(),
        ));
        let served = page.clone();
        let server = crate::engine::test_server::TestServer::start(move |request| {
            if request.path == "/metrics" {
                crate::engine::test_server::Reply::ok(&served.lock().unwrap())
            } else {
                crate::engine::test_server::Reply {
                    status: 404,
                    ..crate::engine::test_server::Reply::ok("no such page")
                }
            }
        });
        let url = format!("{}/metrics", server.url.trim_end_matches('/'));
        let series = [
            "requests_total".to_owned(),
            "requests_total{route=\"/b\"}".to_owned(),
            "pool_waiting".to_owned(),
            "absent".to_owned(),
        ];
        let probe = PrometheusProbe::connect(&url, &series, Duration::from_secs(5))
            .await
            .expect("it answers");
        let reading = probe.read().await.expect("a reading");
        assert_eq!(
            reading,
            [
                ("requests_total".to_owned(), SeriesKind::Counter, Some(12.0)),
                (
                    "requests_total{route=\"/b\"}".to_owned(),
                    SeriesKind::Counter,
                    Some(7.0)
                ),
                ("pool_waiting".to_owned(), SeriesKind::Gauge, Some(2.0)),
                ("absent".to_owned(), SeriesKind::Gauge, None),
            ]
        );
        *page.lock().unwrap() = "9lives 1\n".to_owned();
        let err = probe.read().await.expect_err("not a page");
        assert!(err.contains("line 1: expected a metric name"), "{err}");
        let missing = format!("{}/nope", url.trim_end_matches("/metrics"));
        let err = PrometheusProbe::connect(&missing, &series, Duration::from_secs(5))
            .await
            .expect_err("a 404");
        assert!(err.contains("404"), "{err}");
    }
}
