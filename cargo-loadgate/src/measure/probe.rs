//! Probe samples: what a `[[probe]]` read of a dependency once a second, as series. A gauge is kept
//! as read; a counter as its rate per second between two samples, and its increase over the run
//! (a counter that goes down was reset: the increase goes on from its new value, as Prometheus
//! does). `targets::probe` reads the dependency; this module only turns readings into series.

use crate::stats::slope::{BootstrapOptions, SlopeEstimate, theil_sen_bootstrap};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether a series is read as it is or as a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesKind {
    /// A level (connections in a state): kept as read.
    Gauge,
    /// A running total (transactions committed): kept as a rate per second between samples.
    Counter,
}

/// One series a probe kind reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesDef {
    /// Its name in the result, reports and `limits`.
    pub name: &'static str,
    /// Gauge or counter.
    pub kind: SeriesKind,
    /// What it is, for people.
    pub doc: &'static str,
}

const fn gauge(name: &'static str, doc: &'static str) -> SeriesDef {
    SeriesDef {
        name,
        kind: SeriesKind::Gauge,
        doc,
    }
}

const fn counter(name: &'static str, doc: &'static str) -> SeriesDef {
    SeriesDef {
        name,
        kind: SeriesKind::Counter,
        doc,
    }
}

/// The series of a `postgres` probe, in the order its query returns them.
pub const POSTGRES_SERIES: &[SeriesDef] = &[
    gauge(
        "connections_active",
        "connections of the database running a query (pg_stat_activity, the probe's own excluded)",
    ),
    gauge("connections_idle", "connections of the database idle"),
    gauge(
        "connections_idle_in_transaction",
        "connections of the database idle inside a transaction",
    ),
    gauge(
        "connections_waiting",
        "connections of the database waiting on a lock (wait_event_type = 'Lock')",
    ),
    gauge("lock_waits", "locks requested and not granted (pg_locks)"),
    counter(
        "xact_commit",
        "transactions committed (pg_stat_database; counts the probe's own, one a sample)",
    ),
    counter("xact_rollback", "transactions rolled back"),
    counter("deadlocks", "deadlocks detected"),
    counter("temp_bytes", "bytes written to temporary files"),
    counter("blks_read", "blocks read from outside shared buffers"),
    counter("blks_hit", "blocks found in shared buffers"),
];

/// Whether a probe was sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeStatus {
    /// It connected and took samples.
    Sampled,
    /// It could not connect; `missing` says why.
    Missing,
}

/// One sample: the elapsed time on the resource sampler's clock and the value of each series
/// (a counter's rate per second since the sample before; absent in the first sample).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeSample {
    /// Seconds since sampling began (the clock of `resources[].elapsed_s`).
    pub elapsed_s: f64,
    /// Series name → value.
    pub values: BTreeMap<String, f64>,
}

/// One statement a `postgres` probe saw run during the run (`pg_stat_statements`, the counts at the
/// end less those when the probe connected).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatementRecord {
    /// Its normalized text (constants as `$1`), on one line, cut after 200 characters (with …).
    pub query: String,
    /// How many times it ran.
    pub calls: u64,
    /// Shared blocks it found in the buffers or read, in all.
    pub blocks: u64,
    /// `blocks` a call: what a missing index multiplies.
    pub blocks_per_call: f64,
    /// Its mean time a call, in milliseconds (in the server).
    pub mean_ms: f64,
}

/// What a run records of one probe (result.json `probes`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// Its name in the config.
    pub name: String,
    /// Its kind, as written (`postgres`).
    pub kind: String,
    /// The dependency it watched.
    pub dependency: String,
    /// Sampled, or missing.
    pub status: ProbeStatus,
    /// Why it is missing (it could not connect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// The series it read: name → gauge or counter.
    pub series: BTreeMap<String, SeriesKind>,
    /// The samples, oldest first.
    pub samples: Vec<ProbeSample>,
    /// Each counter's increase over the run.
    pub totals: BTreeMap<String, f64>,
    /// Samples that failed after it connected, and the last error.
    #[serde(default)]
    pub sample_errors: u64,
    /// The last sample's error, if any failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Each series' Theil–Sen slope per second over the soak's measured part, with its block
    /// bootstrap interval (a gauge's level, a counter's rate): absent without a soak, or for a
    /// series with fewer than three samples in it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub soak_slopes: BTreeMap<String, SlopeEstimate>,
    /// The series a `prometheus` probe was asked for that no scrape exposed (a limit on one
    /// cannot be checked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
    /// A `postgres` probe's statements over the run, the most shared blocks first (at most ten).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementRecord>,
    /// Why a `postgres` probe has no statements (`pg_stat_statements` is not loaded, or could not
    /// be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements_missing: Option<String>,
}

impl ProbeRecord {
    /// A probe that could not be sampled, and why.
    pub fn missing(name: &str, kind: &str, dependency: &str, why: String) -> Self {
        Self {
            name: name.to_owned(),
            kind: kind.to_owned(),
            dependency: dependency.to_owned(),
            status: ProbeStatus::Missing,
            missing: Some(why),
            series: BTreeMap::new(),
            samples: Vec::new(),
            totals: BTreeMap::new(),
            sample_errors: 0,
            last_error: None,
            soak_slopes: BTreeMap::new(),
            unseen: Vec::new(),
            statements: Vec::new(),
            statements_missing: None,
        }
    }

    /// Fits [`Self::soak_slopes`] to the samples taken from `from_s` to `to_s` (the soak's
    /// measured part, on the sampler's clock).
    pub fn fit_soak_slopes(&mut self, from_s: f64, to_s: f64) {
        let options = BootstrapOptions::default();
        self.soak_slopes = self
            .series
            .keys()
            .filter_map(|name| {
                let points: Vec<(f64, f64)> = self
                    .points(name)
                    .into_iter()
                    .filter(|(t, _)| (from_s..=to_s).contains(t))
                    .collect();
                theil_sen_bootstrap(&points, &options).map(|s| (name.clone(), s))
            })
            .collect();
    }

    /// Blocks found in shared buffers or read, per committed transaction, over the run (a
    /// `postgres` probe): what a missing index multiplies. `None` without commits.
    pub fn blocks_per_commit(&self) -> Option<f64> {
        let commits = *self.totals.get("xact_commit")?;
        if commits <= 0.0 {
            return None;
        }
        let blocks = ["blks_hit", "blks_read"]
            .iter()
            .filter_map(|s| self.totals.get(*s))
            .sum::<f64>();
        Some(blocks / commits)
    }

    /// The soak slopes whose whole interval lies above or below zero, per minute, as people read
    /// them: "`connections_waiting` grows 0.40/min (0.21 to 0.63)".
    pub fn soak_trends(&self) -> Vec<String> {
        self.soak_slopes
            .iter()
            .filter(|(_, s)| s.low > 0.0 || s.high < 0.0)
            .map(|(name, s)| {
                let unit = match self.series.get(name) {
                    Some(SeriesKind::Counter) => "/s per min",
                    _ => "/min",
                };
                // A fall reads as a positive rate, its interval too.
                let (word, sign) = if s.estimate >= 0.0 {
                    ("grows", 1.0)
                } else {
                    ("falls", -1.0)
                };
                let (low, high) = if sign > 0.0 {
                    (s.low, s.high)
                } else {
                    (-s.high, -s.low)
                };
                format!(
                    "`{name}` {word} {}{unit} ({} to {})",
                    format_value(s.estimate * sign * 60.0),
                    format_value(low * 60.0),
                    format_value(high * 60.0)
                )
            })
            .collect()
    }

    /// The largest sample of a series, if it has any.
    pub fn max(&self, series: &str) -> Option<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.values.get(series).copied())
            .reduce(f64::max)
    }

    /// `(elapsed_s, value)` of a series, oldest first.
    pub fn points(&self, series: &str) -> Vec<(f64, f64)> {
        self.samples
            .iter()
            .filter_map(|s| s.values.get(series).map(|v| (s.elapsed_s, *v)))
            .collect()
    }
}

/// A series value for people: whole numbers without decimals, others to 3 significant digits.
pub fn format_value(v: f64) -> String {
    if (v.fract() == 0.0 && v.abs() < 1e15) || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Turns raw readings into a [`ProbeRecord`]'s samples and totals.
#[derive(Clone, Debug)]
pub struct ProbeRecorder {
    record: ProbeRecord,
    /// The series of a fixed reading ([`Self::push`]), in its order.
    defs: Vec<(String, SeriesKind)>,
    /// When the last reading was taken.
    last_s: Option<f64>,
    /// Each series' last reading: when, and its value (a counter's running total as read).
    last: BTreeMap<String, (f64, f64)>,
}

impl ProbeRecorder {
    /// A recorder of `defs` (a fixed reading, [`Self::push`]; none for a reading whose series
    /// show up as they are read, [`Self::push_named`]), for the probe `name` of `kind` watching
    /// `dependency`.
    pub fn new(name: &str, kind: &str, dependency: &str, defs: &[SeriesDef]) -> Self {
        let mut record = ProbeRecord::missing(name, kind, dependency, String::new());
        record.status = ProbeStatus::Sampled;
        record.missing = None;
        let defs: Vec<(String, SeriesKind)> =
            defs.iter().map(|d| (d.name.to_owned(), d.kind)).collect();
        record.series = defs.iter().cloned().collect();
        Self {
            record,
            defs,
            last_s: None,
            last: BTreeMap::new(),
        }
    }

    /// Adds one reading at `elapsed_s`: `raw[i]` is the value of the `i`th series of `defs` as
    /// read.
    pub fn push(&mut self, elapsed_s: f64, raw: &[f64]) {
        let reading: Vec<(String, SeriesKind, Option<f64>)> = self
            .defs
            .iter()
            .enumerate()
            .map(|(i, (name, kind))| (name.clone(), *kind, raw.get(i).copied()))
            .collect();
        self.push_named(elapsed_s, &reading);
    }

    /// Adds one reading at `elapsed_s`: each series by name, with its kind and its value when
    /// the reading had one. A series is in the record's `series` once it has been read. A
    /// counter read for the first time after an earlier reading counts its whole value (it
    /// appeared at its first increment: a service exposes a labelled counter once it counts);
    /// in the first reading, counters only set where they start.
    pub fn push_named(&mut self, elapsed_s: f64, reading: &[(String, SeriesKind, Option<f64>)]) {
        let mut values = BTreeMap::new();
        for (name, kind, value) in reading {
            let Some(now) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            self.record.series.entry(name.clone()).or_insert(*kind);
            match kind {
                SeriesKind::Gauge => {
                    values.insert(name.clone(), now);
                }
                SeriesKind::Counter => {
                    let total = self.record.totals.entry(name.clone()).or_insert(0.0);
                    // Since its own last reading; one that appears counts from the reading
                    // before.
                    let before = match (self.last.get(name), self.last_s) {
                        (Some(&(then_s, before)), _) => Some((then_s, before)),
                        (None, Some(then_s)) => Some((then_s, 0.0)),
                        (None, None) => None,
                    };
                    if let Some((then_s, before)) = before {
                        // A counter that went down was reset: it counted `now` since.
                        let increase = if now >= before { now - before } else { now }.max(0.0);
                        *total += increase;
                        let dt = elapsed_s - then_s;
                        if dt > 0.0 {
                            values.insert(name.clone(), increase / dt);
                        }
                    }
                }
            }
            self.last.insert(name.clone(), (elapsed_s, now));
        }
        self.last_s = Some(elapsed_s);
        self.record.samples.push(ProbeSample { elapsed_s, values });
    }

    /// Records the statements of the run, or why there are none.
    pub fn set_statements(&mut self, statements: Result<Vec<StatementRecord>, String>) {
        match statements {
            Ok(s) => {
                self.record.statements = s;
                self.record.statements_missing = None;
            }
            Err(why) => {
                self.record.statements = Vec::new();
                self.record.statements_missing = Some(why);
            }
        }
    }

    /// Records the series the probe was asked for and never read (`unseen`).
    pub fn never_read(&mut self, asked: &[String]) {
        self.record.unseen = asked
            .iter()
            .filter(|s| !self.record.series.contains_key(*s))
            .cloned()
            .collect();
    }

    /// Counts a sample that failed after the probe connected.
    pub fn failed(&mut self, error: String) {
        self.record.sample_errors += 1;
        self.record.last_error = Some(error);
    }

    /// The record so far.
    pub fn record(&self) -> &ProbeRecord {
        &self.record
    }

    /// The record.
    pub fn finish(self) -> ProbeRecord {
        self.record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &[SeriesDef] = &[gauge("g", "a gauge"), counter("c", "a counter")];

    #[test]
    fn gauges_are_kept_counters_become_rates_and_totals() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", DEFS);
        r.push(0.0, &[3.0, 100.0]);
        r.push(2.0, &[5.0, 110.0]);
        r.push(3.0, &[1.0, 130.0]);
        let rec = r.finish();
        assert_eq!(rec.points("g"), vec![(0.0, 3.0), (2.0, 5.0), (3.0, 1.0)]);
        // No rate before the second reading; then 10 over 2 s, 20 over 1 s.
        assert_eq!(rec.points("c"), vec![(2.0, 5.0), (3.0, 20.0)]);
        assert_eq!(rec.totals["c"], 30.0);
        assert_eq!(rec.max("g"), Some(5.0));
        assert_eq!(rec.status, ProbeStatus::Sampled);
    }

    #[test]
    fn soak_slopes_are_fitted_to_the_soak_alone_and_only_clear_trends_are_named() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", DEFS);
        // Before the soak the gauge jumps about; during it (t = 10…40) it grows 0.5 a second and
        // the counter's rate stays at 10/s.
        for t in 0..10 {
            r.push(
                f64::from(t),
                &[f64::from(t % 3) * 50.0, f64::from(t) * 10.0],
            );
        }
        for t in 10..=40 {
            let jitter = if t % 2 == 0 { 0.2 } else { -0.2 };
            r.push(
                f64::from(t),
                &[f64::from(t - 10) * 0.5 + jitter, f64::from(t) * 10.0],
            );
        }
        let mut rec = r.finish();
        rec.fit_soak_slopes(10.0, 40.0);
        let g = rec.soak_slopes["g"];
        assert!((g.estimate - 0.5).abs() < 0.05, "{g:?}");
        assert!(g.low > 0.0, "{g:?}");
        let c = rec.soak_slopes["c"];
        assert!(c.estimate.abs() < 1e-9, "{c:?}");
        let trends = rec.soak_trends();
        assert_eq!(trends.len(), 1, "{trends:?}");
        assert!(trends[0].starts_with("`g` grows 30"), "{trends:?}");
        assert!(trends[0].contains("/min ("), "{trends:?}");
        // A record without a soak window keeps none.
        let mut none = rec.clone();
        none.fit_soak_slopes(100.0, 200.0);
        assert!(none.soak_slopes.is_empty());
    }

    #[test]
    fn blocks_per_commit_reads_the_run_totals() {
        let mut rec = ProbeRecord::missing("db", "postgres", "db", String::new());
        assert_eq!(rec.blocks_per_commit(), None);
        rec.totals.insert("xact_commit".into(), 100.0);
        rec.totals.insert("blks_hit".into(), 2_400.0);
        rec.totals.insert("blks_read".into(), 200.0);
        assert_eq!(rec.blocks_per_commit(), Some(26.0));
        rec.totals.insert("xact_commit".into(), 0.0);
        assert_eq!(rec.blocks_per_commit(), None);
    }

    /// A scraped series shows up when first read: a gauge from then on, a counter first seen
    /// after the first reading with its whole value (it appeared at its first increment), one
    /// present from the first reading from where it started; a series never read is unseen.
    #[test]
    fn series_read_by_name_show_up_as_they_are_read() {
        let mut r = ProbeRecorder::new("app", "prometheus", "target", &[]);
        let reading = |pool: Option<f64>, requests: f64, errors: Option<f64>| {
            vec![
                ("pool".to_owned(), SeriesKind::Gauge, pool),
                (
                    "requests_total".to_owned(),
                    SeriesKind::Counter,
                    Some(requests),
                ),
                ("errors_total".to_owned(), SeriesKind::Counter, errors),
            ]
        };
        r.push_named(0.0, &reading(None, 50.0, None));
        r.push_named(1.0, &reading(Some(2.0), 60.0, None));
        r.push_named(2.0, &reading(Some(f64::NAN), 75.0, Some(3.0)));
        r.push_named(3.0, &reading(Some(4.0), 75.0, Some(3.0)));
        r.never_read(&["pool".into(), "errors_total".into(), "typo_total".into()]);
        let rec = r.finish();
        assert_eq!(rec.points("pool"), vec![(1.0, 2.0), (3.0, 4.0)]);
        assert_eq!(rec.totals["requests_total"], 25.0);
        assert_eq!(rec.totals["errors_total"], 3.0);
        assert_eq!(rec.points("errors_total"), vec![(2.0, 3.0), (3.0, 0.0)]);
        assert_eq!(rec.series.len(), 3);
        assert_eq!(rec.unseen, ["typo_total"]);
    }

    #[test]
    fn a_counter_that_goes_down_was_reset() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", DEFS);
        r.push(0.0, &[0.0, 100.0]);
        r.push(1.0, &[0.0, 4.0]);
        let rec = r.finish();
        assert_eq!(rec.totals["c"], 4.0);
        assert_eq!(rec.points("c"), vec![(1.0, 4.0)]);
    }
}
